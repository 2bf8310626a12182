/* comm_create: communicators that are not made by MPI_Comm_split, as IOR makes its test
 * communicator: MPI_Comm_create from a group (the even ranks), and MPI_Comm_split_type
 * (the ranks sharing a node). The even ranks then write a shared file collectively on their
 * communicator, and everyone meets in a barrier on the node communicator.
 * Usage: comm_create DIR [ITERS=3] [SIZE=4096] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: comm_create DIR [ITERS] [SIZE]");
    int iters = argc > 2 ? atoi(argv[2]) : 3;
    int size = argc > 3 ? atoi(argv[3]) : 4096;
    char *buf = malloc(size);
    memset(buf, 'a' + rank % 26, size);

    MPI_Group world, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int range[1][3] = {{0, n - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Comm even_comm;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &even_comm);
    count("MPI_Comm_create", 0);
    MPI_Group_free(&evens);
    MPI_Group_free(&world);

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    count("MPI_Comm_split_type", 0);

    if (even_comm != MPI_COMM_NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/evens", argv[1]);
        MPI_File fh;
        if (MPI_File_open(even_comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                          &fh) != MPI_SUCCESS)
            DIE("MPI_File_open %s failed", path);
        count("MPI_File_open", 0);
        int me;
        MPI_Comm_rank(even_comm, &me);
        count("MPI_Comm_rank", 0);
        int ne;
        MPI_Comm_size(even_comm, &ne);
        count("MPI_Comm_size", 0);
        for (int i = 0; i < iters; i++) {
            MPI_Offset off = ((MPI_Offset)i * ne + me) * size;
            MPI_File_write_at_all(fh, off, buf, size, MPI_BYTE, MPI_STATUS_IGNORE);
            count("MPI_File_write_at_all", size);
        }
        MPI_File_close(&fh);
        count("MPI_File_close", 0);
        MPI_Barrier(even_comm);
        count("MPI_Barrier", 0);
    }
    MPI_Barrier(node);
    count("MPI_Barrier", 0);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    free(buf);
    return 0;
}
