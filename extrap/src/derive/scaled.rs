//! The derivation at any scale (issue 13, item 4): the nested calls of the derived collective
//! calls are built without expanding, re-compressing and merging every rank.
//!
//! The extrapolated trace (stripped of the derived children) is cut into rank intervals on
//! which it is uniform: every node and every value group either holds the whole interval or
//! none of it, every rank function is affine and no loop count depends on the rank. On such
//! an interval each rank runs the same calls with parameters affine in the rank, so each
//! collective call's regions are computed exactly (through the file table) at a few ranks of
//! the interval, both ends included, and must be affine in the rank there; they are then laid
//! out for every rank of the interval. The model runs on the regions of all ranks (it is the
//! library's algorithm; its cost is linear in the regions, not in the trace). Only the ranks
//! the model gives nested calls (OMPIO's aggregators) are expanded, given their calls,
//! re-compressed and merged, as the tracer would; every other rank keeps its stripped
//! events. The result is the stripped trace restricted to the other ranks followed by the
//! aggregators' merged trace: each rank runs exactly the calls the full derivation gives it.

use super::{Group, Plan, Route, Site, config, issued, model, walk_rank};

/// One rank's derived nested calls: per collective call (path, index on that path), the
/// library's path and the calls.
type RankDerived = HashMap<(String, usize), (Route, Vec<collio::Call>)>;
use crate::Explain;
use collio::Collective;
use collio::traced::{self, RankAccess, TracedCall};
use rsd::trace::{Node, NodeKind};
use rsd::value::{RankFn, Val};
use rsd::{Compressor, RankSet, Trace, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The most rank intervals the trace may fall into: each is walked at a few ranks.
const MAX_INTERVALS: usize = 4096;

/// The most ranks with nested calls (aggregators) this path expands; beyond it the layer
/// is not compact anyway (OMPIO's `individual` fcoll gives every rank its calls).
const MAX_AGGREGATORS: usize = 1 << 16;

/// Cuts `0..np` where the trace stops being uniform (see the module's text), or says why it
/// cannot be cut into such intervals.
fn intervals(nodes: &[Node], np: u32) -> Result<Vec<(u32, u32)>, String> {
    fn set(s: &RankSet, cuts: &mut BTreeSet<u32>) -> Result<(), String> {
        for run in &s.runs {
            match run.dims.as_slice() {
                [(c, s)] if *s <= 1 || *c == 1 => {
                    cuts.insert(run.start);
                    cuts.insert(run.start.saturating_add(*c));
                }
                _ => return Err(format!("the rank set {s} is strided")),
            }
        }
        Ok(())
    }
    /// A cyclic shift is constant on each side of its wrap-around in every block: cut there
    /// (a ring's peer takes two intervals). Blocks or periods of another form are not affine
    /// on intervals.
    fn affine(
        v: &Val<RankFn>,
        what: &str,
        np: u32,
        cuts: &mut BTreeSet<u32>,
    ) -> Result<(), String> {
        let mut leaves = Vec::new();
        v.leaves(&mut leaves);
        for f in &leaves {
            match *f {
                RankFn::Div { .. } | RankFn::Mod { .. } => {
                    return Err(format!(
                        "{what} is a block or periodic function of the rank ({f:?})"
                    ));
                }
                RankFn::Shift { w, p, o } => {
                    let p = u32::try_from(p).unwrap_or(u32::MAX).max(1);
                    if (np / p) as usize >= MAX_INTERVALS / 2 {
                        return Err(format!(
                            "{what} is a cyclic shift in blocks of {p} ranks ({f:?})"
                        ));
                    }
                    // Blocks start where `rank + o` is a multiple of `p`; the wrapped part
                    // starts `p - w` ranks in.
                    let p64 = i64::from(p);
                    for first in [(-o).rem_euclid(p64), (p64 - w - o).rem_euclid(p64)] {
                        let mut r = first;
                        while r < i64::from(np) {
                            cuts.insert(r as u32);
                            r += p64;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
    fn walk(nodes: &[Node], np: u32, cuts: &mut BTreeSet<u32>) -> Result<(), String> {
        for n in nodes {
            set(&n.ranks, cuts)?;
            match &n.kind {
                NodeKind::Event(e) => {
                    for p in &e.params {
                        for g in &p.groups {
                            set(&g.ranks, cuts)?;
                            affine(&g.val, &format!("a parameter of {}", e.op.name()), np, cuts)?;
                        }
                    }
                    walk(&e.children, np, cuts)?;
                }
                NodeKind::Loop(l) => {
                    for g in &l.iters.groups {
                        set(&g.ranks, cuts)?;
                        let mut leaves = Vec::new();
                        g.val.leaves(&mut leaves);
                        if leaves.iter().any(|f| !matches!(f, RankFn::Const(_))) {
                            return Err("a loop's iteration count depends on the rank".into());
                        }
                    }
                    walk(&l.body, np, cuts)?;
                }
            }
        }
        Ok(())
    }
    let mut cuts = BTreeSet::from([0, np]);
    walk(nodes, np, &mut cuts)?;
    let cuts: Vec<u32> = cuts.into_iter().filter(|&c| c <= np).collect();
    if cuts.len() > MAX_INTERVALS {
        return Err(format!(
            "the trace falls into {} rank intervals (at most {MAX_INTERVALS})",
            cuts.len() - 1
        ));
    }
    Ok(cuts.windows(2).map(|w| (w[0], w[1])).collect())
}

/// One collective call on one rank interval: its value at the interval's first rank and what
/// one more rank adds.
struct AffineCall {
    site: Site,
    access: RankAccess,
    /// Per region, the step of (offset, length) per rank.
    d_regions: Vec<(i64, i64)>,
    d_start: i64,
    d_size: i64,
}

/// The collective calls of one interval, by (path, index on the path).
struct IntervalCalls {
    lo: u32,
    hi: u32,
    calls: BTreeMap<(String, usize), AffineCall>,
}

fn step(a: u64, b: u64) -> i64 {
    b.wrapping_sub(a) as i64
}

fn at(base: u64, d: i64, k: u64) -> u64 {
    base.wrapping_add((d as u64).wrapping_mul(k))
}

/// One rank's collective calls by (path, index on the path): call site and access.
type RankCallsAt = BTreeMap<(String, usize), (Site, RankAccess)>;

/// The collective calls of the ranks `lo..hi`, from a few of them, checked affine.
fn interval_calls(trace: &Trace, lo: u32, hi: u32) -> Result<IntervalCalls, String> {
    let mut samples: Vec<u32> = [lo, lo + 1, lo + 2, lo + (hi - lo) / 2, hi - 2, hi - 1]
        .into_iter()
        .filter(|&r| r >= lo && r < hi)
        .collect();
    samples.sort_unstable();
    samples.dedup();
    // Per sample rank, its calls by (path, index).
    let mut per: Vec<(u32, RankCallsAt)> = Vec::new();
    for &r in &samples {
        let rc = walk_rank(trace, r);
        let mut by_path: HashMap<&str, Vec<&super::RankColl>> = HashMap::new();
        for c in &rc.colls {
            by_path.entry(c.path.as_str()).or_default().push(c);
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut calls = BTreeMap::new();
        for a in traced::rank_accesses(trace, r) {
            let k = seen.entry(a.path.clone()).or_default();
            let index = *k;
            *k += 1;
            let Some(c) = by_path.get(a.path.as_str()).and_then(|v| v.get(index)) else {
                return Err(format!(
                    "rank {r}'s collective call {index} on {} is on no file it opened",
                    a.path
                ));
            };
            if !c.world {
                return Err(format!(
                    "{}: collective call {index} is on a file opened on another communicator \
                     than MPI_COMM_WORLD",
                    a.path
                ));
            }
            calls.insert((a.path.clone(), index), (c.site, a));
        }
        per.push((r, calls));
    }
    let (r0, first) = &per[0];
    let next = per.get(1);
    let mut out = BTreeMap::new();
    for (key, (site, a)) in first {
        let b = next.map(|(_, m)| m.get(key));
        let (d_regions, d_start, d_size) = match b {
            Some(Some((_, b))) if b.regions.len() == a.regions.len() => (
                a.regions
                    .iter()
                    .zip(&b.regions)
                    .map(|(x, y)| (step(x.0, y.0), step(x.1, y.1)))
                    .collect(),
                step(a.start, b.start),
                step(a.size_before, b.size_before),
            ),
            None => (vec![(0, 0); a.regions.len()], 0, 0),
            _ => {
                return Err(format!(
                    "{}: collective call {} differs in shape between ranks {r0} and {}",
                    key.0,
                    key.1,
                    r0 + 1
                ));
            }
        };
        out.insert(
            key.clone(),
            AffineCall {
                site: *site,
                access: a.clone(),
                d_regions,
                d_start,
                d_size,
            },
        );
    }
    // Every sample rank must be the affine continuation of the first two.
    for (r, m) in &per {
        let k = u64::from(r - r0);
        let same = m.len() == out.len()
            && m.iter().all(|(key, (site, b))| {
                out.get(key).is_some_and(|c| {
                    let a = &c.access;
                    c.site == *site
                        && a.op == b.op
                        && a.view_blocks == b.view_blocks
                        && a.regions.len() == b.regions.len()
                        && a.regions
                            .iter()
                            .zip(&b.regions)
                            .zip(&c.d_regions)
                            .all(|((x, y), d)| at(x.0, d.0, k) == y.0 && at(x.1, d.1, k) == y.1)
                        && at(a.start, c.d_start, k) == b.start
                        && at(a.size_before, c.d_size, k) == b.size_before
                })
            });
        if !same {
            return Err(format!(
                "the collective calls of ranks {lo}-{} are not affine in the rank (rank {r} \
                 differs from the continuation of ranks {r0} and {})",
                hi - 1,
                r0 + 1
            ));
        }
    }
    Ok(IntervalCalls { lo, hi, calls: out })
}

/// `s` without the ranks of `minus` (sorted), memoised by set.
fn without(s: &RankSet, minus: &[u32], memo: &mut HashMap<RankSet, RankSet>) -> RankSet {
    if let Some(r) = memo.get(s) {
        return r.clone();
    }
    let r = if minus.iter().any(|&a| s.contains(a)) {
        let v: Vec<u32> = s
            .to_vec()
            .into_iter()
            .filter(|r| minus.binary_search(r).is_err())
            .collect();
        RankSet::from_sorted(&v)
    } else {
        s.clone()
    };
    memo.insert(s.clone(), r.clone());
    r
}

/// Timing statistics of a node that keeps the fraction `f` of its ranks.
fn scale(s: &mut rsd::timing::Stats, f: f64) {
    s.count = (s.count as f64 * f).round() as u64;
    s.m2 *= f;
    for b in &mut s.bins {
        *b = (*b as f64 * f).round() as u64;
    }
}

/// `nodes` for the ranks not in `minus` only: node and value-group rank sets shrunk, nodes
/// and groups left empty dropped.
fn restrict(nodes: &[Node], minus: &[u32], memo: &mut HashMap<RankSet, RankSet>) -> Vec<Node> {
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        let ranks = without(&n.ranks, minus, memo);
        if ranks.is_empty() {
            continue;
        }
        let mut groups = |e: &mut rsd::value::Elastic| {
            for g in &mut e.groups {
                g.ranks = without(&g.ranks, minus, memo);
            }
            e.groups.retain(|g| !g.ranks.is_empty());
        };
        let kind = match &n.kind {
            NodeKind::Event(e) => {
                let mut e = e.clone();
                // The node's calls are now those of fewer ranks: its counts shrink in
                // proportion (the means stay).
                if ranks.len() != n.ranks.len() {
                    let f = ranks.len() as f64 / n.ranks.len().max(1) as f64;
                    scale(&mut e.timing.gap, f);
                    scale(&mut e.timing.dur, f);
                }
                e.params.iter_mut().for_each(&mut groups);
                e.children = restrict(&e.children, minus, memo);
                NodeKind::Event(e)
            }
            NodeKind::Loop(l) => {
                let mut iters = l.iters.clone();
                groups(&mut iters);
                NodeKind::Loop(rsd::trace::Loop {
                    iters,
                    body: restrict(&l.body, minus, memo),
                })
            }
        };
        out.push(Node { ranks, kind });
    }
    out
}

/// Puts the model's nested calls into every derived collective call of the extrapolated
/// trace `tf` without expanding every rank (see the module's text), or says why it cannot.
pub(crate) fn insert(tf: &mut TraceFile, p: &Plan) -> Result<Vec<Explain>, String> {
    let np = tf.header.nranks;
    let trace = &tf.trace;
    let cut = intervals(&trace.nodes, np)
        .map_err(|why| format!("the trace is not uniform on rank intervals: {why}"))?;
    let parts: Vec<IntervalCalls> = cut
        .iter()
        .map(|&(lo, hi)| interval_calls(trace, lo, hi))
        .collect::<Result<_, _>>()?;
    // Every rank makes the same collective calls (a collective call is made by the whole
    // communicator; files opened on MPI_COMM_WORLD only, as checked above).
    let keys: Vec<&(String, usize)> = parts[0].calls.keys().collect();
    if let Some(q) = parts
        .iter()
        .find(|q| q.calls.len() != keys.len() || !keys.iter().all(|k| q.calls.contains_key(*k)))
    {
        return Err(format!(
            "ranks {}-{} and {}-{} make different collective calls",
            parts[0].lo,
            parts[0].hi - 1,
            q.lo,
            q.hi - 1
        ));
    }
    let mut explain: BTreeMap<Site, Explain> = BTreeMap::new();
    let mut made_up = BTreeSet::new();
    // Per rank with nested calls: (path, index) -> the calls.
    let mut derived: BTreeMap<u32, RankDerived> = BTreeMap::new();
    for key in keys {
        let sites: BTreeSet<Site> = parts.iter().map(|q| q.calls[key].site).collect();
        let is_derived = sites.iter().filter(|s| p.derived.contains(s)).count();
        if is_derived == 0 {
            continue;
        }
        if is_derived != sites.len() {
            return Err(format!(
                "{}: collective call {} is made from call sites of which only some are derived",
                key.0, key.1
            ));
        }
        let first = &parts[0].calls[key].access;
        let dir = traced::collective_dir(first.op).ok_or("not a collective call")?;
        let n = np as usize;
        let (mut regions, mut starts) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut contig = Vec::with_capacity(n);
        let mut file_size = 0;
        for q in &parts {
            let c = &q.calls[key];
            let a = &c.access;
            // The view is a parameter of the interval's uniform events: the same filetype on
            // every rank of it.
            contig.extend(std::iter::repeat_n(
                a.contig_filetype,
                (q.hi - q.lo) as usize,
            ));
            for k in 0..u64::from(q.hi - q.lo) {
                regions.push(
                    a.regions
                        .iter()
                        .zip(&c.d_regions)
                        .map(|(x, d)| (at(x.0, d.0, k), at(x.1, d.1, k)))
                        .collect::<Vec<_>>(),
                );
                starts.push(at(a.start, c.d_start, k));
            }
            // Affine: the largest size is at one end.
            let last = u64::from(q.hi - q.lo - 1);
            file_size = file_size
                .max(a.size_before)
                .max(at(a.size_before, c.d_size, last));
        }
        let view = collio::ompio::ViewStats::from_ranks(parts.iter().flat_map(|q| {
            std::iter::repeat_n(
                q.calls[key].access.view_blocks.as_slice(),
                (q.hi - q.lo) as usize,
            )
        }));
        let g = Group {
            call: TracedCall {
                path: key.0.clone(),
                index: key.1,
                op: first.op,
                ranks: (0..np).collect(),
                input: Collective {
                    dir,
                    regions,
                    file_size,
                    starts,
                    contig_filetype: contig,
                },
                view,
                recorded: Vec::new(),
            },
            members: Vec::new(),
        };
        let cfg = config(&tf.header, &key.0, np)?;
        let out = model(&g, &cfg)?;
        drop(g);
        for site in &sites {
            explain.entry(*site).or_insert_with(|| Explain {
                event: format!("{} (call site {:#x})", site.0.name(), site.1),
                quantity: "nested POSIX calls".into(),
                model: format!(
                    "derived by the model of {} (the model reproduced every input scale \
                     exactly), in compressed form: the model ran on the regions of all {np} \
                     ranks, laid out from {} rank intervals where the trace is affine in the \
                     rank, and only the ranks with nested calls were expanded; timing: the \
                     inputs' mean per nested op",
                    out.how,
                    parts.len()
                ),
                curve: None,
            });
        }
        for (r, calls) in out.calls.into_iter().enumerate() {
            if !calls.is_empty() {
                derived
                    .entry(r as u32)
                    .or_default()
                    .insert(key.clone(), (out.route, calls));
            }
        }
        if derived.len() > MAX_AGGREGATORS {
            return Err(format!(
                "more than {MAX_AGGREGATORS} ranks issue nested calls at {np} ranks"
            ));
        }
    }
    // The ranks with nested calls, each expanded, given its calls and re-compressed.
    let aggs: Vec<u32> = derived.keys().copied().collect();
    let mut traces = Vec::with_capacity(aggs.len());
    for (&r, calls) in &derived {
        let rc = walk_rank(trace, r);
        let mut events = rc.events;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for c in &rc.colls {
            let k = seen.entry(c.path.as_str()).or_default();
            let index = *k;
            *k += 1;
            let Some((route, issue)) = calls.get(&(c.path.clone(), index)) else {
                continue;
            };
            let Some(fd) = c.fd else {
                return Err(format!(
                    "{}: rank {r} has no traced descriptor for the file",
                    c.path
                ));
            };
            let mut children = Vec::with_capacity(issue.len());
            for call in issue {
                let t = p
                    .template(c.site, *route, call, &mut made_up)
                    .map_err(|e| format!("at {np} ranks, rank {r}: {e}"))?;
                children.push(issued(call, fd, &t));
            }
            events[c.event].children = children;
        }
        let mut comp = Compressor::new(r);
        for e in &events {
            comp.push(e);
        }
        traces.push(comp.finish());
    }
    let mut memo = HashMap::new();
    let mut nodes = restrict(&trace.nodes, &aggs, &mut memo);
    if !traces.is_empty() {
        let merged = rsd::merge_tree(traces)
            .map_err(|e| format!("merging the ranks with nested calls: {e}"))?;
        nodes.extend(merged.nodes);
    }
    tf.trace = Trace { nodes };
    tf.header.notes.extend(made_up);
    Ok(explain.into_values().collect())
}
