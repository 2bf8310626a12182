//! MPI-IO as positioned I/O on the shared file, and what the file table asks of the ranks
//! that share it.

use super::comm::CommObj;
use super::{ThreadsRuntime, collective_op};
use crate::engine::Pattern;
use crate::root::Mapped;
use filetable::{Effect, FileEnv};
use rsd::mpi::amode::{CREATE, DELETE_ON_CLOSE, RDONLY, RDWR, WRONLY};
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// An open MPI file: the real file and what the ranks share; views and pointers are the file
/// table's.
pub(super) struct MFile {
    file: File,
    /// Its name in the root, held open for MPI_MODE_DELETE_ON_CLOSE.
    path: Mapped,
    comm: (Arc<CommObj>, usize),
    /// The shared file pointer, in etypes, shared by every rank that opened the path.
    shared: Arc<AtomicU64>,
    delete_on_close: bool,
}

fn fh_err(id: i64) -> String {
    format!("file handle {id} is not open (its MPI_File_open was not replayed)")
}

impl ThreadsRuntime {
    /// An MPI-IO call as positioned I/O on the shared file; without `move_data`, all but the
    /// transfer itself ([`crate::engine::Runtime::mpiio_sync`]: the nested POSIX calls move the data).
    pub(super) fn file_call(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        fx: &Effect,
        data: &mut Pattern,
        move_data: bool,
    ) -> Result<u64, String> {
        let op = e.op;
        // MPI_File_delete names no handle.
        let fh = e.get(Param::Fh).unwrap_or(0);
        let collective = collective_op(op);
        if op == Op::FileOpen {
            let comm = self
                .comm(e.p(Param::Comm))
                .unwrap_or_else(|_| self.comms[&1].clone());
            comm.0.barrier(&self.sh)?;
            if fh < 0 {
                return Ok(0);
            }
            let amode = e.p(Param::Amode);
            let path = path.ok_or("no path")?.clone();
            let mut flags = match (amode & (RDONLY | RDWR) != 0, amode & (WRONLY | RDWR) != 0) {
                (true, true) => libc::O_RDWR,
                (false, true) => libc::O_WRONLY,
                _ => libc::O_RDONLY,
            };
            if amode & CREATE != 0 && amode & RDONLY == 0 {
                flags |= libc::O_CREAT;
            }
            let file = path
                .open(flags, 0o666)
                .map_err(|er| format!("{}: {er}", path.path().display()))?;
            let shared = self
                .sh
                .shared_fps
                .lock()
                .map_err(|_| "poisoned")?
                .entry(path.path().to_path_buf())
                .or_default()
                .clone();
            self.files.insert(
                fh,
                MFile {
                    file,
                    path,
                    comm,
                    shared,
                    delete_on_close: amode & DELETE_ON_CLOSE != 0,
                },
            );
            return Ok(0);
        }
        if op == Op::FileDelete {
            if let Some(p) = path {
                let _ = p.unlink();
            }
            return Ok(0);
        }
        if collective {
            let c = self
                .files
                .get(&fh)
                .ok_or_else(|| fh_err(fh))?
                .comm
                .0
                .clone();
            c.barrier(&self.sh)?;
        }
        let f = self.files.get_mut(&fh).ok_or_else(|| fh_err(fh))?;
        match op {
            Op::FileClose => {
                let f = self.files.remove(&fh).ok_or_else(|| fh_err(fh))?;
                if f.delete_on_close && f.comm.1 == 0 {
                    let _ = f.path.unlink();
                }
                return Ok(0);
            }
            Op::FileSetSize => {
                f.file
                    .set_len(e.p(Param::Size).max(0) as u64)
                    .map_err(|er| er.to_string())?;
                return Ok(0);
            }
            // As under MPI: a filetype built on a type the trace never built is bytes from the
            // displacement, and the view is reported as not replayed.
            Op::FileSetView => {
                return match fx {
                    Effect::SetView {
                        unbuilt: Some(why), ..
                    } => Err(why.clone()),
                    _ => Ok(0),
                };
            }
            Op::FileSync => {
                f.file.sync_all().map_err(|er| er.to_string())?;
                return Ok(0);
            }
            _ => {}
        }
        // The file table put the call's bytes in the file's regions (view, etype, filetype,
        // the pointer it used); the other calls (seeks, get_size) moved them already.
        let Effect::Access(acc) = fx else {
            return Ok(0);
        };
        let (write, bytes) = (acc.dir == rsd::op::Dir::Write, acc.bytes as i64);
        if !move_data {
            return Ok(bytes as u64);
        }
        let regions = acc.regions.iter().map(|&(o, n)| (o, n as usize));
        if write {
            let buf = data.get(bytes as usize);
            let mut at = 0usize;
            for (o, n) in regions {
                f.file
                    .write_all_at(&buf[at..at + n], o)
                    .map_err(|er| er.to_string())?;
                at += n;
            }
            Ok(bytes as u64)
        } else {
            Pattern::with_read_buf(&mut self.rbuf, bytes as usize, |rbuf| {
                let mut got = 0usize;
                'regions: for (o, n) in regions {
                    let end = got + n;
                    let mut pos = o;
                    while got < end {
                        match f.file.read_at(&mut rbuf[got..end], pos) {
                            // End of file: MPI stops a read there, holes past it included.
                            Ok(0) => break 'regions,
                            Ok(k) => {
                                got += k;
                                pos += k as u64;
                            }
                            Err(er) => return Err(er.to_string()),
                        }
                    }
                }
                Ok(got as u64)
            })
        }
    }
}

/// What the ranks of one process share: the real file (its size, which other ranks' writes
/// change) and the shared file pointer.
impl FileEnv for ThreadsRuntime {
    fn size(&mut self, fh: i64) -> Option<u64> {
        let f = self.files.get(&fh)?;
        f.file.metadata().ok().map(|m| m.len())
    }

    fn fetch_add_shared(&mut self, fh: i64, units: i64) -> Option<i64> {
        let f = self.files.get(&fh)?;
        Some(f.shared.fetch_add(units.max(0) as u64, Ordering::SeqCst) as i64)
    }

    // Every rank reads the pointer between two barriers (so all read the same place, no
    // shared access pending before nor started after), stores the same new place, and waits
    // for all to have stored it before any takes from it again. A barrier that fails (the
    // replay aborted) leaves the pointer alone: the rank stops at its next blocking call.
    fn seek_shared(&mut self, fh: i64, to: &dyn Fn(i64) -> i64) -> bool {
        let Some(f) = self.files.get(&fh) else {
            return false;
        };
        let (comm, shared) = (f.comm.0.clone(), f.shared.clone());
        if comm.barrier(&self.sh).is_err() {
            return true;
        }
        let at = shared.load(Ordering::SeqCst) as i64;
        if comm.barrier(&self.sh).is_err() {
            return true;
        }
        shared.store(to(at).max(0) as u64, Ordering::SeqCst);
        let _ = comm.barrier(&self.sh);
        true
    }
}
