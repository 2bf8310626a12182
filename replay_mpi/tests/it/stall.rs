//! No replay waits forever: a trace whose ranks each receive before they send deadlocks under
//! `--comm real`, and the watchdog must end the replay, in both runtimes, saying where each
//! rank is blocked, with a non-zero status.

use crate::common;

use common::{build, have_mpirun};
use rsd::Op;
use rsd::op::args;
use rsd::trace::RawEvent;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Rank r first receives from the other rank, then sends to it: each waits for a message the
/// other sends only after its own receive. Counts match (one send and one receive each way);
/// only the order deadlocks, as a trace of a program with a bug, or a mis-extrapolated one,
/// would.
fn deadlock(dir: &Path) -> std::path::PathBuf {
    let tf = build(2, |r| {
        let other = if r == 0 { 1 } else { -1 };
        vec![
            RawEvent::new(Op::Init, 1, vec![]),
            // 8 of the tracer's datatype id 1 (MPI_CHAR, 1 byte), tag 5, on the world (id 0).
            RawEvent::new(Op::Recv, 2, args::recv(8, 1, other, 5, 0, 8)),
            RawEvent::new(Op::Send, 3, args::send(8, 1, other, 5, 0, 8)),
            RawEvent::new(Op::Finalize, 4, vec![]),
        ]
    });
    let p = dir.join("deadlock.iotrex");
    tf.write(&p).unwrap();
    p
}

fn run(cmd: &mut Command) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = cmd
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("runs");
    (out, t0.elapsed())
}

fn check_stalled(out: &Output, took: Duration, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    // `timeout` gives 124 when it had to kill the replay: the watchdog did not end it.
    assert_ne!(
        out.status.code(),
        Some(124),
        "{what}: killed by timeout\n{err}"
    );
    assert!(
        !out.status.success(),
        "{what}: a deadlocked replay succeeded\n{err}"
    );
    assert!(err.contains("replay stalled"), "{what}: {err}");
    assert!(err.contains("MPI_Recv (call 1, peer "), "{what}: {err}");
    assert!(err.contains("tag 5, comm 0)"), "{what}: {err}");
    assert!(err.contains("--stall-timeout"), "{what}: {err}");
    // Bound 1 s (the traced durations are 0), ticks of 250 ms, MPI start-up: far below the
    // 100 s `timeout` that would otherwise end it.
    assert!(took < Duration::from_secs(90), "{what}: took {took:?}");
}

#[test]
fn threads_runtime_ends_a_deadlocked_replay() {
    let d = tempfile::tempdir().unwrap();
    let trace = deadlock(d.path());
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let (out, took) = run(Command::new("timeout").args([
        "100",
        env!("CARGO_BIN_EXE_iotrex-replay"),
        trace.to_str().unwrap(),
        "--threads",
        "--comm",
        "real",
        "--stall-timeout",
        "1",
        "--root",
        root.to_str().unwrap(),
    ]));
    check_stalled(&out, took, "--threads");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank 0: in MPI_Recv"), "{err}");
    assert!(err.contains("rank 1: in MPI_Recv"), "{err}");
}

#[test]
fn threads_runtime_on_a_pool_ends_a_deadlocked_replay() {
    let d = tempfile::tempdir().unwrap();
    let trace = deadlock(d.path());
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let (out, took) = run(Command::new("timeout").args([
        "100",
        env!("CARGO_BIN_EXE_iotrex-replay"),
        trace.to_str().unwrap(),
        "--threads",
        "--max-threads",
        "1",
        "--comm",
        "real",
        "--stall-timeout",
        "1",
        "--root",
        root.to_str().unwrap(),
    ]));
    check_stalled(&out, took, "--threads on a pool of 1");
}

#[test]
fn mpi_runtime_ends_a_deadlocked_replay() {
    if !have_mpirun() {
        eprintln!("skipped: no mpirun");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let trace = deadlock(d.path());
    let root = d.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let (out, took) = run(Command::new("timeout").args([
        "100",
        "mpirun",
        "-np",
        "2",
        env!("CARGO_BIN_EXE_iotrex-replay"),
        trace.to_str().unwrap(),
        "--comm",
        "real",
        "--stall-timeout",
        "1",
        "--root",
        root.to_str().unwrap(),
    ]));
    check_stalled(&out, took, "mpirun");
}

#[test]
fn a_bad_stall_timeout_is_refused() {
    for bad in ["0", "-1", "soon", "inf"] {
        let out = Command::new(env!("CARGO_BIN_EXE_iotrex-replay"))
            .args([
                "t.iotrex",
                "--threads",
                "--root",
                "/tmp",
                "--stall-timeout",
                bad,
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--stall-timeout"), "{bad}: {err}");
    }
}
