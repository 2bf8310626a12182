//! Tables of a trace for the tools analysts already use: Parquet files that pandas, Polars,
//! DuckDB and Spark read.
//!
//! Two tables ([`COLUMNS`] lists every column of both, with its type and meaning):
//! - `calls.parquet`: one row per expanded call of every rank (nested calls included, with
//!   their parent), written in row groups while the trace expands, so a trace of thousands of
//!   ranks and millions of calls streams with bounded memory;
//! - `events.parquet`: one row per node of the compressed trace (events and loops), with its
//!   ranks, call count and timing statistics: the quick summary.
//!
//! A trace keeps timing as statistics, not timestamps, so a call's start and duration are
//! rebuilt as Chrome export rebuilds them (from the event's mean gap and mean duration) and the
//! `time_source` column says so; in an extrapolated trace they are the models' predictions.

mod calls;
mod events;
mod table;

pub use calls::write_calls;
pub use events::write_events;
pub use table::{COLUMNS, ColumnDoc, ColumnKind};

use std::path::{Path, PathBuf};

/// Why an export failed, naming the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The output file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The output directory could not be created: named as the output, so that the OS error
    /// is not read as being about the trace.
    #[error("cannot create the output directory {} (-o): {source}", dir.display())]
    OutputDir {
        /// The directory given with `-o`.
        dir: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The Parquet writer refused (a schema or encoding error: a bug, reported as such).
    #[error("cannot write Parquet to {path}: {source}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What the writer said.
        source: parquet::errors::ParquetError,
    },
}

/// What a Parquet export wrote.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ParquetReport {
    /// The calls table.
    pub calls_file: PathBuf,
    /// Its rows (calls, nested ones included).
    pub calls: u64,
    /// Row groups of the calls table.
    pub row_groups: u64,
    /// The events table.
    pub events_file: PathBuf,
    /// Its rows (nodes of the compressed trace).
    pub events: u64,
    /// Ranks exported.
    pub ranks: u64,
    /// Whether times are predictions of an extrapolated trace.
    pub predicted: bool,
    /// Rows of the calls table holding a value drawn from a statistical summary.
    pub approximate_calls: u64,
}

/// The name of the calls table in an export directory.
pub const CALLS_FILE: &str = "calls.parquet";
/// The name of the events table in an export directory.
pub const EVENTS_FILE: &str = "events.parquet";

/// Writes both tables of `tf` into `dir` (created if missing), `rows_per_group` calls per row
/// group, calling `progress(ranks done, ranks in all)` as ranks are expanded.
pub fn export_parquet(
    tf: &rsd::TraceFile,
    dir: &Path,
    rows_per_group: usize,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<ParquetReport, ExportError> {
    std::fs::create_dir_all(dir).map_err(|source| ExportError::OutputDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let calls_file = dir.join(CALLS_FILE);
    let events_file = dir.join(EVENTS_FILE);
    let predicted = tf.header.prediction.is_some();
    // The calls hold this export's own numbers for the run values (numbers that belong to
    // the traced run); the events table says them as run values.
    let filled;
    let calls_of = if rsd::runvalue::present(&tf.trace.nodes) {
        let mut t = tf.clone();
        rsd::runvalue::fill(&mut t.trace, &rsd::runvalue::Fresh::here());
        filled = t;
        &filled
    } else {
        tf
    };
    let c = write_calls(calls_of, &calls_file, rows_per_group, progress)?;
    let events = write_events(tf, &events_file)?;
    Ok(ParquetReport {
        calls_file,
        calls: c.rows,
        row_groups: c.row_groups,
        events_file,
        events,
        ranks: c.ranks,
        predicted,
        approximate_calls: c.approximate,
    })
}
