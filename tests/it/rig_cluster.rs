//! The emulated cluster (`scripts/cluster.sh`, through `tests/it/common/cluster.rs`): under Open
//! MPI and under MPICH, 4 ranks on 2 nodes see 2 nodes of 2 ranks (their processor names,
//! their shared-memory communicators, and the node layout `iotrex trace` records: by slot,
//! and by node under Open MPI's `--map-by node`, as `show`, `stats --json`, the Parquet
//! export and the CODES iolang export say it); launches naming a node that is not up, and the
//! script without root, fail saying so.

use crate::common;
use common::cluster::{Cluster, cluster, run_script};
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Output};

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn argv(launch: Vec<OsString>, app: &Path) -> Vec<OsString> {
    let mut v = launch;
    v.push(app.into());
    v
}

/// Each rank's node under the launchers' default placement, by slot: ranks 0-1 on node1.
const BY_SLOT: [&str; 4] = ["node1", "node1", "node2", "node2"];
/// Each rank's node under `--map-by node`: dealt over the nodes in turn.
const BY_NODE: [&str; 4] = ["node1", "node2", "node1", "node2"];

/// Asserts node_layout's lines say 2 ranks on each of node1 and node2, by slot.
fn assert_two_by_two(out: &Output) {
    assert_two_by_two_on(out, &BY_SLOT);
}

/// Asserts node_layout's lines say 2 ranks on each of node1 and node2, rank `r` on `nodes[r]`.
fn assert_two_by_two_on(out: &Output, nodes: &[&str; 4]) {
    assert!(out.status.success(), "{}", text(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("NODE "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    lines.sort_by_key(|f| f[1].parse::<u32>().unwrap());
    let seen: Vec<(&str, &str, &str, &str, &str)> = lines
        .iter()
        .map(|f| (f[1], f[2], f[3], f[4], f[5]))
        .collect();
    // A rank's rank on its node: how many ranks below it share the node.
    let want: Vec<(String, &str, &str, String, &str)> = (0..4)
        .map(|r| {
            let below = nodes[..r].iter().filter(|n| **n == nodes[r]).count();
            (r.to_string(), nodes[r], "2", below.to_string(), "4")
        })
        .collect();
    let want: Vec<(&str, &str, &str, &str, &str)> = want
        .iter()
        .map(|(r, n, k, b, w)| (r.as_str(), *n, *k, b.as_str(), *w))
        .collect();
    assert_eq!(
        seen,
        want,
        "rank, processor name, ranks on the node, rank on it, world size:\n{}",
        text(out)
    );
}

/// A traced run of node_layout on the cluster: its scratch directory and trace.
struct Traced {
    dir: tempfile::TempDir,
    trace: std::path::PathBuf,
    show: String,
}

/// Traces node_layout through `launch` (Open MPI or MPICH), its ranks placed on `nodes`,
/// and reads `iotrex show`.
fn traced(
    c: &Cluster,
    launch: Vec<OsString>,
    app: &Path,
    mpich: bool,
    nodes: &[&str; 4],
) -> Traced {
    let dir = common::scratch();
    let trace = dir.path().join("layout.iotrex");
    let mut v = common::trace_prefix(&trace, &[]);
    v.extend(argv(launch, app));
    let out = if mpich {
        c.run_mpich(&v)
    } else {
        c.run(&v, &[])
    };
    assert_two_by_two_on(&out, nodes);
    let show = iotrex(&["show".as_ref(), trace.as_os_str()]);
    Traced {
        dir,
        trace,
        show: String::from_utf8_lossy(&show.stdout).into_owned(),
    }
}

/// Runs `iotrex args`, asserting it succeeded.
fn iotrex(args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    out
}

fn assert_layout(show: &str) {
    assert!(
        show.contains("nodes      2 (2 x 2 ranks)\n"),
        "the trace does not record 2 nodes of 2 ranks:\n{show}"
    );
    assert!(show.contains("complete   yes"), "{show}");
}

/// Asserts that every view of the trace says rank `r` ran on `nodes[r]` (node1 is node 0,
/// holding rank 0), placed by `kind`: `show`'s layout line, `stats --json`, the Parquet
/// export's node columns (through DuckDB) and the CODES iolang export's group ids.
fn assert_views_say(t: &Traced, nodes: &[&str; 4], kind: &str, ranks: [&str; 2]) {
    let line = format!(
        "layout     2 nodes {kind}, 2 ranks per node: node1 {}, node2 {}\n",
        ranks[0], ranks[1]
    );
    assert!(t.show.contains(&line), "no line {line:?} in:\n{}", t.show);
    let trace = t.trace.as_os_str();
    let stats = iotrex(&["stats".as_ref(), "--json".as_ref(), trace]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let l = &stats["node_layout"];
    assert_eq!((&l["nodes"], &l["kind"]), (&2.into(), &kind.into()), "{l}");
    assert_eq!(l["ranks_per_node"], 2, "{l}");
    let listed: Vec<(String, String)> = l["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().into(),
                n["ranks"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("node1".into(), ranks[0].into()),
            ("node2".into(), ranks[1].into())
        ],
        "{l}"
    );
    // Parquet: each rank's calls carry its node.
    let pq = t.dir.path().join("pq");
    iotrex(&[
        "export".as_ref(),
        "parquet".as_ref(),
        trace,
        "-o".as_ref(),
        pq.as_os_str(),
    ]);
    let rows = common::duckdb(&format!(
        "SELECT DISTINCT rank, node, node_name FROM '{}' ORDER BY rank",
        pq.join("calls.parquet").display()
    ));
    let want: Vec<serde_json::Value> = (0..4)
        .map(|r| {
            let node = u64::from(nodes[r] == "node2");
            serde_json::json!([r, node, nodes[r]])
        })
        .collect();
    assert_eq!(rows, want);
    // CODES iolang: a meta line per rank, its group id the rank's node plus one.
    let codes = t.dir.path().join("codes");
    iotrex(&[
        "export".as_ref(),
        "codes".as_ref(),
        trace,
        "-o".as_ref(),
        codes.as_os_str(),
        "--format".as_ref(),
        "iolang".as_ref(),
    ]);
    let meta = std::fs::read_to_string(codes.join("meta.txt")).unwrap();
    let gids: Vec<&str> = meta.lines().map(|l| &l[..1]).collect();
    let want: Vec<&str> = nodes
        .iter()
        .map(|n| if *n == "node1" { "1" } else { "2" })
        .collect();
    assert_eq!(gids, want, "{meta}");
}

#[test]
fn openmpi_sees_two_nodes_of_two_ranks() {
    let c = cluster();
    let app = common::app("node_layout");
    assert_two_by_two(&c.run(&argv(c.openmpi(2, 2), &app), &[]));
}

#[test]
fn openmpi_trace_records_two_nodes() {
    let c = cluster();
    let app = common::app("node_layout");
    let t = traced(c, c.openmpi(2, 2), &app, false, &BY_SLOT);
    assert_layout(&t.show);
    assert_views_say(&t, &BY_SLOT, "by slot", ["0-1", "2-3"]);
}

/// `--map-by node` deals the ranks over the nodes in turn: the trace says round robin, and
/// which rank ran where.
#[test]
fn openmpi_map_by_node_records_round_robin() {
    let c = cluster();
    let app = common::app("node_layout");
    let mut launch = c.openmpi(2, 2);
    let np = launch.iter().position(|a| a == "-np").unwrap();
    launch.splice(np..np, ["--map-by".into(), "node".into()]);
    let t = traced(c, launch, &app, false, &BY_NODE);
    assert!(
        t.show
            .contains("nodes      2 (2 x 2 ranks, ranks not consecutive)\n"),
        "{}",
        t.show
    );
    assert_views_say(&t, &BY_NODE, "by node (round robin)", ["0-2:2", "1-3:2"]);
}

#[test]
fn mpich_sees_two_nodes_of_two_ranks() {
    let c = cluster();
    let app = common::mpich::app("node_layout");
    assert_two_by_two(&c.run_mpich(&argv(c.mpich(2, 2), &app)));
}

#[test]
fn mpich_trace_records_two_nodes() {
    let c = cluster();
    let app = common::mpich::app("node_layout");
    let t = traced(c, c.mpich(2, 2), &app, true, &BY_SLOT);
    assert_layout(&t.show);
    assert_views_say(&t, &BY_SLOT, "by slot", ["0-1", "2-3"]);
}

/// Asserts a launch failed at once (not by the timeout) saying `node` is not up.
fn assert_refused(out: &Output, node: &str) {
    assert!(!out.status.success(), "{}", text(out));
    assert_ne!(out.status.code(), Some(124), "timed out: {}", text(out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("node '{node}' is not up")),
        "{}",
        text(out)
    );
}

#[test]
fn a_node_that_is_not_up_is_a_clear_error() {
    let c = cluster();
    let app = common::app("node_layout");
    // A node past the ones up (more may be up than the tests use, brought up by hand).
    let status = String::from_utf8_lossy(&run_script(&["status"]).stdout).into_owned();
    let absent = (1..)
        .map(|k| format!("node{k}"))
        .find(|n| !status.lines().any(|l| l.split(' ').next() == Some(n)))
        .unwrap();
    // Open MPI: a hostfile naming it.
    let dir = common::scratch();
    let hf = dir.path().join("hostfile");
    std::fs::write(&hf, format!("node1 slots=2\n{absent} slots=2\n")).unwrap();
    let mut launch = c.openmpi(2, 2);
    let at = launch.iter().position(|a| a == "--hostfile").unwrap();
    launch[at + 1] = hf.into();
    let out = c.run(&argv(launch, &app), &[]);
    assert_refused(&out, &absent);

    // MPICH: a host list naming it. Hydra would wait for the missing proxy forever; the agent
    // interrupts it.
    let mut launch = c.mpich(2, 2);
    let at = launch.iter().position(|a| a == "-hosts").unwrap();
    launch[at + 1] = format!("node1:2,{absent}:2").into();
    let out = c.run_mpich(&argv(launch, &common::mpich::app("node_layout")));
    // The agent says which node and exits 255 after interrupting hydra; hydra, interrupted,
    // sometimes ends before it forwards the agent's words, but never with another status.
    assert!(!out.status.success(), "{}", text(&out));
    assert_ne!(out.status.code(), Some(124), "timed out: {}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr).contains(&format!("node '{absent}' is not up"));
    assert!(said || out.status.code() == Some(255), "{}", text(&out));

    // The launcher itself on a node that is not up.
    let out = run_script(&["exec", &absent, "true"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("{absent} is not up")),
        "{}",
        text(&out)
    );
}

#[test]
fn without_root_it_says_root_is_needed() {
    let out = common::as_nobody(&common::cluster::script(), &["up", "2"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs root"),
        "{}",
        text(&out)
    );
}
