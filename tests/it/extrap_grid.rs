//! Process grids (MPI_Dims_create) under Open MPI's defaults: `tests/apps/grid_io.c` owns one
//! block of a global array at its row-major coordinates in the grid `MPI_Dims_create(n, ND)`
//! gives, and writes it through a subarray view with `MPI_File_write_all`, as PnetCDF's
//! examples and stencil codes do. The global extents are `L * dims(n, ND)[d]` and the block
//! starts `L * coords(rank)[d]`: no smooth function of `n` reproduces them (12 ranks in 3-D
//! are 3x2x2, 16 are 4x2x2, 32 are 4x4x2).
//!
//! The tracer records `MPI_Dims_create` (entries as given and as returned); extrap then tries
//! the grid models (`models/src/grid.rs`) for the dimension counts the program asked for, and
//! only where no smooth model fits. A dimension that is the same at every input scale but not
//! at the target cannot be seen in the values that follow it: that is refused, naming scales
//! to trace. `tests/apps/grid3d.c` adds what stencil codes do on top: a periodic Cartesian
//! communicator (`MPI_Cart_create`, whose grid the tracer records), halo exchanges with the
//! neighbours `MPI_Cart_shift` names, and the file opened on the Cartesian communicator, where
//! OMPIO takes one aggregator per row of the grid (`collio`'s Cartesian grouping).

use crate::common;

use common::{app, assert_identical, extrap, extrap_explained, scratch, text, trace_in};
use rsd::{Op, TraceFile};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Traces grid_io with `nd` dimensions at each of `scales` into `dir`, checking that every
/// rank recorded one `MPI_Dims_create` with free entries and Open MPI's grid.
fn traces(dir: &Path, nd: u32, scales: &[u32]) -> Vec<PathBuf> {
    let data = dir.join(format!("data{nd}"));
    std::fs::create_dir_all(&data).unwrap();
    let mut out = Vec::new();
    for &np in scales {
        let path = dir.join(format!("grid{nd}.{np}.iotrex"));
        let file = format!("{{d}}/grid{nd}.{np}");
        let tf = trace_in(&path, &data, np, "grid_io", &[&file, &nd.to_string()], None);
        let want = models::grid::dims_create(i64::from(np), nd as usize).unwrap();
        let fixed = Op::DimsCreate.params().len();
        for r in [0, np - 1] {
            let calls: Vec<_> = tf
                .trace
                .expand(r)
                .into_iter()
                .filter(|e| e.op == Op::DimsCreate)
                .collect();
            assert_eq!(calls.len(), 1, "{np} ranks, rank {r}");
            let p = &calls[0].params;
            assert_eq!(&p[..fixed], &[i64::from(np), i64::from(nd)]);
            assert_eq!(
                &p[fixed..fixed + nd as usize],
                vec![0; nd as usize].as_slice()
            );
            assert_eq!(&p[fixed + nd as usize..], want.as_slice(), "{np} ranks");
        }
        out.push(path);
    }
    out
}

/// The grid model is the library's: `MPI_Dims_create` of the installed Open MPI for every n
/// up to 256 and 2 to 4 dimensions.
#[test]
fn the_grid_model_is_the_installed_open_mpis() {
    let o = Command::new("timeout")
        .args(["60", "mpirun", "-np", "1"])
        .arg(app("dims_table"))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run dims_table");
    assert!(o.status.success(), "{}", text(&o));
    let mut compared = 0;
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Some(rest) = line.strip_prefix("DIMS ") else {
            continue;
        };
        let v: Vec<i64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
        let (n, d) = (v[0], v[1] as usize);
        assert_eq!(
            models::grid::dims_create(n, d).unwrap(),
            &v[2..],
            "MPI_Dims_create({n}, {d})"
        );
        compared += 1;
    }
    assert_eq!(compared, 256 * 3);
}

/// A 2-D grid traced at 4, 8, 12 and 16 ranks (2x2, 4x2, 4x3, 4x4) extrapolates
/// to 32 (8x4) and 64 (8x8) identical to real runs; the output says the grid models.
#[test]
fn a_2d_grid_extrapolates_to_real_runs() {
    let d = scratch();
    let mut ins = traces(d.path(), 2, &[4, 8, 12, 16, 32, 64]);
    let real64 = ins.pop().unwrap();
    let real32 = ins.pop().unwrap();
    for (n, real) in [(32, &real32), (64, &real64)] {
        let x = d.path().join(format!("grid2.x{n}.iotrex"));
        let (t, _) = extrap_explained("grid_io 2-D", &ins, n, &x);
        assert!(
            t.contains("dims(n, 2)[0]") && t.contains("coords(rank, dims(n, 2))"),
            "{t}"
        );
        assert_identical(&format!("grid_io 2-D at {n}"), &x, real);
    }
}

/// A 3-D grid needs scales where every dimension changes: 4, 12, 18 and 24 ranks (2x2x1,
/// 3x2x2, 3x3x2, 4x3x2) extrapolate to 32 (4x4x2) identical to a real run. From 4, 8, 12 and
/// 16 ranks the middle dimension is 2 at every scale: refused, naming it and scales that
/// would show it change, and nothing written.
#[test]
fn a_3d_grid_extrapolates_from_scales_where_every_dimension_changes() {
    let d = scratch();
    let mut ins = traces(d.path(), 3, &[4, 8, 12, 16, 18, 24, 32]);
    let real = ins.pop().unwrap();
    let (even, changing): (Vec<PathBuf>, Vec<PathBuf>) = (
        ins[..4].to_vec(),
        vec![
            ins[0].clone(),
            ins[2].clone(),
            ins[4].clone(),
            ins[5].clone(),
        ],
    );
    let x = d.path().join("grid3.x32.iotrex");
    let o = extrap(&changing, 32, &x, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_identical("grid_io 3-D", &x, &real);

    let bad = d.path().join("grid3.bad.iotrex");
    let o = extrap(&even, 32, &bad, &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("process grid of MPI_Dims_create")
            && t.contains("dimension 1 is 2 at every input scale")
            && !t.contains("--ignore"),
        "{t}"
    );
    assert!(t.contains("such as 9, 15, 18"), "{t}");
    assert!(!bad.exists());
    let tf = TraceFile::read(&x).unwrap();
    assert_eq!(tf.header.nranks, 32);
}

/// grid3d at 12, 18, 24 and 36 ranks (3x2x2, 3x3x2, 4x3x2, 4x3x3) extrapolates to 48 (4x4x3)
/// identical to a real run: the halo peers along each dimension, the blocks' placement, and
/// the collective calls' nested calls from the Cartesian grouping (4 aggregators at 48 ranks,
/// one per row, where the simple grouping of a communicator that is not Cartesian takes 1).
#[test]
fn a_cartesian_stencil_extrapolates_to_a_real_run() {
    let d = scratch();
    let data = d.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut ins = Vec::new();
    for np in [12u32, 18, 24, 36, 48] {
        let path = d.path().join(format!("grid3d.{np}.iotrex"));
        let tf = trace_in(&path, &data, np, "grid3d", &["{d}/grid3d"], None);
        // The Cartesian grid is recorded: three dims, then three periods (all periodic).
        let create = tf
            .trace
            .expand(0)
            .into_iter()
            .find(|e| e.op == Op::CartCreate)
            .expect("MPI_Cart_create recorded");
        let fixed = Op::CartCreate.params().len();
        let want = models::grid::dims_create(i64::from(np), 3).unwrap();
        assert_eq!(
            &create.params[fixed..fixed + 3],
            want.as_slice(),
            "{np} ranks"
        );
        assert_eq!(&create.params[fixed + 3..], &[1, 1, 1], "{np} ranks");
        ins.push(path);
    }
    let real = ins.pop().unwrap();
    let x = d.path().join("grid3d.x48.iotrex");
    let (t, _) = extrap_explained("grid3d", &ins, 48, &x);
    assert!(
        t.contains("4 aggregators (ranks 0-36:12) at 48 ranks from the Cartesian grouping"),
        "{t}"
    );
    assert_identical("grid3d", &x, &real);
}
