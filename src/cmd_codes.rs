//! `iotrex export codes|chrome` and `iotrex codes-stats`: the CLI side of `codes_bridge` and
//! `rsd::chrome`.

use anyhow::Result;
use clap::{Args, Subcommand};
use codes_bridge::{ExportOptions, Format};
use std::path::PathBuf;

/// Arguments of `iotrex export`: the target format.
#[derive(Debug, Args)]
#[command(about = "Export a trace to another tool's format")]
pub struct ExportArgs {
    #[command(subcommand)]
    pub cmd: ExportCmd,
}

/// `iotrex export ...` targets.
#[derive(Debug, Subcommand)]
pub enum ExportCmd {
    /// Write CODES workloads (recorder text or iolang) from a trace's POSIX view.
    #[command(
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
    Codes(ExportCodesArgs),
    /// Write Chrome/Perfetto trace JSON: one process per rank, one span per call.
    #[command(
        long_about = "Write a Chrome/Perfetto `traceEvents` JSON file with one process per rank \
                      and one complete span per call, with its arguments; nested POSIX calls \
                      appear inside their MPI-IO call. The trace stores timing as statistics, so \
                      the timeline is rebuilt from each call's mean compute gap and mean \
                      duration. Output is capped by --max-events and says so when it is.",
        after_help = "Example:\n  iotrex export chrome app.64.iotrex -o app.json --ranks 0-7\n  (then open app.json in ui.perfetto.dev)"
    )]
    Chrome(ExportChromeArgs),
}

/// Arguments of `iotrex export codes`.
#[derive(Debug, Args)]
pub struct ExportCodesArgs {
    /// The trace file (.iotrex).
    pub trace: PathBuf,
    /// Output directory (created if missing; must be empty unless --force).
    #[arg(long, short)]
    pub output: PathBuf,
    /// Workload format: recorder or iolang.
    #[arg(long, default_value = "recorder", value_parser = parse_format)]
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
}

/// Arguments of `iotrex codes-stats`.
#[derive(Debug, Args)]
#[command(
    about = "Read a CODES export back as CODES does and print its operation counts",
    long_about = "Read a CODES workload export (recorder or iolang) with the same semantics as \
                  CODES' loaders (implicit barriers, the 10 us delay threshold, the 2048 \
                  operation cap) and print the counts `codes-workload-dump -s` prints: \
                  NUM_OPENS, NUM_CLOSES, NUM_BARRIERS, TOTAL_DELAY, NUM_READS, READ_SIZE, \
                  NUM_WRITES, WRITE_SIZE.",
    after_help = "Example:\n  iotrex codes-stats codes/\n  iotrex codes-stats --format iolang --json codes/"
)]
pub struct CodesStatsArgs {
    /// The export directory (or, for iolang, its meta file).
    pub dir: PathBuf,
    /// Workload format: recorder or iolang.
    #[arg(long, default_value = "recorder", value_parser = parse_format)]
    pub format: Format,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse::<Format>().map_err(|e| e.to_string())
}

fn parse_size(s: &str) -> Result<u64, String> {
    codes_bridge::parse_size(s).map_err(|e| e.to_string())
}

/// Runs `iotrex export`.
pub fn run_export(a: &ExportArgs, json: bool) -> Result<()> {
    match &a.cmd {
        ExportCmd::Codes(a) => export(a, json),
        ExportCmd::Chrome(a) => export_chrome(a, json),
    }
}

/// Runs `iotrex export codes`.
pub fn export(a: &ExportCodesArgs, json: bool) -> Result<()> {
    let opts = ExportOptions {
        format: a.format,
        max_blocksize: a.max_blocksize,
        force: a.force,
        nranks_check: a.nranks_check,
    };
    let tf = rsd::TraceFile::read(&a.trace)?;
    // A bar on a terminal only: pipes and CI logs get the result line alone.
    let bar = (std::io::IsTerminal::is_terminal(&std::io::stderr()) && tf.header.nranks >= 256)
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
    let report = codes_bridge::export_with_progress(&tf, &a.output, &opts, &mut |done, _| {
        if let Some(b) = &bar {
            b.set_position(u64::from(done));
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = report?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "wrote {} ({}): {} ranks, {} files, {} bytes; {} operations per rank at most{}",
            a.output.display(),
            report.format,
            report.ranks,
            report.files,
            report.bytes,
            report.max_ops_per_rank,
            if report.split_extra > 0 {
                format!(
                    ", {} extra from --max-blocksize splitting",
                    report.split_extra
                )
            } else {
                String::new()
            }
        );
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}

/// Runs `iotrex codes-stats`.
pub fn stats(a: &CodesStatsArgs, json: bool) -> Result<()> {
    let s = codes_bridge::codes_stats(&a.dir, a.format)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        let text = s.to_string();
        print!("{text}");
        if !text.ends_with('\n') {
            println!();
        }
        for w in &s.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(())
}

/// Arguments of `iotrex export chrome`.
#[derive(Debug, Args)]
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

/// Runs `iotrex export chrome`.
pub fn export_chrome(a: &ExportChromeArgs, json: bool) -> Result<()> {
    use anyhow::Context;
    let tf = rsd::TraceFile::read(&a.trace)?;
    let file = std::fs::File::create(&a.output)
        .with_context(|| format!("cannot create {} (--output)", a.output.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let rep = rsd::chrome::write_chrome(&tf.trace, a.ranks.as_ref(), a.max_events, &mut w)
        .and_then(|r| std::io::Write::flush(&mut w).map(|()| r))
        .with_context(|| format!("cannot write {} (--output)", a.output.display()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        println!(
            "wrote {}: {} spans for {} ranks; open it in ui.perfetto.dev or chrome://tracing",
            a.output.display(),
            rep.spans,
            rep.ranks
        );
    }
    if rep.truncated {
        eprintln!(
            "warning: stopped at {} spans (--max-events); pass a larger --max-events or fewer --ranks for the rest",
            a.max_events
        );
    }
    Ok(())
}
