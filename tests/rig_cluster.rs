//! The emulated cluster (`scripts/cluster.sh`, through `tests/common/cluster.rs`): under Open
//! MPI and under MPICH, 4 ranks on 2 nodes see 2 nodes of 2 ranks (their processor names,
//! their shared-memory communicators, and the node layout `iotrex trace` records); launches
//! naming a node that is not up, and the script without root, fail saying so.

mod common;
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

/// Asserts node_layout's lines say 2 ranks on each of node1 and node2, ranks 0-1 on node1.
fn assert_two_by_two(out: &Output) {
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
    assert_eq!(
        seen,
        [
            ("0", "node1", "2", "0", "4"),
            ("1", "node1", "2", "1", "4"),
            ("2", "node2", "2", "0", "4"),
            ("3", "node2", "2", "1", "4"),
        ],
        "rank, processor name, ranks on the node, rank on it, world size:\n{}",
        text(out)
    );
}

/// Traces node_layout through `launch` (Open MPI or MPICH) and returns `iotrex show`.
fn traced_show(c: &Cluster, launch: Vec<OsString>, app: &Path, mpich: bool) -> String {
    let dir = common::scratch();
    let trace = dir.path().join("layout.iotrex");
    let mut v: Vec<OsString> = vec![
        env!("CARGO_BIN_EXE_iotrex").into(),
        "trace".into(),
        "--lib".into(),
        common::tracer_lib().into(),
        "-o".into(),
        trace.clone().into(),
        "--".into(),
    ];
    v.extend(argv(launch, app));
    let out = if mpich {
        c.run_mpich(&v)
    } else {
        c.run(&v, &[])
    };
    assert_two_by_two(&out);
    let show = Command::new(env!("CARGO_BIN_EXE_iotrex"))
        .arg("show")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(show.status.success(), "{}", text(&show));
    String::from_utf8_lossy(&show.stdout).into_owned()
}

fn assert_layout(show: &str) {
    assert!(
        show.contains("nodes      2 (2 x 2 ranks)\n"),
        "the trace does not record 2 nodes of 2 ranks:\n{show}"
    );
    assert!(show.contains("complete   yes"), "{show}");
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
    assert_layout(&traced_show(c, c.openmpi(2, 2), &app, false));
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
    assert_layout(&traced_show(c, c.mpich(2, 2), &app, true));
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
    assert_refused(&out, &absent);

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
