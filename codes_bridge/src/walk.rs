//! Streams one rank's calls together with each call's mean timing.
//!
//! `rsd::Trace::expand_with` gives the exact calls but no timing, and the CODES export needs the
//! mean gap and duration of every call to place delays. This walker follows the same rules as
//! rsd's (rank sets, elastic iteration counts, depth limit, path rendering) and is tested to
//! yield exactly what `expand` yields, plus timing.

use rsd::Op;
use rsd::timing::Stats;
use rsd::trace::{Event, Node, NodeKind, Trace};

/// One call of one rank, with its mean timing in whole nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ev {
    pub op: Op,
    pub path: Option<String>,
    pub params: Vec<i64>,
    /// Mean compute gap before the call.
    pub gap_ns: u64,
    /// Mean duration of the call.
    pub dur_ns: u64,
    /// Calls made inside this one.
    pub children: Vec<Ev>,
}

impl Ev {
    /// The named schema parameter, or `None` if the call did not record it.
    pub fn param(&self, name: &str) -> Option<i64> {
        self.op
            .schema()
            .iter()
            .position(|p| *p == name)
            .and_then(|i| self.params.get(i).copied())
    }

    /// Like [`Ev::param`], with 0 for a missing parameter.
    pub fn p(&self, name: &str) -> i64 {
        self.param(name).unwrap_or(0)
    }

    /// A call with no path, children or timing; for tests.
    #[cfg(test)]
    pub fn new(op: Op, params: Vec<i64>) -> Ev {
        Ev {
            op,
            path: None,
            params,
            gap_ns: 0,
            dur_ns: 0,
            children: Vec::new(),
        }
    }
}

fn mean_ns(s: &Stats) -> u64 {
    if s.count == 0 || !s.mean.is_finite() || s.mean <= 0.0 {
        0
    } else {
        s.mean.round() as u64
    }
}

fn eval(e: &Event, rank: u32, idx: &mut Vec<u64>) -> Ev {
    let vals: Vec<i64> = e
        .params
        .iter()
        .map(|p| p.eval(rank, idx).unwrap_or(0))
        .collect();
    let nf = e.nfields();
    let (params, fields) = vals.split_at(vals.len() - nf);
    let mut children = Vec::new();
    walk(&e.children, rank, idx, &mut |c| {
        children.push(c);
        true
    });
    Ev {
        op: e.op,
        path: e.path.as_ref().map(|p| p.render(fields)),
        params: params.to_vec(),
        gap_ns: mean_ns(&e.timing.gap),
        dur_ns: mean_ns(&e.timing.dur),
        children,
    }
}

fn walk(nodes: &[Node], rank: u32, idx: &mut Vec<u64>, f: &mut dyn FnMut(Ev) -> bool) -> bool {
    for n in nodes {
        if !n.ranks.contains(rank) {
            continue;
        }
        match &n.kind {
            NodeKind::Event(e) => {
                if !f(eval(e, rank, idx)) {
                    return false;
                }
            }
            NodeKind::Loop(l) => {
                // Same guard as rsd's walker, so a corrupt trace cannot recurse without bound.
                if idx.len() >= rsd::value::MAX_DEPTH {
                    return false;
                }
                let iters = l.iters.eval(rank, idx).unwrap_or(0).max(0) as u64;
                idx.push(0);
                for i in 0..iters {
                    *idx.last_mut().expect("pushed") = i;
                    if !walk(&l.body, rank, idx, f) {
                        idx.pop();
                        return false;
                    }
                }
                idx.pop();
            }
        }
    }
    true
}

/// Calls `f` with every call of `rank` in order; stops early when `f` returns `false`.
pub(crate) fn for_each(trace: &Trace, rank: u32, f: &mut dyn FnMut(Ev) -> bool) {
    let mut idx = Vec::new();
    walk(&trace.nodes, rank, &mut idx, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::FlatEvent;

    fn flat(e: &Ev) -> FlatEvent {
        FlatEvent {
            op: e.op,
            sig: 0,
            path: e.path.clone(),
            params: e.params.clone(),
            children: e.children.iter().map(flat).collect(),
        }
    }

    fn strip(mut e: FlatEvent) -> FlatEvent {
        e.sig = 0;
        e.children = e.children.into_iter().map(strip).collect();
        e
    }

    #[test]
    fn yields_exactly_what_expand_yields_plus_timing() {
        let t = rsd::synth::spmd(6, 5);
        for r in 0..6 {
            let mut mine = Vec::new();
            for_each(&t, r, &mut |e| {
                mine.push(e);
                true
            });
            let theirs: Vec<FlatEvent> = t.expand(r).into_iter().map(strip).collect();
            let mine_flat: Vec<FlatEvent> = mine.iter().map(flat).collect();
            assert_eq!(mine_flat, theirs, "rank {r}");
            // synth timing: gaps 1..6 us, durations 0.2..2.2 us.
            for e in &mine {
                assert!((1_000..6_000).contains(&e.gap_ns), "{e:?}");
                assert!((200..2_200).contains(&e.dur_ns), "{e:?}");
            }
        }
    }
}
