//! The derived nested calls put into the extrapolated trace's collective events in one shape
//! for every aggregator and every occurrence of the call ([`attach`]): each occurrence's
//! calls cut into affine runs, the runs aligned into one sequence of loops, each loop's trip
//! count and values made functions of the rank and the enclosing loops.

use super::{ByNode, Sampled, Underived};
use rsd::trace::{Event, Node, NodeKind};
use rsd::value::{Elastic, RankFn, Val};
use rsd::{RankSet, RawEvent, Trace};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One run of a collective call's nested calls on one rank: the same call (op, call site,
/// descriptor) repeated `count` times with every parameter affine in the position.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub(super) op: rsd::Op,
    pub(super) sig: u64,
    pub(super) first: Vec<i64>,
    pub(super) step: Vec<i64>,
    pub(super) count: u64,
    pub(super) gap_ns: u64,
    pub(super) dur_ns: u64,
}

impl Run {
    /// The run's kind in the shape: the call, and whether it repeats (a single call is a run
    /// of one whose steps are 0).
    pub(super) fn kind(&self) -> (rsd::Op, u64, bool) {
        (self.op, self.sig, self.count > 1)
    }
}

/// `calls` cut into maximal runs affine in the position (as the compressor's affine runs: a
/// run of two that the third call breaks is not started, its first call stands alone).
pub(super) fn runs(calls: &[RawEvent]) -> Vec<Run> {
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

/// The derived nested calls put into the extrapolated trace's collective events themselves,
/// in one shape for every aggregator and every occurrence of the call: the calls of each
/// occurrence are cut into affine runs, the runs of all occurrences aligned into one sequence
/// of loops (the shortest common supersequence of their kinds), and each loop's trip count
/// (0 where an occurrence has no such run: a file domain that starts or ends between two
/// blocks, a cycle that ends on a block boundary) and values become functions of the rank
/// and the enclosing loops. An OMPIO aggregator's file domain cuts the ranks' blocks at
/// another place on every aggregator, so the partial blocks exist on some aggregators only:
/// as separate shapes they scattered the aggregators into hundreds of rank groups.
pub(super) fn attach(
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
        let all = occurrence_runs(per_rank, d.iter().product())?;
        let shape = shape_of(&all, max_memory)?;
        let slots = slots_of(&all, &shape)?;
        let ranks: Vec<u32> = slots.iter().map(|s| s.0).collect();
        let set = sampled
            .stretch(&RankSet::from_sorted(&ranks))
            .ok_or_else(|| {
                Underived::Why("the ranks with nested calls are not whole rank intervals".into())
            })?;
        let out = shape
            .iter()
            .enumerate()
            .map(|(s, k)| slot_loop(&slots, (s, k), &d, sampled, &set))
            .collect::<Result<_, _>>()?;
        kids.insert(id, out);
    }
    let mut t = trace.clone();
    set_children(&mut t.nodes, &mut 0, &mut kids);
    Ok(t)
}

/// A rank and, per occurrence of a call, its runs.
type RankRuns = (u32, Vec<Vec<Run>>);

/// Per rank, per occurrence of the call (`occurrences`: the product of its loops' counts),
/// its runs.
fn occurrence_runs(
    per_rank: BTreeMap<u32, Vec<Vec<RawEvent>>>,
    occurrences: u64,
) -> Result<Vec<RankRuns>, Underived> {
    per_rank
        .into_iter()
        .map(|(r, occ)| {
            if occ.len() as u64 != occurrences {
                return Err(Underived::Why(format!(
                    "rank {r} makes a derived collective call {} times where its loops run \
                     {occurrences} times",
                    occ.len()
                )));
            }
            Ok((r, occ.iter().map(|c| runs(c)).collect()))
        })
        .collect()
}

/// The shape: a sequence of run kinds holding every occurrence's kinds as a subsequence.
fn shape_of(all: &[RankRuns], max_memory: u64) -> Result<Vec<Kind>, Underived> {
    let distinct: BTreeSet<Vec<Kind>> = all
        .iter()
        .flat_map(|(_, occ)| occ.iter().map(|rs| rs.iter().map(Run::kind).collect()))
        .collect();
    let mut shape: Vec<Kind> = Vec::new();
    for k in &distinct {
        // The alignment's table: quadratic in the runs where they do not compress.
        let needs = (shape.len() as u64 + 1) * (k.len() as u64 + 1) * 8;
        if needs > max_memory {
            return Err(Underived::OverMemory {
                part: format!(
                    "aligning the nested calls of {} ranks' collective calls, {} and {} runs of \
                     calls that do not compress into loops",
                    all.len(),
                    shape.len(),
                    k.len()
                ),
                needs,
            });
        }
        shape = supersequence(&shape, k);
    }
    Ok(shape)
}

/// Per rank, per occurrence, the run in each slot of the shape.
type Slots<'a> = Vec<(u32, Vec<Vec<Option<&'a Run>>>)>;

/// Where each rank's runs go in `shape`, occurrence by occurrence.
fn slots_of<'a>(all: &'a [RankRuns], shape: &[Kind]) -> Result<Slots<'a>, Underived> {
    all.iter()
        .map(|(r, occ)| {
            let per = occ
                .iter()
                .map(|rs| {
                    let kinds: Vec<Kind> = rs.iter().map(Run::kind).collect();
                    let at = embed(&kinds, shape).ok_or_else(|| {
                        Underived::Why("the runs do not embed in their shape".into())
                    })?;
                    let mut s: Vec<Option<&Run>> = vec![None; shape.len()];
                    for (run, &k) in rs.iter().zip(&at) {
                        s[k] = Some(run);
                    }
                    Ok(s)
                })
                .collect::<Result<_, Underived>>()?;
            Ok((*r, per))
        })
        .collect()
}

/// Slot `s` of the shape (of kind `k`) as a loop over one event on the ranks `set`: its trip
/// count and parameters functions of the rank and the enclosing loops `d`, stretched from
/// the samples over their intervals.
fn slot_loop(
    slots: &Slots,
    (s, &(op, sig, _)): (usize, &Kind),
    d: &[u64],
    sampled: &Sampled,
    set: &RankSet,
) -> Result<Node, Underived> {
    let (mut total, mut timing) = (0u64, None);
    for (r, per) in slots {
        for run in per.iter().filter_map(|o| o[s]) {
            total += run.count * sampled.weight(*r);
            timing.get_or_insert((run.gap_ns, run.dur_ns));
        }
    }
    let (gap, dur) = timing.unwrap_or((0, 0));
    let (iters, params) = slot_values(slots, s, d);
    let (iters, params) = sampled.stretch_values(iters, params)?;
    let first = slots[0].0;
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
    Ok(Node {
        ranks: set.clone(),
        kind: NodeKind::Loop(rsd::trace::Loop {
            iters,
            body: vec![Node {
                ranks: set.clone(),
                kind: NodeKind::Event(event),
            }],
        }),
    })
}

/// Slot `s`'s trip count (0 where an occurrence has no such run) and parameters, per rank
/// over the grid of the enclosing loops `d`.
fn slot_values(slots: &Slots, s: usize, d: &[u64]) -> (Elastic, Vec<Elastic>) {
    let nparams = slots
        .iter()
        .flat_map(|(_, p)| p.iter())
        .find_map(|o| o[s].map(|r| r.first.len()))
        .unwrap_or(0);
    let per_rank = |cell: &dyn Fn(&Run) -> (i64, Option<i64>), absent: Cell| {
        slots
            .iter()
            .map(|(r, per)| {
                (
                    *r,
                    per.iter()
                        .map(|o| o[s].map_or(absent, |run| Some(cell(run))))
                        .collect(),
                )
            })
            .collect()
    };
    let (pts, free) = uniform(
        d,
        per_rank(&|run| (run.count as i64, None), Some((0, None))),
        false,
    );
    let iters = Elastic::canonical_free(&pts, &free, MAX_PERIOD);
    let params = (0..nparams)
        .map(|p| {
            let (pts, free) = uniform(
                d,
                per_rank(
                    &|run| (run.first[p], (run.count > 1).then_some(run.step[p])),
                    None,
                ),
                true,
            );
            Elastic::canonical_free(&pts, &free, MAX_PERIOD)
        })
        .collect();
    (iters, params)
}
