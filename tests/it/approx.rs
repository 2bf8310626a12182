//! Declared approximation on real runs: loop structure that does not depend on values, and
//! bounded traces with declared approximation.
//!
//! `halo3d` (tests/apps/halo3d.c) exchanges with its six neighbours through one call site,
//! with data-dependent sizes, on a periodic grid: on 2x2x2 both neighbours of a dimension are
//! the same rank (the peers look regular), on 3x2x2 they are not. LAMMPS (Debian `lmp`) runs
//! tests/apps/lammps_weak.in, weak-scaled, with MPI-IO text dumps; skipped (saying so) where
//! `lmp` is not installed.
//!
//! halo3d's summaries at four scales extrapolate to twice the largest
//! (fitted statistics, marked approximate) within 10% of a real run's, and `iotrex diff`
//! compares them by their statistics: within tolerance against the real run, outside it
//! against a doctored or a different-scale trace.

use crate::common;

use common::{Opts, app, args, mpirun, scratch};
use rsd::trace::{Node, NodeKind};
use rsd::{Op, TraceFile, Val};
use std::path::Path;
use std::process::Command;

/// One rank's loop structure: ops and call sites in order, loops as brackets, no values, no
/// iteration counts and no nested (library) calls.
fn skeleton(nodes: &[Node], rank: u32, out: &mut String) {
    for n in nodes.iter().filter(|n| n.ranks.contains(rank)) {
        match &n.kind {
            NodeKind::Event(e) => out.push_str(&format!("{}@{:x} ", e.op.name(), e.sig)),
            NodeKind::Loop(l) => {
                out.push_str("loop{ ");
                skeleton(&l.body, rank, out);
                out.push_str("} ");
            }
        }
    }
}

fn skel(tf: &TraceFile, rank: u32) -> String {
    let mut s = String::new();
    skeleton(&tf.trace.nodes, rank, &mut s);
    s
}

fn halo(np: u32, grid: [u32; 3], approx: &str) -> (TraceFile, u64) {
    halo_dumping(np, grid, approx, 5)
}

/// [`halo`] with a dump every `every` steps (none when `every` exceeds the 20 steps).
fn halo_dumping(np: u32, grid: [u32; 3], approx: &str, every: u32) -> (TraceFile, u64) {
    let d = scratch();
    let trace = d.path().join(format!("halo.{np}.iotrex"));
    let dir = d.path().to_str().unwrap().to_string();
    let g: Vec<String> = grid.iter().map(|x| x.to_string()).collect();
    let every = every.to_string();
    let a: Vec<&str> = vec![&dir, &g[0], &g[1], &g[2], "20", &every];
    let o = Opts {
        env: vec![("IOTREX_APPROX", approx.to_string())],
        ..Opts::default()
    };
    let run = mpirun(np, &app("halo3d"), &args(&a), &trace, &o);
    let tf = run.read();
    (tf, std::fs::metadata(&trace).unwrap().len())
}

/// Every (op, parameter name) that holds a summary.
fn summarised(tf: &TraceFile) -> Vec<(Op, &'static str, rsd::approx::Summary)> {
    fn walk(nodes: &[Node], out: &mut Vec<(Op, &'static str, rsd::approx::Summary)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) => {
                    for (k, p) in e.params.iter().enumerate() {
                        for g in &p.groups {
                            if let Val::Approx(s) = &g.val {
                                let name = e.op.params().get(k).map_or("?", |p| p.name());
                                out.push((e.op, name, (**s).clone()));
                            }
                        }
                    }
                    walk(&e.children, out);
                }
                NodeKind::Loop(l) => walk(&l.body, out),
            }
        }
    }
    let mut v = Vec::new();
    walk(&tf.trace.nodes, &mut v);
    v
}

/// halo3d's hash (C `unsigned` arithmetic).
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846ca68b);
    x ^= x >> 16;
    x
}

#[test]
fn halo_loop_structure_is_the_same_on_2x2x2_and_3x2x2() {
    // Exact traces: the structure must not come from the values either way.
    let (a, _) = halo(8, [2, 2, 2], "none");
    let (b, _) = halo(12, [3, 2, 2], "none");
    assert_eq!(
        rsd::approx::count(&a.trace),
        0,
        "IOTREX_APPROX=none summarised"
    );
    // Rank 1 is no aggregator of the collective dump at either scale; rank 0 is at both.
    for r in [0, 1] {
        let (sa, sb) = (skel(&a, r), skel(&b, r));
        assert_eq!(
            sa, sb,
            "rank {r}: 2x2x2 and 3x2x2 give different loop structures"
        );
        // The six swaps of a step are one loop of the neighbours' query and the two
        // exchanges (one call site each).
        assert!(
            sa.contains("loop{ MPI_Cart_shift@")
                && sa.matches("MPI_Cart_shift@").count() == 1
                && sa.matches("MPI_Sendrecv@").count() == 2,
            "rank {r}: {sa}"
        );
    }
}

#[test]
fn halo_message_sizes_are_summarised_and_everything_else_stays_exact() {
    let (steps, np) = (20u32, 12u32);
    let (tf, _) = halo(np, [3, 2, 2], "comm");
    let s = summarised(&tf);
    assert!(!s.is_empty(), "nothing summarised");
    for (op, p, _) in &s {
        assert_eq!(*op, Op::Sendrecv, "{} {p} summarised", op.name());
        assert!(
            ["sendcount", "recvcount", "bytes"].contains(p),
            "MPI_Sendrecv {p} summarised"
        );
    }
    // The particles' sendcount: 3 doubles per particle, 5..44 particles, one sample per swap
    // of every step on every rank. The summary holds exactly these samples' statistics.
    let mut want = rsd::timing::Stats::default();
    for rank in 0..np {
        for st in 0..steps {
            for d in 0..3u32 {
                for dir in [0u32, 2] {
                    let h = mix(rank
                        .wrapping_mul(7919)
                        .wrapping_add(st * 131)
                        .wrapping_add(d * 17)
                        .wrapping_add(dir));
                    want.add(3 * (5 + u64::from(h % 40)), rank);
                }
            }
        }
    }
    // One summary per node: rank 0 (and another aggregator of the dump) run nodes of their
    // own, so their samples are in summaries of their own.
    let mut got = rsd::timing::Stats::default();
    for (_, _, x) in s.iter().filter(|(_, p, _)| *p == "sendcount") {
        got.merge(&x.stats);
    }
    assert_eq!(got.count, want.count);
    assert_eq!((got.min, got.max), (want.min, want.max));
    assert!(
        (got.mean - want.mean).abs() < 1e-9 * want.mean,
        "{got:?} {want:?}"
    );
    assert!((got.variance() - want.variance()).abs() < 1e-6 * want.variance());
    assert_eq!(got.bins, want.bins);
    // Peers, and the dump's offsets and sizes (I/O, not allowed by default), stay exact.
    let text = rsd_view::show::render_trace_file(&tf);
    assert!(text.contains("approx     "), "show does not mark the trace");
    for line in text.lines().filter(|l| l.contains("MPI_File_write_at_all")) {
        assert!(!line.contains("~{"), "I/O summarised by default: {line}");
    }
    // With io allowed the dump's sizes may be summarised too; with none nothing is.
    let (none, _) = halo(np, [3, 2, 2], "none");
    assert!(summarised(&none).is_empty());
}

#[test]
fn consumers_refuse_a_summary_naming_the_event_and_parameter() {
    let (tf, _) = halo(8, [2, 2, 2], "comm");
    let d = scratch();
    let p = d.path().join("halo.8.iotrex");
    tf.write(&p).unwrap();
    let iotrex = Path::new(env!("CARGO_BIN_EXE_iotrex"));
    // diff compares summaries by their statistics: a trace against itself
    // is identical within the tolerance, every approximate part 0% apart.
    let out = Command::new(iotrex)
        .arg("diff")
        .arg(&p)
        .arg(&p)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "diff of a trace with itself: {so}");
    assert!(
        so.starts_with("identical within tolerance") && so.contains("MPI_Sendrecv"),
        "{so}"
    );
    // Replay and the CODES export draw exact values from the summaries:
    // the halo's MPI_Sendrecv replays with real messages, and the same seed gives the same
    // export.
    std::fs::create_dir_all(d.path().join("root")).unwrap();
    let out = Command::new(iotrex)
        .args(["replay", "--threads", "--comm", "real", "--root"])
        .arg(d.path().join("root"))
        .arg(&p)
        .output()
        .unwrap();
    let (so, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "replay of a summary failed: {so}\n{err}"
    );
    assert!(so.contains("op counts and bytes equal the trace's"), "{so}");
    let export = |dir: &str, seed: &str| {
        let o = Command::new(iotrex)
            .args(["export", "codes", "--seed", seed, "-o"])
            .arg(d.path().join(dir))
            .arg(&p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut files: Vec<_> = std::fs::read_dir(d.path().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| std::fs::read(f).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        export("c1", "7"),
        export("c2", "7"),
        "same seed, same export"
    );
    // The library refuses too, for every consumer that calls it.
    let e = rsd::approx::require_exact(&tf.trace, "t", "extrapolation").unwrap_err();
    assert!(e.to_string().contains("parameter `sendcount`"), "{e}");
}

#[test]
fn halo_trace_size_is_bounded_in_ranks() {
    // The dump's offsets are prefix sums of text lengths, exact per rank unless I/O may be
    // summarised too: with `comm` alone they grow with the ranks.
    let (_, s8) = halo(8, [2, 2, 2], "comm,io");
    let (_, s16) = halo(16, [4, 2, 2], "comm,io");
    let (_, c8) = halo(8, [2, 2, 2], "comm");
    let (_, c16) = halo(16, [4, 2, 2], "comm");
    let (_, e8) = halo(8, [2, 2, 2], "none");
    let (_, e16) = halo(16, [4, 2, 2], "none");
    eprintln!("halo3d sizes: exact 8 {e8} 16 {e16}; comm 8 {c8} 16 {c16}; comm,io 8 {s8} 16 {s16}");
    // The message sizes no longer grow with ranks and steps: the summarised trace is less
    // than half the exact one at both scales. It still grows with ranks (8 -> 16: about 2x):
    // the peers on a periodic grid stay exact and split into per-rank groups (not bounded yet).
    assert!(
        2 * c8 < e8 && 2 * c16 < e16,
        "summaries did not halve the trace"
    );
    assert!(
        2 * s8 < e8 && 2 * s16 < e16,
        "summaries did not halve the trace"
    );
}

fn have_lmp() -> bool {
    Command::new("lmp").arg("-h").output().is_ok()
}

fn lammps(np: u32, grid: [u32; 3]) -> TraceFile {
    let d = scratch();
    let trace = d.path().join(format!("lammps.{np}.iotrex"));
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/lammps_weak.in");
    let dir = d.path().to_str().unwrap().to_string();
    let g: Vec<String> = grid.iter().map(|x| x.to_string()).collect();
    let a = [
        "-in",
        input.to_str().unwrap(),
        "-var",
        "d",
        &dir,
        "-var",
        "px",
        &g[0],
        "-var",
        "py",
        &g[1],
        "-var",
        "pz",
        &g[2],
        "-log",
        "none",
        "-screen",
        "none",
    ];
    let o = Opts {
        env: vec![("IOTREX_APPROX", "comm".to_string())],
        ..Opts::default()
    };
    let run = mpirun(np, Path::new("lmp"), &args(&a), &trace, &o);
    run.read()
}

/// LAMMPS itself calls differently with two ranks in a dimension (`Comm::exchange` sends to
/// one neighbour only when both are the same rank), so its 2x2x2 and 3x2x2 runs differ in
/// their calls, not only in values. 3x2x2 and 4x2x2 make the same calls with different peers
/// and data-dependent sizes: the same loop structure.
#[test]
fn lammps_loop_structure_is_the_same_on_3x2x2_and_4x2x2() {
    if !have_lmp() {
        eprintln!("skipped: needs lmp (apt-get install lammps)");
        return;
    }
    let a = lammps(12, [3, 2, 2]);
    let b = lammps(16, [4, 2, 2]);
    for r in [1, 5] {
        assert_eq!(
            skel(&a, r),
            skel(&b, r),
            "rank {r}: 3x2x2 and 4x2x2 give different loop structures"
        );
    }
    assert!(rsd::approx::count(&a.trace) > 0, "nothing summarised");
}

/// halo3d on a 1x1xN periodic grid with 20 steps and no dump: the data-dependent message
/// sizes (summarised, `comm`) are what varies; the peers (+1 and the wrap-around) are regular
/// in n, so the exact parts extrapolate exactly. Writes `dir/halo.N.iotrex`.
fn halo_line(np: u32, dir: &Path) -> std::path::PathBuf {
    let trace = dir.join(format!("halo.{np}.iotrex"));
    let d = dir.to_str().unwrap().to_string();
    let n = np.to_string();
    let a: Vec<&str> = vec![&d, "1", "1", &n, "20", "1000"];
    let o = Opts {
        env: vec![("IOTREX_APPROX", "comm".to_string())],
        ..Opts::default()
    };
    mpirun(np, &app("halo3d"), &args(&a), &trace, &o);
    trace
}

/// Every summary of a trace merged per parameter name.
fn merged(tf: &TraceFile) -> std::collections::BTreeMap<&'static str, rsd::timing::Stats> {
    let mut m: std::collections::BTreeMap<&'static str, rsd::timing::Stats> = Default::default();
    for (_, p, s) in summarised(tf) {
        m.entry(p).or_default().merge(&s.stats);
    }
    m
}

fn run_iotrex(a: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(a)
        .output()
        .unwrap()
}

#[test]
fn halo_summaries_extrapolate_within_ten_percent_and_diff_compares_them() {
    let d = scratch();
    let ins: Vec<String> = [8u32, 12, 16, 20]
        .iter()
        .map(|&n| halo_line(n, d.path()).to_str().unwrap().to_string())
        .collect();
    let real = halo_line(40, d.path());
    let real_s = real.to_str().unwrap();
    let out = d.path().join("halo.40.extrap.iotrex");
    let out_s = out.to_str().unwrap();
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--ranks", "40", "-o", out_s, "--explain"]);
    let o = run_iotrex(&a);
    let text = common::text(&o);
    assert!(o.status.success(), "extrap refused the summaries: {text}");
    // --explain names every approximate quantity, its model and held-out error.
    for p in ["sendcount", "recvcount", "bytes"] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("{p} (approximate)")))
            .unwrap_or_else(|| panic!("--explain does not name {p}: {text}"));
        assert!(
            line.contains("mean ") && line.contains("held-out error") && line.contains("count "),
            "{line}"
        );
    }
    // The output is marked approximate: summaries in the format and a header note.
    let x = TraceFile::read(&out).unwrap();
    let r = TraceFile::read(&real).unwrap();
    assert_eq!(x.header.nranks, 40);
    assert!(rsd::approx::count(&x.trace) > 0, "no summary in the output");
    assert!(
        x.header.notes.iter().any(|n| n.starts_with("approximate:")),
        "{:?}",
        x.header.notes
    );
    // Means within 10% of the real run's, calls (structural) exactly the real run's.
    let (mx, mr) = (merged(&x), merged(&r));
    assert_eq!(
        mx.keys().collect::<Vec<_>>(),
        mr.keys().collect::<Vec<_>>(),
        "different parameters summarised"
    );
    for (p, want) in &mr {
        let got = &mx[p];
        let err = (got.mean - want.mean).abs() / want.mean;
        eprintln!(
            "halo3d 8-20 -> 40, {p}: mean {:.2} extrapolated, {:.2} real ({:.1}%); calls {} / {}",
            got.mean,
            want.mean,
            100.0 * err,
            got.count,
            want.count
        );
        assert!(err < 0.10, "{p}: mean {} vs real {}", got.mean, want.mean);
        assert_eq!(got.count, want.count, "{p}: calls");
        assert!(got.min <= got.max && got.bins.iter().sum::<u64>() == got.count);
    }
    // --exact restores the refusal, naming the first summary; nothing is written.
    let refused = d.path().join("exact.iotrex");
    let mut a: Vec<&str> = vec!["extrap", "--exact"];
    a.extend(ins.iter().map(String::as_str));
    a.extend(["--ranks", "40", "-o", refused.to_str().unwrap()]);
    let o = run_iotrex(&a);
    let t = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("MPI_Sendrecv") && t.contains("`sendcount`") && t.contains("approximate"),
        "{t}"
    );
    assert!(!refused.exists());

    // diff: the extrapolation against the real run passes, exact parts identical and every
    // approximate part within the default 10%.
    let o = run_iotrex(&["diff", out_s, real_s]);
    let t = common::text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.starts_with("identical within tolerance"), "{t}");
    assert!(t.contains("sendcount: mean") && t.contains("within"), "{t}");
    let o = run_iotrex(&["--json", "diff", out_s, real_s]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["identical"], true, "{v}");
    assert_eq!(v["approx"]["tolerance_pct"], 10.0);
    assert!(v["approx"]["exact_compared"].as_u64().unwrap() > 0, "{v}");
    let parts = v["approx"]["parts"].as_array().unwrap();
    assert!(
        parts.len() >= 3 && parts.iter().all(|p| p["within"] == true),
        "{v}"
    );
    // A tolerance of 0% holds only where the extrapolated statistics are the real ones.
    let o = run_iotrex(&["diff", "--tolerance", "0%", out_s, real_s]);
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    // A doctored trace: the real run with the particles' mean message size 30% larger.
    let mut doctored = r.clone();
    fn scale(nodes: &mut [Node]) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => {
                    let Some(k) = e.op.params().iter().position(|p| p.name() == "sendcount") else {
                        continue;
                    };
                    for g in &mut e.params[k].groups {
                        if let Val::Approx(s) = &mut g.val {
                            s.stats.mean *= 1.3;
                        }
                    }
                }
                NodeKind::Loop(l) => scale(&mut l.body),
            }
        }
    }
    scale(&mut doctored.trace.nodes);
    let doc = d.path().join("doctored.iotrex");
    doctored.write(&doc).unwrap();
    let o = run_iotrex(&["diff", out_s, doc.to_str().unwrap()]);
    let t = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("MPI_Sendrecv") && t.contains("sendcount:") && t.contains("OUTSIDE"),
        "{t}"
    );
    assert!(t.contains("beyond 10%"), "{t}");
    // A different scale: the totals are half the real run's.
    let o = run_iotrex(&["diff", &ins[3], real_s]);
    let t = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("nranks") && t.contains("sendcount: mean") && t.contains("OUTSIDE"),
        "{t}"
    );
    // A bad tolerance is trouble (2), not a difference.
    let o = run_iotrex(&["diff", "--tolerance", "ten", out_s, real_s]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
}

/// The halo's peers on a periodic 3x3x3 grid: the shift along each dimension wraps around at
/// the grid's edge, so the peers are no line through the ranks. Each is one rank function (a
/// cyclic shift, `RankFn::Shift`) per node where it took a rank group per wrap-around before,
/// the trace gives every rank its real neighbours back, and the halo exchange's trace does not
/// grow with the ranks: 27 ranks within 1.1x of 8 (measured: 8,264 and 8,289 bytes; 8,360 at
/// 64). Without the dump: its collective write gives each of OMPIO's aggregators (one per 8
/// ranks) nodes of its own, a growth that is the collective I/O's, not the peers'.
#[test]
fn halo_peers_of_a_periodic_grid_are_one_function_and_the_trace_is_bounded() {
    let (_, s8) = halo_dumping(8, [2, 2, 2], "comm", 1000);
    let (tf, s27) = halo_dumping(27, [3, 3, 3], "comm", 1000);
    eprintln!("halo3d sizes without dumps: 8 ranks {s8}, 27 ranks {s27}");
    // MPI_Cart_create numbers the grid row-major; MPI_Cart_shift(d, dir) gives the source
    // at -dir and the destination at +dir along d.
    let dims = [3i64, 3, 3];
    let neighbour = |rank: i64, d: usize, disp: i64| -> i64 {
        let mut c = [rank / 9, (rank / 3) % 3, rank % 3];
        c[d] = (c[d] + disp).rem_euclid(dims[d]);
        c[0] * 9 + c[1] * 3 + c[2]
    };
    for rank in 0..27u32 {
        let calls: Vec<_> = tf
            .trace
            .expand(rank)
            .into_iter()
            .filter(|e| e.op == Op::Sendrecv)
            .collect();
        assert_eq!(calls.len(), 20 * 6 * 2, "rank {rank}: MPI_Sendrecv calls");
        for (k, e) in calls.iter().enumerate() {
            let swap = (k / 2) % 6;
            let (d, dir) = (swap / 2, if swap % 2 == 0 { -1 } else { 1 });
            let me = i64::from(rank);
            let peer = |p| rsd::mpi::decode_peer(e.p(p), me);
            assert_eq!(
                (peer(rsd::Param::Dest), peer(rsd::Param::Source)),
                (
                    rsd::mpi::Peer::Rank(neighbour(me, d, dir)),
                    rsd::mpi::Peer::Rank(neighbour(me, d, -dir))
                ),
                "rank {rank}, call {k}"
            );
        }
    }
    fn groups(nodes: &[Node], out: &mut Vec<(rsd::Param, usize)>) {
        for n in nodes {
            match &n.kind {
                NodeKind::Event(e) if e.op == Op::Sendrecv => {
                    for p in [rsd::Param::Dest, rsd::Param::Source] {
                        let k = e.op.params().iter().position(|&q| q == p).unwrap();
                        out.push((p, e.params[k].groups.len()));
                    }
                }
                NodeKind::Event(_) => {}
                NodeKind::Loop(l) => groups(&l.body, out),
            }
        }
    }
    let mut g = Vec::new();
    groups(&tf.trace.nodes, &mut g);
    assert!(!g.is_empty());
    assert!(
        g.iter().all(|&(_, n)| n == 1),
        "peers in several rank groups: {g:?}"
    );
    assert!(
        10 * s27 <= 11 * s8,
        "27 ranks {s27} bytes, more than 1.1x 8 ranks ({s8})"
    );
}
