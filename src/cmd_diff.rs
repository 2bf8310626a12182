//! `iotrex diff`: the CLI side of `extrap::diff`.

use anyhow::Result;
use clap::Args;
use extrap::diff::{DiffOptions, diff, render};
use rsd::TraceFile;
use std::path::PathBuf;

/// Arguments of `iotrex diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first trace.
    pub a: PathBuf,
    /// The second trace.
    pub b: PathBuf,
    /// Also compare timing: per-event mean time difference (%) and total wall time.
    #[arg(long)]
    pub timing: bool,
    /// Show at most this many differences.
    #[arg(long, default_value_t = 10)]
    pub max: usize,
}

/// Runs `iotrex diff`; exits 1 (without an error message) when the traces differ.
pub fn run(a: &DiffArgs, json: bool) -> Result<()> {
    let (x, y) = (TraceFile::read(&a.a)?, TraceFile::read(&a.b)?);
    let opts = DiffOptions {
        timing: a.timing,
        max_shown: a.max,
        ..DiffOptions::default()
    };
    let r = diff(&x, &y, &opts);
    if json {
        crate::print_json(&r)?;
    } else {
        crate::print_text(&render(
            &r,
            &a.a.display().to_string(),
            &a.b.display().to_string(),
        ))?;
    }
    if r.identical {
        Ok(())
    } else {
        Err(crate::ChildExit(1).into())
    }
}
