//! What a replay counts and reports: ops and bytes per layer and op, time split, lateness,
//! and the comparison with the trace's own totals and wall time.

use crate::clock::Lateness;
use crate::layout::LayoutNote;
use crate::predict::{ComputeSpread, Prediction};
use rsd::op::{Layer, Op};
use rsd::timing::fmt_ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Count and bytes of one operation on one rank.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpCount {
    /// Calls (issued plus credited).
    pub count: u64,
    /// File bytes moved.
    pub bytes: u64,
    /// Calls credited without being issued: POSIX calls nested in an MPI-IO call (the MPI-IO
    /// call produces them), or MPI-IO calls under `--layer posix`.
    pub credited: u64,
}

/// Everything one rank measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankStats {
    /// The rank.
    pub rank: u32,
    /// Per-op totals.
    pub ops: BTreeMap<Op, OpCount>,
    /// Time from the rank's start to its last event, ns.
    pub time_ns: u64,
    /// Time from the rank's start to the end of its replayed `MPI_Init` (where every rank
    /// leaves it together), ns; `None` without one. The traced wall time starts there.
    #[serde(default)]
    pub before_init_ns: Option<u64>,
    /// Time inside I/O calls, ns.
    pub io_ns: u64,
    /// Time spent in compute gaps, ns.
    pub compute_ns: u64,
    /// The compute the trace asked for under `--compute`, summed over the gaps before
    /// scaling: each gap's planned wait, or its CPU work under `work` ([`Self::compute_ns`]
    /// is what waiting it out took here), ns.
    #[serde(default)]
    pub compute_plan_ns: u64,
    /// Time in communication (real calls or their delays), ns.
    pub comm_ns: u64,
    /// Lateness of I/O calls against their planned issue time.
    pub lateness: Lateness,
    /// Calls that failed when replayed (the trace recorded them succeeding).
    pub failed: u64,
    /// The first few failures, for the report.
    pub failures: Vec<String>,
    /// When the first of them happened, ns from the rank's start: the report lists the
    /// ranks that failed first ahead of the cascade that follows (one rank's early end fails
    /// every call that waited for it, on all ranks).
    #[serde(default)]
    pub first_failure_ns: Option<u64>,
    /// Traced O_DIRECT transfers issued through the page cache: not aligned as this file
    /// system's direct I/O needs, or on a file system that refuses O_DIRECT.
    #[serde(default)]
    pub buffered_direct: u64,
    /// Why the first of them was.
    #[serde(default)]
    pub buffered_direct_why: Option<String>,
    /// Measured I/O dependencies this rank honoured ([`crate::deps`]): one per call that
    /// waited and rank it waited for.
    #[serde(default)]
    pub io_dep_waits: u64,
    /// Those where the other rank's calls had not all ended yet, so that this rank waited.
    #[serde(default)]
    pub io_dep_blocked: u64,
    /// Time spent waiting for them, ns.
    #[serde(default)]
    pub io_dep_wait_ns: u64,
}

/// How many failure messages a rank keeps.
const KEEP_FAILURES: usize = 5;

impl RankStats {
    /// Counts one call.
    pub fn count(&mut self, op: Op, bytes: u64, credited: bool) {
        let c = self.ops.entry(op).or_default();
        c.count += 1;
        c.bytes += bytes;
        if credited {
            c.credited += 1;
        }
    }

    /// Records a failed call, `at_ns` from the rank's start.
    pub fn fail(&mut self, at_ns: u64, msg: String) {
        self.failed += 1;
        self.first_failure_ns.get_or_insert(at_ns);
        if self.failures.len() < KEEP_FAILURES {
            self.failures.push(msg);
        }
    }
}

/// Up to `keep` failure messages, from the ranks whose first failure came earliest (time from
/// leaving `MPI_Init` where every rank has one, so that ranks' clocks agree): the first
/// failure names the cause, the later ones are mostly its cascade.
fn first_failures(ranks: &[RankStats], keep: usize) -> Vec<String> {
    let aligned = ranks.iter().all(|s| s.before_init_ns.is_some());
    let mut failing: Vec<(u64, &RankStats)> = ranks
        .iter()
        .filter_map(|s| {
            let before = if aligned {
                s.before_init_ns.unwrap_or(0)
            } else {
                0
            };
            Some((s.first_failure_ns?.saturating_sub(before), s))
        })
        .collect();
    failing.sort_by_key(|&(t, s)| (t, s.rank));
    failing
        .iter()
        .flat_map(|(_, s)| s.failures.iter().map(|f| format!("rank {}: {f}", s.rank)))
        .take(keep)
        .collect()
}

/// One row of the per-op table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    /// Layer name.
    pub layer: &'static str,
    /// Call name.
    pub op: &'static str,
    /// Calls.
    pub count: u64,
    /// File bytes.
    pub bytes: u64,
    /// Calls credited, not issued.
    pub credited: u64,
    /// Calls and bytes in the trace (`iotrex stats`).
    pub trace_count: u64,
    /// Bytes in the trace.
    pub trace_bytes: u64,
}

/// Min, mean and max over ranks, ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: u64,
}

/// Lateness percentiles, ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatenessView {
    /// I/O calls timed.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
    /// Shares issued within 10, 50 and 100 µs of their planned time.
    pub within_10us: f64,
    /// See `within_10us`.
    pub within_50us: f64,
    /// See `within_10us`.
    pub within_100us: f64,
}

/// The replay's summary, printed by rank 0 and written with `--json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// `threads` or `mpi`.
    pub mode: String,
    /// Ranks replayed.
    pub ranks: u32,
    /// Wall time of the replay, ns: from the end of the replayed `MPI_Init` where the trace
    /// has one (as the traced wall time), else from the start.
    pub wall_ns: u64,
    /// The replayed time before `MPI_Init`'s end (the program's start-up), left out of
    /// [`Self::wall_ns`], ns; `None` for a trace without `MPI_Init`.
    pub before_init_ns: Option<u64>,
    /// Per-rank replay time (from `MPI_Init`'s end, as [`Self::wall_ns`]).
    pub rank_time: Spread,
    /// Time in I/O, summed over ranks, ns.
    pub io_ns: u64,
    /// Time in compute gaps, summed over ranks, ns.
    pub compute_ns: u64,
    /// The compute the trace asked for, summed over ranks, ns ([`RankStats::compute_plan_ns`]).
    pub compute_plan_ns: u64,
    /// Time in communication, summed over ranks, ns.
    pub comm_ns: u64,
    /// How non-I/O MPI calls were replayed (the default chosen by [`crate::check_matching`]
    /// when `--comm` was not given). Set with [`Report::against`].
    pub comm: crate::CommMode,
    /// How compute gaps were replayed (`--compute`, or the default's choice,
    /// [`crate::compute_choice::choose`]). Set with [`Report::against`].
    pub compute: crate::ComputeMode,
    /// Why the default chose `work`, or `mean` though ranks shared cores (an extrapolated
    /// trace); `None` when `--compute` was given or no rank shared a core.
    pub compute_note: Option<String>,
    /// Per layer and op.
    pub ops: Vec<OpRow>,
    /// Lateness of I/O calls.
    pub lateness: LatenessView,
    /// The traced run's wall time, ns (0 if the trace does not say).
    pub traced_wall_ns: u64,
    /// Replay wall time against the traced wall time, percent.
    pub vs_traced_pct: Option<f64>,
    /// The trace is extrapolated (its header holds a prediction): its wall time is predicted,
    /// not traced, and the text says "vs predicted". Set with [`Report::against`].
    pub predicted: Option<rsd::timing::Predicted>,
    /// Calls that failed when replayed.
    pub failed: u64,
    /// The first failures.
    pub failures: Vec<String>,
    /// Ops whose replayed count or bytes differ from the trace's.
    pub mismatches: Vec<String>,
    /// Traced O_DIRECT transfers issued through the page cache (see
    /// [`RankStats::buffered_direct`]), summed over ranks.
    pub buffered_direct: u64,
    /// Why the first of them was, with its rank.
    pub buffered_direct_why: Option<String>,
    /// How delays were waited out: `spin` (sleep, then spin for the last 200 µs) or `sleep`
    /// (more ranks on this node than cores: sleep, then yield), with the ranks and cores seen.
    /// Sleeping ranks wake tens of microseconds late, and lateness shows it.
    pub waits: String,
    /// The I/O dependencies `iotrex sensitivity` measured (the header's `sensitivity`), as
    /// `from->to` pairs of ranks.
    pub io_dependencies: Vec<String>,
    /// Whether and how they were honoured ([`crate::deps`]).
    pub io_deps: IoDepsNote,
    /// Where the ranks ran against where the traced ones did.
    pub layout: Option<LayoutNote>,
    /// The predicted run time of the application on the storage replayed on, with its
    /// interval ([`Report::predict`]).
    pub prediction: Option<Prediction>,
    /// The compute time's spread the prediction's interval adds (set by [`Report::against`]).
    #[serde(skip)]
    pub compute_spread: Option<ComputeSpread>,
}

/// What the replay did with the measured I/O dependencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IoDepsNote {
    /// Why they were not honoured (`None`: honoured, or there are none).
    pub not_honoured: Option<String>,
    /// Dependencies of groups of several ranks, said and not honoured.
    pub groups_left: usize,
    /// Waits, summed over ranks ([`RankStats::io_dep_waits`]).
    pub waits: u64,
    /// Waits that blocked ([`RankStats::io_dep_blocked`]).
    pub blocked: u64,
    /// Time waited, summed over ranks, ns.
    pub wait_ns: u64,
}

impl IoDepsNote {
    /// The report's line about them, after the list of pairs.
    fn render(&self) -> String {
        match &self.not_honoured {
            Some(why) => format!("not honoured: {why}"),
            None => {
                let mut s = format!(
                    "honoured: {} waits, {} of them blocked, {} in all",
                    self.waits,
                    self.blocked,
                    fmt_ns(self.wait_ns as f64)
                );
                if self.groups_left > 0 {
                    s += &format!(
                        "; {} dependencies on groups of ranks are not (the sensitivity's runs could not tell which member's calls were waited for)",
                        self.groups_left
                    );
                }
                s
            }
        }
    }
}

/// The fields of a replay's JSON report (`--json-out`) that other tools read back (`iotrex
/// report --replay`): the report is written from [`Report`], these are its names.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ReportHead {
    /// [`Report::mode`].
    #[serde(default)]
    pub mode: String,
    /// [`Report::ranks`].
    #[serde(default)]
    pub ranks: u32,
    /// [`Report::wall_ns`].
    #[serde(default)]
    pub wall_ns: u64,
    /// [`Report::traced_wall_ns`].
    #[serde(default)]
    pub traced_wall_ns: u64,
    /// [`Report::predicted`].
    #[serde(default)]
    pub predicted: Option<rsd::timing::Predicted>,
    /// [`Report::layout`].
    #[serde(default)]
    pub layout: Option<LayoutNote>,
    /// [`Report::prediction`].
    #[serde(default)]
    pub prediction: Option<Prediction>,
}

impl Report {
    /// Records what the replay is compared with: an extrapolated trace's predicted wall time
    /// (with its interval) or a traced one.
    /// It also keeps the spread of the compute time that a replay of `tf` with `opts` waits
    /// out, for the prediction's interval.
    pub fn against(&mut self, tf: &rsd::TraceFile, opts: &crate::Options) {
        self.predicted = tf.header.prediction.as_ref().map(|p| p.wall);
        self.comm = opts.comm;
        self.compute = opts.compute;
        self.compute_note = opts.compute_note.clone();
        self.io_dependencies = tf.header.sensitivity.as_ref().map_or_else(Vec::new, |s| {
            s.pairs().iter().map(|(a, b)| format!("{a}->{b}")).collect()
        });
        self.io_deps.not_honoured = if !opts.io_deps {
            Some("--ignore-io-deps".into())
        } else {
            crate::deps::not_honoured(tf, self.ranks).map(str::to_string)
        };
        self.io_deps.groups_left =
            crate::deps::IoDeps::of(tf, self.ranks).map_or(0, |d| d.groups_left);
        self.compute_spread = Some(ComputeSpread::of(tf, self.ranks, opts));
    }

    /// The report of the median of `reports` (the replays of one `--repeat`, at least one),
    /// with the prediction from all of them.
    pub fn of_repeats(mut reports: Vec<Report>) -> Report {
        let walls: Vec<u64> = reports.iter().map(|r| r.wall_ns).collect();
        let mut r = reports.swap_remove(crate::predict::median_index(&walls));
        r.predict(&walls);
        r
    }

    /// Adds the prediction from the wall times of every replay of a `--repeat` (this report's
    /// own among them).
    pub fn predict(&mut self, walls: &[u64]) {
        let spread = self.compute_spread.clone().unwrap_or_default();
        self.prediction = Some(Prediction::new(walls, spread));
    }

    /// Builds the report from every rank's stats and the trace's own totals.
    pub fn build(
        mode: &str,
        ranks: &[RankStats],
        wall_ns: u64,
        traced_wall_ns: u64,
        trace: &rsd_view::stats::Summary,
    ) -> Report {
        let mut ops: BTreeMap<Op, OpCount> = BTreeMap::new();
        let mut lat = Lateness::default();
        let mut r = Report {
            mode: mode.into(),
            ranks: ranks.len() as u32,
            wall_ns,
            traced_wall_ns,
            ..Report::default()
        };
        for s in ranks {
            for (op, c) in &s.ops {
                let t = ops.entry(*op).or_default();
                t.count += c.count;
                t.bytes += c.bytes;
                t.credited += c.credited;
            }
            lat.merge(&s.lateness);
            r.io_ns += s.io_ns;
            r.compute_ns += s.compute_ns;
            r.compute_plan_ns += s.compute_plan_ns;
            r.comm_ns += s.comm_ns;
            r.failed += s.failed;
            r.buffered_direct += s.buffered_direct;
            r.io_deps.waits += s.io_dep_waits;
            r.io_deps.blocked += s.io_dep_blocked;
            r.io_deps.wait_ns += s.io_dep_wait_ns;
            if r.buffered_direct_why.is_none()
                && let Some(w) = &s.buffered_direct_why
            {
                r.buffered_direct_why = Some(format!("rank {}: {w}", s.rank));
            }
        }
        r.failures = first_failures(ranks, 10);
        // Every rank leaves the replayed MPI_Init together; the latest of them is where the
        // wall time starts, when all ranks have one.
        if !ranks.is_empty() && ranks.iter().all(|s| s.before_init_ns.is_some()) {
            let before = ranks.iter().filter_map(|s| s.before_init_ns).max();
            r.before_init_ns = before;
            r.wall_ns = wall_ns.saturating_sub(before.unwrap_or(0));
        }
        let times: Vec<u64> = ranks
            .iter()
            .map(|s| {
                let before = r.before_init_ns.and(s.before_init_ns).unwrap_or(0);
                s.time_ns.saturating_sub(before)
            })
            .collect();
        if !times.is_empty() {
            r.rank_time = Spread {
                min: *times.iter().min().expect("non-empty"),
                mean: times.iter().sum::<u64>() as f64 / times.len() as f64,
                max: *times.iter().max().expect("non-empty"),
            };
        }
        let mut keys: Vec<(Layer, Op)> = ops.keys().map(|o| (o.layer(), *o)).collect();
        keys.extend(trace.ops.keys().copied());
        keys.sort();
        keys.dedup();
        for (layer, op) in keys {
            let c = ops.get(&op).copied().unwrap_or_default();
            let t = trace.ops.get(&(layer, op)).cloned().unwrap_or_default();
            if c.count != t.count || c.bytes != t.bytes {
                r.mismatches.push(format!(
                    "{} {}: replayed {} calls / {} bytes, trace has {} / {}",
                    layer.name(),
                    op.name(),
                    c.count,
                    c.bytes,
                    t.count,
                    t.bytes
                ));
            }
            r.ops.push(OpRow {
                layer: layer.name(),
                op: op.name(),
                count: c.count,
                bytes: c.bytes,
                credited: c.credited,
                trace_count: t.count,
                trace_bytes: t.bytes,
            });
        }
        let share = |n: u64| {
            if lat.count == 0 {
                0.0
            } else {
                n as f64 / lat.count as f64
            }
        };
        r.lateness = LatenessView {
            count: lat.count,
            p50: lat.quantile(0.5),
            p90: lat.quantile(0.9),
            p99: lat.quantile(0.99),
            max: lat.max,
            within_10us: share(lat.within[0]),
            within_50us: share(lat.within[1]),
            within_100us: share(lat.within[2]),
        };
        // Threads share this process; under MPI each process is one rank, and the launcher
        // says how many share the node.
        let here = if mode == "threads" { ranks.len() } else { 1 };
        let (node_ranks, cores) = crate::clock::node_load(here);
        r.waits = format!(
            "{} ({node_ranks} ranks on {cores} cores)",
            if crate::clock::oversubscribed(here) {
                "sleep"
            } else {
                "spin"
            }
        );
        if traced_wall_ns > 0 {
            r.vs_traced_pct =
                Some((r.wall_ns as f64 - traced_wall_ns as f64) / traced_wall_ns as f64 * 100.0);
        }
        r
    }

    /// The text summary.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let f = |ns: u64| fmt_ns(ns as f64);
        let _ = writeln!(
            s,
            "replay ({}, {} ranks): wall {}",
            self.mode,
            self.ranks,
            f(self.wall_ns)
        );
        if let Some(b) = self.before_init_ns {
            let _ = writeln!(
                s,
                "before MPI_Init: {} replayed, left out of the wall time as the trace leaves it \
                 out (the program's start-up)",
                f(b)
            );
        }
        if let Some(l) = &self.layout {
            let _ = writeln!(s, "layout: {}", l.text);
        }
        let _ = writeln!(
            s,
            "per-rank time: min {}  mean {}  max {}",
            f(self.rank_time.min),
            fmt_ns(self.rank_time.mean),
            f(self.rank_time.max)
        );
        let _ = writeln!(
            s,
            "time in I/O {}  compute {} (planned {})  comm {} (summed over ranks; --compute {}, --comm {})",
            f(self.io_ns),
            f(self.compute_ns),
            f(self.compute_plan_ns),
            f(self.comm_ns),
            self.compute.name(),
            self.comm.name()
        );
        if let Some(why) = &self.compute_note {
            let _ = writeln!(s, "--compute {} chosen: {why}", self.compute.name());
        }
        let _ = writeln!(
            s,
            "{:<6} {:<26} {:>10} {:>14} {:>9}",
            "layer", "op", "calls", "bytes", "credited"
        );
        for o in &self.ops {
            let _ = writeln!(
                s,
                "{:<6} {:<26} {:>10} {:>14} {:>9}",
                o.layer, o.op, o.count, o.bytes, o.credited
            );
        }
        let l = &self.lateness;
        if l.count > 0 {
            let _ = writeln!(
                s,
                "lateness of {} I/O calls: p50 {}  p90 {}  p99 {}  max {}  (within 10us {:.1}%, 50us {:.1}%, 100us {:.1}%)",
                l.count,
                f(l.p50),
                f(l.p90),
                f(l.p99),
                f(l.max),
                l.within_10us * 100.0,
                l.within_50us * 100.0,
                l.within_100us * 100.0
            );
        } else {
            let _ = writeln!(s, "lateness: not measured (--compute none or work)");
        }
        if !self.waits.is_empty() {
            let _ = writeln!(s, "waits: {}", self.waits);
        }
        match (self.vs_traced_pct, &self.predicted) {
            (Some(p), Some(pred)) => {
                let _ = writeln!(
                    s,
                    "replay vs predicted time: {p:+.1}% ({} vs {} predicted {}; the trace is \
                     extrapolated, its time was never measured){}",
                    f(self.wall_ns),
                    f(self.traced_wall_ns),
                    pred.interval,
                    if pred.interval.contains(self.wall_ns as f64) {
                        ", inside the interval"
                    } else {
                        ", outside the interval"
                    }
                );
            }
            (Some(p), None) => {
                let _ = writeln!(
                    s,
                    "replay vs traced time: {p:+.1}% ({} vs {})",
                    f(self.wall_ns),
                    f(self.traced_wall_ns)
                );
            }
            (None, _) => {
                let _ = writeln!(
                    s,
                    "replay vs traced time: n/a (the trace records no wall time)"
                );
            }
        }
        if !self.io_dependencies.is_empty() {
            let _ = writeln!(
                s,
                "I/O dependencies measured by iotrex sensitivity (rank->rank that waits for its \
                 I/O): {} ; {}",
                self.io_dependencies.join(" "),
                self.io_deps.render()
            );
        }
        if let Some(p) = &self.prediction {
            s += &p.render(self.traced_wall_ns, self.predicted.is_some());
        }
        if self.mismatches.is_empty() {
            let _ = writeln!(s, "op counts and bytes equal the trace's");
        } else {
            let _ = writeln!(s, "MISMATCH against the trace:");
            for m in &self.mismatches {
                let _ = writeln!(s, "  {m}");
            }
        }
        if self.buffered_direct > 0 {
            let _ = writeln!(
                s,
                "{} O_DIRECT transfers went through the page cache, not direct to the device \
                 (first: {})",
                self.buffered_direct,
                self.buffered_direct_why.as_deref().unwrap_or("?")
            );
        }
        if self.failed > 0 {
            let _ = writeln!(s, "{} calls failed when replayed:", self.failed);
            for m in &self.failures {
                let _ = writeln!(s, "  {m}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(n: u32) -> Vec<RankStats> {
        (0..n)
            .map(|rank| RankStats {
                rank,
                ..RankStats::default()
            })
            .collect()
    }

    #[test]
    fn waits_say_how_delays_were_waited() {
        let summary = rsd_view::stats::Summary::default();
        // More rank threads than any test machine has cores: they sleep.
        let r = Report::build("threads", &ranks(4096), 1, 0, &summary);
        assert!(r.waits.starts_with("sleep (4096 ranks on "), "{}", r.waits);
        assert!(r.render().contains("waits: sleep"), "{}", r.render());
        // Under MPI each process is one rank, so the node's count comes from the launcher.
        let r = Report::build("mpi", &ranks(4096), 1, 0, &summary);
        let (node, _) = crate::clock::node_load(1);
        assert!(
            r.waits.contains(&format!("({node} ranks on ")),
            "{}",
            r.waits
        );
    }
}
