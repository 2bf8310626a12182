//! MPI-IO: opens (pinned inside the root), the calls on an open file's size, view and
//! pointers, the data transfers of the recorded sizes, and split collectives.

use super::{MFile, MpiRuntime, check, len};
use filetable::FileTable;
use mpi::ffi;
use replay::Mapped;
use replay::engine::Pattern;
use replay::types::Types;
use rsd::mpi::amode;
use rsd::op::{Dir, Op, Param};
use rsd::trace::FlatEvent;
use std::ffi::CString;
use std::os::raw::{c_int, c_void};

type RwFn = unsafe extern "C" fn(
    ffi::MPI_File,
    *mut c_void,
    c_int,
    ffi::MPI_Datatype,
    *mut ffi::MPI_Status,
) -> c_int;
type RwAtFn = unsafe extern "C" fn(
    ffi::MPI_File,
    ffi::MPI_Offset,
    *mut c_void,
    c_int,
    ffi::MPI_Datatype,
    *mut ffi::MPI_Status,
) -> c_int;

/// The hints that tell the library how a file's data will be accessed (`access_style`, the
/// MPI standard's `read_once`, `write_once`, `sequential`, `random`, ...), which a library
/// may act on or pass on to the file system: replayed as the trace recorded them, so the
/// replay's library gets what the program's got. The other hints (collective buffering,
/// striping) are the library's own configuration, which the replay leaves to the library
/// it runs on.
pub(crate) const CACHE_HINTS: &[&str] = &["access_style"];

/// Each traced file's [`CACHE_HINTS`] in a trace header, by path (the tracer records rank 0's
/// files: what it reported, else what the program passed).
pub(crate) fn cache_hints(
    h: &rsd::Header,
) -> std::collections::HashMap<String, Vec<(String, String)>> {
    let Some(mc) = &h.mpi_config else {
        return Default::default();
    };
    mc.file_hints
        .iter()
        .map(|(path, hints)| {
            let keep = hints
                .iter()
                .filter(|(k, _)| CACHE_HINTS.contains(&k.as_str()));
            (path.clone(), keep.cloned().collect::<Vec<_>>())
        })
        .filter(|(_, h)| !h.is_empty())
        .collect()
}

/// An info object holding some hints, freed when dropped; `MPI_INFO_NULL` for none.
struct Info(ffi::MPI_Info, bool);

impl Info {
    fn of(hints: &[(String, String)], null: ffi::MPI_Info) -> Result<Info, String> {
        if hints.is_empty() {
            return Ok(Info(null, false));
        }
        let mut info = null;
        // SAFETY: a valid out-parameter.
        check(
            unsafe { ffi::MPI_Info_create(&mut info) },
            "MPI_Info_create",
        )?;
        let info = Info(info, true);
        for (k, v) in hints {
            let (Ok(k), Ok(v)) = (CString::new(k.as_str()), CString::new(v.as_str())) else {
                continue;
            };
            // SAFETY: the info object just created; NUL-terminated key and value.
            check(
                unsafe { ffi::MPI_Info_set(info.0, k.as_ptr(), v.as_ptr()) },
                "MPI_Info_set",
            )?;
        }
        Ok(info)
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        if self.1 {
            // SAFETY: an info object this replay created, freed once.
            unsafe { ffi::MPI_Info_free(&mut self.0) };
        }
    }
}

/// table's own knowledge is never asked for more than the etype of a view.
impl MpiRuntime {
    /// An MPI-IO call of the trace; the bytes it read or wrote.
    pub(super) fn file_io(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        files: &FileTable,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        let types = files.types();
        // MPI_File_delete names no handle.
        let id = e.get(Param::Fh).unwrap_or(0);
        match op {
            // The traced open failed (IOR probes for its file this way): nothing to replay,
            // as for a failed POSIX open and under --threads. A failed collective open fails on
            // every rank of its communicator, so all of them skip it alike.
            Op::FileOpen if id < 0 => return Ok(0),
            Op::FileOpen => return self.file_open(e, id, path),
            Op::FileDelete => return self.file_delete(path),
            _ => {}
        }
        let f = self.files.get_mut(&id).ok_or_else(|| {
            format!("file handle {id} is not open (its MPI_File_open was not replayed)")
        })?;
        // Views are set with a byte etype (the filetype rebuilt is made of bytes), so offsets
        // and seeks in the trace's etypes convert to bytes with the recorded view's etype.
        let es = files.mpi_file(id).map_or(1, |m| m.view.etype_size);
        // Data calls carry `bytes`; the others (close, sync, ...) move none.
        let bytes = e.get(Param::Bytes).unwrap_or(0).max(0);
        let fh = f.fh;
        match op {
            Op::FileClose
            | Op::FileSetSize
            | Op::FileGetSize
            | Op::FileSetView
            | Op::FileSeek
            | Op::FileSync
            | Op::FileSeekShared => return self.file_control(e, id, fh, es, types),
            _ if op.split_collective().is_some() => {
                return self.split_begin(e, id, fh, es, bytes, data);
            }
            _ if op.is_split_end() => return self.split_end(op, id, fh),
            _ => {}
        }
        self.transfer(e, fh, es, bytes, data)
    }

    /// MPI_File_open of the file pinned inside the root, under the traced file id.
    fn file_open(&mut self, e: &FlatEvent, id: i64, path: Option<&Mapped>) -> Result<u64, String> {
        let p = self.p;
        let c = self.comm(e.p(Param::Comm)).unwrap_or(p.self_);
        let mapped = path.ok_or("no path")?;
        let am = e.p(Param::Amode);
        // The file is opened here first, confined, and the library opens that open
        // file (`Mapped::pin`): it never resolves the last component by name, where a
        // symlink swapped in would be followed. The file exists by then, so
        // MPI_MODE_EXCL (every rank would race to create it) is not passed on: the
        // traced open succeeded, so the file did not exist then either.
        let pinned = mapped
            .pin(am & amode::CREATE != 0, am & amode::RDONLY != 0)
            .map_err(|err| {
                format!(
                    "{}: {err}; refusing to touch it (a symbolic link or special file there)",
                    mapped.path().display()
                )
            })?;
        let name = CString::new(pinned.kernel_path().as_os_str().as_encoded_bytes())
            .map_err(|_| "path holds a NUL byte".to_string())?;
        let passed = am & !(amode::EXCL | amode::DELETE_ON_CLOSE);
        let hints = e
            .path
            .as_deref()
            .and_then(|t| self.cache_hints.get(t))
            .map_or(&[][..], Vec::as_slice);
        let info = Info::of(hints, p.info_null)?;
        let mut fh: ffi::MPI_File = std::ptr::null_mut();
        // SAFETY: valid communicator, NUL-terminated path, an info object (predefined or
        // live until `info` drops, after the call), and a valid out-parameter for the handle.
        let rc = unsafe { ffi::MPI_File_open(c, name.as_ptr(), passed as c_int, info.0, &mut fh) };
        drop(info);
        check(rc, "MPI_File_open")?;
        self.files.insert(
            id,
            MFile {
                fh,
                _pinned: pinned,
                delete_on_close: (am & amode::DELETE_ON_CLOSE != 0).then(|| mapped.clone()),
            },
        );
        Ok(0)
    }

    /// MPI_File_delete of the path mapped inside the root.
    fn file_delete(&mut self, path: Option<&Mapped>) -> Result<u64, String> {
        let p = self.p;
        let cpath = |path: Option<&Mapped>| -> Result<CString, String> {
            CString::new(
                path.ok_or("no path")?
                    .kernel_path()
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(|_| "path holds a NUL byte".to_string())
        };
        let name = cpath(path)?;
        // SAFETY: NUL-terminated path and predefined info; a missing file is an error
        // code (files default to MPI_ERRORS_RETURN), which is the file system's answer.
        unsafe { ffi::MPI_File_delete(name.as_ptr(), p.info_null) };
        Ok(0)
    }

    /// The calls on an open file that move no data: close, size, view, pointers, sync.
    fn file_control(
        &mut self,
        e: &FlatEvent,
        id: i64,
        fh: ffi::MPI_File,
        es: i64,
        types: &Types,
    ) -> Result<u64, String> {
        let op = e.op;
        let p = self.p;
        match op {
            Op::FileClose => {
                // A split collective the trace never ended dies with its file (the id may be
                // opened again), its buffer only after the close, which may still touch it.
                let pending = self.split.remove(&id);
                let mut f = self.files.remove(&id).expect("present");
                // SAFETY: an open file handle, closed once.
                let rc = unsafe { ffi::MPI_File_close(&mut f.fh) };
                drop(pending);
                check(rc, "MPI_File_close")?;
                if let Some(m) = f.delete_on_close {
                    // Every rank of a collective open gets here; one removes the file.
                    let _ = m.unlink();
                }
                return Ok(0);
            }
            Op::FileSetSize => {
                // SAFETY: an open file handle.
                check(
                    unsafe { ffi::MPI_File_set_size(fh, e.p(Param::Size)) },
                    "MPI_File_set_size",
                )?;
                return Ok(0);
            }
            Op::FileGetSize => {
                let mut s = 0;
                // SAFETY: an open file handle and a valid out-parameter.
                check(
                    unsafe { ffi::MPI_File_get_size(fh, &mut s) },
                    "MPI_File_get_size",
                )?;
                return Ok(0);
            }
            Op::FileSetView => {
                let ft = e.p(Param::Filetype);
                // A filetype built on a type the trace never built is replaced by bytes from
                // the displacement (as an unknown filetype is): the accesses stay as large as
                // recorded and near where they were, collectives still meet on every rank, and
                // the view is reported as not replayed.
                let mut unbuilt = replay::types::unbuilt_view(types, ft);
                let filetype = if unbuilt.is_some() {
                    p.u8
                } else if types.ctor(ft).is_some() {
                    // A type the trace describes but MPI would refuse (a darray whose grid is
                    // not its size, ...) is refused here, the view taken as bytes the same way,
                    // so that the collective call still meets on every rank.
                    match self.dtype(types, ft, 0) {
                        Ok(t) => t,
                        Err(why) => {
                            unbuilt = Some(format!("MPI_File_set_view: filetype {ft}: {why}"));
                            p.u8
                        }
                    }
                } else {
                    // A predefined filetype is contiguous: a byte view is the same.
                    p.u8
                };
                let native = c"native";
                // SAFETY: an open file handle, predefined byte types and info, and a
                // NUL-terminated data representation name.
                let rc = unsafe {
                    ffi::MPI_File_set_view(
                        fh,
                        e.p(Param::Disp),
                        p.u8,
                        filetype,
                        native.as_ptr(),
                        p.info_null,
                    )
                };
                check(rc, "MPI_File_set_view")?;
                return unbuilt.map_or(Ok(0), Err);
            }
            Op::FileSeek => {
                // SAFETY: an open file handle; whence is the recorded MPI_SEEK_* value.
                let rc = unsafe {
                    ffi::MPI_File_seek(fh, e.p(Param::Offset) * es, e.p(Param::Whence) as c_int)
                };
                check(rc, "MPI_File_seek")?;
                return Ok(0);
            }
            Op::FileSync => {
                // SAFETY: an open file handle.
                check(unsafe { ffi::MPI_File_sync(fh) }, "MPI_File_sync")?;
                return Ok(0);
            }
            Op::FileSeekShared => {
                // SAFETY: an open file handle; whence is the recorded MPI_SEEK_* value (the
                // call is collective: every rank recorded the same place).
                let rc = unsafe {
                    ffi::MPI_File_seek_shared(
                        fh,
                        e.p(Param::Offset) * es,
                        e.p(Param::Whence) as c_int,
                    )
                };
                check(rc, "MPI_File_seek_shared")?;
                return Ok(0);
            }
            _ => {}
        }
        Ok(0)
    }

    /// A data transfer of the recorded bytes at the recorded offset (in bytes, from the
    /// view's etype `es`); the bytes a read got.
    fn transfer(
        &mut self,
        e: &FlatEvent,
        fh: ffi::MPI_File,
        es: i64,
        bytes: i64,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        let p = self.p;
        let n = len(bytes);
        let write = op.dir() == Dir::Write;
        let buf: *mut c_void = if write {
            data.get(n as usize).as_ptr() as *mut c_void
        } else {
            self.rbuf.resize(n as usize, 0);
            self.rbuf.as_mut_ptr() as *mut c_void
        };
        // Only the explicit-offset calls have one; the others use the file pointer.
        let off = e.get(Param::Offset).unwrap_or(0) * es;
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let st = status.as_mut_ptr();
        // MPI's write functions take `const void*`; the pointer is cast to share one signature
        // with the reads, and MPI never writes through it.
        let plain: Option<RwFn> = match op {
            Op::FileRead => Some(ffi::MPI_File_read as RwFn),
            Op::FileReadAll => Some(ffi::MPI_File_read_all as RwFn),
            Op::FileReadShared => Some(ffi::MPI_File_read_shared as RwFn),
            Op::FileReadOrdered => Some(ffi::MPI_File_read_ordered as RwFn),
            _ => None,
        };
        let rc = if let Some(fun) = plain {
            // SAFETY: an open file, a buffer of `n` bytes, the byte type and a status slot.
            unsafe { fun(fh, buf, n, p.u8, st) }
        } else if matches!(op, Op::FileReadAt | Op::FileReadAtAll) {
            let fun: RwAtFn = if op == Op::FileReadAt {
                ffi::MPI_File_read_at
            } else {
                ffi::MPI_File_read_at_all
            };
            // SAFETY: as above, with the recorded offset in bytes.
            unsafe { fun(fh, off, buf, n, p.u8, st) }
        } else {
            let cbuf = buf as *const c_void;
            // SAFETY (every arm): an open file handle, a pattern buffer of `n` bytes that
            // outlives the call (nonblocking calls are waited for at once, below), the byte
            // type and a status or request slot.
            unsafe {
                match op {
                    Op::FileWrite => ffi::MPI_File_write(fh, cbuf, n, p.u8, st),
                    Op::FileWriteAll => ffi::MPI_File_write_all(fh, cbuf, n, p.u8, st),
                    Op::FileWriteShared => ffi::MPI_File_write_shared(fh, cbuf, n, p.u8, st),
                    Op::FileWriteOrdered => ffi::MPI_File_write_ordered(fh, cbuf, n, p.u8, st),
                    Op::FileWriteAt => ffi::MPI_File_write_at(fh, off, cbuf, n, p.u8, st),
                    Op::FileWriteAtAll => ffi::MPI_File_write_at_all(fh, off, cbuf, n, p.u8, st),
                    _ => {
                        // Nonblocking: issued, then completed at once so the buffer stays
                        // valid; the trace's Wait then finds nothing pending.
                        let mut req: ffi::MPI_Request = std::mem::zeroed();
                        let rc = match op {
                            Op::FileIread => ffi::MPI_File_iread(fh, buf, n, p.u8, &mut req),
                            Op::FileIreadAt => {
                                ffi::MPI_File_iread_at(fh, off, buf, n, p.u8, &mut req)
                            }
                            Op::FileIreadAll => ffi::MPI_File_iread_all(fh, buf, n, p.u8, &mut req),
                            Op::FileIreadShared => {
                                ffi::MPI_File_iread_shared(fh, buf, n, p.u8, &mut req)
                            }
                            Op::FileIwrite => ffi::MPI_File_iwrite(fh, cbuf, n, p.u8, &mut req),
                            Op::FileIwriteAt => {
                                ffi::MPI_File_iwrite_at(fh, off, cbuf, n, p.u8, &mut req)
                            }
                            Op::FileIwriteAll => {
                                ffi::MPI_File_iwrite_all(fh, cbuf, n, p.u8, &mut req)
                            }
                            Op::FileIwriteShared => {
                                ffi::MPI_File_iwrite_shared(fh, cbuf, n, p.u8, &mut req)
                            }
                            _ => return Ok(0),
                        };
                        if rc == 0 {
                            ffi::MPI_Wait(&mut req, st)
                        } else {
                            rc
                        }
                    }
                }
            }
        };
        check(rc, op.name())?;
        let mut got: c_int = n;
        if !write {
            // SAFETY: the call succeeded, so MPI filled the status.
            unsafe { ffi::MPI_Get_count(st, p.u8, &mut got) };
        }
        Ok(got.max(0) as u64)
    }

    /// The begin of a split collective, issued as recorded with a buffer of the recorded bytes
    /// (the pattern's for a write) that lives until its end; the trace's calls in between run
    /// while the transfer is under way, as they did.
    fn split_begin(
        &mut self,
        e: &FlatEvent,
        id: i64,
        fh: ffi::MPI_File,
        es: i64,
        bytes: i64,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        let op = e.op;
        if self.split.contains_key(&id) {
            return Err(format!(
                "{} on file handle {id} before the split collective it began last ended",
                op.name()
            ));
        }
        let n = len(bytes);
        let mut buf = if op.dir() == Dir::Write {
            data.get(n as usize).to_vec()
        } else {
            vec![0; n as usize]
        };
        let (ptr, cptr) = (
            buf.as_mut_ptr() as *mut c_void,
            buf.as_ptr() as *const c_void,
        );
        let off = e.get(Param::Offset).unwrap_or(0) * es;
        let u8t = self.p.u8;
        // SAFETY (every arm): an open file handle, a buffer of `n` bytes kept in `self.split`
        // until the end call, and the byte type.
        let rc = unsafe {
            match op {
                Op::FileReadAllBegin => ffi::MPI_File_read_all_begin(fh, ptr, n, u8t),
                Op::FileWriteAllBegin => ffi::MPI_File_write_all_begin(fh, cptr, n, u8t),
                Op::FileReadAtAllBegin => ffi::MPI_File_read_at_all_begin(fh, off, ptr, n, u8t),
                Op::FileWriteAtAllBegin => ffi::MPI_File_write_at_all_begin(fh, off, cptr, n, u8t),
                Op::FileReadOrderedBegin => ffi::MPI_File_read_ordered_begin(fh, ptr, n, u8t),
                Op::FileWriteOrderedBegin => ffi::MPI_File_write_ordered_begin(fh, cptr, n, u8t),
                _ => return Ok(0),
            }
        };
        check(rc, op.name())?;
        // Moving the vector into the map keeps its heap buffer where MPI was given it.
        self.split.insert(id, buf);
        Ok(n as u64)
    }

    /// The end of a split collective: completes the transfer its begin started on `fh` and
    /// frees the begin's buffer.
    fn split_end(&mut self, op: Op, id: i64, fh: ffi::MPI_File) -> Result<u64, String> {
        let Some(mut buf) = self.split.remove(&id) else {
            return Err(format!(
                "{} on file handle {id} without its begin (not recorded or not replayed)",
                op.name()
            ));
        };
        let (ptr, cptr) = (
            buf.as_mut_ptr() as *mut c_void,
            buf.as_ptr() as *const c_void,
        );
        let mut status = std::mem::MaybeUninit::<ffi::MPI_Status>::uninit();
        let st = status.as_mut_ptr();
        // SAFETY (every arm): an open file handle with a split collective under way, the
        // buffer its begin was given, and a status slot.
        let rc = unsafe {
            match op {
                Op::FileReadAllEnd => ffi::MPI_File_read_all_end(fh, ptr, st),
                Op::FileWriteAllEnd => ffi::MPI_File_write_all_end(fh, cptr, st),
                Op::FileReadAtAllEnd => ffi::MPI_File_read_at_all_end(fh, ptr, st),
                Op::FileWriteAtAllEnd => ffi::MPI_File_write_at_all_end(fh, cptr, st),
                Op::FileReadOrderedEnd => ffi::MPI_File_read_ordered_end(fh, ptr, st),
                Op::FileWriteOrderedEnd => ffi::MPI_File_write_ordered_end(fh, cptr, st),
                _ => return Ok(0),
            }
        };
        drop(buf);
        check(rc, op.name())?;
        Ok(0)
    }
}
