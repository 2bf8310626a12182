//! The prefix-sum model of shared-file dumps.
//!
//! A code that dumps text to one shared file formats each rank's block, whose length depends
//! on the data, takes `MPI_Exscan` of the lengths as its offset (plus the file's length so far)
//! and writes with `MPI_File_write_at(_all)`. The offsets are then no function of the rank:
//! they are the running sum of a size of the same call over the lower ranks. [`recognise`]
//! finds such offsets in a merged trace and stores them as that model ([`Exscan`], a
//! [`Val::Exscan`] value), exactly: every rank's every offset is reproduced. Where the sizes are
//! summaries ([`crate::approx`]) or extrapolated, the offsets follow whatever sizes are issued:
//! [`resolve`] computes them from the exact (or drawn, [`crate::draw::realize`]) sizes, so the
//! layout stays contiguous and non-overlapping at any scale.
//!
//! "The same call" is the same call site writing through the same handle: the `c`-th call of
//! it on every rank (an aggregator's and the other ranks' calls of one `MPI_File_write_at_all`
//! land in different event nodes, and a loop over steps may be cut in two by the compressor, so
//! the nodes do not say it). The offset of rank `r`'s `c`-th call is
//! `start + Σ_{r' < r} size(r', c)`, plus, for a [`Exscan::running`] sum, every rank's sizes of
//! the calls before `c`: the usual dump appends step after step.

use crate::op::{Dir, Op, Param};
use crate::ranks::RankSet;
use crate::trace::{Event, Node, NodeKind, Trace, visit};
use crate::value::{Elastic, Group, RankFn, Val};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// An offset as the running sum of a size of the same call over ranks ([`Val::Exscan`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Exscan<T> {
    /// The index of the summed parameter among the event's parameters (its `count` or
    /// `bytes`).
    pub of: u32,
    /// Whether the sum runs on over the earlier calls of the call site (every rank's sizes of
    /// each earlier call, then the lower ranks' of this one), or restarts at every call.
    pub running: bool,
    /// Added to the sum: a value over the enclosing loops, the same on every rank (a header's
    /// length, a fixed slot per step).
    pub start: Val<T>,
    /// Where the summed size is another call's ([`Source`]: `of` indexes that call's
    /// parameters), scaled; `None`: this event's own. Appended to the model after its first
    /// files were written, and left out of the bytes when `None`, so they keep theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Source>,
}

/// The call whose size a value sums ([`Exscan::from`]): on each rank, the next call of `op`
/// at call site `sig` after the event (HDF5 builds a rank's hyperslab filetype, whose
/// displacement is the byte prefix sum of the ranks' element counts, then writes that rank's
/// count collectively), or with [`Source::same_call`] the event's own call (h5py's hyperslab
/// `start[0]` is the prefix sum of the same `H5Sselect_hyperslab`'s `count[0]`), matched over
/// the ranks by its ordinal among the site's calls; the sum is multiplied by `scale` (an
/// element's size where the value counts bytes and the size elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Source {
    /// The summing call's operation.
    pub op: Op,
    /// Its call site.
    pub sig: u64,
    /// The factor of the sum.
    pub scale: i64,
    /// The summed size is another parameter of the value's own call (`op` and `sig` are
    /// then the event's own): an array element that is a place (`start[d]`) summing an
    /// element of the same dimension that is a quantity (`count[d]`). Appended after the
    /// model's first files were written, and left out of the bytes when false, so they keep
    /// theirs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_call: bool,
}

/// The sizes an offset may be the running sum of, in the order they are tried.
pub const SIZES: [Param; 2] = [Param::Count, Param::Bytes];

/// Where an I/O call keeps its offset, handle and sizes.
#[derive(Debug, Clone)]
struct Layout {
    offset: usize,
    handle: Option<usize>,
    sizes: Vec<usize>,
}

fn layout(op: Op) -> Option<Layout> {
    if op.dir() == Dir::None {
        return None;
    }
    let ps = op.params();
    let offset = ps.iter().position(|&p| p == Param::Offset)?;
    let handle = ps
        .iter()
        .position(|&p| matches!(p, Param::Fh | Param::Fd | Param::Stream));
    let sizes: Vec<usize> = SIZES
        .iter()
        .filter_map(|s| ps.iter().position(|p| p == s))
        .collect();
    (!sizes.is_empty()).then_some(Layout {
        offset,
        handle,
        sizes,
    })
}

/// One call site writing through one handle (its value at the call).
type Site = (Op, u64, i64);

/// Identifies an event node while the trace is walked (stable while it is only read).
fn key(e: &Event) -> usize {
    e as *const Event as usize
}

/// One call of a site by one rank.
struct Call {
    ev: usize,
    idx: Vec<u64>,
    offset: i64,
    /// The candidate sizes, in [`Layout::sizes`] order.
    sizes: Vec<i64>,
}

/// An offset [`recognise`] found to be a prefix sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognised {
    /// The event's operation.
    pub op: Op,
    /// The summed parameter's name.
    pub of: &'static str,
    /// Whether the sum runs on over the earlier calls.
    pub running: bool,
    /// The event's ranks.
    pub ranks: RankSet,
}

/// The calls of every rank at the sites of the events `want` says, per site and rank, in
/// call order. Nested calls (the library's) are not walked.
fn collect(
    trace: &Trace,
    want: &dyn Fn(&Event) -> Option<Layout>,
) -> HashMap<Site, BTreeMap<u32, Vec<Call>>> {
    let mut sites: HashMap<Site, BTreeMap<u32, Vec<Call>>> = HashMap::new();
    trace.ranks().for_each(|rank| {
        let mut idx = Vec::new();
        visit(&trace.nodes, rank, &mut idx, &mut |e, idx| {
            if let Some(l) = want(e) {
                let h = l.handle.map_or(0, |k| e.params[k].start_member(rank, idx));
                sites
                    .entry((e.op, e.sig, h))
                    .or_default()
                    .entry(rank)
                    .or_default()
                    .push(Call {
                        ev: key(e),
                        idx: idx.clone(),
                        offset: e.params[l.offset].start_member(rank, idx),
                        sizes: l
                            .sizes
                            .iter()
                            .map(|&k| e.params[k].start_member(rank, idx))
                            .collect(),
                    });
            }
            true
        });
    });
    sites
}

/// Per call ordinal: the sum of every rank's size (`size` picks it from a call).
fn totals(calls: &BTreeMap<u32, Vec<Call>>, size: &dyn Fn(&Call) -> i64) -> Vec<i64> {
    let n = calls.values().map(Vec::len).max().unwrap_or(0);
    let mut t = vec![0i64; n];
    for cs in calls.values() {
        for (c, call) in cs.iter().enumerate() {
            t[c] = t[c].wrapping_add(size(call));
        }
    }
    t
}

/// Calls `f(rank, ordinal, call, lower, earlier)` for every call of a site in rank order:
/// `lower` is the sum of the lower ranks' sizes of the same ordinal, `earlier` every rank's
/// sizes of the ordinals before.
fn sums(
    calls: &BTreeMap<u32, Vec<Call>>,
    size: &dyn Fn(&Call) -> i64,
    f: &mut dyn FnMut(u32, &Call, i64, i64),
) {
    let t = totals(calls, size);
    let mut earlier = vec![0i64; t.len()];
    for c in 1..t.len() {
        earlier[c] = earlier[c - 1].wrapping_add(t[c - 1]);
    }
    let mut lower = vec![0i64; t.len()];
    for (&rank, cs) in calls {
        for (c, call) in cs.iter().enumerate() {
            f(rank, call, lower[c], earlier[c]);
            lower[c] = lower[c].wrapping_add(size(call));
        }
    }
}

/// Puts `x` at iteration indices `idx` of a value built in call order, so each index is the
/// next one of its loop or the current one (nested explicit vectors, one level per loop).
pub(crate) fn insert(v: &mut Val<i64>, idx: &[u64], x: i64) {
    let Some((&i, rest)) = idx.split_first() else {
        *v = Val::Const(x);
        return;
    };
    if !matches!(v, Val::Seq(_)) {
        *v = Val::Seq(Vec::new());
    }
    let Val::Seq(items) = v else { unreachable!() };
    while items.len() <= i as usize {
        items.push(Val::Seq(Vec::new()));
    }
    insert(&mut items[i as usize], rest, x);
}

/// The compact form of a value built by [`insert`] over `loops` loops: each level folded as
/// the compressor folds iterations (constants, affine sequences, cycles).
fn compact(v: &Val<i64>, loops: usize) -> Val<i64> {
    let Val::Seq(items) = v else {
        return v.clone();
    };
    if loops == 0 || items.is_empty() {
        return v.clone();
    }
    let inner = loops - 1;
    let parts: Vec<Val<i64>> = items.iter().map(|x| compact(x, inner)).collect();
    let mut acc = Val::wrap2(
        parts[0].clone(),
        parts.get(1).unwrap_or(&parts[0]).clone(),
        inner,
    );
    for (n, p) in parts.into_iter().enumerate().skip(2) {
        acc.extend(n as u64, p, inner);
    }
    acc
}

/// A value over the loops that takes `points` (iteration indices, value): compact when the
/// values follow a pattern, explicit otherwise.
fn value_at(points: &[(Vec<u64>, i64)]) -> Val<i64> {
    if points.iter().all(|p| p.1 == points[0].1) {
        return Val::Const(points.first().map_or(0, |p| p.1));
    }
    let mut raw = Val::Seq(Vec::new());
    for (idx, x) in points {
        insert(&mut raw, idx, *x);
    }
    let loops = points.iter().map(|p| p.0.len()).max().unwrap_or(0);
    let c = compact(&raw, loops);
    if points.iter().all(|(idx, x)| c.eval(idx) == Some(*x)) {
        c
    } else {
        raw
    }
}

fn leaf_count(v: &Val<i64>) -> usize {
    let mut l = Vec::new();
    v.leaves(&mut l);
    l.len()
}

/// The starts of a site's events under one model, or `None` when some call's offset minus the
/// sum differs between ranks at the same iteration of the same event.
fn starts(
    calls: &BTreeMap<u32, Vec<Call>>,
    j: usize,
    running: bool,
) -> Option<HashMap<usize, Val<i64>>> {
    let mut res: HashMap<(usize, Vec<u64>), i64> = HashMap::new();
    let mut ok = true;
    sums(calls, &|c| c.sizes[j], &mut |_, call, lower, earlier| {
        let r = call
            .offset
            .wrapping_sub(lower)
            .wrapping_sub(if running { earlier } else { 0 });
        match res.get(&(call.ev, call.idx.clone())) {
            Some(&x) if x != r => ok = false,
            Some(_) => {}
            None => {
                res.insert((call.ev, call.idx.clone()), r);
            }
        }
    });
    if !ok {
        return None;
    }
    let mut per: HashMap<usize, Vec<(Vec<u64>, i64)>> = HashMap::new();
    for ((ev, idx), r) in res {
        per.entry(ev).or_default().push((idx, r));
    }
    Some(
        per.into_iter()
            .map(|(ev, mut pts)| {
                pts.sort();
                (ev, value_at(&pts))
            })
            .collect(),
    )
}

/// Finds the offsets of `trace` that are prefix sums of a size of the same call over the ranks
/// and stores them as [`Val::Exscan`]; returns what it recognised. Only a call site whose
/// offsets are no single function of the rank somewhere (more than one rank group: the
/// data-dependent dump) is considered, so regular traces keep their bytes; every call of the
/// site on every rank must fit, exactly. A site whose events also write through other handles
/// is left as it was. Run on a merged trace with exact sizes and offsets (the tracer does, at
/// rank 0, before summarising).
///
/// Then the offsets at the end of the file's data so far ([`crate::layout`]) are recognised on
/// the files where this model leaves a data-dependent start.
pub fn recognise(trace: &mut Trace) -> Vec<Recognised> {
    let mut done = recognise_sums(trace);
    done.extend(
        crate::layout::recognise(trace)
            .into_iter()
            .map(|r| Recognised {
                op: r.op,
                of: r.of.unwrap_or("end of file"),
                running: true,
                ranks: r.ranks,
            }),
    );
    done
}

fn recognise_sums(trace: &mut Trace) -> Vec<Recognised> {
    // Events whose offset is exact, over more than one rank group, with exact sizes.
    let mut irregular: HashSet<usize> = HashSet::new();
    fn find(nodes: &[Node], out: &mut HashSet<usize>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    if let Some(l) = layout(e.op)
                        && e.params[l.offset].groups.len() > 1
                        && usable(e, &l)
                    {
                        out.insert(key(e));
                    }
                }
                NodeKind::Loop(l) => find(&l.body, out),
            }
        }
    }
    fn usable(e: &Event, l: &Layout) -> bool {
        let exact = |k: usize| {
            e.params
                .get(k)
                .is_some_and(|v| !v.is_approx() && !v.is_exscan() && !v.is_file_end())
        };
        exact(l.offset) && l.sizes.iter().all(|&k| exact(k))
    }
    find(&trace.nodes, &mut irregular);
    if irregular.is_empty() {
        return from_other_calls(trace);
    }
    let want = |e: &Event| layout(e.op).filter(|l| usable(e, l));
    let sites = collect(trace, &want);
    // The sites of each event: one written through several handles is left alone.
    let mut site_of: HashMap<usize, HashSet<Site>> = HashMap::new();
    for (s, calls) in &sites {
        for cs in calls.values() {
            for c in cs {
                site_of.entry(c.ev).or_default().insert(*s);
            }
        }
    }
    // ev -> (size slot, running, start)
    let mut found: HashMap<usize, (usize, bool, Val<i64>)> = HashMap::new();
    for calls in sites.values() {
        let evs: HashSet<usize> = calls.values().flatten().map(|c| c.ev).collect();
        if !evs.iter().any(|e| irregular.contains(e)) || evs.iter().any(|e| site_of[e].len() > 1) {
            continue;
        }
        let nsizes = calls
            .values()
            .flatten()
            .map(|c| c.sizes.len())
            .min()
            .unwrap_or(0);
        'sizes: for j in 0..nsizes {
            // Both models hold together whenever one does (they differ by the earlier calls'
            // totals, the same on every rank); the one whose starts are simpler is kept, a
            // sum restarting at every call when they tie.
            let mut best: Option<(usize, bool, HashMap<usize, Val<i64>>)> = None;
            for running in [false, true] {
                if let Some(st) = starts(calls, j, running) {
                    let cost: usize = st.values().map(leaf_count).sum();
                    if best.as_ref().is_none_or(|b| cost < b.0) {
                        best = Some((cost, running, st));
                    }
                }
            }
            if let Some((_, running, st)) = best {
                for (ev, v) in st {
                    found.insert(ev, (j, running, v));
                }
                break 'sizes;
            }
        }
    }
    let mut done = Vec::new();
    fn replace(
        nodes: &mut [Node],
        found: &HashMap<usize, (usize, bool, Val<i64>)>,
        done: &mut Vec<Recognised>,
    ) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    let Some((j, running, start)) = found.get(&key(e)) else {
                        continue;
                    };
                    let Some(l) = layout(e.op) else { continue };
                    let of = l.sizes[*j];
                    let v = &mut e.params[l.offset];
                    let ranks = v
                        .groups
                        .iter()
                        .fold(RankSet::default(), |a, g| a.union(&g.ranks));
                    done.push(Recognised {
                        op: e.op,
                        of: e.op.params()[of].name(),
                        running: *running,
                        ranks: ranks.clone(),
                    });
                    *v = Elastic {
                        groups: vec![Group {
                            ranks,
                            val: Val::Exscan(Box::new(Exscan {
                                of: of as u32,
                                running: *running,
                                start: start.map(&mut |&x| RankFn::Const(x)),
                                from: None,
                            })),
                        }],
                    };
                }
                NodeKind::Loop(l) => replace(&mut l.body, found, done),
            }
        }
    }
    replace(&mut trace.nodes, &found, &mut done);
    done.extend(from_other_calls(trace));
    done
}

/// Whether [`recognise`] (the tracer's, on one trace) also looks for values that are the
/// prefix sum of another call's size (h5py's hyperslab displacements). Off: on h5_coll
/// (parallel HDF5, regular per-rank counts) it was recognised at 4, 8 and 12 ranks but not at
/// 16, and extrap then refused on the rank groups of `MPI_Type_create_hindexed
/// displacements[0]` (tests/it/extrap_hdf5.rs), where the rank functions had fitted before. A
/// consumer that sees every scale recognises them itself where every trace holds them alike
/// ([`recognise_other_calls`] with [`other_call_slots`]: extrap and diff).
const FROM_OTHER_CALLS: bool = false;

/// A value that may be the prefix sum of another call's size: the op and call site of its
/// event, and the parameter slot.
pub type SumSlot = (Op, u64, usize);

/// Recognises, in place, the values that are the prefix sum over ranks of another call's size
/// ([`Exscan::from`]) at the slots `keep` accepts. Whether a value has that model depends on
/// the data (a rank group that a line happens to fit is no candidate), so a consumer of
/// several traces first asks each which slots it would take ([`other_call_slots`] of a
/// recognised copy) and keeps those every trace takes.
pub fn recognise_other_calls(trace: &mut Trace, keep: &dyn Fn(SumSlot) -> bool) -> Vec<Recognised> {
    recognise_from_where(trace, keep)
}

/// The slots of `trace` whose values hold the prefix sum of another call's size.
pub fn other_call_slots(trace: &Trace) -> std::collections::BTreeSet<SumSlot> {
    fn walk(nodes: &[Node], out: &mut std::collections::BTreeSet<SumSlot>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    for (k, v) in e.params.iter().enumerate() {
                        if from_model(v).is_some() {
                            out.insert((e.op, e.sig, k));
                        }
                    }
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(&trace.nodes, &mut out);
    out
}

fn from_other_calls(trace: &mut Trace) -> Vec<Recognised> {
    if FROM_OTHER_CALLS {
        recognise_from(trace)
    } else {
        Vec::new()
    }
}

/// Whether some event of `trace` holds the prefix-sum model (or the end-of-file model,
/// [`crate::layout`]).
pub fn present(trace: &Trace) -> bool {
    present_sums(trace) || crate::layout::present(trace)
}

fn present_sums(trace: &Trace) -> bool {
    fn walk(nodes: &[Node]) -> bool {
        nodes.iter().any(|n| match &n.kind {
            NodeKind::Event(e) => e.params.iter().any(Elastic::is_exscan),
            NodeKind::Loop(l) => walk(&l.body),
        })
    }
    walk(&trace.nodes)
}

/// Replaces every [`Val::Exscan`] of `trace` by each rank's exact offsets, computed from the
/// sizes the trace holds (exact, or drawn by [`crate::draw::realize`] first): the offsets of
/// one call site are contiguous and non-overlapping in rank order. Returns the number of
/// events resolved. Summarised sizes count as their typical value: draw them first.
///
/// Then the offsets at the end of the file's data so far ([`crate::layout::resolve`]), which
/// read the offsets resolved here.
pub fn resolve(trace: &mut Trace) -> usize {
    let n = resolve_sums(trace);
    n + crate::layout::resolve(trace)
}

/// Whether some value of `trace`, nested calls included, needs the other ranks' calls to be
/// evaluated ([`Val::Exscan`], [`Val::FileEnd`]): what [`Trace::resolved`] resolves.
pub fn needs_resolving(trace: &Trace) -> bool {
    fn any(nodes: &[Node]) -> bool {
        nodes.iter().any(|n| match &n.kind {
            NodeKind::Event(e) => {
                e.params.iter().any(|p| p.is_exscan() || p.is_file_end()) || any(&e.children)
            }
            NodeKind::Loop(l) => any(&l.body),
        })
    }
    any(&trace.nodes)
}

/// [`resolve`], then every model it could not place (only a damaged trace holds one: a
/// prefix sum in a nested call, which recognition never makes, or a file whose turns have no
/// order) replaced by its start, so that no value of the trace needs the other ranks: the
/// invariant of [`crate::trace::Resolved`]. Returns what [`resolve`] returned.
pub fn resolve_all(trace: &mut Trace) -> usize {
    let n = resolve(trace);
    fn starts(nodes: &mut [Node]) {
        for node in nodes {
            match &mut node.kind {
                NodeKind::Event(e) => {
                    for g in e.params.iter_mut().flat_map(|p| p.groups.iter_mut()) {
                        match &g.val {
                            Val::Exscan(x) => g.val = x.start.clone(),
                            Val::FileEnd(x) => g.val = x.start.clone(),
                            _ => {}
                        }
                    }
                    starts(&mut e.children);
                }
                NodeKind::Loop(l) => starts(&mut l.body),
            }
        }
    }
    if needs_resolving(trace) {
        starts(&mut trace.nodes);
    }
    n
}

fn resolve_sums(trace: &mut Trace) -> usize {
    // The model of each event that holds one, and the call sites that have one.
    let mut models: HashMap<usize, Exscan<RankFn>> = HashMap::new();
    let mut of_site: HashMap<(Op, u64), u32> = HashMap::new();
    fn find(
        nodes: &[Node],
        models: &mut HashMap<usize, Exscan<RankFn>>,
        of_site: &mut HashMap<(Op, u64), u32>,
    ) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    let Some(l) = layout(e.op) else { continue };
                    // (`get`: a damaged trace may hold fewer parameters than the op's
                    // schema; the fuzzer found one that crashed replay's planning here.)
                    if let Some(Val::Exscan(x)) = e
                        .params
                        .get(l.offset)
                        .and_then(|p| p.groups.first())
                        .map(|g| &g.val)
                        && x.from.is_none()
                    {
                        models.insert(key(e), (**x).clone());
                        of_site.entry((e.op, e.sig)).or_insert(x.of);
                    }
                }
                NodeKind::Loop(l) => find(&l.body, models, of_site),
            }
        }
    }
    find(&trace.nodes, &mut models, &mut of_site);
    // The values that sum another call's sizes first: they read sizes, never offsets.
    let from = resolve_from(trace);
    if models.is_empty() {
        return from;
    }
    // Every call of those sites, with the size the site sums (the event's own `of`, or the
    // site's for a call of it that kept explicit offsets).
    let want = |e: &Event| {
        let of = *of_site.get(&(e.op, e.sig))?;
        let mut l = layout(e.op)?;
        let of = models.get(&key(e)).map_or(of, |m| m.of) as usize;
        l.sizes = vec![of.min(e.params.len().saturating_sub(1))];
        Some(l)
    };
    let sites = collect(trace, &want);
    let mut built: HashMap<usize, BTreeMap<u32, Val<i64>>> = HashMap::new();
    for calls in sites.values() {
        sums(calls, &|c| c.sizes[0], &mut |rank, call, lower, earlier| {
            let Some(m) = models.get(&call.ev) else {
                return;
            };
            let start = m.start.map(&mut |f| f.eval(rank)).eval_start(&call.idx);
            let x = start
                .wrapping_add(lower)
                .wrapping_add(if m.running { earlier } else { 0 });
            let v = built
                .entry(call.ev)
                .or_default()
                .entry(rank)
                .or_insert_with(|| Val::Seq(Vec::new()));
            insert(v, &call.idx, x);
        });
    }
    let mut n = 0;
    fn replace(
        nodes: &mut [Node],
        built: &mut HashMap<usize, BTreeMap<u32, Val<i64>>>,
        n: &mut usize,
    ) {
        for node in nodes {
            match &mut node.kind {
                NodeKind::Event(e) => {
                    let Some(l) = layout(e.op) else { continue };
                    let id = key(e);
                    let v = &mut e.params[l.offset];
                    if !v.is_exscan() || from_model(v).is_some() {
                        continue;
                    }
                    *n += 1;
                    *v = match built.remove(&id) {
                        Some(per) => {
                            let pts: Vec<(u32, Val<i64>)> = per.into_iter().collect();
                            Elastic::canonical(&pts)
                        }
                        // No rank reaches it: its start.
                        None => Elastic {
                            groups: v
                                .groups
                                .iter()
                                .map(|g| Group {
                                    ranks: g.ranks.clone(),
                                    val: match &g.val {
                                        Val::Exscan(x) => x.start.clone(),
                                        other => other.clone(),
                                    },
                                })
                                .collect(),
                        },
                    };
                }
                NodeKind::Loop(l) => replace(&mut l.body, built, n),
            }
        }
    }
    replace(&mut trace.nodes, &mut built, &mut n);
    n + from
}

/// The model of a value that sums another call's size, if `v` holds one.
fn from_model(v: &Elastic) -> Option<(&Exscan<RankFn>, Source)> {
    match v.groups.as_slice() {
        [
            Group {
                val: Val::Exscan(x),
                ..
            },
        ] => x.from.map(|f| (&**x, f)),
        _ => None,
    }
}

/// Whether parameter `k` of an event of `op` may be the prefix sum of another call's size: a
/// datatype constructor's arrays (displacements, starts) and a file view's displacement.
fn may_sum_another(op: Op, k: usize) -> bool {
    let ps = op.params();
    (ps.contains(&Param::Newtype) && k >= ps.len()) || ps.get(k) == Some(&Param::Disp)
}

/// The arrays ([`Op::arrays`]) whose elements are places that may be the prefix sum over the
/// ranks of a quantity of the same call and dimension: a selection's or an access's start.
const PLACES: [&str; 2] = ["start", "starts"];

/// The parameters of an event of `op` (`nparams` parameters, `nfields` path fields) whose
/// prefix sum over the ranks parameter `k` may be: when `k` is element `d` of a place array
/// ([`PLACES`]), element `d` of each array of quantities ([`Op::array_is_quantity`]: `count`,
/// `block`, `subsizes`), in the op's array order; otherwise none.
fn place_sums(op: Op, k: usize, nparams: usize, nfields: usize) -> Vec<usize> {
    let Some((array, d)) = op.array_element(k, nparams, nfields) else {
        return Vec::new();
    };
    if !PLACES.contains(&array) {
        return Vec::new();
    }
    (0..nparams)
        .filter(|&j| {
            op.array_element(j, nparams, nfields)
                .is_some_and(|(q, dj)| dj == d && op.array_is_quantity(q))
        })
        .collect()
}

/// The parameters of a call that may be summed by another's value: its sizes, when it moves
/// data.
fn sized(op: Op) -> Vec<usize> {
    if op.dir() == Dir::None {
        return Vec::new();
    }
    let ps = op.params();
    SIZES
        .iter()
        .filter_map(|s| ps.iter().position(|p| p == s))
        .collect()
}

/// One rank's calls as [`recognise_from`] and [`resolve_from`] need them: per summing site,
/// every call's parameters in call order; per value (event, parameter slot), each occurrence
/// with its loop indices, its value and the ordinal of the next call of `next`'s site (the
/// first call that moves data after it, or the site `next` names).
struct Linked {
    /// (event, slot, loop indices, value, site, ordinal).
    values: Vec<(usize, usize, Vec<u64>, i64, CallSite, usize)>,
    calls: HashMap<(Op, u64), Vec<Vec<i64>>>,
}

/// An op at a call site.
type CallSite = (Op, u64);

/// The call a linked value sums a size of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The next call of a site after the value's (`None`: the first call that moves data).
    Next(Option<CallSite>),
    /// The value's own call ([`Source::same_call`]).
    Same,
}

/// Whether slot `k` of an event is a value to link, and to which call.
type Want<'a> = &'a dyn Fn(&Event, usize) -> Option<Target>;

/// A value waiting for its summing call: (event, slot, loop indices, value, the site wanted).
type Pending = (usize, usize, Vec<u64>, i64, Option<CallSite>);

/// Walks every rank, linking the values `value` wants to their summing calls. The calls of
/// the sites in `same` are counted as summing calls too (their values sum their own sizes:
/// every call of such a site is one, whether or not its event holds a value to link).
fn link(trace: &Trace, value: Want<'_>, same: &HashSet<CallSite>) -> BTreeMap<u32, Linked> {
    let mut out = BTreeMap::new();
    trace.ranks().for_each(|rank| {
        let mut l = Linked {
            values: Vec::new(),
            calls: HashMap::new(),
        };
        let mut pending: Vec<Pending> = Vec::new();
        let mut idx = Vec::new();
        visit(&trace.nodes, rank, &mut idx, &mut |e, idx| {
            let site = (e.op, e.sig);
            let moves = !sized(e.op).is_empty();
            let own = (moves || same.contains(&site)).then(|| {
                let calls = l.calls.entry(site).or_default();
                calls.push(
                    (0..e.params.len())
                        .map(|k| e.params[k].start_member(rank, idx))
                        .collect(),
                );
                calls.len() - 1
            });
            if let (true, Some(c)) = (moves, own) {
                pending.retain(|(ev, k, at, v, want)| {
                    if want.is_none_or(|w| w == site) {
                        l.values.push((*ev, *k, at.clone(), *v, site, c));
                        false
                    } else {
                        true
                    }
                });
            }
            for k in 0..e.params.len() {
                let v = || e.params[k].start_member(rank, idx);
                match value(e, k) {
                    Some(Target::Next(want)) => {
                        pending.push((key(e), k, idx.clone(), v(), want));
                    }
                    Some(Target::Same) => {
                        if let Some(c) = own {
                            l.values.push((key(e), k, idx.clone(), v(), site, c));
                        }
                    }
                    None => {}
                }
            }
            true
        });
        out.insert(rank, l);
    });
    out
}

/// Per summing site and ordinal, the sum of size `j` of that call over the ranks below each
/// rank (`lower`), and over every rank in the site's earlier calls (`earlier`).
struct Sums {
    lower: HashMap<((Op, u64), usize, u32), i64>,
    earlier: HashMap<((Op, u64), usize), i64>,
}

fn sums_of(ranks: &BTreeMap<u32, Linked>, site: (Op, u64), j: usize) -> Sums {
    let mut lower = HashMap::new();
    let mut run: Vec<i64> = Vec::new();
    for (&rank, l) in ranks {
        let Some(calls) = l.calls.get(&site) else {
            continue;
        };
        for (c, ps) in calls.iter().enumerate() {
            if run.len() <= c {
                run.resize(c + 1, 0);
            }
            lower.insert((site, c, rank), run[c]);
            run[c] = run[c].wrapping_add(ps.get(j).copied().unwrap_or(0));
        }
    }
    let mut earlier = HashMap::new();
    let mut acc = 0i64;
    for (c, t) in run.iter().enumerate() {
        earlier.insert((site, c), acc);
        acc = acc.wrapping_add(*t);
    }
    Sums { lower, earlier }
}

/// One occurrence of a value to fit: its rank, event, loop indices, value, and the summing
/// call's site and ordinal.
struct Occ {
    rank: u32,
    ev: usize,
    idx: Vec<u64>,
    v: i64,
    site: CallSite,
    c: usize,
}

/// Per event and loop indices, each rank's (value, sum).
type ByIteration<'a> = BTreeMap<(usize, &'a Vec<u64>), Vec<(i64, i64)>>;

/// Values as (event, parameter slot).
type Slots = Vec<(usize, usize)>;

/// Per call site and slot: the events at that slot, and the sizes its values may sum.
type SameCandidates = HashMap<SumSlot, (Slots, Vec<usize>)>;

/// The values one model is fitted to, and the sizes to try.
struct Unit {
    /// The values: one event's (a sum of the next call's size), or every event of a call
    /// site at one slot (a sum of a size of its own call).
    members: Slots,
    /// The summed parameters to try, in order.
    sizes: Vec<usize>,
    /// Whether the summing call is the value's own.
    same_call: bool,
}

/// The factor and each event's start (a value over its loops) with which every occurrence
/// of `os` is `start + scale * sum` (the summed size over the lower ranks at the summing
/// call, plus, `running`, every rank's over the site's earlier calls), the start the same on
/// every rank at one iteration of one event; `None` when no positive factor fits.
fn fit_sum(os: &[&Occ], sm: &Sums, running: bool) -> Option<(i64, HashMap<usize, Val<i64>>)> {
    let sum = |o: &Occ| -> Option<i64> {
        let lower = *sm.lower.get(&(o.site, o.c, o.rank))?;
        let earlier = if running {
            *sm.earlier.get(&(o.site, o.c))?
        } else {
            0
        };
        Some(lower.wrapping_add(earlier))
    };
    // Per event and iteration: (value, sum) of each rank.
    let mut by_iter: ByIteration<'_> = BTreeMap::new();
    for o in os {
        by_iter
            .entry((o.ev, &o.idx))
            .or_default()
            .push((o.v, sum(o)?));
    }
    // The factor: from two ranks at one iteration whose sums differ.
    let scale = by_iter.values().find_map(|pts| {
        let (v0, s0) = pts[0];
        pts.iter().find_map(|&(v, x)| {
            let (dv, dx) = (v.wrapping_sub(v0), x.wrapping_sub(s0));
            // A layout's factor is an element's size: positive. A negative one fitted
            // h5_coll's read-back displacements at 3 ranks by chance (`exscan(-2 * count
            // ...)`), and the collective model then read the wrong regions.
            (dx != 0 && dv % dx == 0 && dv / dx > 0).then(|| dv / dx)
        })
    })?;
    let mut points: HashMap<usize, Vec<(Vec<u64>, i64)>> = HashMap::new();
    for (&(ev, idx), pts) in &by_iter {
        let start = pts[0].0.wrapping_sub(scale.wrapping_mul(pts[0].1));
        if pts
            .iter()
            .any(|&(v, x)| v.wrapping_sub(scale.wrapping_mul(x)) != start)
        {
            return None;
        }
        points.entry(ev).or_default().push((idx.clone(), start));
    }
    Some((
        scale,
        points
            .into_iter()
            .map(|(ev, pts)| (ev, value_at(&pts)))
            .collect(),
    ))
}

/// The values that may be the prefix sum of a size of their own call ([`place_sums`]), per
/// call site and slot `keep` accepts: the site's events at that slot and the sizes to try.
/// A site is a candidate where some event of it holds the slot over more than one rank group
/// (the data-dependent start: a single function of the rank is left as it is), and only when
/// every event of the site holds that slot exactly.
fn same_call_candidates(trace: &Trace, keep: &dyn Fn(SumSlot) -> bool) -> SameCandidates {
    // Per slot: its events, its sizes, whether some event is irregular, whether all are exact.
    type Seen = (Slots, Vec<usize>, bool, bool);
    fn walk(nodes: &[Node], out: &mut HashMap<SumSlot, Seen>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    let (np, nf) = (e.params.len(), e.nfields());
                    for (k, v) in e.params.iter().enumerate() {
                        let js = place_sums(e.op, k, np, nf);
                        if js.is_empty() {
                            continue;
                        }
                        let exact = |v: &Elastic| !v.is_approx() && !v.is_exscan();
                        let s = out
                            .entry((e.op, e.sig, k))
                            .or_insert_with(|| (Vec::new(), js.clone(), false, true));
                        s.0.push((key(e), k));
                        s.2 |= v.groups.len() > 1;
                        s.3 &= s.1 == js && exact(v) && js.iter().all(|&j| exact(&e.params[j]));
                    }
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut seen = HashMap::new();
    walk(&trace.nodes, &mut seen);
    seen.into_iter()
        .filter(|(slot, s)| s.2 && s.3 && keep(*slot))
        .map(|(slot, s)| (slot, (s.0, s.1)))
        .collect()
}

/// Finds the values that are the exclusive prefix sum over the ranks of another call's size
/// (times a factor, plus a start the same on every rank): a datatype's displacements or a
/// view's displacement computed from the sizes the ranks then write ([`Source`]). Only values
/// over more than one rank group are considered, and every occurrence on every rank must fit.
fn recognise_from(trace: &mut Trace) -> Vec<Recognised> {
    recognise_from_where(trace, &|_| true)
}

fn recognise_from_where(trace: &mut Trace, keep: &dyn Fn(SumSlot) -> bool) -> Vec<Recognised> {
    fn candidates(
        nodes: &[Node],
        keep: &dyn Fn(SumSlot) -> bool,
        out: &mut HashSet<(usize, usize)>,
    ) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    for (k, v) in e.params.iter().enumerate() {
                        if may_sum_another(e.op, k)
                            && v.groups.len() > 1
                            && !v.is_approx()
                            && !v.is_exscan()
                            && keep((e.op, e.sig, k))
                        {
                            out.insert((key(e), k));
                        }
                    }
                }
                NodeKind::Loop(l) => candidates(&l.body, keep, out),
            }
        }
    }
    let mut cand = HashSet::new();
    candidates(&trace.nodes, keep, &mut cand);
    let same = same_call_candidates(trace, keep);
    if cand.is_empty() && same.is_empty() {
        return Vec::new();
    }
    let same_sites: HashSet<CallSite> = same.keys().map(|&(op, sig, _)| (op, sig)).collect();
    let same_values: HashSet<(usize, usize)> = same.values().flat_map(|u| u.0.clone()).collect();
    let ranks = link(
        trace,
        &|e, k| {
            if same_values.contains(&(key(e), k)) {
                Some(Target::Same)
            } else {
                cand.contains(&(key(e), k)).then_some(Target::Next(None))
            }
        },
        &same_sites,
    );
    // Every occurrence of each candidate, with its rank.
    let mut occ: HashMap<(usize, usize), Vec<Occ>> = HashMap::new();
    for (&rank, l) in &ranks {
        for (ev, k, idx, v, site, c) in &l.values {
            occ.entry((*ev, *k)).or_default().push(Occ {
                rank,
                ev: *ev,
                idx: idx.clone(),
                v: *v,
                site: *site,
                c: *c,
            });
        }
    }
    // The units one model is fitted to: a value of one event summing the next call's size,
    // or every event of a call site at one slot summing a size of its own call (the site's
    // events over rank groups are one call over the ranks).
    let mut units: Vec<Unit> = Vec::new();
    for &(ev, k) in &cand {
        let Some(os) = occ.get(&(ev, k)) else {
            continue;
        };
        // One summing site for every occurrence, and every occurrence linked to one.
        let site = os[0].site;
        if os.iter().any(|o| o.site != site) {
            continue;
        }
        let total: usize = ranks
            .values()
            .flat_map(|l| &l.values)
            .filter(|x| (x.0, x.1) == (ev, k))
            .count();
        if total != os.len() {
            continue;
        }
        units.push(Unit {
            members: vec![(ev, k)],
            sizes: sized(site.0),
            same_call: false,
        });
    }
    for (members, sizes) in same.into_values() {
        units.push(Unit {
            members,
            sizes,
            same_call: true,
        });
    }
    let mut found: HashMap<(usize, usize), Exscan<RankFn>> = HashMap::new();
    let mut sums: HashMap<((Op, u64), usize), Sums> = HashMap::new();
    for Unit {
        members,
        sizes,
        same_call,
    } in &units
    {
        let os: Vec<&Occ> = members
            .iter()
            .filter_map(|m| occ.get(m))
            .flatten()
            .collect();
        let Some(site) = os.first().map(|o| o.site) else {
            continue;
        };
        'model: for &j in sizes {
            for running in [false, true] {
                let sm = sums
                    .entry((site, j))
                    .or_insert_with(|| sums_of(&ranks, site, j));
                let Some((scale, starts)) = fit_sum(&os, sm, running) else {
                    continue;
                };
                for &(ev, k) in members {
                    let Some(start) = starts.get(&ev) else {
                        continue;
                    };
                    found.insert(
                        (ev, k),
                        Exscan {
                            of: j as u32,
                            running,
                            start: start.map(&mut |&x| RankFn::Const(x)),
                            from: Some(Source {
                                op: site.0,
                                sig: site.1,
                                scale,
                                same_call: *same_call,
                            }),
                        },
                    );
                }
                break 'model;
            }
        }
    }
    let mut done = Vec::new();
    fn replace(
        nodes: &mut [Node],
        found: &mut HashMap<(usize, usize), Exscan<RankFn>>,
        done: &mut Vec<Recognised>,
    ) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    let id = key(e);
                    let (np, nf) = (e.params.len(), e.nfields());
                    for k in 0..np {
                        let Some(x) = found.remove(&(id, k)) else {
                            continue;
                        };
                        let v = &mut e.params[k];
                        let ranks = v
                            .groups
                            .iter()
                            .fold(RankSet::default(), |a, g| a.union(&g.ranks));
                        let src = x.from.expect("a model of another call's size");
                        let of = if src.same_call {
                            e.op.array_element(x.of as usize, np, nf)
                                .map_or("?", |a| a.0)
                        } else {
                            src.op.params().get(x.of as usize).map_or("?", |p| p.name())
                        };
                        done.push(Recognised {
                            op: e.op,
                            of,
                            running: x.running,
                            ranks: ranks.clone(),
                        });
                        *v = Elastic {
                            groups: vec![Group {
                                ranks,
                                val: Val::Exscan(Box::new(x)),
                            }],
                        };
                    }
                }
                NodeKind::Loop(l) => replace(&mut l.body, found, done),
            }
        }
    }
    replace(&mut trace.nodes, &mut found, &mut done);
    done
}

/// Replaces every value that sums another call's size by each rank's exact values, computed
/// from the sizes the trace holds (exact, drawn, or a summary's typical value). Returns the
/// number of parameters resolved.
fn resolve_from(trace: &mut Trace) -> usize {
    let mut models: HashMap<(usize, usize), (Exscan<RankFn>, Source)> = HashMap::new();
    fn find(nodes: &[Node], models: &mut HashMap<(usize, usize), (Exscan<RankFn>, Source)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    for (k, v) in e.params.iter().enumerate() {
                        if let Some((x, f)) = from_model(v) {
                            models.insert((key(e), k), (x.clone(), f));
                        }
                    }
                }
                NodeKind::Loop(l) => find(&l.body, models),
            }
        }
    }
    find(&trace.nodes, &mut models);
    if models.is_empty() {
        return 0;
    }
    let same: HashSet<CallSite> = models
        .values()
        .filter(|(_, f)| f.same_call)
        .map(|(_, f)| (f.op, f.sig))
        .collect();
    let ranks = link(
        trace,
        &|e, k| {
            models.get(&(key(e), k)).map(|(_, f)| {
                if f.same_call {
                    Target::Same
                } else {
                    Target::Next(Some((f.op, f.sig)))
                }
            })
        },
        &same,
    );
    let mut sums: HashMap<((Op, u64), usize), Sums> = HashMap::new();
    let mut built: HashMap<(usize, usize), BTreeMap<u32, Val<i64>>> = HashMap::new();
    for (&rank, l) in &ranks {
        for (ev, k, idx, _, site, c) in &l.values {
            let (m, f) = &models[&(*ev, *k)];
            let sm = sums
                .entry((*site, m.of as usize))
                .or_insert_with(|| sums_of(&ranks, *site, m.of as usize));
            let lower = sm.lower.get(&(*site, *c, rank)).copied().unwrap_or(0);
            let earlier = if m.running {
                sm.earlier.get(&(*site, *c)).copied().unwrap_or(0)
            } else {
                0
            };
            let start = m.start.map(&mut |g| g.eval(rank)).eval_start(idx);
            let x = start.wrapping_add(f.scale.wrapping_mul(lower.wrapping_add(earlier)));
            let v = built
                .entry((*ev, *k))
                .or_default()
                .entry(rank)
                .or_insert_with(|| Val::Seq(Vec::new()));
            insert(v, idx, x);
        }
    }
    let mut n = 0;
    fn replace(
        nodes: &mut [Node],
        built: &mut HashMap<(usize, usize), BTreeMap<u32, Val<i64>>>,
        n: &mut usize,
    ) {
        for node in nodes {
            match &mut node.kind {
                NodeKind::Event(e) => {
                    let id = key(e);
                    for (k, v) in e.params.iter_mut().enumerate() {
                        let Some((x, _)) = from_model(v) else {
                            continue;
                        };
                        *n += 1;
                        *v = match built.remove(&(id, k)) {
                            Some(per) => {
                                let pts: Vec<(u32, Val<i64>)> = per.into_iter().collect();
                                Elastic::canonical(&pts)
                            }
                            // No rank reaches a call of its site after it: its start.
                            None => Elastic {
                                groups: v
                                    .groups
                                    .iter()
                                    .map(|g| Group {
                                        ranks: g.ranks.clone(),
                                        val: x.start.clone(),
                                    })
                                    .collect(),
                            },
                        };
                    }
                }
                NodeKind::Loop(l) => replace(&mut l.body, built, n),
            }
        }
    }
    replace(&mut trace.nodes, &mut built, &mut n);
    n
}

/// The name [`render`] gives the summed parameter of `x`, held by an event of `op` with
/// `nparams` parameters and `nfields` path fields: its own parameter's, or the summing call's
/// (`bytes of the next MPI_File_write_at_all`).
pub fn summed_name(x: &Exscan<RankFn>, op: Op, nparams: usize, nfields: usize) -> String {
    match x.from {
        None => op.param_name(x.of as usize, nparams, nfields),
        Some(f) if f.same_call => {
            let of = op.param_name(x.of as usize, nparams, nfields);
            if f.scale == 1 {
                of
            } else {
                format!("{} * {of}", f.scale)
            }
        }
        Some(f) => {
            let name = f.op.params().get(x.of as usize).map_or("?", |p| p.name());
            let of = format!(
                "{name} of the next {} (call site {:#x})",
                f.op.name(),
                f.sig
            );
            if f.scale == 1 {
                of
            } else {
                format!("{} * {of}", f.scale)
            }
        }
    }
}

/// `exscan(count)`: the sum of `count` over the lower ranks in the same call;
/// `exscan(count, over calls)`: over every rank in the earlier calls too; a start other than 0
/// comes first (`4096 + exscan(bytes)`). `of` is the summed parameter's name.
pub fn render(x: &Exscan<RankFn>, of: &str, depth0: usize) -> String {
    let sum = if x.running {
        format!("exscan({of}, over calls)")
    } else {
        format!("exscan({of})")
    };
    match &x.start {
        Val::Const(RankFn::Const(0)) => sum,
        s => format!("{} + {sum}", crate::notation::render_val(s, depth0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::compress;
    use crate::op::args;
    use crate::trace::RawEvent;

    /// The dump of `textdump`: per step, rank r writes `len(r, s)` bytes at the sum of every
    /// rank's lengths of the earlier steps plus the lower ranks' of this one.
    fn len(r: u32, s: u32) -> i64 {
        i64::from((r * 7919 + s * 131 + r * r * 17) % 97 + 3)
    }

    fn dump(n: u32, steps: u32) -> Trace {
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let mut evs = Vec::new();
                let mut base = 0;
                for s in 0..steps {
                    let off: i64 = base + (0..r).map(|q| len(q, s)).sum::<i64>();
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
        crate::merge::merge_tree(ts).unwrap()
    }

    fn offsets(t: &Trace, n: u32) -> Vec<Vec<(i64, i64)>> {
        (0..n)
            .map(|r| {
                t.expand(r)
                    .iter()
                    .filter(|e| e.op == Op::FileWriteAtAll)
                    .map(|e| (e.p(Param::Offset), e.p(Param::Count)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_dump_is_recognised_and_resolves_to_the_same_offsets() {
        let n = 9;
        let t = dump(n, 4);
        let want = offsets(&t, n);
        let mut m = t.clone();
        let rec = recognise(&mut m);
        assert!(!rec.is_empty(), "{t:?}");
        assert!(rec.iter().all(|r| r.running && r.of == "count"), "{rec:?}");
        assert!(present(&m));
        let mut shown = String::new();
        crate::notation::render_nodes(&m.nodes, None, 0, &mut shown);
        assert!(
            shown.contains("offset = exscan(count, over calls)"),
            "{shown}"
        );
        // The model survives the format (an appended variant of the value).
        crate::format::assert_round_trips(n, &m);
        let mut back = m.clone();
        assert!(resolve(&mut back) >= 1);
        assert!(!present(&back));
        assert_eq!(offsets(&back, n), want);
        // Contiguous and non-overlapping: sorted by offset, each block starts where the last
        // one ended, from 0 to the total.
        let mut blocks: Vec<(i64, i64)> = want.concat();
        blocks.sort();
        let mut end = 0;
        for (o, c) in blocks {
            assert_eq!(o, end);
            end += c;
        }
    }

    /// h5py's collective write of a hyperslab: per step, rank r builds a hindexed filetype
    /// whose displacement is 8 times the particles of the lower ranks (`MPI_Exscan` of the
    /// counts), sets the view at the dataset's address and writes its `8 * len(r, s)` bytes at
    /// offset 0.
    fn hyperslabs(n: u32, steps: u32) -> Trace {
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let mut evs = Vec::new();
                for s in 0..steps {
                    let disp: i64 = 8 * (0..r).map(|q| len(q, s)).sum::<i64>();
                    let mut h = args::type_create_hindexed(1, 1001, 1002 + i64::from(s));
                    h.extend([1, disp]);
                    evs.push(RawEvent::new(Op::TypeCreateHindexed, 3, h));
                    evs.push(RawEvent::new(
                        Op::FileSetView,
                        4,
                        args::file_set_view(0, 2104 + 4096 * i64::from(s), 4, 1002),
                    ));
                    let c = 8 * len(r, s);
                    evs.push(RawEvent::new(
                        Op::FileWriteAtAll,
                        5,
                        args::file_write_at_all(0, 0, c, 4, c),
                    ));
                }
                compress(r, &evs)
            })
            .collect();
        crate::merge::merge_tree(ts).unwrap()
    }

    /// Per rank, parameter `k` of its calls of `op`, in order.
    fn values_of(t: &Trace, n: u32, op: Op, k: usize) -> Vec<Vec<i64>> {
        (0..n)
            .map(|r| {
                t.expand(r)
                    .iter()
                    .filter(|e| e.op == op)
                    .map(|e| e.params[k])
                    .collect()
            })
            .collect()
    }

    fn displacements(t: &Trace, n: u32) -> Vec<Vec<i64>> {
        values_of(t, n, Op::TypeCreateHindexed, 4)
    }

    #[test]
    fn a_displacement_that_sums_a_later_calls_size_is_recognised_and_resolves() {
        let n = 7;
        let t = hyperslabs(n, 3);
        let want = displacements(&t, n);
        let mut m = t.clone();
        let rec = recognise_from(&mut m);
        assert_eq!(rec.len(), 1, "{rec:?}");
        assert_eq!((rec[0].op, rec[0].of), (Op::TypeCreateHindexed, "count"));
        assert!(!rec[0].running);
        let mut shown = String::new();
        crate::notation::render_nodes(&m.nodes, None, 0, &mut shown);
        assert!(
            shown.contains(
                "displacements[0] = exscan(count of the next MPI_File_write_at_all (call site 0x5))"
            ),
            "{shown}"
        );
        // The model survives the format, and an own-size model keeps its bytes (no `from`).
        crate::format::assert_round_trips(n, &m);
        let own = Exscan::<RankFn> {
            of: 2,
            running: true,
            start: Val::Const(RankFn::Const(0)),
            from: None,
        };
        let old = (2u32, true, Val::Const(RankFn::Const(0i64)));
        assert_eq!(
            rmp_serde::to_vec(&own).unwrap(),
            rmp_serde::to_vec(&old).unwrap()
        );
        let mut back = m.clone();
        assert_eq!(resolve(&mut back), 1);
        assert!(!present(&back));
        assert_eq!(displacements(&back, n), want);
    }

    #[test]
    fn drawn_sizes_give_displacements_that_tile_each_dataset() {
        let n = 12;
        let mut t = hyperslabs(n, 3);
        assert_eq!(recognise_from(&mut t).len(), 1);
        let p = crate::approx::Policy {
            comm: false,
            io: true,
            budget: 4,
        };
        crate::approx::bound(&mut t, &p);
        assert!(crate::approx::count(&t) > 0, "sizes summarised");
        assert!(present(&t), "the displacements keep the model");
        let mut d = t.clone();
        crate::draw::realize(&mut d, 5).unwrap();
        assert!(!present(&d) && crate::approx::count(&d) == 0);
        // Per step, the ranks' blocks [displacement, + bytes written) tile the dataset from 0.
        let disp = displacements(&d, n);
        for s in 0..3 {
            let mut end = 0;
            for (r, ds) in disp.iter().enumerate() {
                let c = d
                    .expand(r as u32)
                    .iter()
                    .filter(|e| e.op == Op::FileWriteAtAll)
                    .map(|e| e.p(Param::Count))
                    .nth(s)
                    .unwrap();
                assert_eq!(ds[s], end, "rank {r} step {s}");
                end += c;
            }
        }
    }

    /// h5py's selection of a rank's particles in a 1-D dataset: per step, rank r selects
    /// `len(r, s)` elements from `start[0]` = the lower ranks' counts (`MPI_Exscan`), in one
    /// `H5Sselect_hyperslab` (params: space, op, ndims, start, stride, count, block).
    fn selections(n: u32, steps: u32) -> Trace {
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let evs: Vec<RawEvent> = (0..steps)
                    .map(|s| {
                        let start: i64 = (0..r).map(|q| len(q, s)).sum();
                        let space = 7 + 11 * i64::from(s);
                        RawEvent::new(
                            Op::H5SselectHyperslab,
                            9,
                            vec![space, 0, 1, start, 1, len(r, s), 1],
                        )
                    })
                    .collect();
                compress(r, &evs)
            })
            .collect();
        crate::merge::merge_tree(ts).unwrap()
    }

    fn starts_of(t: &Trace, n: u32) -> Vec<Vec<i64>> {
        values_of(t, n, Op::H5SselectHyperslab, 3)
    }

    #[test]
    fn a_start_that_sums_the_same_calls_count_is_recognised_and_resolves() {
        let n = 9;
        let t = selections(n, 3);
        let want = starts_of(&t, n);
        let mut m = t.clone();
        let rec = recognise_other_calls(&mut m, &|_| true);
        assert_eq!(rec.len(), 1, "{rec:?}");
        assert_eq!((rec[0].op, rec[0].of), (Op::H5SselectHyperslab, "count"));
        assert!(!rec[0].running);
        assert_eq!(
            other_call_slots(&m).into_iter().collect::<Vec<_>>(),
            vec![(Op::H5SselectHyperslab, 9, 3)]
        );
        let mut shown = String::new();
        crate::notation::render_nodes(&m.nodes, None, 0, &mut shown);
        assert!(shown.contains("start[0] = exscan(count[0])"), "{shown}");
        // The count and the block (1 here) are left as they are; stride and block are no
        // places.
        assert!(!shown.contains("block[0] = exscan"), "{shown}");
        // The model survives the format; one of another call keeps its bytes (`same_call`
        // false is left out).
        crate::format::assert_round_trips(n, &m);
        let other = Source {
            op: Op::FileWriteAtAll,
            sig: 5,
            scale: 8,
            same_call: false,
        };
        assert_eq!(
            rmp_serde::to_vec(&other).unwrap(),
            rmp_serde::to_vec(&(Op::FileWriteAtAll, 5u64, 8i64)).unwrap()
        );
        let mut back = m.clone();
        assert_eq!(resolve(&mut back), 1);
        assert!(!present(&back));
        assert_eq!(starts_of(&back, n), want);
    }

    #[test]
    fn drawn_counts_give_starts_that_tile_each_selection() {
        let n = 12;
        let mut t = selections(n, 3);
        assert_eq!(recognise_other_calls(&mut t, &|_| true).len(), 1);
        // The counts summarised (as `--approx-unfit` summarises data-dependent counts), then
        // drawn: the starts follow the drawn counts.
        let done = crate::approx::summarise_where(&mut t, &mut |_, e, k| {
            e.op == Op::H5SselectHyperslab && k == 5
        });
        assert!(!done.is_empty() && crate::approx::count(&t) > 0);
        assert!(present(&t), "the starts keep the model");
        let mut d = t.clone();
        crate::draw::realize(&mut d, 5).unwrap();
        assert!(!present(&d));
        for s in 0..3 {
            let mut end = 0;
            for r in 0..n {
                let e = &d
                    .expand(r)
                    .into_iter()
                    .filter(|e| e.op == Op::H5SselectHyperslab)
                    .nth(s)
                    .unwrap();
                assert_eq!(e.params[3], end, "rank {r} step {s}");
                end += e.params[5];
            }
        }
    }

    #[test]
    fn a_start_that_is_a_function_of_the_rank_is_left_as_it_is() {
        // h5_coll-like: rank r selects 100 elements from 100*r: one rank function.
        let n = 8;
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let ev = RawEvent::new(
                    Op::H5SselectHyperslab,
                    9,
                    vec![7, 0, 1, 100 * i64::from(r), 1, 100, 1],
                );
                compress(r, &[ev])
            })
            .collect();
        let t = crate::merge::merge_tree(ts).unwrap();
        let mut m = t.clone();
        assert!(recognise_other_calls(&mut m, &|_| true).is_empty());
        assert_eq!(m, t);
    }

    #[test]
    fn regular_offsets_are_left_as_they_are() {
        // ior-like: rank r writes 4096 bytes at 4096*r + 4096*n*i: already a rank function.
        let n = 8;
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let evs: Vec<RawEvent> = (0..3)
                    .map(|i| {
                        let off = 4096 * (i64::from(r) + i64::from(n) * i);
                        RawEvent::new(
                            Op::FileWriteAtAll,
                            5,
                            args::file_write_at_all(0, off, 4096, 1, 4096),
                        )
                    })
                    .collect();
                compress(r, &evs)
            })
            .collect();
        let t = crate::merge::merge_tree(ts).unwrap();
        let mut m = t.clone();
        assert!(recognise(&mut m).is_empty());
        assert_eq!(m, t);
    }

    #[test]
    fn offsets_that_are_not_a_prefix_sum_are_left_as_they_are() {
        let n = 6;
        let ts: Vec<Trace> = (0..n)
            .map(|r| {
                let c = len(r, 0);
                // Blocks in reverse rank order with a gap: no prefix sum of the sizes.
                let off = 1000 - 10 * i64::from(r * r);
                compress(
                    r,
                    &[RawEvent::new(
                        Op::FileWriteAt,
                        5,
                        args::file_write_at(0, off, c, 1, c),
                    )],
                )
            })
            .collect();
        let t = crate::merge::merge_tree(ts).unwrap();
        let mut m = t.clone();
        assert!(recognise(&mut m).is_empty());
        assert_eq!(m, t);
    }

    #[test]
    fn drawn_sizes_give_offsets_that_tile_the_file() {
        let n = 12;
        let mut t = dump(n, 3);
        assert!(!recognise(&mut t).is_empty());
        let p = crate::approx::Policy {
            comm: false,
            io: true,
            budget: 4,
        };
        crate::approx::bound(&mut t, &p);
        assert!(crate::approx::count(&t) > 0, "sizes summarised");
        assert!(present(&t), "the offsets keep the model");
        let recorded: f64 = {
            let mut s = 0.0;
            fn walk(nodes: &[Node], s: &mut f64) {
                for n in nodes {
                    match &n.kind {
                        NodeKind::Event(e) => {
                            if let Some(Group {
                                val: Val::Approx(a),
                                ..
                            }) = e.params[2].groups.first()
                            {
                                *s += a.total();
                            }
                        }
                        NodeKind::Loop(l) => walk(&l.body, s),
                    }
                }
            }
            walk(&t.nodes, &mut s);
            s
        };
        let mut d = t.clone();
        crate::draw::realize(&mut d, 3).unwrap();
        assert!(!present(&d) && crate::approx::count(&d) == 0);
        let mut blocks: Vec<(i64, i64)> = offsets(&d, n).concat();
        blocks.sort();
        let mut end = 0;
        for (o, c) in blocks {
            assert_eq!(o, end, "contiguous");
            end += c;
        }
        assert_eq!(end, recorded.round() as i64, "the recorded total");
    }
}
