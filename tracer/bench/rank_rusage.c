/* Per-rank resource use for scripts/bench-tracer.sh part 2b: runs the command given, then writes
 * "user_us system_us wall_us voluntary_cs involuntary_cs minor_faults peak_rss_kb" (its wait4
 * rusage, to the microsecond) to OUT.<rank> (rank from OMPI_COMM_WORLD_RANK or PMI_RANK).
 * The tracer is preloaded into the command only, from IOTREX_BENCH_LIB (an LD_PRELOAD given to
 * mpirun would load it into this wrapper too).
 * Usage: rank_rusage OUT command args... */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rank_rusage OUT command args...\n");
        return 2;
    }
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMI_RANK");
    char out[4096];
    snprintf(out, sizeof out, "%s.%s", argv[1], rank ? rank : "0");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t p = fork();
    if (p == 0) {
        const char *lib = getenv("IOTREX_BENCH_LIB");
        if (lib && *lib) setenv("LD_PRELOAD", lib, 1);
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (p < 0 || wait4(p, &st, 0, &ru) < 0) return 2;
    clock_gettime(CLOCK_MONOTONIC, &b);
    FILE *f = fopen(out, "w");
    if (!f) return 2;
    fprintf(f, "%ld %ld %ld %ld %ld %ld %ld\n",
            ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
            ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec,
            (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000, ru.ru_nvcsw,
            ru.ru_nivcsw, ru.ru_minflt, ru.ru_maxrss);
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
