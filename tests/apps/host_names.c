/* Names that hold the host the rank runs on, as real programs make them:
 *   - every rank writes its output as DIR/out.<host>.<rank>.dat (kept, so that a test can see
 *     which names a run or a replay made);
 *   - every rank opens a node-wide lock DIR/lock.<host> (O_CREAT, shared by the node's ranks),
 *     as per-node lock and scratch files are named.
 *
 * Usage: host_names DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include "count.h"

int main(int argc, char **argv) {
    int rank, n;
    app_init(&argc, &argv, &rank, &n);
    if (argc != 2) DIE("usage: host_names DIR");
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0) DIE("host_names: gethostname: %s", strerror(errno));
    char out[4096], lock[4096];
    snprintf(out, sizeof out, "%s/out.%s.%d.dat", argv[1], host, rank);
    snprintf(lock, sizeof lock, "%s/lock.%s", argv[1], host);

    int l = open(lock, O_WRONLY | O_CREAT, 0644);
    count("open", 0);
    if (l < 0) DIE("host_names: %s: %s", lock, strerror(errno));
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    count("open", 0);
    if (fd < 0) DIE("host_names: %s: %s", out, strerror(errno));
    /* A fixed size: the text's length would follow the digits of the rank. */
    char buf[64] = {0};
    snprintf(buf, sizeof buf, "rank %d on %s\n", rank, host);
    ssize_t w = write(fd, buf, sizeof buf);
    count("write", w);
    close(fd);
    count("close", 0);
    close(l);
    count("close", 0);
    MPI_Barrier(MPI_COMM_WORLD);
    count("MPI_Barrier", 0);
    MPI_Finalize();
    count_print(rank);
    return 0;
}
