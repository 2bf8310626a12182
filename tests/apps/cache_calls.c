/* cache_calls: the calls that decide whether the device or the page cache serves a file, on
 * every rank, for the storage rig's replay tests. Files are in DIR; BLOCK is 1 MiB.
 *
 *   fadvise    each rank pwrites 2 BLOCKs of DIR/shared at rank*2 BLOCKs and fsyncs; after a
 *              barrier, posix_fadvise(DONTNEED) of the whole file; after another, it preads
 *              its neighbour's 2 BLOCKs: cold, served by the device.
 *   nofadvise  the same without the fadvise: the read comes from the page cache.
 *   direct     DIR/direct opened with O_DIRECT: each rank pwrites a BLOCK at rank*BLOCK from
 *              an aligned buffer, barrier, preads its neighbour's; then DIR/setfl opened
 *              without O_DIRECT, given it by fcntl(F_SETFL), the same again.
 *   unaligned  DIR/unaligned opened with O_DIRECT: each rank pwrites 1000 bytes at
 *              rank*1000+100 (a file system that takes any alignment, such as tmpfs, only).
 *   fsync      each rank pwrites a BLOCK to DIR/fsync_fs.RANK then syncfs, and after a
 *              barrier 2 BLOCKs to DIR/fsync.RANK then fsync (even ranks) or fdatasync (odd
 *              ranks), a BLOCK to DIR/fsync_dsync.RANK opened O_DSYNC, and a BLOCK to
 *              DIR/fsync_range.RANK then sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER).
 *   mpiio      DIR/mpiio opened by MPI_File_open with the hint access_style=write_once,sequential:
 *              each rank writes 2 BLOCKs at rank*2 BLOCKs collectively, then MPI_File_sync.
 *   nosync     the same writes (to DIR/nosync.RANK, DIR/nosync_dsync.RANK, ...) with neither
 *              the sync calls nor O_DSYNC.
 * Each rank prints "rank R read N wrote M" (bytes).
 * Usage: cache_calls MODE DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK (1 << 20)
#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); MPI_Abort(MPI_COMM_WORLD, 1); } while (0)

static long nread, nwritten;

static void put(int fd, char *buf, size_t n, off_t at) {
    if (pwrite(fd, buf, n, at) != (ssize_t)n) DIE("pwrite %zu at %ld", n, (long)at);
    nwritten += n;
}

static void get(int fd, char *buf, size_t n, off_t at) {
    if (pread(fd, buf, n, at) != (ssize_t)n) DIE("pread %zu at %ld", n, (long)at);
    nread += n;
}

/* Each rank writes its BLOCK of `path` (opened with `flags`, then given `setfl` by fcntl when
 * not 0) and reads its neighbour's. */
static void direct(const char *path, int flags, int setfl, char *buf, int rank, int size) {
    int fd = open(path, O_RDWR | O_CREAT | flags, 0644);
    if (fd < 0) DIE("open %s", path);
    if (setfl && fcntl(fd, F_SETFL, setfl) != 0) DIE("fcntl F_SETFL");
    put(fd, buf, BLOCK, (off_t)rank * BLOCK);
    MPI_Barrier(MPI_COMM_WORLD);
    get(fd, buf, BLOCK, (off_t)((rank + 1) % size) * BLOCK);
    close(fd);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) DIE("usage: cache_calls MODE DIR");
    const char *mode = argv[1];
    char path[4096];
    char *buf;
    if (posix_memalign((void **)&buf, 4096, 2 * BLOCK) != 0) DIE("posix_memalign");
    memset(buf, 'a' + rank, 2 * BLOCK);
    if (!strcmp(mode, "fadvise") || !strcmp(mode, "nofadvise")) {
        snprintf(path, sizeof path, "%s/shared", argv[2]);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        if (fd < 0) DIE("open %s", path);
        put(fd, buf, 2 * BLOCK, (off_t)rank * 2 * BLOCK);
        if (fsync(fd) != 0) DIE("fsync");
        MPI_Barrier(MPI_COMM_WORLD);
        if (!strcmp(mode, "fadvise") && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
            DIE("posix_fadvise");
        MPI_Barrier(MPI_COMM_WORLD);
        get(fd, buf, 2 * BLOCK, (off_t)((rank + 1) % size) * 2 * BLOCK);
        close(fd);
    } else if (!strcmp(mode, "direct")) {
        snprintf(path, sizeof path, "%s/direct", argv[2]);
        direct(path, O_DIRECT, 0, buf, rank, size);
        snprintf(path, sizeof path, "%s/setfl", argv[2]);
        direct(path, 0, O_DIRECT, buf, rank, size);
    } else if (!strcmp(mode, "unaligned")) {
        snprintf(path, sizeof path, "%s/unaligned", argv[2]);
        int fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
        if (fd < 0) DIE("open %s with O_DIRECT", path);
        put(fd, buf, 1000, (off_t)rank * 1000 + 100);
        close(fd);
    } else if (!strcmp(mode, "fsync") || !strcmp(mode, "nosync")) {
        int sync = !strcmp(mode, "fsync");
        /* syncfs first, every rank's done before anything else is written: it writes back
         * whatever the file system holds dirty, which would hide whether the calls below
         * wrote their own data. */
        snprintf(path, sizeof path, "%s/%s_fs.%d", argv[2], mode, rank);
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) DIE("open %s", path);
        put(fd, buf, BLOCK, 0);
        if (sync && syncfs(fd) != 0) DIE("syncfs");
        close(fd);
        MPI_Barrier(MPI_COMM_WORLD);
        /* New files, no O_TRUNC: ext4 writes a file truncated to 0 back at its close. */
        snprintf(path, sizeof path, "%s/%s.%d", argv[2], mode, rank);
        fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) DIE("open %s", path);
        put(fd, buf, 2 * BLOCK, 0);
        if (sync && (rank % 2 ? fdatasync(fd) : fsync(fd)) != 0) DIE("fsync/fdatasync");
        close(fd);
        snprintf(path, sizeof path, "%s/%s_dsync.%d", argv[2], mode, rank);
        fd = open(path, O_WRONLY | O_CREAT | (sync ? O_DSYNC : 0), 0644);
        if (fd < 0) DIE("open %s", path);
        put(fd, buf, BLOCK, 0);
        close(fd);
        snprintf(path, sizeof path, "%s/%s_range.%d", argv[2], mode, rank);
        fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0) DIE("open %s", path);
        put(fd, buf, BLOCK, 0);
        unsigned all = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
        if (sync && sync_file_range(fd, 0, 0, all) != 0) DIE("sync_file_range");
        close(fd);
    } else if (!strcmp(mode, "mpiio")) {
        snprintf(path, sizeof path, "%s/mpiio", argv[2]);
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "access_style", "write_once,sequential");
        MPI_File fh;
        if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh))
            DIE("MPI_File_open %s", path);
        MPI_Info_free(&info);
        MPI_Status st;
        if (MPI_File_write_at_all(fh, (MPI_Offset)rank * 2 * BLOCK, buf, 2 * BLOCK, MPI_BYTE, &st))
            DIE("MPI_File_write_at_all");
        nwritten += 2 * BLOCK;
        if (MPI_File_sync(fh)) DIE("MPI_File_sync");
        MPI_File_close(&fh);
    } else {
        DIE("unknown mode %s", mode);
    }
    printf("rank %d read %ld wrote %ld\n", rank, nread, nwritten);
    free(buf);
    MPI_Finalize();
    return 0;
}
