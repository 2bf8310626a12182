/* md_like: a metadata-heavy program after mdtest (file-only, one directory per rank, as
 * `mdtest -F -u -n ITEMS -w BYTES -e BYTES`): IOR's node queries at start-up
 * (node_queries.h), then the phases create (open O_CREAT, write, close), stat, read (open,
 * read, close) and remove (unlink) over ITEMS files in the rank's own directory, each phase
 * between barriers, then the counts reduced and each rank's phase times gathered at rank 0.
 *   -n ITEMS   files per rank (default 8)
 *   -w BYTES   bytes written to and read from each file (default 3901, mdtest's usual)
 *   -d DIR     the test directory (default /dev/shm/md_like); made and removed by rank 0 */
#include <mpi.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "count.h"
#include "node_queries.h"

enum { PHASES = 4 };
static int rank, n;
static long items = 8, bytes = 3901;
static const char *top = "/dev/shm/md_like";

static void item_path(char *out, size_t len, long i) {
    snprintf(out, len, "%s/mdtest_tree.%d/file.mdtest.%d.%ld", top, rank, rank, i);
}

static void create_phase(char *buf) {
    char path[4096];
    for (long i = 0; i < items; i++) {
        item_path(path, sizeof path, i);
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        count("open", 0);
        if (fd < 0) DIE("md_like: create %s failed", path);
        if (bytes > 0) {
            ssize_t w = write(fd, buf, bytes);
            count("write", w);
        }
        close(fd);
        count("close", 0);
    }
}

static void stat_phase(void) {
    char path[4096];
    struct stat st;
    for (long i = 0; i < items; i++) {
        item_path(path, sizeof path, i);
        if (stat(path, &st)) DIE("md_like: stat %s failed", path);
        count("stat", 0);
    }
}

static void read_phase(char *buf) {
    char path[4096];
    for (long i = 0; i < items; i++) {
        item_path(path, sizeof path, i);
        int fd = open(path, O_RDONLY);
        count("open", 0);
        if (fd < 0) DIE("md_like: open %s failed", path);
        if (bytes > 0) {
            ssize_t r = read(fd, buf, bytes);
            count("read", r);
        }
        close(fd);
        count("close", 0);
    }
}

static void remove_phase(void) {
    char path[4096];
    for (long i = 0; i < items; i++) {
        item_path(path, sizeof path, i);
        if (unlink(path)) DIE("md_like: unlink %s failed", path);
        count("unlink", 0);
    }
}

static void barrier(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
}

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    int c;
    while ((c = getopt(argc, argv, "n:w:d:")) != -1) {
        switch (c) {
        case 'n': items = atol(optarg); break;
        case 'w': bytes = atol(optarg); break;
        case 'd': top = optarg; break;
        default: DIE("md_like: bad option");
        }
    }
    nq_all(MPI_COMM_WORLD, rank, n);
    char *buf = malloc(bytes > 0 ? bytes : 1);
    memset(buf, 'a' + rank % 26, bytes > 0 ? bytes : 1);
    char dir[4096];
    if (rank == 0) {
        if (mkdir(top, 0755) && errno != EEXIST) DIE("md_like: mkdir %s failed", top);
        count("mkdir", 0);
    }
    barrier();
    snprintf(dir, sizeof dir, "%s/mdtest_tree.%d", top, rank);
    if (mkdir(dir, 0755)) DIE("md_like: mkdir %s failed", dir);
    count("mkdir", 0);
    double t[PHASES];
    barrier();
    t[0] = MPI_Wtime();
    create_phase(buf);
    barrier();
    t[0] = MPI_Wtime() - t[0];
    t[1] = MPI_Wtime();
    stat_phase();
    barrier();
    t[1] = MPI_Wtime() - t[1];
    t[2] = MPI_Wtime();
    read_phase(buf);
    barrier();
    t[2] = MPI_Wtime() - t[2];
    t[3] = MPI_Wtime();
    remove_phase();
    if (rmdir(dir)) DIE("md_like: rmdir %s failed", dir);
    count("rmdir", 0);
    barrier();
    t[3] = MPI_Wtime() - t[3];
    if (rank == 0) {
        if (rmdir(top)) DIE("md_like: rmdir %s failed", top);
        count("rmdir", 0);
    }
    /* mdtest's summary: items done reduced, every rank's phase times gathered at rank 0. */
    long long done = items, most = 0, total = 0;
    MPI_Allreduce(&done, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    count("MPI_Allreduce", 0);
    MPI_Reduce(&done, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    count("MPI_Reduce", 0);
    double *all = rank == 0 ? malloc(sizeof(double) * PHASES * (size_t)n) : NULL;
    MPI_Gather(t, PHASES, MPI_DOUBLE, all, PHASES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    count("MPI_Gather", 0);
    free(all);
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
