/* grid3d: a 3-D domain decomposition as stencil codes make it. MPI_Dims_create picks the
 * process grid for the rank count (12 ranks: 3x2x2, 16: 4x2x2, 32: 4x4x2), MPI_Cart_create
 * builds a periodic Cartesian communicator on it, and each rank owns an L x L x L block of
 * doubles at its coordinates. Each step exchanges the six faces with the neighbours that
 * MPI_Cart_shift names (MPI_Sendrecv, L*L doubles each way), then every rank writes its
 * block of the global array into one shared file through a subarray file view with
 * MPI_File_write_all, and at the end reads the whole step back the same way and checks every
 * element (a wrong decomposition or view fails the run). The global extents, the blocks'
 * starts and the neighbours' ranks are functions of the grid, which no smooth function of
 * the rank count reproduces.
 *
 * Usage: grid3d FILE [L=8] [STEPS=2]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "count.h"


int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: grid3d FILE [L=8] [STEPS=2]");
    int L = argc > 2 ? atoi(argv[2]) : 8;
    int steps = argc > 3 ? atoi(argv[3]) : 2;
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, coords[3];
    MPI_Dims_create(n, 3, dims);
    count("MPI_Dims_create", 0);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    count("MPI_Cart_create", 0);
    MPI_Cart_coords(cart, rank, 3, coords);
    int gsizes[3], lsizes[3] = {L, L, L}, starts[3];
    for (int d = 0; d < 3; d++) {
        gsizes[d] = dims[d] * L;
        starts[d] = coords[d] * L;
    }
    long cells = (long)L * L * L, face = (long)L * L;
    double *block = malloc(cells * sizeof(double));
    double *out = malloc(face * sizeof(double)), *in = malloc(face * sizeof(double));
    if (!block || !out || !in) DIE("out of memory");
    MPI_Datatype view;
    MPI_Type_create_subarray(3, gsizes, lsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &view);
    count("MPI_Type_create_subarray", 0);
    MPI_Type_commit(&view);
    count("MPI_Type_commit", 0);
    MPI_File fh;
    if (MPI_File_open(cart, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh))
        DIE("MPI_File_open %s", argv[1]);
    count("MPI_File_open", 0);
    long long step_bytes = (long long)n * cells * sizeof(double);
    for (int s = 0; s < steps; s++) {
        for (int d = 0; d < 3; d++) {
            int lo, hi;
            MPI_Cart_shift(cart, d, 1, &lo, &hi);
            for (long i = 0; i < face; i++) out[i] = rank;
            MPI_Sendrecv(out, (int)face, MPI_DOUBLE, hi, d, in, (int)face, MPI_DOUBLE, lo, d, cart,
                         MPI_STATUS_IGNORE);
            count("MPI_Sendrecv", 0);
            if (in[0] != lo) DIE("step %d dim %d: face from %g, expected %d", s, d, in[0], lo);
            MPI_Sendrecv(out, (int)face, MPI_DOUBLE, lo, d + 3, in, (int)face, MPI_DOUBLE, hi,
                         d + 3, cart, MPI_STATUS_IGNORE);
            count("MPI_Sendrecv", 0);
        }
        /* Each element holds its global index, plus the step. */
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++)
                for (int k = 0; k < L; k++) {
                    long g = ((long)(starts[0] + i) * gsizes[1] + starts[1] + j) * gsizes[2] +
                             starts[2] + k;
                    block[((long)i * L + j) * L + k] = (double)g + s;
                }
        MPI_File_set_view(fh, s * step_bytes, MPI_DOUBLE, view, "native", MPI_INFO_NULL);
        count("MPI_File_set_view", 0);
        MPI_File_write_all(fh, block, (int)cells, MPI_DOUBLE, MPI_STATUS_IGNORE);
        count("MPI_File_write_all", cells * sizeof(double));
    }
    /* Read the last step back through the same view and check every element. */
    for (long i = 0; i < cells; i++) block[i] = -1;
    MPI_File_set_view(fh, (steps - 1) * step_bytes, MPI_DOUBLE, view, "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_File_read_all(fh, block, (int)cells, MPI_DOUBLE, MPI_STATUS_IGNORE);
    count("MPI_File_read_all", cells * sizeof(double));
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            for (int k = 0; k < L; k++) {
                long g = ((long)(starts[0] + i) * gsizes[1] + starts[1] + j) * gsizes[2] +
                         starts[2] + k;
                double got = block[((long)i * L + j) * L + k];
                if (got != (double)g + steps - 1)
                    DIE("rank %d: element (%d,%d,%d) is %g, expected %ld", rank, i, j, k, got,
                        g + steps - 1);
            }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&view);
    count("MPI_Type_free", 0);
    MPI_Comm_free(&cart);
    count("MPI_Comm_free", 0);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    free(block);
    free(out);
    free(in);
    return 0;
}
