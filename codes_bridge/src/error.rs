//! Errors of the `codes_bridge` crate. Each message names the input, file or flag at fault.

use std::path::PathBuf;

/// Everything that can go wrong exporting a trace to CODES or reading an export back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodesError {
    /// The input trace could not be read (bad magic, newer version, truncated, corrupt).
    #[error(transparent)]
    Trace(#[from] rsd::RsdError),

    /// The output directory already holds files.
    #[error(
        "output directory {dir} is not empty; choose another -o or pass --force to write into it"
    )]
    DirNotEmpty {
        /// The directory given with `-o`.
        dir: PathBuf,
    },

    /// The output path exists and is not a directory.
    #[error("output path {dir} exists and is not a directory")]
    NotADirectory {
        /// The path given with `-o`.
        dir: PathBuf,
    },

    /// The output directory could not be created or listed: named as the output, so that the
    /// OS error ("No such file or directory") is not read as being about the trace.
    #[error("cannot create the output directory {} (-o): {source}", dir.display())]
    OutputDir {
        /// The directory given with `-o`.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },

    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },

    /// A rank has more operations than CODES' recorder loader keeps.
    #[error(
        "rank {rank} needs {ops} CODES operations, but CODES' recorder loader silently keeps only the first {limit} per rank; use --format iolang, which has no cap (or a larger --max-blocksize, if splitting caused it)"
    )]
    TooManyOps {
        /// The first rank over the cap.
        rank: u32,
        /// Its operation count.
        ops: u64,
        /// The cap.
        limit: u64,
    },

    /// A size such as `--max-blocksize 256KiB` does not parse.
    #[error("invalid size {input:?} for --max-blocksize: {reason}")]
    BadSize {
        /// What was given.
        input: String,
        /// Why it was refused.
        reason: String,
    },

    /// A format name does not parse.
    #[error("invalid --format {input:?}: expected \"recorder\" or \"iolang\"")]
    BadFormat {
        /// What was given.
        input: String,
    },

    /// The trace holds no ranks.
    #[error("the trace has no ranks (header rank count is 0); nothing to export")]
    NoRanks,

    /// The trace has more ranks than the output directory can take.
    #[error(
        "{ranks} ranks cannot be exported to {dir}: {reason}; choose a shorter -o or fewer ranks"
    )]
    TooManyRanks {
        /// The output directory.
        dir: PathBuf,
        /// The trace's rank count.
        ranks: u64,
        /// Which limit is exceeded.
        reason: String,
    },

    /// `--nranks-check` found ranks without events, or events of ranks outside the header.
    #[error(
        "--nranks-check: the trace header says {header} ranks but events cover {covered} ranks (first missing or extra rank: {rank})"
    )]
    NranksMismatch {
        /// The header's rank count.
        header: u32,
        /// Ranks that have events.
        covered: u64,
        /// A rank at fault.
        rank: u32,
    },

    /// An export being read back is not in the form CODES' loader accepts.
    #[error("{path}:{line}: {msg}")]
    Parse {
        /// The workload file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What CODES would do or what is wrong.
        msg: String,
    },

    /// The directory given to codes-stats holds no workload of the requested format.
    #[error("{path}: no CODES {format} workload here ({detail})")]
    NoWorkload {
        /// The directory or meta file.
        path: PathBuf,
        /// The format looked for.
        format: &'static str,
        /// What was missing.
        detail: String,
    },
}

impl CodesError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> CodesError {
        CodesError::Io {
            path: path.into(),
            source,
        }
    }
}
