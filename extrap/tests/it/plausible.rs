//! Timing extrapolated to 2^20 ranks from noisy inputs stays plausible: every time
//! in the output is finite, non-negative and grows at most linearly from the largest input
//! (twice the largest input value times 2^20/16), and every time carries an interval around it.
//! Before the timing models were bounded, quadratics through four noisy points predicted years.

use extrap::patterns::{Pattern, trace_file};
use extrap::{ExtrapError, Extrapolated, Inconsistent, Input, ModelSet, Request};
use rsd::timing::{Stats, Timing};
use rsd::trace::{Node, NodeKind};

/// The inputs fitted as given, as every test here asks (`extrap::run`; the patterns agree in
/// structure by construction). A refusal is the test's answer, not worth boxing.
#[allow(clippy::result_large_err)]
fn extrapolate(ins: &[Input], target: u32, ms: &ModelSet) -> Result<Extrapolated, ExtrapError> {
    let req = Request::new(target)
        .models(ms.clone())
        .inconsistent(Inconsistent::AsGiven);
    extrap::run(&req, ins)
}

const SCALES: [u32; 4] = [4, 8, 12, 16];
const TARGET: u32 = 1 << 20;

/// Every event's timing, nested calls before their event.
fn timings(nodes: &[Node], out: &mut Vec<Timing>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                timings(&e.children, out);
                out.push(e.timing.clone());
            }
            NodeKind::Loop(l) => timings(&l.body, out),
        }
    }
}

/// +-30% from a deterministic sequence (no rand dependency).
fn next(x: &mut u64) -> f64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    1.0 + 0.6 * ((*x >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
}

fn jitter_nodes(nodes: &mut [Node], x: &mut u64) {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) => {
                for s in [&mut e.timing.gap, &mut e.timing.dur] {
                    // A mean that is 0 or 1 ns stays small; the others get the noise of a
                    // real machine.
                    s.mean = (s.mean + 1000.0) * next(x);
                    s.max = s.max.max(s.mean.ceil() as u64);
                    s.min = s.min.min(s.mean.floor() as u64);
                }
                jitter_nodes(&mut e.children, x);
            }
            NodeKind::Loop(l) => jitter_nodes(&mut l.body, x),
        }
    }
}

fn check(stat: &Stats, inputs: &[&Stats], what: &str) {
    let ymax = inputs
        .iter()
        .flat_map(|s| [s.mean, s.max as f64])
        .fold(0.0f64, f64::max);
    let bound = 2.0 * ymax * (f64::from(TARGET) / 16.0);
    for (name, v) in [
        ("mean", stat.mean),
        ("min", stat.min as f64),
        ("max", stat.max as f64),
        ("std", stat.variance().sqrt()),
    ] {
        assert!(v.is_finite() && v >= 0.0, "{what} {name} = {v}");
        assert!(v <= bound, "{what} {name} = {v} beyond {bound}");
    }
}

#[test]
fn two_to_the_twenty_ranks_stay_plausible() {
    let ms = ModelSet::builtin();
    for p in [Pattern::Spmd, Pattern::Groups] {
        for seed in 0..3u64 {
            let mut x = seed + 1;
            let ins: Vec<Input> = SCALES
                .iter()
                .map(|&n| {
                    let mut file = trace_file(p, n);
                    jitter_nodes(&mut file.trace.nodes, &mut x);
                    Input {
                        name: format!("{p:?}.{n}"),
                        file,
                    }
                })
                .collect();
            let out = extrapolate(&ins, TARGET, &ms).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            let mut got = Vec::new();
            timings(&out.file.trace.nodes, &mut got);
            let per_input: Vec<Vec<Timing>> = ins
                .iter()
                .map(|i| {
                    let mut v = Vec::new();
                    timings(&i.file.trace.nodes, &mut v);
                    v
                })
                .collect();
            assert!(!got.is_empty());
            for (k, t) in got.iter().enumerate() {
                let what = format!("{p:?} seed {seed} event {k}");
                let gaps: Vec<&Stats> = per_input.iter().map(|v| &v[k].gap).collect();
                let durs: Vec<&Stats> = per_input.iter().map(|v| &v[k].dur).collect();
                check(&t.gap, &gaps, &format!("{what} gap"));
                check(&t.dur, &durs, &format!("{what} duration"));
                let iv = t.interval.expect("every extrapolated time has an interval");
                assert!(iv.dur.lo <= t.dur.mean && t.dur.mean <= iv.dur.hi, "{what}");
                assert!(iv.gap.lo <= t.gap.mean && t.gap.mean <= iv.gap.hi, "{what}");
                assert!(iv.dur.lo >= 0.0 && iv.dur.hi.is_finite(), "{what}");
            }
            // The wall time's parts likewise, each against its own inputs, and the wall time
            // (their sum) against the sum of their bounds.
            let pred = out.file.header.prediction.as_ref().expect("a prediction");
            let measured: Vec<Vec<(rsd::timing::TimeKind, f64)>> = ins
                .iter()
                .map(|i| rsd_view::show::time_per_rank(&i.file))
                .collect();
            let mut total_bound = 0.0;
            for (kind, v) in &pred.parts {
                let ymax = measured
                    .iter()
                    .flat_map(|m| m.iter().filter(|(k, _)| k == kind).map(|(_, y)| *y))
                    .fold(0.0f64, f64::max);
                let bound = 2.0 * ymax * f64::from(TARGET) / 16.0;
                total_bound += bound;
                assert!(v.value.is_finite() && v.value >= 0.0, "{p:?} {kind:?}");
                assert!(
                    v.value <= bound,
                    "{p:?} {kind:?} {} beyond {bound}",
                    v.value
                );
                assert!(
                    v.interval.lo >= 0.0 && v.interval.hi.is_finite(),
                    "{p:?} {kind:?}"
                );
            }
            assert!(
                pred.wall.value <= total_bound,
                "{p:?}: wall {}",
                pred.wall.value
            );
            assert_eq!(out.file.header.wall_ns, pred.wall.value.round() as u64);
        }
    }
}
