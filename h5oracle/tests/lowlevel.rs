//! The oracle against real runs of `tests/apps/h5py_lowlevel.py` (Debian's parallel h5py on
//! HDF5 1.10.8): rank 0's HDF5 calls at n ranks, replayed on one rank, make the metadata
//! entries the n-rank run's `H5Fflush` wrote (the union over its ranks: the flush deals them
//! out) and put the chunks of `rows` (3n of them, one row each) where the real run wrote its
//! rows. At 8 ranks the chunk index is one B-tree node; at 24 (72 chunks) it has split into
//! a root over two leaves (`docs/chunk_btree.md`), whose addresses no model of the inputs
//! predicts.

mod common;

use h5oracle::{Launch, Layout, Run};
use rsd::op::{Op, Param};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// (offset, bytes) of metadata entries written.
type Entries = BTreeSet<(i64, i64)>;

/// Bytes of a version-1 B-tree node of a 2-D dataset's chunk index (`docs/chunk_btree.md`).
const NODE: i64 = 2616;

/// (offset, count) of every `MPI_File_write_at` below an `H5Fflush` of `events`.
fn flush_writes(events: &[FlatEvent], out: &mut Entries) {
    fn below(e: &FlatEvent, out: &mut Entries) {
        for c in &e.children {
            if c.op == Op::FileWriteAt {
                out.insert((c.p(Param::Offset), c.p(Param::Count)));
            }
            below(c, out);
        }
    }
    for e in events {
        if e.op == Op::H5Fflush {
            below(e, out);
        } else {
            flush_writes(&e.children, out);
        }
    }
}

/// The offsets of every `MPI_File_write_at` of an independent `H5Dwrite` of dataset `dset`
/// (the trace's identifier) in `events`: where the rank wrote its row of `rows`.
fn row_writes(events: &[FlatEvent], dset: i64, out: &mut Vec<(i64, i64)>) {
    for e in events {
        if e.op == Op::H5Dwrite && e.p(Param::Dset) == dset && e.p(Param::Xfer) == 0 {
            for c in &e.children {
                if c.op == Op::FileWriteAt {
                    out.push((c.p(Param::Offset), c.p(Param::Count)));
                }
            }
        }
    }
}

/// The real run at `np` ranks: its trace, traced into `dir`.
fn real(np: u32, dir: &Path) -> TraceFile {
    let script = common::workspace().join("tests/apps/h5py_lowlevel.py");
    let data = dir.join(format!("d{np}"));
    std::fs::create_dir_all(&data).unwrap();
    let args = vec![
        script.display().to_string(),
        data.join("ll.h5").display().to_string(),
    ];
    let p = dir.join(format!("ll.{np}.iotrex"));
    common::trace(np, Path::new("/usr/bin/python3"), &args, &p);
    let tf = TraceFile::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(!tf.header.incomplete);
    assert_eq!(tf.header.nranks, np);
    tf
}

fn launch() -> Launch {
    Launch {
        oracle: PathBuf::from(env!("CARGO_BIN_EXE_iotrex-h5oracle")),
        ..Launch::next_to(&common::iotrex())
    }
}

/// The oracle run of `tf`'s rank 0, in `dir`, and how long it took.
fn oracle(tf: &TraceFile, dir: &Path) -> (h5oracle::Plan, Run, Duration) {
    let plan = h5oracle::plan_of_trace(tf).expect("h5py_lowlevel's calls are replayable");
    let t = Instant::now();
    let run = {
        let _g = common::MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
        h5oracle::run(&plan, &launch(), dir).unwrap_or_else(|e| panic!("{e}"))
    };
    (plan, run, t.elapsed())
}

/// Every check at `np` ranks; returns the real run's flush entries and the oracle's.
fn check(np: u32, nodes: usize) -> (Entries, Entries) {
    let dir = common::scratch();
    let tf = real(np, dir.path());
    let (plan, run, took) = oracle(&tf, &dir.path().join("oracle"));
    eprintln!("oracle at {np} ranks: {:.2} s", took.as_secs_f64());

    // The oracle replayed the plan: one traced HDF5 call per step, in order.
    let ats: Vec<usize> = plan.steps.iter().map(|s| s.at).collect();
    assert_eq!(run.steps, ats);
    assert_eq!(run.trace.header.nranks, 1);
    // Every H5Dset_extent of rows grows it by n rows: 3n at the end.
    let extents: Vec<&[i64]> = plan
        .steps
        .iter()
        .filter(|s| s.op == Op::H5DsetExtent)
        .map(|s| s.arrays())
        .collect();
    let n = i64::from(np);
    assert_eq!(extents, vec![&[n, 16][..], &[2 * n, 16], &[3 * n, 16]]);

    // The flush: the oracle's one rank wrote what the n ranks wrote between them.
    let mut real_flush = BTreeSet::new();
    for r in 0..np {
        flush_writes(&tf.trace.expand(r), &mut real_flush);
    }
    let mut oracle_flush = BTreeSet::new();
    flush_writes(&run.trace.trace.expand(0), &mut oracle_flush);
    assert_eq!(
        oracle_flush, real_flush,
        "the oracle's flush entries (offset, bytes) vs the union of the real run's at {np} ranks"
    );
    let node_entries = oracle_flush.iter().filter(|(_, c)| *c == NODE).count();
    assert_eq!(
        node_entries, nodes,
        "chunk index nodes written at {np} ranks"
    );

    // rows' chunks: 3n of one row (16 ints), where the real ranks wrote their rows.
    let rows = plan
        .steps
        .iter()
        .find(|s| s.op == Op::H5Dcreate2 && s.name.as_deref() == Some("rows"))
        .expect("rows is created");
    let storage = run
        .storage
        .iter()
        .find(|s| s.name == "rows")
        .expect("the oracle reports rows");
    assert_eq!(storage.at, rows.at);
    let Layout::Chunked { chunks } = &storage.layout else {
        panic!("rows is chunked: {:?}", storage.layout);
    };
    assert_eq!(chunks.len() as i64, 3 * n);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.coords, vec![i as u64, 0]);
        assert_eq!(c.size, 64);
    }
    let oracle_rows: BTreeSet<(i64, i64)> = chunks
        .iter()
        .map(|c| (c.addr as i64, c.size as i64))
        .collect();
    let mut real_rows = Vec::new();
    for r in 0..np {
        row_writes(&tf.trace.expand(r), rows.p(Param::Dset), &mut real_rows);
    }
    assert_eq!(real_rows.len() as i64, 3 * n, "one row per rank and step");
    let real_rows: BTreeSet<(i64, i64)> = real_rows.into_iter().collect();
    assert_eq!(
        oracle_rows, real_rows,
        "rows' chunk addresses: oracle vs the real run's row writes at {np} ranks"
    );
    // The step datasets: contiguous, 1000 doubles per rank.
    for s in run.storage.iter().filter(|s| s.name.starts_with("step")) {
        assert!(
            matches!(s.layout, Layout::Contiguous { size, .. } if size == 8000 * np as u64),
            "{s:?}"
        );
    }
    (real_flush, oracle_flush)
}

/// At 8 ranks `rows` has 24 chunks, one node of its chunk index (the inputs' regime); at 24
/// it has 72: the index has split into a root over leaves of 57 and 15 chunks, three nodes,
/// and the oracle places them (and everything allocated after them) as the real run did.
/// Each scale's plan gives its own layout: the oracle follows the plan's dimensions.
#[test]
fn the_oracle_makes_the_real_layout_before_and_after_the_chunk_index_splits() {
    let (real8, oracle8) = check(8, 1);
    let (real24, oracle24) = check(24, 3);
    assert_ne!(oracle8, real24);
    assert_ne!(oracle24, real8);
}
