/* comm_mix: MPI communication between I/O phases. Per iteration: compute (a busy loop of
 * COMPUTE_US microseconds), a barrier, a bcast, an allreduce, a send/recv ring, a nonblocking
 * exchange with both neighbours (isend/irecv/waitall), a sendrecv, then an I/O phase (a pwrite
 * of SIZE bytes to DIR/mix_<rank>). Also comm_dup, a contiguous datatype (create, commit, free)
 * and gather/scatter/allgather/alltoall once.
 * Usage: comm_mix DIR [ITERS=10] [COMPUTE_US=2000] [SIZE=4096] */
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include "count.h"

static void busy(double us) {
    double end = now_s() + us * 1e-6;
    while (now_s() < end) {
    }
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: comm_mix DIR [ITERS] [COMPUTE_US] [SIZE]");
    const char *dir = argv[1];
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    double compute_us = argc > 3 ? atof(argv[3]) : 2000;
    long size = argc > 4 ? atol(argv[4]) : 4096;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    count("MPI_Comm_dup", 0);
    MPI_Datatype vec;
    MPI_Type_contiguous(4, MPI_INT, &vec);
    count("MPI_Type_contiguous", 0);
    MPI_Type_commit(&vec);
    count("MPI_Type_commit", 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/mix_%d", dir, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    count("open", 0);
    if (fd < 0) DIE("open %s", path);
    char *buf = malloc(size);
    memset(buf, 'm', size);
    int v[8] = {rank, 1, 2, 3, 4, 5, 6, 7}, w[8], *all = malloc(sizeof(int) * 4 * n),
        *all2 = malloc(sizeof(int) * 4 * n);
    double d = rank, dsum;
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    for (int it = 0; it < iters; it++) {
        busy(compute_us);
        MPI_Barrier(comm);
        count("MPI_Barrier", 0);
        MPI_Bcast(v, 8, MPI_INT, 0, comm);
        count("MPI_Bcast", 0);
        MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, comm);
        count("MPI_Allreduce", 0);
        if (rank == 0) {
            MPI_Send(v, 1, vec, right, 7, comm);
            count("MPI_Send", 0);
            MPI_Recv(w, 1, vec, left, 7, comm, MPI_STATUS_IGNORE);
            count("MPI_Recv", 0);
        } else {
            MPI_Recv(w, 1, vec, left, 7, comm, MPI_STATUS_IGNORE);
            count("MPI_Recv", 0);
            MPI_Send(v, 1, vec, right, 7, comm);
            count("MPI_Send", 0);
        }
        MPI_Request rq[4];
        MPI_Irecv(w, 2, MPI_INT, left, 8, comm, &rq[0]);
        count("MPI_Irecv", 0);
        MPI_Irecv(w + 2, 2, MPI_INT, right, 9, comm, &rq[1]);
        count("MPI_Irecv", 0);
        MPI_Isend(v, 2, MPI_INT, right, 8, comm, &rq[2]);
        count("MPI_Isend", 0);
        MPI_Isend(v + 2, 2, MPI_INT, left, 9, comm, &rq[3]);
        count("MPI_Isend", 0);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        count("MPI_Waitall", 0);
        MPI_Sendrecv(v, 1, MPI_INT, right, 10, w, 1, MPI_INT, left, 10, comm, MPI_STATUS_IGNORE);
        count("MPI_Sendrecv", 0);
        ssize_t wr = pwrite(fd, buf, size, (long long)it * size);
        count("pwrite", wr);
    }
    MPI_Gather(v, 4, MPI_INT, all, 4, MPI_INT, 0, comm);
    count("MPI_Gather", 0);
    MPI_Scatter(all, 4, MPI_INT, w, 4, MPI_INT, 0, comm);
    count("MPI_Scatter", 0);
    MPI_Allgather(v, 4, MPI_INT, all, 4, MPI_INT, comm);
    count("MPI_Allgather", 0);
    MPI_Alltoall(all, 4, MPI_INT, all2, 4, MPI_INT, comm);
    count("MPI_Alltoall", 0);
    MPI_Reduce(&d, &dsum, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    count("MPI_Reduce", 0);
    MPI_Request r1;
    MPI_Isend(v, 1, MPI_INT, right, 11, comm, &r1);
    count("MPI_Isend", 0);
    MPI_Recv(w, 1, MPI_INT, left, 11, comm, MPI_STATUS_IGNORE);
    count("MPI_Recv", 0);
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    count("MPI_Wait", 0);
    MPI_Type_free(&vec);
    count("MPI_Type_free", 0);
    fsync(fd);
    count("fsync", 0);
    close(fd);
    count("close", 0);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
