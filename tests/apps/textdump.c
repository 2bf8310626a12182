/* textdump: the shared-file text dump of a real code. Each step, every rank formats its
 * values as text (lines of printf'd doubles), so its block's length depends on the data;
 * MPI_Exscan of the lengths gives its offset in the step's part of the file, MPI_Allreduce the
 * step's total, and MPI_File_write_at_all writes the block. Every byte of a step's part is
 * written by exactly one rank: the file is contiguous and non-overlapping.
 * Usage: textdump DIR [STEPS=3] [MODE=random]
 *   MODE random: each rank prints a pseudo-random number of pseudo-random doubles (seeded by
 *     rank and step), so lengths vary irregularly per rank and per step;
 *   MODE regular: rank r prints r+1 lines of fixed width, the same every step, so sizes are
 *     an exact function of the rank (and the offsets a quadratic one);
 *   MODE ordered: as random, written with MPI_File_write_ordered (the library computes the
 *     offsets from the shared file pointer) instead of Exscan + write_at_all;
 *   MODE independent: as random, written with MPI_File_write_at (independent).
 * Prints "TOTAL <bytes>" from rank 0 (the file's size) and, per rank, a "BLOCK <rank> <step>
 * <offset> <length>" line per block it wrote at an offset it computed (not in MODE ordered). */
#include <mpi.h>
#include <stdint.h>
#include "count.h"

/* xorshift64*: the data of one rank and step, the same on every run. */
static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Formats this rank's block of step `step` into buf (at most cap bytes); returns its length. */
static int format(char *buf, int cap, int rank, int step, int regular) {
    int len = 0;
    if (regular) {
        for (int l = 0; l <= rank && len < cap - 64; l++)
            len += snprintf(buf + len, cap - len, "%6d %6d %16.6f\n", rank, l, rank * 0.5 + l);
        return len;
    }
    uint64_t s = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)rank << 32) ^ (uint64_t)(step + 1) * 7919;
    for (int i = 0; i < 4; i++) next(&s);
    int lines = 5 + (int)(next(&s) % 40);
    for (int l = 0; l < lines && len < cap - 64; l++) {
        /* %g of values spread over decades: the width of each number varies. */
        double v = (double)(next(&s) % 1000000) / (double)(1 + next(&s) % 1000);
        len += snprintf(buf + len, cap - len, "%d %d %g\n", rank, l, v);
    }
    return len;
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: textdump DIR [STEPS] [random|regular|ordered|independent]");
    const char *dir = argv[1];
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    const char *mode = argc > 3 ? argv[3] : "random";
    int regular = strcmp(mode, "regular") == 0;
    int ordered = strcmp(mode, "ordered") == 0;
    int independent = strcmp(mode, "independent") == 0;
    enum { CAP = 1 << 16 };
    char *buf = malloc(CAP);
    char path[4096];
    snprintf(path, sizeof path, "%s/dump.txt", dir);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh))
        DIE("MPI_File_open %s failed", path);
    count("MPI_File_open", 0);
    long long base = 0;
    static char blocks[1 << 14];
    int nb = 0;
    for (int step = 0; step < steps; step++) {
        int len = format(buf, CAP, rank, step, regular);
        long long mine = len, off = 0, total = 0;
        if (ordered) {
            MPI_File_write_ordered(fh, buf, len, MPI_CHAR, MPI_STATUS_IGNORE);
            count("MPI_File_write_ordered", len);
            MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            count("MPI_Allreduce", 0);
            base += total;
            continue;
        }
        MPI_Exscan(&mine, &off, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        count("MPI_Exscan", 0);
        if (rank == 0) off = 0; /* MPI_Exscan leaves rank 0's result undefined */
        MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        count("MPI_Allreduce", 0);
        if (nb < (int)sizeof blocks - 128)
            nb += snprintf(blocks + nb, sizeof blocks - nb, "BLOCK %d %d %lld %d\n", rank, step,
                           base + off, len);
        if (independent) {
            MPI_File_write_at(fh, base + off, buf, len, MPI_CHAR, MPI_STATUS_IGNORE);
            count("MPI_File_write_at", len);
        } else {
            MPI_File_write_at_all(fh, base + off, buf, len, MPI_CHAR, MPI_STATUS_IGNORE);
            count("MPI_File_write_at_all", len);
        }
        base += total;
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    if (rank == 0) {
        printf("TOTAL %lld\n", base);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    count_print(rank);
    /* One write per rank, so mpirun never interleaves two ranks' lines. */
    ssize_t w = write(1, blocks, nb);
    (void)w;
    return 0;
}
