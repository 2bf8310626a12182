//! `iotrex-replay`: replays an iotrex trace with real I/O.
//!
//! `mpirun -np N iotrex-replay TRACE --root DIR` replays rank r's calls on MPI rank r, MPI-IO
//! through MPI-IO; `iotrex-replay TRACE --threads --root DIR` replays every rank as a thread
//! without MPI. The options are `replay::cli::ReplayArgs`, the one definition `iotrex replay`
//! uses too.

mod mpi_glue;
mod nodes;

use clap::{CommandFactory, FromArgMatches, Parser};
use replay::cli::ReplayArgs;
use replay::engine::RankEngine;
use replay::layout::LayoutNote;
use replay::report::{RankStats, Report};
use replay::{CommMode, ComputeMode, Options, ReplayError, Root};
use std::os::raw::{c_int, c_void};
use std::process::ExitCode;
use std::time::Instant;

const LONG_ABOUT: &str = "\
Replay an iotrex trace with real I/O: rank r's calls on MPI rank r under mpirun (MPI-IO through \
MPI-IO), or with --threads every rank in this process without MPI. Every traced path is \
re-rooted under --root; nothing is written outside it. Under MPI the rank count must equal the \
trace's (extrapolate first); the replay learns its own node layout and says whether it is the \
trace's, and --ranks-per-node checks it. The report ends with the predicted run time of the \
application on the storage replayed on, with an interval (--repeat K). The options are the same \
as `iotrex replay`'s.";

const AFTER_HELP: &str = "\
Usage:
  mpirun -np N iotrex-replay TRACE --root DIR [options]
  iotrex-replay TRACE --threads --root DIR [options]

Example:
  mpirun -np 8 iotrex-replay app.8.iotrex --root /scratch/replay --comm real --json-out r.json";

/// The command line: the replay options of `replay::cli` (the same definition as `iotrex
/// replay`), under this binary's name and help.
#[derive(Debug, Parser)]
#[command(
    name = "iotrex-replay",
    version,
    about = "Replay an iotrex trace with real I/O, under MPI or with threads",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(flatten)]
    args: ReplayArgs,
}

/// Parses the command line (exits with clap's usage error and status 2 on bad arguments).
fn parse_args() -> ReplayArgs {
    let mut cmd = Cli::command().mut_arg(replay::cli::JSON_OUT, |a| {
        // One spelling in the help of both commands (`--json-out`); the older one still works.
        a.alias(replay::cli::JSON_ALIAS)
    });
    let m = cmd.get_matches_mut();
    match Cli::from_arg_matches(&m) {
        Ok(c) => c.args,
        Err(e) => e.format(&mut cmd).exit(),
    }
}

fn fail(e: &ReplayError) -> ExitCode {
    eprintln!("error: {e}");
    if let Some(h) = replay::hint(e) {
        eprintln!("hint: {h}");
    }
    ExitCode::FAILURE
}

/// The file whose exclusive creation elects the one rank that prints an error every rank may
/// hit at once (a failing call of an SPMD trace, a stall): in the replay's root, which all
/// ranks share; rank 0 removes a stale one before the ranks start.
const FIRST_ERROR: &str = ".iotrex-replay-error";

/// Prints `e` unless another rank of the job already printed its error (see [`FIRST_ERROR`]):
/// under mpirun the ranks that failed would otherwise each say it, interleaved.
fn fail_first(root: &std::path::Path, rank: c_int, e: &ReplayError) {
    let first = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(root.join(FIRST_ERROR))
        .map(|mut f| {
            use std::io::Write;
            let _ = writeln!(f, "rank {rank}: {e}");
        });
    match first {
        Ok(()) => {
            eprintln!("error: rank {rank}: {e}");
            if let Some(h) = replay::hint(e) {
                eprintln!("hint: {h}");
            }
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        // The root is not writable: better every rank's error than none.
        Err(_) => {
            fail(e);
        }
    }
}

fn main() -> ExitCode {
    let args = parse_args();
    if args.threads {
        return match args.run_threads() {
            Ok(r) => {
                print!("{}", args.render(&r, r.ranks as usize));
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    run_mpi(&args, &args.options())
}

fn mpi_init() -> (c_int, c_int) {
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialised once, before any other MPI call, with no arguments (Open MPI
    // takes them from the environment); rank and size are valid out-parameters.
    unsafe {
        mpi::ffi::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut());
        let w = mpi::ffi::RSMPI_COMM_WORLD;
        mpi::ffi::MPI_Comm_rank(w, &mut rank);
        mpi::ffi::MPI_Comm_size(w, &mut size);
    }
    (rank, size)
}

fn mpi_finalize() {
    // SAFETY: called once, after every other MPI call of this process.
    unsafe { mpi::ffi::MPI_Finalize() };
}

fn barrier(p: &mpi_glue::Predef) {
    // SAFETY: MPI is initialised and `world` is MPI_COMM_WORLD.
    unsafe { mpi::ffi::MPI_Barrier(p.world) };
}

/// The numbers this replay fills the trace's run values with ([`rsd::runvalue::Fresh`]):
/// rank 0's, broadcast, so that every rank names the same files (a lock file rank 0 creates
/// and the others open); the host name each rank's own.
fn fresh_run_values(p: &mpi_glue::Predef, rank: c_int) -> rsd::runvalue::Fresh {
    let mine = rsd::runvalue::Fresh::here();
    let mut v: [i64; 4] = if rank == 0 {
        [mine.job, mine.pid, mine.time, mine.other]
    } else {
        [0; 4]
    };
    // SAFETY: 32 bytes each way as MPI_BYTE-sized u8, root 0, over MPI_COMM_WORLD, which
    // every rank calls this on.
    unsafe {
        mpi::ffi::MPI_Bcast(
            v.as_mut_ptr() as *mut c_void,
            std::mem::size_of_val(&v) as c_int,
            p.u8,
            0,
            p.world,
        )
    };
    rsd::runvalue::Fresh {
        job: v[0],
        pid: v[1],
        time: v[2],
        other: v[3],
        // Each rank its own node's name, as each traced rank named its own.
        host: mine.host,
    }
}

/// Whether every rank says `ok` (a logical AND over MPI_COMM_WORLD), so that all ranks stop
/// together on an error only some of them see.
fn all_ok(p: &mpi_glue::Predef, ok: bool) -> bool {
    let mine: c_int = ok as c_int;
    let mut all: c_int = 0;
    // SAFETY: one int each way, MPI_INT-sized via the rsmpi int32 type, over MPI_COMM_WORLD.
    unsafe {
        mpi::ffi::MPI_Allreduce(
            &mine as *const c_int as *const c_void,
            &mut all as *mut c_int as *mut c_void,
            1,
            mpi::ffi::RSMPI_INT32_T,
            mpi::ffi::RSMPI_MIN,
            p.world,
        )
    };
    all == 1
}

/// Gathers every rank's stats (as JSON) on rank 0.
fn gather_stats(
    p: &mpi_glue::Predef,
    rank: c_int,
    size: c_int,
    mine: &RankStats,
) -> Vec<RankStats> {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let n = bytes.len() as c_int;
    let mut lens = vec![0 as c_int; size as usize];
    // SAFETY: one int from each rank into `size` ints at the root, over MPI_COMM_WORLD.
    unsafe {
        mpi::ffi::MPI_Gather(
            &n as *const c_int as *const c_void,
            1,
            mpi::ffi::RSMPI_INT32_T,
            lens.as_mut_ptr() as *mut c_void,
            1,
            mpi::ffi::RSMPI_INT32_T,
            0,
            p.world,
        )
    };
    let displs: Vec<c_int> = lens
        .iter()
        .scan(0, |acc, l| {
            let d = *acc;
            *acc += l;
            Some(d)
        })
        .collect();
    let total: c_int = lens.iter().sum();
    let mut all = vec![0u8; total.max(0) as usize];
    // SAFETY: each rank sends its `n` bytes; the root receives them at `displs` in a buffer of
    // their total size. Non-root ranks' receive arguments are ignored by MPI.
    unsafe {
        mpi::ffi::MPI_Gatherv(
            bytes.as_ptr() as *const c_void,
            n,
            p.u8,
            all.as_mut_ptr() as *mut c_void,
            lens.as_ptr(),
            displs.as_ptr(),
            p.u8,
            0,
            p.world,
        )
    };
    if rank != 0 {
        return Vec::new();
    }
    lens.iter()
        .zip(&displs)
        .filter_map(|(l, d)| serde_json::from_slice(&all[*d as usize..(*d + *l) as usize]).ok())
        .collect()
}

fn run_mpi(args: &ReplayArgs, opts: &Options) -> ExitCode {
    let (rank, size) = mpi_init();
    let p = mpi_glue::Predef::get();
    let code = match mpi_replay(args, opts, &p, rank, size) {
        Ok(()) => ExitCode::SUCCESS,
        Err((e, everywhere)) => {
            // An error every rank sees is printed once; a rank's own error by that rank.
            if rank == 0 || !everywhere {
                fail(&e);
            }
            ExitCode::FAILURE
        }
    };
    mpi_finalize();
    code
}

fn mpi_replay(
    args: &ReplayArgs,
    opts: &Options,
    p: &mpi_glue::Predef,
    rank: c_int,
    size: c_int,
) -> Result<(), (ReplayError, bool)> {
    let everywhere = |e| (e, true);
    // Every rank reads the trace and checks the root: the errors are the same everywhere.
    let fresh = fresh_run_values(p, rank);
    let tf = replay::load_fresh(&args.trace, args.allow_incomplete, args.seed, &fresh)
        .map_err(everywhere)?;
    let n = replay::nranks(&tf);
    if n != size as u32 {
        return Err(everywhere(ReplayError::RankCount {
            trace: n,
            running: size as u32,
        }));
    }
    let layout = learn_layout(args, &tf, p, rank, size)?;
    if let Some(n) = nodes::machine_procs(p, rank) {
        replay::clock::set_machine_procs(n);
    }
    let root = Root::new(&args.root).map_err(everywhere)?;
    // Rank 0 checks the matching of the whole trace (one walk of every rank's calls, not one
    // per rank) before anything is issued; every rank stops on its verdict, rank 0 says why.
    let matched = if rank == 0 {
        replay::check_matching(&tf, opts)
    } else {
        Ok(opts.comm)
    };
    if !all_ok(p, matched.is_ok()) {
        return Err(everywhere(matched.err().unwrap_or(ReplayError::Mpi(
            "rank 0 found the trace's messages do not match".into(),
        ))));
    }
    // The mode rank 0 chose: the others only know the one asked for, which rank 0 keeps or,
    // for the default, turns from real into delay (the minimum of "kept" over the ranks).
    let kept = matched.is_ok_and(|m| m == opts.comm);
    let opts = &Options {
        comm: if all_ok(p, kept) {
            opts.comm
        } else {
            CommMode::Delay
        },
        ..opts.clone()
    };
    let opts = &choose_compute(&tf, opts, p, rank);
    let prep = if rank == 0 && args.prep {
        replay::prep::prep(&tf.trace, &root).map(|_| ())
    } else {
        Ok(())
    };
    if !all_ok(p, prep.is_ok()) {
        // Rank 0 holds the error and prints it; the others only know that it failed.
        return Err(everywhere(
            prep.err()
                .unwrap_or(ReplayError::Mpi("--prep failed on rank 0".into())),
        ));
    }
    if rank == 0 {
        let _ = std::fs::remove_file(args.root.join(FIRST_ERROR));
    }
    let mut reports = Vec::new();
    for _ in 0..args.repeat.max(1) {
        let (wall, stats) = replay_once(args, opts, p, rank, &tf, &root)?;
        let all = gather_stats(p, rank, size, &stats);
        if rank == 0 {
            let summary = rsd_view::stats::summarize(&tf.trace);
            let mut report = Report::build("mpi", &all, wall, tf.header.wall_ns, &summary);
            report.against(&tf, opts);
            report.layout = Some(layout.clone());
            reports.push(report);
        }
    }
    if rank == 0 {
        let report = Report::of_repeats(reports);
        // One rank per process: the advice is about this node's ranks, not the job's.
        print!("{}", args.render(&report, 1));
        args.write_json(&report).map_err(|e| (e, false))?;
    }
    Ok(())
}

/// The compute mode every rank replays with ([`replay::compute_choice::choose`]): each rank
/// judges its own node (one rank per process), and `work` anywhere is `work` everywhere, so
/// that the ranks pace their gaps alike. Rank 0's note says why.
fn choose_compute(
    tf: &rsd::TraceFile,
    opts: &Options,
    p: &mpi_glue::Predef,
    rank: c_int,
) -> Options {
    let mut mine = replay::compute_choice::choose(tf, opts, 1);
    if !opts.compute_auto {
        return mine;
    }
    let mean_everywhere = all_ok(p, mine.compute != ComputeMode::Work);
    if !mean_everywhere && mine.compute != ComputeMode::Work {
        mine.compute = ComputeMode::Work;
        mine.compute_note = (rank == 0)
            .then(|| "another node of this replay has more ranks than cores".to_string());
    }
    mine
}

/// Learns where the replay's ranks run (collective) and, on rank 0, compares it with the
/// trace's layout and checks `--ranks-per-node`: every rank stops when it fails.
fn learn_layout(
    args: &ReplayArgs,
    tf: &rsd::TraceFile,
    p: &mpi_glue::Predef,
    rank: c_int,
    size: c_int,
) -> Result<LayoutNote, (ReplayError, bool)> {
    let mine = nodes::learn(p, rank, size);
    let n = size as u32;
    let checked = match (rank, args.ranks_per_node) {
        (0, Some(per_node)) => replay::layout::check_wanted(per_node, n, mine.as_ref(), false),
        _ => Ok(()),
    };
    if !all_ok(p, checked.is_ok()) {
        return Err((
            checked.err().unwrap_or(ReplayError::Mpi(
                "rank 0 found the launch's layout is not the one --ranks-per-node asks for".into(),
            )),
            true,
        ));
    }
    Ok(LayoutNote::mpi(
        tf.header.node_layout.as_ref(),
        mine.as_ref(),
        n,
    ))
}

/// One timed replay of this rank's calls, from a barrier of every rank to another: the wall
/// time (start-up left out) and this rank's stats.
fn replay_once(
    args: &ReplayArgs,
    opts: &Options,
    p: &mpi_glue::Predef,
    rank: c_int,
    tf: &rsd::TraceFile,
    root: &Root,
) -> Result<(u64, RankStats), (ReplayError, bool)> {
    // Rank 0 draws a bar of its own calls on a terminal (counted before the timed run).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let bar = (rank == 0)
        .then(|| {
            replay::progress::Progress::start(
                || replay::progress::calls_of(&tf.trace.nodes, 0),
                done.clone(),
                "rank 0:",
            )
        })
        .flatten();
    let deps = opts
        .io_deps
        .then(|| replay::deps::IoDeps::of(tf, replay::nranks(tf)))
        .flatten()
        .map(std::sync::Arc::new);
    // Collective (a communicator of its own), before the timed run.
    let rt = mpi_glue::MpiRuntime::new(*p)
        .with_cache_hints(&tf.header)
        .with_io_deps(deps.is_some())
        .map_err(|m| (ReplayError::Mpi(m), true))?;
    barrier(p);
    let t0 = Instant::now();
    let mut engine = RankEngine::new(rank as u32, opts, root, rt).with_deps(deps);
    if bar.is_some() {
        engine = engine.with_progress(done);
    }
    // Each rank watches its own calls: a rank stuck past its bound aborts the whole job, which
    // releases the ranks waiting for it.
    let watch = replay::watchdog::Watch::new([rank as u32]);
    let timeout_s = opts.stall_timeout.as_secs_f64();
    let dog_root = args.root.clone();
    let _dog = replay::watchdog::Watchdog::start(watch.clone(), move |_| {
        fail_first(&dog_root, rank, &ReplayError::Stalled { timeout_s });
        // SAFETY: MPI is initialised; MPI_Abort ends every process of the job, including this
        // one, from any thread in practice (Open MPI and MPICH kill the job through the
        // launcher). Should it return, the process exits after the grace period.
        unsafe { mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, replay::STALL_EXIT) };
        std::thread::sleep(replay::STALL_GRACE);
        std::process::exit(replay::STALL_EXIT);
    });
    engine = engine.with_watch(watch, 0);
    let result = engine.run_with(&tf.trace.nodes, |rt| rt.finish());
    drop(bar);
    if let Err(e) = &result {
        // The other ranks may be waiting in a collective for this one: stop the job.
        fail_first(&args.root, rank, e);
        // SAFETY: MPI is initialised; aborting the whole job is the only way to release ranks
        // blocked in a collective this rank will never join.
        unsafe { mpi::ffi::MPI_Abort(p.world, 1) };
    }
    barrier(p);
    let wall = t0.elapsed().as_nanos() as u64;
    result.map(|s| (wall, s)).map_err(|e| (e, false))
}
