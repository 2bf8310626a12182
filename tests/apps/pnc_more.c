/* pnc_more: PnetCDF (libpnetcdf-dev) for the PnetCDF layer's tests. One file on
 * MPI_COMM_WORLD (ncmpi_create, CDF-5), n*K elements per fixed variable, then:
 *   dimensions "x" (n*K), "x2" (2*n*K) and the record dimension "time" (NC_UNLIMITED);
 *   global attributes "title" (text) and "nranks" (int), a variable attribute "scale"
 *       (double), "units" (text);
 *   "fixed" (double, [x]): each rank writes its K elements at rank*K collectively
 *       (ncmpi_put_vara_double_all);
 *   "rec" (float, [time, x]), a record variable: per step s of STEPS each rank writes its K
 *       elements of record s collectively (ncmpi_put_vara_float_all);
 *   "ind" (int, [x]): in independent mode (ncmpi_begin_indep_data/end_indep_data) each rank
 *       writes its K elements with ncmpi_put_vara_int;
 *   "strided" (double, [x2]): each rank writes K elements from 2*rank*K with stride 2
 *       collectively (ncmpi_put_vars_double_all), and the flexible API writes the others
 *       (ncmpi_put_vars_all with MPI_DOUBLE);
 *   "nb1" (double, [x]) and "nb2" (int, [x]): per step, a nonblocking ncmpi_iput_vara_double
 *       and ncmpi_iput_vara_int of the rank's K elements, completed together by
 *       ncmpi_wait_all (nb1/nb2 are overwritten each step);
 *   a redef that adds an attribute, ncmpi_sync, ncmpi_close;
 * then reopened read-only (ncmpi_open) and read back: "fixed" collectively
 *   (ncmpi_get_vara_double_all), "strided" (ncmpi_get_vars_double_all), "ind" independently
 *   (ncmpi_get_vara_int), the last record of "rec" with a nonblocking ncmpi_iget_vara_float
 *   completed by the independent ncmpi_wait, and "nb1"/"nb2" with ncmpi_iget_vara_double and
 *   ncmpi_iget_vara_int completed by ncmpi_wait_all; every element is checked.
 * Every PnetCDF call the layer records is counted (count.h, "COUNT" lines after
 * MPI_Finalize): data transfers and attributes with their bytes, elements times the size of
 * the variable's (attribute's) external type.
 * Usage: pnc_more PATH [-s STEPS] [-k K] */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdlib.h>
#include "count.h"

static int rank, n;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int err_ = (x);                                                                            \
        if (err_ != NC_NOERR)                                                                      \
            DIE("pnc_more: %s failed (line %d): %s", #x, __LINE__, ncmpi_strerror(err_));          \
    } while (0)

/* Calls the PnetCDF function `f` (checked) and counts it under its name, with `bytes`. */
#define NC(f, bytes, ...)                                                                          \
    do {                                                                                           \
        CHECK(f(__VA_ARGS__));                                                                     \
        count(#f, bytes);                                                                          \
    } while (0)

/* The name the layer records a typed call under: its family. */
#define NCF(family, f, bytes, ...)                                                                 \
    do {                                                                                           \
        CHECK(f(__VA_ARGS__));                                                                     \
        count(family, bytes);                                                                      \
    } while (0)

static double dval(long long i, int which) { return i * 0.5 + which; }

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: pnc_more PATH [-s STEPS] [-k K]");
    int steps = 3;
    long long k = 1000;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) k = atoll(argv[++i]);
        else DIE("pnc_more: bad option %s", argv[i]);
    }
    if (steps < 1 || k < 1) DIE("pnc_more: sizes too small");
    const long long N = (long long)n * k;
    /* One allocation for every buffer: PnetCDF's wait_all describes the requests' buffers
     * together with an hindexed memory type whose displacements are their address
     * differences, which are then the same on every rank and at every scale (separate
     * mallocs may land at rank-dependent distances). */
    char *arena = malloc(k * (2 * sizeof(double) * 2 + sizeof(float) * 2 + sizeof(int) * 2));
    double *d = (double *)arena, *d2 = d + 2 * k;
    float *f = (float *)(d2 + 2 * k), *f2 = f + k;
    int *iv = (int *)(f2 + k), *iv2 = iv + k;

    int ncid, dx, dx2, dt, dims[2];
    int vfixed, vrec, vind, vstr, vnb1, vnb2;
    NC(ncmpi_create, 0, MPI_COMM_WORLD, argv[1], NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL,
       &ncid);
    NC(ncmpi_def_dim, 0, ncid, "x", N, &dx);
    NC(ncmpi_def_dim, 0, ncid, "x2", 2 * N, &dx2);
    NC(ncmpi_def_dim, 0, ncid, "time", NC_UNLIMITED, &dt);
    NC(ncmpi_def_var, 0, ncid, "fixed", NC_DOUBLE, 1, &dx, &vfixed);
    dims[0] = dt;
    dims[1] = dx;
    NC(ncmpi_def_var, 0, ncid, "rec", NC_FLOAT, 2, dims, &vrec);
    NC(ncmpi_def_var, 0, ncid, "ind", NC_INT, 1, &dx, &vind);
    NC(ncmpi_def_var, 0, ncid, "strided", NC_DOUBLE, 1, &dx2, &vstr);
    NC(ncmpi_def_var, 0, ncid, "nb1", NC_DOUBLE, 1, &dx, &vnb1);
    NC(ncmpi_def_var, 0, ncid, "nb2", NC_INT, 1, &dx, &vnb2);
    const char *title = "pnc_more";
    NCF("ncmpi_put_att", ncmpi_put_att_text, (long long)strlen(title), ncid, NC_GLOBAL, "title",
        strlen(title), title);
    int nr = n;
    NCF("ncmpi_put_att", ncmpi_put_att_int, 4, ncid, NC_GLOBAL, "nranks", NC_INT, 1, &nr);
    double scale[2] = {0.5, 2.0};
    NCF("ncmpi_put_att", ncmpi_put_att_double, 16, ncid, vfixed, "scale", NC_DOUBLE, 2, scale);
    NCF("ncmpi_put_att", ncmpi_put_att, 5, ncid, vrec, "units", NC_CHAR, 5, "m s-1");
    NC(ncmpi_enddef, 0, ncid);

    MPI_Offset start[2], cnt[2], stride[1];
    /* Collective, fixed variable. */
    for (long long i = 0; i < k; i++) d[i] = dval(rank * k + i, 0);
    start[0] = rank * k;
    cnt[0] = k;
    NCF("ncmpi_put_vara_all", ncmpi_put_vara_double_all, k * 8, ncid, vfixed, start, cnt, d);
    /* Collective, record variable: one record per step. */
    for (int s = 0; s < steps; s++) {
        for (long long i = 0; i < k; i++) f[i] = (float)(s * 1000 + rank * k + i);
        start[0] = s;
        start[1] = rank * k;
        cnt[0] = 1;
        cnt[1] = k;
        NCF("ncmpi_put_vara_all", ncmpi_put_vara_float_all, k * 4, ncid, vrec, start, cnt, f);
    }
    /* Independent. */
    NC(ncmpi_begin_indep_data, 0, ncid);
    for (long long i = 0; i < k; i++) iv[i] = (int)(rank * k + i);
    start[0] = rank * k;
    cnt[0] = k;
    NCF("ncmpi_put_vara", ncmpi_put_vara_int, k * 4, ncid, vind, start, cnt, iv);
    NC(ncmpi_end_indep_data, 0, ncid);
    /* Strided, typed then flexible: the even then the odd elements of the rank's 2K. */
    for (long long i = 0; i < k; i++) d[i] = dval(2 * (rank * k + i), 1);
    start[0] = 2 * rank * k;
    cnt[0] = k;
    stride[0] = 2;
    NCF("ncmpi_put_vars_all", ncmpi_put_vars_double_all, k * 8, ncid, vstr, start, cnt, stride, d);
    for (long long i = 0; i < k; i++) d[i] = dval(2 * (rank * k + i) + 1, 1);
    start[0] = 2 * rank * k + 1;
    NCF("ncmpi_put_vars_all", ncmpi_put_vars_all, k * 8, ncid, vstr, start, cnt, stride, d, k,
        MPI_DOUBLE);
    /* Nonblocking: two requests per step, completed together. */
    for (int s = 0; s < steps; s++) {
        int req[2], st[2];
        for (long long i = 0; i < k; i++) {
            d[i] = dval(rank * k + i, 2 + s);
            iv[i] = (int)(rank * k + i + s);
        }
        start[0] = rank * k;
        cnt[0] = k;
        NCF("ncmpi_iput_vara", ncmpi_iput_vara_double, k * 8, ncid, vnb1, start, cnt, d, &req[0]);
        NCF("ncmpi_iput_vara", ncmpi_iput_vara_int, k * 4, ncid, vnb2, start, cnt, iv, &req[1]);
        NC(ncmpi_wait_all, 0, ncid, 2, req, st);
        for (int j = 0; j < 2; j++) CHECK(st[j]);
    }
    /* A redef that only adds an attribute (the header keeps its size class), then sync. */
    NC(ncmpi_redef, 0, ncid);
    NCF("ncmpi_put_att", ncmpi_put_att_int, 4, ncid, NC_GLOBAL, "steps", NC_INT, 1, &steps);
    NC(ncmpi_enddef, 0, ncid);
    NC(ncmpi_sync, 0, ncid);
    NC(ncmpi_close, 0, ncid);

    /* Read back. */
    NC(ncmpi_open, 0, MPI_COMM_WORLD, argv[1], NC_NOWRITE, MPI_INFO_NULL, &ncid);
    CHECK(ncmpi_inq_varid(ncid, "fixed", &vfixed));
    CHECK(ncmpi_inq_varid(ncid, "rec", &vrec));
    CHECK(ncmpi_inq_varid(ncid, "ind", &vind));
    CHECK(ncmpi_inq_varid(ncid, "strided", &vstr));
    CHECK(ncmpi_inq_varid(ncid, "nb1", &vnb1));
    CHECK(ncmpi_inq_varid(ncid, "nb2", &vnb2));
    start[0] = rank * k;
    cnt[0] = k;
    NCF("ncmpi_get_vara_all", ncmpi_get_vara_double_all, k * 8, ncid, vfixed, start, cnt, d2);
    for (long long i = 0; i < k; i++)
        if (d2[i] != dval(rank * k + i, 0)) DIE("pnc_more: fixed[%lld] differs", rank * k + i);
    start[0] = 2 * rank * k;
    stride[0] = 2;
    NCF("ncmpi_get_vars_all", ncmpi_get_vars_double_all, k * 8, ncid, vstr, start, cnt, stride, d2);
    for (long long i = 0; i < k; i++)
        if (d2[i] != dval(2 * (rank * k + i), 1)) DIE("pnc_more: strided differs at %lld", i);
    NC(ncmpi_begin_indep_data, 0, ncid);
    start[0] = rank * k;
    NCF("ncmpi_get_vara", ncmpi_get_vara_int, k * 4, ncid, vind, start, cnt, iv2);
    for (long long i = 0; i < k; i++)
        if (iv2[i] != (int)(rank * k + i)) DIE("pnc_more: ind[%lld] differs", rank * k + i);
    int req[2], st[2];
    start[0] = steps - 1;
    start[1] = rank * k;
    cnt[0] = 1;
    cnt[1] = k;
    NCF("ncmpi_iget_vara", ncmpi_iget_vara_float, k * 4, ncid, vrec, start, cnt, f2, &req[0]);
    NC(ncmpi_wait, 0, ncid, 1, req, st);
    CHECK(st[0]);
    for (long long i = 0; i < k; i++)
        if (f2[i] != (float)((steps - 1) * 1000 + rank * k + i)) DIE("pnc_more: rec differs");
    NC(ncmpi_end_indep_data, 0, ncid);
    start[0] = rank * k;
    cnt[0] = k;
    NCF("ncmpi_iget_vara", ncmpi_iget_vara_double, k * 8, ncid, vnb1, start, cnt, d2, &req[0]);
    NCF("ncmpi_iget_vara", ncmpi_iget_vara_int, k * 4, ncid, vnb2, start, cnt, iv2, &req[1]);
    NC(ncmpi_wait_all, 0, ncid, 2, req, st);
    for (int j = 0; j < 2; j++) CHECK(st[j]);
    for (long long i = 0; i < k; i++)
        if (d2[i] != dval(rank * k + i, 2 + steps - 1) || iv2[i] != (int)(rank * k + i + steps - 1))
            DIE("pnc_more: nb1/nb2 differ at %lld", i);
    NC(ncmpi_close, 0, ncid);

    MPI_Finalize();
    count_print(rank);
    free(arena);
    return 0;
}
