//! A real application: Debian's LAMMPS (`lmp`) running tests/apps/lammps_weak.in
//! (LJ melt, 864 atoms per rank, weak-scaled, a text dump through MPI-IO every 20 steps and a
//! restart file), traced under the tracer's defaults (`IOTREX_APPROX=comm`) and Open MPI's
//! defaults. Skipped, saying so, where `lmp` is not installed (scripts/install-deps.sh
//! installs it).
//!
//! - The trace is bounded: within 1.5x from 4 to 64 ranks on the process grids LAMMPS picks
//!   for the deck's boxes (2x2x1 .. 4x4x4). OMPIO's aggregators make nested calls inside the
//!   collective dump that the other ranks do not, and these used to split the whole time-step
//!   loop into one copy per role (rank 0, the aggregators, the last aggregator, the rest),
//!   each with its own exact message sizes: 366 KB at 64 ranks against 211 KB at 4.
//! - The process grid is the input deck's choice (its `processors` command, the `px py pz`
//!   variables). On the grids above the program itself calls differently with two ranks in a
//!   dimension (LAMMPS exchanges once where both neighbours are the same rank), so their
//!   traces differ in structure, as the program does, and extrap refuses to mix them. On
//!   `N x 1 x 1` grids the shape is the same at every scale: those scales agree in structure.
//! - The line grids extrapolate: the dump's offsets are the end of the file's data so far
//!   (rank 0's header at the end of the previous dump, each rank's block at the header's end
//!   plus the exclusive prefix sum of the blocks' lengths), whose lengths are text, so
//!   data-dependent. `rsd::layout` holds them as `end of file (+ exscan(count))`, recognised on
//!   the exact values at every scale, so they fit at any `n` and the summarised lengths at the
//!   target still tile the file (OMPIO's derived aggregator writes then match the real run's
//!   calls one for one, their sizes within the tolerance). The last test runs 8/12/16/20 -> 40.
//!
//! The line grids' runs at 8, 12 and 16 ranks are made once and shared by the two tests that
//! read them (`common::shared`).

use crate::common;

use common::{Opts, args, iotrex, mpirun, scratch, shared, text};
use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn have_lmp() -> bool {
    Command::new("lmp").arg("-h").output().is_ok()
}

/// The runs on the line grids `N x 1 x 1`, which two tests trace at 8, 12 and 16 ranks.
static LINE_RUNS: shared::Series<shared::Scales<PathBuf>> = shared::Series::new();

/// LAMMPS at `np` ranks on the line grid `np x 1 x 1` (see [`lammps`]), unless another test
/// of this binary traced it, in the line grids' shared directory.
fn lammps_line(np: u32) -> PathBuf {
    shared::trace(&LINE_RUNS, "lammps line grids", np, |dir| {
        lammps(dir, np, [np, 1, 1])
    })
}

/// Traces LAMMPS at `np` ranks on the grid `grid` into `dir/lammps.NP.iotrex`, its outputs in
/// a directory of their own; the trace must be complete.
fn lammps(dir: &Path, np: u32, grid: [u32; 3]) -> PathBuf {
    assert_eq!(grid.iter().product::<u32>(), np, "grid {grid:?}");
    let trace = dir.join(format!("lammps.{np}.iotrex"));
    let out = dir.join(format!("run.{np}"));
    std::fs::create_dir_all(&out).unwrap();
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps/lammps_weak.in");
    let out_s = out.to_str().unwrap().to_string();
    let g: Vec<String> = grid.iter().map(|x| x.to_string()).collect();
    let a = [
        "-in",
        input.to_str().unwrap(),
        "-var",
        "d",
        &out_s,
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
    let tf = mpirun(np, Path::new("lmp"), &args(&a), &trace, &Opts::default()).read();
    assert!(!tf.header.incomplete, "{np} ranks: {:?}", tf.header.notes);
    assert_eq!(tf.header.nranks, np);
    trace
}

/// One rank's loop structure: ops and call sites in order, loops as brackets; no values, no
/// iteration counts, no nested (library) calls.
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

/// The number of event nodes of the collective dump, at any depth.
fn collective_dumps(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match &n.kind {
            NodeKind::Event(e) => usize::from(e.op == rsd::Op::FileWriteAtAll),
            NodeKind::Loop(l) => collective_dumps(&l.body),
        })
        .sum()
}

#[test]
fn lammps_trace_is_within_one_and_a_half_times_from_4_to_64_ranks() {
    if !have_lmp() {
        eprintln!("skipped: needs lmp (apt-get install lammps)");
        return;
    }
    let d = scratch();
    let grids: [(u32, [u32; 3]); 6] = [
        (4, [2, 2, 1]),
        (8, [2, 2, 2]),
        (12, [3, 2, 2]),
        (16, [4, 2, 2]),
        (32, [4, 4, 2]),
        (64, [4, 4, 4]),
    ];
    let (mut sizes, mut dumps) = (Vec::new(), Vec::new());
    for (np, g) in grids {
        let t = lammps(d.path(), np, g);
        let tf = TraceFile::read(&t).unwrap();
        // The collective dump is as many nodes at every scale (rank 0's time-step loop, which
        // also writes the dump's header, and the other ranks'): the aggregators' nested calls
        // no longer make copies of the loop of their own.
        dumps.push((np, collective_dumps(&tf.trace.nodes)));
        assert!(rsd::approx::count(&tf.trace) > 0, "{np} ranks: no summary");
        sizes.push((np, std::fs::metadata(&t).unwrap().len()));
    }
    eprintln!("LAMMPS trace sizes (ranks, bytes): {sizes:?}");
    assert!(
        dumps.iter().all(|&(_, k)| k == dumps[0].1),
        "MPI_File_write_at_all nodes per scale: {dumps:?}"
    );
    let smallest = sizes[0].1;
    for &(np, s) in &sizes {
        assert!(
            s * 2 <= smallest * 3,
            "{np} ranks: {s} bytes, over 1.5x the {smallest} bytes at 4 ({sizes:?})"
        );
    }
}

#[test]
fn lammps_line_grids_make_one_loop_structure_at_every_scale() {
    if !have_lmp() {
        eprintln!("skipped: needs lmp (apt-get install lammps)");
        return;
    }
    let tfs: Vec<(u32, TraceFile)> = [8u32, 12, 16]
        .iter()
        .map(|&n| (n, TraceFile::read(&lammps_line(n)).unwrap()))
        .collect();
    // Rank 0 (the thermo output, the dump's header, the restart file), an inner rank and the
    // last rank (the ring's wrap-around) make the same calls in the same loops at each scale.
    for (n, tf) in &tfs[1..] {
        let (n0, tf0) = &tfs[0];
        for (r0, r) in [(0, 0), (1, 1), (n0 - 1, n - 1)] {
            assert_eq!(
                skel(tf0, r0),
                skel(tf, r),
                "rank {r0} at {n0} ranks and rank {r} at {n}: different loop structures"
            );
        }
    }
}

/// The line grids N x 1 x 1 (the deck's `processors` choice: one shape at every scale) at 8,
/// 12, 16 and 20 ranks, extrapolated to 40 (data-dependent message sizes and dump lengths
/// summarised, `--approx-unfit`) and diffed against a real run at 40 within 10%.
#[test]
fn lammps_line_grids_extrapolate_to_twice_the_largest_and_diff_within_ten_percent() {
    if !have_lmp() {
        eprintln!("skipped: needs lmp (apt-get install lammps)");
        return;
    }
    let d = scratch();
    let ins: Vec<PathBuf> = [8u32, 12, 16, 20].iter().map(|&n| lammps_line(n)).collect();
    let real = lammps_line(40);
    let out = d.path().join("lammps.40.extrap.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(ins.iter().map(|p| p.to_str().unwrap()));
    a.extend([
        "--ranks",
        "40",
        "-o",
        out.to_str().unwrap(),
        "--explain",
        "--approx-unfit",
    ]);
    let o = iotrex(&a);
    assert!(o.status.success(), "extrap refused: {}", text(&o));
    let x = TraceFile::read(&out).unwrap();
    // The dump's offsets are the end-of-file model at the target, as in the real run; no
    // offset was summarised.
    let shown = text(&iotrex(&["show", out.to_str().unwrap()]));
    assert!(
        shown.contains("offset = end of file + exscan(count)")
            && shown.contains("MPI_File_write_at  fh = 0, offset = end of file,"),
        "{shown}"
    );
    assert!(
        !shown.contains("offset = ~"),
        "an offset summarised: {shown}"
    );
    assert!(
        x.header.notes.iter().any(|n| n.starts_with("approximate:")),
        "{:?}",
        x.header.notes
    );
    let o = iotrex(&[
        "diff",
        "--tolerance",
        "10%",
        out.to_str().unwrap(),
        real.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "diff against the real run: {}",
        text(&o)
    );
}
