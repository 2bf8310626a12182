/* site_loop: the call sites of one function, in a loop, and call sites never seen before.
 * First ITERS iterations of a loop whose body writes three bytes through three pwrite calls
 * of one function (one stack pointer, three return addresses: the cache of stacks seen
 * before must hold all three), at offsets 0, 1 and 2. Then one byte from each of 64 call
 * sites never seen before, one after the other with nothing between them, at offsets 100 to
 * 163: each is unwound and named, and that time is the tracer's, not the program's.
 * Usage: site_loop FILE [ITERS=2000] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fd;

static void put(const char *b, off_t at) {
    if (pwrite(fd, b, 1, at) != 1) { perror("pwrite"); exit(1); }
}

/* Three calls of pwrite from one function: `put` is inlined at each (-O1 and up). */
__attribute__((noinline)) static void loop(long iters) {
    for (long i = 0; i < iters; i++) {
        if (pwrite(fd, "a", 1, 0) != 1) { perror("pwrite"); exit(1); }
        if (pwrite(fd, "b", 1, 1) != 1) { perror("pwrite"); exit(1); }
        if (pwrite(fd, "c", 1, 2) != 1) { perror("pwrite"); exit(1); }
    }
}

/* Sites 10 to 77 and 100 to 107, their numbers read in octal (010 = 8 ... 0107 = 71): offsets
 * 100 to 163. */
#define SITE(n) __attribute__((noinline)) static void site##n(void) { put("x", 100 + 0##n - 010); }
#define S8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
S8(1) S8(2) S8(3) S8(4) S8(5) S8(6) S8(7) S8(10)
#define C8(a) site##a##0(); site##a##1(); site##a##2(); site##a##3(); site##a##4(); site##a##5(); \
    site##a##6(); site##a##7();

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: site_loop FILE [ITERS]\n"); return 2; }
    long iters = argc > 2 ? atol(argv[2]) : 2000;
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(argv[1]); return 1; }
    loop(iters);
    C8(1) C8(2) C8(3) C8(4) C8(5) C8(6) C8(7) C8(10)
    return close(fd) != 0;
}
