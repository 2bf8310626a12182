/* ior_like: an IOR-style benchmark.
 *   -a posix|mpiio   API (default posix)
 *   -F               file per process (default: one shared file)
 *   -L seg|strided   segmented (AAAABBBB) or strided (ABABAB) layout (default seg)
 *   -c               collective MPI-IO (default independent)
 *   -B               collective MPI-IO through the split collectives
 *                    (MPI_File_write_at_all_begin/_end, read likewise); implies -c
 *   -t BYTES         transfer size (default 65536)
 *   -b BYTES         block size per rank and segment (default 262144)
 *   -s N             segment count (default 4)
 *   -S               strong scaling: -b is the total per segment, each rank gets b/nranks
 *   -R               read back from the neighbour (rank+1 mod n) after writing
 *   -e               fsync (MPI_File_sync) after writing
 *   -o PATH          file name (default /dev/shm/ior_like.dat); FPP adds .<rank, 8 digits>
 *   -P               name the file by the run, as programs name outputs by their job: PATH
 *                    gets .<rank 0's pid> (broadcast) before anything else is added
 *   -i N             repetitions of the whole write(/read) (default 1)
 *   -r               random offsets: each transfer goes to a pseudo-random transfer slot of
 *                    the rank's own region (IOR's -z), seeded by rank and scale, so no exact
 *                    model of the offsets exists and extrapolation must refuse
 *   -H KEY=VALUE     an MPI-IO hint passed to MPI_File_open (IOR's hints), e.g. cb_nodes=2;
 *                    repeatable (default: MPI_INFO_NULL)
 *   -C create|split|reverse
 *                    open the shared file on a communicator of every rank made at start-up
 *                    (default: MPI_COMM_WORLD): `create` as IOR makes its test communicator
 *                    (MPI_Comm_create of the world's group: the world's order), `split`
 *                    MPI_Comm_split with one color and the rank as key (the world's order),
 *                    `reverse` with the keys reversed (every rank, another order)
 *   -N               the node queries IOR makes at start-up (node_queries.h) */
#include <mpi.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "count.h"
#include "node_queries.h"

static int rank, n;
static int mpiio, fpp, strided, coll, split, strong, readback, dofsync, randomized, reps = 1;
static long xfer = 65536, block = 262144, segs = 4;
static const char *opath = "/dev/shm/ior_like.dat";
static MPI_Info hints = MPI_INFO_NULL;
/* The communicator a shared file is opened on (-C). */
static MPI_Comm shared_comm;

/* Adds "KEY=VALUE" to the hints given to MPI_File_open. */
static void add_hint(char *kv) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv) DIE("ior_like: -H wants KEY=VALUE, got %s", kv);
    *eq = 0;
    if (hints == MPI_INFO_NULL) MPI_Info_create(&hints);
    MPI_Info_set(hints, kv, eq + 1);
}

/* Offset of transfer i of segment s for rank r. */
/* A small deterministic generator (splitmix64), so runs are repeatable. */
static unsigned long long mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static long long offset_of(int r, long s, long i) {
    long nx = block / xfer;
    if (randomized)
        i = (long)(mix(((unsigned long long)r << 40) ^ ((unsigned long long)n << 20) ^ (unsigned long long)(s * nx + i)) % (unsigned long long)nx);
    if (fpp) return s * block + i * xfer;
    if (strided) return ((s * nx + i) * (long long)n + r) * xfer;
    return (s * (long long)n + r) * block + i * xfer;
}

static void file_name(char *out, size_t len, int r) {
    if (fpp)
        snprintf(out, len, "%s.%08d", opath, r);
    else
        snprintf(out, len, "%s", opath);
}

static void posix_phase(char *buf, int writing, int target) {
    char path[4096];
    file_name(path, sizeof path, target);
    int fd = writing ? open(path, O_CREAT | O_WRONLY, 0644) : open(path, O_RDONLY);
    count("open", 0);
    if (fd < 0) DIE("open %s failed", path);
    long nx = block / xfer;
    for (long s = 0; s < segs; s++)
        for (long i = 0; i < nx; i++) {
            long long off = offset_of(target, s, i);
            if (writing) {
                ssize_t w = pwrite(fd, buf, xfer, off);
                count("pwrite", w);
            } else {
                ssize_t r = pread(fd, buf, xfer, off);
                count("pread", r);
            }
        }
    if (writing && dofsync) {
        fsync(fd);
        count("fsync", 0);
    }
    close(fd);
    count("close", 0);
}

static void mpiio_phase(char *buf, int writing, int target) {
    char path[4096];
    file_name(path, sizeof path, target);
    MPI_Comm comm = fpp ? MPI_COMM_SELF : shared_comm;
    MPI_File fh;
    int amode = writing ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
    if (MPI_File_open(comm, path, amode, hints, &fh)) DIE("MPI_File_open %s", path);
    count("MPI_File_open", 0);
    long nx = block / xfer;
    for (long s = 0; s < segs; s++)
        for (long i = 0; i < nx; i++) {
            MPI_Offset off = offset_of(target, s, i);
            if (writing && split) {
                MPI_File_write_at_all_begin(fh, off, buf, (int)xfer, MPI_BYTE);
                count("MPI_File_write_at_all_begin", xfer);
                MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE);
                count("MPI_File_write_at_all_end", 0);
            } else if (writing && coll) {
                MPI_File_write_at_all(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
                count("MPI_File_write_at_all", xfer);
            } else if (writing) {
                MPI_File_write_at(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
                count("MPI_File_write_at", xfer);
            } else if (split) {
                MPI_File_read_at_all_begin(fh, off, buf, (int)xfer, MPI_BYTE);
                count("MPI_File_read_at_all_begin", xfer);
                MPI_File_read_at_all_end(fh, buf, MPI_STATUS_IGNORE);
                count("MPI_File_read_at_all_end", 0);
            } else if (coll) {
                MPI_File_read_at_all(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
                count("MPI_File_read_at_all", xfer);
            } else {
                MPI_File_read_at(fh, off, buf, (int)xfer, MPI_BYTE, MPI_STATUS_IGNORE);
                count("MPI_File_read_at", xfer);
            }
        }
    if (writing && dofsync) {
        MPI_File_sync(fh);
        count("MPI_File_sync", 0);
    }
    MPI_File_close(&fh);
    count("MPI_File_close", 0);
}

int main(int argc, char **argv) {
    app_init(&argc, &argv, &rank, &n);
    int c;
    const char *comm_kind = NULL;
    int by_run = 0;
    int node_queries = 0;
    while ((c = getopt(argc, argv, "a:FL:cBt:b:s:SReo:i:rH:C:PN")) != -1) {
        switch (c) {
        case 'a': mpiio = strcmp(optarg, "mpiio") == 0; break;
        case 'F': fpp = 1; break;
        case 'L': strided = strcmp(optarg, "strided") == 0; break;
        case 'c': coll = 1; break;
        case 'B': coll = split = 1; break;
        case 't': xfer = atol(optarg); break;
        case 'b': block = atol(optarg); break;
        case 's': segs = atol(optarg); break;
        case 'S': strong = 1; break;
        case 'R': readback = 1; break;
        case 'e': dofsync = 1; break;
        case 'o': opath = optarg; break;
        case 'i': reps = atoi(optarg); break;
        case 'r': randomized = 1; break;
        case 'H': add_hint(optarg); break;
        case 'C': comm_kind = optarg; break;
        case 'P': by_run = 1; break;
        case 'N': node_queries = 1; break;
        default: DIE("ior_like: bad option");
        }
    }
    if (node_queries) nq_all(MPI_COMM_WORLD, rank, n);
    if (by_run) {
        /* Rank 0's pid: another in every run, the same on every rank of one. */
        long pid = (long)getpid();
        MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        count("MPI_Bcast", 0);
        static char named[4096];
        snprintf(named, sizeof named, "%s.%ld", opath, pid);
        opath = named;
    }
    shared_comm = MPI_COMM_WORLD;
    if (comm_kind && strcmp(comm_kind, "create") == 0) {
        MPI_Group world;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Comm_create(MPI_COMM_WORLD, world, &shared_comm);
        count("MPI_Comm_create", 0);
        MPI_Group_free(&world);
    } else if (comm_kind && strcmp(comm_kind, "split") == 0) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &shared_comm);
        count("MPI_Comm_split", 0);
    } else if (comm_kind && strcmp(comm_kind, "reverse") == 0) {
        MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - rank, &shared_comm);
        count("MPI_Comm_split", 0);
    } else if (comm_kind) {
        DIE("ior_like: -C takes create, split or reverse");
    }
    if (strong) block /= n;
    if (xfer <= 0 || block < xfer || block % xfer) DIE("ior_like: block must be a multiple of the transfer size");
    char *buf = malloc(xfer);
    memset(buf, 'A' + rank % 26, xfer);
    for (int rep = 0; rep < reps; rep++) {
        if (mpiio)
            mpiio_phase(buf, 1, rank);
        else
            posix_phase(buf, 1, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        count("MPI_Barrier", 0);
        if (readback) {
            int nb = (rank + 1) % n;
            if (mpiio)
                mpiio_phase(buf, 0, fpp ? nb : nb);
            else
                posix_phase(buf, 0, nb);
            MPI_Barrier(MPI_COMM_WORLD);
            count("MPI_Barrier", 0);
        }
    }
    if (hints != MPI_INFO_NULL) MPI_Info_free(&hints);
    if (shared_comm != MPI_COMM_WORLD) {
        MPI_Comm_free(&shared_comm);
        count("MPI_Comm_free", 0);
    }
    count("MPI_Finalize", 0);
    MPI_Finalize();
    count_print(rank);
    free(buf);
    return 0;
}
