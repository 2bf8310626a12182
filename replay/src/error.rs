//! Errors of the `replay` crate. Each message names the flag or input at fault.

use std::path::PathBuf;

/// Everything that stops a replay.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The trace could not be read or is not a valid trace.
    #[error(transparent)]
    Trace(#[from] rsd::RsdError),
    /// A call's value needs the other ranks' calls (a prefix sum over the ranks, the end of
    /// the file so far) and the trace was handed to the engine unresolved: [`crate::load`]
    /// resolves it (`rsd::draw::realize`).
    #[error(
        "rank {rank}: {op} at call site {sig:#x} holds an offset the other ranks' calls decide, not resolved for this rank; load the trace with replay::load, which resolves it"
    )]
    Unresolved {
        /// The rank replayed.
        rank: u32,
        /// The call.
        op: &'static str,
        /// Its call site.
        sig: u64,
    },
    /// The trace holds forked processes besides its ranks (`docs/processes.md`), which
    /// replay does not recreate yet: replaying the ranks alone would issue part of the I/O.
    #[error("{path}: {why}")]
    Processes {
        /// The trace file.
        path: PathBuf,
        /// What it holds.
        why: String,
    },
    /// The trace is flagged incomplete.
    #[error(
        "{path}: the trace is incomplete ({why}); replaying it would issue only part of the run's I/O (pass --allow-incomplete to replay it anyway)"
    )]
    Incomplete {
        /// The trace file.
        path: PathBuf,
        /// The producer's notes.
        why: String,
    },
    /// The replay runs on a different number of ranks than the trace has.
    #[error(
        "the trace has {trace} ranks but the replay runs {running} (mpirun -np {running}); run with -np {trace}, or extrapolate first: iotrex extrap ... --ranks {running}"
    )]
    RankCount {
        /// Ranks in the trace header.
        trace: u32,
        /// Ranks in the replay.
        running: u32,
    },
    /// `--ranks-per-node` that does not divide the trace's rank count.
    #[error(
        "--ranks-per-node {per_node} does not divide the trace's {ranks} ranks: no layout of equal nodes holds them"
    )]
    RanksPerNode {
        /// The flag's value.
        per_node: u32,
        /// Ranks in the trace.
        ranks: u32,
    },
    /// The replay does not run on the layout `--ranks-per-node` asks for.
    #[error("--ranks-per-node {per_node}: the replay runs on {got}, not {want}{how}")]
    Layout {
        /// The flag's value.
        per_node: u32,
        /// The layout asked for, as text.
        want: String,
        /// The layout the launch gave (or what replaces it), as text.
        got: String,
        /// What to do about it, from `; `.
        how: String,
    },
    /// The root directory is missing, not a directory or not writable.
    #[error("--root {path}: {why}")]
    Root {
        /// The directory given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The root is on a file system mounted read-only: a replay writes the trace's files.
    #[error("--root {path}: on a read-only file system")]
    RootReadOnly {
        /// The directory given.
        path: PathBuf,
    },
    /// A traced path would leave the root (through a symlink inside it).
    #[error(
        "--root {root}: traced path {traced:?} resolves to {resolved} outside the root (a symlink inside the root points out); refusing to touch it"
    )]
    Escape {
        /// The root.
        root: PathBuf,
        /// The path as traced.
        traced: String,
        /// Where it would lead.
        resolved: PathBuf,
    },
    /// A traced path ends, inside the root, on a file that is not a regular file or a
    /// directory (a FIFO, a socket, a device node): writing it would move the replay's bytes
    /// out of the root's files, or wait forever.
    #[error(
        "--root {root}: traced path {traced:?} resolves to {found}, which is {what}; refusing to touch it"
    )]
    NotRegular {
        /// The root.
        root: PathBuf,
        /// The path as traced.
        traced: String,
        /// The special file found.
        found: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The file system refused to resolve a traced path inside the root (a parent missing, a
    /// component that is not a directory): the call fails, as it would have.
    #[error("traced path {traced:?} (as {mapped}): {error}")]
    Path {
        /// The path as traced.
        traced: String,
        /// Its lexical mapping under the root.
        mapped: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A flag has a value that cannot be used.
    #[error("{flag}: {why}")]
    BadOption {
        /// The flag.
        flag: &'static str,
        /// Why.
        why: String,
    },
    /// Writing the JSON report failed.
    #[error("--json-out {path}: {error}")]
    Json {
        /// The report file.
        path: PathBuf,
        /// The OS or encoding error.
        error: String,
    },
    /// A thread of the replay could not be started or panicked.
    #[error("--threads: {0}")]
    Thread(String),
    /// The MPI runtime refused a call.
    #[error("MPI: {0}")]
    Mpi(String),
    /// `--comm real` of a trace whose messages, communicators or collectives do not match.
    #[error(
        "--comm real: {detail}; a real replay would wait forever for it: replay with --comm delay (communication as its recorded delays)"
    )]
    Unmatched {
        /// The first call that does not match, with ranks, tag and communicator.
        detail: String,
    },
    /// A rank stayed in one call past its bound (the watchdog's report says where each was).
    #[error(
        "the replay stalled: a rank stayed in one call longer than --stall-timeout {timeout_s} s plus ten times the call's traced duration (see the report above); the trace's ranks may wait for messages that never come: try --comm delay"
    )]
    Stalled {
        /// `--stall-timeout`, seconds.
        timeout_s: f64,
    },
}
