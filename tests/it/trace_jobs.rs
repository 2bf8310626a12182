//! Whose trace a job leaves: when any process of the job is an MPI rank,
//! only the ranks write it; the launcher (`mpirun` under `timeout`) and the helpers a job
//! script runs (`cp`) leave nothing, or with `IOTREX_ALL_PROCESSES=1` files named as theirs.
//! Without MPI, the first traced process owns the output as before.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

/// One mpirun at a time (the machine's cores are few).
static MPIRUN: Mutex<()> = Mutex::new(());

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn mpi_env(c: &mut Command) -> &mut Command {
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD")
        .env_remove("IOTREX_JOB")
        .env_remove("IOTREX_ALL_PROCESSES")
        .env("IOTREX_TRACER_LIB", common::tracer_lib())
}

/// The `.iotrex` files in `dir`, by name, sorted.
fn traces_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".iotrex"))
        .collect();
    v.sort();
    v
}

fn io_sample_args(dir: &str) -> Vec<String> {
    [dir, "10", "8192", "2", "65536"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn mpirun_under_timeout_leaves_only_the_ranks_trace() {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let dir = common::scratch();
    let d = dir.path().display().to_string();
    let app = common::app("io_sample");
    let out = dir.path().join("io.4.iotrex");
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "5",
        "120",
        env!("CARGO_BIN_EXE_iotrex"),
        "trace",
        "-o",
    ])
    .arg(&out)
    .args(["--", "timeout", "100", "mpirun", "-np", "4"])
    .args(["--mca", "btl", "self,vader"])
    .arg(&app)
    .args(io_sample_args(&d));
    let o = mpi_env(&mut c).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // mpirun and timeout were preloaded too (a plain command's environment); neither left a
    // trace beside the ranks', and the CLI lists no other process's trace.
    assert_eq!(traces_in(dir.path()), vec!["io.4.iotrex"], "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("another process"), "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap();
    assert_eq!(tf.header.nranks, 4, "{:?}", tf.header.command);
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
}

/// Runs `script` under `/bin/sh` after the `--env` lines of `iotrex trace --env -o out`, as a
/// job script would; `$APP`, `$DIR` and `$MPIRUN` are set.
fn job_script(out: &Path, dir: &Path, script: &str, all: bool) -> Output {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let mut e = Command::new(env!("CARGO_BIN_EXE_iotrex"));
    e.args(["trace", "--env", "-o"]).arg(out);
    let env = mpi_env(&mut e).output().unwrap();
    assert!(env.status.success(), "{}", text(&env));
    let exports: String = String::from_utf8_lossy(&env.stdout)
        .lines()
        .filter(|l| l.starts_with("export "))
        .map(|l| format!("{l}\n"))
        .collect();
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "150", "/bin/sh", "-c"])
        .arg(format!("{exports}{script}"))
        .env("APP", common::app("io_sample"))
        .env("DIR", dir)
        .env("MPIRUN", "mpirun -np 4 --mca btl self,vader")
        // The job's marker directory goes under TMPDIR: in the scratch directory, removed with
        // it (under --env nothing else removes it).
        .env("TMPDIR", &tmp);
    mpi_env(&mut c);
    if all {
        c.env("IOTREX_ALL_PROCESSES", "1");
    }
    let o = c.output().unwrap();
    // The processes shared one job directory there.
    let jobs = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("iotrex-job-iotrex-")
        })
        .count();
    assert_eq!(jobs, 1, "{}", text(&o));
    o
}

const SCRIPT: &str = "set -e\n\
    printf 0123456789 > \"$DIR/input\"\n\
    cp \"$DIR/input\" \"$DIR/before\"\n\
    $MPIRUN \"$APP\" \"$DIR\" 10 8192 2 65536\n\
    cp \"$DIR/input\" \"$DIR/after\"\n";

#[test]
fn a_job_script_leaves_the_ranks_trace_not_its_helpers() {
    let dir = common::scratch();
    let out = dir.path().join("app.iotrex");
    let o = job_script(&out, dir.path(), SCRIPT, false);
    assert!(o.status.success(), "{}", text(&o));
    // `cp` before mpirun wrote app.iotrex believing it was alone, rank 0 took it back; mpirun
    // and the `cp` after it saw the ranks' mark and wrote nothing.
    assert_eq!(traces_in(dir.path()), vec!["app.iotrex"], "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap();
    assert_eq!(tf.header.nranks, 4, "{:?}", tf.header.command);
    assert!(
        tf.header.command.iter().any(|a| a.ends_with("io_sample")),
        "{:?}",
        tf.header.command
    );
}

#[test]
fn all_processes_keeps_the_helpers_traces_under_their_own_names() {
    let dir = common::scratch();
    let out = dir.path().join("app.iotrex");
    let o = job_script(&out, dir.path(), SCRIPT, true);
    assert!(o.status.success(), "{}", text(&o));
    let names = traces_in(dir.path());
    let tf = rsd::TraceFile::read(&out).unwrap();
    assert_eq!(tf.header.nranks, 4, "{names:?}");
    let others: Vec<&String> = names.iter().filter(|n| *n != "app.iotrex").collect();
    // Both cps (the one before the ranks renamed by rank 0) and mpirun.
    let cps = others
        .iter()
        .filter(|n| n.starts_with("app.nonrank-cp-"))
        .count();
    // Open MPI's mpirun is a link to orterun, the name the process has.
    let mpiruns = others
        .iter()
        .filter(|n| n.starts_with("app.nonrank-mpirun-") || n.starts_with("app.nonrank-orterun-"))
        .count();
    assert_eq!((cps, mpiruns), (2, 1), "{names:?}\n{}", text(&o));
    for n in &others {
        let t = rsd::TraceFile::read(&dir.path().join(n)).unwrap();
        assert_eq!(t.header.nranks, 1, "{n}");
    }
    // Each is the process it is named after.
    for n in &others {
        let t = rsd::TraceFile::read(&dir.path().join(n)).unwrap();
        let exe = n.split('-').nth(1).unwrap().replace("orterun", "mpirun");
        assert!(
            t.header.command.first().is_some_and(|c| c.ends_with(&exe)),
            "{n}: {:?}",
            t.header.command
        );
    }
}

#[test]
fn a_job_script_without_mpi_is_traced_as_before() {
    let dir = common::scratch();
    let out = dir.path().join("cp.iotrex");
    let o = job_script(
        &out,
        dir.path(),
        "printf 0123456789 > \"$DIR/input\"; cp \"$DIR/input\" \"$DIR/copy\"",
        false,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(traces_in(dir.path()), vec!["cp.iotrex"], "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap();
    assert_eq!(tf.header.nranks, 1);
    assert!(
        tf.header.command.first().is_some_and(|c| c.ends_with("cp")),
        "{:?}",
        tf.header.command
    );
}
