/* N MPI-IO writes of 8 bytes on one file in /dev/shm, for the per-call instructions of the
 * traced MPI-IO calls (scripts/bench-tracer.sh part 5, callgrind on one rank, as part 1 does
 * for pwrite): MODE is `at` (MPI_File_write_at) or `at_all` (MPI_File_write_at_all, whose
 * aggregator writes with a nested pwrite). The offset is (i % 1024) * 8, a loop of 1,024 calls
 * inside an outer loop, as pwrite_loop.c.
 * Usage: mpiio_loop MODE N FILE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 4 || (strcmp(argv[1], "at") && strcmp(argv[1], "at_all"))) {
        fprintf(stderr, "usage: mpiio_loop at|at_all N FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int all = !strcmp(argv[1], "at_all");
    long n = atol(argv[2]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[3], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    char b[8] = {0};
    MPI_Status st;
    for (long i = 0; i < n; i++) {
        MPI_Offset off = (i % 1024) * 8;
        if (all)
            MPI_File_write_at_all(fh, off, b, 8, MPI_BYTE, &st);
        else
            MPI_File_write_at(fh, off, b, 8, MPI_BYTE, &st);
    }
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
