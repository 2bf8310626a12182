//! HDF5's dataset storage moved by a split chunk index: the data's addresses at
//! the target, from the HDF5 oracle's storage map.
//!
//! The fitting extrapolates a data write's address (a chunk's, a contiguous dataset's) as a
//! function of n and the rank, which follows the inputs' layout: each dataset's runs of
//! storage, in the order of its elements, at addresses that are exact functions of n. When
//! the chunk index splits between the inputs and the target, HDF5 puts its new B-tree nodes
//! where the inputs' layout put chunks, and everything allocated after them moves: the
//! fitted addresses point at the *predicted* layout, the oracle ([`crate::hdf5::space`]) says
//! where the data really is. Both hold the same elements, so a byte of a dataset is the same
//! byte in both: a predicted address maps to the real one through the element's position in
//! the dataset (a piecewise translation, [`Relocation`]).
//!
//! The map is applied to the fitted trace before the collective I/O's nested calls are
//! derived from it (so that an aggregator's accesses follow the data to where it really is,
//! holes of new nodes included) and before the dealt metadata flush is put back (the oracle
//! gave its entries at their real addresses, which may be inside a predicted chunk: the new
//! node sits where the inputs' layout put one). It moves the addresses of the calls on the
//! HDF5 files (the MPI-IO handles and descriptors opened on a path an `H5Fcreate` or
//! `H5Fopen` named): explicit offsets of `pread`/`pwrite`, of MPI-IO's `*_at` calls through a
//! byte view, a file view's displacement and the byte displacements of the types that make
//! its filetype.

use crate::error::{ExtrapError, Quantity, Reason, Site};
use crate::hdf5::space::{self, OracleRun, Remembered};
use rsd::op::{Op, Param};
use rsd::trace::{Event, Node, NodeKind, visit};
use rsd::value::{Elastic, Val};
use rsd::{RawEvent, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The note of an extrapolation whose data addresses were relocated.
pub const NOTE: &str = "the addresses of HDF5's dataset data relocated where the HDF5 oracle \
     puts the storage at the target (a split chunk index moved it)";

/// A piece of the map: predicted bytes `from..from + len` are really at `to..to + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    from: u64,
    to: u64,
    len: u64,
}

/// The predicted storage of every dataset mapped to the real one, piece by piece, sorted by
/// predicted address; an address outside every piece is not a dataset's and stays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Relocation {
    pieces: Vec<Piece>,
    /// The reads (address, length) the oracle's replay at the target made of its files inside
    /// the calls it replayed: metadata a real run reads where it makes those calls (a NetCDF
    /// file's opening reads every object header back), let through where a fit reads them.
    known_reads: BTreeSet<(i64, i64)>,
}

/// A dataset's name and its runs of storage (address, length) in the order of its
/// elements, as [`crate::hdf5::space::OracleRun::storage`] holds them.
pub(crate) type Dataset = (String, Vec<(u64, u64)>);

/// Every dataset's storage.
pub(crate) type Storage = [Dataset];

impl Relocation {
    /// The map from `predicted` (each dataset's storage as the inputs' layout puts it at
    /// `target` ranks) to `real` (the oracle's), or why there is none: another dataset
    /// count, another size of a dataset, predicted storage of two datasets overlapping.
    pub(crate) fn between(
        predicted: &Storage,
        real: &Storage,
        target: u32,
    ) -> Result<Self, String> {
        if predicted.len() != real.len() {
            return Err(format!(
                "at {target} ranks the HDF5 oracle creates {} datasets, the inputs' layout {}",
                real.len(),
                predicted.len()
            ));
        }
        let mut pieces = Vec::new();
        for ((name, p), (_, r)) in predicted.iter().zip(real) {
            let (sp, sr) = (total(p), total(r));
            if sp != sr {
                return Err(format!(
                    "at {target} ranks HDF5 stores {sr} bytes of dataset {name}, where the \
                     inputs' layout puts {sp}"
                ));
            }
            // Walk both lists of runs by the elements' byte position in the dataset.
            let (mut i, mut j, mut oi, mut oj) = (0, 0, 0u64, 0u64);
            while i < p.len() && j < r.len() {
                let len = (p[i].1 - oi).min(r[j].1 - oj);
                if len > 0 {
                    pieces.push(Piece {
                        from: p[i].0 + oi,
                        to: r[j].0 + oj,
                        len,
                    });
                }
                oi += len;
                oj += len;
                if oi == p[i].1 {
                    (i, oi) = (i + 1, 0);
                }
                if oj == r[j].1 {
                    (j, oj) = (j + 1, 0);
                }
            }
        }
        pieces.sort_by_key(|p| p.from);
        // Adjacent in both layouts: one piece, so a write across them stays one write.
        let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
        for p in pieces {
            match merged.last_mut() {
                Some(m) if m.from + m.len > p.from => {
                    return Err(format!(
                        "the inputs' layout puts two datasets' storage at {} at {target} ranks",
                        p.from
                    ));
                }
                Some(m) if m.from + m.len == p.from && m.to + m.len == p.to => m.len += p.len,
                _ => merged.push(p),
            }
        }
        Ok(Relocation {
            pieces: merged,
            known_reads: BTreeSet::new(),
        })
    }

    /// Whether every address stays where it is.
    pub(crate) fn is_identity(&self) -> bool {
        self.pieces.iter().all(|p| p.from == p.to)
    }

    /// Whether the `len` bytes (at least one) at predicted address `x` are inside one piece:
    /// a dataset's data.
    pub(crate) fn inside(&self, x: i64, len: i64) -> bool {
        let (Ok(ux), Ok(len)) = (u64::try_from(x), u64::try_from(len.max(1))) else {
            return false;
        };
        self.piece_from(ux)
            .is_some_and(|p| p.from <= ux && ux.saturating_add(len) <= p.from + p.len)
    }

    /// The first piece that ends after `x` (the one holding it, if any).
    fn piece_from(&self, x: u64) -> Option<&Piece> {
        let k = self.pieces.partition_point(|p| p.from + p.len <= x);
        self.pieces.get(k)
    }

    /// Where the `len` bytes (at least one) at predicted address `x` really are: moved with
    /// the piece they are in, or left where they are outside every dataset's storage; an
    /// extent across the edge of a piece is split by the move and has no one address.
    pub(crate) fn map(&self, x: i64, len: i64) -> Result<i64, String> {
        let (Ok(ux), len) = (u64::try_from(x), u64::try_from(len.max(1)).unwrap_or(1)) else {
            return Ok(x);
        };
        let end = ux.saturating_add(len);
        match self.piece_from(ux) {
            Some(p) if p.from <= ux && end <= p.from + p.len => Ok((p.to + (ux - p.from)) as i64),
            Some(p) if p.from < end => Err(format!(
                "the {len} bytes at {x} cross the edge of a dataset's storage that the new \
                 chunk index nodes move ({}..{} goes to {})",
                p.from,
                p.from + p.len,
                p.to
            )),
            _ => Ok(x),
        }
    }
}

fn total(runs: &[(u64, u64)]) -> u64 {
    runs.iter().map(|r| r.1).sum()
}

/// What relocates a fitted trace's data addresses: the oracle and its replays of the inputs
/// (one per scale of `ns` ranks), made when the dealt model found the chunk index splitting.
pub(crate) struct Relocator<'a> {
    pub(crate) oracle: &'a Remembered<'a>,
    pub(crate) inputs: Vec<std::sync::Arc<OracleRun>>,
    pub(crate) ns: Vec<i64>,
    pub(crate) models: &'a models::ModelSet,
}

impl Relocator<'_> {
    /// Relocates the data addresses of `out` (a fitted extrapolation to its rank count, its
    /// nested collective calls not derived yet, its dealt flush not put back) from where the
    /// fit puts them (the inputs' layout) to where the oracle's replay at the target stores
    /// each dataset. Returns how many values changed.
    pub(crate) fn apply(&self, out: &mut TraceFile) -> Result<usize, String> {
        let n = out.header.nranks;
        let there = space::replay(
            self.oracle,
            &out.trace.rank_events(0),
            out.header.hdf5_version().as_deref(),
        )?;
        let refs: Vec<&OracleRun> = self.inputs.iter().map(|r| r.as_ref()).collect();
        let predicted = space::predicted_storage(&refs, &self.ns, n, self.models)?;
        let mut m = Relocation::between(&predicted, &there.storage, n)?;
        m.known_reads = reads_in_calls(&there);
        if m.is_identity() {
            // Nothing moves, but a split index is read back node by node: rank 0's reads say
            // whether HDF5 reads metadata (every rank reads the same).
            rank(&mut out.trace.rank_events(0), &m).map_err(|e| format!("at {n} ranks: {e}"))?;
            return Ok(0);
        }
        if n > crate::DERIVE_LIMIT {
            return Err(format!(
                "at {n} ranks HDF5's dataset storage moves, and relocating the data's \
                 addresses expands every rank; it is done up to {}",
                crate::DERIVE_LIMIT
            ));
        }
        let changed = relocate_trace(&mut out.trace, n, &m)?;
        if changed > 0 {
            out.header.notes.push(NOTE.into());
        }
        Ok(changed)
    }

    /// [`Relocator::apply`], a failure refusing the extrapolation: the data's addresses go
    /// where HDF5 stores the data at the target before anything is derived from them (the
    /// collective I/O's nested calls) or put back at real addresses (the flushes).
    pub(crate) fn apply_or_refuse(&self, out: &mut TraceFile) -> Result<(), ExtrapError> {
        let target = out.header.nranks;
        self.apply(out).map_err(|why| {
            let values = "each dataset's storage in the HDF5 oracle's replays of the inputs and \
                          the target"
                .into();
            let tried = "the inputs' layout mapped onto the HDF5 oracle's storage at the target";
            let hint = format!(
                "pick a target before the chunk index splits, or trace scales past the split \
                 ({target} ranks' index is larger than every input's)"
            );
            let site = Site::Model {
                op: None,
                what: "HDF5's dataset storage",
            };
            let param = Quantity::Model {
                name: "data addresses",
            };
            let how = (values, tried.into(), hint);
            let why = Reason::Library {
                by: crate::pipeline::PassId::DealtWrites,
                why,
            };
            ExtrapError::refused(site, param, why, how)
        })?;
        Ok(())
    }
}

/// Relocates every rank of `trace` (`n` ranks). Each rank is relocated whole (a type and the
/// view it becomes may be in different nodes); then the values that changed are written back
/// into the nodes they came from, which keep their structure: the fit's loops follow the
/// containers (an HDF5 call and the calls it made), and the containers are nested again
/// after the extrapolation (a compressor run on the lifted calls would start loops in the
/// middle of a container's calls). Timing and every other value stay as fitted.
fn relocate_trace(trace: &mut rsd::Trace, n: u32, m: &Relocation) -> Result<usize, String> {
    let mut changed = 0;
    let mut moved: Vec<Vec<RawEvent>> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let mut events = trace.rank_events(r);
        changed += rank(&mut events, m).map_err(|e| format!("at {n} ranks, rank {r}: {e}"))?;
        moved.push(events);
    }
    if changed == 0 {
        return Ok(0);
    }
    // Per event of the trace (by address) and parameter, every rank's values with their loop
    // indices, in the order `rank_events` expanded them.
    // First the parameters that changed anywhere, then every rank's values of those.
    let mut changed_params = HashSet::new();
    let mut samples: Samples = HashMap::new();
    for record in [false, true] {
        for (r, events) in moved.iter().enumerate() {
            let mut at = 0;
            let mut p = Pairing {
                rank: r as u32,
                changed: &mut changed_params,
                record,
                out: &mut samples,
            };
            p.pair(&trace.nodes, &mut Vec::new(), events, &mut at)?;
            if at != events.len() {
                return Err(format!(
                    "rank {r}'s relocated calls do not line up with the trace"
                ));
            }
        }
    }
    write_back(&mut trace.nodes, &samples)?;
    Ok(changed)
}

/// Per event (its address) and parameter: per rank, its values at their loop indices.
type Samples = HashMap<(usize, usize), BTreeMap<u32, Vec<(Vec<u64>, i64)>>>;

/// Pairs one rank's events of the trace with its relocated calls: first (`record` false)
/// finding the parameters (event address, index) whose value changed, then recording every
/// value of those.
struct Pairing<'a> {
    rank: u32,
    changed: &'a mut HashSet<(usize, usize)>,
    record: bool,
    out: &'a mut Samples,
}

impl Pairing<'_> {
    /// Pairs the events of `nodes` as the rank runs them with `raws` (from `*at` on: their
    /// expansion, relocated).
    fn pair(
        &mut self,
        nodes: &[Node],
        idx: &mut Vec<u64>,
        raws: &[RawEvent],
        at: &mut usize,
    ) -> Result<(), String> {
        let rank = self.rank;
        let mut err = None;
        visit(nodes, rank, idx, &mut |e, idx| {
            let Some(raw) = raws.get(*at) else {
                err = Some(format!(
                    "rank {rank} has fewer relocated calls than the trace"
                ));
                return false;
            };
            *at += 1;
            if raw.op != e.op {
                err = Some(format!(
                    "rank {rank}'s relocated {} stands where the trace has {}",
                    raw.op.name(),
                    e.op.name()
                ));
                return false;
            }
            let key = e as *const Event as usize;
            for (i, &v) in raw.params.iter().enumerate() {
                if !self.record {
                    if e.params[i].start_member(rank, idx) != v {
                        self.changed.insert((key, i));
                    }
                } else if self.changed.contains(&(key, i)) {
                    self.out
                        .entry((key, i))
                        .or_default()
                        .entry(rank)
                        .or_default()
                        .push((idx.clone(), v));
                }
            }
            let mut child_at = 0;
            if let Err(e) = self.pair(&e.children, idx, &raw.children, &mut child_at) {
                err = Some(e);
                return false;
            }
            true
        });
        err.map_or(Ok(()), Err)
    }
}

/// Writes the relocated values of `samples` into the events of `nodes`, each parameter
/// that changed anywhere rebuilt from every rank's values.
fn write_back(nodes: &mut [Node], samples: &Samples) -> Result<(), String> {
    for n in nodes.iter_mut() {
        match &mut n.kind {
            NodeKind::Event(e) => {
                let key = &*e as *const Event as usize;
                for i in 0..e.params.len() {
                    let Some(per_rank) = samples.get(&(key, i)) else {
                        continue;
                    };
                    // Every rank of the event, the unchanged ones evaluated as they stand.
                    let mut pts = Vec::new();
                    for r in n.ranks.to_vec() {
                        let val = match per_rank.get(&r) {
                            Some(s) => fit_val(s)?,
                            None => e.params[i]
                                .for_rank(r)
                                .ok_or_else(|| format!("no value of rank {r}"))?,
                        };
                        pts.push((r, val));
                    }
                    e.params[i] = Elastic::canonical(&pts);
                }
                write_back(&mut e.children, samples)?;
            }
            NodeKind::Loop(l) => write_back(&mut l.body, samples)?,
        }
    }
    Ok(())
}

/// One rank's values of a parameter over its loop indices as a value: constant, linear in
/// the indices, or explicit over the outermost loop.
fn fit_val(samples: &[(Vec<u64>, i64)]) -> Result<Val<i64>, String> {
    let Some((first, v0)) = samples.first() else {
        return Err("a parameter with no values".into());
    };
    let depth = first.len();
    if samples.iter().all(|(_, v)| v == v0) {
        return Ok(Val::Const(*v0));
    }
    let at = |want: &dyn Fn(usize) -> u64| {
        samples
            .iter()
            .find(|(i, _)| (0..depth).all(|d| i[d] == want(d)))
            .map(|s| s.1)
    };
    if let Some(base) = at(&|_| 0) {
        let strides: Option<Vec<i64>> = (0..depth)
            .map(|d| at(&|k| u64::from(k == d)).map(|v| v - base))
            .collect();
        if let Some(strides) = strides {
            let lin = |i: &[u64]| base + (0..depth).map(|d| strides[d] * i[d] as i64).sum::<i64>();
            if samples.iter().all(|(i, v)| lin(i) == *v) {
                return Ok(Val::Lin { base, strides });
            }
        }
    }
    if depth == 0 {
        return Err("one call with two values".into());
    }
    let count = samples.iter().map(|(i, _)| i[0]).max().unwrap_or(0) + 1;
    let mut outer = Vec::with_capacity(count as usize);
    for k in 0..count {
        let inner: Vec<(Vec<u64>, i64)> = samples
            .iter()
            .filter(|(i, _)| i[0] == k)
            .map(|(i, v)| (i[1..].to_vec(), *v))
            .collect();
        outer.push(fit_val(&inner)?);
    }
    Ok(Val::Seq(outer))
}

/// A file handle's view: displacement as fitted, displacement relocated, etype, filetype.
type View = (i64, i64, i64, i64);

/// One rank's handles on the HDF5 files and their views.
#[derive(Default)]
struct Files {
    /// The paths `H5Fcreate`/`H5Fopen` named.
    paths: HashSet<String>,
    fhs: HashSet<i64>,
    fds: HashSet<i64>,
    views: HashMap<i64, View>,
}

/// Relocates the data addresses in one rank's calls (nested, or with the containers
/// lifted). Returns how many values changed.
fn rank(events: &mut [RawEvent], m: &Relocation) -> Result<usize, String> {
    walk(events, m, &mut Files::default())
}

fn walk(events: &mut [RawEvent], m: &Relocation, f: &mut Files) -> Result<usize, String> {
    let mut changed = 0;
    for e in events.iter() {
        if matches!(e.op, Op::H5Fcreate | Op::H5Fopen)
            && let Some(p) = &e.path
        {
            f.paths.insert(p.clone());
        }
    }
    changed += types_of_views(events, m, f)?;
    for e in events.iter_mut() {
        let on_file = |p: Option<&String>| p.is_some_and(|p| f.paths.contains(p));
        match e.op {
            Op::FileOpen if on_file(e.path.as_ref()) => {
                f.fhs.insert(e.op.param(&e.params, Param::Fh));
            }
            Op::Open | Op::Creat if on_file(e.path.as_ref()) => {
                f.fds.insert(e.op.param(&e.params, Param::Fd));
            }
            _ => {}
        }
        let mine =
            e.op.get(&e.params, Param::Fh)
                .is_some_and(|h| f.fhs.contains(&h))
                || e.op
                    .get(&e.params, Param::Fd)
                    .is_some_and(|d| f.fds.contains(&d));
        if mine {
            changed += one(e, m, &mut f.views)?;
        }
        match e.op {
            Op::FileClose => {
                f.fhs.remove(&e.op.param(&e.params, Param::Fh));
            }
            Op::Close => {
                f.fds.remove(&e.op.param(&e.params, Param::Fd));
            }
            _ => {}
        }
        changed += walk(&mut e.children, m, f)?;
    }
    Ok(changed)
}

/// The view of handle `fh` (displacement as fitted, relocated) where it is a byte view (the
/// default view too): only there is an explicit offset a byte address; through a filetype,
/// the view's displacement and the type's displacements carry the place.
fn byte_view(views: &HashMap<i64, View>, fh: i64) -> Option<(i64, i64)> {
    let (disp, moved, etype, ftype) =
        views
            .get(&fh)
            .copied()
            .unwrap_or((0, 0, rsd::mpi::BYTE, rsd::mpi::BYTE));
    (etype == rsd::mpi::BYTE && ftype == rsd::mpi::BYTE).then_some((disp, moved))
}

/// Relocates one call's own addresses.
fn one(e: &mut RawEvent, m: &Relocation, views: &mut HashMap<i64, View>) -> Result<usize, String> {
    let op = e.op;
    let p = &mut e.params;
    let set = |i: usize, v: i64, p: &mut Vec<i64>| {
        if p[i] != v {
            p[i] = v;
            1
        } else {
            0
        }
    };
    let idx = |q: Param| op.index(q);
    // A metadata read the oracle made too stays where it is (HDF5 reads ahead: an object
    // header's read may run into a dataset's storage).
    if op.dir() == rsd::op::Dir::Read && read_of_data(op, p, m, views)? {
        return Ok(0);
    }
    Ok(match op {
        Op::Pwrite | Op::Pread | Op::Pwritev | Op::Preadv => {
            let (Some(o), Some(r)) = (idx(Param::Offset), idx(Param::Ret)) else {
                return Ok(0);
            };
            // A vector's length is what it moved.
            let len = p.get(idx(Param::Count).unwrap_or(r)).copied().unwrap_or(0);
            let v = m.map(p[o], len)?;
            set(o, v, p)
        }
        Op::Lseek if op.param(p, Param::Whence) == 0 => {
            let (o, r) = (
                idx(Param::Offset).expect("lseek"),
                idx(Param::Ret).expect("lseek"),
            );
            let v = m.map(p[o], 1)?;
            set(o, v, p) + set(r, v, p)
        }
        Op::FileWriteAt
        | Op::FileWriteAtAll
        | Op::FileReadAt
        | Op::FileReadAtAll
        | Op::FileIwriteAt
        | Op::FileIreadAt => {
            let Some((disp, moved)) = byte_view(views, op.param(p, Param::Fh)) else {
                return Ok(0);
            };
            let o = idx(Param::Offset).expect("an explicit offset");
            let bytes = op.param(p, Param::Bytes);
            let v = m.map(disp + p[o], bytes)? - moved;
            set(o, v, p)
        }
        Op::FileSetView => {
            let d = idx(Param::Disp).expect("a view");
            let disp = p[d];
            let v = m.map(disp, 1)?;
            let n = set(d, v, p);
            views.insert(
                op.param(p, Param::Fh),
                (
                    disp,
                    v,
                    op.param(p, Param::Etype),
                    op.param(p, Param::Filetype),
                ),
            );
            n
        }
        _ => 0,
    })
}

/// The reads (address, length) `run` made inside its HDF5 and NetCDF calls: `pread`s, and
/// `MPI_File_read_at`s through the default view (HDF5 reads its metadata so). Not the reads
/// after its last call (the oracle reads each dataset's storage back from its files).
fn reads_in_calls(run: &OracleRun) -> BTreeSet<(i64, i64)> {
    fn all(events: &[RawEvent], out: &mut BTreeSet<(i64, i64)>) {
        for e in events {
            let p = &e.params;
            match e.op {
                Op::Pread | Op::Preadv => {
                    out.insert((
                        e.op.param(p, Param::Offset),
                        e.op.get(p, Param::Count)
                            .unwrap_or_else(|| e.op.param(p, Param::Ret)),
                    ));
                }
                Op::FileReadAt | Op::FileReadAtAll => {
                    out.insert((e.op.param(p, Param::Offset), e.op.param(p, Param::Bytes)));
                }
                _ => {}
            }
            all(&e.children, out);
        }
    }
    fn inside(events: &[RawEvent], out: &mut BTreeSet<(i64, i64)>) {
        for e in events {
            if e.op.layer().is_container() {
                all(&e.children, out);
            } else {
                inside(&e.children, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    inside(&crate::ranks::rank_events(&run.trace.trace, 0), &mut out);
    out
}

/// Refuses a read of an HDF5 file outside every dataset's (predicted) storage: HDF5 reading
/// its metadata back (the superblock, object headers, the chunk index on the way to a
/// chunk), unless the oracle's replay at the target made the same read in a call it replayed
/// (a file's opening; NetCDF's opening reads every object header). Where the chunk index
/// splits, a rank reading data reads the new nodes too, and the metadata allocated after them
/// moved: neither is modelled (the oracle replays no data reads), and a fit would read the
/// inputs' one node at the inputs' addresses. A read through a filetype is let through (HDF5
/// reads data through its types; the view's displacement is a dataset's).
///
/// Returns whether the read is one the oracle made (metadata, not to be relocated).
fn read_of_data(
    op: Op,
    p: &[i64],
    m: &Relocation,
    views: &HashMap<i64, View>,
) -> Result<bool, String> {
    let (at, len) = match op {
        Op::Pread | Op::Preadv => (
            op.param(p, Param::Offset),
            op.get(p, Param::Count)
                .unwrap_or_else(|| op.param(p, Param::Ret)),
        ),
        Op::FileReadAt | Op::FileReadAtAll | Op::FileIreadAt => {
            let Some((disp, _)) = byte_view(views, op.param(p, Param::Fh)) else {
                return Ok(false);
            };
            (disp + op.param(p, Param::Offset), op.param(p, Param::Bytes))
        }
        _ => return Ok(false),
    };
    if m.known_reads.contains(&(at, len)) {
        return Ok(true);
    }
    if m.inside(at, len) {
        return Ok(false);
    }
    Err(format!(
        "{} reads {len} bytes at {at} of the HDF5 file, outside every dataset's storage: HDF5 \
         reads its metadata back, and where the chunk index splits every rank also reads its \
         new nodes and finds the metadata allocated after them moved, which the HDF5 oracle \
         does not give (its replay at the target read no such bytes: it replays the calls \
         that create, open and extend, not those that read data)",
        op.name()
    ))
}

/// Whether `op` makes a type with byte displacements.
fn displaced(op: Op) -> bool {
    matches!(
        op,
        Op::TypeCreateHindexed | Op::TypeCreateHindexedBlock | Op::TypeCreateStruct
    )
}

/// The byte displacements of the types that become the filetype of a view of an HDF5 file
/// among `events` (siblings: a data call's children, or a rank's calls with the containers
/// lifted), relocated relative to the view's displacement: `d` becomes `map(disp + d) -
/// map(disp)`. A type becomes a filetype through `MPI_Type_create_resized`s (the latest
/// creation of each type before its use counts); a displaced type inside another displaced
/// type (whose displacements add up) is refused.
fn types_of_views(events: &mut [RawEvent], m: &Relocation, f: &Files) -> Result<usize, String> {
    // Per displaced type's creation (its index), the view displacement it is relative to.
    let mut disp_of: HashMap<usize, i64> = HashMap::new();
    let mut fhs = f.fhs.clone();
    for (i, e) in events.iter().enumerate() {
        if e.op == Op::FileOpen && e.path.as_ref().is_some_and(|p| f.paths.contains(p)) {
            fhs.insert(e.op.param(&e.params, Param::Fh));
        }
        if e.op != Op::FileSetView || !fhs.contains(&e.op.param(&e.params, Param::Fh)) {
            continue;
        }
        let disp = e.op.param(&e.params, Param::Disp);
        let mut t = e.op.param(&e.params, Param::Filetype);
        // Back from the view to the creation of its type, through resizings.
        let mut j = i;
        while let Some(k) = events[..j]
            .iter()
            .rposition(|c| c.op.get(&c.params, Param::Newtype) == Some(t))
        {
            let c = &events[k];
            if c.op == Op::TypeCreateResized {
                (t, j) = (c.op.param(&c.params, Param::Oldtype), k);
                continue;
            }
            if displaced(c.op) {
                match disp_of.insert(k, disp) {
                    Some(d) if d != disp => {
                        return Err(format!(
                            "type {t} is the filetype of views at {d} and {disp}, whose \
                             displacements relocate differently"
                        ));
                    }
                    _ => {}
                }
            }
            break;
        }
    }
    let mut changed = 0;
    for (&k, &disp) in &disp_of {
        let e = &events[k];
        if e.op != Op::TypeCreateStruct {
            let old = e.op.param(&e.params, Param::Oldtype);
            let inner = events[..k]
                .iter()
                .rev()
                .find(|c| c.op.get(&c.params, Param::Newtype) == Some(old));
            if inner.is_some_and(|c| displaced(c.op)) {
                return Err(format!(
                    "a file view's type nests the displaced type {old}, whose addresses are \
                     not relocated"
                ));
            }
        }
        let count = e.op.param(&e.params, Param::Count).max(0) as usize;
        // The displacements: after the block lengths (hindexed, struct) or first.
        let first = e.op.params().len()
            + match e.op {
                Op::TypeCreateHindexedBlock => 0,
                _ => count,
            };
        let base = m.map(disp, 1)?;
        let e = &mut events[k];
        for x in e.params.iter_mut().skip(first).take(count) {
            let v = m.map(disp + *x, 1)? - base;
            if *x != v {
                *x = v;
                changed += 1;
            }
        }
    }
    Ok(changed)
}
#[cfg(test)]
mod tests {
    use super::*;
    use rsd::op::args;

    fn storage(runs: &[(&str, &[(u64, u64)])]) -> Vec<(String, Vec<(u64, u64)>)> {
        runs.iter()
            .map(|(n, r)| (n.to_string(), r.to_vec()))
            .collect()
    }

    /// A chunked dataset predicted in one run of 4 chunks of 64 B; really a node of 100 B
    /// sits after its second chunk.
    fn split() -> Relocation {
        let p = storage(&[("rows", &[(1000, 256)]), ("step", &[(2000, 800)])]);
        let r = storage(&[
            ("rows", &[(1000, 128), (1228, 128)]),
            ("step", &[(2100, 800)]),
        ]);
        Relocation::between(&p, &r, 32).unwrap()
    }

    #[test]
    fn an_address_maps_through_the_elements_position() {
        let m = split();
        assert!(!m.is_identity());
        assert_eq!(m.map(1000, 64), Ok(1000));
        assert_eq!(m.map(1064, 64), Ok(1064));
        assert_eq!(m.map(1128, 64), Ok(1228));
        assert_eq!(m.map(1192, 64), Ok(1292));
        assert_eq!(m.map(2000, 800), Ok(2100));
        assert_eq!(m.map(2400, 8), Ok(2500));
        // Outside every dataset: the metadata, the file's start.
        assert_eq!(m.map(0, 1), Ok(0));
        assert_eq!(m.map(1256, 10), Ok(1256));
        // A write of both halves of `rows` is two writes at the target.
        assert!(m.map(1064, 128).unwrap_err().contains("cross the edge"));
        assert!(m.map(900, 200).is_err());
    }

    #[test]
    fn the_same_layout_is_the_identity_and_other_sizes_are_refused() {
        let p = storage(&[("rows", &[(1000, 128), (1500, 128)])]);
        let m = Relocation::between(&p, &p, 8).unwrap();
        assert!(m.is_identity());
        assert_eq!(m.map(1510, 4), Ok(1510));
        let r = storage(&[("rows", &[(1000, 128), (1500, 192)])]);
        let e = Relocation::between(&p, &r, 8).unwrap_err();
        assert!(e.contains("stores 320 bytes of dataset rows"), "{e}");
        let o = storage(&[("a", &[(1000, 128)]), ("b", &[(1100, 8)])]);
        assert!(
            Relocation::between(&o, &o, 8)
                .unwrap_err()
                .contains("two datasets")
        );
    }

    /// The HDF5 file `f.h5` created and opened (MPI-IO handle 0, descriptor 3), and
    /// another file opened (handle 1, descriptor 4).
    fn opened() -> Vec<RawEvent> {
        let with_path = |mut e: RawEvent, p: &str| {
            e.path = Some(p.into());
            e
        };
        vec![
            with_path(RawEvent::new(Op::H5Fcreate, 1, vec![2, 0]), "f.h5"),
            with_path(
                RawEvent::new(Op::FileOpen, 2, args::file_open(0, 37, 0)),
                "f.h5",
            ),
            with_path(RawEvent::new(Op::Open, 3, args::open(66, 420, 3)), "f.h5"),
            with_path(
                RawEvent::new(Op::FileOpen, 2, args::file_open(0, 37, 1)),
                "g",
            ),
            with_path(RawEvent::new(Op::Open, 3, args::open(66, 420, 4)), "g"),
        ]
    }

    /// HDF5's collective write of a contiguous dataset: a hindexed type resized into the
    /// filetype of a view at the dataset's address (displacement relative to it); an
    /// independent write of a chunk: `MPI_File_write_at` with its `pwrite`; the containers
    /// lifted (their calls follow them). A write to another file at the same address stays.
    #[test]
    fn a_ranks_data_calls_move_and_other_files_stay() {
        let m = split();
        let mut hindexed = args::type_create_hindexed(1, 1001, 1002);
        hindexed.extend([1, 400]);
        let mut at = RawEvent::new(Op::FileWriteAt, 8, args::file_write_at(0, 1128, 64, 4, 64));
        at.children = vec![RawEvent::new(Op::Pwrite, 9, args::pwrite(3, 64, 1128, 64))];
        let mut other = RawEvent::new(Op::FileWriteAt, 8, args::file_write_at(1, 1128, 64, 4, 64));
        other.children = vec![RawEvent::new(Op::Pwrite, 9, args::pwrite(4, 64, 1128, 64))];
        let mut events = opened();
        events.extend([
            RawEvent::new(Op::H5Dwrite, 1, vec![5, 6, 4, 1, 8, 50, 400]),
            RawEvent::new(Op::TypeCreateHindexed, 2, hindexed),
            RawEvent::new(
                Op::TypeCreateResized,
                3,
                args::type_create_resized(1002, 0, 800, 1003),
            ),
            RawEvent::new(Op::FileSetView, 4, args::file_set_view(0, 2000, 4, 1003)),
            RawEvent::new(
                Op::FileWriteAtAll,
                5,
                args::file_write_at_all(0, 0, 400, 4, 400),
            ),
            RawEvent::new(Op::FileSetView, 6, args::file_set_view(0, 0, 4, 4)),
            RawEvent::new(Op::H5Dwrite, 7, vec![2, 3, 7, 0, 4, 16, 64]),
            at,
            other,
        ]);
        let before = events.clone();
        assert_eq!(rank(&mut events, &m), Ok(3));
        let view = &events[8];
        assert_eq!(view.op.param(&view.params, Param::Disp), 2100);
        // Relative to the view, which moved with the dataset: unchanged.
        assert_eq!(events[6].params, before[6].params);
        let at = &events[12];
        assert_eq!(at.op.param(&at.params, Param::Offset), 1228);
        let pw = &at.children[0];
        assert_eq!(pw.op.param(&pw.params, Param::Offset), 1228);
        assert_eq!(events[13], before[13]);
    }

    /// A rank's relocated values over its loops: constant, linear in the indices, or, where
    /// a new node breaks the stride, explicit over the outer loop.
    #[test]
    fn a_ranks_values_are_refitted_over_its_loops() {
        let s = |v: &[(&[u64], i64)]| -> Vec<(Vec<u64>, i64)> {
            v.iter().map(|(i, x)| (i.to_vec(), *x)).collect()
        };
        assert_eq!(fit_val(&s(&[(&[0], 7), (&[1], 7)])), Ok(Val::Const(7)));
        assert_eq!(
            fit_val(&s(&[
                (&[0, 0], 10),
                (&[0, 1], 12),
                (&[1, 0], 110),
                (&[1, 1], 112)
            ])),
            Ok(Val::Lin {
                base: 10,
                strides: vec![100, 2]
            })
        );
        assert_eq!(
            fit_val(&s(&[(&[0], 1000), (&[1], 1064), (&[2], 1228)])),
            Ok(Val::Seq(vec![
                Val::Const(1000),
                Val::Const(1064),
                Val::Const(1228)
            ]))
        );
        assert!(fit_val(&s(&[(&[], 1), (&[], 2)])).is_err());
    }

    /// HDF5's chunk fill in `H5Dset_extent`: a hindexed filetype of absolute chunk addresses
    /// under a view at 0; a chunk across the new node's place is refused.
    #[test]
    fn absolute_displacements_of_a_view_at_zero_move() {
        let m = split();
        let mut hindexed = args::type_create_hindexed(2, 4, 1004);
        hindexed.extend([64, 64, 1064, 1128]);
        let mut events = opened();
        events.extend([
            RawEvent::new(Op::TypeCreateHindexed, 2, hindexed),
            RawEvent::new(Op::FileSetView, 3, args::file_set_view(0, 0, 4, 1004)),
        ]);
        assert_eq!(rank(&mut events, &m), Ok(1));
        let t = &events[5];
        assert_eq!(&t.params[t.params.len() - 2..], &[1064, 1228]);
        // A read of metadata (outside the datasets) is refused, a read of data moves.
        let mut meta = opened();
        meta.push(RawEvent::new(Op::Pread, 9, args::pread(3, 96, 0, 96)));
        assert!(rank(&mut meta, &m).unwrap_err().contains("metadata back"));
        let mut data = opened();
        data.push(RawEvent::new(Op::Pread, 9, args::pread(3, 64, 1128, 64)));
        assert_eq!(rank(&mut data, &m), Ok(1));
        let mut across = opened();
        across.push(RawEvent::new(
            Op::Pwrite,
            9,
            args::pwrite(3, 128, 1064, 128),
        ));
        assert!(
            rank(&mut across, &m)
                .unwrap_err()
                .contains("cross the edge")
        );
    }
}
