//! Writing a trace file so that it is whole or absent, and kept somewhere when its own
//! directory refuses it.
//!
//! The file itself is written by [`rsd::atomic::put`] (the one place that knows how an
//! output is made whole: an unnamed temporary linked and renamed into place, with raw system
//! calls, so the signal handlers can use it): a process killed mid-write (mpirun follows its
//! SIGTERM with SIGKILL within a second) leaves nothing, and a full disk (`ENOSPC`), a
//! failing one (`EIO`), a read-only directory (`EROFS`, `EACCES`) or a directory in the way
//! (`EISDIR`) leaves the old file, if any, untouched. What this module adds is the policy:
//! the data goes through the next `write` after this library (libc's, or an I/O interposer
//! preloaded after it: a site's monitor, or the fault injector of `tests/it/faults.rs`), and
//! when the path refuses it the trace goes to the temporary directory instead (`$TMPDIR`,
//! else `/tmp`: [`fallback`]), with one line on stderr saying where, or that it is lost: a
//! production run of hours must not lose its trace to an output path that filled up.

use libc::c_int;
pub use rsd::atomic::Dest;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::OnceLock;

type NextWrite = unsafe extern "C" fn(c_int, *const libc::c_void, usize) -> isize;

/// The next `write` after this library, resolved at start-up (not in a signal handler).
static NEXT_WRITE: OnceLock<Option<NextWrite>> = OnceLock::new();
/// The directory of [`fallback`] paths, read from the environment at start-up.
static TMP: OnceLock<String> = OnceLock::new();

/// At start-up (the constructor): resolves `write` and the fallback directory.
pub fn init() {
    // SAFETY: a NUL-terminated name; dlsym returns null when there is none.
    let w = unsafe { libc::dlsym(libc::RTLD_NEXT, c"write".as_ptr()) };
    // SAFETY: the address dlsym gave for `write`, which has this prototype.
    let next =
        (!w.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, NextWrite>(w) });
    let _ = NEXT_WRITE.set(next);
    let _ = TMP.set(rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref()));
}

/// Where the trace meant for `path` goes when `path` refuses it:
/// `<$TMPDIR or /tmp>/iotrex-<pid>-<file name>`; `None` when `path` is there already.
pub fn fallback(path: &str) -> Option<Dest> {
    let tmp = TMP.get()?;
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::syscall(libc::SYS_getpid) };
    let alt = rsd::job::fallback_path(tmp, pid, path);
    (alt != path).then(|| Dest::new(&alt)).flatten()
}

/// Writes `bytes` as `d`, whole or not at all ([`rsd::atomic::put`] through the next
/// `write`). `Err(errno)` on failure, with no file left behind.
pub fn put(d: &Dest, bytes: &[u8], durable: bool) -> Result<(), c_int> {
    let Some(next) = NEXT_WRITE.get().copied().flatten() else {
        return rsd::atomic::put(d, bytes, durable, None);
    };
    let write = |fd: BorrowedFd<'_>, b: &[u8]| {
        // SAFETY: `next` is the `write` dlsym found, of this prototype; the slice is valid
        // for its length and the descriptor is open.
        let n = unsafe { next(fd.as_raw_fd(), b.as_ptr().cast(), b.len()) };
        usize::try_from(n).map_err(|_| crate::posix::errno())
    };
    rsd::atomic::put(d, bytes, durable, Some(&write))
}

/// The text of an errno, for the one line on stderr.
pub fn describe(e: c_int) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

/// Writes `bytes` as `d`, or as `alt` (its [`fallback`]) when `d` refuses them, saying so on
/// stderr with `what` naming the file ("the trace", "rank 3's calls"). Returns the path
/// written, or `None` when neither could be.
pub fn put_or_fallback(
    what: &str,
    d: &Dest,
    alt: Option<&Dest>,
    bytes: &[u8],
    durable: bool,
) -> Option<String> {
    let e = match put(d, bytes, durable) {
        Ok(()) => return Some(d.path.clone()),
        Err(e) => e,
    };
    let Some(alt) = alt else {
        crate::state::say(&format!(
            "cannot write {what} to {} ({}); it is lost",
            d.path,
            describe(e)
        ));
        return None;
    };
    match put(alt, bytes, durable) {
        Ok(()) => {
            crate::state::say(&format!(
                "cannot write {what} to {} ({}); it is in {} instead",
                d.path,
                describe(e),
                alt.path
            ));
            Some(alt.path.clone())
        }
        Err(e2) => {
            crate::state::say(&format!(
                "cannot write {what} to {} ({}), nor to {} ({}); it is lost",
                d.path,
                describe(e),
                alt.path,
                describe(e2)
            ));
            None
        }
    }
}

/// [`put_or_fallback`] for a path given as text (outside signal handlers).
pub fn write_path(what: &str, path: &str, bytes: &[u8]) -> Option<String> {
    let Some(d) = Dest::new(path) else {
        crate::state::say(&format!(
            "cannot write {what}: the path {path:?} has a NUL byte"
        ));
        return None;
    };
    put_or_fallback(what, &d, fallback(path).as_ref(), bytes, true)
}
