/* exec_app (serial, no MPI): writes 4 bytes to FILE, then replaces itself with `true` through
 * the variadic exec form MODE (execl, execlp or execle). glibc's execl* call execve through an
 * internal entry point, so the tracer must hook them to write the trace before the process
 * image goes. Usage: exec_app FILE MODE */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: exec_app FILE execl|execlp|execle\n");
        return 2;
    }
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) return 1;
    if (write(fd, "data", 4) != 4) return 1;
    close(fd);
    if (strcmp(argv[2], "execl") == 0)
        execl("/bin/true", "true", "an argument", (char *)NULL);
    else if (strcmp(argv[2], "execlp") == 0)
        execlp("true", "true", (char *)NULL);
    else
        execle("/bin/true", "true", "a", "b", (char *)NULL, environ);
    perror("exec");
    return 1;
}
