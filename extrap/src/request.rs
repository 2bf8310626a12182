//! One request, one run: what every consumer of the extrapolation (`iotrex extrap`, `iotrex
//! report`, the benchmarks, the tests) asks for, and [`run`], the one function that answers
//! it. The options that used to pick an entry point (`--ignore`, `--approx-unfit`,
//! `--drop-inconsistent`, the HDF5 oracle, the derivation) are fields here, so two consumers
//! of the same inputs and options cannot disagree about what extrap does with them.

use crate::approx::Ignore;
use crate::error::ExtrapError;
use crate::hdf5::space::{Oracle, Remembered};
use crate::nodes::{Layout, TargetShape};
use crate::{Derivation, Extrapolated, Input, ModelSet};
use std::sync::Arc;

/// How many parameters `approx_unfit` summarises before it gives up (each costs one more
/// extrapolation of every input).
pub const MAX_UNFIT: usize = 64;

/// What to do when the inputs disagree in structure (a scale took another path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inconsistent {
    /// Refuse, saying which scales agree with each other and where the others differ
    /// (local queries whose counts follow the data are set aside first).
    #[default]
    Refuse,
    /// Extrapolate from the largest group of at least three scales that agree, and list the
    /// scales used and dropped in the output's provenance and notes (`--drop-inconsistent`).
    Drop,
    /// Fit the inputs as given: the fitter refuses at the first node that differs, naming
    /// it. For callers whose inputs agree by construction (synthetic patterns), where
    /// grouping them would only cost time.
    AsGiven,
}

/// An extrapolation to ask for: the target and every option.
#[derive(Clone)]
pub struct Request {
    /// The rank count to extrapolate to.
    pub target: u32,
    /// The exact models (built-ins and plugins).
    pub models: ModelSet,
    /// Parameters declared irrelevant (`--ignore`): summarised before the fit, after the
    /// models of the MPI library were checked against the exact values.
    pub ignore: Vec<Ignore>,
    /// Summarise, instead of refusing, every quantity that fits no exact model
    /// (`--approx-unfit`), one refusal at a time, at most [`MAX_UNFIT`].
    pub approx_unfit: bool,
    /// What to do with inputs that disagree in structure.
    pub inconsistent: Inconsistent,
    /// How the nested calls of collective MPI-IO calls are derived at the target.
    pub derivation: Derivation,
    /// What replays HDF5 calls through the HDF5 library (`iotrex-h5oracle`), where HDF5's
    /// file space at the target needs it; without one such an extrapolation refuses, saying so.
    pub oracle: Option<Arc<dyn Oracle>>,
    /// The target's node layout (`--ranks-per-node`, `--nodes`); `None`: the inputs' ranks
    /// per node where every input has the same, one node where every input ran on one
    /// ([`crate::nodes::target`]).
    pub shape: Option<TargetShape>,
    /// The most memory, in bytes, the parts of the extrapolation that do not stay compressed
    /// may take (`--max-memory`): past it the extrapolation refuses before it starts them,
    /// naming the part. `None`: half the machine's memory ([`default_max_memory`]).
    pub max_memory: Option<u64>,
}

/// Half the machine's memory (`MemTotal` of `/proc/meminfo`): the default `--max-memory`. On
/// a system without `/proc/meminfo` there is no default bound.
pub fn default_max_memory() -> u64 {
    let kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    kb.map_or(u64::MAX, |kb| kb.saturating_mul(1024) / 2)
}

impl Request {
    /// A request for `target` ranks with the built-in models and no option set.
    pub fn new(target: u32) -> Request {
        Request {
            target,
            models: ModelSet::builtin(),
            ignore: Vec::new(),
            approx_unfit: false,
            inconsistent: Inconsistent::default(),
            derivation: Derivation::default(),
            oracle: None,
            shape: None,
            max_memory: None,
        }
    }

    /// This request with at most `bytes` of memory for the parts that do not stay compressed.
    pub fn max_memory(mut self, bytes: Option<u64>) -> Request {
        self.max_memory = bytes;
        self
    }

    /// This request with the models `models`.
    pub fn models(mut self, models: ModelSet) -> Request {
        self.models = models;
        self
    }

    /// This request with inputs that disagree in structure treated as `how` says.
    pub fn inconsistent(mut self, how: Inconsistent) -> Request {
        self.inconsistent = how;
        self
    }

    /// This request deriving the collective calls' nested calls as `how` says.
    pub fn derivation(mut self, how: Derivation) -> Request {
        self.derivation = how;
        self
    }

    /// This request with the parameters `ignore` summarised.
    pub fn ignore(mut self, ignore: Vec<Ignore>) -> Request {
        self.ignore = ignore;
        self
    }

    /// This request summarising every quantity that fits no exact model.
    pub fn approx_unfit(mut self, on: bool) -> Request {
        self.approx_unfit = on;
        self
    }

    /// This request for a target of the node layout `shape`.
    pub fn shape(mut self, shape: Option<TargetShape>) -> Request {
        self.shape = shape;
        self
    }

    /// This request with the HDF5 oracle `oracle`.
    pub fn oracle(mut self, oracle: Option<Arc<dyn Oracle>>) -> Request {
        self.oracle = oracle;
        self
    }
}

/// The context every pass of one extrapolation reads: the request's target and options, the
/// models as this run's inputs narrow them (the grids the program asked for), the oracle with
/// the replays it made, and what lifting the containers made. Passed, never global, so that
/// two extrapolations in one process (the report beside the CLI, the tests' threads) cannot
/// see each other's.
#[derive(Clone, Copy)]
pub(crate) struct Cx<'a> {
    /// The rank count to extrapolate to.
    pub(crate) target: u32,
    /// The exact models, the grid models taking the program's grids.
    pub(crate) models: &'a ModelSet,
    /// How collective calls' nested calls are derived.
    pub(crate) how: Derivation,
    /// Parameters summarised just before the fit.
    pub(crate) ignored: &'a [Ignore],
    /// What to do with inputs that disagree in structure.
    pub(crate) inconsistent: Inconsistent,
    /// The HDF5 oracle, remembering its replays for this run.
    pub(crate) oracle: Option<&'a Remembered<'a>>,
    /// The call sites lifting the containers made, once they are lifted: every model that
    /// expands ranks and compresses them again compresses containers whole.
    pub(crate) lifts: Option<&'a rsd::trace::Lifts>,
    /// The target's node layout, where known.
    pub(crate) layout: Option<Layout>,
    /// The most memory, in bytes, the parts that do not stay compressed may take.
    pub(crate) max_memory: u64,
}

impl<'a> Cx<'a> {
    /// A context for unit tests: 64 ranks, `models`, nothing else.
    #[cfg(test)]
    pub(crate) fn for_tests(models: &'a ModelSet) -> Cx<'a> {
        Cx {
            target: 64,
            models,
            how: Default::default(),
            ignored: &[],
            inconsistent: Default::default(),
            oracle: None,
            lifts: None,
            layout: None,
            max_memory: u64::MAX,
        }
    }

    /// This context once the containers were lifted with `lifts`.
    pub(crate) fn lifted(self, lifts: Option<&'a rsd::trace::Lifts>) -> Cx<'a> {
        Cx { lifts, ..self }
    }
}

/// Extrapolates `inputs` (any order, at least three distinct rank counts; several runs of
/// one rank count are repeated runs, used to measure the timing noise) as `req` asks. With
/// `approx_unfit`, each refusal that names a quantity no exact model fits summarises that
/// quantity and tries again: the output's [`Extrapolated::summarised`] lists them.
pub fn run(req: &Request, inputs: &[Input]) -> Result<Extrapolated, ExtrapError> {
    if req.target == 0 {
        return Err(ExtrapError::BadTarget {
            target: 0,
            why: "a run has at least one rank".into(),
        });
    }
    let layout = crate::nodes::target(req.target, req.shape, inputs)?;
    let remembered = req.oracle.as_ref().map(|o| Remembered::new(o.as_ref()));
    let mut ignored = req.ignore.clone();
    // Set when a refusal named a directory listing: the inputs without their listings.
    let mut unlisted: Option<Vec<Input>> = None;
    loop {
        let given = unlisted.as_deref().unwrap_or(inputs);
        let e = match once(req, layout, remembered.as_ref(), given, &ignored) {
            Ok(mut x) => {
                x.summarised = ignored[req.ignore.len()..].to_vec();
                if unlisted.is_some() {
                    crate::listings::mark(&mut x);
                }
                return Ok(x);
            }
            Err(e) => e,
        };
        if unlisted.is_none() && crate::listings::refused(&e) {
            match crate::listings::without(inputs) {
                Some(kept) => {
                    unlisted = Some(kept);
                    continue;
                }
                None => return Err(e),
            }
        }
        let unfit = e
            .refused_param()
            .filter(|_| req.approx_unfit)
            .filter(|g| g.is_quantity() && !ignored.contains(g));
        match unfit {
            Some(g) if ignored.len() - req.ignore.len() < MAX_UNFIT => ignored.push(g),
            _ => return Err(e),
        }
    }
}

/// One extrapolation of `inputs` with the parameters `ignored` summarised.
fn once(
    req: &Request,
    layout: Option<Layout>,
    oracle: Option<&Remembered>,
    inputs: &[Input],
    ignored: &[Ignore],
) -> Result<Extrapolated, ExtrapError> {
    let cx = Cx {
        target: req.target,
        models: &req.models,
        how: req.derivation,
        max_memory: req.max_memory.unwrap_or_else(default_max_memory),
        ignored,
        inconsistent: req.inconsistent,
        oracle,
        lifts: None,
        layout,
    };
    crate::pipeline::run(cx, inputs)
}

/// The unit tests' extrapolation: `inputs` fitted as given to `target` with `models`.
#[cfg(test)]
pub(crate) fn as_given(
    inputs: &[Input],
    target: u32,
    models: &ModelSet,
) -> Result<Extrapolated, ExtrapError> {
    let req = Request::new(target)
        .models(models.clone())
        .inconsistent(Inconsistent::AsGiven);
    run(&req, inputs)
}
