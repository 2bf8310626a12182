//! Writing an output file so that its name only ever holds a whole file: every file iotrex
//! writes (traces, CODES exports, Chrome traces, reports, JSON reports, and the tracer's
//! merged and per-rank traces) goes to a temporary name in the same directory, is flushed to
//! disk, and is renamed into place. An interrupted run (killed, out of space, a failed
//! conversion) leaves the previous file or none under the name, never a truncated one that a
//! later run would read as whole. This module is the one place that does it.
//!
//! The temporary name is hidden and unique (`.NAME.PID.N.iotrex-tmp`, [`is_temporary`]): two
//! writers of the same output do not share it, and a run killed with SIGKILL (which no code of
//! ours outlives) leaves only such a name behind.
//!
//! Two ways in:
//! - [`AtomicFile`] / [`write`]: the commands' outputs, through `std::fs`.
//! - [`Dest`] / [`put`]: the tracer's traces, which are written from signal handlers and at
//!   exit. A [`Dest`] is prepared beforehand (every path formatted, nothing left to
//!   allocate); [`put`] then uses raw system calls only, and takes the `write` to call (the
//!   tracer passes the next `write` after itself, so an I/O interposer preloaded after it
//!   sees the data). The file is first an unnamed temporary (`O_TMPFILE`) in its directory,
//!   linked under the temporary name only once every byte is in, then renamed: a process
//!   killed mid-write leaves nothing at all. Where the file system has no `O_TMPFILE`, the
//!   named temporary is created directly and removed on failure.
//!
//! A name that holds a device, a FIFO or a socket (`-o /dev/null`, `/dev/stdout`, a named
//! pipe) is written in place ([`special`]): a rename would put a regular file where the device
//! was. Run as root, `iotrex extrap ... -o /dev/null` did replace the system's `/dev/null`,
//! and every later `> /dev/null` of every process wrote into that file.

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// An output file being written under a temporary name; [`AtomicFile::commit`] renames it
/// into place. Dropped without a commit (an error, a panic), the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    w: Option<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
}

/// The end of every temporary name of this module.
const TMP_SUFFIX: &str = ".iotrex-tmp";

/// Whether `name` (a file name) is one of this module's temporary names: what a writer
/// killed with SIGKILL between creating and renaming it leaves.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TMP_SUFFIX)
}

/// The temporary name for `path`, in its directory.
fn tmp_name(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let mut t = std::ffi::OsString::from(".");
    t.push(name);
    t.push(format!(
        ".{}.{}{TMP_SUFFIX}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(path.with_file_name(t))
}

/// Whether `path` names an existing file that is neither a regular file nor a directory (a
/// device, a FIFO, a socket): written in place, never replaced (see the module's text).
fn special(path: &CStr) -> bool {
    rustix::fs::statat(CWD, path, AtFlags::empty()).is_ok_and(|st| {
        !matches!(
            FileType::from_raw_mode(st.st_mode),
            FileType::RegularFile | FileType::Directory
        )
    })
}

impl AtomicFile {
    /// Starts writing `path` (created at its temporary name, which must not exist; a device,
    /// FIFO or socket is opened in place, [`special`]).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))?;
        if special(&c) {
            let f = File::options().write(true).open(path)?;
            return Ok(AtomicFile {
                w: Some(BufWriter::with_capacity(1 << 16, f)),
                tmp: PathBuf::new(),
                path: path.to_path_buf(),
            });
        }
        let tmp = tmp_name(path)?;
        let f = File::options().write(true).create_new(true).open(&tmp)?;
        Ok(AtomicFile {
            w: Some(BufWriter::with_capacity(1 << 16, f)),
            tmp,
            path: path.to_path_buf(),
        })
    }

    /// The name the file will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn w(&mut self) -> &mut BufWriter<File> {
        self.w.as_mut().expect("present until commit or drop")
    }

    /// Flushes, syncs (so the data is on disk before the name is: a crash of the machine
    /// leaves the old file or the new one, not an empty one) and renames into place. A file
    /// written in place is only flushed.
    pub fn commit(mut self) -> io::Result<()> {
        let f = self
            .w
            .take()
            .expect("present until commit")
            .into_inner()
            .map_err(|e| e.into_error())?;
        if self.tmp.as_os_str().is_empty() {
            return Ok(());
        }
        f.sync_all()?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path)?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.w().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            drop(self.w.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` through an [`AtomicFile`].
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes.as_ref())?;
    f.commit()
}

/// What [`put`] writes the data with: `write(2)`'s shape, on a descriptor and a buffer,
/// returning the bytes written or the errno. The tracer passes the next `write` after itself.
pub type WriteFn<'a> = &'a dyn Fn(BorrowedFd<'_>, &[u8]) -> Result<usize, i32>;

/// A destination for [`put`], prepared outside any signal handler: the path, its directory
/// and its temporary name, NUL-terminated.
#[derive(Debug, Clone)]
pub struct Dest {
    /// Where the file goes.
    pub path: String,
    c_path: CString,
    c_dir: CString,
    c_tmp: CString,
}

impl Dest {
    /// `None` for a path with a NUL byte or without a file name.
    pub fn new(path: &str) -> Option<Dest> {
        let dir = match path.rfind('/') {
            Some(0) => "/",
            Some(i) => &path[..i],
            None => ".",
        };
        let tmp = tmp_name(Path::new(path)).ok()?;
        Some(Dest {
            path: path.to_string(),
            c_path: CString::new(path).ok()?,
            c_dir: CString::new(dir).ok()?,
            c_tmp: CString::new(tmp.into_os_string().into_encoded_bytes()).ok()?,
        })
    }
}

/// Writes all of `bytes` to `fd` through `write` (the system call when `None`), retrying on
/// `EINTR`.
fn write_all(fd: BorrowedFd<'_>, bytes: &[u8], write: Option<WriteFn>) -> Result<(), i32> {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        let n = match write {
            Some(f) => f(fd, rest),
            None => rustix::io::write(fd, rest).map_err(|e| e.raw_os_error()),
        };
        match n {
            Err(e) if e == Errno::INTR.raw_os_error() => continue,
            Err(e) => return Err(e),
            Ok(0) => return Err(Errno::IO.raw_os_error()),
            Ok(n) => done += n,
        }
    }
    Ok(())
}

/// `/proc/self/fd/<fd>` in `buf`, NUL-terminated, without allocating.
fn proc_fd(fd: i32, buf: &mut [u8; 32]) -> &CStr {
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

fn sync(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    match rustix::fs::fsync(fd) {
        // Pipes and some special files cannot be synced; that is no failure of the data.
        Err(Errno::INVAL | Errno::ROFS) => Ok(()),
        r => r,
    }
}

fn unlink(p: &CStr) {
    let _ = rustix::fs::unlinkat(CWD, p, AtFlags::empty());
}

/// Writes `bytes` as `d`, whole or not at all, by system calls (rustix's, which make them
/// directly: no libc wrapper a preloaded tracer hooks, no lock, no allocation; see the
/// module's text); `durable` also syncs the data before the rename (not in a signal handler,
/// where speed matters more). `Err(errno)` on failure, with nothing left behind: a full disk
/// (`ENOSPC`), a failing one (`EIO`), a read-only directory (`EROFS`, `EACCES`) or a
/// directory in the way (`EISDIR`) leaves the old file, if any, untouched.
pub fn put(d: &Dest, bytes: &[u8], durable: bool, write: Option<WriteFn>) -> Result<(), i32> {
    let errno = |e: Errno| e.raw_os_error();
    if special(&d.c_path) {
        let fd = rustix::fs::openat(
            CWD,
            &d.c_path,
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        return write_all(fd.as_fd(), bytes, write);
    }
    let finish = |fd: BorrowedFd<'_>| {
        write_all(fd, bytes, write)?;
        if durable {
            sync(fd).map_err(errno)?;
        }
        Ok::<(), i32>(())
    };
    let tmpfile = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
    match rustix::fs::openat(CWD, d.c_dir.as_c_str(), tmpfile, Mode::from_raw_mode(0o644)) {
        Ok(fd) => {
            finish(fd.as_fd())?;
            let mut buf = [0u8; 32];
            let from = proc_fd(fd.as_raw_fd(), &mut buf);
            // Following the /proc link names the open file.
            let link = || rustix::fs::linkat(CWD, from, CWD, &d.c_tmp, AtFlags::SYMLINK_FOLLOW);
            let mut r = link();
            if r == Err(Errno::EXIST) {
                // A temporary of an earlier process with this pid, killed between link and
                // rename.
                unlink(&d.c_tmp);
                r = link();
            }
            drop(fd);
            r.map_err(errno)?;
            rustix::fs::renameat(CWD, &d.c_tmp, CWD, &d.c_path).map_err(|e| {
                unlink(&d.c_tmp);
                errno(e)
            })
        }
        // The file system has no O_TMPFILE: a named temporary, removed on failure.
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
            let named = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(CWD, &d.c_tmp, named, Mode::from_raw_mode(0o644))
                .map_err(errno)?;
            let r = finish(fd.as_fd());
            drop(fd);
            r.and_then(|()| rustix::fs::renameat(CWD, &d.c_tmp, CWD, &d.c_path).map_err(errno))
                .inspect_err(|_| unlink(&d.c_tmp))
        }
        // The directory itself refuses (read-only, missing, not ours): no named file would do.
        Err(e) => Err(errno(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory of this test's own (rsd has no tempfile), removed at the end.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!("rsd-atomic-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A FIFO at `dir/name`, and a thread reading it to the end.
    fn fifo(dir: &Path, name: &str) -> (PathBuf, std::thread::JoinHandle<Vec<u8>>) {
        let p = dir.join(name);
        rustix::fs::mknodat(CWD, &p, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let q = p.clone();
        let reader = std::thread::spawn(move || std::fs::read(&q).unwrap());
        (p, reader)
    }

    fn is_fifo(p: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(p).unwrap().file_type().is_fifo()
    }

    #[test]
    fn a_fifo_is_written_in_place_not_replaced() {
        let s = Scratch::new("fifo");
        let (p, reader) = fifo(s.path(), "out");
        write(&p, b"whole").unwrap();
        // Asked first: had the FIFO been replaced, the reader would wait for a writer forever.
        assert!(is_fifo(&p), "the FIFO was replaced by a file");
        assert_eq!(reader.join().unwrap(), b"whole");
        assert_eq!(names(s.path()), ["out"]);
        let (p, reader) = fifo(s.path(), "raw");
        let d = Dest::new(p.to_str().unwrap()).unwrap();
        put(&d, b"raw bytes", true, None).unwrap();
        assert!(is_fifo(&p), "put replaced the FIFO by a file");
        assert_eq!(reader.join().unwrap(), b"raw bytes");
        assert_eq!(names(s.path()), ["out", "raw"]);
    }

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
        let t = Dest::new("x/y/a.iotrex").unwrap();
        let t = t.c_tmp.to_str().unwrap();
        assert!(t.starts_with("x/y/.a.iotrex."), "{t}");
        assert!(is_temporary(t.rsplit('/').next().unwrap()), "{t}");
    }

    #[test]
    fn put_is_whole_or_nothing() {
        let d = Scratch::new("put");
        let p = d.path().join("t.iotrex").display().to_string();
        let dest = Dest::new(&p).unwrap();
        put(&dest, b"first", true, None).unwrap();
        put(&dest, b"second", false, None).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        // A directory in the way: an error, and nothing left beside it.
        let q = d.path().join("sub");
        std::fs::create_dir(&q).unwrap();
        let e = put(
            &Dest::new(&q.display().to_string()).unwrap(),
            b"x",
            true,
            None,
        );
        assert_eq!(e, Err(Errno::ISDIR.raw_os_error()));
        assert_eq!(names(d.path()), ["sub", "t.iotrex"]);
    }

    #[test]
    fn whole_or_previous() {
        let d = Scratch::new("whole");
        let p = d.path().join("out.bin");
        write(&p, b"first").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        // A writer that fails half-way (dropped without commit): the previous file stays,
        // and no temporary file is left.
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(&[7u8; 1 << 20]).unwrap();
            f.flush().unwrap();
            assert_eq!(
                names(d.path()).len(),
                2,
                "the temporary file exists while writing"
            );
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(names(d.path()), ["out.bin"]);
        write(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(names(d.path()), ["out.bin"]);
    }

    #[test]
    fn missing_directory_names_the_problem() {
        let d = Scratch::new("missing");
        let e = write(&d.path().join("no/such/out"), b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(write(Path::new("/"), b"x").is_err());
    }
}
