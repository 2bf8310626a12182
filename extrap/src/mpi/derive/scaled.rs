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
    ChildTemplate, Group, MadeUp, Plan, Route, Site, Underived, config, issued, model,
    record_made_up, walk_rank,
};

/// One rank's derived nested calls: per collective call (path, index on that path), the
/// library's path and the calls.
type RankDerived = HashMap<(String, usize), (Route, Vec<collio::Call>)>;
use crate::Explain;
use collio::Collective;
use collio::traced::{self, RankAccess, TracedCall};
use rsd::trace::{Event, Node, NodeKind};
use rsd::value::{Elastic, RankFn, Val};
use rsd::{Compressor, RankSet, RawEvent, Trace, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    let trace = &tf.trace;
    let cut = intervals(&trace.nodes, np)
        .map_err(|why| format!("the trace is not uniform on rank intervals: {why}"))?;
    let parts: Vec<IntervalCalls> = cut
        .iter()
        .map(|&(lo, hi)| interval_calls(trace, &p.world, lo, hi))
        .collect::<Result<_, _>>()?;
    // Every rank makes the same collective calls (a collective call is made by the whole
    // communicator; files opened on MPI_COMM_WORLD only, as checked above).
    let keys: Vec<&(String, usize)> = parts[0].calls.keys().collect();
    // Each file's Cartesian grid, if its communicator has one: the same on every rank (the
    // communicator is every rank's), so rank 0's open says it.
    let cart_rows: HashMap<String, u64> = super::walk_rank(trace, 0, &p.world)
        .colls
        .into_iter()
        .filter_map(|c| Some((c.path, c.cart_rows?)))
        .collect();
    if let Some(q) = parts
        .iter()
        .find(|q| q.calls.len() != keys.len() || !keys.iter().all(|k| q.calls.contains_key(*k)))
    {
        return Err(Underived::Why(format!(
            "ranks {}-{} and {}-{} make different collective calls",
            parts[0].lo,
            parts[0].hi - 1,
            q.lo,
            q.hi - 1
        )));
    }
    let mut explain: BTreeMap<Site, Explain> = BTreeMap::new();
    let mut made_up = BTreeSet::new();
    // Per rank with nested calls: (path, index) -> the calls; past MAX_AGGREGATORS ranks,
    // why it was given up.
    let mut derived: BTreeMap<u32, RankDerived> = BTreeMap::new();
    let mut too_many: Option<String> = None;
    // The same for the sample ranks of each interval, while every rank of each interval
    // issues its calls in one shape affine in the rank (see `Sampled`).
    let sampled = Sampled::new(&cut);
    let mut from_samples: Option<BTreeMap<u32, RankDerived>> = Some(BTreeMap::new());
    let mut with_calls = vec![false; np as usize];
    // The bytes the nested calls the model gave take while they are held.
    let mut held = 0u64;
    let mut skipped = false;
    for key in keys {
        let sites: BTreeSet<Site> = parts.iter().map(|q| q.calls[key].site).collect();
        let is_derived = sites.iter().filter(|s| p.derived.contains(s)).count();
        if is_derived == 0 {
            continue;
        }
        if is_derived != sites.len() {
            return Err(Underived::Why(format!(
                "{}: collective call {} is made from call sites of which only some are derived",
                key.0, key.1
            )));
        }
        let op = parts[0].calls[key].access.op;
        let what = || format!("collective call {} ({}) on {}", key.1, op.name(), key.0);
        let needs = regions_bytes(key, &parts);
        if needs > max_memory {
            return Err(Underived::OverMemory {
                part: format!(
                    "every rank's file regions in {}, which the model of the MPI library reads \
                     whole",
                    what()
                ),
                needs,
            });
        }
        let g = group_at(key, &parts, np, cart_rows.get(&key.0).copied())?;
        let cfg = config(&tf.header, &key.0, np)?;
        let out = model(&g, &cfg)?;
        drop(g);
        held += out.calls.iter().map(|c| c.len() as u64).sum::<u64>() * NESTED_BYTES;
        if held > max_memory {
            let issuing = out.calls.iter().filter(|c| !c.is_empty()).count();
            return Err(Underived::OverMemory {
                part: format!(
                    "the nested calls up to {} ({} ranks issue them; {}), held one by one",
                    what(),
                    issuing,
                    out.how
                ),
                needs: held,
            });
        }
        for site in &sites {
            explain.entry(*site).or_insert_with(|| Explain {
                event: format!("{} (call site {:#x})", site.0.name(), site.1),
                quantity: "nested POSIX calls".into(),
                model: format!(
                    "derived by the model of {} (the model reproduced every input scale \
                     exactly), in compressed form: the model ran on the regions of all {np} \
                     ranks, laid out from {} rank intervals where the trace is affine in the \
                     rank, and only the ranks with nested calls were walked again; timing: the \
                     inputs' mean per nested op",
                    out.how,
                    parts.len()
                ),
                curve: None,
            });
        }
        let site = parts[0].calls[key].site;
        if from_samples.is_some() && !sampled.holds(p, site, out.route, &out.calls) {
            if skipped {
                return Ok(None);
            }
            from_samples = None;
        }
        // Every rank's calls kept only where the samples may not stand for them.
        let keep = !(sampling && from_samples.is_some());
        if !keep {
            skipped = true;
            held = 0;
        }
        if let Some(m) = &mut from_samples {
            for r in sampled.ranks() {
                let calls = &out.calls[r as usize];
                if !calls.is_empty() {
                    let e = m.entry(r).or_default();
                    e.insert(key.clone(), (out.route, calls.clone()));
                }
            }
        }
        for (r, calls) in out.calls.into_iter().enumerate() {
            if calls.is_empty() {
                continue;
            }
            with_calls[r] = true;
            if keep && too_many.is_none() {
                derived
                    .entry(r as u32)
                    .or_default()
                    .insert(key.clone(), (out.route, calls));
            }
        }
        if derived.len() > MAX_AGGREGATORS && too_many.is_none() {
            held = 0;
            too_many = Some(format!(
                "more than {MAX_AGGREGATORS} ranks issue nested calls at {np} ranks, and \
                 they do not issue them in one shape affine in the rank on each rank interval"
            ));
            derived.clear();
        }
    }
    let issuing = with_calls.iter().filter(|&&w| w).count();
    drop(with_calls);
    // Many ranks issuing their calls in one shape on each interval: worked out at a few
    // ranks of each and stretched over it.
    if let Some(m) = from_samples.filter(|_| issuing >= SAMPLED_FROM) {
        let mut notes = BTreeSet::new();
        let t = by_node(trace, p, &m, np, &mut notes)
            .map_err(Underived::Why)
            .and_then(|b| attach(trace, b, &sampled, max_memory));
        match t {
            Ok(t) => {
                tf.trace = t;
                record_made_up(&mut tf.header, notes);
                return Ok(Some(explain.into_values().collect()));
            }
            Err(Underived::Why(_)) if skipped => return Ok(None),
            Err(Underived::Why(why)) if too_many.is_some() => {
                return Err(Underived::Why(format!(
                    "{}; from a few ranks of each interval: {why}",
                    too_many.unwrap_or_default()
                )));
            }
            Err(Underived::Why(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if skipped {
        return Ok(None);
    }
    if let Some(why) = too_many {
        return Err(Underived::Why(why));
    }
    // First, the nested calls put into the trace's own collective events, in one shape for
    // every rank (see `attach`); where that cannot be done (a derived call in a loop whose
    // count depends on the rank), the ranks with nested calls are expanded, given their
    // calls, re-compressed and merged.
    let mut notes = BTreeSet::new();
    let every = Sampled::every();
    match by_node(trace, p, &derived, np, &mut notes)
        .map_err(Underived::Why)
        .and_then(|b| attach(trace, b, &every, max_memory))
    {
        Ok(t) => {
            tf.trace = t;
            record_made_up(&mut tf.header, notes);
            return Ok(Some(explain.into_values().collect()));
        }
        Err(Underived::Why(_)) => {}
        Err(e) => return Err(e),
    }
    tf.trace = reexpanded(trace, p, &derived, np, &mut made_up)?;
    record_made_up(&mut tf.header, made_up);
    Ok(Some(explain.into_values().collect()))
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
            let mut after = None;
            for call in issue {
                let t = p
                    .template(c.site, *route, call, after, made_up)
                    .map_err(|e| format!("at {np} ranks, rank {r}: {e}"))?;
                children.push(issued(call, fd, &t));
                after = Some(call);
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
    Ok(Trace { nodes })
}

/// One run of a collective call's nested calls on one rank: the same call (op, call site,
/// descriptor) repeated `count` times with every parameter affine in the position.
#[derive(Debug, Clone)]
struct Run {
    op: rsd::Op,
    sig: u64,
    first: Vec<i64>,
    step: Vec<i64>,
    count: u64,
    gap_ns: u64,
    dur_ns: u64,
}

impl Run {
    /// The run's kind in the shape: the call, and whether it repeats (a single call is a run
    /// of one whose steps are 0).
    fn kind(&self) -> (rsd::Op, u64, bool) {
        (self.op, self.sig, self.count > 1)
    }
}

/// `calls` cut into maximal runs affine in the position (as the compressor's affine runs: a
/// run of two that the third call breaks is not started, its first call stands alone).
fn runs(calls: &[RawEvent]) -> Vec<Run> {
    let same = |a: &RawEvent, b: &RawEvent| {
        a.op == b.op && a.sig == b.sig && a.params.len() == b.params.len()
    };
    let single = |c: &RawEvent| Run {
        op: c.op,
        sig: c.sig,
        first: c.params.clone(),
        step: vec![0; c.params.len()],
        count: 1,
        gap_ns: c.gap_ns,
        dur_ns: c.dur_ns,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < calls.len() {
        let c = &calls[i];
        if i + 1 == calls.len() || !same(c, &calls[i + 1]) {
            out.push(single(c));
            i += 1;
            continue;
        }
        let step: Vec<i64> = c
            .params
            .iter()
            .zip(&calls[i + 1].params)
            .map(|(a, b)| b.wrapping_sub(*a))
            .collect();
        let mut j = i + 2;
        while j < calls.len()
            && same(c, &calls[j])
            && calls[j]
                .params
                .iter()
                .enumerate()
                .all(|(p, &v)| c.params[p].wrapping_add(step[p].wrapping_mul((j - i) as i64)) == v)
        {
            j += 1;
        }
        if j == i + 2 && j < calls.len() {
            out.push(single(c));
            i += 1;
            continue;
        }
        out.push(Run {
            count: (j - i) as u64,
            step,
            ..single(c)
        });
        i = j;
    }
    out
}

type Kind = (rsd::Op, u64, bool);

/// The shortest common supersequence of `a` and `b` (by longest common subsequence).
fn supersequence(a: &[Kind], b: &[Kind]) -> Vec<Kind> {
    let (n, m) = (a.len(), b.len());
    let mut l = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            l[i][j] = if a[i] == b[j] {
                l[i + 1][j + 1] + 1
            } else {
                l[i + 1][j].max(l[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(n + m));
    while i < n && j < m {
        if a[i] == b[j] {
            out.push(a[i]);
            i += 1;
            j += 1;
        } else if l[i + 1][j] >= l[i][j + 1] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Where each of `kinds` goes in `shape` (leftmost embedding).
fn embed(kinds: &[Kind], shape: &[Kind]) -> Option<Vec<usize>> {
    let mut at = Vec::with_capacity(kinds.len());
    let mut s = 0;
    for k in kinds {
        while s < shape.len() && shape[s] != *k {
            s += 1;
        }
        if s == shape.len() {
            return None;
        }
        at.push(s);
        s += 1;
    }
    Some(at)
}

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

/// The loop counts around each event node (by id), from the trace's structure: constant
/// counts only (the intervals are uniform).
fn loop_dims(nodes: &[Node], dims: &mut Vec<u64>, out: &mut Vec<Option<Vec<u64>>>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(_) => out.push(Some(dims.clone())),
            NodeKind::Loop(l) => {
                let c = match l.iters.groups.as_slice() {
                    [g] => match g.val {
                        Val::Const(RankFn::Const(c)) => Some(c.max(0) as u64),
                        _ => None,
                    },
                    _ => None,
                };
                match c {
                    Some(c) => {
                        dims.push(c);
                        loop_dims(&l.body, dims, out);
                        dims.pop();
                    }
                    None => {
                        let from = out.len();
                        loop_dims(&l.body, &mut Vec::new(), out);
                        out[from..].iter_mut().for_each(|d| *d = None);
                    }
                }
            }
        }
    }
}

/// Sets the children of event node `id` (depth-first order) from `kids`.
fn set_children(nodes: &mut [Node], next: &mut usize, kids: &mut HashMap<usize, Vec<Node>>) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                if let Some(k) = kids.remove(next) {
                    e.children = k;
                }
                *next += 1;
            }
            NodeKind::Loop(l) => set_children(&mut l.body, next, kids),
        }
    }
}

/// A value over the loops `dims` (outermost first) as nested explicit vectors, with `leaf`
/// at the innermost: the same shape on every rank, so the ranks' values join leaf by leaf.
fn grid(dims: &[u64], at: &mut Vec<u64>, leaf: &mut dyn FnMut(&[u64]) -> Val<i64>) -> Val<i64> {
    match dims.split_first() {
        None => leaf(at),
        Some((&d, rest)) => Val::Seq(
            (0..d)
                .map(|i| {
                    at.push(i);
                    let v = grid(rest, at, leaf);
                    at.pop();
                    v
                })
                .collect(),
        ),
    }
}

/// The most interleaved classes a derived value is split into (see
/// [`Elastic::canonical_free`]).
const MAX_PERIOD: usize = 8;

/// One leaf of a derived value at one grid position: its value and its step along the
/// run's own loop, either of which may be free (`None`: the run does not happen there, or
/// has one call and so no step).
type Cell = Option<(i64, Option<i64>)>;

/// Per rank, a value given at every position of the grid `dims` (row-major), in the simplest
/// form that has the same shape on every rank: a constant, affine in the loop indices, or
/// explicit over the grid; with `inner`, affine along the run's own loop too. Returns the
/// points and, per point, which of its leaves are free.
type Points = (Vec<(u32, Val<i64>)>, Vec<Vec<bool>>);

fn uniform(dims: &[u64], per_rank: Vec<(u32, Vec<Cell>)>, inner: bool) -> Points {
    let known = |v: &[Cell]| -> Vec<(i64, Option<i64>)> { v.iter().flatten().copied().collect() };
    // One value, one step (or none known) per rank.
    let constant = per_rank.iter().all(|(_, v)| {
        let k = known(v);
        k.iter().all(|x| x.0 == k[0].0) && (!inner || k.iter().all(|x| x.1.unwrap_or(0) == 0))
    });
    if constant {
        return per_rank
            .into_iter()
            .map(|(r, v)| {
                let k = known(&v);
                (
                    (r, Val::Const(k.first().map_or(0, |x| x.0))),
                    vec![k.is_empty()],
                )
            })
            .unzip();
    }
    // Strides of the grid dimensions when every position is known and affine in the indices.
    let mut spans = vec![0usize; dims.len()];
    let mut span = 1usize;
    for (k, &n) in dims.iter().enumerate().rev() {
        spans[k] = span;
        span *= n as usize;
    }
    let affine = |v: &[Cell]| -> Option<(i64, Vec<i64>, Option<i64>)> {
        let b = v.first()?.as_ref()?.0;
        let strides: Vec<i64> = dims
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                if n > 1 {
                    v[spans[k]].map_or(0, |x| x.0.wrapping_sub(b))
                } else {
                    0
                }
            })
            .collect();
        let steps: Vec<i64> = v.iter().flatten().filter_map(|x| x.1).collect();
        if steps.iter().any(|&x| x != steps[0]) {
            return None;
        }
        for (p, c) in v.iter().enumerate() {
            let c = c.as_ref()?;
            let want = (0..dims.len()).fold(b, |acc, k| {
                let i = (p / spans[k]) as u64 % dims[k];
                acc.wrapping_add(strides[k].wrapping_mul(i as i64))
            });
            if c.0 != want {
                return None;
            }
        }
        Some((b, strides, steps.first().copied()))
    };
    if per_rank.iter().all(|(_, v)| affine(v).is_some()) {
        return per_rank
            .into_iter()
            .map(|(r, v)| {
                let (base, mut strides, step) = affine(&v).expect("checked");
                let mut free = vec![false; 1 + strides.len()];
                if inner {
                    strides.push(step.unwrap_or(0));
                    free.push(step.is_none());
                }
                ((r, Val::Lin { base, strides }), free)
            })
            .unzip();
    }
    let pos = |at: &[u64]| at.iter().zip(dims).fold(0u64, |acc, (&i, &n)| acc * n + i) as usize;
    per_rank
        .into_iter()
        .map(|(r, v)| {
            let mut free = Vec::new();
            let val = grid(dims, &mut Vec::new(), &mut |at| {
                let c = v[pos(at)];
                free.push(c.is_none());
                let (b, st) = c.unwrap_or((0, None));
                if inner {
                    free.push(st.is_none());
                    Val::Lin {
                        base: b,
                        strides: vec![st.unwrap_or(0)],
                    }
                } else {
                    Val::Const(b)
                }
            });
            ((r, val), free)
        })
        .unzip()
}

/// Stats of `count` equal samples `ns`.
fn repeated(ns: u64, count: u64, rank: u32) -> rsd::timing::Stats {
    let mut s = rsd::timing::Stats::one(ns, rank);
    s.count = count;
    s.bins[rsd::timing::bin_of(ns)] = count;
    s
}

/// Per event node id: per aggregator rank, per occurrence (in the rank's visit order), the
/// nested calls issued there.
type ByNode = BTreeMap<usize, BTreeMap<u32, Vec<Vec<RawEvent>>>>;

/// The derived nested calls put into the extrapolated trace's collective events themselves,
/// in one shape for every aggregator and every occurrence of the call: the calls of each
/// occurrence are cut into affine runs, the runs of all occurrences aligned into one sequence
/// of loops (the shortest common supersequence of their kinds), and each loop's trip count
/// (0 where an occurrence has no such run: a file domain that starts or ends between two
/// blocks, a cycle that ends on a block boundary) and values become functions of the rank
/// and the enclosing loops. An OMPIO aggregator's file domain cuts the ranks' blocks at
/// another place on every aggregator, so the partial blocks exist on some aggregators only:
/// as separate shapes they scattered the aggregators into hundreds of rank groups.
fn attach(
    trace: &Trace,
    by_node: ByNode,
    sampled: &Sampled,
    max_memory: u64,
) -> Result<Trace, Underived> {
    let mut dims = Vec::new();
    loop_dims(&trace.nodes, &mut Vec::new(), &mut dims);
    let mut kids: HashMap<usize, Vec<Node>> = HashMap::new();
    for (id, per_rank) in by_node {
        let Some(d) = dims.get(id).cloned().flatten() else {
            return Err(Underived::Why(
                "a derived collective call sits in a loop whose count depends on the rank".into(),
            ));
        };
        let occurrences: u64 = d.iter().product();
        // Per rank, per occurrence, its runs.
        let mut all: Vec<(u32, Vec<Vec<Run>>)> = Vec::with_capacity(per_rank.len());
        for (r, occ) in per_rank {
            if occ.len() as u64 != occurrences {
                return Err(Underived::Why(format!(
                    "rank {r} makes a derived collective call {} times where its loops run {occurrences} times",
                    occ.len()
                )));
            }
            all.push((r, occ.iter().map(|c| runs(c)).collect()));
        }
        // The shape: every occurrence's kinds as a subsequence.
        let mut distinct: BTreeSet<Vec<Kind>> = BTreeSet::new();
        for (_, occ) in &all {
            for rs in occ {
                distinct.insert(rs.iter().map(Run::kind).collect());
            }
        }
        let mut shape: Vec<Kind> = Vec::new();
        for k in &distinct {
            // The alignment's table: quadratic in the runs where they do not compress.
            let needs = (shape.len() as u64 + 1) * (k.len() as u64 + 1) * 8;
            if needs > max_memory {
                return Err(Underived::OverMemory {
                    part: format!(
                        "aligning the nested calls of {} ranks' collective calls, {} and {} \
                         runs of calls that do not compress into loops",
                        all.len(),
                        shape.len(),
                        k.len()
                    ),
                    needs,
                });
            }
            shape = supersequence(&shape, k);
        }
        // Per rank, per occurrence, the run in each slot of the shape.
        let mut slots: Vec<(u32, Vec<Vec<Option<&Run>>>)> = Vec::with_capacity(all.len());
        for (r, occ) in &all {
            let mut per = Vec::with_capacity(occ.len());
            for rs in occ {
                let kinds: Vec<Kind> = rs.iter().map(Run::kind).collect();
                let at = embed(&kinds, &shape)
                    .ok_or_else(|| Underived::Why("the runs do not embed in their shape".into()))?;
                let mut s: Vec<Option<&Run>> = vec![None; shape.len()];
                for (run, &k) in rs.iter().zip(&at) {
                    s[k] = Some(run);
                }
                per.push(s);
            }
            slots.push((*r, per));
        }
        let ranks: Vec<u32> = slots.iter().map(|s| s.0).collect();
        let set = sampled
            .stretch(&RankSet::from_sorted(&ranks))
            .ok_or_else(|| {
                Underived::Why("the ranks with nested calls are not whole rank intervals".into())
            })?;
        let mut out = Vec::with_capacity(shape.len());
        for (s, &(op, sig, _)) in shape.iter().enumerate() {
            let nparams = slots
                .iter()
                .flat_map(|(_, p)| p.iter())
                .find_map(|o| o[s].map(|r| r.first.len()))
                .unwrap_or(0);
            let (mut total, mut timing) = (0u64, None);
            for (r, per) in &slots {
                for o in per {
                    if let Some(run) = o[s] {
                        total += run.count * sampled.weight(*r);
                        timing.get_or_insert((run.gap_ns, run.dur_ns));
                    }
                }
            }
            let (gap, dur) = timing.unwrap_or((0, 0));
            let (pts, free) = uniform(
                &d,
                slots
                    .iter()
                    .map(|(r, per)| {
                        let v = per
                            .iter()
                            .map(|o| Some((o[s].map_or(0, |run| run.count as i64), None)))
                            .collect();
                        (*r, v)
                    })
                    .collect(),
                false,
            );
            let iters = Elastic::canonical_free(&pts, &free, MAX_PERIOD);
            let params: Vec<Elastic> = (0..nparams)
                .map(|p| {
                    let (pts, free) = uniform(
                        &d,
                        slots
                            .iter()
                            .map(|(r, per)| {
                                let v = per
                                    .iter()
                                    .map(|o| {
                                        o[s].map(|run| {
                                            (run.first[p], (run.count > 1).then_some(run.step[p]))
                                        })
                                    })
                                    .collect();
                                (*r, v)
                            })
                            .collect(),
                        true,
                    );
                    Elastic::canonical_free(&pts, &free, MAX_PERIOD)
                })
                .collect();
            let (iters, params) = sampled.stretch_values(iters, params)?;
            let first = ranks[0];
            let event = Event {
                op,
                sig,
                path: None,
                params,
                timing: rsd::timing::Timing {
                    gap: repeated(gap, total, first),
                    dur: repeated(dur, total, first),
                    interval: None,
                    waits: None,
                },
                children: Vec::new(),
            };
            out.push(Node {
                ranks: set.clone(),
                kind: NodeKind::Loop(rsd::trace::Loop {
                    iters,
                    body: vec![Node {
                        ranks: set.clone(),
                        kind: NodeKind::Event(event),
                    }],
                }),
            });
        }
        kids.insert(id, out);
    }
    let mut t = trace.clone();
    set_children(&mut t.nodes, &mut 0, &mut kids);
    Ok(t)
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
                Some((route, issue)) => {
                    let Some(fd) = c.fd else {
                        return Err(format!(
                            "{}: rank {r} has no traced descriptor for the file",
                            c.path
                        ));
                    };
                    let mut v = Vec::with_capacity(issue.len());
                    let mut after = None;
                    for call in issue {
                        let t = p
                            .template(c.site, *route, call, after, made_up)
                            .map_err(|e| format!("at {np} ranks, rank {r}: {e}"))?;
                        v.push(issued(call, fd, &t));
                        after = Some(call);
                    }
                    v
                }
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
