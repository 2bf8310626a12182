//! `iotrex merge`: the per-rank files a killed or aborted job left (`<stem>.rank<r>.iotrex`,
//! written by each rank's tracer when the job ended before `MPI_Finalize` merged them) merged
//! into one trace that every command reads, saying which ranks are missing. `iotrex show`
//! reads such files as they are; the other commands point here when the trace they were given
//! was not written but its ranks' files are there.

use crate::exit::Usage;
use crate::output::{print_json, print_text};
use anyhow::{Context, Result};
use clap::Args;
use rsd::TraceFile;
use rsd::ranks::RankSet;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `iotrex merge`.
#[derive(Debug, Args)]
#[command(
    about = "Merge the per-rank files of a killed or aborted job into one trace",
    long_about = "When a traced job ends before MPI_Finalize (killed, MPI_Abort, a rank that \
                  crashed) or its merge does not complete, each rank's tracer writes its own \
                  file beside the trace, <stem>.rank<r>.iotrex, and no <stem>.iotrex. This \
                  merges them into one trace, flagged incomplete, that every command reads, \
                  and says which ranks of the job have no file (their calls are not in it). \
                  Only the files of the latest run are merged (its run id); files an earlier \
                  run left under the same name are named and left out.",
    after_help = "Examples:\n  iotrex merge app.8.iotrex -o app.8.iotrex     (app.8.rank*.iotrex)\n  \
                  iotrex merge app.8 -o merged.iotrex\n  \
                  iotrex merge results/ -o app.8.iotrex          (the one job's files in results/)"
)]
pub struct MergeArgs {
    /// The trace the job should have written (`app.8.iotrex`, or its stem `app.8`), whose
    /// per-rank files `app.8.rank<r>.iotrex` are merged; or a directory holding one job's
    /// per-rank files.
    source: PathBuf,
    /// Where to write the merged trace.
    #[arg(long, short)]
    output: PathBuf,
}

/// The per-rank files a trace was merged from, and those left out.
pub struct RankFiles {
    /// Files merged.
    pub used: Vec<String>,
    /// Files of another run (another run id, or none where the latest run has one).
    pub ignored: Vec<String>,
}

/// `file`, or when it does not exist, the per-rank files beside it merged into one trace
/// flagged incomplete ([`merge_rank_files`]), with the names of those files.
pub fn read_or_rank_files(file: &Path) -> Result<(TraceFile, Option<RankFiles>)> {
    let ranks = if file.exists() {
        Vec::new()
    } else {
        rsd::job::rank_files(file)
    };
    if ranks.is_empty() {
        return Ok((TraceFile::read(file)?, None));
    }
    let (tf, files) = merge_rank_files(&ranks)?;
    Ok((tf, Some(files)))
}

/// The per-rank files `ranks` (not empty) merged into one trace flagged incomplete. Only one
/// run's files are merged: the run of the most recently written file
/// ([`rsd::Header::run_id`]); files of any other run (an earlier run into the same place that
/// left its own) are ignored.
pub fn merge_rank_files(ranks: &[(u32, PathBuf)]) -> Result<(TraceFile, RankFiles)> {
    let mut read = Vec::new();
    for (_, p) in ranks {
        let tf = TraceFile::read(p)?;
        let when = std::fs::metadata(p).and_then(|m| m.modified()).ok();
        read.push((p, tf, when));
    }
    let latest = read
        .iter()
        .max_by_key(|(_, _, when)| *when)
        .map(|(_, tf, _)| tf.header.run_id.clone())
        .context("no per-rank file to merge")?;
    let mut merged: Option<TraceFile> = None;
    let mut files = RankFiles {
        used: Vec::new(),
        ignored: Vec::new(),
    };
    for (p, tf, _) in read {
        if tf.header.run_id != latest {
            files.ignored.push(p.display().to_string());
            continue;
        }
        files.used.push(p.display().to_string());
        merged = Some(match merged {
            None => tf,
            Some(mut m) => {
                m.trace = rsd::merge(&m.trace, &tf.trace).with_context(|| {
                    format!("cannot merge {} with the files before it", p.display())
                })?;
                m.header.wall_ns = m.header.wall_ns.max(tf.header.wall_ns);
                m.header.nranks = m.header.nranks.max(tf.header.nranks);
                for n in tf.header.notes {
                    if !m.header.notes.contains(&n) {
                        m.header.notes.push(n);
                    }
                }
                m
            }
        });
    }
    let mut tf = merged.context("the latest run has no file")?;
    tf.header.incomplete = true;
    Ok((tf, files))
}

/// The ranks of a job of `nranks` that `tf` holds no call of.
pub fn missing_ranks(tf: &TraceFile) -> Vec<u32> {
    let have = tf.trace.ranks();
    (0..tf.header.nranks)
        .filter(|r| !have.contains(*r))
        .collect()
}

/// The trace path whose per-rank files `source` names: the path itself (`.iotrex` added to a
/// stem), or for a directory, the one job's whose per-rank files it holds.
fn trace_of(source: &Path) -> Result<PathBuf> {
    if !source.is_dir() {
        let s = source.to_string_lossy();
        return Ok(if s.ends_with(".iotrex") {
            source.to_path_buf()
        } else {
            PathBuf::from(format!("{s}.iotrex"))
        });
    }
    let rd = std::fs::read_dir(source)
        .with_context(|| format!("cannot read the directory {} (SOURCE)", source.display()))?;
    let mut stems: Vec<String> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let (stem, r) = n.strip_suffix(".iotrex")?.rsplit_once(".rank")?;
            (!r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())).then(|| stem.to_string())
        })
        .collect();
    stems.sort();
    stems.dedup();
    match stems.as_slice() {
        [one] => Ok(source.join(format!("{one}.iotrex"))),
        [] => anyhow::bail!(
            "{} holds no per-rank file (<stem>.rank<r>.iotrex) to merge (SOURCE)",
            source.display()
        ),
        many => Err(Usage(format!(
            "{} holds the per-rank files of {} jobs ({}): give one of them as SOURCE, e.g. {}",
            source.display(),
            many.len(),
            many.join(", "),
            source.join(&many[0]).display()
        ))
        .into()),
    }
}

#[derive(Serialize)]
struct MergeReport<'a> {
    output: &'a Path,
    bytes: u64,
    nranks: u32,
    merged: &'a [String],
    ignored: &'a [String],
    missing_ranks: String,
    missing: usize,
}

/// Runs `iotrex merge`.
pub fn run(a: &MergeArgs, json: bool) -> Result<()> {
    let trace = trace_of(&a.source)?;
    let ranks = rsd::job::rank_files(&trace);
    if ranks.is_empty() {
        anyhow::bail!(
            "no per-rank file {} found (SOURCE {}): a job writes them only when it ends before \
             its merge in MPI_Finalize completes",
            rsd::job::rank_path(&trace.to_string_lossy(), 0, "iotrex")
                .replace(".rank0.", ".rank<r>."),
            a.source.display()
        );
    }
    let (tf, files) = merge_rank_files(&ranks)?;
    let missing = missing_ranks(&tf);
    let bytes = crate::output::write_trace(&tf, &a.output, "-o")?;
    let missing_text = if missing.is_empty() {
        "none".to_string()
    } else {
        RankSet::from_sorted(&missing).to_string()
    };
    if json {
        return print_json(&MergeReport {
            output: &a.output,
            bytes,
            nranks: tf.header.nranks,
            merged: &files.used,
            ignored: &files.ignored,
            missing_ranks: missing_text,
            missing: missing.len(),
        });
    }
    let mut text = format!(
        "wrote {} ({bytes} bytes, INCOMPLETE): {} per-rank file{} of a job of {} ranks merged\n",
        a.output.display(),
        files.used.len(),
        if files.used.len() == 1 { "" } else { "s" },
        tf.header.nranks
    );
    if missing.is_empty() {
        text.push_str("every rank left a file; the calls after the job ended are not in them\n");
    } else {
        text.push_str(&format!(
            "missing: {} rank{} without a file, their calls not in the trace: {missing_text}\n",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        ));
    }
    if !files.ignored.is_empty() {
        text.push_str(&format!(
            "ignored {} file{} of an earlier run: {}\n",
            files.ignored.len(),
            if files.ignored.len() == 1 { "" } else { "s" },
            files.ignored.join(", ")
        ));
    }
    print_text(&text)
}

/// The hint for a trace that does not exist: where its job left per-rank files, the command
/// that merges them.
pub fn hint_for_missing(path: &Path) -> Option<String> {
    let ranks = rsd::job::rank_files(path);
    let (first, last) = (ranks.first()?, ranks.last()?);
    Some(format!(
        "its job did not write it (killed or aborted before MPI_Finalize merged it) but left {} \
         per-rank file{} ({}{}): merge them with `iotrex merge {} -o {}`",
        ranks.len(),
        if ranks.len() == 1 { "" } else { "s" },
        first.1.display(),
        if ranks.len() > 1 {
            format!(" ... {}", last.1.display())
        } else {
            String::new()
        },
        path.display(),
        path.display()
    ))
}
