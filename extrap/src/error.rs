//! Errors of the `extrap` crate.

mod refusal;

pub use crate::consistent::{Differing, ScaleGroup, ScaleGroups};
pub use refusal::{Guess, Irregular, Quantity, Reason, Reasons, Shape, Site, Unusable};

/// Bytes in a GiB, as the memory bound is said.
const GIB: f64 = (1u64 << 30) as f64;

/// Why an extrapolation was refused or could not start. Serialized (`iotrex --json extrap`),
/// each variant is an object of its fields, with its name in snake case as `kind`.
#[derive(Debug, thiserror::Error, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExtrapError {
    /// Fewer than three input traces.
    #[error("extrapolation needs at least 3 traces at different rank counts, got {count}")]
    TooFewInputs {
        /// How many were given.
        count: usize,
    },
    /// Two inputs have the same rank count but are not repeated runs of one program.
    #[error(
        "{first} and {second} both have {nranks} ranks but are not repeated runs of the same \
         program ({why}); inputs of one scale must be runs of the same command with the same calls"
    )]
    DuplicateScale {
        /// Rank count.
        nranks: u32,
        /// One input.
        first: String,
        /// The other.
        second: String,
        /// What differs.
        why: String,
    },
    /// An input holds a summarised parameter (`rsd::approx`), which has no exact values to fit.
    #[error("{0}")]
    #[serde(skip_serializing)]
    Approximate(rsd::RsdError),
    /// An `--ignore` that names no traced operation or parameter.
    #[error("--ignore {spec}: {why}")]
    BadIgnore {
        /// What the user wrote.
        spec: String,
        /// What is wrong with it, and what exists.
        why: String,
    },
    /// An input trace is flagged incomplete.
    #[error("{input} is flagged incomplete ({why}); an incomplete trace cannot be extrapolated")]
    Incomplete {
        /// The input.
        input: String,
        /// Its notes.
        why: String,
    },
    /// The target rank count is unusable.
    #[error("bad target rank count {target} (--ranks): {why}")]
    BadTarget {
        /// The target.
        target: u64,
        /// Why.
        why: String,
    },
    /// The inputs have different ranks per node and no target shape was given.
    #[error(
        "the inputs have different ranks per node ({inputs}): say the target's shape with \
         --ranks-per-node P or --nodes K"
    )]
    TargetShapeNeeded {
        /// Each input and its layout (nodes x ranks per node).
        inputs: String,
    },
    /// Every input ran on one node and the target has several: what the target's other nodes
    /// do, no input shows.
    #[error(
        "every input ran on one node, but the target is {target}: no input shows {what}; trace \
         the program on two nodes or more (for example 2 nodes x 1, 2, 3 and 4 ranks, or 2, 3, 4 \
         and 5 nodes x {ppn} ranks)"
    )]
    OneNodeInputs {
        /// The target's layout (`2 nodes x 8 ranks`).
        target: String,
        /// What depends on the nodes, and where.
        what: String,
        /// Ranks per node at the target, for the runs to add.
        ppn: u32,
    },
    /// The inputs do not have the same event structure.
    #[error(
        "the traces differ in structure at {}: {} at {left_ranks} ranks ({left_input}) but {} at \
         {right_ranks} ranks ({right_input}){}",
        .at.place(), Differing::side(&.at.left), Differing::side(&.at.right), .also.after()
    )]
    StructureDiffers {
        /// What the models around the fit add: the parameters that follow no pattern in the
        /// inputs, why the library's calls were not derived.
        also: Reasons,
        /// Where (the node's index and the enclosing node), and the node of each side.
        at: Differing,
        /// Rank count of the first input.
        left_ranks: u32,
        /// The first input.
        left_input: String,
        /// Its input's rank count.
        right_ranks: u32,
        /// Its input.
        right_input: String,
    },
    /// A quantity fits no model exactly, or two models disagree at the target.
    #[error(
        "cannot extrapolate {param} of {event}: {detail}; values seen: {values}; models tried: {tried}"
    )]
    Refused {
        /// Where: the call (op, call site, path) or loop.
        event: Site,
        /// Which quantity of it.
        param: Quantity,
        /// Why: the fit's reason, then what the models around it add.
        detail: Reasons,
        /// The values at each scale.
        values: String,
        /// The models tried.
        tried: String,
        /// What would help.
        hint: String,
    },
    /// A part of the extrapolation that does not stay compressed would take more memory than
    /// `--max-memory` allows: refused before it starts.
    #[error(
        "extrapolating to {target} ranks would take about {:.1} GiB for {part}, more than \
         --max-memory ({:.1} GiB)",
        *needs as f64 / GIB,
        *max as f64 / GIB
    )]
    OverMemory {
        /// The target rank count.
        target: u32,
        /// The part of the trace that does not stay compressed, and why.
        part: String,
        /// The bytes it would take (an estimate).
        needs: u64,
        /// The bound (`--max-memory`).
        max: u64,
    },
    /// The MPI library's configuration for a file (its hints, the control variables)
    /// differs between the inputs: the collective calls' nested I/O depends on it.
    #[error("cannot extrapolate the collective MPI-IO calls on {why}")]
    ConfigDiffers {
        /// The file, the settings that differ, their values and scales.
        why: String,
    },
    /// Re-compressing an input without its derived nested calls failed.
    #[error("{input}: cannot strip the derived nested calls: {why}")]
    Derive {
        /// The input.
        input: String,
        /// Why.
        why: String,
    },
    /// A dimension of a process grid (`MPI_Dims_create`) is the same at every input scale but
    /// not at the target: the values that follow it look constant in the inputs. Not a value
    /// to `--ignore`: the extents and block starts built on it would be wrong with it.
    #[error(
        "cannot extrapolate the process grid of {event}: dimension {dimension} is {seen} at \
         every input scale but {at_target} at {target} ranks (dims({target}, {ndims}) = \
         {grid:?}): values that follow it (global extents, block starts) look constant in the \
         inputs and would be wrong at the target; values seen: dims(n, {ndims})[{dimension}] = \
         {seen} at {} ranks", list(.scales)
    )]
    GridUnseen {
        /// The `MPI_Dims_create` call.
        event: Site,
        /// How many dimensions the program asked for.
        ndims: usize,
        /// Which dimension differs.
        dimension: usize,
        /// Its value at every input scale.
        seen: i64,
        /// Its value at the target.
        at_target: i64,
        /// The target rank count.
        target: u32,
        /// The grid at the target.
        grid: Vec<i64>,
        /// The input scales, increasing.
        scales: Vec<u32>,
        /// The scales to trace.
        hint: String,
    },
    /// The inputs fall into groups of different structure.
    #[error("the traces disagree in structure: {groups}{}", .also.after())]
    Inconsistent {
        /// Which scales agree with each other and where the others differ.
        groups: ScaleGroups,
        /// What else is likely the cause: the parameters that follow no pattern, what the
        /// library models did not model.
        also: Reasons,
        /// What to do: `--drop-inconsistent`, or trace more scales.
        hint: String,
    },
}

/// `4, 8, 12` style list.
fn list(ns: &[u32]) -> String {
    ns.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

impl ExtrapError {
    /// A refusal of `param` of `event` for `reason`.
    pub(crate) fn refused(
        event: Site,
        param: Quantity,
        reason: Reason,
        (values, tried, hint): (String, String, String),
    ) -> ExtrapError {
        ExtrapError::Refused {
            event,
            param,
            detail: Reasons::one(reason),
            values,
            tried,
            hint,
        }
    }

    /// Adds to a refusal of the fitting why the nested calls of collective calls were fitted
    /// rather than derived by the model of the library's collective buffering: both reasons.
    pub(crate) fn not_derived(self, why: &str) -> ExtrapError {
        self.also(Reason::NotDerived { why: why.into() })
    }

    /// Adds to a refusal why parallel HDF5's dealt metadata writes were not modelled
    /// (`dealt`): the structure of such writes changes with the scale, so the refusal is most
    /// likely theirs.
    pub(crate) fn not_dealt(self, why: &str) -> ExtrapError {
        self.also(Reason::NotDealt { why: why.into() })
    }

    /// Adds a library model's reason, in its words, to a refusal.
    pub(crate) fn also_library(self, by: crate::pipeline::PassId, why: &str) -> ExtrapError {
        self.also(Reason::Library {
            by,
            why: why.into(),
        })
    }

    /// Adds `r` to a refusal's reasons, once.
    pub(crate) fn also(mut self, r: Reason) -> ExtrapError {
        match &mut self {
            ExtrapError::StructureDiffers { also: rs, .. }
            | ExtrapError::Refused { detail: rs, .. }
            | ExtrapError::Inconsistent { also: rs, .. } => rs.add(r),
            _ => {}
        }
        self
    }

    /// The parameter a refusal is about (`op.param`, as `--ignore` takes it), when it is a
    /// parameter of a call.
    pub fn refused_param(&self) -> Option<crate::approx::Ignore> {
        let ExtrapError::Refused { event, param, .. } = self else {
            return None;
        };
        let op = event.call_op()?;
        match *param {
            Quantity::Param { name } => Some(crate::approx::Ignore {
                op,
                param: name,
                element: None,
            }),
            Quantity::Element { array, index } => crate::approx::Ignore::element(op, array, index),
            _ => None,
        }
    }

    /// A suggestion for the user, where there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ExtrapError::Refused { hint, .. }
            | ExtrapError::Inconsistent { hint, .. }
            | ExtrapError::GridUnseen { hint, .. } => Some(hint),

            // The usual cause with collective MPI-IO: the library's collective buffering picks
            // more aggregators as the rank count grows, so which rank writes what changes.
            ExtrapError::StructureDiffers { also, .. }
                if also.any(|r| matches!(r, Reason::NotDerived { .. })) =>
            {
                Some(
                    "the MPI library's collective buffering changes the nested calls' shape with \
                     the scale; extrap derives them instead when the traces record the library's \
                     configuration and its model reproduces every input scale (see why not above)",
                )
            }
            ExtrapError::StructureDiffers { at, .. }
                if at.either_is(rsd::Op::is_collective_buffered) =>
            {
                Some(
                    "collective MPI-IO calls change shape when the MPI library uses more \
                     collective-buffering aggregators at larger scales (Open MPI's OMPIO takes one \
                     per 8 ranks by default): trace with this iotrex, whose tracer records the \
                     library's configuration, so that extrap derives the library's nested calls \
                     with its model instead of fitting them",
                )
            }
            ExtrapError::StructureDiffers { .. } => Some(
                "the program takes a different path at different scales; trace scales where it \
                 behaves alike, or extrapolate from the scales that agree",
            ),
            ExtrapError::OverMemory { .. } => Some(
                "extrapolate to fewer ranks, or raise --max-memory (it defaults to half the \
                 machine's memory) on a machine that has it",
            ),
            ExtrapError::ConfigDiffers { .. } => Some(
                "trace every scale with the same MPI-IO hints and library settings (a hint the \
                 program passes, such as cb_nodes, or an --mca option given at one scale only)",
            ),
            ExtrapError::BadIgnore { .. } => Some(
                "name a parameter as OP.PARAM, the op and parameter as `iotrex show` prints them \
                 (e.g. --ignore fprintf.ret)",
            ),
            ExtrapError::Approximate(_) => Some(
                "without --exact, extrap fits a summary's statistics (mean, spread, min, max) \
                 against the rank count and marks the output approximate",
            ),
            ExtrapError::TooFewInputs { .. } => Some(
                "trace the program at 3 or more rank counts, e.g. 4, 8, 12 and 16 (repeated runs of one rank count count once)",
            ),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn differs(left: Site, right: Site) -> ExtrapError {
        ExtrapError::StructureDiffers {
            also: Reasons::default(),
            at: Differing {
                index: 3,
                parent: None,
                left: Some(left),
                right: Some(right),
            },
            left_ranks: 4,
            left_input: "a.4.iotrex".into(),
            right_ranks: 16,
            right_input: "a.16.iotrex".into(),
        }
    }

    fn loop_of(s: Site) -> Site {
        Site::Loop {
            first: Some(Box::new(s)),
        }
    }

    fn refused(event: Site, param: Quantity) -> ExtrapError {
        let reason = Reason::FitsNoModel {
            part: param.to_string(),
        };
        let how = (
            "1 at 4, 2 at 8".into(),
            "constant, a*n+b".into(),
            "trace".into(),
        );
        ExtrapError::refused(event, param, reason, how)
    }

    /// The whole message, with what the models around the fit add, is what it was as text.
    #[test]
    fn a_refusal_writes_the_old_message() {
        let e = refused(
            Site::call(rsd::Op::Pwrite, 0x2),
            Quantity::Param { name: "offset" },
        )
        .also(Reason::PerRank {
            reason: Box::new(Reason::PerRankFitsNoModel),
        })
        .not_derived("no configuration")
        .also_library(crate::pipeline::PassId::DealtWrites, "a chunk index splits")
        .also_library(crate::pipeline::PassId::DealtWrites, "a chunk index splits");
        assert_eq!(
            e.to_string(),
            "cannot extrapolate offset of pwrite (call site 0x2): offset fits no exact model \
             of n; per rank: no per-rank model fits; the nested calls of collective MPI-IO \
             calls are not derived: no configuration; a chunk index splits; values seen: 1 at \
             4, 2 at 8; models tried: constant, a*n+b"
        );
        let call = |op| Site::call(op, 0x1);
        let mut d = differs(call(rsd::Op::Pwrite), call(rsd::Op::Pread)).not_derived("why");
        assert!(
            d.to_string().ends_with(
                "(a.16.iotrex); the nested calls of collective MPI-IO calls are not derived: why"
            ),
            "{d}"
        );
        assert!(d.hint().unwrap().contains("derives them instead"));
        d = ExtrapError::Inconsistent {
            groups: ScaleGroups(vec![ScaleGroup {
                scales: vec![4],
                differs: None,
            }]),
            also: Reasons::default(),
            hint: String::new(),
        }
        .not_dealt("one entry");
        assert_eq!(
            d.to_string(),
            "the traces disagree in structure: 4 ranks; the independent writes dealt over the \
             ranks (HDF5's metadata flush) are not modelled: one entry"
        );
    }

    /// The parameter `--ignore` would name comes from the site and quantity, not the text.
    #[test]
    fn refused_param_is_the_call_and_its_parameter() {
        use crate::approx::Ignore;
        let op = rsd::Op::Pwrite;
        let g = refused(Site::call(op, 1), Quantity::Param { name: "offset" }).refused_param();
        assert_eq!(g, Some(Ignore::parse("pwrite.offset").unwrap()));
        let hs = rsd::Op::ALL
            .iter()
            .copied()
            .find(|o| o.arrays().contains(&"count"))
            .unwrap();
        let count0 = Quantity::Element {
            array: "count",
            index: 0,
        };
        let g = refused(Site::call(hs, 1), count0).refused_param().unwrap();
        assert_eq!((g.op, g.param, g.element), (hs, "count", Some(0)));
        let in_loop = Site::Loop {
            first: Some(Box::new(Site::call(op, 1))),
        };
        for (site, q) in [
            (in_loop, Quantity::Param { name: "offset" }),
            (Site::call(op, 1), Quantity::LoopCount),
            (Site::call(op, 1), Quantity::Ranks),
            (Site::call(op, 1), Quantity::PathField { index: 0 }),
        ] {
            assert_eq!(refused(site, q).refused_param(), None);
        }
    }

    #[test]
    fn structure_hint_names_aggregators_for_collective_mpiio() {
        let call = |op| Site::call(op, 0x1);
        let e = differs(
            loop_of(call(rsd::Op::FileWriteAtAll)),
            call(rsd::Op::FileWriteAtAll),
        );
        let h = e.hint().unwrap();
        assert!(h.contains("aggregators") && h.contains("records the library's configuration"));
        let e = differs(call(rsd::Op::Pwrite), loop_of(call(rsd::Op::Pwrite)));
        assert!(!e.hint().unwrap().contains("aggregators"));
    }
}
