/* halo3d: the communication and dump pattern of a molecular-dynamics code, with data-dependent
 * sizes. Ranks sit on a periodic PX x PY x PZ grid (MPI_Cart_create). Each step, every rank
 * exchanges with its two neighbours in each dimension through ONE call site (as LAMMPS'
 * Comm::exchange does): first the number of particles leaving (MPI_Sendrecv of one int), then
 * the particles (MPI_Sendrecv of 3 doubles each). How many leave is a pseudo-random function of
 * (rank, step, swap): the sizes follow the data, not a pattern. With two ranks in a dimension
 * both neighbours are the same rank; with three they are not. An allreduce closes the step.
 * Every DUMP_EVERY steps each rank formats its particles as text (lines whose length depends on
 * the values) and the ranks write one shared file: MPI_Exscan of the lengths gives each rank's
 * offset after the previous dumps, MPI_File_write_at_all writes, MPI_Allreduce the total.
 * Usage: halo3d DIR PX PY PZ [STEPS=20] [DUMP_EVERY=5] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned mix(unsigned x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* One swap: the same call sites for all six directions. */
__attribute__((noinline)) static int swap(MPI_Comm cart, int dst, int src, int nsend,
                                          double *sbuf, double *rbuf) {
    int nrecv = 0;
    MPI_Sendrecv(&nsend, 1, MPI_INT, dst, 1, &nrecv, 1, MPI_INT, src, 1, cart,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(sbuf, 3 * nsend, MPI_DOUBLE, dst, 2, rbuf, 3 * nrecv, MPI_DOUBLE, src, 2, cart,
                 MPI_STATUS_IGNORE);
    return nrecv;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 5) {
        if (rank == 0) fprintf(stderr, "usage: halo3d DIR PX PY PZ [STEPS] [DUMP_EVERY]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dims[3] = {atoi(argv[2]), atoi(argv[3]), atoi(argv[4])};
    int steps = argc > 5 ? atoi(argv[5]) : 20;
    int every = argc > 6 ? atoi(argv[6]) : 5;
    if (dims[0] * dims[1] * dims[2] != n) {
        if (rank == 0) fprintf(stderr, "halo3d: %dx%dx%d is not %d ranks\n", dims[0], dims[1],
                               dims[2], n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int periods[3] = {1, 1, 1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    enum { MAXP = 400 };
    double *sbuf = calloc(3 * MAXP, sizeof(double));
    double *rbuf = calloc(3 * MAXP, sizeof(double));
    char path[4096];
    snprintf(path, sizeof path, "%s/dump.txt", argv[1]);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    char *text = malloc(MAXP * 64);
    long long base = 0;
    int natoms = 200 + (int)(mix(rank) % 50);
    for (int s = 0; s < steps; s++) {
        for (int d = 0; d < 3; d++) {
            for (int dir = -1; dir <= 1; dir += 2) {
                int src, dst;
                MPI_Cart_shift(cart, d, dir, &src, &dst);
                int nsend = 5 + (int)(mix(rank * 7919u + s * 131u + d * 17u + (dir + 1)) % 40);
                for (int i = 0; i < 3 * nsend; i++) sbuf[i] = rank + 0.001 * i;
                swap(cart, dst, src, nsend, sbuf, rbuf);
            }
        }
        double e = natoms * 0.5, etot;
        MPI_Allreduce(&e, &etot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if ((s + 1) % every == 0) {
            /* Text of varying length: each line's digits depend on the value. */
            int len = 0;
            int lines = natoms / 4 + (int)(mix(rank + 1000u * s) % 20);
            for (int i = 0; i < lines; i++)
                len += sprintf(text + len, "%d %d %u\n", rank, i, mix(rank * 100003u + i + s) % (1u << (i % 20)));
            long long mylen = len, off = 0, total = 0;
            MPI_Exscan(&mylen, &off, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (rank == 0) off = 0;
            MPI_File_write_at_all(fh, base + off, text, len, MPI_CHAR, MPI_STATUS_IGNORE);
            MPI_Allreduce(&mylen, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            base += total;
        }
    }
    MPI_File_close(&fh);
    MPI_Comm_free(&cart);
    free(sbuf);
    free(rbuf);
    free(text);
    MPI_Finalize();
    return 0;
}
