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
    /// Two inputs have the same rank count.
    #[error("{first} and {second} both have {nranks} ranks; each input must be a different scale")]
    DuplicateScale {
        /// Rank count.
        nranks: u32,
        /// One input.
        first: String,
        /// The other.
        second: String,
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
}

impl ExtrapError {
    /// A suggestion for the user, where there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ExtrapError::Refused { hint, .. } => Some(hint),
            ExtrapError::StructureDiffers { .. } => Some(
                "the program takes a different path at different scales; trace scales where it \
                 behaves alike, or extrapolate from the scales that agree",
            ),
            ExtrapError::TooFewInputs { .. } => {
                Some("trace the program at 3 or more rank counts, e.g. 4, 8, 12 and 16")
            }
            _ => None,
        }
    }
}
