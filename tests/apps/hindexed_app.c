/* hindexed_app: file views built the way parallel HDF5 and other libraries build them:
 * MPI_Type_create_hindexed (byte displacements), MPI_Type_create_hindexed_block,
 * MPI_Type_create_indexed_block and MPI_Type_dup, each used as a filetype for one collective
 * write. Rank r owns blocks r, r+n, r+2n, ... of BLOCK bytes.
 * Usage: hindexed_app DIR [NBLOCKS=4] [BLOCK=1024] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: hindexed_app DIR [NBLOCKS] [BLOCK]");
    int nb = argc > 2 ? atoi(argv[2]) : 4;
    int block = argc > 3 ? atoi(argv[3]) : 1024;
    char *buf = malloc((size_t)nb * block);
    memset(buf, 'a' + rank % 26, (size_t)nb * block);
    int *bls = malloc(nb * sizeof(int));
    int *idx = malloc(nb * sizeof(int));
    MPI_Aint *disp = malloc(nb * sizeof(MPI_Aint));
    for (int i = 0; i < nb; i++) {
        bls[i] = block;
        idx[i] = (i * n + rank) * block;
        disp[i] = (MPI_Aint)(i * n + rank) * block;
    }
    MPI_Datatype t[4];
    MPI_Type_create_hindexed(nb, bls, disp, MPI_BYTE, &t[0]);
    count("MPI_Type_create_hindexed", 0);
    MPI_Type_create_hindexed_block(nb, block, disp, MPI_BYTE, &t[1]);
    count("MPI_Type_create_hindexed_block", 0);
    MPI_Type_create_indexed_block(nb, block, idx, MPI_BYTE, &t[2]);
    count("MPI_Type_create_indexed_block", 0);
    MPI_Type_dup(t[0], &t[3]);
    count("MPI_Type_dup", 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/hindexed", argv[1]);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh) != MPI_SUCCESS)
        DIE("MPI_File_open %s failed", path);
    count("MPI_File_open", 0);
    for (int k = 0; k < 4; k++) {
        MPI_Type_commit(&t[k]);
        count("MPI_Type_commit", 0);
        /* Each type in its own region of the file. */
        MPI_Offset base = (MPI_Offset)k * nb * n * block;
        MPI_File_set_view(fh, base, MPI_BYTE, t[k], "native", MPI_INFO_NULL);
        count("MPI_File_set_view", 0);
        MPI_File_write_all(fh, buf, nb * block, MPI_BYTE, MPI_STATUS_IGNORE);
        count("MPI_File_write_all", (long long)nb * block);
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    for (int k = 0; k < 4; k++) {
        MPI_Type_free(&t[k]);
        count("MPI_Type_free", 0);
    }
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    free(buf);
    free(bls);
    free(idx);
    free(disp);
    return 0;
}
