//! Errors of the `extrap` crate.

/// Why an extrapolation was refused or could not start.
#[derive(Debug, thiserror::Error)]
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
    /// The inputs do not have the same event structure.
    #[error(
        "the traces differ in structure at {position}: {left} at {left_ranks} ranks ({left_input}) \
         but {right} at {right_ranks} ranks ({right_input}){irregular}"
    )]
    StructureDiffers {
        /// Parameters that follow no pattern in the inputs, as `; ...` text, or empty.
        irregular: String,
        /// Where (node index and enclosing event).
        position: String,
        /// The node in the first input.
        left: String,
        /// Rank count of the first input.
        left_ranks: u32,
        /// The first input.
        left_input: String,
        /// The differing node.
        right: String,
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
        /// The event: op, call site, path.
        event: String,
        /// The parameter (or `ranks`, `loop count`).
        param: String,
        /// What went wrong.
        detail: String,
        /// The values at each scale.
        values: String,
        /// The models tried.
        tried: String,
        /// What would help.
        hint: String,
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
    #[error("cannot extrapolate the process grid of {event}: {detail}; values seen: {values}")]
    GridUnseen {
        /// The `MPI_Dims_create` call.
        event: String,
        /// Which dimension, and its value at the inputs and the target.
        detail: String,
        /// The dimension's value at each input scale.
        values: String,
        /// The scales to trace.
        hint: String,
    },
    /// The inputs fall into groups of different structure.
    #[error("the traces disagree in structure: {groups}")]
    Inconsistent {
        /// Which scales agree with each other and where the others differ.
        groups: String,
        /// What to do: `--drop-inconsistent`, or trace more scales.
        hint: String,
    },
}

/// What [`ExtrapError::not_derived`] adds to a refusal.
const NOT_DERIVED: &str = "; the nested calls of collective MPI-IO calls are not derived: ";

impl ExtrapError {
    /// Adds to a refusal of the fitting why the nested calls of collective calls were fitted
    /// rather than derived by the model of the library's collective buffering: both reasons.
    pub(crate) fn not_derived(mut self, why: &str) -> ExtrapError {
        let text = format!("{NOT_DERIVED}{why}");
        match &mut self {
            ExtrapError::StructureDiffers { irregular, .. } => irregular.push_str(&text),
            ExtrapError::Refused { detail, .. } => detail.push_str(&text),
            _ => {}
        }
        self
    }

    /// Adds to a refusal why parallel HDF5's dealt metadata writes were not modelled
    /// (`dealt`): the structure of such writes changes with the scale, so the refusal is most
    /// likely theirs.
    pub(crate) fn not_dealt(self, why: &str) -> ExtrapError {
        self.also(&format!(
            "; the independent writes dealt over the ranks (HDF5's metadata flush) are not \
             modelled: {why}"
        ))
    }

    /// Adds `text` (a sentence starting with "; ") to a refusal's detail, once.
    pub(crate) fn also(mut self, text: &str) -> ExtrapError {
        // The model is tried around the grouping by structure and again around the fit:
        // the reason is said once.
        match &mut self {
            ExtrapError::StructureDiffers { irregular: s, .. }
            | ExtrapError::Refused { detail: s, .. }
            | ExtrapError::Inconsistent { groups: s, .. }
                if !s.contains(text) =>
            {
                s.push_str(text)
            }
            _ => {}
        }
        self
    }

    /// The parameter a refusal is about (`op.param`, as `--ignore` takes it), when it names
    /// one.
    pub fn refused_param(&self) -> Option<crate::approx::Ignore> {
        let ExtrapError::Refused { event, param, .. } = self else {
            return None;
        };
        let op = event.split_whitespace().next()?;
        crate::approx::Ignore::parse(&format!("{op}.{param}")).ok()
    }

    /// A suggestion for the user, where there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ExtrapError::Refused { hint, .. }
            | ExtrapError::Inconsistent { hint, .. }
            | ExtrapError::GridUnseen { hint, .. } => Some(hint),

            // The usual cause with collective MPI-IO: the library's collective buffering picks
            // more aggregators as the rank count grows, so which rank writes what changes.
            ExtrapError::StructureDiffers { irregular, .. } if irregular.contains(NOT_DERIVED) => {
                Some(
                    "the MPI library's collective buffering changes the nested calls' shape with \
                     the scale; extrap derives them instead when the traces record the library's \
                     configuration and its model reproduces every input scale (see why not above)",
                )
            }
            ExtrapError::StructureDiffers { left, right, .. }
                if [left, right]
                    .iter()
                    .any(|s| s.contains("MPI_File_") && s.contains("_all")) =>
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

    fn differs(left: &str, right: &str) -> ExtrapError {
        ExtrapError::StructureDiffers {
            irregular: String::new(),
            position: "node 3 of the top level".into(),
            left: left.into(),
            left_ranks: 4,
            left_input: "a.4.iotrex".into(),
            right: right.into(),
            right_ranks: 16,
            right_input: "a.16.iotrex".into(),
        }
    }

    #[test]
    fn structure_hint_names_aggregators_for_collective_mpiio() {
        let e = differs(
            "loop around MPI_File_write_at_all (call site 0x1)",
            "MPI_File_write_at_all (call site 0x1)",
        );
        let h = e.hint().unwrap();
        assert!(h.contains("aggregators") && h.contains("records the library's configuration"));
        let e = differs(
            "pwrite (call site 0x1)",
            "loop around pwrite (call site 0x1)",
        );
        assert!(!e.hint().unwrap().contains("aggregators"));
    }
}
