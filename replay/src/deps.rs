//! The I/O dependencies `iotrex sensitivity` measured ([`rsd::sensitivity::Dependency`]),
//! honoured by the replay: rank `to`'s I/O call `at` is issued only once rank `from` has ended
//! its first `after` I/O calls. MPI calls replayed as delays (`--comm delay`) do not order
//! ranks at all, and even real ones miss what MPI cannot show (a rank polling for a file
//! another writes); these measured edges do, in both runtimes.
//!
//! This is the one place that knows how the replay counts I/O calls, as the sensitivity's
//! timelines count them: the top-level calls of any layer but MPI (a container such as an
//! HDF5 call counts, the calls it made do not), from the end of the rank's first `MPI_Init`
//! (or from the start when the trace has none). Each rank's engine asks [`IoDeps::waits`]
//! before issuing its call `k` (after the call's compute gap) and [`IoDeps::signals`] once
//! it has ended `k + 1` calls; the runtime carries the signal ([`crate::Runtime::io_ended`],
//! [`crate::Runtime::wait_io`]): shared counters between rank threads, or an MPI message on
//! a communicator of the replay's own.

use rsd::TraceFile;
use rsd::op::Op;
use rsd::trace::{Node, NodeKind};
use std::collections::BTreeMap;

/// The dependencies of every rank, as the engines consult them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IoDeps {
    /// By waiting rank, by its I/O call index: the (rank, calls ended) it waits for.
    waits: Vec<BTreeMap<u32, Vec<(u32, u32)>>>,
    /// By signalling rank, by its count of calls ended: the ranks to tell.
    signals: Vec<BTreeMap<u32, Vec<u32>>>,
    /// Whether the trace has an `MPI_Init`: calls are counted from its end.
    pub from_init: bool,
    /// Dependencies of groups of more than one rank, which are said, not honoured: the
    /// delayed group's calls that were waited for are a sum over its ranks. The analysis
    /// (`rsd::sensitivity::analyze`) reduces to single members those whose runs tell which
    /// member's calls they were; these are the rest.
    pub groups_left: usize,
}

/// Why a trace's dependencies are not honoured, for the report.
pub fn not_honoured(tf: &TraceFile, nranks: u32) -> Option<&'static str> {
    let s = tf.header.sensitivity.as_ref()?;
    if tf.header.prediction.is_some() {
        return Some("the trace is extrapolated: they were measured on the traced ranks");
    }
    let out = s
        .deps
        .iter()
        .any(|d| d.to >= nranks || d.from.iter().any(|&f| f >= nranks));
    if out {
        return Some("they name ranks the trace does not have");
    }
    let cycle = IoDeps::build(s, nranks, false).is_some_and(|t| t.has_cycle());
    cycle.then_some(
        "they wait for each other in a circle (run-to-run noise measured as dependencies: \
         measure again with a longer --delay or more --runs)",
    )
}

impl IoDeps {
    /// The table of `tf`'s measured dependencies for `nranks` ranks; `None` when it has
    /// none, or when they cannot apply to it ([`not_honoured`]).
    pub fn of(tf: &TraceFile, nranks: u32) -> Option<IoDeps> {
        let s = tf.header.sensitivity.as_ref()?;
        if s.deps.is_empty() || not_honoured(tf, nranks).is_some() {
            return None;
        }
        Self::build(s, nranks, has_init(&tf.trace.nodes))
    }

    fn build(s: &rsd::sensitivity::Sensitivity, nranks: u32, from_init: bool) -> Option<IoDeps> {
        let n = nranks as usize;
        let mut t = IoDeps {
            waits: vec![BTreeMap::new(); n],
            signals: vec![BTreeMap::new(); n],
            from_init,
            groups_left: 0,
        };
        for d in &s.deps {
            let [from] = d.from[..] else {
                t.groups_left += 1;
                continue;
            };
            if from == d.to || d.after == 0 {
                continue;
            }
            let w = t.waits[d.to as usize].entry(d.at).or_default();
            match w.iter_mut().find(|(f, _)| *f == from) {
                Some(e) => e.1 = e.1.max(d.after),
                None => w.push((from, d.after)),
            }
            let s = t.signals[from as usize].entry(d.after).or_default();
            if !s.contains(&d.to) {
                s.push(d.to);
            }
        }
        Some(t)
    }

    /// Whether the dependencies wait for each other in a circle (rank 0's call 3 waits for
    /// rank 1's call 2, which waits for rank 0's call 5): run-to-run noise measured as a
    /// dependency; honoured, the ranks would wait for each other forever.
    pub fn has_cycle(&self) -> bool {
        // The calls the dependencies name, per rank in order; each waits for the one before
        // it on its rank and for the calls its dependencies name.
        let mut calls: Vec<Vec<u32>> = vec![Vec::new(); self.waits.len()];
        for (to, w) in self.waits.iter().enumerate() {
            for (&at, froms) in w {
                calls[to].push(at);
                for &(from, after) in froms {
                    calls[from as usize].push(after - 1);
                }
            }
        }
        for c in &mut calls {
            c.sort_unstable();
            c.dedup();
        }
        // Depth-first search for a back edge; state 1: on the path, 2: done.
        let mut state: Vec<Vec<u8>> = calls.iter().map(|c| vec![0; c.len()]).collect();
        let mut stack: Vec<(usize, usize, bool)> = Vec::new();
        for r in 0..calls.len() {
            for i in 0..calls[r].len() {
                if state[r][i] != 0 {
                    continue;
                }
                stack.push((r, i, false));
                while let Some((r, i, leaving)) = stack.pop() {
                    if leaving {
                        state[r][i] = 2;
                        continue;
                    }
                    if state[r][i] != 0 {
                        continue;
                    }
                    state[r][i] = 1;
                    stack.push((r, i, true));
                    let k = calls[r][i];
                    let mut before: Vec<(usize, usize)> = Vec::new();
                    if i > 0 {
                        before.push((r, i - 1));
                    }
                    for &(from, after) in self.waits(r as u32, k) {
                        let f = from as usize;
                        if let Ok(j) = calls[f].binary_search(&(after - 1)) {
                            before.push((f, j));
                        }
                    }
                    for (f, j) in before {
                        match state[f][j] {
                            1 => return true,
                            0 => stack.push((f, j, false)),
                            _ => {}
                        }
                    }
                }
            }
        }
        false
    }

    /// What `rank`'s I/O call `k` waits for: (rank, how many of its calls must have ended).
    pub fn waits(&self, rank: u32, k: u32) -> &[(u32, u32)] {
        self.waits
            .get(rank as usize)
            .and_then(|w| w.get(&k))
            .map_or(&[], Vec::as_slice)
    }

    /// The ranks to tell once `rank` has ended `count` I/O calls.
    pub fn signals(&self, rank: u32, count: u32) -> &[u32] {
        self.signals
            .get(rank as usize)
            .and_then(|s| s.get(&count))
            .map_or(&[], Vec::as_slice)
    }

    /// The number of dependencies honoured (one per waiting call and rank waited for).
    pub fn len(&self) -> usize {
        self.waits
            .iter()
            .flat_map(|w| w.values())
            .map(Vec::len)
            .sum()
    }

    /// Whether no dependency is honoured.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether an `MPI_Init` is among the trace's top-level calls.
fn has_init(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.op == Op::Init,
        NodeKind::Loop(l) => has_init(&l.body),
    })
}

/// One rank's count of its I/O calls as [`IoDeps`] numbers them.
#[derive(Debug, Clone, Copy, Default)]
pub struct IoCounter {
    /// Calls are counted (after the first `MPI_Init`, or from the start without one).
    counting: bool,
    next: u32,
}

impl IoCounter {
    /// A counter for a trace whose calls count from `MPI_Init` (`from_init`) or the start.
    pub fn new(from_init: bool) -> IoCounter {
        IoCounter {
            counting: !from_init,
            next: 0,
        }
    }

    /// The index of the top-level call `op` among the counted I/O calls, if it is one.
    pub fn next(&mut self, op: Op) -> Option<u32> {
        if op == Op::Init {
            self.counting = true;
            return None;
        }
        if !self.counting || op.layer() == rsd::op::Layer::Mpi {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::sensitivity::{Dependency, Sensitivity};

    fn dep(from: &[u32], to: u32, after: u32, at: u32) -> Dependency {
        Dependency {
            from: from.to_vec(),
            to,
            after,
            at,
        }
    }

    fn trace_with(deps: Vec<Dependency>) -> TraceFile {
        let mut tf = TraceFile {
            header: rsd::Header::new(3),
            trace: rsd::trace::Trace::default(),
        };
        tf.header.sensitivity = Some(Sensitivity {
            delay_ns: 1,
            deps,
            ..Sensitivity::default()
        });
        tf
    }

    #[test]
    fn the_table_pairs_each_wait_with_its_signal() {
        let tf = trace_with(vec![
            dep(&[0], 1, 3, 0),
            dep(&[0], 2, 3, 1),
            dep(&[1], 2, 1, 1),
            dep(&[0, 1], 2, 2, 0),
        ]);
        let t = IoDeps::of(&tf, 3).unwrap();
        assert_eq!(t.waits(1, 0), &[(0, 3)]);
        assert_eq!(t.waits(2, 1), &[(0, 3), (1, 1)]);
        assert!(t.waits(2, 0).is_empty() && t.waits(0, 0).is_empty());
        assert_eq!(t.signals(0, 3), &[1, 2]);
        assert_eq!(t.signals(1, 1), &[2]);
        assert!(t.signals(0, 2).is_empty());
        assert_eq!((t.len(), t.groups_left), (3, 1));
        // Ranks the replay does not have: not honoured, and said why.
        assert!(IoDeps::of(&tf, 2).is_none());
        assert!(not_honoured(&tf, 2).is_some() && not_honoured(&tf, 3).is_none());
    }

    #[test]
    fn a_circle_of_waits_is_found_and_not_honoured() {
        // Rank 1's call 0 waits for rank 0's call 2; rank 0's call 1 waits for rank 1's call 0.
        let tf = trace_with(vec![dep(&[0], 1, 3, 0), dep(&[1], 0, 1, 1)]);
        assert!(IoDeps::of(&tf, 2).is_none());
        assert!(not_honoured(&tf, 2).unwrap().contains("circle"));
        // Rank 0's call 4 waiting for it instead is a consistent order.
        let tf = trace_with(vec![dep(&[0], 1, 3, 0), dep(&[1], 0, 1, 4)]);
        assert!(!IoDeps::of(&tf, 2).unwrap().has_cycle());
    }

    #[test]
    fn calls_count_from_init_leaving_mpi_out() {
        let mut c = IoCounter::new(true);
        let got: Vec<Option<u32>> = [Op::Open, Op::Init, Op::Open, Op::Barrier, Op::Pwrite]
            .iter()
            .map(|&op| c.next(op))
            .collect();
        assert_eq!(got, vec![None, None, Some(0), None, Some(1)]);
        let mut c = IoCounter::new(false);
        assert_eq!(c.next(Op::Open), Some(0));
    }
}
