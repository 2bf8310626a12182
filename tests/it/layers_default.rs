//! The library layers are recorded by default, and each is turned off by its `iotrex trace`
//! flag (docs/layers.md), on real runs traced as a user does (`iotrex trace -- mpirun ...`):
//! `tests/apps/nc4_par.c` (NetCDF-4 over Debian's parallel HDF5 1.10.8) with the defaults has
//! NetCDF calls holding HDF5 calls holding MPI-IO calls, and the header names both layers and
//! the HDF5 version; `--no-hdf5` leaves NetCDF's calls holding MPI-IO calls directly;
//! `--no-netcdf --no-hdf5` records the MPI-IO calls at the top level, and `--hdf5` wins over
//! an `IOTREX_HDF5=0` in the environment. A program without those libraries (`io_sample`)
//! keeps the header it had before the layers existed.

use crate::common;
use common::*;
use rsd::TraceFile;
use rsd::op::Layer;
use std::path::Path;

/// Traces `nc4_par` at 4 ranks with `iotrex trace FLAGS` (and `envs`) into `dir/NAME.4.iotrex`.
fn nc4(dir: &Path, name: &str, flags: &[&str], envs: &[(&str, &str)]) -> TraceFile {
    let trace = dir.join(format!("{name}.4.iotrex"));
    let nc = dir.join(format!("{name}.nc"));
    let bin = app("nc4_par");
    let mut a = vec!["trace"];
    a.extend(flags);
    a.extend([
        "-o",
        trace.to_str().unwrap(),
        "--",
        "mpirun",
        "-np",
        "4",
        bin.to_str().unwrap(),
        nc.to_str().unwrap(),
    ]);
    let o = iotrex_traced(&a, envs);
    assert!(o.status.success(), "{flags:?}: {}", status_text(&o));
    let tf = TraceFile::read(&trace).unwrap();
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    tf
}

/// Rank 0's calls per (layer at the top level, layer of a child of a top-level call).
fn nesting(tf: &TraceFile) -> Vec<(Layer, Layer)> {
    let mut out = Vec::new();
    for e in tf.trace.expand(0) {
        for c in &e.children {
            let pair = (e.op.layer(), c.op.layer());
            if !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// Whether rank 0 made a call of `layer`, at any depth.
fn has_layer(tf: &TraceFile, layer: Layer) -> bool {
    fn any(es: &[rsd::FlatEvent], layer: Layer) -> bool {
        es.iter()
            .any(|e| e.op.layer() == layer || any(&e.children, layer))
    }
    any(&tf.trace.expand(0), layer)
}

#[test]
fn layers_are_on_by_default_and_each_flag_turns_one_off() {
    let dir = scratch();

    let on = nc4(dir.path(), "default", &[], &[]);
    assert!(
        on.header.layers.starts_with(&[Layer::Netcdf, Layer::Hdf5]),
        "{:?}",
        on.header.layers
    );
    assert!(
        on.header
            .notes
            .iter()
            .any(|n| n.starts_with("HDF5 library 1.")),
        "no HDF5 version in {:?}",
        on.header.notes
    );
    let n = nesting(&on);
    assert!(n.contains(&(Layer::Netcdf, Layer::Hdf5)), "{n:?}");
    // nc_put_vara -> H5Dwrite -> MPI_File_write_at(_all)
    let three = on.trace.expand(0).iter().any(|e| {
        e.op.layer() == Layer::Netcdf
            && e.children.iter().any(|c| {
                c.op.layer() == Layer::Hdf5
                    && c.children.iter().any(|g| g.op.layer() == Layer::MpiIo)
            })
    });
    assert!(three, "no NetCDF -> HDF5 -> MPI-IO call on rank 0");

    let no_hdf5 = nc4(dir.path(), "nohdf5", &["--no-hdf5"], &[]);
    assert!(!no_hdf5.header.layers.contains(&Layer::Hdf5));
    assert!(no_hdf5.header.layers.contains(&Layer::Netcdf));
    assert!(!has_layer(&no_hdf5, Layer::Hdf5));
    assert!(
        !no_hdf5
            .header
            .notes
            .iter()
            .any(|n| n.starts_with("HDF5 library"))
    );
    let n = nesting(&no_hdf5);
    assert!(n.contains(&(Layer::Netcdf, Layer::MpiIo)), "{n:?}");

    let none = nc4(dir.path(), "none", &["--no-netcdf", "--no-hdf5"], &[]);
    assert_eq!(none.header.layers, Layer::ALL.to_vec());
    assert!(!has_layer(&none, Layer::Netcdf) && !has_layer(&none, Layer::Hdf5));
    assert!(
        none.trace
            .expand(0)
            .iter()
            .any(|e| e.op.layer() == Layer::MpiIo),
        "MPI-IO calls at the top level without the layers"
    );

    // The flag wins over the environment the user's shell holds.
    let forced = nc4(
        dir.path(),
        "forced",
        &["--hdf5", "--no-netcdf"],
        &[("IOTREX_HDF5", "0")],
    );
    assert!(has_layer(&forced, Layer::Hdf5));
    assert!(!has_layer(&forced, Layer::Netcdf));
    assert!(forced.header.layers.contains(&Layer::Hdf5));
}

#[test]
fn a_program_without_the_libraries_keeps_its_header() {
    let dir = scratch();
    let trace = dir.path().join("io.4.iotrex");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let bin = app("io_sample");
    let o = iotrex_traced(
        &[
            "trace",
            "-o",
            trace.to_str().unwrap(),
            "--",
            "mpirun",
            "-np",
            "4",
            bin.to_str().unwrap(),
            data.to_str().unwrap(),
            "10",
            "4096",
            "1",
            "65536",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", status_text(&o));
    let tf = TraceFile::read(&trace).unwrap();
    assert_eq!(tf.header.layers, Layer::ALL.to_vec());
    assert!(
        !tf.header
            .notes
            .iter()
            .any(|n| n.starts_with("HDF5 library")),
        "{:?}",
        tf.header.notes
    );
}
