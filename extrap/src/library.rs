//! The library-model seam: the calls a library makes on the application's behalf change shape
//! with the rank count by the library's own rules (the MPI library's collective buffering and
//! process grids, parallel HDF5's metadata writes dealt over the ranks, its collective
//! flushes, the file space its calls see), so they are modelled, not fitted. Each library's
//! model is one implementation of [`LibraryModel`], and the pipeline runs them from one
//! written-down list (`pipeline::MODELS`) without naming any: a new library is a new implementation
//! and a new entry, not a new path through the pipeline.
//!
//! A model acts at three points of one extrapolation (`pipeline` runs them):
//! 1. around the rest ([`LibraryModel::around`]): it plans from the inputs, takes its calls
//!    out, runs the inner extrapolation on what is left, and puts its calls back at the
//!    target. What the steps inside need of it, it hands them in the [`Stage`], as a
//!    [`Handoff`]: the changes to the fitted trace, and what the derivation of collective
//!    I/O must reproduce;
//! 2. around the fit of the runs grouped by scale ([`LibraryModel::around_fit`]: the MPI
//!    library's collective buffering derives the nested calls of collective calls there);
//! 3. once the output is nested again ([`LibraryModel::settle`]).

use crate::error::ExtrapError;
use crate::mpi::derive::Plan;
use crate::pipeline::{MODELS, PassId};
use crate::request::Cx;
use crate::{Extrapolated, Input};
use rsd::TraceFile;
use rsd::trace::Lifts;

/// What a model around the fit hands the steps inside it, while they run.
pub(crate) trait Handoff: Sync {
    /// The model that handed it.
    fn by(&self) -> PassId;

    /// Changes the fitted trace `tf` at the target as the model needs before the collective
    /// I/O is derived (`stage`: every handoff, to see what the others do).
    fn adjust_fitted(&self, _stage: Stage<'_>, _tf: &mut TraceFile) -> Result<(), ExtrapError> {
        Ok(())
    }

    /// The inputs the derivation of collective I/O checks its model on, where the model
    /// took calls out that the derivation must see (its put-back calls are derived too).
    fn derivation_inputs(&self) -> Option<Vec<&Input>> {
        None
    }

    /// Adds to the derivation's plan what the model's calls need of it; a refusal where the
    /// derivation cannot give it.
    fn constrain_derivation(&self, _plan: &mut Plan) -> Result<(), ExtrapError> {
        Ok(())
    }

    /// The refusal, where the model's calls need the derivation at the target and it failed
    /// (`why`); `None` where the nested calls may be fitted instead.
    fn refuse_underived(&self, _why: &str) -> Option<ExtrapError> {
        None
    }
}

/// What the models around the fit handed the steps inside them, outermost first.
#[derive(Clone, Copy, Default)]
pub(crate) struct Stage<'a> {
    handed: &'a [&'a dyn Handoff],
}

impl<'a> Stage<'a> {
    /// Runs `f` with `h` handed on, inside what this stage holds.
    pub(crate) fn with<R>(self, h: &dyn Handoff, f: impl FnOnce(Stage<'_>) -> R) -> R {
        let mut handed: Vec<&dyn Handoff> = self.handed.to_vec();
        handed.push(h);
        f(Stage { handed: &handed })
    }

    /// Whether the model `by` handed something on.
    pub(crate) fn has(self, by: PassId) -> bool {
        self.handed.iter().any(|h| h.by() == by)
    }

    /// Every handoff's [`Handoff::adjust_fitted`], innermost first: HDF5's data addresses
    /// move before the flushes that write at real addresses go back in.
    pub(crate) fn adjust_fitted(self, tf: &mut TraceFile) -> Result<(), ExtrapError> {
        (self.handed.iter().rev()).try_for_each(|h| h.adjust_fitted(self, tf))
    }

    /// The inputs the derivation of collective I/O checks its model on: a handoff's, where
    /// one took calls out that must be derived, else `sorted`.
    pub(crate) fn derivation_inputs(self, sorted: &[&'a Input]) -> Vec<&'a Input> {
        (self.handed.iter())
            .find_map(|h| h.derivation_inputs())
            .unwrap_or_else(|| sorted.to_vec())
    }

    /// Every handoff's [`Handoff::constrain_derivation`].
    pub(crate) fn constrain_derivation(self, plan: &mut Plan) -> Result<(), ExtrapError> {
        (self.handed.iter()).try_for_each(|h| h.constrain_derivation(plan))
    }

    /// The first handoff's refusal of a derivation that failed at the target.
    pub(crate) fn refuse_underived(self, why: &str) -> Option<ExtrapError> {
        (self.handed.iter()).find_map(|h| h.refuse_underived(why))
    }
}

/// The rest of an extrapolation, as a model around it runs it.
pub(crate) type Inner<'i> =
    &'i mut dyn FnMut(Cx<'_>, &[Input], Stage<'_>) -> Result<Extrapolated, ExtrapError>;

/// The fit of runs grouped by scale (increasing rank counts; the first run of each is
/// fitted), as a model around it runs it.
pub(crate) type Fit<'f> = &'f dyn Fn(&[Vec<&Input>]) -> Result<Extrapolated, ExtrapError>;

/// One library's behaviour in the extrapolation.
pub(crate) trait LibraryModel: Sync {
    /// The model, where it hands something on in the [`Stage`]: a model whose handoff the
    /// stage holds already acted further out (around `consistent`'s grouping), and is not
    /// run again: it would find nothing left to take out, and add to any refusal why not.
    fn id(&self) -> Option<PassId> {
        None
    }

    /// Runs `inner` on `inputs` with this library's calls modelled: taken out before, put
    /// back at the target after. Where the inputs do not show the library, `inner` runs on
    /// the inputs as they are.
    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        inner(cx, inputs, stage)
    }

    /// Runs `fit` on `groups` with this library's calls modelled around it.
    fn around_fit(
        &self,
        _cx: Cx,
        _stage: Stage<'_>,
        groups: &[Vec<&Input>],
        fit: Fit<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        fit(groups)
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

/// Runs `inner` on `inputs` inside every model's [`LibraryModel::around`], in [`MODELS`]'
/// order.
pub(crate) fn around_all(
    cx: Cx,
    inputs: &[Input],
    stage: Stage<'_>,
    inner: Inner<'_>,
) -> Result<Extrapolated, ExtrapError> {
    around_each(MODELS, cx, inputs, stage, inner)
}

/// Runs `inner` inside each of `models`' [`LibraryModel::around`], the first outermost,
/// leaving out the models that already acted further out.
fn around_each(
    models: &[&dyn LibraryModel],
    cx: Cx,
    inputs: &[Input],
    stage: Stage<'_>,
    inner: Inner<'_>,
) -> Result<Extrapolated, ExtrapError> {
    match models.split_first() {
        None => inner(cx, inputs, stage),
        Some((m, rest)) if m.id().is_some_and(|id| stage.has(id)) => {
            around_each(rest, cx, inputs, stage, inner)
        }
        Some((m, rest)) => m.around(cx, inputs, stage, &mut |cx, inputs, stage| {
            around_each(rest, cx, inputs, stage, inner)
        }),
    }
}

/// Runs `fit` on `groups` inside every model's [`LibraryModel::around_fit`], in [`MODELS`]'
/// order.
pub(crate) fn around_fit_all(
    cx: Cx,
    stage: Stage<'_>,
    groups: &[Vec<&Input>],
    fit: Fit<'_>,
) -> Result<Extrapolated, ExtrapError> {
    fn chain(
        models: &[&dyn LibraryModel],
        cx: Cx,
        stage: Stage<'_>,
        groups: &[Vec<&Input>],
        fit: Fit<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        match models.split_first() {
            None => fit(groups),
            Some((m, rest)) => m.around_fit(cx, stage, groups, &|g| chain(rest, cx, stage, g, fit)),
        }
    }
    chain(MODELS, cx, stage, groups, fit)
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

/// The library models as one pass of the pipeline: every model's [`LibraryModel::around`].
pub(crate) struct Models;

impl crate::pipeline::Pass for Models {
    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError> {
        around_all(cx, inputs, stage, inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A handoff that records its calls, by the model it names.
    struct Recording<'a> {
        by: PassId,
        log: &'a Mutex<Vec<PassId>>,
        inputs: Option<Vec<&'a Input>>,
    }

    impl Handoff for Recording<'_> {
        fn by(&self) -> PassId {
            self.by
        }
        fn adjust_fitted(&self, _: Stage<'_>, _: &mut TraceFile) -> Result<(), ExtrapError> {
            self.log.lock().unwrap().push(self.by);
            Ok(())
        }
        fn derivation_inputs(&self) -> Option<Vec<&Input>> {
            self.inputs.clone()
        }
        fn refuse_underived(&self, why: &str) -> Option<ExtrapError> {
            Some(ExtrapError::ConfigDiffers {
                why: format!("{:?}: {why}", self.by),
            })
        }
    }

    fn input(n: u32) -> Input {
        Input {
            name: format!("{n}.iotrex"),
            file: crate::patterns::trace_file(crate::patterns::Pattern::Strong, n),
        }
    }

    /// The handoffs nest as the models do: the innermost adjusts the fitted trace first, the
    /// outermost that has inputs for the derivation gives them, and refuses first.
    #[test]
    fn handoffs_act_in_nesting_order() {
        let log = Mutex::new(Vec::new());
        let (a, b) = (input(4), input(8));
        let outer = Recording {
            by: PassId::CollectiveFlushes,
            log: &log,
            inputs: Some(vec![&a]),
        };
        let inner = Recording {
            by: PassId::DealtWrites,
            log: &log,
            inputs: None,
        };
        let mut tf = input(4).file;
        Stage::default().with(&outer, |s| {
            s.with(&inner, |s| {
                assert!(s.has(PassId::CollectiveFlushes) && s.has(PassId::DealtWrites));
                assert!(!s.has(PassId::Grids));
                s.adjust_fitted(&mut tf).unwrap();
                let got = s.derivation_inputs(&[&b]);
                assert_eq!(got.len(), 1);
                assert_eq!(got[0].name, "4.iotrex");
                let e = s.refuse_underived("why").unwrap().to_string();
                assert!(e.contains("CollectiveFlushes: why"), "{e}");
            })
        });
        assert_eq!(
            *log.lock().unwrap(),
            [PassId::DealtWrites, PassId::CollectiveFlushes]
        );
        // Nothing handed on: the derivation checks the inputs it was given.
        let none = Stage::default();
        assert_eq!(none.derivation_inputs(&[&b])[0].name, "8.iotrex");
        assert!(none.refuse_underived("why").is_none());
    }

    /// A model that records that it ran, under the id it hands on (if any).
    struct Ran<'a> {
        id: Option<PassId>,
        log: &'a Mutex<Vec<Option<PassId>>>,
    }

    impl LibraryModel for Ran<'_> {
        fn id(&self) -> Option<PassId> {
            self.id
        }
        fn around(
            &self,
            cx: Cx,
            inputs: &[Input],
            stage: Stage<'_>,
            inner: Inner<'_>,
        ) -> Result<Extrapolated, ExtrapError> {
            self.log.lock().unwrap().push(self.id);
            inner(cx, inputs, stage)
        }
    }

    /// A model whose handoff the stage holds acted further out and is left out; the others
    /// run, outermost first, and the rest runs inside them.
    #[test]
    fn a_model_that_acted_further_out_is_not_run_again() {
        let log = Mutex::new(Vec::new());
        let (grids, flushes, plain) = (
            Ran {
                id: Some(PassId::Grids),
                log: &log,
            },
            Ran {
                id: Some(PassId::CollectiveFlushes),
                log: &log,
            },
            Ran {
                id: None,
                log: &log,
            },
        );
        let models: [&dyn LibraryModel; 3] = [&grids, &flushes, &plain];
        let handed = Recording {
            by: PassId::CollectiveFlushes,
            log: &Mutex::new(Vec::new()),
            inputs: None,
        };
        let ms = crate::ModelSet::builtin();
        let mut ran_inner = false;
        let r = Stage::default().with(&handed, |stage| {
            around_each(
                &models,
                Cx::for_tests(&ms),
                &[input(4)],
                stage,
                &mut |_, _, _| {
                    ran_inner = true;
                    Err(ExtrapError::ConfigDiffers {
                        why: "inner".into(),
                    })
                },
            )
        });
        assert!(r.is_err() && ran_inner);
        assert_eq!(*log.lock().unwrap(), [Some(PassId::Grids), None]);
    }
}
