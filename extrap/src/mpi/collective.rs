//! The MPI library's collective buffering in the extrapolation: the POSIX calls nested in
//! collective MPI-IO calls are the library's, not the application's. When the traces record
//! the library's configuration and `collio`'s model of its collective buffering (Open MPI's
//! OMPIO, ROMIO) reproduces them at every input scale, they are left out of the fitting and
//! derived by the model at the target (`derive`); otherwise they are fitted like the rest,
//! and the output's notes (or a refusal) say why they were not derived. The innermost of the
//! library models: the others ([`crate::library`]) hand it, in the [`Stage`], calls they put
//! back whose nested calls it must derive.

use crate::error::ExtrapError;
use crate::library::{Fit, LibraryModel, Stage};
use crate::mpi::derive;
use crate::pipeline::PassId;
use crate::request::Cx;
use crate::{Explain, Extrapolated, Input, prefix, ranks};
use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};

/// The MPI library's collective buffering as a library model: around the fit, it derives
/// the nested calls of the collective calls its model reproduces ([`derived_around`]).
pub(crate) struct CollectiveBuffering;

impl LibraryModel for CollectiveBuffering {
    fn around_fit(
        &self,
        cx: Cx,
        stage: Stage<'_>,
        groups: &[Vec<&Input>],
        fit: Fit<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        derived_around(cx, stage, groups, fit)
    }
}

/// Runs `fit` on `groups` (runs per scale, the first of each fitted) with the nested calls
/// of the collective calls the library's model reproduces taken out, and derives them at the
/// target; where the model does not hold, `fit` runs on the calls as they are, and the
/// output says why.
fn derived_around(
    cx: Cx,
    stage: Stage<'_>,
    groups: &[Vec<&Input>],
    fit: Fit<'_>,
) -> Result<Extrapolated, ExtrapError> {
    let target = cx.target;
    let sorted: Vec<&Input> = groups.iter().map(|g| g[0]).collect();
    // A model around this may have taken out calls whose nested calls must be derived: the
    // inputs with them say what the derivation is.
    let model_inputs = stage.derivation_inputs(&sorted);
    if !model_inputs
        .iter()
        .any(|i| collective_with_children(&i.file.trace.nodes))
    {
        return fit(groups);
    }
    // Collective MPI-IO calls with nested POSIX calls: derive those the library's model
    // reproduces at every scale, fit the rest.
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
    stage.constrain_derivation(&mut plan)?;
    if let Some(why) = &plan.skipped {
        let mut out = fit(groups).map_err(|e| e.not_derived(why))?;
        fitted_not_derived(&mut out, why);
        return Ok(out);
    }
    // The model's reason, added to a refusal of the fitting that stands in for it.
    let with_model = |e: ExtrapError| match &plan.failure {
        Some(m) => e.not_derived(m),
        None => e,
    };
    if plan.derived.is_empty() {
        let mut out = fit(groups).map_err(with_model)?;
        if let Some(why) = &plan.failure {
            fitted_not_derived(&mut out, why);
        }
        return Ok(out);
    }
    let in_place = ranks::any_summary(groups.iter().flatten().map(|i| &i.file));
    let mut stripped: Vec<Vec<Input>> = Vec::with_capacity(groups.len());
    for g in groups {
        let mut runs = Vec::with_capacity(g.len());
        for i in g {
            // Stripping re-compresses every rank from its exact calls; prefix-sum offsets are
            // resolved for it and recognised again after.
            let mut file = i.file.clone();
            prefix::keeping_model(&mut file, |f| {
                ranks::strip(cx.lifts, f, &plan.derived, in_place).map(|s| *f = s)
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
        derive::insert(cx.lifts, f, &plan, cx.how, cx.max_memory)
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
            out.acted(PassId::CollectiveBuffering);
            Ok(out)
        }
        Err(derive::Underived::OverMemory { part, needs }) => Err(ExtrapError::OverMemory {
            target,
            part,
            needs,
            max: cx.max_memory,
        }),
        Err(derive::Underived::Why(why)) => {
            let at_target =
                format!("the nested calls of the collective writes at {target} ranks: {why}");
            match stage.refuse_underived(&at_target) {
                // A model around this put back calls that have no nested calls to fit.
                Some(e) => Err(e),
                // The model cannot say what happens at the target: fit the nested calls
                // instead.
                None => {
                    let why = format!("at {target} ranks: {why}");
                    let mut out = fit(groups).map_err(|e| e.not_derived(&why))?;
                    // Said, as where the inputs cannot be modelled: an output whose nested
                    // calls were fitted looked derived.
                    fitted_not_derived(&mut out, &why);
                    Ok(out)
                }
            }
        }
    }
}

/// Says, in `--explain` and in the output's notes ([`FITTED_NOT_DERIVED`]), that the nested
/// calls of the collective MPI-IO calls were fitted where the model of the MPI library's
/// collective buffering could not derive them: a fit holds only while the library keeps the
/// inputs' aggregators at the target, which its defaults do not promise.
fn fitted_not_derived(out: &mut Extrapolated, why: &str) {
    out.acted(PassId::CollectiveBuffering);
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

#[cfg(test)]
mod tests {
    use crate::patterns::{Pattern, trace_file};
    use crate::{Input, PassId, Request, run};

    fn inputs(p: Pattern) -> Vec<Input> {
        [4u32, 8, 12, 16]
            .iter()
            .map(|&n| Input {
                name: format!("{p:?}.{n}.iotrex"),
                file: trace_file(p, n),
            })
            .collect()
    }

    /// Collective writes with nested calls but no recorded library configuration: the model
    /// cannot say the aggregators, so the nested calls are fitted, and the output says so in
    /// `--explain`, its notes and its passes.
    #[test]
    fn nested_calls_without_the_configuration_are_fitted_and_said() {
        let x = run(&Request::new(32), &inputs(Pattern::Spmd)).unwrap();
        assert!(x.passes.contains(&PassId::CollectiveBuffering));
        assert!(
            x.explain[0].model.starts_with("fitted, not derived"),
            "{:?}",
            x.explain[0]
        );
        let notes = &x.file.header.notes;
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(super::FITTED_NOT_DERIVED)),
            "{notes:?}"
        );
    }

    /// Without nested calls under collective calls the model stays out.
    #[test]
    fn no_nested_calls_no_model() {
        let x = run(&Request::new(32), &inputs(Pattern::Strong)).unwrap();
        assert!(!x.passes.contains(&PassId::CollectiveBuffering));
        assert!(
            !x.file
                .header
                .notes
                .iter()
                .any(|n| n.starts_with(super::FITTED_NOT_DERIVED))
        );
    }
}
