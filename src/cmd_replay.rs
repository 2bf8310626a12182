//! `iotrex replay`: the CLI side of the `replay` crate, for replays with threads in one
//! process. Under MPI, ranks run `iotrex-replay` (the replay crate's binary) instead.

use anyhow::Result;
use clap::Args;
use replay::cli::ReplayArgs;

/// `iotrex replay`: the replay options (`replay::cli::ReplayArgs`, the one definition
/// `iotrex-replay` uses too) under this subcommand's help.
#[derive(Debug, Args)]
#[command(
    about = "Replay a trace with real I/O, every rank a thread of this process",
    long_about = "Replay a trace with real I/O on this node, every rank as a thread and no \
                  MPI (the MPIOR way): POSIX and stdio calls go through the OS with the \
                  recorded sizes, offsets, flags and whence; MPI-IO calls become the same \
                  positioned I/O on the shared file; barriers and collectives become thread \
                  barriers and point-to-point calls channels (--comm real); past \
                  --max-threads ranks, the ranks run as coroutines on that many threads. \
                  Every path is re-rooted under --root and nothing is written outside it. \
                  Compute gaps and \
                  delays are waited out against absolute deadlines. The report gives wall \
                  and per-rank time, time in I/O/compute/comm, op counts and bytes per layer \
                  and op (checked against the trace's), lateness percentiles and replay vs \
                  traced time, the trace's node layout (replayed on this one node), and the \
                  predicted run time of the application on this storage with an interval \
                  (--repeat K replays K times for it). Under MPI, run `mpirun -np N \
                  iotrex-replay TRACE --root DIR`.",
    after_help = "Example:\n  iotrex replay app.64.iotrex --root /tmp/replay --comm real\n  mpirun -np 8 iotrex-replay app.8.iotrex --root /scratch/replay\n\n\
                  The report's table of ops, per layer and op:\n  \
                  calls     calls the replay accounted for, over all ranks: issued plus credited \
                  (equal to the trace's, as `iotrex stats` counts them)\n  \
                  bytes     file bytes of those calls\n  \
                  credited  of those calls, how many were counted without being issued: the \
                  POSIX calls nested in an MPI-IO call, which the MPI-IO call the replay \
                  issues makes again itself (except the POSIX calls of a collective data call \
                  with threads, which are issued); with --layer posix, the MPI-IO calls, whose \
                  nested POSIX calls are issued instead"
)]
pub struct ReplayCmd {
    #[command(flatten)]
    pub args: ReplayArgs,
}

/// Runs `iotrex replay`. Returns a hint for the error, if there is one, with the error.
pub fn run(a: &ReplayCmd, json: bool) -> Result<()> {
    // Threads are this command's only mode, so `--threads` may be left out (it is accepted
    // for the scripts that pass it, and because `iotrex-replay` shares the definition).
    let a = &a.args;
    let report = a.run_threads()?;
    if json {
        crate::output::print_json(&report)
    } else {
        crate::output::print_text(&a.render(&report, report.ranks as usize))
    }
}

/// A suggestion for a replay error.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    replay::hint(e.downcast_ref::<replay::ReplayError>()?)
}
