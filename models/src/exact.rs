//! Exact models: functions of the rank count `n` (and, for per-rank models, of the rank) with
//! rational coefficients that reproduce every observed value with zero residual.
//!
//! A [`Model`] proposes coefficient vectors that fit all points exactly; [`fit_exact`] then
//! guards each proposal with leave-one-scale-out (where there are at least four scales, the
//! model refitted without one scale must still predict it) and keeps only models with fewer
//! coefficients than independent observations. Choosing between the survivors, and refusing
//! when they disagree at the target, is the caller's job ([`agree`] helps).

use crate::rational::{Rat, Solution, solve};
use std::sync::Arc;

/// One observation: the value `y` seen at rank count `n` (and `rank`, for per-rank models).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// Rank count of the run.
    pub n: i64,
    /// Ranks per node of the run, where every node holds that many consecutive ranks; 0 where
    /// the layout is not known or not of that form, where no node model evaluates.
    pub ppn: i64,
    /// The rank (0 for quantities that do not depend on the rank).
    pub rank: i64,
    /// The observed value.
    pub y: i64,
}

/// Whether a model is a function of `n` alone or of `(n, rank)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vars {
    /// `f(n)`: PRSD starts, counts and strides, loop counts, rank-function coefficients.
    N,
    /// `f(n, rank)`: a parameter whose per-rank pattern the PRSD groups cannot express alike
    /// at every scale.
    NRank,
}

/// An exact model family.
pub trait Model: Send + Sync {
    /// Short name, e.g. `linear`.
    fn name(&self) -> &str;
    /// What the model is a function of.
    fn vars(&self) -> Vars;
    /// Number of coefficients.
    fn nparams(&self) -> usize;
    /// Every coefficient vector that reproduces all `pts` exactly (none when the model does
    /// not fit; several when the data leave a discrete choice open, e.g. a block size).
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>>;
    /// The value at `(n, rank)`, `None` when it is not an integer or overflows.
    fn eval(&self, coeffs: &[Rat], n: i64, rank: i64) -> Option<i64>;
    /// The value at `(n, rank)` on nodes of `ppn` consecutive ranks (0: not known). Only the
    /// node models ([`builtin_node_models`]) read `ppn`; every other model is [`Model::eval`].
    fn eval_node(&self, coeffs: &[Rat], n: i64, ppn: i64, rank: i64) -> Option<i64> {
        let _ = ppn;
        self.eval(coeffs, n, rank)
    }
    /// The fitted function in readable form, e.g. `960/n`.
    fn describe(&self, coeffs: &[Rat]) -> String;
    /// Whether the model is the width of a printed number (`digits(n)`: a step at each power
    /// of ten), which the sizes of text follow and little else does: a count of aggregators,
    /// `ceil(n/8)`, steps between 8 and 12 ranks too. Callers offer these models only to the
    /// sizes of data a call moves.
    fn text_width(&self) -> bool {
        false
    }
    /// Whether the model is tried only when no other model of its kind fits ([`fit_exact`]):
    /// a model with a discrete choice among many functions that no data of a smooth kind
    /// should be fitted by, so it can only turn a refusal into an answer, never make two
    /// answers disagree.
    fn fallback(&self) -> bool {
        false
    }
    /// Whether the model reads the scale's node layout ([`Point::ppn`]): callers offer such
    /// models to the values of parameters, not to which ranks make a call (a count of all
    /// the ranks is `n`, though over inputs on two nodes `2*ppn` fits it too).
    fn of_layout(&self) -> bool {
        false
    }
    /// This model trying the process grids of `ndims` dimensions only, for a model that
    /// depends on which grids the program asked for (the grid models); `None` for every
    /// other model, which stays as it is.
    fn for_grids(&self, _ndims: &[usize]) -> Option<Arc<dyn Model>> {
        None
    }
}

/// A basis model tagged as the width of printed numbers ([`Model::text_width`]) or as a
/// fallback ([`Model::fallback`]).
struct Tagged {
    basis: Basis,
    width: bool,
    fallback: bool,
}

/// A model of the width of printed numbers.
fn width(basis: Basis) -> Tagged {
    Tagged {
        basis,
        width: true,
        fallback: false,
    }
}

impl Model for Tagged {
    fn name(&self) -> &str {
        self.basis.name()
    }
    fn vars(&self) -> Vars {
        self.basis.vars()
    }
    fn nparams(&self) -> usize {
        self.basis.nparams()
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        self.basis.fit(pts)
    }
    fn eval(&self, coeffs: &[Rat], n: i64, rank: i64) -> Option<i64> {
        self.basis.eval(coeffs, n, rank)
    }
    fn describe(&self, coeffs: &[Rat]) -> String {
        self.basis.describe(coeffs)
    }
    fn text_width(&self) -> bool {
        self.width
    }
    fn fallback(&self) -> bool {
        self.fallback
    }
}

/// A model with its fitted coefficients.
#[derive(Clone)]
pub struct Fitted<'m> {
    /// The model family.
    pub model: &'m dyn Model,
    /// Its coefficients.
    pub coeffs: Vec<Rat>,
}

impl Fitted<'_> {
    /// The value at `(n, rank)`.
    pub fn eval(&self, n: i64, rank: i64) -> Option<i64> {
        self.model.eval(&self.coeffs, n, rank)
    }

    /// The value at `(n, rank)` on nodes of `ppn` consecutive ranks ([`Model::eval_node`]).
    pub fn eval_node(&self, n: i64, ppn: i64, rank: i64) -> Option<i64> {
        self.model.eval_node(&self.coeffs, n, ppn, rank)
    }

    /// Readable form.
    pub fn describe(&self) -> String {
        self.model.describe(&self.coeffs)
    }
}

impl std::fmt::Debug for Fitted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.model.name(), self.describe())
    }
}

type Term = fn(i64, i64) -> Option<Rat>;

/// A model linear in its coefficients: `Σ c_j · term_j(n, rank)`, solved by exact Gaussian
/// elimination. A parameterised family (a block size `k`, a rank shift `a`) is one `Basis` per
/// choice, tried in turn by [`Search`].
struct Basis {
    name: &'static str,
    vars: Vars,
    terms: Vec<Term>,
    show: fn(&[Rat]) -> String,
}

impl Basis {
    fn row(&self, n: i64, rank: i64) -> Option<Vec<Rat>> {
        self.terms.iter().map(|t| t(n, rank)).collect()
    }
}

impl Model for Basis {
    fn name(&self) -> &str {
        self.name
    }
    fn vars(&self) -> Vars {
        self.vars
    }
    fn nparams(&self) -> usize {
        self.terms.len()
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let Some(rows) = pts
            .iter()
            .map(|p| self.row(p.n, p.rank))
            .collect::<Option<Vec<_>>>()
        else {
            return vec![];
        };
        let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
        match solve(&rows, &ys) {
            Solution::Unique(c) => vec![c],
            _ => vec![],
        }
    }
    fn eval(&self, c: &[Rat], n: i64, rank: i64) -> Option<i64> {
        let row = self.row(n, rank)?;
        let mut acc = Rat::ZERO;
        for (x, k) in row.iter().zip(c) {
            acc = acc.checked_add(x.checked_mul(*k)?)?;
        }
        acc.to_i64()
    }
    fn describe(&self, c: &[Rat]) -> String {
        (self.show)(c)
    }
}

/// The rows of a linear system, one per point.
type Rows = Vec<Vec<Rat>>;

/// A family with one integer knob chosen by search (the `k` of `rank/k`, the `a` of
/// `(rank+a) % n`): each knob value is its own linear model.
struct Search {
    name: &'static str,
    /// What the term is a function of.
    vars: Vars,
    /// Knob values to try given the points.
    knobs: fn(&[Point]) -> std::ops::RangeInclusive<i64>,
    /// The knob's column: the model is `c0 * term(k, n, rank) + c1`, the knob stored as the
    /// last coefficient.
    term: fn(i64, i64, i64) -> Option<i64>,
    show: fn(&[Rat], i64) -> String,
}

impl Model for Search {
    fn name(&self) -> &str {
        self.name
    }
    fn vars(&self) -> Vars {
        self.vars
    }
    fn nparams(&self) -> usize {
        3
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
        let mut out = Vec::new();
        // Neighbouring knob values often give the very same system (`rank/k` is constant for
        // k over a run of values, `rank%k` is `rank` for every k above the largest rank): the
        // previous system's answer is reused, so the solves are as many as distinct systems,
        // not as knob values (thousands at a few thousand ranks). The column is compared as
        // integers, so a repeated system costs no allocation either.
        let (mut col, mut last) = (Vec::with_capacity(pts.len()), Vec::new());
        let mut answer: Option<Option<Vec<Rat>>> = None;
        for k in (self.knobs)(pts) {
            col.clear();
            if !pts
                .iter()
                .all(|p| (self.term)(k, p.n, p.rank).map(|x| col.push(x)).is_some())
            {
                continue;
            }
            if answer.is_none() || col != last {
                let rows: Rows = col.iter().map(|&x| vec![Rat::int(x), Rat::ONE]).collect();
                answer = Some(match solve(&rows, &ys) {
                    Solution::Unique(c) => Some(c),
                    _ => None,
                });
                std::mem::swap(&mut col, &mut last);
            }
            if let Some(Some(c)) = &answer {
                let mut c = c.clone();
                c.push(Rat::int(k));
                out.push(c);
            }
        }
        out
    }
    fn eval(&self, c: &[Rat], n: i64, rank: i64) -> Option<i64> {
        let [a, b, k] = c else { return None };
        let x = (self.term)(k.to_i64()?, n, rank)?;
        Rat::int(x).checked_mul(*a)?.checked_add(*b)?.to_i64()
    }
    fn describe(&self, c: &[Rat]) -> String {
        match c.split_last() {
            Some((k, rest)) => (self.show)(rest, k.to_i64().unwrap_or(0)),
            None => String::new(),
        }
    }
}

/// A quantity of a domain decomposition on `MPI_Dims_create`'s process grid ([`crate::grid`]):
/// `a * term(d, i, n, rank)` (`scaled`) or `a * term + b`, for one of the (dimension count,
/// dimension) pairs [`crate::grid::knob`] numbers, stored as the last coefficient. A fallback
/// ([`Model::fallback`]): nine functions each, tried only where no smooth model fits.
struct Grid {
    name: &'static str,
    vars: Vars,
    /// `a * term` alone: a grid's extents are whole blocks (`dims[i] * L`). Between 4 and 16
    /// ranks a dimension may change once only (`dims(n, 3)[2]` is 1, 2, 2, 2): with an offset
    /// the fit would leave a scale unpredicted (leave-one-scale-out), with none it holds.
    scaled: bool,
    term: fn(usize, usize, i64, i64) -> Option<i64>,
    show: fn(usize, usize) -> String,
    /// The dimension counts this model may take: those the program asked `MPI_Dims_create`
    /// for ([`Model::for_grids`]); none in the built-in set.
    allowed: Vec<usize>,
}

impl Model for Grid {
    fn name(&self) -> &str {
        self.name
    }
    fn vars(&self) -> Vars {
        self.vars
    }
    fn nparams(&self) -> usize {
        if self.scaled { 2 } else { 3 }
    }
    fn fallback(&self) -> bool {
        true
    }
    fn for_grids(&self, ndims: &[usize]) -> Option<Arc<dyn Model>> {
        Some(Arc::new(Grid {
            allowed: ndims.to_vec(),
            ..*self
        }))
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
        let mut out = Vec::new();
        for k in 0..crate::grid::knobs() {
            let Some((d, i)) = crate::grid::knob(k).filter(|(d, _)| self.allowed.contains(d))
            else {
                continue;
            };
            let Some(col) = pts
                .iter()
                .map(|p| (self.term)(d, i, p.n, p.rank))
                .collect::<Option<Vec<i64>>>()
            else {
                continue;
            };
            let rows: Rows = col
                .iter()
                .map(|&x| match self.scaled {
                    true => vec![Rat::int(x)],
                    false => vec![Rat::int(x), Rat::ONE],
                })
                .collect();
            if let Solution::Unique(mut c) = solve(&rows, &ys) {
                c.push(Rat::int(k));
                out.push(c);
            }
        }
        out
    }
    fn eval(&self, c: &[Rat], n: i64, rank: i64) -> Option<i64> {
        let (k, coef) = c.split_last()?;
        let (d, i) = crate::grid::knob(k.to_i64()?)?;
        let x = Rat::int((self.term)(d, i, n, rank)?);
        let y = x.checked_mul(*coef.first()?)?;
        match coef.get(1) {
            Some(b) => y.checked_add(*b)?.to_i64(),
            None => y.to_i64(),
        }
    }
    fn describe(&self, c: &[Rat]) -> String {
        let Some((k, coef)) = c.split_last() else {
            return String::new();
        };
        let (d, i) = k.to_i64().and_then(crate::grid::knob).unwrap_or((0, 0));
        poly(coef, &[&(self.show)(d, i), ""])
    }
}

/// `floor(K/n)` or `ceil(K/n)` for an unknown integer `K` (strong-scaling loop counts that do
/// not divide evenly). Each observation bounds `K` to an interval; the proposals are the two
/// ends of their intersection, so a caller that refuses on disagreement refuses when the data
/// do not pin the value at the target down.
struct RoundedInverse {
    ceil: bool,
}

impl RoundedInverse {
    fn bounds(&self, p: &Point) -> Option<(i128, i128)> {
        let (y, n) = (p.y as i128, p.n as i128);
        if n <= 0 {
            return None;
        }
        Some(if self.ceil {
            ((y - 1) * n + 1, y * n)
        } else {
            (y * n, y * n + n - 1)
        })
    }
    fn apply(&self, k: i128, n: i64) -> Option<i64> {
        if n <= 0 {
            return None;
        }
        let n = n as i128;
        let v = if self.ceil {
            -((-k).div_euclid(n))
        } else {
            k.div_euclid(n)
        };
        i64::try_from(v).ok()
    }
}

impl Model for RoundedInverse {
    fn name(&self) -> &str {
        if self.ceil { "ceil-div" } else { "floor-div" }
    }
    fn vars(&self) -> Vars {
        Vars::N
    }
    fn nparams(&self) -> usize {
        1
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let mut lo = i128::MIN;
        let mut hi = i128::MAX;
        for p in pts {
            let Some((a, b)) = self.bounds(p) else {
                return vec![];
            };
            lo = lo.max(a);
            hi = hi.min(b);
        }
        if lo > hi || lo == i128::MIN {
            return vec![];
        }
        let to = |k: i128| i64::try_from(k).ok().map(Rat::int);
        match (to(lo), to(hi)) {
            (Some(a), Some(b)) if a == b => vec![vec![a]],
            (Some(a), Some(b)) => vec![vec![a], vec![b]],
            _ => vec![],
        }
    }
    fn eval(&self, c: &[Rat], n: i64, _rank: i64) -> Option<i64> {
        self.apply(c.first()?.to_i64()? as i128, n)
    }
    fn describe(&self, c: &[Rat]) -> String {
        let k = c.first().copied().unwrap_or(Rat::ZERO);
        if self.ceil {
            format!("ceil({k}/n)")
        } else {
            format!("floor({k}/n)")
        }
    }
}

/// `a*floor(K/n)` for unknown integers `a > 1` and `K`: a strong-scaled count of elements
/// measured in bytes (`floor(T/n)` elements of `a` bytes each, as HDF5 and MPI-IO views
/// express it). `a` is tried among the divisors of the values' greatest common divisor; each
/// `a` that leaves `floor(K/n)` values proposes the ends of `K`'s interval, so a caller that
/// refuses on disagreement refuses when the data do not pin the value at the target down.
struct ScaledFloorDiv;

/// At most this many divisors of the values' common divisor are tried as the scale.
const MAX_SCALES: usize = 64;
// (The divisors come from the common divisor's prime factors, `crate::factor`: every one is
// found, in microseconds whatever the value. Trial division took 3 * 10^9 steps on a value near
// 2^62, then was bounded at 2^20 and missed the divisors of values whose prime factors all
// exceed it.)

impl Model for ScaledFloorDiv {
    fn name(&self) -> &str {
        "scaled-floor-div"
    }
    fn vars(&self) -> Vars {
        Vars::N
    }
    fn nparams(&self) -> usize {
        2
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        let g = pts
            .iter()
            .fold(0u64, |g, p| crate::factor::gcd(g, p.y.unsigned_abs()));
        if g < 2 || pts.iter().any(|p| p.y < 0) {
            return vec![];
        }
        // Values that `floor(K/n)` or `K/n + c` already fit at four scales or more are
        // theirs: with a scale, an exact division fits many coarser (a, K) pairs that
        // disagree beyond the inputs. Leave-one-scale-out's refits (three scales of a
        // strong-scaled count may all divide evenly) are not excluded: the held-out scale
        // must pin the scale down.
        if scales(pts).len() < 4 {
            return self.fit_scales(pts, g);
        }
        let floor = RoundedInverse { ceil: false };
        let Some(inverse) = pts
            .iter()
            .map(|p| Some(vec![Rat::new(1, p.n as i128)?, Rat::ONE]))
            .collect::<Option<Vec<Vec<Rat>>>>()
        else {
            return vec![];
        };
        let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
        if !floor.fit(pts).is_empty() || matches!(solve(&inverse, &ys), Solution::Unique(_)) {
            return vec![];
        }
        self.fit_scales(pts, g)
    }
    fn eval(&self, c: &[Rat], n: i64, _rank: i64) -> Option<i64> {
        let (k, a) = (c.first()?.to_i64()?, c.get(1)?.to_i64()?);
        RoundedInverse { ceil: false }
            .apply(k as i128, n)?
            .checked_mul(a)
    }
    fn describe(&self, c: &[Rat]) -> String {
        let k = c.first().copied().unwrap_or(Rat::ZERO);
        let a = c.get(1).copied().unwrap_or(Rat::ONE);
        format!("{a}*floor({k}/n)")
    }
}

impl ScaledFloorDiv {
    /// The proposals for every scale `a > 1` dividing `g`, the values' common divisor.
    fn fit_scales(&self, pts: &[Point], g: u64) -> Vec<Vec<Rat>> {
        let scales = crate::factor::divisors_above_one(g, MAX_SCALES).unwrap_or_else(|| vec![g]);
        let floor = RoundedInverse { ceil: false };
        let mut out = Vec::new();
        for a in scales {
            let Ok(ai) = i64::try_from(a) else { continue };
            let scaled: Vec<Point> = pts.iter().map(|p| Point { y: p.y / ai, ..*p }).collect();
            for mut k in floor.fit(&scaled) {
                k.push(Rat::int(ai));
                out.push(k);
            }
        }
        out
    }
}

fn pow2_floor(n: i64) -> Option<i64> {
    (n > 0).then(|| 1i64 << n.ilog2())
}

/// Renders `Σ c_j · name_j` readably, skipping zero terms.
fn poly(c: &[Rat], names: &[&str]) -> String {
    let mut s = String::new();
    for (k, name) in c.iter().zip(names) {
        if k.is_zero() {
            continue;
        }
        let neg = *k < Rat::ZERO;
        let abs = if neg {
            Rat::ZERO.checked_sub(*k).unwrap_or(*k)
        } else {
            *k
        };
        if s.is_empty() {
            if neg {
                s.push('-');
            }
        } else {
            s.push_str(if neg { " - " } else { " + " });
        }
        match (*name, abs == Rat::ONE) {
            ("", _) => s.push_str(&abs.to_string()),
            (x, true) => s.push_str(x),
            (x, false) if x.starts_with('/') => {
                s.push_str(&format!("{abs}{x}"));
            }
            (x, false) => {
                if abs.den() != 1 {
                    s.push_str(&format!("({abs})*{x}"));
                } else {
                    s.push_str(&format!("{abs}*{x}"));
                }
            }
        }
    }
    if s.is_empty() { "0".into() } else { s }
}

fn r(v: i64) -> Option<Rat> {
    Some(Rat::int(v))
}

/// The built-in models of the rank count, simplest first.
pub fn builtin_n_models() -> Vec<Arc<dyn Model>> {
    vec![
        Arc::new(Basis {
            name: "constant",
            vars: Vars::N,
            terms: vec![|_, _| r(1)],
            show: |c| poly(c, &[""]),
        }),
        Arc::new(Basis {
            name: "linear",
            vars: Vars::N,
            terms: vec![|n, _| r(n), |_, _| r(1)],
            show: |c| poly(c, &["n", ""]),
        }),
        Arc::new(Basis {
            name: "inverse",
            vars: Vars::N,
            terms: vec![|n, _| Rat::new(1, n as i128)],
            show: |c| poly(c, &["/n"]),
        }),
        Arc::new(Basis {
            name: "inverse+constant",
            vars: Vars::N,
            terms: vec![|n, _| Rat::new(1, n as i128), |_, _| r(1)],
            show: |c| poly(c, &["/n", ""]),
        }),
        Arc::new(RoundedInverse { ceil: false }),
        Arc::new(RoundedInverse { ceil: true }),
        Arc::new(ScaledFloorDiv),
        Arc::new(Basis {
            name: "pow2-floor",
            vars: Vars::N,
            terms: vec![|n, _| pow2_floor(n).map(Rat::int), |_, _| r(1)],
            show: |c| poly(c, &["pow2floor(n)", ""]),
        }),
        Arc::new(Basis {
            name: "pow2-remainder",
            vars: Vars::N,
            terms: vec![|n, _| pow2_floor(n).map(|p| Rat::int(n - p)), |_, _| r(1)],
            show: |c| poly(c, &["(n - pow2floor(n))", ""]),
        }),
        Arc::new(Basis {
            name: "log2",
            vars: Vars::N,
            terms: vec![
                |n, _| (n > 0).then(|| Rat::int(n.ilog2() as i64)),
                |_, _| r(1),
            ],
            show: |c| poly(c, &["log2(n)", ""]),
        }),
        // A sum over the ranks of a size linear in the rank (the bytes an `MPI_Allgatherv`
        // receives when rank r sends `a*r + b`: `a*n(n-1)/2 + b*n`), or a square grid's
        // cells. A fallback: tried only where no other model fits, and with three coefficients
        // it needs four scales, one of them left out and predicted.
        Arc::new(Tagged {
            basis: Basis {
                name: "quadratic",
                vars: Vars::N,
                terms: vec![
                    |n, _| n.checked_mul(n).map(Rat::int),
                    |n, _| r(n),
                    |_, _| r(1),
                ],
                show: |c| poly(c, &["n^2", "n", ""]),
            },
            width: false,
            fallback: true,
        }),
        // A dimension of the process grid `MPI_Dims_create` makes: a block count, or a
        // global extent of blocks of fixed size.
        Arc::new(Grid {
            name: "grid-dims",
            vars: Vars::N,
            scaled: true,
            term: |d, i, n, _| Some(crate::grid::dims_create(n, d)?[i]),
            show: |d, i| format!("dims(n, {d})[{i}]"),
            allowed: Vec::new(),
        }),
        // Text that prints the rank count (`fprintf(log, "ckpt: %d ranks\n", n)`) is one byte
        // longer per decimal digit of n. Last in the list: a step at 10, 100, ... is only the
        // answer when nothing smoother reproduces the values, and it fits only where the
        // inputs straddle a power of ten (otherwise its column equals the constant's).
        Arc::new(width(Basis {
            name: "digits",
            vars: Vars::N,
            terms: vec![|n, _| digits_of(n), |_, _| r(1)],
            show: |c| poly(c, &["digits(n)", ""]),
        })),
        // The same for the last rank (`"ranks 0-%d", n - 1`). The inputs rarely tell it from
        // `digits(n)`; the two disagree only at a power of ten (100, 1000 ranks), where the
        // caller then refuses instead of guessing which the program prints.
        Arc::new(width(Basis {
            name: "digits-last-rank",
            vars: Vars::N,
            terms: vec![|n, _| digits_of(n.checked_sub(1)?), |_, _| r(1)],
            show: |c| poly(c, &["digits(n - 1)", ""]),
        })),
    ]
}

/// `digits(x)` as a model term: defined for non-negative `x` only (a rank count or a rank).
fn digits_of(x: i64) -> Option<Rat> {
    (x >= 0).then(|| Rat::int(decimal_digits(x)))
}

fn max_n(pts: &[Point]) -> i64 {
    pts.iter().map(|p| p.n).max().unwrap_or(1)
}

/// The largest observed `|rank|` (beyond which `rank/k` is zero and `rank%k` is `rank`).
fn max_rank(pts: &[Point]) -> i64 {
    pts.iter()
        .map(|p| p.rank.checked_abs().unwrap_or(i64::MAX))
        .max()
        .unwrap_or(0)
}

fn min_n(pts: &[Point]) -> i64 {
    pts.iter().map(|p| p.n).min().unwrap_or(1)
}

/// The built-in per-rank models, used when a parameter's rank groups do not line up across
/// scales.
pub fn builtin_rank_models() -> Vec<Arc<dyn Model>> {
    vec![
        Arc::new(Search {
            name: "rank-modulo",
            vars: Vars::NRank,
            knobs: |p| 0..=min_n(p) - 1,
            term: |a, n, rank| (n > 0).then(|| (rank + a).rem_euclid(n)),
            show: |c, a| {
                let inner = if a == 0 {
                    "(rank % n)".to_string()
                } else {
                    format!("((rank+{a}) % n)")
                };
                // Written as the issue and the papers write it: `((rank+1) % n) * b`.
                let (b, rest) = (c[0], &c[1..]);
                let head = match b {
                    b if b == Rat::ONE => inner,
                    b if b.is_zero() => String::new(),
                    b => format!("{inner} * {b}"),
                };
                match (head.is_empty(), rest.first().filter(|k| !k.is_zero())) {
                    (true, _) => poly(rest, &[""]),
                    (false, None) => head,
                    (false, Some(k)) => format!("{head} + {k}"),
                }
            },
        }),
        Arc::new(Search {
            name: "rank-blocks",
            vars: Vars::NRank,
            // A block size above every observed rank makes `rank/k` zero at every point, a
            // column that leaves its coefficient free (never a unique fit): not tried.
            knobs: |p| 2..=max_n(p).min(max_rank(p)),
            term: |k, _, rank| Some(rank / k),
            show: |c, k| poly(c, &[&format!("(rank/{k})"), ""]),
        }),
        Arc::new(Search {
            name: "rank-cyclic",
            vars: Vars::NRank,
            knobs: |p| 2..=max_n(p),
            term: |k, _, rank| Some(rank % k),
            show: |c, k| poly(c, &[&format!("(rank%{k})"), ""]),
        }),
        // Text that prints the rank (`fprintf(log, "rank %d ...", rank)`) is one byte longer
        // per decimal digit: rank 10 and rank 100 are where the size steps, not a block size.
        // Having this model next to rank-blocks makes scales that cannot tell the two apart
        // (all below 20 ranks) refuse instead of guessing `rank/10`.
        Arc::new(Basis {
            name: "rank-digits",
            vars: Vars::NRank,
            terms: vec![|_, rank| r(decimal_digits(rank)), |_, _| r(1)],
            show: |c| poly(c, &["digits(rank)", ""]),
        }),
        // A per-rank line that prints the rank and the rank count (`"rank %d of %d\n"`):
        // digits of both. With every input below 10 ranks its `digits(n)` column equals the
        // constant one and it does not fit, leaving such inputs to rank-digits.
        Arc::new(width(Basis {
            name: "rank-digits+digits",
            vars: Vars::NRank,
            terms: vec![|_, rank| digits_of(rank), |n, _| digits_of(n), |_, _| r(1)],
            show: |c| poly(c, &["digits(rank)", "digits(n)", ""]),
        })),
        // The relative peer of a periodic ring (the tracer stores `peer - rank`): `w` from
        // most ranks, `w - n` or `w + n` from the `|w|` ranks at the edge, where the shift
        // wraps around. One function of (n, rank) where the rank groups put the wrap-around
        // in a group of its own, which at small scales (two ranks away from the edge) a line
        // through the group's ranks absorbs, so the groups differ between scales.
        Arc::new(Search {
            name: "ring-peer",
            vars: Vars::NRank,
            knobs: |p| -(min_n(p) - 1)..=min_n(p) - 1,
            term: |w, n, rank| (n > 0).then(|| (rank + w).rem_euclid(n) - rank),
            show: |c, w| {
                let inner = format!("((rank{w:+}) % n - rank)");
                poly(c, &[&inner, ""])
            },
        }),
        // The rank's coordinate along one dimension of that grid, in the row-major order of
        // `MPI_Cart_create` (where a block starts), and the relative rank of its neighbour one
        // step up or down that dimension of the periodic grid (`MPI_Cart_shift`'s peers, a
        // halo exchange's), as the tracer stores a peer.
        Arc::new(Grid {
            name: "grid-coord",
            vars: Vars::NRank,
            scaled: false,
            term: |d, i, n, rank| {
                Some(crate::grid::coords(rank, &crate::grid::dims_create(n, d)?)?[i])
            },
            show: |d, i| format!("coords(rank, dims(n, {d}))[{i}]"),
            allowed: Vec::new(),
        }),
        Arc::new(Grid {
            name: "grid-peer-up",
            vars: Vars::NRank,
            scaled: false,
            term: |d, i, n, rank| crate::grid::shift(rank, &crate::grid::dims_create(n, d)?, i, 1),
            show: |d, i| format!("shift(rank, dims(n, {d}), {i}, +1)"),
            allowed: Vec::new(),
        }),
        Arc::new(Grid {
            name: "grid-peer-down",
            vars: Vars::NRank,
            scaled: false,
            term: |d, i, n, rank| crate::grid::shift(rank, &crate::grid::dims_create(n, d)?, i, -1),
            show: |d, i| format!("shift(rank, dims(n, {d}), {i}, -1)"),
            allowed: Vec::new(),
        }),
        // A value one rank alone holds (a root's receive count, which MPI reads on the root
        // only and the tracer records as 0 elsewhere): `c` more on rank `r` than on every
        // other. At 2 ranks the merge holds it as a line through both ranks (`-rank + 1`),
        // at more as two groups; per rank it is one function at every scale.
        Arc::new(Search {
            name: "rank-root",
            vars: Vars::NRank,
            knobs: |p| 0..=min_n(p) - 1,
            term: |r, _, rank| Some(i64::from(rank == r)),
            show: |c, r| poly(c, &[&format!("[rank=={r}]"), ""]),
        }),
        Arc::new(Basis {
            name: "rank-affine",
            vars: Vars::NRank,
            terms: vec![
                |_, rank| r(rank),
                |n, rank| r(n.checked_mul(rank)?),
                |n, _| r(n),
                |_, _| r(1),
            ],
            show: |c| poly(c, &["rank", "n*rank", "n", ""]),
        }),
    ]
}

/// A per-rank model of the node layout, `c * term(ppn, rank) + d`, where every node holds
/// `ppn` consecutive ranks: the layout is the run's, so a value fitted over runs of different
/// ranks per node (2 nodes of 1, 2, 3 and 4 ranks) is evaluated at the target's. Without a
/// known layout (`ppn` 0) it evaluates nowhere, so it never fits.
struct NodeTerm {
    name: &'static str,
    term: fn(i64, i64) -> Option<i64>,
    /// The term in readable form (`(rank/ppn)`).
    show: &'static str,
}

impl NodeTerm {
    fn at(&self, ppn: i64, rank: i64) -> Option<i64> {
        (ppn > 0 && rank >= 0)
            .then(|| (self.term)(ppn, rank))
            .flatten()
    }
}

impl Model for NodeTerm {
    fn name(&self) -> &str {
        self.name
    }
    fn vars(&self) -> Vars {
        Vars::NRank
    }
    fn nparams(&self) -> usize {
        2
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        line_in(pts, |p| self.at(p.ppn, p.rank))
    }
    fn eval(&self, _: &[Rat], _: i64, _: i64) -> Option<i64> {
        None
    }
    fn of_layout(&self) -> bool {
        true
    }
    fn eval_node(&self, c: &[Rat], _n: i64, ppn: i64, rank: i64) -> Option<i64> {
        let [a, b] = c else { return None };
        let x = Rat::int(self.at(ppn, rank)?);
        x.checked_mul(*a)?.checked_add(*b)?.to_i64()
    }
    fn describe(&self, c: &[Rat]) -> String {
        poly(c, &[self.show, ""])
    }
}

/// The one line `y = c * x + d` through every point, `x` a term of the point's layout (no fit
/// where a point has no such term, or the line is not unique).
fn line_in(pts: &[Point], x: impl Fn(&Point) -> Option<i64>) -> Vec<Vec<Rat>> {
    let Some(rows) = pts
        .iter()
        .map(|p| Some(vec![Rat::int(x(p)?), Rat::ONE]))
        .collect::<Option<Rows>>()
    else {
        return vec![];
    };
    let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
    match solve(&rows, &ys) {
        Solution::Unique(c) => vec![c],
        _ => vec![],
    }
}

/// The ranks per node itself, `c * ppn + d`: the size of a node's communicator, a count per
/// node. A function of the scale's layout, not of `n`, so over inputs that vary in both the
/// node count and the ranks per node it is what `n` cannot say.
struct PerNode;

impl Model for PerNode {
    fn name(&self) -> &str {
        "ranks-per-node"
    }
    fn vars(&self) -> Vars {
        Vars::N
    }
    fn nparams(&self) -> usize {
        2
    }
    fn fit(&self, pts: &[Point]) -> Vec<Vec<Rat>> {
        line_in(pts, |p| (p.ppn > 0).then_some(p.ppn))
    }
    fn eval(&self, _: &[Rat], _: i64, _: i64) -> Option<i64> {
        None
    }
    fn of_layout(&self) -> bool {
        true
    }
    fn eval_node(&self, c: &[Rat], _n: i64, ppn: i64, _rank: i64) -> Option<i64> {
        let [a, b] = c else { return None };
        if ppn <= 0 {
            return None;
        }
        Rat::int(ppn).checked_mul(*a)?.checked_add(*b)?.to_i64()
    }
    fn describe(&self, c: &[Rat]) -> String {
        poly(c, &["ppn", ""])
    }
}

/// The models of the node layout ([`Point::ppn`]): the ranks per node itself, and per rank
/// the node's index `rank/ppn`, the rank on its node `rank%ppn`, and the node's leader
/// `ppn*(rank/ppn)` (its first rank: what `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`'s color
/// is as the tracer records it).
pub fn builtin_node_models() -> Vec<Arc<dyn Model>> {
    vec![
        Arc::new(PerNode),
        // The same per rank, so that where the rank groups differ between scales the per-rank
        // fit sees the layout too (and refuses where `n` and the ranks per node both fit).
        Arc::new(NodeTerm {
            name: "node-size",
            term: |ppn, _| Some(ppn),
            show: "ppn",
        }),
        Arc::new(NodeTerm {
            name: "node-index",
            term: |ppn, rank| Some(rank / ppn),
            show: "(rank/ppn)",
        }),
        Arc::new(NodeTerm {
            name: "node-rank",
            term: |ppn, rank| Some(rank % ppn),
            show: "(rank%ppn)",
        }),
        Arc::new(NodeTerm {
            name: "node-leader",
            term: |ppn, rank| ppn.checked_mul(rank / ppn),
            show: "ppn*(rank/ppn)",
        }),
    ]
}

/// Decimal digits of a non-negative number (`0` has one).
fn decimal_digits(x: i64) -> i64 {
    let mut d = 1;
    let mut v = x.unsigned_abs();
    while v >= 10 {
        v /= 10;
        d += 1;
    }
    d
}

/// What the values grow with, when a step at each power of ten reproduces them but no model
/// survived the guards (or no single-variable model takes them): `Some("n")`, `Some("the
/// rank")` or `Some("the rank and of n")` when `a + b*digits(rank) + c*digits(n)` fits every
/// point exactly with a non-zero digit coefficient, fitted without the guards. For refusal
/// hints: such values come from text that prints numbers, not from the clock or a random
/// number generator, and tracing scales on both sides of a power of ten pins them down.
pub fn digits_growth(pts: &[Point]) -> Option<&'static str> {
    let ys: Vec<Rat> = pts.iter().map(|p| Rat::int(p.y)).collect();
    let fits = |terms: &[fn(&Point) -> Option<Rat>]| -> Option<Vec<Rat>> {
        let rows = pts
            .iter()
            .map(|p| terms.iter().map(|t| t(p)).collect::<Option<Vec<Rat>>>())
            .collect::<Option<Vec<_>>>()?;
        match solve(&rows, &ys) {
            Solution::Unique(c) => Some(c),
            _ => None,
        }
    };
    let dn: fn(&Point) -> Option<Rat> = |p| digits_of(p.n);
    let dr: fn(&Point) -> Option<Rat> = |p| digits_of(p.rank);
    let one: fn(&Point) -> Option<Rat> = |_| Some(Rat::ONE);
    if let Some(c) = fits(&[dn, one]) {
        return (!c[0].is_zero()).then_some("n");
    }
    if let Some(c) = fits(&[dr, one]) {
        return (!c[0].is_zero()).then_some("the rank");
    }
    let c = fits(&[dr, dn, one])?;
    match (c[0].is_zero(), c[1].is_zero()) {
        (false, false) => Some("the rank and of n"),
        (true, false) => Some("n"),
        (false, true) => Some("the rank"),
        (true, true) => None,
    }
}

/// Number of distinct scales among the points.
fn scales(pts: &[Point]) -> Vec<i64> {
    let mut s: Vec<i64> = pts.iter().map(|p| p.n).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Every model of `models` that fits `pts` exactly and survives the guards:
/// - it has fewer coefficients than independent observations (scales for `f(n)` models,
///   points for per-rank ones), so at least one observation checks it;
/// - with four or more scales, leaving any one scale out and refitting still predicts the
///   left-out scale exactly (no single scale decides a coefficient on its own).
///
/// Models whose [`Model::vars`] differs from `vars` are skipped. The order follows `models`.
pub fn fit_exact<'m>(models: &'m [Arc<dyn Model>], vars: Vars, pts: &[Point]) -> Vec<Fitted<'m>> {
    let out = fit_tier(models, vars, pts, false);
    if out.is_empty() {
        fit_tier(models, vars, pts, true)
    } else {
        out
    }
}

/// [`fit_exact`] over the models that are fallbacks ([`Model::fallback`]) or are not.
fn fit_tier<'m>(
    models: &'m [Arc<dyn Model>],
    vars: Vars,
    pts: &[Point],
    fallback: bool,
) -> Vec<Fitted<'m>> {
    let sc = scales(pts);
    let mut out = Vec::new();
    for m in models
        .iter()
        .filter(|m| m.vars() == vars && m.fallback() == fallback)
    {
        let indep = match vars {
            Vars::N => sc.len(),
            Vars::NRank => pts.len(),
        };
        if m.nparams() >= indep {
            continue;
        }
        // Leave-one-scale-out refits the model, not a proposal: its verdict is the same for
        // every proposal, so it is taken once per model. (Taken per proposal, a search model
        // with thousands of fitting knob values redid its whole search thousands of times:
        // 3 * 10^7 solves, minutes, on a fuzz input at 3969 ranks.)
        let mut loo = None;
        for coeffs in m.fit(pts) {
            // Never trust a proposal (a plugin's least of all): check every point.
            if !pts
                .iter()
                .all(|p| m.eval_node(&coeffs, p.n, p.ppn, p.rank) == Some(p.y))
            {
                continue;
            }
            if sc.len() >= 4 && !*loo.get_or_insert_with(|| loo_holds(m.as_ref(), pts, &sc)) {
                break;
            }
            out.push(Fitted {
                model: m.as_ref(),
                coeffs,
            });
        }
    }
    out
}

fn loo_holds(m: &dyn Model, pts: &[Point], sc: &[i64]) -> bool {
    sc.iter().all(|&left| {
        let (held, kept): (Vec<Point>, Vec<Point>) = pts.iter().partition(|p| p.n == left);
        m.fit(&kept).iter().any(|c| {
            held.iter()
                .all(|p| m.eval_node(c, p.n, p.ppn, p.rank) == Some(p.y))
        })
    })
}

/// The outcome of evaluating every surviving model at the target.
#[derive(Debug)]
pub enum Agreement<'m, T> {
    /// All models that evaluate at the target agree; the first (simplest) is returned.
    Agree(Fitted<'m>, T),
    /// Two models fit every input but predict different values at the target.
    Disagree {
        /// The first model and its prediction.
        first: (Fitted<'m>, T),
        /// A model predicting otherwise.
        second: (Fitted<'m>, T),
    },
    /// No model fits (or none evaluates at the target).
    None,
}

/// Evaluates each fit with `at` and checks they agree. Fits that cannot be evaluated at the
/// target (a non-integer `k/n`) drop out.
pub fn agree<'m, T: PartialEq>(
    fits: Vec<Fitted<'m>>,
    mut at: impl FnMut(&Fitted<'m>) -> Option<T>,
) -> Agreement<'m, T> {
    let mut first: Option<(Fitted<'m>, T)> = None;
    for f in fits {
        let Some(v) = at(&f) else { continue };
        match &first {
            None => first = Some((f, v)),
            Some((_, v0)) if *v0 == v => {}
            Some(_) => {
                return Agreement::Disagree {
                    first: first.expect("set"),
                    second: (f, v),
                };
            }
        }
    }
    match first {
        Some((f, v)) => Agreement::Agree(f, v),
        None => Agreement::None,
    }
}

/// Names of the models of kind `vars`, for refusal messages.
pub fn names(models: &[Arc<dyn Model>], vars: Vars) -> Vec<String> {
    models
        .iter()
        .filter(|m| m.vars() == vars)
        .map(|m| m.name().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(f: impl Fn(i64) -> i64) -> Vec<Point> {
        [4, 8, 12, 16]
            .iter()
            .map(|&n| Point {
                n,
                ppn: 0,
                rank: 0,
                y: f(n),
            })
            .collect()
    }

    fn predict(models: &[Arc<dyn Model>], p: &[Point], target: i64) -> Option<(String, i64)> {
        match agree(fit_exact(models, Vars::N, p), |f| f.eval(target, 0)) {
            Agreement::Agree(f, v) => Some((f.describe(), v)),
            _ => None,
        }
    }

    #[test]
    fn a_sum_over_ranks_is_quadratic_only_where_nothing_else_fits() {
        let m = builtin_n_models();
        // An Allgatherv's received bytes when rank r sends 4(r+1) bytes: 2n(n+1).
        assert_eq!(
            predict(&m, &pts(|n| 2 * n * (n + 1)), 32),
            Some(("2*n^2 + 2*n".into(), 2112))
        );
        // Linear data keep their linear model (the fallback is not tried).
        let fits = fit_exact(&m, Vars::N, &pts(|n| 3 * n + 1));
        assert!(fits.iter().all(|f| f.model.name() != "quadratic"));
        // Three scales leave no scale out to check three coefficients: no fit.
        let three: Vec<Point> = pts(|n| n * n).into_iter().take(3).collect();
        assert!(fit_exact(&m, Vars::N, &three).is_empty());
    }

    #[test]
    fn n_models_extrapolate_exactly() {
        let m = builtin_n_models();
        assert_eq!(predict(&m, &pts(|_| 7), 64), Some(("7".into(), 7)));
        assert_eq!(predict(&m, &pts(|n| n - 1), 64), Some(("n - 1".into(), 63)));
        assert_eq!(
            predict(&m, &pts(|n| n / 4), 64),
            Some(("(1/4)*n".into(), 16))
        );
        assert_eq!(
            predict(&m, &pts(|n| 960 / n), 64),
            Some(("960/n".into(), 15))
        );
        assert_eq!(
            predict(&m, &pts(|n| 96 / n + 2), 32),
            Some(("96/n + 2".into(), 5))
        );
        assert_eq!(
            predict(&m, &pts(|n| 4096 * n), 1 << 20),
            Some(("4096*n".into(), 4096 << 20))
        );
    }

    #[test]
    fn digits_of_n_only_when_nothing_simpler_fits() {
        let m = builtin_n_models();
        // `fprintf(log, "ckpt: %d ranks\n", n)` returns 37 at 4 and 8 ranks, 38 at 12 and 16.
        let p = pts(|n| 36 + decimal_digits(n));
        let fits = fit_exact(&m, Vars::N, &p);
        let names: Vec<&str> = fits.iter().map(|f| f.model.name()).collect();
        assert_eq!(names, ["digits", "digits-last-rank"], "{fits:?}");
        assert_eq!(fits[0].describe(), "digits(n) + 36");
        assert_eq!(fits[1].describe(), "digits(n - 1) + 36");
        // Both sides of the next power of ten.
        assert_eq!(predict(&m, &p, 32), Some(("digits(n) + 36".into(), 38)));
        assert_eq!(predict(&m, &p, 128), Some(("digits(n) + 36".into(), 39)));
        // At 100 ranks the inputs cannot tell n from n - 1: refused, not guessed.
        assert!(matches!(
            agree(fits, |f| f.eval(100, 0)),
            Agreement::Disagree { .. }
        ));
        // Values a simpler model fits are not given a step.
        let simpler: [fn(i64) -> i64; 3] = [|n| 3 * n + 1, |n| 960 / n, |n| n.ilog2() as i64];
        for f in simpler {
            assert!(
                !fit_exact(&m, Vars::N, &pts(f))
                    .iter()
                    .any(|f| f.model.name().starts_with("digits")),
            );
        }
        // Scales on one side of 10 say nothing about a step there: the column is the
        // constant's, and constant values are the constant model's.
        let low: Vec<Point> = [2i64, 4, 6, 8]
            .iter()
            .map(|&n| Point {
                n,
                ppn: 0,
                rank: 0,
                y: 37,
            })
            .collect();
        let fits = fit_exact(&m, Vars::N, &low);
        assert_eq!(fits[0].model.name(), "constant");
        assert!(!fits.iter().any(|f| f.model.name().starts_with("digits")));
        // One scale past the step decides it alone: leave-one-scale-out rejects it.
        let one: Vec<Point> = [8i64, 16, 32, 64]
            .iter()
            .map(|&n| Point {
                n,
                ppn: 0,
                rank: 0,
                y: 36 + decimal_digits(n),
            })
            .collect();
        assert!(fit_exact(&m, Vars::N, &one).is_empty());
        // ... but what the values look like is still said.
        assert_eq!(digits_growth(&one), Some("n"));
        assert_eq!(digits_growth(&pts(|n| 3 * n + 1)), None);
        assert_eq!(digits_growth(&low), None);
    }

    #[test]
    fn per_rank_lines_with_digits_of_rank_and_n() {
        let m = builtin_rank_models();
        // `fprintf(log, "rank %d of %d\n", rank, n)`: 10 bytes plus both widths.
        let p: Vec<Point> = [4i64, 8, 12, 16]
            .iter()
            .flat_map(|&n| {
                (0..n).map(move |rank| Point {
                    n,
                    ppn: 0,
                    rank,
                    y: 10 + decimal_digits(rank) + decimal_digits(n),
                })
            })
            .collect();
        let fits = fit_exact(&m, Vars::NRank, &p);
        assert_eq!(fits.len(), 1, "{fits:?}");
        assert_eq!(fits[0].describe(), "digits(rank) + digits(n) + 10");
        assert_eq!(fits[0].eval(128, 127), Some(16));
        assert_eq!(fits[0].eval(128, 9), Some(14));
        assert_eq!(digits_growth(&p), Some("the rank and of n"));
    }

    #[test]
    fn ceil_division_and_ambiguity() {
        let m = builtin_n_models();
        // ceil(1000/n) at 4, 8, 12, 16 = 250, 125, 84, 63; the data pin K to 997..=1000.
        let p = pts(|n| (1000 + n - 1) / n);
        let fits = fit_exact(&m, Vars::N, &p);
        assert!(
            fits.iter().any(|f| f.model.name() == "ceil-div"),
            "{fits:?}"
        );
        // At 32 every K in 993..=1000 gives 32 (wait: 1000/32 = 31.25 -> 32): agreement.
        assert!(matches!(
            agree(fits.clone(), |f| f.eval(32, 0)),
            Agreement::Agree(_, 32)
        ));
        // At 999 the candidate Ks disagree (ceil(997/999) = 1 = ceil(1000/999)) ... and at 500
        // ceil(997/500)=2, ceil(1000/500)=2; at 998: 1 vs 2.
        assert!(matches!(
            agree(fits, |f| f.eval(998, 0)),
            Agreement::Disagree { .. }
        ));
    }

    #[test]
    fn scaled_floor_division_of_a_strong_scaled_byte_count() {
        let m = builtin_n_models();
        // 4 bytes times floor(1000003/n) at 4, 8, 12, 16: 1000000, 500000, 333332, 250000,
        // which plain floor(K/n) does not fit (333332*12 > 1000003*4 - 4).
        let p = pts(|n| 4 * (1000003 / n));
        let fits = fit_exact(&m, Vars::N, &p);
        assert!(
            fits.iter().all(|f| f.model.name() == "scaled-floor-div") && !fits.is_empty(),
            "{fits:?}"
        );
        for target in [32i64, 64, 1000] {
            assert!(
                matches!(agree(fits.clone(), |f| f.eval(target, 0)), Agreement::Agree(_, v) if v == 4 * (1000003 / target)),
                "at {target}"
            );
        }
        // Values with no common divisor above 1 are not its business.
        assert!(
            !fit_exact(&m, Vars::N, &pts(|n| 1000003 / n + 1))
                .iter()
                .any(|f| f.model.name() == "scaled-floor-div")
        );
    }

    #[test]
    fn guards_refuse_single_point_coefficients() {
        let m = builtin_n_models();
        // Random-looking values fit nothing.
        assert!(fit_exact(&m, Vars::N, &pts(|n| [3, 91, 17, 44][(n / 4 - 1) as usize])).is_empty());
        // Only n=12 has a non-zero pow2 remainder, so that model is decided by one scale and
        // leave-one-out rejects it.
        let p = pts(|n| if n == 12 { 100 } else { 1 });
        assert!(fit_exact(&m, Vars::N, &p).is_empty());
    }

    #[test]
    fn rank_models_fit_neighbour_and_blocks() {
        let m = builtin_rank_models();
        let mut p = Vec::new();
        for n in [4i64, 8, 12, 16] {
            for rank in 0..n {
                p.push(Point {
                    n,
                    ppn: 0,
                    rank,
                    y: ((rank + 1) % n) * 1024,
                });
            }
        }
        let fits = fit_exact(&m, Vars::NRank, &p);
        assert_eq!(fits[0].describe(), "((rank+1) % n) * 1024");
        assert_eq!(fits[0].eval(64, 63), Some(0));
        let blocks: Vec<Point> = [4i64, 8, 12, 16]
            .iter()
            .flat_map(|&n| {
                (0..n).map(move |rank| Point {
                    n,
                    ppn: 0,
                    rank,
                    y: rank / 4,
                })
            })
            .collect();
        let f = fit_exact(&m, Vars::NRank, &blocks);
        assert_eq!(f[0].describe(), "(rank/4)");
    }

    #[test]
    fn scaled_floor_division_of_huge_values_tries_bounded_divisors() {
        // Found by fuzzing (fuzz/, target plugin): values whose common divisor is a large
        // prime made the divisor search trial-divide up to its square root, 1.5 * 10^9 steps.
        // p = 2^61 - 1 is prime: p * floor(8/n) at 4, 8, 12 (2p, p, 0) fits with the scale p
        // alone (a prime: its one divisor above one).
        let m = builtin_n_models();
        let at = |y: [i64; 3]| -> Vec<Point> {
            [4, 8, 12]
                .iter()
                .zip(y)
                .map(|(&n, y)| Point {
                    n,
                    ppn: 0,
                    rank: 0,
                    y,
                })
                .collect()
        };
        let scales = |pts: &[Point]| -> Vec<Rat> {
            fit_exact(&m, Vars::N, pts)
                .iter()
                .filter(|f| f.model.name() == "scaled-floor-div")
                .map(|f| f.coeffs[1])
                .collect()
        };
        let p: i64 = (1 << 61) - 1;
        let found = scales(&at([2 * p, p, 0]));
        assert!(!found.is_empty(), "no scaled-floor-div fit");
        assert!(found.iter().all(|&a| a == Rat::int(p)), "{found:?}");
        // A composite common divisor above 2^40 (3p): the values h * floor(4/n) fit with h.
        let h = 3 * p;
        let found = scales(&at([h, 0, 0]));
        assert!(found.contains(&Rat::int(h)), "{found:?}");
    }

    #[test]
    fn search_models_on_huge_rank_counts_solve_boundedly() {
        // Found by fuzzing (fuzz/, target plugin, artifact
        // timeout-cb0754ae43f53b8a5e1a40418cd0a94022140761): fifteen per-rank points at rank
        // counts 1, 1104, 2645 and 3969, all zero but rank 2031 of 3969 at 6.1 * 10^18.
        // rank-blocks fits every block size up to 2031 and rank-cyclic every size, and each of
        // those thousands of proposals refitted the whole knob search once per left-out scale:
        // 3 * 10^7 solves, 95 and 166 s.
        let mut pts = vec![
            Point {
                n: 1,
                ppn: 0,
                rank: 0,
                y: 0
            };
            11
        ];
        pts.extend([
            Point {
                n: 2645,
                ppn: 0,
                rank: 0,
                y: 0,
            },
            Point {
                n: 3969,
                ppn: 0,
                rank: 2031,
                y: 6124616179051944005,
            },
            Point {
                n: 1104,
                ppn: 0,
                rank: 0,
                y: 0,
            },
        ]);
        pts.insert(
            1,
            Point {
                n: 1,
                ppn: 0,
                rank: 0,
                y: 0,
            },
        );
        let m = {
            let mut m = builtin_n_models();
            m.extend(builtin_rank_models());
            m
        };
        crate::rational::SOLVES.with(|c| c.set(0));
        let fits: Vec<String> = fit_exact(&m, Vars::NRank, &pts)
            .iter()
            .map(|f| format!("{f:?}"))
            .collect();
        let solves = crate::rational::SOLVES.with(|c| c.get());
        // Nothing fits (rank 2031's value alone cannot pin a per-rank pattern down), as before.
        assert!(fits.is_empty(), "{fits:?}");
        // The fit and its refits without each of the four scales (five fits of every model),
        // each solving once per distinct system: rank-cyclic's 2030 block sizes up to the
        // largest rank and one beyond it, rank-blocks' few hundred distinct quotients, one each
        // for the other models. 87,224,313 solves before.
        assert!(solves <= 5 * 2500, "{solves} solves");
    }
}
