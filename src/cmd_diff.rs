//! `iotrex diff`: the CLI side of `extrap::diff`.

use anyhow::Result;
use clap::Args;
use extrap::diff::{DiffOptions, diff, render};
use rsd::TraceFile;
use std::path::PathBuf;

/// Arguments of `iotrex diff`.
#[derive(Debug, Args)]
#[command(
    about = "Compare two traces: structure and every parameter (timing with --timing)",
    long_about = "Compare the structure and every recorded parameter of two traces, ignoring \
                  timing, and print the first differences: the event, its ranks, the \
                  parameter and the value on each side. Traces that encode the same calls \
                  differently are expanded rank by rank (up to 4096 ranks) and count as \
                  identical when every rank's calls are. --timing adds the per-event \
                  difference in mean time (%) and the total and wall time. Exit status, as \
                  diff(1): 0 identical, 1 different, 2 trouble (an unreadable input, a bad \
                  argument). The headers of traces of different programs or builds (GNU build id) \
                  are named, since their call sites differ; --ignore-call-sites compares the \
                  calls alone.",
    after_help = "Example:\n  iotrex diff app.64.extrap.iotrex app.64.iotrex\n  iotrex diff --timing --json a.iotrex b.iotrex | jq .timing.total_diff_pct"
)]
pub struct DiffArgs {
    /// The first trace.
    pub a: PathBuf,
    /// The second trace.
    pub b: PathBuf,
    /// Also compare timing: per-event mean time difference (%) and total wall time.
    #[arg(long)]
    pub timing: bool,
    /// Compare calls without their call sites (two builds of one program, or traces taken
    /// with different --stack-depth).
    #[arg(long)]
    pub ignore_call_sites: bool,
    /// Show at most this many differences.
    #[arg(long, default_value_t = 10)]
    pub max: usize,
}

/// Runs `iotrex diff`; exits 1 (without an error message) when the traces differ.
pub fn run(a: &DiffArgs, json: bool) -> Result<()> {
    let (x, y) = (TraceFile::read(&a.a)?, TraceFile::read(&a.b)?);
    // Comparing summaries by their statistics (`--tolerance`) is not built yet: a summary
    // compared as if exact would report differences (or agreement) that mean nothing.
    for (t, p) in [(&x, &a.a), (&y, &a.b)] {
        rsd::approx::require_exact(&t.trace, &p.display().to_string(), "diff")?;
    }
    let opts = DiffOptions {
        timing: a.timing,
        max_shown: a.max,
        ignore_call_sites: a.ignore_call_sites,
        ..DiffOptions::default()
    };
    let r = diff(&x, &y, &opts);
    if json {
        crate::output::print_json(&r)?;
    } else {
        crate::output::print_text(&render(
            &r,
            &a.a.display().to_string(),
            &a.b.display().to_string(),
        ))?;
    }
    if r.identical {
        Ok(())
    } else {
        Err(crate::exit::ChildExit(1).into())
    }
}
