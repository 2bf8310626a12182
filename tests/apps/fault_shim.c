/* fault_shim.so: the fault injector of tests/faults.rs, preloaded AFTER libiotrex_tracer.so
 * (LD_PRELOAD=tracer:shim), so the tracer's calls to the next `write` and `PMPI_*` reach it.
 * It knows nothing of the tracer: it fails writes on files by name and stops ranks at MPI
 * calls, as a full disk, a failing disk or a dying node would.
 *
 * FAULT_WRITE_MATCH=S        write/pwrite on a descriptor whose path contains S fail ...
 * FAULT_WRITE_ERRNO=E        ... with errno E (28 ENOSPC, 5 EIO) ...
 * FAULT_WRITE_AFTER=B        ... once B bytes have been written to such files (default 0),
 *                            the first failing call writing what still fits, as a disk
 *                            filling up does.
 * FAULT_RANK=R               the rank (OMPI_COMM_WORLD_RANK) that FAULT_SIGNAL hits ...
 * FAULT_SIGNAL=S             ... KILL or STOP ...
 * FAULT_AT=A                 ... at its first PMPI_Isend or PMPI_Send (send; the fault app
 *                            makes no point-to-point call, so that is a library's or a
 *                            tool's message inside MPI_Finalize), or at PMPI_Finalize
 *                            or MPI_Finalize (finalize).
 * FAULT_PID_FILE=P           before stopping itself, the rank writes its pid to P (so the
 *                            test can SIGCONT it).
 * FAULT_IGNORE_TERM=1        every rank ignores SIGTERM once MPI_Init returns, as an
 *                            application may: mpirun's SIGTERM then does nothing, and only
 *                            its SIGKILL a second later ends the rank (no handler runs).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long long budget = -1; /* bytes left before failing; -1: not read yet */

static int matches(int fd) {
    const char *m = getenv("FAULT_WRITE_MATCH");
    if (!m || !*m || fd < 0) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    return strstr(path, m) != NULL;
}

/* How many of `n` bytes may be written; 0 means fail with FAULT_WRITE_ERRNO. */
static size_t allowed(int fd, size_t n) {
    if (!matches(fd)) return n;
    if (budget < 0) {
        const char *a = getenv("FAULT_WRITE_AFTER");
        budget = a ? atoll(a) : 0;
    }
    size_t ok = (long long)n <= budget ? n : (size_t)budget;
    budget -= (long long)ok;
    return ok;
}

static int fail_errno(void) {
    const char *e = getenv("FAULT_WRITE_ERRNO");
    return e ? atoi(e) : ENOSPC;
}

ssize_t write(int fd, const void *b, size_t n) {
    static ssize_t (*next)(int, const void *, size_t);
    if (!next) next = dlsym(RTLD_NEXT, "write");
    size_t ok = allowed(fd, n);
    if (ok == 0 && n > 0) {
        errno = fail_errno();
        return -1;
    }
    return next(fd, b, ok);
}

#define PWRITE(name, off_type)                                                                     \
    ssize_t name(int fd, const void *b, size_t n, off_type off) {                                  \
        static ssize_t (*next)(int, const void *, size_t, off_type);                               \
        if (!next) next = dlsym(RTLD_NEXT, #name);                                                 \
        size_t ok = allowed(fd, n);                                                                \
        if (ok == 0 && n > 0) {                                                                    \
            errno = fail_errno();                                                                  \
            return -1;                                                                             \
        }                                                                                          \
        return next(fd, b, ok, off);                                                               \
    }
PWRITE(pwrite, off_t)
PWRITE(pwrite64, off64_t)

/* Hits this rank with FAULT_SIGNAL if FAULT_AT is `at`. */
static void hit(const char *at) {
    const char *r = getenv("FAULT_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK");
    const char *where = getenv("FAULT_AT"), *sig = getenv("FAULT_SIGNAL");
    if (!r || !me || !where || !sig || strcmp(r, me) != 0 || strcmp(where, at) != 0) return;
    static int done;
    if (done++) return;
    if (strcmp(sig, "STOP") == 0) {
        const char *pf = getenv("FAULT_PID_FILE");
        if (pf) {
            char tmp[4200], text[32];
            snprintf(tmp, sizeof tmp, "%s.tmp", pf);
            int fd = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0644);
            int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
            if (fd >= 0 && write(fd, text, len) == len) {
                close(fd);
                rename(tmp, pf);
            }
        }
        raise(SIGSTOP);
    } else if (strcmp(sig, "KILL") == 0) {
        raise(SIGKILL);
    }
}

int PMPI_Isend(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm,
               MPI_Request *req) {
    static int (*next)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    if (!next) next = dlsym(RTLD_NEXT, "PMPI_Isend");
    hit("send");
    return next(b, c, t, d, tag, comm, req);
}

int PMPI_Send(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) {
    static int (*next)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
    if (!next) next = dlsym(RTLD_NEXT, "PMPI_Send");
    hit("send");
    return next(b, c, t, d, tag, comm);
}

/* Both names: an untraced program calls MPI_Finalize, which Open MPI does not route through
 * the PMPI_Finalize symbol; the tracer calls PMPI_Finalize. */
int PMPI_Finalize(void) {
    static int (*next)(void);
    if (!next) next = dlsym(RTLD_NEXT, "PMPI_Finalize");
    hit("finalize");
    return next();
}

int MPI_Finalize(void) {
    static int (*next)(void);
    if (!next) next = dlsym(RTLD_NEXT, "MPI_Finalize");
    hit("finalize");
    return next();
}

/* FAULT_IGNORE_TERM: after MPI_Init, through `signal` as the application would call it (the
 * tracer hooks it and then leaves the signal ignored). Both names, as for MPI_Finalize: the
 * tracer calls PMPI_Init, an untraced program MPI_Init. */
static void ignore_term(void) {
    const char *e = getenv("FAULT_IGNORE_TERM");
    if (e && strcmp(e, "1") == 0) signal(SIGTERM, SIG_IGN);
}

int PMPI_Init(int *argc, char ***argv) {
    static int (*next)(int *, char ***);
    if (!next) next = dlsym(RTLD_NEXT, "PMPI_Init");
    int r = next(argc, argv);
    ignore_term();
    return r;
}

int MPI_Init(int *argc, char ***argv) {
    static int (*next)(int *, char ***);
    if (!next) next = dlsym(RTLD_NEXT, "MPI_Init");
    int r = next(argc, argv);
    ignore_term();
    return r;
}
