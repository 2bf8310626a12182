//! The replay's POSIX and stdio side: the files a rank opened through the OS, and each call
//! issued on them (the kernel keeps their offsets, as it did for the application).

use crate::direct::Align;
use crate::pattern::Pattern;
use crate::root::Mapped;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use rustix::fs::OFlags;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

/// A stdio stream: a file plus a write-behind buffer the size of glibc's default, so the
/// calls that reach the file system are the ones stdio would make.
#[derive(Debug)]
struct Stream {
    file: File,
    buf: Vec<u8>,
}

const STDIO_BUF: usize = 4096;

impl Stream {
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        if self.buf.len() + data.len() > STDIO_BUF {
            self.flush()?;
        }
        if data.len() >= STDIO_BUF {
            self.file.write_all(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Reads exactly `n` bytes or up to end of file; returns the count read.
fn read_up_to(
    mut f: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
    buf: &mut [u8],
) -> std::io::Result<u64> {
    let mut got = 0;
    while got < buf.len() {
        match f(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got as u64)
}

/// The open file an event's `fd` parameter names. A free function so that a write can borrow
/// the descriptor table and the pattern buffer at once.
fn fd_in<'f>(fds: &'f mut HashMap<i64, File>, e: &FlatEvent) -> Result<&'f mut File, String> {
    let id = e.p(Param::Fd);
    fds.get_mut(&id).ok_or_else(|| {
        format!(
            "{}: descriptor {id} is not open (its open was not replayed)",
            e.op.name()
        )
    })
}

/// The open stream an event's `stream` parameter names (a free function for the same reason
/// as [`fd_in`]).
fn stream_in<'s>(
    streams: &'s mut HashMap<i64, Stream>,
    e: &FlatEvent,
) -> Result<&'s mut Stream, String> {
    let id = e.p(Param::Stream);
    streams.get_mut(&id).ok_or_else(|| {
        format!(
            "{}: stream {id} is not open (its fopen was not replayed)",
            e.op.name()
        )
    })
}

/// How a call resolves its traced path in the root (see [`crate::Root`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolve {
    /// The file a path names, its missing parents created (open, fopen).
    Create,
    /// The file a path names, as it is (stat, access).
    Existing,
    /// The entry itself, a symlink not followed (unlink, rmdir).
    Entry,
    /// The entry itself, its missing parents created (mkdir).
    NewEntry,
}

/// Maps an event's traced path in the root, or says why not.
pub(crate) type MapPath<'a> = dyn FnMut(&FlatEvent, Resolve) -> Result<Mapped, String> + 'a;

/// One rank's descriptors and streams, by traced id.
#[derive(Debug, Default)]
pub(crate) struct Local {
    pub(crate) fds: HashMap<i64, File>,
    streams: HashMap<i64, Stream>,
    /// This rank's read buffer (see [`Pattern::trim_read_buf`]).
    rbuf: Vec<u8>,
    /// The descriptors whose open file has O_DIRECT set, and the alignment their transfers
    /// need (see [`crate::direct`]).
    direct: HashMap<i64, Align>,
    /// The aligned buffer of direct transfers, over-allocated by the alignment.
    dbuf: Vec<u8>,
    /// Traced O_DIRECT transfers this rank issued through the page cache, and why the first
    /// was.
    pub(crate) buffered_direct: (u64, Option<String>),
}

impl Local {
    /// Closes every stream (flushing its buffer) and descriptor.
    pub(crate) fn close_all(&mut self) {
        self.streams.clear();
        self.fds.clear();
        self.direct.clear();
    }

    /// Counts a traced O_DIRECT transfer replayed through the page cache.
    fn buffered(&mut self, why: impl FnOnce() -> String) {
        let (n, first) = &mut self.buffered_direct;
        *n += 1;
        if first.is_none() {
            *first = Some(why());
        }
    }

    /// Notes whether descriptor `id`'s open file has O_DIRECT set now, and the alignment its
    /// transfers then need. A descriptor's copies share its open file, so all are looked at.
    fn refresh_direct(&mut self) {
        self.direct = self
            .fds
            .iter()
            .filter_map(|(&id, f)| crate::direct::of(f).map(|a| (id, a)))
            .collect();
    }

    fn fd(&mut self, e: &FlatEvent) -> Result<&mut File, String> {
        fd_in(&mut self.fds, e)
    }

    fn stream(&mut self, e: &FlatEvent) -> Result<&mut Stream, String> {
        stream_in(&mut self.streams, e)
    }

    /// Issues a POSIX or stdio call with the replay's write data `data`; `map_path` maps a
    /// traced path under the root. Returns the bytes it moved.
    pub(crate) fn issue(
        &mut self,
        e: &FlatEvent,
        data: &mut Pattern,
        map_path: &mut MapPath,
        root: &crate::Root,
    ) -> Result<u64, String> {
        match e.op {
            op if op.opens_descriptor() => self.open(e, map_path),
            Op::Close => {
                let id = e.p(Param::Fd);
                self.fds.remove(&id);
                self.direct.remove(&id);
                Ok(0)
            }
            Op::Dup => self.dup(e),
            Op::Write
            | Op::Writev
            | Op::Pwrite
            | Op::Pwritev
            | Op::Msync
            | Op::Munmap
            | Op::Read
            | Op::Readv
            | Op::Pread
            | Op::Preadv => self.transfer(e, data),
            Op::Lseek | Op::Fsync | Op::Fdatasync | Op::Ftruncate => self.descriptor(e),
            Op::Fadvise | Op::Readahead | Op::SyncFileRange | Op::Syncfs | Op::Madvise => {
                self.cache(e)
            }
            Op::Sync => root
                .syncfs()
                .map(|()| 0)
                .map_err(|er| io(e, &root.dir().display().to_string(), er)),
            Op::Unlink | Op::Mkdir | Op::Rmdir | Op::Stat | Op::Access => {
                metadata(e, map_path);
                Ok(0)
            }
            // F_SETFL sets the flags recorded after its fixed parameters (O_DIRECT among them);
            // fcntl's other effects (locks, descriptor flags) are not recorded beyond their
            // command.
            Op::Fcntl => self.setfl(e),
            Op::Fopen | Op::Fdopen => self.open_stream(e, map_path),
            Op::Fclose | Op::Fwrite | Op::Fprintf | Op::Fread | Op::Fseek | Op::Fflush => {
                self.stdio(e, data)
            }
            // Not replayed, issuing nothing: the other recorded metadata calls (rename, link,
            // symlink, fstat, fstatat, statx, opendir/readdir/closedir, truncate, fallocate,
            // mmap; their data, if any, is in the reads and writes recorded with them), and
            // the calls only the MPI runtime issues.
            _ => Ok(0),
        }
    }

    /// `open`, `openat`, `creat`: the traced path opened in the root under the traced id.
    fn open(&mut self, e: &FlatEvent, map_path: &mut MapPath) -> Result<u64, String> {
        let (flags, mode) = if e.op == Op::Creat {
            (
                libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                e.p(Param::Mode),
            )
        } else {
            (e.p(Param::Flags) as i32, e.p(Param::Mode))
        };
        let id = e.p(Param::Fd);
        if id < 0 {
            // The traced open failed: nothing to replay.
            return Ok(0);
        }
        let path = map_path(e, Resolve::Create)?;
        // The file was opened successfully in the trace, so it is created if it is missing
        // (--prep gives it its recorded size). O_DIRECT, O_SYNC and O_DSYNC are kept: they
        // decide whether the device or the page cache serves the file.
        let flags = flags | libc::O_CREAT;
        let mode = if mode > 0 { mode as u32 } else { 0o644 };
        let f = match path.open(flags, mode) {
            // A file system without direct I/O (tmpfs before Linux 6.6) refuses O_DIRECT at
            // the open: the file is opened through the page cache, and that is said.
            Err(er) if flags & libc::O_DIRECT != 0 && er.raw_os_error() == Some(libc::EINVAL) => {
                let f = path.open(flags & !libc::O_DIRECT, mode);
                let p = path.path().display().to_string();
                self.buffered(|| format!("open {p}: this file system refuses O_DIRECT ({er})"));
                f
            }
            r => r,
        }
        .map_err(|er| io(e, &path.path().display().to_string(), er))?;
        if flags & libc::O_DIRECT != 0
            && let Some(a) = crate::direct::of(&f)
        {
            self.direct.insert(id, a);
        }
        self.fds.insert(id, f);
        Ok(0)
    }

    /// `fcntl(F_SETFL)` with the flags the trace recorded after its fixed parameters (none in
    /// older traces, and for the other commands): the ones Linux lets it change that decide
    /// where data goes or is written (O_APPEND, O_DIRECT, O_NOATIME; not O_ASYNC's signals or
    /// O_NONBLOCK, which regular files ignore).
    fn setfl(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let Some(&[fl]) = e.op.array_values(&e.params, "setfl") else {
            return Ok(0);
        };
        if e.p(Param::Cmd) != libc::F_SETFL as i64 || e.p(Param::Ret) < 0 {
            return Ok(0);
        }
        let keep = OFlags::APPEND | OFlags::DIRECT | OFlags::NOATIME;
        let want = OFlags::from_bits_retain(fl as u32) & keep;
        let f = self.fd(e)?;
        let now = rustix::fs::fcntl_getfl(&*f).map_err(|er| io(e, "", er.into()))?;
        rustix::fs::fcntl_setfl(&*f, (now - keep) | want).map_err(|er| io(e, "", er.into()))?;
        self.refresh_direct();
        Ok(0)
    }

    /// The calls that decide what the page cache holds and when data reaches the device,
    /// issued for real: `posix_fadvise`, `readahead` (since Linux 5.x the kernel's readahead
    /// *is* fadvise(WILLNEED) on a regular file), `sync_file_range`, `syncfs`, and `madvise`
    /// of a mapping as the fadvise of its file range that has the same effect on the cache
    /// ([`crate::direct::madvise_as_fadvise`]: the replay maps no files).
    fn cache(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let ok = e.p(Param::Ret) == 0;
        let off = e.p(Param::Offset).max(0) as u64;
        let f = self.fd(e)?;
        let r: std::io::Result<()> = match e.op {
            // A call that failed when traced changed nothing.
            _ if !ok => Ok(()),
            Op::Fadvise => match crate::direct::advice(e.p(Param::Advice)) {
                Some(a) => fadvise(f, off, e.p(Param::Length), a),
                None => {
                    return Err(format!(
                        "{}: unknown advice {}",
                        e.op.name(),
                        e.p(Param::Advice)
                    ));
                }
            },
            Op::Readahead => fadvise(f, off, e.p(Param::Count), rustix::fs::Advice::WillNeed),
            Op::Madvise => match crate::direct::madvise_as_fadvise(e.p(Param::Advice)) {
                Some(a) => fadvise(f, off, e.p(Param::Length), a),
                None => Ok(()),
            },
            Op::SyncFileRange => crate::direct::sync_file_range(
                f,
                off,
                e.p(Param::Length).max(0) as u64,
                e.p(Param::Flags) as u32,
            ),
            _ => rustix::fs::syncfs(&*f).map_err(Into::into),
        };
        r.map_err(|er| io(e, "", er))?;
        Ok(0)
    }

    /// A descriptor copy (dup, dup2, dup3, F_DUPFD): the same open file under another id,
    /// sharing its offset as the original's did (`try_clone` is dup(2)). A dup2 onto a traced
    /// descriptor closed that one first.
    fn dup(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let closed = e.p(Param::Closed);
        if closed >= 0 {
            self.fds.remove(&closed);
        }
        let new = e.p(Param::Newfd);
        if new >= 0 {
            let f = fd_in(&mut self.fds, e)?
                .try_clone()
                .map_err(|er| io(e, "", er))?;
            self.fds.insert(new, f);
            // The copy shares the open file, O_DIRECT included.
            match self.direct.get(&e.p(Param::Fd)).copied() {
                Some(a) => self.direct.insert(new, a),
                None => self.direct.remove(&new),
            };
        }
        Ok(0)
    }

    /// The data calls on a descriptor: writes of `data`, reads into the rank's read buffer,
    /// at the kernel's offset or an explicit one. Returns the bytes moved.
    fn transfer(&mut self, e: &FlatEvent, data: &mut Pattern) -> Result<u64, String> {
        if let Some(&a) = self.direct.get(&e.p(Param::Fd)) {
            return self.transfer_direct(e, data, a);
        }
        self.transfer_buffered(e, data)
    }

    /// A transfer on a descriptor with O_DIRECT: through an aligned buffer when its offset
    /// and size are aligned as this file system needs, else (or for a mapping's bytes, which
    /// went through the page cache when traced) with O_DIRECT cleared for the call, counted.
    fn transfer_direct(
        &mut self,
        e: &FlatEvent,
        data: &mut Pattern,
        a: Align,
    ) -> Result<u64, String> {
        let write = e.op.dir() == rsd::op::Dir::Write;
        let f = fd_in(&mut self.fds, e)?;
        let positioned = e.op.index(Param::Offset).is_some();
        let off = if positioned {
            e.p(Param::Offset).max(0) as u64
        } else {
            f.stream_position().map_err(|er| io(e, "", er))?
        };
        // A read asks for `count`, which the program aligned; at the end of the file the
        // kernel returned less (`ret`), which is not aligned.
        let ret = size(e.p(Param::Ret));
        let n = match e.op.get(&e.params, Param::Count) {
            Some(c) if !write && !ret.is_multiple_of(a.offset) => size(c),
            _ => ret,
        };
        let mapped = matches!(e.op, Op::Msync | Op::Munmap);
        if mapped || !off.is_multiple_of(a.offset as u64) || !n.is_multiple_of(a.offset) {
            if !mapped {
                let name = e.op.name();
                self.buffered(|| {
                    format!(
                        "{name} of {n} bytes at offset {off}: not a multiple of this file \
                         system's direct I/O alignment ({} bytes)",
                        a.offset
                    )
                });
            }
            return self.without_direct(e, |s| s.transfer_buffered(e, data));
        }
        let buf = crate::direct::aligned(&mut self.dbuf, n, a.memory);
        let f = fd_in(&mut self.fds, e)?;
        let r = if write {
            buf.copy_from_slice(data.get(n));
            match positioned {
                true => f.write_all_at(buf, off),
                false => f.write_all(buf),
            }
            .map(|()| n as u64)
        } else {
            let mut pos = off;
            read_up_to(
                |b| {
                    let k = match positioned {
                        true => f.read_at(b, pos)?,
                        false => f.read(b)?,
                    };
                    pos += k as u64;
                    Ok(k)
                },
                buf,
            )
        };
        r.map_err(|er| io(e, "", er))
    }

    /// Runs `call` on descriptor `e.fd` with O_DIRECT cleared on its open file, then set again.
    fn without_direct(
        &mut self,
        e: &FlatEvent,
        call: impl FnOnce(&mut Self) -> Result<u64, String>,
    ) -> Result<u64, String> {
        let set = |s: &mut Self, on: bool| -> Result<(), String> {
            let f = s.fd(e)?;
            let now = rustix::fs::fcntl_getfl(&*f).map_err(|er| io(e, "", er.into()))?;
            let fl = if on {
                now | OFlags::DIRECT
            } else {
                now - OFlags::DIRECT
            };
            rustix::fs::fcntl_setfl(&*f, fl).map_err(|er| io(e, "", er.into()))
        };
        set(self, false)?;
        let r = call(self);
        set(self, true)?;
        r
    }

    /// The data calls through the page cache.
    fn transfer_buffered(&mut self, e: &FlatEvent, data: &mut Pattern) -> Result<u64, String> {
        let n = size(e.p(Param::Ret));
        let off = || e.p(Param::Offset).max(0) as u64;
        Ok(match e.op {
            // The buffer is borrowed, not copied: a copy per call sat between the lateness
            // stamp and the syscall and cost ~0.5 us per 8 KiB.
            Op::Write | Op::Writev => {
                fd_in(&mut self.fds, e)?
                    .write_all(data.get(n))
                    .map_err(|er| io(e, "", er))?;
                n as u64
            }
            // The bytes of a shared writable mapping, recorded where they reached the file;
            // an msync with MS_SYNC (its flags follow its fixed parameters) returned once they
            // were on the device, as fdatasync does.
            Op::Pwrite | Op::Pwritev | Op::Msync | Op::Munmap => {
                let f = fd_in(&mut self.fds, e)?;
                // What the program faulted in through the mapping before unmapping it.
                if let Some(&[t]) = e.op.array_values(&e.params, "touched")
                    && t > 0
                {
                    crate::mapping::fault_in(f, off(), t as u64).map_err(|er| io(e, "", er))?;
                }
                f.write_all_at(data.get(n), off())
                    .map_err(|er| io(e, "", er))?;
                let flags = e.op.array_values(&e.params, "flags");
                if e.op == Op::Msync
                    && let Some(&[fl]) = flags
                    && fl & libc::MS_SYNC as i64 != 0
                {
                    f.sync_data().map_err(|er| io(e, "", er))?;
                }
                n as u64
            }
            Op::Read | Op::Readv => {
                let fds = &mut self.fds;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    fd_in(fds, e)
                        .and_then(|f| read_up_to(|b| f.read(b), buf).map_err(|er| io(e, "", er)))
                })?
            }
            _ => {
                let fds = &mut self.fds;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    let f = fd_in(fds, e)?;
                    let mut pos = off();
                    read_up_to(
                        |b| {
                            let k = f.read_at(b, pos)?;
                            pos += k as u64;
                            Ok(k)
                        },
                        buf,
                    )
                    .map_err(|er| io(e, "", er))
                })?
            }
        })
    }

    /// The calls on a descriptor that move no data: `lseek`, `fsync`, `fdatasync`,
    /// `ftruncate`.
    fn descriptor(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let f = self.fd(e)?;
        let done = match e.op {
            Op::Lseek => {
                let off = e.p(Param::Offset);
                let from = match e.p(Param::Whence) {
                    0 => SeekFrom::Start(off.max(0) as u64),
                    1 => SeekFrom::Current(off),
                    2 => SeekFrom::End(off),
                    // SEEK_DATA/SEEK_HOLE: go where the traced call went.
                    _ => SeekFrom::Start(e.p(Param::Ret).max(0) as u64),
                };
                f.seek(from).map(drop)
            }
            Op::Fsync => f.sync_all(),
            Op::Fdatasync => f.sync_data(),
            _ => f.set_len(e.p(Param::Length).max(0) as u64),
        };
        done.map_err(|er| io(e, "", er))?;
        Ok(0)
    }

    /// `fopen` and `fdopen`: a stream under the traced id.
    fn open_stream(&mut self, e: &FlatEvent, map_path: &mut MapPath) -> Result<u64, String> {
        let id = e.p(Param::Stream);
        if id < 0 {
            return Ok(0);
        }
        let file = if e.op == Op::Fopen {
            let bits = e.p(Param::Mode);
            let path = map_path(e, Resolve::Create)?;
            // Opened read-write whatever the mode: stdio checks the mode in user space, and a
            // stream the trace shows writing is written. 'w' truncates, 'a' appends.
            let mut flags = libc::O_RDWR | libc::O_CREAT;
            if bits & rsd::op::fopen_mode::W != 0 {
                flags |= libc::O_TRUNC;
            }
            if bits & rsd::op::fopen_mode::A != 0 {
                flags |= libc::O_APPEND;
            }
            path.open(flags, 0o666)
                .map_err(|er| io(e, &path.path().display().to_string(), er))?
        } else {
            // A stream on a replayed descriptor: a copy of it (fdopen shares the open file).
            fd_in(&mut self.fds, e)?
                .try_clone()
                .map_err(|er| io(e, "", er))?
        };
        self.streams.insert(
            id,
            Stream {
                file,
                buf: Vec::new(),
            },
        );
        Ok(0)
    }

    /// The calls on an open stream: `fclose`, `fwrite`, `fprintf`, `fread`, `fseek`,
    /// `fflush`. Returns the bytes moved.
    fn stdio(&mut self, e: &FlatEvent, data: &mut Pattern) -> Result<u64, String> {
        let op = e.op;
        let fail = |er| io(e, "", er);
        Ok(match op {
            Op::Fclose => {
                if let Some(mut s) = self.streams.remove(&e.p(Param::Stream)) {
                    s.flush().map_err(fail)?;
                }
                0
            }
            Op::Fwrite | Op::Fprintf => {
                let n = op.data_bytes(&e.params) as usize;
                let data = data.get(n).to_vec();
                self.stream(e)?.write(&data).map_err(fail)?;
                n as u64
            }
            Op::Fread => {
                let n = op.data_bytes(&e.params) as usize;
                let streams = &mut self.streams;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    let s = stream_in(streams, e)?;
                    s.flush().map_err(fail)?;
                    read_up_to(|b| s.file.read(b), buf).map_err(fail)
                })?
            }
            Op::Fseek => {
                let off = e.p(Param::Offset);
                let from = match e.p(Param::Whence) {
                    1 => SeekFrom::Current(off),
                    2 => SeekFrom::End(off),
                    _ => SeekFrom::Start(off.max(0) as u64),
                };
                let s = self.stream(e)?;
                s.flush().map_err(fail)?;
                s.file.seek(from).map_err(fail)?;
                0
            }
            _ => {
                self.stream(e)?.flush().map_err(fail)?;
                0
            }
        })
    }
}

/// The metadata calls on a path (`unlink`, `mkdir`, `rmdir`, `stat`, `access`): their outcome
/// (a file missing or not, a parent missing) is the file system's answer; it is not a replay
/// failure. A path refused stops the replay all the same (`map_path` says so to the engine).
fn metadata(e: &FlatEvent, map_path: &mut MapPath) {
    let _ = match e.op {
        Op::Unlink => map_path(e, Resolve::Entry).map(|m| m.unlink()),
        Op::Mkdir => map_path(e, Resolve::NewEntry).map(|m| m.mkdir()),
        Op::Rmdir => map_path(e, Resolve::Entry).map(|m| m.rmdir()),
        _ => map_path(e, Resolve::Existing).map(|m| m.stat().map(drop)),
    };
}

/// `posix_fadvise` of `len` bytes from `off` (0: to the end of the file).
fn fadvise(f: &File, off: u64, len: i64, advice: rustix::fs::Advice) -> std::io::Result<()> {
    let len = std::num::NonZeroU64::new(len.max(0) as u64);
    Ok(rustix::fs::fadvise(f, off, len, advice)?)
}

/// An I/O error of call `e` on `what` (a path, or nothing for the call's descriptor).
fn io(e: &FlatEvent, what: &str, err: std::io::Error) -> String {
    format!("{} {what}: {err}", e.op.name())
}

/// A recorded byte count as a buffer length (a failed call's -1 moves nothing).
fn size(v: i64) -> usize {
    v.max(0) as usize
}
