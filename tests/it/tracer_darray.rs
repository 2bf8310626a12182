//! `MPI_Type_create_darray` end to end under Open MPI: `tests/apps/darray.c` (2-D and 3-D
//! global arrays, BLOCK, CYCLIC(k) and NONE distributions, C and Fortran order, uneven
//! divisions, written collectively through darray file views and checked element by element
//! by every rank) is traced, its counts must equal the app's, the file table must put every
//! rank's bytes exactly where the files hold them, and the trace must stay near-constant in
//! size from 4 to 16 ranks. The type maps iotrex derives from a recorded darray must be those
//! Open MPI builds, for hundreds of darrays (`darray_typemap.c`). MPICH: `tracer_mpich.rs`.

use crate::common;
use common::darray::{
    TrueExtent, assert_placement_matches_files, assert_typemaps_agree, cases, typemap_input,
};
use common::*;
use std::process::Command;

fn traced(np: u32, raw: bool) -> (tempfile::TempDir, Run) {
    let dir = scratch();
    let d = dir.path().to_string_lossy().to_string();
    let run = mpirun(
        np,
        &app("darray"),
        &args(&[&d]),
        &dir.path().join(format!("darray.{np}.iotrex")),
        &Opts {
            raw,
            ..Opts::default()
        },
    );
    (dir, run)
}

#[test]
fn darray_views_are_recorded_and_placed_where_the_bytes_are() {
    let (dir, run) = traced(4, true);
    assert_counts_match(&run, 4);
    for r in [0, 3] {
        assert_expand_matches_raw(&run, r);
    }
    assert_placement_matches_files(&run, dir.path());
    // The first darray as recorded at rank 3: a 7 x 7 array (B = 3) of ints on a 2 x 2 grid,
    // C order, BLOCK x BLOCK with default arguments, in rsd::mpi's encodings.
    use rsd::mpi::distribute::{BLOCK, DFLT_DARG};
    let tf = run.read();
    let d = tf
        .trace
        .expand(3)
        .into_iter()
        .find(|e| e.op == rsd::Op::TypeCreateDarray)
        .expect("MPI_Type_create_darray recorded");
    assert_eq!(
        d.params,
        vec![
            4,
            3,
            2,
            rsd::mpi::order::C,
            7,
            1000,
            7,
            7,
            BLOCK,
            BLOCK,
            DFLT_DARG,
            DFLT_DARG,
            2,
            2
        ]
    );
}

/// At 8 and 16 ranks too (other grids, other uneven blocks), and the trace stays
/// near-constant in size: the caller's `rank` is one rank-linear value, the grid one value.
#[test]
fn darray_traces_stay_near_constant_in_size() {
    let mut sizes = Vec::new();
    for np in [4u32, 8, 16] {
        let (dir, run) = traced(np, false);
        assert_counts_match(&run, np);
        assert_placement_matches_files(&run, dir.path());
        sizes.push((np, std::fs::metadata(&run.trace).unwrap().len()));
    }
    eprintln!("darray trace sizes: {sizes:?}");
    let min = sizes.iter().map(|s| s.1).min().unwrap();
    let max = sizes.iter().map(|s| s.1).max().unwrap();
    assert!(
        max as f64 <= 1.2 * min as f64,
        "trace sizes grow more than 1.2x: {sizes:?}"
    );
}

#[test]
fn darray_type_maps_are_open_mpis() {
    let cases = cases();
    let dir = scratch();
    let input = dir.path().join("cases.txt");
    std::fs::write(&input, typemap_input(&cases)).unwrap();
    let out = Command::new("timeout")
        .args(["-k", "5", "120", "mpirun", "-np", "1"])
        .arg(app("darray_typemap"))
        .arg(&input)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .output()
        .expect("run timeout/mpirun");
    assert!(out.status.success(), "{}", status_text(&out));
    let n = assert_typemaps_agree(
        &String::from_utf8_lossy(&out.stdout),
        &cases,
        "Open MPI",
        TrueExtent::Exact,
    );
    eprintln!(
        "{} darrays, {n} types compared with Open MPI's",
        cases.len()
    );
    assert!(n > 1000, "{n}");
}

/// darray_weak (even divisions: every rank's share follows n exactly) traced at 4, 8 and 12
/// ranks extrapolates to 16 identical to a real 16-rank trace: the darrays' size as n, rank as
/// rank, the grid and global sizes as linear in n, and the collective calls' nested POSIX
/// calls from the file table's placement of the darray views. darray.c's uneven shares are
/// piecewise in the rank, which no model fits: extrap refuses it, naming the count, rather
/// than write a wrong trace.
#[test]
fn darray_views_extrapolate_to_a_real_trace() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut inputs = Vec::new();
    for np in [4u32, 8, 12, 16] {
        let out = dir.path().join(format!("weak.{np}.iotrex"));
        trace_in(&out, &data, np, "darray_weak", &["{d}"], None);
        inputs.push(out);
    }
    let real = inputs.pop().unwrap();
    let x = dir.path().join("weak.x16.iotrex");
    let o = extrap(&inputs, 16, &x, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_identical("darray_weak", &x, &real);
    replayed_where_the_real_run_wrote(&x, &data);

    let mut uneven = Vec::new();
    for np in [4u32, 8, 12] {
        let out = dir.path().join(format!("uneven.{np}.iotrex"));
        trace_in(&out, &data, np, "darray", &["{d}"], None);
        uneven.push(out);
    }
    let x = dir.path().join("uneven.x16.iotrex");
    let o = extrap(&uneven, 16, &x, &[]);
    assert!(
        !o.status.success() && text(&o).contains("count of MPI_File_write_all"),
        "{}",
        text(&o)
    );
    assert!(!x.exists());
}

/// `iotrex-replay` of the extrapolated 16-rank darray_weak trace under `mpirun -np 16` (the
/// darrays built by MPI at a rank count no input had) puts every rank's bytes where the real
/// 16-rank run, whose files are in `data`, put them. The real run wrote its rank + 1 in every
/// byte; the replay fills each call's buffer with its pattern, and a darray view maps a buffer
/// onto the file in increasing order: the k-th byte of the file a rank wrote holds pattern
/// byte k (one write per rank and file).
fn replayed_where_the_real_run_wrote(trace: &std::path::Path, data: &std::path::Path) {
    let bin = target_dir().join("release/iotrex-replay");
    assert!(
        bin.exists(),
        "{}: cargo build --release --workspace",
        bin.display()
    );
    let root = scratch();
    let out = Command::new("timeout")
        .args(["-k", "5", "120", "mpirun", "-np", "16"])
        .arg(&bin)
        .arg(trace)
        .arg("--root")
        .arg(root.path())
        .args(["--comm", "real", "--compute", "none"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("LD_PRELOAD", "")
        .output()
        .expect("run timeout/mpirun");
    assert!(out.status.success(), "{}", status_text(&out));
    assert!(
        text(&out).contains("op counts and bytes equal the trace's"),
        "{}",
        text(&out)
    );
    for name in ["weak_2d", "weak_3d"] {
        let real = std::fs::read(data.join(name)).unwrap();
        let at = replay::Root::new(root.path())
            .unwrap()
            .lexical(data.join(name).to_str().unwrap());
        let got = std::fs::read(&at).unwrap_or_else(|e| panic!("{}: {e}", at.display()));
        let mut seen = std::collections::HashMap::new();
        let want: Vec<u8> = real
            .iter()
            .map(|who| {
                let k = seen.entry(*who).or_insert(0usize);
                *k += 1;
                replay::engine::Pattern::byte(*k - 1)
            })
            .collect();
        assert!(real.iter().all(|b| (1..=16).contains(b)), "{name}: a hole");
        assert_eq!(got.len(), want.len(), "{name}: size");
        let bad = (0..want.len()).find(|i| got[*i] != want[*i]);
        assert!(bad.is_none(), "{name}: differs first at byte {bad:?}");
    }
}
