//! The passes of one extrapolation, in one written-down order ([`PASSES`], then the fit), each
//! run around the ones after it with one context ([`Cx`]) and what the library models hand on
//! ([`Stage`]):
//! 0. **run values** (`runvalues`): numbers that belong to the run (OMPIO's lock-file name,
//!    values that differ between repeated runs at one scale) made run values, never fitted;
//! 1. **containers lifted** (`containers`): the calls HDF5, NetCDF and PnetCDF calls made are
//!    lifted out of them, and nested again in the output, where the library models then
//!    settle what they decide once it is nested;
//! 2. **library models** (`library`): the process grids narrow the models; HDF5's collective
//!    flushes and dealt writes are taken out, to be put back at the target;
//! 3. **consistency** (`consistent`, `local`): the inputs grouped by structure, local queries
//!    whose counts follow the data set aside, scales of another structure refused or dropped;
//! 4. **prefix sums** (`prefix`): offsets that are prefix sums over the ranks, and file-end
//!    offsets, recognised, so that the fit keeps them as models;
//! 5. **summaries** (`approx`): a parameter summarised in some inputs summarised in all;
//! 6. **the fit** ([`crate::fit_stage`]): repeated runs grouped by scale, the MPI library's
//!    collective buffering derived around the fit (`mpi::collective`), the fit (`fit`,
//!    `timing`), and what the library models put back before the derivation.
//!
//! Each pass says in the output which acted ([`Extrapolated::passes`], `--explain`).

use crate::error::ExtrapError;
use crate::library::{Inner, Stage};
use crate::request::Cx;
use crate::{Extrapolated, Input};
use serde::Serialize;

/// A pass of the pipeline, as `--explain` lists the passes that acted, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PassId {
    /// Numbers that belong to the run (a job id, a pid) carried as run values.
    RunValues,
    /// Library calls (HDF5, NetCDF, PnetCDF) lifted out of the calls that made them, and
    /// nested again.
    Containers,
    /// The grid models narrowed to the grids the program asked `MPI_Dims_create` for, and the
    /// grid checked at the target.
    Grids,
    /// HDF5's collective metadata flushes modelled.
    CollectiveFlushes,
    /// HDF5's independent metadata writes dealt over the ranks modelled.
    DealtWrites,
    /// HDF5's file space at the target taken from the HDF5 library (the oracle).
    FileSpace,
    /// Local queries whose counts follow the data set aside.
    LocalQueries,
    /// Scales of another structure dropped (`--drop-inconsistent`).
    Dropped,
    /// Offsets that are prefix sums over the ranks recognised.
    PrefixSums,
    /// Parameters summarised in the inputs or by `--ignore` fitted by their statistics.
    Summaries,
    /// Repeated runs of one scale grouped, their timing fitted together.
    Repeats,
    /// The nested calls of collective MPI-IO calls derived by the model of the MPI library's
    /// collective buffering (or fitted, where it does not hold).
    CollectiveBuffering,
    /// Every other quantity fitted against the rank count.
    Fit,
}

impl std::fmt::Display for PassId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PassId::RunValues => "run values",
            PassId::Containers => "containers lifted and nested again",
            PassId::Grids => "process grids",
            PassId::CollectiveFlushes => "HDF5's collective metadata flushes",
            PassId::DealtWrites => "HDF5's dealt metadata writes",
            PassId::FileSpace => "HDF5's file space from the oracle",
            PassId::LocalQueries => "local queries set aside",
            PassId::Dropped => "inconsistent scales dropped",
            PassId::PrefixSums => "prefix sums",
            PassId::Summaries => "summaries",
            PassId::Repeats => "repeated runs",
            PassId::CollectiveBuffering => "collective buffering",
            PassId::Fit => "fit",
        })
    }
}

impl Extrapolated {
    /// Records that `pass` acted on this output.
    pub(crate) fn acted(&mut self, pass: PassId) {
        if let Err(at) = self.passes.binary_search(&pass) {
            self.passes.insert(at, pass);
        }
    }
}

/// One pass: it changes the inputs, runs the passes after it (`inner`), and changes their
/// output.
pub(crate) trait Pass: Sync {
    /// Runs `inner` on `inputs` with this pass around it.
    fn around(
        &self,
        cx: Cx,
        inputs: &[Input],
        stage: Stage<'_>,
        inner: Inner<'_>,
    ) -> Result<Extrapolated, ExtrapError>;
}

/// The passes around the fit, outermost first.
pub(crate) const PASSES: &[&dyn Pass] = &[
    &crate::runvalues::Recognising,
    &crate::containers::Lifting,
    &crate::library::Models,
    &crate::consistent::Grouping,
    &crate::prefix::PrefixSums,
    &crate::approx::Summaries,
];

/// The library models, outermost first: the node communicators refuse a target of several
/// nodes that inputs on one node cannot show; the process grids narrow the models everything else
/// is fitted with; HDF5's collective flushes are taken out around its independent dealt
/// writes; the MPI library's collective buffering derives, around the fit, the nested calls
/// of every collective call the others leave in or put back.
pub(crate) const MODELS: &[&dyn crate::library::LibraryModel] = &[
    &crate::mpi::nodes::NodeCommunicators,
    &crate::mpi::grid::ProcessGrids,
    &crate::hdf5::collflush::CollectiveFlushes,
    &crate::hdf5::dealt::DealtWrites,
    &crate::hdf5::space::FileSpace,
    &crate::mpi::collective::CollectiveBuffering,
];

/// The extrapolation of `inputs` as `cx` asks: every pass of [`PASSES`] around the fit.
pub(crate) fn run(cx: Cx, inputs: &[Input]) -> Result<Extrapolated, ExtrapError> {
    from(PASSES, cx, inputs, Stage::default())
}

/// `passes` around the fit.
pub(crate) fn from(
    passes: &[&dyn Pass],
    cx: Cx,
    inputs: &[Input],
    stage: Stage<'_>,
) -> Result<Extrapolated, ExtrapError> {
    match passes.split_first() {
        None => crate::fit_stage(cx, inputs, stage),
        Some((p, rest)) => p.around(cx, inputs, stage, &mut |cx, inputs, stage| {
            from(rest, cx, inputs, stage)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::PassId;
    use crate::patterns::{Pattern, trace_file};
    use crate::{Inconsistent, Input, Request, run};

    fn inputs(p: Pattern, scales: &[u32]) -> Vec<Input> {
        (scales.iter())
            .map(|&n| Input {
                name: format!("{p:?}.{n}.iotrex"),
                file: trace_file(p, n),
            })
            .collect()
    }

    fn passes(req: &Request, ins: &[Input]) -> Vec<PassId> {
        run(req, ins).unwrap_or_else(|e| panic!("{e}")).passes
    }

    /// A regular program with nothing for the other passes: only the fit acts. Collective
    /// writes with nested calls bring the collective buffering in (here fitted, not derived:
    /// the synthetic trace records no library configuration).
    #[test]
    fn a_regular_program_is_only_fitted() {
        let ins = inputs(Pattern::Strong, &[4, 8, 12, 16]);
        assert_eq!(passes(&Request::new(64), &ins), [PassId::Fit]);
        let ins = inputs(Pattern::Spmd, &[4, 8, 12, 16]);
        let got = passes(&Request::new(64), &ins);
        assert_eq!(got, [PassId::CollectiveBuffering, PassId::Fit]);
    }

    /// Two runs of one scale are grouped; a parameter named by `ignore` is summarised.
    #[test]
    fn repeats_and_summaries_say_they_acted() {
        let ins = inputs(Pattern::Strong, &[4, 8, 8, 12, 16]);
        assert_eq!(
            passes(&Request::new(32), &ins),
            [PassId::Repeats, PassId::Fit]
        );
        let ignore = vec![crate::approx::Ignore::parse("pwrite.offset").unwrap()];
        let got = passes(&Request::new(32).ignore(ignore), &ins);
        assert_eq!(got, [PassId::Summaries, PassId::Repeats, PassId::Fit]);
    }

    /// A scale of another structure is dropped with `Drop`, refused otherwise.
    #[test]
    fn consistency_drops_a_scale_of_another_structure() {
        let mut ins = inputs(Pattern::Strong, &[4, 8, 12, 16]);
        ins.push(Input {
            name: "odd.20.iotrex".into(),
            file: trace_file(Pattern::Groups, 20),
        });
        assert!(run(&Request::new(64), &ins).is_err());
        let req = Request::new(64).inconsistent(Inconsistent::Drop);
        assert_eq!(passes(&req, &ins), [PassId::Dropped, PassId::Fit]);
    }

    /// The order `--explain` lists them in is the order they run in.
    #[test]
    fn passes_list_in_run_order() {
        let mut x = run(&Request::new(64), &inputs(Pattern::Strong, &[4, 8, 12, 16])).unwrap();
        x.acted(PassId::Containers);
        x.acted(PassId::Summaries);
        x.acted(PassId::Containers);
        assert_eq!(
            x.passes,
            [PassId::Containers, PassId::Summaries, PassId::Fit]
        );
    }
}
