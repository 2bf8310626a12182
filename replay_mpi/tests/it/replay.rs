//! End-to-end replay tests: generated traces replayed with threads (through the library) and
//! under a real `mpirun` (through the `iotrex-replay` binary); counts, bytes and file sizes are
//! checked against the trace, and bad inputs against their error messages.

use crate::common;
use common::*;
use replay::{CollectiveIo, CommMode, ComputeMode, LayerView, Options, Report, Root};
use rsd::trace::RawEvent;
use rsd::{Header, Op, Param, TraceFile};
use std::path::{Path, PathBuf};
use std::process::Command;

const BLOCK: i64 = 4096;

fn ev(op: Op, site: u64, params: Vec<i64>) -> RawEvent {
    let mut e = RawEvent::new(op, 0xabc0 + site, params);
    e.gap_ns = 2_000;
    e.dur_ns = 1_000;
    e
}

/// A small SPMD program: a communicator split, a file per rank, a ring of messages, an
/// allreduce, a barrier on the split communicator, a shared file written collectively at an
/// absolute path, and a log written by rank 0 through a path with `..`.
fn small_rank(r: u32, n: u32, iters: i64) -> Vec<RawEvent> {
    let ri = r as i64;
    let mut v = vec![
        ev(Op::Init, 1, vec![]),
        ev(Op::CommSplit, 2, vec![0, ri % 2, ri, 2]),
        with_path(
            ev(Op::Open, 3, vec![0o1101, 0o644, 3]),
            &format!("data/rank_{r}"),
        ),
    ];
    for i in 0..iters {
        v.push(ev(Op::Pwrite, 4, vec![3, BLOCK, i * BLOCK, BLOCK]));
    }
    v.push(ev(Op::Close, 5, vec![3]));
    if r > 0 {
        v.push(ev(Op::Recv, 6, vec![2, 7, -1, 7, 0, 8]));
    }
    if r + 1 < n {
        v.push(ev(Op::Send, 7, vec![2, 7, 1, 7, 0, 8]));
    }
    v.push(ev(Op::Allreduce, 8, vec![1, 7, 3, 0, 4]));
    v.push(ev(Op::Barrier, 9, vec![2]));
    v.push(with_path(
        ev(Op::FileOpen, 10, vec![0, 5, 0]),
        "/abs/shared.dat",
    ));
    for k in 0..2 {
        let off = (k * n as i64 + ri) * BLOCK;
        v.push(ev(Op::FileWriteAtAll, 11, vec![0, off, BLOCK, 1, BLOCK]));
    }
    v.push(ev(Op::FileClose, 12, vec![0]));
    if r == 0 {
        v.push(with_path(ev(Op::Fopen, 13, vec![2, 5]), "logs/../log.txt"));
        v.push(ev(Op::Fwrite, 14, vec![5, 1, 100, 100]));
        v.push(ev(Op::Fclose, 15, vec![5]));
    }
    v.push(ev(Op::Finalize, 16, vec![]));
    v
}

fn small(n: u32, iters: i64) -> TraceFile {
    build(n, |r| small_rank(r, n, iters))
}

fn threads(tf: &TraceFile, dir: &Path, o: &Options) -> Report {
    let root = Root::new(dir).unwrap();
    replay::run_threads(tf, &root, o).unwrap()
}

fn size(p: PathBuf) -> u64 {
    std::fs::metadata(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .len()
}

fn check_small_files(dir: &Path, n: u32, iters: i64) {
    for r in 0..n {
        assert_eq!(
            size(dir.join(format!("data/rank_{r}"))),
            (iters * BLOCK) as u64
        );
    }
    assert_eq!(
        size(dir.join("abs/shared.dat")),
        2 * n as u64 * BLOCK as u64
    );
    assert_eq!(size(dir.join("log.txt")), 100);
}

#[test]
fn threads_counts_equal_stats_and_files_have_trace_sizes() {
    let tf = small(4, 5);
    for comm in [CommMode::Delay, CommMode::Real, CommMode::Skip] {
        let d = tempfile::tempdir().unwrap();
        let r = threads(&tf, d.path(), &opts(comm));
        assert_clean(&r);
        check_small_files(d.path(), 4, 5);
        let s = rsd_view::stats::summarize(&tf.trace);
        let pw = r.ops.iter().find(|o| o.op == "pwrite").unwrap();
        assert_eq!(pw.count, s.ops[&(rsd::Layer::Posix, Op::Pwrite)].count);
        assert_eq!(pw.bytes, 4 * 5 * BLOCK as u64);
        assert!(r.vs_traced_pct.is_some());
    }
}

#[test]
fn synth_trace_replays_with_nested_children_credited_not_issued() {
    let tf = TraceFile {
        header: Header::new(2),
        trace: rsd_view::synth::spmd(2, 3),
    };
    let d = tempfile::tempdir().unwrap();
    let r = threads(&tf, d.path(), &opts(CommMode::Real));
    assert_clean(&r);
    let pw = r.ops.iter().find(|o| o.op == "pwrite").unwrap();
    // 2 ranks x 3 iterations issued, and under --threads the 3 pwrites nested in rank 0's
    // collective writes issued too: they are what the MPI library wrote for the collective
    // (an aggregator's writes), and the collective itself then moves no data.
    assert_eq!((pw.count, pw.credited), (9, 0));
    let w = r
        .ops
        .iter()
        .find(|o| o.op == "MPI_File_write_at_all")
        .unwrap();
    assert_eq!((w.count, w.credited), (6, 0));
    assert_eq!(size(d.path().join("out/shared.dat")), (3 * 2) << 20);
    // The POSIX view: MPI-IO calls credited, their nested pwrites issued on the shared file.
    let d2 = tempfile::tempdir().unwrap();
    let o = Options {
        layer: LayerView::Posix,
        ..opts(CommMode::Real)
    };
    let r2 = threads(&tf, d2.path(), &o);
    assert_clean(&r2);
    let w = r2
        .ops
        .iter()
        .find(|o| o.op == "MPI_File_write_at_all")
        .unwrap();
    assert_eq!(w.credited, w.count);
    assert_eq!(size(d2.path().join("out/shared.dat")), (3 * 2) << 20);
}

#[test]
fn threads_64_ranks_with_real_communication() {
    let tf = small(64, 2);
    let d = tempfile::tempdir().unwrap();
    let o = Options {
        compute: ComputeMode::None,
        ..opts(CommMode::Real)
    };
    let r = threads(&tf, d.path(), &o);
    assert_clean(&r);
    assert_eq!(r.ranks, 64);
    check_small_files(d.path(), 64, 2);
}

#[test]
fn prep_creates_files_read_before_written() {
    let tf = build(1, |_| {
        vec![
            with_path(ev(Op::Open, 1, vec![0, 0, 3]), "/input/in.dat"),
            ev(Op::Pread, 2, vec![3, 1000, 0, 1000]),
            // pread does not move the offset; lseek does.
            ev(Op::Lseek, 5, vec![3, 1000, 0, 1000]),
            ev(Op::Read, 3, vec![3, 500, 500]),
            ev(Op::Close, 4, vec![3]),
        ]
    });
    let d = tempfile::tempdir().unwrap();
    let root = Root::new(d.path()).unwrap();
    let r = replay::run_threads(&tf, &root, &Options::default()).unwrap();
    assert!(r.failed > 0, "reads of a missing file must be reported");
    let need = replay::prep::prep(&tf.trace, &root).unwrap();
    assert_eq!(need.get("/input/in.dat"), Some(&1500));
    let r = replay::run_threads(&tf, &root, &Options::default()).unwrap();
    assert_clean(&r);
    assert_eq!(size(d.path().join("input/in.dat")), 1500);
}

#[test]
fn escapes_stay_inside_the_root() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim");
    let tf = build(1, |_| {
        vec![
            with_path(
                ev(Op::Open, 1, vec![0o1101, 0o644, 3]),
                "../../../../victim",
            ),
            ev(Op::Write, 2, vec![3, 10, 10]),
            ev(Op::Close, 3, vec![3]),
            with_path(
                ev(Op::Open, 4, vec![0o1101, 0o644, 4]),
                &target.display().to_string(),
            ),
            ev(Op::Write, 5, vec![4, 10, 10]),
            ev(Op::Close, 6, vec![4]),
        ]
    });
    let d = tempfile::tempdir().unwrap();
    let r = threads(&tf, d.path(), &Options::default());
    assert_clean(&r);
    assert_eq!(size(d.path().join("victim")), 10);
    assert_eq!(
        size(
            Root::new(d.path())
                .unwrap()
                .lexical(&target.display().to_string())
        ),
        10
    );
    assert!(!target.exists());
    // A symlink inside the root that points out is refused, and nothing is written through it.
    let d = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("tmp")).unwrap();
    let tf = build(1, |_| {
        vec![
            with_path(ev(Op::Open, 1, vec![0o1101, 0o644, 3]), "/tmp/victim"),
            ev(Op::Write, 2, vec![3, 10, 10]),
        ]
    });
    let root = Root::new(d.path()).unwrap();
    let e = replay::run_threads(&tf, &root, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("outside the root"), "{e}");
    assert!(!target.exists());
}

// ---- through the binaries ----

fn write_trace(dir: &Path, name: &str, tf: &TraceFile) -> PathBuf {
    let p = dir.join(name);
    tf.write(&p).unwrap();
    p
}

#[test]
fn mpirun_4_and_8_ranks_match_trace_and_threads() {
    if !have_mpirun() {
        eprintln!("skipped: no mpirun");
        return;
    }
    for (n, comm) in [(4u32, "real"), (8, "delay")] {
        let t = tempfile::tempdir().unwrap();
        let tf = small(n, 3);
        let trace = write_trace(t.path(), "s.iotrex", &tf);
        let root = t.path().join("root");
        let (j, stdout) = replay_mpi(n, &trace, &root, &["--comm", comm]);
        assert!(stdout.contains("replay vs traced time:"), "{stdout}");
        check_small_files(&root, n, 3);
        let d = tempfile::tempdir().unwrap();
        let r = threads(&tf, d.path(), &opts(CommMode::Real));
        let tj = serde_json::to_value(&r).unwrap();
        assert_eq!(ops_of(&j), ops_of(&tj), "--threads and MPI counts differ");
    }
}

#[test]
fn bad_inputs_give_clear_errors() {
    let t = tempfile::tempdir().unwrap();
    let tf = small(4, 1);
    let trace = write_trace(t.path(), "s.iotrex", &tf);
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(bin()).args(args).output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (tr, rt) = (trace.to_str().unwrap(), root.to_str().unwrap());
    // Missing root.
    let missing = t.path().join("nope");
    let (ok, err) = run(&[tr, "--threads", "--root", missing.to_str().unwrap()]);
    assert!(
        !ok && err.contains("error: --root") && err.contains("hint:"),
        "{err}"
    );
    // Corrupt trace.
    let mut bytes = std::fs::read(&trace).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0xff;
    let bad = t.path().join("bad.iotrex");
    std::fs::write(&bad, &bytes).unwrap();
    let (ok, err) = run(&[bad.to_str().unwrap(), "--threads", "--root", rt]);
    assert!(
        !ok && err.contains("corrupt") && err.contains("bad.iotrex"),
        "{err}"
    );
    // Incomplete trace.
    let mut inc = tf.clone();
    inc.header.incomplete = true;
    inc.header.notes.push("rank 3 died".into());
    let inc = write_trace(t.path(), "inc.iotrex", &inc);
    let (ok, err) = run(&[inc.to_str().unwrap(), "--threads", "--root", rt]);
    assert!(
        !ok && err.contains("--allow-incomplete") && err.contains("rank 3 died"),
        "{err}"
    );
    let (ok, err) = run(&[
        inc.to_str().unwrap(),
        "--threads",
        "--root",
        rt,
        "--allow-incomplete",
    ]);
    assert!(ok, "{err}");
    // Bad flag values.
    let (ok, err) = run(&[tr, "--threads", "--root", rt, "--comm", "loud"]);
    assert!(!ok && err.contains("--comm"), "{err}");
    let (ok, err) = run(&[tr, "--threads", "--root", rt, "--max-threads", "0"]);
    assert!(!ok && err.contains("--max-threads"), "{err}");
    // More ranks than --max-threads: no longer refused, the ranks share 3 threads.
    let (ok, err) = run(&[tr, "--threads", "--root", rt, "--max-threads", "3"]);
    assert!(ok, "{err}");
    // Wrong rank count under MPI.
    if have_mpirun() {
        let out = mpirun(2, &[tr, "--root", rt]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("the trace has 4 ranks but the replay runs 2")
                && err.contains("extrapolate"),
            "{err}"
        );
        assert_eq!(
            err.matches("error:").count(),
            1,
            "printed once, by rank 0: {err}"
        );
    }
}

/// A real trace: the ior_like mini-app (collective MPI-IO, read-back, sync) traced at 4 ranks
/// with the tracer, then replayed under mpirun and with threads. Skipped when the tracer of
/// this build (under CARGO_TARGET_DIR), mpirun or mpicc is missing.
#[test]
fn mini_app_trace_replays_with_exact_counts() {
    let t = tempfile::tempdir().unwrap();
    let Some((tracer, app)) = app_setup("ior_like", t.path()) else {
        return;
    };
    let trace = t.path().join("ior.4.iotrex");
    let data = t.path().join("ior.dat");
    let mut args = vec![
        "-a", "mpiio", "-c", "-R", "-e", "-t", "4096", "-b", "16384", "-s", "2", "-o",
    ];
    args.push(data.to_str().unwrap());
    trace_app(4, &tracer, &app, &args, &trace);
    let root = t.path().join("root");
    let (j, _) = replay_mpi(4, &trace, &root, &["--comm", "real", "--prep"]);
    assert!(j["vs_traced_pct"].is_number());
    // The shared file: 4 ranks x 2 segments x 16 KiB, at the traced path re-rooted.
    let shared = Root::new(&root).unwrap().lexical(data.to_str().unwrap());
    assert_eq!(size(shared), 4 * 2 * 16384);
    let tf = replay::load(&trace, false).unwrap();
    let d = tempfile::tempdir().unwrap();
    let root_t = Root::new(d.path()).unwrap();
    replay::prep::prep(&tf.trace, &root_t).unwrap();
    let r = replay::run_threads(&tf, &root_t, &opts(CommMode::Real)).unwrap();
    assert_clean(&r);
    assert_eq!(ops_of(&j), ops_of(&serde_json::to_value(&r).unwrap()));
}

/// Traces `tests/apps/<app> OUT args...` at 4 ranks (OUT a fresh directory), replays it under
/// mpirun and with threads, and checks that each of `files` (name under OUT, each rank's write
/// calls in bytes) holds exactly the bytes the application's layout implies (see
/// [`replayed_bytes`]) after both replays. Returns OUT, or None when the test is skipped.
fn assert_layout_replays(
    t: &Path,
    app: &str,
    args: &[String],
    files: &[(&str, Vec<usize>)],
) -> Option<PathBuf> {
    let (tracer, app) = app_setup(app, t)?;
    let out = t.join("orig");
    std::fs::create_dir(&out).unwrap();
    let trace = t.join("app.4.iotrex");
    let mut all = vec![out.to_str().unwrap()];
    all.extend(args.iter().map(String::as_str));
    trace_app(4, &tracer, &app, &all, &trace);
    let check = |root: &Path, how: &str| {
        for (name, calls) in files {
            let traced = out.join(name);
            let orig = std::fs::read(&traced).unwrap();
            let p = Root::new(root).unwrap().lexical(traced.to_str().unwrap());
            let got = std::fs::read(&p).unwrap_or_else(|e| panic!("{how}: {}: {e}", p.display()));
            assert_eq!(got.len(), orig.len(), "{how}: size of {name}");
            let want = replayed_bytes(&orig, calls);
            let bad = (0..want.len()).find(|i| got[*i] != want[*i]);
            assert!(bad.is_none(), "{how}: {name} differs first at byte {bad:?}");
        }
    };
    let root_m = t.join("root_mpi");
    let fast = ["--comm", "real", "--compute", "none"];
    replay_mpi(4, &trace, &root_m, &fast);
    check(&root_m, "mpirun");
    let tf = replay::load(&trace, false).unwrap();
    let root_t = t.join("root_threads");
    std::fs::create_dir(&root_t).unwrap();
    // Each rank's own pieces: the library's collective buffering (what `library` replays)
    // writes one pattern over an aggregator's whole range, holes included.
    let o = Options {
        compute: ComputeMode::None,
        collective_io: CollectiveIo::Ranks,
        ..opts(CommMode::Real)
    };
    assert_clean(&threads(&tf, &root_t, &o));
    check(&root_t, "--threads");
    // The library's calls land in files of the same sizes.
    let root_l = t.join("root_library");
    std::fs::create_dir(&root_l).unwrap();
    let o = Options {
        collective_io: CollectiveIo::Library,
        ..o
    };
    assert_clean(&threads(&tf, &root_l, &o));
    for (name, _) in files {
        let traced = out.join(name);
        let p = Root::new(&root_l)
            .unwrap()
            .lexical(traced.to_str().unwrap());
        assert_eq!(
            size(p),
            size(traced),
            "--collective-io library: size of {name}"
        );
    }
    Some(out)
}

/// A real noncontiguous trace: view_app writes through a resized-vector view (collective,
/// then an independent write into the filetype's next copy) and a subarray view, traced at 4
/// ranks. Replayed under mpirun (views rebuilt from the recorded constructors) and with
/// threads (views flattened to POSIX regions), both files must hold exactly the bytes the
/// application's layout implies: same size, same holes, each rank's data at its own offsets.
#[test]
fn noncontiguous_views_replay_to_the_recorded_layout() {
    let t = tempfile::tempdir_in("/dev/shm").unwrap();
    let (nb, b, rows, cols) = (8usize, 16usize, 6usize, 24usize);
    let args: Vec<String> = [nb, b, rows, cols].iter().map(|v| v.to_string()).collect();
    let files = [
        ("view_vec", vec![nb * b * 4, b * 4]),
        ("view_sub", vec![rows * cols]),
    ];
    if let Some(out) = assert_layout_replays(t.path(), "view_app", &args, &files) {
        for (name, _) in files {
            let orig = std::fs::read(out.join(name)).unwrap();
            assert!(
                orig.contains(&0),
                "{name} has holes, so their place is checked too"
            );
        }
    }
}

/// hindexed_app's views, built with MPI_Type_create_hindexed, _hindexed_block,
/// _indexed_block and MPI_Type_dup (one collective write each, rank r owning blocks r, r+n,
/// ...), land each rank's bytes at its own blocks under mpirun and with threads.
#[test]
fn hindexed_family_views_replay_to_the_recorded_layout() {
    let t = tempfile::tempdir_in("/dev/shm").unwrap();
    let (nb, block) = (4usize, 64usize);
    let args = vec![nb.to_string(), block.to_string()];
    assert_layout_replays(
        t.path(),
        "hindexed_app",
        &args,
        &[("hindexed", vec![nb * block; 4])],
    );
}

/// Vector collectives with rank-dependent counts: under `--comm real` each is issued as the
/// real call with the counts of the trace (a count that disagreed with the root's would be an
/// MPI truncation error, fatal on MPI_COMM_WORLD); with threads they synchronise.
#[test]
fn vector_collectives_replay_with_recorded_counts() {
    let n = 4u32;
    const BYTE: i64 = 4;
    let tf = build(n, |r| {
        let ri = r as i64;
        let mine = 100 * (ri + 1);
        let all: i64 = (1..=n as i64).map(|k| 100 * k).sum();
        let at_root = |v: i64| if r == 1 { v } else { 0 };
        vec![
            ev(Op::Init, 1, vec![]),
            // Gatherv to root 1: rank r sends 100(r+1) bytes.
            ev(
                Op::Gatherv,
                2,
                vec![mine, BYTE, at_root(all), BYTE, 1, 0, mine],
            ),
            // Scatterv from root 1: rank r receives 100(r+1) bytes.
            ev(
                Op::Scatterv,
                3,
                vec![at_root(all), BYTE, mine, BYTE, 1, 0, mine],
            ),
            ev(Op::Allgatherv, 4, vec![mine, BYTE, all, BYTE, 0, mine]),
            // Alltoallv: rank r sends 100(r+1) bytes in all and receives an equal share.
            ev(
                Op::Alltoallv,
                5,
                vec![mine, BYTE, all / n as i64, BYTE, 0, mine],
            ),
            ev(Op::Finalize, 6, vec![]),
        ]
    });
    let d = tempfile::tempdir().unwrap();
    assert_clean(&threads(&tf, d.path(), &opts(CommMode::Real)));
    if !have_mpirun() {
        eprintln!("skipped the MPI half: no mpirun");
        return;
    }
    let trace = write_trace(d.path(), "v.iotrex", &tf);
    let (j, _) = replay_mpi(n, &trace, &d.path().join("root"), &["--comm", "real"]);
    let gv = ops_of(&j);
    assert!(
        gv.iter().any(|(op, c, _)| op == "MPI_Alltoallv" && *c == 4),
        "{gv:?}"
    );
    // The replay itself, traced: the vector collectives it issued move, rank by rank, the
    // bytes of the trace it replayed (a barrier in their place would record none).
    let Some(tracer) = tracer_lib() else {
        eprintln!(
            "skipped the traced replay: no tracer under {}",
            target_dir().display()
        );
        return;
    };
    let again = d.path().join("replayed.iotrex");
    let root2 = d.path().join("root2");
    std::fs::create_dir(&root2).unwrap();
    let args = [
        trace.to_str().unwrap(),
        "--root",
        root2.to_str().unwrap(),
        "--comm",
        "real",
    ];
    trace_app(n, &tracer, Path::new(bin()), &args, &again);
    let moved = |tf: &TraceFile| -> Vec<Vec<(Op, i64, i64)>> {
        (0..n)
            .map(|r| {
                tf.trace
                    .expand(r)
                    .iter()
                    .filter(|e| {
                        matches!(
                            e.op,
                            Op::Gatherv | Op::Scatterv | Op::Allgatherv | Op::Alltoallv
                        )
                    })
                    .map(|e| {
                        let other = e
                            .get(Param::Recvbytes)
                            .or(e.get(Param::Sendbytes))
                            .unwrap_or(0);
                        (e.op, e.p(Param::Bytes), other)
                    })
                    .collect()
            })
            .collect()
    };
    let replayed = TraceFile::read(&again).unwrap();
    let (mut got, want) = (moved(&replayed), moved(&tf));
    // Past the trace's own calls, the replay gathers its report (one more Gatherv).
    got.iter_mut()
        .zip(&want)
        .for_each(|(g, w)| g.truncate(w.len()));
    assert_eq!(got, want);
}

/// An extrapolation-sized trace: 1,024 ranks with a split, a message ring, an allreduce and
/// a collective write replay as threads under the default cap, and the same on a pool of
/// 1,023 threads (one of which runs two ranks).
#[test]
fn threads_1024_ranks_and_the_thread_cap() {
    let tf = small(1024, 1);
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let o = Options {
        compute: ComputeMode::None,
        ..opts(CommMode::Real)
    };
    let root = Root::new(d.path()).unwrap();
    let r = replay::run_threads_capped(&tf, &root, &o, 1024).unwrap();
    assert_clean(&r);
    assert_eq!(r.ranks, 1024);
    assert_eq!(
        size(d.path().join("abs/shared.dat")),
        2 * 1024 * BLOCK as u64
    );
    let d2 = tempfile::tempdir_in("/dev/shm").unwrap();
    let root2 = Root::new(d2.path()).unwrap();
    let pooled = replay::run_threads_capped(&tf, &root2, &o, 1023).unwrap();
    assert_clean(&pooled);
    assert_eq!(
        serde_json::to_value(&pooled).unwrap()["ops"],
        serde_json::to_value(&r).unwrap()["ops"]
    );
    assert_eq!(
        size(d2.path().join("abs/shared.dat")),
        2 * 1024 * BLOCK as u64
    );
}

/// Nested derived filetypes (indexed inside hvector inside struct, resized) on a generated
/// trace: under mpirun MPI's own type engine lays out the rebuilt types, with threads the
/// replay's flattening does; both must put every byte where the hand-derived type map says.
#[test]
fn nested_filetypes_land_where_their_type_map_says() {
    const INT: i64 = 7;
    const DOUBLE: i64 = 14;
    const BYTE: i64 = 4;
    let n = 4u32;
    // The type map of filetype 1003, worked out by hand: indexed {1 int at 0, 2 ints at 3}
    // (extent 20), 3 x 2 of those every 48 bytes, then 3 doubles at 160, resized to 256.
    let blocks: [(usize, usize); 10] = [
        (0, 4),
        (12, 12),
        (32, 8),
        (48, 4),
        (60, 12),
        (80, 8),
        (96, 4),
        (108, 12),
        (128, 8),
        (160, 24),
    ];
    let (tile, per_tile, region) = (256usize, 96usize, 1024usize);
    // Each rank: 2 tiles collectively from data position 0, then 150 bytes independently from
    // data position 200 (inside tile 2, across into tile 3).
    let calls = [(0usize, 2 * per_tile), (200, 150)];
    let tf = build(n, |r| {
        let disp = (r as usize * region) as i64;
        let mut v = vec![
            ev(Op::Init, 1, vec![]),
            ev(Op::TypeIndexed, 2, vec![2, INT, 1000, 1, 2, 0, 3]),
            ev(Op::TypeHvector, 3, vec![3, 2, 48, 1000, 1001]),
            ev(
                Op::TypeCreateStruct,
                4,
                vec![2, 1002, 1, 3, 0, 160, 1001, DOUBLE],
            ),
            ev(Op::TypeCreateResized, 5, vec![1002, 0, tile as i64, 1003]),
            ev(Op::TypeCommit, 6, vec![1003]),
            with_path(ev(Op::FileOpen, 7, vec![0, 9, 0]), "/v/nested.dat"),
            ev(Op::FileSetSize, 8, vec![0, (n as usize * region) as i64]),
            ev(Op::FileSetView, 9, vec![0, disp, BYTE, 1003]),
        ];
        let (o, b) = (calls[0].0 as i64, calls[0].1 as i64);
        v.push(ev(Op::FileWriteAtAll, 10, vec![0, o, b, BYTE, b]));
        // The collective write's aggregators rewrite whole ranges, holes included (read,
        // merge, write), and a rank may return before they are done: without the barrier the
        // independent write below could be overwritten with stale bytes.
        v.push(ev(Op::Barrier, 14, vec![0]));
        let (o, b) = (calls[1].0 as i64, calls[1].1 as i64);
        v.push(ev(Op::FileWriteAt, 11, vec![0, o, b, BYTE, b]));
        v.push(ev(Op::FileClose, 12, vec![0]));
        v.push(ev(Op::Finalize, 13, vec![]));
        v
    });
    // The file the type map implies: data position p of a rank is byte p % 96 of the map's
    // blocks in tile p / 96, and holds the pattern byte of its place in its call's buffer.
    let mut want = vec![0u8; n as usize * region];
    for r in 0..n as usize {
        for (start, len) in calls {
            for k in 0..len {
                let p = start + k;
                let (mut t, mut within) = (p / per_tile, p % per_tile);
                let mut at = 0;
                for (d, l) in blocks {
                    if within < l {
                        at = d + within;
                        break;
                    }
                    within -= l;
                }
                t *= tile;
                want[r * region + t + at] = replay::engine::Pattern::byte(k);
            }
        }
    }
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let o = Options {
        compute: ComputeMode::None,
        ..opts(CommMode::Real)
    };
    let root_t = d.path().join("threads");
    std::fs::create_dir(&root_t).unwrap();
    assert_clean(&threads(&tf, &root_t, &o));
    let got = std::fs::read(root_t.join("v/nested.dat")).unwrap();
    assert!(got == want, "--threads: layout differs from the type map");
    if !have_mpirun() {
        eprintln!("skipped the MPI half: no mpirun");
        return;
    }
    let trace = write_trace(d.path(), "nested.iotrex", &tf);
    let root_m = d.path().join("mpi");
    replay_mpi(n, &trace, &root_m, &["--comm", "real", "--compute", "none"]);
    let got = std::fs::read(root_m.join("v/nested.dat")).unwrap();
    let bad = (0..want.len()).find(|i| got[*i] != want[*i]);
    assert!(
        bad.is_none(),
        "mpirun: layout differs first at byte {bad:?}"
    );
}

#[test]
fn descriptor_copies_replay_on_the_same_open_file() {
    // open; dup; writes through the copy; close of the original; dup2 of the copy onto a new
    // number; pwrite and write through that; closes. The replay must follow the copies (the
    // copy shares the original's offset) and leave the file the program left.
    let Some(tracer) = tracer_lib() else {
        eprintln!(
            "skipped: needs {}/release/libiotrex_tracer.so",
            target_dir().display()
        );
        return;
    };
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let src = dir.path().join("dups.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[4096] = {0};
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int a = dup(fd);
    for (int i = 0; i < 5; i++) write(a, buf, sizeof buf);
    close(fd);
    int b = dup2(a, 20);
    pwrite(b, buf, 100, 0);
    write(b, buf, 10);
    close(a);
    close(b);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.path().join("dups");
    assert!(
        Command::new("cc")
            .arg("-o")
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    let data = dir.path().join("data");
    let trace = dir.path().join("dups.iotrex");
    let out = Command::new(&exe)
        .arg(&data)
        .env("LD_PRELOAD", &tracer)
        .env("IOTREX_OUT", &trace)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .output()
        .unwrap();
    assert!(out.status.success() && trace.exists(), "{out:?}");
    let traced_len = std::fs::metadata(&data).unwrap().len();
    assert_eq!(traced_len, 5 * 4096 + 10);
    let tf = TraceFile::read(&trace).unwrap();
    assert!(
        tf.trace.expand(0).iter().any(|e| e.op == Op::Dup),
        "the trace records the copies"
    );
    // Under MPI (one rank) and with threads.
    let root = dir.path().join("mpi");
    if have_mpirun() {
        replay_mpi(1, &trace, &root, &[]);
        let replayed = root.join(data.strip_prefix("/").unwrap());
        assert_eq!(std::fs::metadata(&replayed).unwrap().len(), traced_len);
    }
    let troot = dir.path().join("threads");
    std::fs::create_dir_all(&troot).unwrap();
    let o = Command::new(bin())
        .arg(&trace)
        .args(["--threads", "--root"])
        .arg(&troot)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && stdout.contains("op counts and bytes equal the trace's"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!stdout.contains("failed when replayed"), "{stdout}");
    let replayed = troot.join(data.strip_prefix("/").unwrap());
    assert_eq!(std::fs::metadata(&replayed).unwrap().len(), traced_len);
}

#[test]
fn an_open_that_failed_when_traced_is_not_a_replay_failure() {
    // IOR's rank 0 probes for its file with MPI_File_open on MPI_COMM_SELF before creating it
    // (recorded with fh = -1); the replay must not report that as a call it failed to replay.
    if !have_mpirun() {
        eprintln!("skipped: needs mpirun");
        return;
    }
    let tf = build(2, |r| {
        let mut v = vec![ev(Op::Init, 1, vec![])];
        if r == 0 {
            // comm 1 = MPI_COMM_SELF, amode 2 = MPI_MODE_RDONLY, fh -1 = the open failed.
            v.push(with_path(
                ev(Op::FileOpen, 2, vec![1, 2, -1]),
                "/probe/missing.dat",
            ));
        }
        v.push(with_path(
            ev(Op::FileOpen, 3, vec![0, 5, 0]),
            "/probe/made.dat",
        ));
        v.push(ev(
            Op::FileWriteAtAll,
            4,
            vec![0, r as i64 * BLOCK, BLOCK, 1, BLOCK],
        ));
        v.push(ev(Op::FileClose, 5, vec![0]));
        v.push(ev(Op::Finalize, 6, vec![]));
        v
    });
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let trace = write_trace(dir.path(), "probe.iotrex", &tf);
    let root = dir.path().join("root");
    // replay_mpi asserts no failed call and counts equal to the trace's.
    replay_mpi(2, &trace, &root, &["--comm", "real"]);
    assert!(!root.join("probe/missing.dat").exists());
    assert_eq!(
        std::fs::metadata(root.join("probe/made.dat"))
            .unwrap()
            .len(),
        2 * BLOCK as u64
    );
}

#[test]
fn a_view_built_on_an_unrecorded_type_stays_near_its_displacement() {
    // A filetype resized to 512 KiB around a type whose constructor the trace lacks (datatype
    // 1002, as MPI_Type_create_darray would leave it): taking that type as one byte per element
    // would spread a 32 KiB write over 16 GiB of file. The view is reported and replayed as
    // bytes from its displacement instead.
    let tf = build(2, |r| {
        vec![
            ev(Op::Init, 1, vec![]),
            ev(Op::TypeCreateResized, 2, vec![1002, 0, 524_288, 1003]),
            ev(Op::TypeCommit, 3, vec![1003]),
            with_path(ev(Op::FileOpen, 4, vec![0, 5, 0]), "/far/view.dat"),
            ev(Op::FileSetView, 5, vec![0, 2048, 1, 1003]),
            ev(
                Op::FileWriteAtAll,
                6,
                vec![0, r as i64 * 32_768, 32_768, 1, 32_768],
            ),
            ev(Op::FileClose, 7, vec![0]),
            ev(Op::Finalize, 8, vec![]),
        ]
    });
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let trace = write_trace(dir.path(), "far.iotrex", &tf);
    let check = |root: &Path, stdout: &str| {
        let len = std::fs::metadata(root.join("far/view.dat")).unwrap().len();
        assert_eq!(len, 2048 + 2 * 32_768, "{stdout}");
        assert!(
            stdout.contains("filetype 1003 is built on datatype 1002"),
            "{stdout}"
        );
    };
    if have_mpirun() {
        let root = dir.path().join("mpi");
        std::fs::create_dir_all(&root).unwrap();
        let out = mpirun(
            2,
            &[trace.to_str().unwrap(), "--root", root.to_str().unwrap()],
        );
        check(&root, &String::from_utf8_lossy(&out.stdout));
    }
    let root = dir.path().join("threads");
    std::fs::create_dir_all(&root).unwrap();
    let out = Command::new(bin())
        .arg(&trace)
        .args(["--threads", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    check(&root, &String::from_utf8_lossy(&out.stdout));
}

/// A darray MPI would refuse (its grid of 3 processes is not its size 2), as a damaged or
/// edited trace may hold: both replays refuse its view by name and take it as bytes from the
/// displacement, the collective calls still meet on every rank, nothing crashes.
#[test]
fn a_darray_mpi_would_refuse_is_refused_by_name() {
    use rsd::mpi::distribute::{BLOCK, DFLT_DARG};
    const INT: i64 = 7;
    const BYTE: i64 = 4;
    let n = 2;
    let tf = build(n, |r| {
        let mut darray = rsd::op::args::type_create_darray(2, r as i64, 1, 0, INT, 1000);
        darray.extend([8, BLOCK, DFLT_DARG, 3]);
        vec![
            ev(Op::Init, 1, vec![]),
            ev(Op::TypeCreateDarray, 2, darray),
            ev(Op::TypeCommit, 3, vec![1000]),
            with_path(ev(Op::FileOpen, 4, vec![0, 9, 0]), "/v/darray.dat"),
            ev(Op::FileSetView, 5, vec![0, 0, BYTE, 1000]),
            ev(Op::FileWriteAll, 6, vec![0, 16, BYTE, 16]),
            ev(Op::FileClose, 7, vec![0]),
            ev(Op::Finalize, 8, vec![]),
        ]
    });
    let why = "the psizes [3] make a grid of 3 processes, size is 2";
    let d = tempfile::tempdir_in("/dev/shm").unwrap();
    let o = Options {
        compute: ComputeMode::None,
        ..opts(CommMode::Real)
    };
    let root_t = d.path().join("threads");
    std::fs::create_dir(&root_t).unwrap();
    let r = threads(&tf, &root_t, &o);
    assert!(
        r.failures.iter().any(|f| f.contains(why)),
        "--threads: {:?}",
        r.failures
    );
    if !have_mpirun() {
        eprintln!("skipped the MPI half: no mpirun");
        return;
    }
    let trace = write_trace(d.path(), "darray.iotrex", &tf);
    let root_m = d.path().join("mpi");
    std::fs::create_dir(&root_m).unwrap();
    let out = mpirun(
        n,
        &[
            trace.to_str().unwrap(),
            "--root",
            root_m.to_str().unwrap(),
            "--comm",
            "real",
            "--compute",
            "none",
        ],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains(why), "mpirun: {all}");
    assert!(!all.contains("panicked"), "mpirun: {all}");
    // Taken as bytes from the displacement: both ranks' 16 bytes at 0.
    assert_eq!(size(root_m.join("v/darray.dat")), 16, "{all}");
}
