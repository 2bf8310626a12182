/* log_lines: a checkpointing program that logs what it does in text, so that the sizes of its
 * log writes depend on how many decimal digits the numbers it prints have.
 * Every rank writes STEPS blocks of SIZE bytes into the shared file DIR/data (block
 * step*n + rank). After each step rank 0 appends "ckpt: <n> ranks\n" to DIR/run.log with
 * fprintf (37 bytes up to 9 ranks, 38 up to 99, 39 up to 999). At the end every rank writes
 * "rank <rank> of <n>: <STEPS> steps\n" to DIR/rank_<rank>.log with fprintf, and rank 0
 * writes "ranks 0-<n-1> done\n" to DIR/summary.txt with snprintf and write(2).
 * Usage: log_lines DIR [STEPS=4] [SIZE=65536] */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: log_lines DIR [STEPS] [SIZE]");
    const char *dir = argv[1];
    int steps = argc > 2 ? atoi(argv[2]) : 4;
    long size = argc > 3 ? atol(argv[3]) : 65536;
    char *buf = malloc(size);
    memset(buf, 'a' + rank % 26, size);
    char path[4096];

    snprintf(path, sizeof path, "%s/data", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    count("open", 0);
    if (fd < 0) DIE("open %s failed", path);
    FILE *log = NULL;
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/run.log", dir);
        log = fopen(path, "w");
        count("fopen", 0);
        if (!log) DIE("fopen %s failed", path);
    }
    for (int s = 0; s < steps; s++) {
        ssize_t w = pwrite(fd, buf, size, ((off_t)s * n + rank) * size);
        count("pwrite", w);
        MPI_Barrier(MPI_COMM_WORLD);
        count("MPI_Barrier", 0);
        if (rank == 0) {
            int k = fprintf(log, "ckpt: %d ranks\n", n);
            count("fprintf", k);
        }
    }
    close(fd);
    count("close", 0);
    if (rank == 0) {
        fclose(log);
        count("fclose", 0);
    }

    snprintf(path, sizeof path, "%s/rank_%d.log", dir, rank);
    FILE *mine = fopen(path, "w");
    count("fopen", 0);
    if (!mine) DIE("fopen %s failed", path);
    int k = fprintf(mine, "rank %d of %d: %d steps\n", rank, n, steps);
    count("fprintf", k);
    fclose(mine);
    count("fclose", 0);

    if (rank == 0) {
        char line[64];
        int len = snprintf(line, sizeof line, "ranks 0-%d done\n", n - 1);
        snprintf(path, sizeof path, "%s/summary.txt", dir);
        int sfd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        count("open", 0);
        if (sfd < 0) DIE("open %s failed", path);
        ssize_t w = write(sfd, line, len);
        count("write", w);
        close(sfd);
        count("close", 0);
    }
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
