/* Each mini-app counts its own calls and bytes with these helpers and prints them after
 * MPI_Finalize, one "COUNT <rank> <op> <calls> <bytes>" line per op, in a single write(2) so
 * mpirun never splits a rank's block. Op names are the C names iotrex uses (rsd::Op::name). */
#ifndef IOTREX_COUNT_H
#define IOTREX_COUNT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#define MAX_OPS 128
static struct {
    const char *name;
    long calls;
    long long bytes;
} counts[MAX_OPS];
static int ncounts;

static void count(const char *name, long long bytes) {
    for (int i = 0; i < ncounts; i++) {
        if (strcmp(counts[i].name, name) == 0) {
            counts[i].calls++;
            counts[i].bytes += bytes;
            return;
        }
    }
    if (ncounts == MAX_OPS) {
        /* A dropped op would make the app's counts silently disagree with the trace's. */
        fprintf(stderr, "count.h: more than %d ops, raise MAX_OPS\n", MAX_OPS);
        abort();
    }
    counts[ncounts].name = name;
    counts[ncounts].calls = 1;
    counts[ncounts].bytes = bytes;
    ncounts++;
}

/* Whole lines, in writes of at most 2048 bytes a pause apart. mpirun forwards a rank's output
 * in the pieces its reads of the rank's pipe return (at most 4096 bytes each, Open MPI and
 * MPICH alike), and another rank's piece may come between two: a block that fits one read and
 * is read alone (the pause lets the reader take it before the next is written) ends on a line
 * boundary, so lines stay whole. */
static void count_print(int rank) {
    static char buf[2048];
    int n = 0;
    for (int i = 0; i < ncounts; i++) {
        char line[256];
        int k = snprintf(line, sizeof line, "COUNT %d %s %ld %lld\n", rank, counts[i].name,
                         counts[i].calls, counts[i].bytes);
        if (k >= (int)sizeof line) k = sizeof line - 1;
        if (n + k > (int)sizeof buf) {
            ssize_t w = write(1, buf, n);
            (void)w;
            n = 0;
            usleep(20000);
        }
        memcpy(buf + n, line, k);
        n += k;
    }
    ssize_t w = write(1, buf, n);
    (void)w;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef MPI_VERSION
/* The prologue of every MPI mini-app: MPI_Init (counted), then this rank and the rank count. */
static void app_init(int *argc, char ***argv, int *rank, int *n) {
    MPI_Init(argc, argv);
    count("MPI_Init", 0);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    count("MPI_Comm_rank", 0);
    MPI_Comm_size(MPI_COMM_WORLD, n);
    count("MPI_Comm_size", 0);
}
#endif

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
    } while (0)
#endif
