//! The replay's prediction of the application's run time on the storage it replayed on, with
//! an interval that says what it covers.
//!
//! The point is the median of the replays' wall times (`--repeat K`; each timed from the
//! moment every rank is ready, so the MPI library's and the replay's own start-up are left
//! out, as the traced wall time starts when `MPI_Init` returns). The interval is the replays'
//! run-to-run spread (their smallest to their largest wall time) widened by what the replay
//! cannot measure: how much the application's compute time varies. A replay waits out each
//! compute gap at its recorded mean, so every replay computes for the same time; the
//! application does not. From the trace's timing statistics ([`rsd::timing::gap_spread`]),
//! the interval adds two standard deviations of one rank's summed compute gaps (the gaps taken
//! as independent draws of their event's recorded statistics) and, for an extrapolated trace,
//! the extrapolation's prediction intervals of the mean gaps. What it does not cover: a
//! storage system that behaves differently on another day, and a slow-storage trace whose
//! gaps hold storage waits (they are replayed as compute).

use crate::options::{ComputeMode, Options};
use rsd::timing::{fmt_ns, gap_spread};
use serde::{Deserialize, Serialize};

/// The compute time's spread the interval adds, per rank, ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputeSpread {
    /// Subtracted from the lower end.
    pub below_ns: f64,
    /// Added to the upper end.
    pub above_ns: f64,
    /// Where it comes from, in words.
    pub source: String,
}

impl ComputeSpread {
    /// The spread of the compute the replay of `tf` with `opts` waits out.
    pub fn of(tf: &rsd::TraceFile, nranks: u32, opts: &Options) -> ComputeSpread {
        if opts.compute == ComputeMode::None {
            return ComputeSpread {
                source: "no compute time: --compute none replays none, and the prediction \
                         leaves the application's compute out"
                    .into(),
                ..ComputeSpread::default()
            };
        }
        let g = gap_spread(&tf.trace.nodes, nranks);
        let k = opts.time_scale;
        let (below, above) = ((2.0 * g.sigma + g.below) * k, (2.0 * g.sigma + g.above) * k);
        let extrapolated = if g.below + g.above > 0.0 {
            " and the extrapolation's prediction intervals of the mean gaps"
        } else {
            ""
        };
        ComputeSpread {
            below_ns: below.min(g.mean * k),
            above_ns: above,
            source: format!(
                "the compute time's spread from the trace's timing statistics: two standard \
                 deviations of a rank's summed gaps ({}){extrapolated}, -{}/+{} on a mean of {} \
                 per rank",
                fmt_ns(2.0 * g.sigma * k),
                fmt_ns(below.min(g.mean * k)),
                fmt_ns(above),
                fmt_ns(g.mean * k)
            ),
        }
    }
}

/// The predicted run time of the application on the storage replayed on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The prediction: the median of the replays' wall times, ns.
    pub value_ns: f64,
    /// The interval's lower end, ns.
    pub lo_ns: f64,
    /// Its upper end, ns.
    pub hi_ns: f64,
    /// Each replay's wall time, in the order they ran, ns.
    pub walls_ns: Vec<u64>,
    /// What the interval adds for the compute time.
    pub compute: ComputeSpread,
    /// What the interval covers, in words.
    pub covers: String,
}

/// The index of the median of `walls` (the lower middle one of an even count), so that the
/// report of that replay goes with the prediction.
pub fn median_index(walls: &[u64]) -> usize {
    let mut order: Vec<usize> = (0..walls.len()).collect();
    order.sort_by_key(|&i| walls[i]);
    order
        .get(walls.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

impl Prediction {
    /// The prediction from the wall times of `walls.len()` replays (at least one) and the
    /// compute time's spread.
    pub fn new(walls: &[u64], compute: ComputeSpread) -> Prediction {
        let value = walls.get(median_index(walls)).copied().unwrap_or(0) as f64;
        let lo = walls.iter().min().copied().unwrap_or(0) as f64;
        let hi = walls.iter().max().copied().unwrap_or(0) as f64;
        let runs = match walls.len() {
            1 => "one replay's wall time (one replay measures no run-to-run spread: \
                  --repeat K replays K times)"
                .to_string(),
            k => format!(
                "the median of {k} replays' wall times; the interval spans their smallest to \
                 their largest"
            ),
        };
        Prediction {
            value_ns: value,
            lo_ns: (lo - compute.below_ns).max(0.0),
            hi_ns: hi + compute.above_ns,
            walls_ns: walls.to_vec(),
            covers: format!(
                "{runs}, widened by {}; start-up (MPI_Init, what ran before it, the replay's loading) left out",
                compute.source
            ),
            compute,
        }
    }

    /// Whether the interval holds `ns`.
    pub fn contains(&self, ns: f64) -> bool {
        self.lo_ns <= ns && ns <= self.hi_ns
    }

    /// The report's lines: the prediction, then what its interval covers.
    pub fn render(&self, traced_wall_ns: u64, extrapolated: bool) -> String {
        let against = match (traced_wall_ns, extrapolated) {
            (0, _) => String::new(),
            (t, false) => format!(" (traced on its own storage: {})", fmt_ns(t as f64)),
            (t, true) => format!(" (the extrapolation predicted {})", fmt_ns(t as f64)),
        };
        format!(
            "predicted run time on this storage: {} [{}, {}]{against}\n  interval: {}\n",
            fmt_ns(self.value_ns),
            fmt_ns(self.lo_ns),
            fmt_ns(self.hi_ns),
            self.covers
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_point_is_the_median_and_the_interval_holds_every_replay() {
        let c = ComputeSpread {
            below_ns: 10.0,
            above_ns: 20.0,
            source: "x".into(),
        };
        let p = Prediction::new(&[300, 100, 200], c.clone());
        assert_eq!((p.value_ns, p.lo_ns, p.hi_ns), (200.0, 90.0, 320.0));
        assert_eq!(median_index(&[300, 100, 200]), 2);
        assert!(p.walls_ns.iter().all(|&w| p.contains(w as f64)));
        assert!(p.covers.contains("median of 3 replays"), "{}", p.covers);
        let p = Prediction::new(&[50], c);
        assert_eq!((p.value_ns, p.lo_ns, p.hi_ns), (50.0, 40.0, 70.0));
        assert!(p.covers.contains("--repeat K"), "{}", p.covers);
        assert!(p.render(60, false).contains("traced on its own storage"));
    }
}
