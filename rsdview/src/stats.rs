//! Totals over a trace: calls and bytes per layer and op, per-rank totals, files touched.
//!
//! Counts and bytes come from expanding every rank, so they are exact; time comes from the
//! events' merged timing statistics.

use rsd::op::{Layer, Op};
use rsd::trace::{FlatEvent, Node, NodeKind, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Totals for one operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpTotals {
    /// Number of calls over all ranks.
    pub count: u64,
    /// File bytes moved over all ranks.
    pub bytes: u64,
    /// Time inside the calls over all ranks, ns.
    pub time_ns: f64,
}

/// Min, mean and max of a per-rank quantity.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest value and its rank.
    pub min: (u64, u32),
    /// Mean over ranks.
    pub mean: f64,
    /// Largest value and its rank.
    pub max: (u64, u32),
}

/// What `iotrex stats` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Ranks present in the trace.
    pub ranks: u64,
    /// Totals per (layer, op).
    pub ops: BTreeMap<(Layer, Op), OpTotals>,
    /// Calls per rank, counting only calls the application made (not nested ones).
    pub rank_calls: Spread,
    /// File bytes per rank, counting only calls the application made (not nested ones).
    pub rank_bytes: Spread,
    /// Paths named by any call.
    pub files: BTreeSet<String>,
    /// Nodes in the compressed trace (events and loops, all levels).
    pub nodes: u64,
    /// Parameters kept as statistical summaries ([`rsd::approx`]), one line each
    /// (`MPI_Irecv count, ranks 0-63: ~mean ...`). Byte totals that depend on them use each
    /// call's mean, so a layer's total is the mean times the count.
    pub approximate: Vec<String>,
}

impl Summary {
    /// Totals per layer: (calls, bytes).
    pub fn per_layer(&self) -> BTreeMap<Layer, (u64, u64)> {
        let mut m = BTreeMap::new();
        for ((l, _), t) in &self.ops {
            let e = m.entry(*l).or_insert((0, 0));
            e.0 += t.count;
            e.1 += t.bytes;
        }
        m
    }
}

fn spread(v: &[(u64, u32)]) -> Spread {
    if v.is_empty() {
        return Spread::default();
    }
    let min = *v.iter().min_by_key(|x| (x.0, x.1)).expect("non-empty");
    let max = *v
        .iter()
        .max_by_key(|x| (x.0, std::cmp::Reverse(x.1)))
        .expect("non-empty");
    Spread {
        min,
        mean: v.iter().map(|x| x.0 as f64).sum::<f64>() / v.len() as f64,
        max,
    }
}

fn count_nodes(
    nodes: &[Node],
    out: &mut BTreeMap<(Layer, Op), OpTotals>,
    approx: &mut Vec<String>,
) -> u64 {
    let mut n = 0;
    for node in nodes {
        n += 1;
        match &node.kind {
            NodeKind::Event(e) => {
                out.entry((e.op.layer(), e.op)).or_default().time_ns += e.timing.dur.total();
                for (k, p) in e.params.iter().enumerate() {
                    if p.is_approx() {
                        let name = e.op.params().get(k).map_or("?", |p| p.name());
                        approx.push(format!(
                            "{} {name}, ranks {}: {}",
                            e.op.name(),
                            node.ranks,
                            rsd::notation::render_elastic(p)
                        ));
                    }
                }
                n += count_nodes(&e.children, out, approx);
            }
            NodeKind::Loop(l) => n += count_nodes(&l.body, out, approx),
        }
    }
    n
}

/// Computes the summary of a trace.
pub fn summarize(trace: &Trace) -> Summary {
    let mut s = Summary::default();
    s.nodes = count_nodes(&trace.nodes, &mut s.ops, &mut s.approximate);
    let ranks = trace.ranks();
    s.ranks = ranks.len();
    let mut calls = Vec::new();
    let mut bytes = Vec::new();
    ranks.for_each(|r| {
        let (mut c, mut b) = (0u64, 0u64);
        trace.expand_with(r, &mut |e| {
            tally(e, &mut s, &mut c, &mut b);
            true
        });
        calls.push((c, r));
        bytes.push((b, r));
    });
    s.rank_calls = spread(&calls);
    s.rank_bytes = spread(&bytes);
    s
}

/// Per-layer totals count every call, nested ones included (that is each layer's view). The
/// per-rank totals count only the calls the application made itself, so an MPI-IO write and
/// the POSIX write the library issued for it are not counted twice.
fn tally(e: &FlatEvent, s: &mut Summary, calls: &mut u64, bytes: &mut u64) {
    tally_nested(e, s, calls, bytes, true)
}

fn tally_nested(e: &FlatEvent, s: &mut Summary, calls: &mut u64, bytes: &mut u64, top: bool) {
    let t = s.ops.entry((e.op.layer(), e.op)).or_default();
    let b = e.op.data_bytes(&e.params);
    t.count += 1;
    t.bytes += b;
    if top {
        *calls += 1;
        *bytes += b;
    }
    // Both paths of a rename or a link are files touched.
    for p in e.path.as_deref().into_iter().flat_map(rsd::op::paths_of) {
        if !s.files.contains(p) {
            s.files.insert(p.to_string());
        }
    }
    for c in &e.children {
        tally_nested(c, s, calls, bytes, false);
    }
}
