/* The tracer's fixed costs (scripts/bench-tracer.sh part 4): rank 0 prints the wall time of
 * MPI_Init, of the first MPI_File_open (followed by a barrier, so that a rank the others wait
 * for shows) and of MPI_Finalize (the tracer's merge and trace writing included), in ms:
 *   init_ms open_ms finalize_ms
 * Usage: fixed_cost FILE (a file every rank opens, created). */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    double t0 = now();
    MPI_Init(&argc, &argv);
    double t1 = now();
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: fixed_cost FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    double t2 = now();
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double t3 = now();
    char b[4096] = {0};
    MPI_File_write_at_all(fh, (MPI_Offset)rank * sizeof b, b, sizeof b, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double t4 = now();
    MPI_Finalize();
    double t5 = now();
    if (rank == 0) printf("%.3f %.3f %.3f\n", t1 - t0, t3 - t2, t5 - t4);
    return 0;
}
