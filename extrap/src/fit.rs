//! The walk over aligned traces: every numeric quantity of every node is fitted against the
//! rank count and evaluated at the target.

use crate::degenerate::HeldOut;
use crate::error::{ExtrapError, Guess, Quantity, Reason, Reasons, Shape, Site, Unusable};
use crate::{Curve, Explain};
use models::ModelSet;
use models::exact::{Agreement, Point, Vars, agree, digits_growth, fit_exact};
use models::timing::{TimingChoice, choose};
use rsd::RankSet;
use rsd::op::Param;
use rsd::ranks::Prsd;
use rsd::timing::{BINS, Interval, Intervals, Stats, Timing};
use rsd::trace::{Event, Loop, Node, NodeKind};
use rsd::value::{Elastic, Group, RankFn, Val};

/// Rank sets up to this size are rebuilt through `RankSet::from_sorted`, so the output is in
/// the canonical form a real trace at that scale would have.
const CANON_LIMIT: u64 = 1 << 16;
/// Largest per-rank expansion of an input parameter for the per-rank models.
const INPUT_EXPAND_LIMIT: u64 = 1 << 16;
/// Largest target rank set a per-rank model is evaluated over.
const TARGET_EXPAND_LIMIT: u64 = 1 << 24;

/// Why one quantity could not be fitted (turned into [`ExtrapError::Refused`] with context).
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    detail: Reasons,
    values: String,
    tried: String,
    /// What the values grow with, when that is the decimal width of n or of the rank
    /// ([`models::exact::digits_growth`]), for the hint.
    digits: Option<&'static str>,
    /// Two decimal-width models (`digits(n)`, `digits(n - 1)`) fit and disagree at the target,
    /// a power of ten: one more scale at 10 ranks tells them apart.
    widths_disagree: bool,
}

/// Where the quantity being fitted is in the trace: which models it may take and what a
/// refusal's hint says about it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Scope {
    /// The quantity is the size of the data a call moves (a count, size, byte count or
    /// result), the only kind offered the text-width models ([`models::Model::text_width`]).
    data_size: std::cell::Cell<bool>,
    /// The quantity belongs to a call nested in a collective MPI-IO call: the MPI library's,
    /// made by its collective-buffering aggregators, never text the program printed.
    in_collective: bool,
    /// When the number of ranks making those nested calls differs between the scales, that
    /// number per scale, as text (`1 at 4 ranks, 1 at 8, 2 at 12, 2 at 16`).
    aggregators: Option<String>,
    /// The quantity is part of a rank set (which ranks make a call), never offered the models
    /// of the node layout ([`models::Model::of_layout`]).
    rank_set: std::cell::Cell<bool>,
}

impl Scope {
    /// Whether the quantity is the size of the data a call moves.
    pub(crate) fn data_size(&self) -> bool {
        self.data_size.get()
    }

    fn text_width_allowed(&self) -> bool {
        self.data_size.get() && !self.in_collective
    }
}

pub(crate) struct Fitter<'a> {
    pub ms: &'a ModelSet,
    pub scales: Vec<i64>,
    /// Ranks per node at each scale, 0 where not known ([`crate::nodes::of_header`]).
    pub ppns: Vec<i64>,
    pub target: i64,
    /// Ranks per node at the target, 0 where not known: the node models evaluate there.
    pub target_ppn: i64,
    pub explain: Vec<Explain>,
    /// Curves of the exact models fitted since the current parameter began (see `elastic`).
    pub pending: std::cell::RefCell<Vec<Curve>>,
    /// Per scale, the timings of every further run of that scale, each run's events in the
    /// order [`Fitter::nodes`] visits them (`crate::timings_post_order`).
    pub repeats: Vec<Vec<Vec<Timing>>>,
    /// The index of the next event [`Fitter::timing`] sees, in that order.
    pub cursor: usize,
    /// Where the quantity being fitted is.
    pub scope: Scope,
    /// The rank count and ranks per node where the models of `n` are chosen (they must agree
    /// there), when not at `target`: checking a held-out scale (`degenerate`), the model the
    /// output at the real target takes is evaluated at the held-out `target`.
    pub chosen_at: Option<(i64, i64)>,
}

fn values_text<T: std::fmt::Display>(scales: &[i64], vals: &[T]) -> String {
    scales
        .iter()
        .zip(vals)
        .map(|(n, v)| {
            let mut s = v.to_string();
            if s.len() > 160 {
                let cut = (0..=160)
                    .rev()
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(0);
                s.truncate(cut);
                s.push_str("...");
            }
            format!("{s} at {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Fitter<'_> {
    fn refuse(&self, event: &Site, param: Quantity, f: Failure) -> ExtrapError {
        let mut hint = format!(
            "trace one more scale (e.g. {} ranks) so fewer models fit, or load a model plugin \
             (--plugin lib.so) that expresses this pattern",
            self.scales.last().copied().unwrap_or(16) * 2
        );
        let disagree = f.detail.any(|r| {
            matches!(
                r,
                Reason::ModelsDisagree { .. } | Reason::PerRankModelsDisagree { .. }
            )
        });
        if f.detail.any(|r| matches!(r, Reason::FitsNoModel { .. })) && !disagree {
            // Nothing fits at all: more scales will not help; the values probably do not
            // depend on the rank count alone.
            hint = "no model reproduces these values exactly: if they depend on state outside \
                    the program (a file left by an earlier run, the clock, random numbers), \
                    trace every scale from the same starting state; if they follow a pattern \
                    iotrex does not know, load a model plugin (--plugin lib.so) that expresses it"
                .to_string();
        }
        if let Some(of) = f.digits {
            // The values step where n (or the rank) gains a decimal digit, as the length of
            // a line that prints it does: not the clock, not random numbers. The step model
            // fits, so what failed is its guard: a step seen from one input scale only.
            hint = format!(
                "this value grows with the decimal width of {of} (one byte per digit, as text \
                 that prints the number does), but the inputs do not pin that step down: a \
                 model may not rest on one input scale, so trace at least two scales on each \
                 side of the power of ten where it steps (for example 4, 8, 12 and 16 ranks \
                 around 10)"
            );
        }
        if disagree {
            hint = format!(
                "the inputs cannot tell these models apart at {} ranks; trace a scale that does \
                 (for example {} ranks) or pick a target closer to the inputs",
                self.target, self.target
            );
        }
        if f.widths_disagree {
            hint = format!(
                "this value grows with the decimal width of a printed number, and the inputs \
                 cannot tell whether that number is n or n - 1 (the last rank): the two differ \
                 only at a power of ten such as {} ranks; add a trace at 10 ranks, where n has \
                 two digits and n - 1 one",
                self.target
            );
        }
        if let Some(agg) = &self.scope.aggregators {
            hint = format!(
                "this value changes with the aggregator count: the calls nested in a collective \
                 MPI-IO call are made by the MPI library's collective-buffering aggregators, \
                 and the ranks making them number {agg}, so no function of n alone need fit \
                 them; extrap derives such calls with its model of the library instead where \
                 the traces record the library's configuration (traced by this iotrex) and the \
                 model reproduces every input scale"
            );
        }
        let smallest = self.scales.iter().copied().min().unwrap_or(1);
        if self.target < smallest {
            // Fewer ranks than any input: more scales or plugins are beside the point.
            hint = format!(
                "--ranks {} is below every input scale ({smallest} ranks and up): extrap \
                 predicts larger runs from smaller ones, and a run this small is cheaper to \
                 trace than to predict (iotrex trace -- mpirun -np {} ...)",
                self.target, self.target
            );
        }
        ExtrapError::Refused {
            event: event.clone(),
            param,
            detail: f.detail,
            values: f.values,
            tried: f.tried,
            hint,
        }
    }

    /// The fits the quantity in scope may take: text-width models only for the sizes of data
    /// outside collective calls.
    fn allowed<'m>(&self, mut fits: Vec<models::Fitted<'m>>) -> Vec<models::Fitted<'m>> {
        if !self.scope.text_width_allowed() {
            fits.retain(|f| !f.model.text_width());
        }
        if self.scope.rank_set.get() {
            fits.retain(|f| !f.model.of_layout());
        }
        fits
    }

    /// The names of the models of kind `vars` the quantity in scope was offered, for a refusal.
    fn tried(&self, vars: Vars) -> String {
        let allowed = self.scope.text_width_allowed();
        let layout = !self.scope.rank_set.get();
        self.ms
            .models
            .iter()
            .filter(|m| m.vars() == vars && (allowed || !m.text_width()))
            .filter(|m| layout || !m.of_layout())
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What the values grow with when that is a decimal width, for a quantity that may be one.
    fn digits_growth(&self, pts: &[Point]) -> Option<&'static str> {
        self.scope
            .text_width_allowed()
            .then(|| digits_growth(pts))
            .flatten()
    }

    /// One integer per scale, fitted exactly as a function of n and evaluated at the target.
    /// Returns the value and, when it varies, the model's readable form.
    pub(crate) fn number(&self, ys: &[i64], what: &str) -> Result<(i64, Option<String>), Failure> {
        self.number_on(&self.scales, ys, what)
    }

    /// As [`Self::number`], fitted on the given scales only (one value per scale).
    fn number_on(
        &self,
        scales: &[i64],
        ys: &[i64],
        what: &str,
    ) -> Result<(i64, Option<String>), Failure> {
        if ys.iter().all(|&y| y == ys[0]) {
            return Ok((ys[0], None));
        }
        // Each scale's ranks per node, for the model of the ranks per node itself.
        let ppn_of = |n: i64| {
            let at = self.scales.iter().position(|&s| s == n);
            at.and_then(|i| self.ppns.get(i)).copied().unwrap_or(0)
        };
        let pts: Vec<Point> = scales
            .iter()
            .zip(ys)
            .map(|(&n, &y)| Point {
                n,
                ppn: ppn_of(n),
                rank: 0,
                y,
            })
            .collect();
        let fits = self.allowed(fit_exact(&self.ms.models, Vars::N, &pts));
        let (cn, cp) = self.chosen_at.unwrap_or((self.target, self.target_ppn));
        let mut agreed = agree(fits, |f| f.eval_node(cn, cp, 0));
        // Checking a held-out scale: the model chosen where the output is made, evaluated
        // here (nothing where it does not evaluate here).
        if self.chosen_at.is_some()
            && let Agreement::Agree(f, _) = agreed
        {
            agreed = match f.eval_node(self.target, self.target_ppn, 0) {
                Some(v) => Agreement::Agree(f, v),
                None => Agreement::None,
            };
        }
        match agreed {
            Agreement::Agree(f, v) => {
                let samples = crate::sample_ns(scales[0], self.target)
                    .into_iter()
                    .filter_map(|n| f.eval(n, 0).map(|y| (n, y as f64)))
                    .collect();
                self.pending.borrow_mut().push(Curve {
                    points: scales
                        .iter()
                        .zip(ys)
                        .map(|(&n, &y)| (n, y as f64))
                        .collect(),
                    samples,
                });
                Ok((v, Some(f.describe())))
            }
            Agreement::Disagree { first, second } => Err(Failure {
                widths_disagree: first.0.model.text_width() && second.0.model.text_width(),
                detail: Reasons::one(Reason::ModelsDisagree {
                    part: what.into(),
                    target: self.target,
                    first: Guess::of(&first),
                    second: Guess::of(&second),
                }),
                values: values_text(scales, ys),
                tried: self.tried(Vars::N),
                digits: None,
            }),
            Agreement::None => Err(Failure {
                detail: Reasons::one(Reason::FitsNoModel { part: what.into() }),
                values: values_text(scales, ys),
                tried: self.tried(Vars::N),
                digits: self.digits_growth(&pts),
                widths_disagree: false,
            }),
        }
    }

    fn shape_failure<T: std::fmt::Display>(&self, detail: Reason, vals: &[T]) -> Failure {
        Failure {
            detail: Reasons::one(detail),
            values: values_text(&self.scales, vals),
            tried: "none (the shape must match at every scale before values are fitted)".into(),
            digits: None,
            widths_disagree: false,
        }
    }

    /// A rank set fitted run by run: each PRSD start, count and stride as a function of n.
    fn rankset(
        &self,
        sets: &[&RankSet],
        what: &str,
        notes: &mut Vec<(String, String)>,
    ) -> Result<RankSet, Failure> {
        let was = self.scope.rank_set.replace(true);
        let out = self.rankset_fitted(sets, what, notes);
        self.scope.rank_set.set(was);
        out
    }

    /// [`Self::rankset`]'s fit, with the scope saying it is a rank set.
    fn rankset_fitted(
        &self,
        sets: &[&RankSet],
        what: &str,
        notes: &mut Vec<(String, String)>,
    ) -> Result<RankSet, Failure> {
        if sets.iter().all(|s| *s == sets[0]) {
            return Ok(sets[0].clone());
        }
        let nruns: Vec<usize> = sets.iter().map(|s| s.runs.len()).collect();
        if nruns.iter().any(|&k| k != nruns[0]) {
            return Err(self.shape_failure(differs(Some(what), Shape::PrsdRuns), sets));
        }
        let mut runs = Vec::with_capacity(nruns[0]);
        for j in 0..nruns[0] {
            // A run with fewer dimensions is the same run with outer dimensions of count 1
            // (a 2-D block of one row is stored as 1-D): pad so every scale has the same shape.
            let ndims = sets.iter().map(|s| s.runs[j].dims.len()).max().unwrap_or(1);
            let padded: Vec<Prsd> = sets
                .iter()
                .map(|s| {
                    let mut p = s.runs[j].clone();
                    p.dims.resize(ndims, (1, 0));
                    p
                })
                .collect();
            let ps: Vec<&Prsd> = padded.iter().collect();
            if ps.iter().any(|p| p.dims.len() != ps[0].dims.len()) {
                return Err(
                    self.shape_failure(differs(Some(what), Shape::RunDims { run: j }), sets)
                );
            }
            let mut note = |q: String, m: Option<String>| {
                if let Some(m) = m {
                    notes.push((q, m));
                }
            };
            let starts: Vec<i64> = ps.iter().map(|p| p.start as i64).collect();
            let (start, m) = self.number(&starts, &format!("{what}: first rank of run {j}"))?;
            note(format!("{what} run {j} start"), m);
            let mut dims = Vec::with_capacity(ps[0].dims.len());
            for d in 0..ps[0].dims.len() {
                let cs: Vec<i64> = ps.iter().map(|p| p.dims[d].0 as i64).collect();
                let ss: Vec<i64> = ps.iter().map(|p| p.dims[d].1 as i64).collect();
                let (c, m) = self.number(&cs, &format!("{what}: count of run {j} dim {d}"))?;
                note(format!("{what} run {j} count"), m);
                // A run of one rank has no stride (it is stored as 0): those scales say
                // nothing about it, so the stride is fitted on the others only.
                let (sc, sv): (Vec<i64>, Vec<i64>) = self
                    .scales
                    .iter()
                    .zip(cs.iter().zip(&ss))
                    .filter(|(_, (c, _))| **c > 1)
                    .map(|(n, (_, s))| (*n, *s))
                    .unzip();
                let (s, m) = if sv.is_empty() {
                    (0, None)
                } else {
                    self.number_on(&sc, &sv, &format!("{what}: stride of run {j} dim {d}"))?
                };
                note(format!("{what} run {j} stride"), m);
                let (Ok(c), Ok(s)) = (u32::try_from(c), u32::try_from(s)) else {
                    let u = Unusable::RunCountStride {
                        run: j,
                        count: c,
                        stride: s,
                        target: self.target,
                    };
                    return Err(self.shape_failure(unusable(what, u), sets));
                };
                if c == 0 {
                    let u = Unusable::RunEmpty {
                        run: j,
                        target: self.target,
                    };
                    return Err(self.shape_failure(unusable(what, u), sets));
                }
                dims.push((c, if c == 1 { 0 } else { s }));
            }
            let Ok(start) = u32::try_from(start) else {
                let u = Unusable::RunStart {
                    run: j,
                    start,
                    target: self.target,
                };
                return Err(self.shape_failure(unusable(what, u), sets));
            };
            // Outer dimensions of count 1 are dropped again, as the canonical form has them.
            while dims.len() > 1 && dims.last().is_some_and(|d| d.0 == 1) {
                dims.pop();
            }
            runs.push(Prsd { start, dims });
        }
        let set = RankSet { runs };
        let last = set.runs.iter().map(|p| {
            p.dims
                .iter()
                .fold(p.start as u64, |a, &(c, s)| a + (c as u64 - 1) * s as u64)
        });
        if last.max().unwrap_or(0) >= self.target as u64 {
            let u = Unusable::Beyond {
                last: self.target - 1,
            };
            return Err(self.shape_failure(unusable(what, u), sets));
        }
        if set.len() <= CANON_LIMIT {
            let mut v = set.to_vec();
            let n = v.len();
            v.sort_unstable();
            v.dedup();
            if v.len() != n {
                let u = Unusable::Overlap {
                    target: self.target,
                };
                return Err(self.shape_failure(unusable(what, u), sets));
            }
            return Ok(RankSet::from_sorted(&v));
        }
        Ok(set)
    }

    fn rankfn(
        &self,
        fs: &[RankFn],
        what: &str,
        notes: &mut Vec<(String, String)>,
    ) -> Result<RankFn, Failure> {
        if fs.iter().all(|f| *f == fs[0]) {
            return Ok(fs[0]);
        }
        if fs.iter().any(|f| matches!(f, RankFn::Step { .. })) {
            // Only the derivation of a library's nested calls writes it, at the target.
            return Err(self.shape_failure(Reason::Jump { part: what.into() }, fs));
        }
        let variant = |f: &RankFn| std::mem::discriminant(f);
        let lifted: Vec<RankFn> = if fs.iter().all(|f| variant(f) == variant(&fs[0])) {
            fs.to_vec()
        } else if fs
            .iter()
            .all(|f| matches!(f, RankFn::Const(_) | RankFn::Affine { .. }))
        {
            // A constant is an affine function with slope 0; the groups of a smaller run
            // are sometimes constant where larger ones are affine.
            fs.iter()
                .map(|f| match *f {
                    RankFn::Const(b) => RankFn::Affine { a: 0, b },
                    x => x,
                })
                .collect()
        } else {
            return Err(self.shape_failure(differs(Some(what), Shape::RankFnForm), fs));
        };
        let coef = |f: &RankFn| -> Vec<i64> {
            match *f {
                RankFn::Const(c) => vec![c],
                RankFn::Affine { a, b } => vec![a, b],
                RankFn::Div { a, k, b } | RankFn::Mod { a, k, b } => vec![a, k, b],
                RankFn::Shift { w, p, o } => vec![w, p, o],
                RankFn::Step { .. } => unreachable!("refused above"),
            }
        };
        let cs: Vec<Vec<i64>> = lifted.iter().map(coef).collect();
        let names: &[&str] = match lifted[0] {
            RankFn::Const(_) => &["value"],
            RankFn::Affine { .. } => &["rank coefficient", "constant term"],
            RankFn::Shift { .. } => &["shift", "period", "phase"],
            _ => &["coefficient", "period", "constant term"],
        };
        let mut out = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let ys: Vec<i64> = cs.iter().map(|c| c[i]).collect();
            let q = format!("{what} {name}");
            let (v, m) = self.number(&ys, &q)?;
            if let Some(m) = m {
                notes.push((q, m));
            }
            out.push(v);
        }
        let f = match lifted[0] {
            RankFn::Const(_) => RankFn::Const(out[0]),
            RankFn::Affine { .. } if out[0] == 0 => RankFn::Const(out[1]),
            RankFn::Affine { .. } => RankFn::Affine {
                a: out[0],
                b: out[1],
            },
            // A shift is a displacement inside its period: one outside it names no rank.
            RankFn::Shift { .. }
                if out[0] <= 0 || out[0] >= out[1] || out[2] < 0 || out[2] >= out[1] =>
            {
                let u = Unusable::Shift {
                    shift: out[0],
                    phase: out[2],
                    period: out[1],
                    target: self.target,
                };
                return Err(self.shape_failure(unusable(what, u), fs));
            }
            RankFn::Shift { .. } => RankFn::Shift {
                w: out[0],
                p: out[1],
                o: out[2],
            },
            _ if out[1] <= 0 => {
                let u = Unusable::Period {
                    period: out[1],
                    target: self.target,
                };
                return Err(self.shape_failure(unusable(what, u), fs));
            }
            _ if out[0] == 0 => RankFn::Const(out[2]),
            RankFn::Div { .. } => RankFn::Div {
                a: out[0],
                k: out[1],
                b: out[2],
            },
            _ => RankFn::Mod {
                a: out[0],
                k: out[1],
                b: out[2],
            },
        };
        Ok(f)
    }

    /// The groups of an elastic value fitted one by one (same count, shapes and forms at every
    /// scale).
    pub(crate) fn elastic_groups(
        &self,
        els: &[&Elastic],
        notes: &mut Vec<(String, String)>,
    ) -> Result<Elastic, Failure> {
        let counts: Vec<usize> = els.iter().map(|e| e.groups.len()).collect();
        if counts.iter().any(|&c| c != counts[0]) {
            return Err(self.shape_failure(differs(None, Shape::Groups), els));
        }
        let mut groups = Vec::with_capacity(counts[0]);
        for g in 0..counts[0] {
            let gs: Vec<&Group> = els.iter().map(|e| &e.groups[g]).collect();
            let what = format!("group {g}");
            // A group's ranks are no size of data, whatever its values are.
            let size = self.scope.data_size.replace(false);
            let ranks = self.rankset(
                &gs.iter().map(|x| &x.ranks).collect::<Vec<_>>(),
                &format!("{what} ranks"),
                notes,
            );
            self.scope.data_size.set(size);
            let ranks = ranks?;
            if gs.iter().any(|x| !x.val.same_shape(&gs[0].val)) {
                let d = differs(Some(&what), Shape::IterationsAcrossScales);
                return Err(self.shape_failure(d, els));
            }
            let leaves: Vec<Vec<RankFn>> = gs
                .iter()
                .map(|x| {
                    let mut l = Vec::new();
                    x.val.leaves(&mut l);
                    l
                })
                .collect();
            let mut out = Vec::with_capacity(leaves[0].len());
            for k in 0..leaves[0].len() {
                let fs: Vec<RankFn> = leaves.iter().map(|l| l[k]).collect();
                let lw = if leaves[0].len() == 1 {
                    what.clone()
                } else {
                    format!("{what} leaf {k}")
                };
                out.push(self.rankfn(&fs, &lw, notes)?);
            }
            // A group of one rank is written with constants, as the compressor writes it.
            if ranks.len() == 1 {
                let r = ranks.first().unwrap_or(0);
                out = out.iter().map(|f| RankFn::Const(f.eval(r))).collect();
            }
            let val = gs[0]
                .val
                .with_leaves(&mut out.into_iter())
                .expect("leaf count taken from the same shape");
            groups.push(Group { ranks, val });
        }
        Ok(Elastic { groups })
    }

    /// Per-rank points of an elastic value at every scale, as (leaf index → points) plus the
    /// value shape. `None` when an input is too large to expand or shapes differ between ranks.
    fn per_rank_points(&self, els: &[&Elastic]) -> Result<(Val<i64>, Vec<Vec<Point>>), Failure> {
        let mut shape: Option<Val<i64>> = None;
        let mut pts: Vec<Vec<Point>> = Vec::new();
        let ppns = self.ppns.iter().chain(std::iter::repeat(&0));
        for ((e, &n), &ppn) in els.iter().zip(&self.scales).zip(ppns) {
            for g in &e.groups {
                if g.ranks.len() > INPUT_EXPAND_LIMIT {
                    let ranks = g.ranks.len();
                    return Err(self.shape_failure(Reason::TooManyRanks { ranks }, els));
                }
                let mut bad = false;
                g.ranks.for_each(|r| {
                    let v = g.val.map(&mut |f| f.eval(r));
                    let sh = shape.get_or_insert_with(|| v.clone());
                    if !sh.same_shape(&v) {
                        bad = true;
                        return;
                    }
                    let mut l = Vec::new();
                    v.leaves(&mut l);
                    if pts.is_empty() {
                        pts = vec![Vec::new(); l.len()];
                    }
                    for (k, y) in l.into_iter().enumerate() {
                        pts[k].push(Point {
                            n,
                            ppn,
                            rank: r as i64,
                            y,
                        });
                    }
                });
                if bad {
                    let d = differs(None, Shape::IterationsAcrossRanks);
                    return Err(self.shape_failure(d, els));
                }
            }
        }
        match shape {
            Some(s) => Ok((s, pts)),
            None => Err(self.shape_failure(Reason::NoValue, els)),
        }
    }

    /// The fallback: each leaf of the per-rank value as a function of (n, rank), evaluated for
    /// every target rank and re-encoded canonically.
    pub(crate) fn elastic_per_rank(
        &self,
        els: &[&Elastic],
        target_ranks: &RankSet,
    ) -> Result<(Elastic, String), Failure> {
        let (shape, pts) = self.per_rank_points(els)?;
        if target_ranks.len() > TARGET_EXPAND_LIMIT {
            let ranks = target_ranks.len();
            return Err(self.shape_failure(Reason::TooManyTargetRanks { ranks }, els));
        }
        let ranks = target_ranks.to_vec();
        let mut cols: Vec<Vec<i64>> = Vec::with_capacity(pts.len());
        let mut descs = Vec::new();
        for (k, p) in pts.iter().enumerate() {
            if p.iter().all(|q| q.y == p[0].y) {
                cols.push(vec![p[0].y; ranks.len()]);
                continue;
            }
            let fits = self.allowed(fit_exact(&self.ms.models, Vars::NRank, p));
            let at = |f: &models::Fitted| -> Option<Vec<i64>> {
                ranks
                    .iter()
                    .map(|&r| f.eval_node(self.target, self.target_ppn, r as i64))
                    .collect()
            };
            match agree(fits, at) {
                Agreement::Agree(f, v) => {
                    descs.push(if pts.len() == 1 {
                        f.describe()
                    } else {
                        format!("leaf {k}: {}", f.describe())
                    });
                    cols.push(v);
                }
                Agreement::Disagree { first, second } => {
                    return Err(Failure {
                        detail: Reasons::one(Reason::PerRankModelsDisagree {
                            target: self.target,
                            first: first.0.describe(),
                            second: second.0.describe(),
                        }),
                        values: values_text(&self.scales, els),
                        tried: self.tried(Vars::NRank),
                        digits: None,
                        widths_disagree: false,
                    });
                }
                Agreement::None => {
                    return Err(Failure {
                        detail: Reasons::one(Reason::PerRankFitsNoModel),
                        values: values_text(&self.scales, els),
                        tried: self.tried(Vars::NRank),
                        digits: self.digits_growth(p),
                        widths_disagree: false,
                    });
                }
            }
        }
        let vals: Vec<(u32, Val<i64>)> = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let mut it = cols.iter().map(|c| c[i]);
                (r, shape.with_leaves(&mut it).expect("same shape"))
            })
            .collect();
        Ok((Elastic::canonical(&vals), descs.join("; ")))
    }

    /// A readable per-rank formula for an elastic value with several groups, when one of the
    /// per-rank models covers it (e.g. `((rank+1) % n) * 1048576`).
    fn per_rank_formula(&self, els: &[&Elastic]) -> Option<String> {
        if els.iter().all(|e| e.groups.len() < 2) {
            return None;
        }
        let (_, pts) = self.per_rank_points(els).ok()?;
        if pts.len() != 1 || pts[0].len() > 4096 {
            return None;
        }
        self.allowed(fit_exact(&self.ms.models, Vars::NRank, &pts[0]))
            .first()
            .map(|f| f.describe())
    }

    fn elastic(
        &mut self,
        els: &[&Elastic],
        target_ranks: &RankSet,
        (site, event): (&Site, &str),
        quantity: Quantity,
    ) -> Result<Elastic, ExtrapError> {
        // Run values: never fitted, the same run value at the target ([`rsd::runvalue`]).
        // A model that expanded ranks and compressed them again holds it as its marker.
        if let Some(k) = els.iter().find_map(|e| rsd::runvalue::kind_in(e)) {
            let param = quantity.to_string();
            self.note(
                event,
                &param,
                format!("{k}, filled in afresh by replay and export"),
            );
            return Ok(rsd::runvalue::elastic(k, target_ranks.clone()));
        }
        // Summaries: their statistics are fitted, not their values.
        if els.iter().any(|e| e.is_approx()) {
            return crate::approx::fit(self, els, target_ranks, (site, event), quantity);
        }
        let param = &quantity.to_string();
        if els.iter().all(|e| *e == els[0]) {
            return Ok(els[0].clone());
        }
        let mut notes = Vec::new();
        self.pending.borrow_mut().clear();
        match self.elastic_groups(els, &mut notes) {
            Ok(e) => {
                // A parameter whose only varying number is one exact model of n gets that
                // model's curve; several (a rank set's start and count, say) get none.
                let curve = {
                    let mut p = self.pending.borrow_mut();
                    let c = if p.len() == 1 { p.pop() } else { None };
                    p.clear();
                    c
                };
                // A single group's rank set follows the node's, explained there already.
                if e.groups.len() < 2 {
                    notes.retain(|(q, _)| !q.contains(" ranks run "));
                }
                let path = matches!(quantity, Quantity::PathField { .. });
                match self.per_rank_formula(els) {
                    Some(f) => self.note(event, param, f),
                    None if notes.is_empty() && !path => {}
                    None if notes.is_empty() => self.note(event, param, e.to_string()),
                    None => {
                        let text = notes
                            .iter()
                            .map(|(q, m)| format!("{q} = {m}"))
                            .collect::<Vec<_>>()
                            .join("; ");
                        self.note_curve(event, param, format!("{e}  [{text}]"), curve);
                    }
                }
                Ok(e)
            }
            Err(first) => match self.elastic_per_rank(els, target_ranks) {
                Ok((e, desc)) => {
                    self.note(event, param, desc);
                    Ok(e)
                }
                Err(second) => {
                    self.elastic_last(els, target_ranks, (site, event), quantity, [first, second])
                }
            },
        }
    }

    /// After the fits by groups and per rank failed: the fit iteration by iteration, then the
    /// smallest scales held out ([`crate::degenerate`]), else the refusal (with the held-out
    /// scales' hint where the larger scales fit and the smallest does not follow).
    fn elastic_last(
        &mut self,
        els: &[&Elastic],
        target_ranks: &RankSet,
        (site, event): (&Site, &str),
        quantity: Quantity,
        [first, second]: [Failure; 2],
    ) -> Result<Elastic, ExtrapError> {
        let param = &quantity.to_string();
        if let Some(e) = self.elastic_by_iterations(els, target_ranks) {
            self.note(
                event,
                param,
                format!("{e}  [fitted iteration by iteration]"),
            );
            return Ok(e);
        }
        // Models that fit every scale and disagree at the target are an ambiguity the inputs
        // leave open: fewer scales cannot settle it.
        let ambiguous = [&first, &second].iter().any(|f| {
            f.detail.any(|r| {
                matches!(
                    r,
                    Reason::ModelsDisagree { .. } | Reason::PerRankModelsDisagree { .. }
                )
            })
        });
        let held_out = if ambiguous {
            HeldOut::Unfitted
        } else {
            self.elastic_held_out(els, target_ranks)
        };
        let missed = match held_out {
            HeldOut::Fitted(e, held_out) => {
                let at = held_out
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                self.note(
                    event,
                    param,
                    format!(
                        "{e}  [fitted over the larger scales; at {at} ranks, where the rank \
                         groups take another form, reproduced rank by rank]"
                    ),
                );
                return Ok(e);
            }
            HeldOut::Missed(hint) => Some(hint),
            HeldOut::Unfitted => None,
        };
        let mut refusal = self.refuse(
            site,
            quantity,
            Failure {
                detail: per_rank_too(first.detail, second.detail),
                values: first.values,
                tried: format!("{} (per rank: {})", first.tried, second.tried),
                digits: first.digits.or(second.digits),
                widths_disagree: first.widths_disagree,
            },
        );
        if let (Some(m), ExtrapError::Refused { hint, .. }) = (missed, &mut refusal) {
            *hint = m;
        }
        Err(refusal)
    }

    /// The last resort for a value affine in its loops' indices, `base + Σ s_d * i_d`: fit it
    /// by its values at the loops' first and second iterations (`base` and `base + s_d`)
    /// instead of by its strides. A loop whose iterations write different datasets (a
    /// strong-scaled one of `floor(T/n)` elements, then a weak-scaled one of a constant
    /// size, as HDF5 programs do) has a stride that is the difference of two laws and fits
    /// no model, while the value of each iteration does. `None` when the value is not affine
    /// or still does not fit.
    fn elastic_by_iterations(
        &mut self,
        els: &[&Elastic],
        target_ranks: &RankSet,
    ) -> Option<Elastic> {
        let moved: Vec<Elastic> = els
            .iter()
            .map(|e| by_iterations(e, 1))
            .collect::<Option<_>>()?;
        if moved.iter().zip(els).all(|(m, e)| m == *e) {
            return None;
        }
        let refs: Vec<&Elastic> = moved.iter().collect();
        let mut notes = Vec::new();
        let fitted = match self.elastic_groups(&refs, &mut notes) {
            Ok(e) => Some(e),
            Err(_) => self.elastic_per_rank(&refs, target_ranks).ok().map(|r| r.0),
        };
        self.pending.borrow_mut().clear();
        by_iterations(&fitted?, -1)
    }

    fn note(&mut self, event: &str, quantity: &str, model: String) {
        self.note_curve(event, quantity, model, None);
    }

    fn note_curve(&mut self, event: &str, quantity: &str, model: String, curve: Option<Curve>) {
        self.explain.push(Explain {
            event: event.to_string(),
            quantity: quantity.to_string(),
            model,
            curve,
        });
    }

    pub(crate) fn nodes(
        &mut self,
        lists: &[&[Node]],
        inputs: &[(String, u32)],
        parent: Option<&Site>,
    ) -> Result<Vec<Node>, ExtrapError> {
        let longest = lists.iter().map(|l| l.len()).max().unwrap_or(0);
        let mut out = Vec::with_capacity(longest);
        for i in 0..longest {
            let here: Vec<Option<&Node>> = lists.iter().map(|l| l.get(i)).collect();
            let key0 = here[0].map(Node::skey);
            if let Some(s) = here.iter().position(|n| n.map(Node::skey) != key0) {
                return Err(ExtrapError::StructureDiffers {
                    also: Reasons::default(),
                    at: crate::consistent::Differing {
                        index: i,
                        parent: parent.cloned(),
                        left: here[0].map(Site::of),
                        right: here[s].map(Site::of),
                    },
                    left_ranks: inputs[0].1,
                    left_input: inputs[0].0.clone(),
                    right_ranks: inputs[s].1,
                    right_input: inputs[s].0.clone(),
                });
            }
            let ns: Vec<&Node> = here.into_iter().map(|n| n.expect("same key")).collect();
            let site = Site::of(ns[0]);
            let desc = site.to_string();
            // A collective MPI-IO call and its nested calls: which ranks make the nested
            // calls (and so which ranks' calls have them) is the library's choice of
            // aggregators, said in a refusal's hint when it changes with the scale.
            let outer = self.scope.clone();
            if let NodeKind::Event(e0) = &ns[0].kind
                && collio::traced::collective_dir(e0.op).is_some()
            {
                let kids: Vec<&[Node]> = ns
                    .iter()
                    .map(|n| match &n.kind {
                        NodeKind::Event(e) => e.children.as_slice(),
                        NodeKind::Loop(_) => &[],
                    })
                    .collect();
                self.scope.aggregators = aggregator_counts(&self.scales, &kids);
            }
            let mut notes = Vec::new();
            let ranks = self
                .rankset(
                    &ns.iter().map(|n| &n.ranks).collect::<Vec<_>>(),
                    "ranks",
                    &mut notes,
                )
                .map_err(|f| self.refuse(&site, Quantity::Ranks, f))?;
            // Every rank, at every scale, needs no explaining.
            if !notes.is_empty() && ranks != RankSet::all(self.target as u32) {
                let m = notes
                    .iter()
                    .map(|(q, m)| format!("{q} = {m}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                self.note(&desc, "ranks", format!("{ranks}  [{m}]"));
            }
            let kind = match &ns[0].kind {
                NodeKind::Event(e0) => {
                    let evs: Vec<&Event> = ns
                        .iter()
                        .map(|n| match &n.kind {
                            NodeKind::Event(e) => e,
                            NodeKind::Loop(_) => unreachable!("same structural key"),
                        })
                        .collect();
                    let np = e0.params.len();
                    let nf = e0.nfields();
                    let mut params = Vec::with_capacity(np);
                    for k in 0..np {
                        let quantity = Quantity::of_param(e0.op, k, np, nf);
                        let is_path = matches!(quantity, Quantity::PathField { .. });
                        let els: Vec<&Elastic> = evs.iter().map(|e| &e.params[k]).collect();
                        let before = self.explain.len();
                        self.scope.data_size.set(
                            e0.op.dir() != rsd::op::Dir::None
                                && e0.op.params().get(k).is_some_and(|p| {
                                    matches!(
                                        p,
                                        Param::Count | Param::Size | Param::Bytes | Param::Ret
                                    )
                                }),
                        );
                        let fitted = self.elastic(&els, &ranks, (&site, &desc), quantity);
                        self.scope.data_size.set(false);
                        params.push(fitted?);
                        // Path fields read as the issue writes them: `path: out/file.%08d [rank]`.
                        if is_path
                            && let (Some(t), Some(x)) = (&e0.path, self.explain.get_mut(before))
                        {
                            x.quantity = "path".into();
                            x.model = format!("{} [{}]", t.0, x.model);
                        }
                    }
                    let kids: Vec<&[Node]> = evs.iter().map(|e| e.children.as_slice()).collect();
                    let inner = self.scope.in_collective;
                    if collio::traced::collective_dir(e0.op).is_some() {
                        self.scope.in_collective = true;
                    }
                    let children = self.nodes(&kids, inputs, Some(&site));
                    self.scope.in_collective = inner;
                    let children = children?;
                    let timing =
                        self.timing(&evs.iter().map(|e| &e.timing).collect::<Vec<_>>(), &desc);
                    NodeKind::Event(Event {
                        op: e0.op,
                        sig: e0.sig,
                        path: e0.path.clone(),
                        params,
                        timing,
                        children,
                    })
                }
                NodeKind::Loop(_) => {
                    let ls: Vec<&Loop> = ns
                        .iter()
                        .map(|n| match &n.kind {
                            NodeKind::Loop(l) => l,
                            NodeKind::Event(_) => unreachable!("same structural key"),
                        })
                        .collect();
                    let iters = self.elastic(
                        &ls.iter().map(|l| &l.iters).collect::<Vec<_>>(),
                        &ranks,
                        (&site, &desc),
                        Quantity::LoopCount,
                    )?;
                    let bodies: Vec<&[Node]> = ls.iter().map(|l| l.body.as_slice()).collect();
                    let body = self.nodes(&bodies, inputs, Some(&site))?;
                    NodeKind::Loop(Loop { iters, body })
                }
            };
            self.scope = outer;
            out.push(Node { ranks, kind });
        }
        Ok(out)
    }

    fn timing(&mut self, ts: &[&Timing], event: &str) -> Timing {
        let idx = self.cursor;
        self.cursor += 1;
        // Every run of each scale: the fitted one, then the repeats.
        let runs: Vec<Vec<Timing>> = ts
            .iter()
            .enumerate()
            .map(|(s, t)| {
                let mut v = vec![(*t).clone()];
                if let Some(reps) = self.repeats.get(s) {
                    v.extend(reps.iter().filter_map(|r| r.get(idx)).cloned());
                }
                v
            })
            .collect();
        let pick = |f: &dyn Fn(&Timing) -> &Stats| -> Vec<Vec<&Stats>> {
            runs.iter().map(|r| r.iter().map(f).collect()).collect()
        };
        let (gap, gi) = self.stats(&pick(&|t| &t.gap), event, "gap");
        let (dur, di) = self.stats(&pick(&|t| &t.dur), event, "duration");
        let interval = match (gi, di) {
            (Some(gap), Some(dur)) => Some(Intervals { gap, dur }),
            _ => None,
        };
        let waits = self
            .waits_fitted(&runs, &gap, event)
            .or_else(|| waits_like(ts.last().copied(), &gap));
        Timing {
            gap,
            dur,
            interval,
            waits,
        }
    }

    /// An extrapolated event's off-CPU time in its gaps, where every run recorded it: the CPU
    /// time and the blocked time of a gap, per call, each fitted over the scales as the gap's
    /// mean is, and the time waiting for a core what is left of the predicted gap. A rank's
    /// own work between two calls (its CPU time) is what the program does, whatever the
    /// contention; what grows with the ranks per core is the wait for one. The largest
    /// input's share of waiting applied to a longer predicted gap made the CPU time grow with
    /// the contention instead, so a replay burning it (`--compute work`) overshot.
    fn waits_fitted(
        &mut self,
        runs: &[Vec<Timing>],
        gap: &Stats,
        event: &str,
    ) -> Option<rsd::timing::GapWaits> {
        if gap.count == 0 {
            return None;
        }
        let mut cpu: Vec<Vec<f64>> = Vec::new();
        let mut blocked: Vec<Vec<f64>> = Vec::new();
        for r in runs {
            let (mut c, mut b) = (Vec::new(), Vec::new());
            for t in r.iter().filter(|t| t.gap.count > 0) {
                let w = t.waits?;
                let n = t.gap.count as f64;
                let total = t.gap.mean * n;
                let off = (w.runq_ns + w.blocked_ns) as f64;
                c.push((total - off).max(0.0) / n);
                b.push(w.blocked_ns as f64 / n);
            }
            if c.is_empty() {
                return None;
            }
            cpu.push(c);
            blocked.push(b);
        }
        let per_call_cpu = self.choose(&cpu, 0.0, event, "", false)?.value.max(0.0);
        let per_call_blocked = self.choose(&blocked, 0.0, event, "", false)?.value.max(0.0);
        let n = gap.count as f64;
        let predicted = gap.mean.max(0.0) * n;
        let cpu_total = (per_call_cpu * n).min(predicted);
        let blocked_total = (per_call_blocked * n).min(predicted - cpu_total);
        let w = rsd::timing::GapWaits {
            runq_ns: (predicted - cpu_total - blocked_total).max(0.0).round() as u64,
            blocked_ns: blocked_total.round() as u64,
        };
        (!w.is_zero()).then_some(w)
    }

    /// One timed quantity's model chosen over every run's value (`ys[s]`: the runs of scale
    /// `s`), with `noise` the standard deviation of one observation known from the repeated
    /// calls; `None` when nothing can be fitted.
    fn choose(
        &mut self,
        ys: &[Vec<f64>],
        noise: f64,
        event: &str,
        what: &str,
        explain: bool,
    ) -> Option<TimingChoice> {
        let (mut ns, mut flat) = (Vec::new(), Vec::new());
        for (&n, v) in self.scales.iter().zip(ys) {
            for &y in v {
                ns.push(n as f64);
                flat.push(y);
            }
        }
        let c = choose(&ns, &flat, noise, self.target as f64)?;
        if explain {
            let curve = crate::timing::curve(&ns, &flat, &c, self.target);
            self.note_curve(event, what, c.describe(), Some(curve));
        }
        Some(c)
    }

    /// Timing statistics at the target: the count exactly where a model fits (it follows the
    /// structure: ranks times iterations), the mean chosen out of sample over every run with
    /// the spread of the repeated calls as its noise, min/max/std likewise without a word;
    /// and the mean's prediction interval.
    fn stats(
        &mut self,
        runs: &[Vec<&Stats>],
        event: &str,
        what: &str,
    ) -> (Stats, Option<Interval>) {
        if runs.iter().flatten().all(|s| s.count == 0) {
            return (Stats::default(), None);
        }
        let ss: Vec<&Stats> = runs.iter().map(|r| r[0]).collect();
        let counts: Vec<i64> = ss.iter().map(|s| s.count as i64).collect();
        let count = match self.number(&counts, "count") {
            Ok((c, _)) if c >= 0 => c as f64,
            _ => {
                let c: Vec<Vec<f64>> = counts.iter().map(|&c| vec![c as f64]).collect();
                self.choose(&c, 0.0, event, "", false)
                    .map_or(counts[counts.len() - 1] as f64, |c| c.value)
                    .round()
            }
        };
        let col = |f: &dyn Fn(&Stats) -> f64| -> Vec<Vec<f64>> {
            runs.iter()
                .map(|r| r.iter().map(|s| f(s)).collect())
                .collect()
        };
        // The standard error of a run's mean from the spread of its calls (pooled).
        let sem = {
            let all: Vec<f64> = runs
                .iter()
                .flatten()
                .filter(|s| s.count > 0)
                .map(|s| s.variance() / s.count as f64)
                .collect();
            (all.iter().sum::<f64>() / all.len().max(1) as f64).sqrt()
        };
        let last_mean = ss[ss.len() - 1].mean;
        let (mean, interval) =
            match self.choose(&col(&|s| s.mean), sem, event, &format!("{what} mean"), true) {
                Some(c) => (
                    c.value,
                    Some(Interval {
                        lo: c.interval.0,
                        hi: c.interval.1,
                    }),
                ),
                None => (last_mean, None),
            };
        let mut other = |f: &dyn Fn(&Stats) -> f64| {
            let v = col(f);
            let fallback = v[v.len() - 1][0];
            self.choose(&v, 0.0, event, "", false)
                .map_or(fallback, |c| c.value)
        };
        let mut min = other(&|s| s.min as f64);
        let mut max = other(&|s| s.max as f64);
        let std = other(&|s| s.variance().sqrt());
        min = min.min(mean);
        max = max.max(mean);
        let last = ss[ss.len() - 1];
        let count_u = count as u64;
        // Histogram: the largest input's shape scaled to the new count, rounding error put in
        // the fullest bin so the bins still add up to the count.
        let mut bins = [0u64; BINS];
        if last.count > 0 {
            let f = count / last.count as f64;
            for (b, &c) in bins.iter_mut().zip(&last.bins) {
                *b = (c as f64 * f).round() as u64;
            }
            let sum: u64 = bins.iter().sum();
            let (imax, _) = bins
                .iter()
                .enumerate()
                .max_by_key(|(_, c)| **c)
                .unwrap_or((0, &0));
            if sum > count_u {
                bins[imax] = bins[imax].saturating_sub(sum - count_u);
            } else {
                bins[imax] += count_u - sum;
            }
        }
        let rank_ok = |r: u32| if (r as i64) < self.target { r } else { 0 };
        let stats = Stats {
            count: count_u,
            min: min.round() as u64,
            max: max.round() as u64,
            min_rank: rank_ok(last.min_rank),
            max_rank: rank_ok(last.max_rank),
            mean,
            m2: std * std * count,
            bins,
        };
        (stats, interval)
    }
}

/// A reason of a quantity (or of `part` of it) whose form differs.
fn differs(part: Option<&str>, shape: Shape) -> Reason {
    Reason::ShapeDiffers {
        part: part.map(str::to_string),
        shape,
    }
}

/// A reason of `part` of a quantity whose fit means nothing at the target.
fn unusable(part: &str, unusable: Unusable) -> Reason {
    Reason::Unusable {
        part: part.into(),
        unusable,
    }
}

/// The reasons the fit by groups failed, then those the per-rank fit did.
fn per_rank_too(mut first: Reasons, second: Reasons) -> Reasons {
    (first.0).extend(second.0.into_iter().map(|r| Reason::PerRank {
        reason: Box::new(r),
    }));
    first
}

/// The number of ranks making the nested calls `kids` of a collective call at each scale, as
/// `1 at 4 ranks, 1 at 8, 2 at 12, 2 at 16`, when it differs between the scales (`None` when
/// it does not, or an input is too large to count).
fn aggregator_counts(scales: &[i64], kids: &[&[Node]]) -> Option<String> {
    fn ranks(nodes: &[Node], out: &mut std::collections::BTreeSet<u32>) -> Option<()> {
        for n in nodes {
            if n.ranks.len() > INPUT_EXPAND_LIMIT {
                return None;
            }
            n.ranks.for_each(|r| {
                out.insert(r);
            });
            match &n.kind {
                NodeKind::Event(e) => ranks(&e.children, out)?,
                NodeKind::Loop(l) => ranks(&l.body, out)?,
            }
        }
        Some(())
    }
    let counts: Vec<usize> = kids
        .iter()
        .map(|k| {
            let mut set = std::collections::BTreeSet::new();
            ranks(k, &mut set).map(|_| set.len())
        })
        .collect::<Option<_>>()?;
    if counts.iter().all(|&c| c == counts[0]) {
        return None;
    }
    Some(
        counts
            .iter()
            .zip(scales)
            .enumerate()
            .map(|(i, (c, n))| {
                if i == 0 {
                    format!("{c} at {n} ranks")
                } else {
                    format!("{c} at {n}")
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// `x + sign * y` for two functions of the rank, when the sum is one of them (constants,
/// affine functions, blocks or periods of the same size).
fn rankfn_add(x: RankFn, y: RankFn, sign: i64) -> Option<RankFn> {
    let m = |v: i64| v.checked_mul(sign);
    let f = match (x, y) {
        (RankFn::Const(a), RankFn::Const(b)) => RankFn::Const(a.checked_add(m(b)?)?),
        (RankFn::Affine { a, b }, RankFn::Const(c)) => RankFn::Affine {
            a,
            b: b.checked_add(m(c)?)?,
        },
        (RankFn::Const(c), RankFn::Affine { a, b }) => RankFn::Affine {
            a: m(a)?,
            b: c.checked_add(m(b)?)?,
        },
        (RankFn::Affine { a, b }, RankFn::Affine { a: a2, b: b2 }) => RankFn::Affine {
            a: a.checked_add(m(a2)?)?,
            b: b.checked_add(m(b2)?)?,
        },
        (RankFn::Div { a, k, b }, RankFn::Const(c)) => RankFn::Div {
            a,
            k,
            b: b.checked_add(m(c)?)?,
        },
        (RankFn::Mod { a, k, b }, RankFn::Const(c)) => RankFn::Mod {
            a,
            k,
            b: b.checked_add(m(c)?)?,
        },
        _ => return None,
    };
    // The compressor writes an affine function of slope 0 as a constant.
    Some(match f {
        RankFn::Affine { a: 0, b } => RankFn::Const(b),
        f => f,
    })
}

/// `sign` 1: every affine value `base + Σ s_d * i_d` of `e` with each stride replaced by
/// the value at the second iteration of its loop, `base + s_d`; `sign` -1: back.
fn by_iterations(e: &Elastic, sign: i64) -> Option<Elastic> {
    fn val(v: &Val<RankFn>, sign: i64) -> Option<Val<RankFn>> {
        Some(match v {
            Val::Const(_) => v.clone(),
            Val::Lin { base, strides } => Val::Lin {
                base: *base,
                strides: strides
                    .iter()
                    .map(|s| rankfn_add(*s, *base, sign))
                    .collect::<Option<_>>()?,
            },
            Val::Seq(vs) => Val::Seq(vs.iter().map(|x| val(x, sign)).collect::<Option<_>>()?),
            Val::Cycle(vs) => Val::Cycle(vs.iter().map(|x| val(x, sign)).collect::<Option<_>>()?),
            // A summary has no iterations to refit through (its statistics are fitted by
            // `approx` before this is reached).
            Val::Approx(_) => return None,
            // The prefix-sum model's start is a value over the loops like any other.
            Val::Exscan(x) => Val::Exscan(Box::new(rsd::prefix::Exscan {
                of: x.of,
                running: x.running,
                start: val(&x.start, sign)?,
                from: x.from,
            })),
            Val::FileEnd(x) => Val::FileEnd(Box::new(rsd::layout::FileEnd {
                of: x.of,
                start: val(&x.start, sign)?,
            })),
            // Never fitted (taken before the fit reaches this).
            Val::Run(_) => return None,
        })
    }
    Some(Elastic {
        groups: e
            .groups
            .iter()
            .map(|g| {
                Some(Group {
                    ranks: g.ranks.clone(),
                    val: val(&g.val, sign)?,
                })
            })
            .collect::<Option<_>>()?,
    })
}

/// An extrapolated event's off-CPU time in its gaps: the largest input's share of its gap
/// time, applied to the predicted gaps (the share of a gap a rank waits is a property of the
/// machine and the storage, which the extrapolation keeps).
fn waits_like(largest: Option<&Timing>, gap: &Stats) -> Option<rsd::timing::GapWaits> {
    let t = largest?;
    let w = t.waits?;
    let traced = t.gap.mean * t.gap.count as f64;
    if traced <= 0.0 {
        return None;
    }
    let predicted = gap.mean * gap.count as f64;
    let share = |ns: u64| ((ns as f64 / traced).min(1.0) * predicted).round() as u64;
    let w = rsd::timing::GapWaits {
        runq_ns: share(w.runq_ns),
        blocked_ns: share(w.blocked_ns),
    };
    (!w.is_zero()).then_some(w)
}

#[cfg(test)]
mod tests {
    use crate::request::as_given as extrapolate;
    use crate::{ExtrapError, Input, ModelSet};
    use rsd::op::{Op, args};
    use rsd::trace::RawEvent;

    /// Rank 0 prints a line of `13 + digits(n)` bytes, then every rank writes 4 KiB at
    /// `offset(n, rank)`.
    fn inputs(offset: fn(i64, i64) -> i64) -> Vec<Input> {
        [4u32, 8, 12, 16]
            .iter()
            .map(|&n| {
                let ranks = (0..n)
                    .map(|r| {
                        let mut c = rsd::Compressor::new(r);
                        let width = n.to_string().len() as i64;
                        if r == 0 {
                            c.push(&RawEvent::new(Op::Fprintf, 1, args::fprintf(0, 13 + width)));
                        }
                        let off = offset(n as i64, r as i64);
                        c.push(&RawEvent::new(
                            Op::Pwrite,
                            2,
                            args::pwrite(3, 4096, off, 4096),
                        ));
                        c.finish()
                    })
                    .collect();
                let mut header = rsd::Header::new(n);
                header.command = vec!["widths".into()];
                Input {
                    name: format!("w.{n}.iotrex"),
                    file: rsd::TraceFile {
                        header,
                        trace: rsd::merge_tree(ranks).unwrap(),
                    },
                }
            })
            .collect()
    }

    /// Every rank writes once after a gap of 1 ms of its own CPU work and 0.2 ms blocked,
    /// plus its wait for a core: n ranks on 2 cores wait n/2 - 1 slices of 1 ms.
    fn contended(n: u32) -> Input {
        const MS: u64 = 1_000_000;
        let runq = (u64::from(n) / 2 - 1) * MS;
        let ranks = (0..n)
            .map(|r| {
                let mut c = rsd::Compressor::new(r);
                let mut e = RawEvent::new(Op::Pwrite, 2, args::pwrite(3, 4096, 0, 4096));
                e.gap_ns = MS + MS / 5 + runq;
                c.push(&e);
                c.finish()
            })
            .collect();
        let mut trace = rsd::merge_tree(ranks).unwrap();
        for node in &mut trace.nodes {
            if let rsd::trace::NodeKind::Event(e) = &mut node.kind {
                e.timing.waits = Some(rsd::timing::GapWaits {
                    runq_ns: runq * u64::from(n),
                    blocked_ns: MS / 5 * u64::from(n),
                });
            }
        }
        let mut header = rsd::Header::new(n);
        header.command = vec!["contended".into()];
        Input {
            name: format!("c.{n}.iotrex"),
            file: rsd::TraceFile { header, trace },
        }
    }

    #[test]
    fn a_gaps_cpu_time_stays_the_ranks_own_as_the_wait_for_a_core_grows() {
        let inputs: Vec<Input> = [4, 8, 12, 16].into_iter().map(contended).collect();
        let x = extrapolate(&inputs, 32, &ModelSet::builtin()).unwrap();
        let e = x
            .file
            .trace
            .nodes
            .iter()
            .find_map(|n| match &n.kind {
                rsd::trace::NodeKind::Event(e) if e.op == Op::Pwrite => Some(e),
                _ => None,
            })
            .expect("the write");
        let t = &e.timing;
        let n = t.gap.count as f64;
        let w = t.waits.expect("waits extrapolated");
        let cpu = (t.gap.mean * n - (w.runq_ns + w.blocked_ns) as f64) / n;
        let blocked = w.blocked_ns as f64 / n;
        // 32 ranks on 2 cores: 15 ms waiting for a core per gap, the rank's own 1 ms of CPU
        // and 0.2 ms blocked as at every input (the largest input's share of waiting, 85% of
        // its gap, applied to the longer gap would make it 2 ms of CPU).
        assert!((cpu - 1e6).abs() < 0.05e6, "CPU per gap {cpu} ns: {t:?}");
        assert!(
            (blocked - 0.2e6).abs() < 0.01e6,
            "blocked per gap {blocked} ns"
        );
        assert!((t.gap.mean - 16.2e6).abs() < 0.5e6, "gap {}", t.gap.mean);
    }

    #[test]
    fn text_width_models_are_for_sizes_of_data_only() {
        let ms = ModelSet::builtin();
        // The printed line's size steps with the width of n: extrapolated.
        let x = extrapolate(&inputs(|_, r| r * 4096), 128, &ms).unwrap();
        assert!(
            x.explain.iter().any(|e| e.model.contains("digits(n) + 13")),
            "{:?}",
            x.explain
        );
        // An offset that steps between 8 and 12 ranks (one block per 8 ranks, as aggregators
        // are) is no text: refused, not taken for digits(n).
        let e = extrapolate(&inputs(|n, _| (n + 7) / 8 * 4096), 32, &ms).unwrap_err();
        match &e {
            ExtrapError::Refused { param, hint, .. } => {
                let param = param.to_string();
                assert_eq!(param, "offset", "{e}");
                assert!(!hint.contains("decimal width"), "{hint}");
            }
            other => panic!("expected a refusal of the offset, got {other}"),
        }
    }
}
