//! Writing a trace file so that it is whole or absent, and kept somewhere when its own
//! directory refuses it.
//!
//! A file is written as an unnamed temporary (`O_TMPFILE`) in its directory, linked under a
//! temporary name only once every byte is in, then renamed into place: a process killed
//! mid-write (mpirun follows its SIGTERM with SIGKILL within a second) leaves nothing, and a
//! full disk (`ENOSPC`), a failing one (`EIO`), a read-only directory (`EROFS`, `EACCES`) or a
//! directory in the way (`EISDIR`) leaves the old file, if any, untouched. Where the file
//! system has no `O_TMPFILE`, a named temporary is removed on failure. Then the trace goes to
//! the temporary directory instead (`$TMPDIR`, else `/tmp`: [`fallback`]), and one line on
//! stderr says where, or that it is lost: a production run of hours must not lose its trace
//! to an output path that filled up.
//!
//! Everything here is raw system calls on paths prepared beforehand ([`Dest`]), except the
//! data, which goes through the next `write` (libc's, or an I/O interposer preloaded after
//! this library: a site's monitor, or the fault injector of `tests/faults.rs`): the signal
//! handlers use this too, and must neither allocate nor take locks on the success path.

use libc::c_int;
use std::ffi::{CStr, CString};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

type WriteFn = unsafe extern "C" fn(c_int, *const libc::c_void, usize) -> isize;

/// The next `write` after this library, resolved at start-up (not in a signal handler).
static NEXT_WRITE: AtomicUsize = AtomicUsize::new(0);
/// The directory of [`fallback`] paths, read from the environment at start-up.
static TMP: OnceLock<String> = OnceLock::new();

/// At start-up (the constructor): resolves `write` and the fallback directory.
pub fn init() {
    // SAFETY: a NUL-terminated name; dlsym returns null when there is none.
    let w = unsafe { libc::dlsym(libc::RTLD_NEXT, c"write".as_ptr()) } as usize;
    NEXT_WRITE.store(w, Ordering::SeqCst);
    let _ = TMP.set(rsd::job::tmp_dir(std::env::var("TMPDIR").ok().as_deref()));
}

/// A destination prepared outside the signal handler: the path, its directory and the name
/// of the temporary it is linked under before the rename.
#[derive(Debug, Clone)]
pub struct Dest {
    /// Where the file goes.
    pub path: String,
    c_path: CString,
    c_dir: CString,
    c_tmp: CString,
}

impl Dest {
    /// `None` for a path with a NUL byte, which no file can have.
    pub fn new(path: &str) -> Option<Dest> {
        let dir = match path.rfind('/') {
            Some(0) => "/",
            Some(i) => &path[..i],
            None => ".",
        };
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::syscall(libc::SYS_getpid) };
        Some(Dest {
            path: path.to_string(),
            c_path: CString::new(path).ok()?,
            c_dir: CString::new(dir).ok()?,
            c_tmp: CString::new(format!("{path}.{pid}.tmp")).ok()?,
        })
    }
}

/// Where the trace meant for `path` goes when `path` refuses it:
/// `<$TMPDIR or /tmp>/iotrex-<pid>-<file name>`; `None` when `path` is there already.
pub fn fallback(path: &str) -> Option<Dest> {
    let tmp = TMP.get()?;
    let name = path.rsplit('/').next().unwrap_or(path);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::syscall(libc::SYS_getpid) };
    let alt = format!("{}/iotrex-{pid}-{name}", tmp.trim_end_matches('/'));
    (alt != path).then(|| Dest::new(&alt)).flatten()
}

fn errno() -> c_int {
    crate::posix::errno()
}

fn close(fd: c_int) {
    // SAFETY: closing a descriptor this module opened.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

fn unlink(p: &CStr) {
    // SAFETY: a NUL-terminated path.
    unsafe { libc::syscall(libc::SYS_unlinkat, libc::AT_FDCWD, p.as_ptr(), 0) };
}

/// Writes all of `bytes` to `fd` through the next `write`, retrying on `EINTR`.
fn write_all(fd: c_int, bytes: &[u8]) -> Result<(), c_int> {
    let next = NEXT_WRITE.load(Ordering::SeqCst);
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        let n = if next != 0 {
            // SAFETY: `next` is the address dlsym gave for `write`, of this prototype; the
            // slice is valid for its length and `fd` is ours.
            let f: WriteFn = unsafe { std::mem::transmute::<usize, WriteFn>(next) };
            unsafe { f(fd, rest.as_ptr().cast(), rest.len()) }
        } else {
            // SAFETY: as above, by the system call.
            unsafe { libc::syscall(libc::SYS_write, fd, rest.as_ptr(), rest.len()) as isize }
        };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            return Err(libc::EIO);
        }
        done += n as usize;
    }
    Ok(())
}

/// `/proc/self/fd/<fd>` in `buf`, NUL-terminated, without allocating.
fn proc_fd(fd: c_int, buf: &mut [u8; 32]) -> &CStr {
    let head = b"/proc/self/fd/";
    buf[..head.len()].copy_from_slice(head);
    let mut digits = [0u8; 12];
    let (mut v, mut n) = (fd.max(0) as u32, 0);
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        buf[head.len() + i] = digits[n - 1 - i];
    }
    buf[head.len() + n] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/")
}

fn rename(from: &CStr, to: &CStr) -> Result<(), c_int> {
    // SAFETY: NUL-terminated paths; renameat2 with flags 0 is rename.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            0,
        )
    };
    if r < 0 { Err(errno()) } else { Ok(()) }
}

fn sync(fd: c_int) -> Result<(), c_int> {
    // SAFETY: fsync of our own descriptor.
    if unsafe { libc::syscall(libc::SYS_fsync, fd) } < 0 {
        let e = errno();
        // Pipes and some special files cannot be synced; that is no failure of the data.
        if e != libc::EINVAL && e != libc::EROFS {
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `bytes` as `d`, whole or not at all (see the module's documentation); `durable`
/// also syncs the data before the rename (not in a signal handler, where speed matters more:
/// SIGKILL follows). `Err(errno)` on failure, with no file left behind.
pub fn put(d: &Dest, bytes: &[u8], durable: bool) -> Result<(), c_int> {
    // SAFETY: a NUL-terminated directory; O_TMPFILE takes a mode.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            d.c_dir.as_ptr(),
            libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644,
        )
    } as c_int;
    if fd >= 0 {
        let r = write_all(fd, bytes).and_then(|()| if durable { sync(fd) } else { Ok(()) });
        if let Err(e) = r {
            close(fd);
            return Err(e);
        }
        let mut buf = [0u8; 32];
        let mut link = |tmp: &CStr| {
            // SAFETY: NUL-terminated paths; following the /proc link names the open file.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_linkat,
                    libc::AT_FDCWD,
                    proc_fd(fd, &mut buf).as_ptr(),
                    libc::AT_FDCWD,
                    tmp.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            };
            if r < 0 { Err(errno()) } else { Ok(()) }
        };
        let mut r = link(&d.c_tmp);
        if r == Err(libc::EEXIST) {
            // A temporary of an earlier process with this pid, killed between link and rename.
            unlink(&d.c_tmp);
            r = link(&d.c_tmp);
        }
        close(fd);
        r?;
        return rename(&d.c_tmp, &d.c_path).inspect_err(|_| unlink(&d.c_tmp));
    }
    let e = errno();
    if !matches!(e, libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL) {
        // The directory itself refuses (read-only, missing, not ours): no named file would do.
        return Err(e);
    }
    // No O_TMPFILE on this file system: a named temporary, removed on failure.
    // SAFETY: a NUL-terminated path; O_CREAT takes a mode.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            d.c_tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        )
    } as c_int;
    if fd < 0 {
        return Err(errno());
    }
    let r = write_all(fd, bytes).and_then(|()| if durable { sync(fd) } else { Ok(()) });
    close(fd);
    r.and_then(|()| rename(&d.c_tmp, &d.c_path))
        .inspect_err(|_| unlink(&d.c_tmp))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fd_names() {
        let mut b = [0u8; 32];
        assert_eq!(proc_fd(0, &mut b).to_str().unwrap(), "/proc/self/fd/0");
        assert_eq!(
            proc_fd(1234, &mut b).to_str().unwrap(),
            "/proc/self/fd/1234"
        );
    }

    #[test]
    fn dest_dirs() {
        assert_eq!(Dest::new("a.iotrex").unwrap().c_dir.to_str().unwrap(), ".");
        assert_eq!(Dest::new("/a.iotrex").unwrap().c_dir.to_str().unwrap(), "/");
        assert_eq!(
            Dest::new("x/y/a.iotrex").unwrap().c_dir.to_str().unwrap(),
            "x/y"
        );
    }

    #[test]
    fn whole_or_nothing() {
        let dir = std::env::temp_dir().join(format!("iotrex-outfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.iotrex").display().to_string();
        let d = Dest::new(&p).unwrap();
        put(&d, b"first", true).unwrap();
        put(&d, b"second", false).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        // A directory in the way: an error, and nothing left beside it.
        let q = dir.join("sub");
        std::fs::create_dir(&q).unwrap();
        let e = put(&Dest::new(&q.display().to_string()).unwrap(), b"x", true);
        assert_eq!(e, Err(libc::EISDIR));
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
