/* Variadic hooks (fprintf, dprintf, execl and their fortified forms). Rust (stable) cannot
 * define C-variadic functions, so the exported symbols (`fprintf`, `__fprintf_chk`, ...) are
 * naked jumps in Rust to these hidden functions, which build the va_list (or the argument
 * vector) and hand it to the Rust hooks. */
#include <stdarg.h>
#include <stdio.h>

int iotrex_vfprintf_hook(FILE *stream, const char *fmt, va_list ap);
int iotrex_vfprintf_chk_hook(FILE *stream, int flag, const char *fmt, va_list ap);

__attribute__((visibility("hidden"))) int iotrex_c_fprintf(FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iotrex_vfprintf_hook(stream, fmt, ap);
    va_end(ap);
    return r;
}

__attribute__((visibility("hidden"))) int iotrex_c_fprintf_chk(FILE *stream, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iotrex_vfprintf_chk_hook(stream, flag, fmt, ap);
    va_end(ap);
    return r;
}

int iotrex_vdprintf_hook(int fd, const char *fmt, va_list ap);
int iotrex_vdprintf_chk_hook(int fd, int flag, const char *fmt, va_list ap);

__attribute__((visibility("hidden"))) int iotrex_c_dprintf(int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iotrex_vdprintf_hook(fd, fmt, ap);
    va_end(ap);
    return r;
}

__attribute__((visibility("hidden"))) int iotrex_c_dprintf_chk(int fd, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iotrex_vdprintf_chk_hook(fd, flag, fmt, ap);
    va_end(ap);
    return r;
}

/* The execl family: glibc builds the argument vector and calls execve through an internal
 * entry point, so these are hooked here and handed, as vectors, to the Rust exec hooks (which
 * write the trace before the process image is replaced). */
#include <alloca.h>
#include <stddef.h>

int iotrex_execv_hook(const char *path, char *const argv[]);
int iotrex_execvp_hook(const char *file, char *const argv[]);
int iotrex_execve_hook(const char *path, char *const argv[], char *const envp[]);

/* Arguments after `arg` up to the terminating NULL. */
#define IOTREX_COUNT_ARGS(arg, n)                                                             \
    do {                                                                                      \
        va_list c_;                                                                           \
        va_start(c_, arg);                                                                    \
        n = 0;                                                                                \
        if (arg)                                                                              \
            while (va_arg(c_, char *)) n++;                                                   \
        va_end(c_);                                                                           \
    } while (0)

/* Declares `n` (the arguments after `arg`) and `argv`, a NULL-terminated vector of `arg` and
 * them on this function's stack (alloca: a macro, not a function, so it stays in the frame). */
#define IOTREX_ARGV(arg, n, argv)                                                             \
    size_t n;                                                                                 \
    IOTREX_COUNT_ARGS(arg, n);                                                                \
    char **argv = alloca((n + 2) * sizeof(char *));                                           \
    do {                                                                                      \
        va_list a_;                                                                           \
        va_start(a_, arg);                                                                    \
        argv[0] = (char *)(arg);                                                              \
        if (arg) {                                                                            \
            for (size_t i_ = 1; i_ <= (n); i_++) argv[i_] = va_arg(a_, char *);               \
            argv[(n) + 1] = NULL;                                                             \
        }                                                                                     \
        va_end(a_);                                                                           \
    } while (0)

__attribute__((visibility("hidden"))) int iotrex_c_execl(const char *path, const char *arg, ...) {
    IOTREX_ARGV(arg, n, argv);
    (void)n;
    return iotrex_execv_hook(path, argv);
}

__attribute__((visibility("hidden"))) int iotrex_c_execlp(const char *file, const char *arg, ...) {
    IOTREX_ARGV(arg, n, argv);
    (void)n;
    return iotrex_execvp_hook(file, argv);
}

/* execle: the environment follows the NULL that ends the arguments. */
__attribute__((visibility("hidden"))) int iotrex_c_execle(const char *path, const char *arg, ...) {
    IOTREX_ARGV(arg, n, argv);
    va_list e;
    va_start(e, arg);
    if (arg)
        for (size_t i = 0; i <= n; i++) (void)va_arg(e, char *);
    char **envp = va_arg(e, char **);
    va_end(e);
    return iotrex_execve_hook(path, argv, envp);
}
