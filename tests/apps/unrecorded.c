/* unrecorded: calls MPI functions the tracer does not record (MPI_Get_version, MPI_Wtick)
 * beside ones it does (MPI_Barrier, MPI_Get_processor_name), so the trace's header must list
 * the first two and not the others. Usage: unrecorded */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0, version = 0, subversion = 0;
    MPI_Init(&argc, &argv);
    MPI_Get_processor_name(name, &len);
    MPI_Get_version(&version, &subversion);
    double tick = MPI_Wtick();
    MPI_Barrier(MPI_COMM_WORLD);
    if (tick <= 0 || len <= 0 || version < 3)
        printf("odd: tick %g, name length %d, version %d\n", tick, len, version);
    MPI_Finalize();
    return 0;
}
