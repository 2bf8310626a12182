//! Run values on the emulated cluster (`tests/it/common/cluster.rs`), under Open MPI's defaults:
//! numbers that belong to the run, not the program, carried as run values.
//!
//! - Across nodes OMPIO's shared-file-pointer component is `lockedfile`, which names its lock
//!   file `FILE-JOBID-PID.lock`: the IOR-like app's MPI-IO (independent and collective) traced
//!   at 2, 3, 4, 5 nodes x 2 ranks extrapolates to 8 x 2 and `iotrex diff` against the real
//!   8 x 2 run says identical, the lock-file names compared as run values.
//! - A number in a file name that differs between two runs at one scale (and fits no law of
//!   the scale) is a run value: those inputs extrapolate, the output holds the run value.
//! - A replay fills run values afresh: names none of the traced runs had, and it succeeds.
//! - A number in a path that is one of the run's own ids (a rank's pid, rank 0's pid, the job
//!   id, the start time) is recorded as a run value by the tracer itself: one run per scale
//!   suffices (`tests/apps/run_names.c`).

use crate::common;
use common::cluster::{Cluster, cluster_of};
use rsd::TraceFile;
use rsd::trace::FlatEvent;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// Ranks per node in every run.
const PPN: u32 = 2;
/// The node counts traced as inputs.
const INPUT_NODES: [u32; 4] = [2, 3, 4, 5];
/// The node count extrapolated to (and traced, to compare with).
const TARGET_NODES: u32 = 8;

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Traces the IOR-like app with `args` on `nodes` nodes x [`PPN`] into `trace`.
fn trace(c: &Cluster, nodes: u32, args: &[&str], trace: &Path) {
    trace_app(c, nodes, "ior_like", &[], args, trace);
}

/// Traces the mini-app `app` with `args` on `nodes` nodes x [`PPN`] into `trace`, `iotrex
/// trace` given `flags`.
fn trace_app(
    c: &Cluster,
    nodes: u32,
    app: &str,
    flags: &[&str],
    args: &[&str],
    trace: &Path,
) -> Output {
    let mut v = common::trace_prefix(trace, flags);
    v.extend(c.openmpi(nodes, PPN));
    v.push(common::app(app).into());
    v.extend(args.iter().map(OsString::from));
    let out = c.run(&v, &[]);
    assert!(
        out.status.success(),
        "{nodes} nodes {args:?}: {}",
        text(&out)
    );
    assert!(
        trace.exists(),
        "no trace at {}: {}",
        trace.display(),
        text(&out)
    );
    out
}

/// MPI-IO on one shared file, traced at every input scale and at the target.
struct Shared {
    /// A shared directory, removed when the binary exits (a `TempDir` in a static never is).
    dir: PathBuf,
    inputs: Vec<PathBuf>,
    real: PathBuf,
}

/// The runs of `-a mpiio` plus `extra` (`-c` for collective), traced once per test binary.
fn shared(cell: &'static OnceLock<Shared>, extra: &'static [&'static str]) -> &'static Shared {
    cell.get_or_init(|| {
        let c = cluster_of(TARGET_NODES);
        let dir = common::shared::dir(&format!("extrap_runvalues mpiio {extra:?}"));
        let data = dir.join("shared.dat");
        let mut args = vec!["-a", "mpiio", "-o", data.to_str().unwrap()];
        args.extend(extra);
        let at = |n: u32| dir.join(format!("run.{n}x{PPN}.iotrex"));
        let inputs: Vec<PathBuf> = INPUT_NODES.iter().map(|&n| at(n)).collect();
        for (&n, t) in INPUT_NODES.iter().zip(&inputs) {
            trace(&c, n, &args, t);
        }
        let real = at(TARGET_NODES);
        trace(&c, TARGET_NODES, &args, &real);
        Shared { dir, inputs, real }
    })
}

fn independent() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    shared(&S, &[])
}

fn collective() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    shared(&S, &["-c"])
}

/// `iotrex extrap --ranks N -o out inputs...`; panics unless it succeeds.
fn extrap(inputs: &[PathBuf], ranks: u32, out: &Path) {
    let mut args: Vec<&str> = vec!["extrap", "--ranks"];
    let n = ranks.to_string();
    args.push(&n);
    args.extend(["-o", out.to_str().unwrap()]);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let o = common::iotrex(&args);
    assert!(o.status.success(), "extrap {args:?}: {}", text(&o));
}

/// Every path rank `r` of `tf` names, nested calls included.
fn paths(tf: &TraceFile, r: u32) -> Vec<String> {
    fn walk(evs: &[FlatEvent], out: &mut Vec<String>) {
        for e in evs {
            out.extend(e.path.clone());
            walk(&e.children, out);
        }
    }
    let mut out = Vec::new();
    walk(&tf.trace.expand(r), &mut out);
    out
}

/// The names of OMPIO's lock files for `data` (`data-JOBID-PID.lock`) rank 0 of `tf` names.
fn lock_names(tf: &TraceFile, data: &Path) -> BTreeSet<String> {
    let prefix = format!("{}-", data.display());
    paths(tf, 0)
        .into_iter()
        .filter(|p| p.starts_with(&prefix) && p.ends_with(".lock"))
        .collect()
}

/// `iotrex replay --threads --compute none` of `trace` into `root` with `extra` succeeds with
/// the trace's op counts and bytes.
fn replays_as_traced(trace: &Path, root: &Path, extra: &[&str]) {
    let mut args = vec!["replay", "--threads", "--compute", "none"];
    args.extend(extra);
    args.extend(["--root", root.to_str().unwrap(), trace.to_str().unwrap()]);
    let o = common::iotrex(&args);
    assert!(o.status.success(), "replay: {}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        said.contains("op counts and bytes equal the trace's"),
        "{said}"
    );
}

fn read(p: &Path) -> TraceFile {
    TraceFile::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The inputs extrapolate to 8 x 2; the output holds the lock file's job id and pid as run
/// values and `diff` against the real 8 x 2 run says identical, comparing them as such.
fn extrapolates_identical(s: &Shared) {
    let out = s.dir.join(format!("extrap.{TARGET_NODES}x{PPN}.iotrex"));
    extrap(&s.inputs, TARGET_NODES * PPN, &out);
    let show = common::iotrex(&["show", out.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("run(job id), run(pid)]"),
        "the lock file's name is not held as run values:\n{shown}"
    );
    // Run values need minor 10; a trace whose gaps held off-CPU time is written as 11.
    let minor: u32 = shown
        .split("format version 2.")
        .nth(1)
        .and_then(|t| t.split(',').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no format version in:\n{shown}"));
    assert!(minor >= rsd::format::RUN_VALUE_MINOR, "{shown}");
    // Every run names one lock file, the real one too; the tracer recorded its job id and
    // rank 0's pid as run values where it matched them (a pid under 1,000 it never matches,
    // and the library's named rule finds it instead).
    let data = s.dir.join("shared.dat");
    for t in s.inputs.iter().chain([&s.real]) {
        assert_eq!(lock_names(&read(t), &data).len(), 1, "{}", t.display());
    }
    let d = common::iotrex(&["diff", out.to_str().unwrap(), s.real.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&d.stdout);
    assert!(d.status.success(), "diff: {}", text(&d));
    assert!(said.starts_with("identical"), "{said}");
    assert!(
        said.contains("run values: 6 and 6 compared as run values"),
        "{said}"
    );
}

#[test]
fn mpiio_independent_across_nodes_extrapolates_with_run_values() {
    extrapolates_identical(independent());
}

#[test]
fn mpiio_collective_across_nodes_extrapolates_with_run_values() {
    extrapolates_identical(collective());
}

/// A replay of the extrapolation fills the lock file's name afresh: every rank names one
/// file, another for each replay; the replay itself (the POSIX view, which issues the lock
/// file's calls) succeeds in its own root.
#[test]
fn a_replay_names_fresh_lock_files() {
    let s = independent();
    let out = s.dir.join("replayed.iotrex");
    extrap(&s.inputs, TARGET_NODES * PPN, &out);
    let data = s.dir.join("shared.dat");
    let mut traced = lock_names(&read(&s.real), &data);
    for i in &s.inputs {
        traced.extend(lock_names(&read(i), &data));
    }
    assert!(!traced.is_empty());
    let replayed = |tf: &TraceFile| {
        let names = lock_names(tf, &data);
        for r in 1..tf.header.nranks {
            let theirs: BTreeSet<String> = paths(tf, r)
                .into_iter()
                .filter(|p| p.ends_with(".lock") && p.contains("shared.dat-"))
                .collect();
            assert_eq!(theirs, names, "rank {r} names another lock file");
        }
        assert_eq!(names.len(), 1, "{names:?}");
        names
    };
    let first = replayed(&replay::load_seeded(&out, false, rsd::draw::DEFAULT_SEED).unwrap());
    let second = replayed(&replay::load_seeded(&out, false, rsd::draw::DEFAULT_SEED).unwrap());
    assert!(
        first.is_disjoint(&traced),
        "{first:?} was traced: {traced:?}"
    );
    assert_ne!(first, second, "two replays drew the same name");
    let root = common::scratch();
    replays_as_traced(&out, root.path(), &["--layer", "posix", "--comm", "skip"]);
    // Whatever lock files the replay left in its root carry none of the traced names.
    let dir = root
        .path()
        .join(data.parent().unwrap().strip_prefix("/").unwrap());
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| dir.join(e.unwrap().file_name()))
        .map(|p| format!("/{}", p.strip_prefix(root.path()).unwrap().display()))
        .collect();
    assert!(
        left.iter().any(|p| p == &data.display().to_string()),
        "{left:?}"
    );
    assert!(left.iter().all(|p| !traced.contains(p)), "{left:?}");
}

/// The file-per-process POSIX app naming its files by the run (`-P`: rank 0's pid in the
/// name, as programs name outputs by their job), traced with `--no-run-ids` so that the
/// tracer keeps the pid as the number it was: two runs at 2 nodes differ only in it, so it is
/// a run value at every scale and the inputs extrapolate; without the repeated run they are
/// refused (the pids follow no law of the scale). `diff` against a real 8 x 2 run, with its
/// own pid, says identical, comparing it as a run value.
#[test]
fn a_number_that_differs_between_repeated_runs_is_a_run_value() {
    let c = cluster_of(TARGET_NODES);
    let dir = common::scratch();
    let data = dir.path().join("out");
    let run = |nodes: u32, k: u32| {
        let t = dir.path().join(format!("posix.{nodes}x{PPN}.{k}.iotrex"));
        let args = ["-a", "posix", "-F", "-P", "-o", data.to_str().unwrap()];
        trace_app(&c, nodes, "ior_like", &["--no-run-ids"], &args, &t);
        t
    };
    // Pids are handed out in sequence: on a quiet machine, runs at 2, 3, 4, 5 nodes in that
    // order give rank 0 pids that follow the scale (each run starts a + b x nodes processes),
    // and a law fits them. A user's runs interleave with other work; here the order zigzags,
    // so the pids follow no law of the scale, as on a shared machine.
    let order = [
        INPUT_NODES[1],
        INPUT_NODES[3],
        INPUT_NODES[0],
        INPUT_NODES[2],
    ];
    let scales: Vec<PathBuf> = order.iter().map(|&n| run(n, 0)).collect();
    let repeat = run(INPUT_NODES[0], 1);
    let real = run(TARGET_NODES, 0);
    let out = dir.path().join("extrap.iotrex");
    let mut args: Vec<&str> = vec!["extrap", "--ranks", "16", "-o", out.to_str().unwrap()];
    args.extend(scales.iter().map(|p| p.to_str().unwrap()));
    let refused = common::iotrex(&args);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("out.%d.%08d"),
        "{}",
        text(&refused)
    );
    let mut with_repeat = scales.clone();
    with_repeat.push(repeat);
    extrap(&with_repeat, TARGET_NODES * PPN, &out);
    let tf = read(&out);
    assert!(rsd::runvalue::present(&tf.trace.nodes));
    let show = common::iotrex(&["show", out.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("run(varies), rank]"), "{shown}");
    let d = common::iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&d.stdout);
    assert!(d.status.success(), "diff: {}", text(&d));
    assert!(said.starts_with("identical"), "{said}");
    assert!(said.contains("compared as run values"), "{said}");
}

/// What `iotrex show` says of a trace.
fn shown(p: &Path) -> String {
    let o = common::iotrex(&["show", p.to_str().unwrap()]);
    assert!(o.status.success(), "show {}: {}", p.display(), text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A program that names files by the run's own ids (each rank's log by its pid, rank 0's
/// file by the job id, another by the start time, a lock by rank 0's pid that every rank
/// opens): the tracer matches each number against the run's ids and records it as a run
/// value, so inputs at 2-5 nodes x 2 with no repeated run extrapolate to 8 x 2, `diff`
/// against a real run says identical, and a replay names files of its own, one log per rank
/// (the logs are created exclusively: two ranks given one name would fail).
#[test]
fn numbers_that_are_the_runs_own_ids_are_run_values_from_the_trace() {
    let c = cluster_of(TARGET_NODES);
    let dir = common::scratch();
    let data = dir.path().join("names");
    std::fs::create_dir_all(&data).unwrap();
    // The tracer never matches a pid under 1,000 (too likely a program's own number); where
    // pids wrapped around, a run that drew one is made again.
    let run = |nodes: u32| {
        let t = dir.path().join(format!("names.{nodes}x{PPN}.iotrex"));
        for _ in 0..3 {
            pids_clear_of_the_wrap();
            let out = trace_app(&c, nodes, "run_names", &[], &[data.to_str().unwrap()], &t);
            let small = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.strip_prefix("PID "))
                .any(|p| p.trim().parse::<u64>().is_ok_and(|p| p < 1000));
            if !small {
                return t;
            }
        }
        panic!("three runs at {nodes} nodes drew a pid under 1000")
    };
    // In the zigzag order, as a shared machine hands out pids: no law of the scale fits them.
    let inputs: Vec<PathBuf> = [3, 5, 2, 4].iter().map(|&n| run(n)).collect();
    let real = run(TARGET_NODES);
    let said = shown(&inputs[0]);
    for (name, kind) in [
        ("log.%d", "run(own pid)"),
        ("job-%d.txt", "run(job id)"),
        ("t-%d", "run(time)"),
        ("lock-%d", "run(pid)"),
    ] {
        assert!(
            said.lines().any(|l| l.contains(name) && l.contains(kind)),
            "{name} as {kind}: {said}"
        );
    }
    let out = dir.path().join("names.extrap.iotrex");
    extrap(&inputs, TARGET_NODES * PPN, &out);
    let d = common::iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
    let diffed = String::from_utf8_lossy(&d.stdout);
    assert!(d.status.success(), "diff: {}", text(&d));
    assert!(diffed.starts_with("identical"), "{diffed}");
    assert!(diffed.contains("compared as run values"), "{diffed}");
    replays_as_traced(&out, common::scratch().path(), &[]);
}

/// Leaves the kernel's next pid at 1,000 or more and far from a wrap: a machine whose
/// `pid_max` is 32,768 wraps every few thousand runs of a test suite, and after a wrap the
/// pids count up from 300, through the next dozen runs of a launcher and its daemons. Short
/// processes are started until the last pid given is clear of both ends.
fn pids_clear_of_the_wrap() {
    let read = |f: &str| -> u64 {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    let max = read("/proc/sys/kernel/pid_max");
    // A run on the cluster takes some hundreds of pids.
    let clear = |last: u64| last >= 1_000 && last + 5_000 < max;
    for _ in 0..max.min(100_000) {
        if clear(read("/proc/sys/kernel/ns_last_pid")) {
            return;
        }
        let _ = std::process::Command::new("true").status();
    }
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A program that names its output and a node-wide lock with the host it runs on
/// (`tests/apps/host_names.c`: `out.<host>.<rank>.dat`, `lock.<host>`): the tracer holds the
/// host name as the template's `%h`, so inputs at 2-5 nodes x 2 (node1-node5) extrapolate to
/// 8 x 2, `diff` against a real 8 x 2 run says identical, and `iotrex-replay` on the cluster's
/// 8 x 2 names the files with the replay nodes' own names (node6-node8 included, which no
/// input saw): the same names the real run made.
#[test]
fn host_names_in_paths_are_filled_with_the_replay_nodes_names() {
    let c = cluster_of(TARGET_NODES);
    let dir = common::scratch();
    let data = dir.path().join("hosts");
    let run = |nodes: u32| {
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let t = dir.path().join(format!("hosts.{nodes}x{PPN}.iotrex"));
        trace_app(&c, nodes, "host_names", &[], &[data.to_str().unwrap()], &t);
        t
    };
    let inputs: Vec<PathBuf> = INPUT_NODES.iter().map(|&n| run(n)).collect();
    let real = run(TARGET_NODES);
    let made = listing(&data);
    assert_eq!(made.len(), (TARGET_NODES * (PPN + 1)) as usize, "{made:?}");
    assert!(made.contains("out.node8.15.dat"), "{made:?}");
    let said = shown(&inputs[0]);
    for name in ["out.%h.%d.dat", "lock.%h"] {
        assert!(said.contains(name), "{name}: {said}");
    }
    let out = dir.path().join("hosts.extrap.iotrex");
    extrap(&inputs, TARGET_NODES * PPN, &out);
    let said = shown(&out);
    assert!(said.contains("out.%h.%d.dat"), "{said}");
    assert!(
        said.contains(&format!("format version 2.{}", rsd::format::HOST_MINOR)),
        "{said}"
    );
    let d = common::iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
    let diffed = String::from_utf8_lossy(&d.stdout);
    assert!(d.status.success(), "diff: {}", text(&d));
    assert!(diffed.starts_with("identical"), "{diffed}");
    let root = common::scratch();
    let mut argv = c.openmpi(TARGET_NODES, PPN);
    argv.push(common::target_dir().join("release/iotrex-replay").into());
    argv.push(out.into());
    argv.extend(["--root".into(), root.path().into()]);
    argv.extend(["--comm", "real"].map(OsString::from));
    let o = c.run(&argv, &[]);
    assert!(o.status.success(), "replay: {}", text(&o));
    let replayed = root.path().join(data.strip_prefix("/").unwrap());
    assert_eq!(
        listing(&replayed),
        made,
        "the replay's names against the real run's"
    );
}
