//! The HDF5 layer on another HDF5 than Debian's 1.10.8: PyPI's h5py wheel, which bundles a
//! private serial HDF5 1.14 (`scripts/install-deps.sh` installs it, with `--no-deps` so that
//! Debian's NumPy serves, into `target/pydeps/h5py-1.14`). `tests/apps/h5py_wheel.py` runs
//! under a real `mpirun` with Debian's mpi4py, each rank writing and reading its own file
//! through h5py's low-level API, and counts its HDF5 calls; traced with the tracer's defaults
//! (the layer on), the trace's HDF5 layer has the script's counts per op, call for call and
//! byte for byte, each transfer's POSIX calls are its children and move its bytes, and the
//! header names the HDF5 version the hooks ran on, the one h5py reports.

use crate::common;
use common::*;
use rsd::op::{Dir, Layer, Op, Param};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where install-deps puts the wheel.
fn wheel_dir() -> PathBuf {
    target_dir().join("pydeps").join("h5py-1.14")
}

/// Per HDF5 op over every rank: calls and the `bytes` parameter's sum.
fn hdf5_counts(tf: &TraceFile) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        tf.trace.expand_with(r, &mut |e| {
            if e.op.layer() == Layer::Hdf5 {
                let x = m.entry(e.op.name().to_string()).or_default();
                x.0 += 1;
                x.1 += e.get(Param::Bytes).unwrap_or(0).max(0) as u64;
            }
            true
        });
    });
    m
}

/// The bytes the POSIX calls among `children` (and below them) moved in direction `dir`.
fn posix_bytes(children: &[FlatEvent], dir: Dir) -> u64 {
    children
        .iter()
        .map(|c| {
            let own = if c.op.layer() == Layer::Posix && c.op.dir() == dir {
                c.op.data_bytes(&c.params)
            } else {
                0
            };
            own + posix_bytes(&c.children, dir)
        })
        .sum()
}

#[test]
fn h5py_wheel_with_hdf5_1_14_is_traced_as_the_layer() {
    let wheel = wheel_dir();
    assert!(
        wheel.join("h5py").is_dir(),
        "PyPI's h5py wheel is not in {} (scripts/install-deps.sh installs it)",
        wheel.display()
    );
    let dir = scratch();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apps/h5py_wheel.py");
    let args = vec![script.display().to_string(), out.display().to_string()];
    let opts = Opts {
        env: vec![("PYTHONPATH", wheel.display().to_string())],
        ..Opts::default()
    };
    let np = 4;
    let run = mpirun(
        np,
        Path::new("/usr/bin/python3"),
        &args,
        &dir.path().join("wheel.4.iotrex"),
        &opts,
    );
    let tf = run.read();
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    assert_eq!(tf.header.nranks, np);
    for r in 0..np {
        assert!(
            out.join(format!("r{r}.h5"))
                .metadata()
                .is_ok_and(|m| m.len() > 0),
            "rank {r} wrote no file"
        );
    }

    // The HDF5 the wheel bundles, as h5py says and as the trace's header says.
    let stdout = run.stdout();
    let version = stdout
        .lines()
        .find_map(|l| l.strip_prefix("VERSION "))
        .unwrap_or_else(|| panic!("the script prints h5py's HDF5 version:\n{stdout}"))
        .trim()
        .to_string();
    assert!(
        version.starts_with("1.14."),
        "the wheel's HDF5 is {version}, not 1.14"
    );
    let note = format!("HDF5 library {version}");
    assert!(
        tf.header.notes.contains(&note),
        "header notes {:?} lack {note:?}",
        tf.header.notes
    );
    assert!(tf.header.layers.contains(&Layer::Hdf5));

    // The script's HDF5 calls, per op, call for call and byte for byte.
    let (app, ranks) = app_counts(&stdout);
    assert_eq!(ranks, np as usize, "every rank prints its counts");
    assert_eq!(app.len(), 7, "the script counts {} HDF5 ops", app.len());
    assert_eq!(
        hdf5_counts(&tf),
        app,
        "HDF5 calls per op: trace vs h5py script"
    );

    // Each transfer's POSIX calls are its children and move its bytes.
    let (mut writes, mut reads) = (0, 0);
    for r in 0..np {
        for e in tf.trace.expand(r) {
            let dir = match e.op {
                Op::H5Dwrite => Dir::Write,
                Op::H5Dread => Dir::Read,
                _ => continue,
            };
            let want = e.p(Param::Bytes) as u64;
            assert_eq!(want, 131072, "rank {r}: {e:?}");
            assert_eq!(posix_bytes(&e.children, dir), want, "rank {r}: {e:?}");
            if dir == Dir::Write {
                writes += 1;
            } else {
                reads += 1;
            }
        }
    }
    assert_eq!((writes, reads), (np * 6, np * 3));
    // The file's metadata is written inside H5Fflush.
    let flushed: u64 = (0..np)
        .flat_map(|r| tf.trace.expand(r))
        .filter(|e| e.op == Op::H5Fflush)
        .map(|e| posix_bytes(&e.children, Dir::Write))
        .sum();
    assert!(flushed > 0, "H5Fflush wrote no metadata");
}
