//! The "end of the file so far" model of shared-file dumps written in turns.
//!
//! A code that dumps to one shared file in turns (LAMMPS's `dump atom/mpiio`: rank 0 writes a
//! header with `MPI_File_write_at`, then every rank its block with `MPI_File_write_at_all`, dump
//! after dump) places each write at the end of the data written so far: the header at the end
//! of the previous dump, each block at the header's end plus the exclusive prefix sum of the
//! lower ranks' block lengths. The header's and the blocks' lengths are data-dependent text, so
//! the offsets are no function of `n` or of the rank, and [`crate::prefix`]'s model (a sum over
//! one call site) leaves a start per dump that differs at every scale.
//!
//! [`FileEnd`] ([`Val::FileEnd`]) says it as it is: `offset = start + end of file + exscan(of)`,
//! where "end of file" is the largest `offset + length` of the writes to the same handle, over
//! every rank and call site, in the turns before this call, and `exscan(of)` (when `of` is set)
//! the sum of the lower ranks' `of` in the same turn. A nested call of an independent write (the
//! library's `pwrite` of the header) holds it with no `of`: the end of its parent's file before
//! its parent's turn.
//!
//! A call that sets the file's size before the writes that fill it (LAMMPS's
//! `MPI_File_set_size(end of the dump)` before the dump, and the `ftruncate` OMPIO makes inside
//! it) holds the same value on its size ([`sizing`]): there "end of file" is the end the
//! file's writes reach before the file's next sizing call that follows a write (or after its
//! last write), not the end before the call's turn. The op says which end a [`FileEnd`] is.
//!
//! A "turn" is the `c`-th call of one call site on one handle (as in [`crate::prefix`]); the
//! turns of a file are ordered by every rank's own order of its calls (a topological merge: the
//! header of dump `k` comes after rank 0's block of dump `k-1` and before its block of dump `k`,
//! the other ranks' blocks of dump `k` are the same turn as rank 0's). The model is recognised
//! only where the inputs' exact values fit it, every call of the event on every rank
//! ([`recognise`]), and only on a file where the prefix-sum model left a start that is not one
//! constant (or an irregular offset it did not take), so traces it already models keep their
//! bytes. [`resolve`] computes every rank's offsets from the sizes the trace holds (exact,
//! extrapolated or drawn), in turn order, so the layout stays contiguous and non-overlapping at
//! any scale. Each rank's expansion needs every rank's sizes of the earlier turns; the
//! compressed trace holds them as functions of the rank (or summaries, which count as their
//! typical value: draw them first).

use crate::op::{Dir, Op, Param};
use crate::ranks::RankSet;
use crate::trace::{Event, Node, NodeKind, Trace};
use crate::value::{Elastic, Group, RankFn, Val};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// `offset = start + end of file + exscan(of)` ([`Val::FileEnd`]); on a call that sets the
/// file's size ([`sizing`]), `size = start + the end the file's writes reach before its next
/// sizing call`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileEnd<T> {
    /// The index of the parameter whose exclusive prefix sum over the ranks of the same turn is
    /// added (`count`), or none (a call one rank makes, or a nested call at its parent's end).
    pub of: Option<u32>,
    /// Added: a value over the enclosing loops, the same on every rank (0 where the file
    /// starts empty).
    pub start: Val<T>,
}

/// An event's place in the node tree: indices from the top, a nested call's list after its
/// parent's (`usize::MAX` marks the step into the children). The same in a clone.
type Path = Vec<usize>;

const CHILDREN: usize = usize::MAX;

/// Where a write keeps its offset, handle, summable size and length.
struct Io {
    offset: usize,
    handle: usize,
    /// The size a sum over ranks adds (`count`, else `bytes`).
    size: usize,
    /// The length of its region, in the offset's unit where the view is of bytes (`bytes`,
    /// else `count`).
    extent: usize,
}

fn io(op: Op) -> Option<Io> {
    if op.dir() != Dir::Write {
        return None;
    }
    let ps = op.params();
    let at = |p: Param| ps.iter().position(|&q| q == p);
    let offset = at(Param::Offset)?;
    let handle = at(Param::Fh).or_else(|| at(Param::Fd))?;
    let size = at(Param::Count).or_else(|| at(Param::Bytes))?;
    let extent = at(Param::Bytes).or_else(|| at(Param::Count))?;
    Some(Io {
        offset,
        handle,
        size,
        extent,
    })
}

/// Where a call that sets a file's size keeps its handle and the size it sets.
struct Sizing {
    handle: usize,
    size: usize,
}

/// The calls that set a file's size to a value a program computes from what it then writes
/// (`MPI_File_set_size`, `ftruncate`): their model is the end the writes that follow reach.
fn sizing(op: Op) -> Option<Sizing> {
    let ps = op.params();
    let at = |p: Param| ps.iter().position(|&q| q == p);
    match op {
        Op::FileSetSize => Some(Sizing {
            handle: at(Param::Fh)?,
            size: at(Param::Size)?,
        }),
        Op::Ftruncate => Some(Sizing {
            handle: at(Param::Fd)?,
            size: at(Param::Length)?,
        }),
        _ => None,
    }
}

/// Whether `op` sets a file's size ([`sizing`]): its [`FileEnd`] is the end ahead of it.
pub fn sets_size(op: Op) -> bool {
    sizing(op).is_some()
}

/// The parameter the model sits on: a write's offset, a sizing call's size.
fn slot(op: Op) -> Option<usize> {
    io(op)
        .map(|l| l.offset)
        .or_else(|| sizing(op).map(|s| s.size))
}

/// One write of one rank to a file, or a call that sets its size (`sets`).
struct Call {
    path: Path,
    idx: Vec<u64>,
    offset: i64,
    size: i64,
    extent: i64,
    /// Whether its offset is a byte position in the file: no file view, or one of bytes from
    /// displacement 0 (HDF5 writes its datasets' data through views of hindexed types, whose
    /// offsets 0 say nothing of where the bytes land).
    bytes: bool,
    /// The writes nested in it (an independent call's): path, indices, offset.
    nested: Vec<(Path, Vec<u64>, i64)>,
    /// Where the bytes it wrote end as its nested calls wrote them (the library's POSIX
    /// writes, a collective call's on its aggregators), when it made any.
    below: Option<i64>,
    /// A call that sets the file's size (`offset` holds the size; it moves no end), its
    /// `nested` the sizing calls inside it (OMPIO's `ftruncate`).
    sets: bool,
}

/// Whether an `MPI_File_set_view` leaves offsets byte positions: displacement 0, and the
/// etype and filetype one predefined type of one byte.
fn view_of_bytes(e: &Event, rank: u32, idx: &[u64]) -> Option<(i64, bool)> {
    let at = |p: Param| e.op.index(p).map(|k| e.params[k].start_member(rank, idx));
    let fh = at(Param::Fh)?;
    let (disp, etype, filetype) = (at(Param::Disp)?, at(Param::Etype)?, at(Param::Filetype)?);
    let byte = crate::mpi::predefined(etype).is_some_and(|t| t.size == 1);
    Some((fh, disp == 0 && etype == filetype && byte))
}

/// A file: a handle's kind and value. A turn: (op, call site, ordinal) on it.
type File = (usize, i64);
type Turn = (Op, u64, usize);

/// Every rank's writes per file, in call order, with each call's turn.
type Calls = HashMap<File, BTreeMap<u32, Vec<(Turn, Call)>>>;

/// What [`walk`] hands each event: the event, its call site, its loop indices, its path.
type Visit<'a> = dyn FnMut(&Event, u64, &[u64], &Path) + 'a;

/// Every event `rank` executes in `nodes`, in order, with its call site, loop indices and
/// path. A container's calls (a library layer's: an `H5Dwrite`'s MPI-IO calls) follow it, with
/// the sites lifting gives them, as [`crate::trace::visit_lifted`] hands them out: the model
/// reads the calls that touch the file whichever form the trace is in (nested as the tracer
/// writes it, lifted as extrap fits it), so recognising and resolving it agree.
fn walk(
    nodes: &[Node],
    rank: u32,
    container: Option<u64>,
    idx: &mut Vec<u64>,
    path: &mut Path,
    f: &mut Visit<'_>,
) {
    for (k, n) in nodes.iter().enumerate() {
        if !n.ranks.contains(rank) {
            continue;
        }
        path.push(k);
        match &n.kind {
            NodeKind::Event(e) => {
                let site = container.map_or(e.sig, |c| crate::trace::lifted_site(e.sig, c));
                f(e, site, idx, path);
                if e.op.layer().is_container() {
                    path.push(CHILDREN);
                    walk(&e.children, rank, Some(site), idx, path, f);
                    path.pop();
                }
            }
            NodeKind::Loop(l) => {
                if idx.len() < crate::value::MAX_DEPTH {
                    let iters = l.iters.start_member(rank, idx).max(0) as u64;
                    idx.push(0);
                    for i in 0..iters {
                        *idx.last_mut().expect("pushed") = i;
                        walk(&l.body, rank, container, idx, path, f);
                    }
                    idx.pop();
                }
            }
        }
        path.pop();
    }
}

/// Every rank's writes per file, those inside containers included ([`walk`]), with their
/// turns by lifted call site (offsets as the trace evaluates them: resolve models first where
/// they matter), and the calls that set a file's size ([`sizing`]).
fn collect(trace: &Trace) -> Calls {
    let mut files: Calls = HashMap::new();
    trace.ranks().for_each(|rank| {
        let mut seen: HashMap<(File, Op, u64), usize> = HashMap::new();
        // Per MPI file handle, whether its view leaves offsets byte positions.
        let mut views: HashMap<i64, bool> = HashMap::new();
        walk(
            &trace.nodes,
            rank,
            None,
            &mut Vec::new(),
            &mut Vec::new(),
            &mut |e, site, idx, path| {
                if e.op == Op::FileSetView {
                    if let Some((fh, bytes)) = view_of_bytes(e, rank, idx) {
                        views.insert(fh, bytes);
                    }
                    return;
                }
                let Some((file, call)) = write_call(e, rank, idx, path, &views)
                    .or_else(|| size_call(e, rank, idx, path))
                else {
                    return;
                };
                let ord = seen.entry((file, e.op, site)).or_default();
                let turn = (e.op, site, *ord);
                *ord += 1;
                let calls = files.entry(file).or_default().entry(rank).or_default();
                calls.push((turn, call));
            },
        );
    });
    files
}

/// A write of `rank` to its file: its offset and sizes, where its nested calls' bytes end, and
/// (an independent call's) its nested writes.
fn write_call(
    e: &Event,
    rank: u32,
    idx: &[u64],
    path: &Path,
    views: &HashMap<i64, bool>,
) -> Option<(File, Call)> {
    let l = io(e.op)?;
    let p = |k: usize| e.params[k].start_member(rank, idx);
    let file = (l.handle, p(l.handle));
    let bytes = e.op.params()[l.handle] != Param::Fh || views.get(&file.1).copied().unwrap_or(true);
    let mut below: Option<i64> = None;
    walk(
        &e.children,
        rank,
        None,
        &mut idx.to_vec(),
        &mut Vec::new(),
        &mut |c, _, cidx, _| {
            if let Some(cl) = io(c.op) {
                let o = c.params[cl.offset].start_member(rank, cidx);
                let len = c.params[cl.extent].start_member(rank, cidx);
                let end = o.wrapping_add(len);
                below = Some(below.map_or(end, |b| b.max(end)));
            }
        },
    );
    // A collective write's nested calls are the library's collective buffering, which extrap
    // derives from the ranks' regions (`collio`): not modelled here.
    let nested = if e.op == Op::FileWriteAtAll {
        Vec::new()
    } else {
        nested_values(e, rank, idx, path, &|op| io(op).map(|l| l.offset))
    };
    let call = Call {
        path: path.clone(),
        idx: idx.to_vec(),
        offset: p(l.offset),
        size: p(l.size),
        extent: p(l.extent),
        bytes,
        nested,
        below,
        sets: false,
    };
    Some((file, call))
}

/// A call of `rank` that sets its file's size, with the sizing calls nested in it; it writes
/// nothing, so it moves no end.
fn size_call(e: &Event, rank: u32, idx: &[u64], path: &Path) -> Option<(File, Call)> {
    let s = sizing(e.op)?;
    let p = |k: usize| e.params[k].start_member(rank, idx);
    let call = Call {
        path: path.clone(),
        idx: idx.to_vec(),
        offset: p(s.size),
        size: 0,
        extent: 0,
        bytes: false,
        nested: nested_values(e, rank, idx, path, &|op| sizing(op).map(|s| s.size)),
        below: None,
        sets: true,
    };
    Some(((s.handle, p(s.handle)), call))
}

/// The calls nested in `e` whose parameter `at` gives: path, loop indices, value.
fn nested_values(
    e: &Event,
    rank: u32,
    idx: &[u64],
    path: &Path,
    at: &dyn Fn(Op) -> Option<usize>,
) -> Vec<(Path, Vec<u64>, i64)> {
    let mut out = Vec::new();
    let mut cpath = path.clone();
    cpath.push(CHILDREN);
    walk(
        &e.children,
        rank,
        None,
        &mut idx.to_vec(),
        &mut cpath,
        &mut |c, _, cidx, cp| {
            if let Some(k) = at(c.op) {
                out.push((
                    cp.clone(),
                    cidx.to_vec(),
                    c.params[k].start_member(rank, cidx),
                ));
            }
        },
    );
    out
}

/// The turns of a file in an order every rank's own order agrees with (a topological merge,
/// the lowest rank's next turn first among those ready), or `None` when the ranks' orders
/// contradict each other.
fn order(calls: &BTreeMap<u32, Vec<(Turn, Call)>>) -> Option<Vec<Turn>> {
    let mut members: HashMap<Turn, usize> = HashMap::new();
    for cs in calls.values() {
        for (t, _) in cs {
            *members.entry(*t).or_default() += 1;
        }
    }
    let ranks: Vec<&Vec<(Turn, Call)>> = calls.values().collect();
    let mut head = vec![0usize; ranks.len()];
    let mut at_head: HashMap<Turn, Vec<usize>> = HashMap::new();
    for (r, cs) in ranks.iter().enumerate() {
        if let Some((t, _)) = cs.first() {
            at_head.entry(*t).or_default().push(r);
        }
    }
    let mut ready: VecDeque<Turn> = VecDeque::new();
    let mut queued: HashSet<Turn> = HashSet::new();
    let check = |t: &Turn,
                 at_head: &HashMap<Turn, Vec<usize>>,
                 ready: &mut VecDeque<Turn>,
                 queued: &mut HashSet<Turn>| {
        if at_head.get(t).map_or(0, Vec::len) == members[t] && queued.insert(*t) {
            ready.push_back(*t);
        }
    };
    let firsts: Vec<Turn> = ranks
        .iter()
        .filter_map(|cs| cs.first().map(|c| c.0))
        .collect();
    for t in &firsts {
        check(t, &at_head, &mut ready, &mut queued);
    }
    let mut out = Vec::with_capacity(members.len());
    while let Some(t) = ready.pop_front() {
        out.push(t);
        for r in at_head.remove(&t).unwrap_or_default() {
            head[r] += 1;
            if let Some((n, _)) = ranks[r].get(head[r]) {
                at_head.entry(*n).or_default().push(r);
                check(n, &at_head, &mut ready, &mut queued);
            }
        }
    }
    (out.len() == members.len()).then_some(out)
}

/// Walks a file's calls turn by turn: `f(rank, call, end, lower)` gets the end of the file
/// before the call's turn and the lower ranks' sizes in it, and returns the call's offset
/// (which the end after the turn is taken from). A call that sets the size gets the end ahead
/// of it instead: the end before the file's next sizing turn that follows a write, or after
/// the file's last turn (its return is not used). `None` when the turns have no order.
fn turns(
    calls: &BTreeMap<u32, Vec<(Turn, Call)>>,
    f: &mut dyn FnMut(u32, &Call, i64, i64) -> i64,
) -> Option<()> {
    let order = order(calls)?;
    let mut by_turn: HashMap<Turn, Vec<(u32, &Call)>> = HashMap::new();
    for (&rank, cs) in calls {
        for (t, c) in cs {
            by_turn.entry(*t).or_default().push((rank, c));
        }
    }
    // The sizing turns that wait for the end ahead of them: settled by the next sizing turn
    // after a write (from any call site: LAMMPS sets the size of its first dump from its
    // setup and of the others from its time-step loop), or by the file's last turn.
    let mut waiting: Vec<Turn> = Vec::new();
    let mut wrote = false;
    let settle = |ts: &mut Vec<Turn>, end: i64, f: &mut dyn FnMut(u32, &Call, i64, i64) -> i64| {
        for t in ts.drain(..) {
            for &(rank, c) in &by_turn[&t] {
                f(rank, c, end, 0);
            }
        }
    };
    let mut end = 0i64;
    for t in order {
        if by_turn[&t].iter().any(|(_, c)| c.sets) {
            if wrote {
                settle(&mut waiting, end, f);
                wrote = false;
            }
            waiting.push(t);
            continue;
        }
        wrote = true;
        let mut lower = 0i64;
        let mut after = end;
        for &(rank, c) in &by_turn[&t] {
            let o = f(rank, c, end, lower);
            lower = lower.wrapping_add(c.size);
            // A call through a view whose offsets are no byte positions moves the end only
            // where its nested calls say its bytes went.
            if c.bytes {
                after = after.max(o.wrapping_add(c.extent));
            }
            if let Some(b) = c.below {
                after = after.max(b);
            }
        }
        end = after;
    }
    settle(&mut waiting, end, f);
    Some(())
}

/// An offset [`recognise`] found to be at the end of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognised {
    /// The event's operation.
    pub op: Op,
    /// The summed parameter's name, if a sum is added.
    pub of: Option<&'static str>,
    /// The event's ranks.
    pub ranks: RankSet,
}

fn event_at<'a>(nodes: &'a mut [Node], path: &[usize]) -> Option<&'a mut Event> {
    let (&k, rest) = path.split_first()?;
    let n = nodes.get_mut(k)?;
    match &mut n.kind {
        NodeKind::Event(e) => match rest.split_first() {
            None => Some(e),
            Some((&CHILDREN, rest)) => event_at(&mut e.children, rest),
            Some(_) => None,
        },
        NodeKind::Loop(l) => event_at(&mut l.body, rest),
    }
}

fn event_ref<'a>(nodes: &'a [Node], path: &[usize]) -> Option<&'a Event> {
    let (&k, rest) = path.split_first()?;
    match &nodes.get(k)?.kind {
        NodeKind::Event(e) => match rest.split_first() {
            None => Some(e),
            Some((&CHILDREN, rest)) => event_ref(&e.children, rest),
            Some(_) => None,
        },
        NodeKind::Loop(l) => event_ref(&l.body, rest),
    }
}

/// Whether an offset is one the prefix-sum model left data-dependent: an exact offset of more
/// than one rank group, or a prefix sum whose start is not one constant.
fn irregular(v: &Elastic) -> bool {
    match v.groups.as_slice() {
        [g] => match &g.val {
            Val::Exscan(x) => !matches!(x.start, Val::Const(RankFn::Const(_))),
            _ => false,
        },
        gs => gs.len() > 1 && !v.is_approx() && !v.is_exscan() && !v.is_file_end(),
    }
}

/// Finds the writes of `trace` whose offsets are at the end of the file so far (plus the
/// exclusive prefix sum of a size) on files where [`crate::prefix`] left an offset
/// data-dependent, and stores them as [`Val::FileEnd`]; returns what it recognised. Every call
/// of an event on every rank must fit with one constant start. Run after
/// [`crate::prefix::recognise`] (which calls it), on exact sizes.
pub fn recognise(trace: &mut Trace) -> Vec<Recognised> {
    recognise_in(trace, None)
}

/// The files (handle parameter, value) some write of `trace` holds the model on, for
/// [`recognise_again`]: at an extrapolation's target the sizes are summaries or fitted, and the
/// files where the inputs had the model are known, not found.
pub fn files(trace: &Trace) -> HashSet<(usize, i64)> {
    let mut out = HashSet::new();
    // Without any write on the model the answer is known without expanding every rank's
    // calls (`collect`), which at an extrapolation's target of 2^20 ranks took seconds.
    if !any_model(&trace.nodes) {
        return out;
    }
    for (file, calls) in collect(trace) {
        if calls.values().flatten().any(|(_, c)| {
            event_ref(&trace.nodes, &c.path).is_some_and(|e| model(e).is_some())
                || c.nested
                    .iter()
                    .any(|(p, _, _)| event_ref(&trace.nodes, p).is_some_and(|e| model(e).is_some()))
        }) {
            out.insert(file);
        }
    }
    out
}

/// [`recognise`] on the writes to `files` whatever their sizes: a trace whose offsets
/// [`resolve`] computed from summarised or fitted sizes (their typical values) gets its model
/// back where every call still fits it.
pub fn recognise_again(trace: &mut Trace, files: &HashSet<(usize, i64)>) -> Vec<Recognised> {
    recognise_in(trace, Some(files))
}

/// Whether a write of `e` can start the search on its file in [`recognise`]: exact sizes and an
/// offset the prefix-sum model left data-dependent.
fn triggers(e: &Event) -> bool {
    io(e.op).is_some_and(|l| {
        !e.params[l.size].is_approx()
            && !e.params[l.extent].is_approx()
            && irregular(&e.params[l.offset])
    })
}

/// Whether some write of `nodes` (in loops, or a call's children) holds the model.
fn any_model(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => model(e).is_some() || any_model(&e.children),
        NodeKind::Loop(l) => any_model(&l.body),
    })
}

/// Whether `e` sets a file's size to an exact value that does not hold the model yet.
fn size_open(e: &Event) -> bool {
    sizing(e.op).is_some_and(|s| {
        let v = &e.params[s.size];
        !v.is_approx() && !v.is_file_end()
    })
}

/// Whether some call of `nodes` (in loops, or a call's children) is [`size_open`].
fn any_size_open(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => size_open(e) || any_size_open(&e.children),
        NodeKind::Loop(l) => any_size_open(&l.body),
    })
}

/// Whether some write of `nodes` (in loops, or a call's children: a library layer's calls
/// hold the writes the model follows) [`triggers`].
fn any_trigger(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => triggers(e) || any_trigger(&e.children),
        NodeKind::Loop(l) => any_trigger(&l.body),
    })
}

fn recognise_in(trace: &mut Trace, again: Option<&HashSet<(usize, i64)>>) -> Vec<Recognised> {
    // A first search only looks at files where some write triggers it, or where the writes
    // hold the model and a sizing call does not yet (a trace of an older tracer): when none
    // does, the answer is known without expanding every rank's calls (`collect`), which at
    // rank 0's finalize cost ~0.1 s of CPU for 16 ranks of 16,384 writes
    // (docs/tracer-cost.md).
    if again.is_none()
        && !any_trigger(&trace.nodes)
        && !(any_model(&trace.nodes) && any_size_open(&trace.nodes))
    {
        return Vec::new();
    }
    // The events' offsets with the prefix-sum model resolved, at the same paths.
    let exact = if crate::prefix::present(trace) {
        let mut t = trace.clone();
        crate::prefix::resolve(&mut t);
        t
    } else {
        trace.clone()
    };
    let files = collect(&exact);
    // path -> (with a sum, start)
    let mut found: BTreeMap<Path, (bool, i64)> = BTreeMap::new();
    for (file, calls) in &files {
        if again.is_some_and(|f| !f.contains(file)) {
            continue;
        }
        search(trace, calls, again.is_some(), &mut found);
    }
    apply(trace, found)
}

/// Per event: a start its calls agree on, `None` once two calls disagree.
type Starts = HashMap<Path, Option<i64>>;

fn agree(m: &mut Starts, p: &Path, x: i64) {
    let e = m.entry(p.clone()).or_insert(Some(x));
    if *e != Some(x) {
        *e = None;
    }
}

/// The starts of one file's events that fit the model (with a sum or not), into `found`;
/// `again`: whatever the sizes, on a file known to hold it.
fn search(
    trace: &Trace,
    calls: &BTreeMap<u32, Vec<(Turn, Call)>>,
    again: bool,
    found: &mut BTreeMap<Path, (bool, i64)>,
) {
    // A call whose offset is no byte position (through a view) cannot be at the end.
    let not_bytes: HashSet<&Path> = calls
        .values()
        .flatten()
        .filter(|(_, c)| !c.bytes)
        .map(|(_, c)| &c.path)
        .collect();
    let all = || calls.values().flatten().map(|(_, c)| &c.path);
    let paths: HashSet<&Path> = all().filter(|p| !not_bytes.contains(p)).collect();
    let sizers: HashSet<&Path> = calls
        .values()
        .flatten()
        .filter(|(_, c)| c.sets)
        .map(|(_, c)| &c.path)
        .collect();
    let on = |p: &&Path, f: fn(&Event) -> bool| event_ref(&trace.nodes, p).is_some_and(f);
    let trigger = paths.iter().any(|p| on(p, triggers))
        || (paths.iter().any(|p| on(p, |e| model(e).is_some()))
            && sizers.iter().any(|p| on(p, size_open)));
    if !trigger && !again {
        return;
    }
    // The events with a call in a turn that other ranks' calls share.
    let mut callers: HashMap<Turn, usize> = HashMap::new();
    for (t, _) in calls.values().flatten() {
        *callers.entry(*t).or_default() += 1;
    }
    let shared: HashSet<&Path> = calls
        .values()
        .flatten()
        .filter(|(t, _)| callers[t] > 1)
        .map(|(_, c)| &c.path)
        .collect();
    // The starts under each model (with a sum, without, the end ahead of a sizing call), and
    // of the calls nested in a candidate.
    let (mut with, mut without, mut ahead) = (Starts::new(), Starts::new(), Starts::new());
    let mut nested = Starts::new();
    let mut parent_of: HashMap<Path, Path> = HashMap::new();
    let ok = turns(calls, &mut |_, c, end, lower| {
        if c.sets {
            agree(&mut ahead, &c.path, c.offset.wrapping_sub(end));
        } else {
            agree(
                &mut with,
                &c.path,
                c.offset.wrapping_sub(end).wrapping_sub(lower),
            );
            agree(&mut without, &c.path, c.offset.wrapping_sub(end));
        }
        // A nested call holds the model only with its parent.
        if c.sets || paths.contains(&c.path) {
            for (p, _, o) in &c.nested {
                agree(&mut nested, p, o.wrapping_sub(end));
                parent_of.insert(p.clone(), c.path.clone());
            }
        }
        c.offset
    });
    if ok.is_none() {
        return;
    }
    // Sizes must be exact where they are summed.
    let exact_sizes = |p: &Path| {
        event_ref(&trace.nodes, p).is_some_and(|e| {
            io(e.op)
                .is_some_and(|l| !e.params[l.size].is_approx() && !e.params[l.extent].is_approx())
        })
    };
    let before = found.len();
    for p in paths {
        if !again && !exact_sizes(p) {
            continue;
        }
        // A call one rank makes alone (the header) sums nothing; where ranks share a turn,
        // the sum is tried first (rank 0's own event of a collective write sums too).
        let (first, second) = if shared.contains(p) {
            ((&with, true), (&without, false))
        } else {
            ((&without, false), (&with, true))
        };
        if let Some(Some(s)) = first.0.get(p) {
            found.insert(p.clone(), (first.1, *s));
        } else if let Some(Some(s)) = second.0.get(p) {
            found.insert(p.clone(), (second.1, *s));
        }
    }
    // A size set ahead of the writes is taken only on a file whose writes hold the model (a
    // single call fits any end ahead of it by some start).
    let writes_hold = found.len() > before
        || calls
            .values()
            .flatten()
            .any(|(_, c)| !c.sets && on(&&c.path, |e| model(e).is_some()));
    if writes_hold {
        for (p, s) in ahead {
            if let Some(s) = s {
                found.insert(p, (false, s));
            }
        }
    }
    for (p, s) in nested {
        if let Some(s) = s
            && parent_of.get(&p).is_some_and(|q| found.contains_key(q))
        {
            found.insert(p, (false, s));
        }
    }
}

/// Stores the model at the events of `found` (their starts never negative: the model
/// appends); returns what it stored.
fn apply(trace: &mut Trace, found: BTreeMap<Path, (bool, i64)>) -> Vec<Recognised> {
    let mut done = Vec::new();
    for (p, (sum, s)) in found {
        // The model appends: a call starts at or after the end of the data so far. A negative
        // start fitted HDF5's rewrite of its superblock at offset 0 by chance (`-8067880 +
        // end of file`), which then fitted nothing across scales.
        if s < 0 {
            continue;
        }
        let Some(e) = event_at(&mut trace.nodes, &p) else {
            continue;
        };
        let Some(k) = slot(e.op) else { continue };
        let v = &mut e.params[k];
        if v.is_approx() {
            continue;
        }
        let ranks = v
            .groups
            .iter()
            .fold(RankSet::default(), |a, g| a.union(&g.ranks));
        let of = io(e.op).filter(|_| sum).map(|l| l.size as u32);
        done.push(Recognised {
            op: e.op,
            of: of.map(|k| e.op.params()[k as usize].name()),
            ranks: ranks.clone(),
        });
        *v = Elastic {
            groups: vec![Group {
                ranks,
                val: Val::FileEnd(Box::new(FileEnd {
                    of,
                    start: Val::Const(RankFn::Const(s)),
                })),
            }],
        };
    }
    done
}

/// Whether some event (or nested call) of `trace` holds the model.
pub fn present(trace: &Trace) -> bool {
    fn walk(nodes: &[Node]) -> bool {
        nodes.iter().any(|n| match &n.kind {
            NodeKind::Event(e) => e.params.iter().any(Elastic::is_file_end) || walk(&e.children),
            NodeKind::Loop(l) => walk(&l.body),
        })
    }
    walk(&trace.nodes)
}

fn model(e: &Event) -> Option<&FileEnd<RankFn>> {
    match e.params[slot(e.op)?].groups.as_slice() {
        [g] => match &g.val {
            Val::FileEnd(x) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// Replaces every [`Val::FileEnd`] of `trace` by each rank's exact offsets, computed in turn
/// order from the sizes the trace holds (run after [`crate::prefix::resolve`], which calls
/// it). Returns the number of events resolved. A file whose turns have no order keeps the
/// models' starts.
pub fn resolve(trace: &mut Trace) -> usize {
    resolve_where(trace, &|_| true)
}

/// The (op, call site) of every event of `trace` (nested calls too) whose offset holds the
/// model: what a reader compares between traces before it fits one against another.
pub fn sites(trace: &Trace) -> BTreeSet<(Op, u64)> {
    fn walk(nodes: &[Node], out: &mut BTreeSet<(Op, u64)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    if model(e).is_some() {
                        out.insert((e.op, e.sig));
                    }
                    walk(&e.children, out);
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&trace.nodes, &mut out);
    out
}

/// [`resolve`] for the events `which` selects; the others keep the model (their offsets still
/// move the end of the file as the model says). For a reader that finds the model at some
/// traces of an event and a plain value at others (a header written at offset 0 of an empty
/// file fits `end of file` by chance at the one scale where the file's other writes start the
/// search): resolved there, the event is compared as values everywhere.
pub fn resolve_where(trace: &mut Trace, which: &dyn Fn(&Event) -> bool) -> usize {
    if !present(trace) {
        return 0;
    }
    let files = collect(trace);
    // path -> rank -> value over the loops
    let mut built: HashMap<Path, BTreeMap<u32, Val<i64>>> = HashMap::new();
    let models = |p: &Path| event_ref(&trace.nodes, p).and_then(model).cloned();
    let chosen = |p: &Path| event_ref(&trace.nodes, p).is_some_and(which);
    let mut cache: HashMap<Path, Option<FileEnd<RankFn>>> = HashMap::new();
    let mut selected: HashMap<Path, bool> = HashMap::new();
    for calls in files.values() {
        turns(calls, &mut |rank, c, end, lower| {
            let mut put = |p: &Path, idx: &[u64], m: &FileEnd<RankFn>, sum: i64| {
                let start = m.start.map(&mut |f| f.eval(rank)).eval_start(idx);
                let x = start.wrapping_add(end).wrapping_add(sum);
                if !*selected.entry(p.clone()).or_insert_with(|| chosen(p)) {
                    return x;
                }
                let v = built
                    .entry(p.clone())
                    .or_default()
                    .entry(rank)
                    .or_insert_with(|| Val::Seq(Vec::new()));
                crate::prefix::insert(v, idx, x);
                x
            };
            for (p, idx, _) in &c.nested {
                if let Some(m) = cache.entry(p.clone()).or_insert_with(|| models(p)).clone() {
                    put(p, idx, &m, 0);
                }
            }
            match cache
                .entry(c.path.clone())
                .or_insert_with(|| models(&c.path))
                .clone()
            {
                Some(m) => put(&c.path, &c.idx, &m, if m.of.is_some() { lower } else { 0 }),
                None => c.offset,
            }
        });
    }
    let mut n = 0;
    for (p, per) in built {
        let Some(e) = event_at(&mut trace.nodes, &p) else {
            continue;
        };
        let Some(k) = slot(e.op) else { continue };
        let pts: Vec<(u32, Val<i64>)> = per.into_iter().collect();
        e.params[k] = Elastic::canonical(&pts);
        n += 1;
    }
    // Models no rank reached: their start.
    fn starts(nodes: &mut [Node], which: &dyn Fn(&Event) -> bool, n: &mut usize) {
        for node in nodes {
            match &mut node.kind {
                NodeKind::Event(e) => {
                    let picked = which(e);
                    for v in e.params.iter_mut().filter(|_| picked) {
                        if v.is_file_end() {
                            *n += 1;
                            for g in &mut v.groups {
                                if let Val::FileEnd(x) = &g.val {
                                    g.val = x.start.clone();
                                }
                            }
                        }
                    }
                    starts(&mut e.children, which, n);
                }
                NodeKind::Loop(l) => starts(&mut l.body, which, n),
            }
        }
    }
    starts(&mut trace.nodes, which, &mut n);
    n
}

/// `end of file`, `end of file + exscan(count)`, and on a call that sets the size (`ahead`)
/// `end of file after the writes that follow`, with a start other than 0 first.
pub fn render(x: &FileEnd<RankFn>, of: Option<&str>, ahead: bool, depth0: usize) -> String {
    let end = match of {
        Some(of) => format!("end of file + exscan({of})"),
        None if ahead => "end of file after the writes that follow".to_string(),
        None => "end of file".to_string(),
    };
    match &x.start {
        Val::Const(RankFn::Const(0)) => end,
        s => format!("{} + {end}", crate::notation::render_val(s, depth0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::compress;
    use crate::op::args;
    use crate::trace::RawEvent;

    /// A dump in turns, step after step: rank 0 writes a header of `head(s)` bytes at the end
    /// of the file, then every rank its block of `len(r, s)` bytes at the header's end plus the
    /// lower ranks' blocks (LAMMPS's `dump atom/mpiio`).
    fn head(s: u32) -> i64 {
        i64::from(160 + (s * 7) % 3)
    }

    fn len(r: u32, s: u32) -> i64 {
        i64::from((r * 7919 + s * 131 + r * r * 17) % 97 + 3)
    }

    fn dump(n: u32, steps: u32) -> Trace {
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let mut evs = Vec::new();
                let mut end = 0;
                for s in 0..steps {
                    if r == 0 {
                        let h = head(s);
                        evs.push(RawEvent::new(
                            Op::FileWriteAt,
                            4,
                            args::file_write_at(0, end, h, 1, h),
                        ));
                    }
                    end += head(s);
                    let off: i64 = end + (0..r).map(|q| len(q, s)).sum::<i64>();
                    let c = len(r, s);
                    evs.push(RawEvent::new(
                        Op::FileWriteAtAll,
                        5,
                        args::file_write_at_all(0, off, c, 1, c),
                    ));
                    end += (0..n).map(|q| len(q, s)).sum::<i64>();
                }
                compress(r, &evs)
            })
            .collect();
        crate::merge::merge_tree(ts).unwrap()
    }

    /// Every write of every rank: (offset, length), sorted.
    fn blocks(t: &Trace, n: u32) -> Vec<(i64, i64)> {
        let mut b: Vec<(i64, i64)> = (0..n)
            .flat_map(|r| t.expand(r))
            .filter(|e| matches!(e.op, Op::FileWriteAt | Op::FileWriteAtAll))
            .map(|e| (e.p(Param::Offset), e.p(Param::Count)))
            .collect();
        b.sort();
        b
    }

    fn contiguous(b: &[(i64, i64)]) -> i64 {
        let mut end = 0;
        for &(o, c) in b {
            assert_eq!(o, end, "contiguous and non-overlapping: {b:?}");
            end += c;
        }
        end
    }

    #[test]
    fn a_dump_in_turns_is_at_the_end_of_the_file_and_resolves_to_the_same_offsets() {
        let n = 7;
        let t = dump(n, 4);
        let want = blocks(&t, n);
        contiguous(&want);
        let mut m = t.clone();
        let rec = crate::prefix::recognise(&mut m);
        assert!(
            rec.iter()
                .any(|r| r.op == Op::FileWriteAt && r.of == "end of file"),
            "{rec:?}"
        );
        assert!(present(&m));
        let mut shown = String::new();
        crate::notation::render_nodes(&m.nodes, None, 0, &mut shown);
        assert!(
            shown.contains("offset = end of file + exscan(count)")
                && shown.contains("MPI_File_write_at  fh = 0, offset = end of file,"),
            "{shown}"
        );
        // Every offset of the dump is the model, whatever the data: no per-step start left.
        assert!(!shown.contains("exscan(count, over calls)"), "{shown}");
        crate::format::assert_round_trips(n, &m);
        let mut back = m.clone();
        assert!(crate::prefix::resolve(&mut back) >= 2);
        assert!(!present(&back) && !crate::prefix::present(&back));
        assert_eq!(blocks(&back, n), want);
    }

    /// [`dump`] with every rank setting the file's size to the end of the dump before writing
    /// it (`MPI_File_set_size`; rank 0's `ftruncate` inside it, as OMPIO makes it), and the
    /// file closed after `steps` dumps.
    fn sized_dump(n: u32, steps: u32) -> Trace {
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let mut evs = Vec::new();
                let mut end = 0;
                for s in 0..steps {
                    let total: i64 = head(s) + (0..n).map(|q| len(q, s)).sum::<i64>();
                    let mut set =
                        RawEvent::new(Op::FileSetSize, 3, args::file_set_size(0, end + total));
                    if r == 0 {
                        set.children = vec![RawEvent::new(
                            Op::Ftruncate,
                            8,
                            args::ftruncate(7, end + total),
                        )];
                    }
                    evs.push(set);
                    if r == 0 {
                        let h = head(s);
                        evs.push(RawEvent::new(
                            Op::FileWriteAt,
                            4,
                            args::file_write_at(0, end, h, 1, h),
                        ));
                    }
                    let off: i64 = end + head(s) + (0..r).map(|q| len(q, s)).sum::<i64>();
                    let c = len(r, s);
                    evs.push(RawEvent::new(
                        Op::FileWriteAtAll,
                        5,
                        args::file_write_at_all(0, off, c, 1, c),
                    ));
                    end += total;
                }
                compress(r, &evs)
            })
            .collect();
        crate::merge::merge_tree(ts).unwrap()
    }

    /// Every rank's sizes set (`MPI_File_set_size` and the nested `ftruncate`), in order.
    fn sizes_set(t: &Trace, n: u32) -> Vec<Vec<i64>> {
        (0..n)
            .map(|r| {
                let mut out = Vec::new();
                for e in t.expand(r) {
                    if e.op == Op::FileSetSize {
                        out.push(e.p(Param::Size));
                    }
                    for c in &e.children {
                        if c.op == Op::Ftruncate {
                            out.push(c.p(Param::Length));
                        }
                    }
                }
                out
            })
            .collect()
    }

    #[test]
    fn a_size_set_before_a_dump_is_the_end_of_the_writes_that_follow() {
        let n = 6;
        let t = sized_dump(n, 4);
        let want = sizes_set(&t, n);
        let mut m = t.clone();
        let rec = crate::prefix::recognise(&mut m);
        for op in [Op::FileSetSize, Op::Ftruncate] {
            assert!(rec.iter().any(|r| r.op == op), "{op:?}: {rec:?}");
        }
        let mut shown = String::new();
        crate::notation::render_nodes(&m.nodes, None, 0, &mut shown);
        assert!(
            shown.contains("size = end of file after the writes that follow")
                && shown.contains("length = end of file after the writes that follow"),
            "{shown}"
        );
        crate::format::assert_round_trips(n, &m);
        let mut back = m.clone();
        crate::prefix::resolve(&mut back);
        assert!(!present(&back));
        assert_eq!(sizes_set(&back, n), want);
        // Drawn sizes: each size set is the end of the dump that follows it.
        let p = crate::approx::Policy {
            comm: false,
            io: true,
            budget: 4,
        };
        crate::approx::bound(&mut m, &p);
        assert!(crate::approx::count(&m) > 0, "sizes summarised");
        crate::draw::realize(&mut m, 5).unwrap();
        let ends: Vec<i64> = {
            let mut b = blocks(&m, n);
            b.sort();
            let mut ends = Vec::new();
            let mut end = 0;
            for (o, c) in b {
                end = end.max(o + c);
                ends.push(end);
            }
            ends
        };
        let set = &sizes_set(&m, n)[1];
        for s in set {
            assert!(ends.contains(s), "{s} is the end of a dump: {ends:?}");
        }
        assert_eq!(set.last(), ends.last());
    }

    /// A size set once ahead of a file whose writes fit no end-of-file model stays a value.
    #[test]
    fn a_size_set_on_a_file_without_the_model_stays_a_value() {
        let n = 4;
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let evs = vec![
                    RawEvent::new(Op::FileSetSize, 3, args::file_set_size(0, 4096)),
                    RawEvent::new(
                        Op::FileWriteAt,
                        4,
                        args::file_write_at(0, i64::from(r) * 100, 100, 1, 100),
                    ),
                ];
                compress(r, &evs)
            })
            .collect();
        let mut t = crate::merge::merge_tree(ts).unwrap();
        crate::prefix::recognise(&mut t);
        assert!(!present(&t));
    }

    #[test]
    fn resolving_some_events_keeps_the_others_model_and_the_same_offsets() {
        let n = 5;
        let t = dump(n, 3);
        let want = blocks(&t, n);
        let mut m = t.clone();
        crate::prefix::recognise(&mut m);
        let all = sites(&m);
        assert_eq!(
            all.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![Op::FileWriteAt, Op::FileWriteAtAll],
            "{all:?}"
        );
        // The header alone resolved: its offsets are values, the blocks keep the model and
        // still follow the header's writes.
        assert!(resolve_where(&mut m, &|e| e.op == Op::FileWriteAt) >= 1);
        assert_eq!(
            sites(&m).into_iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![Op::FileWriteAtAll]
        );
        let mut back = m.clone();
        resolve(&mut back);
        crate::prefix::resolve(&mut back);
        assert_eq!(blocks(&back, n), want);
    }

    #[test]
    fn a_single_call_site_keeps_the_prefix_sum_model() {
        // No header: the prefix sum over calls already has one constant start; the trace keeps
        // its model (and its bytes).
        let n = 5;
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let mut evs = Vec::new();
                let mut base = 0;
                for s in 0..3 {
                    let off = base + (0..r).map(|q| len(q, s)).sum::<i64>();
                    let c = len(r, s);
                    evs.push(RawEvent::new(
                        Op::FileWriteAtAll,
                        5,
                        args::file_write_at_all(0, off, c, 1, c),
                    ));
                    base += (0..n).map(|q| len(q, s)).sum::<i64>();
                }
                compress(r, &evs)
            })
            .collect();
        let mut t = crate::merge::merge_tree(ts).unwrap();
        crate::prefix::recognise(&mut t);
        assert!(crate::prefix::present(&t) && !present(&t));
    }

    /// Steps of a collective write through a view displaced to the end of the file (offset 0,
    /// an hindexed filetype: HDF5's dataset writes), whose bytes rank 0's nested `pwrite`
    /// lands, then rank 0's header at the end of the file: the end is where the
    /// `pwrite` ends, and the view's write is no candidate.
    #[test]
    fn a_write_through_a_view_moves_the_end_by_its_nested_calls_only() {
        let n = 3u32;
        let steps = 4u32;
        let mut ts = Vec::new();
        for r in 0..n {
            let mut evs = Vec::new();
            let mut end = 40i64;
            for s in 0..steps {
                let total: i64 = (0..n).map(|q| len(q, s)).sum();
                evs.push(RawEvent::new(
                    Op::FileSetView,
                    2,
                    args::file_set_view(0, end, crate::mpi::BYTE, 1000 + i64::from(s)),
                ));
                let c = len(r, s);
                let mut w = RawEvent::new(
                    Op::FileWriteAtAll,
                    3,
                    args::file_write_at_all(0, 0, c, 4, c),
                );
                if r == 0 {
                    w.children = vec![RawEvent::new(
                        Op::Pwrite,
                        9,
                        args::pwrite(0, total, end, total),
                    )];
                }
                evs.push(w);
                evs.push(RawEvent::new(
                    Op::FileSetView,
                    2,
                    args::file_set_view(0, 0, crate::mpi::BYTE, crate::mpi::BYTE),
                ));
                end += total;
                if r == 0 {
                    let h = head(s);
                    evs.push(RawEvent::new(
                        Op::FileWriteAt,
                        4,
                        args::file_write_at(0, end, h, 4, h),
                    ));
                }
                end += head(s);
            }
            ts.push(compress(r, &evs));
        }
        let t = crate::merge::merge_tree(ts).unwrap();
        let offsets = |t: &Trace| -> Vec<Vec<i64>> {
            (0..n)
                .map(|r| {
                    t.expand(r)
                        .iter()
                        .filter(|e| e.op == Op::FileWriteAt)
                        .map(|e| e.p(Param::Offset))
                        .collect()
                })
                .collect()
        };
        let want = offsets(&t);
        let mut m = t.clone();
        // The headers are rank 0's alone, an offset of one rank group (nothing data-dependent
        // to trigger on): the model is asked for on the file, as extrap does for a file whose
        // inputs held it.
        let rec = recognise_again(&mut m, &HashSet::from([(0usize, 0i64)]));
        assert!(
            rec.iter()
                .any(|r| r.op == Op::FileWriteAt && r.of.is_none()),
            "the headers are at the end of the file: {rec:?}"
        );
        assert!(
            rec.iter().all(|r| r.op != Op::FileWriteAtAll),
            "a write through a displaced view is no candidate: {rec:?}"
        );
        let mut back = m.clone();
        assert!(resolve(&mut back) >= 1);
        assert_eq!(offsets(&back), want);
    }

    #[test]
    fn drawn_sizes_at_the_end_of_the_file_tile_it() {
        let n = 9;
        let mut t = dump(n, 3);
        crate::prefix::recognise(&mut t);
        assert!(present(&t));
        let p = crate::approx::Policy {
            comm: false,
            io: true,
            budget: 4,
        };
        crate::approx::bound(&mut t, &p);
        assert!(crate::approx::count(&t) > 0, "sizes summarised");
        assert!(present(&t), "the offsets keep the model");
        crate::draw::realize(&mut t, 11).unwrap();
        assert!(!present(&t) && crate::approx::count(&t) == 0);
        contiguous(&blocks(&t, n));
    }
}
