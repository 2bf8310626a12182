/* local_queries: MPI's local queries and settings on a Cartesian grid, each result checked
 * (MPI_Abort on a wrong value): MPI_Comm_rank and MPI_Comm_size (app_init's and the grid's),
 * MPI_Cart_get, MPI_Cart_shift in both dimensions (the second one not periodic, so its edge
 * ranks get MPI_PROC_NULL), MPI_Cart_rank of the next place along the first dimension,
 * MPI_Get_processor_name, MPI_Finalized (0 before MPI_Finalize, 1 after, that one neither
 * counted nor recorded: the trace is written by then) and MPI_Comm_set_errhandler with
 * MPI_ERRORS_RETURN. Each iteration also writes one block per rank to DIR/local.dat, so the
 * trace has I/O around the queries.
 *
 * Prints count.h's COUNT lines and one line per rank of what MPI answered the last time:
 * "LOCAL <world rank> <grid rank> <grid size> <dims0> <dims1> <periods0> <periods1> <coords0>
 * <coords1> <source0> <dest0> <source1> <dest1> <cart_rank> <name length>", MPI_PROC_NULL as
 * -1. Usage: local_queries ITERS DIR (any number of ranks from 2). */
#include <mpi.h>
#include "count.h"

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) DIE(__VA_ARGS__);                                                                \
    } while (0)

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 3) DIE("usage: local_queries ITERS DIR");
    int iters = atoi(argv[1]);
    char path[4096];
    snprintf(path, sizeof path, "%s/local.dat", argv[2]);

    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(n, 2, dims);
    count("MPI_Dims_create", 0);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    count("MPI_Cart_create", 0);
    MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN);
    count("MPI_Comm_set_errhandler", 0);

    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh) != MPI_SUCCESS)
        DIE("MPI_File_open %s failed", path);
    count("MPI_File_open", 0);
    enum { BLOCK = 1024 };
    char buf[BLOCK];
    memset(buf, 'a' + rank % 26, BLOCK);

    int grank = -1, gsize = -1, gd[2], gp[2], gc[2], src[2], dst[2], crank = -1, len = -1;
    const int null = MPI_PROC_NULL;
    for (int it = 0; it < iters; it++) {
        MPI_Comm_rank(grid, &grank);
        count("MPI_Comm_rank", 0);
        MPI_Comm_size(grid, &gsize);
        count("MPI_Comm_size", 0);
        /* No reordering: the grid's ranks are the world's, in row-major order. */
        CHECK(grank == rank && gsize == n, "grid rank %d size %d", grank, gsize);
        MPI_Cart_get(grid, 2, gd, gp, gc);
        count("MPI_Cart_get", 0);
        CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0,
              "Cart_get dims %dx%d periods %d %d", gd[0], gd[1], gp[0], gp[1]);
        CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1], "Cart_get coords %d %d",
              gc[0], gc[1]);
        for (int d = 0; d < 2; d++) {
            MPI_Cart_shift(grid, d, 1, &src[d], &dst[d]);
            count("MPI_Cart_shift", 0);
        }
        int up = (gc[0] + 1) % dims[0], down = (gc[0] + dims[0] - 1) % dims[0];
        CHECK(dst[0] == up * dims[1] + gc[1] && src[0] == down * dims[1] + gc[1],
              "Cart_shift 0: %d %d", src[0], dst[0]);
        CHECK(src[1] == (gc[1] == 0 ? null : rank - 1) &&
                  dst[1] == (gc[1] == dims[1] - 1 ? null : rank + 1),
              "Cart_shift 1: %d %d", src[1], dst[1]);
        int next[2] = {up, gc[1]};
        MPI_Cart_rank(grid, next, &crank);
        count("MPI_Cart_rank", 0);
        CHECK(crank == dst[0], "Cart_rank %d, shift gave %d", crank, dst[0]);
        char name[MPI_MAX_PROCESSOR_NAME];
        MPI_Get_processor_name(name, &len);
        count("MPI_Get_processor_name", 0);
        CHECK(len > 0 && len == (int)strlen(name), "processor name length %d", len);
        int done = -1;
        MPI_Finalized(&done);
        count("MPI_Finalized", 0);
        CHECK(done == 0, "Finalized %d before MPI_Finalize", done);

        MPI_Offset off = ((MPI_Offset)it * n + rank) * BLOCK;
        MPI_File_write_at_all(fh, off, buf, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE);
        count("MPI_File_write_at_all", BLOCK);
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Comm_free(&grid);
    count("MPI_Comm_free", 0);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    int done = -1;
    MPI_Finalized(&done);
    if (done != 1) {
        fprintf(stderr, "Finalized %d after MPI_Finalize\n", done);
        return 1;
    }
    count_print(rank);
    /* After the counts, whose blocks count_print paces; one short line. */
    usleep(20000);
    char line[256];
#define P(x) ((x) == null ? -1 : (x))
    int k = snprintf(line, sizeof line,
                     "LOCAL %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", rank, grank, gsize,
                     gd[0], gd[1], gp[0], gp[1], gc[0], gc[1], P(src[0]), P(dst[0]), P(src[1]),
                     P(dst[1]), crank, len);
    ssize_t w = write(1, line, k);
    (void)w;
    return 0;
}
