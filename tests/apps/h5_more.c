/* h5_more: parallel HDF5 beyond h5_coll's collective hyperslabs, for the HDF5 layer's tests.
 * One file on MPI_COMM_WORLD (H5Pset_fapl_mpio), then:
 *   a group "grp" with an attribute "nranks" (4 ints, the same on every rank: attributes are
 *       written collectively in parallel HDF5);
 *   a chunked 2-D dataset "grp/chunked" of n*ROWS rows of COLS ints, chunks of ROWS rows;
 *       each rank writes its ROWS rows with one independent H5Dwrite
 *       (H5Pset_dxpl_mpio(H5FD_MPIO_INDEPENDENT));
 *   per step s of STEPS, a contiguous 1-D dataset "contig<s>" of n*K ints: each rank writes
 *       its K elements at rank*K independently with a hyperslab, then, with a point selection
 *       (H5Sselect_elements), the first element again;
 *   an extendible dataset "ext" (chunked, unlimited rows, COLS columns, starting empty):
 *       every step extends it by n rows (H5Dset_extent, collective) and each rank writes row
 *       s*n + rank collectively (H5FD_MPIO_COLLECTIVE);
 *   H5Fflush(H5F_SCOPE_GLOBAL), the file closed; then reopened read-only and each rank reads
 *       back its rows of "grp/chunked" independently (H5Dread) and checks every element.
 * Every HDF5 call the HDF5 layer records is counted (count.h, "COUNT" lines after
 * MPI_Finalize; H5Dwrite/H5Dread/H5Awrite with their bytes: elements times element size).
 * Usage: h5_more PATH [-s STEPS] [-r ROWS] [-c COLS] [-k K] */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

static int rank, n;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) < 0) DIE("h5_more: %s failed (line %d)", #x, __LINE__);                           \
    } while (0)

/* Calls the HDF5 function `f` (checked) and counts it under its name, with `bytes`. */
#define H5(f, bytes, ...)                                                                          \
    do {                                                                                           \
        CHECK(f(__VA_ARGS__));                                                                     \
        count(#f, bytes);                                                                          \
    } while (0)
/* As H5, keeping the identifier `f` returns in `var`. */
#define H5ID(var, f, ...)                                                                          \
    do {                                                                                           \
        CHECK(var = f(__VA_ARGS__));                                                               \
        count(#f, 0);                                                                              \
    } while (0)

static int value(long long i, int which) { return (int)(i * 3 + which); }

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: h5_more PATH [-s STEPS] [-r ROWS] [-c COLS] [-k K]");
    int steps = 3;
    long long rows = 4, cols = 256, k = 1000;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) rows = atoll(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) cols = atoll(argv[++i]);
        else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) k = atoll(argv[++i]);
        else DIE("h5_more: bad option %s", argv[i]);
    }
    if (steps < 1 || rows < 1 || cols < 1 || k < 1) DIE("h5_more: sizes too small");
    const long long isz = sizeof(int);
    int *buf = malloc((size_t)(rows * cols > k ? rows * cols : k) * sizeof(int));

    hid_t fapl, ind, coll, file;
    CHECK(fapl = H5Pcreate(H5P_FILE_ACCESS));
    H5(H5Pset_fapl_mpio, 0, fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    CHECK(ind = H5Pcreate(H5P_DATASET_XFER));
    H5(H5Pset_dxpl_mpio, 0, ind, H5FD_MPIO_INDEPENDENT);
    CHECK(coll = H5Pcreate(H5P_DATASET_XFER));
    H5(H5Pset_dxpl_mpio, 0, coll, H5FD_MPIO_COLLECTIVE);
    H5ID(file, H5Fcreate, argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);

    /* The group and its attribute. */
    hid_t grp, aspace, attr;
    H5ID(grp, H5Gcreate2, file, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t adims[1] = {4};
    H5ID(aspace, H5Screate_simple, 1, adims, NULL);
    H5ID(attr, H5Acreate2, grp, "nranks", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    int ainfo[4] = {n, steps, (int)rows, (int)cols};
    H5(H5Awrite, 4 * isz, attr, H5T_NATIVE_INT, ainfo);
    H5(H5Aclose, 0, attr);
    H5(H5Sclose, 0, aspace);

    /* The chunked dataset, written independently. */
    hid_t dcpl, space, dset, fspace, mspace;
    CHECK(dcpl = H5Pcreate(H5P_DATASET_CREATE));
    hsize_t cdims[2] = {(hsize_t)rows, (hsize_t)cols};
    H5(H5Pset_chunk, 0, dcpl, 2, cdims);
    hsize_t dims[2] = {(hsize_t)(n * rows), (hsize_t)cols};
    H5ID(space, H5Screate_simple, 2, dims, NULL);
    H5ID(dset, H5Dcreate2, grp, "chunked", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5(H5Sclose, 0, space);
    CHECK(H5Pclose(dcpl));
    H5ID(fspace, H5Dget_space, dset);
    hsize_t start[2] = {(hsize_t)(rank * rows), 0};
    H5(H5Sselect_hyperslab, 0, fspace, H5S_SELECT_SET, start, NULL, cdims, NULL);
    H5ID(mspace, H5Screate_simple, 2, cdims, NULL);
    H5(H5Sselect_all, 0, mspace);
    for (long long i = 0; i < rows * cols; i++) buf[i] = value(rank * rows * cols + i, 1);
    H5(H5Dwrite, rows * cols * isz, dset, H5T_NATIVE_INT, mspace, fspace, ind, buf);
    H5(H5Sclose, 0, mspace);
    H5(H5Sclose, 0, fspace);
    H5(H5Dclose, 0, dset);
    H5(H5Gclose, 0, grp);

    /* The extendible dataset: empty, unlimited rows. */
    hid_t ext;
    hsize_t edims[2] = {0, (hsize_t)cols}, emax[2] = {H5S_UNLIMITED, (hsize_t)cols};
    hsize_t echunk[2] = {(hsize_t)n, (hsize_t)cols};
    CHECK(dcpl = H5Pcreate(H5P_DATASET_CREATE));
    H5(H5Pset_chunk, 0, dcpl, 2, echunk);
    H5ID(space, H5Screate_simple, 2, edims, emax);
    H5ID(ext, H5Dcreate2, file, "ext", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5(H5Sclose, 0, space);
    CHECK(H5Pclose(dcpl));

    for (int s = 0; s < steps; s++) {
        /* contig<s>: a hyperslab, then one point, both independent. */
        char name[32];
        snprintf(name, sizeof name, "contig%d", s);
        hsize_t cd[1] = {(hsize_t)(n * k)};
        H5ID(space, H5Screate_simple, 1, cd, NULL);
        H5ID(dset, H5Dcreate2, file, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5(H5Sclose, 0, space);
        H5ID(fspace, H5Dget_space, dset);
        hsize_t st[1] = {(hsize_t)(rank * k)}, cnt[1] = {(hsize_t)k};
        H5(H5Sselect_hyperslab, 0, fspace, H5S_SELECT_SET, st, NULL, cnt, NULL);
        H5ID(mspace, H5Screate_simple, 1, cnt, NULL);
        for (long long i = 0; i < k; i++) buf[i] = value(rank * k + i, s);
        H5(H5Dwrite, k * isz, dset, H5T_NATIVE_INT, mspace, fspace, ind, buf);
        H5(H5Sclose, 0, mspace);
        hsize_t one[1] = {1};
        H5(H5Sselect_elements, 0, fspace, H5S_SELECT_SET, 1, st);
        H5ID(mspace, H5Screate_simple, 1, one, NULL);
        H5(H5Dwrite, isz, dset, H5T_NATIVE_INT, mspace, fspace, ind, buf);
        H5(H5Sclose, 0, mspace);
        H5(H5Sclose, 0, fspace);
        H5(H5Dclose, 0, dset);

        /* ext: n more rows, row s*n + rank from each rank, collectively. */
        hsize_t grown[2] = {(hsize_t)((s + 1) * n), (hsize_t)cols};
        H5(H5Dset_extent, 0, ext, grown);
        H5ID(fspace, H5Dget_space, ext);
        hsize_t es[2] = {(hsize_t)(s * n + rank), 0}, ec[2] = {1, (hsize_t)cols};
        H5(H5Sselect_hyperslab, 0, fspace, H5S_SELECT_SET, es, NULL, ec, NULL);
        H5ID(mspace, H5Screate_simple, 2, ec, NULL);
        for (long long i = 0; i < cols; i++) buf[i] = value((s * n + rank) * cols + i, 2);
        H5(H5Dwrite, cols * isz, ext, H5T_NATIVE_INT, mspace, fspace, coll, buf);
        H5(H5Sclose, 0, mspace);
        H5(H5Sclose, 0, fspace);
    }
    H5(H5Dclose, 0, ext);
    H5(H5Fflush, 0, file, H5F_SCOPE_GLOBAL);
    H5(H5Fclose, 0, file);

    /* Read back this rank's rows of the chunked dataset. */
    H5ID(file, H5Fopen, argv[1], H5F_ACC_RDONLY, fapl);
    H5ID(dset, H5Dopen2, file, "grp/chunked", H5P_DEFAULT);
    H5ID(fspace, H5Dget_space, dset);
    H5(H5Sselect_hyperslab, 0, fspace, H5S_SELECT_SET, start, NULL, cdims, NULL);
    H5ID(mspace, H5Screate_simple, 2, cdims, NULL);
    for (long long i = 0; i < rows * cols; i++) buf[i] = -1;
    H5(H5Dread, rows * cols * isz, dset, H5T_NATIVE_INT, mspace, fspace, ind, buf);
    for (long long i = 0; i < rows * cols; i++)
        if (buf[i] != value(rank * rows * cols + i, 1))
            DIE("h5_more: grp/chunked element %lld is %d", rank * rows * cols + i, buf[i]);
    H5(H5Sclose, 0, mspace);
    H5(H5Sclose, 0, fspace);
    H5(H5Dclose, 0, dset);
    H5(H5Fclose, 0, file);
    CHECK(H5Pclose(ind));
    CHECK(H5Pclose(coll));
    CHECK(H5Pclose(fapl));
    free(buf);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
