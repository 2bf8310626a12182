//! `--compute work` computes through the recorded gaps (this thread's CPU time) where the other
//! modes sleep: checked by the CPU time the replay process used, read from the kernel when it
//! is reaped (wait4's rusage), not by wall time.

use crate::common;

use rsd::trace::RawEvent;
use rsd::{Op, TraceFile};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

/// A call after a compute gap of `gap_ns` that lasted `dur_ns`.
fn timed(op: Op, site: u64, params: Vec<i64>, gap_ns: u64, dur_ns: u64) -> RawEvent {
    let mut e = RawEvent::new(op, 0x5100 + site, params);
    e.gap_ns = gap_ns;
    e.dur_ns = dur_ns;
    e
}

/// One rank: open, then `n` pwrites each after a compute gap of `gap_ms` ms, close.
fn trace(n: i64, gap_ms: u64) -> TraceFile {
    common::build(1, |_| {
        let mut v = vec![common::with_path(
            timed(Op::Open, 1, vec![0o1101, 0o644, 3], 1_000, 1_000),
            "work.dat",
        )];
        for i in 0..n {
            let params = vec![3, 4096, i * 4096, 4096];
            v.push(timed(Op::Pwrite, 2, params, gap_ms * 1_000_000, 1_000));
        }
        v.push(timed(Op::Close, 3, vec![3], 1_000, 1_000));
        v
    })
}

/// Runs `iotrex-replay --threads` with `--compute mode`; returns the child's user + system CPU
/// time in ms and its JSON report.
fn replay_cpu_ms(trace: &Path, dir: &Path, mode: &str) -> (f64, serde_json::Value) {
    let root = dir.join(format!("root-{mode}"));
    std::fs::create_dir_all(&root).unwrap();
    let json = dir.join(format!("{mode}.json"));
    // Reaped by wait4 below, which std's wait does not expose, for its rusage.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_iotrex-replay"))
        .arg(trace)
        .args(["--threads", "--root"])
        .arg(&root)
        .args(["--compute", mode, "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("iotrex-replay starts");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid, and wait4 writes into it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child, not yet reaped; status and ru are valid out-pointers.
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(r, child.id() as i32, "wait4 reaps the replay");
    let st = std::process::ExitStatus::from_raw(status);
    assert!(st.success(), "replay --compute {mode} failed: {st}");
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    let report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (ms(ru.ru_utime) + ms(ru.ru_stime), report)
}

#[test]
fn compute_work_burns_the_gaps_where_mean_sleeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.iotrex");
    // 10 gaps of 20 ms: 200 ms of recorded compute.
    trace(10, 20).write(&t).unwrap();

    let (work_cpu, work) = replay_cpu_ms(&t, dir.path(), "work");
    let (mean_cpu, mean) = replay_cpu_ms(&t, dir.path(), "mean");
    // Work: at least the 200 ms computed (a little slack for clock granularity).
    assert!(
        work_cpu >= 190.0,
        "--compute work used {work_cpu:.1} ms of CPU for 200 ms of recorded compute"
    );
    // Mean: the gaps are slept; only the last ~0.2 ms of each is spun.
    assert!(
        mean_cpu < 100.0,
        "--compute mean used {mean_cpu:.1} ms of CPU: it should sleep the gaps"
    );
    for (what, r) in [("work", &work), ("mean", &mean)] {
        assert_eq!(r["ops"].as_array().map(|a| a.len()), Some(3), "{what}: {r}");
        assert_eq!(r["failed"], 0, "{what}: {}", r["failures"]);
    }
    // The file has the trace's size whatever the compute mode.
    let len = std::fs::metadata(dir.path().join("root-work/work.dat"))
        .unwrap()
        .len();
    assert_eq!(len, 10 * 4096);
    // Work has no wall-clock plan to be late against; mean measures lateness for every write.
    assert_eq!(work["lateness"]["count"], 0, "{}", work["lateness"]);
    assert!(mean["lateness"]["count"].as_u64().unwrap_or(0) >= 10);
}

/// Two ranks, each: open a shared file collectively, then `n` collective writes of its own
/// 4 KiB piece that took `dur_ms` each when traced (no nested calls: all exchange and waiting).
fn collective_trace(n: i64, dur_ms: u64) -> TraceFile {
    common::build(2, |r| {
        let mut v = vec![common::with_path(
            timed(Op::FileOpen, 11, vec![0, 5, 0], 1_000, 1_000),
            "coll.dat",
        )];
        for i in 0..n {
            let params = vec![0, (i * 2 + r as i64) * 4096, 4096, 1, 4096];
            v.push(timed(
                Op::FileWriteAtAll,
                12,
                params,
                1_000,
                dur_ms * 1_000_000,
            ));
        }
        v.push(timed(Op::FileClose, 13, vec![0], 1_000, 1_000));
        v
    })
}

#[test]
fn threads_delay_keeps_a_collectives_recorded_exchange_time() {
    let tf = collective_trace(5, 10);
    let run = |comm| {
        let dir = tempfile::tempdir().unwrap();
        let o = replay::Options {
            comm,
            compute: replay::ComputeMode::None,
            ..replay::Options::default()
        };
        let r = replay::run_threads(&tf, &replay::Root::new(dir.path()).unwrap(), &o).unwrap();
        assert_eq!(r.failed, 0, "{:?}", r.failures);
        let len = std::fs::metadata(dir.path().join("coll.dat"))
            .unwrap()
            .len();
        assert_eq!(len, 5 * 2 * 4096, "both ranks' pieces are written");
        r
    };
    // --comm delay: each collective lasts at least its recorded 10 ms (the threads runtime has
    // no exchange of its own): 2 ranks x 5 x 10 ms. What the call itself did (the barrier, the
    // write) counts towards it and the rest is slept as communication; on a loaded machine a
    // barrier can wait the whole 10 ms itself, so the bound is on the two together.
    let delay = run(replay::CommMode::Delay);
    assert!(
        delay.comm_ns + delay.io_ns >= 95_000_000,
        "comm {} + io {} ns under --comm delay",
        delay.comm_ns,
        delay.io_ns
    );
    assert!(delay.wall_ns >= 50_000_000, "wall {} ns", delay.wall_ns);
    // --comm real: a barrier and the write, nothing slept.
    let real = run(replay::CommMode::Real);
    assert!(
        real.comm_ns < 25_000_000,
        "comm time {} ns under --comm real",
        real.comm_ns
    );
}
