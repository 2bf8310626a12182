/* large_count: MPI-4's large-count MPI-IO calls (MPI_File_write_at_all_c and friends, with an
 * MPI_Count count), which MPICH 4 provides and codes such as IOR call when they exist. The
 * tracer records them as the operations of their int versions, under those names.
 * Each rank writes ITERS blocks of SIZE bytes collectively at rank-strided offsets, reads them
 * back independently, reads across the end of the file twice (a short read: once with a status,
 * counted from MPI_Get_count, once with MPI_STATUS_IGNORE, counted from the known file size),
 * then writes one more block nonblocking and waits for it.
 * Builds against MPI-3 libraries too (Open MPI 4.1), with the int calls.
 * Usage: large_count DIR [ITERS=4] [SIZE=8192] */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

#if MPI_VERSION >= 4
#define WRITE_AT_ALL MPI_File_write_at_all_c
#define READ_AT MPI_File_read_at_c
#define IWRITE_AT MPI_File_iwrite_at_c
#define CNT MPI_Count
#else
#define WRITE_AT_ALL MPI_File_write_at_all
#define READ_AT MPI_File_read_at
#define IWRITE_AT MPI_File_iwrite_at
#define CNT int
#endif

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: large_count DIR [ITERS] [SIZE]");
    int iters = argc > 2 ? atoi(argv[2]) : 4;
    CNT size = argc > 3 ? atol(argv[3]) : 8192;
    char *buf = malloc(size);
    memset(buf, 'a' + rank % 26, size);
    char path[4096];
    snprintf(path, sizeof path, "%s/large", argv[1]);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh) != MPI_SUCCESS)
        DIE("MPI_File_open %s failed", path);
    count("MPI_File_open", 0);
    for (int i = 0; i < iters; i++) {
        MPI_Offset off = ((MPI_Offset)i * n + rank) * size;
        WRITE_AT_ALL(fh, off, buf, size, MPI_BYTE, MPI_STATUS_IGNORE);
        count("MPI_File_write_at_all", size);
    }
    /* A collective write may return on a rank before its aggregator has written that rank's
     * data (OMPIO does): without this barrier a rank can read its last block before it exists
     * (and the tracer then rightly records a 0-byte read). */
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    for (int i = 0; i < iters; i++) {
        MPI_Offset off = ((MPI_Offset)i * n + rank) * size;
        MPI_Status rs;
        READ_AT(fh, off, buf, size, MPI_BYTE, &rs);
        int nread = -1;
        MPI_Get_count(&rs, MPI_BYTE, &nread);
        count("MPI_File_read_at", nread);
    }
    /* The last half block of the file, asked for as a whole block. */
    MPI_Offset end = (MPI_Offset)iters * n * size;
    MPI_Status st;
    READ_AT(fh, end - size / 2, buf, size, MPI_BYTE, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    count("MPI_File_read_at", got);
    READ_AT(fh, end - size / 2, buf, size, MPI_BYTE, MPI_STATUS_IGNORE);
    count("MPI_File_read_at", size / 2);
    /* Nobody extends the file before every rank has read across its end. */
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    MPI_Request req;
    IWRITE_AT(fh, ((MPI_Offset)iters * n + rank) * size, buf, size, MPI_BYTE, &req);
    count("MPI_File_iwrite_at", size);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    count("MPI_Wait", 0);
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    MPI_Finalize();
    count("MPI_Finalize", 0);
    count_print(rank);
    free(buf);
    return 0;
}
