//! Parallel HDF5 (Debian's `libhdf5-openmpi-dev`) under Open MPI's defaults and under ROMIO:
//! `tests/apps/h5_coll.c` writes two steps of a strong-scaled 1-D dataset and a weak-scaled
//! 2-D one with collective `H5Dwrite`s (derived filetypes on a duplicate of the world), closes
//! the file and reads it back collectively. The nested POSIX calls of the collective calls
//! are derived by `collio`'s models; the rest is fitted (HDF5's metadata addresses, the
//! `floor(T/n)`-element byte counts, the datasets' addresses).
//!
//! The inputs are 12, 16, 20 and 24 ranks, not 4 to 16: HDF5's default metadata-write
//! strategy (`H5AC_METADATA_WRITE_STRATEGY__DISTRIBUTED`) deals the C dirty metadata entries
//! of each flush over the ranks (`H5C_apply_candidate_list`: the first `C mod n` ranks write
//! `C/n + 1`, the others `C/n`, each with an independent `MPI_File_write_at`). This program
//! flushes 9 entries at its close, so below 9 ranks some ranks write several and the trace's
//! structure changes with the scale; from 9 ranks on, 9 ranks write one each. Nothing models
//! HDF5's metadata cache yet, so traces at 4 and 8 ranks refuse, and
//! [`below_the_metadata_entry_count_the_metadata_flush_refuses`] checks that it is that flush,
//! not collective buffering, that refuses.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// Two steps of both datasets, read back from the reopened file.
const ARGS: &[&str] = &["{d}/ckpt.h5", "-s", "2", "-R"];

/// Traces h5_coll at `np` ranks into `dir/<np>.iotrex`, the data directory emptied first
/// (HDF5 truncates an existing file with `MPI_File_set_size`, a new one it does not).
fn trace(dir: &Path, data: &Path, np: u32, io: Option<&str>) -> PathBuf {
    for f in std::fs::read_dir(data).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let d = data.display().to_string();
    let a: Vec<String> = ARGS.iter().map(|s| s.replace("{d}", &d)).collect();
    let out = dir.join(format!("{np}.iotrex"));
    let opts = Opts {
        io,
        ..Opts::default()
    };
    let tf = mpirun(np, &app("h5_coll"), &a, &out, &opts).read();
    assert!(
        !tf.header.incomplete,
        "h5_coll at {np}: {:?}",
        tf.header.notes
    );
    let cfg = tf
        .header
        .mpi_config
        .as_ref()
        .unwrap_or_else(|| panic!("h5_coll at {np}: no MPI configuration recorded"));
    assert!(cfg.library.contains("Open MPI"), "{}", cfg.library);
    // HDF5 really wrote collectively: every rank made collective writes.
    let s = rsd::stats::summarize(&tf.trace);
    let coll = s
        .ops
        .iter()
        .find(|((_, op), _)| *op == rsd::op::Op::FileWriteAtAll)
        .map(|(_, t)| t.count)
        .unwrap_or(0);
    assert_eq!(
        coll,
        4 * u64::from(np),
        "h5_coll at {np}: one collective write per dataset per rank"
    );
    out
}

/// Extrapolates `inputs` to `target` (`--explain`), asserting it succeeds with the nested
/// calls of every collective call site derived by `lib`'s model; returns the output path.
fn extrap(dir: &Path, inputs: &[PathBuf], target: u32, lib: &str) -> PathBuf {
    let out = dir.join(format!("{target}.extrap.iotrex"));
    let t = target.to_string();
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", &t, "-o", out.to_str().unwrap(), "--explain"]);
    let o = iotrex(&a);
    assert!(
        o.status.success(),
        "h5_coll: extrap to {target} refused:\n{}",
        text(&o)
    );
    let derived: Vec<String> = text(&o)
        .lines()
        .filter(|l| l.contains("nested POSIX calls"))
        .map(str::to_string)
        .collect();
    assert!(
        !derived.is_empty()
            && derived
                .iter()
                .all(|l| l.contains("derived by the model") && l.contains(lib)),
        "h5_coll: at {target} every collective call site must be derived by {lib}'s model:\n{}",
        text(&o)
    );
    out
}

/// Traces at 12, 16, 20 and 24 ranks extrapolate to 32 and 64, identical to real runs.
fn check(io: Option<&str>, lib: &str) {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let inputs: Vec<PathBuf> = [12, 16, 20, 24]
        .iter()
        .map(|&np| trace(dir.path(), &data, np, io))
        .collect();
    for target in [32u32, 64] {
        let real = trace(dir.path(), &data, target, io);
        let out = extrap(dir.path(), &inputs, target, lib);
        let o = iotrex(&["diff", out.to_str().unwrap(), real.to_str().unwrap()]);
        assert!(
            o.status.success() && text(&o).contains("identical"),
            "h5_coll ({lib}): extrapolated and real {target}-rank traces differ:\n{}",
            text(&o)
        );
    }
}

/// Open MPI's defaults: no `--mca` option at all.
#[test]
fn hdf5_under_open_mpi_defaults() {
    check(None, "OMPIO");
}

/// ROMIO (`--mca io romio321`, nothing else set): HDF5's hyperslab filetypes are not
/// contiguous for ROMIO, so its independent writes lock around each `pwrite`.
#[test]
fn hdf5_under_romio() {
    check(Some("romio321"), "ROMIO");
}

/// At 4, 8, 12 and 16 ranks the collective calls are derived, but HDF5's distributed
/// metadata flush (9 entries: two or three per rank at 4 ranks, one on 9 ranks from 12 on)
/// changes the trace's structure, and extrap refuses on its independent `MPI_File_write_at`.
#[test]
fn below_the_metadata_entry_count_the_metadata_flush_refuses() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(dir.path(), &data, np, None))
        .collect();
    let out = dir.path().join("32.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "32", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    assert!(
        !o.status.success() && !out.exists(),
        "expected a refusal:\n{}",
        text(&o)
    );
    let t = text(&o);
    assert!(
        t.contains("disagree in structure") && t.contains("loop around MPI_File_write_at "),
        "the refusal must be HDF5's metadata writes:\n{t}"
    );
    assert!(
        !t.contains("not derived"),
        "every collective call must be derived:\n{t}"
    );
}
