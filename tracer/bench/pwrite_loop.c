/* Per-call overhead benchmark: N pwrites of 8 bytes to /dev/shm, timed inside the program so
 * process start-up and the tracer's exit-time write are not part of the figure.
 * Usage: pwrite_loop [N=1000000]. Prints "<ns> ns/call". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    char b[8] = {0}, path[64];
    snprintf(path, sizeof path, "/dev/shm/iotrex_pwrite_bench.%d", (int)getpid());
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) { perror(path); return 1; }
    double t0 = now();
    for (long i = 0; i < n; i++)
        if (pwrite(fd, b, 8, (off_t)(i % 1024) * 8) != 8) { perror("pwrite"); return 1; }
    double t1 = now();
    close(fd);
    unlink(path);
    printf("%.1f ns/call\n", (t1 - t0) / n * 1e9);
    return 0;
}
