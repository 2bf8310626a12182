//! Timing statistics that merge exactly across iterations and ranks.
//!
//! Each event keeps the compute gap before it and its own duration as count, min, max (with the
//! ranks where they occurred), sum and sum of squared deviations (Chan et al.'s pairwise update,
//! so merging never averages averages), plus log-scale histogram bins.

use serde::{Deserialize, Serialize};

/// Number of histogram bins. Bin `b` holds values in `[4^b, 4^(b+1))` ns; bin 0 also holds 0
/// and the last bin everything from ~4.3 s up.
pub const BINS: usize = 16;

/// Statistics of one timed quantity, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Rank where the smallest sample was seen.
    pub min_rank: u32,
    /// Rank where the largest sample was seen.
    pub max_rank: u32,
    /// Mean of the samples.
    pub mean: f64,
    /// Sum of squared deviations from the mean (variance = m2 / count).
    pub m2: f64,
    /// Log-4 histogram of the samples.
    #[serde(with = "sparse_bins")]
    pub bins: [u64; BINS],
}

/// Writes only the non-zero bins as (bin, count) pairs: most events fill two or three bins, and
/// every stored count widens as rank and iteration counts grow, which would make the file
/// grow with the run.
mod sparse_bins {
    use super::BINS;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(bins: &[u64; BINS], s: S) -> Result<S::Ok, S::Error> {
        let pairs: Vec<(u8, u64)> = bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(i, c)| (i as u8, *c))
            .collect();
        pairs.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; BINS], D::Error> {
        let pairs: Vec<(u8, u64)> = Vec::deserialize(d)?;
        let mut bins = [0u64; BINS];
        for (i, c) in pairs {
            match bins.get_mut(i as usize) {
                Some(b) => *b = c,
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "histogram bin {i} out of range"
                    )));
                }
            }
        }
        Ok(bins)
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: 0,
            min: u64::MAX,
            max: 0,
            min_rank: 0,
            max_rank: 0,
            mean: 0.0,
            m2: 0.0,
            bins: [0; BINS],
        }
    }
}

/// The histogram bin of a value in ns (0 and 1 both in bin 0; no branch, as it runs twice per
/// traced call).
#[inline]
pub fn bin_of(ns: u64) -> usize {
    ((63 - (ns | 1).leading_zeros() as usize) / 2).min(BINS - 1)
}

impl Stats {
    /// Statistics of a single sample.
    pub fn one(ns: u64, rank: u32) -> Stats {
        let mut s = Stats::default();
        s.add(ns, rank);
        s
    }

    /// Adds one sample (Welford's update).
    pub fn add(&mut self, ns: u64, rank: u32) {
        self.count += 1;
        if ns < self.min {
            self.min = ns;
            self.min_rank = rank;
        }
        if ns > self.max || self.count == 1 {
            self.max = ns;
            self.max_rank = rank;
        }
        let x = ns as f64;
        let d = x - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (x - self.mean);
        self.bins[bin_of(ns)] += 1;
    }

    /// Folds another set of samples in (Chan's parallel update). Ties on min/max keep the
    /// lower rank so the result does not depend on merge order.
    pub fn merge(&mut self, o: &Stats) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = o.clone();
            return;
        }
        if o.min < self.min || (o.min == self.min && o.min_rank < self.min_rank) {
            self.min = o.min;
            self.min_rank = o.min_rank;
        }
        if o.max > self.max || (o.max == self.max && o.max_rank < self.max_rank) {
            self.max = o.max;
            self.max_rank = o.max_rank;
        }
        let n = (self.count + o.count) as f64;
        let d = o.mean - self.mean;
        self.mean += d * o.count as f64 / n;
        self.m2 += o.m2 + d * d * self.count as f64 * o.count as f64 / n;
        self.count += o.count;
        for (a, b) in self.bins.iter_mut().zip(o.bins.iter()) {
            *a += b;
        }
    }

    /// Population variance.
    pub fn variance(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.m2 / self.count as f64
        }
    }

    /// Total of all samples, in ns.
    pub fn total(&self) -> f64 {
        self.mean * self.count as f64
    }
}

/// The timing of one event: the compute gap before it and its duration.
///
/// `interval` and `waits` were added after format version 1 was fixed: they are the last
/// fields, written only up to the last one present (see the `Serialize` impl), and read as
/// `None` from traces without them, so a trace without either keeps its bytes.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Timing {
    /// Time from the end of the previous traced call to the start of this one.
    pub gap: Stats,
    /// Time spent inside the call.
    pub dur: Stats,
    /// Prediction intervals of the mean gap and mean duration, in an extrapolated trace.
    #[serde(default)]
    pub interval: Option<Intervals>,
    /// The part of the gaps the rank spent off its CPU, where the tracer measured it (format
    /// minor 11, [`crate::format::GAP_WAITS_MINOR`]); `None` in older traces and where no gap
    /// was long enough to be measured. The rest of the gaps is compute.
    #[serde(default)]
    pub waits: Option<GapWaits>,
}

impl Serialize for Timing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // MessagePack writes a struct as an array, so only fields at its end can be left out:
        // the interval is written (as nil when absent) whenever the waits after it are.
        let n = if self.waits.is_some() {
            4
        } else if self.interval.is_some() {
            3
        } else {
            2
        };
        let mut st = s.serialize_struct("Timing", n)?;
        st.serialize_field("gap", &self.gap)?;
        st.serialize_field("dur", &self.dur)?;
        if n >= 3 {
            st.serialize_field("interval", &self.interval)?;
        }
        if n == 4 {
            st.serialize_field("waits", &self.waits)?;
        }
        st.end()
    }
}

/// Off-CPU time inside an event's gaps, summed over its calls, ns. A gap's wall time is the
/// rank's compute, the time it waited for a core (`runq_ns`) and the time it was blocked
/// outside any traced call (`blocked_ns`): a page fault on a file mapping served by the
/// device, or any other sleep the program made between traced calls. Sums, so that merging
/// iterations and ranks is exact; the gap's own statistics keep the wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GapWaits {
    /// Time runnable but waiting for a core (the scheduler's run-queue delay).
    pub runq_ns: u64,
    /// Time neither running nor runnable.
    pub blocked_ns: u64,
}

impl GapWaits {
    /// Whether nothing was measured off-CPU.
    pub fn is_zero(&self) -> bool {
        self.runq_ns == 0 && self.blocked_ns == 0
    }

    /// Adds `o` (saturating: a sum past 2^64 ns is 584 years).
    pub fn add(&mut self, o: GapWaits) {
        self.runq_ns = self.runq_ns.saturating_add(o.runq_ns);
        self.blocked_ns = self.blocked_ns.saturating_add(o.blocked_ns);
    }

    /// `a` and `b` added, `None` where both are: an event without waits stays as older
    /// traces have it.
    pub fn merged(a: Option<GapWaits>, b: Option<GapWaits>) -> Option<GapWaits> {
        let mut w = a.unwrap_or_default();
        w.add(b.unwrap_or_default());
        (!w.is_zero()).then_some(w)
    }
}

/// A prediction interval of an extrapolated time, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl Interval {
    /// Whether `x` lies inside.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

impl std::fmt::Display for Interval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}, {}]", fmt_ns(self.lo), fmt_ns(self.hi))
    }
}

/// The prediction intervals of an extrapolated event's mean gap and mean duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// Of the mean compute gap.
    pub gap: Interval,
    /// Of the mean duration.
    pub dur: Interval,
}

impl Timing {
    /// Timing of one call.
    pub fn one(gap_ns: u64, dur_ns: u64, rank: u32) -> Timing {
        Timing {
            gap: Stats::one(gap_ns, rank),
            dur: Stats::one(dur_ns, rank),
            interval: None,
            waits: None,
        }
    }

    /// Folds another event's timing in (measured samples: a prediction interval no longer
    /// applies to the merged statistics).
    pub fn merge(&mut self, o: &Timing) {
        self.gap.merge(&o.gap);
        self.dur.merge(&o.dur);
        self.interval = None;
        self.waits = GapWaits::merged(self.waits, o.waits);
    }

    /// The mean gap's compute: the mean gap less the measured off-CPU time, or the whole
    /// mean gap where none was measured. `runq` says whether waiting for a core counts as
    /// off-CPU too (it does for CPU work that meets the replay machine's own contention; a
    /// sleep leaves it in).
    pub fn gap_compute_mean(&self, runq: bool) -> f64 {
        let Some(w) = self.waits else {
            return self.gap.mean;
        };
        if self.gap.count == 0 {
            return 0.0;
        }
        let off = w.blocked_ns as f64 + if runq { w.runq_ns as f64 } else { 0.0 };
        (self.gap.mean - off / self.gap.count as f64).max(0.0)
    }
}

/// What a run's time is spent on, per rank: the parts an extrapolation models one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TimeKind {
    /// Inside I/O calls (MPI-IO, POSIX, stdio; an MPI-IO call's nested calls are in it).
    Io,
    /// Inside MPI calls other than collectives (point-to-point, waits, init, queries).
    Communication,
    /// Inside MPI collectives and communicator creation.
    Collective,
    /// Between traced calls (the compute gaps).
    Compute,
    /// The rest of the wall time: the slowest rank's wall time minus the mean rank's traced
    /// time (imbalance, untraced start and end).
    Compensation,
}

impl TimeKind {
    /// Every kind, in the order they are printed.
    pub const ALL: [TimeKind; 5] = [
        TimeKind::Io,
        TimeKind::Communication,
        TimeKind::Collective,
        TimeKind::Compute,
        TimeKind::Compensation,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            TimeKind::Io => "I/O",
            TimeKind::Communication => "communication",
            TimeKind::Collective => "collective",
            TimeKind::Compute => "compute gaps",
            TimeKind::Compensation => "compensation",
        }
    }

    /// The kind of time spent inside a call of `op`.
    pub fn of_call(op: crate::Op) -> TimeKind {
        match op.layer() {
            crate::Layer::Mpi if op.is_collective() || op.creates_comm() => TimeKind::Collective,
            crate::Layer::Mpi => TimeKind::Communication,
            _ => TimeKind::Io,
        }
    }
}

/// A predicted time and its prediction interval, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Predicted {
    /// The prediction.
    pub value: f64,
    /// Its interval.
    pub interval: Interval,
}

impl std::fmt::Display for Predicted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", fmt_ns(self.value), self.interval)
    }
}

/// How an extrapolated trace's times were predicted (the header's `prediction`; its presence
/// marks the trace as extrapolated): the inputs, and the wall time as the sum of its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The input rank counts, increasing, and how many runs of each were given.
    pub inputs: Vec<(u32, u32)>,
    /// The wall time: the sum of `parts`.
    pub wall: Predicted,
    /// The time per rank of each kind (means over ranks), compensation last.
    pub parts: Vec<(TimeKind, Predicted)>,
}

/// The mean time per rank of each kind but [`TimeKind::Compensation`], ns, of a trace of
/// `nranks` ranks: the top-level events' durations by kind and their gaps (nested calls are
/// inside their parent's duration), `MPI_Init` aside (the wall time starts when it returns).
pub fn time_parts(nodes: &[crate::trace::Node], nranks: u32) -> Vec<(TimeKind, f64)> {
    fn walk(nodes: &[crate::trace::Node], acc: &mut [f64; 4]) {
        for n in nodes {
            match &n.kind {
                // The wall time starts when MPI_Init returns: its time and the gap before
                // it are the library's start-up, outside the run's wall time.
                crate::trace::NodeKind::Event(e) if e.op == crate::Op::Init => {}
                crate::trace::NodeKind::Event(e) => {
                    acc[TimeKind::of_call(e.op) as usize] += e.timing.dur.total();
                    acc[TimeKind::Compute as usize] += e.timing.gap.total();
                }
                crate::trace::NodeKind::Loop(l) => walk(&l.body, acc),
            }
        }
    }
    let mut acc = [0.0; 4];
    walk(nodes, &mut acc);
    let n = f64::from(nranks.max(1));
    TimeKind::ALL[..4]
        .iter()
        .map(|&k| (k, acc[k as usize] / n))
        .collect()
}

/// How much one rank's summed compute time varies, from a trace's timing statistics (the
/// gaps before the top-level calls, `MPI_Init`'s aside as in [`time_parts`]), ns per rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GapSpread {
    /// The mean compute time per rank.
    pub mean: f64,
    /// The standard deviation of one rank's summed gaps, taking the measured gaps as
    /// independent draws of their event's statistics: sqrt(sum of each event's squared
    /// deviations / ranks).
    pub sigma: f64,
    /// Below the mean per rank, from extrapolated events' prediction intervals of their
    /// mean gap (0 for a traced trace).
    pub below: f64,
    /// Above it, likewise.
    pub above: f64,
}

/// The [`GapSpread`] of the events `nodes` of a trace of `nranks` ranks.
pub fn gap_spread(nodes: &[crate::trace::Node], nranks: u32) -> GapSpread {
    // (sum of totals, sum of m2, below, above), each summed over ranks.
    fn walk(nodes: &[crate::trace::Node], acc: &mut [f64; 4]) {
        for n in nodes {
            match &n.kind {
                crate::trace::NodeKind::Event(e) if e.op == crate::Op::Init => {}
                crate::trace::NodeKind::Event(e) => {
                    let g = &e.timing.gap;
                    acc[0] += g.total();
                    match &e.timing.interval {
                        Some(iv) => {
                            let k = g.count as f64;
                            acc[2] += (g.mean - iv.gap.lo).max(0.0) * k;
                            acc[3] += (iv.gap.hi - g.mean).max(0.0) * k;
                        }
                        None => acc[1] += g.m2,
                    }
                }
                crate::trace::NodeKind::Loop(l) => walk(&l.body, acc),
            }
        }
    }
    let mut acc = [0.0; 4];
    walk(nodes, &mut acc);
    let n = f64::from(nranks.max(1));
    GapSpread {
        mean: acc[0] / n,
        sigma: (acc[1] / n).sqrt(),
        below: acc[2] / n,
        above: acc[3] / n,
    }
}

/// Formats nanoseconds with a readable unit: `12.1us`, `3.40ms`.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merge_equals_sequential(xs in proptest::collection::vec(0u64..10_000_000, 1..50), split in 0usize..50) {
            let split = split.min(xs.len());
            let mut all = Stats::default();
            for (i, &x) in xs.iter().enumerate() { all.add(x, i as u32); }
            let (mut a, mut b) = (Stats::default(), Stats::default());
            for (i, &x) in xs[..split].iter().enumerate() { a.add(x, i as u32); }
            for (i, &x) in xs[split..].iter().enumerate() { b.add(x, (i + split) as u32); }
            a.merge(&b);
            prop_assert_eq!(a.count, all.count);
            prop_assert_eq!(a.min, all.min);
            prop_assert_eq!(a.max, all.max);
            prop_assert_eq!(a.bins, all.bins);
            prop_assert!((a.mean - all.mean).abs() <= 1e-6 * all.mean.abs().max(1.0));
            prop_assert!((a.variance() - all.variance()).abs() <= 1e-6 * all.variance().max(1.0));
        }
    }

    #[test]
    fn bins() {
        assert_eq!(bin_of(0), 0);
        assert_eq!(bin_of(3), 0);
        assert_eq!(bin_of(4), 1);
        assert_eq!(bin_of(1_000), 4);
        assert_eq!(bin_of(u64::MAX), BINS - 1);
        assert_eq!(fmt_ns(12_100.0), "12.1us");
    }
}
