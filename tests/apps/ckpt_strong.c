/* ckpt_strong: strong-scaling checkpoints. For each checkpoint, each of the n ranks writes
 * floor(T/n) bytes of a T-byte checkpoint at offset BASE + rank*floor(T/n) with one
 * MPI_File_write_at_all (the last T mod n bytes are not written), then, with -R, reads the
 * neighbour's (rank+1 mod n) part back with MPI_File_read_at_all and checks it.
 * With -u (uneven), odd ranks take part in the collective calls with 0 bytes.
 * With -H KEY=VALUE (repeatable), the checkpoint's file is opened with that MPI-IO hint
 * (e.g. cb_nodes=2); without, with MPI_INFO_NULL.
 * Several checkpoints, one after the other, are separated by "+" (one run, several files).
 * Usage: ckpt_strong PATH T [-R] [-u] [-b BASE] [-H KEY=VALUE]... [+ PATH T ...]... */
#include <mpi.h>
#include <stdlib.h>
#include "count.h"

static int rank, n;

/* One checkpoint from args[0..argc). */
static void checkpoint(int argc, char **args) {
    if (argc < 2) DIE("usage: ckpt_strong PATH T [-R] [-u] [-b BASE] [-H KEY=VALUE]... [+ ...]");
    long long total = atoll(args[1]), base = 0;
    int readback = 0, uneven = 0;
    MPI_Info hints = MPI_INFO_NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(args[i], "-R") == 0) readback = 1;
        else if (strcmp(args[i], "-u") == 0) uneven = 1;
        else if (strcmp(args[i], "-b") == 0 && i + 1 < argc) base = atoll(args[++i]);
        else if (strcmp(args[i], "-H") == 0 && i + 1 < argc) {
            char *kv = args[++i], *eq = strchr(kv, '=');
            if (!eq || eq == kv) DIE("ckpt_strong: -H wants KEY=VALUE, got %s", kv);
            *eq = 0;
            if (hints == MPI_INFO_NULL) MPI_Info_create(&hints);
            MPI_Info_set(hints, kv, eq + 1);
        }
        else DIE("ckpt_strong: bad option %s", args[i]);
    }
    long long part = total / n;
    if (part > 1 << 30) DIE("ckpt_strong: part too large");
    int mine = uneven && rank % 2 ? 0 : (int)part;
    char *buf = malloc(part > 0 ? part : 1);
    memset(buf, 'A' + rank % 26, part);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, args[0], MPI_MODE_CREATE | MPI_MODE_RDWR, hints, &fh))
        DIE("MPI_File_open %s", args[0]);
    count("MPI_File_open", 0);
    MPI_File_write_at_all(fh, base + (MPI_Offset)rank * part, buf, mine, MPI_BYTE, MPI_STATUS_IGNORE);
    count("MPI_File_write_at_all", mine);
    if (readback) {
        /* The parts are written by other ranks (or, at 2 ranks or fewer, each by its own
         * rank with no exchange): wait for every write before reading. */
        MPI_Barrier(MPI_COMM_WORLD);
        count("MPI_Barrier", 0);
        int nb = (rank + 1) % n;
        int theirs = uneven && nb % 2 ? 0 : (int)part;
        MPI_File_read_at_all(fh, base + (MPI_Offset)nb * part, buf, theirs, MPI_BYTE, MPI_STATUS_IGNORE);
        count("MPI_File_read_at_all", theirs);
        for (long long i = 0; i < theirs; i++)
            if (buf[i] != 'A' + nb % 26) DIE("ckpt_strong: byte %lld of rank %d's part is wrong", i, nb);
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
    if (hints != MPI_INFO_NULL) MPI_Info_free(&hints);
    free(buf);
}

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    int start = 1;
    for (int i = 1; i <= argc; i++) {
        if (i == argc || strcmp(argv[i], "+") == 0) {
            checkpoint(i - start, argv + start);
            start = i + 1;
        }
    }
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
