//! The derivation at any scale: the nested calls of the derived collective
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
//! the model gives nested calls (OMPIO's aggregators) are walked again: their calls are put
//! into the stripped trace's own collective events as children whose rank set is the
//! aggregators', in one shape for every aggregator and every occurrence of the call (see
//! [`attach`]): each rank runs exactly the calls the full derivation gives it. Where that
//! cannot be done, the aggregators are expanded, given their calls, re-compressed and merged
//! as the tracer would, after the stripped trace restricted to the other ranks.

use super::{
    ChildTemplate, Group, MadeUp, Modelled, Plan, Route, Site, Underived, config, issued, model,
    record_made_up, walk_rank,
};

use crate::Explain;
use collio::Collective;
use collio::traced::{self, RankAccess, TracedCall};
use rsd::trace::{Node, NodeKind};
use rsd::value::{Elastic, RankFn, Val};
use rsd::{Compressor, RankSet, RawEvent, Trace, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod shape;
use shape::{Run, attach, runs};

/// One rank's derived nested calls: per collective call (path, index on that path), the
/// library's path and the calls.
type RankDerived = HashMap<(String, usize), (Route, Vec<collio::Call>)>;

/// The most rank intervals the trace may fall into: each is walked at a few ranks.
const MAX_INTERVALS: usize = 4096;

/// The most ranks with nested calls (aggregators) this path expands; beyond it the layer
/// is not compact anyway (OMPIO's `individual` fcoll gives every rank its calls).
const MAX_AGGREGATORS: usize = 1 << 16;

/// The bytes one nested call takes while the derivation holds it: the model's call, then the
/// event it is issued as, with its parameters and a run (an estimate for `--max-memory`).
const NESTED_BYTES: u64 = 256;

/// The bytes every rank's regions of collective call `key` take laid out for the model
/// (`group_at`): an estimate for `--max-memory`.
fn regions_bytes(key: &(String, usize), parts: &[IntervalCalls]) -> u64 {
    parts
        .iter()
        .map(|q| {
            let per_rank = 16 * q.calls[key].access.regions.len() as u64 + 64;
            u64::from(q.hi - q.lo) * per_rank
        })
        .sum()
}

/// The fewest ranks with nested calls from which they are worked out at a few ranks of each
/// rank interval and stretched over it ([`Sampled`]) when they allow it; below it every rank
/// with nested calls is walked.
const SAMPLED_FROM: usize = 1 << 10;

/// The rank intervals on which the trace is uniform, and the few ranks of each (its first
/// two and its last) that stand for it where every rank of the interval issues its nested
/// calls in one shape (the same runs of the same calls, see [`runs`]) with parameters affine
/// in the rank: a value affine in the rank that is right at two ranks of an interval is right
/// on all of it. ROMIO's independent accesses give every rank its calls: at 2^20 ranks, walked
/// and held rank by rank, they were over the aggregators' bound and fitted instead.
struct Sampled {
    /// The intervals in rank order; none: every rank stands for itself.
    cut: Vec<(u32, u32)>,
}

impl Sampled {
    fn new(cut: &[(u32, u32)]) -> Sampled {
        Sampled { cut: cut.to_vec() }
    }

    /// Every rank for itself (the derivation that walks every rank with nested calls).
    fn every() -> Sampled {
        Sampled { cut: Vec::new() }
    }

    /// The sample ranks of the interval `lo..hi`, in order.
    fn of(lo: u32, hi: u32) -> Vec<u32> {
        let mut v = vec![lo, lo + 1, hi - 1];
        v.retain(|&r| r < hi);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Every interval's sample ranks.
    fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        self.cut.iter().flat_map(|&(lo, hi)| Sampled::of(lo, hi))
    }

    fn interval(&self, r: u32) -> Option<(u32, u32)> {
        let i = self
            .cut
            .partition_point(|&(lo, _)| lo <= r)
            .checked_sub(1)?;
        let (lo, hi) = self.cut[i];
        (r < hi).then_some((lo, hi))
    }

    /// How many ranks the sample `r` stands for: the first of an interval stands for the
    /// ranks that are no sample.
    fn weight(&self, r: u32) -> u64 {
        match self.interval(r) {
            Some((lo, hi)) if r == lo && !self.cut.is_empty() => {
                u64::from(hi - lo) + 1 - Sampled::of(lo, hi).len() as u64
            }
            _ => 1,
        }
    }

    /// The whole intervals whose samples `s` holds, or `None` where it holds some of an
    /// interval's samples only.
    fn stretch(&self, s: &RankSet) -> Option<RankSet> {
        if self.cut.is_empty() {
            return Some(s.clone());
        }
        let v = s.to_vec();
        let mut out = RankSet::default();
        let mut i = 0;
        while i < v.len() {
            let (lo, hi) = self.interval(v[i])?;
            let want = Sampled::of(lo, hi);
            if v.get(i..i + want.len())? != want.as_slice() {
                return None;
            }
            out.union_with(&RankSet {
                runs: vec![rsd::ranks::Prsd {
                    start: lo,
                    dims: vec![(hi - lo, u32::from(hi - lo > 1))],
                }],
            });
            i += want.len();
        }
        Some(out)
    }

    /// A derived loop count and parameters fitted over the samples, stretched over their
    /// intervals: only constants and lines in the rank hold there.
    fn stretch_values(
        &self,
        iters: Elastic,
        params: Vec<Elastic>,
    ) -> Result<(Elastic, Vec<Elastic>), String> {
        if self.cut.is_empty() {
            return Ok((iters, params));
        }
        let one = |mut e: Elastic| -> Result<Elastic, String> {
            for g in &mut e.groups {
                let mut leaves = Vec::new();
                g.val.leaves(&mut leaves);
                if let Some(f) = leaves
                    .iter()
                    .find(|f| !matches!(f, RankFn::Const(_) | RankFn::Affine { .. }))
                {
                    return Err(format!(
                        "a derived value is {f:?} over the sample ranks, not a line"
                    ));
                }
                g.ranks = self
                    .stretch(&g.ranks)
                    .ok_or("a derived value's rank group is not whole rank intervals")?;
            }
            Ok(e)
        };
        let params = params.into_iter().map(one).collect::<Result<_, _>>()?;
        Ok((one(iters)?, params))
    }

    /// Whether every rank of each interval issues `calls` (its calls, per rank, in a
    /// collective call of `site` on `route`) in one shape, its parameters affine in the rank.
    fn holds(&self, p: &Plan, site: Site, route: Route, calls: &[Vec<collio::Call>]) -> bool {
        self.cut.iter().all(|&(lo, hi)| {
            // The nested calls' call sites, as the derivation gives them: the same on every
            // rank whose ops are the same.
            let (mut scratch, mut after, mut sigs) = (BTreeSet::new(), None, Vec::new());
            for c in &calls[lo as usize] {
                match p.template(site, route, c, after, &mut scratch) {
                    Ok(t) => sigs.push(t.sig),
                    Err(_) => return false,
                }
                after = Some(c);
            }
            let runs_of = |r: u32| -> Option<Vec<Run>> {
                let cs = &calls[r as usize];
                (cs.len() == sigs.len()).then(|| {
                    let t = |sig| ChildTemplate {
                        sig,
                        ..ChildTemplate::default()
                    };
                    let ev: Vec<RawEvent> = cs
                        .iter()
                        .zip(&sigs)
                        .map(|(c, &s)| issued(c, 0, &t(s)))
                        .collect();
                    runs(&ev)
                })
            };
            let (Some(a), Some(b)) = (runs_of(lo), runs_of((lo + 1).min(hi - 1))) else {
                return false;
            };
            let line = |x: &[i64], y: &[i64], z: &[i64], k: i64| {
                x.iter()
                    .zip(y)
                    .zip(z)
                    .all(|((x, y), z)| x.wrapping_add(y.wrapping_sub(*x).wrapping_mul(k)) == *z)
            };
            (lo + 1..hi).all(|r| {
                let k = i64::from(r - lo);
                runs_of(r).is_some_and(|c| {
                    c.len() == a.len()
                        && c.iter().zip(a.iter().zip(&b)).all(|(z, (x, y))| {
                            z.kind() == x.kind()
                                && z.count == x.count
                                && line(&x.first, &y.first, &z.first, k)
                                && line(&x.step, &y.step, &z.step, k)
                        })
                })
            })
        })
    }
}

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
fn interval_calls(
    trace: &Trace,
    world: &BTreeSet<Site>,
    lo: u32,
    hi: u32,
) -> Result<IntervalCalls, String> {
    let mut samples: Vec<u32> = [lo, lo + 1, lo + 2, lo + (hi - lo) / 2, hi - 2, hi - 1]
        .into_iter()
        .filter(|&r| r >= lo && r < hi)
        .collect();
    samples.sort_unstable();
    samples.dedup();
    // Per sample rank, its calls by (path, index).
    let mut per: Vec<(u32, RankCallsAt)> = Vec::new();
    for &r in &samples {
        let rc = walk_rank(trace, r, world);
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
pub(crate) fn insert(
    tf: &mut TraceFile,
    p: &Plan,
    max_memory: u64,
) -> Result<Vec<Explain>, Underived> {
    match insert_with(tf, p, max_memory, true)? {
        Some(ex) => Ok(ex),
        None => Ok(insert_with(tf, p, max_memory, false)?.unwrap_or_default()),
    }
}

/// [`insert`]; with `sampling`, the nested calls of the ranks that are no sample are not
/// kept while every collective call so far allows [`Sampled`], and `None` says that one did
/// not in the end (run again without).
fn insert_with(
    tf: &mut TraceFile,
    p: &Plan,
    max_memory: u64,
    sampling: bool,
) -> Result<Option<Vec<Explain>>, Underived> {
    let np = tf.header.nranks;
    let cut = Cut::of(&tf.trace, p, np)?;
    let sampled = Sampled::new(&cut.cut);
    let mut g = Gathered::new(np, max_memory);
    for key in cut.keys() {
        let Some((sites, out)) = model_call(&tf.header, p, &cut, key, max_memory)? else {
            continue;
        };
        g.hold(&out, &call_name(key, cut.parts[0].calls[key].access.op))?;
        g.explain(&sites, &out, cut.parts.len());
        let site = cut.parts[0].calls[key].site;
        if !g.take(key, out, (p, site), &sampled, sampling) {
            return Ok(None);
        }
    }
    g.finish(tf, p, &sampled)
}

/// The extrapolated trace cut into the rank intervals on which it is uniform, with each
/// interval's collective calls and each file's Cartesian grouping: what the model of every
/// collective call reads.
struct Cut {
    cut: Vec<(u32, u32)>,
    parts: Vec<IntervalCalls>,
    /// Each file's Cartesian grid, if its communicator has one: the same on every rank (the
    /// communicator is every rank's), so rank 0's open says it.
    cart_rows: HashMap<String, u64>,
}

impl Cut {
    fn of(trace: &Trace, p: &Plan, np: u32) -> Result<Cut, Underived> {
        let cut = intervals(&trace.nodes, np)
            .map_err(|why| format!("the trace is not uniform on rank intervals: {why}"))?;
        let parts: Vec<IntervalCalls> = cut
            .iter()
            .map(|&(lo, hi)| interval_calls(trace, &p.world, lo, hi))
            .collect::<Result<_, _>>()?;
        let cart_rows = super::walk_rank(trace, 0, &p.world)
            .colls
            .into_iter()
            .filter_map(|c| Some((c.path, c.cart_rows?)))
            .collect();
        let c = Cut {
            cut,
            parts,
            cart_rows,
        };
        c.same_calls()?;
        Ok(c)
    }

    /// The collective calls, (path, index on that path), in order.
    fn keys(&self) -> impl Iterator<Item = &(String, usize)> {
        self.parts[0].calls.keys()
    }

    /// Every rank makes the same collective calls (a collective call is made by the whole
    /// communicator; files opened on MPI_COMM_WORLD only, as checked before).
    fn same_calls(&self) -> Result<(), Underived> {
        let first = &self.parts[0];
        match self.parts.iter().find(|q| {
            q.calls.len() != first.calls.len()
                || !first.calls.keys().all(|k| q.calls.contains_key(k))
        }) {
            Some(q) => Err(Underived::Why(format!(
                "ranks {}-{} and {}-{} make different collective calls",
                first.lo,
                first.hi - 1,
                q.lo,
                q.hi - 1
            ))),
            None => Ok(()),
        }
    }
}

/// `what` of collective call `key`, as messages name it.
fn call_name(key: &(String, usize), op: rsd::Op) -> String {
    format!("collective call {} ({}) on {}", key.1, op.name(), key.0)
}

/// The nested calls the library's model gives collective call `key`, with the call sites it
/// is made from; `None` where none of them is derived.
fn model_call(
    h: &rsd::Header,
    p: &Plan,
    cut: &Cut,
    key: &(String, usize),
    max_memory: u64,
) -> Result<Option<(BTreeSet<Site>, Modelled)>, Underived> {
    let parts = &cut.parts;
    let sites: BTreeSet<Site> = parts.iter().map(|q| q.calls[key].site).collect();
    let is_derived = sites.iter().filter(|s| p.derived.contains(s)).count();
    if is_derived == 0 {
        return Ok(None);
    }
    if is_derived != sites.len() {
        return Err(Underived::Why(format!(
            "{}: collective call {} is made from call sites of which only some are derived",
            key.0, key.1
        )));
    }
    let needs = regions_bytes(key, parts);
    if needs > max_memory {
        return Err(Underived::OverMemory {
            part: format!(
                "every rank's file regions in {}, which the model of the MPI library reads \
                 whole",
                call_name(key, parts[0].calls[key].access.op)
            ),
            needs,
        });
    }
    let np = h.nranks;
    let g = group_at(key, parts, np, cut.cart_rows.get(&key.0).copied())?;
    let cfg = config(h, &key.0, np)?;
    Ok(Some((sites, model(&g, &cfg)?)))
}

/// What the walk over the collective calls gathers: per rank with nested calls, (path,
/// index) -> the calls (until more than [`MAX_AGGREGATORS`] ranks have them: then why it was
/// given up); the same for the sample ranks of each interval, while every rank of each
/// interval issues its calls in one shape affine in the rank (see [`Sampled`]); and what
/// `--explain` says.
struct Gathered {
    np: u32,
    max_memory: u64,
    explain: BTreeMap<Site, Explain>,
    derived: BTreeMap<u32, RankDerived>,
    too_many: Option<String>,
    from_samples: Option<BTreeMap<u32, RankDerived>>,
    with_calls: Vec<bool>,
    /// The bytes the nested calls the model gave take while they are held.
    held: u64,
    /// Whether some call's calls were kept for the samples only.
    skipped: bool,
}

impl Gathered {
    fn new(np: u32, max_memory: u64) -> Gathered {
        Gathered {
            np,
            max_memory,
            explain: BTreeMap::new(),
            derived: BTreeMap::new(),
            too_many: None,
            from_samples: Some(BTreeMap::new()),
            with_calls: vec![false; np as usize],
            held: 0,
            skipped: false,
        }
    }

    /// Counts `out`'s calls as held, refusing past `--max-memory` (`what`: the call).
    fn hold(&mut self, out: &Modelled, what: &str) -> Result<(), Underived> {
        self.held += out.calls.iter().map(|c| c.len() as u64).sum::<u64>() * NESTED_BYTES;
        if self.held <= self.max_memory {
            return Ok(());
        }
        let issuing = out.calls.iter().filter(|c| !c.is_empty()).count();
        Err(Underived::OverMemory {
            part: format!(
                "the nested calls up to {what} ({issuing} ranks issue them; {}), held one by one",
                out.how
            ),
            needs: self.held,
        })
    }

    /// What `--explain` says of each call site of a derived call (`intervals`: how many rank
    /// intervals the trace was laid out from).
    fn explain(&mut self, sites: &BTreeSet<Site>, out: &Modelled, intervals: usize) {
        let np = self.np;
        for site in sites {
            self.explain.entry(*site).or_insert_with(|| Explain {
                event: format!("{} (call site {:#x})", site.0.name(), site.1),
                quantity: "nested POSIX calls".into(),
                model: format!(
                    "derived by the model of {} (the model reproduced every input scale \
                     exactly), in compressed form: the model ran on the regions of all {np} \
                     ranks, laid out from {intervals} rank intervals where the trace is affine \
                     in the rank, and only the ranks with nested calls were walked again; \
                     timing: the inputs' mean per nested op",
                    out.how
                ),
                curve: None,
            });
        }
    }

    /// Keeps collective call `key`'s nested calls `out` (made at `site`): for the samples
    /// while they stand for their intervals, for every rank where they may not (or without
    /// `sampling`). `false`: the samples stopped standing for their intervals after other
    /// calls were kept for the samples only (run again without sampling).
    fn take(
        &mut self,
        key: &(String, usize),
        out: Modelled,
        (p, site): (&Plan, Site),
        sampled: &Sampled,
        sampling: bool,
    ) -> bool {
        if self.from_samples.is_some() && !sampled.holds(p, site, out.route, &out.calls) {
            if self.skipped {
                return false;
            }
            self.from_samples = None;
        }
        let keep = !(sampling && self.from_samples.is_some());
        if !keep {
            self.skipped = true;
            self.held = 0;
        }
        if let Some(m) = &mut self.from_samples {
            for r in sampled.ranks() {
                let calls = &out.calls[r as usize];
                if !calls.is_empty() {
                    let e = m.entry(r).or_default();
                    e.insert(key.clone(), (out.route, calls.clone()));
                }
            }
        }
        self.keep_every_rank(key, out, keep);
        true
    }

    /// Marks the ranks `out` gives calls, and keeps their calls where `keep`, until more than
    /// [`MAX_AGGREGATORS`] ranks have them.
    fn keep_every_rank(&mut self, key: &(String, usize), out: Modelled, keep: bool) {
        for (r, calls) in out.calls.into_iter().enumerate() {
            if calls.is_empty() {
                continue;
            }
            self.with_calls[r] = true;
            if keep && self.too_many.is_none() {
                self.derived
                    .entry(r as u32)
                    .or_default()
                    .insert(key.clone(), (out.route, calls));
            }
        }
        if self.derived.len() > MAX_AGGREGATORS && self.too_many.is_none() {
            self.held = 0;
            self.too_many = Some(format!(
                "more than {MAX_AGGREGATORS} ranks issue nested calls at {} ranks, and they do \
                 not issue them in one shape affine in the rank on each rank interval",
                self.np
            ));
            self.derived.clear();
        }
    }

    /// Puts the gathered calls into `tf`'s collective events: from the samples where many
    /// ranks issue their calls in one shape on each interval, else from every rank's calls;
    /// `None`: run again without sampling.
    fn finish(
        self,
        tf: &mut TraceFile,
        p: &Plan,
        sampled: &Sampled,
    ) -> Result<Option<Vec<Explain>>, Underived> {
        let issuing = self.with_calls.iter().filter(|&&w| w).count();
        if let Some(m) = self
            .from_samples
            .as_ref()
            .filter(|_| issuing >= SAMPLED_FROM)
        {
            match attached(tf, p, m, sampled, self.max_memory) {
                Ok(()) => return Ok(Some(self.explain.into_values().collect())),
                Err(Underived::Why(_)) if self.skipped => return Ok(None),
                Err(Underived::Why(why)) if self.too_many.is_some() => {
                    return Err(Underived::Why(format!(
                        "{}; from a few ranks of each interval: {why}",
                        self.too_many.unwrap_or_default()
                    )));
                }
                Err(Underived::Why(_)) => {}
                Err(e) => return Err(e),
            }
        }
        if self.skipped {
            return Ok(None);
        }
        if let Some(why) = self.too_many {
            return Err(Underived::Why(why));
        }
        self.every_rank(tf, p)?;
        Ok(Some(self.explain.into_values().collect()))
    }

    /// The nested calls of every rank that has them put into `tf`'s own collective events, in
    /// one shape for every rank (see `attach`); where that cannot be done (a derived call in
    /// a loop whose count depends on the rank), the ranks with nested calls are expanded,
    /// given their calls, re-compressed and merged.
    fn every_rank(&self, tf: &mut TraceFile, p: &Plan) -> Result<(), Underived> {
        match attached(tf, p, &self.derived, &Sampled::every(), self.max_memory) {
            Err(Underived::Why(_)) => {}
            done => return done,
        }
        let mut made_up = BTreeSet::new();
        tf.trace = reexpanded(&tf.trace, p, &self.derived, self.np, &mut made_up)?;
        record_made_up(&mut tf.header, made_up);
        Ok(())
    }
}

/// `derived` (per rank, or per sample rank standing for its interval) attached to `tf`'s
/// collective events, the made-up call sites recorded.
fn attached(
    tf: &mut TraceFile,
    p: &Plan,
    derived: &BTreeMap<u32, RankDerived>,
    sampled: &Sampled,
    max_memory: u64,
) -> Result<(), Underived> {
    let mut notes = BTreeSet::new();
    let b = by_node(&tf.trace, p, derived, tf.header.nranks, &mut notes).map_err(Underived::Why)?;
    tf.trace = attach(&tf.trace, b, sampled, max_memory)?;
    record_made_up(&mut tf.header, notes);
    Ok(())
}

/// Collective call `key` (path, index) as the model takes it: every rank's regions, starts
/// and view laid out from the rank intervals `parts`, on which the trace is affine in the
/// rank (`np` ranks; `cart_rows`: the file's Cartesian grouping, if any).
fn group_at(
    key: &(String, usize),
    parts: &[IntervalCalls],
    np: u32,
    cart_rows: Option<u64>,
) -> Result<Group, String> {
    let first = &parts[0].calls[key].access;
    let dir = traced::collective_dir(first.op).ok_or("not a collective call")?;
    let n = np as usize;
    let (mut regions, mut starts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut contig = Vec::with_capacity(n);
    let mut file_size = 0;
    for q in parts {
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
    Ok(Group {
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
        cart_rows,
    })
}

/// The events rank `r` issues inside collective call `c` for the model's calls `issue` (on
/// `route`), each on the file's descriptor after its template (`np`: the ranks, for the
/// messages).
fn issued_children(
    p: &Plan,
    c: &super::RankColl,
    (route, issue): &(Route, Vec<collio::Call>),
    (r, np): (u32, u32),
    made_up: &mut BTreeSet<MadeUp>,
) -> Result<Vec<RawEvent>, String> {
    let Some(fd) = c.fd else {
        return Err(format!(
            "{}: rank {r} has no traced descriptor for the file",
            c.path
        ));
    };
    let mut children = Vec::with_capacity(issue.len());
    let mut after = None;
    for call in issue {
        let t = p
            .template(c.site, *route, call, after, made_up)
            .map_err(|e| format!("at {np} ranks, rank {r}: {e}"))?;
        children.push(issued(call, fd, &t));
        after = Some(call);
    }
    Ok(children)
}

/// `trace` with the ranks that have nested calls (`derived`) each expanded, given its calls,
/// re-compressed and merged beside the other ranks (`np` in all): for a derived call in a
/// loop whose count depends on the rank, which one shape for every rank cannot hold.
fn reexpanded(
    trace: &Trace,
    p: &Plan,
    derived: &BTreeMap<u32, RankDerived>,
    np: u32,
    made_up: &mut BTreeSet<MadeUp>,
) -> Result<Trace, String> {
    let aggs: Vec<u32> = derived.keys().copied().collect();
    let mut traces = Vec::with_capacity(aggs.len());
    for (&r, calls) in derived {
        let rc = walk_rank(trace, r, &p.world);
        let mut events = rc.events;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for c in &rc.colls {
            let k = seen.entry(c.path.as_str()).or_default();
            let index = *k;
            *k += 1;
            let Some(d) = calls.get(&(c.path.clone(), index)) else {
                continue;
            };
            events[c.event].children = issued_children(p, c, d, (r, np), made_up)?;
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
    Ok(Trace { nodes })
}

/// Per event node id: per aggregator rank, per occurrence (in the rank's visit order), the
/// nested calls issued there.
type ByNode = BTreeMap<usize, BTreeMap<u32, Vec<Vec<RawEvent>>>>;

/// Calls `f(id, idx)` for every event node `rank` executes, in order (as
/// [`rsd::trace::visit`]), `id` the node's position among the event nodes of `nodes` in
/// depth-first order.
fn visit_ids(
    nodes: &[Node],
    rank: u32,
    idx: &mut Vec<u64>,
    next: &mut usize,
    f: &mut dyn FnMut(usize, &[u64]),
) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(_) => {
                if n.ranks.contains(rank) {
                    f(*next, idx);
                }
                *next += 1;
            }
            NodeKind::Loop(l) => {
                let start = *next;
                let size = event_nodes(&l.body);
                if n.ranks.contains(rank) {
                    let iters = l.iters.start_member(rank, idx).max(0) as u64;
                    idx.push(0);
                    for i in 0..iters {
                        *idx.last_mut().expect("pushed") = i;
                        *next = start;
                        visit_ids(&l.body, rank, idx, next, f);
                    }
                    idx.pop();
                }
                *next = start + size;
            }
        }
    }
}

fn event_nodes(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Event(_) => 1,
            NodeKind::Loop(l) => event_nodes(&l.body),
        })
        .sum()
}

/// The derived calls by event node (see [`ByNode`]): each rank with nested calls walked
/// once, its collective calls matched with the nodes it executes them at.
fn by_node(
    trace: &Trace,
    p: &Plan,
    derived: &BTreeMap<u32, RankDerived>,
    np: u32,
    made_up: &mut BTreeSet<MadeUp>,
) -> Result<ByNode, String> {
    let mut out: ByNode = BTreeMap::new();
    for (&r, calls) in derived {
        let rc = walk_rank(trace, r, &p.world);
        let mut ids = Vec::with_capacity(rc.events.len());
        visit_ids(&trace.nodes, r, &mut Vec::new(), &mut 0, &mut |id, _| {
            ids.push(id)
        });
        if ids.len() != rc.events.len() {
            return Err(format!("rank {r}: the events walked differ"));
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for c in &rc.colls {
            let k = seen.entry(c.path.as_str()).or_default();
            let index = *k;
            *k += 1;
            if !p.derived.contains(&c.site) {
                continue;
            }
            let issue = match calls.get(&(c.path.clone(), index)) {
                Some(d) => issued_children(p, c, d, (r, np), made_up)?,
                None => Vec::new(),
            };
            out.entry(ids[c.event])
                .or_default()
                .entry(r)
                .or_default()
                .push(issue);
        }
    }
    Ok(out)
}
