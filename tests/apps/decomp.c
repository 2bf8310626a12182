/* A stencil code that picks its domain decomposition from the rank count, as many real codes
 * do: a 2-D torus when the rank count is a perfect square (four neighbours), a 1-D ring
 * otherwise (two neighbours), and the 2-D one reduces a residual each step. Every step exchanges halos with the neighbours; every other
 * step every rank writes its block of a shared file with MPI_File_write_at. Traces at square
 * and non-square scales therefore differ in structure, which `iotrex extrap` must report
 * (and, with --drop-inconsistent, work around).
 *
 * Usage: decomp OUTFILE [STEPS] [BLOCK_BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int isqrt_exact(int n) {
    int s = 0;
    while ((s + 1) * (s + 1) <= n) s++;
    return s * s == n ? s : 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: decomp OUTFILE [STEPS] [BLOCK_BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int steps = argc > 2 ? atoi(argv[2]) : 4;
    int block = argc > 3 ? atoi(argv[3]) : 4096;
    int side = isqrt_exact(n);
    int nbr[4], nn;
    if (side > 1) {
        int x = rank % side, y = rank / side;
        nbr[0] = y * side + (x + 1) % side;
        nbr[1] = y * side + (x + side - 1) % side;
        nbr[2] = ((y + 1) % side) * side + x;
        nbr[3] = ((y + side - 1) % side) * side + x;
        nn = 4;
    } else {
        nbr[0] = (rank + 1) % n;
        nbr[1] = (rank + n - 1) % n;
        nn = 2;
    }
    int halo = 256;
    char *sendb = calloc(halo, 1), *recvb = calloc(halo, 1);
    char *data = malloc(block);
    memset(data, 'a' + rank % 26, block);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                  &fh);
    for (int s = 0; s < steps; s++) {
        /* Pairs (0,1) and (2,3) are opposite directions: send one way, receive the other. */
        for (int k = 0; k < nn; k++)
            MPI_Sendrecv(sendb, halo, MPI_BYTE, nbr[k], k, recvb, halo, MPI_BYTE, nbr[k ^ 1], k,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* The 2-D decomposition also agrees on a residual each step: another call, so the
         * structures differ whatever the loops fold into. */
        if (side > 1) {
            double r = rank, sum;
            MPI_Allreduce(&r, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        if (s % 2 == 1) {
            MPI_Offset off = ((MPI_Offset)(s / 2) * n + rank) * block;
            MPI_File_write_at(fh, off, data, block, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_File_close(&fh);
    free(sendb);
    free(recvb);
    free(data);
    MPI_Finalize();
    return 0;
}
