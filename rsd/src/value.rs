//! Elastic values: lossless functions of loop iteration indices and of the rank.
//!
//! Inside one rank, a parameter of an event nested in loops is a [`Val`] over the iteration
//! indices of its enclosing loops (outermost first): a constant, an affine function of the
//! indices (an arithmetic sequence per loop), a periodic vector or an explicit vector over the
//! outermost loop. Across ranks, the leaves of a `Val` become [`RankFn`]s (`a*rank + b`, blocks
//! `rank/k`, `rank%k`), grouped by rank set in an [`Elastic`]. Nothing is approximated: a value
//! that fits no compact form is kept explicitly.

use crate::approx::Summary;
pub use crate::layout::FileEnd;
pub use crate::prefix::Exscan;
use crate::ranks::RankSet;
pub use crate::runvalue::RunKind;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A value as a function of the enclosing loops' iteration indices (outermost first).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Val<T> {
    /// The same value in every iteration.
    Const(T),
    /// `base + Σ strides[d] * i_d`, one stride per enclosing loop, outermost first.
    Lin {
        /// Value at iteration (0, 0, ...).
        base: T,
        /// Increment per iteration of each enclosing loop.
        strides: Vec<T>,
    },
    /// Explicit values over the outermost loop; each element is a value over the inner loops.
    Seq(Vec<Val<T>>),
    /// Periodic over the outermost loop: iteration `i` takes element `i % len`.
    Cycle(Vec<Val<T>>),
    /// Not exact: a statistical summary of the value over every iteration of the enclosing
    /// loops on every rank of its group ([`crate::approx`]). Appended after format version 1
    /// was fixed (a new variant index), so exact traces keep their bytes. Evaluates to the
    /// rounded mean; consumers that need exact values refuse it ([`crate::approx::first`]).
    Approx(Box<Summary>),
    /// An offset that is the running sum of a size of the same call over the ranks (and, when
    /// [`Exscan::running`], over the earlier calls): the prefix-sum model of a shared-file dump
    /// ([`crate::prefix`]). Appended after [`Val::Approx`] (a new variant index), so older
    /// traces keep their bytes. It depends on other ranks' values: [`crate::prefix::resolve`]
    /// turns it into exact per-rank values, and evaluating it alone gives only its start.
    Exscan(Box<Exscan<T>>),
    /// An offset at the end of the file's data so far (the end of the last region written to
    /// the same handle, over every rank and call site, before this call), plus the exclusive
    /// prefix sum of a size over the ranks of the same call where set: a shared-file dump
    /// written in turns ([`crate::layout`]). Appended after [`Val::Exscan`], so older traces
    /// keep their bytes. [`crate::layout::resolve`] turns it into exact per-rank values;
    /// evaluating it alone gives only its start.
    FileEnd(Box<FileEnd<T>>),
    /// A number that belongs to the run, not the program (a job id, a pid, a time): never
    /// fitted, filled in afresh by the consumers that issue calls ([`crate::runvalue`]).
    /// Appended after [`Val::FileEnd`], so older traces keep their bytes; a file holding one
    /// has minor version [`crate::format::RUN_VALUE_MINOR`]. Evaluates to its kind's marker
    /// ([`crate::runvalue::marker`]) until filled.
    Run(RunKind),
}

/// Guards recursion on values read from files: deeper nesting than this is corrupt.
pub const MAX_DEPTH: usize = 64;

impl<T: Clone> Val<T> {
    /// The numeric leaves in a fixed order (depth first).
    pub fn leaves(&self, out: &mut Vec<T>) {
        match self {
            Val::Const(x) => out.push(x.clone()),
            Val::Lin { base, strides } => {
                out.push(base.clone());
                out.extend(strides.iter().cloned());
            }
            Val::Seq(v) | Val::Cycle(v) => v.iter().for_each(|e| e.leaves(out)),
            Val::Approx(_) => {}
            Val::Exscan(x) => x.start.leaves(out),
            Val::FileEnd(x) => x.start.leaves(out),
            Val::Run(_) => {}
        }
    }

    /// The same shape with every leaf mapped.
    pub fn map<U>(&self, f: &mut impl FnMut(&T) -> U) -> Val<U> {
        match self {
            Val::Const(x) => Val::Const(f(x)),
            Val::Lin { base, strides } => Val::Lin {
                base: f(base),
                strides: strides.iter().map(&mut *f).collect(),
            },
            Val::Seq(v) => Val::Seq(v.iter().map(|e| e.map(f)).collect()),
            Val::Cycle(v) => Val::Cycle(v.iter().map(|e| e.map(f)).collect()),
            Val::Approx(a) => Val::Approx(a.clone()),
            Val::Exscan(x) => Val::Exscan(Box::new(Exscan {
                of: x.of,
                running: x.running,
                start: x.start.map(f),
                from: x.from,
            })),
            Val::FileEnd(x) => Val::FileEnd(Box::new(FileEnd {
                of: x.of,
                start: x.start.map(f),
            })),
            Val::Run(k) => Val::Run(*k),
        }
    }

    /// Rebuilds a value of this shape from leaves in [`Val::leaves`] order.
    pub fn with_leaves<U: Clone>(&self, leaves: &mut impl Iterator<Item = U>) -> Option<Val<U>> {
        Some(match self {
            Val::Const(_) => Val::Const(leaves.next()?),
            Val::Lin { strides, .. } => Val::Lin {
                base: leaves.next()?,
                strides: strides
                    .iter()
                    .map(|_| leaves.next())
                    .collect::<Option<_>>()?,
            },
            Val::Seq(v) => Val::Seq(
                v.iter()
                    .map(|e| e.with_leaves(leaves))
                    .collect::<Option<_>>()?,
            ),
            Val::Cycle(v) => Val::Cycle(
                v.iter()
                    .map(|e| e.with_leaves(leaves))
                    .collect::<Option<_>>()?,
            ),
            Val::Approx(a) => Val::Approx(a.clone()),
            Val::Exscan(x) => Val::Exscan(Box::new(Exscan {
                of: x.of,
                running: x.running,
                start: x.start.with_leaves(leaves)?,
                from: x.from,
            })),
            Val::FileEnd(x) => Val::FileEnd(Box::new(FileEnd {
                of: x.of,
                start: x.start.with_leaves(leaves)?,
            })),
            Val::Run(k) => Val::Run(*k),
        })
    }

    /// Whether this value is or holds a run value ([`Val::Run`]).
    pub fn holds_run(&self) -> bool {
        self.run_minor() > 0
    }

    /// The format minor version the run values this value is or holds need (the most of
    /// their kinds' [`crate::runvalue::RunKind::minor`]), 0 where it holds none.
    pub fn run_minor(&self) -> u32 {
        match self {
            Val::Run(k) => k.minor(),
            Val::Seq(v) | Val::Cycle(v) => v.iter().map(Val::run_minor).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Whether two values have the same shape (same variants and lengths, any leaves).
    pub fn same_shape<U>(&self, other: &Val<U>) -> bool {
        match (self, other) {
            (Val::Const(_), Val::Const(_)) => true,
            (Val::Lin { strides: a, .. }, Val::Lin { strides: b, .. }) => a.len() == b.len(),
            (Val::Seq(a), Val::Seq(b)) | (Val::Cycle(a), Val::Cycle(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_shape(y))
            }
            // A summary has no leaves: only the same summary has its shape, so per-rank
            // summaries stay apart until `approx` joins them.
            (Val::Approx(a), Val::Approx(b)) => a == b,
            (Val::Exscan(a), Val::Exscan(b)) => {
                a.of == b.of
                    && a.running == b.running
                    && a.from == b.from
                    && a.start.same_shape(&b.start)
            }
            (Val::FileEnd(a), Val::FileEnd(b)) => a.of == b.of && a.start.same_shape(&b.start),
            (Val::Run(a), Val::Run(b)) => a == b,
            _ => false,
        }
    }
}

impl Val<i64> {
    /// The value at the given iteration indices (outermost first). Indices beyond what the
    /// value depends on are ignored; missing ones count as 0. Wrapping arithmetic keeps a corrupt
    /// file from panicking; well-formed traces never wrap.
    ///
    /// `None` for [`Val::Exscan`] and [`Val::FileEnd`]: their value is their start plus what the
    /// other ranks' calls add ([`crate::prefix::resolve`]), which one value alone cannot know.
    /// Evaluating them to their start printed the wrong offsets in every consumer that forgot
    /// to resolve the trace first; [`crate::Trace::resolved`] is the evaluation with what they
    /// need, and [`Val::eval_start`] says by its name that it gives the start alone.
    pub fn eval(&self, idx: &[u64]) -> Option<i64> {
        match self {
            Val::Exscan(_) | Val::FileEnd(_) => None,
            _ => Some(self.eval_start(idx)),
        }
    }

    /// [`Val::eval`], with a model that needs the other ranks ([`Val::Exscan`],
    /// [`Val::FileEnd`]) taken as its start: for the code that resolves those models, which
    /// adds the rest itself.
    pub fn eval_start(&self, idx: &[u64]) -> i64 {
        match self {
            Val::Const(x) => *x,
            Val::Lin { base, strides } => strides.iter().zip(idx).fold(*base, |acc, (s, &i)| {
                acc.wrapping_add(s.wrapping_mul(i as i64))
            }),
            Val::Seq(v) => match (idx.first(), v.is_empty()) {
                (_, true) => 0,
                (Some(&i), false) => v[(i as usize).min(v.len() - 1)].eval_start(&idx[1..]),
                (None, false) => v[0].eval_start(&[]),
            },
            Val::Cycle(v) => match (idx.first(), v.is_empty()) {
                (_, true) => 0,
                (Some(&i), false) => v[(i % v.len() as u64) as usize].eval_start(&idx[1..]),
                (None, false) => v[0].eval_start(&[]),
            },
            Val::Approx(a) => a.typical(),
            Val::Exscan(x) => x.start.eval_start(idx),
            Val::FileEnd(x) => x.start.eval_start(idx),
            Val::Run(k) => crate::runvalue::marker(*k),
        }
    }

    /// Builds the value over one more (outer) loop that ran twice, taking `a` then `b`.
    /// Both range over `inner` loops.
    pub fn wrap2(a: Val<i64>, b: Val<i64>, inner: usize) -> Val<i64> {
        if a == b {
            return match a {
                Val::Const(_) => a,
                Val::Lin { base, mut strides } => {
                    strides.insert(0, 0);
                    Val::Lin { base, strides }
                }
                other => Val::Cycle(vec![other]),
            };
        }
        // Affine in the inner loops with the same strides on both sides: one more stride.
        // Compared in place, without building the (base, strides) pairs.
        fn parts(v: &Val<i64>, inner: usize) -> Option<(i64, Option<&[i64]>)> {
            match v {
                Val::Const(x) => Some((*x, None)),
                Val::Lin { base, strides } if strides.len() == inner => {
                    Some((*base, Some(strides)))
                }
                _ => None,
            }
        }
        if let (Some((ba, sa)), Some((bb, sb))) = (parts(&a, inner), parts(&b, inner)) {
            let zero = |s: Option<&[i64]>| s.is_none_or(|s| s.iter().all(|&x| x == 0));
            let same = match (sa, sb) {
                (Some(x), Some(y)) => x == y,
                (x, y) => zero(x) && zero(y),
            };
            if same && let Some(d) = bb.checked_sub(ba) {
                let mut strides = Vec::with_capacity(inner + 1);
                strides.push(d);
                match sa {
                    Some(s) => strides.extend_from_slice(s),
                    None => strides.resize(inner + 1, 0),
                }
                return Val::Lin { base: ba, strides };
            }
        }
        Val::Seq(vec![a, b])
    }

    /// The element of the outermost loop at iteration `i` (a value over the inner loops).
    fn nth_outer(&self, i: u64, inner: usize) -> Val<i64> {
        match self {
            Val::Const(x) => Val::Const(*x),
            Val::Lin { base, strides } => {
                let b =
                    base.wrapping_add(strides.first().copied().unwrap_or(0).wrapping_mul(i as i64));
                let rest = strides.get(1..).unwrap_or(&[]).to_vec();
                if rest.iter().all(|&s| s == 0) {
                    Val::Const(b)
                } else {
                    debug_assert_eq!(rest.len(), inner);
                    Val::Lin {
                        base: b,
                        strides: rest,
                    }
                }
            }
            Val::Seq(v) => v[(i as usize).min(v.len() - 1)].clone(),
            Val::Cycle(v) => v[(i % v.len() as u64) as usize].clone(),
            Val::Approx(_) | Val::Exscan(_) | Val::FileEnd(_) | Val::Run(_) => self.clone(),
        }
    }

    /// Whether `c` as iteration `n` keeps this value as it is (a constant, the next step of an
    /// affine sequence, or the next element of a cycle).
    pub fn continues(&self, n: u64, c: &Val<i64>, inner: usize) -> bool {
        match self {
            Val::Const(x) => matches!(c, Val::Const(y) if y == x),
            Val::Lin { base, strides } if strides.len() == inner + 1 => {
                // Compared in place: this runs once per parameter per event in a steady loop,
                // so it must not allocate.
                let next = strides[0]
                    .checked_mul(n as i64)
                    .and_then(|d| base.checked_add(d));
                match c {
                    Val::Const(y) => strides[1..].iter().all(|&s| s == 0) && next == Some(*y),
                    Val::Lin {
                        base: bc,
                        strides: sc,
                    } => sc[..] == strides[1..] && next == Some(*bc),
                    _ => false,
                }
            }
            Val::Lin { .. } => false,
            Val::Cycle(v) => v[(n % v.len() as u64) as usize] == *c,
            Val::Seq(_) | Val::Approx(_) | Val::Exscan(_) | Val::FileEnd(_) => false,
            Val::Run(k) => matches!(c, Val::Run(j) if j == k),
        }
    }

    /// [`Val::continues`] for a plain number over no inner loops, without building a value.
    #[inline]
    pub fn continues_const(&self, n: u64, x: i64) -> bool {
        match self {
            Val::Const(c) => *c == x,
            Val::Lin { base, strides } if strides.len() == 1 => {
                strides[0]
                    .checked_mul(n as i64)
                    .and_then(|d| base.checked_add(d))
                    == Some(x)
            }
            Val::Cycle(v) => v[(n % v.len() as u64) as usize] == Val::Const(x),
            _ => false,
        }
    }

    /// The one plain number `x` for which [`Val::continues_const`]`(n, x)` holds, if any: what
    /// a compressor can know in advance about where a value over no inner loops goes next.
    pub fn next_const(&self, n: u64) -> Option<i64> {
        match self {
            Val::Const(c) => Some(*c),
            Val::Lin { base, strides } if strides.len() == 1 => strides[0]
                .checked_mul(n as i64)
                .and_then(|d| base.checked_add(d)),
            Val::Cycle(v) => match v[(n % v.len() as u64) as usize] {
                Val::Const(x) => Some(x),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether the value is a constant or affine in the loop indices.
    pub fn is_regular(&self) -> bool {
        matches!(self, Val::Const(_) | Val::Lin { .. })
    }

    /// Appends iteration `n` (0-based; the loop has run `n` times so far) with value `c` over
    /// `inner` loops. Stays compact when `c` continues the pattern, else becomes explicit.
    pub fn extend(&mut self, n: u64, c: Val<i64>, inner: usize) {
        if self.continues(n, &c, inner) {
            return;
        }
        if let Val::Seq(v) = self {
            v.push(c);
            // Two equal halves make a period: [a b a b] -> cycle [a b]. Checked only at
            // lengths that are twice a small period, so it costs nothing in the steady state.
            let len = v.len();
            if len % 2 == 0 && len <= 32 && v[..len / 2] == v[len / 2..] {
                let half = v[..len / 2].to_vec();
                *self = Val::Cycle(half);
            }
            return;
        }
        if n == 1 {
            let first = self.nth_outer(0, inner);
            *self = Val::wrap2(first, c, inner);
            return;
        }
        let mut v: Vec<Val<i64>> = (0..n).map(|i| self.nth_outer(i, inner)).collect();
        v.push(c);
        *self = Val::Seq(v);
    }
}

/// A function of the rank, exact over the integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RankFn {
    /// The same for every rank.
    Const(i64),
    /// `a * rank + b`.
    Affine {
        /// Coefficient of the rank.
        a: i64,
        /// Constant term.
        b: i64,
    },
    /// `a * (rank / k) + b`: one value per block of `k` ranks.
    Div {
        /// Coefficient of the block index.
        a: i64,
        /// Block size.
        k: i64,
        /// Constant term.
        b: i64,
    },
    /// `a * (rank % k) + b`: repeats every `k` ranks.
    Mod {
        /// Coefficient of the position in the period.
        a: i64,
        /// Period.
        k: i64,
        /// Constant term.
        b: i64,
    },
    /// `(m + w)%p - m` with `m = (rank + o)%p`: the offset from the rank to the one `w`
    /// places on, cyclically, in its block of `p` consecutive ranks (blocks start where
    /// `rank + o` is a multiple of `p`). With `o = 0` it is the relative peer of a shift along
    /// one dimension of a periodic process grid (row-major or not: `p` is the dimension's
    /// extent times its stride, `w` the displacement times the stride, modulo `p`) or of a
    /// ring (`p` its size): `w` where the shift does not wrap around the grid's edge, `w - p`
    /// where it does, so no line through the ranks gives it and it used to take a rank group
    /// per wrap-around. The difference of two shifts of one block is a shift with a phase
    /// (`shift(w1) - shift(w2)` is `shift(w1 - w2)` with `o = w2`): the step of an affine
    /// sequence of peers, such as both neighbours of a dimension in a loop of two iterations.
    /// Appended after format version 1 was fixed (a new variant index): traces without it
    /// keep their bytes.
    Shift {
        /// The displacement in ranks, `0 < w < p`.
        w: i64,
        /// The block (the period of the wrap-around).
        p: i64,
        /// The phase, `0 <= o < p`.
        o: i64,
    },
    /// `a * (rank / k) + b`, plus `d` from rank `t` on: affine in the block index with one
    /// jump. An MPI library's aggregators see the file's blocks at a phase that drifts from
    /// one aggregator to the next, and where the drift crosses a block boundary a partial
    /// block appears or goes and a length wraps. Appended after format version 1 was fixed
    /// (a new variant index): traces without it keep their bytes.
    Step {
        /// Coefficient of the block index.
        a: i64,
        /// Block size (1: the rank itself).
        k: i64,
        /// Constant term.
        b: i64,
        /// The first rank with the jump.
        t: u32,
        /// The jump.
        d: i64,
    },
}

impl RankFn {
    /// The value at `rank`. Wrapping and a zero-divisor guard keep corrupt files from panicking.
    pub fn eval(&self, rank: u32) -> i64 {
        let r = rank as i64;
        match *self {
            RankFn::Const(c) => c,
            RankFn::Affine { a, b } => a.wrapping_mul(r).wrapping_add(b),
            RankFn::Div { a, k, b } => a.wrapping_mul(r / k.max(1)).wrapping_add(b),
            RankFn::Mod { a, k, b } => a.wrapping_mul(r % k.max(1)).wrapping_add(b),
            RankFn::Shift { w, p, o } => {
                let p = p.max(1);
                let m = r.wrapping_add(o).rem_euclid(p);
                (m.wrapping_add(w.rem_euclid(p)) % p).wrapping_sub(m)
            }
            RankFn::Step { a, k, b, t, d } => a
                .wrapping_mul(r / k.max(1))
                .wrapping_add(b)
                .wrapping_add(if rank >= t { d } else { 0 }),
        }
    }

    /// The canonical function through all points (ranks strictly increasing), if one of the
    /// forms fits exactly. Forms are tried in a fixed order and their coefficients derived from
    /// a prefix of the data, so the answer depends only on the points.
    pub fn fit(ranks: &[u32], vals: &[i64]) -> Option<RankFn> {
        let n = ranks.len();
        if n == 0 {
            return None;
        }
        if vals.iter().all(|&v| v == vals[0]) {
            return Some(RankFn::Const(vals[0]));
        }
        let check = |f: RankFn| ranks.iter().zip(vals).all(|(&r, &v)| f.eval(r) == v);
        if let Some(f) = fit_affine(ranks[0], vals[0], ranks[1], vals[1])
            && check(f)
        {
            return Some(f);
        }
        // Blocks: the first two change points are block boundaries, when each falls between
        // consecutive ranks.
        let changes: Vec<usize> = (0..n - 1)
            .filter(|&i| vals[i + 1] != vals[i])
            .take(2)
            .collect();
        if changes.len() == 2 && changes.iter().all(|&i| ranks[i + 1] == ranks[i] + 1) {
            let k = (ranks[changes[1] + 1] - ranks[changes[0] + 1]) as i64;
            let a = vals[changes[0] + 1].wrapping_sub(vals[changes[0]]);
            if k >= 2 {
                let f = RankFn::Div {
                    a,
                    k,
                    b: vals[0].wrapping_sub(a.wrapping_mul(ranks[0] as i64 / k)),
                };
                if check(f) {
                    return Some(f);
                }
            }
        }
        // Blocks seen through a strided rank set: every k-th rank holds `rank/k` (the writers
        // of an N-to-N/k pattern), so the set's own stride is the block size.
        let k = ranks[1] as i64 - ranks[0] as i64;
        if k >= 2 {
            let a = vals[1].wrapping_sub(vals[0]);
            let f = RankFn::Div {
                a,
                k,
                b: vals[0].wrapping_sub(a.wrapping_mul(ranks[0] as i64 / k)),
            };
            if check(f) {
                return Some(f);
            }
        }
        // Periods: the ranks where the value falls back are multiples of the period.
        let drops: Vec<usize> = (1..n).filter(|&i| vals[i] < vals[i - 1]).take(2).collect();
        let k = match drops.as_slice() {
            [a, b, ..] => (ranks[*b] - ranks[*a]) as i64,
            [a] if ranks[0] == 0 => ranks[*a] as i64,
            _ => 0,
        };
        if k >= 2 && n >= 2 {
            let (r0, r1) = (ranks[0] as i64 % k, ranks[1] as i64 % k);
            if r1 > r0 && (vals[1] - vals[0]) % (r1 - r0) == 0 {
                let a = (vals[1] - vals[0]) / (r1 - r0);
                let f = RankFn::Mod {
                    a,
                    k,
                    b: vals[0].wrapping_sub(a.wrapping_mul(r0)),
                };
                if check(f) {
                    return Some(f);
                }
            }
        }
        // Cyclic shifts, tried last so that what the other forms fit keeps its form.
        fit_shift(ranks, vals, check)
    }
}

/// The most phases [`fit_shift`] tries: the ranks between two consecutive ranks of the
/// set where the value changes (the ranks of a node's set skip the ranks that run other
/// nodes, such as a grid line's first rank).
const MAX_PHASES: i64 = 64;

/// The cyclic shift ([`RankFn::Shift`]) that values can be: two values, the positive one is
/// the displacement `w` (no wrap-around), the negative one `w - p` (wrapped), which gives the
/// block `p`. The first change of value between two ranks of the set says where the wrapped
/// part of a block starts (or ends): at one of the ranks after the first and up to the
/// second, tried in order; the first phase that `fits` wins.
///
/// Values of which one is taken by a single rank are left to the rank groups: a ring's one
/// wrap-around, or a root's value among the others' (`MPI_Gather`'s receive type, 7 at rank 0
/// and -1 elsewhere, is a shift by -1 of a ring of 8 at 8 ranks but no shift at 12). Either
/// keeps two groups at every scale, which extrap fits, where a shift at some scales and groups
/// at others would differ in shape between scales.
fn fit_shift(ranks: &[u32], vals: &[i64], fits: impl Fn(RankFn) -> bool) -> Option<RankFn> {
    let (lo, hi) = (*vals.iter().min()?, *vals.iter().max()?);
    if lo >= 0 || hi <= 0 || vals.iter().any(|&v| v != lo && v != hi) {
        return None;
    }
    let once = |x: i64| vals.iter().filter(|&&v| v == x).count() == 1;
    if once(lo) || once(hi) {
        return None;
    }
    let p = hi.checked_sub(lo)?;
    let i = (1..ranks.len()).find(|&i| vals[i] != vals[i - 1])?;
    let (a, b) = (i64::from(ranks[i - 1]), i64::from(ranks[i]));
    (a + 1..=b.min(a + MAX_PHASES))
        .map(|r| {
            let o = if vals[i] == lo {
                // The wrapped part starts at r: `(r + o) % p == p - w`.
                (p - hi - r).rem_euclid(p)
            } else {
                // A block starts at r: `(r + o) % p == 0`.
                (-r).rem_euclid(p)
            };
            RankFn::Shift { w: hi, p, o }
        })
        .find(|&f| fits(f))
}

/// The line through two points, if its slope is an integer.
pub fn fit_affine(r0: u32, v0: i64, r1: u32, v1: i64) -> Option<RankFn> {
    let dr = r1 as i64 - r0 as i64;
    let dv = v1.checked_sub(v0)?;
    if dr == 0 || dv % dr != 0 {
        return None;
    }
    let a = dv / dr;
    if a == 0 {
        return Some(RankFn::Const(v0));
    }
    Some(RankFn::Affine {
        a,
        b: v0.checked_sub(a.checked_mul(r0 as i64)?)?,
    })
}

/// The function through two consecutive points of a run of ranks that goes on with the same
/// rank step: the line when its slope is an integer, else the value affine in the position
/// along the run, `a * (rank / k) + b` with `k` the step (exact on `r0 + m*k`, where
/// `rank / k` is `r0 / k + m`). Ranks spaced unevenly by a partition of the index space (an
/// MPI library's aggregators, one per 5462 ranks) hold values affine in their index that no
/// integer line through the ranks gives.
fn fit_run((r0, v0): (u32, i64), (r1, v1): (u32, i64)) -> Option<RankFn> {
    if let Some(f) = fit_affine(r0, v0, r1, v1) {
        return Some(f);
    }
    let k = i64::from(r1.checked_sub(r0)?);
    if k < 2 {
        return None;
    }
    let a = v1.checked_sub(v0)?;
    Some(RankFn::Div {
        a,
        k,
        b: v0.checked_sub(a.checked_mul(i64::from(r0) / k)?)?,
    })
}

/// `v.map(|f| f.eval(rank)).eval_start(idx)` without building the mapped value.
fn eval_at(v: &Val<RankFn>, rank: u32, idx: &[u64]) -> i64 {
    match v {
        Val::Const(f) => f.eval(rank),
        Val::Lin { base, strides } => strides
            .iter()
            .zip(idx)
            .fold(base.eval(rank), |acc, (s, &i)| {
                acc.wrapping_add(s.eval(rank).wrapping_mul(i as i64))
            }),
        Val::Seq(v) => match (idx.first(), v.is_empty()) {
            (_, true) => 0,
            (Some(&i), false) => eval_at(&v[(i as usize).min(v.len() - 1)], rank, &idx[1..]),
            (None, false) => eval_at(&v[0], rank, &[]),
        },
        Val::Cycle(v) => match (idx.first(), v.is_empty()) {
            (_, true) => 0,
            (Some(&i), false) => eval_at(&v[(i % v.len() as u64) as usize], rank, &idx[1..]),
            (None, false) => eval_at(&v[0], rank, &[]),
        },
        Val::Approx(a) => a.typical(),
        Val::Exscan(x) => eval_at(&x.start, rank, idx),
        Val::FileEnd(x) => eval_at(&x.start, rank, idx),
        Val::Run(k) => crate::runvalue::marker(*k),
    }
}

/// Whether `v` is a model whose value needs the other ranks' calls ([`Val::eval`]).
fn needs_others(v: &Val<RankFn>) -> bool {
    matches!(v, Val::Exscan(_) | Val::FileEnd(_))
}

/// One rank set and the value its ranks share (with rank-dependent leaves).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Group {
    /// The ranks this group covers.
    pub ranks: RankSet,
    /// Their value.
    pub val: Val<RankFn>,
}

/// A parameter across ranks and iterations: groups of ranks with disjoint rank sets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Elastic {
    /// The groups, ordered by first rank.
    pub groups: Vec<Group>,
}

impl Elastic {
    /// The value of one rank that holds `v`.
    pub fn single(rank: u32, v: &Val<i64>) -> Elastic {
        Elastic {
            groups: vec![Group {
                ranks: RankSet::single(rank),
                val: v.map(&mut |&x| RankFn::Const(x)),
            }],
        }
    }

    /// Whether some group holds a summary instead of exact values.
    pub fn is_approx(&self) -> bool {
        self.groups.iter().any(|g| matches!(g.val, Val::Approx(_)))
    }

    /// Whether some group holds the prefix-sum model ([`Val::Exscan`]).
    pub fn is_exscan(&self) -> bool {
        self.groups.iter().any(|g| matches!(g.val, Val::Exscan(_)))
    }

    /// Whether some group holds the end-of-file model ([`Val::FileEnd`]).
    pub fn is_file_end(&self) -> bool {
        self.groups.iter().any(|g| matches!(g.val, Val::FileEnd(_)))
    }

    /// The per-rank value of `rank`, if the rank is covered.
    pub fn for_rank(&self, rank: u32) -> Option<Val<i64>> {
        self.groups
            .iter()
            .find(|g| g.ranks.contains(rank))
            .map(|g| g.val.map(&mut |f| f.eval(rank)))
    }

    /// The value at `rank` and iteration indices `idx`. Evaluated in place: building the
    /// rank's `Val<i64>` first (as [`Elastic::for_rank`] does) allocated for every parameter
    /// of every expanded event, which dominated a replay's own cost. `None` where no group
    /// covers the rank, and where the value needs the other ranks' calls ([`Val::eval`]).
    pub fn eval(&self, rank: u32, idx: &[u64]) -> Option<i64> {
        let g = self.groups.iter().find(|g| g.ranks.contains(rank))?;
        (!needs_others(&g.val)).then(|| eval_at(&g.val, rank, idx))
    }

    /// The value at `rank` and `idx` for a rank known to run the node the value belongs to (as
    /// [`crate::trace::visit`] guarantees): a value's groups cover its node's ranks, so a
    /// single group is that rank's without a rank-set lookup, which was a tenth of a replay's
    /// instructions. A rank no group covers gives `Some(0)`, as `eval(..).unwrap_or(0)` did;
    /// a value that needs the other ranks' calls gives `None` ([`Val::eval`]).
    pub fn eval_member(&self, rank: u32, idx: &[u64]) -> Option<i64> {
        match self.groups.as_slice() {
            [g] => (!needs_others(&g.val)).then(|| eval_at(&g.val, rank, idx)),
            _ => match self.groups.iter().find(|g| g.ranks.contains(rank)) {
                Some(g) => (!needs_others(&g.val)).then(|| eval_at(&g.val, rank, idx)),
                None => Some(0),
            },
        }
    }

    /// [`Elastic::eval_member`] with a model that needs the other ranks taken as its start
    /// ([`Val::eval_start`]): for the code that resolves those models and adds the rest.
    pub fn start_member(&self, rank: u32, idx: &[u64]) -> i64 {
        match self.groups.as_slice() {
            [g] => eval_at(&g.val, rank, idx),
            _ => self
                .groups
                .iter()
                .find(|g| g.ranks.contains(rank))
                .map_or(0, |g| eval_at(&g.val, rank, idx)),
        }
    }

    /// `self = self.merge(other)`, in place when both sides are one group with the same value.
    pub fn merge_with(&mut self, other: &Elastic) {
        if self.is_approx() || other.is_approx() {
            // Equal summaries of two ranks are two sets of samples: they add, never union.
            *self = self.merge(other);
            return;
        }
        if let Some(m) = self.merge_two_ranks(other) {
            *self = m;
            return;
        }
        if let ([a], [b]) = (self.groups.as_mut_slice(), other.groups.as_slice())
            && a.val == b.val
        {
            a.ranks.union_with(&b.ranks);
            return;
        }
        *self = self.merge(other);
    }

    /// The first merge of a radix tree joins two one-rank values; when every leaf is equal or
    /// lies on a line through the two ranks, the canonical form is that line, which this
    /// builds without materialising anything. `None`: take the general path.
    fn merge_two_ranks(&self, other: &Elastic) -> Option<Elastic> {
        let ([a], [b]) = (self.groups.as_slice(), other.groups.as_slice()) else {
            return None;
        };
        if a.ranks.len() != 1 || b.ranks.len() != 1 || !a.val.same_shape(&b.val) {
            return None;
        }
        let (ra, rb) = (a.ranks.first()?, b.ranks.first()?);
        let (mut la, mut lb) = (Vec::new(), Vec::new());
        a.val.leaves(&mut la);
        b.val.leaves(&mut lb);
        let fns: Option<Vec<RankFn>> = la
            .iter()
            .zip(&lb)
            .map(|(x, y)| match (x, y) {
                (RankFn::Const(x), RankFn::Const(y)) if x == y => Some(RankFn::Const(*x)),
                (RankFn::Const(x), RankFn::Const(y)) => fit_affine(ra, *x, rb, *y),
                _ => None,
            })
            .collect();
        let val = a.val.with_leaves(&mut fns?.into_iter())?;
        Some(Elastic {
            groups: vec![Group {
                ranks: a.ranks.union(&b.ranks),
                val,
            }],
        })
    }

    /// Merges the values of two disjoint rank sets into the canonical form of their union.
    /// Two summaries become one, over the union of their ranks ([`Summary::merge`]).
    pub fn merge(&self, other: &Elastic) -> Elastic {
        if self.is_approx() || other.is_approx() {
            return Elastic::merge_approx(self.groups.iter().chain(&other.groups));
        }
        if let ([a], [b]) = (self.groups.as_slice(), other.groups.as_slice())
            && a.val == b.val
        {
            // The same function fits both sides, so it fits the union; canonical because
            // the forms' coefficients come from the data (see RankFn::fit).
            return Elastic {
                groups: vec![Group {
                    ranks: a.ranks.union(&b.ranks),
                    val: a.val.clone(),
                }],
            };
        }
        let mut pts: Vec<(u32, Val<i64>)> = Vec::new();
        for g in self.groups.iter().chain(&other.groups) {
            g.ranks
                .for_each(|r| pts.push((r, g.val.map(&mut |f| f.eval(r)))));
        }
        pts.sort_by_key(|p| p.0);
        pts.dedup_by_key(|p| p.0);
        Elastic::canonical(&pts)
    }

    /// Groups of which some are summaries: the summaries become one over all their ranks (a
    /// summary's samples cannot be told apart by rank again), the exact groups keep their
    /// canonical form next to it.
    fn merge_approx<'a>(groups: impl Iterator<Item = &'a Group>) -> Elastic {
        let mut summary: Option<(RankSet, Summary)> = None;
        let mut pts: Vec<(u32, Val<i64>)> = Vec::new();
        for g in groups {
            match &g.val {
                Val::Approx(s) => match &mut summary {
                    Some((r, t)) => {
                        r.union_with(&g.ranks);
                        t.merge(s);
                    }
                    None => summary = Some((g.ranks.clone(), (**s).clone())),
                },
                _ => g
                    .ranks
                    .for_each(|r| pts.push((r, g.val.map(&mut |f| f.eval(r))))),
            }
        }
        pts.sort_by_key(|p| p.0);
        pts.dedup_by_key(|p| p.0);
        let mut out = Elastic::canonical(&pts);
        if let Some((ranks, s)) = summary {
            out.groups.push(Group {
                ranks,
                val: Val::Approx(Box::new(s)),
            });
            out.groups
                .sort_by_key(|g| g.ranks.first().unwrap_or(u32::MAX));
        }
        out
    }

    /// The canonical form of per-rank values (ranks strictly increasing).
    ///
    /// Ranks are cut into blocks of equal shape. Within a block, if every leaf fits one
    /// [`RankFn`], the block is one group. Otherwise it is cut greedily into runs where every
    /// leaf is affine in the rank, so `(rank+1) % n` patterns stay two groups.
    pub fn canonical(pts: &[(u32, Val<i64>)]) -> Elastic {
        let mut groups = Vec::new();
        let mut i = 0;
        while i < pts.len() {
            let mut j = i + 1;
            while j < pts.len() && pts[j].1.same_shape(&pts[i].1) {
                j += 1;
            }
            canonical_block(&pts[i..j], &mut groups);
            i = j;
        }
        Elastic { groups }
    }
}

impl Elastic {
    /// The canonical form of per-rank values of one shape (ranks strictly increasing) some of
    /// whose leaves are free (`free[i][k]`: leaf `k` of point `i`, in [`Val::leaves`] order,
    /// may take any value: a parameter of a call in a loop that does not run on that rank
    /// there), with as few groups as this finds. Each group's leaves fit the points where
    /// they are not free; a free leaf takes whatever its group's function gives. Tried: the
    /// points as they come, and the points at positions `c, c+p, c+2p, ...` (`p` from 2 to
    /// `max_period`) each on their own, their groups interleaved. An MPI library's
    /// aggregators spread over a file whose blocks do not divide the file domains: each
    /// aggregator's domain starts at another phase of the blocks, the phase advancing by
    /// almost a whole block every few aggregators, so a value is affine along every `p`-th
    /// aggregator for long stretches and along consecutive ones for two at most. Groups may
    /// then interleave (their rank sets stay disjoint).
    ///
    /// # Panics
    /// When the points differ in shape or `free` does not match them.
    pub fn canonical_free(
        pts: &[(u32, Val<i64>)],
        free: &[Vec<bool>],
        max_period: usize,
    ) -> Elastic {
        assert_eq!(pts.len(), free.len(), "one mask per point");
        if pts.is_empty() {
            return Elastic { groups: Vec::new() };
        }
        let leaves: Vec<Vec<i64>> = pts
            .iter()
            .map(|p| {
                assert!(p.1.same_shape(&pts[0].1), "points of one shape");
                let mut l = Vec::new();
                p.1.leaves(&mut l);
                l
            })
            .collect();
        let all: Vec<usize> = (0..pts.len()).collect();
        let mut best = free_runs(pts, &leaves, free, &all);
        for p in 2..=max_period.min(pts.len() / 2) {
            if best.len() <= 1 {
                break;
            }
            let mut groups = Vec::new();
            for c in 0..p {
                let class: Vec<usize> = (c..pts.len()).step_by(p).collect();
                groups.extend(free_runs(pts, &leaves, free, &class));
                if groups.len() >= best.len() {
                    break;
                }
            }
            if groups.len() < best.len() {
                best = groups;
            }
        }
        best.sort_by_key(|g| g.ranks.first().unwrap_or(u32::MAX));
        Elastic { groups: best }
    }
}

/// One leaf's function while a run of points grows: nothing seen yet, one point, or the
/// functions that fit every point so far (first preferred).
#[derive(Clone)]
enum Growing {
    Open,
    One(u32, i64),
    Fit(Vec<RankFn>),
}

/// `a * (rank / k) + b` through two points, if its coefficient is an integer.
fn fit_div(k: i64, (r0, v0): (u32, i64), (r1, v1): (u32, i64)) -> Option<RankFn> {
    let (q0, q1) = (i64::from(r0) / k, i64::from(r1) / k);
    let dv = v1.checked_sub(v0)?;
    if q1 == q0 || dv % (q1 - q0) != 0 {
        return None;
    }
    let a = dv / (q1 - q0);
    Some(RankFn::Div {
        a,
        k,
        b: v0.checked_sub(a.checked_mul(q0)?)?,
    })
}

impl Growing {
    /// Takes the point `(r, v)`, or says it does not fit. `blocks` are block sizes to try
    /// besides the step between the first two points: the ranks' other steps, where a
    /// partition of the ranks into groups of two sizes spaces them unevenly, and any step
    /// divides the ranks into blocks of the smaller size.
    fn take(&mut self, r: u32, v: i64, blocks: &[i64]) -> bool {
        match self {
            Growing::Open => {
                *self = Growing::One(r, v);
                true
            }
            Growing::One(_, v0) if *v0 == v => {
                *self = Growing::Fit(vec![RankFn::Const(v)]);
                true
            }
            Growing::One(r0, v0) => {
                let p0 = (*r0, *v0);
                let mut c: Vec<RankFn> = fit_run(p0, (r, v)).into_iter().collect();
                for &k in blocks {
                    if let Some(f) = fit_div(k, p0, (r, v))
                        && !c.contains(&f)
                    {
                        c.push(f);
                    }
                }
                if c.is_empty() {
                    return false;
                }
                *self = Growing::Fit(c);
                true
            }
            Growing::Fit(c) => {
                let before = c.clone();
                c.retain(|f| f.eval(r) == v);
                if c.is_empty() {
                    // One jump from here on: each candidate with the difference added.
                    *c = before
                        .iter()
                        .filter_map(|f| {
                            let (a, k, b) = match *f {
                                RankFn::Const(b) => (0, 1, b),
                                RankFn::Affine { a, b } => (a, 1, b),
                                RankFn::Div { a, k, b } => (a, k, b),
                                RankFn::Mod { .. } | RankFn::Shift { .. } | RankFn::Step { .. } => {
                                    return None;
                                }
                            };
                            Some(RankFn::Step {
                                a,
                                k,
                                b,
                                t: r,
                                d: v.checked_sub(f.eval(r))?,
                            })
                        })
                        .collect();
                }
                !c.is_empty()
            }
        }
    }

    fn done(self) -> RankFn {
        match self {
            Growing::Open => RankFn::Const(0),
            Growing::One(_, v) => RankFn::Const(v),
            Growing::Fit(c) => c[0],
        }
    }
}

/// The points `at` (indices into `pts`, increasing) cut into groups: all of them when every
/// leaf fits one function on its points that are not free, else greedy runs.
fn free_runs(
    pts: &[(u32, Val<i64>)],
    leaves: &[Vec<i64>],
    free: &[Vec<bool>],
    at: &[usize],
) -> Vec<Group> {
    let nleaves = leaves[at[0]].len();
    let group = |idx: &[usize], fns: Vec<RankFn>| {
        let ranks: Vec<u32> = idx.iter().map(|&i| pts[i].0).collect();
        Group {
            ranks: RankSet::from_sorted(&ranks),
            val: pts[idx[0]]
                .1
                .with_leaves(&mut fns.into_iter())
                .expect("same shape"),
        }
    };
    // The steps between the points' ranks, smallest first (a few at most).
    let mut blocks: Vec<i64> = at
        .windows(2)
        .map(|w| i64::from(pts[w[1]].0) - i64::from(pts[w[0]].0))
        .filter(|&k| k >= 2)
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    blocks.truncate(4);
    // Whole: each leaf by the general fit over its points that are not free.
    let whole: Option<Vec<RankFn>> = (0..nleaves)
        .map(|k| {
            let (rs, vs): (Vec<u32>, Vec<i64>) = at
                .iter()
                .filter(|&&i| !free[i][k])
                .map(|&i| (pts[i].0, leaves[i][k]))
                .unzip();
            if rs.is_empty() {
                return Some(RankFn::Const(0));
            }
            RankFn::fit(&rs, &vs).or_else(|| {
                let mut g = Growing::Open;
                rs.iter()
                    .zip(&vs)
                    .all(|(&r, &v)| g.take(r, v, &blocks))
                    .then(|| g.done())
            })
        })
        .collect();
    if let Some(fns) = whole {
        return vec![group(at, fns)];
    }
    let mut out = Vec::new();
    let mut s = 0;
    while s < at.len() {
        let mut g = vec![Growing::Open; nleaves];
        let mut e = s;
        while e < at.len() {
            let i = at[e];
            let mut next = g.clone();
            let fits =
                (0..nleaves).all(|k| free[i][k] || next[k].take(pts[i].0, leaves[i][k], &blocks));
            if !fits {
                break;
            }
            g = next;
            e += 1;
        }
        // A point fits an empty run always, so every run takes at least one.
        out.push(group(&at[s..e], g.into_iter().map(Growing::done).collect()));
        s = e;
    }
    out
}

fn canonical_block(pts: &[(u32, Val<i64>)], groups: &mut Vec<Group>) {
    let ranks: Vec<u32> = pts.iter().map(|p| p.0).collect();
    let leaves: Vec<Vec<i64>> = pts
        .iter()
        .map(|p| {
            let mut l = Vec::new();
            p.1.leaves(&mut l);
            l
        })
        .collect();
    let nleaves = leaves[0].len();
    let column =
        |k: usize, a: usize, b: usize| -> Vec<i64> { leaves[a..b].iter().map(|l| l[k]).collect() };
    let whole: Option<Vec<RankFn>> = (0..nleaves)
        .map(|k| RankFn::fit(&ranks, &column(k, 0, pts.len())))
        .collect();
    if let Some(fns) = whole {
        groups.push(Group {
            ranks: RankSet::from_sorted(&ranks),
            val: pts[0]
                .1
                .with_leaves(&mut fns.into_iter())
                .expect("same shape"),
        });
        return;
    }
    let mut s = 0;
    while s < pts.len() {
        let mut e = s + 1;
        let fns: Option<Vec<RankFn>> = if s + 1 < pts.len() {
            (0..nleaves)
                .map(|k| fit_run((ranks[s], leaves[s][k]), (ranks[s + 1], leaves[s + 1][k])))
                .collect()
        } else {
            None
        };
        let fns = match fns {
            Some(f) => {
                e = s + 2;
                while e < pts.len() && (0..nleaves).all(|k| f[k].eval(ranks[e]) == leaves[e][k]) {
                    e += 1;
                }
                f
            }
            None => leaves[s].iter().map(|&v| RankFn::Const(v)).collect(),
        };
        groups.push(Group {
            ranks: RankSet::from_sorted(&ranks[s..e]),
            val: pts[s]
                .1
                .with_leaves(&mut fns.into_iter())
                .expect("same shape"),
        });
        s = e;
    }
}

// Values are rendered in one place, `crate::notation` (`iotrex show`, `expand`, and through these
// Display impls `extrap --explain` and every error message that prints a value), so the same
// value reads the same everywhere.

impl fmt::Display for RankFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::notation::render_rankfn(self))
    }
}

/// Loop index names used when printing, outermost first.
pub const INDEX_NAMES: [&str; 8] = ["i", "j", "k", "l", "m", "p", "q", "s"];

/// The printed name of the loop index at nesting depth `d` (0 outermost): [`INDEX_NAMES`], then
/// `i8`, `i9`, ...
pub fn index_name(d: usize) -> String {
    INDEX_NAMES
        .get(d)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("i{d}"))
}

impl fmt::Display for Elastic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::notation::render_elastic(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `next_const` names exactly the one number `continues_const` accepts, over
        /// constants, affine values (near overflow too), cycles and explicit vectors.
        #[test]
        fn next_const_is_what_continues_const_accepts(
            kind in 0u8..5,
            a in any::<i64>(),
            b in any::<i64>(),
            small in -5i64..5,
            n in 0u64..40,
            probe in any::<i64>(),
        ) {
            let v = match kind {
                0 => Val::Const(small),
                1 => Val::Lin { base: small, strides: vec![b % 9] },
                2 => Val::Lin { base: a, strides: vec![b] },
                3 => Val::Cycle(vec![Val::Const(small), Val::Const(a), Val::Lin { base: 1, strides: vec![2] }]),
                _ => Val::Seq(vec![Val::Const(small), Val::Const(a)]),
            };
            let next = v.next_const(n);
            for x in [probe, small, a, next.unwrap_or(probe)] {
                prop_assert_eq!(v.continues_const(n, x), next == Some(x));
            }
        }
    }

    fn seq_to_val(values: &[i64]) -> Val<i64> {
        let mut v = Val::Const(values[0]);
        for (n, &x) in values.iter().enumerate().skip(1) {
            v.extend(n as u64, Val::Const(x), 0);
        }
        v
    }

    #[test]
    fn arithmetic_and_periodic() {
        assert_eq!(seq_to_val(&[5, 5, 5]), Val::Const(5));
        assert_eq!(
            seq_to_val(&[0, 8, 16, 24]),
            Val::Lin {
                base: 0,
                strides: vec![8]
            }
        );
        let v = seq_to_val(&[1, 7, 1, 7, 1, 7]);
        assert!(matches!(v, Val::Cycle(ref c) if c.len() == 2), "{v:?}");
        let irregular = [3, 1, 4, 1, 5, 9, 2, 6];
        let v = seq_to_val(&irregular);
        for (i, &x) in irregular.iter().enumerate() {
            assert_eq!(v.eval(&[i as u64]), Some(x));
        }
    }

    #[test]
    fn rank_fits() {
        let r: Vec<u32> = (0..16).collect();
        let f = |g: &dyn Fn(i64) -> i64| r.iter().map(|&x| g(x as i64)).collect::<Vec<_>>();
        assert_eq!(
            RankFn::fit(&r, &f(&|x| 4096 * x + 7)),
            Some(RankFn::Affine { a: 4096, b: 7 })
        );
        assert_eq!(
            RankFn::fit(&r, &f(&|x| x / 4)),
            Some(RankFn::Div { a: 1, k: 4, b: 0 })
        );
        assert_eq!(
            RankFn::fit(&r, &f(&|x| 3 * (x % 4) + 1)),
            Some(RankFn::Mod { a: 3, k: 4, b: 1 })
        );
        assert_eq!(RankFn::fit(&r, &f(&|x| x * x)), None);
        // Every 4th rank writing file_<rank/4>.
        let every4: Vec<u32> = (0..64).step_by(4).collect();
        let v: Vec<i64> = every4.iter().map(|&x| x as i64 / 4).collect();
        assert_eq!(
            RankFn::fit(&every4, &v),
            Some(RankFn::Div { a: 1, k: 4, b: 0 })
        );
    }

    /// The relative peers of a periodic 4x3x5 grid (row-major, as `MPI_Cart_create` numbers
    /// it): a shift by -1, +1 or +2 along any dimension is one function of the rank, where
    /// the wrap-around took a rank group per grid line before.
    #[test]
    fn periodic_grid_peers_are_one_shift() {
        let dims = [4i64, 3, 5];
        let strides = [15i64, 5, 1];
        let ranks: Vec<u32> = (0..60).collect();
        let rel = |d: usize, disp: i64| -> Vec<i64> {
            ranks
                .iter()
                .map(|&r| {
                    let c = (r as i64 / strides[d]) % dims[d];
                    strides[d] * ((c + disp).rem_euclid(dims[d]) - c)
                })
                .collect()
        };
        for d in 0..3 {
            for disp in [-1i64, 1, 2] {
                let v = rel(d, disp);
                let f = RankFn::fit(&ranks, &v);
                let p = dims[d] * strides[d];
                assert_eq!(
                    f,
                    Some(RankFn::Shift {
                        w: (disp * strides[d]).rem_euclid(p),
                        p,
                        o: 0
                    }),
                    "dim {d} disp {disp}"
                );
                let f = f.unwrap();
                assert!(ranks.iter().zip(&v).all(|(&r, &x)| f.eval(r) == x));
                // The exchange with both neighbours, a per-iteration vector: one group.
                let back = rel(d, -disp);
                let pts: Vec<(u32, Val<i64>)> = ranks
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| (r, Val::Seq(vec![Val::Const(v[i]), Val::Const(back[i])])))
                    .collect();
                let e = Elastic::canonical(&pts);
                assert_eq!(e.groups.len(), 1, "dim {d} disp {disp}: {e}");
                for (i, &r) in ranks.iter().enumerate() {
                    assert_eq!(e.eval(r, &[1]), Some(back[i]));
                }
                // A loop of two iterations makes it affine: the step is the difference of
                // the two shifts, a shift with a phase. Still one group.
                let pts: Vec<(u32, Val<i64>)> = ranks
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| (r, Val::wrap2(Val::Const(v[i]), Val::Const(back[i]), 0)))
                    .collect();
                let e = Elastic::canonical(&pts);
                assert_eq!(e.groups.len(), 1, "dim {d} disp {disp}: {e}");
                for (i, &r) in ranks.iter().enumerate() {
                    assert_eq!(e.eval(r, &[0]), Some(v[i]));
                    assert_eq!(e.eval(r, &[1]), Some(back[i]));
                }
            }
        }
        // One ring: +1 everywhere but the last rank, whose wrap-around is left to the rank
        // groups (one rank takes it); two rings of 8 in 16 ranks are one shift.
        let ring: Vec<i64> = (0..8).map(|r| if r < 7 { 1 } else { -7 }).collect();
        assert_eq!(RankFn::fit(&(0..8).collect::<Vec<_>>(), &ring), None);
        let rings: Vec<i64> = (0..16).map(|r| if r % 8 < 7 { 1 } else { -7 }).collect();
        assert_eq!(
            RankFn::fit(&(0..16).collect::<Vec<_>>(), &rings),
            Some(RankFn::Shift { w: 1, p: 8, o: 0 })
        );
        // A root's value among the others' (MPI_Gather's receive type): no shift.
        let root: Vec<i64> = (0..8).map(|r| if r == 0 { 7 } else { -1 }).collect();
        assert_eq!(RankFn::fit(&(0..8).collect::<Vec<_>>(), &root), None);
        // Wrapped one place later in each block: a phase.
        let late = [1, -3, 1, 1, 1, -3, 1, 1];
        assert_eq!(
            RankFn::fit(&(0..8).collect::<Vec<_>>(), &late),
            Some(RankFn::Shift { w: 1, p: 4, o: 2 })
        );
        // Two values that wrap at no period are no shift.
        let wrong = [1, -3, 1, 1, 1, 1, -3, 1];
        assert_eq!(RankFn::fit(&(0..8).collect::<Vec<_>>(), &wrong), None);
    }

    /// Aggregators one per 5462 ranks, then one per 5461, whose value advances by 2710 per
    /// aggregator modulo 8192 (a file domain's phase in 8 KiB blocks): affine along every
    /// third aggregator with one wrap, so three interleaved groups with a jump each, exact at
    /// every point; a free leaf takes any value.
    #[test]
    fn interleaved_classes_with_a_jump() {
        let ranks: Vec<u32> = (0..192u32).map(|g| 5461 * g + g.min(64)).collect();
        let pts: Vec<(u32, Val<i64>)> = ranks
            .iter()
            .enumerate()
            .map(|(g, &r)| (r, Val::Const((2710 * g as i64) % 8192)))
            .collect();
        let free = vec![vec![false]; pts.len()];
        let plain = Elastic::canonical(&pts);
        let e = Elastic::canonical_free(&pts, &free, 8);
        assert!(e.groups.len() <= 6, "{e}");
        assert!(plain.groups.len() > 3 * e.groups.len(), "{plain}");
        assert!(
            e.groups
                .iter()
                .any(|g| matches!(g.val, Val::Const(RankFn::Step { .. }))),
            "{e}"
        );
        for (r, v) in &pts {
            assert_eq!(e.eval(*r, &[]), v.eval(&[]), "rank {r}");
        }
        // Every other point free: the rest is one line, whatever the free points hold.
        let pts: Vec<(u32, Val<i64>)> = (0..64u32)
            .map(|r| (r, Val::Const(if r % 2 == 0 { 3 * r as i64 } else { -7 })))
            .collect();
        let free: Vec<Vec<bool>> = (0..64).map(|r| vec![r % 2 == 1]).collect();
        let e = Elastic::canonical_free(&pts, &free, 8);
        assert_eq!(e.groups.len(), 1, "{e}");
        for r in (0..64).step_by(2) {
            assert_eq!(e.eval(r, &[]), Some(3 * r as i64));
        }
    }

    #[test]
    fn step_evaluates_and_prints() {
        let f = RankFn::Step {
            a: 62,
            k: 16383,
            b: -128,
            t: 400000,
            d: 4096,
        };
        assert_eq!(f.eval(16383 * 3), 62 * 3 - 128);
        assert_eq!(f.eval(409575), 62 * 25 - 128 + 4096);
        assert_eq!(f.to_string(), "62*(rank/16383) + 4096*[rank>=400000] - 128");
        let g = RankFn::Step {
            a: 0,
            k: 1,
            b: 1,
            t: 5,
            d: -1,
        };
        assert_eq!((g.eval(4), g.eval(5)), (1, 0));
        assert_eq!(g.to_string(), "-[rank>=5] + 1");
    }

    #[test]
    fn neighbour_pattern_is_two_groups() {
        let n = 64u32;
        let pts: Vec<(u32, Val<i64>)> = (0..n)
            .map(|r| (r, Val::Const((((r + 1) % n) as i64) * 1024)))
            .collect();
        let e = Elastic::canonical(&pts);
        assert_eq!(e.groups.len(), 2, "{e}");
        for r in 0..n {
            assert_eq!(e.eval(r, &[]), Some((((r + 1) % n) as i64) * 1024));
        }
    }
}

#[cfg(test)]
mod eval_in_place {
    use super::*;

    /// A small deterministic generator, so the check needs no strategy plumbing.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    fn rank_fn(g: &mut Lcg) -> RankFn {
        let v = |g: &mut Lcg| g.next(200) as i64 - 100;
        match g.next(4) {
            0 => RankFn::Const(v(g)),
            1 => RankFn::Affine { a: v(g), b: v(g) },
            2 => RankFn::Div {
                a: v(g),
                k: g.next(5) as i64 + 1,
                b: v(g),
            },
            _ => RankFn::Mod {
                a: v(g),
                k: g.next(5) as i64 + 1,
                b: v(g),
            },
        }
    }

    fn val(g: &mut Lcg, depth: u32) -> Val<RankFn> {
        match if depth == 0 { g.next(2) } else { g.next(4) } {
            0 => Val::Const(rank_fn(g)),
            1 => Val::Lin {
                base: rank_fn(g),
                strides: (0..g.next(3) + 1).map(|_| rank_fn(g)).collect(),
            },
            2 => Val::Seq((0..g.next(3) + 1).map(|_| val(g, depth - 1)).collect()),
            _ => Val::Cycle((0..g.next(3) + 1).map(|_| val(g, depth - 1)).collect()),
        }
    }

    #[test]
    fn eval_equals_materialising_the_rank_value_first() {
        let mut g = Lcg(7);
        for _ in 0..2000 {
            let e = Elastic {
                groups: vec![Group {
                    ranks: crate::ranks::RankSet::all(32),
                    val: val(&mut g, 3),
                }],
            };
            for rank in [0, 1, 5, 17, 31] {
                for idx in [vec![], vec![3], vec![0, 2], vec![4, 1, 7], vec![9, 9, 9, 9]] {
                    let slow = e.for_rank(rank).and_then(|v| v.eval(&idx));
                    assert_eq!(e.eval(rank, &idx), slow, "{e:?} rank {rank} idx {idx:?}");
                    assert_eq!(e.eval_member(rank, &idx), slow);
                }
            }
        }
    }

    #[test]
    fn eval_member_finds_the_ranks_group_among_several() {
        // Even ranks 2*r, odd ranks 1000 + r: two groups; every rank is a member of one.
        let e = Elastic {
            groups: vec![
                Group {
                    ranks: crate::ranks::RankSet::from_sorted(&[0, 2, 4, 6, 8, 10, 12, 14]),
                    val: Val::Const(RankFn::Affine { a: 2, b: 0 }),
                },
                Group {
                    ranks: crate::ranks::RankSet::from_sorted(&[1, 3, 5, 7, 9, 11, 13, 15]),
                    val: Val::Const(RankFn::Affine { a: 1, b: 1000 }),
                },
            ],
        };
        for r in 0..16u32 {
            let want = if r % 2 == 0 {
                2 * r as i64
            } else {
                1000 + r as i64
            };
            assert_eq!(e.eval_member(r, &[]), Some(want));
            assert_eq!(e.eval(r, &[]), Some(want));
        }
        // Outside every group (a rank the node does not run): 0, as eval(..).unwrap_or(0).
        assert_eq!(e.eval_member(99, &[]), Some(0));
    }
}
