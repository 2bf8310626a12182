//! The library-model seam: the calls a library makes on the application's behalf (parallel
//! HDF5's metadata writes dealt over the ranks, its collective flushes, the file space its
//! calls see) change shape with the rank count by the library's own rules, so they are
//! modelled, not fitted. Each library's model is one implementation of [`LibraryModel`],
//! and the pipeline runs them from one written-down list ([`MODELS`]) without naming any:
//! a new library is a new implementation and a new entry, not a new path through `lib.rs`.
//!
//! A model acts at three points of one extrapolation:
//! 1. around the rest ([`LibraryModel::around`]): it plans from the inputs, takes its calls
//!    out, runs the inner extrapolation on what is left, and puts its calls back at the
//!    target; what the inner steps need of it travels in the [`Stage`];
//! 2. on the fitted trace, before the collective I/O below it is derived
//!    ([`LibraryModel::adjust_fitted`]), and in what that derivation must reproduce
//!    ([`LibraryModel::constrain_derivation`]);
//! 3. once the output is nested again ([`LibraryModel::settle`]).
//!
//! The collective buffering of the MPI library (`collective`, after `collio`'s models of
//! OMPIO and ROMIO) is the innermost model: it derives the nested calls of the collective
//! calls the others leave in.

use crate::error::ExtrapError;
use crate::hdf5::collflush::{self, AtTarget};
use crate::hdf5::dealt;
use crate::hdf5::relocate::Relocator;
use crate::hdf5::space;
use crate::mpi::derive::Plan;
use crate::request::Cx;
use crate::{Extrapolated, Input};
use rsd::TraceFile;
use rsd::trace::Lifts;

/// What the models around the fit hand the steps inside them.
#[derive(Clone, Copy, Default)]
pub(crate) struct Stage<'a> {
    /// HDF5's collective metadata flushes taken out, to put back before the collective I/O
    /// is derived.
    pub(crate) flushes: Option<&'a AtTarget<'a>>,
    /// Where the fitted data addresses move to HDF5's storage at the target.
    pub(crate) reloc: Option<&'a Relocator<'a>>,
}

/// The rest of an extrapolation, as a model around it runs it.
pub(crate) type Inner<'i> =
    &'i mut dyn FnMut(&[Input], Stage<'_>) -> Result<Extrapolated, ExtrapError>;

/// One library's behaviour in the extrapolation.
pub(crate) trait LibraryModel: Sync {
    /// Runs `inner` on `inputs` with this library's calls modelled: taken out before, put
    /// back at the target after. Where the inputs do not show the library, or `stage` says
    /// this model already acted further out, `inner` runs on the inputs as they are.
    fn around(
        &self,
        _cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        inner(inputs, stage)
    }

    /// Changes the fitted trace `tf` at the target as this model needs before the collective
    /// I/O below it is derived.
    fn adjust_fitted(
        &self,
        _cx: Cx,
        _stage: Stage<'_>,
        _tf: &mut TraceFile,
    ) -> Result<(), ExtrapError> {
        Ok(())
    }

    /// The inputs the derivation of collective I/O checks its model on, where this model
    /// took calls out that the derivation must see (its put-back calls are derived too).
    fn derivation_inputs<'i>(&self, _stage: Stage<'i>) -> Option<Vec<&'i Input>> {
        None
    }

    /// Adds to the derivation's plan what this model's calls need of it; a refusal where
    /// the derivation cannot give it.
    fn constrain_derivation(&self, _stage: Stage<'_>, _plan: &mut Plan) -> Result<(), ExtrapError> {
        Ok(())
    }

    /// The refusal, where this model's calls need the derivation at the target and it failed
    /// (`why`); `None` where the nested calls may be fitted instead.
    fn refuse_underived(&self, _stage: Stage<'_>, _why: &str) -> Option<ExtrapError> {
        None
    }

    /// Settles values of the output `out` that this library decides, once it is nested again
    /// (`lifted`: the lifting's call sites where `out` kept the lifted form). `original`: the
    /// inputs as given.
    fn settle(
        &self,
        _cx: Cx,
        _original: &[Input],
        _lifted: Option<&Lifts>,
        _out: &mut Extrapolated,
    ) -> Result<(), ExtrapError> {
        Ok(())
    }
}

/// The library models, outermost first: HDF5's collective flushes are taken out around its
/// independent dealt writes, whose relocation of the data is applied first.
pub(crate) const MODELS: &[&dyn LibraryModel] = &[
    &collflush::CollectiveFlushes,
    &dealt::DealtWrites,
    &space::FileSpace,
];

/// Runs `inner` on `inputs` inside every model's [`LibraryModel::around`], in [`MODELS`]'
/// order.
pub(crate) fn around_all(
    cx: Cx,
    inputs: &[Input],
    stage: Stage<'_>,
    inner: Inner<'_>,
) -> Result<Extrapolated, ExtrapError> {
    fn chain(
        models: &[&dyn LibraryModel],
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        match models.split_first() {
            None => inner(inputs, stage),
            Some((m, rest)) => m.around(cx, inputs, stage, &mut |inputs, stage| {
                chain(rest, cx, inputs, stage, inner)
            }),
        }
    }
    chain(MODELS, cx, inputs, stage, inner)
}

/// Every model's [`LibraryModel::adjust_fitted`], innermost first: the data's addresses move
/// before the flushes that write at real addresses go back in.
pub(crate) fn adjust_fitted(
    cx: Cx,
    stage: Stage<'_>,
    tf: &mut TraceFile,
) -> Result<(), ExtrapError> {
    MODELS
        .iter()
        .rev()
        .try_for_each(|m| m.adjust_fitted(cx, stage, tf))
}

/// The inputs the derivation of collective I/O checks its model on: a model's, where one
/// took calls out that must be derived, else `sorted`.
pub(crate) fn derivation_inputs<'i>(stage: Stage<'i>, sorted: &[&'i Input]) -> Vec<&'i Input> {
    MODELS
        .iter()
        .find_map(|m| m.derivation_inputs(stage))
        .unwrap_or_else(|| sorted.to_vec())
}

/// Every model's [`LibraryModel::constrain_derivation`].
pub(crate) fn constrain_derivation(stage: Stage<'_>, plan: &mut Plan) -> Result<(), ExtrapError> {
    MODELS
        .iter()
        .try_for_each(|m| m.constrain_derivation(stage, plan))
}

/// The first model's refusal of a derivation that failed at the target.
pub(crate) fn refuse_underived(stage: Stage<'_>, why: &str) -> Option<ExtrapError> {
    MODELS.iter().find_map(|m| m.refuse_underived(stage, why))
}

/// Every model's [`LibraryModel::settle`].
pub(crate) fn settle(
    cx: Cx,
    original: &[Input],
    lifted: Option<&Lifts>,
    out: &mut Extrapolated,
) -> Result<(), ExtrapError> {
    MODELS
        .iter()
        .try_for_each(|m| m.settle(cx, original, lifted, out))
}
