//! The `iotrex` command-line tool.
//!
//! It only dispatches: parse the arguments, hand them to the command's `cmd_*` module (which
//! holds its arguments, help texts and handler, and calls a library), and map the error to an
//! exit status ([`exit`]). Rendering lives in the libraries (`rsd_view::show` and others) so other
//! front ends get the same text.
//!
//! Exit status: 0 on success, 1 when an input cannot be read or is not a valid trace, 2 for bad
//! arguments (including a rank that is not in the trace); `diff` exits 0 identical, 1
//! different, 2 on any trouble, like diff(1).

mod cmd_codes;
mod cmd_diff;
mod cmd_export;
mod cmd_extrap;
mod cmd_merge;
mod cmd_replay;
mod cmd_report;
mod cmd_sensitivity;
mod cmd_show;
mod cmd_synth;
mod cmd_trace;
mod exit;
mod oracle;
mod output;

use anyhow::Result;
use clap::{Parser, Subcommand};
use exit::ChildExit;
use std::process::ExitCode;
use std::sync::LazyLock;

/// `--version` names the trace format too, since that decides which files this build reads
/// (and which version it writes: a version-1 file read and rewritten stays version 1).
static VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{}, {}",
        env!("CARGO_PKG_VERSION"),
        rsd::format::formats_text()
    )
});

const TOP_HELP: &str = "\
Examples:
  iotrex trace -o app.8.iotrex -- mpirun -np 8 ./app
  iotrex extrap app.{4,8,12,16}.iotrex --ranks 1024 -o app.1024.iotrex --explain
  iotrex diff app.64.extrap.iotrex app.64.iotrex
  iotrex show app.8.iotrex
  iotrex synth --ranks 4 --iters 10 -o demo.iotrex

Exit status: 0 success, 1 unreadable or invalid input, 2 bad arguments (diff: 0 identical,
1 different, 2 trouble). With --json, an error is also printed on stdout as
{\"error\": ..., \"hint\": ...}, an extrap refusal's fields added as \"refusal\".";

#[derive(Debug, Parser)]
#[command(
    name = "iotrex",
    version = VERSION.as_str(),
    about = "HPC I/O tracing and extrapolation: trace MPI programs, extrapolate, diff, replay and export their traces",
    long_about = "iotrex traces the I/O and MPI calls of an unmodified parallel program (`trace` \
                  preloads its tracer into the ranks) into a compressed .iotrex file, one per \
                  run and nearly constant in size whatever the rank or loop count; extrapolates \
                  traces taken at three or more rank counts to a rank count nobody ran \
                  (`extrap`, exact or refused with the reason); compares two traces (`diff`); \
                  replays a trace's I/O (`replay`); exports it to the CODES simulator, \
                  Chrome/Perfetto, Parquet tables (DuckDB, pandas) or an OTF2 archive \
                  (Vampir, Score-P's tools) (`export`); writes an HTML report (`report`); \
                  shows, summarises or expands a trace (`show`, `stats`, `expand`); and merges \
                  the per-rank files a killed job left (`merge`).",
    after_help = TOP_HELP
)]
struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The subcommands, in the order `iotrex --help` lists them; each one's help is on its
/// arguments' type, in its `cmd_*` module.
#[derive(Debug, Subcommand)]
enum Cmd {
    Show(cmd_show::ShowArgs),
    Stats(cmd_show::StatsArgs),
    Expand(cmd_show::ExpandArgs),
    Synth(cmd_synth::SynthArgs),
    Trace(cmd_trace::TraceArgs),
    Sensitivity(cmd_sensitivity::SensitivityArgs),
    Export(cmd_export::ExportArgs),
    CodesStats(cmd_codes::CodesStatsArgs),
    Report(cmd_report::ReportArgs),
    Replay(cmd_replay::ReplayCmd),
    Extrap(cmd_extrap::ExtrapArgs),
    Diff(cmd_diff::DiffArgs),
    Merge(cmd_merge::MergeArgs),
}

fn run(cli: &Cli) -> Result<()> {
    let json = cli.json;
    match &cli.cmd {
        Cmd::Show(a) => cmd_show::show(a, json),
        Cmd::Stats(a) => cmd_show::stats(a, json),
        Cmd::Expand(a) => cmd_show::expand(a, json),
        Cmd::Synth(a) => cmd_synth::run(a, json),
        Cmd::Export(a) => cmd_export::run(a, json),
        Cmd::CodesStats(a) => cmd_codes::stats(a, json),
        Cmd::Report(a) => cmd_report::run(a, json),
        Cmd::Replay(a) => cmd_replay::run(a, json),
        Cmd::Extrap(a) => cmd_extrap::run(a, json),
        Cmd::Diff(a) => cmd_diff::run(a, json),
        Cmd::Merge(a) => cmd_merge::run(a, json),
        Cmd::Sensitivity(a) => cmd_sensitivity::run(a, json),
        Cmd::Trace(a) => match cmd_trace::run(a)? {
            0 => Ok(()),
            code => Err(ChildExit(code).into()),
        },
    }
}

/// Stack of the thread that does the work. Decoding recurses once per nesting level of the file
/// before rsd's own checks can refuse it; unoptimised builds need several MiB for hostile input
/// that release builds refuse within the default 2 MiB. Only touched pages cost memory.
const WORK_STACK: usize = 64 << 20;

/// Parses the command line; a usage error exits 2 as clap does, and with `--json` anywhere on
/// the line it is also printed on stdout as `{"error": ..., "hint": ...}` like every other error.
fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let shown = matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            );
            if !shown && std::env::args_os().any(|a| a == "--json") {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                exit::print_usage_json(first.strip_prefix("error: ").unwrap_or(first));
            }
            e.exit()
        }
    }
}

fn main() -> ExitCode {
    let cli = parse();
    let how = exit::Report {
        json: cli.json,
        // diff(1)'s convention: 1 means "different", so trouble is 2.
        trouble: if matches!(cli.cmd, Cmd::Diff(_)) {
            2
        } else {
            1
        },
    };
    let result = std::thread::Builder::new()
        .name("iotrex".into())
        .stack_size(WORK_STACK)
        .spawn(move || run(&cli))
        .map_err(anyhow::Error::from)
        .and_then(|worker| match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        });
    exit::status(result, how)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
