//! Directory listings whose lengths follow the directory, not the scale
//! (`tests/apps/list_dir.c`: every rank lists `DIR/in`, then writes its blocks). Traced at 4,
//! 8, 12 and 16 ranks with 8, 3, 9 and 4 files in `in` (what earlier runs left, say), the
//! listing's loop count fits no model of n: the extrapolation sets the listings aside, says so
//! in its provenance and notes, and `diff` against a real 32-rank run (6 files) is identical
//! with them set aside on both sides. With the same 5 files at every scale nothing stops the
//! fit, and nothing is set aside: the listing is extrapolated like any loop.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// Traces `list_dir` at `np` ranks with `files` files in its input directory.
fn trace(dir: &Path, np: u32, files: u32) -> PathBuf {
    let data = dir.join(format!("data.{np}"));
    let input = data.join("in");
    std::fs::create_dir_all(&input).unwrap();
    for f in 0..files {
        std::fs::write(input.join(format!("f{f}")), b"").unwrap();
    }
    let out = dir.join(format!("{np}.iotrex"));
    let run = mpirun(
        np,
        &app("list_dir"),
        &args(&[data.to_str().unwrap(), "2", "4096"]),
        &out,
        &Opts::default(),
    );
    assert!(
        run.stdout().contains(&format!("entries {}", files + 2)),
        "{}",
        run.stdout()
    );
    out
}

/// How many `readdir` calls `tf` holds over every rank.
fn readdirs(tf: &rsd::TraceFile) -> u64 {
    (0..tf.header.nranks)
        .flat_map(|r| tf.trace.rank_events(r))
        .filter(|e| e.op == rsd::Op::Readdir)
        .count() as u64
}

#[test]
fn listings_of_a_directory_the_runs_left_are_set_aside_and_said() {
    let dir = scratch();
    let inputs: Vec<PathBuf> = [(4, 8), (8, 3), (12, 9), (16, 4)]
        .iter()
        .map(|&(np, files)| trace(dir.path(), np, files))
        .collect();
    let real = trace(dir.path(), 32, 6);
    let out = dir.path().join("x32.iotrex");
    let (explained, _) = extrap_explained("list_dir", &inputs, 32, &out);
    assert!(
        explained.contains("directory listings") && explained.contains("set aside: readdir"),
        "{explained}"
    );
    let tf = rsd::TraceFile::read(&out).unwrap();
    let p = extrap::provenance::of(&tf.header).unwrap();
    assert_eq!(p.set_aside, vec![rsd::Op::Readdir], "{:?}", tf.header.notes);
    assert!(
        tf.header.notes.iter().any(|n| n == extrap::listings::NOTE),
        "{:?}",
        tf.header.notes
    );
    assert_eq!(readdirs(&tf), 0);
    // The real run lists 8 entries ("." and ".." too) on each of its 32 ranks: 9 calls each.
    assert_eq!(readdirs(&rsd::TraceFile::read(&real).unwrap()), 32 * 9);
    let o = iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("identical"), "{t}");
    assert!(t.contains("readdir (0 calls in"), "{t}");
}

#[test]
fn a_listing_that_stops_nothing_is_kept() {
    let dir = scratch();
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(dir.path(), np, 5))
        .collect();
    let real = trace(dir.path(), 32, 5);
    let out = dir.path().join("x32.iotrex");
    let o = extrap(&inputs, 32, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let tf = rsd::TraceFile::read(&out).unwrap();
    let p = extrap::provenance::of(&tf.header).unwrap();
    assert!(p.set_aside.is_empty(), "{:?}", p.set_aside);
    // 7 entries and the end, on every rank.
    assert_eq!(readdirs(&tf), 32 * 8);
    assert_identical("list_dir", &out, &real);
}
