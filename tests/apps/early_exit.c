/* early_exit: every rank does some POSIX I/O and then ends without MPI_Finalize. The tracer
 * must not hang and must leave each rank's calls in its own file, flagged incomplete.
 * MODE exit: every rank calls exit(). MODE term: the last rank raises SIGTERM on itself (as if
 * a user or the batch system killed it); the others wait in a barrier it never reaches, until
 * mpirun sees the death and kills them with SIGTERM too.
 * Usage: early_exit DIR [ITERS=10] [MODE=exit] */
#include <mpi.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) DIE("usage: early_exit DIR [ITERS] [MODE]");
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    const char *mode = argc > 3 ? argv[3] : "exit";
    char path[4096], buf[1024] = {0};
    snprintf(path, sizeof path, "%s/early_%d", argv[1], rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < iters; i++) {
        ssize_t w = pwrite(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf);
        (void)w;
    }
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "term") == 0) {
        if (rank == n - 1) raise(SIGTERM);
        MPI_Barrier(MPI_COMM_WORLD);
        DIE("rank %d: still alive after SIGTERM", rank);
    }
    exit(0);
}
