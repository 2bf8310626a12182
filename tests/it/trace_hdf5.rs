//! The HDF5 layer, on real runs of Debian's parallel HDF5 1.10.8
//! (`libhdf5-openmpi-dev`) under Open MPI's defaults, traced with `IOTREX_HDF5=1`:
//! `tests/apps/h5_more.c` (independent and collective transfers, a chunked dataset, a group
//! and an attribute, point selections, an extendible dataset; it prints its own counts),
//! `tests/apps/h5_coll.c` (collective hyperslabs, read back) and h5py through
//! `tests/apps/particles.py` (libhdf5 loaded privately by Python).
//!
//! Each HDF5 call is one event of the `HDF5` layer, and the MPI, MPI-IO and POSIX calls HDF5
//! made for it are its children (an MPI-IO call's own POSIX calls below it). `extrap` and
//! `diff` lift the children out of their HDF5 call: traced at 4, 8, 12 and 16 ranks, both
//! programs extrapolate to 32 and 64 ranks identical to real runs, with the datasets'
//! dimensions and the hyperslabs as functions of n and the rank, and the extrapolated trace
//! nests the calls beneath their HDF5 call again, as the real run does (`stats --stack`
//! counts the same calls per layer).
//!
//! The tests share the runs of one program with the same arguments (`common::shared`): the
//! trace's size is checked on the extrapolation's inputs, the counts on its 4-rank run.

use crate::common;
use common::*;
use rsd::op::{Layer, Op, Param};
use rsd::trace::{Node, NodeKind};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The runs by program, arguments and layer: several tests trace the same program at the
/// same scales (the trace's size and the extrapolations, the counts and the extrapolations).
static RUNS: shared::Series<shared::Scales<Run>> = shared::Series::new();

/// Traces `app args` (`{d}` replaced by the data directory, emptied first) at `np` ranks,
/// unless another test of this binary did, into `<its series' directory>/<app>.<np>.iotrex`,
/// with the HDF5 layer when `layer`; returns the run.
fn traced(np: u32, app_name: &str, args: &[&str], layer: bool) -> Run {
    let key = format!("{app_name} {args:?} layer={layer}");
    shared::trace(&RUNS, &key, np, |dir| {
        traced_in(dir, np, app_name, args, layer)
    })
}

/// [`traced`], made in `dir`.
fn traced_in(dir: &Path, np: u32, app_name: &str, args: &[&str], layer: bool) -> Run {
    let data = dir.join("data");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let d = data.display().to_string();
    let a: Vec<String> = args.iter().map(|s| s.replace("{d}", &d)).collect();
    let out = dir.join(format!("{app_name}.{np}.iotrex"));
    let opts = Opts {
        env: vec![("IOTREX_HDF5", if layer { "1" } else { "0" }.to_string())],
        ..Opts::default()
    };
    let run = mpirun(np, &app(app_name), &a, &out, &opts);
    let tf = run.read();
    assert!(
        !tf.header.incomplete,
        "{app_name} at {np}: {:?}",
        tf.header.notes
    );
    run
}

/// Per HDF5 op, over every rank: calls, and the `bytes` parameter's sum (the bytes of the
/// elements a transfer moved, an attribute's bytes).
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

/// Every call of `rank` with its nested calls, in order.
fn calls(tf: &TraceFile, rank: u32) -> Vec<FlatEvent> {
    tf.trace.expand(rank)
}

/// The bytes the MPI-IO calls among `children` moved, by op.
fn mpiio_bytes(children: &[FlatEvent], op: Op) -> i64 {
    children
        .iter()
        .filter(|c| c.op == op)
        .map(|c| c.p(Param::Bytes))
        .sum()
}

/// h5_more's own HDF5 counts are the trace's, call for call and byte for byte; each
/// transfer's MPI-IO calls are its children and move its bytes (independent transfers with
/// `MPI_File_write_at`, collective ones with `MPI_File_write_at_all`, whose aggregators'
/// `pwrite`s are nested one level further down); the metadata the library writes at
/// `H5Fflush`/`H5Fclose` is theirs. Without `IOTREX_HDF5=1` nothing of the layer is recorded
/// and the MPI-IO calls are at the top level, as before.
#[test]
fn h5_more_counts_and_nesting() {
    let np = 4;
    let run = traced(np, "h5_more", &["{d}/more.h5", "-s", "3"], true);
    let tf = run.read();
    let (app, ranks) = app_counts(&run.stdout());
    assert_eq!(ranks, np as usize, "every rank prints its counts");
    let app: BTreeMap<String, (u64, u64)> = app
        .into_iter()
        .filter(|(op, _)| op.starts_with("H5"))
        .collect();
    assert!(app.len() >= 20, "h5_more counts {} HDF5 ops", app.len());
    assert_eq!(hdf5_counts(&tf), app, "HDF5 calls per op: trace vs program");

    let mut independent = 0;
    let mut collective = 0;
    for r in 0..np {
        for e in calls(&tf, r) {
            match e.op {
                Op::H5Dwrite if e.p(Param::Xfer) == 0 => {
                    independent += 1;
                    assert_eq!(
                        mpiio_bytes(&e.children, Op::FileWriteAt),
                        e.p(Param::Bytes),
                        "rank {r}: an independent H5Dwrite's MPI_File_write_at children: {e:?}"
                    );
                }
                Op::H5Dwrite => {
                    collective += 1;
                    assert_eq!(e.p(Param::Xfer), 1, "{e:?}");
                    assert_eq!(
                        mpiio_bytes(&e.children, Op::FileWriteAtAll),
                        e.p(Param::Bytes),
                        "rank {r}: a collective H5Dwrite's MPI_File_write_at_all children: {e:?}"
                    );
                }
                // A read of the reopened file also reads the chunk index it needs first
                // (metadata), then the rank's chunk.
                Op::H5Dread => assert!(
                    e.children
                        .iter()
                        .any(|c| c.op == Op::FileReadAt && c.p(Param::Bytes) == e.p(Param::Bytes)),
                    "rank {r}: {e:?}"
                ),
                _ => {}
            }
            // Nothing the application did itself is nested: only HDF5 calls have children
            // other than MPI-IO's POSIX calls.
            if e.op.layer() != Layer::Hdf5 && e.op.layer() != Layer::MpiIo {
                assert!(e.children.is_empty(), "rank {r}: {e:?}");
            }
        }
    }
    // 3 steps: the chunked write, 2 per contig<s>, and one per step into "ext".
    assert_eq!(independent, np * (1 + 2 * 3));
    assert_eq!(collective, np * 3);
    // The aggregators' POSIX writes of the collective transfers are grandchildren.
    let grandchildren: usize = (0..np)
        .flat_map(|r| calls(&tf, r))
        .filter(|e| e.op == Op::H5Dwrite && e.p(Param::Xfer) == 1)
        .flat_map(|e| e.children)
        .filter(|c| c.op == Op::FileWriteAtAll)
        .map(|c| {
            c.children
                .iter()
                .filter(|p| matches!(p.op, Op::Pwrite | Op::Pwritev))
                .count()
        })
        .sum();
    assert!(
        grandchildren >= 3,
        "collective writes' POSIX calls: {grandchildren}"
    );
    // The metadata written at the flush and the close belongs to them.
    let flushed: i64 = (0..np)
        .flat_map(|r| calls(&tf, r))
        .filter(|e| matches!(e.op, Op::H5Fflush | Op::H5Fclose))
        .map(|e| mpiio_bytes(&e.children, Op::FileWriteAt))
        .sum();
    assert!(flushed > 0, "no metadata written by H5Fflush/H5Fclose");

    // Without the layer: no HDF5 event, MPI-IO at the top level, the same collective calls
    // (the transfers' and the fill writes of the datasets' creation).
    let plain = traced(np, "h5_more", &["{d}/more.h5", "-s", "3"], false).read();
    assert!(hdf5_counts(&plain).is_empty());
    let top = trace_counts(&plain);
    let count = |op: Op| top.get(op.name()).map_or(0, |c| c.0);
    assert!(count(Op::FileWriteAtAll) >= u64::from(np) * 3);
    let nested: u64 = (0..np)
        .flat_map(|r| calls(&tf, r))
        .flat_map(|e| e.children)
        .filter(|c| c.op == Op::FileWriteAtAll)
        .count() as u64;
    assert_eq!(nested, count(Op::FileWriteAtAll));
}

/// h5_coll's HDF5 calls, counted from what the program does (`-s 2 -R`, per rank): the
/// property lists (one transfer list, a file access list per open), the file created and
/// reopened, and per step and dataset a dataspace created, the dataset created, its space
/// got, selected and written, everything closed; then read back the same way.
#[test]
fn h5_coll_counts() {
    let np = 4u32;
    let tf = traced(np, "h5_coll", &["{d}/c.h5", "-s", "2", "-R"], true).read();
    let (steps, datasets) = (2u64, 2u64);
    let per_rank: &[(Op, u64)] = &[
        (Op::H5PsetDxplMpio, 1),
        (Op::H5PsetFaplMpio, 2),
        (Op::H5Fcreate, 1),
        (Op::H5Fopen, 1),
        (Op::H5Fclose, 2),
        (Op::H5Dcreate2, steps * datasets),
        (Op::H5Dopen2, steps * datasets),
        // Written: the dataset's space and the memory space; read: the memory space.
        (Op::H5ScreateSimple, steps * datasets * 3),
        (Op::H5DgetSpace, steps * datasets * 2),
        (Op::H5SselectHyperslab, steps * datasets * 2),
        (Op::H5Dwrite, steps * datasets),
        (Op::H5Dread, steps * datasets),
        (Op::H5Sclose, steps * datasets * 5),
        (Op::H5Dclose, steps * datasets * 2),
    ];
    let got = hdf5_counts(&tf);
    let want: BTreeMap<String, u64> = per_rank
        .iter()
        .map(|(op, c)| (op.name().to_string(), c * u64::from(np)))
        .collect();
    let got_calls: BTreeMap<String, u64> = got.iter().map(|(k, v)| (k.clone(), v.0)).collect();
    assert_eq!(got_calls, want);
    // The strong dataset's floor(T/n) ints and the weak one's ROWS x COLS, per step and rank,
    // written and read back.
    let strong = (1_000_003 / u64::from(np)) * 4;
    let weak = 4 * 1024 * 4;
    let moved = steps * (strong + weak) * u64::from(np);
    assert_eq!(got["H5Dwrite"].1, moved);
    assert_eq!(got["H5Dread"].1, moved);
}

/// The trace of h5_more stays near-constant in size from 4 to 16 ranks (the HDF5 calls and
/// their children fold across ranks as any call does).
#[test]
fn trace_size_is_constant_in_ranks() {
    let sizes: Vec<(u32, u64)> = [4u32, 8, 16]
        .iter()
        .map(|&np| {
            let run = traced(np, "h5_more", &["{d}/more.h5"], true);
            (np, std::fs::metadata(&run.trace).unwrap().len())
        })
        .collect();
    eprintln!("h5_more trace sizes with the HDF5 layer: {sizes:?}");
    let min = sizes.iter().map(|s| s.1).min().unwrap();
    let max = sizes.iter().map(|s| s.1).max().unwrap();
    assert!(
        max as f64 <= 1.3 * min as f64,
        "trace sizes grow more than 1.3x: {sizes:?}"
    );
}

/// Whether the trace holds an HDF5 event with children.
fn has_nested_hdf5(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.op.layer() == Layer::Hdf5 && !e.children.is_empty(),
        NodeKind::Loop(l) => has_nested_hdf5(&l.body),
    })
}

/// Traces `app` at 4, 8, 12 and 16 ranks with the layer, extrapolates to 32 and 64 and
/// checks each against a real run with `iotrex diff`; returns the `--explain` texts.
fn extrapolates(app_name: &str, args: &[&str]) -> Vec<String> {
    let dir = scratch();
    let keep = |np: u32| -> PathBuf {
        let run = traced(np, app_name, args, true);
        assert!(has_nested_hdf5(&run.read().trace.nodes));
        run.trace
    };
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16].into_iter().map(keep).collect();
    let mut explained = Vec::new();
    for target in [32u32, 64] {
        let real = keep(target);
        let out = dir.path().join(format!("x.{target}.iotrex"));
        let (all, derived) = extrap_explained(app_name, &inputs, target, &out);
        assert!(
            !derived.is_empty() && derived.iter().all(|l| l.contains("derived by the model")),
            "{app_name}: at {target} the collective calls' nested calls must be derived:\n{all}"
        );
        let x = TraceFile::read(&out).unwrap();
        assert!(
            x.header.notes.iter().any(|n| n.contains("HDF5 calls")),
            "{:?}",
            x.header.notes
        );
        assert_identical(app_name, &out, &real);
        keeps_the_layer(app_name, &out, &real);
        explained.push(all);
    }
    explained
}

/// Every rank's calls with their offsets resolved (prefix sums, ends of file).
fn resolved_calls(tf: &TraceFile, rank: u32) -> Vec<FlatEvent> {
    let mut t = tf.trace.clone();
    rsd::prefix::resolve(&mut t);
    rsd::layout::resolve(&mut t);
    t.expand(rank)
}

/// The extrapolated trace at `x` keeps the HDF5 layer as the real run at `real` has it:
/// every rank's HDF5 calls with the same parameters and the same nested calls (their own
/// call sites, MPI-IO calls' POSIX calls below them), and `iotrex stats --stack` counts the
/// same calls per layer, as many nested, with HDF5's exclusive time a part of its inclusive
/// time. A change of an HDF5 call's parameter, or of which HDF5 call made a call, is a
/// difference for `iotrex diff`.
fn keeps_the_layer(app_name: &str, x: &Path, real: &Path) {
    let (xt, rt) = (TraceFile::read(x).unwrap(), TraceFile::read(real).unwrap());
    assert!(
        has_nested_hdf5(&xt.trace.nodes),
        "{app_name}: no nested HDF5"
    );
    assert!(
        xt.header
            .notes
            .iter()
            .any(|n| n.contains("given those calls back")),
        "{app_name}: not nested again: {:?}",
        xt.header.notes
    );
    let n = rt.header.nranks;
    for r in 0..n {
        let (a, b) = (resolved_calls(&xt, r), resolved_calls(&rt, r));
        assert_eq!(a.len(), b.len(), "{app_name} at {n}, rank {r}: call counts");
        for (i, (e, f)) in a.iter().zip(&b).enumerate() {
            assert_eq!(
                e, f,
                "{app_name} at {n}, rank {r}, call {i} and its nested calls"
            );
        }
    }
    let stack = |p: &Path| -> serde_json::Value {
        let o = iotrex(&["stats", "--stack", "--json", p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (sx, sr) = (stack(x), stack(real));
    let layers = |s: &serde_json::Value| -> Vec<(String, u64, u64)> {
        s["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["layer"].as_str().unwrap().to_string(),
                    l["calls"].as_u64().unwrap(),
                    l["nested_calls"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(layers(&sx), layers(&sr), "{app_name} at {n}: stats --stack");
    let hdf5 = sx["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "HDF5")
        .unwrap_or_else(|| panic!("{app_name} at {n}: no HDF5 layer in stats --stack"));
    let (incl, excl) = (
        hdf5["inclusive_ns"].as_f64().unwrap(),
        hdf5["exclusive_ns"].as_f64().unwrap(),
    );
    assert!(
        excl > 0.0 && excl < incl,
        "{app_name} at {n}: HDF5 exclusive {excl} of inclusive {incl}"
    );

    // A hyperslab's first parameter changed on every rank.
    let mut changed = xt.clone();
    assert!(bump_first(&mut changed.trace.nodes, Op::H5SselectHyperslab));
    let c = x.with_extension("changed.iotrex");
    changed.write(&c).unwrap();
    let o = iotrex(&["diff", c.to_str().unwrap(), real.to_str().unwrap()]);
    assert!(
        o.status.code() == Some(1) && text(&o).contains("H5Sselect_hyperslab"),
        "{app_name}: a changed hyperslab must differ:\n{}",
        text(&o)
    );
    // The last call an H5Fclose made taken out of it, to follow it.
    let mut moved = xt.clone();
    assert!(move_last_child_out(&mut moved.trace.nodes, Op::H5Fclose));
    moved.write(&c).unwrap();
    let o = iotrex(&["diff", c.to_str().unwrap(), real.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{app_name}: a call moved out of its H5Fclose must differ:\n{}",
        text(&o)
    );
}

/// Adds 1 to the first parameter of the first `op` event (every value group).
fn bump_first(nodes: &mut [Node], op: Op) -> bool {
    for n in nodes {
        match &mut n.kind {
            NodeKind::Event(e) if e.op == op => {
                for g in &mut e.params[0].groups {
                    g.val = g.val.map(&mut |f| rsd::value::RankFn::Const(f.eval(0) + 1));
                }
                return true;
            }
            NodeKind::Event(e) => {
                if bump_first(&mut e.children, op) {
                    return true;
                }
            }
            NodeKind::Loop(l) => {
                if bump_first(&mut l.body, op) {
                    return true;
                }
            }
        }
    }
    false
}

/// Takes the last child node of the first `op` event with children out of it and puts it
/// right after the event.
fn move_last_child_out(nodes: &mut Vec<Node>, op: Op) -> bool {
    for i in 0..nodes.len() {
        let taken = match &mut nodes[i].kind {
            NodeKind::Event(e) if e.op == op && !e.children.is_empty() => e.children.pop(),
            NodeKind::Loop(l) => {
                if move_last_child_out(&mut l.body, op) {
                    return true;
                }
                None
            }
            NodeKind::Event(_) => None,
        };
        if let Some(c) = taken {
            nodes.insert(i + 1, c);
            return true;
        }
    }
    false
}

/// h5_more from 4-16 ranks to 32 and 64: its metadata flush (17 entries, more than every
/// input's ranks) is dealt by extrap's model, which works because the lifted calls are told
/// apart by their HDF5 call (its data writes and its metadata writes share one
/// `MPI_File_write_at` call site inside HDF5); the extendible dataset's rows and the
/// hyperslabs are functions of n and the rank.
#[test]
fn h5_more_extrapolates_to_32_and_64() {
    for all in extrapolates("h5_more", &["{d}/more.h5"]) {
        assert!(
            all.lines()
                .any(|l| l.contains("dealt over the ranks") && l.contains("C = 17 entries")),
            "the metadata flush must be dealt:\n{all}"
        );
        assert!(
            all.lines()
                .any(|l| l.starts_with("H5Sselect_hyperslab") && l.contains("rank")),
            "a hyperslab's start must be fitted in the rank:\n{all}"
        );
    }
}

/// h5_coll from 4-16 ranks to 32 and 64, with the layer: the strong dataset's dimensions are
/// `floor(T/n)` and its hyperslab starts `floor(T/n)*rank`.
#[test]
fn h5_coll_extrapolates_to_32_and_64() {
    for all in extrapolates("h5_coll", &["{d}/c.h5", "-s", "2", "-R"]) {
        assert!(
            all.lines().any(|l| l.starts_with("H5Sselect_hyperslab")
                && l.contains("start[0]")
                && l.contains("rank coefficient = floor(")),
            "the strong hyperslab's start must be floor(T/n)*rank:\n{all}"
        );
    }
}

/// h5py's HDF5 calls are traced: Python loads h5py's extension, which links libhdf5, with
/// `RTLD_LOCAL`, so the real functions are found among the privately loaded objects; its
/// collective writes are nested in its `H5Dwrite`s.
#[test]
fn h5py_calls_are_traced() {
    let dir = scratch();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apps/particles.py");
    let args = vec![
        script.display().to_string(),
        out.join("p.h5").display().to_string(),
    ];
    let t = dir.path().join("py.4.iotrex");
    let opts = Opts {
        env: vec![("IOTREX_HDF5", "1".to_string())],
        ..Opts::default()
    };
    let tf = mpirun(4, Path::new("/usr/bin/python3"), &args, &t, &opts).read();
    let c = hdf5_counts(&tf);
    for op in [
        Op::H5PsetFaplMpio,
        Op::H5Fcreate,
        Op::H5Dcreate2,
        Op::H5SselectHyperslab,
        Op::H5Dwrite,
    ] {
        assert!(
            c.get(op.name()).is_some_and(|x| x.0 >= 4),
            "{} missing: {c:?}",
            op.name()
        );
    }
    // Three collective writes of 2000 float64 particles' worth per rank on average: the
    // HDF5 bytes are the MPI-IO bytes of the nested collective writes.
    let nested: i64 = (0..4)
        .flat_map(|r| tf.trace.expand(r))
        .filter(|e| e.op == Op::H5Dwrite)
        .map(|e| mpiio_bytes(&e.children, Op::FileWriteAtAll))
        .sum();
    assert_eq!(nested as u64, c["H5Dwrite"].1);
    assert!(nested > 0);
}

/// h5py through its low-level API (`tests/apps/h5py_lowlevel.py`), whose every HDF5 call is
/// one the script names and counts (with those h5py's `set_extent` makes): the trace's HDF5
/// layer has the script's counts per op, call for call and byte for byte, on every rank;
/// each collective `H5Dwrite`'s bytes are those of its nested `MPI_File_write_at_all`, each
/// independent one's those of its `MPI_File_write_at`.
#[test]
fn h5py_low_level_counts_are_the_programs() {
    let np = 4;
    let run = ll_traced(np, &[]);
    let tf = run.read();
    let (app, ranks) = app_counts(&run.stdout());
    assert_eq!(ranks, np as usize, "every rank prints its counts");
    assert!(app.len() >= 10, "the script counts {} HDF5 ops", app.len());
    assert_eq!(
        hdf5_counts(&tf),
        app,
        "HDF5 calls per op: trace vs h5py script"
    );
    let (mut coll, mut indep) = (0, 0);
    for r in 0..np {
        for e in calls(&tf, r).into_iter().filter(|e| e.op == Op::H5Dwrite) {
            let (op, n) = match e.p(Param::Xfer) {
                1 => (Op::FileWriteAtAll, &mut coll),
                _ => (Op::FileWriteAt, &mut indep),
            };
            *n += 1;
            assert_eq!(
                mpiio_bytes(&e.children, op),
                e.p(Param::Bytes),
                "rank {r}: {e:?}"
            );
        }
    }
    assert_eq!((coll, indep), (np * 3, np * 3));
}

/// h5py_lowlevel's runs, by its arguments after the output file.
static LL_RUNS: shared::Series<shared::Scales<Run>> = shared::Series::new();

/// The series of h5py_lowlevel's runs with `args`.
fn ll_key(args: &[&str]) -> String {
    format!("h5py_lowlevel {args:?}")
}

/// The directory of h5py_lowlevel's runs with `args`: `d<np>/ll.h5` is the file of the run at
/// `np` ranks.
fn ll_dir(args: &[&str]) -> PathBuf {
    shared::dir(&ll_key(args))
}

/// `tests/apps/h5py_lowlevel.py` traced at `np` ranks (with `args` after its output file),
/// the HDF5 layer on, unless another test of this binary did, into [`ll_dir`].
fn ll_traced(np: u32, args: &[&str]) -> Run {
    shared::trace(&LL_RUNS, &ll_key(args), np, |dir| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/apps/h5py_lowlevel.py");
        let opts = Opts {
            env: vec![("IOTREX_HDF5", "1".to_string())],
            ..Opts::default()
        };
        let data = dir.join(format!("d{np}"));
        std::fs::create_dir_all(&data).unwrap();
        let mut a = vec![
            script.display().to_string(),
            data.join("ll.h5").display().to_string(),
        ];
        a.extend(args.iter().map(|s| s.to_string()));
        let p = dir.join(format!("ll.{np}.iotrex"));
        let run = mpirun(np, Path::new("/usr/bin/python3"), &a, &p, &opts);
        assert!(!run.read().header.incomplete);
        run
    })
}

/// `iotrex extrap` of h5py_lowlevel's `inputs` to `target` into `dir`: its output and the
/// extrapolated trace's path.
fn ll_extrap(dir: &Path, inputs: &[PathBuf], target: u32) -> (std::process::Output, PathBuf) {
    let out = dir.join(format!("x.{target}.iotrex"));
    let t = target.to_string();
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    // The script's COUNT lines, gathered to rank 0, are text whose length follows the ranks'
    // digits: not I/O.
    a.extend(["--ranks", &t, "--ignore", "MPI_Gatherv.recvbytes"]);
    a.extend([
        "--ignore",
        "MPI_Gatherv.sendcount",
        "--ignore",
        "MPI_Gatherv.bytes",
    ]);
    a.extend(["-o", out.to_str().unwrap()]);
    (iotrex(&a), out)
}

/// h5py_lowlevel reading its rows back (`3 read`: the file opened again, each rank's rows
/// read independently, HDF5 reading its metadata on every rank) at 4-16 ranks: to 20 (one
/// chunk-index node) identical to a real run; to 32, where the index splits, refused, since
/// every rank would read the new nodes and the metadata they moved, which nothing models (the
/// HDF5 oracle replays the file's opening, whose reads are let through, but no data read and
/// the index lookups it makes): before the guard an IOR run of this shape extrapolated and
/// differed from the real one in its read phase.
#[test]
fn h5py_reading_back_a_split_chunk_index_is_refused() {
    let dir = scratch();
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16]
        .into_iter()
        .map(|np| ll_traced(np, &["3", "read"]).trace)
        .collect();
    let (o, x20) = ll_extrap(dir.path(), &inputs, 20);
    assert!(o.status.success(), "{}", text(&o));
    assert_identical(
        "h5py_lowlevel read back at 20",
        &x20,
        &ll_traced(20, &["3", "read"]).trace,
    );
    let (o, x32) = ll_extrap(dir.path(), &inputs, 32);
    let t = text(&o);
    assert!(!o.status.success(), "extrap to 32 succeeded:\n{t}");
    assert!(!x32.exists());
    for why in [
        "reads its metadata back",
        "its replay at the target read no such bytes",
        "cannot extrapolate data addresses of HDF5's dataset storage",
    ] {
        assert!(t.contains(why), "{why:?} missing:\n{t}");
    }
}

/// `h5py_lowlevel.py` traced at 4, 8, 12 and 16 ranks: its `rows` dataset, chunked by one
/// row, holds 3n chunks, one node of its chunk index (a version-1 B-tree, at most 64 chunks
/// a node) up to 21 ranks. To 20 ranks (60 chunks) the dealt metadata flush extrapolates
/// and `diff` against a real 20-rank run says identical (the script's count printing,
/// `MPI_Gatherv` of text, approximately: `--ignore`). To 32 (96 chunks) and 64 (192) the
/// tree splits and the flush writes more entries than at any input, as the real runs show:
/// HDF5 replayed on one rank (iotrex-h5oracle) gives the entries, and at 64, where the new
/// nodes move the chunks and a later dataset, where the data went (`extrap::relocate`).
#[test]
fn h5py_low_level_extrapolates_across_its_chunk_index_split() {
    let dir = scratch();
    let keep = |np: u32| ll_traced(np, &[]).trace;
    // The metadata entries HDF5 wrote independently: `MPI_File_write_at` outside `H5Dwrite`,
    // over every rank.
    let metadata_writes = |p: &Path| -> usize {
        fn count(e: &FlatEvent, in_write: bool) -> usize {
            let own = usize::from(e.op == Op::FileWriteAt && !in_write);
            own + e
                .children
                .iter()
                .map(|c| count(c, in_write || e.op == Op::H5Dwrite))
                .sum::<usize>()
        }
        let tf = TraceFile::read(p).unwrap();
        (0..tf.header.nranks)
            .flat_map(|r| tf.trace.expand(r))
            .map(|e| count(&e, false))
            .sum()
    };
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16].into_iter().map(keep).collect();
    let extrap = |target: u32| ll_extrap(dir.path(), &inputs, target);
    let (o, x20) = extrap(20);
    assert!(o.status.success(), "{}", text(&o));
    let real20 = keep(20);
    assert_identical("h5py_lowlevel", &x20, &real20);
    let at = |i: usize| metadata_writes(&inputs[i]);
    assert_eq!(at(0), at(3), "the inputs write as many metadata entries");
    assert_eq!(metadata_writes(&real20), at(3));

    // The split index's shape at each target (`extrap::hdf5::chunk_btree`'s, whose unit tests
    // check what it says of these shapes), as the real file holds it.
    struct Split {
        target: u32,
        /// Per level, leaves first, the children of each node.
        levels: Vec<Vec<u16>>,
        /// Nodes more than the inputs' one.
        more: usize,
    }
    let shapes = [
        Split {
            target: 32,
            levels: vec![vec![57, 39], vec![2]],
            more: 2,
        },
        Split {
            target: 64,
            levels: vec![vec![57, 57, 57, 21], vec![4]],
            more: 4,
        },
    ];
    // At 32 the split index's new nodes follow the chunks: the oracle's flush entries and
    // file size make the extrapolation identical to a real run.
    let (o, x32) = extrap(32);
    assert!(o.status.success(), "{}", text(&o));
    let real32 = keep(32);
    assert_identical("h5py_lowlevel at 32", &x32, &real32);
    // At 64 the new nodes sit between chunks and before the third step's dataset: the data's
    // addresses follow the oracle's storage, and every rank's calls are the real run's.
    // Rank 0's chunk fill then writes across the new nodes' holes: mpi4py initializes MPI
    // with MPI_THREAD_MULTIPLE, under which OMPIO's fbtl does no write sieving, so it writes
    // each run of chunks with a `pwritev` of its own (single-threaded it would read the span
    // and write it back). Nested calls no input made: their call sites inside the MPI library
    // are unknown, made up and said in the notes, and `diff` compares those calls without
    // them.
    let (o, x64) = extrap(64);
    assert!(o.status.success(), "{}", text(&o));
    let notes = TraceFile::read(&x64).unwrap().header.notes;
    assert!(
        notes.iter().any(|n| n.contains("relocated")),
        "no relocation note: {notes:?}"
    );
    let real64 = keep(64);
    for t in [&inputs[0], &real64, &x64] {
        let c = TraceFile::read(t).unwrap().header.mpi_config.unwrap();
        assert_eq!(
            c.cvar(rsd::format::THREAD_LEVEL),
            Some("MPI_THREAD_MULTIPLE"),
            "{}",
            t.display()
        );
    }
    let diff = |extra: &[&str]| {
        let mut a = vec!["diff"];
        a.extend(extra);
        a.extend([x64.to_str().unwrap(), real64.to_str().unwrap()]);
        iotrex(&a)
    };
    let o = diff(&["--ignore-call-sites"]);
    assert!(
        o.status.success() && text(&o).contains("identical"),
        "{}",
        text(&o)
    );
    assert!(
        notes.iter().any(|n| n
            .starts_with("the model issues pwritev inside MPI_File_write_at_all")
            && n.ends_with("is made up")),
        "no made-up site said: {notes:?}"
    );
    let o = diff(&[]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("identical"), "{t}");
    assert!(
        t.contains("have a call site the extrapolation made up"),
        "{t}"
    );
    // The inputs' files hold a one-node index.
    assert_eq!(
        h5file::chunk_btree_levels(&ll_dir(&[]).join("d16/ll.h5")),
        vec![vec![48u16]]
    );
    // At 32 ranks HDF5 writes more metadata entries than at the inputs.
    assert!(
        metadata_writes(&real32) > at(3),
        "metadata entries at 32: {} vs {} at 16",
        metadata_writes(&real32),
        at(3)
    );
    // And what it says of the split is what HDF5 did: the real files' indexes have the shape
    // said, and the one flush (`H5Fflush`, every node dirty) writes one entry per new node.
    for Split {
        target,
        levels,
        more,
        ..
    } in &shapes
    {
        let real = if *target == 32 {
            real32.clone()
        } else {
            real64.clone()
        };
        assert_eq!(
            &h5file::chunk_btree_levels(&ll_dir(&[]).join(format!("d{target}/ll.h5"))),
            levels,
            "the chunk index of the real file at {target}"
        );
        assert_eq!(
            metadata_writes(&real),
            at(3) + more,
            "metadata entries at {target} against {} at 16",
            at(3)
        );
    }
}
