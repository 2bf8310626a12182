/* Every send mode, blocking and nonblocking, with Waitany, Request_free, Scan, Exscan and
 * Comm_free, on a ring over a duplicate of the world. A code that sends with MPI_Rsend (as a
 * molecular-dynamics code's restart writer does) left receives without sends in its trace
 * before these calls were recorded. Usage: p2p_modes [rounds] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    int v[4] = {rank, 1, 2, 3}, w[4];
    static int sent[4], got[8][4];
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    count("MPI_Comm_dup", 0);

    int bufsize = 8 * (4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *bsend_buf = malloc(bufsize);
    MPI_Buffer_attach(bsend_buf, bufsize);
    count("MPI_Buffer_attach", 0);

    for (int i = 0; i < rounds; i++) {
        /* Synchronous: even ranks send first, odd ranks receive first. */
        if (rank % 2 == 0) {
            MPI_Ssend(v, 4, MPI_INT, right, 1, comm);
            count("MPI_Ssend", 0);
            MPI_Recv(w, 4, MPI_INT, left, 1, comm, MPI_STATUS_IGNORE);
            count("MPI_Recv", 0);
        } else {
            MPI_Recv(w, 4, MPI_INT, left, 1, comm, MPI_STATUS_IGNORE);
            count("MPI_Recv", 0);
            MPI_Ssend(v, 4, MPI_INT, right, 1, comm);
            count("MPI_Ssend", 0);
        }

        /* Ready: the receive is posted before the barrier, the send after it. */
        MPI_Request r;
        MPI_Irecv(w, 4, MPI_INT, left, 2, comm, &r);
        count("MPI_Irecv", 0);
        MPI_Barrier(comm);
        count("MPI_Barrier", 0);
        MPI_Rsend(v, 4, MPI_INT, right, 2, comm);
        count("MPI_Rsend", 0);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        count("MPI_Wait", 0);

        /* Buffered. */
        MPI_Bsend(v, 4, MPI_INT, right, 3, comm);
        count("MPI_Bsend", 0);
        MPI_Recv(w, 4, MPI_INT, left, 3, comm, MPI_STATUS_IGNORE);
        count("MPI_Recv", 0);

        /* The nonblocking modes, completed in any order. */
        MPI_Request q[6];
        for (int t = 0; t < 3; t++) {
            MPI_Irecv(got[t], 4, MPI_INT, left, 4 + t, comm, &q[t]);
            count("MPI_Irecv", 0);
        }
        MPI_Barrier(comm);
        count("MPI_Barrier", 0);
        MPI_Issend(v, 4, MPI_INT, right, 4, comm, &q[3]);
        count("MPI_Issend", 0);
        MPI_Irsend(v, 4, MPI_INT, right, 5, comm, &q[4]);
        count("MPI_Irsend", 0);
        MPI_Ibsend(v, 4, MPI_INT, right, 6, comm, &q[5]);
        count("MPI_Ibsend", 0);
        for (int k = 0; k < 6; k++) {
            int idx;
            MPI_Waitany(6, q, &idx, MPI_STATUS_IGNORE);
            count("MPI_Waitany", 0);
        }

        /* A send whose request is freed; its buffer stays valid until the barrier below. */
        sent[0] = rank;
        MPI_Request f;
        MPI_Isend(sent, 4, MPI_INT, right, 7, comm, &f);
        count("MPI_Isend", 0);
        MPI_Request_free(&f);
        count("MPI_Request_free", 0);
        MPI_Recv(w, 4, MPI_INT, left, 7, comm, MPI_STATUS_IGNORE);
        count("MPI_Recv", 0);
        MPI_Barrier(comm);
        count("MPI_Barrier", 0);

        /* Offsets of a shared file are usually a scan of the sizes. */
        long long mine = 100 + rank, before = 0, upto = 0;
        MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, comm);
        count("MPI_Exscan", 0);
        MPI_Scan(&mine, &upto, 1, MPI_LONG_LONG, MPI_SUM, comm);
        count("MPI_Scan", 0);
        if (upto - mine != (rank ? before : 0)) {
            fprintf(stderr, "rank %d: scan %lld, exscan %lld disagree\n", rank, upto, before);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    MPI_Buffer_detach(&bsend_buf, &bufsize);
    count("MPI_Buffer_detach", 0);
    free(bsend_buf);
    MPI_Comm_free(&comm);
    count("MPI_Comm_free", 0);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
