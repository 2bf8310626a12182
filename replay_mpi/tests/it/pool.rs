//! `--threads` with more ranks than `--max-threads`: the ranks run as coroutines on a pool of
//! that many OS threads. The pool must replay exactly what one thread per rank replays (counts,
//! bytes, the files' sizes and contents), at 1,024 ranks too, and a failing rank must make the
//! others give up instead of hanging.

use crate::common;
use common::*;
use replay::{CommMode, ComputeMode, Options, Report, Root};
use rsd::trace::RawEvent;
use rsd::{Op, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BLOCK: i64 = 4096;
/// Split colours: the split communicators have different sizes when n is not a multiple.
const COLORS: u32 = 3;

fn ev(op: Op, site: u64, params: Vec<i64>) -> RawEvent {
    let mut e = RawEvent::new(op, 0x9000 + site, params);
    e.gap_ns = 3_000;
    e.dur_ns = 1_000;
    e
}

/// A rank's place in its split communicator (colour r % COLORS, key n - r: descending rank)
/// and that communicator's size.
fn split_rank(r: u32, n: u32) -> (i64, i64) {
    let c = r % COLORS;
    let size = (0..n).filter(|q| q % COLORS == c).count() as i64;
    let me = (r + 1..n).filter(|q| q % COLORS == c).count() as i64;
    (me, size)
}

/// Every kind of wait the threads runtime has: a split and a dup (barriers inside), a ring of
/// nonblocking messages completed by a waitall, a sendrecv, blocking sends and receives, a
/// bcast and a barrier on the split communicator, collective MPI-IO writes and reads on it, an
/// allreduce on the world; per-rank files of rank-dependent write sizes in between.
fn rich_rank(r: u32, n: u32, iters: i64) -> Vec<RawEvent> {
    let (ri, ni) = (r as i64, n as i64);
    let left = (ri - 1 + ni) % ni - ri;
    let right = (ri + 1) % ni - ri;
    let (me2, size2) = split_rank(r, n);
    let color = (r % COLORS) as i64;
    let mut v = vec![
        ev(Op::Init, 1, vec![]),
        ev(Op::CommSplit, 2, vec![0, color, ni - ri, 2]),
        ev(Op::CommDup, 3, vec![0, 3]),
        with_path(
            ev(Op::Open, 4, vec![0o1101, 0o644, 3]),
            &format!("data/rank_{r}"),
        ),
    ];
    let wsize = BLOCK * (1 + ri % 4);
    for i in 0..iters {
        v.push(ev(Op::Pwrite, 5, vec![3, wsize, i * wsize, wsize]));
    }
    v.push(ev(Op::Close, 6, vec![3]));
    if n > 1 {
        v.push(ev(Op::Irecv, 7, vec![8, 7, left, 5, 3, 32, 100]));
        v.push(ev(Op::Isend, 8, vec![8, 7, right, 5, 3, 32, 101]));
        v.push(ev(Op::Waitall, 9, vec![2]));
        v.push(ev(
            Op::Sendrecv,
            10,
            vec![8, 7, right, 6, 8, 7, left, 6, 3, 32],
        ));
        if r.is_multiple_of(2) && r + 1 < n {
            v.push(ev(Op::Send, 11, vec![8, 7, 1, 9, 0, 32]));
        }
        if r % 2 == 1 {
            v.push(ev(Op::Recv, 12, vec![8, 7, -1, 9, 0, 32]));
        }
    }
    v.push(ev(Op::Bcast, 13, vec![1, 7, 0, 2, 4]));
    v.push(ev(Op::Barrier, 14, vec![2]));
    v.push(with_path(
        ev(Op::FileOpen, 15, vec![2, 5, 0]),
        &format!("shared/color_{color}.dat"),
    ));
    for k in 0..2 {
        let off = (k * size2 + me2) * BLOCK;
        v.push(ev(Op::FileWriteAtAll, 16, vec![0, off, BLOCK, 1, BLOCK]));
    }
    v.push(ev(Op::FileClose, 17, vec![0]));
    v.push(with_path(
        ev(Op::FileOpen, 18, vec![2, 2, 1]),
        &format!("shared/color_{color}.dat"),
    ));
    v.push(ev(
        Op::FileReadAtAll,
        19,
        vec![1, me2 * BLOCK, BLOCK, 1, BLOCK],
    ));
    v.push(ev(Op::FileClose, 20, vec![1]));
    v.push(ev(Op::Allreduce, 21, vec![1, 7, 3, 0, 4]));
    v.push(ev(Op::Finalize, 22, vec![]));
    v
}

fn rich(n: u32, iters: i64) -> TraceFile {
    build(n, |r| rich_rank(r, n, iters))
}

/// Replays `tf` into a fresh directory with at most `max` OS threads.
fn replay(tf: &TraceFile, o: &Options, max: u32) -> (Report, tempfile::TempDir) {
    let d = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let root = Root::new(d.path()).unwrap();
    let r = replay::run_threads_capped(tf, &root, o, max).unwrap();
    (r, d)
}

fn ops(r: &Report) -> Vec<(String, u64, u64)> {
    ops_of(&serde_json::to_value(r).unwrap())
}

/// Every file under `dir`, by relative path, with its contents.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(base).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The files `rich(n, iters)` must leave: per-rank files of the pattern repeated per write,
/// and one shared file per colour, two blocks per member.
fn check_rich_files(got: &BTreeMap<PathBuf, Vec<u8>>, n: u32, iters: i64) {
    for r in 0..n {
        let w = (BLOCK * (1 + r as i64 % 4)) as usize;
        let f = &got[&PathBuf::from(format!("data/rank_{r}"))];
        assert_eq!(f.len(), w * iters as usize, "rank {r}");
        for (i, b) in f.iter().enumerate() {
            assert_eq!(
                *b,
                replay::engine::Pattern::byte(i % w),
                "rank {r} byte {i}"
            );
        }
    }
    for c in 0..COLORS.min(n) {
        let (_, size) = split_rank(c, n);
        let f = &got[&PathBuf::from(format!("shared/color_{c}.dat"))];
        assert_eq!(f.len() as i64, 2 * size * BLOCK, "colour {c}");
    }
    assert_eq!(got.len(), n as usize + COLORS.min(n) as usize);
}

#[test]
fn pool_replays_what_one_thread_per_rank_replays() {
    let (n, iters) = (13, 3);
    let tf = rich(n, iters);
    let summary = rsd_view::stats::summarize(&tf.trace);
    for comm in [CommMode::Real, CommMode::Delay] {
        let o = opts(comm);
        let (want, d) = replay(&tf, &o, n);
        assert_clean(&want);
        let want_files = files(d.path());
        check_rich_files(&want_files, n, iters);
        let pw = &summary.ops[&(rsd::Layer::Posix, Op::Pwrite)];
        assert!(
            ops(&want).contains(&("pwrite".into(), pw.count, pw.bytes)),
            "{:?}",
            ops(&want)
        );
        for max in [2, 3] {
            let (got, d) = replay(&tf, &o, max);
            assert_clean(&got);
            assert_eq!(got.ranks, n);
            assert_eq!(ops(&got), ops(&want), "--max-threads {max}, {comm:?}");
            assert!(
                files(d.path()) == want_files,
                "--max-threads {max}, {comm:?}: the files differ"
            );
        }
    }
}

/// The pool really waits: a trace whose gaps add up to a known time takes at least that long
/// with every rank sharing one thread (the waits overlap instead of adding up).
#[test]
fn pooled_gaps_are_waited_and_overlap() {
    let n = 32;
    let tf = build(n, |_| {
        let mut v = vec![ev(Op::Init, 1, vec![])];
        for _ in 0..10 {
            let mut b = ev(Op::Barrier, 2, vec![0]);
            b.gap_ns = 5_000_000;
            v.push(b);
        }
        v
    });
    let o = Options {
        compute: ComputeMode::Mean,
        ..opts(CommMode::Skip)
    };
    let t0 = std::time::Instant::now();
    let (r, _d) = replay(&tf, &o, 1);
    let wall = t0.elapsed();
    assert_clean(&r);
    // 10 gaps of 5 ms per rank: 50 ms whatever the rank count when the waits overlap; the
    // ranks one after the other on the one thread would take 32 x 50 ms.
    assert!(wall >= Duration::from_millis(50), "{wall:?}");
    assert!(wall < Duration::from_millis(800), "{wall:?}");
}

#[test]
fn pool_replays_1024_ranks_with_exact_counts() {
    let n = 1024;
    let tf = rich(n, 1);
    let o = Options {
        compute: ComputeMode::None,
        ..opts(CommMode::Real)
    };
    let (want, d) = replay(&tf, &o, n);
    assert_clean(&want);
    let want_files = files(d.path());
    drop(d);
    check_rich_files(&want_files, n, 1);
    let (got, d) = replay(&tf, &o, 8);
    assert_clean(&got);
    assert_eq!(got.ranks, n);
    assert_eq!(ops(&got), ops(&want));
    assert!(files(d.path()) == want_files, "the files differ");
}

/// Runs `f` on a thread and fails the test if it has not returned within a minute: a hang
/// must fail, not stall the suite.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the replay hung instead of giving up")
}

#[test]
fn a_failing_rank_aborts_the_pool() {
    let n = 24;
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    let d = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
    // Rank 5 opens a path through a symlink out of the root, a fatal error, then the others
    // wait for it in a barrier, a receive and a split.
    let tf = build(n, |r| {
        let mut v = rich_rank(r, n, 1);
        if r == 5 {
            v.insert(
                1,
                with_path(ev(Op::Open, 30, vec![0o1101, 0o644, 9]), "link/victim"),
            );
        }
        v
    });
    let root = Root::new(d.path()).unwrap();
    let e = within_a_minute(move || {
        replay::run_threads_capped(&tf, &root, &opts(CommMode::Real), 2)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .unwrap_err();
    assert!(e.contains("outside the root"), "{e}");
    assert!(!victim.exists());
}

#[test]
fn a_rank_that_finishes_early_fails_the_others_calls_instead_of_hanging() {
    let n = 24;
    // Rank 7 skips everything after its file: the others' messages, barriers and collectives
    // with it can never complete.
    let tf = build(n, |r| {
        let mut v = rich_rank(r, n, 1);
        if r == 7 {
            v.truncate(6);
        }
        v
    });
    let r = within_a_minute(move || {
        let d = tempfile::tempdir().unwrap();
        let root = Root::new(d.path()).unwrap();
        replay::run_threads_capped(&tf, &root, &opts(CommMode::Real), 3).unwrap()
    });
    assert!(r.failed > 0, "{}", r.render());
    // The cause leads: the earliest failure names rank 7, ahead of the cascade of ranks
    // that gave up after failing themselves.
    assert!(
        r.failures[0].contains("rank 7 finished without"),
        "{}",
        r.render()
    );
}

// ---- a real trace, through the binary ----

/// `iotrex-replay TRACE --threads --max-threads MAX`: its JSON report and the files it left.
fn replay_bin(trace: &Path, max: u32) -> (serde_json::Value, BTreeMap<PathBuf, Vec<u8>>) {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_iotrex-replay"))
        .arg(trace)
        .args(["--threads", "--prep", "--comm", "real", "--root"])
        .arg(&root)
        .args(["--max-threads", &max.to_string(), "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "--max-threads {max}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("op counts and bytes equal the trace's"),
        "--max-threads {max}: {stdout}"
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["failed"], 0, "--max-threads {max}: {stdout}");
    (j, files(&root))
}

/// Real traces of the mini-apps: comm_mix (barrier, bcast, allreduce, send/recv ring,
/// isend/irecv/waitall, sendrecv, comm_dup, collectives) and ior_like (collective MPI-IO
/// writes and read-back) at 4 ranks, replayed by the binary with one thread per rank and on
/// pools of 2 and 3 threads: the same counts and bytes (equal to the trace's) and files.
#[test]
fn mini_app_traces_replay_alike_on_a_pool() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let data = out.join("ior.dat");
    let cases: [(&str, Vec<&str>); 2] = [
        ("comm_mix", vec![out.to_str().unwrap(), "3", "100", "8192"]),
        (
            "ior_like",
            vec![
                "-a",
                "mpiio",
                "-c",
                "-R",
                "-t",
                "4096",
                "-b",
                "16384",
                "-s",
                "2",
                "-o",
                data.to_str().unwrap(),
            ],
        ),
    ];
    for (app, args) in cases {
        let Some((tracer, bin)) = app_setup(app, t.path()) else {
            return;
        };
        let trace = t.path().join(format!("{app}.4.iotrex"));
        trace_app(4, &tracer, &bin, &args, &trace);
        let (want, want_files) = replay_bin(&trace, 4);
        assert!(!want_files.is_empty(), "{app}: no files");
        for max in [2, 3] {
            let (got, got_files) = replay_bin(&trace, max);
            assert_eq!(got["ops"], want["ops"], "{app} --max-threads {max}");
            let sizes = |f: &BTreeMap<PathBuf, Vec<u8>>| {
                f.iter()
                    .map(|(p, b)| (p.clone(), b.len()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                sizes(&got_files),
                sizes(&want_files),
                "{app} --max-threads {max}"
            );
        }
    }
}

/// Thousands of ranks must not each hold their own copy of the write data or of their largest
/// read: the pattern is one buffer for the process, and a large read buffer leaves its rank
/// after the call.
#[test]
fn ranks_share_the_pattern_and_give_back_large_read_buffers() {
    use replay::engine::Pattern;
    let (mut a, mut b) = (Pattern::default(), Pattern::default());
    let pa = a.get(3 << 20).as_ptr();
    let got = b.get(1 << 20);
    assert_eq!(pa, got.as_ptr(), "two ranks' patterns are one buffer");
    assert!(got.iter().enumerate().all(|(i, x)| *x == Pattern::byte(i)));
    // A small read buffer stays with its rank; a large one goes.
    let mut own = Vec::new();
    let small = Pattern::take_read_buf(&mut own, 4096);
    assert_eq!(small.len(), 4096);
    own = small;
    Pattern::trim_read_buf(&mut own);
    assert!(own.capacity() >= 4096);
    let mut big = Pattern::take_read_buf(&mut own, 1 << 20);
    assert_eq!(big.len(), 1 << 20);
    Pattern::trim_read_buf(&mut big);
    assert_eq!(big.capacity(), 0);
}
