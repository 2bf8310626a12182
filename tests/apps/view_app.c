/* view_app: noncontiguous MPI-IO through file views, for the replay of derived datatypes.
 * File DIR/view_vec: each rank's filetype is MPI_Type_vector(NB, B, 2*n*B, MPI_INT) at
 * displacement rank*B ints, resized to NB rows of 2*n*B ints, so the ranks' blocks interleave
 * and every row of blocks is followed by a hole of n*B ints. Each rank writes NB*B ints collectively (write_all), then B more ints
 * independently at view offset NB*B (the next copy of the tiled filetype), then reads its
 * first NB*B ints back collectively and checks them.
 * File DIR/view_sub: a ROWS x (2*n*COLS) array of chars; each rank's filetype is the
 * ROWS x COLS subarray at column 2*rank*COLS (C order), written with write_at_all at view
 * offset 0, so every other column band is a hole.
 * Both files are first sized to the whole array (see below). Every byte a rank writes is
 * rank+1, so the file says who wrote where and holes stay 0.
 * Usage: view_app DIR [NB=8] [B=16] [ROWS=6] [COLS=24] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: view_app DIR [NB] [B] [ROWS] [COLS]");
    int nb = argc > 2 ? atoi(argv[2]) : 8;
    int b = argc > 3 ? atoi(argv[3]) : 16;
    int rows = argc > 4 ? atoi(argv[4]) : 6;
    int cols = argc > 5 ? atoi(argv[5]) : 24;
    if (nb < 1 || b < 1 || rows < 1 || cols < 1) DIE("view_app: sizes must be >= 1");
    size_t most = (size_t)nb * b * sizeof(int);
    if ((size_t)rows * cols > most) most = (size_t)rows * cols;
    char *buf = malloc(most), *back = malloc(most);
    memset(buf, rank + 1, most);
    char path[4096];
    MPI_Status st;
    int got;

    snprintf(path, sizeof path, "%s/view_vec", argv[1]);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh) != MPI_SUCCESS)
        DIE("view_app: cannot open %s", path);
    count("MPI_File_open", 0);
    /* Holes past the end of file are undefined after a collective write: the MPI-IO layer
     * reads the aggregated range back, gets nothing, and writes its collective buffer's stale
     * bytes there (seen with ROMIO and OMPIO alike). Sized first, the holes read back as 0. */
    MPI_File_set_size(fh, (MPI_Offset)2 * nb * 2 * n * b * sizeof(int));
    count("MPI_File_set_size", 0);
    MPI_Datatype row, vec;
    MPI_Type_vector(nb, b, 2 * n * b, MPI_INT, &row);
    count("MPI_Type_vector", 0);
    /* The vector's extent ends with its last block; resized to the whole NB rows, the next
     * copy starts after the last row's hole instead of over the next rank's last block. */
    MPI_Type_create_resized(row, 0, (MPI_Aint)nb * 2 * n * b * sizeof(int), &vec);
    count("MPI_Type_create_resized", 0);
    MPI_Type_commit(&vec);
    count("MPI_Type_commit", 0);
    MPI_File_set_view(fh, (MPI_Offset)rank * b * sizeof(int), MPI_INT, vec, "native",
                      MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_File_write_all(fh, buf, nb * b, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_write_all", got);
    MPI_File_write_at(fh, (MPI_Offset)nb * b, buf, b, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_write_at", got);
    MPI_File_read_at_all(fh, 0, back, nb * b, MPI_INT, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_read_at_all", got);
    if (got != nb * b * (int)sizeof(int) || memcmp(back, buf, got) != 0)
        DIE("view_app: rank %d read back %d bytes that differ from what it wrote", rank, got);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&vec);
    MPI_Type_free(&row);
    count("MPI_Type_free", 0);
    count("MPI_Type_free", 0);

    snprintf(path, sizeof path, "%s/view_sub", argv[1]);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh) != MPI_SUCCESS)
        DIE("view_app: cannot open %s", path);
    count("MPI_File_open", 0);
    MPI_File_set_size(fh, (MPI_Offset)rows * 2 * n * cols);
    count("MPI_File_set_size", 0);
    int sizes[2] = {rows, 2 * n * cols}, subs[2] = {rows, cols}, starts[2] = {0, 2 * rank * cols};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_CHAR, &sub);
    count("MPI_Type_create_subarray", 0);
    MPI_Type_commit(&sub);
    count("MPI_Type_commit", 0);
    MPI_File_set_view(fh, 0, MPI_CHAR, sub, "native", MPI_INFO_NULL);
    count("MPI_File_set_view", 0);
    MPI_File_write_at_all(fh, 0, buf, rows * cols, MPI_CHAR, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_write_at_all", got);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Type_free(&sub);
    count("MPI_Type_free", 0);

    free(buf);
    free(back);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    return 0;
}
