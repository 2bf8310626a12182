//! `iotrex export otf2` on real traces of the mini-apps, read back by Debian's `otf2-print`
//! (otf2-tools, installed by scripts/install-deps.sh): it reads each archive without error,
//! and per location (rank) its events equal the trace's: one ENTER and one LEAVE per call,
//! nested calls included, I/O records carrying the bytes each rank moved, and an MpiSend for
//! every blocking send on MPI_COMM_WORLD.

use crate::common;
use common::*;
use rsd::{FlatEvent, Op, TraceFile};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Per location: event name -> count, and the bytes of IO_OPERATION_COMPLETE records.
#[derive(Debug, Default, PartialEq)]
struct Printed {
    events: BTreeMap<String, u64>,
    io_bytes: u64,
}

fn otf2_print(anchor: &Path) -> BTreeMap<u64, Printed> {
    let o = Command::new("otf2-print")
        .arg(anchor)
        .output()
        .expect("run otf2-print (otf2-tools, installed by scripts/install-deps.sh)");
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "otf2-print {}: {}\n{}",
        anchor.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let mut per: BTreeMap<u64, Printed> = BTreeMap::new();
    let out = String::from_utf8_lossy(&o.stdout);
    // Event lines: NAME LOCATION TIMESTAMP ATTRIBUTES...
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 || !f[0].chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            continue;
        }
        let (Ok(loc), Ok(_)) = (f[1].parse::<u64>(), f[2].parse::<u64>()) else {
            continue;
        };
        let p = per.entry(loc).or_default();
        *p.events.entry(f[0].to_string()).or_default() += 1;
        if f[0] == "IO_OPERATION_COMPLETE" {
            let b = line.split("Bytes Result: ").nth(1).unwrap();
            p.io_bytes += b.split(',').next().unwrap().trim().parse::<u64>().unwrap();
        }
    }
    per
}

/// What the trace says each rank's archive must hold.
fn expected(tf: &TraceFile) -> BTreeMap<u64, (u64, u64, u64)> {
    fn walk(e: &FlatEvent, calls: &mut u64, sends: &mut u64) {
        *calls += 1;
        if matches!(e.op, Op::Send | Op::Sendrecv) && e.get(rsd::Param::Comm) == Some(0) {
            *sends += 1;
        }
        for c in &e.children {
            walk(c, calls, sends);
        }
    }
    let mut m = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        let (mut calls, mut sends) = (0, 0);
        for e in tf.trace.expand(r) {
            walk(&e, &mut calls, &mut sends);
        }
        // Bytes moved by top-level data calls (the I/O records of nested calls count again).
        let bytes: u64 = tf.trace.expand(r).iter().map(io_bytes).sum();
        m.insert(u64::from(r), (calls, sends, bytes));
    });
    m
}

fn io_bytes(e: &FlatEvent) -> u64 {
    e.op.data_bytes(&e.params) + e.children.iter().map(io_bytes).sum::<u64>()
}

fn check(name: &str, app_name: &str, args_: &[&str], np: u32) {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let t = dir.path().join(format!("{name}.iotrex"));
    let tf = trace_in(&t, &data, np, app_name, args_, None);
    let out = dir.path().join("otf2");
    let o = iotrex(&[
        "export",
        "otf2",
        t.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{name}: {}", text(&o));
    let rep: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let printed = otf2_print(&out.join("traces.otf2"));
    let want = expected(&tf);
    assert_eq!(printed.len(), np as usize, "{name}: locations");
    for (loc, p) in &printed {
        let (calls, sends, bytes) = want[loc];
        let n = |k: &str| p.events.get(k).copied().unwrap_or(0);
        assert_eq!(n("ENTER"), calls, "{name}: rank {loc} ENTER");
        assert_eq!(n("LEAVE"), calls, "{name}: rank {loc} LEAVE");
        assert_eq!(n("MPI_SEND"), sends, "{name}: rank {loc} MPI_SEND");
        assert_eq!(
            n("IO_OPERATION_BEGIN"),
            n("IO_OPERATION_COMPLETE"),
            "{name}: rank {loc}"
        );
        assert_eq!(p.io_bytes, bytes, "{name}: rank {loc} I/O bytes");
        let total: u64 = p.events.values().sum();
        assert_eq!(
            total, rep["events_per_location"][*loc as usize],
            "{name}: rank {loc} events"
        );
    }
}

#[test]
fn ior_posix_file_per_process() {
    check(
        "ior_posix",
        "ior_like",
        &[
            "-a", "posix", "-F", "-t", "4096", "-b", "16384", "-s", "2", "-o", "{d}/f",
        ],
        4,
    );
}

#[test]
fn ior_mpiio_collective_with_nested_posix() {
    check(
        "ior_coll",
        "ior_like",
        &[
            "-a", "mpiio", "-c", "-t", "4096", "-b", "8192", "-s", "2", "-o", "{d}/f",
        ],
        4,
    );
}

#[test]
fn checkpoints_strong_scaled() {
    check("ckpt", "ckpt_strong", &["{d}/ck.dat", "1000003", "-R"], 4);
}

#[test]
fn io_sample_and_its_messages() {
    check(
        "io_sample",
        "io_sample",
        &["{d}", "10", "4096", "2", "8192"],
        4,
    );
}

#[test]
fn comm_mix_point_to_point() {
    check("comm_mix", "comm_mix", &["{d}", "3", "100", "4096"], 4);
}

#[test]
fn stdio_streams() {
    check("stdio", "stdio_app", &["{d}", "3", "4096", "5"], 4);
}

#[test]
fn an_existing_output_is_refused_and_named() {
    let dir = scratch();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/format/v1/spmd_4x10.iotrex");
    let o = iotrex(&[
        "export",
        "otf2",
        t.to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains(&dir.path().display().to_string()) && text(&o).contains("exists"),
        "{}",
        text(&o)
    );
}

#[test]
fn communicator_groups() {
    check("groups", "groups", &["{d}", "4", "3", "4096"], 4);
}

#[test]
fn halo_exchange_on_a_grid() {
    check("halo3d", "halo3d", &["{d}", "2", "2", "1", "20", "5"], 4);
}

#[test]
fn every_send_mode() {
    check("p2p_modes", "p2p_modes", &["3"], 4);
}

#[test]
fn text_dump_at_prefix_sum_offsets() {
    check("textdump", "textdump", &["{d}", "3", "random"], 4);
}
