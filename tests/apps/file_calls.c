/* file_calls: one of each file call the tracer hooks beyond open/read/write, on files in DIR, with no MPI.
 * Writes DIR/a (4096 bytes), fstat, pwritev2 (100 bytes at 0), aio_write (10 bytes at 0,
 * collected by aio_return), aio_read (20 bytes at 100, collected), aio_write (30 bytes at
 * 200, waited for with aio_suspend but never collected), fallocate, posix_fallocate, maps it shared and writable (8192 bytes
 * at offset 0 after an ftruncate) after posix_fadvise(DONTNEED), readahead, sync_file_range,
 * fdatasync, syncfs, sync and fcntl(F_SETFL) O_APPEND then 0, madvise(WILLNEED) of its second
 * 4096 bytes (and of an anonymous mapping), msync of the first 4096 (MS_SYNC), munmap; a stream on a
 * dup of the descriptor (fdopen) writes 5 bytes; rename a -> b, link b -> c, symlink b -> d,
 * truncate c to 100, statx and fstatat of b, lists DIR with opendir/readdir/closedir.
 * Usage: file_calls DIR */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

int main(int argc, char **argv) {
    if (argc < 2) DIE("usage: file_calls DIR");
    char a[4096], b[4096], c[4096], d[4096];
    snprintf(a, sizeof a, "%s/a", argv[1]);
    snprintf(b, sizeof b, "%s/b", argv[1]);
    snprintf(c, sizeof c, "%s/c", argv[1]);
    snprintf(d, sizeof d, "%s/d", argv[1]);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    int fd = open(a, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) DIE("open %s", a);
    if (write(fd, buf, sizeof buf) != sizeof buf) DIE("write");
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size != 4096) DIE("fstat");
    struct iovec v = {buf, 100};
    if (pwritev2(fd, &v, 1, 0, 0) != 100) DIE("pwritev2");
    /* Asynchronous requests: recorded when aio_return collects them (a pwrite, a pread); the
     * last one is never collected, so its bytes are not in the trace and a note says so. */
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = 10;
    if (aio_write(&cb) != 0) DIE("aio_write");
    const struct aiocb *list[1] = {&cb};
    while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_return(&cb) != 10) DIE("aio_return");
    static char back[20];
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = back;
    cb.aio_nbytes = 20;
    cb.aio_offset = 100;
    if (aio_read(&cb) != 0) DIE("aio_read");
    while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_return(&cb) != 20) DIE("aio_return of the read");
    static struct aiocb lost;
    lost.aio_fildes = fd;
    lost.aio_buf = buf;
    lost.aio_nbytes = 30;
    lost.aio_offset = 200;
    if (aio_write(&lost) != 0) DIE("aio_write");
    const struct aiocb *lost_list[1] = {&lost};
    while (aio_error(&lost) == EINPROGRESS) aio_suspend(lost_list, 1, NULL);
    if (fallocate(fd, 0, 0, 8192) != 0) DIE("fallocate");
    if (posix_fallocate(fd, 0, 8192) != 0) DIE("posix_fallocate");
    if (ftruncate(fd, 8192) != 0) DIE("ftruncate");
    /* The cache and durability calls, each once. */
    if (posix_fadvise(fd, 0, 8192, POSIX_FADV_DONTNEED) != 0) DIE("posix_fadvise");
    if (readahead(fd, 0, 4096) != 0) DIE("readahead");
    if (sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE) != 0) DIE("sync_file_range");
    if (fdatasync(fd) != 0) DIE("fdatasync");
    if (syncfs(fd) != 0) DIE("syncfs");
    sync();
    if (fcntl(fd, F_SETFL, O_APPEND) != 0) DIE("fcntl F_SETFL");
    if (fcntl(fd, F_SETFL, 0) != 0) DIE("fcntl F_SETFL 0");
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) DIE("mmap");
    if (madvise(m + 4096, 4096, MADV_WILLNEED) != 0) DIE("madvise");
    /* Advice on memory that maps no traced file is not recorded. */
    char *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (anon == MAP_FAILED || madvise(anon, 4096, MADV_DONTNEED) != 0) DIE("anonymous madvise");
    memset(m, 'y', 8192);
    if (msync(m, 4096, MS_SYNC) != 0) DIE("msync");
    if (munmap(m, 8192) != 0) DIE("munmap");
    int fd2 = dup(fd);
    FILE *f = fdopen(fd2, "a");
    if (!f) DIE("fdopen");
    if (fwrite("hello", 1, 5, f) != 5) DIE("fwrite");
    fclose(f);
    close(fd);
    if (rename(a, b) != 0) DIE("rename");
    if (link(b, c) != 0) DIE("link");
    if (symlink(b, d) != 0) DIE("symlink");
    if (truncate(c, 100) != 0) DIE("truncate");
    struct statx sx;
    if (statx(AT_FDCWD, b, 0, STATX_SIZE, &sx) != 0 || sx.stx_size != 100) DIE("statx");
    if (fstatat(AT_FDCWD, b, &st, 0) != 0) DIE("fstatat");
    DIR *dir = opendir(argv[1]);
    if (!dir) DIE("opendir");
    int n = 0;
    while (readdir(dir)) n++;
    closedir(dir);
    printf("entries %d\n", n);
    return 0;
}
