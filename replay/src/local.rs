//! The replay's POSIX and stdio side: the files a rank opened through the OS, and each call
//! issued on them (the kernel keeps their offsets, as it did for the application).

use crate::pattern::Pattern;
use crate::root::Mapped;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
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
}

impl Local {
    /// Closes every stream (flushing its buffer) and descriptor.
    pub(crate) fn close_all(&mut self) {
        self.streams.clear();
        self.fds.clear();
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
    ) -> Result<u64, String> {
        match e.op {
            Op::Open | Op::Openat | Op::Creat => self.open(e, map_path),
            Op::Close => {
                self.fds.remove(&e.p(Param::Fd));
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
            Op::Unlink | Op::Mkdir | Op::Rmdir | Op::Stat | Op::Access => {
                metadata(e, map_path);
                Ok(0)
            }
            // fcntl's effect (locks, flags) is not recorded beyond its command.
            Op::Fcntl => Ok(0),
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
        // O_DIRECT needs aligned buffers the replay does not promise; the file was opened
        // successfully in the trace, so it is created if it is missing (--prep gives it its
        // recorded size).
        let flags = (flags & !libc::O_DIRECT) | libc::O_CREAT;
        let f = path
            .open(flags, if mode > 0 { mode as u32 } else { 0o644 })
            .map_err(|er| io(e, &path.path().display().to_string(), er))?;
        self.fds.insert(id, f);
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
        }
        Ok(0)
    }

    /// The data calls on a descriptor: writes of `data`, reads into the rank's read buffer,
    /// at the kernel's offset or an explicit one. Returns the bytes moved.
    fn transfer(&mut self, e: &FlatEvent, data: &mut Pattern) -> Result<u64, String> {
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
            // The bytes of a shared writable mapping, recorded where they reached the file.
            Op::Pwrite | Op::Pwritev | Op::Msync | Op::Munmap => {
                fd_in(&mut self.fds, e)?
                    .write_all_at(data.get(n), off())
                    .map_err(|er| io(e, "", er))?;
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

/// An I/O error of call `e` on `what` (a path, or nothing for the call's descriptor).
fn io(e: &FlatEvent, what: &str, err: std::io::Error) -> String {
    format!("{} {what}: {err}", e.op.name())
}

/// A recorded byte count as a buffer length (a failed call's -1 moves nothing).
fn size(v: i64) -> usize {
    v.max(0) as usize
}
