//! Extrapolation of iotrex traces to rank counts nobody has run, and comparison of traces.
//!
//! [`extrapolate`] takes three or more traces of the same program at different rank counts.
//! It aligns them node by node (same structural keys in the same order, recursively; the
//! first node that differs is named in the refusal) and fits every numeric quantity against
//! the rank count `n` with the exact models of the `models` crate:
//! - each PRSD start, count and stride of every rank set (which ranks run a node, which ranks
//!   share a parameter value);
//! - each coefficient of each rank function (`a*rank + b`, `a*(rank/k) + b`, ...) of each leaf
//!   of each elastic value, loop iteration counts included;
//! - when a parameter's rank groups do not line up across scales, each per-rank value as a
//!   function of `(n, rank)` (`((rank+1) % n) * b`, blocks, plugin models).
//!
//! The POSIX calls nested in collective MPI-IO calls are the MPI library's, not the
//! application's: when the traces record the library's configuration and `collio`'s model of
//! its collective buffering (Open MPI's OMPIO, ROMIO) reproduces them at every input scale,
//! they are left out of the fitting and derived by the model at the target instead
//! (`derive`: in compressed form at any scale, or rank by rank up to [`DERIVE_LIMIT`]
//! ranks); otherwise they are fitted like the rest, and a
//! refusal says why they were not derived.
//!
//! Independent writes a library deals over the ranks in blocks (parallel HDF5's distributed
//! metadata flush) change the structure below their count; `dealt` checks its declared model
//! of them at every input scale, takes them out before the rest is grouped and fitted, and
//! deals them again at the target.
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
mod chunk_btree;
mod collflush;
pub mod consistent;
mod containers;
mod dealt;
mod derive;
pub mod diff;
pub mod error;
mod fit;
pub mod h5space;
mod hdf5_meta;
pub mod local;
pub mod patterns;
mod prefix;
pub mod provenance;
mod relocate;
pub mod request;
mod timing;

pub use derive::{DERIVE_LIMIT, Derivation};
pub use error::ExtrapError;
pub use models;
pub use models::{ModelSet, Plugin};
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
}

/// Describes a node for messages: op, call site and path of an event; a loop by its first
/// event.
pub fn describe_node(n: &Node) -> String {
    match &n.kind {
        NodeKind::Event(e) => {
            let mut s = format!("{} (call site {:#x}", e.op.name(), e.sig);
            if let Some(p) = &e.path {
                s.push_str(&format!(", path {}", p.0));
            }
            s.push(')');
            s
        }
        NodeKind::Loop(l) => match l.body.first() {
            Some(b) => format!("loop around {}", describe_node(b)),
            None => "empty loop".into(),
        },
    }
}

/// The extrapolation of `inputs` (the consistent groups' inputs, or the request's as given)
/// whose collective metadata flushes `at`, if given, were taken out already (by
/// `consistent`, around its grouping), and whose fitted data addresses `reloc` relocates, if
/// given (its dealt writes taken out there too).
pub(crate) fn extrapolate_ignoring_at(
    cx: Cx,
    inputs: &[Input],
    at: Option<&collflush::AtTarget>,
    reloc: Option<&relocate::Relocator>,
) -> Result<Extrapolated, ExtrapError> {
    let original = inputs;
    let lifted = containers::lifted(inputs);
    let inputs = lifted.as_ref().map_or(inputs, |l| l.0.as_slice());
    // Every model below that compresses ranks again compresses the containers whole.
    let cx = cx.lifted(lifted.as_ref().map(|l| &l.1));
    // Writes the library deals over the ranks (HDF5's metadata flush) are modelled around the
    // rest: collective (`collflush`), independent (`dealt`).
    let run = |inputs: &[Input], at: Option<&collflush::AtTarget>| {
        match reloc {
            // The dealt writes were taken out around this already (`consistent`'s grouping),
            // with the HDF5 oracle: modelling them again would find none, and add to any
            // refusal why the split index is not modelled.
            Some(r) => extrapolate_dealt_apart(cx, inputs, at, Some(r)),
            None => dealt::around(cx, inputs, |inputs, r| {
                extrapolate_dealt_apart(cx, inputs, at, r)
            }),
        }
    };
    let mut out = match at {
        Some(at) => run(inputs, Some(at)),
        None => collflush::around(cx, inputs, run),
    }?;
    nested_and_settled(cx, original, &mut out)?;
    Ok(out)
}

/// The dimension counts the inputs' programs asked `MPI_Dims_create` for (any rank, any
/// depth): the only grids the grid models may take ([`ModelSet::for_grids`]).
pub(crate) fn grid_ndims(inputs: &[Input]) -> Vec<usize> {
    // The grid models are Open MPI's factorisation (`models::grid`); MPICH balances by
    // another search.
    let open_mpi = |i: &Input| {
        i.file
            .header
            .mpi_config
            .as_ref()
            .is_some_and(|c| c.library.starts_with("Open MPI"))
    };
    let mut out = Vec::new();
    if !inputs.iter().all(open_mpi) {
        return out;
    }
    let mut calls = Vec::new();
    for i in inputs {
        dims_calls(&i.file.trace.nodes, false, &mut calls);
    }
    let at = rsd::Op::DimsCreate
        .params()
        .iter()
        .position(|p| *p == rsd::Param::Ndims);
    for (e, _) in calls {
        let Some(p) = at.and_then(|k| e.params.get(k)) else {
            continue;
        };
        for g in &p.groups {
            let d = g.ranks.first().and_then(|r| p.eval(r, &[]));
            if let Some(d) = d.and_then(|d| usize::try_from(d).ok())
                && !out.contains(&d)
            {
                out.push(d);
            }
        }
    }
    out
}

/// The first rank of a node's first value group (who makes the call), and the values of the
/// event's parameters there, outside any loop.
fn values_at_first_rank(e: &rsd::trace::Event) -> Option<Vec<i64>> {
    let r = e.params.first()?.groups.first()?.ranks.first()?;
    e.params.iter().map(|p| p.eval(r, &[])).collect()
}

/// Each `MPI_Dims_create` call of `nodes` (at any depth), and whether it is inside a loop
/// (`in_loop`: the enclosing nodes are).
fn dims_calls<'a>(nodes: &'a [Node], in_loop: bool, out: &mut Vec<(&'a rsd::trace::Event, bool)>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) if e.op == rsd::Op::DimsCreate => out.push((e, in_loop)),
            NodeKind::Event(e) => dims_calls(&e.children, in_loop, out),
            NodeKind::Loop(l) => dims_calls(&l.body, true, out),
        }
    }
}

/// Refuses an extrapolation whose `MPI_Dims_create` calls do not return, at the target, the
/// grid the library's factorisation gives (`models::grid::dims_create`): a dimension that is
/// the same at every input scale (`dims(n, 3)[1]` is 2 from 4 to 16 ranks, 4 at 32) is fitted
/// as a constant, and so is every value that follows it (a global extent `L * dims[1]`),
/// which no model can tell from a real constant. Only calls outside loops where the program
/// asked for a free grid (every entry 0), and only where the grid models are on (Open MPI:
/// [`grid_ndims`]).
pub(crate) fn check_grids(inputs: &[Input], out: &Extrapolated) -> Result<(), ExtrapError> {
    let target = out.file.header.nranks;
    let mut calls = Vec::new();
    dims_calls(&out.file.trace.nodes, false, &mut calls);
    let op = rsd::Op::DimsCreate;
    for (e, in_loop) in calls {
        let Some(v) = values_at_first_rank(e).filter(|_| !in_loop) else {
            continue;
        };
        let sig = e.sig;
        let (Ok(nd), Some(given), Some(got)) = (
            usize::try_from(op.param(&v, rsd::Param::Ndims)),
            op.array_values(&v, "given"),
            op.array_values(&v, "dims"),
        ) else {
            continue;
        };
        if got.len() != nd || given.iter().any(|&g| g != 0) {
            continue;
        }
        let Some(want) = models::grid::dims_create(i64::from(target), nd) else {
            continue;
        };
        let Some(i) = (0..nd).find(|&i| got[i] != want[i]) else {
            continue;
        };
        // Scales at which that dimension moves from the inputs' value towards the target's:
        // tracing some of them lets the models see it change.
        let seen: Vec<u32> = inputs.iter().map(|i| i.file.header.nranks).collect();
        let least = seen.iter().copied().min().unwrap_or(2);
        let helpful: Vec<String> = (least..=target.min(4096))
            .filter(|n| !seen.contains(n))
            .filter(|&n| {
                // On the way to the target's value, not a degenerate grid (a prime's).
                models::grid::dims_create(i64::from(n), nd)
                    .is_some_and(|d| (d[i] > got[i]) == (want[i] > got[i]) && d[i] != got[i])
            })
            .take(4)
            .map(|n| n.to_string())
            .collect();
        let mut scales: Vec<u32> = seen.clone();
        scales.sort_unstable();
        scales.dedup();
        return Err(ExtrapError::GridUnseen {
            event: format!("MPI_Dims_create (call site {sig:#x})"),
            detail: format!(
                "dimension {i} is {} at every input scale but {} at {target} ranks (dims({target}, \
                 {nd}) = {want:?}): values that follow it (global extents, block starts) look \
                 constant in the inputs and would be wrong at the target",
                got[i], want[i]
            ),
            values: format!(
                "dims(n, {nd})[{i}] = {} at {} ranks",
                got[i],
                scales
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            hint: format!(
                "trace scales at which dimension {i} of the grid changes, such as {} ranks",
                helpful.join(", ")
            ),
        });
    }
    Ok(())
}

/// The last step of every extrapolation of `original` (its containers lifted with `lifts`,
/// if any): the containers nested again, then, where HDF5's file space was taken from its
/// oracle for the flush (`dealt`), the other values of the file's layout HDF5's calls see
/// taken from it too (`h5space::settle`).
pub(crate) fn nested_and_settled(
    cx: Cx,
    original: &[Input],
    out: &mut Extrapolated,
) -> Result<(), ExtrapError> {
    // Where the output keeps the lifted form, the calls each HDF5 call made follow it.
    let lifted = cx
        .lifts
        .filter(|l| !containers::nest_again(&mut out.file, l));
    if out.file.header.notes.iter().any(|n| n == h5space::NOTE)
        && let Some(o) = cx.oracle
    {
        let mut sorted: Vec<&TraceFile> = original.iter().map(|i| &i.file).collect();
        sorted.sort_by_key(|f| f.header.nranks);
        sorted.dedup_by_key(|f| f.header.nranks);
        h5space::settle(o, &sorted, &mut out.file, dealt::DEALT_OPS, lifted)
            .map_err(|why| ExtrapError::ConfigDiffers { why })?;
    }
    Ok(())
}

/// [`extrapolate_with`] on inputs whose dealt writes, if any, were taken out (`at`: the
/// collective flushes taken out, put back before the collective I/O is derived; `reloc`:
/// what relocates the fitted data addresses, where HDF5's storage moves at the target).
fn extrapolate_dealt_apart(
    cx: Cx,
    inputs: &[Input],
    at: Option<&collflush::AtTarget>,
    reloc: Option<&relocate::Relocator>,
) -> Result<Extrapolated, ExtrapError> {
    let mut all: Vec<&Input> = inputs.iter().collect();
    all.sort_by_key(|i| i.file.header.nranks);
    // Values that are prefix sums over the ranks of sizes, as models (`prefix`).
    let recognised = prefix::recognised(&all);
    let all: Vec<&Input> = recognised.iter().map(|c| c.as_ref()).collect();
    // A parameter summarised in some inputs is summarised in all of them, so that its
    // statistics are fitted scale by scale (`approx`).
    let completed = approx::complete_inputs(&all);
    let all: Vec<&Input> = match &completed {
        Some(c) => c.iter().collect(),
        None => all,
    };
    let mut out = extrapolate_sorted(cx, all, at, reloc)?;
    approx::note(&mut out.file);
    Ok(out)
}

/// [`extrapolate_with`] on inputs sorted by rank count whose summaries agree.
fn extrapolate_sorted(
    cx: Cx,
    all: Vec<&Input>,
    at: Option<&collflush::AtTarget>,
    reloc: Option<&relocate::Relocator>,
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
            Some(g) if g[0].file.header.nranks == i.file.header.nranks => {
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
    let sorted: Vec<&Input> = groups.iter().map(|g| g[0]).collect();
    // The collective flushes' model relocates where it took the split index from the oracle.
    let reloc = reloc.or_else(|| at.and_then(|a| a.reloc.as_ref()));
    // The ignored parameters are summarised in what is fitted only: the library's model
    // below reads the exact values.
    let fit = |g: &[Vec<&Input>]| {
        let mut out = if ignored.is_empty() {
            fit_sorted(g, &groups, target, models)
        } else {
            let summarised: Vec<Vec<Input>> = g
                .iter()
                .map(|runs| approx::ignore(runs.iter().map(|&i| i.clone()).collect(), ignored).0)
                .collect();
            let refs: Vec<Vec<&Input>> = summarised.iter().map(|r| r.iter().collect()).collect();
            fit_sorted(&refs, &groups, target, models)
        }?;
        // The data's addresses go where HDF5 stores the data at the target before anything
        // is derived from them (the collective I/O's nested calls) or put back at real
        // addresses (the flushes).
        if let Some(r) = reloc {
            r.apply(&mut out.file).map_err(|why| ExtrapError::Refused {
                event: "HDF5's dataset storage".into(),
                param: "data addresses".into(),
                detail: why,
                values: "each dataset's storage in the HDF5 oracle's replays of the inputs \
                             and the target"
                    .into(),
                tried: "the inputs' layout mapped onto the HDF5 oracle's storage at the \
                            target"
                    .into(),
                hint: format!(
                    "pick a target before the chunk index splits, or trace scales past \
                         the split ({target} ranks' index is larger than every input's)"
                ),
            })?;
        }
        // The collective flushes go back in before their writes' nested calls are derived.
        if let Some(at) = at {
            at.insert(&mut out.file)?;
        }
        Ok::<Extrapolated, ExtrapError>(out)
    };
    // The collective flushes' writes need the derivation: the inputs with them say what it
    // is (`collflush`).
    let model_inputs: Vec<&Input> = at.map_or_else(|| sorted.clone(), |a| a.model_inputs.clone());
    if !model_inputs
        .iter()
        .any(|i| collective_with_children(&i.file.trace.nodes))
    {
        return fit(&groups);
    }
    // Collective MPI-IO calls with nested POSIX calls: derive those the library's model
    // reproduces at every scale, fit the rest (issue 13).
    // The model reads every rank's regions: offsets held as prefix sums are resolved for it.
    let exact: Vec<std::borrow::Cow<'_, TraceFile>> = model_inputs
        .iter()
        .map(|i| prefix::resolved(&i.file))
        .collect();
    let named: Vec<(&str, &TraceFile)> = model_inputs
        .iter()
        .zip(&exact)
        .map(|(i, f)| (i.name.as_str(), f.as_ref()))
        .collect();
    let mut plan = derive::plan(&named);
    if let Some(why) = plan.refusal {
        return Err(ExtrapError::ConfigDiffers { why });
    }
    // The collective flushes' writes must be derived at the target: their nested calls are
    // not in what is fitted.
    if let Some(at) = at {
        for &(new, like) in &at.plan.aliases {
            plan.alias(new, like);
        }
        if let Some(l) = at.lifts {
            plan.same_call(|sig| l.parts(sig).map(|p| p.0));
        }
        let why = plan.skipped.clone().or_else(|| {
            at.plan
                .sites
                .iter()
                .find(|s| !plan.derived.contains(s))
                .map(|s| {
                    format!(
                        "the collective-I/O model does not reproduce the nested calls of {}                          (call site {:#x}) at every input scale{}",
                        s.0.name(),
                        s.1,
                        plan.failure
                            .as_ref()
                            .map_or_else(String::new, |f| format!(": {f}"))
                    )
                })
        });
        if let Some(why) = why {
            return Err(at.refused(why));
        }
    }
    if let Some(why) = &plan.skipped {
        let mut out = fit(&groups).map_err(|e| e.not_derived(why))?;
        fitted_not_derived(&mut out, why);
        return Ok(out);
    }
    // The model's reason, added to a refusal of the fitting that stands in for it.
    let with_model = |e: ExtrapError| match &plan.failure {
        Some(m) => e.not_derived(m),
        None => e,
    };
    if plan.derived.is_empty() {
        let mut out = fit(&groups).map_err(with_model)?;
        if let Some(why) = &plan.failure {
            fitted_not_derived(&mut out, why);
        }
        return Ok(out);
    }
    let in_place = derive::any_summary(groups.iter().flatten().map(|i| &i.file));
    let mut stripped: Vec<Vec<Input>> = Vec::with_capacity(groups.len());
    for g in &groups {
        let mut runs = Vec::with_capacity(g.len());
        for i in g {
            // Stripping re-compresses every rank from its exact calls; prefix-sum offsets are
            // resolved for it and recognised again after.
            let mut file = i.file.clone();
            prefix::keeping_model(&mut file, |f| {
                derive::strip(cx.lifts, f, &plan.derived, in_place).map(|s| *f = s)
            })
            .map_err(|why| ExtrapError::Derive {
                input: i.name.clone(),
                why,
            })?;
            runs.push(Input {
                name: i.name.clone(),
                file,
            });
        }
        stripped.push(runs);
    }
    let stripped: Vec<Vec<&Input>> = stripped.iter().map(|g| g.iter().collect()).collect();
    let mut out = fit(&stripped).map_err(with_model)?;
    match prefix::keeping_model(&mut out.file, |f| {
        derive::insert(cx.lifts, f, &plan, cx.how)
    }) {
        Ok(ex) => {
            for (k, e) in ex.into_iter().enumerate() {
                out.explain.insert(k, e);
            }
            out.file.header.notes.push(
                "nested calls of collective MPI-IO calls derived by iotrex's model of the MPI \
                 library's collective buffering; their timing is the inputs' mean per op"
                    .into(),
            );
            Ok(out)
        }
        // The collective flushes' writes have no nested calls to fit.
        Err(why) if at.is_some() => Err(at.expect("some").refused(format!(
            "the nested calls of the collective writes at {target} ranks: {why}"
        ))),
        // The model cannot say what happens at the target: fit the nested calls instead.
        Err(why) => fit(&groups).map_err(|e| e.not_derived(&format!("at {target} ranks: {why}"))),
    }
}

/// Says, in `--explain` and in the output's notes ([`FITTED_NOT_DERIVED`]), that the nested
/// calls of the collective MPI-IO calls were fitted where the model of the MPI library's
/// collective buffering could not derive them: a fit holds only while the library keeps the
/// inputs' aggregators at the target, which its defaults do not promise.
fn fitted_not_derived(out: &mut Extrapolated, why: &str) {
    out.explain.insert(
        0,
        Explain {
            event: "collective MPI-IO calls".into(),
            quantity: "nested POSIX calls".into(),
            model: format!("fitted, not derived: {why}"),
            curve: None,
        },
    );
    out.file
        .header
        .notes
        .push(format!("{FITTED_NOT_DERIVED}{why}"));
}

/// How the output's notes start when the nested calls of collective MPI-IO calls were fitted,
/// not derived ([`fitted_not_derived`]); `iotrex extrap` repeats such a note on stderr.
pub const FITTED_NOT_DERIVED: &str = "nested calls of collective MPI-IO calls fitted, not \
     derived by the model of the MPI library's collective buffering (the library may choose \
     other aggregators at the target): ";

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

/// Whether some collective MPI-IO call in `nodes` has nested calls.
fn collective_with_children(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => {
            matches!(
                e.op,
                rsd::Op::FileWriteAll
                    | rsd::Op::FileWriteAtAll
                    | rsd::Op::FileReadAll
                    | rsd::Op::FileReadAtAll
            ) && !e.children.is_empty()
        }
        NodeKind::Loop(l) => collective_with_children(&l.body),
    })
}

/// Fits `groups` (validated runs per scale, increasing rank counts; the first run of each is
/// fitted, the others add timing observations) and evaluates it at `target`. `originals` are
/// the same runs before any nested calls were stripped: the wall time's parts come from them.
fn fit_sorted(
    groups: &[Vec<&Input>],
    originals: &[Vec<&Input>],
    target: u32,
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
        target: target as i64,
        explain: Vec::new(),
        pending: std::cell::RefCell::new(Vec::new()),
        repeats,
        cursor: 0,
        scope: Default::default(),
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
        .nodes(&lists, &names, "the top level")
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
    let (prediction, explain) = timing::wall(originals, target);
    fitter.explain.extend(explain);
    match prediction {
        Some(p) => {
            header.wall_ns = p.wall.value.round() as u64;
            header.prediction = Some(p);
        }
        None => header.wall_ns = 0,
    }
    header.notes.push(provenance::note(&scales, target));
    Ok(Extrapolated {
        file: TraceFile {
            header,
            trace: rsd::Trace { nodes },
        },
        scales,
        explain: fitter.explain,
        summarised: Vec::new(),
    })
}

/// Parameters whose values follow no pattern (explicit value vectors) in any input, as
/// `op param (at N, M ranks)` entries, at most a few.
pub(crate) fn irregular_params(inputs: &[&Input]) -> Vec<String> {
    fn walk(nodes: &[Node], n: u32, out: &mut std::collections::BTreeMap<String, Vec<u32>>) {
        for node in nodes {
            match &node.kind {
                rsd::trace::NodeKind::Event(e) => {
                    let nf = e.nfields();
                    for (i, p) in e.params.iter().enumerate() {
                        if p.groups.iter().any(|g| matches!(g.val, rsd::Val::Seq(_))) {
                            let name = format!(
                                "{} {}",
                                e.op.name(),
                                e.op.param_name(i, e.params.len(), nf)
                            );
                            let v = out.entry(name).or_default();
                            if !v.contains(&n) {
                                v.push(n);
                            }
                        }
                    }
                    walk(&e.children, n, out);
                }
                rsd::trace::NodeKind::Loop(l) => walk(&l.body, n, out),
            }
        }
    }
    let mut found = std::collections::BTreeMap::new();
    for i in inputs {
        walk(&i.file.trace.nodes, i.file.header.nranks, &mut found);
    }
    found
        .into_iter()
        .take(4)
        .map(|(k, ns)| {
            let ns: Vec<String> = ns.iter().map(u32::to_string).collect();
            format!("{k} (at {} ranks)", ns.join(", "))
        })
        .collect()
}

/// Adds to a structural refusal the parameters that follow no pattern: values with no exact
/// pattern (random offsets, say) make the loop structure differ from rank to rank and scale to
/// scale, and they are the real reason such inputs cannot be extrapolated.
fn name_irregular(mut e: ExtrapError, inputs: &[&Input]) -> ExtrapError {
    let found = irregular_params(inputs);
    if found.is_empty() {
        return e;
    }
    let list = found.join(", ");
    match &mut e {
        ExtrapError::StructureDiffers { irregular, .. } => {
            *irregular = format!("; parameters with no regular pattern: {list}");
        }
        ExtrapError::Refused {
            param,
            detail,
            hint,
            ..
        } if param == "ranks" || detail.contains("shape") || detail.contains("differs") => {
            detail.push_str(&format!("; parameters with no regular pattern: {list}"));
            *hint = format!(
                "values with no exact pattern (such as random offsets) cannot be extrapolated \
                 exactly; {hint}"
            );
        }
        _ => {}
    }
    e
}
