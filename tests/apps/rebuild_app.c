/* rebuild_app: POSIX and MPI calls whose call sites must survive a rebuild. The test
 * builds it twice with the tag below one character longer; the tag is copied by code that
 * lies before main, so main and everything after it move. Usage: rebuild_app DIR */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void tag(char *out) {
    strcpy(out, "TAG");
}

int main(int argc, char **argv) {
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char t[64], path[4096], buf[4096];
    tag(t);
    memset(buf, 'a', sizeof buf);
    snprintf(path, sizeof path, "%s/f_%d", argc > 1 ? argv[1] : ".", rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < 4; i++) write(fd, buf, sizeof buf);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("%s %d\n", t, n);
    MPI_Finalize();
    return 0;
}
