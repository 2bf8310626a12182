//! What a program does before `MPI_Init` (an interpreter's start-up, its imports) is replayed
//! but left out of the replay's wall time, as the tracer leaves it out of the traced one (which
//! starts where `MPI_Init` returns); and the ranks leave the replayed `MPI_Init` together, as
//! `MPI_Init`'s own exchange makes them. Under MPI and with `--threads`.

use crate::common;

use rsd::Op;
use rsd::trace::RawEvent;
use std::path::Path;
use std::process::Command;

/// Rank 1 starts up for this long before `MPI_Init` (a call of its own after as long a gap:
/// ranks merged into one event share its timing statistics), rank 0 at once.
const START_UP_NS: u64 = 1_000_000_000;

fn ev(op: Op, site: u64, params: Vec<i64>, gap_ns: u64) -> RawEvent {
    let mut e = RawEvent::new(op, 0x5300 + site, params);
    e.gap_ns = gap_ns;
    e.dur_ns = 1_000;
    e
}

/// Two ranks: rank 1's start-up, `MPI_Init`, then a file written 10 ms later.
fn write_trace(dir: &Path) -> std::path::PathBuf {
    let tf = common::build(2, |r| {
        let start_up = (r == 1)
            .then(|| common::with_path(ev(Op::Stat, 4, vec![-1], START_UP_NS), "no-such-file"));
        start_up
            .into_iter()
            .chain([
                ev(Op::Init, 0, vec![], 1_000),
                common::with_path(
                    ev(Op::Open, 1, vec![0o1101, 0o644, 3], 10_000_000),
                    &format!("out/rank_{r}"),
                ),
                ev(Op::Pwrite, 2, vec![3, 64, 0, 64], 1_000),
                ev(Op::Close, 3, vec![3], 1_000),
            ])
            .collect()
    });
    let path = dir.join("start_up.iotrex");
    tf.write(&path).unwrap();
    path
}

/// The report's wall time starts after the start-up, which it names; rank 0 waited for rank
/// 1 in `MPI_Init` (counted as communication).
fn check(j: &serde_json::Value, text: &str) {
    let before = j["before_init_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("{text}"));
    assert!(before >= START_UP_NS, "{text}");
    // Without the wait in MPI_Init rank 0 would have no MPI time at all.
    assert!(
        j["comm_ns"].as_u64().unwrap() >= START_UP_NS * 8 / 10,
        "{text}"
    );
    // From the start, the wall time could not be under the start-up's second; after it, the
    // replay has 10 ms of compute and three calls left.
    assert!(j["wall_ns"].as_u64().unwrap() < START_UP_NS, "{text}");
    assert!(text.contains("before MPI_Init: "), "{text}");
    assert!(
        j["rank_time"]["max"].as_u64().unwrap() < START_UP_NS,
        "{text}"
    );
}

#[test]
fn the_start_up_before_mpi_init_is_replayed_but_not_counted() {
    if !common::have_mpirun() {
        panic!("mpirun is needed (scripts/install-deps.sh installs it)");
    }
    let t = tempfile::tempdir().unwrap();
    let trace = write_trace(t.path());
    let (j, text) = common::replay_mpi(
        2,
        &trace,
        &t.path().join("mpi"),
        &["--compute", "mean", "--comm", "real"],
    );
    check(&j, &text);

    let root = t.path().join("threads");
    std::fs::create_dir_all(&root).unwrap();
    let json = t.path().join("threads.json");
    let out = Command::new(common::bin())
        .arg(&trace)
        .args(["--threads", "--compute", "mean", "--root"])
        .arg(&root)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    check(&j, &text);
}
