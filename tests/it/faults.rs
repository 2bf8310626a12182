//! Fault injection for the tracer, each under a real `mpirun` of
//! `tests/apps/fault_app.c`: a full disk and a failing disk while the trace is written (the
//! preloaded `tests/apps/fault_shim.c`), a read-only output directory (a read-only bind mount
//! in a private mount namespace), an `IOTREX_OUT` that already exists, a rank killed with
//! SIGKILL during the merge while the others ignore SIGTERM (so SIGKILL ends them too), a rank
//! that stops answering during the merge (SIGSTOP), MPI_Abort (under Open MPI and MPICH),
//! per-rank files of an earlier run in the same place, fork without exec, and a second thread
//! writing during MPI_Finalize; and a trace written by a newer iotrex.
//!
//! For each, the application's exit status, its output and the files it writes are what they
//! are in the same run untraced (run first, with the same fault where there is one at that
//! point untraced); the trace is complete, or flagged incomplete with the per-rank files kept
//! and `iotrex show` naming the missing ranks; and nothing hangs.

use crate::common;

use common::{shared_lib, tracer_lib};
use rsd::TraceFile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One mpirun at a time: 4 ranks on 2 cores is already oversubscribed.
static MPIRUN: Mutex<()> = Mutex::new(());

const NP: u32 = 4;
const ITERS: &str = "10";

/// How a run is set up: the app's mode, extra environment for the ranks, whether the fault
/// shim is preloaded, and a command the launcher runs under (a mount namespace).
#[derive(Default, Clone)]
struct Setup {
    mode: &'static str,
    env: Vec<(&'static str, String)>,
    shim: bool,
    wrap: Vec<String>,
}

/// The command of one run: `timeout mpirun -np 4 fault_app DATA 10 MODE`, traced into `out`
/// when given.
fn command(s: &Setup, data: &Path, out: Option<&Path>) -> Command {
    let app = common::app("fault_app");
    let mut preload: Vec<String> = Vec::new();
    if out.is_some() {
        preload.push(tracer_lib().display().to_string());
    }
    if s.shim {
        // After the tracer: the tracer's own `write` and PMPI calls go through it.
        preload.push(shared_lib("fault_shim").display().to_string());
    }
    let mut c = match s.wrap.split_first() {
        Some((w, rest)) => {
            let mut c = Command::new(w);
            c.args(rest);
            c.arg("timeout");
            c
        }
        None => Command::new("timeout"),
    };
    c.args(["-k", "5", "120", "mpirun", "-np", &NP.to_string()]);
    c.args(["--oversubscribe", "--mca", "btl", "self,vader"]);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD")
        .env_remove("IOTREX_JOB")
        .env("IOTREX_RAW", "0");
    c.args(["-x", &format!("LD_PRELOAD={}", preload.join(":"))]);
    if let Some(o) = out {
        c.env("IOTREX_OUT", o).args(["-x", "IOTREX_OUT"]);
    }
    for (k, v) in &s.env {
        c.env(k, v).args(["-x", k]);
    }
    c.arg(app).arg(data).args([ITERS, s.mode]);
    c
}

fn run(s: &Setup, data: &Path, out: Option<&Path>) -> Output {
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let o = command(s, data, out).output().expect("run timeout/mpirun");
    assert_ne!(o.status.code(), Some(124), "mpirun hung:\n{}", text(&o));
    o
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn dir(root: &Path, name: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// File names in `d`, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The application's stdout as a sorted list of lines (ranks interleave differently in every
/// run, traced or not).
fn lines(o: &Output) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// The traced run's exit status, output and data files equal the untraced run's. The thread
/// mode's `thread_*` files are compared by name only (the thread writes for as long as
/// MPI_Finalize takes).
fn assert_same_as_untraced(
    what: &str,
    traced: &Output,
    tdata: &Path,
    plain: &Output,
    udata: &Path,
) {
    assert_same_as_untraced_but(what, traced, tdata, plain, udata, |_| true)
}

/// [`assert_same_as_untraced`] on the output lines `keep` keeps.
fn assert_same_as_untraced_but(
    what: &str,
    traced: &Output,
    tdata: &Path,
    plain: &Output,
    udata: &Path,
    keep: impl Fn(&str) -> bool,
) {
    assert_eq!(
        (
            traced.status.code(),
            std::os::unix::process::ExitStatusExt::signal(&traced.status)
        ),
        (
            plain.status.code(),
            std::os::unix::process::ExitStatusExt::signal(&plain.status)
        ),
        "{what}: exit status differs from the untraced run\ntraced: {}\nuntraced: {}",
        text(traced),
        text(plain)
    );
    let kept = |o: &Output| -> Vec<String> { lines(o).into_iter().filter(|l| keep(l)).collect() };
    assert_eq!(
        kept(traced),
        kept(plain),
        "{what}: output differs from the untraced run\ntraced: {}\nuntraced: {}",
        text(traced),
        text(plain)
    );
    assert_eq!(names(tdata), names(udata), "{what}: the app's files differ");
    for n in names(tdata).iter().filter(|n| !n.starts_with("thread_")) {
        assert_eq!(
            std::fs::read(tdata.join(n)).unwrap(),
            std::fs::read(udata.join(n)).unwrap(),
            "{what}: {n} differs from the untraced run's"
        );
    }
}

/// Runs `s` untraced first, with `untraced_env` instead of `s.env` (the same fault at the
/// same point of the program, where untraced it has one) and no wrapper, into
/// `root/data-untraced`; returns its output, that directory, and `root/data-traced` for the
/// traced run that follows.
fn untraced_first(
    root: &Path,
    s: &Setup,
    untraced_env: Vec<(&'static str, String)>,
) -> (Output, PathBuf, PathBuf) {
    let udata = dir(root, "data-untraced");
    let tdata = dir(root, "data-traced");
    let u = Setup {
        env: untraced_env,
        wrap: Vec::new(),
        ..s.clone()
    };
    (run(&u, &udata, None), udata, tdata)
}

/// Runs `s` untraced ([`untraced_first`]) and traced into `out`, checks the app saw no
/// difference, and returns the traced run.
fn both(root: &Path, s: &Setup, untraced_env: Vec<(&'static str, String)>, out: &Path) -> Output {
    let (plain, udata, tdata) = untraced_first(root, s, untraced_env);
    let traced = run(s, &tdata, Some(out));
    assert_same_as_untraced(s.mode, &traced, &tdata, &plain, &udata);
    traced
}

/// The trace at `p`, which must be complete, with every rank.
fn complete(p: &Path, o: &Output) -> TraceFile {
    let tf = TraceFile::read(p).unwrap_or_else(|e| panic!("{e}\n{}", text(o)));
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    assert_eq!(tf.header.nranks, NP);
    assert_eq!(tf.trace.ranks().len(), u64::from(NP));
    tf
}

/// `pwrite` calls of `rank` in the trace.
fn pwrites(tf: &TraceFile, rank: u32) -> usize {
    let mut n = 0;
    tf.trace.expand_with(rank, &mut |e| {
        n += usize::from(e.op.name() == "pwrite");
        true
    });
    n
}

/// `iotrex show PATH`, which must succeed.
fn show(p: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("show")
        .arg(p)
        .output()
        .expect("run iotrex show");
    assert!(
        o.status.success(),
        "iotrex show {}:\n{}",
        p.display(),
        text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// After a run that did not write the merged trace: the per-rank files left, each only its
/// rank's calls and flagged incomplete; `iotrex show OUT` says the others are missing.
/// Returns the ranks that have files.
fn assert_rank_files(out: &Path, o: &Output) -> Vec<u32> {
    assert!(!out.exists(), "no merged trace expected:\n{}", text(o));
    let files = rsd::job::rank_files(out);
    let have: Vec<u32> = files.iter().map(|(r, _)| *r).collect();
    for (r, p) in &files {
        let tf = TraceFile::read(p).unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert!(tf.header.incomplete, "rank {r}: flagged incomplete");
        assert_eq!(tf.trace.ranks().to_vec(), vec![*r]);
        assert_eq!(pwrites(&tf, *r), 10, "rank {r}: its pwrites");
    }
    let missing: Vec<u32> = (0..NP).filter(|r| !have.contains(r)).collect();
    let s = show(out);
    assert!(
        s.contains("was not written; its ranks' own files are shown merged"),
        "{s}"
    );
    if missing.is_empty() {
        assert!(!s.contains("missing "), "{s}");
    } else {
        let want = format!(
            "missing    {} of {NP} ranks are not in this trace: {}",
            missing.len(),
            rsd::notes::rank_ranges(&missing)
        );
        assert!(s.contains(&want), "expected {want:?} in:\n{s}");
    }
    assert_merge(out, &have, &missing);
    // Nothing half-written beside them.
    let dir = out.parent().unwrap();
    assert!(
        names(dir).iter().all(|n| !rsd::atomic::is_temporary(n)),
        "temporary files left: {:?}",
        names(dir)
    );
    have
}

/// `iotrex ARGS`.
fn iotrex(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .expect("run iotrex")
}

/// The per-rank files beside `out` (of ranks `have`): `stats` on `out` points to `iotrex
/// merge`, which writes one trace of those ranks, says which are `missing`, and whose
/// `stats` count each rank's pwrites.
fn assert_merge(out: &Path, have: &[u32], missing: &[u32]) {
    let o = iotrex(&["stats".as_ref(), out.as_os_str()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!(
            "merge them with `iotrex merge {} -o {}`",
            out.display(),
            out.display()
        )),
        "{t}"
    );
    let merged = out.with_file_name("merged.iotrex");
    let o = iotrex(&[
        "merge".as_ref(),
        out.as_os_str(),
        "-o".as_ref(),
        merged.as_os_str(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    if missing.is_empty() {
        assert!(t.contains("every rank left a file"), "{t}");
    } else {
        let want = format!(
            "missing: {} rank{} without a file",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        );
        assert!(t.contains(&want), "{t}");
    }
    let tf = TraceFile::read(&merged).unwrap();
    assert!(tf.header.incomplete);
    assert_eq!(tf.trace.ranks().to_vec(), have);
    let o = iotrex(&["stats".as_ref(), "--json".as_ref(), merged.as_os_str()]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pw = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["op"] == "pwrite")
        .unwrap_or_else(|| panic!("no pwrite in {v}"));
    assert_eq!(pw["calls"].as_u64(), Some(10 * have.len() as u64), "{v}");
    // The directory form finds the same job's files (merged.iotrex has none).
    let again = out.with_file_name("again.iotrex");
    let o = iotrex(&[
        "merge".as_ref(),
        out.parent().unwrap().as_os_str(),
        "-o".as_ref(),
        again.as_os_str(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        TraceFile::read(&again).unwrap().trace.ranks().to_vec(),
        have
    );
    std::fs::remove_file(merged).unwrap();
    std::fs::remove_file(again).unwrap();
}

/// The notes of rank `r`'s own file beside `out`.
fn rank_notes(out: &Path, r: u32) -> Vec<String> {
    let p = rsd::job::rank_path(&out.display().to_string(), r, "iotrex");
    TraceFile::read(Path::new(&p))
        .unwrap_or_else(|e| panic!("{e}"))
        .header
        .notes
}

fn scratch() -> tempfile::TempDir {
    common::scratch()
}

#[test]
fn a_full_disk_sends_the_trace_to_tmpdir_whole() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let tmp = dir(root.path(), "tmp");
    let out = outdir.join("t.4.iotrex");
    // The disk fills up 100 bytes into the trace: ENOSPC from then on, on that directory only.
    let s = Setup {
        mode: "plain",
        shim: true,
        env: vec![
            ("FAULT_WRITE_MATCH", outdir.display().to_string()),
            ("FAULT_WRITE_ERRNO", "28".into()),
            ("FAULT_WRITE_AFTER", "100".into()),
            ("TMPDIR", tmp.display().to_string()),
        ],
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        names(&outdir),
        Vec::<String>::new(),
        "nothing (half) written at the full disk"
    );
    let moved: Vec<String> = names(&tmp)
        .into_iter()
        .filter(|n| n.starts_with("iotrex-") && n.ends_with("-t.4.iotrex"))
        .collect();
    assert_eq!(moved.len(), 1, "{:?}\n{}", names(&tmp), text(&o));
    let tf = complete(&tmp.join(&moved[0]), &o);
    assert_eq!(pwrites(&tf, 2), 10);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("cannot write the trace to {}", out.display()))
            && err.contains("No space left on device")
            && err.contains(&format!("it is in {}", tmp.join(&moved[0]).display())),
        "{err}"
    );
}

#[test]
fn a_failing_disk_loses_the_trace_cleanly_and_says_so() {
    let root = scratch();
    let bad = dir(root.path(), "bad");
    let outdir = dir(&bad, "out");
    let tmp = dir(&bad, "tmp");
    let out = outdir.join("t.4.iotrex");
    // EIO on every write under `bad`: the output directory and the fallback alike.
    let s = Setup {
        mode: "plain",
        shim: true,
        env: vec![
            ("FAULT_WRITE_MATCH", bad.display().to_string()),
            ("FAULT_WRITE_ERRNO", "5".into()),
            ("FAULT_WRITE_AFTER", "100".into()),
            ("TMPDIR", tmp.display().to_string()),
        ],
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(names(&outdir), Vec::<String>::new(), "no half file");
    assert!(
        names(&tmp).iter().all(|n| !n.contains("iotrex")),
        "no half file in the fallback: {:?}",
        names(&tmp)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("cannot write the trace to {}", out.display()))
            && err.contains("Input/output error")
            && err.contains("it is lost"),
        "{err}"
    );
}

#[test]
fn a_read_only_output_directory_sends_the_trace_to_tmpdir() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let tmp = dir(root.path(), "tmp");
    let out = outdir.join("t.4.iotrex");
    // Root ignores permission bits, so the directory is made read-only by a read-only bind
    // mount, in a mount namespace of the run's own (gone with it).
    let s = Setup {
        mode: "plain",
        env: vec![("TMPDIR", tmp.display().to_string())],
        wrap: vec![
            "unshare".into(),
            "-m".into(),
            "sh".into(),
            "-c".into(),
            r#"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#.into(),
            outdir.display().to_string(),
        ],
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(names(&outdir), Vec::<String>::new());
    let moved: Vec<String> = names(&tmp)
        .into_iter()
        .filter(|n| n.starts_with("iotrex-") && n.ends_with("-t.4.iotrex"))
        .collect();
    assert_eq!(moved.len(), 1, "{:?}\n{}", names(&tmp), text(&o));
    complete(&tmp.join(&moved[0]), &o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Read-only file system"), "{err}");
}

#[test]
fn an_existing_iotrex_out_is_replaced_and_a_directory_there_is_left_alone() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let tmp = dir(root.path(), "tmp");
    // An old trace of another run: replaced by this run's, whole.
    let out = outdir.join("t.4.iotrex");
    let old = TraceFile {
        header: rsd::Header::new(2),
        trace: rsd::Trace::default(),
    };
    old.write(&out).unwrap();
    let s = Setup {
        mode: "plain",
        env: vec![("TMPDIR", tmp.display().to_string())],
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    complete(&out, &o);
    assert_eq!(names(&outdir), vec!["t.4.iotrex".to_string()]);
    // A directory of that name: kept as it was, the trace goes to TMPDIR and that is said.
    let out = outdir.join("d.4.iotrex");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), b"mine").unwrap();
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(names(&out), vec!["keep".to_string()]);
    assert_eq!(std::fs::read(out.join("keep")).unwrap(), b"mine");
    let moved: Vec<String> = names(&tmp)
        .into_iter()
        .filter(|n| n.starts_with("iotrex-") && n.ends_with("-d.4.iotrex"))
        .collect();
    assert_eq!(moved.len(), 1, "{:?}\n{}", names(&tmp), text(&o));
    complete(&tmp.join(&moved[0]), &o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Is a directory"), "{err}");
}

/// The ranks' and the application's settings of a run in which rank 1 is killed with SIGKILL
/// at `at`, and every rank ignores SIGTERM: mpirun's SIGTERM to the others does nothing, and
/// its SIGKILL a second later ends them without any handler running (as a batch system's
/// SIGKILL alone would).
fn killed_at(at: &str) -> Vec<(&'static str, String)> {
    vec![
        ("FAULT_RANK", "1".to_string()),
        ("FAULT_SIGNAL", "KILL".to_string()),
        ("FAULT_AT", at.to_string()),
        ("FAULT_IGNORE_TERM", "1".to_string()),
    ]
}

#[test]
fn a_rank_killed_during_the_merge_leaves_every_ranks_calls() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    // Untraced, the same rank dies at the same point of the program: in MPI_Finalize.
    let s = Setup {
        mode: "plain",
        shim: true,
        env: killed_at("send"),
        ..Setup::default()
    };
    // Untraced, the ranks rank 1 leaves behind in MPI_Finalize may still return from it and
    // print "done" before mpirun kills them, or not, as the machine's load decides (a loaded
    // CI machine printed two); traced, they wait in the merge. Their output before
    // MPI_Finalize must be the same.
    let (plain, udata, tdata) = untraced_first(root.path(), &s, killed_at("finalize"));
    let o = run(&s, &tdata, Some(&out));
    assert_same_as_untraced_but(s.mode, &o, &tdata, &plain, &udata, |l| {
        !l.ends_with(" done")
    });
    // Every rank wrote its own file when MPI_Finalize began, before the merge: the killed
    // rank's and those of the ranks SIGKILL ended, none of which ran a line of code after.
    let have = assert_rank_files(&out, &o);
    assert_eq!(have, vec![0, 1, 2, 3], "{}", text(&o));
    assert!(
        rank_notes(&out, 1)
            .iter()
            .any(|n| n.contains("rank 1: the merge in MPI_Finalize did not complete")),
        "{:?}",
        rank_notes(&out, 1)
    );
}

#[test]
fn per_rank_files_of_an_earlier_run_are_not_merged_with_this_ones() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    // A first run leaves every rank's file (as above).
    let s = Setup {
        mode: "plain",
        shim: true,
        env: killed_at("send"),
        ..Setup::default()
    };
    let first = run(&s, &dir(root.path(), "data-first"), Some(&out));
    assert_eq!(rsd::job::rank_files(&out).len(), 4, "{}", text(&first));
    let first_id = |r: u32| {
        let p = rsd::job::rank_path(&out.display().to_string(), r, "iotrex");
        TraceFile::read(Path::new(&p)).unwrap().header.run_id
    };
    let old_id = first_id(0);
    assert!(old_id.is_some(), "per-rank files carry the run's id");
    assert!((1..NP).all(|r| first_id(r) == old_id));
    // Then a run into the same place in which rank 1 aborts, and the others, ignoring mpirun's
    // SIGTERM, are killed without writing anything: only rank 1's file is of this run.
    let s = Setup {
        mode: "abort",
        shim: true,
        env: vec![("FAULT_IGNORE_TERM", "1".to_string())],
        ..Setup::default()
    };
    let o = both(root.path(), &s, s.env.clone(), &out);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_ne!(first_id(1), old_id, "rank 1's file is the new run's");
    let sh = show(&out);
    let want = format!("missing    3 of {NP} ranks are not in this trace: 0, 2-3\n");
    assert!(sh.contains(&want), "expected {want:?} in:\n{sh}");
    assert!(
        sh.contains("ignored 3 per-rank files of another run: "),
        "{sh}"
    );
    let tf = rsd::TraceFile::read(Path::new(&rsd::job::rank_path(
        &out.display().to_string(),
        1,
        "iotrex",
    )))
    .unwrap();
    assert_eq!(pwrites(&tf, 1), 10);
}

#[test]
fn a_rank_that_stops_answering_is_left_out_after_the_merge_timeout() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    let pid_file = root.path().join("stopped.pid");
    let s = Setup {
        mode: "plain",
        shim: true,
        env: vec![
            ("FAULT_RANK", "3".to_string()),
            ("FAULT_SIGNAL", "STOP".to_string()),
            ("FAULT_AT", "send".to_string()),
            ("FAULT_PID_FILE", pid_file.display().to_string()),
            ("IOTREX_MERGE_TIMEOUT", "2".to_string()),
        ],
        ..Setup::default()
    };
    // Untraced there is no merge: the shim never stops the rank.
    let (plain, udata, tdata) = untraced_first(root.path(), &s, Vec::new());
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let child = command(&s, &tdata, Some(&out))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mpirun");
    // Rank 3 stops inside the merge. The others must write the merged trace without it, once
    // the timeout passed; only then is rank 3 let go.
    let start = Instant::now();
    let mut written_while_stopped = false;
    while start.elapsed() < Duration::from_secs(60) {
        if out.exists() {
            written_while_stopped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let cont = Command::new("kill")
        .args(["-CONT", pid.trim()])
        .status()
        .expect("run kill");
    let o = child.wait_with_output().expect("wait for mpirun");
    assert!(
        cont.success(),
        "rank 3 never stopped (pid {pid:?}):\n{}",
        text(&o)
    );
    assert_ne!(o.status.code(), Some(124), "mpirun hung:\n{}", text(&o));
    assert!(
        written_while_stopped,
        "no merged trace while rank 3 was stopped (60 s):\n{}",
        text(&o)
    );
    assert_same_as_untraced("stop", &o, &tdata, &plain, &udata);
    let tf = TraceFile::read(&out).unwrap();
    assert!(tf.header.incomplete);
    assert_eq!(tf.trace.ranks().to_vec(), vec![0, 1, 2]);
    assert!(
        tf.header
            .notes
            .iter()
            .any(|n| n.contains("rank 3: trace not received within 2 s (IOTREX_MERGE_TIMEOUT)")),
        "{:?}",
        tf.header.notes
    );
    for r in 0..3 {
        assert_eq!(pwrites(&tf, r), 10, "rank {r}");
    }
    let s = show(&out);
    assert!(
        s.contains("missing    1 of 4 ranks are not in this trace: 3"),
        "{s}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no trace from rank 3 within 2 s (IOTREX_MERGE_TIMEOUT)"),
        "{err}"
    );
    // Let go, rank 3 finds its parent gone and keeps its own calls.
    let own = PathBuf::from(rsd::job::rank_path(&out.display().to_string(), 3, "iotrex"));
    let tf = TraceFile::read(&own).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    assert_eq!(tf.trace.ranks().to_vec(), vec![3]);
    assert_eq!(pwrites(&tf, 3), 10);
}

#[test]
fn mpi_abort_keeps_the_ranks_files_and_show_names_the_missing() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    let s = Setup {
        mode: "abort",
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let have = assert_rank_files(&out, &o);
    // The aborting rank writes before the library aborts; the others are killed by mpirun
    // (their signal handlers write theirs).
    assert!(
        have.contains(&1),
        "the aborting rank's calls:\n{}",
        text(&o)
    );
    assert!(
        rank_notes(&out, 1)
            .iter()
            .any(|n| n == "rank 1: called MPI_Abort (error code 3) without MPI_Finalize; only this rank's calls are in this file"),
        "{:?}",
        rank_notes(&out, 1)
    );
}

/// `iotrex trace` of a job that aborts: its exit status is the program's, and it names the
/// per-rank files the ranks left and the command that merges them.
#[test]
fn iotrex_trace_names_the_files_an_aborted_job_left() {
    let root = scratch();
    let data = dir(root.path(), "data");
    let out = dir(root.path(), "out").join("t.4.iotrex");
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let o = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_iotrex"))
        .args(["trace", "--lib"])
        .arg(tracer_lib())
        .arg("-o")
        .arg(&out)
        .args(["--", "mpirun", "-np"])
        .arg(NP.to_string())
        .args(["--oversubscribe", "--mca", "btl", "self,vader"])
        .arg(common::app("fault_app"))
        .arg(&data)
        .args([ITERS, "abort"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env_remove("LD_PRELOAD")
        .env_remove("IOTREX_JOB")
        .output()
        .expect("run iotrex trace");
    drop(_g);
    let t = text(&o);
    assert_ne!(o.status.code(), Some(124), "hung: {t}");
    assert_eq!(o.status.code(), Some(3), "the program's status: {t}");
    let files = rsd::job::rank_files(&out);
    assert!(!files.is_empty(), "{t}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "its ranks left {} files of their own",
            files.len()
        )),
        "{err}"
    );
    assert!(err.contains(&files[0].1.display().to_string()), "{err}");
    assert!(
        err.contains(&format!(
            "iotrex merge {} -o {}",
            out.display(),
            out.display()
        )),
        "{err}"
    );
    assert!(!err.contains("no trace was written"), "{err}");
}

#[test]
fn fork_without_exec_in_a_rank_puts_the_child_under_its_rank() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    let s = Setup {
        mode: "fork",
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    let tf = TraceFile::read(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    assert_eq!(tf.header.nranks, NP);
    assert_eq!(
        tf.trace.ranks().len(),
        u64::from(NP) + 1,
        "the ranks and the child"
    );
    // The child writes no trace of its own and records nothing into its parent's calls: it is
    // a process of rank 1 in the trace, under a slot of its own (`docs/processes.md`).
    assert_eq!(names(&outdir), vec!["t.4.iotrex".to_string()]);
    let child_paths = |slot: u32| {
        let mut n = 0;
        tf.trace.expand_with(slot, &mut |e| {
            n += usize::from(format!("{e:?}").contains("child_1"));
            true
        });
        n
    };
    assert_eq!(child_paths(1), 0, "the child's open is not rank 1's");
    for r in 0..NP {
        assert_eq!(pwrites(&tf, r), 10, "rank {r}");
    }
    let p = tf
        .header
        .processes
        .as_ref()
        .expect("rank 1's child is listed");
    assert_eq!(p.groups.len(), 1, "{p:?}");
    assert_eq!(p.groups[0].end, rsd::process::End::Exit(Some(7)));
    let slot = p.groups[0].slots.first().unwrap();
    assert_eq!(p.owner(NP, slot), Some((1, 0)));
    assert_eq!(child_paths(slot), 1, "the child's open is its own");
}

#[test]
fn a_second_thread_writing_during_finalize_changes_nothing() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    let s = Setup {
        mode: "thread",
        ..Setup::default()
    };
    let o = both(root.path(), &s, Vec::new(), &out);
    assert!(o.status.success(), "{}", text(&o));
    let tf = complete(&out, &o);
    // The main thread's 10 pwrites and at least the thread's 10 before MPI_Finalize; what the
    // thread writes once MPI_Finalize has begun is after the trace's end.
    for r in 0..NP {
        assert!(pwrites(&tf, r) >= 20, "rank {r}: {}", pwrites(&tf, r));
    }
}

/// `fault_app` built against the private MPICH (`scripts/install-mpich.sh`), and the lib
/// directory its Hydra launcher needs.
fn mpich_fault_app() -> (PathBuf, PathBuf) {
    let prefix = PathBuf::from(
        std::env::var_os("IOTREX_MPICH_PREFIX").unwrap_or_else(|| "/opt/iotrex-mpich".into()),
    );
    let lib = prefix.join("usr/lib/x86_64-linux-gnu");
    assert!(
        prefix.join("usr/bin/mpiexec.hydra").exists(),
        "MPICH not found under {}: run `bash scripts/install-mpich.sh` (make test does)",
        prefix.display()
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/iotrex-apps-mpich");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("fault_app");
    let o = Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/fault_app.c"))
        .arg(format!(
            "-I{}",
            prefix.join("usr/include/x86_64-linux-gnu/mpich").display()
        ))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lmpich", "-lpthread"])
        .output()
        .expect("run cc");
    assert!(
        o.status.success(),
        "building fault_app for MPICH:\n{}",
        text(&o)
    );
    (prefix, lib)
}

/// `fault_app DATA 10 MODE` under MPICH's Hydra with 4 ranks, traced into `out` when given.
fn hydra(mode: &str, data: &Path, out: Option<&Path>) -> Output {
    let (prefix, lib) = mpich_fault_app();
    let _g = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120"])
        .arg(prefix.join("usr/bin/mpiexec.hydra"))
        .args(["-launcher", "fork", "-np", &NP.to_string()])
        .env("LD_PRELOAD", "")
        .env_remove("IOTREX_JOB")
        .env("LD_LIBRARY_PATH", format!("{0}:{0}/slurm", lib.display()));
    if let Some(o) = out {
        c.args(["-genv", "LD_PRELOAD"])
            .arg(tracer_lib())
            .args(["-genv", "IOTREX_OUT"])
            .arg(o);
    }
    let o = c
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/iotrex-apps-mpich/fault_app"))
        .arg(data)
        .args([ITERS, mode])
        .output()
        .expect("run timeout/mpiexec.hydra");
    assert_ne!(o.status.code(), Some(124), "mpiexec hung:\n{}", text(&o));
    o
}

/// Under MPICH, Hydra ends the job at once on MPI_Abort: no exit handler of the aborting rank
/// runs, so the tracer must write before the library aborts.
#[test]
fn mpi_abort_under_mpich_keeps_the_aborting_ranks_calls() {
    let root = scratch();
    let outdir = dir(root.path(), "out");
    let out = outdir.join("t.4.iotrex");
    let (udata, tdata) = (dir(root.path(), "du"), dir(root.path(), "dt"));
    let plain = hydra("abort", &udata, None);
    let traced = hydra("abort", &tdata, Some(&out));
    // Hydra forwards a rank's output asynchronously and ends the job at once on MPI_Abort:
    // lines the ranks wrote and flushed (even before the barrier that precedes the abort)
    // reach mpiexec in some runs and not in others, traced or not (CI runs lost "rank 1
    // aborts" untraced and "rank 0 wrote 10 blocks" traced). So the output is compared as
    // "only lines the program writes, and no line twice", the status and files exactly.
    let program: Vec<String> = (0..NP)
        .map(|r| format!("rank {r} wrote {ITERS} blocks"))
        .chain(["rank 1 aborts".to_string()])
        .collect();
    for (what, o) in [("traced", &traced), ("untraced", &plain)] {
        let l = lines(o);
        assert!(
            l.iter().all(|x| program.contains(x)) && l.windows(2).all(|w| w[0] != w[1]),
            "abort under MPICH, {what}: output not the program's\n{}",
            text(o)
        );
    }
    let quiet = |o: &Output| Output {
        status: o.status,
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    assert_same_as_untraced(
        "abort under MPICH",
        &quiet(&traced),
        &tdata,
        &quiet(&plain),
        &udata,
    );
    assert_eq!(traced.status.code(), Some(3), "{}", text(&traced));
    let have = assert_rank_files(&out, &traced);
    assert!(have.contains(&1), "{have:?}\n{}", text(&traced));
    assert!(
        rank_notes(&out, 1)
            .iter()
            .any(|n| n.contains("rank 1: called MPI_Abort (error code 3)")),
        "{:?}",
        rank_notes(&out, 1)
    );
}

/// A trace from a newer iotrex (a header field this build does not know, under a newer minor
/// version) is named as such, not called damaged; the same bytes claiming a known version are.
#[test]
fn a_trace_from_a_newer_iotrex_says_upgrade_not_damaged() {
    let root = scratch();
    let mut tf = TraceFile {
        header: rsd::Header::new(1),
        trace: rsd_view::synth::spmd(1, 2),
    };
    tf.header.run_id = Some("0123456789abcdef".into());
    let mut header = rmp_serde::to_vec(&tf.header).unwrap();
    // The header array (8 + 6 fields) one longer, the new field at its end.
    assert_eq!(header[0], 0x90 | 14);
    header[0] = 0x90 | 15;
    header.extend(rmp_serde::to_vec(&"a field of a newer iotrex").unwrap());
    let mut body = vec![0x92];
    body.extend(header);
    body.extend(rmp_serde::to_vec(&tf.trace).unwrap());
    let show_err = |minor: u32| {
        let p = root.path().join(format!("t{minor}.iotrex"));
        std::fs::write(
            &p,
            TraceFile::frame(&body, rsd::format::FORMAT_VERSION, minor),
        )
        .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_iotrex"))
            .arg("show")
            .arg(&p)
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let newer = rsd::format::FORMAT_MINOR + 1;
    let e = show_err(newer);
    assert!(
        e.contains(&format!(
            "trace format version 1.{newer} is newer than this iotrex reads"
        )) && e.contains("written by a newer iotrex; upgrade iotrex")
            && !e.contains("damaged"),
        "{e}"
    );
    let e = show_err(rsd::format::FORMAT_MINOR);
    assert!(e.contains("damaged"), "{e}");
}
