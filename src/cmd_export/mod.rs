//! `iotrex export FORMAT`: a trace written in another tool's format. Every format is an
//! [`Exporter`] in a file of its own ([`codes`]: CODES workloads, recorder or iolang;
//! [`chrome`]: Chrome/Perfetto JSON; [`parquet`]: Parquet tables; [`otf2`]: OTF2 archives); reading the trace, the progress bar, printing the report
//! (text or `--json`) and the warnings are done once, here, in [`run`].

pub mod chrome;
pub mod codes;
pub mod otf2;
pub mod parquet;

use crate::output::{print_json, print_text};
use anyhow::Result;
use clap::{Args, Subcommand};
use rsd::TraceFile;
use serde::Serialize;
use std::path::Path;

/// One format of `iotrex export`.
pub trait Exporter {
    /// What an export wrote: printed as is with `--json`.
    type Report: Serialize;
    /// Whether [`Exporter::export`] reports progress per rank (a bar is drawn for it on a
    /// terminal when the trace has many ranks).
    const PROGRESS: bool = false;
    /// The trace file to export.
    fn trace(&self) -> &Path;
    /// Writes `tf` in this format, calling `progress(ranks done, ranks in all)` if it reports
    /// progress.
    fn export(&self, tf: &TraceFile, progress: &mut dyn FnMut(u32, u32)) -> Result<Self::Report>;
    /// The line saying what was written.
    fn summary(&self, r: &Self::Report) -> String;
    /// What the user should know about the export, printed to stderr after the report.
    fn warnings(&self, r: &Self::Report) -> Vec<String>;
}

/// Ranks from which an export draws a progress bar (on a terminal only).
const BAR_FROM_RANKS: u32 = 256;

/// Arguments of `iotrex export`: the target format.
#[derive(Debug, Args)]
#[command(
    about = "Export a trace to another tool's format",
    after_help = "Examples:\n  iotrex export codes app.1024.iotrex -o codes/ --max-blocksize 256KiB && iotrex codes-stats codes/\n  iotrex export codes app.64.iotrex -o codes-iolang/ --format iolang\n  iotrex export chrome app.8.iotrex -o app.8.json   # open in https://ui.perfetto.dev\n  iotrex export parquet app.64.iotrex -o app-pq/   # calls.parquet, events.parquet\n  iotrex export otf2 app.64.iotrex -o app-otf2/   # then: otf2-print app-otf2/traces.otf2"
)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub cmd: ExportCmd,
}

/// `iotrex export ...` targets.
#[derive(Debug, Subcommand)]
pub enum ExportCmd {
    Codes(codes::ExportCodesArgs),
    Chrome(chrome::ExportChromeArgs),
    Parquet(parquet::ExportParquetArgs),
    Otf2(otf2::ExportOtf2Args),
}

/// Runs `iotrex export`.
pub fn run(a: &ExportArgs, json: bool) -> Result<()> {
    match &a.cmd {
        ExportCmd::Codes(e) => export(e, json),
        ExportCmd::Chrome(e) => export(e, json),
        ExportCmd::Parquet(e) => export(e, json),
        ExportCmd::Otf2(e) => export(e, json),
    }
}

/// Reads the trace, exports it with `e` and prints the report and the warnings.
fn export<E: Exporter>(e: &E, json: bool) -> Result<()> {
    let tf = TraceFile::read(e.trace())?;
    // A bar on a terminal only: pipes and CI logs get the result line alone.
    let bar = (E::PROGRESS
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
        && tf.header.nranks >= BAR_FROM_RANKS)
        .then(|| {
            let b = indicatif::ProgressBar::new(u64::from(tf.header.nranks));
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "exporting {bar:40} {pos}/{len} ranks {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
    let report = e.export(&tf, &mut |done, _| {
        if let Some(b) = &bar {
            b.set_position(u64::from(done));
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report?;
    if json {
        print_json(&report)?;
    } else {
        print_text(&format!("{}\n", e.summary(&report)))?;
    }
    for w in e.warnings(&report) {
        eprintln!("warning: {w}");
    }
    Ok(())
}
