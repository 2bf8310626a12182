/* groups: N-to-N/k aggregation. Ranks are split into groups of K consecutive ranks; for ITERS
 * iterations every rank sends SIZE bytes to its group leader (MPI_Gather on the group
 * communicator) and the leader (every K-th rank) appends the group's data to DIR/file_<rank/K>.
 * Usage: groups DIR [K=4] [ITERS=10] [SIZE=65536] */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: groups DIR [K] [ITERS] [SIZE]");
    const char *dir = argv[1];
    int k = argc > 2 ? atoi(argv[2]) : 4;
    int iters = argc > 3 ? atoi(argv[3]) : 10;
    long size = argc > 4 ? atol(argv[4]) : 65536;
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, rank / k, rank, &group);
    count("MPI_Comm_split", 0);
    int grank, gsize;
    MPI_Comm_rank(group, &grank);
    count("MPI_Comm_rank", 0);
    MPI_Comm_size(group, &gsize);
    count("MPI_Comm_size", 0);
    char *buf = malloc(size);
    memset(buf, 'a' + rank % 26, size);
    char *agg = grank == 0 ? malloc(size * gsize) : NULL;
    int fd = -1;
    char path[4096];
    if (grank == 0) {
        snprintf(path, sizeof path, "%s/file_%d", dir, rank / k);
        fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        count("open", 0);
        if (fd < 0) DIE("open %s", path);
    }
    for (int i = 0; i < iters; i++) {
        MPI_Gather(buf, (int)size, MPI_BYTE, agg, (int)size, MPI_BYTE, 0, group);
        count("MPI_Gather", 0);
        if (grank == 0) {
            ssize_t w = write(fd, agg, size * gsize);
            count("write", w);
        }
    }
    if (grank == 0) {
        close(fd);
        count("close", 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
