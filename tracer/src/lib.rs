//! The iotrex LD_PRELOAD tracer, `libiotrex_tracer.so`.
//!
//! Preloaded into an unmodified, dynamically linked program (`mpirun -x LD_PRELOAD=...`), it
//! interposes the MPI-IO and MPI calls (forwarding to `PMPI_*`), the POSIX file calls and the
//! stdio calls (forwarding to the next definition, `dlsym(RTLD_NEXT)`). Each rank folds its calls
//! online with [`rsd::Compressor`]; inside `MPI_Finalize` the ranks merge their traces over a
//! radix tree on a private communicator and rank 0 writes one `.iotrex` file (`IOTREX_OUT`, or
//! `./<exe>.<nranks>.iotrex`). A serial program writes its trace at exit.
//!
//! Environment: `IOTREX_OUT`, `IOTREX_STACK_DEPTH` (call-site frames, default 4, 0 = off),
//! `IOTREX_RAW=1` (also write `<out>.rank<r>.jsonl`, `<out>` being `IOTREX_OUT` without its
//! `.iotrex`: `app.8.rank0.jsonl` for `app.8.iotrex`; one flat event per line, for tests),
//! `IOTREX_MAX_NODES` (compressed nodes per rank before recording stops, flagged),
//! `IOTREX_MAX_PROCESSES` (forked children traced per rank, default 1024, see [`procs`]),
//! `IOTREX_APPROX` (`comm` by default, `none`, `io`, `comm,io`: which parameters may be kept
//! as statistical summaries when their exact form exceeds `IOTREX_VALUE_BUDGET` values,
//! default 64; see [`rsd::approx`]), `IOTREX_DISABLE=1` (pass everything through), `IOTREX_VERBOSE=1` (rank 0 prints where the
//! trace went, its size and the merge time), `IOTREX_ONE_WRITER=1` (set by `iotrex trace` for
//! a plain command: the first process to write claims `IOTREX_OUT`, later ones write
//! `<stem>.pid<PID>.iotrex`), `IOTREX_JOB` (the id shared by the processes of one job, see
//! [`job`]), `IOTREX_ALL_PROCESSES=1` (processes of an MPI job that are not ranks keep their
//! own traces, as `<stem>.nonrank-<exe>-<pid>.iotrex`; without it they write nothing),
//! `IOTREX_THROTTLE` (`iotrex sensitivity`'s delay of chosen ranks' I/O calls, see [`throttle`]),
//! `IOTREX_HDF5=0` (do not record the HDF5 layer, which is recorded by default: HDF5 calls
//! with the MPI, MPI-IO and POSIX calls they make as children, see [`hdf5`]; with `0` HDF5's
//! calls pass through and what it makes is recorded at the top level), `IOTREX_PNETCDF=0` (the
//! PnetCDF layer likewise, see [`pnetcdf`]), `IOTREX_NETCDF=0` (the NetCDF layer: `nc_*` calls
//! with what NetCDF made as children, HDF5 calls among them unless `IOTREX_HDF5=0`, see
//! [`netcdf`]).
//!
//! A process killed by SIGTERM, SIGINT or SIGHUP writes what it recorded from the signal
//! handler ([`signals`]), per rank and flagged incomplete, then dies of the signal.
//!
//! Rules the code keeps: a thread-local re-entry guard ([`guard`]) makes the tracer's own
//! work and everything inside MPI calls pass straight through; no std I/O or printing happens
//! inside a hook on the application's path; panics are caught before they reach an `extern "C"`
//! boundary and disable the tracer with one line on stderr.
//!
//! A child forked through `fork` is traced as a process of its rank ([`procs`],
//! `docs/processes.md`; `IOTREX_MAX_PROCESSES` bounds how many, default 1024 per rank); a
//! child forked any other way (`vfork`, served by `fork` in [`exec`], or the raw system call)
//! stops tracing.

#![deny(unsafe_op_in_unsafe_fn)]

#[macro_use]
mod hook;
pub mod callsite;
pub mod clock;
pub mod dup;
pub mod elf;
pub mod exclude;
pub mod exec;
pub mod finalize;
pub mod guard;
pub mod hdf5;
pub mod job;
pub mod modules;
pub mod mpi;
pub mod netcdf;
pub mod outfile;
pub mod own;
pub mod pagemap;
pub mod paths;
pub mod pnetcdf;
pub mod posix;
pub mod posix_more;
pub mod procs;
pub(crate) mod rawfd;
pub(crate) mod real;
pub mod signals;
pub mod spawn;
pub mod state;
pub mod stdio;
pub mod throttle;
pub mod unseen;
pub mod waits;

use std::sync::atomic::Ordering;

fn env_num<T: std::str::FromStr>(k: &str) -> Option<T> {
    std::env::var(k).ok().and_then(|v| v.trim().parse().ok())
}

/// Whether a library layer is recorded: on unless its variable says `0` (`IOTREX_HDF5=0`,
/// `iotrex trace --no-hdf5`). On by default because every consumer sees through containers
/// (see `docs/hdf5.md`), and free for a program without the library: its hooks are never
/// called.
fn layer_on(var: &str) -> bool {
    std::env::var(var).map_or(true, |v| v.trim() != "0")
}

fn init() {
    let _g = guard::Enter::new(guard::BUSY);
    let r = std::panic::catch_unwind(|| {
        // Our panics are reported by `disable` in one line; the default hook would print more,
        // through std's stderr.
        std::panic::set_hook(Box::new(|_| {}));
        // The unit-test binary links this crate as an rlib, constructor included; tracing it
        // would leave a trace file in the source tree after every `cargo test`.
        if cfg!(test) || std::env::var("IOTREX_DISABLE").is_ok_and(|v| v == "1") {
            return;
        }
        let argv: Vec<String> = std::fs::read("/proc/self/cmdline")
            .map(|b| {
                b.split(|&c| c == 0)
                    .filter(|s| !s.is_empty())
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let exe = std::fs::read_link("/proc/self/exe")
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "trace".to_string());
        let env_rank = env_num("OMPI_COMM_WORLD_RANK")
            .or_else(|| env_num("PMIX_RANK"))
            .or_else(|| env_num("PMI_RANK"));
        let env_size = env_num("OMPI_COMM_WORLD_SIZE").or_else(|| env_num("PMI_SIZE"));
        throttle::init(env_rank);
        let exclude_error = exclude::init();
        let (approx, approx_error) = match rsd::approx::Policy::from_env() {
            Ok(p) => (p, None),
            Err(e) => (rsd::approx::Policy::default(), Some(e.to_string())),
        };
        let cfg = state::Config {
            depth: env_num("IOTREX_STACK_DEPTH").unwrap_or(4),
            raw: std::env::var("IOTREX_RAW").is_ok_and(|v| v == "1"),
            out: std::env::var("IOTREX_OUT").ok(),
            exe,
            argv,
            max_nodes: env_num("IOTREX_MAX_NODES").unwrap_or(1 << 20),
            session_dirs: paths::session_dirs_from_env(),
            env_rank,
            env_size,
            verbose: std::env::var("IOTREX_VERBOSE").is_ok_and(|v| v == "1"),
            approx,
            approx_error,
            exclude_error,
            drains: rsd::approx::Policy::orders(
                std::env::var(rsd::approx::APPROX_ENV).ok().as_deref(),
            ),
            build_id: elf::build_id("/proc/self/exe"),
            run_ids: (std::env::var("IOTREX_RUN_IDS").as_deref() != Ok("0")).then(|| {
                rsd::runvalue::RunIds {
                    host: mpi::config::host_text(),
                    ..rsd::runvalue::RunIds::here(|v| std::env::var(v).ok())
                }
            }),
        };
        clock::init();
        waits::init();
        job::init(state::now_ns());
        finalize::init();
        callsite::init(cfg.depth);
        // SAFETY: registering a plain function as the fork-child handler; it only stores
        // atomics, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
        let st = state::State::new(cfg, state::now_ns());
        match state::STATE.lock() {
            Ok(mut g) => *g = Some(st),
            Err(p) => *p.into_inner() = Some(st),
        }
        finalize::ONE_WRITER.store(
            std::env::var("IOTREX_ONE_WRITER").is_ok_and(|v| v == "1"),
            Ordering::SeqCst,
        );
        hdf5::ENABLED.store(layer_on("IOTREX_HDF5"), Ordering::SeqCst);
        pnetcdf::ENABLED.store(layer_on("IOTREX_PNETCDF"), Ordering::SeqCst);
        netcdf::ENABLED.store(layer_on("IOTREX_NETCDF"), Ordering::SeqCst);
        state::RECORDING.store(true, Ordering::SeqCst);
        exec::remember_pid();
        // An image a traced process exec'd: its place in that process's tree.
        procs::join_from_env();
        // After the state exists: a signal from here on finds something to write.
        signals::install();
    });
    if r.is_err() {
        state::say("tracer disabled: internal error at start-up");
    }
}

extern "C" fn after_fork_child() {
    state::FORKED.store(true, Ordering::SeqCst);
    state::RECORDING.store(false, Ordering::SeqCst);
    // Not its parent's process: the `fork` hook makes it a traced child of its own after
    // this, when it is one.
    procs::forget_in_child();
}

/// Hook: `fork`. A traced child gets its number and slot before the real call ([`procs`]),
/// with the state lock held across it (the child must not inherit it held by a thread it does
/// not have), and its state reset after it. Under the re-entry guard (the tracer's own forks,
/// none of which exist, or a fork inside an MPI call) it is the real call alone.
///
/// # Safety
/// Same contract as `fork`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fork() -> libc::pid_t {
    let Some(real) = real::real!("fork", unsafe extern "C" fn() -> libc::pid_t) else {
        posix::set_errno(libc::ENOSYS);
        return -1;
    };
    if state::traceable().is_none() {
        // SAFETY: fork has no preconditions.
        return unsafe { real() };
    }
    let plan = procs::before_fork(callsite::signature());
    let _g = guard::Enter::new(guard::BUSY);
    if plan.is_some() {
        state::STATE.hold_for_fork();
    }
    // SAFETY: fork has no preconditions.
    let pid = unsafe { real() };
    if let Some(p) = plan {
        state::STATE.release_after_fork(pid == 0);
        if pid == 0 {
            procs::in_child(p);
        }
    }
    pid
}

extern "C" fn ctor() {
    init();
}

extern "C" fn dtor() {
    let _g = guard::Enter::new(guard::BUSY);
    if std::panic::catch_unwind(finalize::at_exit).is_err() {
        state::say("internal error writing the trace at exit");
    }
}

// Constructor and destructor of the shared object, without a ctor crate.
#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = ctor;

#[used]
#[unsafe(link_section = ".fini_array")]
static FINI: extern "C" fn() = dtor;

/// Start routine and argument of a thread the MPI runtime creates.
struct Start {
    f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
}

extern "C" fn runtime_thread(p: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `p` is the Box<Start> leaked by `pthread_create` below, handed over exactly once.
    let s = unsafe { Box::from_raw(p as *mut Start) };
    // Progress and event threads of the MPI runtime never trace.
    guard::set_forever(guard::BUSY);
    // Nor do they take the terminating signals: the kernel then delivers them to an
    // application thread. The handler must allocate to encode the trace, and these threads
    // are the ones at work when mpirun aborts a job (they handle the abort); a signal landing
    // on one while it holds malloc's lock would block the handler until SIGKILL.
    signals::block_in_this_thread();
    (s.f)(s.arg)
}

type PthreadCreate = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    *mut libc::c_void,
) -> libc::c_int;

/// Hook: `pthread_create`. Threads started while an MPI call runs (the runtime's progress
/// threads, started inside `MPI_Init`) are marked so their I/O is never recorded.
///
/// # Safety
/// Same contract as `pthread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    t: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> libc::c_int {
    let Some(real) = real::real!("pthread_create", PthreadCreate) else {
        return libc::ENOSYS;
    };
    if guard::mode() != guard::BUSY {
        // SAFETY: forwarding the caller's arguments.
        return unsafe { real(t, attr, f, arg) };
    }
    let p = Box::into_raw(Box::new(Start { f, arg }));
    // SAFETY: forwarding the caller's arguments with our start routine, which takes `p`.
    let r = unsafe { real(t, attr, runtime_thread, p.cast()) };
    if r != 0 {
        // SAFETY: the thread was not created, so `p` was not handed over.
        drop(unsafe { Box::from_raw(p) });
    }
    r
}
