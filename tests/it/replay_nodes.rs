//! Replay on a node layout, on the emulated cluster (`scripts/cluster.sh`, Open MPI's
//! defaults): the IOR-like mini-app with IOR's node queries (`ior_like -N -F`: a
//! shared-memory split whose color is the node leader, a gather whose count exists on the
//! root alone) traced at 2 nodes x 2 ranks, then replayed by `iotrex-replay --comm real` on 2
//! nodes x 2 (it says "as traced", counts and bytes equal the trace's), on 1 node x 4 (it
//! says both layouts; the split is replayed as its traced groups, so the counts still equal
//! and the matching check does not refuse), and with `--threads` (one node, said so).
//! `--ranks-per-node` the launch does not give, or that does not divide the ranks, is a clear
//! error.

use crate::common;
use common::cluster::cluster;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// The trace of `ior_like -N -F` at 2 x 2 on the cluster, shared by the tests of this file
/// (in a shared directory, removed when the binary exits: a `TempDir` in a static never is).
fn traced() -> &'static (PathBuf, PathBuf) {
    static T: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    T.get_or_init(|| {
        let c = cluster();
        let dir = common::shared::dir("replay_nodes ior_like -N -F at 2x2");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let out = dir.join("ior.2x2.iotrex");
        let mut argv = common::trace_prefix(&out, &[]);
        argv.extend(c.openmpi(2, 2));
        argv.push(common::app("ior_like").into());
        let f = data.join("f");
        argv.extend(
            [
                "-N", "-F", "-R", "-t", "4096", "-b", "8192", "-s", "2", "-o",
            ]
            .map(OsString::from),
        );
        argv.push(f.into());
        let o = c.run(&argv, &[]);
        assert!(o.status.success(), "trace: {}", common::status_text(&o));
        let tf = rsd::TraceFile::read(&out).unwrap();
        assert_eq!(
            tf.header
                .node_layout
                .as_ref()
                .map(|l| l.shape(4))
                .as_deref(),
            Some("2 nodes x 2 ranks"),
            "the traced layout"
        );
        (dir, out)
    })
}

fn replay_bin() -> PathBuf {
    common::target_dir().join("release/iotrex-replay")
}

/// `iotrex-replay TRACE --root R --comm real extra...` under mpirun on `nodes` x `ppn` of the
/// cluster.
fn replay_mpi(nodes: u32, ppn: u32, extra: &[&str]) -> Output {
    let c = cluster();
    let (_, trace) = traced();
    let root = common::scratch();
    let mut argv = c.openmpi(nodes, ppn);
    argv.push(replay_bin().into());
    argv.push(trace.into());
    argv.extend(["--root".into(), root.path().into()]);
    argv.extend(["--comm", "real"].map(OsString::from));
    argv.extend(extra.iter().map(OsString::from));
    c.run(&argv, &[])
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts the replay succeeded, said `layout`, and issued the trace's counts and bytes.
fn assert_replayed(o: &Output, layout: &str) {
    assert!(o.status.success(), "{}", common::status_text(o));
    let out = stdout(o);
    assert!(
        out.contains(&format!("layout: {layout}\n")),
        "no layout line {layout:?}:\n{}",
        common::status_text(o)
    );
    assert!(
        out.contains("op counts and bytes equal the trace's"),
        "{}",
        common::status_text(o)
    );
}

#[test]
fn replayed_on_the_traced_layout_says_as_traced() {
    let o = replay_mpi(2, 2, &["--ranks-per-node", "2"]);
    assert_replayed(&o, "replayed on 2 nodes x 2 ranks as traced");
}

#[test]
fn replayed_on_another_layout_says_both() {
    let o = replay_mpi(1, 4, &[]);
    assert_replayed(
        &o,
        "traced on 2 nodes x 2 ranks, replayed on 1 node x 4 ranks",
    );
}

#[test]
fn threads_replay_on_one_node_and_say_so() {
    let (_, trace) = traced();
    let root = common::scratch();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(["replay".as_ref(), trace.as_os_str(), "--root".as_ref()])
        .arg(root.path())
        .output()
        .unwrap();
    assert_replayed(&o, "2 nodes x 2 ranks replayed as threads on one node");
}

/// Asserts the replay failed at once (not by a timeout), its error saying `what`.
fn assert_refused(o: &Output, what: &str) {
    assert!(!o.status.success(), "{}", common::status_text(o));
    assert_ne!(
        o.status.code(),
        Some(124),
        "timed out: {}",
        common::status_text(o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(what),
        "no {what:?} in:\n{}",
        common::status_text(o)
    );
    assert!(!err.contains("panicked"), "{}", common::status_text(o));
}

#[test]
fn a_layout_the_launch_does_not_give_is_a_clear_error() {
    let o = replay_mpi(2, 2, &["--ranks-per-node", "4"]);
    assert_refused(
        &o,
        "--ranks-per-node 4: the replay runs on 2 nodes x 2 ranks as launched, not 1 node x 4 ranks",
    );
}

#[test]
fn ranks_per_node_not_dividing_the_ranks_is_a_clear_error() {
    let (_, trace) = traced();
    let root = common::scratch();
    for bin in [Path::new(env!("CARGO_BIN_EXE_iotrex")), &replay_bin()] {
        let mut cmd = std::process::Command::new(bin);
        if bin.ends_with("iotrex") {
            cmd.arg("replay");
        } else {
            cmd.arg("--threads");
        }
        let o = cmd
            .arg(trace)
            .arg("--root")
            .arg(root.path())
            .args(["--ranks-per-node", "3"])
            .output()
            .unwrap();
        assert_refused(&o, "--ranks-per-node 3 does not divide the trace's 4 ranks");
    }
    // Under mpirun too, on every rank at once, before any I/O.
    let o = replay_mpi(2, 2, &["--ranks-per-node", "3"]);
    assert_refused(&o, "--ranks-per-node 3 does not divide the trace's 4 ranks");
}

/// The replay's prediction (`--repeat 3`): printed with its interval, which holds the point
/// and every replay's wall time; `iotrex report --replay` shows it beside the trace's own time,
/// on the page and in `--json`.
#[test]
fn the_prediction_has_an_interval_and_report_shows_it_beside_the_traced_time() {
    let (_, trace) = traced();
    let dir = common::scratch();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let json = dir.path().join("replay.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(["replay".as_ref(), trace.as_os_str(), "--root".as_ref()])
        .arg(&root)
        .args(["--repeat", "3", "--json-out"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::status_text(&o));
    let out = stdout(&o);
    assert!(
        out.contains("predicted run time on this storage: "),
        "{}",
        common::status_text(&o)
    );
    assert!(out.contains("  interval: the median of 3 replays"), "{out}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = &r["prediction"];
    let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k} in {p}"));
    let (value, lo, hi) = (f("value_ns"), f("lo_ns"), f("hi_ns"));
    assert!(value > 0.0 && lo <= value && value <= hi, "{p}");
    let walls = p["walls_ns"].as_array().unwrap();
    assert_eq!(walls.len(), 3, "{p}");
    assert!(
        walls
            .iter()
            .all(|w| (lo..=hi).contains(&w.as_f64().unwrap())),
        "{p}"
    );
    let traced = r["traced_wall_ns"].as_u64().unwrap();
    assert!(traced > 0, "{r}");
    // The report: the page and its --json both give the two numbers.
    let page = dir.path().join("page.html");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args([
            "--json".as_ref(),
            "report".as_ref(),
            trace.as_os_str(),
            "--replay".as_ref(),
        ])
        .arg(&json)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::status_text(&o));
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &w["replays"][0];
    assert_eq!(row["traced_wall_ns"].as_u64(), Some(traced), "{w}");
    assert_eq!(row["predicted_ns"].as_f64(), Some(value), "{w}");
    let html = std::fs::read_to_string(&page).unwrap();
    report::check(&html).unwrap();
    let fmt = |ns: f64| rsd::timing::fmt_ns(ns);
    for shown in [
        fmt(traced as f64),
        fmt(value),
        format!("[{}, {}]", fmt(lo), fmt(hi)),
    ] {
        assert!(html.contains(&shown), "the page does not show {shown}");
    }
    assert!(html.contains("Replays: the predicted run time"));
    // A file that is not a replay's report is refused naming it.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args([
            "report".as_ref(),
            trace.as_os_str(),
            "--replay".as_ref(),
            trace.as_os_str(),
        ])
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a replay's JSON report"), "{err}");
}

/// The emulated nodes share this machine's cores: a replay at 2 nodes x one rank per core
/// (no node oversubscribed as the launcher counts its ranks) has twice as many ranks as the
/// machine's cores, so the default compute mode under `--comm real` burns the gaps' CPU time
/// and says so, counting the machine's ranks. The trace (synthetic) records no cores, so
/// only this machine decides.
#[test]
fn emulated_nodes_count_their_ranks_together_against_the_machines_cores() {
    // The online CPUs, as the replay counts them (not this process's affinity).
    let o = std::process::Command::new("getconf")
        .arg("_NPROCESSORS_ONLN")
        .output()
        .unwrap();
    let cores: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let dir = common::scratch();
    let trace = dir.path().join("synth.iotrex");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args([
            "synth",
            "--ranks",
            &(2 * cores).to_string(),
            "--iters",
            "3",
            "-o",
        ])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::status_text(&o));
    assert_eq!(
        rsd::TraceFile::read(&trace)
            .unwrap()
            .header
            .ranks_per_core(),
        None
    );
    let c = cluster();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let mut argv = c.openmpi(2, cores);
    argv.push(replay_bin().into());
    argv.push(trace.into());
    argv.extend(["--root".into(), root.into()]);
    argv.extend(["--comm", "real"].map(OsString::from));
    let o = c.run(&argv, &[]);
    assert!(o.status.success(), "{}", common::status_text(&o));
    let want = format!(
        "--compute work chosen: {} ranks share {cores} cores here",
        2 * cores
    );
    assert!(
        stdout(&o).contains(&want),
        "no {want:?} in:\n{}",
        stdout(&o)
    );
}
