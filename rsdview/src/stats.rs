//! Totals over a trace: calls and bytes per layer and op, per-rank totals, files touched.
//!
//! Counts and bytes come from expanding one rank of each class of ranks whose calls agree
//! ([`rsd::classes`]), so they are exact; time comes from the events' merged timing
//! statistics.

use rsd::op::{Layer, Op};
use rsd::trace::{Event, FlatEvent, Node, NodeKind, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};

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

/// The spread of a per-rank quantity given per class: ((value, first rank), ranks). The
/// smallest and largest values name their smallest rank, which is a class's first.
fn spread(v: &[((u64, u32), u64)]) -> Spread {
    let ranks: u64 = v.iter().map(|x| x.1).sum();
    if ranks == 0 {
        return Spread::default();
    }
    let min = v.iter().map(|x| x.0).min().expect("non-empty");
    let max = v
        .iter()
        .map(|x| x.0)
        .max_by_key(|x| (x.0, std::cmp::Reverse(x.1)))
        .expect("non-empty");
    Spread {
        min,
        mean: v.iter().map(|x| x.0.0 as f64 * x.1 as f64).sum::<f64>() / ranks as f64,
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

/// Computes the summary of a trace: one expansion per class of ranks that agree in their
/// calls and sizes ([`rsd::classes`]), weighted by the class's size, so that a trace of a
/// million ranks that differ in a few rank sets reads as fast as one of a few ranks. Files
/// whose names hold a rank function (a lock file per rank) are listed rank by rank, their
/// events only.
pub fn summarize(trace: &Trace) -> Summary {
    let mut s = Summary::default();
    s.nodes = count_nodes(&trace.nodes, &mut s.ops, &mut s.approximate);
    let per_rank = per_rank_paths(&trace.nodes);
    let classes = rsd::classes::classes(trace, &reads);
    s.ranks = classes.iter().map(|c| c.size).sum();
    let mut calls = Vec::with_capacity(classes.len());
    let mut bytes = Vec::with_capacity(classes.len());
    for c in &classes {
        let mut rank = RankTotals {
            weight: c.size,
            per_rank: &per_rank,
            calls: 0,
            bytes: 0,
        };
        trace.expand_unresolved_with(c.first, &mut |e| {
            rank.tally(e, &mut s, true);
            true
        });
        calls.push(((rank.calls, c.first), c.size));
        bytes.push(((rank.bytes, c.first), c.size));
    }
    s.rank_calls = spread(&calls);
    s.rank_bytes = spread(&bytes);
    per_rank_files(trace, &per_rank, &mut s.files);
    s
}

/// What sets ranks apart for the summary: the data sizes ([`rsd::Op::data_params`]) and the
/// path's fields where each group of ranks names one file (names that vary along the ranks are
/// listed apart, [`per_rank_files`]).
fn reads(e: &Event, k: usize) -> bool {
    let field = k >= e.params.len() - e.path_fields().len();
    (field && rsd::classes::uniform_in_groups(&e.params[k])) || rsd::classes::data_size(e, k)
}

/// The events (op and call site) some of whose path fields vary along the ranks.
fn per_rank_paths(nodes: &[Node]) -> HashSet<(Op, u64)> {
    let mut out = HashSet::new();
    fn walk(nodes: &[Node], out: &mut HashSet<(Op, u64)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    if !e.path_fields().iter().all(rsd::classes::uniform_in_groups) {
                        out.insert((e.op, e.sig));
                    }
                    walk(&e.children, out);
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    walk(nodes, &mut out);
    out
}

/// Adds the files of the events of `per_rank` on every rank, walking only the nodes that lead
/// to them.
fn per_rank_files(trace: &Trace, per_rank: &HashSet<(Op, u64)>, files: &mut BTreeSet<String>) {
    if per_rank.is_empty() {
        return;
    }
    let pruned = leading_to(&trace.nodes, per_rank);
    let mut idx = Vec::new();
    let mut named = Vec::new();
    trace
        .ranks()
        .for_each(|r| name_files(&pruned, r, &mut idx, &mut named));
    // Sorted first: a set built from a sorted sequence is built in one pass, where a million
    // inserts of names with a long common prefix spent most of their time comparing it.
    named.sort_unstable();
    named.dedup();
    files.extend(named);
}

/// The nodes that are or hold an event of `wanted`, with only those below them.
fn leading_to(nodes: &[Node], wanted: &HashSet<(Op, u64)>) -> Vec<Node> {
    let mut out = Vec::new();
    for n in nodes {
        let kind = match &n.kind {
            NodeKind::Event(e) => {
                let children = leading_to(&e.children, wanted);
                if children.is_empty() && !wanted.contains(&(e.op, e.sig)) {
                    continue;
                }
                NodeKind::Event(Event {
                    children,
                    ..e.clone()
                })
            }
            NodeKind::Loop(l) => {
                let body = leading_to(&l.body, wanted);
                if body.is_empty() {
                    continue;
                }
                NodeKind::Loop(rsd::trace::Loop {
                    iters: l.iters.clone(),
                    body,
                })
            }
        };
        out.push(Node {
            ranks: n.ranks.clone(),
            kind,
        });
    }
    out
}

/// The files the events of `nodes` name on `rank`, nested calls included.
fn name_files(nodes: &[Node], rank: u32, idx: &mut Vec<u64>, files: &mut Vec<String>) {
    rsd::trace::visit(nodes, rank, idx, &mut |e, idx| {
        if let Some(t) = &e.path {
            let fields: Vec<i64> = e
                .path_fields()
                .iter()
                .map(|p| p.start_member(rank, idx))
                .collect();
            let path = t.render(&fields);
            files.extend(rsd::op::paths_of(&path).map(str::to_string));
        }
        name_files(&e.children, rank, idx, files);
        true
    });
}

/// One class's calls and bytes, and how many ranks it stands for.
struct RankTotals<'a> {
    weight: u64,
    /// Events whose files [`per_rank_files`] lists.
    per_rank: &'a HashSet<(Op, u64)>,
    calls: u64,
    bytes: u64,
}

impl RankTotals<'_> {
    /// Per-layer totals count every call, nested ones included (that is each layer's view),
    /// once per rank of the class. The per-rank totals count only the calls the application
    /// made itself, so an MPI-IO write and the POSIX write the library issued for it are not
    /// counted twice.
    fn tally(&mut self, e: &FlatEvent, s: &mut Summary, top: bool) {
        let t = s.ops.entry((e.op.layer(), e.op)).or_default();
        let b = e.op.data_bytes(&e.params);
        t.count += self.weight;
        t.bytes += b * self.weight;
        if top {
            self.calls += 1;
            self.bytes += b;
        }
        // Both paths of a rename or a link are files touched.
        if !self.per_rank.contains(&(e.op, e.sig)) {
            for p in e.path.as_deref().into_iter().flat_map(rsd::op::paths_of) {
                if !s.files.contains(p) {
                    s.files.insert(p.to_string());
                }
            }
        }
        for c in &e.children {
            self.tally(c, s, false);
        }
    }
}

/// One process group (`rsd::process::Group`) as `stats` and `show` list it: its children,
/// and the file bytes their own calls read and wrote (nested calls not counted twice, as in
/// the per-rank totals).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupTotals {
    /// Children in the group.
    pub processes: u64,
    /// Their slots in the trace's rank dimension (`expand --rank SLOT` shows one).
    pub slots: String,
    /// Who forked them: `rank` (the rank's own process) or `child K` (of the same rank).
    pub parent: String,
    /// Call-site signature of the fork, hex.
    pub site: String,
    /// The command line of an image `exec` started (the process that exec'd is in the
    /// tree as another process, ended by `exec`); empty for a forked image.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// How they ended (`exit 0`, `_exit 3`, `signal 15`, `exec`, `missing`).
    pub end: String,
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
}

/// The trace's processes: the ranks' own and their forked children, by group.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProcessTotals {
    /// The ranks' own processes.
    pub rank_processes: u64,
    /// Bytes the ranks' own processes read and wrote.
    pub rank_read: u64,
    /// See `rank_read`.
    pub rank_written: u64,
    /// Forked children in the header (missing ones included).
    pub children: u64,
    /// Children with no record (still running when the trace was written, or killed).
    pub missing: u64,
    /// Children forked beyond `IOTREX_MAX_PROCESSES`, not traced.
    pub untraced: u64,
    /// The children by group.
    pub groups: Vec<GroupTotals>,
}

/// Bytes read and written by the top-level calls of `slots`.
fn read_written(trace: &Trace, slots: &rsd::RankSet) -> (u64, u64) {
    let (mut r, mut w) = (0, 0);
    slots.for_each(|s| {
        trace.expand_unresolved_with(s, &mut |e| {
            match e.op.dir() {
                rsd::op::Dir::Read => r += e.op.data_bytes(&e.params),
                rsd::op::Dir::Write => w += e.op.data_bytes(&e.params),
                rsd::op::Dir::None => {}
            }
            true
        });
    });
    (r, w)
}

/// The processes of a trace whose header has any beyond the ranks' own; `None` otherwise.
pub fn processes(trace: &Trace, h: &rsd::Header) -> Option<ProcessTotals> {
    let p = h.processes.as_ref()?;
    let (rank_read, rank_written) = read_written(trace, &rsd::RankSet::all(h.nranks));
    let groups = p
        .groups
        .iter()
        .map(|g| {
            let (read, written) = if g.end == rsd::process::End::Missing {
                (0, 0)
            } else {
                read_written(trace, &g.slots)
            };
            GroupTotals {
                processes: g.slots.len(),
                slots: g.slots.to_string(),
                parent: g
                    .parent
                    .map_or("rank".to_string(), |k| format!("child {k}")),
                site: format!("{:#x}", g.site),
                command: g.command.clone(),
                end: g.end.to_string(),
                read,
                written,
            }
        })
        .collect();
    Some(ProcessTotals {
        rank_processes: u64::from(h.nranks),
        rank_read,
        rank_written,
        children: p.children(),
        missing: p.missing(),
        untraced: p.untraced,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary as every rank's expansion gives it: what [`summarize`] must equal.
    fn rank_by_rank(trace: &Trace) -> Summary {
        let mut s = Summary::default();
        s.nodes = count_nodes(&trace.nodes, &mut s.ops, &mut s.approximate);
        let none = HashSet::new();
        let (mut calls, mut bytes) = (Vec::new(), Vec::new());
        trace.ranks().for_each(|r| {
            let mut t = RankTotals {
                weight: 1,
                per_rank: &none,
                calls: 0,
                bytes: 0,
            };
            trace.expand_with(r, &mut |e| {
                t.tally(e, &mut s, true);
                true
            });
            calls.push(((t.calls, r), 1));
            bytes.push(((t.bytes, r), 1));
        });
        s.ranks = calls.len() as u64;
        s.rank_calls = spread(&calls);
        s.rank_bytes = spread(&bytes);
        s
    }

    #[test]
    fn classes_of_ranks_give_what_every_rank_gives() {
        for n in [1, 2, 3, 7, 16, 33] {
            let t = crate::synth::uneven(n);
            assert_eq!(summarize(&t), rank_by_rank(&t), "uneven at {n} ranks");
            for iters in [1, 5] {
                let t = crate::synth::spmd(n, iters);
                assert_eq!(summarize(&t), rank_by_rank(&t), "spmd {n} x {iters}");
            }
        }
    }

    /// At 4,096 ranks the synthetic program's summary is the same as every rank's, while the
    /// classes are two (rank 0 and the others) besides the files named per rank.
    #[test]
    fn a_large_regular_trace_is_summarised_by_its_classes() {
        let t = crate::synth::spmd(4096, 3);
        assert_eq!(summarize(&t), rank_by_rank(&t));
        assert_eq!(rsd::classes::classes(&t, &reads).len(), 2);
    }
}
