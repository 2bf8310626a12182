/* fork_app: the process and two forked children each write 1 MiB (16 writes of 64 KiB) to a
 * file of their own in DIR; each child then ends as its MODE says:
 *   exit    exit(0)             _exit   _exit(3)           return  returns from main (0)
 *   term    dies of SIGTERM     kill    dies of SIGKILL (no chance to write anything)
 * The parent waits for both, prints `CHILD <n> <how it ended>` for each, and exits 0.
 * With a 4th argument `mpi` it is an MPI program: every rank does the above between MPI_Init
 * and MPI_Finalize, its files named by its rank.
 * Usage: fork_app DIR MODE1 MODE2 [mpi] */
#include <mpi.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_mib(const char *dir, const char *who, int rank) {
    char path[4096];
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/%s.%d", dir, who, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) return 1;
    for (int i = 0; i < 16; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
    return close(fd);
}

/* In the child: ends as `mode` says; returns only for `return`. */
static int end_child(const char *mode, int rc) {
    if (strcmp(mode, "exit") == 0) exit(rc);
    if (strcmp(mode, "_exit") == 0) _exit(rc ? rc : 3);
    if (strcmp(mode, "term") == 0) raise(SIGTERM);
    if (strcmp(mode, "kill") == 0) raise(SIGKILL);
    if (strcmp(mode, "return") == 0) return rc;
    fprintf(stderr, "fork_app: unknown mode %s\n", mode);
    _exit(2);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: fork_app DIR MODE1 MODE2 [mpi]\n");
        return 2;
    }
    int mpi = argc > 4 && strcmp(argv[4], "mpi") == 0, rank = 0;
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    }
    if (write_mib(argv[1], "parent", rank)) return 1;
    pid_t kids[2];
    for (int c = 0; c < 2; c++) {
        fflush(stdout);
        kids[c] = fork();
        if (kids[c] < 0) return 1;
        if (kids[c] == 0) {
            char who[16];
            snprintf(who, sizeof who, "child%d", c);
            return end_child(argv[2 + c], write_mib(argv[1], who, rank));
        }
        /* One child at a time: the second is forked after the first ended. */
        int st;
        waitpid(kids[c], &st, 0);
        if (WIFEXITED(st))
            printf("CHILD %d %d exited %d\n", rank, c, WEXITSTATUS(st));
        else if (WIFSIGNALED(st))
            printf("CHILD %d %d signal %d\n", rank, c, WTERMSIG(st));
    }
    if (mpi) MPI_Finalize();
    return 0;
}
