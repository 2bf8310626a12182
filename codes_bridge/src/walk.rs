//! Streams one rank's calls together with each call's mean timing.
//!
//! `rsd::Trace::expand_with` gives the exact calls but no timing, and the CODES export needs the
//! mean gap and duration of every call to place delays. This walks with `rsd::trace::visit`,
//! which hands over each event node (timing included) in order, and is tested to yield exactly
//! what `expand` yields, plus timing.

use rsd::timing::Stats;
use rsd::trace::{Event, Resolved, Trace, visit};
use rsd::{Op, Param};

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
    /// Parameter `p`, or `None` when this op has no such parameter ([`Op::get`]).
    pub fn get(&self, p: Param) -> Option<i64> {
        self.op.get(&self.params, p)
    }

    /// Parameter `p`, which this op's schema has (debug builds panic when it has not; see
    /// [`Op::param`]).
    pub fn p(&self, p: Param) -> i64 {
        self.op.param(&self.params, p)
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

/// One event for `rank` at indices `idx`: rsd's flattening plus the event's mean timing, with
/// the nested calls walked the same way so they carry their own timing.
fn eval(t: &Resolved, e: &Event, rank: u32, idx: &mut Vec<u64>) -> Ev {
    let mut flat = t.flatten(e, rank, idx);
    let mut children = Vec::new();
    visit(&e.children, rank, idx, &mut |c, idx| {
        children.push(eval(t, c, rank, idx));
        true
    });
    Ev {
        op: e.op,
        path: flat.path.take(),
        params: std::mem::take(&mut flat.params),
        gap_ns: mean_ns(&e.timing.gap),
        dur_ns: mean_ns(&e.timing.dur),
        children,
    }
}

/// Calls `f` with every call of `rank` in order; stops early when `f` returns `false`.
/// rsd's walker decides which nodes the rank runs and how often (rank sets, elastic
/// iteration counts, depth limit). Offsets the other ranks' calls decide are resolved
/// ([`Trace::resolved`]: a borrow when the export drew and resolved the trace already).
pub(crate) fn for_each(trace: &Trace, rank: u32, f: &mut dyn FnMut(Ev) -> bool) {
    let t = trace.resolved();
    let mut idx = Vec::new();
    visit(&t.nodes, rank, &mut idx, &mut |e, idx| {
        f(eval(&t, e, rank, idx))
    });
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
        let t = rsd_view::synth::spmd(6, 5);
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
