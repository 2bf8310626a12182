/* node_layout: what each rank sees of its node, for the emulated cluster's tests
 * (scripts/cluster.sh). Prints one line per rank,
 * "NODE <world rank> <processor name> <ranks on my node> <my rank on it> <world size>", the
 * node's ranks from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), the world size from an
 * MPI_Allreduce, so that the ranks of every node have talked to each other.
 * Usage: node_layout (any number of ranks). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, len, lsize, lrank;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(name, &len);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &lsize);
    MPI_Comm_rank(local, &lrank);
    /* Crosses the nodes: over TCP on the cluster. */
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("NODE %d %s %d %d %d\n", rank, name, lsize, lrank, total);
    fflush(stdout);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
