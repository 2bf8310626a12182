/* darray_weak: darray file views of a weak-scaled global array, every division even, so that
 * each rank's share follows the rank count exactly (darray.c's uneven shares are piecewise in
 * the rank). File DIR/weak_2d: a (2*B) x (n*B) array of ints on a 2 x n/2 grid, BLOCK x
 * CYCLIC(2), C order; file DIR/weak_3d: B x (2*B) x (n/2*B) on 1 x 2 x n/2, NONE x BLOCK x
 * CYCLIC, Fortran order. Each rank writes its elements collectively (its rank + 1 in every
 * byte) and reads them back collectively through the same view, checking them.
 * Usage: darray_weak DIR [B=4]   (n even) */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

static void one(const char *dir, const char *name, int nd, int *g, int *d, int *a, int *p,
                int order, int rank, int n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    MPI_Datatype ft;
    MPI_Type_create_darray(n, rank, nd, g, d, a, p, order, MPI_INT, &ft);
    count("MPI_Type_create_darray", 0);
    MPI_Type_commit(&ft);
    count("MPI_Type_commit", 0);
    int size;
    MPI_Type_size(ft, &size);
    char *buf = malloc(size + 1), *back = malloc(size + 1);
    memset(buf, rank + 1, size);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) !=
        MPI_SUCCESS)
        DIE("darray_weak: cannot open %s", path);
    count("MPI_File_open", 0);
    MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_Status st;
    int got;
    MPI_File_write_all(fh, buf, size / 4, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_write_all", got);
    MPI_File_read_at_all(fh, 0, back, size / 4, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_read_at_all", got);
    if (got != size || memcmp(buf, back, size) != 0)
        DIE("darray_weak: %s: rank %d read back other bytes", name, rank);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&ft);
    count("MPI_Type_free", 0);
    free(buf);
    free(back);
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: darray_weak DIR [B]");
    int b = argc > 2 ? atoi(argv[2]) : 4;
    if (n % 2 != 0 || b < 1) DIE("darray_weak: n must be even, B >= 1");
    int h = n / 2;
    int g2[2] = {2 * b, n * b}, d2[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        a2[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, p2[2] = {2, h};
    one(argv[1], "weak_2d", 2, g2, d2, a2, p2, MPI_ORDER_C, rank, n);
    int g3[3] = {b, 2 * b, h * b},
        d3[3] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        a3[3] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG},
        p3[3] = {1, 2, h};
    one(argv[1], "weak_3d", 3, g3, d3, a3, p3, MPI_ORDER_FORTRAN, rank, n);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    return 0;
}
