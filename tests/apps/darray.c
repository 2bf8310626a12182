/* darray: file views whose filetypes are MPI_Type_create_darray types, written collectively.
 * For each case below, file DIR/darray_<name> holds a global array of ints distributed over
 * a process grid made of the n ranks; each rank sets a view with its
 * darray as filetype (etype MPI_INT, at displacement DISP) and writes its local elements with
 * MPI_File_write_all, element k of rank r holding ((r + 1) << 24) | k. Then, after
 * sync-barrier-sync, every rank reads the whole array back (view of ints at DISP,
 * MPI_File_read_at_all) and checks that every element holds the value its owner wrote, the
 * owner and its local index computed here from the standard's definition (not from MPI): a
 * wrong distribution, grid order or element order fails the run.
 * The global sizes grow with n (weak scaling) and do not divide evenly (short last blocks,
 * cyclic blocks wrapping past the end).
 * Usage: darray DIR [B=3] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

#define MAXD 3

struct darray_case {
    const char *name;
    int ndims;
    int order;
    MPI_Offset disp;
    int gsizes[MAXD], distribs[MAXD], dargs[MAXD], psizes[MAXD];
};

/* Global index i of a dimension: its owner's grid coordinate and its index among the owner's
 * indices of that dimension (MPI-3.1 4.1.4). */
static void owner_of(int i, int g, int dist, int darg, int p, int *coord, int *local) {
    if (dist == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        *coord = i / b;
        *local = i % b;
    } else if (dist == MPI_DISTRIBUTE_CYCLIC) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        *coord = (i / b) % p;
        *local = (i / (b * p)) * b + i % b;
    } else {
        *coord = 0;
        *local = i;
    }
}

/* How many indices of a dimension grid coordinate c owns. */
static int local_len(int g, int dist, int darg, int p, int c) {
    int n = 0;
    for (int i = 0; i < g; i++) {
        int oc, l;
        owner_of(i, g, dist, darg, p, &oc, &l);
        n += oc == c;
    }
    return n;
}

static void run_case(const char *dir, const struct darray_case *c, int rank, int n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/darray_%s", dir, c->name);
    int nd = c->ndims;
    long total = 1;
    for (int d = 0; d < nd; d++) total *= c->gsizes[d];

    MPI_Datatype ft;
    if (MPI_Type_create_darray(n, rank, nd, c->gsizes, c->distribs, c->dargs, c->psizes, c->order,
                               MPI_INT, &ft) != MPI_SUCCESS)
        DIE("darray %s: MPI_Type_create_darray failed", c->name);
    count("MPI_Type_create_darray", 0);
    MPI_Type_commit(&ft);
    count("MPI_Type_commit", 0);
    int tsize;
    MPI_Type_size(ft, &tsize);
    int mine = tsize / (int)sizeof(int);
    int *buf = malloc(sizeof(int) * (mine + 1));
    for (int k = 0; k < mine; k++) buf[k] = ((rank + 1) << 24) | k;

    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) !=
        MPI_SUCCESS)
        DIE("darray: cannot open %s", path);
    count("MPI_File_open", 0);
    MPI_File_set_view(fh, c->disp, MPI_INT, ft, "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_Status st;
    int got;
    MPI_File_write_all(fh, buf, mine, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_write_all", got);
    if (got != tsize) DIE("darray %s: rank %d wrote %d of %d bytes", c->name, rank, got, tsize);
    /* MPI-IO's consistency rule for another rank's data: sync, barrier, sync. */
    MPI_File_sync(fh);
    count("MPI_File_sync", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    MPI_File_sync(fh);
    count("MPI_File_sync", 0);
    MPI_File_set_view(fh, c->disp, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    int *all = malloc(sizeof(int) * total);
    MPI_File_read_at_all(fh, 0, all, (int)total, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_read_at_all", got);
    if (got != (int)(total * sizeof(int)))
        DIE("darray %s: rank %d read %d bytes of %ld", c->name, rank, got, total * 4);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);

    /* Every element: its index along each dimension (C order: the last fastest; Fortran:
     * the first), its owner's grid coordinates and rank (row-major grid), its index in the
     * owner's local array (same order as the global one). */
    int fortran = c->order == MPI_ORDER_FORTRAN;
    for (long lin = 0; lin < total; lin++) {
        int idx[MAXD], coord[MAXD], local[MAXD];
        long rest = lin;
        for (int s = 0; s < nd; s++) {
            int d = fortran ? s : nd - 1 - s;
            idx[d] = (int)(rest % c->gsizes[d]);
            rest /= c->gsizes[d];
        }
        int owner = 0;
        for (int d = 0; d < nd; d++) {
            owner_of(idx[d], c->gsizes[d], c->distribs[d], c->dargs[d], c->psizes[d], &coord[d],
                     &local[d]);
            owner = owner * c->psizes[d] + coord[d];
        }
        long k = 0;
        for (int s = 0; s < nd; s++) {
            int d = fortran ? nd - 1 - s : s;
            k = k * local_len(c->gsizes[d], c->distribs[d], c->dargs[d], c->psizes[d], coord[d]) +
                local[d];
        }
        int want = ((owner + 1) << 24) | (int)k;
        if (all[lin] != want)
            DIE("darray %s: element %ld holds %#x, its owner %d (local %ld) wrote %#x", c->name,
                lin, all[lin], owner, k, want);
    }
    free(all);
    free(buf);
    MPI_Type_free(&ft);
    count("MPI_Type_free", 0);
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: darray DIR [B]");
    int b = argc > 2 ? atoi(argv[2]) : 3;
    if (b < 1) DIE("darray: B must be >= 1");
    const int BLK = MPI_DISTRIBUTE_BLOCK, CYC = MPI_DISTRIBUTE_CYCLIC, NON = MPI_DISTRIBUTE_NONE,
              DFLT = MPI_DISTRIBUTE_DFLT_DARG;
    /* Grids of 2 x n/2 and 2 x 2 x n/4 when n divides so (1 where it does not). */
    int p0 = n % 2 == 0 ? 2 : 1, p1 = n / p0;
    int a0 = p0, a1 = p1 % 2 == 0 ? 2 : 1, a2 = p1 / a1;
    struct darray_case cases[] = {
        /* BLOCK x BLOCK on a 2 x n/2 grid, C order: the last block of each dimension short. */
        {"block_block_c", 2, MPI_ORDER_C, 0, {2 * b + 1, p1 * b + 1}, {BLK, BLK}, {DFLT, DFLT},
         {p0, p1}},
        /* CYCLIC(2) x BLOCK(b+1), Fortran order, after a 64-byte header: the cyclic blocks
         * wrap past the end, the explicit block leaves the last rank short. */
        {"cyclic_block_f", 2, MPI_ORDER_FORTRAN, 64, {4 * b + 3, p1 * b + 1}, {CYC, BLK},
         {2, b + 1}, {p0, p1}},
        /* NONE x CYCLIC (default 1) on a 1 x n grid, C order. */
        {"none_cyclic_c", 2, MPI_ORDER_C, 0, {b + 1, n * b + 2}, {NON, CYC}, {DFLT, DFLT}, {1, n}},
        /* 3-D: BLOCK x CYCLIC(2) x NONE on 2 x n/2 x 1, C order. */
        {"block_cyclic_none_c", 3, MPI_ORDER_C, 0, {2 * b + 1, p1 * b + 3, b}, {BLK, CYC, NON},
         {DFLT, 2, DFLT}, {p0, p1, 1}},
        /* 3-D: CYCLIC x BLOCK x BLOCK(b+1) on 2 x 2 x n/4, Fortran order. */
        {"cyclic_block_block_f", 3, MPI_ORDER_FORTRAN, 0, {b + 2, 2 * b + 1, a2 * b + 1},
         {CYC, BLK, BLK}, {DFLT, DFLT, b + 1}, {a0, a1, a2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(argv[1], &cases[i], rank, n);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    return 0;
}
