/* grid_io: a block decomposition on the process grid MPI_Dims_create picks, written to one
 * shared file, as PnetCDF's collective_write example and most stencil codes make it. Each rank
 * owns an L^ND block of ints at its row-major coordinates in the grid (12 ranks in 3-D: 3x2x2,
 * 16: 4x2x2, 32: 4x4x2), so the global extents are dims[d]*L and the block starts coords[d]*L:
 * functions of the grid, which no smooth function of the rank count reproduces. Every rank
 * writes its block through a subarray file view with MPI_File_write_all (STEPS times, one
 * global array after another), then reads the last step back and checks every element.
 * The file is opened on MPI_COMM_WORLD.
 *
 * Usage: grid_io FILE [ND=3] [L=4] [STEPS=2]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "count.h"


int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: grid_io FILE [ND=3] [L=4] [STEPS=2]");
    int nd = argc > 2 ? atoi(argv[2]) : 3;
    int L = argc > 3 ? atoi(argv[3]) : 4;
    int steps = argc > 4 ? atoi(argv[4]) : 2;
    if (nd < 1 || nd > 3 || L < 1 || steps < 1) DIE("grid_io: ND in 1..3, L and STEPS >= 1");
    int dims[3] = {0, 0, 0}, coords[3] = {0, 0, 0};
    if (MPI_Dims_create(n, nd, dims) != MPI_SUCCESS) DIE("MPI_Dims_create");
    count("MPI_Dims_create", 0);
    /* Row-major coordinates, the last dimension fastest (MPI_Cart_create's order). */
    for (int d = nd - 1, rest = rank; d >= 0; d--) {
        coords[d] = rest % dims[d];
        rest /= dims[d];
    }
    int gsizes[3], lsizes[3], starts[3];
    long cells = 1, global = 1;
    for (int d = 0; d < nd; d++) {
        gsizes[d] = dims[d] * L;
        lsizes[d] = L;
        starts[d] = coords[d] * L;
        cells *= L;
        global *= gsizes[d];
    }
    int *block = malloc(cells * sizeof(int)), *back = malloc(cells * sizeof(int));
    if (!block || !back) DIE("out of memory");
    MPI_Datatype view;
    MPI_Type_create_subarray(nd, gsizes, lsizes, starts, MPI_ORDER_C, MPI_INT, &view);
    count("MPI_Type_create_subarray", 0);
    MPI_Type_commit(&view);
    count("MPI_Type_commit", 0);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh))
        DIE("MPI_File_open %s", argv[1]);
    count("MPI_File_open", 0);
    /* Element (i, j, k) of the block holds its global index plus the step. */
#define FILL(s)                                                                    \
    for (long c = 0; c < cells; c++) {                                             \
        long rest = c, g = 0, stride = 1;                                          \
        for (int d = nd - 1; d >= 0; d--) {                                        \
            g += (starts[d] + rest % L) * stride;                                  \
            stride *= gsizes[d];                                                   \
            rest /= L;                                                             \
        }                                                                          \
        block[c] = (int)(g + (s));                                                 \
    }
    for (int s = 0; s < steps; s++) {
        FILL(s);
        MPI_File_set_view(fh, (MPI_Offset)s * global * sizeof(int), MPI_INT, view, "native",
                          MPI_INFO_NULL);
        count("MPI_File_set_view", 0);
        MPI_File_write_all(fh, block, (int)cells, MPI_INT, MPI_STATUS_IGNORE);
        count("MPI_File_write_all", cells * sizeof(int));
    }
    for (long c = 0; c < cells; c++) back[c] = -1;
    MPI_File_set_view(fh, (MPI_Offset)(steps - 1) * global * sizeof(int), MPI_INT, view,
                      "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_File_read_all(fh, back, (int)cells, MPI_INT, MPI_STATUS_IGNORE);
    count("MPI_File_read_all", cells * sizeof(int));
    for (long c = 0; c < cells; c++)
        if (back[c] != block[c]) DIE("rank %d: element %ld is %d, expected %d", rank, c, back[c], block[c]);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&view);
    count("MPI_Type_free", 0);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    free(block);
    free(back);
    return 0;
}
