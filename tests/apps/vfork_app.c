/* vfork_app (serial, no MPI): opens FILE, starts a child with vfork that closes its copy of the
 * descriptor and exits, then writes 4 bytes on the descriptor and closes it. A vfork child
 * shares the parent's memory: if its close reached the tracer's table, the parent's write
 * would be lost from the trace. Usage: vfork_app FILE */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: vfork_app FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) return 1;
    pid_t p = vfork();
    if (p == 0) {
        close(fd);
        _exit(0);
    }
    if (p < 0) return 1;
    int st;
    waitpid(p, &st, 0);
    ssize_t w = write(fd, "data", 4);
    close(fd);
    return w == 4 ? 0 : 1;
}
