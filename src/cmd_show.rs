//! `iotrex show`, `iotrex stats` and `iotrex expand`: a trace printed as stored, summarised,
//! or expanded for one rank. The text comes from `rsd_view::show`, so other front ends get the same.

use crate::cmd_merge::read_or_rank_files;
use crate::exit::Usage;
use crate::output::{print_json, print_text};
use anyhow::{Context, Result};
use clap::Args;
use rsd::TraceFile;
use rsd_view::show::{self, CallView, ShowJson, StatsView};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Arguments of `iotrex show`.
#[derive(Debug, Args)]
#[command(
    about = "Print a trace as indented text, one line per event",
    long_about = "Print the header, then the compressed trace as indented text, one line per \
                  event: loops as `loop x100 { ... }`, rank sets as `ranks 0-63`, parameters as \
                  functions of `rank` and the loop indices i (outermost), j, k..., paths as a \
                  template and its fields, and timing as mean [min max]. \
                  With --json, print the header and the trace exactly as stored.",
    after_help = "Example:\n  iotrex show app.64.iotrex\n  iotrex show --json app.64.iotrex | jq .header"
)]
pub struct ShowArgs {
    /// The trace file (.iotrex).
    file: PathBuf,
}

/// Arguments of `iotrex stats`.
#[derive(Debug, Args)]
#[command(
    about = "Print call counts and bytes per layer and op, per-rank totals and files touched",
    long_about = "Print calls and file bytes per layer and per operation, the min/mean/max \
                  calls and bytes per rank (with the ranks of the extremes), the files touched, \
                  and the trace file's size and node count; with --stack, inclusive and \
                  exclusive time per layer and op and per call site over the layers below. \
                  Counts and bytes come from \
                  expanding every rank, so they are exact.",
    after_help = "Example:\n  iotrex stats app.64.iotrex\n  iotrex stats --json app.64.iotrex | jq .rank_bytes\n  \
                  iotrex stats --stack app.64.iotrex\n  \
                  iotrex stats --stack --json app.64.iotrex | jq '.sites[0]'\n\n\
                  With --stack, the columns are:\n  \
                  calls       calls over all ranks and iterations (exact)\n  \
                  nested      of those, calls made inside another traced call: by a library \
                  (the POSIX calls of an MPI-IO call), not by the application\n  \
                  bytes       file bytes moved (exact)\n  \
                  inclusive   time inside the calls, nested calls included\n  \
                  exclusive   inclusive time minus the inclusive time of the calls nested \
                  directly inside them: the time spent in that layer itself. The exclusive \
                  times of all layers add up to the time of the application-level calls\n  \
                  excl        a layer's exclusive time as a share of that total\n  \
                  throughput  bytes per second of inclusive time: the rate seen inside the \
                  calls (per rank, since times are summed over ranks)\n\
                  Times are summed over all ranks and calls: each node's mean duration times \
                  its exact call count, which for a recorded trace is the sum of the recorded \
                  durations. In an extrapolated trace they are the timing models' predictions, \
                  and the output says so.\n\
                  Then each application-level call site with calls nested in it, largest first: \
                  its time as the nested calls' inclusive times (grouped by op, with the ranks \
                  that made them when not all did: a collective's aggregators) plus the time in \
                  its own layer, as an equation, a tree, and split by layer."
)]
pub struct StatsArgs {
    /// The trace file (.iotrex).
    file: PathBuf,
    /// Per layer and per op: calls, bytes, inclusive and exclusive time and throughput, and
    /// each application-level call site's time broken down over the layers below it.
    #[arg(long)]
    stack: bool,
}

/// Arguments of `iotrex expand`.
#[derive(Debug, Args)]
#[command(
    about = "Print the flat call list of one rank",
    long_about = "Expand the compressed trace for one rank and print its calls in order, one \
                  per line: the call, its path and its named parameters, with POSIX calls made \
                  inside an MPI-IO call indented below it. Timing is not part of the output.",
    after_help = "Example:\n  iotrex expand app.64.iotrex --rank 0 | head\n  iotrex expand --json app.64.iotrex --rank 63 | jq '.calls | length'"
)]
pub struct ExpandArgs {
    /// The trace file (.iotrex).
    file: PathBuf,
    /// The rank whose calls to print.
    #[arg(long, short)]
    rank: u32,
}

/// Runs `iotrex show`. When the trace was not written (a run whose merge did not complete)
/// but its ranks left their own files (`<stem>.rank<r>.iotrex`), those of the latest run are
/// shown merged, the header says which ranks are missing, and files of another run there are
/// named as ignored.
pub fn show(a: &ShowArgs, json: bool) -> Result<()> {
    let (tf, from) = read_or_rank_files(&a.file)?;
    if json {
        return print_json(&ShowJson::new(&tf));
    }
    let mut text = String::new();
    if let Some(files) = from {
        text.push_str(&format!(
            "{} was not written; its ranks' own files are shown merged: {}\n",
            a.file.display(),
            files.used.join(", ")
        ));
        if !files.ignored.is_empty() {
            text.push_str(&format!(
                "ignored {} per-rank file{} of another run: {}\n",
                files.ignored.len(),
                if files.ignored.len() == 1 { "" } else { "s" },
                files.ignored.join(", ")
            ));
        }
    }
    text.push_str(&show::render_trace_file(&tf));
    print_text(&text)
}

/// Runs `iotrex stats`.
pub fn stats(a: &StatsArgs, json: bool) -> Result<()> {
    let tf = TraceFile::read(&a.file)?;
    if a.stack {
        let view = rsd_view::stack::analyze(&tf.trace);
        return if json {
            print_json(&view)
        } else {
            print_text(&rsd_view::stack::render(
                &view,
                &a.file.display().to_string(),
            ))
        };
    }
    let size = std::fs::metadata(&a.file)
        .with_context(|| format!("{}: cannot read file size", a.file.display()))?
        .len();
    let view = StatsView::new(&rsd_view::stats::summarize(&tf.trace), size)
        .with_layout(&tf.header)
        .with_processes(&tf);
    if json {
        print_json(&view)
    } else {
        print_text(&show::render_stats_view(&view))
    }
}

/// Runs `iotrex expand`; a rank that is not in the trace is a usage error.
pub fn expand(a: &ExpandArgs, json: bool) -> Result<()> {
    let tf = TraceFile::read(&a.file)?;
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
