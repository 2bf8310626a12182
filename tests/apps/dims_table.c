/* dims_table: what this MPI library's MPI_Dims_create answers for every n up to N (default
 * 256) and 2 to 4 free dimensions, one "DIMS n d dims..." line each; tests/extrap_grid.rs
 * compares iotrex's model of the factorisation (models/src/grid.rs) with it. One process. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int max = argc > 1 ? atoi(argv[1]) : 256;
    for (int n = 1; n <= max; n++)
        for (int d = 2; d <= 4; d++) {
            int dims[4] = {0, 0, 0, 0};
            if (MPI_Dims_create(n, d, dims) != MPI_SUCCESS) {
                fprintf(stderr, "MPI_Dims_create(%d, %d) failed\n", n, d);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            printf("DIMS %d %d", n, d);
            for (int i = 0; i < d; i++) printf(" %d", dims[i]);
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}
