//! Extrapolation of approximate quantities and parameters the user declares
//! irrelevant.
//!
//! A summarised parameter ([`rsd::approx::Summary`]: count, min and max with their ranks, mean,
//! variance, log-4 histogram) has no exact values to fit. Its statistics are fitted against
//! the rank count `n` instead, with the timing-fit machinery (`models::timing::choose`:
//! least-squares families chosen by leave-one-scale-out error, refused where implausible up
//! to the target): the mean (its noise the standard error of the samples behind it), the
//! standard deviation, the minimum and the maximum. The count follows the structure (ranks
//! times iterations): it is fitted exactly where an exact model fits and by least squares
//! otherwise. The result is a summary at the target, marked approximate like any summary;
//! `--explain` names every such quantity with its models and their held-out errors, and the
//! output's header says how many parameters are approximate.
//!
//! Before fitting, the inputs are made to agree: where one input holds a summary at a
//! position (a parameter over budget at the larger scales only, say), the same parameter is
//! summarised in every input ([`complete`]), so that the fit sees one summary per scale.
//! `extrap --ignore op.param` summarises the named parameter everywhere ([`ignore`]), so a
//! value that would refuse (a log line's length, a time printed) extrapolates approximately.
//! `extrap --exact` keeps the old rule: a summary refuses ([`require_exact`]).

use crate::error::{ExtrapError, Quantity, Reason, Site};
use crate::fit::Fitter;
use crate::{Curve, Explain, Input};
use models::timing::{TimingChoice, choose};
use rsd::approx::{Summary, summarise_where};
use rsd::timing::{BINS, Stats};
use rsd::trace::{Node, NodeKind, Trace};
use rsd::value::{Elastic, Group, Val};
use rsd::{Op, RankSet, TraceFile};
use std::collections::HashSet;

/// One parameter the user declares irrelevant: `op.param` as `iotrex show` names them
/// (`fprintf.ret`, `MPI_Send.count`), or an element of one of the arrays an op stores after
/// its fixed parameters (`H5Sselect_hyperslab.count[0]`: data-dependent hyperslab counts),
/// whose index in an event depends on the event's array lengths ([`Op::param_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ignore {
    /// The operation.
    pub op: Op,
    /// The parameter's name in the op's fixed parameters (`rsd::op`'s table), or the array's
    /// ([`Op::arrays`]).
    pub param: &'static str,
    /// The element of the array, for an array.
    pub element: Option<usize>,
}

impl Ignore {
    /// Parses `op.param` or `op.array[k]`; an unknown op or parameter is an error naming it
    /// and what exists.
    pub fn parse(spec: &str) -> Result<Ignore, ExtrapError> {
        let bad = |why: String| ExtrapError::BadIgnore {
            spec: spec.to_string(),
            why,
        };
        let Some((op_name, param)) = spec.rsplit_once('.') else {
            return Err(bad("expected OP.PARAM, e.g. fprintf.ret".into()));
        };
        let op = Op::ALL
            .iter()
            .copied()
            .find(|o| o.name() == op_name)
            .or_else(|| {
                Op::ALL
                    .iter()
                    .copied()
                    .find(|o| o.name().eq_ignore_ascii_case(op_name))
            })
            .ok_or_else(|| {
                bad(format!(
                    "no traced operation is named `{op_name}` (names as `iotrex show` prints \
                     them, e.g. fprintf, pwrite, MPI_Send)"
                ))
            })?;
        let names = op.schema();
        fn element(p: &str) -> Option<(&str, usize)> {
            let (array, rest) = p.split_once('[')?;
            let k = rest.strip_suffix(']')?.parse().ok()?;
            Some((array, k))
        }
        if let Some(k) = names.iter().position(|n| *n == param) {
            return Ok(Ignore {
                op,
                param: names[k],
                element: None,
            });
        }
        if let Some((array, k)) = element(param)
            && let Some(g) = Ignore::element(op, array, k)
        {
            return Ok(g);
        }
        let arrays: Vec<String> = op
            .arrays()
            .iter()
            .filter(|a| Ignore::summarisable(a))
            .map(|a| format!("{a}[k]"))
            .collect();
        let all: Vec<String> = names.iter().map(|n| n.to_string()).chain(arrays).collect();
        Err(bad(format!(
            "{} has no parameter `{param}`; its parameters: {}",
            op.name(),
            if all.is_empty() {
                "none".to_string()
            } else {
                all.join(", ")
            }
        )))
    }

    /// Element `k` of `op`'s array `array`, when that array is one a user may name (not the
    /// catch-all arrays of values past the known ones).
    pub fn element(op: Op, array: &str, k: usize) -> Option<Ignore> {
        let a = op.arrays().iter().find(|a| **a == array)?;
        Ignore::summarisable(a).then_some(Ignore {
            op,
            param: a,
            element: Some(k),
        })
    }

    fn summarisable(array: &str) -> bool {
        !matches!(array, "extra" | "neighborhood")
    }

    /// Whether it names parameter `k` of an event of `op` with `nparams` parameters, the last
    /// `nfields` of them path fields.
    pub fn names(&self, op: Op, nparams: usize, nfields: usize, k: usize) -> bool {
        if op != self.op {
            return false;
        }
        match self.element {
            None => self.op.schema().get(k) == Some(&self.param),
            Some(_) => {
                k >= self.op.schema().len()
                    && self.op.param_name(k, nparams, nfields) == self.shown_param()
            }
        }
    }

    /// Whether it is a quantity that follows the program's data (a size, a count, an array of
    /// them), which `--approx-unfit` may summarise.
    pub fn is_quantity(&self) -> bool {
        match self.element {
            None => self
                .op
                .schema()
                .iter()
                .position(|n| *n == self.param)
                .is_some_and(|k| self.op.params()[k].is_quantity()),
            Some(_) => self.op.array_is_quantity(self.param),
        }
    }

    /// The parameter as `iotrex show` names it (`count`, `count[0]`).
    fn shown_param(self) -> String {
        match self.element {
            None => self.param.to_string(),
            Some(k) => format!("{}[{k}]", self.param),
        }
    }
}

impl std::fmt::Display for Ignore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.op.name(), self.shown_param())
    }
}

/// `--exact`: refuses the first input that holds a summary, naming the event and parameter.
pub fn require_exact(inputs: &[Input]) -> Result<(), ExtrapError> {
    for i in inputs {
        rsd::approx::require_exact(&i.file.trace, &i.name, "exact extrapolation (--exact)")
            .map_err(ExtrapError::Approximate)?;
    }
    Ok(())
}

/// `--ignore`: every event of each named op, nested calls included, gets the named parameter
/// as a summary in every input. Returns the inputs and, per ignored parameter, how many
/// events it was summarised in over all inputs (0: the inputs never call it, or its values
/// are negative somewhere, which a summary cannot hold).
pub fn ignore(inputs: Vec<Input>, ignored: &[Ignore]) -> (Vec<Input>, Vec<(Ignore, usize)>) {
    let mut found = vec![0usize; ignored.len()];
    let inputs = inputs
        .into_iter()
        .map(|mut i| {
            let done = summarise_where(&mut i.file.trace, &mut |_, e, k| {
                ignored
                    .iter()
                    .any(|g| g.names(e.op, e.params.len(), e.nfields(), k))
            });
            for d in done {
                for (g, n) in ignored.iter().zip(found.iter_mut()) {
                    if g.op == d.op && g.shown_param() == d.name {
                        *n += 1;
                    }
                }
            }
            i
        })
        .collect();
    (inputs, ignored.iter().copied().zip(found).collect())
}

/// Positions (node path, parameter) where some trace holds a summary, over the part of the
/// traces that lines up: nodes are compared by kind, op, call site and path only (the nested
/// calls of a collective call differ between scales by design and are aligned as far as they
/// go), and a list stops lining up at its first differing node.
fn positions(lists: &[&[Node]], path: &mut Vec<usize>, out: &mut HashSet<(Vec<usize>, usize)>) {
    let len = lists.iter().map(|l| l.len()).min().unwrap_or(0);
    for i in 0..len {
        let ns: Vec<&Node> = lists.iter().map(|l| &l[i]).collect();
        path.push(i);
        match &ns[0].kind {
            NodeKind::Event(e0) => {
                let evs: Option<Vec<&rsd::trace::Event>> = ns
                    .iter()
                    .map(|n| match &n.kind {
                        NodeKind::Event(e)
                            if (e.op, e.sig, &e.path, e.params.len())
                                == (e0.op, e0.sig, &e0.path, e0.params.len()) =>
                        {
                            Some(e)
                        }
                        _ => None,
                    })
                    .collect();
                let Some(evs) = evs else {
                    path.pop();
                    return;
                };
                for k in 0..e0.params.len() {
                    if evs.iter().any(|e| e.params[k].is_approx()) {
                        out.insert((path.clone(), k));
                    }
                }
                let kids: Vec<&[Node]> = evs.iter().map(|e| e.children.as_slice()).collect();
                positions(&kids, path, out);
            }
            NodeKind::Loop(_) => {
                let bodies: Option<Vec<&[Node]>> = ns
                    .iter()
                    .map(|n| match &n.kind {
                        NodeKind::Loop(l) => Some(l.body.as_slice()),
                        NodeKind::Event(_) => None,
                    })
                    .collect();
                let Some(bodies) = bodies else {
                    path.pop();
                    return;
                };
                positions(&bodies, path, out);
            }
        }
        path.pop();
    }
}

/// Summarises, in place, the sizes and offsets of the nested calls of every event that holds a
/// summary (a collective write whose counts are summarised): the MPI library's calls inside it
/// cut the ranks' regions into aggregators' writes, so their sizes and offsets follow the
/// summarised sizes (derived from their typical values at an extrapolation's target, from the
/// data in a real run) and are approximate parts too. Which nested calls are made, and how
/// many, is left exact. `diff` runs it on both sides. Returns what it summarised.
pub fn nested_of_summaries(trace: &mut Trace) -> Vec<rsd::approx::Summarised> {
    fn parents(nodes: &[Node], path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        for (i, n) in nodes.iter().enumerate() {
            path.push(i);
            match &n.kind {
                NodeKind::Event(e) => {
                    if !e.children.is_empty() && e.params.iter().any(Elastic::is_approx) {
                        out.push(path.clone());
                    }
                }
                NodeKind::Loop(l) => parents(&l.body, path, out),
            }
            path.pop();
        }
    }
    let mut under = Vec::new();
    parents(&trace.nodes, &mut Vec::new(), &mut under);
    if under.is_empty() {
        return Vec::new();
    }
    summarise_where(trace, &mut |path, e, k| {
        under
            .iter()
            .any(|p| path.len() > p.len() && path.starts_with(p))
            && e.op.params().get(k).is_some_and(|p| {
                matches!(
                    p,
                    rsd::Param::Offset | rsd::Param::Count | rsd::Param::Bytes | rsd::Param::Ret
                )
            })
    })
}

/// Where some of `traces` hold a summary and others exact values at the same position, the
/// traces with those positions summarised too (`None` when no trace holds a summary, or when
/// they already agree).
pub fn complete(traces: &[&Trace]) -> Option<Vec<Trace>> {
    let lists: Vec<&[Node]> = traces.iter().map(|t| t.nodes.as_slice()).collect();
    let mut at = HashSet::new();
    positions(&lists, &mut Vec::new(), &mut at);
    if at.is_empty() {
        return None;
    }
    let mut changed = false;
    let out = traces
        .iter()
        .map(|t| {
            let mut t = (*t).clone();
            // A value that is a summary for some ranks and exact for others (a rank under
            // budget) becomes one summary of them all, as on the other side.
            let done = summarise_where(&mut t, &mut |path, e, k| {
                !is_one_summary(&e.params[k]) && at.contains(&(path.to_vec(), k))
            });
            changed |= !done.is_empty();
            t
        })
        .collect();
    changed.then_some(out)
}

/// Whether `e` is one summary over its ranks.
fn is_one_summary(e: &Elastic) -> bool {
    matches!(
        e.groups.as_slice(),
        [Group {
            val: Val::Approx(_),
            ..
        }]
    )
}

/// [`complete`] for extrapolation inputs (sorted as given), or `None` when nothing changes.
pub(crate) fn complete_inputs(inputs: &[&Input]) -> Option<Vec<Input>> {
    let traces: Vec<&Trace> = inputs.iter().map(|i| &i.file.trace).collect();
    let done = complete(&traces)?;
    Some(
        inputs
            .iter()
            .zip(done)
            .map(|(i, trace)| Input {
                name: i.name.clone(),
                file: TraceFile {
                    header: i.file.header.clone(),
                    trace,
                },
            })
            .collect(),
    )
}

/// The pass that completes the summaries: a parameter summarised in some inputs is summarised
/// in all of them ([`complete_inputs`]), so that its statistics are fitted scale by scale; the
/// output says how many of its parameters are summaries ([`note`]).
pub(crate) struct Summaries;

impl crate::pipeline::Pass for Summaries {
    fn around(
        &self,
        cx: crate::request::Cx,
        inputs: &[Input],
        stage: crate::library::Stage<'_>,
        inner: crate::library::Inner<'_>,
    ) -> Result<crate::Extrapolated, crate::ExtrapError> {
        let completed = complete_inputs(&crate::by_rank_count(inputs));
        let mut out = inner(cx, completed.as_deref().unwrap_or(inputs), stage)?;
        note(&mut out.file);
        if completed.is_some() || !cx.ignored.is_empty() {
            out.acted(crate::pipeline::PassId::Summaries);
        }
        Ok(out)
    }
}

/// Adds to an extrapolated trace's header how many of its parameters are approximate.
pub(crate) fn note(file: &mut TraceFile) {
    let n = rsd::approx::count(&file.trace);
    if n > 0 {
        file.header.notes.push(format!(
            "approximate: {n} parameters are statistical summaries extrapolated by fitting their \
             statistics (mean, spread, min, max) against the rank count, not exact values \
             (extrap --explain gives each model; --exact refuses them)"
        ));
    }
}

/// The resolution of a summarised value (sizes and counts are integers): the least noise of a
/// summary's mean.
const UNIT: f64 = 1.0;

/// The chosen model and its prediction as `--explain` says it: value, interval, model.
fn text(c: &TimingChoice) -> String {
    format!(
        "{:.1} [{:.1}, {:.1}] by {}",
        c.value, c.interval.0, c.interval.1, c.fit
    )
}

/// One parameter whose inputs hold summaries: the summary at the target over `ranks` (the
/// node's ranks there), its statistics fitted against `n`, one `--explain` line.
pub(crate) fn fit(
    f: &mut Fitter,
    els: &[&Elastic],
    ranks: &RankSet,
    (site, event): (&Site, &str),
    param: Quantity,
) -> Result<Elastic, ExtrapError> {
    let refuse = |reason: Reason| {
        let values = els
            .iter()
            .zip(&f.scales)
            .map(|(e, n)| format!("{e} at {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let tried = "statistics of summaries (timing-fit families)".into();
        let hint = "a parameter summarised at some scales holds a negative value at others, \
                    which a summary cannot hold; trace every scale with the same IOTREX_APPROX"
            .into();
        ExtrapError::refused(site.clone(), param.clone(), reason, (values, tried, hint))
    };
    // After `complete`, each input holds one summary over the node's ranks.
    let ss: Vec<&Summary> = els
        .iter()
        .map(|e| match e.groups.as_slice() {
            [
                Group {
                    val: Val::Approx(s),
                    ..
                },
            ] => Some(&**s),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(|| refuse(Reason::MixedSummaries))?;
    let ns: Vec<f64> = f.scales.iter().map(|&n| n as f64).collect();
    let target = f.target as f64;
    let stats: Vec<&Stats> = ss.iter().map(|s| &s.stats).collect();
    let col = |g: &dyn Fn(&Stats) -> f64| -> Vec<f64> { stats.iter().map(|s| g(s)).collect() };
    let last = stats[stats.len() - 1];
    // The count follows the structure: exact where a model of n fits it.
    let counts: Vec<i64> = stats.iter().map(|s| s.count as i64).collect();
    let (count, count_text) = match f.number(&counts, "count") {
        Ok((c, m)) if c > 0 => (
            c as u64,
            m.map_or(format!("{c} (the same at every scale)"), |m| {
                format!("{c} (exact: {m})")
            }),
        ),
        _ => match choose(&ns, &col(&|s| s.count as f64), 0.0, target) {
            Some(c) => (c.value.round().max(1.0) as u64, text(&c)),
            None => (last.count, format!("{} (the largest input's)", last.count)),
        },
    };
    // The standard error of each scale's mean from the spread of its samples.
    let sem = {
        let v: Vec<f64> = stats
            .iter()
            .filter(|s| s.count > 0)
            .map(|s| s.variance() / s.count as f64)
            .collect();
        // The samples are integers: means a unit apart between scales (a printed number
        // with one more digit) are no trend to extrapolate, whatever their spread within a
        // scale (none, for a log line written twice).
        (v.iter().sum::<f64>() / v.len().max(1) as f64)
            .sqrt()
            .max(UNIT)
    };
    let means = col(&|s| s.mean);
    let pick = |ys: &[f64], noise: f64| choose(&ns, ys, noise, target);
    let mean_c = pick(&means, sem);
    let sd_c = pick(&col(&|s| s.variance().sqrt()), 0.0);
    let min_c = pick(&col(&|s| s.min as f64), 0.0);
    let max_c = pick(&col(&|s| s.max as f64), 0.0);
    let value = |c: &Option<TimingChoice>, fallback: f64| c.as_ref().map_or(fallback, |c| c.value);
    // A mean lies between the smallest and largest value: where the mean's trend leaves the
    // extremes' own models (a noisy mean's slope through a few scales, extrapolated far), the
    // extremes, fitted each on its own, bound it.
    let lo = value(&min_c, last.min as f64).max(0.0);
    let hi = value(&max_c, last.max as f64).max(lo);
    let mean = value(&mean_c, last.mean).max(0.0).clamp(lo, hi);
    let sd = value(&sd_c, last.variance().sqrt()).max(0.0);
    let min = lo.min(mean).floor();
    let max = hi.max(mean).ceil();
    // The histogram: the largest input's shape scaled to the new count, the rounding put in
    // the fullest bin so that the bins add up to the count (as timing does).
    let mut bins = [0u64; BINS];
    if last.count > 0 {
        let k = count as f64 / last.count as f64;
        for (b, &c) in bins.iter_mut().zip(&last.bins) {
            *b = (c as f64 * k).round() as u64;
        }
        let sum: u64 = bins.iter().sum();
        let full = (0..BINS).max_by_key(|&i| bins[i]).unwrap_or(0);
        if sum > count {
            bins[full] = bins[full].saturating_sub(sum - count);
        } else {
            bins[full] += count - sum;
        }
    }
    let rank_ok = |r: u32| if i64::from(r) < f.target { r } else { 0 };
    let stats = Stats {
        count,
        min: min as u64,
        max: max as u64,
        min_rank: rank_ok(last.min_rank),
        max_rank: rank_ok(last.max_rank),
        mean,
        m2: sd * sd * count as f64,
        bins,
    };
    let say = |name: &str, c: &Option<TimingChoice>, v: f64| match c {
        Some(c) => format!("{name} {}", text(c)),
        None => format!("{name} {v:.1} (no model fits; the largest input's)"),
    };
    let curve = mean_c.as_ref().map(|c| Curve {
        points: f
            .scales
            .iter()
            .copied()
            .zip(means.iter().copied())
            .collect(),
        samples: crate::sample_ns(f.scales[0], f.target)
            .into_iter()
            .map(|n| (n, c.fit.eval(n as f64).max(0.0)))
            .collect(),
    });
    f.explain.push(Explain {
        event: event.to_string(),
        quantity: format!("{param} (approximate)"),
        model: format!(
            "summary at {} ranks: {}; {}; {}; {}; count {count_text}",
            f.target,
            say("mean", &mean_c, mean),
            say("sd", &sd_c, sd),
            say("min", &min_c, min),
            say("max", &max_c, max),
        ),
        curve,
    });
    Ok(Elastic {
        groups: vec![Group {
            ranks: ranks.clone(),
            val: Val::Approx(Box::new(Summary { stats })),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::approx::{Policy, bound};
    use rsd::compress::compress;

    /// `n` ranks of 30 sends each, whose counts follow no pattern (mean about 50), summarised
    /// where their exact form exceeds `budget` numbers.
    fn sends(n: u32, budget: usize) -> Input {
        sends_of("sends", n, 30, budget, |rank, i| {
            let c = i64::from((rank * 7919 + i * 131) % 97 + 3);
            (c, 4 * c)
        })
    }

    /// `n` ranks each sending `calls` messages of `msg(rank, i)` = (count, bytes), bounded
    /// by `budget` distinct values.
    fn sends_of(
        name: &str,
        n: u32,
        calls: u32,
        budget: usize,
        msg: impl Fn(u32, u32) -> (i64, i64),
    ) -> Input {
        let ranks: Vec<Trace> = (0..n)
            .map(|rank| {
                let evs: Vec<rsd::RawEvent> = (0..calls)
                    .map(|i| {
                        let (c, b) = msg(rank, i);
                        rsd::RawEvent::new(Op::Send, 1, rsd::op::args::send(c, 7, 1, 0, 0, b))
                    })
                    .collect();
                compress(rank, &evs)
            })
            .collect();
        let mut trace = rsd::merge_tree(ranks).unwrap();
        let p = Policy {
            comm: true,
            io: false,
            budget,
        };
        bound(&mut trace, &p);
        Input {
            name: format!("{name}.{n}"),
            file: TraceFile {
                header: rsd::Header::new(n),
                trace,
            },
        }
    }

    /// The summaries pass acts where some inputs hold a summary the others do not (it
    /// completes them) and says so (on exact inputs it does not: `pipeline`'s tests).
    #[test]
    fn the_summaries_pass_says_where_it_completed_inputs() {
        use crate::pipeline::PassId;
        let mixed: Vec<Input> = [4, 8, 12, 16].iter().map(|&n| sends(n, 200)).collect();
        let x = crate::run(&crate::Request::new(64), &mixed).unwrap_or_else(|e| panic!("{e}"));
        assert!(x.passes.contains(&PassId::Summaries), "{:?}", x.passes);
        assert!(
            x.file
                .header
                .notes
                .iter()
                .any(|n| n.starts_with("approximate: "))
        );
    }

    #[test]
    fn a_parameter_summarised_at_the_larger_scales_only_is_fitted_at_every_scale() {
        // Exact at 4 ranks (under a budget of 200 numbers), a summary at 16.
        let ins: Vec<Input> = [4, 8, 12, 16].iter().map(|&n| sends(n, 200)).collect();
        assert_eq!(rsd::approx::count(&ins[0].file.trace), 0);
        assert!(rsd::approx::count(&ins[3].file.trace) > 0);
        let x = crate::request::as_given(&ins, 64, &crate::ModelSet::builtin()).unwrap();
        let want = sends(64, 1);
        let (got, real) = (
            rsd::approx::first(&x.file.trace).unwrap(),
            rsd::approx::first(&want.file.trace).unwrap(),
        );
        assert_eq!((got.op, got.param.as_str()), (Op::Send, "count"));
        assert_eq!(got.ranks, real.ranks);
        let stats = |t: &Trace| -> Stats {
            let mut s = Stats::default();
            fn walk(nodes: &[Node], s: &mut Stats) {
                for n in nodes {
                    match &n.kind {
                        NodeKind::Event(e) => {
                            if let Val::Approx(x) = &e.params[0].groups[0].val {
                                s.merge(&x.stats);
                            }
                        }
                        NodeKind::Loop(l) => walk(&l.body, s),
                    }
                }
            }
            walk(&t.nodes, &mut s);
            s
        };
        let (g, w) = (stats(&x.file.trace), stats(&want.file.trace));
        assert_eq!(g.count, w.count, "calls follow the structure: 30 per rank");
        assert!((g.mean - w.mean).abs() < 0.1 * w.mean, "{g:?} {w:?}");
        assert!(
            x.explain
                .iter()
                .any(|e| e.quantity == "count (approximate)")
        );
        assert!(
            x.file
                .header
                .notes
                .iter()
                .any(|n| n.starts_with("approximate:"))
        );
        // --exact refuses the first summary.
        let e = require_exact(&ins).unwrap_err().to_string();
        assert!(e.contains("sends.16") && e.contains("`count`"), "{e}");
    }

    /// Every count is 24 or 32; the share of 32s falls with n, so the mean is 31, 30, 29, 28
    /// at 4, 8, 12, 16 ranks: a line that reaches 16 at 64, below every value there is. The
    /// extremes, 24 and 32 at every scale, bound it.
    #[test]
    fn a_summary_mean_stays_between_its_extremes() {
        let input = |n: u32, m: u32| -> Input {
            sends_of("shares", n, 32, 1, |_, i| {
                let c = if i % 8 < m { 32 } else { 24 };
                (c, c)
            })
        };
        let ins: Vec<Input> = [(4, 7), (8, 6), (12, 5), (16, 4)]
            .iter()
            .map(|&(n, m)| input(n, m))
            .collect();
        let x = crate::request::as_given(&ins, 64, &crate::ModelSet::builtin()).unwrap();
        let mut means = Vec::new();
        fn walk(nodes: &[Node], out: &mut Vec<Stats>) {
            for n in nodes {
                match &n.kind {
                    NodeKind::Event(e) => {
                        if let Val::Approx(x) = &e.params[0].groups[0].val {
                            out.push(x.stats.clone());
                        }
                    }
                    NodeKind::Loop(l) => walk(&l.body, out),
                }
            }
        }
        walk(&x.file.trace.nodes, &mut means);
        assert!(!means.is_empty(), "the count is summarised");
        for s in &means {
            assert!(
                (24.0..=32.0).contains(&s.mean) && s.min >= 24 && s.max <= 32,
                "{s:?}"
            );
        }
    }

    #[test]
    fn ignore_names_an_op_and_a_parameter_or_says_what_exists() {
        let g = Ignore::parse("fprintf.ret").unwrap();
        assert_eq!(g.op, Op::Fprintf);
        assert_eq!(g.to_string(), "fprintf.ret");
        assert_eq!(Ignore::parse("MPI_Send.count").unwrap().op, Op::Send);
        let e = Ignore::parse("fprntf.ret").unwrap_err().to_string();
        assert!(e.contains("`fprntf`") && e.contains("fprntf.ret"), "{e}");
        let e = Ignore::parse("fprintf.rett").unwrap_err().to_string();
        assert!(e.contains("`rett`") && e.contains("stream, ret"), "{e}");
        let e = Ignore::parse("fprintf").unwrap_err().to_string();
        assert!(e.contains("OP.PARAM"), "{e}");
    }

    #[test]
    fn ignore_names_an_array_element_by_its_shown_name() {
        let g = Ignore::parse("H5Sselect_hyperslab.count[0]").unwrap();
        assert_eq!(
            (g.op, g.param, g.element),
            (Op::H5SselectHyperslab, "count", Some(0))
        );
        assert_eq!(g.to_string(), "H5Sselect_hyperslab.count[0]");
        assert!(g.is_quantity());
        assert!(
            !Ignore::parse("H5Sselect_hyperslab.start[0]")
                .unwrap()
                .is_quantity()
        );
        // Which parameter index it names depends on the event's array lengths: a 2-d
        // selection's count[1] is the 7th array element, a 1-d one's count[0] the 3rd.
        // Space, select_op, ndims, then start, stride, count and block of ndims each.
        let (one, two) = (3 + 4, 3 + 8);
        let hit = |g: &Ignore, nparams: usize| -> Vec<usize> {
            (0..nparams)
                .filter(|&k| g.names(Op::H5SselectHyperslab, nparams, 0, k))
                .collect()
        };
        assert_eq!(hit(&g, one), vec![3 + 2]);
        assert_eq!(hit(&g, two), vec![3 + 4]);
        let g1 = Ignore::parse("H5Sselect_hyperslab.count[1]").unwrap();
        assert!(hit(&g1, one).is_empty());
        assert_eq!(hit(&g1, two), vec![3 + 5]);
        let e = Ignore::parse("H5Sselect_hyperslab.counts[0]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("count[k]") && e.contains("start[k]"), "{e}");
    }
}
