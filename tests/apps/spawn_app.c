/* Starts programs the four ways glibc spawns without fork or exec hooks being passed:
 * system(), popen(), posix_spawnp() and posix_spawn(). Each started program is a dd that
 * writes 1 MiB to a file of DIR it opens itself (system's and popen's behind their shell);
 * popen's reads it from the pipe, fed by this process. Then a posix_spawnp() of a command
 * that does not exist fails, starting nothing.
 * Usage: spawn_app DIR. Prints each call's result. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int spawned(int (*f)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                            const posix_spawnattr_t *, char *const[], char *const[]),
                   const char *what, const char *dir, const char *name) {
  char of[512];
  snprintf(of, sizeof of, "of=%s/%s", dir, name);
  char *av[] = {"dd", "if=/dev/zero", of, "bs=65536", "count=16", "status=none", NULL};
  pid_t pid;
  int st = -1, r = f(&pid, what, NULL, NULL, av, environ);
  if (r == 0) waitpid(pid, &st, 0);
  printf("%s %d status %d\n", name, r, st);
  return r == 0 && st == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: spawn_app DIR\n"); return 2; }
  const char *d = argv[1];
  char cmd[512];
  int bad = 0;
  snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s/system.out' bs=65536 count=16 status=none", d);
  int st = system(cmd);
  printf("system status %d\n", st);
  bad |= st != 0;

  snprintf(cmd, sizeof cmd, "dd of='%s/popen.out' bs=65536 count=16 iflag=fullblock status=none", d);
  FILE *p = popen(cmd, "w");
  if (!p) { perror("popen"); return 1; }
  static char block[65536];
  for (int i = 0; i < 16; i++) fwrite(block, sizeof block, 1, p);
  st = pclose(p);
  printf("pclose %d\n", st);
  bad |= st != 0;

  bad |= spawned(posix_spawnp, "dd", d, "spawnp.out");
  bad |= spawned(posix_spawn, "/bin/dd", d, "spawn.out");

  char *none[] = {"no-such-command-iotrex", NULL};
  pid_t pid;
  int r = posix_spawnp(&pid, none[0], NULL, NULL, none, environ);
  printf("missing command %d\n", r);
  bad |= r == 0;
  return bad;
}
