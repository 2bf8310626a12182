//! The `iotrex` command-line tool.
//!
//! It only dispatches: parse the arguments, call a library (`rsd` for now), print, and map the
//! error to an exit status. Rendering lives in `rsd::show` so other front ends get the same text.
//!
//! Exit status: 0 on success, 1 when an input cannot be read or is not a valid trace, 2 for bad
//! arguments (including a rank that is not in the trace).

mod cmd_codes;
mod cmd_diff;
mod cmd_extrap;
mod cmd_replay;
mod cmd_report;
mod cmd_trace;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use rsd::show::{self, CallView, ShowJson, StatsView};
use rsd::{FORMAT_VERSION, Header, RsdError, TraceFile};
use serde::Serialize;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::LazyLock;

/// `--version` names the trace format too, since that decides which files this build reads.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (trace format version {FORMAT_VERSION})",
        env!("CARGO_PKG_VERSION")
    )
});

const TOP_HELP: &str = "\
Examples:
  iotrex synth --ranks 4 --iters 10 -o demo.iotrex
  iotrex show demo.iotrex
  iotrex stats --json demo.iotrex
  iotrex expand demo.iotrex --rank 2

Exit status: 0 success, 1 unreadable or invalid input, 2 bad arguments.";

#[derive(Debug, Parser)]
#[command(
    name = "iotrex",
    version = VERSION.as_str(),
    about = "HPC I/O tracing and extrapolation: inspect compressed .iotrex traces",
    long_about = "iotrex reads compressed traces of the I/O and MPI calls of a parallel run \
                  (.iotrex files, one per run, nearly constant in size whatever the rank or loop \
                  count) and shows, summarises or expands them.",
    after_help = TOP_HELP
)]
struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Print a trace as indented text, one line per event.
    #[command(
        long_about = "Print the header, then the compressed trace as indented text, one line per \
                      event: loops as `loop x100 { ... }`, rank sets as `ranks 0-63`, parameters as \
                      functions of `rank` and the loop indices i (outermost), j, k..., paths as a \
                      template and its fields, and timing as mean [min max]. \
                      With --json, print the header and the trace exactly as stored.",
        after_help = "Example:\n  iotrex show app.64.iotrex\n  iotrex show --json app.64.iotrex | jq .header"
    )]
    Show(FileArg),
    /// Print call counts and bytes per layer and op, per-rank totals and files touched.
    #[command(
        long_about = "Print calls and file bytes per layer and per operation, the min/mean/max \
                      calls and bytes per rank (with the ranks of the extremes), the files touched, \
                      and the trace file's size and node count. Counts and bytes come from \
                      expanding every rank, so they are exact.",
        after_help = "Example:\n  iotrex stats app.64.iotrex\n  iotrex stats --json app.64.iotrex | jq .rank_bytes"
    )]
    Stats(FileArg),
    /// Print the flat call list of one rank.
    #[command(
        long_about = "Expand the compressed trace for one rank and print its calls in order, one \
                      per line: the call, its path and its named parameters, with POSIX calls made \
                      inside an MPI-IO call indented below it. Timing is not part of the output.",
        after_help = "Example:\n  iotrex expand app.64.iotrex --rank 0 | head\n  iotrex expand --json app.64.iotrex --rank 63 | jq '.calls | length'"
    )]
    Expand(ExpandArgs),
    /// Write the trace of a synthetic SPMD program (for demos and tests).
    #[command(
        long_about = "Write the merged trace of rsd's synthetic SPMD program: MPI_Init; a file per \
                      process written with `--iters` pwrites of 8 KiB; a shared file written \
                      collectively in 3 iterations of 1 MiB per rank, aggregated by rank 0; a \
                      barrier; a log written by rank 0 with stdio; MPI_Finalize.",
        after_help = "Example:\n  iotrex synth --ranks 64 --iters 100 -o spmd.iotrex"
    )]
    Synth(SynthArgs),
    /// Run a command with the tracer preloaded into its ranks and report the trace.
    #[command(
        long_about = "Run an unmodified program, or an MPI launcher line, with libiotrex_tracer.so \
                      preloaded into the ranks only: `-x` for Open MPI's mpirun, `-genv` for \
                      MPICH's, the environment for a plain program. Rank 0 writes one .iotrex file \
                      at MPI_Finalize (a plain program at exit); iotrex then prints where it went, \
                      its size and rank count. The exit status is the command's. With --env, print \
                      the variables to export instead, for job scripts that launch ranks themselves.",
        after_help = "Examples:\n  iotrex trace -o app.8.iotrex -- mpirun -np 8 ./app --size 1M\n  iotrex trace -o cp.iotrex -- cp big.dat /tmp/copy\n  iotrex trace --env -o app.iotrex >> job.sh"
    )]
    Trace(cmd_trace::TraceArgs),
    /// Export a trace to another tool's format.
    #[command(subcommand)]
    Export(cmd_codes::ExportCmd),
    /// Read a CODES export back as CODES does and print its operation counts.
    #[command(
        long_about = "Read a CODES workload export (recorder or iolang) with the same semantics as \
                      CODES' loaders (implicit barriers, the 10 us delay threshold, the 2048 \
                      operation cap) and print the counts `codes-workload-dump -s` prints: \
                      NUM_OPENS, NUM_CLOSES, NUM_BARRIERS, TOTAL_DELAY, NUM_READS, READ_SIZE, \
                      NUM_WRITES, WRITE_SIZE.",
        after_help = "Example:\n  iotrex codes-stats codes/\n  iotrex codes-stats --format iolang --json codes/"
    )]
    CodesStats(cmd_codes::CodesStatsArgs),
    /// Write one self-contained HTML page with plots about traces and an extrapolation.
    #[command(
        long_about = "Write one self-contained HTML file (inline SVG plots and CSS, no scripts, \
                      nothing loaded from the network). Per trace: calls and bytes per layer and \
                      op, per-rank I/O volume and time, the files touched by name pattern, the \
                      I/O stack (time in the MPI-IO layer against the POSIX calls nested in it, \
                      aggregator ranks per collective call) and a timeline of a few ranks. With \
                      --extrap, each quantity's values at the input scales with the chosen model \
                      drawn through them to the target, and a table of every quantity and its \
                      model. Plots with no data are left out with a note.",
        after_help = "Example:\n  iotrex report app.{4,8,12,16}.iotrex --extrap app.1024.iotrex -o report.html\n  iotrex report app.64.iotrex -o app.html"
    )]
    Report(cmd_report::ReportArgs),
    /// Replay a trace with real I/O, every rank a thread of this process.
    #[command(
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
                      traced time. Under MPI, run `mpirun -np N iotrex-replay TRACE --root DIR`.",
        after_help = "Example:\n  iotrex replay app.64.iotrex --threads --root /tmp/replay --comm real\n  mpirun -np 8 iotrex-replay app.8.iotrex --root /scratch/replay"
    )]
    Replay(cmd_replay::ReplayArgs),
    /// Extrapolate traces at three or more rank counts to another rank count.
    #[command(
        long_about = "Align traces of the same program at three or more rank counts and write the \
                      trace at --ranks. Every rank set, parameter and loop count is fitted exactly \
                      (zero residual, rational arithmetic) as a function of the rank count n: \
                      constant, a*n+b, k/n, k/n+c, floor/ceil(K/n), largest power of two <= n and \
                      its remainder, log2 n, and per rank ((rank+a) % n)*b, rank/k, rank%k, plus \
                      any --plugin models. When the structure differs between scales, a value fits \
                      no model, or two models disagree at the target, nothing is written and the \
                      error names the event, parameter, values and models tried. Timing is fitted \
                      by least squares; --explain prints every varying quantity's model.",
        after_help = "Examples:\n  iotrex extrap app.4.iotrex app.8.iotrex app.12.iotrex app.16.iotrex --ranks 1024 -o app.1024.iotrex\n  iotrex extrap app.{4,8,12,16}.iotrex --ranks 64 -o app.64.iotrex --explain --plugin libmymodel.so"
    )]
    Extrap(cmd_extrap::ExtrapArgs),
    /// Compare two traces: structure and every parameter (timing with --timing).
    #[command(
        long_about = "Compare the structure and every recorded parameter of two traces, ignoring \
                      timing, and print the first differences: the event, its ranks, the \
                      parameter and the value on each side. Traces that encode the same calls \
                      differently are expanded rank by rank (up to 4096 ranks) and count as \
                      identical when every rank's calls are. --timing adds the per-event \
                      difference in mean time (%) and the total and wall time. Exit status: 0 \
                      identical, 1 different (or unreadable input).",
        after_help = "Example:\n  iotrex diff app.64.extrap.iotrex app.64.iotrex\n  iotrex diff --timing --json a.iotrex b.iotrex | jq .timing.total_diff_pct"
    )]
    Diff(cmd_diff::DiffArgs),
}

#[derive(Debug, Args)]
struct FileArg {
    /// The trace file (.iotrex).
    file: PathBuf,
}

#[derive(Debug, Args)]
struct ExpandArgs {
    /// The trace file (.iotrex).
    file: PathBuf,
    /// The rank whose calls to print.
    #[arg(long, short)]
    rank: u32,
}

#[derive(Debug, Args)]
struct SynthArgs {
    /// Number of ranks.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    ranks: u32,
    /// Iterations of the file-per-process write loop.
    #[arg(long)]
    iters: u64,
    /// Where to write the trace.
    #[arg(long, short)]
    output: PathBuf,
}

/// The traced command failed: exit with its status, without an error message of our own.
#[derive(Debug)]
struct ChildExit(i32);

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the traced command exited with status {}", self.0)
    }
}

impl std::error::Error for ChildExit {}

/// A bad argument: exit status 2, like clap's own usage errors.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn read(path: &Path) -> Result<TraceFile> {
    Ok(TraceFile::read(path)?)
}

fn print_json(value: &impl Serialize) -> Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

fn print_text(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn cmd_show(a: &FileArg, json: bool) -> Result<()> {
    let tf = read(&a.file)?;
    if json {
        print_json(&ShowJson::new(&tf))
    } else {
        print_text(&show::render_trace_file(&tf))
    }
}

fn cmd_stats(a: &FileArg, json: bool) -> Result<()> {
    let tf = read(&a.file)?;
    let size = std::fs::metadata(&a.file)
        .with_context(|| format!("{}: cannot read file size", a.file.display()))?
        .len();
    let view = StatsView::new(&rsd::stats::summarize(&tf.trace), size);
    if json {
        print_json(&view)
    } else {
        print_text(&show::render_stats_view(&view))
    }
}

fn cmd_expand(a: &ExpandArgs, json: bool) -> Result<()> {
    let tf = read(&a.file)?;
    let ranks = tf.trace.ranks();
    if !ranks.contains(a.rank) {
        return Err(Usage(format!(
            "rank {} is not in the trace (--rank {}; {} has ranks {ranks})",
            a.rank,
            a.rank,
            a.file.display()
        ))
        .into());
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if json {
        // Streamed: a rank can have far more calls than fit comfortably in memory as JSON.
        write!(out, "{{\"rank\":{},\"calls\":[", a.rank)?;
        let mut first = true;
        let mut err = None;
        tf.trace.expand_with(a.rank, &mut |e| {
            let sep = if first { "\n" } else { ",\n" };
            first = false;
            let r = out.write_all(sep.as_bytes()).and_then(|()| {
                serde_json::to_writer(&mut out, &CallView::new(e)).map_err(io::Error::from)
            });
            match r {
                Ok(()) => true,
                Err(x) => {
                    err = Some(x);
                    false
                }
            }
        });
        if let Some(e) = err {
            return Err(e.into());
        }
        writeln!(out, "\n]}}")?;
    } else {
        show::write_expand(&tf.trace, a.rank, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct SynthReport<'a> {
    file: &'a Path,
    bytes: u64,
    ranks: u32,
    iters: u64,
}

fn cmd_synth(a: &SynthArgs, json: bool) -> Result<()> {
    let mut header = Header::new(a.ranks);
    // The producing command, so a fixture says where it came from; no application was traced.
    header.command = vec![
        "iotrex".into(),
        "synth".into(),
        "--ranks".into(),
        a.ranks.to_string(),
        "--iters".into(),
        a.iters.to_string(),
    ];
    header.clock = "synthetic".into();
    header
        .notes
        .push("synthetic SPMD program (rsd::synth::spmd); timing is pseudo-random".into());
    let tf = TraceFile {
        header,
        trace: rsd::synth::spmd(a.ranks, a.iters),
    };
    let bytes = tf.write(&a.output)?;
    let report = SynthReport {
        file: &a.output,
        bytes,
        ranks: a.ranks,
        iters: a.iters,
    };
    if json {
        print_json(&report)
    } else {
        print_text(&format!(
            "wrote {}: {bytes} bytes, {} ranks, {} iterations\n",
            a.output.display(),
            a.ranks,
            a.iters
        ))
    }
}

fn run(cli: &Cli) -> Result<()> {
    match &cli.cmd {
        Cmd::Show(a) => cmd_show(a, cli.json),
        Cmd::Stats(a) => cmd_stats(a, cli.json),
        Cmd::Expand(a) => cmd_expand(a, cli.json),
        Cmd::Synth(a) => cmd_synth(a, cli.json),
        Cmd::Export(cmd_codes::ExportCmd::Codes(a)) => cmd_codes::export(a, cli.json),
        Cmd::Export(cmd_codes::ExportCmd::Chrome(a)) => cmd_codes::export_chrome(a, cli.json),
        Cmd::CodesStats(a) => cmd_codes::stats(a, cli.json),
        Cmd::Report(a) => cmd_report::run(a, cli.json),
        Cmd::Replay(a) => cmd_replay::run(a, cli.json),
        Cmd::Extrap(a) => cmd_extrap::run(a, cli.json),
        Cmd::Diff(a) => cmd_diff::run(a, cli.json),
        Cmd::Trace(a) => {
            let code = cmd_trace::run(a)?;
            if code != 0 {
                return Err(ChildExit(code).into());
            }
            Ok(())
        }
    }
}

/// A suggestion for what to do about an error, where there is a useful one.
fn hint(e: &anyhow::Error) -> Option<String> {
    if let Some(h) = cmd_extrap::hint(e) {
        return Some(h);
    }
    if let Some(h) = cmd_replay::hint(e) {
        return Some(h);
    }
    match e.downcast_ref::<RsdError>()? {
        RsdError::BadMagic { .. } => {
            Some("iotrex reads .iotrex files written by the iotrex tracer or `iotrex synth`".into())
        }
        RsdError::Truncated { .. } => Some(
            "the file was cut short: an incomplete copy, or the run died while writing it".into(),
        ),
        RsdError::Corrupt { .. } => {
            Some("the file was damaged after it was written; re-copy or re-trace it".into())
        }
        RsdError::UnknownOperation { .. } => Some(
            "the file was written by a newer iotrex; read it with that version (or newer)".into(),
        ),
        RsdError::Io { error, .. } if error.kind() == io::ErrorKind::NotFound => {
            Some("check the path".into())
        }
        _ => None,
    }
}

/// The error and its causes, each cause left out when the message before already says it (rsd's
/// I/O errors print their OS error and also return it as their source).
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Stack of the thread that does the work. Decoding recurses once per nesting level of the file
/// before rsd's own checks can refuse it; unoptimised builds need several MiB for hostile input
/// that release builds refuse within the default 2 MiB. Only touched pages cost memory.
const WORK_STACK: usize = 64 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = std::thread::Builder::new()
        .name("iotrex".into())
        .stack_size(WORK_STACK)
        .spawn(move || run(&cli))
        .map_err(anyhow::Error::from)
        .and_then(|worker| match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `iotrex expand big.iotrex --rank 0 | head` is normal use, not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<ChildExit>().is_some() => {
            let code = e.downcast_ref::<ChildExit>().map_or(1, |c| c.0);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("error: {}", message(&e));
            if let Some(h) = hint(&e) {
                eprintln!("hint: {h}");
            }
            if e.downcast_ref::<Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
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
