/* xstorage: three programs after //TRACE's evaluation applications, for replaying a trace on
 * a storage system it was not taken on. Each rank does CPU work between its I/Os, so that a
 * replay must keep compute apart from the time storage took. Files are in DIR.
 *
 *   pseudo   each rank pwrites NBLOCKS blocks of BS bytes to DIR/pseudo, interleaved with the
 *            other ranks' (block i of rank r at (i*size + r)*BS), with WORK units of compute
 *            after each; then fsync and posix_fadvise(DONTNEED) of the whole file; after a
 *            barrier it preads its neighbour's blocks back, computing after each.
 *   sync     the same, with an MPI_Barrier after every write.
 *   fitness  each rank writes its part of DIR/fitness (NBLOCKS contiguous blocks at
 *            rank*NBLOCKS*BS), fsyncs and drops it from the cache; after a barrier the ranks
 *            read their parts in turn: rank r waits for a token from r-1, preads its blocks
 *            with compute after each, and passes the token to r+1.
 *   mapped   each rank writes its part of DIR/mapped as fitness does, fsyncs and drops it from
 *            the cache; after a barrier it maps its part read-only and, block by block, reads
 *            every page of it (page faults, served by the device, between traced calls) with
 *            compute after each block. The time storage takes is then in the gap between
 *            mmap and munmap, not inside any call.
 *   poll     rank 0 truncates DIR/poll, and after a barrier computes WORK units before each
 *            of its NBLOCKS block writes, then fsyncs and closes it; rank 1 polls the file's
 *            size every millisecond by the stat system call instruction (which no preloaded tracer sees) until it holds every
 *            block, then reads them back. No MPI call orders rank 1's reads after rank 0's
 *            writes: only the file does. Other ranks do no I/O.
 *
 * A unit of work is a fixed number of arithmetic steps: its time depends on the CPU, never
 * on storage. Rank 0 prints "app_time SECONDS" (from a barrier after MPI_Init to one before
 * MPI_Finalize) and every rank "rank R read N wrote M" (bytes).
 * Usage: xstorage MODE DIR [NBLOCKS [BS [WORK]]]  (defaults 16, 262144, 200) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } while (0)

static long nread, nwritten;
static volatile unsigned long sink;

/* WORK units of CPU work, about 0.1 ms each on this class of machine. */
static void compute(long work) {
    unsigned long x = sink + 1;
    for (long i = 0; i < work * 20000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

static void put(int fd, const char *buf, size_t n, off_t at) {
    if (pwrite(fd, buf, n, at) != (ssize_t)n) DIE("pwrite %zu at %ld", n, (long)at);
    nwritten += n;
}

static void get(int fd, char *buf, size_t n, off_t at) {
    if (pread(fd, buf, n, at) != (ssize_t)n) DIE("pread %zu at %ld", n, (long)at);
    nread += n;
}

/* Makes what `fd` holds durable and drops it from the page cache, on every rank. */
static void settle(int fd) {
    if (fsync(fd) != 0) DIE("fsync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) DIE("posix_fadvise");
    MPI_Barrier(MPI_COMM_WORLD);
}

/* pseudo and sync: interleaved writes (a barrier after each for sync), then the neighbour's
 * blocks read back cold. */
static void interleaved(const char *dir, int barriers, int nblocks, size_t bs, long work,
                        char *buf, int rank, int size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, barriers ? "sync" : "pseudo");
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) DIE("open %s", path);
    for (int i = 0; i < nblocks; i++) {
        put(fd, buf, bs, ((off_t)i * size + rank) * bs);
        if (barriers) MPI_Barrier(MPI_COMM_WORLD);
        compute(work);
    }
    settle(fd);
    for (int i = 0; i < nblocks; i++) {
        get(fd, buf, bs, ((off_t)i * size + (rank + 1) % size) * bs);
        compute(work);
    }
    close(fd);
}

/* fitness: each rank's part written and dropped, then read in turn, passing a token. */
static void fitness(const char *dir, int nblocks, size_t bs, long work, char *buf, int rank,
                    int size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fitness", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) DIE("open %s", path);
    off_t part = (off_t)rank * nblocks * bs;
    for (int i = 0; i < nblocks; i++) put(fd, buf, bs, part + (off_t)i * bs);
    settle(fd);
    int token = 0;
    if (rank > 0) MPI_Recv(&token, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < nblocks; i++) {
        get(fd, buf, bs, part + (off_t)i * bs);
        compute(work);
    }
    if (rank + 1 < size) MPI_Send(&token, 1, MPI_INT, rank + 1, 7, MPI_COMM_WORLD);
    close(fd);
}

/* mapped: each rank's part written and dropped, then read back through a mapping. */
static void mapped(const char *dir, int nblocks, size_t bs, long work, char *buf, int rank) {
    char path[4096];
    snprintf(path, sizeof path, "%s/mapped", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) DIE("open %s", path);
    off_t part = (off_t)rank * nblocks * bs;
    for (int i = 0; i < nblocks; i++) put(fd, buf, bs, part + (off_t)i * bs);
    settle(fd);
    size_t len = (size_t)nblocks * bs;
    const unsigned char *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, part);
    if (m == MAP_FAILED) DIE("mmap %zu at %ld (BS times the rank's blocks must be a page multiple)", len, (long)part);
    unsigned long sum = 0;
    for (int i = 0; i < nblocks; i++) {
        for (size_t p = 0; p < bs; p += 4096) sum += m[(size_t)i * bs + p];
        nread += bs;
        compute(work);
    }
    sink += sum;
    munmap((void *)m, len);
    close(fd);
}

/* stat by the system call instruction itself (x86-64): the tracer hooks stat and syscall(),
 * and would record every poll, whose number changes from run to run. */
static long raw_stat(const char *path, struct stat *st) {
    long ret;
    register long flags __asm__("r10") = 0;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)SYS_newfstatat), "D"((long)AT_FDCWD), "S"(path), "d"(st), "r"(flags)
                     : "rcx", "r11", "memory");
    return ret;
}

/* poll: rank 1 waits for a file rank 0 writes by polling its size, with no MPI between them.
 * Rank 0 truncates the file before the barrier, so that a run never sees the last run's. */
static void poll_mode(const char *dir, int nblocks, size_t bs, long work, char *buf, int rank) {
    char path[4096];
    snprintf(path, sizeof path, "%s/poll", dir);
    int fd = -1;
    if (rank == 0 && (fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) DIE("open %s", path);
    MPI_Barrier(MPI_COMM_WORLD);
    off_t total = (off_t)nblocks * bs;
    if (rank == 0) {
        for (int i = 0; i < nblocks; i++) {
            compute(work);
            put(fd, buf, bs, (off_t)i * bs);
        }
        if (fsync(fd) != 0) DIE("fsync");
        close(fd);
    } else if (rank == 1) {
        struct stat st;
        while (raw_stat(path, &st) != 0 || st.st_size < total) usleep(1000);
        if ((fd = open(path, O_RDONLY)) < 0) DIE("open %s", path);
        for (int i = 0; i < nblocks; i++) get(fd, buf, bs, (off_t)i * bs);
        close(fd);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) DIE("usage: xstorage pseudo|sync|fitness|mapped|poll DIR [NBLOCKS [BS [WORK]]]");
    int nblocks = argc > 3 ? atoi(argv[3]) : 16;
    size_t bs = argc > 4 ? strtoul(argv[4], NULL, 10) : 262144;
    long work = argc > 5 ? atol(argv[5]) : 200;
    if (nblocks < 1 || bs < 1 || work < 0) DIE("bad NBLOCKS, BS or WORK");
    char *buf = malloc(bs);
    if (!buf) DIE("malloc %zu", bs);
    memset(buf, 'a' + rank % 26, bs);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!strcmp(argv[1], "pseudo")) interleaved(argv[2], 0, nblocks, bs, work, buf, rank, size);
    else if (!strcmp(argv[1], "sync")) interleaved(argv[2], 1, nblocks, bs, work, buf, rank, size);
    else if (!strcmp(argv[1], "fitness")) fitness(argv[2], nblocks, bs, work, buf, rank, size);
    else if (!strcmp(argv[1], "mapped")) mapped(argv[2], nblocks, bs, work, buf, rank);
    else if (!strcmp(argv[1], "poll")) poll_mode(argv[2], nblocks, bs, work, buf, rank);
    else DIE("unknown mode %s", argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("app_time %.6f\n", t);
    printf("rank %d read %ld wrote %ld\n", rank, nread, nwritten);
    free(buf);
    MPI_Finalize();
    return 0;
}
