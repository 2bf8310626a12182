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
                  calls alone. Approximate parts (parameters held as statistical summaries, \
                  IOTREX_APPROX or an extrapolation's) are compared by their statistics: the \
                  means and the totals (mean x count) must be within --tolerance (10% by \
                  default); exact parts must still be identical. The output says which parts \
                  were exact and which within tolerance, and by how much.",
    after_help = "Example:\n  iotrex diff app.64.extrap.iotrex app.64.iotrex\n  iotrex diff --timing --json a.iotrex b.iotrex | jq .timing.total_diff_pct\n  iotrex diff --tolerance 5% app.64.extrap.iotrex app.64.iotrex"
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
    /// How far apart the means, and the totals, of approximate parts (statistical summaries)
    /// may be and still agree: a percentage (`10%` or `10`). Used when either trace holds
    /// summaries, 10% unless given; exact parts must be identical.
    #[arg(long, value_name = "PCT", value_parser = parse_tolerance)]
    pub tolerance: Option<f64>,
}

/// `10%` or `10` as the fraction 0.1.
fn parse_tolerance(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage (e.g. 10%)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}`: a tolerance is a percentage of 0 or more"));
    }
    Ok(v / 100.0)
}

/// Runs `iotrex diff`; exits 1 (without an error message) when the traces differ.
pub fn run(a: &DiffArgs, json: bool) -> Result<()> {
    let (x, y) = (TraceFile::read(&a.a)?, TraceFile::read(&a.b)?);
    let opts = DiffOptions {
        timing: a.timing,
        max_shown: a.max,
        ignore_call_sites: a.ignore_call_sites,
        tolerance: a.tolerance,
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
