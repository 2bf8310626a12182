/* Replay-overhead baseline: the same I/O a replay issues, from a plain C loop. Opens PATH,
 * issues N pwrites of SIZE bytes at offsets (i % 128) * SIZE, closes it. Timed inside the
 * program from just before the open to just after the close, so process start-up is not part
 * of the figure (the replay's own figure is its report's wall time, which excludes reading the
 * trace). The data is not rewritten between calls: the replay writes one fixed pattern too.
 * Usage: pwrite_loop PATH N SIZE. Prints "<ns> ns total <ns> ns/call". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: pwrite_loop PATH N SIZE\n");
        return 2;
    }
    const char *path = argv[1];
    long n = atol(argv[2]), size = atol(argv[3]);
    if (n <= 0 || size <= 0) {
        fprintf(stderr, "pwrite_loop: N and SIZE must be positive\n");
        return 2;
    }
    char *b = malloc(size);
    if (!b) { perror("malloc"); return 1; }
    for (long i = 0; i < size; i++) b[i] = (char)(i * 131);
    double t0 = now();
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror(path); return 1; }
    for (long i = 0; i < n; i++)
        if (pwrite(fd, b, size, (off_t)(i % 128) * size) != size) { perror("pwrite"); return 1; }
    close(fd);
    double t1 = now();
    printf("%.0f ns total %.1f ns/call\n", (t1 - t0) * 1e9, (t1 - t0) / n * 1e9);
    free(b);
    return 0;
}
