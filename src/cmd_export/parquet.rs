//! `iotrex export parquet`: the calls and events tables of a trace as Parquet, written by the
//! `columnar` crate.

use super::Exporter;
use anyhow::Result;
use clap::Args;
use columnar::ParquetReport;
use rsd::TraceFile;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex export parquet`.
#[derive(Debug, Args)]
#[command(
    about = "Write Parquet tables (one row per call; one per compressed event) for pandas, Polars, DuckDB",
    long_about = "Write two Parquet files into a directory: calls.parquet, one row per expanded \
                  call of every rank (nested calls included, with their parent), streamed in \
                  row groups so memory stays bounded on large traces; and events.parquet, one \
                  row per node of the compressed trace with its ranks, call count and timing \
                  statistics. A trace keeps timing as statistics, so a call's start and \
                  duration are rebuilt from its event's means (column time_source says so; \
                  in an extrapolated trace they are the models' predictions).",
    after_long_help = columns_help()
)]
pub struct ExportParquetArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Output directory (created if missing); calls.parquet and events.parquet are written there.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Calls per row group of calls.parquet: the memory the export holds at once.
    #[arg(long, default_value_t = 131_072, value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group: u64,
}

/// The columns of both tables, for `--help`.
fn columns_help() -> String {
    let mut s = String::from("Columns:\n");
    let mut table = "";
    for c in columnar::COLUMNS {
        if c.table != table {
            table = c.table;
            s.push_str(&format!("  {table}.parquet\n"));
        }
        let null = if c.nullable { ", nullable" } else { "" };
        s.push_str(&format!(
            "    {:<14} {}{null}: {}\n",
            c.name,
            c.kind.name(),
            c.doc
        ));
    }
    s.push_str(
        "\nExample (DuckDB): bytes written per rank and file\n  \
         iotrex export parquet app.64.iotrex -o app-pq/\n  \
         duckdb -c \"SELECT rank, path, sum(bytes) FROM 'app-pq/calls.parquet' \
         WHERE depth = 0 AND op IN ('write','pwrite','MPI_File_write_at') GROUP BY ALL\"",
    );
    s
}

impl Exporter for ExportParquetArgs {
    type Report = ParquetReport;
    const PROGRESS: bool = true;

    fn trace(&self) -> &Path {
        &self.trace
    }

    fn export(&self, tf: &TraceFile, progress: &mut dyn FnMut(u32, u32)) -> Result<ParquetReport> {
        let rows = usize::try_from(self.row_group).unwrap_or(usize::MAX);
        Ok(columnar::export_parquet(tf, &self.output, rows, progress)?)
    }

    fn summary(&self, r: &ParquetReport) -> String {
        format!(
            "wrote {} ({} calls of {} ranks, {} row groups) and {} ({} events)",
            r.calls_file.display(),
            r.calls,
            r.ranks,
            r.row_groups,
            r.events_file.display(),
            r.events
        )
    }

    fn warnings(&self, r: &ParquetReport) -> Vec<String> {
        let mut w = Vec::new();
        if r.predicted {
            w.push("the trace is extrapolated: start_ns and dur_ns are the models' predictions (time_source = 'model')".to_string());
        }
        if r.approximate_calls > 0 {
            w.push(format!(
                "{} calls hold parameters drawn from statistical summaries (column approximate)",
                r.approximate_calls
            ));
        }
        w
    }
}
