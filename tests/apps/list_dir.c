/* list_dir: a checkpointing program that looks at its input directory first, as many do
 * (a restart file's presence, a glob of inputs): every rank lists DIR/in with opendir and
 * readdir, then writes STEPS blocks of SIZE bytes to DIR/out.<rank>. The listing's length is
 * whatever the directory holds when the run starts, not a function of the rank count.
 * Usage: list_dir DIR [STEPS=4] [SIZE=65536] */
#include <mpi.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) { fprintf(stderr, "usage: list_dir DIR [STEPS] [SIZE]\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int steps = argc > 2 ? atoi(argv[2]) : 4;
    long size = argc > 3 ? atol(argv[3]) : 65536;
    char path[4096];
    snprintf(path, sizeof path, "%s/in", argv[1]);
    DIR *d = opendir(path);
    if (!d) { perror(path); MPI_Abort(MPI_COMM_WORLD, 1); }
    long entries = 0;
    while (readdir(d)) entries++;
    closedir(d);
    snprintf(path, sizeof path, "%s/out.%d", argv[1], rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); MPI_Abort(MPI_COMM_WORLD, 1); }
    char *buf = calloc(1, size);
    for (int s = 0; s < steps; s++) {
        if (pwrite(fd, buf, size, (off_t)s * size) != size) { perror("pwrite"); MPI_Abort(MPI_COMM_WORLD, 1); }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    close(fd);
    if (rank == 0) printf("entries %ld\n", entries);
    MPI_Finalize();
    return 0;
}
