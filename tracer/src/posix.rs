//! POSIX hooks. Descriptor calls are recorded only on descriptors the application opened
//! through a traced call; path calls (open, stat, unlink, ...) whenever the application (or an
//! MPI-IO call, as children) makes them.

#![allow(clippy::missing_safety_doc)]

use crate::callsite::signature;
use crate::guard::{BUSY, Enter};
use crate::real::real;
use crate::state::{Call, fd_traced, now_ns, record, traceable};
use libc::{c_char, c_int, c_long, c_void, iovec, mode_t, off_t, size_t, ssize_t};
use rsd::Op;

/// This thread's errno (hooks save it around their own work and restore it).
pub(crate) fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// Sets this thread's errno.
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// Fails like a missing system call when the real function cannot be found.
fn enosys<T: From<i8>>() -> T {
    set_errno(libc::ENOSYS);
    T::from(-1)
}

/// Copies a C path, or `None` for a null pointer.
pub(crate) fn cpath(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller passed a non-null path to a libc function that requires a
    // NUL-terminated string; we read it only before returning.
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Runs a call on descriptor `fd`; records it with `params(fd_id, ret)` if `fd` is traced.
#[inline]
fn fd_op<T: Copy, P: AsRef<[i64]>>(
    fd: c_int,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    // A fixed array: the steady state of a traced loop then records without allocating.
    params: impl FnOnce(i64, i64) -> P,
) -> T {
    let Some(child) = traceable() else {
        return call();
    };
    if !fd_traced(fd) {
        return call();
    }
    let _g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    let r = call();
    let t1 = now_ns();
    let e = errno();
    let rv = ret(r);
    record(Call { op, sig, t0, t1 }, child, |st| {
        let id = st.fd(fd)?;
        Some((params(id, rv), None))
    });
    set_errno(e);
    r
}

/// Runs a call that names a path; `params(state, ret)` may update the tables (opens).
#[inline]
fn path_op<T: Copy>(
    path: *const c_char,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    params: impl FnOnce(&mut crate::state::State, i64) -> Vec<i64>,
) -> T {
    let Some(child) = traceable() else {
        return call();
    };
    let p = cpath(path);
    // Inside an MPI-IO call, the library probes and loads its own components (Open MPI stats
    // every mca_io/fcoll/fbtl/sharedfp plugin on the first MPI_File_open). Those are the
    // runtime's files, not the application's I/O, and only some ranks make them.
    if child && p.as_deref().is_some_and(is_shared_library) {
        return call();
    }
    let _g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    let r = call();
    let t1 = now_ns();
    let e = errno();
    let rv = ret(r);
    record(Call { op, sig, t0, t1 }, child, |st| {
        Some((params(st, rv), p))
    });
    set_errno(e);
    r
}

/// `lib.so` or `lib.so.1.2`: a shared library.
fn is_shared_library(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.find(".so") {
        Some(i) => {
            let rest = &name[i + 3..];
            rest.is_empty()
                || (rest.starts_with('.')
                    && rest[1..].chars().all(|c| c.is_ascii_digit() || c == '.'))
        }
        None => false,
    }
}

fn creates(flags: c_int) -> bool {
    flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

fn open_params(st: &mut crate::state::State, flags: c_int, mode: mode_t, r: i64) -> Vec<i64> {
    let id = if r >= 0 { st.fd_open(r as c_int) } else { -1 };
    // `mode` is only passed with O_CREAT/O_TMPFILE; otherwise the register holds garbage.
    let mode = if creates(flags) { mode as i64 } else { 0 };
    vec![flags as i64, mode, id]
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int;

macro_rules! open_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `open` family (the variadic `mode` is read as a third argument, which the
        /// x86-64 and AArch64 calling conventions pass in a register either way).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            let Some(f) = real!($sym, OpenFn) else {
                return enosys();
            };
            path_op(
                path,
                Op::Open,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(path, flags, mode) },
                |r| r as i64,
                |st, r| open_params(st, flags, mode, r),
            )
        }
    };
}
open_hook!(open, "open");
open_hook!(open64, "open64");

macro_rules! open2_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: fortified `open` without a mode.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(*const c_char, c_int) -> c_int) else {
                return enosys();
            };
            path_op(
                path,
                Op::Open,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(path, flags) },
                |r| r as i64,
                |st, r| open_params(st, flags, 0, r),
            )
        }
    };
}
open2_hook!(__open_2, "__open_2");
open2_hook!(__open64_2, "__open64_2");

macro_rules! openat_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `openat` family.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            dirfd: c_int,
            path: *const c_char,
            flags: c_int,
            mode: mode_t,
        ) -> c_int {
            let Some(f) = real!($sym, OpenatFn) else {
                return enosys();
            };
            path_op(
                path,
                Op::Openat,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(dirfd, path, flags, mode) },
                |r| r as i64,
                |st, r| open_params(st, flags, mode, r),
            )
        }
    };
}
openat_hook!(openat, "openat");
openat_hook!(openat64, "openat64");

macro_rules! openat2_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: fortified `openat` without a mode.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int
            ) else {
                return enosys();
            };
            path_op(
                path,
                Op::Openat,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(dirfd, path, flags) },
                |r| r as i64,
                |st, r| open_params(st, flags, 0, r),
            )
        }
    };
}
openat2_hook!(__openat_2, "__openat_2");
openat2_hook!(__openat64_2, "__openat64_2");

macro_rules! creat_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `creat`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: mode_t) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(*const c_char, mode_t) -> c_int) else {
                return enosys();
            };
            path_op(
                path,
                Op::Creat,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(path, mode) },
                |r| r as i64,
                |st, r| {
                    let id = if r >= 0 { st.fd_open(r as c_int) } else { -1 };
                    vec![mode as i64, id]
                },
            )
        }
    };
}
creat_hook!(creat, "creat");
creat_hook!(creat64, "creat64");

/// Hook: `close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let Some(f) = real!("close", unsafe extern "C" fn(c_int) -> c_int) else {
        return enosys();
    };
    let Some(child) = traceable() else {
        // Keep the table right even when not recording this call: the descriptor number
        // can come back for an unrelated file.
        if fd_traced(fd) && crate::guard::mode() == BUSY {
            crate::state::with_state(|st| st.fd_close(fd));
        }
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(fd) };
    };
    if !fd_traced(fd) {
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(fd) };
    }
    let _g = Enter::new(BUSY);
    let sig = signature();
    let t0 = now_ns();
    // SAFETY: forwarding the caller's argument.
    let r = unsafe { f(fd) };
    let t1 = now_ns();
    let e = errno();
    record(
        Call {
            op: Op::Close,
            sig,
            t0,
            t1,
        },
        child,
        |st| Some((vec![st.fd_close(fd)?], None)),
    );
    set_errno(e);
    r
}

macro_rules! rw_hook {
    ($name:ident, $sym:literal, $op:expr, $buf:ty) => {
        /// Hook: `read`/`write`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, buf: $buf, n: size_t) -> ssize_t {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int, $buf, size_t) -> ssize_t) else {
                return enosys();
            };
            fd_op(
                fd,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, buf, n) },
                |r| r as i64,
                |id, r| [id, n as i64, r],
            )
        }
    };
}
rw_hook!(read, "read", Op::Read, *mut c_void);
rw_hook!(write, "write", Op::Write, *const c_void);

/// Hook: fortified `read`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __read_chk(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    len: size_t,
) -> ssize_t {
    let Some(f) = real!(
        "__read_chk",
        unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t
    ) else {
        return enosys();
    };
    fd_op(
        fd,
        Op::Read,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(fd, buf, n, len) },
        |r| r as i64,
        |id, r| [id, n as i64, r],
    )
}

// `dprintf`: glibc formats into a buffer of its own and writes it through an internal entry
// point, not the `write` symbol, so without these hooks its bytes went unrecorded. Recorded as
// a `write` of the bytes it wrote (the count is only known afterwards).

/// `va_list` as a function parameter is a pointer on x86-64: forwarded opaque.
type VaList = *mut c_void;

/// Hook: `vdprintf`; also the target of the `dprintf` shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn vdprintf(fd: c_int, fmt: *const libc::c_char, ap: VaList) -> c_int {
    let Some(f) = real!(
        "vdprintf",
        unsafe extern "C" fn(c_int, *const libc::c_char, VaList) -> c_int
    ) else {
        return -1;
    };
    fd_op(
        fd,
        Op::Write,
        // SAFETY: forwarding the caller's arguments (and its va_list) to the real function.
        || unsafe { f(fd, fmt, ap) },
        |r| r as i64,
        |id, r| [id, r.max(0), r],
    )
}

/// Hook: fortified `vdprintf`; also the target of the `__dprintf_chk` shim.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vdprintf_chk(
    fd: c_int,
    flag: c_int,
    fmt: *const libc::c_char,
    ap: VaList,
) -> c_int {
    let Some(f) = real!(
        "__vdprintf_chk",
        unsafe extern "C" fn(c_int, c_int, *const libc::c_char, VaList) -> c_int
    ) else {
        return -1;
    };
    fd_op(
        fd,
        Op::Write,
        // SAFETY: forwarding the caller's arguments (and its va_list) to the real function.
        || unsafe { f(fd, flag, fmt, ap) },
        |r| r as i64,
        |id, r| [id, r.max(0), r],
    )
}

/// Called by the C shim for `dprintf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn iotrex_vdprintf_hook(
    fd: c_int,
    fmt: *const libc::c_char,
    ap: VaList,
) -> c_int {
    // SAFETY: same contract as vdprintf, which the shim received from the application.
    unsafe { vdprintf(fd, fmt, ap) }
}

/// Called by the C shim for `__dprintf_chk`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn iotrex_vdprintf_chk_hook(
    fd: c_int,
    flag: c_int,
    fmt: *const libc::c_char,
    ap: VaList,
) -> c_int {
    // SAFETY: same contract as __vdprintf_chk, which the shim received from the application.
    unsafe { __vdprintf_chk(fd, flag, fmt, ap) }
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn iotrex_c_dprintf();
    fn iotrex_c_dprintf_chk();
}

/// Hook: `dprintf`. A naked tail jump to the C shim, which then sees the original variadic
/// call (as `fprintf` in `stdio`).
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dprintf() {
    core::arch::naked_asm!("jmp {f}", f = sym iotrex_c_dprintf);
}

/// Hook: `__dprintf_chk` (`dprintf` under `_FORTIFY_SOURCE`), as `dprintf`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __dprintf_chk() {
    core::arch::naked_asm!("jmp {f}", f = sym iotrex_c_dprintf_chk);
}

macro_rules! prw_hook {
    ($name:ident, $sym:literal, $op:expr, $buf:ty) => {
        /// Hook: `pread`/`pwrite` (and their 64-bit names).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, buf: $buf, n: size_t, off: off_t) -> ssize_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, $buf, size_t, off_t) -> ssize_t
            ) else {
                return enosys();
            };
            fd_op(
                fd,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, buf, n, off) },
                |r| r as i64,
                |id, r| [id, n as i64, off, r],
            )
        }
    };
}
prw_hook!(pread, "pread", Op::Pread, *mut c_void);
prw_hook!(pread64, "pread64", Op::Pread, *mut c_void);
prw_hook!(pwrite, "pwrite", Op::Pwrite, *const c_void);
prw_hook!(pwrite64, "pwrite64", Op::Pwrite, *const c_void);

macro_rules! pread_chk_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: fortified `pread`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            buf: *mut c_void,
            n: size_t,
            off: off_t,
            len: size_t,
        ) -> ssize_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t, size_t) -> ssize_t
            ) else {
                return enosys();
            };
            fd_op(
                fd,
                Op::Pread,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, buf, n, off, len) },
                |r| r as i64,
                |id, r| [id, n as i64, off, r],
            )
        }
    };
}
pread_chk_hook!(__pread_chk, "__pread_chk");
pread_chk_hook!(__pread64_chk, "__pread64_chk");

macro_rules! rwv_hook {
    ($name:ident, $sym:literal, $op:expr) => {
        /// Hook: `readv`/`writev`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t
            ) else {
                return enosys();
            };
            fd_op(
                fd,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, iov, cnt) },
                |r| r as i64,
                |id, r| [id, cnt as i64, r],
            )
        }
    };
}
rwv_hook!(readv, "readv", Op::Readv);
rwv_hook!(writev, "writev", Op::Writev);

macro_rules! prwv_hook {
    ($name:ident, $sym:literal, $op:expr) => {
        /// Hook: `preadv`/`pwritev` (and their 64-bit names).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const iovec,
            cnt: c_int,
            off: off_t,
        ) -> ssize_t {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t
            ) else {
                return enosys();
            };
            fd_op(
                fd,
                $op,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, iov, cnt, off) },
                |r| r as i64,
                |id, r| [id, cnt as i64, off, r],
            )
        }
    };
}
prwv_hook!(preadv, "preadv", Op::Preadv);
prwv_hook!(preadv64, "preadv64", Op::Preadv);
prwv_hook!(pwritev, "pwritev", Op::Pwritev);
prwv_hook!(pwritev64, "pwritev64", Op::Pwritev);

macro_rules! lseek_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `lseek`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, off: off_t, whence: c_int) -> off_t {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int, off_t, c_int) -> off_t) else {
                return enosys();
            };
            fd_op(
                fd,
                Op::Lseek,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, off, whence) },
                |r| r,
                |id, r| [id, off, whence as i64, r],
            )
        }
    };
}
lseek_hook!(lseek, "lseek");
lseek_hook!(lseek64, "lseek64");

macro_rules! sync_hook {
    ($name:ident, $sym:literal, $op:expr) => {
        /// Hook: `fsync`/`fdatasync`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int) -> c_int) else {
                return enosys();
            };
            fd_op(
                fd,
                $op,
                // SAFETY: forwarding the caller's argument to the real function.
                || unsafe { f(fd) },
                |r| r as i64,
                |id, _| [id],
            )
        }
    };
}
sync_hook!(fsync, "fsync", Op::Fsync);
sync_hook!(fdatasync, "fdatasync", Op::Fdatasync);

macro_rules! ftruncate_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `ftruncate`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, len: off_t) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int, off_t) -> c_int) else {
                return enosys();
            };
            fd_op(
                fd,
                Op::Ftruncate,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, len) },
                |r| r as i64,
                |id, _| [id, len],
            )
        }
    };
}
ftruncate_hook!(ftruncate, "ftruncate");
ftruncate_hook!(ftruncate64, "ftruncate64");

macro_rules! fcntl_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `fcntl` (the variadic argument is forwarded as one machine word, which covers
        /// both the integer and the pointer forms).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(c_int, c_int, c_long) -> c_int) else {
                return enosys();
            };
            if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
                // A new descriptor for the same file: traced like `dup`.
                return crate::dup::fcntl_dup(f, fd, cmd, arg);
            }
            fd_op(
                fd,
                Op::Fcntl,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, cmd, arg) },
                |r| r as i64,
                |id, r| [id, cmd as i64, r],
            )
        }
    };
}
fcntl_hook!(fcntl, "fcntl");
fcntl_hook!(fcntl64, "fcntl64");

/// Hook: `unlink`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    let Some(f) = real!("unlink", unsafe extern "C" fn(*const c_char) -> c_int) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument to the real function.
    path_op(
        path,
        Op::Unlink,
        || unsafe { f(path) },
        |r| r as i64,
        |_, _| vec![],
    )
}

/// Hook: `rmdir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    let Some(f) = real!("rmdir", unsafe extern "C" fn(*const c_char) -> c_int) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's argument to the real function.
    path_op(
        path,
        Op::Rmdir,
        || unsafe { f(path) },
        |r| r as i64,
        |_, _| vec![],
    )
}

/// Hook: `mkdir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    let Some(f) = real!(
        "mkdir",
        unsafe extern "C" fn(*const c_char, mode_t) -> c_int
    ) else {
        return enosys();
    };
    path_op(
        path,
        Op::Mkdir,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(path, mode) },
        |r| r as i64,
        |_, _| vec![mode as i64],
    )
}

/// Hook: `access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    let Some(f) = real!(
        "access",
        unsafe extern "C" fn(*const c_char, c_int) -> c_int
    ) else {
        return enosys();
    };
    path_op(
        path,
        Op::Access,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(path, mode) },
        |r| r as i64,
        |_, r| vec![mode as i64, r],
    )
}

macro_rules! stat_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `stat`/`lstat` (glibc 2.33+ exports them as functions).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut c_void) -> c_int {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int
            ) else {
                return enosys();
            };
            path_op(
                path,
                Op::Stat,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(path, buf) },
                |r| r as i64,
                |_, r| vec![r],
            )
        }
    };
}
stat_hook!(stat, "stat");
stat_hook!(stat64, "stat64");
stat_hook!(lstat, "lstat");
stat_hook!(lstat64, "lstat64");

macro_rules! xstat_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: the versioned `__xstat` entry points older binaries call.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int {
            let Some(f) = real!(
                $sym,
                unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int
            ) else {
                return enosys();
            };
            path_op(
                path,
                Op::Stat,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(ver, path, buf) },
                |r| r as i64,
                |_, r| vec![r],
            )
        }
    };
}
xstat_hook!(__xstat, "__xstat");
xstat_hook!(__xstat64, "__xstat64");
xstat_hook!(__lxstat, "__lxstat");
xstat_hook!(__lxstat64, "__lxstat64");

#[cfg(test)]
mod tests {
    use super::is_shared_library;

    #[test]
    fn shared_libraries_are_recognised() {
        assert!(is_shared_library(
            "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_io_ompio.so"
        ));
        assert!(is_shared_library("libfoo.so.1.2"));
        assert!(!is_shared_library("/data/results.sorted"));
        assert!(!is_shared_library("/data/x.so.bak"));
    }
}
