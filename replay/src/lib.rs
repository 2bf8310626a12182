//! Replays an iotrex trace with real I/O, under MPI (`iotrex-replay`) or with threads in one
//! process (`iotrex replay --threads`).
//!
//! Each rank walks its own events lazily from the compressed trace ([`engine::RankEngine`]),
//! so memory stays proportional to the trace, not to the event count. POSIX and stdio calls
//! are issued through the OS with the recorded sizes, offsets, flags and whence; MPI and MPI-IO
//! calls go to a [`engine::Runtime`]: [`threads::ThreadsRuntime`] here, real MPI in the
//! `iotrex-replay` binary. Every path is re-rooted under `--root` ([`root::Root`]) and nothing
//! is written outside it. Compute gaps and communication delays are waited out against
//! absolute per-rank deadlines ([`clock`]), and each I/O call's lateness is recorded. The
//! [`report::Report`] gives op counts and bytes per layer and op, which must equal
//! `iotrex stats` of the same trace, and says where they do not.
//!
//! This library's only `unsafe` is one dereference in [`sched`] (the running coroutine's
//! yielder, kept in a thread-local) and the `sync_file_range` call in `direct`, which rustix
//! lacks; the MPI glue, which needs more, is in the binary.

#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod clock;
pub mod compute_choice;
pub mod deps;
mod direct;
pub mod engine;
pub mod error;
pub mod layout;
mod local;
mod mapping;
pub mod matching;
pub mod options;
pub mod pattern;
pub mod predict;
pub mod prep;
pub mod progress;
pub mod report;
pub mod root;
pub mod runtime;
pub mod sched;
pub mod threads;
/// Datatypes by symbolic id (the file table's, re-exported where replay's runtimes always found them).
pub use filetable::types;
pub mod watchdog;

pub use error::ReplayError;
pub use options::{
    CollectiveIo, CommMode, ComputeMode, LayerView, Options, parse_collective_io, parse_comm,
    parse_compute, parse_layer, parse_max_threads, parse_scale, parse_stall_timeout,
};
pub use report::Report;
pub use root::{Mapped, Pinned, Root};

use rsd::TraceFile;
use std::path::Path;
use std::time::Instant;

/// Reads a trace for replay, refusing an incomplete one unless `allow_incomplete`; values
/// summarised in the trace are drawn with [`rsd::draw::DEFAULT_SEED`].
pub fn load(path: &Path, allow_incomplete: bool) -> Result<TraceFile, ReplayError> {
    load_seeded(path, allow_incomplete, rsd::draw::DEFAULT_SEED)
}

/// [`load`], drawing the exact values of summarised parameters with `seed` (`--seed`): the
/// same seed gives every rank, runtime and run the same calls ([`rsd::draw::realize`]).
pub fn load_seeded(
    path: &Path,
    allow_incomplete: bool,
    seed: u64,
) -> Result<TraceFile, ReplayError> {
    load_fresh(path, allow_incomplete, seed, &rsd::runvalue::Fresh::here())
}

/// [`load_seeded`], filling the trace's run values (numbers that belong to the traced run:
/// a job id, a pid in a lock file's name) with `fresh` ([`rsd::runvalue::fill`]): this
/// replay's own numbers, the same on every rank, so the names are new and every rank's calls
/// name the same file.
pub fn load_fresh(
    path: &Path,
    allow_incomplete: bool,
    seed: u64,
    fresh: &rsd::runvalue::Fresh,
) -> Result<TraceFile, ReplayError> {
    let mut tf = TraceFile::read(path)?;
    if let Some(why) = rsd::process::unsupported(&tf.header, "replay") {
        return Err(ReplayError::Processes {
            path: path.to_path_buf(),
            why,
        });
    }
    rsd::draw::realize(&mut tf.trace, seed)?;
    rsd::runvalue::fill(&mut tf.trace, fresh);
    // Library calls above MPI-IO (HDF5) are containers: replay issues what they made, each
    // call after its own gap, the container's gap first ([`rsd::Trace::lift_containers`]).
    if tf.trace.has_containers() {
        tf.trace.lift_containers();
    }
    if tf.header.incomplete && !allow_incomplete {
        let why = if tf.header.notes.is_empty() {
            "no reason recorded".to_string()
        } else {
            tf.header.notes.join("; ")
        };
        return Err(ReplayError::Incomplete {
            path: path.to_path_buf(),
            why,
        });
    }
    Ok(tf)
}

/// The number of ranks a trace replays on: its header's, or more if its events name more.
pub fn nranks(tf: &TraceFile) -> u32 {
    let mut max = 0;
    tf.trace.ranks().for_each(|r| max = max.max(r + 1));
    tf.header.nranks.max(max)
}

/// Stack of each rank thread or coroutine: the walk recurses once per loop level (bounded by
/// rsd), and small stacks let thousands of ranks run as threads, tens of thousands as
/// coroutines (only the pages a rank touches take memory).
const RANK_STACK: usize = 512 << 10;

/// The default `--max-threads`: a quarter of the kernel's thread limit, between 256 and 8,192,
/// so a replay does not exhaust the machine's threads, yet an ordinary extrapolated trace
/// still gets a thread per rank, the most faithful timing (1,024 ranks x 512 KiB of stack is
/// 512 MiB of address space, mostly untouched); larger traces run on a pool of that many.
pub fn default_max_threads() -> u32 {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/threads-max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(32_768);
    (kernel / 4).clamp(256, 8192) as u32
}

/// The pool's threads when `--max-threads` is not given and the trace has more ranks than
/// [`default_max_threads`]: four per core, 8 to 256. A pool as large as the thread cap was
/// slower, not faster: 16,384 ranks on 7,934 threads took 74-82 s on 2 cores, on 8 threads
/// 17-18 s. Four per core keeps cores busy while some threads block in I/O.
pub fn default_pool_threads() -> u32 {
    let cores = clock::node_load(1).1 as u32;
    cores.saturating_mul(4).clamp(8, 256)
}

/// The OS threads `--threads` may use: one per rank up to `per_rank` ranks; beyond, a pool of
/// `pool` threads running every rank as a coroutine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The most ranks run as one thread each.
    pub per_rank: u32,
    /// The pool's threads beyond that.
    pub pool: u32,
}

impl Cap {
    /// `--max-threads N`: at most N threads either way.
    pub fn user(n: u32) -> Cap {
        Cap {
            per_rank: n,
            pool: n,
        }
    }
}

impl Default for Cap {
    /// No `--max-threads`: [`default_max_threads`] threads of one rank each, else a pool of
    /// [`default_pool_threads`].
    fn default() -> Cap {
        Cap {
            per_rank: default_max_threads(),
            pool: default_pool_threads(),
        }
    }
}

impl From<u32> for Cap {
    fn from(n: u32) -> Cap {
        Cap::user(n)
    }
}

/// How `--threads` runs its ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// One OS thread per rank.
    Threads,
    /// Every rank a coroutine, on this many OS threads.
    Pool(u32),
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Plan::Threads => write!(f, "ranks as threads"),
            Plan::Pool(w) => write!(f, "ranks as coroutines on {w} threads"),
        }
    }
}

/// Memory maps an OS thread of this process takes (its stack and guard page, its signal
/// stack and guard page) and a coroutine (its stack and guard page); measured in
/// /proc/PID/maps: 1,025 threads 4,167 maps, 8 threads and 16,384 coroutines 32,860.
const MAPS_PER_THREAD: u64 = 4;
const MAPS_PER_TASK: u64 = 2;
/// Maps for everything else: the binary, libraries, heap, malloc arenas (about 100 seen).
const MAPS_OTHER: u64 = 1024;

/// The kernel's limit on a process's memory maps (`vm.max_map_count`, 65,530 by default).
/// Past it a new thread's stack cannot be mapped and Rust aborts the process.
pub fn max_map_count() -> u64 {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(65_530)
}

/// How `--threads` runs `n` ranks on at most `max_threads` OS threads within `maps` memory
/// maps: one thread per rank when both allow, else a pool of as many threads as both allow;
/// refused when even one thread and `n` coroutine stacks exceed the maps.
pub fn plan(n: u32, cap: impl Into<Cap>, maps: u64) -> Result<Plan, ReplayError> {
    let cap = cap.into();
    let n64 = u64::from(n);
    if n <= cap.per_rank && n64 * MAPS_PER_THREAD + MAPS_OTHER <= maps {
        return Ok(Plan::Threads);
    }
    let room = maps.saturating_sub(MAPS_OTHER + n64 * MAPS_PER_TASK) / MAPS_PER_THREAD;
    let workers = room.min(u64::from(cap.pool)).min(n64) as u32;
    if workers == 0 {
        return Err(ReplayError::Thread(format!(
            "cannot run {n} ranks: each needs {MAPS_PER_TASK} memory maps for its stack, about {} in all, more than vm.max_map_count ({maps})",
            n64 * MAPS_PER_TASK + MAPS_OTHER
        )));
    }
    Ok(Plan::Pool(workers))
}

/// Replays every rank of `tf` in this process, with the default `--max-threads`.
pub fn run_threads(tf: &TraceFile, root: &Root, opts: &Options) -> Result<Report, ReplayError> {
    run_threads_capped(tf, root, opts, Cap::default())
}

/// The comm mode to replay `tf` with. Under `--comm real`, warns of the MPI functions the
/// program imports that the trace does not record, and refuses a trace whose messages,
/// communicators or collectives do not match ([`matching`]): its replay would wait forever.
/// Without `--comm` ([`Options::comm_auto`]) such a trace, or one too large to check, is
/// replayed with [`CommMode::Delay`] instead, with a note saying why.
pub fn check_matching(tf: &TraceFile, opts: &Options) -> Result<CommMode, ReplayError> {
    if opts.comm != CommMode::Real {
        return Ok(opts.comm);
    }
    let checked = matching::check(&tf.trace, nranks(tf));
    if opts.comm_auto {
        let why = match &checked {
            Ok(matching::Outcome::Matched { .. }) => None,
            Ok(matching::Outcome::TooLarge { calls }) => Some(format!(
                "the trace is too large to check that its messages match (stopped after {calls} calls)"
            )),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = why {
            eprintln!(
                "note: MPI calls are replayed as their traced durations (--comm delay), not issued: {why}; give --comm real to issue them anyway"
            );
            return Ok(CommMode::Delay);
        }
    }
    let unseen = &tf.header.unrecorded_mpi;
    // Said when --comm real was asked for; the default, which passed the check, would say it
    // on nearly every replay (most programs import MPI_Wtime, which moves nothing).
    if !unseen.is_empty() && !opts.comm_auto {
        // Communication through them is missing from the trace: the check below may refuse
        // it, and if it passes, timing through them is still lost.
        eprintln!(
            "warning: --comm real: the traced program imports {} MPI functions iotrex does not record, so what they did is not replayed: {}",
            unseen.len(),
            unseen.join(", ")
        );
    }
    if let matching::Outcome::TooLarge { calls } = checked? {
        eprintln!(
            "warning: --comm real: the trace is too large to check that its messages match (stopped after {calls} calls); if they do not, the watchdog ends the replay (--stall-timeout)"
        );
    }
    Ok(CommMode::Real)
}

/// Replays every rank of `tf` in this process on at most `max_threads` OS threads.
///
/// Up to `max_threads` ranks, each rank is one OS thread: the kernel schedules every wait
/// and I/O call on its own, the best timing. Beyond, each rank is a coroutine and
/// `max_threads` threads run them all ([`sched`]; fewer threads, or a pool even below
/// `max_threads` ranks, when the kernel's memory-map limit could not hold them, see [`plan`]): a rank blocked in a barrier, a receive or
/// a wait gives its thread to another rank, so a huge extrapolated trace neither exhausts the
/// machine's threads nor deadlocks, and its counts and bytes are the same; but a blocking I/O
/// call holds its thread, so at most `max_threads` calls are in flight.
///
/// This is the runtime itself: it does not run [`check_matching`] (the CLIs' entry point,
/// [`run_threads_file`], does, before any I/O); a trace that does not match fails its blocked
/// calls when the rank they wait for finishes, or is ended by the watchdog.
pub fn run_threads_capped(
    tf: &TraceFile,
    root: &Root,
    opts: &Options,
    max_threads: impl Into<Cap>,
) -> Result<Report, ReplayError> {
    let n = nranks(tf);
    let plan = plan(n, max_threads, max_map_count())?;
    let shared = threads::Shared::new(n);
    // Collective MPI-IO replays as the POSIX calls the library made, when the trace has them.
    shared.children_io.store(
        opts.layer == LayerView::App
            && opts.collective_io == CollectiveIo::Library
            && collectives_have_io_children(&tf.trace.nodes),
        std::sync::atomic::Ordering::Relaxed,
    );
    if opts.io_deps
        && let Some(d) = deps::IoDeps::of(tf, n)
    {
        let _ = shared.io_deps.set(std::sync::Arc::new(d));
    }
    // Rank 0's calls stand for the whole replay's progress (all ranks' totals would take a
    // walk of every rank first).
    let done0 = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let _bar = progress::Progress::start(
        || progress::calls_of(&tf.trace.nodes, 0),
        done0.clone(),
        &if n == 1 {
            "1 rank as a thread:".to_string()
        } else {
            format!("{n} {plan}, rank 0:")
        },
    );
    let done0 = &done0;
    // The watchdog makes every rank give up on a stall; a rank stuck in a system call that
    // never returns cannot, so after a grace period the process exits.
    let watch = watchdog::Watch::new(0..n);
    let sh = shared.clone();
    let _dog = watchdog::Watchdog::start(watch.clone(), move |stopped| {
        sh.set_abort();
        let t0 = Instant::now();
        while t0.elapsed() < STALL_GRACE {
            if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!(
            "replay stalled and a rank did not give up within {} s: exiting",
            STALL_GRACE.as_secs()
        );
        std::process::exit(STALL_EXIT);
    });
    let watch = &watch;
    let t0 = Instant::now();
    let results = match plan {
        Plan::Threads => one_thread_per_rank(tf, root, opts, &shared, done0, watch),
        Plan::Pool(workers) => pooled(tf, root, opts, &shared, done0, workers, watch),
    };
    let wall = t0.elapsed().as_nanos() as u64;
    if watch.fired() {
        return Err(ReplayError::Stalled {
            timeout_s: opts.stall_timeout.as_secs_f64(),
        });
    }
    let mut stats = Vec::with_capacity(results.len());
    for r in results {
        stats.push(r?);
    }
    let summary = rsd_view::stats::summarize(&tf.trace);
    let mut report = Report::build("threads", &stats, wall, tf.header.wall_ns, &summary);
    report.against(tf, opts);
    report.layout = Some(layout::LayoutNote::threads(
        tf.header.node_layout.as_ref(),
        n,
    ));
    if let Plan::Pool(w) = plan {
        // Said in the report: a pool's timing is coarser than a thread per rank's.
        report.mode = format!("threads, pool of {w}");
    }
    Ok(report)
}

/// How long ranks get to give up after a stall before the process exits.
pub const STALL_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// The exit status of a replay the watchdog ended.
pub const STALL_EXIT: i32 = 3;

/// One rank's whole replay, on whatever thread or coroutine runs it; a failure makes the
/// other ranks give up (see [`threads::Shared::abort`]).
fn replay_rank(
    rank: u32,
    sh: &std::sync::Arc<threads::Shared>,
    opts: &Options,
    root: &Root,
    nodes: &[rsd::trace::Node],
    done0: &std::sync::Arc<std::sync::atomic::AtomicU64>,
    watch: &std::sync::Arc<watchdog::Watch>,
) -> Result<report::RankStats, ReplayError> {
    let rt = threads::ThreadsRuntime::new(rank, sh.clone());
    let mut eng = engine::RankEngine::new(rank, opts, root, rt)
        .with_watch(watch.clone(), rank as usize)
        .with_deps(sh.io_deps.get().cloned());
    if rank == 0 {
        eng = eng.with_progress(done0.clone());
    }
    let r = eng.run(nodes);
    if r.is_err() {
        sh.set_abort();
    }
    sh.finish(rank);
    r
}

/// Every rank on its own OS thread.
fn one_thread_per_rank(
    tf: &TraceFile,
    root: &Root,
    opts: &Options,
    shared: &std::sync::Arc<threads::Shared>,
    done0: &std::sync::Arc<std::sync::atomic::AtomicU64>,
    watch: &std::sync::Arc<watchdog::Watch>,
) -> Vec<Result<report::RankStats, ReplayError>> {
    let n = nranks(tf);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for rank in 0..n {
            let sh = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("rank{rank}"))
                .stack_size(RANK_STACK)
                .spawn_scoped(s, move || {
                    replay_rank(rank, &sh, opts, root, &tf.trace.nodes, done0, watch)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.set_abort();
                    handles.push(s.spawn(move || {
                        Err(ReplayError::Thread(format!(
                            "cannot start the thread of rank {rank}: {e}"
                        )))
                    }));
                    break;
                }
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(ReplayError::Thread("a rank thread panicked".into())))
            })
            .collect()
    })
}

/// Every rank as a coroutine on `workers` OS threads ([`sched`]). A coroutine's body must
/// own what it uses, so the trace's events, the options and the root are shared by `Arc`
/// (one copy for the whole replay, not one per rank).
fn pooled(
    tf: &TraceFile,
    root: &Root,
    opts: &Options,
    shared: &std::sync::Arc<threads::Shared>,
    done0: &std::sync::Arc<std::sync::atomic::AtomicU64>,
    workers: u32,
    watch: &std::sync::Arc<watchdog::Watch>,
) -> Vec<Result<report::RankStats, ReplayError>> {
    use std::sync::Arc;
    let n = nranks(tf);
    let nodes = Arc::new(tf.trace.nodes.clone());
    let (opts, root) = (Arc::new(opts.clone()), Arc::new(root.clone()));
    sched::run(
        n as usize,
        workers as usize,
        RANK_STACK,
        |i| {
            let (sh, nodes, opts, root, done0, watch) = (
                shared.clone(),
                nodes.clone(),
                opts.clone(),
                root.clone(),
                done0.clone(),
                watch.clone(),
            );
            move || replay_rank(i as u32, &sh, &opts, &root, &nodes, &done0, &watch)
        },
        // A rank that panicked or never started cannot join anything.
        |i| {
            shared.set_abort();
            shared.finish(i as u32);
        },
    )
    .into_iter()
    .map(|r| r.map_err(ReplayError::Thread).and_then(|r| r))
    .collect()
}

/// Whether some collective MPI-IO data call of the trace has nested POSIX calls that move
/// data: then the trace shows what the MPI library wrote for its collectives (an aggregator's
/// writes; nothing under the other ranks' calls), and `--threads` replays that. A trace
/// without them (the POSIX layer not traced, or a library that bypasses POSIX) keeps each
/// rank's own piece, so no data goes missing.
pub fn collectives_have_io_children(nodes: &[rsd::trace::Node]) -> bool {
    use rsd::trace::NodeKind;
    fn moves_data(nodes: &[rsd::trace::Node]) -> bool {
        nodes.iter().any(|n| match &n.kind {
            NodeKind::Event(e) => e.op.dir() != rsd::op::Dir::None || moves_data(&e.children),
            NodeKind::Loop(l) => moves_data(&l.body),
        })
    }
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => {
            (threads::collective_data(e.op) && moves_data(&e.children))
                || collectives_have_io_children(&e.children)
        }
        NodeKind::Loop(l) => collectives_have_io_children(&l.body),
    })
}

/// Reads `trace`, checks `root`, optionally preps, and replays every rank in this process on at
/// most `max_threads` OS threads (`None`: [`Cap::default`]).
pub fn run_threads_file(
    trace: &Path,
    root: &Path,
    opts: &Options,
    prep: bool,
    allow_incomplete: bool,
    max_threads: Option<u32>,
) -> Result<Report, ReplayError> {
    run_threads_file_seeded(
        trace,
        root,
        opts,
        prep,
        allow_incomplete,
        max_threads,
        rsd::draw::DEFAULT_SEED,
    )
}

/// [`run_threads_file`], drawing summarised values with `seed` ([`load_seeded`]).
pub fn run_threads_file_seeded(
    trace: &Path,
    root: &Path,
    opts: &Options,
    prep: bool,
    allow_incomplete: bool,
    max_threads: Option<u32>,
    seed: u64,
) -> Result<Report, ReplayError> {
    let job = ThreadsJob {
        prep,
        allow_incomplete,
        max_threads,
        seed,
        ..ThreadsJob::new(trace, root)
    };
    run_threads_job(&job, opts)
}

/// A `--threads` replay as the command lines ask for it: the trace, the root, and what the
/// options add to [`Options`].
#[derive(Debug, Clone)]
pub struct ThreadsJob<'a> {
    /// The trace file.
    pub trace: &'a Path,
    /// The replay's root.
    pub root: &'a Path,
    /// Create the files the trace reads first (`--prep`).
    pub prep: bool,
    /// Replay a trace flagged incomplete.
    pub allow_incomplete: bool,
    /// `--max-threads` (`None`: [`Cap::default`]).
    pub max_threads: Option<u32>,
    /// The seed of drawn values.
    pub seed: u64,
    /// `--ranks-per-node`: checked against one node ([`layout::check_wanted`]).
    pub ranks_per_node: Option<u32>,
    /// `--repeat`: replays of the trace, one after the other (at least 1).
    pub repeat: u32,
}

impl<'a> ThreadsJob<'a> {
    /// One replay of `trace` under `root` with the defaults.
    pub fn new(trace: &'a Path, root: &'a Path) -> Self {
        ThreadsJob {
            trace,
            root,
            prep: false,
            allow_incomplete: false,
            max_threads: None,
            seed: rsd::draw::DEFAULT_SEED,
            ranks_per_node: None,
            repeat: 1,
        }
    }
}

/// Reads the job's trace, checks it, the root and the layout asked for, optionally preps,
/// and replays every rank in this process `repeat` times: the report of the median replay,
/// with the prediction from all of them ([`Report::predict`]).
pub fn run_threads_job(job: &ThreadsJob, opts: &Options) -> Result<Report, ReplayError> {
    let max_threads = job.max_threads.map(Cap::user).unwrap_or_default();
    let tf = load_seeded(job.trace, job.allow_incomplete, job.seed)?;
    let n = nranks(&tf);
    // Refused before --prep writes anything.
    if let Some(p) = job.ranks_per_node {
        layout::check_wanted(p, n, None, true)?;
    }
    plan(n, max_threads, max_map_count())?;
    let opts = &Options {
        comm: check_matching(&tf, opts)?,
        ..opts.clone()
    };
    // Every rank runs on this node, in this process.
    let opts = &compute_choice::choose(&tf, opts, n as usize);
    let root = Root::new(job.root)?;
    if job.prep {
        prep::prep(&tf.trace, &root)?;
    }
    let mut reports = Vec::new();
    for _ in 0..job.repeat.max(1) {
        reports.push(run_threads_capped(&tf, &root, opts, max_threads)?);
    }
    Ok(Report::of_repeats(reports))
}

/// Advice printed after the report when the options fit the node badly: `--comm real` with
/// slept compute gaps where ranks outnumber cores (measured: comm_mix ran 70-77% faster than
/// traced at 8 and 16 ranks on 2 cores; within 6% with `--compute work`).
pub fn advice(opts: &Options, ranks_here: usize) -> Option<String> {
    let (ranks, cores) = clock::node_load(ranks_here);
    (opts.comm == CommMode::Real
        && matches!(opts.compute, ComputeMode::Mean | ComputeMode::Sample)
        && ranks > cores)
        .then(|| {
            format!(
                "note: {ranks} ranks share {cores} cores here; the traced gaps are wall time and \
                 include waits for a core, and slept gaps leave cores idle that the application \
                 kept busy: with --comm real, --compute work replays them as CPU work instead"
            )
        })
}

/// A suggestion for what to do about an error, where there is a useful one.
pub fn hint(e: &ReplayError) -> Option<String> {
    match e {
        ReplayError::Trace(rsd::RsdError::BadMagic { .. }) => {
            Some("iotrex-replay reads .iotrex files written by the tracer, `iotrex synth` or `iotrex extrap`".into())
        }
        ReplayError::Trace(rsd::RsdError::Corrupt { .. } | rsd::RsdError::Truncated { .. }) => {
            Some("the trace is damaged; re-copy or re-trace it".into())
        }
        ReplayError::Trace(rsd::RsdError::Io { .. }) => Some("check the trace's path".into()),
        ReplayError::RankCount { trace, running } => Some(format!(
            "a trace replays on exactly its own rank count; to replay at {running} ranks, extrapolate the {trace}-rank trace (with others at more scales) with `iotrex extrap`"
        )),
        ReplayError::Root { .. } => Some("create the directory (mkdir -p) and check that you may write in it".into()),
        ReplayError::RootReadOnly { .. } => Some("a replay creates and writes the traced files under its root: give a directory on a file system mounted read-write (see `findmnt -T DIR`)".into()),
        ReplayError::Escape { .. } => Some("remove the symlink from the root, or use an empty root".into()),
        ReplayError::NotRegular { .. } => Some("remove the special file from the root, or use an empty root".into()),
        ReplayError::Incomplete { .. } => Some("the counts of an incomplete trace will not match the application's".into()),
        ReplayError::Thread(why) if why.starts_with("cannot") => Some(format!(
            "lower --max-threads: ranks beyond it run as coroutines on that many threads (each rank reserves {} KiB of stack address space and 2 memory maps, a thread 4; see `ulimit -u`, /proc/sys/kernel/threads-max and /proc/sys/vm/max_map_count, which root can raise), or replay under MPI: mpirun -np N iotrex-replay",
            RANK_STACK >> 10
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_fit_the_thread_cap_and_the_memory_maps() {
        let maps = 65_530;
        assert_eq!(plan(1024, 2000, maps).unwrap(), Plan::Threads);
        assert_eq!(plan(1024, 1024, maps).unwrap(), Plan::Threads);
        assert_eq!(plan(1024, 8, maps).unwrap(), Plan::Pool(8));
        assert_eq!(plan(3, 2, maps).unwrap(), Plan::Pool(2));
        // 16,384 threads would need 65,536 maps: a pool of what fits, 7,934 threads.
        assert_eq!(plan(16_384, 20_000, maps).unwrap(), Plan::Pool(7_934));
        assert_eq!(plan(16_384, 8192, maps).unwrap(), Plan::Pool(7_934));
        assert_eq!(plan(16_384, 8, maps).unwrap(), Plan::Pool(8));
        // No --max-threads: a thread per rank up to the cap, beyond it the small default pool.
        let d = Cap {
            per_rank: 8192,
            pool: 16,
        };
        assert_eq!(plan(1024, d, maps).unwrap(), Plan::Threads);
        assert_eq!(plan(16_384, d, maps).unwrap(), Plan::Pool(16));
        // Past ~32,000 ranks the coroutine stacks alone exceed the default limit.
        let e = plan(40_000, 8, maps).unwrap_err();
        assert!(
            e.to_string().contains("vm.max_map_count") && hint(&e).is_some(),
            "{e}"
        );
        assert_eq!(plan(40_000, 8, 1 << 20).unwrap(), Plan::Pool(8));
    }

    #[test]
    fn advice_names_compute_work_only_for_real_comm_on_a_crowded_node() {
        // Far more ranks than any test machine has cores.
        let crowded = 1 << 20;
        let o = |comm, compute| Options {
            comm,
            compute,
            ..Options::default()
        };
        let a = advice(&o(CommMode::Real, ComputeMode::Mean), crowded).expect("advice");
        assert!(a.contains("--compute work"), "{a}");
        assert!(a.contains(&format!("{crowded} ranks")), "{a}");
        assert!(advice(&o(CommMode::Real, ComputeMode::Sample), crowded).is_some());
        assert_eq!(advice(&o(CommMode::Real, ComputeMode::Work), crowded), None);
        assert_eq!(
            advice(&o(CommMode::Delay, ComputeMode::Mean), crowded),
            None
        );
        assert_eq!(advice(&o(CommMode::Real, ComputeMode::None), crowded), None);
    }
}
