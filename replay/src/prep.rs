//! `--prep`: creates the files a trace reads before writing them, at the sizes its reads
//! reach, so that reads move the bytes the trace recorded.

use crate::engine::Pattern;
use crate::error::ReplayError;
use crate::root::Root;
use rsd::op::{Dir, Handle, Op, Param};
use rsd::trace::{FlatEvent, Trace};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

/// Per-rank tracking of where each open file's position is.
#[derive(Default)]
struct RankScan {
    open: HashMap<(u8, i64), (String, i64)>,
    written: HashSet<String>,
}

impl RankScan {
    fn event(&mut self, e: &FlatEvent, need: &mut BTreeMap<String, u64>) {
        // Descriptor kinds live in separate tables: 0 POSIX fd, 1 stdio stream, 2 MPI file.
        let (kind, id) = match e.op.handle() {
            Some(Handle::Fd) => (0, e.p(Param::Fd)),
            Some(Handle::Stream) => (1, e.p(Param::Stream)),
            Some(Handle::MpiFile) => (2, e.p(Param::Fh)),
            None => (9, -1),
        };
        match e.op {
            Op::Open | Op::Openat | Op::Creat => {
                if let Some(p) = &e.path {
                    self.open.insert((0, e.p(Param::Fd)), (p.clone(), 0));
                }
                return;
            }
            Op::Fopen => {
                if let Some(p) = &e.path {
                    self.open.insert((1, e.p(Param::Stream)), (p.clone(), 0));
                }
                return;
            }
            Op::FileOpen => {
                if let Some(p) = &e.path {
                    self.open.insert((2, e.p(Param::Fh)), (p.clone(), 0));
                }
                return;
            }
            _ => {}
        }
        let Some((path, pos)) = self.open.get_mut(&(kind, id)) else {
            return;
        };
        let bytes = e.op.data_bytes(&e.params) as i64;
        let at = match e.op {
            Op::Pread | Op::Preadv | Op::Pwrite | Op::Pwritev => e.p(Param::Offset),
            Op::FileReadAt | Op::FileReadAtAll | Op::FileIreadAt => e.p(Param::Offset),
            Op::FileWriteAt | Op::FileWriteAtAll | Op::FileIwriteAt => e.p(Param::Offset),
            Op::Lseek => {
                *pos = e.p(Param::Ret).max(0);
                return;
            }
            Op::Fseek | Op::FileSeek => {
                if rsd::mpi::whence(e.p(Param::Whence)) == Some(rsd::mpi::Whence::Set) {
                    *pos = e.p(Param::Offset);
                }
                return;
            }
            _ => {
                let p = *pos;
                *pos += bytes;
                p
            }
        };
        match e.op.dir() {
            Dir::Write => {
                self.written.insert(path.clone());
            }
            Dir::Read if !self.written.contains(path.as_str()) => {
                let end = (at + bytes).max(0) as u64;
                let n = need.entry(path.clone()).or_default();
                *n = (*n).max(end);
            }
            _ => {}
        }
    }
}

/// The files `trace` reads before writing them, with the size each must have.
pub fn needed(trace: &Trace) -> BTreeMap<String, u64> {
    let mut need = BTreeMap::new();
    trace.ranks().for_each(|r| {
        let mut scan = RankScan::default();
        trace.expand_with(r, &mut |e| {
            scan.event(e, &mut need);
            true
        });
    });
    need
}

/// Creates (or extends) every file `trace` reads before writing under `root`, filled with the
/// replay's write pattern. Returns the files and sizes.
pub fn prep(trace: &Trace, root: &Root) -> Result<BTreeMap<String, u64>, ReplayError> {
    let need = needed(trace);
    let mut pattern = Pattern::default();
    for (traced, size) in &need {
        let path = root.map(traced, true)?;
        let io = |er: std::io::Error| ReplayError::Root {
            path: root.dir().to_path_buf(),
            why: format!("--prep: cannot create {}: {er}", path.display()),
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let have = f.metadata().map_err(io)?.len();
        if have < *size {
            use std::io::Seek;
            f.seek(std::io::SeekFrom::Start(have)).map_err(io)?;
            let mut left = (*size - have) as usize;
            while left > 0 {
                let n = left.min(1 << 20);
                f.write_all(pattern.get(n)).map_err(io)?;
                left -= n;
            }
        }
    }
    Ok(need)
}
