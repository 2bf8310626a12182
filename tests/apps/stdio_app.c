/* stdio_app: stdio checkpoints and logs. Rank 0 writes DIR/ckpt.dat with CHUNKS fwrite calls
 * of SIZE bytes, reads it back with fread after an fseek, and every rank writes LINES fprintf
 * lines to DIR/log_<rank>.txt, flushing every 10 lines.
 * Usage: stdio_app DIR [CHUNKS=8] [SIZE=65536] [LINES=50] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    count("MPI_Init", 0);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) DIE("usage: stdio_app DIR [CHUNKS] [SIZE] [LINES]");
    const char *dir = argv[1];
    int chunks = argc > 2 ? atoi(argv[2]) : 8;
    long size = argc > 3 ? atol(argv[3]) : 65536;
    int lines = argc > 4 ? atoi(argv[4]) : 50;
    char path[4096];
    char *buf = malloc(size);
    memset(buf, 'c', size);
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/ckpt.dat", dir);
        FILE *f = fopen(path, "wb");
        count("fopen", 0);
        if (!f) DIE("fopen %s", path);
        for (int i = 0; i < chunks; i++) {
            size_t w = fwrite(buf, 1, size, f);
            count("fwrite", (long long)w);
        }
        fclose(f);
        count("fclose", 0);
        f = fopen(path, "rb");
        count("fopen", 0);
        fseek(f, 0, SEEK_SET);
        count("fseek", 0);
        for (int i = 0; i < chunks; i++) {
            size_t r = fread(buf, 1, size, f);
            count("fread", (long long)r);
        }
        fclose(f);
        count("fclose", 0);
    }
    snprintf(path, sizeof path, "%s/log_%d.txt", dir, rank);
    FILE *log = fopen(path, "w");
    count("fopen", 0);
    if (!log) DIE("fopen %s", path);
    for (int i = 0; i < lines; i++) {
        int w = fprintf(log, "rank %d step %d value %.3f\n", rank, i, i * 0.5);
        count("fprintf", w);
        if (i % 10 == 9) {
            fflush(log);
            count("fflush", 0);
        }
    }
    fclose(log);
    count("fclose", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
