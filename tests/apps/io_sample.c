/* io_sample: the pattern of the ANL IO-sample benchmark.
 * Phase 1, POSIX N-to-N: each rank writes DIR/file_<rank> in ITERS writes of SIZE bytes,
 * reads it back, closes it and unlinks it.
 * Phase 2, MPI-IO N-to-1: MITERS collective writes of MSIZE bytes per rank into DIR/shared,
 * rank-interleaved per iteration, then the file is deleted.
 * Usage: io_sample DIR [ITERS=100] [SIZE=8192] [MITERS=3] [MSIZE=1048576] */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: io_sample DIR [ITERS] [SIZE] [MITERS] [MSIZE]");
    const char *dir = argv[1];
    int iters = argc > 2 ? atoi(argv[2]) : 100;
    long size = argc > 3 ? atol(argv[3]) : 8192;
    int miters = argc > 4 ? atoi(argv[4]) : 3;
    long msize = argc > 5 ? atol(argv[5]) : 1048576;
    char *buf = malloc(size > msize ? size : msize);
    memset(buf, 'a' + rank % 26, size > msize ? size : msize);
    char path[4096];

    snprintf(path, sizeof path, "%s/file_%d", dir, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    count("open", 0);
    if (fd < 0) DIE("open %s failed", path);
    for (int i = 0; i < iters; i++) {
        ssize_t w = write(fd, buf, size);
        count("write", w);
    }
    close(fd);
    count("close", 0);
    fd = open(path, O_RDONLY);
    count("open", 0);
    for (int i = 0; i < iters; i++) {
        ssize_t r = read(fd, buf, size);
        count("read", r);
    }
    close(fd);
    count("close", 0);
    unlink(path);
    count("unlink", 0);

    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);

    snprintf(path, sizeof path, "%s/shared", dir);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh))
        DIE("MPI_File_open %s failed", path);
    count("MPI_File_open", 0);
    for (int i = 0; i < miters; i++) {
        MPI_Offset off = ((MPI_Offset)i * n + rank) * msize;
        MPI_File_write_at_all(fh, off, buf, (int)msize, MPI_BYTE, MPI_STATUS_IGNORE);
        count("MPI_File_write_at_all", msize);
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    if (rank == 0) {
        MPI_File_delete(path, MPI_INFO_NULL);
        count("MPI_File_delete", 0);
    }
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
