//! Parallel HDF5 (Debian's `libhdf5-openmpi-dev`) under Open MPI's defaults and under ROMIO:
//! `tests/apps/h5_coll.c` writes two steps of a strong-scaled 1-D dataset and a weak-scaled
//! 2-D one with collective `H5Dwrite`s (derived filetypes on a duplicate of the world), closes
//! the file and reads it back collectively. The nested POSIX calls of the collective calls
//! are derived by `collio`'s models; the rest is fitted (HDF5's metadata addresses, the
//! `floor(T/n)`-element byte counts, the datasets' addresses).
//!
//! HDF5's default metadata-write strategy (`H5AC_METADATA_WRITE_STRATEGY__DISTRIBUTED`) deals
//! the C dirty metadata entries of each flush, sorted by address, over the ranks in blocks
//! (`H5C_apply_candidate_list`: the first `C mod n` ranks write `C/n + 1`, the others `C/n`,
//! each with an independent `MPI_File_write_at`). This program flushes 9 entries at its close,
//! so below 9 ranks some ranks write several and the trace's structure changes with the scale;
//! from 9 ranks on, 9 ranks write one each. `extrap`'s declared model of that dealing
//! (`extrap/src/hdf5/dealt.rs`) checks it at every input scale and deals the fitted entries at the
//! target, so traces at 4, 8, 12 and 16 ranks extrapolate exactly, as do traces at 12 to 24
//! (where the model is not needed). A target whose dealing needs an order of two entries that
//! no input shows is refused.
//!
//! The tests share their runs of one library and hints (`common::shared`): the scales 12 and
//! 16 serve both sets of inputs, 32 and 64 every check, 4 to 16 the refusal too.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// Two steps of both datasets, read back from the reopened file.
const ARGS: &[&str] = &["{d}/ckpt.h5", "-s", "2", "-R"];

/// The runs of h5_coll by library and hints (one series per `io` and `hints`).
static RUNS: shared::Series<shared::Scales<PathBuf>> = shared::Series::new();

/// Traces h5_coll at `np` ranks, unless another test of this binary did with the same `io`
/// and `hints`, into `<its series' directory>/<np>.iotrex`, the data directory emptied first
/// (HDF5 truncates an existing file with `MPI_File_set_size`, a new one it does not).
/// `hints` (KEY=VALUE) go to HDF5's file access property list (`h5_coll -H`).
fn trace(np: u32, io: Option<&str>, hints: &[&str]) -> PathBuf {
    let key = format!("h5_coll io={io:?} hints={hints:?}");
    shared::trace(&RUNS, &key, np, |dir| {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let out = dir.join(format!("{np}.iotrex"));
        let mut args = ARGS.to_vec();
        for h in hints {
            args.extend(["-H", h]);
        }
        let tf = trace_in(&out, &data, np, "h5_coll", &args, io);
        // HDF5 really wrote collectively: every rank made collective writes.
        let s = rsd_view::stats::summarize(&tf.trace);
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
    })
}

/// Extrapolates `inputs` to `target` (`--explain`) into `dir`, asserting it succeeds with the
/// nested calls of every collective call site derived by `lib`'s model; returns the output
/// path.
fn extrap(dir: &Path, inputs: &[PathBuf], target: u32, lib: &str) -> (PathBuf, String) {
    let out = dir.join(format!("{target}.extrap.iotrex"));
    let (all, derived) = extrap_explained("h5_coll", inputs, target, &out);
    assert!(
        !derived.is_empty()
            && derived
                .iter()
                .all(|l| l.contains("derived by the model") && l.contains(lib)),
        "h5_coll: at {target} every collective call site must be derived by {lib}'s model:\n{all}"
    );
    (out, all)
}

/// Traces at `scales` extrapolate to 32 and 64, identical to real runs. With `dealt`, the
/// metadata flush's writes must be dealt by the declared model (inputs below 9 ranks),
/// otherwise it must not be used. With a `cb_nodes` hint among `hints`, the derivation must
/// say it took its aggregator count from it.
fn check_from(scales: &[u32], io: Option<&str>, lib: &str, dealt: bool, hints: &[&str]) {
    let dir = scratch();
    let inputs: Vec<PathBuf> = scales.iter().map(|&np| trace(np, io, hints)).collect();
    for target in [32u32, 64] {
        let real = trace(target, io, hints);
        let (out, explain) = extrap(dir.path(), &inputs, target, lib);
        if let Some(cb) = hints.iter().find_map(|h| h.strip_prefix("cb_nodes=")) {
            let said = format!("{cb} aggregators");
            let from = format!("the file's cb_nodes hint {cb}");
            assert!(
                explain.lines().any(|l| l.contains("nested POSIX calls")
                    && l.contains(&said)
                    && l.contains(&from)),
                "h5_coll ({lib}, {hints:?}): at {target} the collective calls must be derived with \
                 {said} from {from}:\n{explain}"
            );
        }
        let line = explain
            .lines()
            .find(|l| l.contains("independent writes dealt over the ranks"));
        if dealt {
            let l = line.unwrap_or_else(|| {
                panic!(
                    "h5_coll ({lib}) from {scales:?}: the metadata flush must be dealt:\n{explain}"
                )
            });
            assert!(
                l.contains("MPI_File_write_at ") && l.contains("C = 1, 9 entries"),
                "h5_coll ({lib}): two flushes, of 1 and 9 entries:\n{l}"
            );
        } else {
            assert!(
                line.is_none(),
                "h5_coll ({lib}) from {scales:?}: the dealing model is not needed:\n{explain}"
            );
        }
        assert_identical(&format!("h5_coll ({lib})"), &out, &real);
    }
}

/// Traces at 12, 16, 20 and 24 ranks extrapolate to 32 and 64, identical to real runs.
fn check(io: Option<&str>, lib: &str) {
    check_from(&[12, 16, 20, 24], io, lib, false, &[]);
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

/// The scales that were refused, under Open MPI's defaults: at 4 and 8 ranks the 9 metadata entries
/// are dealt 3-2-2-2 and 2-1-...-1, at 12 and 16 one each on ranks 0-8; extrapolated to 32
/// and 64 ranks, identical to real runs.
#[test]
fn hdf5_from_4_to_16_ranks_under_open_mpi_defaults() {
    check_from(&[4, 8, 12, 16], None, "OMPIO", true, &[]);
}

/// The same under ROMIO (`--mca io romio321`).
#[test]
fn hdf5_from_4_to_16_ranks_under_romio() {
    check_from(&[4, 8, 12, 16], Some("romio321"), "ROMIO", true, &[]);
}

/// ROMIO with HDF5 passing the `cb_nodes` hint 2, then 3, through its file access property
/// list (and `cb_config_list` `*:*`, without which ROMIO takes one aggregator per host
/// whatever `cb_nodes` says): from 4/8/12/16 ranks to 32 and 64, identical to real runs.
#[test]
fn hdf5_from_4_to_16_ranks_under_romio_with_cb_nodes_2_and_3() {
    for cb in ["cb_nodes=2", "cb_nodes=3"] {
        check_from(
            &[4, 8, 12, 16],
            Some("romio321"),
            "ROMIO",
            true,
            &["cb_config_list=*:*", cb],
        );
    }
}

/// At 5 ranks the dealing gives rank 1 entries 2 and 3, which no input at 4 to 16 ranks has
/// one rank write (at 4 ranks they are rank 0's last and rank 1's first): the order HDF5's
/// cache writes them in is unknown, and extrap refuses, saying so, rather than guess.
#[test]
fn a_target_whose_dealing_no_input_shows_is_refused() {
    let dir = scratch();
    let inputs: Vec<PathBuf> = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(np, None, &[]))
        .collect();
    let out = dir.path().join("5.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "5", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    assert!(
        !o.status.success() && !out.exists(),
        "expected a refusal:\n{}",
        text(&o)
    );
    let t = text(&o);
    assert!(
        t.contains("dealt writes of MPI_File_write_at ")
            && t.contains("rank 1: no input says in which order one rank writes entries 2 and 3"),
        "the refusal must name the unknown order:\n{t}"
    );
}
