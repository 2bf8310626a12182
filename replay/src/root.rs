//! Confines every traced path inside the replay root.
//!
//! Absolute and relative paths both land under the root (`/data/x` and `data/x` become
//! `ROOT/data/x`). `..` in a traced path is resolved lexically and cannot climb above the root.
//!
//! The mapped path is then resolved by the kernel relative to a descriptor of the root, never
//! checked by name and used by name afterwards (that raced: a symlink swapped in between the
//! check and the open led the open out of the root). Where the kernel has it (Linux 5.6),
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` opens the parent directory in one call;
//! otherwise, and whenever it refuses (an absolute symlink, which RESOLVE_BENEATH never
//! follows), the path is walked component by component with `openat(O_NOFOLLOW)`, each
//! symlink met read with `readlinkat` on the directory held open and followed only while it
//! stays inside the root (an absolute one only if it names the root's own path). The call
//! itself then acts on the last component relative to that directory's descriptor
//! ([`Mapped`]): opened with `O_NOFOLLOW`, removed with `unlinkat`, created with `mkdirat`.
//! A last component that is neither a regular file nor a directory (a FIFO, a socket, a
//! device node) is refused: writing it would move the replay's bytes somewhere else.

use crate::error::ReplayError;
use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most symlinks one resolution follows (the kernel's own limit, MAXSYMLINKS).
const MAX_LINKS: u32 = 40;

/// How often a component that changed under the walk (created, removed or swapped by someone
/// else between two calls) is tried again before the walk gives up.
const MAX_RETRIES: u32 = 64;

/// Whether `openat2` is usable (cleared at the first ENOSYS or EPERM: an old kernel, or a
/// seccomp filter that does not know it).
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// The replay root: its canonical path and a descriptor every traced path is resolved from.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    fd: Arc<OwnedFd>,
    /// Whether `/proc/self/fd/N` reaches the directory of descriptor N (see
    /// [`Mapped::kernel_path`]).
    proc_fd: bool,
}

/// A traced path resolved inside the root: the directory holding its last component, held
/// open, and that component. Calls on it act relative to the descriptor, so nothing renamed
/// or swapped in the root afterwards can lead them out.
#[derive(Debug, Clone)]
pub struct Mapped {
    /// The lexical mapping (`ROOT/data/x`): for messages and as the file's name in tables.
    path: PathBuf,
    dir: Arc<OwnedFd>,
    /// One component, or `.` when the path is a directory reached through `..` or a symlink.
    leaf: CString,
    proc_fd: bool,
}

fn cstr(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte"))
}

/// The flags of a directory held open to resolve names from.
fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// `openat2(dir, rel, O_PATH | O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: `rel`'s
/// directory, reached without leaving `dir` (the kernel refuses `..` above it, absolute
/// symlinks and symlinks that lead out, and checks for renames racing the walk). None when
/// the kernel cannot do it here.
fn openat2_beneath(dir: &OwnedFd, rel: &CString) -> Option<Result<OwnedFd, Errno>> {
    if !OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let r = rustix::fs::openat2(
        dir,
        rel.as_c_str(),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    );
    if let Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG) = r {
        OPENAT2.store(false, Ordering::Relaxed);
        return None;
    }
    Some(r)
}

/// What the walk does with a last component that is a symlink.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Resolve it (open, stat, MPI-IO names).
    Follow,
    /// Act on the link itself (unlink, rmdir, mkdir).
    Entry,
}

fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "not a regular file",
    }
}

fn file_type(st: &rustix::fs::Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

impl Root {
    /// Checks that `dir` exists, is a directory and is writable, canonicalises it and opens it.
    pub fn new(dir: &Path) -> Result<Root, ReplayError> {
        let err = |why: String| ReplayError::Root {
            path: dir.to_path_buf(),
            why,
        };
        let meta = std::fs::metadata(dir).map_err(|e| err(format!("{e} (create it first)")))?;
        if !meta.is_dir() {
            return Err(err("not a directory".into()));
        }
        let canon = dir
            .canonicalize()
            .map_err(|e| err(format!("cannot resolve: {e}")))?;
        let fd = rustix::fs::openat(CWD, &canon, dir_flags(), Mode::empty())
            .map_err(|e| err(format!("cannot open: {e}")))?;
        // Probe by creating a file: permission bits do not tell the whole story (root, ACLs,
        // read-only mounts).
        let probe = format!(".iotrex-replay-probe-{}", std::process::id());
        rustix::fs::openat(
            &fd,
            probe.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::ROFS {
                ReplayError::RootReadOnly {
                    path: dir.to_path_buf(),
                }
            } else {
                err(format!("not writable: {e}"))
            }
        })?;
        rustix::fs::unlinkat(&fd, probe.as_str(), AtFlags::empty())
            .map_err(|e| err(e.to_string()))?;
        let proc_fd =
            std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.ino() == meta.ino() && m.dev() == meta.dev()
            });
        Ok(Root {
            dir: canon,
            fd: Arc::new(fd),
            proc_fd,
        })
    }

    /// Writes back the file system the root is on (`syncfs`): a traced `sync` wrote back
    /// every file system, of which the replay's storage is the one under the root.
    pub fn syncfs(&self) -> io::Result<()> {
        // The held descriptor is O_PATH, which syncfs does not take.
        let d = rustix::fs::openat(
            &*self.fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(rustix::fs::syncfs(d)?)
    }

    /// The canonical root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The lexical mapping of a traced path under the root: leading `/` dropped, `.` removed,
    /// `..` popping a component but never above the root.
    pub fn lexical(&self, traced: &str) -> PathBuf {
        let mut p = self.dir.clone();
        p.extend(Self::parts(traced));
        p
    }

    fn parts(traced: &str) -> Vec<&OsStr> {
        let mut parts: Vec<&OsStr> = Vec::new();
        for c in Path::new(traced).components() {
            match c {
                Component::Normal(p) => parts.push(p),
                Component::ParentDir => {
                    parts.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        parts
    }

    /// Maps a traced path for use, following a symlink at its end (as open and stat do). With
    /// `create_parents`, missing parent directories are created, one level at a time relative
    /// to the directory above. Errors: [`ReplayError::Escape`] or [`ReplayError::NotRegular`]
    /// when the path leads out of the root or onto a special file (the replay must stop),
    /// [`ReplayError::Path`] when the file system answers otherwise (a missing parent: the
    /// call fails as it would have).
    pub fn map(&self, traced: &str, create_parents: bool) -> Result<Mapped, ReplayError> {
        self.resolve(traced, create_parents, Last::Follow)
    }

    /// As [`Root::map`], but a symlink at the end is the entry acted on (unlink, rmdir, mkdir
    /// name the link, not its target).
    pub fn map_entry(&self, traced: &str, create_parents: bool) -> Result<Mapped, ReplayError> {
        self.resolve(traced, create_parents, Last::Entry)
    }

    /// As [`Root::map`] for the name of an MPI-IO file: ROMIO's file-system prefix (`ufs:`,
    /// `lustre:`, ...) is not part of the path, and is dropped before mapping.
    pub fn map_mpi(&self, traced: &str, create_parents: bool) -> Result<Mapped, ReplayError> {
        self.map(rsd::mpi::strip_fs_prefix(traced), create_parents)
    }

    fn resolve(
        &self,
        traced: &str,
        create_parents: bool,
        last: Last,
    ) -> Result<Mapped, ReplayError> {
        let parts = Self::parts(traced);
        let path = self.lexical(traced);
        let io_err = |error: io::Error| ReplayError::Path {
            traced: traced.to_string(),
            mapped: path.clone(),
            error,
        };
        let (dir, leaf) = match self.fast(&parts, last) {
            Some(found) => found,
            None => self.walk(&parts, create_parents, last, traced, &path)?,
        };
        let leaf = cstr(&leaf).map_err(io_err)?;
        Ok(Mapped {
            path,
            dir,
            leaf,
            proc_fd: self.proc_fd,
        })
    }

    /// The parent by `openat2` and a plain last component: None whenever the walk must decide
    /// (no openat2, a missing parent, a symlink on the way the kernel would not follow, a
    /// symlink or a special file at the end).
    fn fast(&self, parts: &[&OsStr], last: Last) -> Option<(Arc<OwnedFd>, OsString)> {
        let (leaf, parents) = parts.split_last()?;
        let dir = if parents.is_empty() {
            self.fd.clone()
        } else {
            let rel: PathBuf = parents.iter().collect();
            let rel = cstr(rel.as_os_str()).ok()?;
            Arc::new(openat2_beneath(&self.fd, &rel)?.ok()?)
        };
        let name = cstr(leaf).ok()?;
        let plain = match rustix::fs::statat(&*dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match file_type(&st) {
                FileType::RegularFile | FileType::Directory => true,
                FileType::Symlink => last == Last::Entry,
                _ => false,
            },
            Err(e) => e == Errno::NOENT,
        };
        plain.then(|| (dir, leaf.to_os_string()))
    }

    /// The component-by-component resolution (see the module's comment): a stack of
    /// directories held open, from the root down; `..` (from a symlink's target) pops one and
    /// never the root itself.
    fn walk(
        &self,
        parts: &[&OsStr],
        create_parents: bool,
        last_is: Last,
        traced: &str,
        mapped: &Path,
    ) -> Result<(Arc<OwnedFd>, OsString), ReplayError> {
        let io_err = |error: io::Error| ReplayError::Path {
            traced: traced.to_string(),
            mapped: mapped.to_path_buf(),
            error,
        };
        let escape = |resolved: PathBuf| ReplayError::Escape {
            root: self.dir.clone(),
            traced: traced.to_string(),
            resolved,
        };
        let mut stack: Vec<Arc<OwnedFd>> = vec![self.fd.clone()];
        // Where the walk is, for messages: the root's path plus the components taken.
        let mut here: Vec<OsString> = Vec::new();
        let mut todo: VecDeque<OsString> = parts.iter().map(|p| p.to_os_string()).collect();
        let (mut links, mut retries) = (0, 0);
        let mut retry = |todo: &mut VecDeque<OsString>, c: OsString| {
            retries += 1;
            todo.push_front(c);
            if retries > MAX_RETRIES {
                Err(io_err(io::Error::other(
                    "the directory kept changing during the replay's resolution",
                )))
            } else {
                Ok(())
            }
        };
        while let Some(c) = todo.pop_front() {
            if c == ".." {
                if stack.len() == 1 {
                    let mut out = self.dir.clone();
                    out.push("..");
                    out.extend(todo.iter());
                    return Err(escape(out));
                }
                stack.pop();
                here.pop();
                continue;
            }
            if c.is_empty() || c == "." {
                continue;
            }
            let last = todo.is_empty();
            let top = stack.last().expect("the root stays").clone();
            let name = cstr(&c).map_err(&io_err)?;
            let st = match rustix::fs::statat(&*top, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => {
                    if last {
                        return Ok((top, c));
                    }
                    if !create_parents {
                        return Err(io_err(Errno::NOENT.into()));
                    }
                    match rustix::fs::mkdirat(&*top, &name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(io_err(e.into())),
                    }
                    retry(&mut todo, c)?;
                    continue;
                }
                Err(e) => return Err(io_err(e.into())),
            };
            match file_type(&st) {
                FileType::Symlink if !last || last_is == Last::Follow => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(io_err(Errno::LOOP.into()));
                    }
                    let target = match rustix::fs::readlinkat(&*top, &name, Vec::new()) {
                        Ok(t) => PathBuf::from(OsString::from_vec(t.into_bytes())),
                        // No longer a symlink: look again.
                        Err(Errno::INVAL) => {
                            retry(&mut todo, c)?;
                            continue;
                        }
                        Err(e) => return Err(io_err(e.into())),
                    };
                    let rest = if target.is_absolute() {
                        // Only a link naming the root's own path stays inside: it restarts
                        // from the root.
                        let Ok(rest) = target.strip_prefix(&self.dir) else {
                            return Err(escape(target));
                        };
                        stack.truncate(1);
                        here.clear();
                        rest.to_path_buf()
                    } else {
                        target
                    };
                    for comp in rest.components().rev() {
                        match comp {
                            Component::Normal(p) => todo.push_front(p.to_os_string()),
                            Component::ParentDir => todo.push_front("..".into()),
                            _ => {}
                        }
                    }
                }
                FileType::Directory if !last => {
                    match rustix::fs::openat(&*top, &name, dir_flags(), Mode::empty()) {
                        Ok(fd) => {
                            stack.push(Arc::new(fd));
                            here.push(c);
                        }
                        // Swapped for a symlink or removed since the stat: look again.
                        Err(Errno::NOTDIR | Errno::LOOP | Errno::NOENT) => {
                            retry(&mut todo, c)?;
                        }
                        Err(e) => return Err(io_err(e.into())),
                    }
                }
                _ if !last => return Err(io_err(Errno::NOTDIR.into())),
                FileType::RegularFile | FileType::Directory | FileType::Symlink => {
                    return Ok((top, c));
                }
                t => {
                    let mut at = self.dir.clone();
                    at.extend(here.iter());
                    at.push(&c);
                    return Err(ReplayError::NotRegular {
                        root: self.dir.clone(),
                        traced: traced.to_string(),
                        found: at,
                        what: type_name(t),
                    });
                }
            }
        }
        // The path ends on a directory reached through `..` or a symlink (or is the root).
        let top = stack.pop().expect("the root stays");
        Ok((top, ".".into()))
    }
}

impl Mapped {
    /// The lexical mapping of the traced path (`ROOT/data/x`), for messages and tables.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file with the `open(2)` `flags` and `mode`, never through a symlink at its
    /// end, and only if it is a regular file or a directory (a special file swapped in after
    /// the mapping is closed unused).
    pub fn open(&self, flags: i32, mode: u32) -> io::Result<File> {
        let flags = OFlags::from_bits_retain(flags as u32);
        // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader before the
        // check below could refuse it.
        let fd = rustix::fs::openat(
            &*self.dir,
            self.leaf.as_c_str(),
            flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        let t = file_type(&rustix::fs::fstat(&fd)?);
        if t != FileType::RegularFile && t != FileType::Directory {
            return Err(io::Error::other(format!(
                "{} is {}, refusing to use it",
                self.path.display(),
                type_name(t)
            )));
        }
        if !flags.contains(OFlags::NONBLOCK) {
            let now = rustix::fs::fcntl_getfl(&fd)?;
            rustix::fs::fcntl_setfl(&fd, now - OFlags::NONBLOCK)?;
        }
        Ok(File::from(fd))
    }

    /// Removes the file (`unlink`), or the link if the path ends on one.
    pub fn unlink(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            &*self.dir,
            self.leaf.as_c_str(),
            AtFlags::empty(),
        )?)
    }

    /// Removes the directory (`rmdir`).
    pub fn rmdir(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            &*self.dir,
            self.leaf.as_c_str(),
            AtFlags::REMOVEDIR,
        )?)
    }

    /// Creates the directory (`mkdir`, mode 0777 less the umask).
    pub fn mkdir(&self) -> io::Result<()> {
        Ok(rustix::fs::mkdirat(
            &*self.dir,
            self.leaf.as_c_str(),
            Mode::from_raw_mode(0o777),
        )?)
    }

    /// The file's size and type (`stat`, of the file the mapping resolved to).
    pub fn stat(&self) -> io::Result<rustix::fs::Stat> {
        Ok(rustix::fs::statat(
            &*self.dir,
            self.leaf.as_c_str(),
            AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }

    /// A name for a library that removes a file by name (`MPI_File_delete`):
    /// `/proc/self/fd/N/leaf`, where N is the directory this mapping holds open, so the name
    /// reaches that directory whatever was renamed or swapped above it; it stays valid while
    /// this `Mapped` (or a clone) lives. Removing never follows a symlink at the last
    /// component, so this is race-free for a removal; a library that *opens* by name is given
    /// [`Mapped::pin`]'s name instead. Without `/proc`, the lexical path: resolved inside the
    /// root when mapped, but by name.
    pub fn kernel_path(&self) -> PathBuf {
        if self.proc_fd {
            let mut p = PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()));
            p.push(OsStr::from_bytes(self.leaf.as_bytes()));
            p
        } else {
            self.path.clone()
        }
    }

    /// Opens the file for a library that opens files by name (MPI-IO): first here, confined
    /// as [`Mapped::open`] does (never through a symlink at its end, only a regular file),
    /// with `O_CREAT` when `create`, for reading only when `read_only`; the library is then
    /// given [`Pinned::kernel_path`], `/proc/self/fd/M` of that open file. Opening that name
    /// reopens the very file M refers to (the kernel follows the descriptor, not a path), so
    /// nothing swapped into the directory after this open, a symlink included, can change
    /// what the library opens: the check and the use are the same open. Without `/proc` the
    /// name is the lexical path (by name, as before).
    pub fn pin(&self, create: bool, read_only: bool) -> io::Result<Pinned> {
        let mut flags = if read_only {
            libc::O_RDONLY
        } else {
            libc::O_RDWR
        };
        if create {
            flags |= libc::O_CREAT;
        }
        let file = self.open(flags, 0o666)?;
        Ok(Pinned {
            name: if self.proc_fd {
                PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
            } else {
                self.path.clone()
            },
            _file: file,
        })
    }
}

/// A file opened inside the root for a library that opens by name ([`Mapped::pin`]); the name
/// stays valid while this lives (ROMIO opens the file again later on the ranks that are not
/// aggregators: its deferred open).
#[derive(Debug)]
pub struct Pinned {
    _file: File,
    name: PathBuf,
}

impl Pinned {
    /// The name to give the library: `/proc/self/fd/M` of the file opened.
    pub fn kernel_path(&self) -> &Path {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_mapping_stays_inside() {
        let d = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        let base = r.dir().to_path_buf();
        assert_eq!(r.lexical("/etc/passwd"), base.join("etc/passwd"));
        assert_eq!(r.lexical("out/f"), base.join("out/f"));
        assert_eq!(r.lexical("../../../etc/x"), base.join("etc/x"));
        assert_eq!(r.lexical("/a/../../b/./c"), base.join("b/c"));
        assert_eq!(r.lexical("a/b/../../.."), base);
    }

    #[test]
    fn symlink_out_of_root_is_refused_and_inside_is_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("evil")).unwrap();
        let e = r.map("evil/x", true).unwrap_err();
        assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
        let e = r.map("/evil/deeper/x", true).unwrap_err();
        assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
        assert!(!outside.path().join("deeper").exists());
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::os::unix::fs::symlink(d.path().join("real"), d.path().join("good")).unwrap();
        assert!(r.map("good/x", true).is_ok());
        std::os::unix::fs::symlink("/nonexistent/target", d.path().join("dangling")).unwrap();
        assert!(r.map("dangling", true).is_err());
    }

    /// Both resolutions (openat2 and the walk) give the same answers: relative links inside
    /// followed, `..` in a link's target above the root refused, links at the end followed or
    /// not as asked, special files refused.
    #[test]
    fn walk_agrees_with_openat2() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        let base = d.path();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::os::unix::fs::symlink("a/b", base.join("rel")).unwrap();
        std::os::unix::fs::symlink("../../..", base.join("a/b/up")).unwrap();
        std::os::unix::fs::symlink("../x", base.join("a/tofile")).unwrap();
        std::os::unix::fs::symlink(outside.path(), base.join("a/out")).unwrap();
        rustix::fs::mknodat(
            CWD,
            base.join("a/fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        for openat2 in [true, false] {
            OPENAT2.store(openat2, Ordering::Relaxed);
            let m = r.map("rel/f", true).unwrap();
            m.open(libc::O_CREAT | libc::O_WRONLY, 0o644).unwrap();
            assert!(base.join("a/b/f").is_file(), "openat2 {openat2}");
            let e = r.map("a/b/up/x", true).unwrap_err();
            assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
            let e = r.map("a/out/x", true).unwrap_err();
            assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
            let e = r.map("a/out", false).unwrap_err();
            assert!(matches!(e, ReplayError::Escape { .. }), "{e}");
            // The link itself is inside: unlinking it is.
            r.map_entry("a/out", false).unwrap();
            let e = r.map("a/fifo", false).unwrap_err();
            assert!(matches!(e, ReplayError::NotRegular { .. }), "{e}");
            let m = r.map("a/tofile", true).unwrap();
            m.open(libc::O_CREAT | libc::O_WRONLY, 0o644).unwrap();
            assert!(base.join("x").is_file());
            let e = r.map("missing/x", false).unwrap_err();
            assert!(matches!(e, ReplayError::Path { .. }), "{e}");
            std::fs::remove_file(base.join("a/b/f")).unwrap();
            std::fs::remove_file(base.join("x")).unwrap();
        }
        OPENAT2.store(true, Ordering::Relaxed);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn bad_roots() {
        let d = tempfile::tempdir().unwrap();
        let e = Root::new(&d.path().join("missing")).unwrap_err();
        assert!(e.to_string().starts_with("--root "), "{e}");
        let f = d.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        assert!(
            Root::new(&f)
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
    }
}
