/* stdio_app: stdio checkpoints and logs. Rank 0 writes DIR/ckpt.dat with CHUNKS fwrite calls
 * of SIZE bytes, reads it back with fread after an fseek, and every rank writes LINES fprintf
 * lines to DIR/log_<rank>.txt, flushing every 10 lines.
 * Then every rank writes DIR/text_<rank>.txt with the line and character calls (fputs, fputc,
 * putc and their _unlocked forms) and reads it back (fgets, fgetc, getc, fread_unlocked); the
 * tracer records these as fwrite/fread of bytes of 1, so they are counted under those names.
 * Last, descriptor copies: DIR/dup_<rank>.txt is opened, written with write and dprintf
 * (recorded as writes), and written through dup, dup3,
 * fcntl(F_DUPFD_CLOEXEC) and dup2 onto stdout (restored afterwards, which closes the traced
 * copy: the tracer records that implicit close as a close).
 * Usage: stdio_app DIR [CHUNKS=8] [SIZE=65536] [LINES=50] */
#define _GNU_SOURCE
#include <mpi.h>
#include <fcntl.h>
#include <stdlib.h>
#include "count.h"

/* Writes `msg` on descriptor `fd` and counts it. */
static void put(int fd, const char *msg) {
    ssize_t w = write(fd, msg, strlen(msg));
    count("write", w > 0 ? w : 0);
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc < 2) DIE("usage: stdio_app DIR [CHUNKS] [SIZE] [LINES]");
    const char *dir = argv[1];
    int chunks = argc > 2 ? atoi(argv[2]) : 8;
    long size = argc > 3 ? atol(argv[3]) : 65536;
    int lines = argc > 4 ? atoi(argv[4]) : 50;
    char path[4096];
    char *buf = malloc(size);
    memset(buf, 'c', size);
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/ckpt.dat", dir);
        FILE *f = fopen(path, "wb");
        count("fopen", 0);
        if (!f) DIE("fopen %s", path);
        for (int i = 0; i < chunks; i++) {
            size_t w = fwrite(buf, 1, size, f);
            count("fwrite", (long long)w);
        }
        fclose(f);
        count("fclose", 0);
        f = fopen(path, "rb");
        count("fopen", 0);
        fseek(f, 0, SEEK_SET);
        count("fseek", 0);
        for (int i = 0; i < chunks; i++) {
            size_t r = fread(buf, 1, size, f);
            count("fread", (long long)r);
        }
        fclose(f);
        count("fclose", 0);
    }
    snprintf(path, sizeof path, "%s/log_%d.txt", dir, rank);
    FILE *log = fopen(path, "w");
    count("fopen", 0);
    if (!log) DIE("fopen %s", path);
    for (int i = 0; i < lines; i++) {
        int w = fprintf(log, "rank %d step %d value %.3f\n", rank, i, i * 0.5);
        count("fprintf", w);
        if (i % 10 == 9) {
            fflush(log);
            count("fflush", 0);
        }
    }
    fclose(log);
    count("fclose", 0);

    snprintf(path, sizeof path, "%s/text_%d.txt", dir, rank);
    FILE *t = fopen(path, "w+");
    count("fopen", 0);
    if (!t) DIE("fopen %s", path);
    char line[128];
    for (int i = 0; i < lines; i++) {
        /* Not literals: GCC would turn fputs of a literal into fwrite itself. */
        snprintf(line, sizeof line, "line %d of rank %d", i, rank);
        int r = (i % 2) ? fputs(line, t) : fputs_unlocked(line, t);
        count("fwrite", r >= 0 ? (long long)strlen(line) : 0);
        r = fputc(i % 3 ? ';' : '#', t);
        count("fwrite", r != EOF);
        r = putc('\n', t);
        count("fwrite", r != EOF);
    }
    /* More than 8 bytes: glibc's headers expand smaller constant fwrite_unlocked calls inline
     * into putc_unlocked, which no preload can see. */
    size_t w = fwrite_unlocked("tail of the file\n", 1, 17, t);
    count("fwrite", (long long)w);
    fseek(t, 0, SEEK_SET);
    count("fseek", 0);
    char *got;
    do {
        got = fgets(line, sizeof line, t);
        count("fread", got ? (long long)strlen(line) : 0);
    } while (got);
    fseek(t, 0, SEEK_SET);
    count("fseek", 0);
    for (int i = 0; i < 24; i++) {
        int c = (i % 2) ? fgetc(t) : getc(t);
        count("fread", c != EOF);
    }
    size_t r = fread_unlocked(line, 1, 16, t);
    count("fread", (long long)r);
    fclose(t);
    count("fclose", 0);

    snprintf(path, sizeof path, "%s/dup_%d.txt", dir, rank);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    count("open", 0);
    if (fd < 0) DIE("open %s", path);
    put(fd, "direct\n");
    /* dprintf writes through glibc's internal write, not the write symbol: hooked itself. */
    for (int i = 0; i < 3; i++) {
        int w = dprintf(fd, "dprintf line %d\n", i);
        count("write", w > 0 ? w : 0);
    }
    int d = dup(fd);
    count("dup", 0);
    put(d, "through dup\n");
    close(d);
    count("close", 0);
    d = fcntl(fd, F_DUPFD_CLOEXEC, 40);
    count("dup", 0);
    put(d, "through F_DUPFD_CLOEXEC\n");
    close(d);
    count("close", 0);
    d = dup3(fd, 50, O_CLOEXEC);
    count("dup", 0);
    put(d, "through dup3\n");
    close(d);
    count("close", 0);
    /* stdout is not traced: its copy is not either. */
    int saved = dup(1);
    if (saved < 0) DIE("dup(1)");
    if (dup2(fd, 1) != 1) DIE("dup2");
    count("dup", 0);
    put(1, "through dup2 onto stdout\n");
    /* Restoring stdout reuses descriptor 1: the traced copy is closed. */
    if (dup2(saved, 1) != 1) DIE("dup2 back");
    count("close", 0);
    close(saved);
    close(fd);
    count("close", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
