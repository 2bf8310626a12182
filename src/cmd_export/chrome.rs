//! `iotrex export chrome`: Chrome/Perfetto `traceEvents` JSON, written by `rsd_view::chrome`.

use super::Exporter;
use anyhow::{Context, Result};
use clap::Args;
use rsd::TraceFile;
use rsd_view::chrome::ChromeReport;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex export chrome`.
#[derive(Debug, Args)]
#[command(
    about = "Write Chrome/Perfetto trace JSON: one process per rank, one span per call",
    long_about = "Write a Chrome/Perfetto `traceEvents` JSON file with one process per rank \
                  and one complete span per call, with its arguments; nested POSIX calls \
                  appear inside their MPI-IO call. The trace stores timing as statistics, so \
                  the timeline is rebuilt from each call's mean compute gap and mean \
                  duration. Output is capped by --max-events and says so when it is.",
    after_help = "Example:\n  iotrex export chrome app.64.iotrex -o app.json --ranks 0-7\n  (then open app.json in ui.perfetto.dev)"
)]
pub struct ExportChromeArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Output JSON file.
    #[arg(long, short)]
    pub output: PathBuf,
    /// Ranks to export, e.g. `0-7`, `0,63` or `0-62:2` (default: all).
    #[arg(long, value_parser = parse_ranks)]
    pub ranks: Option<rsd::RankSet>,
    /// Stop after this many spans (calls, nested ones included); the output says it was capped.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_events: u64,
}

fn parse_ranks(s: &str) -> Result<rsd::RankSet, String> {
    rsd::RankSet::parse(s)
}

impl Exporter for ExportChromeArgs {
    type Report = ChromeReport;

    fn trace(&self) -> &Path {
        &self.trace
    }

    fn export(&self, tf: &TraceFile, _progress: &mut dyn FnMut(u32, u32)) -> Result<ChromeReport> {
        let mut w = rsd::atomic::AtomicFile::create(&self.output)
            .with_context(|| format!("cannot create {} (--output)", self.output.display()))?;
        let h = &tf.header;
        let name = |s| rsd::process::slot_name(h.processes.as_ref(), h.nranks, s);
        let rep = rsd_view::chrome::write_chrome(
            &tf.trace,
            &name,
            self.ranks.as_ref(),
            self.max_events,
            &mut w,
        )
        .and_then(|r| w.commit().map(|()| r))
        .with_context(|| format!("cannot write {} (--output)", self.output.display()))?;
        Ok(rep)
    }

    fn summary(&self, r: &ChromeReport) -> String {
        format!(
            "wrote {}: {} spans for {} ranks; open it in ui.perfetto.dev or chrome://tracing",
            self.output.display(),
            r.spans,
            r.ranks
        )
    }

    fn warnings(&self, r: &ChromeReport) -> Vec<String> {
        if r.truncated {
            vec![format!(
                "stopped at {} spans (--max-events); pass a larger --max-events or fewer --ranks for the rest",
                self.max_events
            )]
        } else {
            Vec::new()
        }
    }
}
