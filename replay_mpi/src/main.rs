//! `iotrex-replay`: replays an iotrex trace with real I/O.
//!
//! `mpirun -np N iotrex-replay TRACE --root DIR` replays rank r's calls on MPI rank r, MPI-IO
//! through MPI-IO; `iotrex-replay TRACE --threads --root DIR` replays every rank as a thread
//! without MPI. Arguments are parsed by hand: the replay crate's library must not depend on
//! clap, and the `iotrex replay` subcommand offers the same options with clap's help.

mod mpi_glue;

use replay::engine::RankEngine;
use replay::report::{RankStats, Report};
use replay::{Options, ReplayError, Root};
use std::os::raw::{c_int, c_void};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const HELP: &str = "\
iotrex-replay: replay an iotrex trace with real I/O, under MPI or with threads

Usage:
  mpirun -np N iotrex-replay TRACE --root DIR [options]
  iotrex-replay TRACE --threads --root DIR [options]

Every traced path is re-rooted under DIR (which must exist and be writable); nothing is
written outside it. The rank count must equal the trace's (extrapolate first).

Options:
  --root DIR            where the replay's files go (required)
  --threads             run every rank in this process, without MPI: one thread per rank, or
                        past --max-threads ranks as coroutines sharing that many threads
  --max-threads N       with --threads, at most N OS threads run ranks. Default: one thread
                        per rank up to a quarter of /proc/sys/kernel/threads-max (256 to 8192),
                        beyond that a pool of 4 threads per core (8 to 256). In a pool, a rank
                        waiting in a barrier, receive or delay lets another run, but a blocking
                        I/O call or --compute work holds its thread: at most that many I/O
                        calls are in flight and timing is coarser than one thread per rank
  --comm delay|real|skip
                        non-I/O MPI calls: sleep their recorded mean (default), issue them, or skip.
                        Under MPI, real vector collectives (Gatherv, Scatterv, Allgatherv) first
                        exchange each rank's recorded count, then move those counts; Alltoallv's
                        trace keeps only per-rank totals, so the pairs are a matrix with those
                        sums. With --threads, collectives are thread barriers and move no data.
  --compute mean|sample|work|none
                        compute gaps: sleep the recorded mean (default) or a draw from the
                        histogram; `work`: compute (burn this thread's CPU time) for the gap's
                        shortest recorded instance, so ranks that share cores compete for them
                        as the traced ones did and the time they waited for a core is not
                        replayed twice (use with --comm real when the traced or replaying node
                        has fewer cores than ranks; lateness is not measured); or none
  --collective-io library|ranks
                        with --threads, collective MPI-IO data calls issue, after a barrier, the
                        POSIX calls the MPI library made for them when traced (`library`,
                        default: collective buffering's aggregator writes, nothing from the
                        other ranks; used when the trace recorded such calls) or each rank's
                        own piece at its view's offsets (`ranks`). Under MPI the library does
                        its own collective I/O.
  --time-scale F        multiply every delay by F (default 1)
  --stall-timeout SECS  end the replay when a rank stays in one call longer than SECS (default
                        60) plus ten times that call's longest traced duration (a receive whose
                        message never comes, a deadlock): every rank's current call is printed
                        and the job aborts with a non-zero status
  --layer app|posix     issue application calls (default) or only the POSIX view
  --prep                first create the files the trace reads before writing, at their sizes
  --allow-incomplete    replay a trace flagged incomplete
  --json FILE           also write the report as JSON

Example:
  mpirun -np 8 iotrex-replay app.8.iotrex --root /scratch/replay --comm real --json r.json";

struct Args {
    trace: PathBuf,
    root: PathBuf,
    threads: bool,
    max_threads: Option<u32>,
    prep: bool,
    allow_incomplete: bool,
    json: Option<PathBuf>,
    opts: Options,
}

fn usage(msg: String) -> ReplayError {
    ReplayError::BadOption {
        flag: "usage",
        why: msg,
    }
}

fn parse_args(argv: &[String]) -> Result<Option<Args>, ReplayError> {
    let mut trace = None;
    let mut root = None;
    let mut a = Args {
        trace: PathBuf::new(),
        root: PathBuf::new(),
        threads: false,
        max_threads: None,
        prep: false,
        allow_incomplete: false,
        json: None,
        opts: Options::default(),
    };
    let mut it = argv.iter().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &'static str| -> Result<String, ReplayError> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| ReplayError::BadOption {
                    flag: name,
                    why: "needs a value".into(),
                })
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--root" => root = Some(PathBuf::from(value("--root")?)),
            "--threads" => a.threads = true,
            "--max-threads" => {
                a.max_threads = Some(replay::parse_max_threads(&value("--max-threads")?)?)
            }
            "--prep" => a.prep = true,
            "--allow-incomplete" => a.allow_incomplete = true,
            "--json" => a.json = Some(PathBuf::from(value("--json")?)),
            "--comm" => a.opts.comm = replay::parse_comm(&value("--comm")?)?,
            "--compute" => a.opts.compute = replay::parse_compute(&value("--compute")?)?,
            "--collective-io" => {
                a.opts.collective_io = replay::parse_collective_io(&value("--collective-io")?)?
            }
            "--layer" => a.opts.layer = replay::parse_layer(&value("--layer")?)?,
            "--time-scale" => a.opts.time_scale = replay::parse_scale(&value("--time-scale")?)?,
            "--stall-timeout" => {
                a.opts.stall_timeout = replay::parse_stall_timeout(&value("--stall-timeout")?)?
            }
            f if f.starts_with('-') => {
                return Err(usage(format!("unknown option {f} (see --help)")));
            }
            _ if trace.is_none() => trace = Some(PathBuf::from(arg)),
            _ => return Err(usage(format!("unexpected argument {arg} (one trace only)"))),
        }
    }
    a.trace = trace.ok_or_else(|| usage("missing TRACE (see --help)".into()))?;
    a.root = root.ok_or_else(|| ReplayError::BadOption {
        flag: "--root",
        why: "is required: the directory the replay writes under".into(),
    })?;
    Ok(Some(a))
}

fn fail(e: &ReplayError) -> ExitCode {
    eprintln!("error: {e}");
    if let Some(h) = replay::hint(e) {
        eprintln!("hint: {h}");
    }
    ExitCode::FAILURE
}

fn write_json(path: &std::path::Path, r: &Report) -> Result<(), ReplayError> {
    let s = serde_json::to_string_pretty(r).map_err(|e| ReplayError::Json {
        path: path.to_path_buf(),
        error: e.to_string(),
    })?;
    std::fs::write(path, s + "\n").map_err(|e| ReplayError::Json {
        path: path.to_path_buf(),
        error: e.to_string(),
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let args = match parse_args(&argv) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let c = fail(&e);
            eprintln!("usage: iotrex-replay TRACE --root DIR [--threads] [options]; see --help");
            return c;
        }
    };
    if args.threads {
        let r = replay::run_threads_file(
            &args.trace,
            &args.root,
            &args.opts,
            args.prep,
            args.allow_incomplete,
            args.max_threads,
        )
        .and_then(|r| {
            if let Some(j) = &args.json {
                write_json(j, &r)?;
            }
            Ok(r)
        });
        return match r {
            Ok(r) => {
                print!("{}", r.render());
                if let Some(a) = replay::advice(&args.opts, r.ranks as usize) {
                    println!("{a}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    run_mpi(&args)
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

fn run_mpi(args: &Args) -> ExitCode {
    let (rank, size) = mpi_init();
    let p = mpi_glue::Predef::get();
    let code = match mpi_replay(args, &p, rank, size) {
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
    args: &Args,
    p: &mpi_glue::Predef,
    rank: c_int,
    size: c_int,
) -> Result<(), (ReplayError, bool)> {
    let everywhere = |e| (e, true);
    // Every rank reads the trace and checks the root: the errors are the same everywhere.
    let tf = replay::load(&args.trace, args.allow_incomplete).map_err(everywhere)?;
    let n = replay::nranks(&tf);
    if n != size as u32 {
        return Err(everywhere(ReplayError::RankCount {
            trace: n,
            running: size as u32,
        }));
    }
    let root = Root::new(&args.root).map_err(everywhere)?;
    // Rank 0 checks the matching of the whole trace (one walk of every rank's calls, not one
    // per rank) before anything is issued; every rank stops on its verdict, rank 0 says why.
    let matched = if rank == 0 {
        replay::check_matching(&tf, &args.opts)
    } else {
        Ok(())
    };
    if !all_ok(p, matched.is_ok()) {
        return Err(everywhere(matched.err().unwrap_or(ReplayError::Mpi(
            "rank 0 found the trace's messages do not match".into(),
        ))));
    }
    let prep = if rank == 0 && args.prep {
        replay::prep::prep(&tf.trace, &root).map(|_| ())
    } else {
        Ok(())
    };
    if !all_ok(p, prep.is_ok()) {
        return Err((
            prep.err()
                .unwrap_or(ReplayError::Mpi("--prep failed on rank 0".into())),
            false,
        ));
    }
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
    barrier(p);
    let t0 = Instant::now();
    let mut engine = RankEngine::new(
        rank as u32,
        &args.opts,
        &root,
        mpi_glue::MpiRuntime::new(*p),
    );
    if bar.is_some() {
        engine = engine.with_progress(done);
    }
    // Each rank watches its own calls: a rank stuck past its bound aborts the whole job, which
    // releases the ranks waiting for it.
    let watch = replay::watchdog::Watch::new([rank as u32]);
    let timeout_s = args.opts.stall_timeout.as_secs_f64();
    let _dog = replay::watchdog::Watchdog::start(watch.clone(), move |_| {
        fail(&ReplayError::Stalled { timeout_s });
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
    let ok = result.is_ok();
    if !ok {
        // The other ranks may be waiting in a collective for this one: stop the job.
        if let Err(e) = &result {
            fail(e);
        }
        // SAFETY: MPI is initialised; aborting the whole job is the only way to release ranks
        // blocked in a collective this rank will never join.
        unsafe { mpi::ffi::MPI_Abort(p.world, 1) };
    }
    barrier(p);
    let wall = t0.elapsed().as_nanos() as u64;
    let stats = result.map_err(|e| (e, false))?;
    let all = gather_stats(p, rank, size, &stats);
    if rank == 0 {
        let summary = rsd::stats::summarize(&tf.trace);
        let report = Report::build("mpi", &all, wall, tf.header.wall_ns, &summary);
        print!("{}", report.render());
        if let Some(a) = replay::advice(&args.opts, 1) {
            println!("{a}");
        }
        if let Some(j) = &args.json {
            write_json(j, &report).map_err(|e| (e, false))?;
        }
    }
    Ok(())
}
