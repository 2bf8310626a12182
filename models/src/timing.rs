//! Fits of timing statistics against the rank count, chosen out of sample.
//!
//! Timing is the one approximate quantity in an extrapolated trace. Each statistic (a mean
//! duration, a compute gap, a part of the wall time) is observed at a few scales, possibly
//! several times per scale (repeated runs), and is noisy. An in-sample fitness measure picks
//! the most flexible curve through four noisy points, which then explodes far from them
//!. So here:
//!
//! - **Families**: constant, inverse `k/n`, linear, inverse plus constant, `a*log2 n + b`,
//!   `a*n*log2 n + b`, power law `a*n^b` and quadratic, fitted by least squares (nalgebra's
//!   SVD; the power law in log space).
//! - **Choice by leave-one-scale-out error**: each family is refitted with every scale held
//!   out in turn and scored by its relative error at the held-out scale. Within a parameter
//!   count the lowest score wins; a family with more parameters replaces a simpler one only
//!   when its score is clearly better (below [`CLEARLY_BETTER`] times the simpler one's) and
//!   the simpler one is not adequate: its held-out error exceeds the noise (the spread of
//!   repeated runs at one scale, or of the repeated calls behind a mean). Where the noise is
//!   larger than the trend, the simplest adequate family wins.
//! - The interval also spans the predictions of the plausible families the inputs cannot tell
//!   from the choice (held-out error not clearly worse): that is where the truth may lie.
//! - **Stalls**: with three or more runs per scale, a run more than [`STALL`] times from its
//!   scale's median is left out (a loaded machine's stall, not the program's time).
//! - **Plausibility** over the whole range from the inputs to the target: finite, non-negative,
//!   and growing no faster than the data support (`n^e` with `e` the data's own log-log slope
//!   in `[1, 2]` as far as the inputs reach, linear beyond: [`growth_bound`]); a refused
//!   family gives way to the next, and the refusal is reported.
//! - **Prediction interval**: log-normal around the prediction, its width from the held-out
//!   error (grown with the distance to the target in doublings) and the noise, spanning the
//!   plausible families not clearly worse, never above the growth bound. A sum of parts (the
//!   wall time) combines its parts' intervals in quadrature, widened to its own held-out
//!   error but never beyond its parts' extremes added up ([`sum_interval`]).

use nalgebra::{DMatrix, DVector};
use serde::Serialize;
use std::fmt;

/// A more flexible family replaces a simpler one only when its held-out error is below this
/// fraction of the simpler one's.
pub const CLEARLY_BETTER: f64 = 0.7;
/// Half-width of the prediction interval in standard deviations (log scale).
pub const INTERVAL_Z: f64 = 2.0;
/// Slack of the growth bound: a model may reach this multiple of the bound `y_max*(n/N)^e`.
const GROWTH_SLACK: f64 = 2.0;
/// Within a parameter count, a later family replaces an earlier one below this fraction of its
/// held-out error.
const SAME_COUNT_BETTER: f64 = 0.9;
/// Held-out errors closer than this are equal (floating-point residue of exact laws).
const EXACT: f64 = 1e-6;

/// The timing model families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingModel {
    /// `c`.
    Constant,
    /// `a*n + b`.
    Linear,
    /// `k/n`.
    Inverse,
    /// `k/n + c`.
    InverseConstant,
    /// `a*n^2 + b*n + c`.
    Quadratic,
    /// `a*log2(n) + b`.
    Log,
    /// `a*n*log2(n) + b`.
    NLogN,
    /// `a*n^b`.
    PowerLaw,
    /// `k/n + c + b*n`: work divided among the ranks, a fixed part, and the wait for the
    /// other ranks' time slices when ranks share cores (oversubscribed), which grows with the
    /// ranks per core. Only among the families of [`Regime::Oversubscribed`].
    InverseConstantLinear,
}

impl TimingModel {
    /// All families, simplest first (fewer parameters, then the more conservative form).
    pub const ALL: [TimingModel; 8] = [
        TimingModel::Constant,
        TimingModel::Inverse,
        TimingModel::InverseConstant,
        TimingModel::Linear,
        TimingModel::Log,
        TimingModel::PowerLaw,
        TimingModel::NLogN,
        TimingModel::Quadratic,
    ];

    /// Number of coefficients.
    pub fn nparams(self) -> usize {
        match self {
            TimingModel::Constant | TimingModel::Inverse => 1,
            TimingModel::Quadratic | TimingModel::InverseConstantLinear => 3,
            _ => 2,
        }
    }

    /// The regressors of the linear families (the power law is fitted in log space): the
    /// first [`TimingModel::nparams`] entries, zeros after. An array, not a `Vec`: the fits
    /// and the plausibility checks evaluate it hundreds of times per quantity, and allocating
    /// each was a fifth of an extrapolation's time.
    fn terms(self, n: f64) -> [f64; 3] {
        match self {
            TimingModel::Constant => [1.0, 0.0, 0.0],
            TimingModel::Linear => [n, 1.0, 0.0],
            TimingModel::Inverse => [1.0 / n, 0.0, 0.0],
            TimingModel::InverseConstant => [1.0 / n, 1.0, 0.0],
            TimingModel::Quadratic => [n * n, n, 1.0],
            TimingModel::Log => [n.log2(), 1.0, 0.0],
            TimingModel::NLogN => [n * n.log2(), 1.0, 0.0],
            TimingModel::PowerLaw => [n.ln(), 1.0, 0.0],
            TimingModel::InverseConstantLinear => [1.0 / n, 1.0, n],
        }
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            TimingModel::Constant => "constant",
            TimingModel::Linear => "linear",
            TimingModel::Inverse => "inverse",
            TimingModel::InverseConstant => "inverse+constant",
            TimingModel::Quadratic => "quadratic",
            TimingModel::Log => "log",
            TimingModel::NLogN => "n log n",
            TimingModel::PowerLaw => "power law",
            TimingModel::InverseConstantLinear => "inverse+constant+linear",
        }
    }
}

/// The least standard deviation (relative) of a time predicted for oversubscribed runs, per
/// doubling of the rank count beyond the inputs: the spread of the per-kind errors at 32 and 64
/// ranks from 4-16 on the two saved quiet bench runs (a few % per doubling; see
/// [`Regime::least_half_width`]).
pub const OVERSUBSCRIBED_SD_PER_DOUBLING: f64 = 0.04;

/// What the runs behind a time had: which families can describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// Nothing known about cores (or one rank per core at most): every family of
    /// [`TimingModel::ALL`].
    Any,
    /// More ranks than cores at every input and at the target: the ranks share cores in time
    /// slices, so a rank's time is its own work (divided among the ranks, `k/n`, or fixed)
    /// plus the wait for the others' slices, which grows linearly with the ranks per core.
    /// The families are those sums: constant, `k/n`, `k/n + c` falling (`k >= 0`), linear and
    /// `k/n + c + b*n`. A time that grows over the inputs but levels off beyond them
    /// (`k/n + c` with `k < 0`, `log n`) or grows faster than linearly (`n log n`, `n^b` with
    /// `b > 1`, the quadratic) has no such cause: between 4 and 16 ranks on two cores they
    /// fitted the transition into oversubscription (a saturating I/O time 21% short at 64
    /// ranks, a communication time `n^1.8` 186% over), where the per-kind times at 32 and 64
    /// ranks grew linearly.
    Oversubscribed,
}

impl Regime {
    /// The candidate families, simplest first.
    pub fn families(self) -> &'static [TimingModel] {
        const OVERSUBSCRIBED: [TimingModel; 5] = [
            TimingModel::Constant,
            TimingModel::Inverse,
            TimingModel::InverseConstant,
            TimingModel::Linear,
            TimingModel::InverseConstantLinear,
        ];
        match self {
            Regime::Any => &TimingModel::ALL,
            Regime::Oversubscribed => &OVERSUBSCRIBED,
        }
    }

    /// How much better out of sample a family with more parameters must be to replace a
    /// simpler one ([`CLEARLY_BETTER`]). Among ranks sharing cores the three-parameter
    /// `k/n + c + b*n` is the sum the regime predicts, not a more flexible curve: linear is its
    /// case `k = 0`, so it needs only to be somewhat better ([`SAME_COUNT_BETTER`]).
    fn clearly_better(self) -> f64 {
        match self {
            Regime::Any => CLEARLY_BETTER,
            Regime::Oversubscribed => SAME_COUNT_BETTER,
        }
    }

    /// The narrowest prediction interval's half-width (log units) at `target`. Among ranks
    /// sharing cores, a rank's time depends on how the scheduler slices the cores, which 4 to
    /// 16 ranks do not pin down: a three-parameter law through four scales held out to 0.2%
    /// was 10% short at 64 ranks. So at least [`OVERSUBSCRIBED_SD_PER_DOUBLING`] per doubling
    /// beyond the inputs; none within them, and none in [`Regime::Any`].
    fn least_half_width(self, ns: &[f64], target: f64) -> f64 {
        match self {
            Regime::Any => 0.0,
            Regime::Oversubscribed => {
                let nmax = ns.iter().copied().fold(0.0f64, f64::max);
                let dist = if target > nmax {
                    (target / nmax).log2()
                } else {
                    0.0
                };
                (1.0 + OVERSUBSCRIBED_SD_PER_DOUBLING * dist).ln() * INTERVAL_Z
            }
        }
    }

    /// Whether a fit of one of [`families`](Self::families) has a cause in this regime.
    fn admits(self, f: &TimingFit) -> bool {
        match (self, f.model) {
            (Regime::Oversubscribed, TimingModel::InverseConstant) => f.coeffs[0] >= 0.0,
            _ => true,
        }
    }
}

/// A fitted timing model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingFit {
    /// The family.
    pub model: TimingModel,
    /// Coefficients in the order of the family's terms (power law: `a`, `b` of `a*n^b`).
    pub coeffs: Vec<f64>,
    /// Relative leave-one-scale-out error (root mean square of the held-out errors over the
    /// mean observation; lower is better, 0 is an exact law). `NaN` when not computed.
    pub fitness: f64,
}

impl TimingFit {
    /// The fitted value at `n`.
    pub fn eval(&self, n: f64) -> f64 {
        if self.model == TimingModel::PowerLaw {
            return self.coeffs[0] * n.powf(self.coeffs[1]);
        }
        self.model
            .terms(n)
            .iter()
            .take(self.model.nparams())
            .zip(&self.coeffs)
            .map(|(t, c)| t * c)
            .sum()
    }
}

impl fmt::Display for TimingFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.coeffs;
        let g = |x: f64| format!("{x:.4e}");
        match self.model {
            TimingModel::Constant => write!(f, "{}", g(c[0]))?,
            TimingModel::Linear => write!(f, "{}*n + {}", g(c[0]), g(c[1]))?,
            TimingModel::Inverse => write!(f, "{}/n", g(c[0]))?,
            TimingModel::InverseConstant => write!(f, "{}/n + {}", g(c[0]), g(c[1]))?,
            TimingModel::Quadratic => write!(f, "{}*n^2 + {}*n + {}", g(c[0]), g(c[1]), g(c[2]))?,
            TimingModel::Log => write!(f, "{}*log2(n) + {}", g(c[0]), g(c[1]))?,
            TimingModel::NLogN => write!(f, "{}*n*log2(n) + {}", g(c[0]), g(c[1]))?,
            TimingModel::PowerLaw => write!(f, "{}*n^{:.3}", g(c[0]), c[1])?,
            TimingModel::InverseConstantLinear => {
                write!(f, "{}/n + {} + {}*n", g(c[0]), g(c[1]), g(c[2]))?
            }
        }
        if self.fitness.is_finite() {
            write!(
                f,
                " ({}, held-out error {:.1}%)",
                self.model.name(),
                100.0 * self.fitness
            )
        } else {
            write!(f, " ({})", self.model.name())
        }
    }
}

/// Fits one family by least squares to `(ns[i], ys[i])` (several points may share a rank
/// count); `None` when the system is degenerate or has no more distinct rank counts than
/// coefficients (a constant needs one).
pub fn fit_model(model: TimingModel, ns: &[f64], ys: &[f64]) -> Option<TimingFit> {
    let m = model.nparams();
    let distinct = distinct_scales(ns).len();
    if ns.is_empty() || (model != TimingModel::Constant && distinct <= m) {
        return None;
    }
    solve(model, ns, ys)
}

/// The least-squares solve, with as many distinct scales as coefficients allowed (used for the
/// held-out refits).
fn solve(model: TimingModel, ns: &[f64], ys: &[f64]) -> Option<TimingFit> {
    let m = model.nparams();
    if ns.is_empty() || distinct_scales(ns).len() < m {
        return None;
    }
    if model == TimingModel::Constant {
        let mean = ys.iter().sum::<f64>() / ys.len() as f64;
        return Some(TimingFit {
            model,
            coeffs: vec![mean],
            fitness: f64::NAN,
        });
    }
    let (rows, b): (Vec<f64>, Vec<f64>) = if model == TimingModel::PowerLaw {
        // ln y = ln a + b ln n: only for positive observations.
        if ys.iter().any(|&y| y <= 0.0) {
            return None;
        }
        (ns.to_vec(), ys.iter().map(|y| y.ln()).collect())
    } else {
        (ns.to_vec(), ys.to_vec())
    };
    let a = DMatrix::from_fn(rows.len(), m, |i, j| model.terms(rows[i])[j]);
    let b = DVector::from_column_slice(&b);
    let x = a.svd(true, true).solve(&b, 1e-12).ok()?;
    let mut coeffs: Vec<f64> = x.iter().copied().collect();
    if model == TimingModel::PowerLaw {
        // Stored as a*n^b.
        coeffs = vec![coeffs[1].exp(), coeffs[0]];
    }
    if coeffs.iter().any(|c| !c.is_finite()) {
        return None;
    }
    Some(TimingFit {
        model,
        coeffs,
        fitness: f64::NAN,
    })
}

/// The distinct rank counts, increasing.
fn distinct_scales(ns: &[f64]) -> Vec<f64> {
    let mut v = ns.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Mean of the observations at each distinct scale.
fn scale_means(ns: &[f64], ys: &[f64]) -> Vec<(f64, f64)> {
    distinct_scales(ns)
        .into_iter()
        .map(|s| {
            let v: Vec<f64> = ns
                .iter()
                .zip(ys)
                .filter(|(n, _)| **n == s)
                .map(|(_, y)| *y)
                .collect();
            (s, v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect()
}

/// The family's leave-one-scale-out error relative to `reference`; `None` when some held-out
/// refit is degenerate.
fn held_out_error(model: TimingModel, ns: &[f64], ys: &[f64], reference: f64) -> Option<f64> {
    let means = scale_means(ns, ys);
    let mut sq = 0.0;
    for &(s, ybar) in &means {
        let (hn, hy): (Vec<f64>, Vec<f64>) = ns
            .iter()
            .zip(ys)
            .filter(|(n, _)| **n != s)
            .map(|(n, y)| (*n, *y))
            .unzip();
        let f = solve(model, &hn, &hy)?;
        let e = (f.eval(s) - ybar) / reference;
        if !e.is_finite() {
            return None;
        }
        sq += e * e;
    }
    Some((sq / means.len() as f64).sqrt())
}

/// The steepest growth the bound allows far beyond the inputs. No MPI or I/O algorithm makes
/// one rank's time grow faster than linearly in the rank count (one message to or from every
/// other rank); steeper slopes between 4 and 16 ranks are what oversubscribed cores do to
/// waits. Carried to 2^20 ranks, a barrier's slope of 3-4 predicted one `MPI_Barrier` of
/// 10^17 s, and a quadratic cap still left a nested `open`'s gap at 7.7e7 s.
const FAR_GROWTH_EXPONENT: f64 = 1.0;
/// The steepest growth the inputs' own slope may justify, as far as they reach.
const MAX_GROWTH_EXPONENT: f64 = 2.0;

/// The log-log slope the data support: the exponent of the power law through the scale means
/// (0 when some mean is not positive).
fn data_exponent(ns: &[f64], ys: &[f64]) -> f64 {
    let means = scale_means(ns, ys);
    if means.len() < 2 || means.iter().any(|&(_, y)| y <= 0.0) {
        return 0.0;
    }
    let (mn, my): (Vec<f64>, Vec<f64>) = means.into_iter().unzip();
    solve(TimingModel::PowerLaw, &mn, &my).map_or(0.0, |f| f.coeffs[1])
}

/// Rank counts at which a model is checked: the inputs' range and the target, geometric
/// steps (at most ~200 points).
fn check_points(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = (lo.max(1.0), hi.max(1.0));
    let steps = 200usize;
    let ratio = (hi / lo).powf(1.0 / steps as f64);
    let mut v: Vec<f64> = (0..=steps).map(|i| lo * ratio.powi(i as i32)).collect();
    v.push(hi);
    v
}

/// The most a time may reach at `n` ranks beyond the inputs' range: `GROWTH_SLACK * y_max`
/// times the growth from the nearest input, with `y_max` the largest mean of a scale. The
/// inputs' own log-log slope (within `[1, MAX_GROWTH_EXPONENT]`) is allowed as far as the
/// inputs reach (as many doublings beyond them as they span), linear growth
/// ([`FAR_GROWTH_EXPONENT`]) beyond that; infinite within the range. Returns the bound and the
/// inputs' exponent.
pub fn growth_bound(ns: &[f64], ys: &[f64], n: f64) -> (f64, f64) {
    Growth::of(ns, ys).bound(n)
}

/// What [`growth_bound`] takes from the inputs, computed once: [`implausible`] asks for the
/// bound at 200 rank counts, and recomputing the scale means and the inputs' power-law slope
/// (a least-squares solve) each time was nine tenths of an extrapolation's time.
struct Growth {
    nmin: f64,
    nmax: f64,
    ymax: f64,
    /// The exponent allowed as far as the inputs reach.
    e: f64,
}

impl Growth {
    fn of(ns: &[f64], ys: &[f64]) -> Growth {
        let means = scale_means(ns, ys);
        let (nmin, nmax) = (means[0].0, means[means.len() - 1].0);
        let ymax = means.iter().map(|m| m.1).fold(0.0f64, f64::max);
        let e = data_exponent(ns, ys).clamp(FAR_GROWTH_EXPONENT, MAX_GROWTH_EXPONENT);
        Growth {
            nmin,
            nmax,
            ymax,
            e,
        }
    }

    /// The bound at `n` ranks and the inputs' exponent ([`growth_bound`]).
    fn bound(&self, n: f64) -> (f64, f64) {
        let Growth {
            nmin,
            nmax,
            ymax,
            e,
        } = *self;
        let ratio = if n > nmax {
            n / nmax
        } else if n < nmin {
            nmin / n
        } else {
            return (f64::INFINITY, e);
        };
        let near = ratio.min((nmax / nmin).max(2.0));
        let bound = GROWTH_SLACK * ymax * near.powf(e) * (ratio / near).powf(FAR_GROWTH_EXPONENT);
        (bound, e)
    }
}

/// Why a fitted model is implausible over `[min(inputs, target), max(inputs, target)]`, if it
/// is: not finite, negative, or above [`growth_bound`] beyond the inputs.
pub fn implausible(f: &TimingFit, ns: &[f64], ys: &[f64], target: f64) -> Option<String> {
    implausible_within(f, &Growth::of(ns, ys), ns, ys, target)
}

/// [`implausible`] with the growth bound of `ns`, `ys` given.
fn implausible_within(
    f: &TimingFit,
    growth: &Growth,
    ns: &[f64],
    ys: &[f64],
    target: f64,
) -> Option<String> {
    let scales = distinct_scales(ns);
    let (nmin, nmax) = (scales[0], scales[scales.len() - 1]);
    let ymax = ys.iter().copied().fold(0.0f64, f64::max);
    for n in check_points(nmin.min(target), nmax.max(target)) {
        let v = f.eval(n);
        if !v.is_finite() {
            return Some(format!("not finite at {n:.0} ranks"));
        }
        // A time that rounds to less than 0.5 ns below zero is zero.
        if v < -0.5 {
            return Some(format!("negative at {n:.0} ranks ({v:.3e} ns)"));
        }
        let (bound, e) = growth.bound(n);
        if ymax > 0.0 && v > bound {
            return Some(format!(
                "grows to {v:.3e} ns at {n:.0} ranks, beyond the growth the inputs support \
                 (n^{e:.2} as far as they reach, linear beyond; bound {bound:.3e} ns)"
            ));
        }
    }
    None
}

/// The model chosen for one timed quantity, its prediction at the target and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingChoice {
    /// The chosen model, its `fitness` the held-out error.
    pub fit: TimingFit,
    /// The prediction at the target (non-negative).
    pub value: f64,
    /// The prediction interval at the target, `lo <= value <= hi`.
    pub interval: (f64, f64),
    /// The noise used, relative to the mean observation.
    pub noise: f64,
    /// Families that predicted the held-out scales better but were refused as implausible,
    /// with the reason.
    pub refused: Vec<(TimingModel, String)>,
}

impl TimingChoice {
    /// `--explain`'s text: the model, the interval at the target and any refusal.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}; at target {} [{}, {}]",
            self.fit,
            fmt_time(self.value),
            fmt_time(self.interval.0),
            fmt_time(self.interval.1)
        );
        if self.noise > 0.0 {
            s.push_str(&format!("; noise {:.1}%", 100.0 * self.noise));
        }
        for (m, why) in &self.refused {
            s.push_str(&format!("; {} refused: {why}", m.name()));
        }
        s
    }
}

/// Nanoseconds with a readable unit (as `rsd::timing::fmt_ns`, which this crate cannot see).
fn fmt_time(ns: f64) -> String {
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

/// A run this many times slower (or faster) than the median of its scale's runs is a stall of
/// the machine (another job, a page-cache flush), not the program's time: with three runs a
/// stalled one moved a scale's mean by 2-4x and hid a tenfold trend under "noise".
/// The run-to-run noise of a quiet machine stays well within it.
pub const STALL: f64 = 1.5;

/// The runs that are not stalls ([`STALL`]), where a scale has at least three runs to tell.
fn without_stalls(ns: &[f64], ys: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut keep = vec![true; ns.len()];
    for s in distinct_scales(ns) {
        let idx: Vec<usize> = (0..ns.len()).filter(|&i| ns[i] == s).collect();
        if idx.len() < 3 {
            continue;
        }
        let mut v: Vec<f64> = idx.iter().map(|&i| ys[i]).collect();
        v.sort_by(f64::total_cmp);
        let k = v.len();
        let med = if k % 2 == 1 {
            v[k / 2]
        } else {
            (v[k / 2 - 1] + v[k / 2]) / 2.0
        };
        if med <= 0.0 {
            continue;
        }
        for &i in &idx {
            keep[i] = ys[i] <= STALL * med && ys[i] * STALL >= med;
        }
    }
    (0..ns.len())
        .filter(|&i| keep[i])
        .map(|i| (ns[i], ys[i]))
        .unzip()
}

/// Chooses the model of `ys` observed at rank counts `ns` (a rank count may repeat: repeated
/// runs, of which stalls are left out, see [`STALL`]) and predicts it at `target`. `noise` is
/// the standard deviation of one observation (ns) known from elsewhere (the spread of the
/// repeated calls behind a mean); the spread of repeated observations at one scale is
/// measured here and the larger is used.
pub fn choose(ns: &[f64], ys: &[f64], noise: f64, target: f64) -> Option<TimingChoice> {
    choose_in(Regime::Any, ns, ys, noise, target)
}

/// [`choose`] among the families of `regime`.
pub fn choose_in(
    regime: Regime,
    ns: &[f64],
    ys: &[f64],
    noise: f64,
    target: f64,
) -> Option<TimingChoice> {
    if ns.is_empty() || ns.len() != ys.len() || ys.iter().any(|y| !y.is_finite()) {
        return None;
    }
    let (ns, ys) = without_stalls(ns, ys);
    let (ns, ys) = (&ns[..], &ys[..]);
    let reference = {
        let m = ys.iter().map(|y| y.abs()).sum::<f64>() / ys.len() as f64;
        if m > 0.0 { m } else { 1.0 }
    };
    // The noise of one run: a trend smaller than it is not fitted.
    let noise_run = (noise.max(repeat_spread(ns, ys)) / reference).max(0.0);
    let noise_rel = noise_run;
    // (family, fit on everything, held-out error), for every family that can be fitted.
    let mut cands: Vec<(TimingFit, f64)> = Vec::new();
    for &m in regime.families() {
        let Some(mut f) = fit_model(m, ns, ys) else {
            continue;
        };
        if !regime.admits(&f) {
            continue;
        }
        // A single scale: the constant, with no held-out error to speak of.
        let err = if distinct_scales(ns).len() < 2 {
            0.0
        } else {
            match held_out_error(m, ns, ys, reference) {
                Some(e) => e,
                None => continue,
            }
        };
        f.fitness = err;
        cands.push((f, err));
    }
    // Each candidate's plausibility, checked at most once (the choice and the interval both
    // ask), against the growth bound computed once.
    let growth = std::cell::OnceCell::new();
    let mut verdicts: Vec<Option<Option<String>>> = vec![None; cands.len()];
    let mut implausible_at = |i: usize| -> Option<String> {
        verdicts[i]
            .get_or_insert_with(|| {
                let g = growth.get_or_init(|| Growth::of(ns, ys));
                implausible_within(&cands[i].0, g, ns, ys, target)
            })
            .clone()
    };
    let mut refused = Vec::new();
    let mut chosen: Option<(TimingFit, f64)> = None;
    for nparams in 1..=3 {
        // The best plausible family with this many parameters.
        let mut best: Option<(TimingFit, f64)> = None;
        for (i, (f, err)) in cands
            .iter()
            .enumerate()
            .filter(|(_, (f, _))| f.model.nparams() == nparams)
        {
            // Within a parameter count the earlier (more conservative) family keeps its place
            // unless a later one is somewhat better.
            if best
                .as_ref()
                .is_some_and(|(_, b)| *err >= SAME_COUNT_BETTER * *b)
            {
                continue;
            }
            if chosen.as_ref().is_some_and(|(_, c)| *err >= *c) {
                continue;
            }
            match implausible_at(i) {
                Some(why) => refused.push((f.model, why)),
                None => best = Some((f.clone(), *err)),
            }
        }
        let Some((f, err)) = best else { continue };
        let better = match &chosen {
            None => true,
            // The simpler choice is adequate when its held-out error is within the noise.
            Some((_, c)) => err < regime.clearly_better() * c && *c > noise_rel && c - err > EXACT,
        };
        if better {
            chosen = Some((f, err));
        }
    }
    let (fit, err) = chosen?;
    // Only refusals of families that would have beaten the choice are worth saying.
    refused.retain(|(m, _)| {
        cands
            .iter()
            .any(|(f, e)| f.model == *m && *e < err && f.model != fit.model)
    });
    let value = fit.eval(target).max(0.0);
    let s =
        interval_half_width(err, noise_run, ns, target).max(regime.least_half_width(ns, target));
    let (mut lo, mut hi) = (value * (-s).exp(), value * s.exp());
    // The families the inputs cannot tell from the choice (not clearly worse out of sample)
    // and that are plausible: where they predict differently, the truth may be theirs, with
    // the same uncertainty.
    for (i, (f, e)) in cands.iter().enumerate() {
        let close = *e <= (err / CLEARLY_BETTER).max(err + noise_rel) + EXACT;
        if close && f.model != fit.model && implausible_at(i).is_none() {
            let v = f.eval(target).max(0.0);
            lo = lo.min(v * (-s).exp());
            hi = hi.max(v * s.exp());
        }
    }
    // No time beyond the growth bound, whatever the interval's arithmetic says.
    let growth = growth.get_or_init(|| Growth::of(ns, ys));
    hi = hi.min(growth.bound(target).0.max(value));
    Some(TimingChoice {
        fit,
        value,
        interval: (lo, hi),
        noise: noise_run,
        refused,
    })
}

/// The pooled standard deviation of repeated observations at one scale (0 without repeats).
fn repeat_spread(ns: &[f64], ys: &[f64]) -> f64 {
    let (mut ss, mut dof) = (0.0, 0usize);
    for (s, mean) in scale_means(ns, ys) {
        let v: Vec<f64> = ns
            .iter()
            .zip(ys)
            .filter(|(n, _)| **n == s)
            .map(|(_, y)| *y)
            .collect();
        ss += v.iter().map(|y| (y - mean).powi(2)).sum::<f64>();
        dof += v.len() - 1;
    }
    if dof == 0 {
        0.0
    } else {
        (ss / dof as f64).sqrt()
    }
}

/// The prediction interval's half-width in log units (log-normal around the prediction): its
/// standard deviation the held-out error grown with the number of doublings from the largest
/// input to the target, combined with the noise of one run.
fn interval_half_width(held_out: f64, noise_run: f64, ns: &[f64], target: f64) -> f64 {
    let scales = distinct_scales(ns);
    let (nmin, nmax) = (scales[0], scales[scales.len() - 1]);
    let dist = if target > nmax {
        (target / nmax).log2()
    } else if target < nmin {
        (nmin / target).log2()
    } else {
        0.0
    };
    let grow = dist.max(1.0);
    let sd = ((held_out * grow).powi(2) + noise_run.powi(2)).sqrt();
    // ln(1 + x) keeps small relative errors as they are and large ones from exploding.
    (1.0 + sd).ln() * INTERVAL_Z
}

/// The family refitted with each scale held out in turn (stalls left out as in [`choose`]):
/// `(rank count, prediction there)`; `None` when some refit is degenerate.
pub fn held_out_predictions(model: TimingModel, ns: &[f64], ys: &[f64]) -> Option<Vec<(f64, f64)>> {
    let (ns, ys) = without_stalls(ns, ys);
    distinct_scales(&ns)
        .into_iter()
        .map(|s| {
            let (hn, hy): (Vec<f64>, Vec<f64>) = ns
                .iter()
                .zip(&ys)
                .filter(|(n, _)| **n != s)
                .map(|(n, y)| (*n, *y))
                .unzip();
            let p = solve(model, &hn, &hy)?.eval(s).max(0.0);
            p.is_finite().then_some((s, p))
        })
        .collect()
}

/// The interval of a sum of parts (their values and intervals) at `target`, observed as a
/// whole (`ns`, `ys`: every run's total) with `held_out` the total's held-out predictions at
/// each scale (the sum of the parts' refits). Each side is the wider of two: the parts'
/// half-widths combined in quadrature (independent parts), and the total's own held-out error
/// carried to the target like a part's (the parts' errors are not independent where a loaded
/// machine slows them all, and then the total's own errors say so). Neither side goes beyond
/// the parts' own sides added up (the parts fully correlated): each part's interval is already
/// held within its growth bound, and the sum of their extremes is the sum's extreme; the
/// total's held-out error, carried over many doublings, says where between independent and
/// correlated the sum lies, not that the sum may exceed every part at once.
pub fn sum_interval(
    parts: &[(f64, (f64, f64))],
    ns: &[f64],
    ys: &[f64],
    held_out: &[(f64, f64)],
    target: f64,
) -> (f64, (f64, f64)) {
    let value: f64 = parts.iter().map(|(v, _)| v).sum();
    let quad = |w: Vec<f64>| w.iter().map(|x| x.max(0.0).powi(2)).sum::<f64>().sqrt();
    let down = quad(parts.iter().map(|(v, (lo, _))| v - lo).collect());
    let up = quad(parts.iter().map(|(v, (_, hi))| hi - v).collect());
    let (mut lo, mut hi) = (value - down, value + up);
    let (kn, ky) = without_stalls(ns, ys);
    if !kn.is_empty() && !held_out.is_empty() {
        let means = scale_means(&kn, &ky);
        let reference = {
            let m = ky.iter().map(|y| y.abs()).sum::<f64>() / ky.len() as f64;
            if m > 0.0 { m } else { 1.0 }
        };
        let sq: f64 = means
            .iter()
            .filter_map(|(s, y)| {
                held_out
                    .iter()
                    .find(|(n, _)| n == s)
                    .map(|(_, p)| ((p - y) / reference).powi(2))
            })
            .sum();
        let err = (sq / means.len() as f64).sqrt();
        let noise_run = repeat_spread(&kn, &ky) / reference;
        let s = interval_half_width(err, noise_run, &kn, target);
        lo = lo.min(value * (-s).exp());
        hi = hi.max(value * s.exp());
    }
    let lo_all: f64 = parts.iter().map(|(_, (l, _))| l).sum();
    let hi_all: f64 = parts.iter().map(|(_, (_, h))| h).sum();
    (value, (lo.max(lo_all).max(0.0), hi.min(hi_all)))
}

/// The chosen model for `ys` at `ns` (see [`choose`]), without noise information.
pub fn fit_timing(ns: &[f64], ys: &[f64], target: f64) -> Option<TimingFit> {
    choose(ns, ys, 0.0, target).map(|c| c.fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: [f64; 4] = [4.0, 8.0, 12.0, 16.0];

    /// A deterministic pseudo-random sequence in [-1, 1] (no rand dependency).
    fn jitter(seed: u64, k: usize) -> Vec<f64> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..k)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn exact_laws_are_recovered() {
        let ys: Vec<f64> = NS.iter().map(|n| 1000.0 + 64000.0 / n).collect();
        let f = fit_timing(&NS, &ys, 64.0).unwrap();
        assert_eq!(f.model, TimingModel::InverseConstant);
        assert!((f.eval(64.0) - 2000.0).abs() < 1e-6, "{f}");
        let ys = [500.0; 4];
        let f = fit_timing(&NS, &ys, 1e6).unwrap();
        assert_eq!(f.model, TimingModel::Constant);
        assert_eq!(f.fitness, 0.0);
        let ys: Vec<f64> = NS.iter().map(|n| 30.0 * n + 7.0).collect();
        let f = fit_timing(&NS, &ys, 32.0).unwrap();
        assert_eq!(f.model, TimingModel::Linear);
        assert!((f.eval(32.0) - 967.0).abs() < 1e-6);
        let ys: Vec<f64> = NS.iter().map(|n| 200.0 * n.log2() + 50.0).collect();
        assert_eq!(fit_timing(&NS, &ys, 64.0).unwrap().model, TimingModel::Log);
        let ys: Vec<f64> = NS.iter().map(|n| 3.0 * n.powf(1.5)).collect();
        assert_eq!(
            fit_timing(&NS, &ys, 64.0).unwrap().model,
            TimingModel::PowerLaw
        );
        let ys: Vec<f64> = NS.iter().map(|n| 5.0 * n * n.log2() + 10.0).collect();
        assert_eq!(
            fit_timing(&NS, &ys, 64.0).unwrap().model,
            TimingModel::NLogN
        );
    }

    #[test]
    fn never_predicts_negative_time() {
        let ys = [900.0, 500.0, 300.0, 50.0];
        let c = choose(&NS, &ys, 0.0, 1e6).unwrap();
        assert!(c.value >= 0.0, "{}", c.describe());
        assert!(implausible(&c.fit, &NS, &ys, 1e6).is_none());
    }

    #[test]
    fn noise_larger_than_the_trend_gives_the_constant() {
        // A weak linear trend (+4% from 4 to 16) under +-15% noise, three repeats per scale:
        // the constant in (nearly) every draw, and the truth at 64 ranks inside the interval.
        let (mut simplest, mut covered) = (0, 0);
        for seed in 0..40 {
            let j = jitter(seed, 12);
            let mut ns = Vec::new();
            let mut ys = Vec::new();
            for (i, n) in NS.iter().enumerate() {
                for r in 0..3 {
                    ns.push(*n);
                    ys.push((1000.0 + 3.5 * n) * (1.0 + 0.15 * j[i * 3 + r]));
                }
            }
            let c = choose(&ns, &ys, 0.0, 64.0).unwrap();
            simplest += usize::from(c.fit.model.nparams() == 1);
            let truth = 1000.0 + 3.5 * 64.0;
            covered += usize::from(c.interval.0 <= truth && truth <= c.interval.1);
        }
        assert!(simplest >= 36, "{simplest} of 40 chose one parameter");
        assert!(covered >= 36, "{covered} of 40 intervals cover the truth");
    }

    #[test]
    fn a_clear_trend_wins_over_noise() {
        // Linear growth, 3x from 4 to 16, under 3% noise: linear (or an equivalent two-parameter
        // law), and the truth at 64 inside the interval.
        for seed in 0..20 {
            let j = jitter(seed, 12);
            let mut ns = Vec::new();
            let mut ys = Vec::new();
            for (i, n) in NS.iter().enumerate() {
                for r in 0..3 {
                    ns.push(*n);
                    ys.push((1000.0 + 250.0 * n) * (1.0 + 0.03 * j[i * 3 + r]));
                }
            }
            let c = choose(&ns, &ys, 0.0, 64.0).unwrap();
            assert_eq!(c.fit.model.nparams(), 2, "seed {seed}: {}", c.describe());
            let truth = 1000.0 + 250.0 * 64.0;
            assert!(
                c.interval.0 <= truth && truth <= c.interval.1,
                "seed {seed}: {}",
                c.describe()
            );
            assert!((c.value - truth).abs() / truth < 0.35, "{}", c.describe());
        }
    }

    #[test]
    fn a_quadratic_through_four_noisy_points_is_not_chosen() {
        // The reported case: flat data whose noise bends a quadratic; in-sample the quadratic
        // fits best, out of sample it does not.
        let ys = [1000.0, 1100.0, 950.0, 1300.0];
        let q = fit_model(TimingModel::Quadratic, &NS, &ys).unwrap();
        let c = choose(&NS, &ys, 0.0, 1048576.0).unwrap();
        assert_ne!(c.fit.model, TimingModel::Quadratic, "{}", c.describe());
        assert!(implausible(&q, &NS, &ys, 1048576.0).is_some());
        assert!(c.value < 1300.0 * 2.0 * 65536.0, "{}", c.describe());
    }

    #[test]
    fn implausible_growth_is_refused_and_said() {
        // Exactly quadratic on the inputs except for an offset that makes the data's own
        // slope small: the quadratic is the best held-out predictor but grows far faster
        // than the data support at 2^20.
        let ys: Vec<f64> = NS.iter().map(|n| 1e6 + 100.0 * n * n).collect();
        let c = choose(&NS, &ys, 0.0, 1048576.0).unwrap();
        assert_ne!(c.fit.model, TimingModel::Quadratic, "{}", c.describe());
        assert!(
            c.refused.iter().any(|(m, _)| *m == TimingModel::Quadratic),
            "{}",
            c.describe()
        );
        assert!(
            c.describe().contains("quadratic refused"),
            "{}",
            c.describe()
        );
        // Near the inputs the same data keep the quadratic.
        let c = choose(&NS, &ys, 0.0, 20.0).unwrap();
        assert_eq!(c.fit.model, TimingModel::Quadratic, "{}", c.describe());
    }

    #[test]
    fn steep_inputs_carried_far_stay_within_the_growth_bound() {
        // An oversubscribed barrier: n^4 from 4 to 16 ranks. At 2^20 ranks the prediction may
        // not pass the bound of growth n^2 (the steepest allowed), whatever the inputs' slope.
        let ns = [4.0, 8.0, 12.0, 16.0];
        let ys: Vec<f64> = ns.iter().map(|n: &f64| 100.0 * n.powi(4)).collect();
        let target = (1u64 << 20) as f64;
        let c = choose(&ns, &ys, 0.0, target).unwrap();
        let bound = GROWTH_SLACK * ys[3] * (target / 16.0).powi(2);
        assert!(c.value <= bound, "{}", c.describe());
        assert!(c.interval.0 <= c.value && c.value <= c.interval.1);
    }

    #[test]
    fn intervals_widen_with_distance_and_noise() {
        let ys = [1000.0, 1040.0, 990.0, 1020.0];
        let near = choose(&NS, &ys, 0.0, 32.0).unwrap();
        let far = choose(&NS, &ys, 0.0, 1048576.0).unwrap();
        let w = |c: &TimingChoice| c.interval.1 / c.interval.0;
        assert!(
            w(&far) > w(&near),
            "{} vs {}",
            near.describe(),
            far.describe()
        );
        let noisy = choose(&NS, &ys, 300.0, 32.0).unwrap();
        assert!(w(&noisy) > w(&near));
        assert!(near.interval.0 <= near.value && near.value <= near.interval.1);
    }

    #[test]
    fn a_stalled_run_does_not_hide_a_trend() {
        // A collective's time per rank growing tenfold from 4 to 16 ranks (+-10% between runs),
        // one of the three runs at 12 ranks stalled 3.5x by the machine: the trend is fitted
        // (a two-parameter family, near the truth at 64), not a constant under "noise".
        let mut ns = Vec::new();
        let mut ys = Vec::new();
        for n in NS {
            for (r, f) in [0.9, 1.0, 1.1].into_iter().enumerate() {
                ns.push(n);
                let stall = if n == 12.0 && r == 2 { 3.5 } else { 1.0 };
                ys.push((3.6e6 * n - 1e7) * f * stall);
            }
        }
        let c = choose(&ns, &ys, 0.0, 64.0).unwrap();
        let truth = 3.6e6 * 64.0 - 1e7;
        assert_eq!(c.fit.model.nparams(), 2, "{}", c.describe());
        assert!((c.value - truth).abs() / truth < 0.2, "{}", c.describe());
        assert!(
            c.interval.0 <= truth && truth <= c.interval.1,
            "{}",
            c.describe()
        );
    }

    #[test]
    fn the_interval_of_a_sum_combines_its_parts() {
        // Two independent parts of +-50 each: in quadrature +-70.7, not +-100.
        let parts = [(100.0, (50.0, 150.0)), (200.0, (150.0, 250.0))];
        let ns = [4.0, 8.0, 12.0, 16.0];
        let ys = [300.0; 4];
        let exact: Vec<(f64, f64)> = ns.iter().map(|&n| (n, 300.0)).collect();
        let (v, (lo, hi)) = sum_interval(&parts, &ns, &ys, &exact, 20.0);
        assert_eq!(v, 300.0);
        assert!((hi - v - 50.0 * 2f64.sqrt()).abs() < 1e-9, "{lo} {hi}");
        assert!((v - lo - 50.0 * 2f64.sqrt()).abs() < 1e-9, "{lo} {hi}");
        // The sum's own held-out predictions off by 40%: wider than the parts say.
        let off: Vec<(f64, f64)> = ns.iter().map(|&n| (n, 420.0)).collect();
        let (_, (lo2, hi2)) = sum_interval(&parts, &ns, &ys, &off, 20.0);
        assert!(hi2 > hi && lo2 < lo, "{lo2} {hi2}");
    }

    #[test]
    fn the_interval_of_a_sum_stays_within_its_parts_added_up() {
        // The total's held-out predictions off by 300% carried 2^17-fold would give the sum a
        // factor of hundreds; the parts' own extremes added up (400 over, 200 under) hold it.
        let parts = [(100.0, (50.0, 150.0)), (200.0, (150.0, 250.0))];
        let ns = [4.0, 6.0, 8.0];
        let ys = [300.0; 3];
        let off: Vec<(f64, f64)> = ns.iter().map(|&n| (n, 1200.0)).collect();
        let (v, (lo, hi)) = sum_interval(&parts, &ns, &ys, &off, 1048576.0);
        assert_eq!(v, 300.0);
        assert_eq!((lo, hi), (200.0, 400.0));
        // Independent parts within it: the quadrature, narrower than the extremes.
        let exact: Vec<(f64, f64)> = ns.iter().map(|&n| (n, 300.0)).collect();
        let (_, (lo, hi)) = sum_interval(&parts, &ns, &ys, &exact, 1048576.0);
        assert!(lo > 200.0 && hi < 400.0, "{lo} {hi}");
    }

    #[test]
    fn far_targets_grow_at_most_linearly_beyond_the_inputs_reach() {
        // Inputs growing as n^2 from 4 to 16: their slope is allowed to 64 (two doublings, as
        // far as they reach), linear growth beyond; the interval stays under the bound too.
        let ys: Vec<f64> = NS.iter().map(|n| 1e3 * n * n).collect();
        let (b64, e) = growth_bound(&NS, &ys, 64.0);
        assert!((e - 2.0).abs() < 1e-9);
        assert!((b64 - 2.0 * 256e3 * 16.0).abs() < 1e-3, "{b64}");
        let far = 1048576.0;
        let (bfar, _) = growth_bound(&NS, &ys, far);
        assert!((bfar - b64 * far / 64.0).abs() / bfar < 1e-9, "{bfar}");
        let c = choose(&NS, &ys, 0.0, far).unwrap();
        assert!(c.value <= bfar && c.interval.1 <= bfar, "{}", c.describe());
    }

    /// Three runs per scale of `f(n)` under +-`noise` relative jitter.
    fn runs(f: impl Fn(f64) -> f64, noise: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let j = jitter(seed, 12);
        let mut ns = Vec::new();
        let mut ys = Vec::new();
        for (i, n) in NS.iter().enumerate() {
            for r in 0..3 {
                ns.push(*n);
                ys.push(f(*n) * (1.0 + noise * j[i * 3 + r]));
            }
        }
        (ns, ys)
    }

    #[test]
    fn oversubscribed_growth_that_levels_off_is_not_chosen() {
        // bt7b's io_sample I/O per rank at 4-16 ranks on two cores (strong-scaled work, a fixed
        // part, and the wait for the other ranks' slices): every family of ALL levels it off
        // (k/n + c with k < 0 here), the regime's sum carries the growth on; truth at 64 ranks
        // was 297 ms.
        let io = |n: f64| -2.05e8 / n + 1.92e8 + 1.2e6 * n;
        let (ns, ys) = runs(io, 0.005, 7);
        let any = choose(&ns, &ys, 0.0, 64.0).unwrap();
        let over = choose_in(Regime::Oversubscribed, &ns, &ys, 0.0, 64.0).unwrap();
        assert!(
            !(any.fit.model == TimingModel::InverseConstant && any.fit.coeffs[0] >= 0.0),
            "{}",
            any.describe()
        );
        assert_eq!(
            over.fit.model,
            TimingModel::InverseConstantLinear,
            "{}",
            over.describe()
        );
        let truth = io(64.0);
        assert!(
            (over.value - truth).abs() / truth < 0.05,
            "{}",
            over.describe()
        );
        assert!(over.interval.0 <= truth && truth <= over.interval.1);
    }

    #[test]
    fn oversubscribed_convex_waits_are_carried_on_linearly() {
        // comm_mix's communication per rank: convex from 4 to 16 ranks (the transition into
        // oversubscription: 7.6, 30, 56, 93 ms), linear beyond (206 ms at 32, 451 at 64).
        // Every family picks a power law near n^1.8 (+186% at 64); among ranks sharing cores
        // no time grows faster than linearly.
        let ns: Vec<f64> = NS.iter().flat_map(|&n| [n, n, n]).collect();
        let ys = [
            7.1e6, 7.6e6, 13.4e6, 29.3e6, 30.4e6, 31.2e6, 53.3e6, 56.2e6, 63.5e6, 90.1e6, 93.5e6,
            110.5e6,
        ];
        let any = choose(&ns, &ys, 0.0, 64.0).unwrap();
        let over = choose_in(Regime::Oversubscribed, &ns, &ys, 0.0, 64.0).unwrap();
        assert!(any.value > 1.5 * 451e6, "{}", any.describe());
        assert!(
            Regime::Oversubscribed.families().contains(&over.fit.model),
            "{}",
            over.describe()
        );
        assert!(
            (over.value - 451e6).abs() / 451e6 < 0.2,
            "{}",
            over.describe()
        );
        assert!(over.interval.0 <= 451e6 && 451e6 <= over.interval.1);
    }

    #[test]
    fn oversubscribed_intervals_widen_per_doubling_even_for_exact_laws() {
        // An exact law has no held-out error; ranks sharing cores still leave the scheduler's
        // share open beyond the inputs, none within them.
        let ys: Vec<f64> = NS.iter().map(|n| 1e6 + 2e5 * n).collect();
        let at = |t: f64| choose_in(Regime::Oversubscribed, &NS, &ys, 0.0, t).unwrap();
        let w = |c: &TimingChoice| c.interval.1 / c.interval.0;
        assert!(w(&at(12.0)) < 1.0 + 1e-9, "{}", at(12.0).describe());
        assert!(w(&at(32.0)) > 1.1, "{}", at(32.0).describe());
        assert!(w(&at(64.0)) > w(&at(32.0)), "{}", at(64.0).describe());
        assert!(w(&choose(&NS, &ys, 0.0, 64.0).unwrap()) < w(&at(64.0)));
    }

    #[test]
    fn oversubscribed_choices_stay_plausible_to_a_million_ranks() {
        let target = (1u64 << 20) as f64;
        for (i, f) in [
            &(|n: f64| -2.05e8 / n + 1.92e8 + 1.2e6 * n) as &dyn Fn(f64) -> f64,
            &|n: f64| 3.6e6 * n - 1e7,
            &|n: f64| 2e8 / n,
            &|n: f64| 5e6 - 4e5 * n,
        ]
        .into_iter()
        .enumerate()
        {
            let (ns, ys) = runs(f, 0.05, i as u64);
            let c = choose_in(Regime::Oversubscribed, &ns, &ys, 0.0, target).unwrap();
            assert!(
                implausible(&c.fit, &ns, &ys, target).is_none(),
                "{}",
                c.describe()
            );
            assert!(
                c.value >= 0.0 && c.interval.1.is_finite(),
                "{}",
                c.describe()
            );
            assert!(c.interval.1 <= growth_bound(&ns, &ys, target).0.max(c.value));
        }
    }
}
