//! `iotrex export codes`: CODES workloads (recorder logs or iolang kernels) from a trace's POSIX
//! view, written by `codes_bridge`.

use super::Exporter;
use anyhow::Result;
use clap::Args;
use codes_bridge::{ExportOptions, ExportReport, Format};
use rsd::TraceFile;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex export codes`.
#[derive(Debug, Args)]
#[command(
    about = "Write CODES workloads (recorder text or iolang) from a trace's POSIX view",
    long_about = "Write the POSIX view of a trace as workloads an unmodified CODES build reads. \
                  POSIX and stdio calls map directly; MPI-IO calls become the POSIX calls \
                  nested in them (under collective buffering: the aggregators' writes), or \
                  the equivalent POSIX call when POSIX was not traced; barriers stay \
                  barriers; other communication and compute gaps become delays. Every read \
                  and write carries an explicit offset. --max-blocksize splits larger \
                  operations into consecutive pieces. recorder writes DIR/log.<rank> \
                  (CODES truncates a rank at 2048 operations, so larger ranks are refused); \
                  iolang writes DIR/meta.txt and one kernel per rank, with no cap.",
    after_help = "Examples:\n  iotrex export codes app.64.iotrex -o codes/ --max-blocksize 256KiB\n  iotrex export codes app.4096.iotrex -o codes/ --format iolang --force\n  iotrex codes-stats codes/"
)]
pub struct ExportCodesArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Output directory (created if missing; must be empty unless --force).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Workload format: recorder or iolang.
    #[arg(long, default_value = "recorder", value_parser = crate::cmd_codes::parse_format)]
    pub format: Format,
    /// Split reads and writes larger than SIZE (e.g. 256KiB, 1MiB, 4096).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_blocksize: Option<u64>,
    /// Refuse a trace whose events do not cover exactly ranks 0..nranks-1.
    #[arg(long)]
    pub nranks_check: bool,
    /// Write into a non-empty directory, replacing an earlier export there.
    #[arg(long)]
    pub force: bool,
    /// Seed of the values drawn for approximate (summarised) parameters.
    #[arg(long, value_name = "N", default_value_t = rsd::draw::DEFAULT_SEED)]
    pub seed: u64,
}

fn parse_size(s: &str) -> Result<u64, String> {
    codes_bridge::parse_size(s).map_err(|e| e.to_string())
}

impl Exporter for ExportCodesArgs {
    type Report = ExportReport;
    const PROGRESS: bool = true;

    fn trace(&self) -> &Path {
        &self.trace
    }

    fn export(&self, tf: &TraceFile, progress: &mut dyn FnMut(u32, u32)) -> Result<ExportReport> {
        let opts = ExportOptions {
            format: self.format,
            max_blocksize: self.max_blocksize,
            force: self.force,
            nranks_check: self.nranks_check,
        };
        Ok(codes_bridge::export_seeded(
            tf,
            &self.output,
            &opts,
            self.seed,
            progress,
        )?)
    }

    fn summary(&self, r: &ExportReport) -> String {
        format!(
            "wrote {} ({}): {} ranks, {} files, {} bytes; {} operations per rank at most{}{}",
            self.output.display(),
            r.format,
            r.ranks,
            r.files,
            r.bytes,
            r.max_ops_per_rank,
            if r.split_extra > 0 {
                format!(", {} extra from --max-blocksize splitting", r.split_extra)
            } else {
                String::new()
            },
            r.nodes
                .as_ref()
                .map(|n| format!("\nnodes: {n}"))
                .unwrap_or_default()
        )
    }

    fn warnings(&self, r: &ExportReport) -> Vec<String> {
        r.warnings.clone()
    }
}
