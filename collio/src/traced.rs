//! The model's inputs from a trace, and its check against the trace: every collective data
//! call of a trace, with each rank's file regions (walked through a `filetable::FileTable`),
//! its start, the views' [`ViewStats`], the file size the ranks know, and the nested calls
//! the tracer recorded.

use crate::ompio::{self, ViewStats};
use crate::{Call, Collective, Dir};
use filetable::{Effect, FileTable, Offline};
use rsd::op::{Op, Param};
use rsd::{FlatEvent, Trace};
use std::collections::BTreeMap;

/// Why a trace's collective calls cannot be put together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TracedError {
    /// The ranks that use a file make different numbers of collective calls on it.
    #[error("{path}: rank {first} makes {first_calls} collective calls on it, rank {rank} {calls}")]
    Count {
        /// The file.
        path: String,
        /// The first rank using the file.
        first: u32,
        /// Its collective calls.
        first_calls: usize,
        /// A rank that differs.
        rank: u32,
        /// Its collective calls.
        calls: usize,
    },
    /// The k-th collective call on a file is a read on one rank and a write on another.
    #[error(
        "{path}: collective call {index} is a {first} on rank {first_rank}, a {other} on rank {rank}"
    )]
    Direction {
        /// The file.
        path: String,
        /// The call's index among the file's collective calls.
        index: usize,
        /// The first rank's op.
        first: &'static str,
        /// The first rank.
        first_rank: u32,
        /// The other rank's op.
        other: &'static str,
        /// The other rank.
        rank: u32,
    },
}

/// One collective data call of a trace, as all the ranks that use its file made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedCall {
    /// The file's path.
    pub path: String,
    /// The call's index among the collective calls on the file.
    pub index: usize,
    /// The first rank's op (`MPI_File_write_at_all`, ...).
    pub op: Op,
    /// The ranks of the file's communicator, in the trace's rank numbering. Taken as the
    /// ranks that make collective calls on the file, in rank order: the communicator's rank
    /// order is assumed to be the trace's (as for `MPI_COMM_WORLD` and `MPI_COMM_SELF`).
    pub ranks: Vec<u32>,
    /// The model's input (index = position in `ranks`).
    pub input: Collective,
    /// The views' stats, for OMPIO's aggregator count.
    pub view: ViewStats,
    /// The nested calls recorded on each rank (index = position in `ranks`).
    pub recorded: Vec<Vec<Call>>,
}

/// The direction of a collective data call of the MPI-IO layer.
pub fn collective_dir(op: Op) -> Option<Dir> {
    match op {
        Op::FileWriteAll | Op::FileWriteAtAll => Some(Dir::Write),
        Op::FileReadAll | Op::FileReadAtAll => Some(Dir::Read),
        _ => None,
    }
}

/// A recorded nested call as a [`Call`]. A call the models never issue keeps its op, so a
/// comparison names it.
pub fn recorded_call(e: &FlatEvent) -> Call {
    let get = |p| e.get(p).unwrap_or(-1);
    let ret = get(Param::Ret);
    if e.op == Op::Fcntl {
        let mut c = Call::fcntl(get(Param::Cmd));
        c.ret = ret as u64;
        return c;
    }
    let iovcnt = match e.op {
        Op::Pwritev | Op::Preadv => Some(get(Param::Iovcnt) as u32),
        _ => None,
    };
    // pwritev/preadv record no byte count: what they asked for is what they returned unless
    // a read hit the end of the file.
    let bytes = if iovcnt.is_some() {
        ret
    } else {
        get(Param::Count)
    };
    Call::data(
        e.op,
        get(Param::Offset) as u64,
        iovcnt,
        bytes as u64,
        ret as u64,
    )
}

/// One rank's part of one collective data call, as the file table resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankAccess {
    /// The file's path.
    pub path: String,
    /// The rank's op.
    pub op: Op,
    /// The file regions the call accesses (the view applied), in data order.
    pub regions: Vec<(u64, u64)>,
    /// The file offset the access starts at (see [`Collective::starts`]).
    pub start: u64,
    /// Whether the rank's filetype is contiguous as ROMIO sees it (one block from its origin
    /// to its extent): ROMIO locks around a noncontiguous one's independent writes.
    pub contig_filetype: bool,
    /// The block lengths of the rank's view ([`ompio::view_blocks`]).
    pub view_blocks: Vec<u64>,
    /// The file's size as this rank knows it before the call.
    pub size_before: u64,
    /// The nested calls recorded.
    pub recorded: Vec<Call>,
}

/// The collective data calls of `rank` in `trace`, in order, each with its file's path.
/// Calls made inside a library layer's call count as the application's own
/// ([`filetable::file_calls`]).
pub fn rank_accesses(trace: &Trace, rank: u32) -> Vec<RankAccess> {
    let mut out = Vec::new();
    let mut table = FileTable::new();
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    trace.expand_with(rank, &mut |top| {
        for e in filetable::file_calls(top) {
            access(e, &mut table, &mut sizes, &mut out);
        }
        true
    });
    out
}

/// Applies one call to the rank's file table and file sizes, adding it to `out` when it is a
/// collective data call.
fn access(
    e: &FlatEvent,
    table: &mut FileTable,
    sizes: &mut BTreeMap<String, u64>,
    out: &mut Vec<RankAccess>,
) {
    let coll = collective_dir(e.op).is_some();
    // The data position (etypes) the call starts at, before the call moves the
    // individual file pointer.
    let etypes = match e.get(Param::Offset) {
        Some(o) if coll => Some(o),
        _ if coll => e
            .get(Param::Fh)
            .and_then(|fh| table.mpi_file(fh))
            .map(|f| f.pos),
        _ => None,
    };
    let (effect, _) = table.apply(e.op, &e.params, e.path.as_deref(), None, &mut Offline);
    let path_of = |t: &FileTable, id| t.file(id).and_then(|f| f.path.clone());
    match effect {
        Effect::Access(a) => {
            let Some(path) = path_of(table, a.file) else {
                return;
            };
            let before = sizes.get(&path).copied().unwrap_or(0);
            if a.dir == rsd::op::Dir::Write {
                let end = a.regions.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
                sizes.insert(path.clone(), before.max(end));
            }
            if !coll {
                return;
            }
            let f = table.file(a.file).expect("an accessed file is open");
            let start = match a.regions.first() {
                Some(r) => r.0,
                None => {
                    let pos = etypes.unwrap_or(0) * f.view.etype_size;
                    match &f.view.flat {
                        None => (f.view.disp + pos).max(0) as u64,
                        Some(_) => f.view.regions(pos, 1).first().map_or(0, |r| r.0),
                    }
                }
            };
            out.push(RankAccess {
                path,
                op: e.op,
                // The file table flattens a filetype unless it is one block from its
                // origin to its extent: ROMIO's contiguous type.
                contig_filetype: f.view.flat.is_none(),
                view_blocks: ompio::view_blocks(&f.view, table.types()),
                regions: a.regions,
                start,
                size_before: before,
                recorded: e.children.iter().map(recorded_call).collect(),
            });
        }
        Effect::Resize { file, size } => {
            if let Some(p) = path_of(table, file) {
                sizes.insert(p, size);
            }
        }
        _ => {}
    }
}

/// Every collective data call of `trace` (ranks `0..np`), in order per file, files by path.
/// The file size a call sees is the most any of its ranks knows from the trace (its writes
/// and resizes before the call: a collective call starts after every rank entered it).
pub fn collective_calls(trace: &Trace, np: u32) -> Result<Vec<TracedCall>, TracedError> {
    let mut per_path: BTreeMap<String, BTreeMap<u32, Vec<RankAccess>>> = BTreeMap::new();
    for rank in 0..np {
        for a in rank_accesses(trace, rank) {
            per_path
                .entry(a.path.clone())
                .or_default()
                .entry(rank)
                .or_default()
                .push(a);
        }
    }
    let mut out = Vec::new();
    for (path, ranks) in per_path {
        let (&first, first_parts) = ranks.iter().next().expect("a path has a rank");
        let k = first_parts.len();
        if let Some((&rank, parts)) = ranks.iter().find(|(_, p)| p.len() != k) {
            return Err(TracedError::Count {
                path,
                first,
                first_calls: k,
                rank,
                calls: parts.len(),
            });
        }
        let order: Vec<u32> = ranks.keys().copied().collect();
        for index in 0..k {
            let parts: Vec<&RankAccess> = ranks.values().map(|p| &p[index]).collect();
            let dir = collective_dir(parts[0].op).expect("collective");
            if let Some(i) = parts.iter().position(|p| collective_dir(p.op) != Some(dir)) {
                return Err(TracedError::Direction {
                    path,
                    index,
                    first: parts[0].op.name(),
                    first_rank: first,
                    other: parts[i].op.name(),
                    rank: order[i],
                });
            }
            out.push(TracedCall {
                path: path.clone(),
                index,
                op: parts[0].op,
                ranks: order.clone(),
                input: Collective {
                    dir,
                    regions: parts.iter().map(|p| p.regions.clone()).collect(),
                    file_size: parts.iter().map(|p| p.size_before).max().unwrap_or(0),
                    starts: parts.iter().map(|p| p.start).collect(),
                    contig_filetype: parts.iter().map(|p| p.contig_filetype).collect(),
                },
                view: ViewStats::from_ranks(parts.iter().map(|p| p.view_blocks.as_slice())),
                recorded: parts.iter().map(|p| p.recorded.clone()).collect(),
            });
        }
    }
    Ok(out)
}

/// The first place where modelled calls differ from recorded ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Position of the rank in the call's ranks.
    pub rank_index: usize,
    /// The nested call's index on that rank.
    pub call: usize,
    /// The recorded call there (`None`: the rank recorded fewer calls).
    pub recorded: Option<Call>,
    /// The modelled call there (`None`: the model gave fewer calls).
    pub modelled: Option<Call>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |c: &Option<Call>| c.as_ref().map_or("nothing".into(), |c| c.to_string());
        write!(
            f,
            "nested call {}: recorded {}, modelled {}",
            self.call,
            show(&self.recorded),
            show(&self.modelled)
        )
    }
}

/// The first difference between recorded and modelled calls, rank by rank, call by call.
pub fn first_difference(recorded: &[Vec<Call>], modelled: &[Vec<Call>]) -> Option<Difference> {
    let none = Vec::new();
    for r in 0..recorded.len().max(modelled.len()) {
        let (a, b) = (
            recorded.get(r).unwrap_or(&none),
            modelled.get(r).unwrap_or(&none),
        );
        for j in 0..a.len().max(b.len()) {
            if a.get(j) != b.get(j) {
                return Some(Difference {
                    rank_index: r,
                    call: j,
                    recorded: a.get(j).cloned(),
                    modelled: b.get(j).cloned(),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_names_the_rank_and_the_call() {
        let c = |off| Call::data(Op::Pwrite, off, None, 8, 8);
        let rec = vec![vec![c(0)], vec![c(8), c(16)]];
        assert_eq!(first_difference(&rec, &rec), None);
        let d = first_difference(&rec, &[vec![c(0)], vec![c(8)]]).unwrap();
        assert_eq!((d.rank_index, d.call), (1, 1));
        assert_eq!((d.recorded, d.modelled), (Some(c(16)), None));
        let d = first_difference(&rec, &[vec![c(1)]]).unwrap();
        assert_eq!(
            d.to_string(),
            "nested call 0: recorded pwrite offset 0 bytes 8 ret 8, modelled pwrite offset 1 bytes 8 ret 8"
        );
    }
}
