/* The node queries IOR 4.1 and mdtest make at start-up (src/utilities.c: GetNumNodes,
 * GetNumTasksOnNode0, QueryNodeMapping), with the same MPI calls in the same order: a
 * shared-memory split per query, the node leaders counted with MPI_Allreduce, rank 0's node
 * size summed the same way, then rank 0's hostname broadcast and "on rank 0's node" gathered
 * at rank 0. These are the calls whose values follow the node layout (the split's color is
 * the node leader's rank, the gather's receive count exists on the root alone). */
#ifndef IOTREX_NODE_QUERIES_H
#define IOTREX_NODE_QUERIES_H
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "count.h"

/* Nodes in `comm` (IOR's GetNumNodes). */
static int nq_num_nodes(MPI_Comm comm) {
    MPI_Comm shared;
    int shared_rank = 0, leader, nodes = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    count("MPI_Comm_split_type", 0);
    MPI_Comm_rank(shared, &shared_rank);
    count("MPI_Comm_rank", 0);
    leader = shared_rank == 0;
    MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
    count("MPI_Allreduce", 0);
    MPI_Comm_free(&shared);
    count("MPI_Comm_free", 0);
    return nodes;
}

/* Ranks on rank 0's node (IOR's GetNumTasksOnNode0). */
static int nq_tasks_on_node0(MPI_Comm comm, int rank) {
    MPI_Comm shared;
    int shared_rank = 0, mine = 0, tasks = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    count("MPI_Comm_split_type", 0);
    MPI_Comm_rank(shared, &shared_rank);
    count("MPI_Comm_rank", 0);
    if (rank == 0 && shared_rank == 0) {
        MPI_Comm_size(shared, &mine);
        count("MPI_Comm_size", 0);
    }
    MPI_Allreduce(&mine, &tasks, 1, MPI_INT, MPI_SUM, comm);
    count("MPI_Allreduce", 0);
    MPI_Comm_free(&shared);
    count("MPI_Comm_free", 0);
    return tasks;
}

/* Whether rank 1 is on rank 0's node (IOR's QueryNodeMapping: block placement). */
static int nq_block_mapping(MPI_Comm comm, int rank, int n) {
    char here[256] = {0}, root[256] = {0};
    int *map = malloc(sizeof(int) * (size_t)n);
    if (gethostname(here, sizeof here - 1) != 0) strcpy(here, "?");
    if (rank == 0) memcpy(root, here, sizeof root);
    MPI_Bcast(root, sizeof root, MPI_CHAR, 0, comm);
    count("MPI_Bcast", 0);
    int same = strcmp(root, here) == 0;
    MPI_Gather(&same, 1, MPI_INT, map, 1, MPI_INT, 0, comm);
    count("MPI_Gather", 0);
    int block = 1;
    if (n > 1) block = map[1] == 1;
    MPI_Bcast(&block, 1, MPI_INT, 0, comm);
    count("MPI_Bcast", 0);
    free(map);
    return block;
}

/* All three, as IOR and mdtest make them at start-up. */
static void nq_all(MPI_Comm comm, int rank, int n) {
    int nodes = nq_num_nodes(comm);
    int node0 = nq_tasks_on_node0(comm, rank);
    int block = nq_block_mapping(comm, rank, n);
    if (rank == 0 && getenv("NQ_VERBOSE"))
        fprintf(stderr, "nodes %d, tasks on node 0 %d, block %d\n", nodes, node0, block);
}
#endif
