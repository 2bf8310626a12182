//! stdio hooks. glibc's `fwrite`, `fprintf` and friends write through internal entry points,
//! not through the `write` symbol, so streams are traced here, at their own layer. Only streams
//! opened through a traced `fopen` are recorded (not stdout, not the MPI runtime's streams).
//!
//! The character and line calls map onto the schema's data ops, with the bytes they moved:
//! `fputs`/`fputc`/`putc` are `fwrite`s of bytes of 1, `fgets`/`fgetc`/`getc` `fread`s; the
//! `_unlocked` variants are their locked names. Calls that only ever write stdout (`printf`,
//! `puts`, `putchar`, `__printf_chk`) are not hooked: stdout is never a traced stream. With
//! optimisation, glibc's headers inline `getc_unlocked`/`putc_unlocked` as buffer macros, so
//! those reach the hooks only when compiled without it.

#![allow(clippy::missing_safety_doc)]

use crate::callsite::signature;
use crate::guard::{BUSY, Enter};
use crate::posix::cpath;
use crate::posix::{errno, set_errno};
use crate::real::real;
use crate::state::{Call, now_ns, record, traceable, with_state};
use libc::{FILE, c_char, c_int, c_long, c_void, off_t, size_t};
use rsd::Op;

/// The `fopen` mode string as bits (the encoding lives in `rsd::op::fopen_mode`).
pub fn mode_bits(mode: &str) -> i64 {
    rsd::op::fopen_mode::encode(mode)
}

/// Whether a stream is in the table (a lock, but stdio calls are not on the hot path of HPC
/// codes, and most go to streams that are traced anyway).
fn stream_traced(s: *mut FILE) -> bool {
    !s.is_null() && with_state(|st| st.streams.get(s as usize).is_some()).unwrap_or(false)
}

/// Runs a call on stream `s`; records it with `params(stream_id, ret)` if `s` is traced.
#[inline]
fn stream_op<T: Copy>(
    s: *mut FILE,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    params: impl FnOnce(i64, i64) -> Vec<i64>,
) -> T {
    let Some(child) = traceable() else {
        return call();
    };
    let _g = Enter::new(BUSY);
    if !stream_traced(s) {
        return call();
    }
    let sig = signature();
    let t0 = now_ns();
    let r = call();
    let t1 = now_ns();
    let e = errno();
    let rv = ret(r);
    record(Call { op, sig, t0, t1 }, child, |st| {
        let id = st.streams.get(s as usize)?;
        Some((params(id, rv), None))
    });
    set_errno(e);
    r
}

type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;

macro_rules! fopen_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fopen`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut FILE {
            let Some(f) = real!($sym, FopenFn) else {
                set_errno(libc::ENOSYS);
                return std::ptr::null_mut();
            };
            let Some(child) = traceable() else {
                // SAFETY: forwarding the caller's arguments to the real function.
                return unsafe { f(path, mode) };
            };
            let _g = Enter::new(BUSY);
            let sig = signature();
            let p = cpath(path);
            let m = cpath(mode).map_or(0, |m| mode_bits(&m));
            let t0 = now_ns();
            // SAFETY: forwarding the caller's arguments to the real function.
            let r = unsafe { f(path, mode) };
            let t1 = now_ns();
            let e = errno();
            record(
                Call {
                    op: Op::Fopen,
                    sig,
                    t0,
                    t1,
                },
                child,
                |st| {
                    let id = if r.is_null() {
                        -1
                    } else {
                        st.streams.insert(r as usize)
                    };
                    Some((vec![m, id], p))
                },
            );
            set_errno(e);
            r
        }
    };
}
fopen_hook!(fopen, "fopen");
fopen_hook!(fopen64, "fopen64");

/// Hook: `fclose`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fclose(s: *mut FILE) -> c_int {
    let Some(f) = real!("fclose", unsafe extern "C" fn(*mut FILE) -> c_int) else {
        set_errno(libc::ENOSYS);
        return libc::EOF;
    };
    let Some(child) = traceable() else {
        // SAFETY: forwarding the caller's argument to the real function.
        return unsafe { f(s) };
    };
    let _g = Enter::new(BUSY);
    if !stream_traced(s) {
        // SAFETY: forwarding the caller's argument to the real function.
        return unsafe { f(s) };
    }
    let sig = signature();
    let t0 = now_ns();
    // SAFETY: forwarding the caller's argument to the real function.
    let r = unsafe { f(s) };
    let t1 = now_ns();
    let e = errno();
    record(
        Call {
            op: Op::Fclose,
            sig,
            t0,
            t1,
        },
        child,
        |st| Some((vec![st.streams.remove(s as usize)?], None)),
    );
    set_errno(e);
    r
}

macro_rules! fio_hook {
    ($name:ident, $sym:literal, $op:expr, $buf:ty) => {
        /// Hook: `fread`/`fwrite`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(buf: $buf, size: size_t, n: size_t, s: *mut FILE) -> size_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn($buf, size_t, size_t, *mut FILE) -> size_t
            ) else {
                return 0;
            };
            stream_op(
                s,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(buf, size, n, s) },
                |r| r as i64,
                |id, r| vec![id, size as i64, n as i64, r],
            )
        }
    };
}
fio_hook!(fread, "fread", Op::Fread, *mut c_void);
fio_hook!(fwrite, "fwrite", Op::Fwrite, *const c_void);

/// Hook: fortified `fread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __fread_chk(
    buf: *mut c_void,
    len: size_t,
    size: size_t,
    n: size_t,
    s: *mut FILE,
) -> size_t {
    let Some(f) = real!(
        "__fread_chk",
        unsafe extern "C" fn(*mut c_void, size_t, size_t, size_t, *mut FILE) -> size_t
    ) else {
        return 0;
    };
    stream_op(
        s,
        Op::Fread,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(buf, len, size, n, s) },
        |r| r as i64,
        |id, r| vec![id, size as i64, n as i64, r],
    )
}

macro_rules! fio_unlocked_hook {
    ($name:ident, $sym:literal, $op:expr, $buf:ty) => {
        /// Hook: `fread_unlocked`/`fwrite_unlocked`, recorded as `fread`/`fwrite`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(buf: $buf, size: size_t, n: size_t, s: *mut FILE) -> size_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn($buf, size_t, size_t, *mut FILE) -> size_t
            ) else {
                return 0;
            };
            stream_op(
                s,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(buf, size, n, s) },
                |r| r as i64,
                |id, r| vec![id, size as i64, n as i64, r],
            )
        }
    };
}
fio_unlocked_hook!(fread_unlocked, "fread_unlocked", Op::Fread, *mut c_void);
fio_unlocked_hook!(
    fwrite_unlocked,
    "fwrite_unlocked",
    Op::Fwrite,
    *const c_void
);

/// Hook: fortified `fread_unlocked`, recorded as `fread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __fread_unlocked_chk(
    buf: *mut c_void,
    len: size_t,
    size: size_t,
    n: size_t,
    s: *mut FILE,
) -> size_t {
    let Some(f) = real!(
        "__fread_unlocked_chk",
        unsafe extern "C" fn(*mut c_void, size_t, size_t, size_t, *mut FILE) -> size_t
    ) else {
        return 0;
    };
    stream_op(
        s,
        Op::Fread,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(buf, len, size, n, s) },
        |r| r as i64,
        |id, r| vec![id, size as i64, n as i64, r],
    )
}

/// Length of a C string (0 for null), read before a call that writes it.
fn c_len(p: *const c_char) -> i64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the caller passed a NUL-terminated string to a libc function that requires one.
    unsafe { libc::strlen(p) as i64 }
}

macro_rules! fputs_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fputs`, recorded as `fwrite` of its length in bytes of 1 (glibc returns a
        /// non-negative number on success, not a count, so the bytes come from the string; a
        /// failure counts 0, as fwrite's result would not say how much went through either).
        /// GCC turns `fputs` of a literal into `fwrite`, so the two must read the same anyway.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(str: *const c_char, s: *mut FILE) -> c_int {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(*const c_char, *mut FILE) -> c_int
            ) else {
                return libc::EOF;
            };
            let n = c_len(str);
            stream_op(
                s,
                Op::Fwrite,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(str, s) },
                |r| if r >= 0 { n } else { 0 },
                |id, r| vec![id, 1, n, r],
            )
        }
    };
}
fputs_hook!(fputs, "fputs");
fputs_hook!(fputs_unlocked, "fputs_unlocked");

macro_rules! fputc_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fputc`/`putc`, recorded as an `fwrite` of one byte (result 1, or 0 on EOF).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(c: c_int, s: *mut FILE) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int, *mut FILE) -> c_int) else {
                return libc::EOF;
            };
            stream_op(
                s,
                Op::Fwrite,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(c, s) },
                |r| i64::from(r != libc::EOF),
                |id, r| vec![id, 1, 1, r],
            )
        }
    };
}
fputc_hook!(fputc, "fputc");
fputc_hook!(putc, "putc");
fputc_hook!(fputc_unlocked, "fputc_unlocked");
fputc_hook!(putc_unlocked, "putc_unlocked");

macro_rules! fgetc_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fgetc`/`getc`, recorded as an `fread` of one byte (result 1, or 0 on EOF).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(s: *mut FILE) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(*mut FILE) -> c_int) else {
                return libc::EOF;
            };
            stream_op(
                s,
                Op::Fread,
                // SAFETY: forwarding the caller's argument to the real function.
                || unsafe { f(s) },
                |r| i64::from(r != libc::EOF),
                |id, r| vec![id, 1, 1, r],
            )
        }
    };
}
fgetc_hook!(fgetc, "fgetc");
fgetc_hook!(getc, "getc");
fgetc_hook!(fgetc_unlocked, "fgetc_unlocked");
fgetc_hook!(getc_unlocked, "getc_unlocked");

/// Bytes `fgets` stored: the string's length, or 0 when it returned null (EOF or error).
fn fgets_bytes(r: *mut c_char) -> i64 {
    c_len(r)
}

macro_rules! fgets_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fgets`, recorded as `fread` of bytes of 1 with `nmemb` the buffer size the
        /// caller passed and the result the bytes it stored (the line's length: a line holding
        /// a NUL byte is counted up to it, the only length `fgets` reports).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(buf: *mut c_char, n: c_int, s: *mut FILE) -> *mut c_char {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char
            ) else {
                return std::ptr::null_mut();
            };
            stream_op(
                s,
                Op::Fread,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(buf, n, s) },
                fgets_bytes,
                |id, r| vec![id, 1, n as i64, r],
            )
        }
    };
}
fgets_hook!(fgets, "fgets");
fgets_hook!(fgets_unlocked, "fgets_unlocked");

/// Hook: fortified `fgets`, as `fgets`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __fgets_chk(
    buf: *mut c_char,
    size: size_t,
    n: c_int,
    s: *mut FILE,
) -> *mut c_char {
    let Some(f) = real!(
        "__fgets_chk",
        unsafe extern "C" fn(*mut c_char, size_t, c_int, *mut FILE) -> *mut c_char
    ) else {
        return std::ptr::null_mut();
    };
    stream_op(
        s,
        Op::Fread,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(buf, size, n, s) },
        fgets_bytes,
        |id, r| vec![id, 1, n as i64, r],
    )
}

/// Hook: `fseek`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fseek(s: *mut FILE, off: c_long, whence: c_int) -> c_int {
    let Some(f) = real!(
        "fseek",
        unsafe extern "C" fn(*mut FILE, c_long, c_int) -> c_int
    ) else {
        return -1;
    };
    stream_op(
        s,
        Op::Fseek,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(s, off, whence) },
        |r| r as i64,
        |id, _| vec![id, off, whence as i64],
    )
}

macro_rules! fseeko_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fseeko`, recorded as `fseek`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(s: *mut FILE, off: off_t, whence: c_int) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(*mut FILE, off_t, c_int) -> c_int)
            else {
                return -1;
            };
            stream_op(
                s,
                Op::Fseek,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(s, off, whence) },
                |r| r as i64,
                |id, _| vec![id, off, whence as i64],
            )
        }
    };
}
fseeko_hook!(fseeko, "fseeko");
fseeko_hook!(fseeko64, "fseeko64");

/// Hook: `fflush` (`fflush(NULL)` flushes everything and is not a call on one stream: it is
/// passed through unrecorded).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fflush(s: *mut FILE) -> c_int {
    let Some(f) = real!("fflush", unsafe extern "C" fn(*mut FILE) -> c_int) else {
        return libc::EOF;
    };
    stream_op(
        s,
        Op::Fflush,
        // SAFETY: forwarding the caller's argument to the real function.
        || unsafe { f(s) },
        |r| r as i64,
        |id, _| vec![id],
    )
}

// `va_list` as a function parameter is a pointer to the register save area on x86-64, so it
// is forwarded as an opaque pointer.
type VaList = *mut c_void;

/// Hook: `vfprintf`; also the target of the `fprintf` shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vfprintf(s: *mut FILE, fmt: *const c_char, ap: VaList) -> c_int {
    let Some(f) = real!(
        "vfprintf",
        unsafe extern "C" fn(*mut FILE, *const c_char, VaList) -> c_int
    ) else {
        return -1;
    };
    stream_op(
        s,
        Op::Fprintf,
        // SAFETY: forwarding the caller's arguments (and its va_list) to the real function.
        || unsafe { f(s, fmt, ap) },
        |r| r as i64,
        |id, r| vec![id, r],
    )
}

/// Called by the C shim for `fprintf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn iotrex_vfprintf_hook(
    s: *mut FILE,
    fmt: *const c_char,
    ap: VaList,
) -> c_int {
    // SAFETY: same contract as vfprintf, which the shim received from the application.
    unsafe { vfprintf(s, fmt, ap) }
}

/// Hook: fortified `vfprintf`; also the target of the `__fprintf_chk` shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vfprintf_chk(
    s: *mut FILE,
    flag: c_int,
    fmt: *const c_char,
    ap: VaList,
) -> c_int {
    let Some(f) = real!(
        "__vfprintf_chk",
        unsafe extern "C" fn(*mut FILE, c_int, *const c_char, VaList) -> c_int
    ) else {
        return -1;
    };
    stream_op(
        s,
        Op::Fprintf,
        // SAFETY: forwarding the caller's arguments (and its va_list) to the real function.
        || unsafe { f(s, flag, fmt, ap) },
        |r| r as i64,
        |id, r| vec![id, r],
    )
}

/// Called by the C shim for `__fprintf_chk`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn iotrex_vfprintf_chk_hook(
    s: *mut FILE,
    flag: c_int,
    fmt: *const c_char,
    ap: VaList,
) -> c_int {
    // SAFETY: same contract as __vfprintf_chk, which the shim received from the application.
    unsafe { __vfprintf_chk(s, flag, fmt, ap) }
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn iotrex_c_fprintf();
    fn iotrex_c_fprintf_chk();
}

/// Hook: `fprintf`. A naked tail jump to the C shim, which leaves every register and the stack
/// as the caller set them, so the shim sees the original variadic call.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fprintf() {
    core::arch::naked_asm!("jmp {f}", f = sym iotrex_c_fprintf);
}

/// Hook: `__fprintf_chk` (what `fprintf` becomes under `_FORTIFY_SOURCE`), as `fprintf`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __fprintf_chk() {
    core::arch::naked_asm!("jmp {f}", f = sym iotrex_c_fprintf_chk);
}

#[cfg(test)]
mod tests {
    #[test]
    fn mode_bits() {
        assert_eq!(super::mode_bits("r"), 1);
        assert_eq!(super::mode_bits("w+b"), 2 | 8 | 16);
        assert_eq!(super::mode_bits("a,ccs=UTF-8"), 4);
    }
}
