/* Names that belong to the run, not the program, as real programs make them:
 *   - every rank keeps a log named by its own pid (DIR/log.<pid>), created exclusively, as a
 *     pid file is;
 *   - rank 0 writes a file named by the job (DIR/job-<id>.txt, the id from the launcher's
 *     environment: Open MPI's OMPI_MCA_ess_base_jobid, else Slurm's SLURM_JOB_ID);
 *   - rank 0 writes a file stamped with the start time (DIR/t-<seconds since the epoch>);
 *   - rank 0 creates a lock named by its pid (broadcast), which every other rank then opens
 *     (DIR/lock-<rank 0's pid>), as Open MPI's shared-file-pointer component does.
 * Every file is removed at the end, each by the rank that made it.
 *
 * Usage: run_names DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include "count.h"

static void put(const char *path, int flags, const char *what) {
    int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
    count("open", 0);
    if (fd < 0) DIE("run_names: %s: %s", path, strerror(errno));
    ssize_t w = write(fd, what, strlen(what));
    count("write", w);
    close(fd);
    count("close", 0);
}

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc != 2) DIE("usage: run_names DIR");
    const char *dir = argv[1];
    char log[4096], job[4096], stamp[4096], lock[4096];
    snprintf(log, sizeof log, "%s/log.%ld", dir, (long)getpid());
    put(log, O_EXCL, "started\n");

    const char *id = getenv("OMPI_MCA_ess_base_jobid");
    if (!id) id = getenv("SLURM_JOB_ID");
    snprintf(job, sizeof job, "%s/job-%s.txt", dir, id ? id : "0");
    snprintf(stamp, sizeof stamp, "%s/t-%ld", dir, (long)time(NULL));
    if (rank == 0) {
        put(job, O_TRUNC, "job\n");
        put(stamp, O_TRUNC, "stamp\n");
    }

    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    count("MPI_Bcast", 0);
    snprintf(lock, sizeof lock, "%s/lock-%ld", dir, pid);
    if (rank == 0) put(lock, O_EXCL, "lock\n");
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    if (rank != 0) {
        int fd = open(lock, O_RDONLY);
        count("open", 0);
        if (fd < 0) DIE("run_names: %s: %s", lock, strerror(errno));
        close(fd);
        count("close", 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);

    if (rank == 0) {
        unlink(lock);
        unlink(job);
        unlink(stamp);
        count("unlink", 0);
        count("unlink", 0);
        count("unlink", 0);
    }
    unlink(log);
    count("unlink", 0);
    MPI_Finalize();
    /* The pid, for a test that must know whether the tracer could match it. */
    printf("PID %ld\n", (long)getpid());
    fflush(stdout);
    count_print(rank);
    return 0;
}
