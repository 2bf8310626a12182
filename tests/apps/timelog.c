/* timelog: a checkpoint loop whose log line prints a clock reading. Every rank
 * writes one 4 KiB block per step into DIR/ckpt.dat at ((step * n) + rank) * 4096 with pwrite
 * (exact, affine in n); rank 0 also logs each step to DIR/log.txt with fprintf, printing a
 * value read from the clock. The value's decimal width changes from line to line and from run
 * to run, so fprintf's return value (the line's length) follows no model of n, nor digits(n):
 * it is the kind of value a user declares irrelevant with `extrap --ignore fprintf.ret`.
 * Usage: timelog DIR [STEPS=10] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BLOCK = 4096 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: timelog DIR [STEPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int steps = argc > 2 ? atoi(argv[2]) : 10;
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt.dat", argv[1]);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    FILE *log = NULL;
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/log.txt", argv[1]);
        log = fopen(path, "w");
        if (!log) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *buf = malloc(BLOCK);
    memset(buf, 'a' + rank % 26, BLOCK);
    for (int s = 0; s < steps; s++) {
        if (pwrite(fd, buf, BLOCK, ((off_t)s * n + rank) * BLOCK) != BLOCK)
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            /* The nanoseconds, cut to a width the clock also picks: 1 to 9 digits. */
            long v = ts.tv_nsec >> (ts.tv_nsec % 27);
            fprintf(log, "step %d written, clock %ld\n", s, v);
        }
    }
    if (log) fclose(log);
    close(fd);
    free(buf);
    MPI_Finalize();
    return 0;
}
