//! On real runs: offsets that are prefix sums of the ranks' sizes.
//!
//! `textdump` (tests/apps/textdump.c) dumps text whose length depends on the data to one
//! shared file: `MPI_Exscan` of the lengths, `MPI_File_write_at_all` at the file's length so far
//! plus that. Traced under Open MPI's defaults at 4, 8, 12 and 16 ranks, exact and with I/O sizes
//! summarised, the offsets must be held as the prefix-sum model (`iotrex show`:
//! `offset = exscan(count, over calls)`), reproduce every rank's real offsets, and give a
//! contiguous, non-overlapping file when replayed with drawn sizes (checked on the replayed
//! file's bytes). With sizes that are a function of the rank (`regular`), the offsets are
//! quadratic in the rank (no rank function); the model extrapolates them to 32 ranks, where a
//! real run must agree.

use crate::common;

use common::{Opts, app, args, iotrex, mpirun, scratch, text};
use rsd::trace::{Node, NodeKind};
use rsd::{Op, Param, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const STEPS: &str = "3";

/// One traced run of textdump: the trace, the app's own blocks (rank -> [(offset, length)] in
/// step order) and the real file's size.
struct Dump {
    tf: TraceFile,
    trace: PathBuf,
    blocks: BTreeMap<u32, Vec<(i64, i64)>>,
    total: i64,
    _dir: tempfile::TempDir,
}

/// `approx`: `none` for exact traces; `comm,io` with a budget of 4 numbers per parameter
/// summarises the data-dependent sizes at every scale. (Each rank's own offsets must stay under
/// the budget before the merge, where the model is recognised: 3 steps take 3 numbers.)
fn dump(np: u32, mode: &str, approx: &str) -> Dump {
    dump_in(np, mode, approx, None)
}

/// [`dump`], writing the app's file under `out` (the same path at every scale, as extrap
/// needs) instead of a scratch directory.
fn dump_in(np: u32, mode: &str, approx: &str, out: Option<&Path>) -> Dump {
    let d = scratch();
    let trace = d.path().join(format!("textdump.{np}.iotrex"));
    let out = out.map_or_else(|| d.path().join("out"), Path::to_path_buf);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let o = Opts {
        env: vec![
            ("IOTREX_APPROX", approx.to_string()),
            ("IOTREX_VALUE_BUDGET", "4".to_string()),
        ],
        ..Opts::default()
    };
    let run = mpirun(
        np,
        &app("textdump"),
        &args(&[out.to_str().unwrap(), STEPS, mode]),
        &trace,
        &o,
    );
    let mut blocks: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    let mut total = -1;
    for l in run.stdout().lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["BLOCK", r, _, o, n] => blocks
                .entry(r.parse().unwrap())
                .or_default()
                .push((o.parse().unwrap(), n.parse().unwrap())),
            ["TOTAL", t] => total = t.parse().unwrap(),
            _ => {}
        }
    }
    let size = std::fs::metadata(out.join("dump.txt")).unwrap().len() as i64;
    assert_eq!(size, total, "the app's file is as long as its blocks");
    assert_eq!(blocks.len() as u32, np, "{}", run.stdout());
    Dump {
        tf: run.read(),
        trace,
        blocks,
        total,
        _dir: d,
    }
}

/// Every `MPI_File_write_at_all` event node of the trace.
fn writes(nodes: &[Node], out: &mut Vec<rsd::trace::Event>) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) if e.op == Op::FileWriteAtAll => out.push(e.clone()),
            NodeKind::Loop(l) => writes(&l.body, out),
            _ => {}
        }
    }
}

/// Each rank's (offset, count) of its `MPI_File_write_at_all` calls, from a trace whose
/// offsets are exact (resolved).
fn traced_blocks(t: &rsd::Trace, np: u32) -> BTreeMap<u32, Vec<(i64, i64)>> {
    (0..np)
        .map(|r| {
            let b = t
                .expand(r)
                .iter()
                .filter(|e| e.op == Op::FileWriteAtAll)
                .map(|e| (e.p(Param::Offset), e.p(Param::Count)))
                .collect();
            (r, b)
        })
        .collect()
}

/// The blocks tile `[0, total)`: sorted by offset, each starts where the last ended.
fn assert_tiles(blocks: &BTreeMap<u32, Vec<(i64, i64)>>, total: i64, what: &str) {
    let mut all: Vec<(i64, i64, u32)> = blocks
        .iter()
        .flat_map(|(&r, v)| v.iter().map(move |&(o, n)| (o, n, r)))
        .collect();
    all.sort();
    let mut end = 0;
    for (o, n, r) in &all {
        assert_eq!(
            *o, end,
            "{what}: rank {r}'s block at {o} (+{n}) does not start where the last ended"
        );
        end += n;
    }
    assert_eq!(end, total, "{what}: the blocks' total");
}

/// The model holds at every write of the trace, and `iotrex show` says so.
fn assert_model(d: &Dump, np: u32, approx: bool) {
    let mut ws = Vec::new();
    writes(&d.tf.trace.nodes, &mut ws);
    assert!(!ws.is_empty());
    for e in &ws {
        let off = &e.params[Op::FileWriteAtAll.index(Param::Offset).unwrap()];
        assert!(off.is_exscan(), "{np} ranks: offset = {off}");
    }
    if approx {
        assert!(
            ws.iter()
                .any(|e| e.params[Op::FileWriteAtAll.index(Param::Count).unwrap()].is_approx()),
            "{np} ranks: no size summarised"
        );
    }
    let o = iotrex(&["show", d.trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = shown
        .lines()
        .filter(|l| l.contains("MPI_File_write_at_all"))
        .collect();
    assert!(!lines.is_empty());
    for l in lines {
        assert!(
            l.contains("offset = exscan(count, over calls)"),
            "{np} ranks: {l}"
        );
    }
}

#[test]
fn traced_dumps_hold_the_prefix_sum_model_exact_and_approximate() {
    for np in [4u32, 8, 12, 16] {
        // Exact: the model reproduces every rank's offsets as the app computed them.
        let d = dump(np, "random", "none");
        assert_eq!(rsd::approx::count(&d.tf.trace), 0);
        assert_model(&d, np, false);
        let mut t = d.tf.trace.clone();
        rsd::prefix::resolve(&mut t);
        assert_eq!(traced_blocks(&t, np), d.blocks, "{np} ranks");
        assert_tiles(&d.blocks, d.total, "the app's own blocks");

        // Sizes summarised: the offsets keep the model; the draws tile a file of the
        // recorded total.
        let a = dump(np, "random", "comm,io");
        assert_model(&a, np, true);
        let mut t = a.tf.trace.clone();
        rsd::draw::realize(&mut t, rsd::draw::DEFAULT_SEED).unwrap();
        let drawn = traced_blocks(&t, np);
        assert_tiles(&drawn, a.total, &format!("{np} ranks, drawn sizes"));
    }
}

/// The replay's write data: byte `i` of every write buffer (replay::Pattern::byte).
fn pattern(i: usize) -> u8 {
    let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 56) as u8 ^ (i as u8)
}

/// The one file called `name` under `dir`.
fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|f| f == name) {
            return Some(p);
        }
    }
    None
}

/// Replays `d` with every rank writing its own pieces and checks the file's real bytes: as long
/// as the blocks the (drawn) trace holds, each block's bytes the replay's data (so no block
/// overwrote another), and the blocks tile the file.
fn assert_replayed_layout(d: &Dump, np: u32, seed: u64, total: i64) {
    let root = scratch();
    let o = iotrex(&[
        "replay",
        d.trace.to_str().unwrap(),
        "--root",
        root.path().to_str().unwrap(),
        "--collective-io",
        "ranks",
        "--compute",
        "none",
        "--seed",
        &seed.to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mut t = d.tf.trace.clone();
    rsd::draw::realize(&mut t, seed).unwrap();
    let blocks = traced_blocks(&t, np);
    assert_tiles(&blocks, total, &format!("{np} ranks, replayed"));
    let f = find(root.path(), "dump.txt").expect("the replayed dump");
    let bytes = std::fs::read(&f).unwrap();
    assert_eq!(bytes.len() as i64, total, "{np} ranks: replayed file size");
    for (r, bs) in &blocks {
        for &(off, n) in bs {
            let got = &bytes[off as usize..(off + n) as usize];
            let bad = got.iter().enumerate().position(|(i, &b)| b != pattern(i));
            assert_eq!(
                bad, None,
                "{np} ranks: rank {r}'s block at {off} (+{n}) was overwritten"
            );
        }
    }
}

#[test]
fn replayed_dumps_are_contiguous_and_non_overlapping() {
    let np = 16;
    // Exact sizes: the replayed file is the app's layout.
    let d = dump(np, "random", "none");
    assert_replayed_layout(&d, np, rsd::draw::DEFAULT_SEED, d.total);
    // Drawn sizes, two seeds: other sizes, still one contiguous file of the recorded total.
    let a = dump(np, "random", "comm,io");
    let mut sizes = Vec::new();
    for seed in [rsd::draw::DEFAULT_SEED, 7] {
        assert_replayed_layout(&a, np, seed, a.total);
        let mut t = a.tf.trace.clone();
        rsd::draw::realize(&mut t, seed).unwrap();
        sizes.push(traced_blocks(&t, np));
    }
    assert_ne!(sizes[0], sizes[1], "the seed draws other sizes");
}

/// textdump's `regular` block of rank `r`: `r + 1` lines of 31 bytes.
fn regular_len(r: i64) -> i64 {
    31 * (r + 1)
}

#[test]
fn exact_sizes_extrapolate_and_the_offsets_are_the_targets_prefix_sums() {
    let scales = [4u32, 8, 12, 16];
    // One output path at every scale: the path is part of a call's identity.
    let out_dir = PathBuf::from(format!("/dev/shm/iotrex-prefixsum-{}", std::process::id()));
    let dumps: Vec<Dump> = scales
        .iter()
        .map(|&np| dump_in(np, "regular", "none", Some(&out_dir)))
        .collect();
    for (d, &np) in dumps.iter().zip(&scales) {
        assert_model(d, np, false);
    }
    let target = 32u32;
    let dir = scratch();
    let out = dir.path().join("textdump.32.extrap.iotrex");
    let explain = dir.path().join("explain.txt");
    let mut a: Vec<String> = vec!["extrap".into()];
    a.extend(dumps.iter().map(|d| d.trace.to_str().unwrap().to_string()));
    a.extend(
        [
            "--ranks",
            &target.to_string(),
            "-o",
            out.to_str().unwrap(),
            "--explain",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let o = iotrex(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(&explain, &o.stdout).unwrap();
    let x = TraceFile::read(&out).unwrap();
    let mut ws = Vec::new();
    writes(&x.trace.nodes, &mut ws);
    assert!(
        ws.iter()
            .all(|e| e.params[Op::FileWriteAtAll.index(Param::Offset).unwrap()].is_exscan()),
        "the extrapolated offsets keep the model"
    );
    // At the target: each rank's size is 31*(rank+1), its offset the sum of the earlier steps'
    // totals and of the lower ranks' sizes.
    let mut t = x.trace.clone();
    rsd::prefix::resolve(&mut t);
    let got = traced_blocks(&t, target);
    let n = i64::from(target);
    let step_total: i64 = (0..n).map(regular_len).sum();
    for r in 0..n {
        let want: Vec<(i64, i64)> = (0..3)
            .map(|s| {
                (
                    s * step_total + (0..r).map(regular_len).sum::<i64>(),
                    regular_len(r),
                )
            })
            .collect();
        assert_eq!(got[&(r as u32)], want, "rank {r} at {target} ranks");
    }
    assert_tiles(&got, 3 * step_total, "extrapolated");
    // A real run at the target agrees with the extrapolation.
    let real = dump_in(target, "regular", "none", Some(&out_dir));
    let _ = std::fs::remove_dir_all(&out_dir);
    assert_eq!(traced_blocks(&t, target), real.blocks);
    let o = iotrex(&["diff", out.to_str().unwrap(), real.trace.to_str().unwrap()]);
    assert!(o.status.success(), "diff: {}", text(&o));
}
