//! Hooks of the calls that moved or named file data without being seen: the
//! in-kernel copies (`copy_file_range`, `sendfile`, `splice`, which `cp` and `cat` use),
//! renames and links, `fstat`/`fstatat`/`statx`, directory streams, `truncate`,
//! `fallocate`, `fdopen` and file mappings. The ops and what each parameter means are in
//! `rsd::op` (the entries after `MPI_Intercomm_merge`).
//!
//! Except for the copies and `preadv2`/`pwritev2` (data), these are recorded only when the
//! application makes them, not inside MPI-IO calls, where they are the library's bookkeeping.
//! `aio_*` requests on traced descriptors are recorded when `aio_return` collects them, as
//! the `pwrite`/`pread` they did (glibc performs them on threads of its own through internal
//! calls); those never collected are counted into a header note.

#![allow(clippy::missing_safety_doc)]

use crate::posix::{Handle, cpath, enosys, on_handle, path_op};
use crate::real::real;
use crate::state::{Call, fd_traced, now_ns, record, run_recorded, traceable, with_state};
use libc::{FILE, c_char, c_int, c_uint, c_void, loff_t, off_t, size_t, ssize_t};
use rsd::Op;
use rsd::op::{args, fixed};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

// ---------------------------------------------------------------------------------------------
// In-kernel copies: the read and the write they do.

/// Reads `*p` before the call changes it, or `None` for a null pointer.
fn peek<T: Copy + Into<i64>>(p: *const T) -> Option<i64> {
    if p.is_null() {
        None
    } else {
        // SAFETY: the caller passed a valid pointer to the real function, which reads it.
        Some(unsafe { *p }.into())
    }
}

/// Runs a copy from `src` to `dst` (each with the offset it was given, `None`: the file
/// position) and records a `read`/`pread` on a traced source then a `write`/`pwrite` on a
/// traced destination, of the bytes the call returned. The call's time is split between
/// the two.
fn copy(
    src: (c_int, Option<i64>),
    dst: (c_int, Option<i64>),
    len: usize,
    call: impl FnOnce() -> ssize_t,
) -> ssize_t {
    let Some(child) = traceable() else {
        return call();
    };
    if !fd_traced(src.0) && !fd_traced(dst.0) {
        return call();
    }
    let _g = crate::guard::Enter::new(crate::guard::BUSY);
    let sig = crate::callsite::signature();
    let t0 = crate::waits::call_start(child);
    let r = call();
    let t1 = now_ns();
    let e = crate::posix::errno();
    let mid = t0 + (t1 - t0) / 2;
    let n = len as i64;
    let ret = r as i64;
    if fd_traced(src.0) {
        let (fd, off) = src;
        let op = if off.is_some() { Op::Pread } else { Op::Read };
        record(
            Call {
                op,
                sig,
                t0,
                t1: mid,
            },
            child,
            |st| {
                let id = st.fd(fd)?;
                Some((
                    match off {
                        Some(o) => args::pread(id, n, o, ret),
                        None => args::read(id, n, ret),
                    },
                    None,
                ))
            },
        );
    }
    if fd_traced(dst.0) {
        let (fd, off) = dst;
        let op = if off.is_some() { Op::Pwrite } else { Op::Write };
        record(
            Call {
                op,
                sig,
                t0: mid,
                t1,
            },
            child,
            |st| {
                let id = st.fd(fd)?;
                Some((
                    match off {
                        Some(o) => args::pwrite(id, n, o, ret),
                        None => args::write(id, n, ret),
                    },
                    None,
                ))
            },
        );
    }
    crate::posix::set_errno(e);
    r
}

type CopyRangeFn =
    unsafe extern "C" fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t;

macro_rules! copy_range_hook {
    ($name:ident, $sym:literal, $doc:literal) => {
        #[doc = $doc]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            fd_in: c_int,
            off_in: *mut loff_t,
            fd_out: c_int,
            off_out: *mut loff_t,
            len: size_t,
            flags: c_uint,
        ) -> ssize_t {
            let Some(f) = real!($sym, CopyRangeFn) else {
                return enosys();
            };
            let (a, b) = (peek(off_in), peek(off_out));
            copy((fd_in, a), (fd_out, b), len, || {
                // SAFETY: forwarding the caller's arguments to the real function.
                unsafe { f(fd_in, off_in, fd_out, off_out, len, flags) }
            })
        }
    };
}
copy_range_hook!(
    copy_file_range,
    "copy_file_range",
    "Hook: `copy_file_range` (coreutils' `cp` copies with it)."
);
copy_range_hook!(
    splice,
    "splice",
    "Hook: `splice` (one side is a pipe, which is never traced)."
);

type SendfileFn = unsafe extern "C" fn(c_int, c_int, *mut off_t, size_t) -> ssize_t;

macro_rules! sendfile_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `sendfile` (`cat` copies with it): the destination is written at its
        /// position.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            out_fd: c_int,
            in_fd: c_int,
            offset: *mut off_t,
            count: size_t,
        ) -> ssize_t {
            let Some(f) = real!($sym, SendfileFn) else {
                return enosys();
            };
            let a = peek(offset);
            copy((in_fd, a), (out_fd, None), count, || {
                // SAFETY: forwarding the caller's arguments to the real function.
                unsafe { f(out_fd, in_fd, offset, count) }
            })
        }
    };
}
sendfile_hook!(sendfile, "sendfile");
sendfile_hook!(sendfile64, "sendfile64");

// ---------------------------------------------------------------------------------------------
// Two paths.

/// Runs a call that names two paths and records `op` with them joined.
fn two_paths(
    op: Op,
    old: *const c_char,
    new: *const c_char,
    call: impl FnOnce() -> c_int,
) -> c_int {
    // Only the application's (see `app_on_handle`).
    let Some(false) = traceable() else {
        return call();
    };
    let child = false;
    let (a, b) = (cpath(old), cpath(new));
    // Left out only when both files are the system's: a program's file moved there or back
    // is the program's.
    let slots = (
        a.as_deref().and_then(crate::exclude::slot),
        b.as_deref().and_then(crate::exclude::slot),
    );
    if let (Some(slot), Some(_)) = slots {
        return crate::posix::excluded_call(slot, op, call, |r| r as i64);
    }
    let p = match (a, b) {
        (Some(a), Some(b)) => Some(rsd::op::path_pair(&a, &b)),
        _ => None,
    };
    run_recorded(op, child, call, |_, r| Some((vec![r as i64], p)))
}

/// Hook: `rename`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    let Some(f) = real!(
        "rename",
        unsafe extern "C" fn(*const c_char, *const c_char) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    two_paths(Op::Rename, old, new, || unsafe { f(old, new) })
}

/// Hook: `renameat` (directory descriptors are not recorded).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat(
    od: c_int,
    old: *const c_char,
    nd: c_int,
    new: *const c_char,
) -> c_int {
    let Some(f) = real!(
        "renameat",
        unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    two_paths(Op::Rename, old, new, || unsafe { f(od, old, nd, new) })
}

/// Hook: `renameat2` (`mv` renames with it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn renameat2(
    od: c_int,
    old: *const c_char,
    nd: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    let Some(f) = real!(
        "renameat2",
        unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    two_paths(Op::Rename, old, new, || unsafe {
        f(od, old, nd, new, flags)
    })
}

/// Hook: `link`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    let Some(f) = real!(
        "link",
        unsafe extern "C" fn(*const c_char, *const c_char) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    two_paths(Op::Link, old, new, || unsafe { f(old, new) })
}

/// Hook: `symlink` (target, then the link's path).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn symlink(target: *const c_char, path: *const c_char) -> c_int {
    let Some(f) = real!(
        "symlink",
        unsafe extern "C" fn(*const c_char, *const c_char) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    two_paths(Op::Symlink, target, path, || unsafe { f(target, path) })
}

// ---------------------------------------------------------------------------------------------
// Descriptor and path calls through the hook table.

/// [`on_handle`] for the calls recorded only when the application makes them: inside an
/// MPI-IO call they are the library's own bookkeeping (Open MPI's shared file pointer is a
/// mapped file), not data the collective-buffering model accounts for, and are not recorded.
#[inline]
fn app_on_handle<T: Copy, P: AsRef<[i64]>>(
    h: impl Handle,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    params: impl FnOnce(i64, i64) -> P,
) -> T {
    if traceable() == Some(true) {
        return h.pass(call);
    }
    on_handle(h, op, call, ret, params)
}

/// [`path_op`] for the calls recorded only when the application makes them (see
/// [`app_on_handle`]).
#[inline]
fn app_path_op<T: Copy>(
    path: *const c_char,
    op: Op,
    call: impl FnOnce() -> T,
    ret: impl FnOnce(T) -> i64,
    params: impl FnOnce(&mut crate::state::State, i64) -> Vec<i64>,
) -> T {
    if traceable() == Some(true) {
        return call();
    }
    path_op(path, op, call, ret, params)
}

libc_hooks! {
    /// Hook: `fstat` (glibc 2.33+ exports it as a function).
    fstat | fstat64 (fd: c_int, buf: *mut c_void) -> c_int
        => app_on_handle(fd, Fstat) |id, r| fixed::fstat(id, r);
    /// Hook: the versioned `__fxstat` entry points older binaries call.
    __fxstat | __fxstat64 (ver: c_int, fd: c_int, buf: *mut c_void) -> c_int
        => app_on_handle(fd, Fstat) |id, r| fixed::fstat(id, r);
    /// Hook: `fstatat` and its names.
    fstatat | fstatat64 | newfstatat (dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int)
        -> c_int => app_path_op(path, Fstatat) |_, r| args::fstatat(flags as i64, r);
    /// Hook: `statx`.
    statx (dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut c_void)
        -> c_int => app_path_op(path, Statx) |_, r| args::statx(flags as i64, r);
    /// Hook: `truncate`.
    truncate | truncate64 (path: *const c_char, len: off_t) -> c_int
        => app_path_op(path, Truncate) |_, r| args::truncate(len, r);
    /// Hook: `fallocate`.
    fallocate | fallocate64 (fd: c_int, mode: c_int, off: off_t, len: off_t) -> c_int
        => app_on_handle(fd, Fallocate) |id, r| fixed::fallocate(id, mode as i64, off, len, r);
    /// Hook: `posix_fallocate` (recorded as `fallocate` with mode 0; it returns an error
    /// number, not -1).
    posix_fallocate | posix_fallocate64 (fd: c_int, off: off_t, len: off_t) -> c_int
        => app_on_handle(fd, Fallocate) |id, r| fixed::fallocate(id, 0, off, len, r);
}

// ---------------------------------------------------------------------------------------------
// Directory streams.

/// A `DIR *`, keyed in the state's table of directories.
#[derive(Clone, Copy)]
struct DirHandle(*mut c_void);

impl Handle for DirHandle {
    fn traced(self) -> bool {
        let _g = crate::guard::Enter::new(crate::guard::BUSY);
        !self.0.is_null()
            && with_state(|st| st.dirs.get(self.0 as usize).is_some()).unwrap_or(false)
    }
    fn id(self, st: &mut crate::state::State) -> Option<i64> {
        st.dirs.get(self.0 as usize)
    }
}

/// `closedir`: the entry leaves the table.
#[derive(Clone, Copy)]
struct ClosingDir(*mut c_void);

impl Handle for ClosingDir {
    fn traced(self) -> bool {
        DirHandle(self.0).traced()
    }
    fn id(self, st: &mut crate::state::State) -> Option<i64> {
        st.dirs.remove(self.0 as usize)
    }
}

/// Hook: `opendir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut c_void {
    let Some(f) = real!(
        "opendir",
        unsafe extern "C" fn(*const c_char) -> *mut c_void
    ) else {
        crate::posix::set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    app_path_op(
        path,
        Op::Opendir,
        // SAFETY: forwarding the caller's argument to the real function.
        || unsafe { f(path) },
        |r| r as usize as i64,
        |st, r| {
            let id = if r == 0 {
                -1
            } else {
                st.dirs.insert(r as usize)
            };
            args::opendir(id)
        },
    )
}

macro_rules! readdir_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `readdir`: one entry, or the end.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(d: *mut c_void) -> *mut c_void {
            let Some(f) = real!($sym, unsafe extern "C" fn(*mut c_void) -> *mut c_void) else {
                crate::posix::set_errno(libc::ENOSYS);
                return std::ptr::null_mut();
            };
            app_on_handle(
                DirHandle(d),
                Op::Readdir,
                // SAFETY: forwarding the caller's argument to the real function.
                || unsafe { f(d) },
                |r| i64::from(!r.is_null()),
                |id, r| fixed::readdir(id, r),
            )
        }
    };
}
readdir_hook!(readdir, "readdir");
readdir_hook!(readdir64, "readdir64");

/// Hook: `closedir`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn closedir(d: *mut c_void) -> c_int {
    let Some(f) = real!("closedir", unsafe extern "C" fn(*mut c_void) -> c_int) else {
        return enosys();
    };
    app_on_handle(
        ClosingDir(d),
        Op::Closedir,
        // SAFETY: forwarding the caller's argument to the real function.
        || unsafe { f(d) },
        |r| r as i64,
        |id, _| fixed::closedir(id),
    )
}

// ---------------------------------------------------------------------------------------------
// fdopen.

/// Hook: `fdopen`: a stream on a traced descriptor enters the stream table.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut FILE {
    let Some(f) = real!(
        "fdopen",
        unsafe extern "C" fn(c_int, *const c_char) -> *mut FILE
    ) else {
        crate::posix::set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    let m = cpath(mode).map_or(0, |m| crate::stdio::mode_bits(&m));
    // Only the application's (see `app_on_handle`).
    let Some(child @ false) = traceable() else {
        // SAFETY: forwarding the caller's arguments to the real function.
        return unsafe { f(fd, mode) };
    };
    if !fd_traced(fd) {
        // SAFETY: forwarding the caller's arguments to the real function.
        return unsafe { f(fd, mode) };
    }
    run_recorded(
        Op::Fdopen,
        child,
        // SAFETY: forwarding the caller's arguments to the real function.
        || unsafe { f(fd, mode) },
        |st, r| {
            let id = st.fd(fd)?;
            let s = if r.is_null() {
                -1
            } else {
                st.streams.insert(r as usize)
            };
            Some((args::fdopen(id, m, s), None))
        },
    )
}

// ---------------------------------------------------------------------------------------------
// File mappings.

/// Mappings of traced descriptors alive now: `munmap`/`msync` take the state's lock only
/// when there are some (the allocator and the loader unmap all the time).
static MAPPINGS: AtomicUsize = AtomicUsize::new(0);

/// One mapping of a traced descriptor.
#[derive(Debug, Clone, Copy)]
pub struct Mapping {
    /// The descriptor's id.
    pub fd: i64,
    /// Length, bytes.
    pub len: usize,
    /// File offset of its first byte.
    pub off: i64,
    /// MAP_SHARED with PROT_WRITE: stores reach the file.
    pub writes: bool,
    /// An `msync` already counted its bytes.
    pub synced: bool,
}

type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;

macro_rules! mmap_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: `mmap` of a traced descriptor.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            addr: *mut c_void,
            len: size_t,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: off_t,
        ) -> *mut c_void {
            let Some(f) = real!($sym, MmapFn) else {
                crate::posix::set_errno(libc::ENOSYS);
                return libc::MAP_FAILED;
            };
            if fd < 0 || !fd_traced(fd) {
                // SAFETY: forwarding the caller's arguments to the real function.
                return unsafe { f(addr, len, prot, flags, fd, off) };
            }
            // Only the application's (see `app_on_handle`).
            let Some(child @ false) = traceable() else {
                // SAFETY: forwarding the caller's arguments to the real function.
                return unsafe { f(addr, len, prot, flags, fd, off) };
            };
            run_recorded(
                Op::Mmap,
                child,
                // SAFETY: forwarding the caller's arguments to the real function.
                || unsafe { f(addr, len, prot, flags, fd, off) },
                |st, r| {
                    let id = st.fd(fd)?;
                    if r != libc::MAP_FAILED {
                        let writes = flags & libc::MAP_SHARED != 0 && prot & libc::PROT_WRITE != 0;
                        st.maps.insert(
                            r as usize,
                            Mapping {
                                fd: id,
                                len,
                                off,
                                writes,
                                synced: false,
                            },
                        );
                        MAPPINGS.fetch_add(1, Ordering::Relaxed);
                    }
                    Some((
                        fixed::mmap(id, len as i64, off, prot as i64, flags as i64),
                        None,
                    ))
                },
            )
        }
    };
}
mmap_hook!(mmap, "mmap");
mmap_hook!(mmap64, "mmap64");

/// The traced mapping `addr` lies in: its start and entry.
fn mapping_of(addr: *mut c_void) -> Option<(usize, Mapping)> {
    let a = addr as usize;
    let _g = crate::guard::Enter::new(crate::guard::BUSY);
    with_state(|st| {
        let (&base, m) = st.maps.range(..=a).next_back()?;
        (a < base + m.len).then_some((base, *m))
    })
    .flatten()
}

/// Runs `msync`/`munmap` of `[addr, addr+len)`: recorded when it lies in a mapping of a
/// traced descriptor, with the bytes that reached the file (and `msync`'s `flags`).
fn on_mapping(
    op: Op,
    addr: *mut c_void,
    len: size_t,
    flags: Option<c_int>,
    call: impl FnOnce() -> c_int,
) -> c_int {
    if MAPPINGS.load(Ordering::Relaxed) == 0 {
        return call();
    }
    // Only the application's (see `app_on_handle`).
    let Some(child @ false) = traceable() else {
        return call();
    };
    let a = addr as usize;
    let Some((base, m)) = mapping_of(addr) else {
        return call();
    };
    // What the program touched through the mapping, read before the pages go.
    let touched = (op == Op::Munmap)
        .then(|| {
            let _g = crate::guard::Enter::new(crate::guard::BUSY);
            crate::pagemap::present_bytes(a, len.min(m.len - (a - base)))
        })
        .flatten();
    run_recorded(op, child, call, |st, r| {
        let off = m.off + (a - base) as i64;
        let bytes = if r != 0 || !m.writes {
            0
        } else if op == Op::Msync {
            if let Some(e) = st.maps.get_mut(&base) {
                e.synced = true;
            }
            len.min(m.len - (a - base)) as i64
        } else if m.synced {
            0
        } else {
            m.len as i64
        };
        if op == Op::Munmap && r == 0 && st.maps.remove(&base).is_some() {
            MAPPINGS.fetch_sub(1, Ordering::Relaxed);
        }
        Some((
            match flags {
                // Its flags follow (the op's comment in `rsd::op`).
                Some(fl) => [&fixed::msync(m.fd, off, bytes)[..], &[fl as i64]].concat(),
                // The bytes it touched follow (`rsd::op`), when the pagemap said.
                None => [
                    &fixed::munmap(m.fd, off, bytes)[..],
                    touched.map(|t| t as i64).as_slice(),
                ]
                .concat(),
            },
            None,
        ))
    })
}

/// Hook: `msync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn msync(addr: *mut c_void, len: size_t, flags: c_int) -> c_int {
    let Some(f) = real!(
        "msync",
        unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    on_mapping(Op::Msync, addr, len, Some(flags), || unsafe {
        f(addr, len, flags)
    })
}

/// Hook: `munmap`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let Some(f) = real!("munmap", unsafe extern "C" fn(*mut c_void, size_t) -> c_int) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    on_mapping(Op::Munmap, addr, len, None, || unsafe { f(addr, len) })
}

// ---------------------------------------------------------------------------------------------
// preadv2/pwritev2, and the asynchronous calls counted as unrecorded.

libc_hooks! {
    /// Hook: `preadv2`: `preadv` at an offset, `readv` at the position (offset -1).
    preadv2 | preadv64v2 (fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t, flags: c_int)
        -> ssize_t => on_handle(fd, Preadv)
        |id, r| if off == -1 { args::readv(id, cnt as i64, r) } else { args::preadv(id, cnt as i64, off, r) };
    /// Hook: `pwritev2`, as `preadv2`.
    pwritev2 | pwritev64v2 (fd: c_int, iov: *const libc::iovec, cnt: c_int, off: off_t, flags: c_int)
        -> ssize_t => on_handle(fd, Pwritev)
        |id, r| if off == -1 { args::writev(id, cnt as i64, r) } else { args::pwritev(id, cnt as i64, off, r) };
}

/// Asynchronous requests (`aio_read`, `aio_write`, `lio_listio` entries) on traced descriptors
/// that have not come back through `aio_return` yet: the control block's address, and whether
/// the request writes. glibc performs a request on a thread of its own through internal calls
/// no hook sees, so the tracer records it when the caller collects its result: `aio_return`
/// is recorded as the `pwrite` or `pread` the request did (the op layouts' comment in
/// `rsd::op`). OMPIO's nonblocking and split collective transfers, and `vulcan`'s writes of
/// more than two cycles, go this way; its progress engine collects each request.
static PENDING: Mutex<BTreeMap<usize, bool>> = Mutex::new(BTreeMap::new());

/// The header note on the requests never collected (their bytes are not in the trace).
pub fn unrecorded_note(rank: u32) -> Option<String> {
    let n = PENDING.lock().map(|p| p.len()).unwrap_or(0);
    (n > 0).then(|| {
        format!(
            "rank {rank}: {n} asynchronous I/O request(s) (aio_read/aio_write/lio_listio) on \
             traced descriptors were not collected by aio_return before the trace was written: \
             their bytes are missing from this trace"
        )
    })
}

/// Notes a request submitted on a traced descriptor (see [`PENDING`]).
fn submitted(cb: *const libc::aiocb, write: bool) {
    if cb.is_null() || traceable().is_none() {
        return;
    }
    // SAFETY: the caller passed a valid control block to the real function.
    let fd = unsafe { (*cb).aio_fildes };
    // A control block used again before its request was collected: the later request is
    // the one `aio_return` will report.
    if fd_traced(fd)
        && let Ok(mut p) = PENDING.lock()
    {
        p.insert(cb as usize, write);
    }
}

macro_rules! aio_hook {
    ($name:ident, $sym:literal, $write:literal) => {
        /// Hook: notes the request when its descriptor is traced (see [`PENDING`]).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(cb: *mut libc::aiocb) -> c_int {
            let Some(f) = real!($sym, unsafe extern "C" fn(*mut libc::aiocb) -> c_int) else {
                return enosys();
            };
            // SAFETY: forwarding the caller's argument to the real function.
            let r = unsafe { f(cb) };
            if r == 0 {
                submitted(cb, $write);
            }
            r
        }
    };
}
aio_hook!(aio_read, "aio_read", false);
aio_hook!(aio_write, "aio_write", true);
aio_hook!(aio_read64, "aio_read64", false);
aio_hook!(aio_write64, "aio_write64", true);

type LioFn =
    unsafe extern "C" fn(c_int, *const *mut libc::aiocb, c_int, *mut libc::sigevent) -> c_int;

macro_rules! lio_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: notes the list's requests on traced descriptors (see [`PENDING`]). Noted
        /// before the call: with `LIO_WAIT` they may be collected as soon as it returns, and
        /// a list the call refuses leaves requests nobody collects (the note counts them).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            mode: c_int,
            list: *const *mut libc::aiocb,
            n: c_int,
            sig: *mut libc::sigevent,
        ) -> c_int {
            let Some(f) = real!($sym, LioFn) else {
                return enosys();
            };
            if !list.is_null() {
                for i in 0..n.max(0) as usize {
                    // SAFETY: the caller passed an array of `n` control-block pointers (null
                    // entries are allowed and skipped).
                    let cb = unsafe { *list.add(i) };
                    if cb.is_null() {
                        continue;
                    }
                    // SAFETY: as above; a non-null entry is a valid control block.
                    match unsafe { (*cb).aio_lio_opcode } {
                        libc::LIO_READ => submitted(cb, false),
                        libc::LIO_WRITE => submitted(cb, true),
                        _ => {}
                    }
                }
            }
            // SAFETY: forwarding the caller's arguments to the real function.
            unsafe { f(mode, list, n, sig) }
        }
    };
}
lio_hook!(lio_listio, "lio_listio");
lio_hook!(lio_listio64, "lio_listio64");

macro_rules! aio_return_hook {
    ($name:ident, $sym:literal) => {
        /// Hook: collects a request's result; one noted in [`PENDING`] is recorded as the
        /// `pwrite` or `pread` it did (descriptor, the bytes asked for, the offset, what it
        /// returned), nested in the call collecting it.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(cb: *mut libc::aiocb) -> ssize_t {
            type F = unsafe extern "C" fn(*mut libc::aiocb) -> ssize_t;
            let Some(f) = real!($sym, F) else {
                return enosys();
            };
            // Recorded where `on_handle` records (not inside the tracer's own or an MPI
            // library's calls), and inside a recorded MPI call that is not an MPI-IO one (a
            // nonblocking transfer's `MPI_Wait`), where the library's own calls are not
            // recorded: a child of that call all the same, in the frame every recorded MPI
            // call opens. Elsewhere the request stays pending and the note counts it.
            let busy = crate::guard::mode() == crate::guard::BUSY;
            let recordable = crate::state::RECORDING.load(Ordering::Relaxed)
                && (!busy || crate::state::frame_open());
            let write = match recordable && !cb.is_null() {
                true => PENDING
                    .lock()
                    .ok()
                    .and_then(|mut p| p.remove(&(cb as usize))),
                false => None,
            };
            // SAFETY (here and below): forwarding the caller's control block, valid until
            // its result is collected, which this call does.
            let Some(write) = write else {
                return unsafe { f(cb) };
            };
            // SAFETY: as above.
            let (fd, n, off) =
                unsafe { ((*cb).aio_fildes, (*cb).aio_nbytes as i64, (*cb).aio_offset) };
            let (op, params): (Op, fn(i64, i64, i64, i64) -> [i64; 4]) = match write {
                true => (Op::Pwrite, fixed::pwrite),
                false => (Op::Pread, fixed::pread),
            };
            let _inside = busy.then(|| crate::guard::Enter::new(crate::guard::IN_MPIIO));
            on_handle(
                fd,
                op,
                || unsafe { f(cb) },
                |r| r as i64,
                |id, r| params(id, n, off, r),
            )
        }
    };
}
aio_return_hook!(aio_return, "aio_return");
aio_return_hook!(aio_return64, "aio_return64");

// ---------------------------------------------------------------------------------------------
// Cache and durability: whether the program's data is served by the page cache or the
// device, and when it reaches the device (the ops' comment in `rsd::op` says each layout).
// Recorded inside MPI-IO calls too, as children: a library that advises or syncs its file
// does so for the program's data.

libc_hooks! {
    /// Hook: `posix_fadvise` (it returns an error number, not -1).
    posix_fadvise | posix_fadvise64 (fd: c_int, off: off_t, len: off_t, advice: c_int) -> c_int
        => on_handle(fd, Fadvise) |id, r| fixed::fadvise(id, off, len, advice as i64, r);
    /// Hook: `readahead`.
    readahead (fd: c_int, off: off_t, count: size_t) -> ssize_t
        => on_handle(fd, Readahead) |id, r| fixed::readahead(id, off, count as i64, r);
    /// Hook: `sync_file_range`.
    sync_file_range (fd: c_int, off: off_t, len: off_t, flags: c_uint) -> c_int
        => on_handle(fd, SyncFileRange)
        |id, r| fixed::sync_file_range(id, off, len, flags as i64, r);
    /// Hook: `syncfs` of a traced descriptor's file system.
    syncfs (fd: c_int) -> c_int => on_handle(fd, Syncfs) |id, r| fixed::syncfs(id, r);
}

/// Hook: `sync`, recorded wherever the program makes it (it names no file).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sync() {
    let Some(f) = real!("sync", unsafe extern "C" fn()) else {
        // It returns nothing to fail with: the system call itself.
        // SAFETY: sync takes no arguments.
        unsafe { libc::syscall(libc::SYS_sync) };
        return;
    };
    let Some(child) = traceable() else {
        // SAFETY: calling the real function, which takes nothing.
        return unsafe { f() };
    };
    run_recorded(
        Op::Sync,
        child,
        // SAFETY: as above.
        || unsafe { f() },
        |_, _| Some((fixed::sync(), None)),
    )
}

/// Hook: `madvise`, recorded when the range starts in a mapping of a traced descriptor (the
/// allocator advises its own memory all the time: that costs one atomic load).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    let Some(f) = real!(
        "madvise",
        unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int
    ) else {
        return enosys();
    };
    // SAFETY: forwarding the caller's arguments to the real function.
    let call = || unsafe { f(addr, len, advice) };
    if MAPPINGS.load(Ordering::Relaxed) == 0 {
        return call();
    }
    let Some(child @ false) = traceable() else {
        return call();
    };
    let Some((base, m)) = mapping_of(addr) else {
        return call();
    };
    run_recorded(Op::Madvise, child, call, |_, r| {
        let a = addr as usize;
        let len = len.min(m.len - (a - base)) as i64;
        let off = m.off + (a - base) as i64;
        Some((
            fixed::madvise(m.fd, off, len, advice as i64, r as i64),
            None,
        ))
    })
}
