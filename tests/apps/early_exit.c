/* early_exit: every rank does some POSIX I/O and then calls exit() without MPI_Finalize.
 * The tracer must not hang and must leave each rank's calls in its own file, flagged
 * incomplete. Usage: early_exit DIR [ITERS=10] */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) DIE("usage: early_exit DIR [ITERS]");
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    char path[4096], buf[1024] = {0};
    snprintf(path, sizeof path, "%s/early_%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < iters; i++) {
        ssize_t w = pwrite(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf);
        (void)w;
    }
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    exit(0);
}
