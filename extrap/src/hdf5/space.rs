//! HDF5's file space at the target, from the HDF5 library itself.
//!
//! Where parallel HDF5 puts its metadata (object headers, heaps, the chunk index's B-tree
//! nodes) and its chunks depends on the sequence of collective HDF5 calls and on their
//! dimensions only: every rank makes the same allocations, and none depends on the rank
//! count as such. So rank 0's HDF5 calls, with the dimensions of n ranks, replayed on ONE
//! rank through the real parallel HDF5 (an *oracle*, `iotrex-h5oracle`), allocate what the
//! n-rank run allocated, and its metadata flush writes the same entries: a chunk index that
//! splits between the inputs and the target, with its new nodes and everything the
//! allocator moved after them, is then known without modelling the allocator (its two
//! aggregators, their blocks and free-space rules).
//!
//! The oracle is trusted only where it reproduces every input: each flush's entries at every
//! input scale must be a run of the oracle's metadata writes at that scale, the same run
//! (the same HDF5 call, the same ordinal) at every scale, and each rank must have written
//! its entries in the oracle's order. Then, at the target, the dealt model
//! ([`crate::hdf5::dealt`]) deals the oracle's entries (its count, offsets, sizes and order) in
//! place of entries fitted against n.
//!
//! Running the oracle means running an MPI program, which the `extrap` library does not do
//! itself: the CLI registers a runner ([`set_oracle`]); without one, a split index is
//! refused as before.

use crate::error::ExtrapError;
use crate::library::LibraryModel;
use crate::pipeline::PassId;
use crate::request::Cx;
use crate::{Extrapolated, Input};
use rsd::op::{Layer, Op, Param};
use rsd::trace::{Node, NodeKind};
use rsd::value::{RankFn, Val};
use rsd::{RawEvent, TraceFile};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The values of the file's layout HDF5's calls see, as a library model: where HDF5's file
/// space was taken from its oracle for the flush ([`mark_from_oracle`]), the other values of
/// the layout are taken from it too ([`settle`]).
pub(crate) struct FileSpace;

impl LibraryModel for FileSpace {
    fn settle(
        &self,
        cx: Cx,
        original: &[Input],
        lifted: Option<&rsd::trace::Lifts>,
        out: &mut Extrapolated,
    ) -> Result<(), ExtrapError> {
        let Some(o) = cx.oracle else {
            return Ok(());
        };
        if !out
            .file
            .header
            .provenance
            .as_ref()
            .is_some_and(|p| p.oracle_layout)
        {
            return Ok(());
        }
        let mut sorted: Vec<&TraceFile> = original.iter().map(|i| &i.file).collect();
        sorted.sort_by_key(|f| f.header.nranks);
        sorted.dedup_by_key(|f| f.header.nranks);
        settle(
            o,
            &sorted,
            &mut out.file,
            crate::hdf5::dealt::DEALT_OPS,
            lifted,
        )
        .map_err(|why| ExtrapError::ConfigDiffers { why })?;
        out.acted(PassId::FileSpace);
        Ok(())
    }
}

/// A one-rank replay of rank 0's HDF5 calls.
pub struct OracleRun {
    /// The replay's own trace (one rank, HDF5 layer on): each HDF5 call with the MPI, MPI-IO
    /// and POSIX calls it made as its children.
    pub trace: TraceFile,
    /// For each HDF5 call of that trace (depth first, in call order), the index of the call
    /// it replays among the replayed program's rank 0's HDF5 calls (depth first, in call
    /// order, every HDF5 call counted).
    pub steps: Vec<usize>,
    /// Each dataset's storage after the replay, in creation order: its name and the runs of
    /// consecutive bytes it holds (address, length), in the order of its elements (a
    /// contiguous dataset one run; a chunked one, its chunks in coordinate order, adjacent
    /// ones merged).
    pub storage: Vec<(String, Vec<(u64, u64)>)>,
}

/// Replays rank 0's HDF5 calls through the HDF5 library.
pub trait Oracle: Send + Sync {
    /// Replays the HDF5 calls among `events` (rank 0's calls, nested or with the containers
    /// lifted) on one rank through HDF5 `version` (as the trace's notes name it), or says why
    /// it cannot.
    fn replay(&self, events: &[RawEvent], version: Option<&str>) -> Result<OracleRun, String>;
}

/// An oracle with the replays it made during one extrapolation: the dealt model, the
/// collective flushes and [`settle`] replay the same inputs and target, and a replay is an MPI
/// run. Made by `crate::run` for each request, so nothing outlives the extrapolation.
pub(crate) struct Remembered<'a> {
    oracle: &'a dyn Oracle,
    runs: Mutex<HashMap<String, Arc<OracleRun>>>,
}

impl<'a> Remembered<'a> {
    /// `oracle`, remembering nothing yet.
    pub(crate) fn new(oracle: &'a dyn Oracle) -> Self {
        Remembered {
            oracle,
            runs: Mutex::new(HashMap::new()),
        }
    }
}

/// Says in `h` that HDF5's file space was taken from the oracle: the typed provenance (what
/// [`FileSpace`] settles by) and the note.
pub(crate) fn mark_from_oracle(h: &mut rsd::Header) {
    crate::provenance::of_mut(h).oracle_layout = true;
    h.notes.push(NOTE.into());
}

/// The note of an extrapolation that took HDF5's file space from the oracle.
pub const NOTE: &str = "HDF5's metadata entries (and the values of the file's layout its calls \
     return) taken from rank 0's HDF5 calls (a NetCDF program's NetCDF calls) replayed on one \
     rank through the HDF5 library (iotrex-h5oracle), checked against every input";

/// The oracle's replay of `events` (rank 0's), remembered.
pub(crate) fn replay(
    o: &Remembered,
    events: &[RawEvent],
    version: Option<&str>,
) -> Result<Arc<OracleRun>, String> {
    fn key(events: &[RawEvent], out: &mut String) {
        for e in events {
            // A NetCDF program is replayed at that layer: its calls' values are the plan's.
            if matches!(e.op.layer(), Layer::Hdf5 | Layer::Netcdf) {
                out.push_str(&format!("{}{:?}{:?};", e.op.name(), e.path, e.params));
            }
            key(&e.children, out);
        }
    }
    let mut k = format!("{version:?};");
    key(events, &mut k);
    if let Some(r) = o.runs.lock().map_err(|e| e.to_string())?.get(&k) {
        return Ok(r.clone());
    }
    let r = Arc::new(o.oracle.replay(events, version)?);
    o.runs
        .lock()
        .map_err(|e| e.to_string())?
        .insert(k, r.clone());
    Ok(r)
}

/// The oracle's replay of rank 0 of each of `inputs` (remembered), or which input it could
/// not replay and why.
pub(crate) fn replay_inputs(
    o: &Remembered,
    inputs: &[&crate::Input],
) -> Result<Vec<Arc<OracleRun>>, String> {
    inputs
        .iter()
        .map(|i| {
            replay(
                o,
                &crate::ranks::rank_events(&i.file.trace, 0),
                i.file.header.hdf5_version().as_deref(),
            )
            .map_err(|e| {
                format!(
                    "the HDF5 oracle could not replay {} ({} ranks): {e}",
                    i.name, i.file.header.nranks
                )
            })
        })
        .collect()
}

/// Where a run of the oracle's metadata writes is: inside the HDF5 call replaying step
/// `.0` (`.1` true), or after it, outside any HDF5 call (`.1` false: h5py closes its file
/// with `H5Idec_ref`, which the layer does not record, so that close's writes follow the
/// last recorded call); `.2` counts the runs at that place.
pub(crate) type RunId = (usize, bool, usize);

/// The oracle's runs of metadata writes (consecutive calls of `ops` among siblings), each
/// in the order written.
pub(crate) fn runs(run: &OracleRun, ops: &[Op]) -> Result<BTreeMap<RunId, Vec<RawEvent>>, String> {
    struct Walk<'a> {
        steps: &'a [usize],
        next: usize,
        ops: &'a [Op],
        out: BTreeMap<RunId, Vec<RawEvent>>,
        count: BTreeMap<(usize, bool), usize>,
        error: Option<String>,
    }
    impl Walk<'_> {
        /// `events` are siblings inside step `inside` (None: at the top level, after step
        /// `last`); returns the last step started among them (HDF5 calls beneath a NetCDF
        /// call are steps too, and writes after that call follow them).
        fn siblings(
            &mut self,
            events: &[RawEvent],
            inside: Option<usize>,
            mut last: usize,
        ) -> usize {
            let mut i = 0;
            while i < events.len() {
                let e = &events[i];
                if self.ops.contains(&e.op) {
                    let start = i;
                    while i < events.len() && self.ops.contains(&events[i].op) {
                        i += 1;
                    }
                    let place = (inside.unwrap_or(last), inside.is_some());
                    let c = self.count.entry(place).or_insert(0);
                    self.out
                        .insert((place.0, place.1, *c), events[start..i].to_vec());
                    *c += 1;
                    continue;
                }
                if e.op.layer() == Layer::Hdf5 {
                    let Some(&at) = self.steps.get(self.next) else {
                        self.error = Some(format!(
                            "the replay made more HDF5 calls ({}) than it says it replayed",
                            self.next + 1
                        ));
                        return last;
                    };
                    self.next += 1;
                    last = self.siblings(&e.children, Some(at), at);
                } else {
                    last = self.siblings(&e.children, inside, last);
                }
                i += 1;
            }
            last
        }
    }
    let events = crate::ranks::rank_events(&run.trace.trace, 0);
    let mut w = Walk {
        steps: &run.steps,
        next: 0,
        ops,
        out: BTreeMap::new(),
        count: BTreeMap::new(),
        error: None,
    };
    w.siblings(&events, None, 0);
    match w.error {
        Some(e) => Err(e),
        None => Ok(w.out),
    }
}

/// An entry's place and length in the file.
pub(crate) fn extent(e: &RawEvent) -> (i64, i64) {
    (
        e.op.param(&e.params, Param::Offset),
        e.op.param(&e.params, Param::Count),
    )
}

/// Describes a run's place for messages.
pub(crate) fn describe(id: &RunId) -> String {
    let (at, inside, k) = *id;
    format!(
        "run {} of metadata writes {} HDF5 call {}",
        k + 1,
        if inside { "in" } else { "after" },
        at + 1
    )
}

/// Whose calls a value is among: an HDF5 call's (its step), or a NetCDF call's own (those
/// not inside its HDF5 calls: NetCDF's look at the file before HDF5 opens it), named by the
/// step of its first HDF5 call (a NetCDF call that made none has no place).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Place {
    Hdf5(usize),
    Netcdf(usize),
}

/// One value of the file's layout: parameter `.3` of the `.2`-th call of op `.1` among the
/// calls of place `.0` (those of the dealt ops left out: they are the flush's).
type Key = (Place, Op, usize, usize);

/// The calls each replayed HDF5 call made, and each NetCDF call's own, keyed by place, from
/// `events` (one rank's, nested) whose HDF5 calls are numbered as the steps are (`steps`:
/// step of the k-th HDF5 call; `None`: the k-th is step k, the replayed program's own
/// numbering).
fn made(events: &[RawEvent], steps: Option<&[usize]>) -> HashMap<Place, Vec<RawEvent>> {
    fn walk(
        events: &[RawEvent],
        steps: Option<&[usize]>,
        k: &mut usize,
        out: &mut HashMap<Place, Vec<RawEvent>>,
    ) {
        let step = |k: usize| steps.map_or(Some(k), |s| s.get(k).copied());
        for e in events {
            if e.op.layer() == Layer::Hdf5 {
                let at = step(*k);
                *k += 1;
                if let Some(at) = at {
                    out.insert(Place::Hdf5(at), e.children.clone());
                }
            }
            if e.op.layer() == Layer::Netcdf
                && makes_hdf5(e)
                && let Some(at) = step(*k)
            {
                let own = e
                    .children
                    .iter()
                    .filter(|c| c.op.layer() != Layer::Hdf5)
                    .cloned()
                    .collect();
                out.insert(Place::Netcdf(at), own);
            }
            walk(&e.children, steps, k, out);
        }
    }
    let mut out = HashMap::new();
    walk(events, steps, &mut 0, &mut out);
    out
}

/// Per (op, ordinal among that op's calls), the calls `children` holds and the calls they
/// made, depth first, dealt ops (and what they made) left out.
fn by_op<'a>(children: &'a [RawEvent], dealt: &[Op]) -> Vec<((Op, usize), &'a RawEvent)> {
    fn walk<'a>(
        events: &'a [RawEvent],
        dealt: &[Op],
        seen: &mut HashMap<Op, usize>,
        out: &mut Vec<((Op, usize), &'a RawEvent)>,
    ) {
        // A NetCDF call's own calls leave its HDF5 calls out (they are places of their own).
        for c in events
            .iter()
            .filter(|c| !dealt.contains(&c.op) && c.op.layer() != Layer::Hdf5)
        {
            let k = seen.entry(c.op).or_insert(0);
            *k += 1;
            out.push(((c.op, *k - 1), c));
            walk(&c.children, dealt, seen, out);
        }
    }
    let mut out = Vec::new();
    walk(children, dealt, &mut HashMap::new(), &mut out);
    out
}

/// Sets, in `nodes` (the calls of a place, compressed) and the calls they made, depth first
/// as [`by_op`] numbers rank 0's, each value `holds` says is the oracle's to the oracle's
/// (`theirs`), in calls of rank 0 alone, or of every one of the `n` ranks where every call
/// of that op before them was too (`partial`: the ops of calls some rank did not make, so
/// that each rank numbers the calls of the others as rank 0 does). Stops at a loop, past
/// which the numbering is not one rank's. Returns how many values changed.
#[allow(clippy::too_many_arguments)]
fn set_values(
    nodes: &mut [Node],
    n: u32,
    at: Place,
    theirs: &HashMap<(Op, usize), &RawEvent>,
    holds: &HashMap<Key, bool>,
    dealt: &[Op],
    seen: &mut HashMap<Op, usize>,
    partial: &mut HashSet<Op>,
) -> Option<usize> {
    /// The ops of `nodes` and of the calls they made.
    fn ops(nodes: &[Node], out: &mut HashSet<Op>) {
        for c in nodes {
            match &c.kind {
                NodeKind::Event(e) => {
                    out.insert(e.op);
                    ops(&e.children, out);
                }
                NodeKind::Loop(l) => ops(&l.body, out),
            }
        }
    }
    let mut set = 0;
    for c in nodes.iter_mut() {
        let alone = c.ranks.len() == 1 && c.ranks.contains(0);
        let every = c.ranks.len() == u64::from(n);
        if !c.ranks.contains(0) {
            ops(std::slice::from_ref(c), partial);
            continue;
        }
        let NodeKind::Event(ce) = &mut c.kind else {
            return None;
        };
        if dealt.contains(&ce.op) || ce.op.layer() == Layer::Hdf5 {
            continue;
        }
        let ord = seen.entry(ce.op).or_insert(0);
        *ord += 1;
        let key = (ce.op, *ord - 1);
        let numbered = alone || (every && !partial.contains(&ce.op));
        if !every {
            partial.insert(ce.op);
        }
        if let Some(t) = theirs.get(&key).filter(|_| numbered) {
            let op = ce.op;
            for (i, p) in ce.params.iter_mut().enumerate() {
                if holds.get(&(at, key.0, key.1, i)) != Some(&true) || !of_layout(op, i) {
                    continue;
                }
                // The oracle's one rank says one value: where the fit gives the ranks other
                // values (a collective flush's write, of an entry on some ranks and none on
                // others), the value is not one of every rank's.
                let one = p
                    .groups
                    .iter()
                    .all(|g| matches!(g.val, Val::Const(RankFn::Const(_))))
                    && p.groups.windows(2).all(|w| w[0].val == w[1].val);
                if !alone && !one {
                    continue;
                }
                let Some(&v) = t.params.get(i) else { continue };
                for g in p.groups.iter_mut() {
                    if g.val != Val::Const(RankFn::Const(v)) {
                        g.val = Val::Const(RankFn::Const(v));
                        set += 1;
                    }
                }
            }
        }
        set += set_values(&mut ce.children, n, at, theirs, holds, dealt, seen, partial)?;
    }
    Some(set)
}

/// Whether parameter `i` of `op` is a value of the file's layout (a size, an offset, a
/// returned position or length): the oracle's one rank numbers its identifiers (datatypes,
/// communicators, requests, handles) as it goes, and a rank of the target, whose calls before
/// may differ from rank 0's, numbers them otherwise.
fn of_layout(op: Op, i: usize) -> bool {
    matches!(
        op.params().get(i),
        Some(
            Param::Size | Param::Offset | Param::Ret | Param::Length | Param::Count | Param::Bytes
        )
    )
}

/// Puts the oracle's values of the file's layout into `out` (an extrapolation to its rank
/// count, nested), where the inputs (`inputs`, nested, one per scale) say they are the
/// oracle's: a parameter of a call an HDF5 call made (the file's size HDF5 asks for at a
/// flush, a truncation) whose value equals, on every rank that made the call at every input
/// scale, the value the oracle's replay of that scale gave. Only the calls of HDF5 calls
/// outside loops are set (an HDF5 call inside a loop has one value per iteration); those in
/// loops keep their fitted values, checked by nothing here. `dealt`: the flush's writes,
/// which the dealt model set. `lifted`: the lifting's call sites where `out` kept the lifted
/// form (an HDF5 call followed by the calls it made, which lifting gave its sites).
pub(crate) fn settle(
    o: &Remembered,
    inputs: &[&TraceFile],
    out: &mut TraceFile,
    dealt: &[Op],
    lifted: Option<&rsd::trace::Lifts>,
) -> Result<usize, String> {
    // Per key, whether every observation agreed with the oracle.
    let mut holds: HashMap<Key, bool> = HashMap::new();
    // Whether every size of the file seen after the last HDF5 call, on every rank of every
    // input, is the file's size the oracle saw when HDF5 closed it (and one was seen).
    let mut size_after: Option<bool> = None;
    for tf in inputs {
        let n = tf.header.nranks;
        let version = tf.header.hdf5_version();
        let run = replay(
            o,
            &crate::ranks::rank_events(&tf.trace, 0),
            version.as_deref(),
        )?;
        let oracle = made(
            &crate::ranks::rank_events(&run.trace.trace, 0),
            Some(&run.steps),
        );
        let closed = closing_size(&run);
        for r in 0..n {
            let events = crate::ranks::rank_events(&tf.trace, r);
            for v in sizes_after_hdf5(&events) {
                *size_after.get_or_insert(true) &= Some(v) == closed;
            }
            let mine = made(&events, None);
            for (at, theirs) in &oracle {
                let Some(calls) = mine.get(at) else { continue };
                let theirs: HashMap<(Op, usize), &RawEvent> =
                    by_op(theirs, dealt).into_iter().collect();
                for (key, c) in by_op(calls, dealt) {
                    let Some(t) = theirs.get(&key) else { continue };
                    if t.params.len() != c.params.len() {
                        continue;
                    }
                    for (i, (a, b)) in c.params.iter().zip(&t.params).enumerate() {
                        let h = holds.entry((*at, key.0, key.1, i)).or_insert(true);
                        *h &= a == b;
                    }
                }
            }
        }
    }
    let run = replay(
        o,
        &crate::ranks::rank_events(&out.trace, 0),
        out.header.hdf5_version().as_deref(),
    )?;
    let oracle = made(
        &crate::ranks::rank_events(&run.trace.trace, 0),
        Some(&run.steps),
    );
    let n = out.header.nranks;
    let mut w = Settle {
        n,
        oracle: &oracle,
        holds: &holds,
        dealt,
        lifted,
        k: 0,
        set: 0,
    };
    w.nodes(&mut out.trace.nodes);
    let mut set = w.set;
    // The program's own look at the file's size once HDF5 is done with it (IOR's
    // `MPI_File_get_size` after `H5Fclose`): the size HDF5 left, the oracle's at the target.
    if size_after == Some(true)
        && let Some(size) = closing_size(&run)
    {
        let last = out.trace.nodes.iter().rposition(has_hdf5);
        let from = last.map_or(0, |i| i + 1);
        set += set_sizes(&mut out.trace.nodes[from..], size);
    }
    Ok(set)
}

/// The walk of [`settle`] over the output: rank 0's HDF5 calls in order (`k` counts them),
/// setting the values of the calls each made, and of each NetCDF call's own calls.
struct Settle<'a> {
    n: u32,
    oracle: &'a HashMap<Place, Vec<RawEvent>>,
    holds: &'a HashMap<Key, bool>,
    dealt: &'a [Op],
    lifted: Option<&'a rsd::trace::Lifts>,
    k: usize,
    set: usize,
}

impl Settle<'_> {
    /// Sets the values of place `at` in `calls` (nodes of rank 0's calls).
    fn place(&mut self, at: Place, calls: &mut [Node]) {
        let Some(theirs) = self.oracle.get(&at) else {
            return;
        };
        let theirs: HashMap<(Op, usize), &RawEvent> =
            by_op(theirs, self.dealt).into_iter().collect();
        self.set += set_values(
            calls,
            self.n,
            at,
            &theirs,
            self.holds,
            self.dealt,
            &mut HashMap::new(),
            &mut HashSet::new(),
        )
        .unwrap_or(0);
    }

    /// The HDF5 and NetCDF calls among `nodes` (top-level nodes, or a NetCDF call's calls),
    /// as nodes, outside loops.
    fn nodes(&mut self, nodes: &mut [Node]) {
        let mut j = 0;
        while j < nodes.len() {
            let (head, rest) = nodes.split_at_mut(j + 1);
            let node = &mut head[j];
            j += 1;
            if !node.ranks.contains(0) {
                continue;
            }
            match &mut node.kind {
                NodeKind::Event(e) if e.op.layer() == Layer::Hdf5 => {
                    let at = self.k;
                    self.k += 1;
                    // Its calls: its children, or in the lifted form the top-level calls after
                    // it that lifting took out of it (none of them an HDF5 call).
                    let calls = match self.lifted {
                        Some(l) if e.children.is_empty() => {
                            let made = rest
                                .iter()
                                .take_while(|c| match &c.kind {
                                    NodeKind::Event(x) => {
                                        l.parts(x.sig).is_some_and(|p| p.1 == e.sig)
                                    }
                                    NodeKind::Loop(_) => false,
                                })
                                .count();
                            j += made;
                            &mut rest[..made]
                        }
                        _ => &mut e.children[..],
                    };
                    self.place(Place::Hdf5(at), calls);
                }
                // A NetCDF call with its calls nested: its own, then its HDF5 calls'. (In the
                // lifted form its own calls are not set.)
                NodeKind::Event(e)
                    if e.op.layer() == Layer::Netcdf && e.children.iter().any(has_hdf5) =>
                {
                    let at = Place::Netcdf(self.k);
                    self.place(at, &mut e.children);
                    self.nodes(&mut e.children);
                }
                // The HDF5 calls in a loop or beneath another call are counted as rank 0
                // makes them; none is set.
                _ => self.k += hdf5_calls(std::slice::from_ref(node)),
            }
        }
    }
}

/// The file's size HDF5 saw last in the oracle's replay (its `MPI_File_get_size` when it
/// closes the file: the end of everything it allocated).
fn closing_size(run: &OracleRun) -> Option<i64> {
    fn last(events: &[RawEvent], out: &mut Option<i64>) {
        for e in events {
            if e.op == Op::FileGetSize {
                *out = Some(e.op.param(&e.params, Param::Size));
            }
            last(&e.children, out);
        }
    }
    let mut out = None;
    last(&crate::ranks::rank_events(&run.trace.trace, 0), &mut out);
    out
}

/// Whether `c` is a file-size observation: `MPI_File_get_size`'s size, `lseek(SEEK_END)`'s
/// position (parameter index).
fn size_param(op: Op, params: &[i64]) -> Option<usize> {
    match op {
        Op::FileGetSize => op.index(Param::Size),
        Op::Lseek if op.param(params, Param::Whence) == 2 => op.index(Param::Ret),
        _ => None,
    }
}

/// The sizes of files one rank's calls (`events`) see after its last HDF5 call.
fn sizes_after_hdf5(events: &[RawEvent]) -> Vec<i64> {
    fn collect(events: &[RawEvent], out: &mut Vec<i64>) {
        for e in events {
            if let Some(i) = size_param(e.op, &e.params) {
                out.push(e.params[i]);
            }
            collect(&e.children, out);
        }
    }
    let from = events.iter().rposition(makes_hdf5).map_or(0, |i| i + 1);
    let mut out = Vec::new();
    collect(&events[from..], &mut out);
    out
}

/// Whether `e` is an HDF5 call or made one.
fn makes_hdf5(e: &RawEvent) -> bool {
    e.op.layer() == Layer::Hdf5 || e.children.iter().any(makes_hdf5)
}

/// Whether an HDF5 call is in `n` (loops and nested calls looked into).
fn has_hdf5(n: &Node) -> bool {
    match &n.kind {
        NodeKind::Event(e) => e.op.layer() == Layer::Hdf5 || e.children.iter().any(has_hdf5),
        NodeKind::Loop(l) => l.body.iter().any(has_hdf5),
    }
}

/// Sets every file-size observation in `nodes` to `size`; returns how many values changed.
fn set_sizes(nodes: &mut [Node], size: i64) -> usize {
    let mut set = 0;
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                let params: Vec<i64> = e.params.iter().map(|p| p.start_member(0, &[])).collect();
                if let Some(i) = size_param(e.op, &params) {
                    for g in e.params[i].groups.iter_mut() {
                        if g.val != Val::Const(RankFn::Const(size)) {
                            g.val = Val::Const(RankFn::Const(size));
                            set += 1;
                        }
                    }
                }
                set += set_sizes(&mut e.children, size);
            }
            NodeKind::Loop(l) => set += set_sizes(&mut l.body, size),
        }
    }
    set
}

/// How many HDF5 calls rank 0 makes in `nodes`, nested ones included.
fn hdf5_calls(nodes: &[Node]) -> usize {
    let mut count = 0;
    let mut idx = Vec::new();
    rsd::trace::visit(nodes, 0, &mut idx, &mut |e, _| {
        if e.op.layer() == Layer::Hdf5 {
            count += 1;
        }
        count += hdf5_calls(&e.children);
        true
    });
    count
}

/// Each dataset's storage at `target` ranks where the inputs' layout puts it, which is where
/// the fitted trace puts the data: each dataset's runs of storage at every input (`inputs`,
/// one replay per scale of `ns` ranks) fitted exactly against n (run count, each run's
/// address and length). Where the oracle's storage at the target is elsewhere (a split index
/// placed between chunks, storage moved by the new nodes), [`crate::hdf5::relocate`] maps one to
/// the other; a layout the inputs do not predict is refused, saying where.
pub(crate) fn predicted_storage(
    inputs: &[&OracleRun],
    ns: &[i64],
    target: u32,
    models: &models::ModelSet,
) -> Result<Vec<crate::hdf5::relocate::Dataset>, String> {
    let predict = |ys: &[i64]| -> Option<i64> {
        if ys.iter().all(|&y| y == ys[0]) {
            return Some(ys[0]);
        }
        match crate::numbers::agree_at(ns, ys, target, models) {
            models::exact::Agreement::Agree(_, v) => Some(v),
            _ => None,
        }
    };
    let Some(first) = inputs.first() else {
        return Ok(Vec::new());
    };
    if inputs
        .iter()
        .any(|r| r.storage.len() != first.storage.len())
    {
        return Err("the replays of the inputs create other numbers of datasets".into());
    }
    let mut out = Vec::with_capacity(first.storage.len());
    for (d, (name, _)) in first.storage.iter().enumerate() {
        let count: Vec<i64> = inputs.iter().map(|r| r.storage[d].1.len() as i64).collect();
        let Some(c) = predict(&count).and_then(|c| usize::try_from(c).ok()) else {
            return Err(format!(
                "the inputs store dataset {name} in {count:?} separate runs of bytes at {ns:?} \
                 ranks, which predict none at {target}"
            ));
        };
        let mut runs = Vec::with_capacity(c);
        for k in 0..c {
            let mut run = [0u64; 2];
            for (what, slot) in ["address", "length"].into_iter().zip(&mut run) {
                let ys: Vec<i64> = inputs
                    .iter()
                    .map(|r| {
                        r.storage[d]
                            .1
                            .get(k)
                            .map_or(-1, |x| (if what == "address" { x.0 } else { x.1 }) as i64)
                    })
                    .collect();
                *slot = predict(&ys)
                    .and_then(|v| u64::try_from(v).ok())
                    .ok_or_else(|| {
                        format!(
                            "the {what} of run {} of dataset {name}'s storage ({ys:?} at {ns:?} \
                             ranks) predicts none at {target}",
                            k + 1
                        )
                    })?;
            }
            runs.push((run[0], run[1]));
        }
        out.push((name.clone(), runs));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::LibraryModel;
    use crate::patterns::{Pattern, trace_file};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An oracle that cannot replay (no HDF5 here), counting how often it was asked.
    #[derive(Default)]
    struct Refusing(AtomicUsize);

    impl Oracle for Refusing {
        fn replay(&self, _: &[RawEvent], _: Option<&str>) -> Result<OracleRun, String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err("no HDF5 library here".into())
        }
    }

    fn inputs() -> Vec<Input> {
        (4..=16)
            .step_by(4)
            .map(|n| Input {
                name: format!("strong.{n}.iotrex"),
                file: trace_file(Pattern::Strong, n),
            })
            .collect()
    }

    fn cx<'a>(models: &'a crate::ModelSet, oracle: Option<&'a Remembered<'a>>) -> Cx<'a> {
        Cx {
            oracle,
            ..Cx::for_tests(models)
        }
    }

    /// The file space is taken from the oracle only where the output's layout came from it:
    /// without an oracle, or with one for an output the oracle did not lay out, the output is
    /// left as it is and the oracle is never asked; where it did, the oracle's failure is the
    /// refusal, naming its reason.
    #[test]
    fn the_file_space_is_settled_only_where_the_oracle_laid_it_out() {
        let (ins, models) = (inputs(), crate::ModelSet::builtin());
        let x = crate::request::as_given(&ins, 64, &models).unwrap();
        let o = Refusing::default();
        let remembered = Remembered::new(&o);
        for oracle in [None, Some(&remembered)] {
            let mut out = x.clone();
            FileSpace
                .settle(cx(&models, oracle), &ins, None, &mut out)
                .unwrap();
            assert_eq!(out.file, x.file);
            assert!(!out.passes.contains(&PassId::FileSpace));
        }
        assert_eq!(o.0.load(Ordering::SeqCst), 0);
        let mut out = x.clone();
        out.file.header.provenance = Some(rsd::provenance::Provenance {
            oracle_layout: true,
            ..Default::default()
        });
        let e = FileSpace
            .settle(cx(&models, Some(&remembered)), &ins, None, &mut out)
            .unwrap_err();
        assert!(e.to_string().contains("no HDF5 library here"), "{e}");
        assert!(o.0.load(Ordering::SeqCst) > 0);
    }
}
