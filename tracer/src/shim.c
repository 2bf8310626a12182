/* Variadic hooks (fprintf, dprintf and their fortified forms). Rust (stable) cannot define C-variadic functions, so the exported
 * `fprintf` / `__fprintf_chk` symbols are naked jumps in Rust (lib's `stdio` module) to these
 * hidden functions, which build the va_list and hand it to the Rust hooks. */
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
