/* view_hints: hints given to MPI_File_set_view as well as to MPI_File_open. The file is opened
 * with cb_config_list=*:*, the view sets cb_nodes=3 (which OMPIO honours, and which Open MPI's
 * MPI_File_get_info does not report) and cb_config_list=*:1; then each rank writes 4 strided
 * blocks of 4 KiB collectively.
 * Usage: view_hints PATH */
#include <mpi.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: view_hints PATH");
    MPI_Info at_open, at_view;
    MPI_Info_create(&at_open);
    MPI_Info_set(at_open, "cb_config_list", "*:*");
    MPI_Info_create(&at_view);
    MPI_Info_set(at_view, "cb_nodes", "3");
    MPI_Info_set(at_view, "cb_config_list", "*:1");
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, at_open, &fh))
        DIE("MPI_File_open %s", argv[1]);
    count("MPI_File_open", 0);
    MPI_Datatype ft;
    MPI_Type_vector(4, 4096, 4096 * n, MPI_BYTE, &ft);
    count("MPI_Type_vector", 0);
    MPI_Type_commit(&ft);
    count("MPI_Type_commit", 0);
    MPI_File_set_view(fh, (MPI_Offset)rank * 4096, MPI_BYTE, ft, "native", at_view);
    count("MPI_File_set_view", 0);
    char buf[16384];
    memset(buf, 'A' + rank % 26, sizeof buf);
    MPI_File_write_all(fh, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    count("MPI_File_write_all", sizeof buf);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&ft);
    count("MPI_Type_free", 0);
    MPI_Info_free(&at_open);
    MPI_Info_free(&at_view);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
