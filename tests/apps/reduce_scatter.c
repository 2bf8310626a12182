/* reduce_scatter: ITERS rounds of MPI_Reduce_scatter with a different block per rank (rank+1
 * ints) and MPI_Reduce_scatter_block (4 doubles each), checking the sums.
 * Usage: reduce_scatter [ITERS=3] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int iters = argc > 1 ? atoi(argv[1]) : 3;
    int *counts = malloc(n * sizeof(int));
    int total = 0;
    for (int r = 0; r < n; r++) total += counts[r] = r + 1;
    int *s = malloc(total * sizeof(int)), *r = malloc((rank + 1) * sizeof(int));
    double ds[64], dr[4];
    for (int i = 0; i < total; i++) s[i] = 1;
    for (int i = 0; i < 4 * n && i < 64; i++) ds[i] = 1.0;
    for (int it = 0; it < iters; it++) {
        MPI_Reduce_scatter(s, r, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (r[0] != n) { fprintf(stderr, "rank %d: sum %d\n", rank, r[0]); MPI_Abort(MPI_COMM_WORLD, 1); }
        MPI_Reduce_scatter_block(ds, dr, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (dr[3] != n) { fprintf(stderr, "rank %d: block sum %g\n", rank, dr[3]); MPI_Abort(MPI_COMM_WORLD, 1); }
    }
    free(counts); free(s); free(r);
    MPI_Finalize();
    return 0;
}
