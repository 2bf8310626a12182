//! Turns an iotrex trace into workloads the CODES storage and network simulator
//! (codes-org/codes, on ROSS) reads unmodified, and reads such workloads back.
//!
//! CODES simulates POSIX-level operations, so [`export`] writes the *POSIX view* of each rank
//! (see the crate README for the full mapping): POSIX and stdio calls directly, MPI-IO calls as
//! the POSIX calls nested in them, barriers as barriers, and everything else as delays of the
//! recorded mean duration. Two formats:
//!
//! - [`Format::Recorder`]: `DIR/log.<rank>` in the text syntax of CODES'
//!   `recorder_io_workload` method (at most 2048 operations per rank);
//! - [`Format::Iolang`]: `DIR/meta.txt` plus `DIR/rank<R>.kernel`, straight-line kernels in
//!   CODES' I/O language for `iolang_workload` (no cap).
//!
//! Export streams rank by rank, so memory does not grow with the rank count. [`codes_stats`]
//! loads an export with the same semantics as CODES' loaders and returns what
//! `codes-workload-dump -s` prints, so exports can be checked without a CODES build.
//!
//! File ids are Bob Jenkins' lookup3 `hashlittle2` of the path, as the recorder loader computes
//! them ([`hash`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod hash;
pub mod iolang;
pub mod recorder;
mod size;
pub mod stats;
mod view;
mod walk;
mod workload;

pub use error::CodesError;
pub use recorder::RECORDER_MAX_OPS;
pub use size::parse_size;
pub use stats::{CodesStats, OpCounts};

use iolang::Iolang;
use recorder::Recorder;
use rsd::{Layer, TraceFile};
use serde::Serialize;
use std::path::Path;
use workload::Workload;

/// The workload format to write or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `DIR/log.<rank>` for CODES' `recorder_io_workload`.
    #[default]
    Recorder,
    /// `DIR/meta.txt` and `DIR/rank<R>.kernel` for CODES' `iolang_workload`.
    Iolang,
}

impl Format {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Recorder => "recorder",
            Format::Iolang => "iolang",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = CodesError;
    fn from_str(s: &str) -> Result<Format, CodesError> {
        match s {
            "recorder" => Ok(Format::Recorder),
            "iolang" => Ok(Format::Iolang),
            _ => Err(CodesError::BadFormat {
                input: s.to_string(),
            }),
        }
    }
}

/// How to export.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Output format (`--format`).
    pub format: Format,
    /// Split reads and writes larger than this into pieces of at most this many bytes
    /// (`--max-blocksize`); `None` splits nothing.
    pub max_blocksize: Option<u64>,
    /// Write into an existing non-empty directory (`--force`). Earlier export files of the
    /// chosen format there (`log.N`, or `meta.txt` and `rankN.kernel`) are removed first, so a
    /// smaller export does not leave extra ranks behind; other files are left alone.
    pub force: bool,
    /// Refuse a trace whose events do not cover exactly ranks `0..header.nranks`
    /// (`--nranks-check`).
    pub nranks_check: bool,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExportReport {
    /// The format written.
    pub format: Format,
    /// Ranks exported (the trace header's rank count).
    pub ranks: u64,
    /// Files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Operations handed to CODES, summed over ranks; `codes_stats` on the export gives the
    /// same counts.
    pub counts: OpCounts,
    /// The most operations any rank has.
    pub max_ops_per_rank: u64,
    /// Operations added by `--max-blocksize` splitting.
    pub split_extra: u64,
    /// Opens made up for descriptors used without a traced open.
    pub synthesized_opens: u64,
    /// Delay the format could not express (after a rank's last operation; in recorder also
    /// carried gaps of 10 us or less that never added up), ns.
    pub dropped_delay_ns: u64,
    /// Where the traced ranks ran (`2 nodes x 2 ranks`), when the trace records it, and where
    /// the export carries it: iolang's group ids, one per node; the recorder format has no
    /// place for it (a warning says so).
    pub nodes: Option<String>,
    /// Things the user should know about the export.
    pub warnings: Vec<String>,
}

/// Checks that CODES can name every file of the export: its fixed-size path buffers are what
/// limits how many ranks (how many digits) a directory can take.
fn check_capacity<W: Workload>(dir: &Path, nranks: u32) -> Result<(), CodesError> {
    let too_many = |reason: String| CodesError::TooManyRanks {
        dir: dir.to_path_buf(),
        ranks: u64::from(nranks),
        reason,
    };
    if nranks > i32::MAX as u32 {
        return Err(too_many("CODES numbers ranks with a C int".into()));
    }
    match W::capacity(dir.to_string_lossy().len(), nranks - 1) {
        Some(reason) => Err(too_many(reason)),
        None => Ok(()),
    }
}

fn prepare_dir<W: Workload>(dir: &Path, opts: &ExportOptions) -> Result<(), CodesError> {
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(CodesError::NotADirectory {
                dir: dir.to_path_buf(),
            });
        }
        Ok(_) => {
            let rd = std::fs::read_dir(dir).map_err(|e| out_dir(dir, e))?;
            let mut nonempty = false;
            for ent in rd {
                let ent = ent.map_err(|e| CodesError::io(dir, e))?;
                nonempty = true;
                if !opts.force {
                    break;
                }
                let name = ent.file_name();
                if W::is_export_file(&name.to_string_lossy()) {
                    let p = ent.path();
                    std::fs::remove_file(&p).map_err(|e| CodesError::io(&p, e))?;
                }
            }
            if nonempty && !opts.force {
                return Err(CodesError::DirNotEmpty {
                    dir: dir.to_path_buf(),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| out_dir(dir, e))?;
        }
        Err(e) => return Err(out_dir(dir, e)),
    }
    Ok(())
}

/// The output directory `dir` refused: the error says it is the output.
fn out_dir(dir: &Path, source: std::io::Error) -> CodesError {
    CodesError::OutputDir {
        dir: dir.to_path_buf(),
        source,
    }
}

fn check_nranks(tf: &TraceFile) -> Result<(), CodesError> {
    let n = tf.header.nranks;
    let ranks = tf.trace.ranks();
    let mismatch = |rank| CodesError::NranksMismatch {
        header: n,
        covered: ranks.len(),
        rank,
    };
    if let Some(r) = (0..n).find(|&r| !ranks.contains(r)) {
        return Err(mismatch(r));
    }
    if ranks.len() != u64::from(n) {
        let extra = ranks.to_vec().into_iter().find(|&r| r >= n).unwrap_or(n);
        return Err(mismatch(extra));
    }
    Ok(())
}

/// Exports `tf` to `dir` in `opts.format`.
///
/// Ranks are `0..tf.header.nranks`; a rank with no events still gets a file. The directory is
/// created if missing; an existing non-empty one is refused unless `opts.force`. On error the
/// directory may hold the ranks written so far.
pub fn export(
    tf: &TraceFile,
    dir: &Path,
    opts: &ExportOptions,
) -> Result<ExportReport, CodesError> {
    export_with_progress(tf, dir, opts, &mut |_, _| {})
}

/// [`export`], calling `progress(ranks done, ranks in all)` after each rank, for a progress
/// bar on exports of many ranks.
pub fn export_with_progress(
    tf: &TraceFile,
    dir: &Path,
    opts: &ExportOptions,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<ExportReport, CodesError> {
    export_seeded(tf, dir, opts, rsd::draw::DEFAULT_SEED, progress)
}

/// [`export_with_progress`], drawing the values of summarised parameters with `seed`
/// (`--seed`).
pub fn export_seeded(
    tf: &TraceFile,
    dir: &Path,
    opts: &ExportOptions,
    seed: u64,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<ExportReport, CodesError> {
    // Summarised values become exact draws first (as replay's), so the export issues sizes
    // whose totals match the recorded means times the counts.
    let drawn;
    // Offsets held as prefix sums of sizes are computed from the sizes the same way.
    // Run values (numbers that belong to the traced run) are filled with this export's own.
    let tf = if rsd::approx::first(&tf.trace).is_some()
        || rsd::prefix::present(&tf.trace)
        || rsd::runvalue::present(&tf.trace.nodes)
    {
        let mut t = tf.clone();
        rsd::draw::realize(&mut t.trace, seed)?;
        rsd::runvalue::fill(&mut t.trace, &rsd::runvalue::Fresh::here());
        drawn = t;
        &drawn
    } else {
        tf
    };
    match opts.format {
        Format::Recorder => export_as::<Recorder>(tf, dir, opts, progress),
        Format::Iolang => export_as::<Iolang>(tf, dir, opts, progress),
    }
}

/// [`export_with_progress`] in the format `W`.
fn export_as<W: Workload>(
    tf: &TraceFile,
    dir: &Path,
    opts: &ExportOptions,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<ExportReport, CodesError> {
    let nranks = tf.header.nranks;
    if nranks == 0 {
        return Err(CodesError::NoRanks);
    }
    check_capacity::<W>(dir, nranks)?;
    if opts.nranks_check {
        check_nranks(tf)?;
    }
    prepare_dir::<W>(dir, opts)?;
    let posix_traced = tf.header.layers.contains(&Layer::Posix);
    let mut rep = ExportReport {
        format: W::FORMAT,
        ranks: u64::from(nranks),
        ..ExportReport::default()
    };
    if tf.header.incomplete {
        rep.warnings.push(
            "the trace is flagged incomplete (a rank died or a buffer limit was hit); the export covers what was recorded".into(),
        );
    }
    if let Some(l) = &tf.header.node_layout {
        let shape = l.shape(nranks);
        rep.nodes = Some(match W::FORMAT {
            Format::Iolang => format!("{shape}: each rank's group id in meta.txt is its node + 1"),
            Format::Recorder => {
                if l.nodes > 1 {
                    rep.warnings.push(format!(
                        "the trace ran on {shape}; the recorder format has no place for a rank's node, so the export does not carry it (--format iolang gives each rank its node as its group id)"
                    ));
                }
                format!("{shape}: not in the recorder format")
            }
        });
    }
    let mut out = W::begin(dir, &tf.header)?;
    let mut barriers = (u64::MAX, 0u64);
    for rank in 0..nranks {
        let mut mapper = view::Mapper::new(posix_traced, opts.max_blocksize);
        let mut sink = out.rank(dir, rank)?;
        map_rank(tf, rank, &mut mapper, &mut sink)?;
        let counts = out.end_rank(sink, dir, rank, mapper.finish(), &mut rep)?;
        rep.files += 1;
        rep.max_ops_per_rank = rep.max_ops_per_rank.max(counts.ops());
        rep.split_extra += mapper.split_extra;
        rep.synthesized_opens += mapper.synthesized_opens;
        barriers = (
            barriers.0.min(counts.barriers),
            barriers.1.max(counts.barriers),
        );
        rep.counts.add(&counts);
        progress(rank + 1, nranks);
    }
    out.end(&mut rep)?;
    if barriers.0 != barriers.1 {
        rep.warnings.push(format!(
            "ranks have between {} and {} barriers; CODES barriers span all ranks, so the simulation will hang at an unmatched one",
            barriers.0, barriers.1
        ));
    }
    if rep.synthesized_opens > 0 {
        rep.warnings.push(format!(
            "{} descriptors were used without a traced open; each got an open of iotrex_fd<N> (or iotrex_stream<N>) at first use",
            rep.synthesized_opens
        ));
    }
    Ok(rep)
}

fn map_rank(
    tf: &TraceFile,
    rank: u32,
    mapper: &mut view::Mapper,
    sink: &mut dyn view::Sink,
) -> Result<(), CodesError> {
    let mut err = None;
    walk::for_each(&tf.trace, rank, &mut |ev| match mapper.event(&ev, sink) {
        Ok(()) => true,
        Err(e) => {
            err = Some(e);
            false
        }
    });
    err.map_or(Ok(()), Err)
}

/// Reads the trace at `trace` and exports it; trace errors name the file.
pub fn export_file(
    trace: &Path,
    dir: &Path,
    opts: &ExportOptions,
) -> Result<ExportReport, CodesError> {
    let tf = TraceFile::read(trace)?;
    export(&tf, dir, opts)
}

/// Loads an export the way CODES' loader for `format` does and returns what
/// `codes-workload-dump -s` prints. `path` is the export directory (for iolang it may also be
/// the meta file). Input CODES would crash on, hang on or reject is an error naming the file
/// and line.
pub fn codes_stats(path: &Path, format: Format) -> Result<CodesStats, CodesError> {
    match format {
        Format::Recorder => Recorder::read(path),
        Format::Iolang => Iolang::read(path),
    }
}

/// The format of the export at `path`, from the names of its files: a meta file (given
/// itself, or in the directory) is iolang, `log.<rank>` files are recorder. A directory
/// holding both (two exports in different formats) is ambiguous and an error; one holding
/// neither is taken as recorder, whose reader then says what is missing.
pub fn detect_format(path: &Path) -> Result<Format, CodesError> {
    if !path.is_dir() {
        return Ok(match path.file_name().and_then(|n| n.to_str()) {
            Some(n) if Iolang::is_export_file(n) => Format::Iolang,
            _ => Format::Recorder,
        });
    }
    let (mut recorder, mut iolang) = (false, false);
    let entries = std::fs::read_dir(path).map_err(|e| CodesError::io(path, e))?;
    for e in entries {
        let e = e.map_err(|e| CodesError::io(path, e))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        recorder |= Recorder::is_export_file(name);
        iolang |= name == iolang::META;
    }
    match (recorder, iolang) {
        (true, true) => Err(CodesError::NoWorkload {
            path: path.to_path_buf(),
            format: "recorder or iolang",
            detail: format!(
                "it holds a recorder export (log.<rank>) and an iolang one ({}): name one \
                 with --format",
                iolang::META
            ),
        }),
        (false, true) => Ok(Format::Iolang),
        _ => Ok(Format::Recorder),
    }
}

/// As [`codes_stats`], with the format found by [`detect_format`] when `format` is `None`.
pub fn codes_stats_detect(path: &Path, format: Option<Format>) -> Result<CodesStats, CodesError> {
    let format = match format {
        Some(f) => f,
        None => detect_format(path)?,
    };
    codes_stats(path, format)
}
