//! `--prep`: creates the files a trace reads before writing them, at the sizes its reads
//! reach, so that reads move the bytes the trace recorded.

use crate::engine::Pattern;
use crate::error::ReplayError;
use crate::root::Root;
use filetable::{Effect, FileTable, Offline};
use rsd::op::Dir;
use rsd::trace::{FlatEvent, Trace};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;

/// Per-rank walk: the file table says where each call's bytes lie.
#[derive(Default)]
struct RankScan {
    table: FileTable,
    written: HashSet<String>,
}

impl RankScan {
    fn event(&mut self, e: &FlatEvent, need: &mut BTreeMap<String, u64>) {
        let (fx, _) = self
            .table
            .apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
        let Effect::Access(a) = fx else {
            return;
        };
        let Some(path) = self.table.file(a.file).and_then(|f| f.path.clone()) else {
            return;
        };
        match a.dir {
            Dir::Write => {
                self.written.insert(path);
            }
            Dir::Read if !self.written.contains(&path) => {
                let end = a.regions.iter().map(|(o, n)| o + n).max().unwrap_or(0);
                let n = need.entry(path).or_default();
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
            why: format!("--prep: cannot create {}: {er}", path.path().display()),
        };
        let mut f = path
            .open(libc::O_WRONLY | libc::O_CREAT, 0o666)
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
