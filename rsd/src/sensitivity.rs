//! //TRACE's throttling (Mesnier et al., FAST'07): the I/O of chosen ranks is delayed in
//! repeated runs, and which other ranks slow down says which ranks' progress depends on
//! which rank's I/O. This module is the one place that knows the tracer's variable and its
//! syntax ([`Throttle`]), the result stored in the header ([`Sensitivity`], minor version 12)
//! and how a result is derived from the runs' timelines ([`analyze`]).

use serde::{Deserialize, Serialize};

/// The variable `iotrex sensitivity` sets for the ranks: `DELAY_NS@RANKS` or
/// `DELAY_NS/BYTES_PER_S@RANKS`, `RANKS` being `all` or a rank list (`0-3`, `1,5`, as
/// [`crate::RankSet::parse`]). Absent: no delay.
pub const THROTTLE_VAR: &str = "IOTREX_THROTTLE";

/// What [`THROTTLE_VAR`] asks of the tracer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// Added before each I/O call the application makes, ns.
    pub delay_ns: u64,
    /// A bandwidth each I/O call is held to, bytes/s (0: none): a call that moved `b` bytes
    /// is followed by a sleep of `b` / this, as if the storage had lost that bandwidth.
    pub bps: u64,
    /// The ranks whose I/O is delayed; `None`: all.
    pub ranks: Option<Vec<u32>>,
}

impl Throttle {
    /// The variable's value.
    pub fn to_var(&self) -> String {
        let what = match self.bps {
            0 => self.delay_ns.to_string(),
            bps => format!("{}/{bps}", self.delay_ns),
        };
        match &self.ranks {
            None => format!("{what}@all"),
            Some(r) => {
                let list: Vec<String> = r.iter().map(u32::to_string).collect();
                format!("{what}@{}", list.join(","))
            }
        }
    }

    /// Parses the variable's value.
    pub fn parse(s: &str) -> Result<Throttle, String> {
        let bad = || {
            format!(
                "bad {THROTTLE_VAR} `{s}`: use DELAY_NS@all, DELAY_NS@0,2-3 or DELAY_NS/BYTES_PER_S@all"
            )
        };
        let (d, r) = s.trim().split_once('@').ok_or_else(bad)?;
        let (d, bps) = match d.split_once('/') {
            Some((d, b)) => (d, b.trim().parse::<u64>().map_err(|_| bad())?),
            None => (d, 0),
        };
        let delay_ns = d.trim().parse::<u64>().map_err(|_| bad())?;
        let ranks = match r.trim() {
            "all" => None,
            list => {
                let set = crate::RankSet::parse(list).map_err(|e| format!("{}: {e}", bad()))?;
                Some(set.to_vec())
            }
        };
        Ok(Throttle {
            delay_ns,
            bps,
            ranks,
        })
    }

    /// The delay for `rank`'s I/O calls (0: none).
    pub fn delay_for(&self, rank: u32) -> u64 {
        if self.applies_to(rank) {
            self.delay_ns
        } else {
            0
        }
    }

    /// The bandwidth `rank`'s I/O calls are held to, bytes/s (0: none).
    pub fn bps_for(&self, rank: u32) -> u64 {
        if self.applies_to(rank) { self.bps } else { 0 }
    }

    fn applies_to(&self, rank: u32) -> bool {
        self.ranks.as_ref().is_none_or(|r| r.contains(&rank))
    }
}

/// The sleep after an I/O call that moved `bytes`, held to `bps` bytes/s, ns.
pub fn bandwidth_delay_ns(bytes: u64, bps: u64) -> u64 {
    if bps == 0 {
        return 0;
    }
    (u128::from(bytes) * 1_000_000_000 / u128::from(bps)).min(u128::from(u64::MAX)) as u64
}

/// The run with every rank's I/O held to a bandwidth (`iotrex sensitivity --bandwidth`):
/// the header's `sensitivity.bandwidth`, minor version 13.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandwidthRun {
    /// The bandwidth each I/O call was held to: it was followed by a sleep of its bytes over
    /// this, bytes/s.
    pub bps: u64,
    /// The program's wall time so (median of the repeats), ns.
    pub wall_ns: u64,
    /// The most bytes one rank's I/O calls moved: its added time was this over `bps`.
    pub max_bytes: u64,
}

impl BandwidthRun {
    /// One rank's added time: its bytes over the bandwidth, ns.
    pub fn added_ns(&self) -> u64 {
        bandwidth_delay_ns(self.max_bytes, self.bps)
    }
}

/// What `iotrex sensitivity` found, stored as the header's `sensitivity` (minor version 12).
/// A MessagePack array in field order, as the header: a field added later goes at the end
/// with `#[serde(default)]` and a new minor version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// The delay added before each delayed I/O call, ns.
    pub delay_ns: u64,
    /// Runs of the program made in all (baseline, each group, all ranks; times repeats).
    pub runs: u32,
    /// The groups of ranks whose I/O was delayed one group per run, in order.
    pub groups: Vec<Vec<u32>>,
    /// The program's wall time without delay (median of the repeats), ns.
    pub base_ns: u64,
    /// Its wall time with every rank's I/O delayed (median), ns.
    pub all_ns: u64,
    /// The most I/O calls one rank made: the added latency of one rank is this times the
    /// delay.
    pub max_calls: u32,
    /// Which rank's I/O which rank's progress waited for, after transitive reduction.
    pub deps: Vec<Dependency>,
    /// The run with every rank's I/O held to a bandwidth, when measured (minor version 13;
    /// left out of the file when absent, so that a result without it keeps minor 12's bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<BandwidthRun>,
}

/// Rank `to`'s I/O call number `at` (0-based, counting its I/O calls) started only after the
/// first `after` I/O calls of the ranks `from` had ended: delaying each of those by `d`
/// delayed it by `after * d`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// The delayed group (one rank when the groups are single ranks).
    pub from: Vec<u32>,
    /// The rank that waited.
    pub to: u32,
    /// How many of `from`'s I/O calls it waited for.
    pub after: u32,
    /// Which of `to`'s I/O calls waited (0-based).
    pub at: u32,
}

impl Sensitivity {
    /// Run-time growth per unit of added latency per call: (all − base) / delay, the number of
    /// delayed calls one after another on the run's critical path.
    pub fn calls_on_path(&self) -> f64 {
        (self.all_ns as f64 - self.base_ns as f64) / self.delay_ns.max(1) as f64
    }

    /// [`Self::calls_on_path`] over the most calls one rank made: 1 when the run grew by one
    /// rank's added latency, above 1 when ranks' I/O is serialised, below where it overlaps.
    pub fn growth_per_latency(&self) -> f64 {
        self.calls_on_path() / f64::from(self.max_calls.max(1))
    }

    /// Run-time growth per lost bandwidth: how much the run grew with every rank's I/O held
    /// to the bandwidth, over one rank's added time (its bytes over the bandwidth): 1 when the
    /// run grew by the busiest rank's added transfer time, above 1 when ranks' transfers are
    /// serialised, below when they overlap compute or each other. `None`: not measured.
    pub fn growth_per_bandwidth(&self) -> Option<f64> {
        let b = self.bandwidth.as_ref()?;
        Some((b.wall_ns as f64 - self.base_ns as f64) / b.added_ns().max(1) as f64)
    }

    /// The ordered pairs (from, to) of single-rank dependencies, deduplicated.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        let mut p: Vec<(u32, u32)> = self
            .deps
            .iter()
            .filter(|d| d.from.len() == 1)
            .map(|d| (d.from[0], d.to))
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// One line per dependency group, for `show` and `report`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "I/O delayed {:.1} ms per call in {} runs: run time {:.3} s -> {:.3} s with every rank delayed ({:.1} delayed calls on the critical path, {:.2}x one rank's added latency)",
            self.delay_ns as f64 / 1e6,
            self.runs,
            self.base_ns as f64 / 1e9,
            self.all_ns as f64 / 1e9,
            self.calls_on_path(),
            self.growth_per_latency()
        )];
        if let (Some(b), Some(g)) = (&self.bandwidth, self.growth_per_bandwidth()) {
            out.push(format!(
                "I/O held to {:.1} MiB/s: run time {:.3} s -> {:.3} s, {:.2}x the busiest rank's added transfer time ({:.3} s for {:.1} MiB)",
                b.bps as f64 / 1048576.0,
                self.base_ns as f64 / 1e9,
                b.wall_ns as f64 / 1e9,
                g,
                b.added_ns() as f64 / 1e9,
                b.max_bytes as f64 / 1048576.0
            ));
        }
        if self.deps.is_empty() {
            out.push("no rank waited for another rank's I/O".into());
        }
        for d in &self.deps {
            out.push(format!(
                "rank {} I/O call {} waits for {} {}'s first {} I/O call(s)",
                d.to,
                d.at,
                if d.from.len() == 1 { "rank" } else { "ranks" },
                crate::RankSet::from_sorted(&d.from),
                d.after
            ));
        }
        out
    }
}

/// When each I/O call of one rank started, ns from the rank's anchor (the end of `MPI_Init`).
pub type Timeline = Vec<u64>;

/// A delayed call's lateness is read as `round(e / delay)` delayed calls, with `e` the
/// difference of two medians of starts, each off by up to the run-to-run spread: below
/// this many spreads the delay is refused, as a wrong count of waits is then possible.
pub const NOISE_REFUSE_FACTOR: u64 = 2;
/// `--delay auto` takes the delay as this many spreads: twice what the rounding needs, for
/// noise the few baseline runs did not show.
pub const NOISE_AUTO_FACTOR: u64 = 4;
/// The least delay `--delay auto` takes, however quiet the baselines: a sleep shorter than
/// this is within the kernel's timer slack and the tracer's own cost.
pub const MIN_AUTO_DELAY_NS: u64 = 1_000_000;

/// The run-to-run noise of the baselines (`runs[i][rank]` is run `i`'s timeline of `rank`):
/// the largest spread (latest less earliest) of one call's start over the runs, ns, over the
/// calls every run made. `None` with fewer than two runs.
pub fn start_spread<T: AsRef<[Timeline]>>(runs: &[T]) -> Option<u64> {
    if runs.len() < 2 {
        return None;
    }
    let nranks = runs.iter().map(|x| x.as_ref().len()).min().unwrap_or(0);
    let mut most = 0u64;
    for r in 0..nranks {
        let calls = runs.iter().map(|x| x.as_ref()[r].len()).min().unwrap_or(0);
        for k in 0..calls {
            let (lo, hi) = runs.iter().fold((u64::MAX, 0), |(lo, hi), x| {
                let t = x.as_ref()[r][k];
                (lo.min(t), hi.max(t))
            });
            most = most.max(hi - lo);
        }
    }
    Some(most)
}

/// The delay the noise asks for under `--delay auto`.
pub fn auto_delay_ns(spread_ns: u64) -> u64 {
    (spread_ns.saturating_mul(NOISE_AUTO_FACTOR)).max(MIN_AUTO_DELAY_NS)
}

/// Whether `delay_ns` is too short for the runs to count waits with a spread of `spread_ns`.
pub fn delay_below_noise(delay_ns: u64, spread_ns: u64) -> bool {
    delay_ns <= spread_ns.saturating_mul(NOISE_REFUSE_FACTOR)
}

/// The dependencies the runs show. `base[r]` is rank `r`'s timeline without delay; each run
/// gives the delayed group and every rank's timeline with it. A call of rank `r` that started
/// later by `k * delay` (rounded, beyond `r`'s own delays) than in the baseline waited for
/// `k` delayed calls of the group; the dependency on the group arises at the first call
/// where `k` grows. Dependencies implied by others through a third rank are left out (rank 2
/// waits for rank 0 only through rank 1 in a token chain).
pub fn analyze(
    delay_ns: u64,
    base: &[Timeline],
    runs: &[(Vec<u32>, Vec<Timeline>)],
) -> Vec<Dependency> {
    // waited[g][r][k]: calls of group g that rank r's call k waited for.
    let waited: Vec<Vec<Vec<u32>>> = runs
        .iter()
        .map(|(group, tl)| waits(delay_ns, base, group, tl))
        .collect();
    let mut deps = Vec::new();
    for (g, (group, _)) in runs.iter().enumerate() {
        for (r, ks) in waited[g].iter().enumerate() {
            let r = r as u32;
            if group.contains(&r) {
                continue;
            }
            let mut prev = 0;
            for (k, &after) in ks.iter().enumerate() {
                if after > prev && !implied(runs, &waited, g, r, k, after) {
                    let reduced = to_members(base, group, &waited[g], r, k, after);
                    if reduced.is_empty() {
                        deps.push(Dependency {
                            from: group.clone(),
                            to: r,
                            after,
                            at: k as u32,
                        });
                    }
                    deps.extend(reduced);
                }
                prev = prev.max(after);
            }
        }
    }
    deps
}

/// A dependency of rank `r`'s call `k` on `after` delayed calls of a group of several ranks,
/// reduced to the members whose calls those were, where the group's run tells: a member `m`
/// had been delayed, by the end of its call `i`, by its own `i + 1` calls plus the group's
/// calls it waited for (`waited[m][i]`). A wait of `r` for `after` delays ended with the call
/// of a member whose delay had then reached `after`, and that started before `r`'s call `k` in
/// the baseline. Every member that fits is kept (the ranks of a barrier all do); a member's
/// delay grows by at least one a call, so at most one of its calls fits. None fitting (noise
/// between the runs): empty, and the dependency stays the group's. A single rank: empty.
fn to_members(
    base: &[Timeline],
    group: &[u32],
    waited: &[Vec<u32>],
    r: u32,
    k: usize,
    after: u32,
) -> Vec<Dependency> {
    if group.len() < 2 {
        return Vec::new();
    }
    let start = base.get(r as usize).and_then(|b| b.get(k)).copied();
    group
        .iter()
        .filter_map(|&m| {
            let w = waited.get(m as usize)?;
            let i = (0..w.len()).find(|&i| i as u32 + 1 + w[i] == after)?;
            let began = base.get(m as usize)?.get(i)?;
            (start? > *began).then(|| Dependency {
                from: vec![m],
                to: r,
                after: i as u32 + 1,
                at: k as u32,
            })
        })
        .collect()
}

/// For each rank, for each of its I/O calls, how many delayed calls of `group` it waited for.
fn waits(delay_ns: u64, base: &[Timeline], group: &[u32], tl: &[Timeline]) -> Vec<Vec<u32>> {
    let d = delay_ns.max(1) as f64;
    base.iter()
        .enumerate()
        .map(|(r, b)| {
            let own = group.contains(&(r as u32));
            let t = tl.get(r).map(Vec::as_slice).unwrap_or(&[]);
            let mut most = 0u32;
            b.iter()
                .zip(t)
                .enumerate()
                .map(|(k, (&b0, &t0))| {
                    // A delayed rank's own calls before `k` each added one delay.
                    let mine = if own { k as f64 * d } else { 0.0 };
                    let extra = (t0 as f64 - b0 as f64 - mine) / d;
                    // Later calls cannot have waited for fewer: noise does not undo a wait.
                    most = most.max(extra.round().max(0.0) as u32);
                    most
                })
                .collect()
        })
        .collect()
}

/// Whether rank `r`'s call `k` waiting for `after` calls of single-rank group `g` is implied
/// through another single-rank group `h`: `r`'s call `k` waited for `i` calls of `h`, and
/// `h`'s call `i - 1` (the last of those) already waited for `after` calls of `g`.
fn implied(
    runs: &[(Vec<u32>, Vec<Timeline>)],
    waited: &[Vec<Vec<u32>>],
    g: usize,
    r: u32,
    k: usize,
    after: u32,
) -> bool {
    if runs[g].0.len() != 1 {
        return false;
    }
    runs.iter().enumerate().any(|(h, (hg, _))| {
        if h == g || hg.len() != 1 || hg[0] == r || hg[0] == runs[g].0[0] {
            return false;
        }
        let i = waited[h][r as usize].get(k).copied().unwrap_or(0);
        i > 0
            && waited[g][hg[0] as usize]
                .get(i as usize - 1)
                .is_some_and(|&w| w >= after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_variable_round_trips() {
        for s in ["20000000@all", "5@0,2,3", "0/20971520@all", "3/100@1"] {
            assert_eq!(Throttle::parse(s).unwrap().to_var(), s);
        }
        let t = Throttle::parse("0/1000@1").unwrap();
        assert_eq!((t.bps_for(1), t.bps_for(0), t.delay_for(1)), (1000, 0, 0));
        assert_eq!(bandwidth_delay_ns(500, 1000), 500_000_000);
        assert_eq!(bandwidth_delay_ns(500, 0), 0);
        assert_eq!(Throttle::parse("7@1-2").unwrap().delay_for(2), 7);
        assert_eq!(Throttle::parse("7@1-2").unwrap().delay_for(0), 0);
        for bad in ["", "7", "x@all", "7@", "7@a", "7/x@all", "/5@all"] {
            assert!(Throttle::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bandwidth_is_left_out_when_absent_and_read_back_when_present() {
        let mut s = Sensitivity {
            delay_ns: 5,
            deps: vec![Dependency {
                from: vec![0],
                to: 1,
                after: 2,
                at: 0,
            }],
            ..Sensitivity::default()
        };
        // Without it, minor 12's array of seven fields, byte for byte.
        let bytes = rmp_serde::to_vec(&s).unwrap();
        assert_eq!(bytes[0], 0x97);
        assert_eq!(rmp_serde::from_slice::<Sensitivity>(&bytes).unwrap(), s);
        s.bandwidth = Some(BandwidthRun {
            bps: 1 << 20,
            wall_ns: 3_000_000_000,
            max_bytes: 1 << 21,
        });
        s.base_ns = 1_000_000_000;
        let bytes = rmp_serde::to_vec(&s).unwrap();
        assert_eq!(bytes[0], 0x98);
        assert_eq!(rmp_serde::from_slice::<Sensitivity>(&bytes).unwrap(), s);
        assert_eq!(s.growth_per_bandwidth(), Some(1.0));
        assert!(
            s.lines()[1].contains("I/O held to 1.0 MiB/s"),
            "{:?}",
            s.lines()
        );
    }

    #[test]
    fn the_noise_is_the_widest_spread_of_a_calls_start() {
        let a = vec![vec![0, 100], vec![50]];
        let b = vec![vec![10, 130], vec![40, 999]];
        assert_eq!(start_spread(std::slice::from_ref(&a)), None);
        assert_eq!(start_spread(&[a.clone(), b.clone()]), Some(30));
        assert_eq!(auto_delay_ns(30), MIN_AUTO_DELAY_NS);
        assert_eq!(auto_delay_ns(5_000_000), 20_000_000);
        assert!(delay_below_noise(10_000_000, 5_000_000));
        assert!(!delay_below_noise(10_000_001, 5_000_000));
    }

    /// A token chain of 3 ranks, 2 reads each, d = 10: rank r reads after rank r-1's reads.
    fn chain(delayed: Option<u32>) -> Vec<Timeline> {
        let d = 10u64;
        let mut t = 0u64;
        let mut out = Vec::new();
        for r in 0..3u32 {
            let mut tl = Vec::new();
            for _ in 0..2 {
                tl.push(t);
                t += 1 + if delayed == Some(r) { d } else { 0 };
            }
            out.push(tl);
        }
        out
    }

    /// The chain's runs with ranks 0 and 1 delayed together: rank 2's first read waited for
    /// 4 delays, rank 0's 2 reads and rank 1's 2 reads after them, which were rank 1's: the
    /// group's dependency is rank 1's, reduced. Rank 0's own 2 delays fit no such wait.
    #[test]
    fn a_group_dependency_reduces_to_the_member_whose_calls_were_waited_for() {
        let d = 10u64;
        let mut t = 0u64;
        let mut tl = Vec::new();
        for r in 0..3u32 {
            let mut calls = Vec::new();
            for _ in 0..2 {
                calls.push(t);
                t += 1 + if r < 2 { d } else { 0 };
            }
            tl.push(calls);
        }
        let deps = analyze(10, &chain(None), &[(vec![0, 1], tl)]);
        assert_eq!(
            deps,
            vec![Dependency {
                from: vec![1],
                to: 2,
                after: 2,
                at: 0
            }]
        );
        // Both members ended their calls when the waiting rank went on (a barrier): both kept.
        let base = vec![vec![0, 1], vec![0, 1], vec![5]];
        let runs = vec![(vec![0, 1], vec![vec![0, 11], vec![0, 11], vec![25]])];
        let pairs: Vec<_> = analyze(10, &base, &runs)
            .iter()
            .map(|d| (d.from.clone(), d.after))
            .collect();
        assert_eq!(pairs, vec![(vec![0], 2), (vec![1], 2)]);
    }

    #[test]
    fn a_token_chain_reduces_to_its_links() {
        let runs: Vec<_> = (0..3).map(|s| (vec![s], chain(Some(s)))).collect();
        let deps = analyze(10, &chain(None), &runs);
        let pairs: Vec<_> = deps
            .iter()
            .map(|d| (d.from[0], d.to, d.after, d.at))
            .collect();
        assert_eq!(pairs, vec![(0, 1, 2, 0), (1, 2, 2, 0)]);
    }
}
