//! POSIX hooks. Descriptor calls are recorded only on descriptors the application opened
//! through a traced call; path calls (open, stat, unlink, ...) whenever the application (or an
//! MPI-IO call, as children) makes them.

#![allow(clippy::missing_safety_doc)]

use crate::guard::BUSY;
use crate::real::real;
use crate::state::{fd_traced, run_recorded, run_recorded_in, traceable, traceable_in};
use libc::{c_char, c_int, c_long, c_void, iovec, mode_t, off_t, size_t, ssize_t};
use rsd::Op;
use rsd::op::{args, fixed};

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

/// Runs `f` (a hook's own work around the real call) with this thread's errno kept as it was.
pub(crate) fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    let e = errno();
    let r = f();
    set_errno(e);
    r
}

/// Fails like a missing system call when the real function cannot be found.
pub(crate) fn enosys<T: From<i8>>() -> T {
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

/// What a call acts on that the tracer keeps a table of: a descriptor or a stream.
pub(crate) trait Handle: Copy {
    /// Whether the handle is in the table (calls on others are not recorded).
    fn traced(self) -> bool;
    /// Its id in the table.
    fn id(self, st: &mut crate::state::State) -> Option<i64>;
    /// Runs a call on a handle that is not traced.
    fn pass<T>(self, call: impl FnOnce() -> T) -> T {
        call()
    }
    /// The slot of the excluded directory the handle's file is under ([`crate::exclude`]).
    fn excluded(self) -> Option<usize> {
        None
    }
}

// Inlined into every hook: with more hooks on descriptors, the compiler stopped inlining
// `id` into some of them (fcntl's hook then cost 12 instructions more per call).
impl Handle for c_int {
    #[inline(always)]
    fn traced(self) -> bool {
        fd_traced(self)
    }
    #[inline(always)]
    fn id(self, st: &mut crate::state::State) -> Option<i64> {
        st.fd(self)
    }
    #[inline(always)]
    fn excluded(self) -> Option<usize> {
        crate::exclude::of_fd(self)
    }
}

/// Runs a call on a descriptor or stream `h`; records it with `params(id, ret)` if `h` is
/// traced. `params` may return a fixed array: the steady state of a traced loop then records
/// without allocating.
#[inline]
pub(crate) fn on_handle<T: Copy, P: AsRef<[i64]>>(
    h: impl Handle,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    params: impl FnOnce(i64, i64) -> P,
) -> T {
    // One thread-local access for the whole hook: the guard and the call-site cache share
    // this thread's block.
    crate::guard::with_thread(|t| {
        let Some(child) = traceable_in(t) else {
            return call();
        };
        if !h.traced() {
            return match h.excluded() {
                Some(slot) => excluded_call(slot, op, || h.pass(call), ret),
                None => h.pass(call),
            };
        }
        run_recorded_in(t, op, child, call, |st, r| {
            Some((params(h.id(st)?, ret(r)), None))
        })
    })
}

/// Runs a call that names a path; `params(state, ret)` may update the tables (opens).
#[inline]
pub(crate) fn path_op<T: Copy>(
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
    if let Some(slot) = p.as_deref().and_then(crate::exclude::slot) {
        return excluded_call(slot, op, call, |r| {
            let rv = ret(r);
            if op.opens_descriptor() && rv >= 0 {
                crate::exclude::opened(rv, slot);
            }
            rv
        });
    }
    run_recorded(op, child, call, |st, r| {
        let rv = ret(r);
        Some((params(st, rv), p))
    })
}

/// Runs a call on a file under an excluded directory: not recorded, only counted, with the
/// bytes it moved when it is a read or a write ([`crate::exclude`]).
#[inline(never)]
pub(crate) fn excluded_call<T: Copy>(
    slot: usize,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
) -> T {
    let r = call();
    let rv = ret(r);
    let moved = op.dir() != rsd::op::Dir::None;
    crate::exclude::count(slot, if moved { rv } else { 0 });
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

/// The parameters of an `open` (`args`: `args::open` or `args::openat`), which enters the
/// descriptor it returned in the table.
fn open_params(
    st: &mut crate::state::State,
    flags: c_int,
    mode: mode_t,
    r: i64,
    args: fn(i64, i64, i64) -> Vec<i64>,
) -> Vec<i64> {
    let id = st.fd_open_result(r);
    // `mode` is only passed with O_CREAT/O_TMPFILE; otherwise the register holds garbage.
    let mode = if creates(flags) { mode as i64 } else { 0 };
    args(flags as i64, mode, id)
}

libc_hooks! {
    /// Hook: `open` family (the variadic `mode` is read as a third argument, which the
    /// x86-64 and AArch64 calling conventions pass in a register either way).
    open | open64 (path: *const c_char, flags: c_int, mode: mode_t) -> c_int
        => path_op(path, Open) |st, r| open_params(st, flags, mode, r, args::open);
    /// Hook: fortified `open` without a mode.
    __open_2 | __open64_2 (path: *const c_char, flags: c_int) -> c_int
        => path_op(path, Open) |st, r| open_params(st, flags, 0, r, args::open);
    /// Hook: `openat` family.
    openat | openat64 (dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int
        => path_op(path, Openat) |st, r| open_params(st, flags, mode, r, args::openat);
    /// Hook: fortified `openat` without a mode.
    __openat_2 | __openat64_2 (dirfd: c_int, path: *const c_char, flags: c_int) -> c_int
        => path_op(path, Openat) |st, r| open_params(st, flags, 0, r, args::openat);
    /// Hook: `creat`.
    creat | creat64 (path: *const c_char, mode: mode_t) -> c_int
        => path_op(path, Creat) |st, r| args::creat(mode as i64, st.fd_open_result(r));

    /// Hook: `read`.
    read (fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t
        => on_handle(fd, Read) |id, r| fixed::read(id, n as i64, r);
    /// Hook: fortified `read`.
    __read_chk (fd: c_int, buf: *mut c_void, n: size_t, len: size_t) -> ssize_t
        => on_handle(fd, Read) |id, r| fixed::read(id, n as i64, r);
    /// Hook: `write`.
    write (fd: c_int, buf: *const c_void, n: size_t) -> ssize_t
        => on_handle(fd, Write) |id, r| fixed::write(id, n as i64, r);
    /// Hook: `pread` (and its 64-bit name).
    pread | pread64 (fd: c_int, buf: *mut c_void, n: size_t, off: off_t) -> ssize_t
        => on_handle(fd, Pread) |id, r| fixed::pread(id, n as i64, off, r);
    /// Hook: fortified `pread`.
    __pread_chk | __pread64_chk (fd: c_int, buf: *mut c_void, n: size_t, off: off_t, len: size_t)
        -> ssize_t => on_handle(fd, Pread) |id, r| fixed::pread(id, n as i64, off, r);
    /// Hook: `pwrite` (and its 64-bit name).
    pwrite | pwrite64 (fd: c_int, buf: *const c_void, n: size_t, off: off_t) -> ssize_t
        => on_handle(fd, Pwrite) |id, r| fixed::pwrite(id, n as i64, off, r);
    /// Hook: `readv`/`writev`, and `preadv`/`pwritev` (and their 64-bit names).
    readv (fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t
        => on_handle(fd, Readv) |id, r| fixed::readv(id, cnt as i64, r);
    writev (fd: c_int, iov: *const iovec, cnt: c_int) -> ssize_t
        => on_handle(fd, Writev) |id, r| fixed::writev(id, cnt as i64, r);
    preadv | preadv64 (fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t
        => on_handle(fd, Preadv) |id, r| fixed::preadv(id, cnt as i64, off, r);
    pwritev | pwritev64 (fd: c_int, iov: *const iovec, cnt: c_int, off: off_t) -> ssize_t
        => on_handle(fd, Pwritev) |id, r| fixed::pwritev(id, cnt as i64, off, r);
    /// Hook: `lseek`.
    lseek | lseek64 (fd: c_int, off: off_t, whence: c_int) -> off_t
        => on_handle(fd, Lseek) |id, r| fixed::lseek(id, off, whence as i64, r);
    /// Hook: `fsync`, `fdatasync`.
    fsync (fd: c_int) -> c_int => on_handle(fd, Fsync) |id, _| fixed::fsync(id);
    fdatasync (fd: c_int) -> c_int => on_handle(fd, Fdatasync) |id, _| fixed::fdatasync(id);
    /// Hook: `ftruncate`.
    ftruncate | ftruncate64 (fd: c_int, len: off_t) -> c_int
        => on_handle(fd, Ftruncate) |id, _| fixed::ftruncate(id, len);
    /// Hook: `vdprintf` and its fortified form, also the targets of the `dprintf` shims:
    /// a `write` of the bytes written.
    vdprintf (fd: c_int, fmt: *const c_char, ap: VaList) -> c_int, else -1
        => on_handle(fd, Write) |id, r| fixed::write(id, r.max(0), r);
    __vdprintf_chk (fd: c_int, flag: c_int, fmt: *const c_char, ap: VaList) -> c_int, else -1
        => on_handle(fd, Write) |id, r| fixed::write(id, r.max(0), r);

    /// Hook: `unlink`, `rmdir`, `mkdir`, `access`.
    unlink (path: *const c_char) -> c_int => path_op(path, Unlink) |_, _| args::unlink();
    rmdir (path: *const c_char) -> c_int => path_op(path, Rmdir) |_, _| args::rmdir();
    mkdir (path: *const c_char, mode: mode_t) -> c_int
        => path_op(path, Mkdir) |_, _| args::mkdir(mode as i64);
    access (path: *const c_char, mode: c_int) -> c_int
        => path_op(path, Access) |_, r| args::access(mode as i64, r);
    /// Hook: `stat`/`lstat` (glibc 2.33+ exports them as functions).
    stat | stat64 | lstat | lstat64 (path: *const c_char, buf: *mut c_void) -> c_int
        => path_op(path, Stat) |_, r| args::stat(r);
    /// Hook: the versioned `__xstat` entry points older binaries call.
    __xstat | __xstat64 | __lxstat | __lxstat64 (ver: c_int, path: *const c_char, buf: *mut c_void)
        -> c_int => path_op(path, Stat) |_, r| args::stat(r);
}

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
        crate::exclude::forget(fd);
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(fd) };
    };
    if !fd_traced(fd) {
        if let Some(slot) = crate::exclude::of_fd(fd) {
            crate::exclude::forget(fd);
            // SAFETY: forwarding the caller's argument.
            return excluded_call(slot, Op::Close, || unsafe { f(fd) }, |r| r as i64);
        }
        // SAFETY: forwarding the caller's argument.
        return unsafe { f(fd) };
    }
    run_recorded(
        Op::Close,
        child,
        // SAFETY: forwarding the caller's argument.
        || unsafe { f(fd) },
        |st, _| Some((args::close(st.fd_close(fd)?), None)),
    )
}

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
            if cmd == libc::F_SETFL {
                return fcntl_setfl(f, fd, arg);
            }
            on_handle(
                fd,
                Op::Fcntl,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(fd, cmd, arg) },
                |r| r as i64,
                |id, r| fixed::fcntl(id, cmd as i64, r),
            )
        }
    };
}
/// `fcntl(fd, F_SETFL, flags)`, recorded with the flags set after its fixed parameters (the
/// op's comment in `rsd::op`): O_DIRECT set here changes where the file's data goes. Apart
/// and not inlined, so the other commands' hook stays as it was.
#[inline(never)]
fn fcntl_setfl(
    f: unsafe extern "C" fn(c_int, c_int, c_long) -> c_int,
    fd: c_int,
    arg: c_long,
) -> c_int {
    on_handle(
        fd,
        Op::Fcntl,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(fd, libc::F_SETFL, arg) },
        |r| r as i64,
        |id, r| [id, libc::F_SETFL as i64, r, arg as c_int as i64],
    )
}

fcntl_hook!(fcntl, "fcntl");
fcntl_hook!(fcntl64, "fcntl64");

// `dprintf`: glibc formats into a buffer of its own and writes it through an internal entry
// point, not the `write` symbol, so without these hooks its bytes went unrecorded. Recorded as
// a `write` of the bytes it wrote (the count is only known afterwards).

/// `va_list` as a function parameter is a pointer on x86-64: forwarded opaque.
type VaList = *mut c_void;

shim_targets! {
    iotrex_vdprintf_hook => vdprintf(fd: c_int, fmt: *const c_char, ap: VaList);
    iotrex_vdprintf_chk_hook => __vdprintf_chk(fd: c_int, flag: c_int, fmt: *const c_char, ap: VaList);
}

naked_jumps! {
    /// Hook: `dprintf`.
    dprintf => iotrex_c_dprintf;
    /// Hook: `__dprintf_chk` (`dprintf` under `_FORTIFY_SOURCE`).
    __dprintf_chk => iotrex_c_dprintf_chk;
}

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
