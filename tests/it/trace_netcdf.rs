//! The NetCDF layer, on real runs of Debian's parallel NetCDF 4.9.0
//! (`libnetcdf-mpi-dev`, over parallel HDF5 1.10.8 and Open MPI's defaults), traced with
//! `IOTREX_NETCDF=1` (and `IOTREX_HDF5=1` for the HDF5 layer below it):
//! `tests/apps/nc4_par.c` (a parallel create, dimensions with an unlimited one, a variable
//! written collectively, one independently, a strided write, a chunked record variable,
//! attributes, sync, redef; read back after a parallel open; it prints its own counts).
//!
//! Each `nc_*` call is one event of the `NetCDF` layer; with both layers the HDF5 calls
//! NetCDF made are its children, each with its MPI, MPI-IO and POSIX children (NetCDF ->
//! HDF5 -> MPI-IO -> POSIX); with NetCDF's alone, HDF5's MPI, MPI-IO and POSIX calls are its
//! children directly.

use crate::common;
use common::*;
use rsd::op::{Layer, Op, Param};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// nc4_par's arguments (`{d}`: the data directory).
const ARGS: &[&str] = &["{d}/p.nc", "-s", "3"];

/// nc4_par's runs by layers and extra arguments: several tests trace it with both layers at
/// the same scales (the counts, the trace's size, the extrapolation across the split).
static RUNS: shared::Series<shared::Scales<Run>> = shared::Series::new();

/// The series of nc4_par's runs with the HDF5 layer when `hdf5` and `extra` arguments.
fn key(hdf5: bool, extra: &[&str]) -> String {
    format!("nc4_par hdf5={hdf5} {extra:?}")
}

/// Where the run of [`traced_with`] at `np` ranks left its data directory (`p.nc`).
fn data_of(np: u32, hdf5: bool, extra: &[&str]) -> PathBuf {
    shared::dir(&key(hdf5, extra)).join(format!("data.{np}"))
}

/// Traces nc4_par at `np` ranks, unless another test of this binary did, into
/// `<its series' directory>/nc4_par.<np>.iotrex`, the data directory emptied first (HDF5
/// truncates a file that exists, which adds calls), with the NetCDF layer and, when `hdf5`,
/// the HDF5 layer; returns the run.
fn traced(np: u32, hdf5: bool) -> Run {
    traced_with(np, hdf5, &[])
}

/// [`traced`] with nc4_par's arguments followed by `extra`. The run's data directory is then
/// kept as [`data_of`] says (the next scale's run starts from an empty one at the same path).
fn traced_with(np: u32, hdf5: bool, extra: &[&str]) -> Run {
    shared::trace(&RUNS, &key(hdf5, extra), np, |dir| {
        let data = dir.join("data");
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let d = data.display().to_string();
        let a: Vec<String> = ARGS
            .iter()
            .chain(extra)
            .map(|s| s.replace("{d}", &d))
            .collect();
        let out = dir.join(format!("nc4_par.{np}.iotrex"));
        let opts = Opts {
            env: vec![
                ("IOTREX_NETCDF", "1".to_string()),
                ("IOTREX_HDF5", if hdf5 { "1" } else { "0" }.to_string()),
            ],
            ..Opts::default()
        };
        let run = mpirun(np, &app("nc4_par"), &a, &out, &opts);
        let tf = run.read();
        assert!(
            !tf.header.incomplete,
            "nc4_par at {np}: {:?}",
            tf.header.notes
        );
        let kept = data_of(np, hdf5, extra);
        let _ = std::fs::remove_dir_all(&kept);
        std::fs::rename(&data, &kept).unwrap();
        run
    })
}

/// Per op of `layer`, over every rank and nesting level: calls, and the `bytes` parameter's
/// sum.
fn layer_counts(tf: &TraceFile, layer: Layer) -> BTreeMap<String, (u64, u64)> {
    fn add(e: &FlatEvent, layer: Layer, m: &mut BTreeMap<String, (u64, u64)>) {
        if e.op.layer() == layer {
            let x = m.entry(e.op.name().to_string()).or_default();
            x.0 += 1;
            x.1 += e.get(Param::Bytes).unwrap_or(0).max(0) as u64;
        }
        for c in &e.children {
            add(c, layer, m);
        }
    }
    let mut m = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        tf.trace.expand_with(r, &mut |e| {
            add(e, layer, &mut m);
            true
        });
    });
    m
}

/// The bytes the calls of `op` among `children` moved.
fn bytes_of(children: &[FlatEvent], op: Op) -> i64 {
    children
        .iter()
        .filter(|c| c.op == op)
        .map(|c| c.p(Param::Bytes))
        .sum()
}

/// nc4_par's `nc_*` counts are the trace's, call for call and byte for byte, all at the top
/// level; each region write holds the `H5Dwrite` that moved its bytes, with the transfer mode
/// the variable's parallel access set (collective: `MPI_File_write_at_all` below it, whose
/// aggregators' POSIX writes are one level further down; independent: `MPI_File_write_at`);
/// the reads hold their `H5Dread`. Four library levels in one call.
#[test]
fn nc4_counts_and_three_levels_below() {
    let np = 4;
    let run = traced(np, true);
    let tf = run.read();
    assert!(tf.header.layers.starts_with(&[Layer::Netcdf, Layer::Hdf5]));
    let (app, ranks) = app_counts(&run.stdout());
    assert_eq!(ranks, np as usize, "every rank prints its counts");
    let app: BTreeMap<String, (u64, u64)> = app
        .into_iter()
        .filter(|(op, _)| op.starts_with("nc_"))
        .collect();
    assert_eq!(app.len(), 15, "nc4_par counts {} NetCDF ops", app.len());
    assert_eq!(
        layer_counts(&tf, Layer::Netcdf),
        app,
        "NetCDF calls per op: trace vs program"
    );
    // Every NetCDF call is the application's: none is nested.
    let top = trace_counts(&tf);
    for (op, (calls, _)) in &app {
        assert_eq!(
            top.get(op).map(|c| c.0),
            Some(*calls),
            "{op} at the top level"
        );
    }

    let (mut collective, mut independent, mut grandchildren) = (0, 0, 0);
    for r in 0..np {
        for e in tf.trace.expand(r) {
            if e.op.layer() != Layer::Netcdf {
                assert!(
                    e.children.is_empty() || e.op.layer() == Layer::MpiIo,
                    "rank {r}: only library calls nest: {e:?}"
                );
                continue;
            }
            let writes: Vec<&FlatEvent> =
                e.children.iter().filter(|c| c.op == Op::H5Dwrite).collect();
            match e.op {
                Op::NcPutVara | Op::NcPutVars => {
                    assert_eq!(writes.len(), 1, "rank {r}: {e:?}");
                    let w = writes[0];
                    assert_eq!(w.p(Param::Bytes), e.p(Param::Bytes), "rank {r}: {e:?}");
                    // "indep" (varid 1) is the one independent variable.
                    if e.p(Param::Varid) == 1 {
                        independent += 1;
                        assert_eq!(w.p(Param::Xfer), 0, "{w:?}");
                        assert_eq!(bytes_of(&w.children, Op::FileWriteAt), w.p(Param::Bytes));
                    } else {
                        collective += 1;
                        assert_eq!(w.p(Param::Xfer), 1, "{w:?}");
                        assert_eq!(
                            bytes_of(&w.children, Op::FileWriteAtAll),
                            w.p(Param::Bytes),
                            "rank {r}: {w:?}"
                        );
                        grandchildren += w
                            .children
                            .iter()
                            .filter(|c| c.op == Op::FileWriteAtAll)
                            .flat_map(|c| &c.children)
                            .filter(|p| matches!(p.op, Op::Pwrite | Op::Pwritev))
                            .count();
                    }
                }
                Op::NcGetVara | Op::NcGetVars => assert!(
                    e.children
                        .iter()
                        .any(|c| c.op == Op::H5Dread && c.p(Param::Bytes) == e.p(Param::Bytes)),
                    "rank {r}: {e:?}"
                ),
                // The file is created by HDF5, with the communicator NetCDF gave it.
                Op::NcCreatePar => assert!(
                    e.children.iter().any(|c| c.op == Op::H5Fcreate
                        && c.children.iter().any(|m| m.op == Op::FileOpen)),
                    "rank {r}: {e:?}"
                ),
                _ => assert!(writes.is_empty(), "rank {r}: {e:?}"),
            }
        }
    }
    // coll, inter and 3 records of rec per rank; indep once.
    assert_eq!(collective, np * 5);
    assert_eq!(independent, np);
    assert!(
        grandchildren >= 5,
        "aggregators' POSIX writes: {grandchildren}"
    );
    // The metadata reaches the file at the sync points: HDF5's flushes below them write.
    let flushed: i64 = (0..np)
        .flat_map(|r| tf.trace.expand(r))
        .filter(|e| matches!(e.op, Op::NcEnddef | Op::NcSync | Op::NcClose))
        .flat_map(|e| e.children)
        .filter(|h| matches!(h.op, Op::H5Fflush | Op::H5Fclose))
        .map(|h| bytes_of(&h.children, Op::FileWriteAtAll) + bytes_of(&h.children, Op::FileWriteAt))
        .sum();
    assert!(
        flushed > 0,
        "no metadata written below nc_enddef/nc_sync/nc_close"
    );
}

/// With the NetCDF layer alone, no HDF5 event is recorded and HDF5's MPI-IO calls are the
/// NetCDF calls' children directly: the same NetCDF counts, each write's bytes in its
/// MPI-IO children (a record written beyond the unlimited dimension's end also writes the
/// metadata of the extended dataset, HDF5's `H5Dset_extent` inside it).
#[test]
fn without_the_hdf5_layer_mpiio_nests_directly() {
    let np = 4;
    let run = traced(np, false);
    let tf = run.read();
    assert!(layer_counts(&tf, Layer::Hdf5).is_empty());
    assert!(!tf.header.layers.contains(&Layer::Hdf5));
    let (app, _) = app_counts(&run.stdout());
    let app: BTreeMap<String, (u64, u64)> = app
        .into_iter()
        .filter(|(op, _)| op.starts_with("nc_"))
        .collect();
    assert_eq!(layer_counts(&tf, Layer::Netcdf), app);
    for r in 0..np {
        for e in tf.trace.expand(r) {
            if e.op == Op::NcPutVara || e.op == Op::NcPutVars {
                let moved = bytes_of(&e.children, Op::FileWriteAtAll)
                    + bytes_of(&e.children, Op::FileWriteAt);
                // "rec" (varid 3) is the record variable.
                if e.p(Param::Varid) == 3 {
                    assert!(moved >= e.p(Param::Bytes), "rank {r}: {e:?}");
                } else {
                    assert_eq!(moved, e.p(Param::Bytes), "rank {r}: {e:?}");
                }
            }
        }
    }
}

/// The trace stays near-constant in size from 4 to 16 ranks.
#[test]
fn trace_size_is_constant_in_ranks() {
    let sizes: Vec<(u32, u64)> = [4u32, 8, 16]
        .iter()
        .map(|&np| {
            let run = traced(np, true);
            (np, std::fs::metadata(&run.trace).unwrap().len())
        })
        .collect();
    eprintln!("nc4_par trace sizes with the NetCDF and HDF5 layers: {sizes:?}");
    let min = sizes.iter().map(|s| s.1).min().unwrap();
    let max = sizes.iter().map(|s| s.1).max().unwrap();
    assert!(
        max as f64 <= 1.2 * min as f64,
        "trace sizes grow more than 1.2x: {sizes:?}"
    );
}

/// Traced as a user does (`iotrex trace --netcdf --hdf5 -- mpirun ...`), `iotrex stats
/// --stack` lists the layers NetCDF, HDF5, MPIIO, MPI, POSIX in that order, and splits a region
/// write's time over the four levels below it.
#[test]
fn stats_stack_shows_netcdf_over_hdf5_over_mpiio_over_posix() {
    let dir = scratch();
    let trace = dir.path().join("cli.4.iotrex");
    let nc = dir.path().join("p.nc");
    let bin = app("nc4_par");
    let o = iotrex_traced(
        &[
            "trace",
            "--netcdf",
            "--hdf5",
            "-o",
            trace.to_str().unwrap(),
            "--",
            "mpirun",
            "-np",
            "4",
            bin.to_str().unwrap(),
            nc.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", status_text(&o));
    let tf = TraceFile::read(&trace).unwrap();
    assert!(tf.header.layers.starts_with(&[Layer::Netcdf, Layer::Hdf5]));
    let o = iotrex(&["stats", "--stack", trace.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let rows: Vec<&str> = t
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| ["NetCDF", "HDF5", "MPIIO", "MPI", "POSIX"].contains(w))
        .collect();
    let first = |w: &str| rows.iter().position(|r| *r == w).unwrap_or(usize::MAX);
    assert!(
        first("NetCDF") < first("HDF5")
            && first("HDF5") < first("MPIIO")
            && first("MPIIO") < first("MPI")
            && first("MPI") < first("POSIX")
            && first("POSIX") != usize::MAX,
        "layer order:\n{t}"
    );
    // "nc_put_vara 870ms = H5Dset_extent 609ms (MPI_File_write_at_all 352ms (pwrite 94us on 1
    // of 4 ranks + ...) ...) + H5Dwrite ... + 2.48ms in NetCDF"
    let split = t
        .lines()
        .find(|l| l.trim_start().starts_with("nc_put_vara ") && l.contains(" = "))
        .unwrap_or_else(|| panic!("no breakdown of nc_put_vara:\n{t}"));
    // (The parts are in order of time, which varies from run to run.)
    for part in [
        "H5Dwrite ",
        "MPI_File_write_at_all ",
        "(pwrite",
        "in HDF5",
        "in NetCDF",
    ] {
        assert!(split.contains(part), "{part:?} missing from {split}");
    }
}

/// nc4_par under NetCDF-4's defaults (its chunked record variable `rec` extended by each of
/// its 3 records), traced at 4, 8, 12 and 16 ranks, extrapolates to 32 and 64 ranks and
/// `iotrex diff` against real runs says identical, nothing ignored, Open MPI's defaults:
/// - HDF5's metadata flush is collective (NetCDF 4.9 sets `H5Pset_coll_metadata_write`): at
///   each sync point a rank writes its block of the dealt entries as one
///   `MPI_File_write_at_all` through hindexed types (`extrap/src/hdf5/collflush.rs`);
/// - `rec` holds 3n chunks, 48 at 16 ranks and 96 at 32: past 64 its chunk index (a
///   version-1 B-tree) splits, so the flush writes more entries at the target than at any
///   input, the new nodes move the chunks after them, and reopening the file reads the
///   metadata at addresses the split moved. NetCDF makes HDF5 calls the layer does not record,
///   so the HDF5 oracle replays rank 0's NetCDF calls through libnetcdf on one rank
///   (`h5oracle`'s NetCDF plan), checked against every input's flushes; the flush's entries,
///   the relocated data addresses and the file sizes NetCDF and HDF5 see come from it
///   (`docs/collflush.md`).
///
/// The split is real: the real files' chunk index is the shape said, and rank 0's hindexed
/// block counts at the target are not the inputs'.
#[test]
fn the_record_variable_extrapolates_across_its_chunk_index_split() {
    let dir = scratch();
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16]
        .into_iter()
        .map(|np| traced(np, true).trace)
        .collect();
    let blocks = |p: &Path| -> Vec<i64> {
        let tf = TraceFile::read(p).unwrap();
        let mut all = Vec::new();
        tf.trace.expand_with(0, &mut |e| {
            fn add(e: &FlatEvent, all: &mut Vec<i64>) {
                if e.op == Op::TypeCreateHindexed {
                    all.push(e.p(Param::Count));
                }
                for c in &e.children {
                    add(c, all);
                }
            }
            add(e, &mut all);
            true
        });
        all
    };
    let at16 = blocks(&inputs[3]);
    for target in [32u32, 64] {
        let out = dir.path().join(format!("x.{target}.iotrex"));
        let o = extrap(&inputs, target, &out, &[]);
        let t = text(&o);
        assert!(o.status.success(), "extrap to {target}:\n{t}");
        let notes = TraceFile::read(&out).unwrap().header.notes.join("\n");
        for said in [
            "iotrex-h5oracle",
            "relocated where the HDF5 oracle puts the storage",
            "collective metadata flushes",
        ] {
            assert!(
                notes.contains(said),
                "{said:?} missing at {target}:\n{notes}"
            );
        }
        let real = traced(target, true);
        let levels: Vec<Vec<u16>> = match target {
            32 => vec![vec![57, 39], vec![2]],
            _ => vec![vec![57, 57, 57, 21], vec![4]],
        };
        assert_eq!(
            h5file::chunk_btree_levels(&data_of(target, true, &[]).join("p.nc")),
            levels,
            "the chunk index of the real file at {target}"
        );
        assert_ne!(
            blocks(&real.trace),
            at16,
            "rank 0's hindexed block counts at {target} and 16"
        );
        assert_eq!(blocks(&out), blocks(&real.trace), "at {target}");
        let o = iotrex(&["diff", out.to_str().unwrap(), real.trace.to_str().unwrap()]);
        assert!(o.status.success(), "diff at {target} ranks:\n{}", text(&o));
        assert!(text(&o).contains("identical"), "{}", text(&o));
    }
}

/// Rank 0's `MPI_Type_create_hindexed` block counts, every nesting level, in call order.
fn hindexed_counts(tf: &TraceFile) -> Vec<i64> {
    fn add(e: &FlatEvent, all: &mut Vec<i64>) {
        if e.op == Op::TypeCreateHindexed {
            all.push(e.p(Param::Count));
        }
        for c in &e.children {
            add(c, all);
        }
    }
    let mut all = Vec::new();
    tf.trace.expand_with(0, &mut |e| {
        add(e, &mut all);
        true
    });
    all
}

/// nc4_par with `-f` (its record variable fixed-size and contiguous: no chunk index, so
/// HDF5's metadata keeps its number of objects at every rank count), under NetCDF-4's
/// defaults: HDF5's metadata flushes are collective (`H5Pset_coll_metadata_write`), each rank
/// writing its block of the dealt entries as one `MPI_File_write_at_all` through hindexed
/// types (rank 0's block counts change from 4 to 16 ranks), ranks without entries a view of
/// `MPI_BYTE` and 0 bytes. Traced with both layers at 4, 8, 12 and 16 ranks, `iotrex extrap`
/// to 32 and 64 ranks (`extrap/src/hdf5/collflush.rs`: the flushes dealt at the target, the
/// aggregators' calls derived by collio under Open MPI's defaults) and `iotrex diff` against
/// real runs at 32 and 64 say identical, with no parameter ignored. A target below the first
/// flush's entry count (25) is refused.
#[test]
fn fixed_variables_extrapolate_through_the_collective_flush() {
    let dir = scratch();
    let fixed = ["-f"];
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16]
        .into_iter()
        .map(|np| traced_with(np, true, &fixed).trace)
        .collect();
    // The inputs have the collective flush, in blocks that change with n: the first flush's
    // block on rank 0 is bigger at 4 ranks than at 16.
    let first = |p: &Path| hindexed_counts(&TraceFile::read(p).unwrap())[0];
    assert!(
        first(&inputs[0]) > first(&inputs[3]),
        "rank 0's first hindexed block count at 4 and 16 ranks: {} {}",
        first(&inputs[0]),
        first(&inputs[3])
    );
    // Below the first flush's entry count (25) a rank writes several entries at the target,
    // through a memory type of heap addresses: refused, saying so.
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    let below = dir.path().join("x.20.iotrex");
    a.extend(["--ranks", "20", "-o", below.to_str().unwrap()]);
    let o = iotrex(&a);
    assert!(!o.status.success() && !below.exists(), "{}", text(&o));
    assert!(
        text(&o).contains("heap addresses no trace predicts"),
        "{}",
        text(&o)
    );
    for target in [32u32, 64] {
        let out = dir.path().join(format!("x.{target}.iotrex"));
        let mut a: Vec<&str> = vec!["extrap", "--explain"];
        a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let t_s = target.to_string();
        a.extend(["--ranks", &t_s, "-o", out.to_str().unwrap()]);
        let o = iotrex(&a);
        let t = text(&o);
        assert!(o.status.success(), "extrap to {target}:\n{t}");
        assert!(t.contains("collective metadata flush"), "{t}");
        let real = traced_with(target, true, &fixed);
        // Ranks past the flush's entries write none at the target: the real run's rank n-1
        // makes the empty form (a collective write of 0 bytes) where every input rank wrote.
        let o = iotrex(&["diff", out.to_str().unwrap(), real.trace.to_str().unwrap()]);
        assert!(o.status.success(), "diff at {target} ranks:\n{}", text(&o));
        assert!(text(&o).contains("identical"), "{}", text(&o));
        let x = TraceFile::read(&out).unwrap();
        assert_eq!(
            hindexed_counts(&x),
            hindexed_counts(&real.read()),
            "rank 0's hindexed block counts at {target}"
        );
    }
}

/// nc4_par's default record variable (`rec`, chunked `{1, C}`, its unlimited dimension
/// extended by each record written) with one record (`-s 1`): n chunks, one node of its
/// chunk index up to 64 ranks (64 chunks, the node full). Each extension is HDF5's collective
/// chunk fill in `H5Dset_extent` (each rank's new chunk through an `hindexed` file type and
/// an `hvector` memory type, one `MPI_File_write_at_all`), and the flushes are collective.
/// Traced with both layers at 4, 8, 12 and 16 ranks, `iotrex extrap` to 32 and 64 and
/// `iotrex diff` against real runs say identical, under Open MPI's defaults, nothing ignored;
/// the real files' index is one node. (With three records, 3n chunks, the index splits past
/// 64 chunks: `the_record_variable_extrapolates_across_its_chunk_index_split`.)
#[test]
fn a_growing_record_variable_extrapolates_while_its_chunk_index_is_one_node() {
    let dir = scratch();
    let one = ["-s", "1"];
    // Whether a rank's `H5Dset_extent` fills chunks collectively through an hvector type.
    let fills = |tf: &TraceFile| -> bool {
        fn has(e: &FlatEvent, op: Op) -> bool {
            e.op == op || e.children.iter().any(|c| has(c, op))
        }
        fn find(e: &FlatEvent) -> bool {
            (e.op == Op::H5DsetExtent && has(e, Op::TypeHvector) && has(e, Op::FileWriteAtAll))
                || e.children.iter().any(find)
        }
        tf.trace.expand(0).iter().any(find)
    };
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16]
        .into_iter()
        .map(|np| {
            let run = traced_with(np, true, &one);
            assert!(fills(&run.read()), "no collective chunk fill at {np}");
            run.trace
        })
        .collect();
    for target in [32u32, 64] {
        let out = dir.path().join(format!("x.{target}.iotrex"));
        let o = extrap(&inputs, target, &out, &[]);
        assert!(o.status.success(), "extrap to {target}:\n{}", text(&o));
        let real = traced_with(target, true, &one);
        assert!(fills(&real.read()), "no collective chunk fill at {target}");
        assert!(
            fills(&TraceFile::read(&out).unwrap()),
            "no collective chunk fill in the extrapolation to {target}"
        );
        assert_eq!(
            h5file::chunk_btree_levels(&data_of(target, true, &one).join("p.nc")),
            vec![vec![target as u16]],
            "the chunk index of the real file at {target}"
        );
        let o = iotrex(&["diff", out.to_str().unwrap(), real.trace.to_str().unwrap()]);
        assert!(o.status.success(), "diff at {target} ranks:\n{}", text(&o));
        assert!(text(&o).contains("identical"), "{}", text(&o));
    }
}
