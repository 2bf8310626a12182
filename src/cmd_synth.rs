//! `iotrex synth`: writes the trace of rsd's synthetic SPMD program, for demos and tests.

use crate::output::{print_json, print_text};
use anyhow::Result;
use clap::Args;
use rsd::{Header, TraceFile};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex synth`.
#[derive(Debug, Args)]
#[command(
    about = "Write the trace of a synthetic SPMD program (for demos and tests)",
    long_about = "Write the merged trace of rsd's synthetic SPMD program: MPI_Init; a file per \
                  process written with `--iters` pwrites of 8 KiB; a shared file written \
                  collectively in 3 iterations of 1 MiB per rank, aggregated by rank 0; a \
                  barrier; a log written by rank 0 with stdio; MPI_Finalize.",
    after_help = "Example:\n  iotrex synth --ranks 64 --iters 100 -o spmd.iotrex"
)]
pub struct SynthArgs {
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

#[derive(Serialize)]
struct SynthReport<'a> {
    file: &'a Path,
    bytes: u64,
    ranks: u32,
    iters: u64,
}

/// Runs `iotrex synth`.
pub fn run(a: &SynthArgs, json: bool) -> Result<()> {
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
        .push("synthetic SPMD program (rsd_view::synth::spmd); timing is pseudo-random".into());
    let tf = TraceFile {
        header,
        trace: rsd_view::synth::spmd(a.ranks, a.iters),
    };
    let bytes = crate::output::write_trace(&tf, &a.output, "-o")?;
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
