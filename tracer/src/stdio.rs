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

use crate::guard::{BUSY, Enter};
use crate::posix::{Handle, cpath, on_handle, set_errno};
use crate::real::real;
use crate::state::{State, run_recorded, traceable, with_state};
use libc::{FILE, c_char, c_int, c_long, c_void, off_t, size_t};
use rsd::Op;
use rsd::op::{args, fixed};

/// The `fopen` mode string as bits (the encoding lives in `rsd::op::fopen_mode`).
pub fn mode_bits(mode: &str) -> i64 {
    rsd::op::fopen_mode::encode(mode)
}

impl Handle for *mut FILE {
    /// Whether the stream is in the table (a lock, but stdio calls are not on the hot path of
    /// HPC codes, and most go to streams that are traced anyway).
    fn traced(self) -> bool {
        // The tracer's own work: the lock must not record.
        let _g = Enter::new(BUSY);
        !self.is_null() && with_state(|st| st.streams.get(self as usize).is_some()).unwrap_or(false)
    }
    fn id(self, st: &mut State) -> Option<i64> {
        st.streams.get(self as usize)
    }
    fn pass<T>(self, call: impl FnOnce() -> T) -> T {
        // As the tracer's own work: what the library does for an untraced stream (stdout, the
        // MPI runtime's) is not the application's I/O.
        let _g = Enter::new(BUSY);
        call()
    }
}

/// A stream `fclose` ends: its entry leaves the table.
#[derive(Clone, Copy)]
struct Closing(*mut FILE);

impl Handle for Closing {
    fn traced(self) -> bool {
        self.0.traced()
    }
    fn id(self, st: &mut State) -> Option<i64> {
        st.streams.remove(self.0 as usize)
    }
    fn pass<T>(self, call: impl FnOnce() -> T) -> T {
        self.0.pass(call)
    }
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
            let p = cpath(path);
            if let Some(slot) = p.as_deref().and_then(crate::exclude::slot) {
                // Its stream stays out of the table: its calls are neither recorded nor
                // counted (the open is).
                // SAFETY: forwarding the caller's arguments to the real function.
                return crate::posix::excluded_call(
                    slot,
                    Op::Fopen,
                    || unsafe { f(path, mode) },
                    |_| 0,
                );
            }
            let m = cpath(mode).map_or(0, |m| mode_bits(&m));
            run_recorded(
                Op::Fopen,
                child,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(path, mode) },
                |st, r| {
                    let id = if r.is_null() {
                        -1
                    } else {
                        st.streams.insert(r as usize)
                    };
                    Some((args::fopen(m, id), p))
                },
            )
        }
    };
}
fopen_hook!(fopen, "fopen");
fopen_hook!(fopen64, "fopen64");

/// Length of a C string (0 for null), read before a call that writes it.
fn c_len(p: *const c_char) -> i64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the caller passed a NUL-terminated string to a libc function that requires one.
    unsafe { libc::strlen(p) as i64 }
}

/// Bytes `fgets` stored: the string's length, or 0 when it returned null (EOF or error).
fn fgets_bytes(r: *mut c_char) -> i64 {
    c_len(r)
}

// `va_list` as a function parameter is a pointer to the register save area on x86-64, so it
// is forwarded as an opaque pointer.
type VaList = *mut c_void;

libc_hooks! {
    /// Hook: `fclose`.
    fclose (s: *mut FILE) -> c_int, else eof_enosys()
        => on_handle(Closing(s), Fclose) |id, _| fixed::fclose(id);
    /// Hook: `fread`, `fwrite` and their fortified and `_unlocked` forms, recorded as them.
    fread | fread_unlocked (buf: *mut c_void, size: size_t, n: size_t, s: *mut FILE) -> size_t,
        else 0 => on_handle(s, Fread) |id, r| fixed::fread(id, size as i64, n as i64, r);
    __fread_chk | __fread_unlocked_chk (
        buf: *mut c_void, len: size_t, size: size_t, n: size_t, s: *mut FILE,
    ) -> size_t, else 0 => on_handle(s, Fread) |id, r| fixed::fread(id, size as i64, n as i64, r);
    fwrite | fwrite_unlocked (buf: *const c_void, size: size_t, n: size_t, s: *mut FILE)
        -> size_t, else 0
        => on_handle(s, Fwrite) |id, r| fixed::fwrite(id, size as i64, n as i64, r);

    /// Hook: `fputs`, recorded as `fwrite` of its length in bytes of 1 (glibc returns a
    /// non-negative number on success, not a count, so the bytes come from the string; a
    /// failure counts 0, as fwrite's result would not say how much went through either).
    /// GCC turns `fputs` of a literal into `fwrite`, so the two must read the same anyway.
    fputs | fputs_unlocked (str: *const c_char, s: *mut FILE) -> c_int, else libc::EOF
        => on_handle(s, Fwrite)
        let n = c_len(str);
        ret |r: c_int| if r >= 0 { n } else { 0 };
        |id, r| fixed::fwrite(id, 1, n, r);
    /// Hook: `fputc`/`putc`, recorded as an `fwrite` of one byte (result 1, or 0 on EOF).
    fputc | putc | fputc_unlocked | putc_unlocked (c: c_int, s: *mut FILE) -> c_int,
        else libc::EOF => on_handle(s, Fwrite) ret not_eof; |id, r| fixed::fwrite(id, 1, 1, r);
    /// Hook: `fgetc`/`getc`, recorded as an `fread` of one byte (result 1, or 0 on EOF).
    fgetc | getc | fgetc_unlocked | getc_unlocked (s: *mut FILE) -> c_int, else libc::EOF
        => on_handle(s, Fread) ret not_eof; |id, r| fixed::fread(id, 1, 1, r);
    /// Hook: `fgets` (and its fortified form), recorded as `fread` of bytes of 1 with `nmemb`
    /// the buffer size the caller passed and the result the bytes it stored (the line's
    /// length: a line holding a NUL byte is counted up to it, the only length `fgets` reports).
    fgets | fgets_unlocked (buf: *mut c_char, n: c_int, s: *mut FILE) -> *mut c_char,
        else std::ptr::null_mut()
        => on_handle(s, Fread) ret fgets_bytes; |id, r| fixed::fread(id, 1, n as i64, r);
    __fgets_chk (buf: *mut c_char, size: size_t, n: c_int, s: *mut FILE) -> *mut c_char,
        else std::ptr::null_mut()
        => on_handle(s, Fread) ret fgets_bytes; |id, r| fixed::fread(id, 1, n as i64, r);

    /// Hook: `fseek`, and `fseeko` recorded as it.
    fseek (s: *mut FILE, off: c_long, whence: c_int) -> c_int, else -1
        => on_handle(s, Fseek) |id, _| fixed::fseek(id, off, whence as i64);
    fseeko | fseeko64 (s: *mut FILE, off: off_t, whence: c_int) -> c_int, else -1
        => on_handle(s, Fseek) |id, _| fixed::fseek(id, off, whence as i64);
    /// Hook: `fflush` (`fflush(NULL)` flushes everything and is not a call on one stream: it is
    /// passed through unrecorded).
    fflush (s: *mut FILE) -> c_int, else libc::EOF
        => on_handle(s, Fflush) |id, _| fixed::fflush(id);
    /// Hook: `vfprintf` and its fortified form, also the targets of the `fprintf` shims.
    vfprintf (s: *mut FILE, fmt: *const c_char, ap: VaList) -> c_int, else -1
        => on_handle(s, Fprintf) |id, r| fixed::fprintf(id, r);
    __vfprintf_chk (s: *mut FILE, flag: c_int, fmt: *const c_char, ap: VaList) -> c_int, else -1
        => on_handle(s, Fprintf) |id, r| fixed::fprintf(id, r);
}

/// What `fputc`/`fgetc` moved: one byte, or none at EOF.
fn not_eof(r: c_int) -> i64 {
    i64::from(r != libc::EOF)
}

/// `fclose` without a real function: `EOF`, with `errno` = `ENOSYS`.
fn eof_enosys() -> c_int {
    set_errno(libc::ENOSYS);
    libc::EOF
}

shim_targets! {
    iotrex_vfprintf_hook => vfprintf(s: *mut FILE, fmt: *const c_char, ap: VaList);
    iotrex_vfprintf_chk_hook => __vfprintf_chk(s: *mut FILE, flag: c_int, fmt: *const c_char, ap: VaList);
}

naked_jumps! {
    /// Hook: `fprintf`.
    fprintf => iotrex_c_fprintf;
    /// Hook: `__fprintf_chk` (what `fprintf` becomes under `_FORTIFY_SOURCE`).
    __fprintf_chk => iotrex_c_fprintf_chk;
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
