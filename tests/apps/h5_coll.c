/* h5_coll: parallel HDF5 writing datasets collectively, under the MPI library's defaults.
 * One file (H5Pset_fapl_mpio on MPI_COMM_WORLD, with the MPI-IO hints of -H, none by
 * default), STEPS steps; each step creates
 * two datasets of ints and writes them with one collective H5Dwrite each
 * (H5Pset_dxpl_mpio(H5FD_MPIO_COLLECTIVE)):
 *   "strong<step>": strong scaling, a 1-D dataset of T elements; each of the n ranks writes
 *       floor(T/n) elements at rank*floor(T/n) (the last T mod n elements are not written:
 *       the dataset's fill value stays there);
 *   "weak<step>": weak scaling, a 2-D dataset of n*ROWS rows of COLS elements; each rank
 *       writes ROWS rows: rows rank*ROWS .. rank*ROWS+ROWS-1 (one block), or with -i the
 *       interleaved rows rank, rank+n, rank+2n, ... (a strided hyperslab, which HDF5 turns
 *       into a derived MPI datatype).
 * With -z, odd ranks select nothing in the strong dataset (zero-size participants).
 * Then the file is closed; with -R it is reopened read-only and each rank reads back its
 * neighbour's (rank+1 mod n) part of every dataset collectively and checks every element.
 * -H KEY=VALUE (repeatable) passes an MPI-IO hint through the file access property list.
 * Usage: h5_coll PATH [-t T] [-r ROWS] [-c COLS] [-s STEPS] [-i] [-z] [-R] [-H KEY=VALUE]... */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

static int rank, n;
/* The hints of -H, given to every open (MPI_INFO_NULL without any). */
static MPI_Info hints = MPI_INFO_NULL;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) < 0) DIE("h5_coll: %s failed (line %d)", #x, __LINE__);                           \
    } while (0)

/* The value of element i of a dataset of this step: its content names its position. */
static int value(int step, int which, long long i) { return (int)(i * 4 + which * 2 + step); }

struct opts {
    long long total, rows, cols;
    int steps, interleaved, zeros, readback;
};

/* Rank r's selection in the strong dataset: its first element and element count. */
static void strong_part(const struct opts *o, int r, hsize_t *start, hsize_t *count) {
    hsize_t part = (hsize_t)(o->total / n);
    *start = (hsize_t)r * part;
    *count = o->zeros && r % 2 ? 0 : part;
}

/* Selects rank r's rows of the weak dataset in `space`; returns the rows' first row index
 * and the row stride (1 for a block, n interleaved). */
static void weak_select(const struct opts *o, int r, hid_t space, hsize_t *first, hsize_t *stride) {
    *first = o->interleaved ? (hsize_t)r : (hsize_t)r * o->rows;
    *stride = o->interleaved ? (hsize_t)n : 1;
    hsize_t start[2] = {*first, 0}, str[2] = {*stride, 1}, cnt[2] = {(hsize_t)o->rows, 1},
            blk[2] = {1, (hsize_t)o->cols};
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, str, cnt, blk));
}

/* Writes (or, reading, reads back and checks) rank r's part of the step's two datasets. */
static void strong(hid_t file, hid_t dxpl, const struct opts *o, int step, int r, int reading) {
    char name[32];
    snprintf(name, sizeof name, "strong%d", step);
    hid_t dset;
    if (reading) {
        CHECK(dset = H5Dopen2(file, name, H5P_DEFAULT));
    } else {
        hsize_t dims[1] = {(hsize_t)o->total};
        hid_t space;
        CHECK(space = H5Screate_simple(1, dims, NULL));
        CHECK(dset = H5Dcreate2(file, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        CHECK(H5Sclose(space));
    }
    hsize_t start, cnt;
    strong_part(o, r, &start, &cnt);
    hid_t fspace, mspace;
    CHECK(fspace = H5Dget_space(dset));
    hsize_t mdims[1] = {cnt > 0 ? cnt : 1};
    CHECK(mspace = H5Screate_simple(1, mdims, NULL));
    if (cnt > 0) {
        CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL));
    } else {
        CHECK(H5Sselect_none(fspace));
        CHECK(H5Sselect_none(mspace));
    }
    int *buf = malloc(mdims[0] * sizeof(int));
    if (reading) {
        CHECK(H5Dread(dset, H5T_NATIVE_INT, mspace, fspace, dxpl, buf));
        for (hsize_t i = 0; i < cnt; i++)
            if (buf[i] != value(step, 0, start + i))
                DIE("h5_coll: %s element %llu is %d", name, (unsigned long long)(start + i), buf[i]);
    } else {
        for (hsize_t i = 0; i < cnt; i++) buf[i] = value(step, 0, start + i);
        CHECK(H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, dxpl, buf));
    }
    free(buf);
    CHECK(H5Sclose(mspace));
    CHECK(H5Sclose(fspace));
    CHECK(H5Dclose(dset));
}

static void weak(hid_t file, hid_t dxpl, const struct opts *o, int step, int r, int reading) {
    char name[32];
    snprintf(name, sizeof name, "weak%d", step);
    hid_t dset;
    if (reading) {
        CHECK(dset = H5Dopen2(file, name, H5P_DEFAULT));
    } else {
        hsize_t dims[2] = {(hsize_t)(n * o->rows), (hsize_t)o->cols};
        hid_t space;
        CHECK(space = H5Screate_simple(2, dims, NULL));
        CHECK(dset = H5Dcreate2(file, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        CHECK(H5Sclose(space));
    }
    hid_t fspace, mspace;
    CHECK(fspace = H5Dget_space(dset));
    hsize_t first, stride;
    weak_select(o, r, fspace, &first, &stride);
    hsize_t mdims[2] = {(hsize_t)o->rows, (hsize_t)o->cols};
    CHECK(mspace = H5Screate_simple(2, mdims, NULL));
    long long len = o->rows * o->cols;
    int *buf = malloc(len * sizeof(int));
    /* Element (k, c) of the rank's rows is row first + k*stride of the dataset. */
#define GLOBAL(k, c) ((long long)(first + (k) * stride) * o->cols + (c))
    if (reading) {
        CHECK(H5Dread(dset, H5T_NATIVE_INT, mspace, fspace, dxpl, buf));
        for (long long k = 0; k < o->rows; k++)
            for (long long c = 0; c < o->cols; c++)
                if (buf[k * o->cols + c] != value(step, 1, GLOBAL(k, c)))
                    DIE("h5_coll: %s element %lld is %d", name, GLOBAL(k, c), buf[k * o->cols + c]);
    } else {
        for (long long k = 0; k < o->rows; k++)
            for (long long c = 0; c < o->cols; c++) buf[k * o->cols + c] = value(step, 1, GLOBAL(k, c));
        CHECK(H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, dxpl, buf));
    }
#undef GLOBAL
    free(buf);
    CHECK(H5Sclose(mspace));
    CHECK(H5Sclose(fspace));
    CHECK(H5Dclose(dset));
}

/* Opens (creating, or read-only) the file for parallel access on every rank. */
static hid_t open_file(const char *path, int create) {
    hid_t fapl, file;
    CHECK(fapl = H5Pcreate(H5P_FILE_ACCESS));
    CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, hints));
    if (create)
        CHECK(file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    else
        CHECK(file = H5Fopen(path, H5F_ACC_RDONLY, fapl));
    CHECK(H5Pclose(fapl));
    return file;
}

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2)
        DIE("usage: h5_coll PATH [-t T] [-r ROWS] [-c COLS] [-s STEPS] [-i] [-z] [-R] [-H KEY=VALUE]...");
    struct opts o = {.total = 1000003, .rows = 4, .cols = 1024, .steps = 2};
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) o.total = atoll(argv[++i]);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) o.rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) o.cols = atoll(argv[++i]);
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) o.steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-i") == 0) o.interleaved = 1;
        else if (strcmp(argv[i], "-z") == 0) o.zeros = 1;
        else if (strcmp(argv[i], "-R") == 0) o.readback = 1;
        else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc) {
            char *kv = argv[++i], *eq = strchr(kv, '=');
            if (!eq) DIE("h5_coll: -H wants KEY=VALUE, not %s", kv);
            *eq = '\0';
            if (hints == MPI_INFO_NULL) MPI_Info_create(&hints);
            MPI_Info_set(hints, kv, eq + 1);
        } else DIE("h5_coll: bad option %s", argv[i]);
    }
    if (o.total < n || o.rows < 1 || o.cols < 1 || o.steps < 1) DIE("h5_coll: sizes too small");
    hid_t dxpl;
    CHECK(dxpl = H5Pcreate(H5P_DATASET_XFER));
    CHECK(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));

    hid_t file = open_file(argv[1], 1);
    for (int step = 0; step < o.steps; step++) {
        strong(file, dxpl, &o, step, rank, 0);
        weak(file, dxpl, &o, step, rank, 0);
    }
    CHECK(H5Fclose(file));

    if (o.readback) {
        file = open_file(argv[1], 0);
        int nb = (rank + 1) % n;
        for (int step = 0; step < o.steps; step++) {
            strong(file, dxpl, &o, step, nb, 1);
            weak(file, dxpl, &o, step, nb, 1);
        }
        CHECK(H5Fclose(file));
    }
    CHECK(H5Pclose(dxpl));
    if (hints != MPI_INFO_NULL) MPI_Info_free(&hints);
    MPI_Finalize();
    return 0;
}
