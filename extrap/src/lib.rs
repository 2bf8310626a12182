//! Extrapolation of iotrex traces to rank counts nobody has run, and comparison of traces.
//!
//! [`run`] answers a [`Request`] (the target and every option) for three or more traces of
//! the same program at different rank counts. It aligns them node by node (same structural
//! keys in the same order, recursively; the first node that differs is named in the refusal)
//! and fits every numeric quantity against the rank count `n` with the exact models of the
//! `models` crate:
//! - each PRSD start, count and stride of every rank set (which ranks run a node, which ranks
//!   share a parameter value);
//! - each coefficient of each rank function (`a*rank + b`, `a*(rank/k) + b`, ...) of each leaf
//!   of each elastic value, loop iteration counts included;
//! - when a parameter's rank groups do not line up across scales, each per-rank value as a
//!   function of `(n, rank)` (`((rank+1) % n) * b`, blocks, plugin models).
//!
//! The passes, in order, are written down once (`pipeline`; `docs/ARCHITECTURE.md` draws
//! them): containers lifted (`containers`); the library models around the rest (`library`:
//! the MPI library's process grids and collective buffering, HDF5's collective flushes,
//! dealt writes and file space, each one implementation of the seam); consistency of
//! structure and local queries set aside (`consistent`, `local`); then the fit stage
//! ([`fit_stage`]): prefix sums and file-end offsets recognised (`prefix`), summaries
//! completed (`approx`), repeated runs grouped, the library models around the fit (the
//! collective buffering's derivation), the fit (`fit`, `timing`); on the way out, what the
//! library models put back, the containers nested again and what the models settle.
//!
//! Everything is exact: a quantity that fits no model, or that two models fit but predict
//! differently at the target, refuses the whole extrapolation with an error naming the event,
//! the parameter, the values at each scale and the models tried. Timing statistics are
//! approximate: they are fitted by least squares and `--explain` says which model each uses.
//! So are parameters the traces hold as statistical summaries (or the user declares
//! irrelevant): their statistics are fitted the same way and the output marks them
//! ([`approx`]).
//!
//! [`diff::diff`] compares two traces for `iotrex diff`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
// A refusal carries the event, parameter, values and models as text; it happens once per run
// and ends it, so its size on the error path costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

pub mod approx;
pub mod consistent;
mod containers;
mod degenerate;
pub mod diff;
pub mod error;
mod fit;
pub mod hdf5;
mod library;
pub mod listings;
pub mod local;
mod mpi;
pub mod nodes;
mod numbers;
pub mod patterns;
pub mod pipeline;
mod prefix;
pub mod provenance;
mod ranks;
pub mod request;
pub mod runvalues;
mod timing;

pub use error::ExtrapError;
pub use models;
pub use models::{ModelSet, Plugin};
pub use mpi::collective::FITTED_NOT_DERIVED;
pub use mpi::derive::{DERIVE_LIMIT, Derivation};
pub use nodes::{Layout, TargetShape};
pub use pipeline::PassId;
use request::Cx;
pub use request::{Inconsistent, Request, run};

use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};
use serde::Serialize;

/// One input trace and the name used for it in messages (its path).
#[derive(Clone)]
pub struct Input {
    /// Name for messages.
    pub name: String,
    /// The trace.
    pub file: TraceFile,
}

/// One varying quantity and the model chosen for it, for `--explain`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explain {
    /// The event (op, call site, path).
    pub event: String,
    /// The parameter or quantity.
    pub quantity: String,
    /// The model in readable form.
    pub model: String,
    /// The values at the input scales and the model sampled up to the target, where the
    /// quantity is one number per scale (timing statistics, wall time and single exact
    /// models); `None` for rank sets and per-rank models. Skipped in JSON when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve: Option<Curve>,
}

/// A quantity across rank counts, for plots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// (rank count, value) at each input scale.
    pub points: Vec<(i64, f64)>,
    /// (rank count, model value) from the smallest input scale to the target.
    pub samples: Vec<(i64, f64)>,
}

/// Rank counts to sample a model at: every scale up to 64 points, then geometric steps, always
/// ending at the target.
pub(crate) fn sample_ns(first: i64, target: i64) -> Vec<i64> {
    let (lo, hi) = (first.min(target).max(1), first.max(target).max(1));
    let mut out: Vec<i64> = if hi - lo <= 64 {
        (lo..=hi).collect()
    } else {
        let ratio = (hi as f64 / lo as f64).powf(1.0 / 64.0);
        (0..=64)
            .map(|i| (lo as f64 * ratio.powi(i)).round() as i64)
            .collect()
    };
    out.push(hi);
    out.dedup();
    out
}
/// The result of an extrapolation.
#[derive(Debug, Clone)]
pub struct Extrapolated {
    /// The trace at the target rank count.
    pub file: TraceFile,
    /// The input rank counts, increasing.
    pub scales: Vec<u32>,
    /// Every varying quantity and its model (exact models first, then timing fits).
    pub explain: Vec<Explain>,
    /// The quantities [`Request::approx_unfit`] summarised because no exact model fits them,
    /// in the order it met them (the request's own `ignore` not among them).
    pub summarised: Vec<approx::Ignore>,
    /// The passes that acted, in the order they run (`--explain`).
    pub passes: Vec<PassId>,
}

/// Describes a node for messages: op, call site and path of an event; a loop by its first
/// event.
pub fn describe_node(n: &Node) -> String {
    error::Site::of(n).to_string()
}

/// `inputs` by increasing rank count, then ranks per node (repeated runs of one scale in the
/// order given).
pub(crate) fn by_rank_count(inputs: &[Input]) -> Vec<&Input> {
    let mut all: Vec<&Input> = inputs.iter().collect();
    all.sort_by_key(|i| nodes::scale(&i.file.header));
    all
}

/// The innermost step of the pipeline (`pipeline`), on inputs whose library calls the models
/// took out (`stage`: what they hand the fit): [`extrapolate_sorted`].
pub(crate) fn fit_stage(
    cx: Cx,
    inputs: &[Input],
    stage: library::Stage<'_>,
) -> Result<Extrapolated, ExtrapError> {
    extrapolate_sorted(cx, by_rank_count(inputs), stage)
}

/// The extrapolation of inputs sorted by rank count whose summaries agree: repeated runs
/// grouped by scale, then fitted inside the collective buffering's derivation.
fn extrapolate_sorted(
    cx: Cx,
    all: Vec<&Input>,
    stage: library::Stage<'_>,
) -> Result<Extrapolated, ExtrapError> {
    let (ignored, target, models) = (cx.ignored, cx.target, cx.models);
    if let Some(i) = all.iter().find(|i| i.file.header.incomplete) {
        return Err(ExtrapError::Incomplete {
            input: i.name.clone(),
            why: i.file.header.notes.join("; "),
        });
    }
    // Runs per scale, the first of each the one whose structure is fitted.
    let mut groups: Vec<Vec<&Input>> = Vec::new();
    for i in all {
        match groups.last_mut() {
            Some(g) if nodes::scale(&g[0].file.header) == nodes::scale(&i.file.header) => {
                if let Some(why) = repeat_differs(&g[0].file, &i.file) {
                    return Err(ExtrapError::DuplicateScale {
                        nranks: i.file.header.nranks,
                        first: g[0].name.clone(),
                        second: i.name.clone(),
                        why,
                    });
                }
                g.push(i);
            }
            _ => groups.push(vec![i]),
        }
    }
    if groups.len() < 3 {
        return Err(ExtrapError::TooFewInputs {
            count: groups.len(),
        });
    }
    // The ignored parameters are summarised in what is fitted only: the library's model
    // below reads the exact values.
    let fit = |g: &[Vec<&Input>]| {
        let mut out = if ignored.is_empty() {
            fit_sorted(g, &groups, target, cx.layout, models)
        } else {
            let summarised: Vec<Vec<Input>> = g
                .iter()
                .map(|runs| approx::ignore(runs.iter().map(|&i| i.clone()).collect(), ignored).0)
                .collect();
            let refs: Vec<Vec<&Input>> = summarised.iter().map(|r| r.iter().collect()).collect();
            fit_sorted(&refs, &groups, target, cx.layout, models)
        }?;
        // What the library models put back before the collective I/O is derived.
        stage.adjust_fitted(&mut out.file)?;
        out.acted(PassId::Fit);
        Ok::<Extrapolated, ExtrapError>(out)
    };
    let mut out = library::around_fit_all(cx, stage, &groups, &fit)?;
    if groups.iter().any(|g| g.len() > 1) {
        out.acted(PassId::Repeats);
    }
    Ok(out)
}

/// Why `b` is not a repeated run of `a` (same rank count assumed): another command, or other
/// calls (anything but timing differs).
fn repeat_differs(a: &TraceFile, b: &TraceFile) -> Option<String> {
    if a.header.command != b.header.command {
        return Some(format!(
            "commands `{}` and `{}`",
            a.header.command.join(" "),
            b.header.command.join(" ")
        ));
    }
    fn untimed(nodes: &[Node]) -> Vec<Node> {
        nodes
            .iter()
            .map(|n| {
                let mut n = n.clone();
                match &mut n.kind {
                    NodeKind::Event(e) => {
                        e.timing = Default::default();
                        e.children = untimed(&e.children);
                    }
                    NodeKind::Loop(l) => l.body = untimed(&l.body),
                }
                n
            })
            .collect()
    }
    let (x, y) = (untimed(&a.trace.nodes), untimed(&b.trace.nodes));
    if x != y {
        let at = x
            .iter()
            .zip(&y)
            .position(|(p, q)| p != q)
            .unwrap_or(x.len().min(y.len()));
        let d = |v: &[Node]| v.get(at).map_or("the end".into(), describe_node);
        return Some(format!(
            "their calls differ at top-level node {at}: {} and {}",
            d(&x),
            d(&y)
        ));
    }
    None
}

/// The timing of every event of `nodes` in the order [`fit::Fitter::nodes`] visits them
/// (an event's nested calls before the event).
pub(crate) fn timings_post_order(nodes: &[Node], out: &mut Vec<rsd::timing::Timing>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => {
                timings_post_order(&e.children, out);
                out.push(e.timing.clone());
            }
            NodeKind::Loop(l) => timings_post_order(&l.body, out),
        }
    }
}

/// Fits `groups` (validated runs per scale, increasing rank counts; the first run of each is
/// fitted, the others add timing observations) and evaluates it at `target`. `originals` are
/// the same runs before any nested calls were stripped: the wall time's parts come from them.
fn fit_sorted(
    groups: &[Vec<&Input>],
    originals: &[Vec<&Input>],
    target: u32,
    layout: Option<Layout>,
    models: &ModelSet,
) -> Result<Extrapolated, ExtrapError> {
    let sorted: Vec<&Input> = groups.iter().map(|g| g[0]).collect();
    let scales: Vec<u32> = sorted.iter().map(|i| i.file.header.nranks).collect();
    let repeats = groups
        .iter()
        .map(|g| {
            g[1..]
                .iter()
                .map(|i| {
                    let mut v = Vec::new();
                    timings_post_order(&i.file.trace.nodes, &mut v);
                    v
                })
                .collect()
        })
        .collect();
    let mut fitter = fit::Fitter {
        ms: models,
        scales: scales.iter().map(|&n| n as i64).collect(),
        ppns: nodes::fitted_ppns(&sorted),
        target: target as i64,
        target_ppn: layout.map_or(0, |l| l.ranks_per_node.into()),
        explain: Vec::new(),
        pending: std::cell::RefCell::new(Vec::new()),
        repeats,
        cursor: 0,
        scope: Default::default(),
        chosen_at: None,
    };
    let lists: Vec<&[Node]> = sorted
        .iter()
        .map(|i| i.file.trace.nodes.as_slice())
        .collect();
    let names: Vec<(String, u32)> = sorted
        .iter()
        .map(|i| (i.name.clone(), i.file.header.nranks))
        .collect();
    let nodes = fitter
        .nodes(&lists, &names, None)
        .map_err(|e| name_irregular(e, &sorted))?;
    // Exact quantities first, timing after: the former are what a reader checks.
    fitter
        .explain
        .sort_by_key(|e| e.quantity.contains("mean") && e.model.contains("held-out"));
    let largest = &sorted[sorted.len() - 1].file;
    let mut header = largest.header.clone();
    header.notes = (header.notes.iter())
        .map(|n| rsd::notes::note_at_scale(n, largest.header.nranks, target))
        .collect();
    header.nranks = target;
    nodes::set_layout(&mut header, layout);
    let (prediction, explain) = timing::wall(originals, target);
    fitter.explain.extend(explain);
    match prediction {
        Some(p) => {
            header.wall_ns = p.wall.value.round() as u64;
            header.prediction = Some(p);
        }
        None => header.wall_ns = 0,
    }
    provenance::start(&mut header, &scales, target);
    Ok(Extrapolated {
        file: TraceFile {
            header,
            trace: rsd::Trace { nodes },
        },
        scales,
        explain: fitter.explain,
        summarised: Vec::new(),
        passes: Vec::new(),
    })
}

/// Parameters whose values follow no pattern (explicit value vectors) in any input, at most a
/// few, in the order of their names.
pub(crate) fn irregular_params(inputs: &[&Input]) -> Vec<error::Irregular> {
    type Found = std::collections::BTreeMap<(&'static str, String), error::Irregular>;
    fn walk(nodes: &[Node], n: u32, out: &mut Found) {
        for node in nodes {
            match &node.kind {
                rsd::trace::NodeKind::Event(e) => {
                    let nf = e.nfields();
                    for (i, p) in e.params.iter().enumerate() {
                        if p.groups.iter().any(|g| matches!(g.val, rsd::Val::Seq(_))) {
                            let param = error::Quantity::of_param(e.op, i, e.params.len(), nf);
                            let key = (e.op.name(), param.to_string());
                            let v = out.entry(key).or_insert_with(|| error::Irregular {
                                op: e.op,
                                param,
                                ranks: Vec::new(),
                            });
                            if !v.ranks.contains(&n) {
                                v.ranks.push(n);
                            }
                        }
                    }
                    walk(&e.children, n, out);
                }
                rsd::trace::NodeKind::Loop(l) => walk(&l.body, n, out),
            }
        }
    }
    let mut found = Found::new();
    for i in inputs {
        walk(&i.file.trace.nodes, i.file.header.nranks, &mut found);
    }
    found.into_values().take(4).collect()
}

/// Adds to a structural refusal the parameters that follow no pattern: values with no exact
/// pattern (random offsets, say) make the loop structure differ from rank to rank and scale to
/// scale, and they are the real reason such inputs cannot be extrapolated.
fn name_irregular(mut e: ExtrapError, inputs: &[&Input]) -> ExtrapError {
    let params = irregular_params(inputs);
    if params.is_empty() {
        return e;
    }
    let shape = |r: &error::Reason| matches!(r, error::Reason::ShapeDiffers { .. });
    match &mut e {
        ExtrapError::StructureDiffers { also, .. } => {
            also.add(error::Reason::Irregular { params });
        }
        ExtrapError::Refused {
            param,
            detail,
            hint,
            ..
        } if *param == error::Quantity::Ranks || detail.any(shape) => {
            detail.add(error::Reason::Irregular { params });
            *hint = format!(
                "values with no exact pattern (such as random offsets) cannot be extrapolated \
                 exactly; {hint}"
            );
        }
        _ => {}
    }
    e
}
