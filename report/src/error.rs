//! Errors of the `report` crate. Each message names the input or plot at fault.

use std::path::PathBuf;

/// Everything that can go wrong building a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// No input trace was given.
    #[error("no input traces: give at least one .iotrex file")]
    NoInputs,

    /// An input trace could not be read (bad magic, newer version, truncated, corrupt).
    #[error(transparent)]
    Trace(#[from] rsd::RsdError),

    /// Two inputs of an extrapolation have the same rank count, so they are not distinct scales.
    #[error(
        "inputs {first} and {second} both have {ranks} ranks; an extrapolation needs one trace per scale"
    )]
    SameScale {
        /// The first input with that rank count.
        first: PathBuf,
        /// The second one.
        second: PathBuf,
        /// The shared rank count.
        ranks: u32,
    },

    /// A plot had nothing to draw. Plots with no data are left out with a note instead of
    /// being drawn empty; this error is what the plotting code returns so callers decide.
    #[error("plot '{plot}' has no data ({input})")]
    EmptyPlot {
        /// The plot's title.
        plot: String,
        /// The input it was drawn for.
        input: String,
    },

    /// plotters failed to draw a plot.
    #[error("cannot draw plot '{plot}' ({input}): {message}")]
    Draw {
        /// The plot's title.
        plot: String,
        /// The input it was drawn for.
        input: String,
        /// plotters' message.
        message: String,
    },

    /// Writing the report failed.
    #[error("cannot write the report ({path}): {source}")]
    Write {
        /// The output file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}
