//! `iotrex codes-stats`: a CODES export read back as CODES does (`codes_bridge`). The export
//! itself is `iotrex export codes` ([`crate::cmd_export::codes`]).

use crate::output::{print_json, print_text};
use anyhow::Result;
use clap::Args;
use codes_bridge::Format;
use std::path::PathBuf;

/// Arguments of `iotrex codes-stats`.
#[derive(Debug, Args)]
#[command(
    about = "Read a CODES export back as CODES does and print its operation counts",
    long_about = "Read a CODES workload export (recorder or iolang) with the same semantics as \
                  CODES' loaders (implicit barriers, the 10 us delay threshold, the 2048 \
                  operation cap) and print the counts `codes-workload-dump -s` prints: \
                  NUM_OPENS, NUM_CLOSES, NUM_BARRIERS, TOTAL_DELAY, NUM_READS, READ_SIZE, \
                  NUM_WRITES, WRITE_SIZE.",
    after_help = "Example:\n  iotrex codes-stats codes/\n  iotrex codes-stats --json codes-iolang/meta.txt"
)]
pub struct CodesStatsArgs {
    /// The export directory (or, for iolang, its meta file).
    pub dir: PathBuf,
    /// Workload format: recorder or iolang. Without it, the export's file names say which
    /// (a meta.txt is iolang, log.<rank> files are recorder).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
}

/// Parses `--format` (of `codes-stats` and `export codes`).
pub fn parse_format(s: &str) -> Result<Format, String> {
    s.parse::<Format>().map_err(|e| e.to_string())
}

/// Runs `iotrex codes-stats`.
pub fn stats(a: &CodesStatsArgs, json: bool) -> Result<()> {
    let s = codes_bridge::codes_stats_detect(&a.dir, a.format)?;
    if json {
        return print_json(&s);
    }
    let mut text = s.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    print_text(&text)?;
    for w in &s.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}
