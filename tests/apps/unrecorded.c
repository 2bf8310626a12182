/* unrecorded: calls MPI functions the tracer does not record (MPI_Get_processor_name,
 * MPI_Wtick) beside one it does (MPI_Barrier), so the trace's header must list the first two
 * and not the third. Usage: unrecorded */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_processor_name(name, &len);
    double tick = MPI_Wtick();
    MPI_Barrier(MPI_COMM_WORLD);
    if (tick <= 0 || len <= 0) printf("odd: tick %g, name length %d\n", tick, len);
    MPI_Finalize();
    return 0;
}
