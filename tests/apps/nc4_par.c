/* nc4_par: a parallel NetCDF-4 program (over parallel HDF5 and MPI-IO) for the NetCDF layer's
 * tests. One file created with nc_create_par on MPI_COMM_WORLD (NC_NETCDF4), then in define
 * mode:
 *   dimensions "x" (n*K), "y" (n*C) and "t" (NC_UNLIMITED);
 *   "coll" int(x), written collectively (nc_var_par_access NC_COLLECTIVE): each rank its K
 *       elements at rank*K with nc_put_vara_int;
 *   "indep" double(x), written independently (NC_INDEPENDENT): each rank its K elements at
 *       rank*K with nc_put_vara_double;
 *   "inter" int(x), collective: each rank K elements interleaved, start rank, stride n
 *       (nc_put_vars_int);
 *   "rec" float(t, y), chunked {1, C} (nc_def_var_chunking), collective: per step s of STEPS
 *       each rank writes its C columns of record s (the unlimited dimension grows);
 *   attributes: "title" (text) and "nranks" (int) on the file, "units" (text) on coll,
 *       "scale" (double) on indep;
 * nc_enddef; the writes; nc_sync; nc_redef, one more attribute "steps" (int), nc_enddef; the
 * file closed. Then reopened with nc_open_par (NC_NOWRITE) and each rank reads back its
 * region of "coll" (nc_get_vara_int) and its interleaved elements of "inter"
 * (nc_get_vars_int), checks every element, and closes it.
 * Every nc_ call the NetCDF layer records is counted under its op's name (count.h, "COUNT"
 * lines after MPI_Finalize; the region calls and attributes with their bytes: elements times
 * the memory type's size).
 * With -f (fixed), "t" is a fixed dimension of STEPS records and "rec" is contiguous (no chunk
 * index, so the file's metadata keeps its number of objects at every rank count: the dealt
 * collective metadata flush is then the one thing that changes shape with n; the record writes
 * do not extend the variable).
 * Usage: nc4_par PATH [-s STEPS] [-k K] [-c C] [-f] */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdlib.h>
#include "count.h"

static int rank, n;

/* Calls the NetCDF function `f` (checked) and counts it under the op name `op`, with `bytes`. */
#define NC(op, bytes, f, ...)                                                                      \
    do {                                                                                           \
        int rc_ = f(__VA_ARGS__);                                                                  \
        if (rc_ != NC_NOERR) DIE("nc4_par: %s: %s (line %d)", #f, nc_strerror(rc_), __LINE__);     \
        count(op, bytes);                                                                          \
    } while (0)

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: nc4_par PATH [-s STEPS] [-k K] [-c C] [-f]");
    int steps = 3;
    size_t k = 1000, c = 64;
    int fixed = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) k = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) c = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "-f") == 0) fixed = 1;
        else DIE("nc4_par: bad option %s", argv[i]);
    }
    if (steps < 1 || k < 1 || c < 1) DIE("nc4_par: sizes too small");
    const char *path = argv[1];
    int *ibuf = malloc(k * sizeof(int));
    double *dbuf = malloc(k * sizeof(double));
    float *fbuf = malloc(c * sizeof(float));

    int ncid, dx, dy, dt, vcoll, vindep, vinter, vrec;
    NC("nc_create_par", 0, nc_create_par, path, NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD,
       MPI_INFO_NULL, &ncid);
    NC("nc_def_dim", 0, nc_def_dim, ncid, "x", (size_t)n * k, &dx);
    NC("nc_def_dim", 0, nc_def_dim, ncid, "y", (size_t)n * c, &dy);
    NC("nc_def_dim", 0, nc_def_dim, ncid, "t", fixed ? (size_t)steps : NC_UNLIMITED, &dt);
    NC("nc_def_var", 0, nc_def_var, ncid, "coll", NC_INT, 1, &dx, &vcoll);
    NC("nc_def_var", 0, nc_def_var, ncid, "indep", NC_DOUBLE, 1, &dx, &vindep);
    NC("nc_def_var", 0, nc_def_var, ncid, "inter", NC_INT, 1, &dx, &vinter);
    int rdims[2] = {dt, dy};
    NC("nc_def_var", 0, nc_def_var, ncid, "rec", NC_FLOAT, 2, rdims, &vrec);
    size_t chunks[2] = {1, c};
    if (fixed)
        NC("nc_def_var_chunking", 0, nc_def_var_chunking, ncid, vrec, NC_CONTIGUOUS, NULL);
    else
        NC("nc_def_var_chunking", 0, nc_def_var_chunking, ncid, vrec, NC_CHUNKED, chunks);
    const char *title = "iotrex nc4_par";
    NC("nc_put_att", strlen(title), nc_put_att_text, ncid, NC_GLOBAL, "title", strlen(title),
       title);
    NC("nc_put_att", sizeof(int), nc_put_att_int, ncid, NC_GLOBAL, "nranks", NC_INT, 1, &n);
    NC("nc_put_att", 5, nc_put_att_text, ncid, vcoll, "units", 5, "count");
    double scale[2] = {0.5, 2.0};
    NC("nc_put_att", 2 * sizeof(double), nc_put_att_double, ncid, vindep, "scale", NC_DOUBLE, 2,
       scale);
    NC("nc_enddef", 0, nc_enddef, ncid);

    NC("nc_var_par_access", 0, nc_var_par_access, ncid, vcoll, NC_COLLECTIVE);
    NC("nc_var_par_access", 0, nc_var_par_access, ncid, vindep, NC_INDEPENDENT);
    NC("nc_var_par_access", 0, nc_var_par_access, ncid, vinter, NC_COLLECTIVE);
    NC("nc_var_par_access", 0, nc_var_par_access, ncid, vrec, NC_COLLECTIVE);

    size_t start = (size_t)rank * k, cnt = k;
    for (size_t i = 0; i < k; i++) ibuf[i] = (int)(start + i);
    NC("nc_put_vara", (long long)(k * sizeof(int)), nc_put_vara_int, ncid, vcoll, &start, &cnt,
       ibuf);
    for (size_t i = 0; i < k; i++) dbuf[i] = 0.5 * (double)(start + i);
    NC("nc_put_vara", (long long)(k * sizeof(double)), nc_put_vara_double, ncid, vindep, &start,
       &cnt, dbuf);
    size_t istart = (size_t)rank;
    ptrdiff_t istride = n;
    for (size_t i = 0; i < k; i++) ibuf[i] = -(int)(rank + i * n);
    NC("nc_put_vars", (long long)(k * sizeof(int)), nc_put_vars_int, ncid, vinter, &istart, &cnt,
       &istride, ibuf);
    for (int s = 0; s < steps; s++) {
        size_t rs[2] = {(size_t)s, (size_t)rank * c}, rc[2] = {1, c};
        for (size_t i = 0; i < c; i++) fbuf[i] = (float)(s * 1000 + rank) + (float)i / 1024.0f;
        NC("nc_put_vara", (long long)(c * sizeof(float)), nc_put_vara_float, ncid, vrec, rs, rc,
           fbuf);
    }
    NC("nc_sync", 0, nc_sync, ncid);
    NC("nc_redef", 0, nc_redef, ncid);
    NC("nc_put_att", sizeof(int), nc_put_att_int, ncid, NC_GLOBAL, "steps", NC_INT, 1, &steps);
    NC("nc_enddef", 0, nc_enddef, ncid);
    NC("nc_close", 0, nc_close, ncid);

    /* Read back. */
    NC("nc_open_par", 0, nc_open_par, path, NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid);
    NC("nc_get_vara", (long long)(k * sizeof(int)), nc_get_vara_int, ncid, vcoll, &start, &cnt,
       ibuf);
    for (size_t i = 0; i < k; i++)
        if (ibuf[i] != (int)(start + i)) DIE("nc4_par: rank %d: coll[%zu] = %d", rank, i, ibuf[i]);
    NC("nc_get_vars", (long long)(k * sizeof(int)), nc_get_vars_int, ncid, vinter, &istart, &cnt,
       &istride, ibuf);
    for (size_t i = 0; i < k; i++)
        if (ibuf[i] != -(int)(rank + i * n))
            DIE("nc4_par: rank %d: inter[%zu] = %d", rank, i, ibuf[i]);
    NC("nc_close", 0, nc_close, ncid);

    free(ibuf);
    free(dbuf);
    free(fbuf);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    return 0;
}
