//! `iotrex replay`: the CLI side of the `replay` crate, for replays with threads in one
//! process. Under MPI, ranks run `iotrex-replay` (the replay crate's binary) instead.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Arguments of `iotrex replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Directory every traced path is re-rooted under (must exist and be writable).
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Run every rank in this process, without MPI (required here; under MPI use `mpirun -np N
    /// iotrex-replay`): one thread per rank, or past --max-threads ranks as coroutines sharing
    /// that many threads.
    #[arg(long)]
    pub threads: bool,
    /// At most N OS threads run ranks. Default: one thread per rank up to a quarter of
    /// /proc/sys/kernel/threads-max (256 to 8192), beyond that a pool of 4 threads per core
    /// (8 to 256). In a pool, a rank waiting in a barrier, receive or delay lets another run,
    /// but a blocking I/O call or --compute work holds its thread: at most that many I/O
    /// calls are in flight and timing is coarser than one thread per rank.
    #[arg(long, value_name = "N", value_parser = parse_max_threads)]
    pub max_threads: Option<u32>,
    /// Non-I/O MPI calls: delay (sleep the recorded mean), real (thread barriers and
    /// channels; collectives, vector ones included, synchronise but move no data), or skip.
    #[arg(long, default_value = "delay", value_parser = parse_comm)]
    pub comm: replay::CommMode,
    /// Compute gaps: mean (sleep the recorded mean), sample (a draw from the recorded
    /// histogram), work (compute, burning CPU time, for the gap's shortest recorded instance:
    /// ranks sharing cores then compete for them as the traced ones did), or none.
    #[arg(long, default_value = "mean", value_parser = parse_compute)]
    pub compute: replay::ComputeMode,
    /// Collective MPI-IO data calls: library (issue, after a barrier, the POSIX calls the MPI
    /// library made for them when traced: collective buffering's aggregator writes; used when
    /// the trace recorded such calls) or ranks (each rank's own piece at its view's offsets).
    #[arg(long, default_value = "library", value_parser = parse_collective_io)]
    pub collective_io: replay::CollectiveIo,
    /// Multiply every delay by F.
    #[arg(long, value_name = "F", default_value = "1", value_parser = parse_scale)]
    pub time_scale: f64,
    /// End the replay when a rank stays in one call longer than SECS plus ten times that call's
    /// longest traced duration (a receive whose message never comes, a deadlock): the report
    /// says what every rank is in, and the exit status is non-zero.
    #[arg(long, value_name = "SECS", default_value = "60", value_parser = parse_stall_timeout)]
    pub stall_timeout: std::time::Duration,
    /// Issue application calls (app) or only the POSIX view (posix).
    #[arg(long, default_value = "app", value_parser = parse_layer)]
    pub layer: replay::LayerView,
    /// First create the files the trace reads before writing, at the sizes its reads reach.
    #[arg(long)]
    pub prep: bool,
    /// Replay a trace flagged incomplete.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long = "json-out", value_name = "FILE")]
    pub json_out: Option<PathBuf>,
}

fn parse_comm(s: &str) -> Result<replay::CommMode, String> {
    replay::parse_comm(s).map_err(|e| e.to_string())
}

fn parse_max_threads(s: &str) -> Result<u32, String> {
    replay::parse_max_threads(s).map_err(|e| e.to_string())
}

fn parse_collective_io(s: &str) -> Result<replay::CollectiveIo, String> {
    replay::parse_collective_io(s).map_err(|e| e.to_string())
}

fn parse_compute(s: &str) -> Result<replay::ComputeMode, String> {
    replay::parse_compute(s).map_err(|e| e.to_string())
}

fn parse_layer(s: &str) -> Result<replay::LayerView, String> {
    replay::parse_layer(s).map_err(|e| e.to_string())
}

fn parse_stall_timeout(s: &str) -> Result<std::time::Duration, String> {
    replay::parse_stall_timeout(s).map_err(|e| e.to_string())
}

fn parse_scale(s: &str) -> Result<f64, String> {
    replay::parse_scale(s).map_err(|e| e.to_string())
}

/// Runs `iotrex replay`. Returns a hint for the error, if there is one, with the error.
pub fn run(a: &ReplayArgs, json: bool) -> Result<()> {
    if !a.threads {
        anyhow::bail!(
            "iotrex replay runs ranks as threads only (add --threads); under MPI run `mpirun -np N iotrex-replay {} --root {}`",
            a.trace.display(),
            a.root.display()
        );
    }
    let opts = replay::Options {
        comm: a.comm,
        compute: a.compute,
        time_scale: a.time_scale,
        layer: a.layer,
        collective_io: a.collective_io,
        stall_timeout: a.stall_timeout,
    };
    let max = a.max_threads;
    let report =
        replay::run_threads_file(&a.trace, &a.root, &opts, a.prep, a.allow_incomplete, max)?;
    if let Some(p) = &a.json_out {
        let s = serde_json::to_string_pretty(&report)?;
        std::fs::write(p, s + "\n").with_context(|| format!("--json-out {}", p.display()))?;
    }
    if json {
        crate::print_json(&report)
    } else {
        let mut text = report.render();
        if let Some(a) = replay::advice(&opts, report.ranks as usize) {
            text += &a;
            text.push('\n');
        }
        crate::print_text(&text)
    }
}

/// A suggestion for a replay error.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    replay::hint(e.downcast_ref::<replay::ReplayError>()?)
}
