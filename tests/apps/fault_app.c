/* fault_app: the application of the fault-injection tests (tests/faults.rs). Every rank writes
 * ITERS blocks of 1 KiB to DIR/data_<rank> with pwrite and prints one line saying so; then the
 * MODE happens, and the ranks that get there print "rank R done" after MPI_Finalize and exit
 * with status 0. What the program prints and writes is the same with and without the tracer,
 * which is what the tests compare.
 * MODE plain: nothing more (the faults are injected from outside: fault_shim.so, a read-only
 *   directory, an existing IOTREX_OUT, a signal).
 * MODE abort: rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) while the others wait in a barrier.
 * MODE fork: rank 1 forks a child that, without exec, writes DIR/child_1 with write(2),
 *   prints a line and exits with status 7; the parent waits for it and prints its status.
 * MODE thread: MPI_Init_thread(MPI_THREAD_MULTIPLE); a second thread writes DIR/thread_<rank>
 *   with pwrite, ITERS blocks before the main thread calls MPI_Finalize (it waits for them)
 *   and then blocks for as long as MPI_Finalize runs; it prints how many it wrote in all.
 * Usage: fault_app DIR [ITERS=10] [MODE=plain] */
#include <mpi.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(2);                                                                                   \
    } while (0)

static char buf[1024];
static const char *dir;
static int iters, rank;
/* The thread's progress: blocks written, and whether MPI_Finalize has returned. */
static atomic_int written, finalized;

static void *writer(void *arg) {
    (void)arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/thread_%d", dir, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) DIE("rank %d: cannot open %s", rank, path);
    long i = 0;
    /* ITERS blocks before MPI_Finalize; then one block per millisecond while it runs. */
    while (i < iters || !atomic_load(&finalized)) {
        if (pwrite(fd, buf, sizeof buf, (off_t)(i % 64) * (off_t)sizeof buf) != sizeof buf)
            DIE("rank %d: thread pwrite failed", rank);
        i++;
        atomic_store(&written, (int)(i < iters ? i : iters));
        if (i >= iters) usleep(1000);
    }
    close(fd);
    return (void *)i;
}

int main(int argc, char **argv) {
    if (argc < 2) DIE("usage: fault_app DIR [ITERS] [MODE]");
    dir = argv[1];
    iters = argc > 2 ? atoi(argv[2]) : 10;
    const char *mode = argc > 3 ? argv[3] : "plain";
    int threaded = strcmp(mode, "thread") == 0;
    if (threaded) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) DIE("MPI_THREAD_MULTIPLE not provided");
    } else {
        MPI_Init(&argc, &argv);
    }
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    memset(buf, 'a' + rank % 26, sizeof buf);
    pthread_t th;
    if (threaded && pthread_create(&th, NULL, writer, NULL) != 0) DIE("pthread_create");
    char path[4096];
    snprintf(path, sizeof path, "%s/data_%d", dir, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) DIE("rank %d: cannot open %s", rank, path);
    for (int i = 0; i < iters; i++)
        if (pwrite(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf) != sizeof buf)
            DIE("rank %d: pwrite failed", rank);
    close(fd);
    printf("rank %d wrote %d blocks\n", rank, iters);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "abort") == 0) {
        if (rank == 1) {
            printf("rank 1 aborts\n");
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        DIE("rank %d: still running after MPI_Abort", rank);
    }
    if (strcmp(mode, "fork") == 0 && rank == 1) {
        fflush(stdout);
        pid_t p = fork();
        if (p < 0) DIE("fork");
        if (p == 0) {
            char cpath[4096];
            snprintf(cpath, sizeof cpath, "%s/child_1", dir);
            int cfd = open(cpath, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            if (cfd < 0 || write(cfd, "child", 5) != 5) DIE("child: cannot write %s", cpath);
            close(cfd);
            printf("child of rank 1 wrote %s\n", "child_1");
            fflush(stdout);
            exit(7);
        }
        int st;
        if (waitpid(p, &st, 0) != p) DIE("waitpid");
        printf("rank 1: child exited with status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        fflush(stdout);
    }
    if (threaded)
        while (atomic_load(&written) < iters) usleep(100);
    MPI_Finalize();
    if (threaded) {
        atomic_store(&finalized, 1);
        void *r;
        pthread_join(th, &r);
        printf("rank %d: thread wrote %s %d blocks before MPI_Finalize\n", rank,
               (long)r >= iters ? "at least" : "only", iters);
    }
    printf("rank %d done\n", rank);
    return 0;
}
