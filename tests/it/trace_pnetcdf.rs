//! The PnetCDF layer, on real runs of Debian's PnetCDF 1.12.3 (`libpnetcdf-dev`,
//! built on Open MPI 4.1.4) under Open MPI's defaults, traced with `IOTREX_PNETCDF=1`:
//! `tests/apps/pnc_more.c` (collective and independent transfers, a record variable,
//! attributes, strided and flexible-API writes, nonblocking puts and gets completed by
//! `ncmpi_wait_all` and `ncmpi_wait`; it prints its own counts).
//!
//! Each PnetCDF call is one event of the `PnetCDF` layer, and the MPI, MPI-IO and POSIX calls
//! PnetCDF made for it are its children (an MPI-IO call's own POSIX calls below it). `extrap`
//! and `diff` lift the children out of their PnetCDF call: traced at 4, 8, 12 and 16 ranks,
//! the program extrapolates to 32 and 64 ranks identical to real runs, with the dimensions'
//! lengths, the starts and the file offsets as functions of n and the rank.
//!
//! The program runs with `-k 2048` (elements per rank and variable), for two reasons of
//! PnetCDF's and Open MPI's own, said here because a smaller K traces but does not
//! extrapolate: PnetCDF byte-swaps a nonblocking put's buffer in place only above 4 KiB and
//! copies smaller ones into buffers of its own, whose address differences become the
//! displacements of the memory type `ncmpi_wait_all` builds (heap noise, different on every
//! rank); and OMPIO's vulcan cuts a collective write at multiples of its file domain from
//! offset 0, so the first aggregator of a write that starts off such a multiple gets both ends
//! of the region, and with a small gap between them it sieves: its `pread` of the gap races
//! with the other aggregators' `pwrite`s when the region extends the file (PnetCDF's header
//! puts every variable off a multiple), and what it reads depends on the timing. With K =
//! 2048 the gap is large and OMPIO writes both ends with `pwritev`, without a read.

use crate::common;
use common::*;
use rsd::op::{Layer, Op, Param};
use rsd::trace::{Node, NodeKind};
use rsd::{FlatEvent, TraceFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Elements per rank and variable (see the module's comment), and the steps (records, and
/// rounds of nonblocking puts).
const ARGS: &[&str] = &["{d}/t.nc", "-k", "2048", "-s", "3"];
const K: i64 = 2048;

/// Traces pnc_more at `np` ranks into `dir/pnc_more.<np>.iotrex`, the data directory emptied
/// first, with the PnetCDF layer when `layer`; returns the run.
fn traced(dir: &Path, np: u32, layer: bool) -> Run {
    let data = dir.join("data");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).unwrap();
    let d = data.display().to_string();
    let a: Vec<String> = ARGS.iter().map(|s| s.replace("{d}", &d)).collect();
    let out = dir.join(format!("pnc_more.{np}.iotrex"));
    let opts = Opts {
        env: vec![("IOTREX_PNETCDF", if layer { "1" } else { "0" }.to_string())],
        ..Opts::default()
    };
    let run = mpirun(np, &app("pnc_more"), &a, &out, &opts);
    let tf = run.read();
    assert!(
        !tf.header.incomplete,
        "pnc_more at {np}: {:?}",
        tf.header.notes
    );
    run
}

/// Per PnetCDF op, over every rank: calls, and the `bytes` parameter's sum.
fn pnetcdf_counts(tf: &TraceFile) -> BTreeMap<String, (u64, u64)> {
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    tf.trace.ranks().for_each(|r| {
        tf.trace.expand_with(r, &mut |e| {
            if e.op.layer() == Layer::Pnetcdf {
                let x = m.entry(e.op.name().to_string()).or_default();
                x.0 += 1;
                x.1 += e.get(Param::Bytes).unwrap_or(0).max(0) as u64;
            }
            true
        });
    });
    m
}

/// The bytes the MPI-IO calls `op` among `children` moved.
fn mpiio_bytes(children: &[FlatEvent], op: Op) -> i64 {
    children
        .iter()
        .filter(|c| c.op == op)
        .map(|c| c.p(Param::Bytes))
        .sum()
}

/// The `i`th entry of the array after an event's fixed parameters (`start[0]` is 0).
fn array(e: &FlatEvent, i: usize) -> i64 {
    e.params[e.op.params().len() + i]
}

/// pnc_more's own PnetCDF counts are the trace's, call for call and byte for byte; each
/// transfer's MPI-IO calls are its children and move its bytes (collective transfers with
/// `MPI_File_write_at_all`/`read_at_all`, independent ones with `MPI_File_write_at`/
/// `read_at`), the nonblocking puts' bytes move in the `ncmpi_wait_all` that completes them,
/// whose request ids are those the puts got; rank 0 writes the header in `ncmpi_enddef`.
/// Without `IOTREX_PNETCDF=1` nothing of the layer is recorded and the MPI-IO calls are at
/// the top level, as before.
#[test]
fn pnc_more_counts_and_nesting() {
    let dir = scratch();
    let np = 4u32;
    let run = traced(dir.path(), np, true);
    let tf = run.read();
    assert!(tf.header.layers.contains(&Layer::Pnetcdf));
    let (app, ranks) = app_counts(&run.stdout());
    assert_eq!(ranks, np as usize, "every rank prints its counts");
    let app: BTreeMap<String, (u64, u64)> = app
        .into_iter()
        .filter(|(op, _)| op.starts_with("ncmpi_"))
        .collect();
    assert!(app.len() >= 20, "pnc_more counts {} PnetCDF ops", app.len());
    assert_eq!(
        pnetcdf_counts(&tf),
        app,
        "PnetCDF calls per op: trace vs program"
    );

    let mut waited = 0;
    for r in 0..np {
        let mut posted: Vec<(i64, i64)> = Vec::new();
        for e in tf.trace.expand(r) {
            let bytes = e.get(Param::Bytes).unwrap_or(0);
            match e.op {
                Op::NcmpiPutVaraAll | Op::NcmpiPutVarsAll => assert_eq!(
                    mpiio_bytes(&e.children, Op::FileWriteAtAll),
                    bytes,
                    "rank {r}: {e:?}"
                ),
                Op::NcmpiGetVaraAll | Op::NcmpiGetVarsAll => assert_eq!(
                    mpiio_bytes(&e.children, Op::FileReadAtAll),
                    bytes,
                    "rank {r}: {e:?}"
                ),
                Op::NcmpiPutVara => assert_eq!(
                    mpiio_bytes(&e.children, Op::FileWriteAt),
                    bytes,
                    "rank {r}: {e:?}"
                ),
                Op::NcmpiGetVara => assert_eq!(
                    mpiio_bytes(&e.children, Op::FileReadAt),
                    bytes,
                    "rank {r}: {e:?}"
                ),
                Op::NcmpiIputVara | Op::NcmpiIgetVara => {
                    assert!(e.children.is_empty(), "a post moves nothing: {e:?}");
                    posted.push((e.p(Param::Request), bytes));
                }
                Op::NcmpiWaitAll | Op::NcmpiWait => {
                    // The requests listed are the ones posted, and their bytes move here.
                    let ids: Vec<i64> = posted.iter().map(|p| p.0).collect();
                    assert_eq!(e.op.list(&e.params), ids, "rank {r}: {e:?}");
                    let moved: i64 = posted.iter().map(|p| p.1).sum();
                    let io = [
                        Op::FileWriteAtAll,
                        Op::FileReadAtAll,
                        Op::FileWriteAt,
                        Op::FileReadAt,
                    ];
                    let got: i64 = io.iter().map(|op| mpiio_bytes(&e.children, *op)).sum();
                    assert_eq!(got, moved, "rank {r}: {e:?}");
                    posted.clear();
                    waited += 1;
                }
                // PnetCDF's header: rank 0 writes it, the others nothing.
                Op::NcmpiEnddef => assert_eq!(
                    e.children.iter().any(|c| c.op == Op::FileWriteAt),
                    r == 0,
                    "rank {r}: {e:?}"
                ),
                Op::NcmpiCreate | Op::NcmpiOpen => {
                    assert!(e.path.as_deref().is_some_and(|p| p.ends_with("/t.nc")));
                    assert!(e.children.iter().any(|c| c.op == Op::FileOpen), "{e:?}");
                }
                _ => {}
            }
            // The fixed variable's region is the rank's: start rank*K, count K.
            if e.op == Op::NcmpiPutVaraAll && e.p(Param::Varid) == 0 {
                assert_eq!((array(&e, 0), array(&e, 1)), (i64::from(r) * K, K));
            }
            // Nothing the application did itself is nested: only PnetCDF calls have children
            // other than MPI-IO's POSIX calls.
            if e.op.layer() != Layer::Pnetcdf && e.op.layer() != Layer::MpiIo {
                assert!(e.children.is_empty(), "rank {r}: {e:?}");
            }
        }
        assert!(posted.is_empty(), "rank {r}: requests never completed");
    }
    // 3 rounds of puts and one of gets by ncmpi_wait_all, one get by ncmpi_wait, per rank.
    assert_eq!(waited, np * 5);

    // Without the layer: no PnetCDF event, MPI-IO at the top level, the same collective calls.
    let plain = traced(dir.path(), np, false).read();
    assert!(pnetcdf_counts(&plain).is_empty());
    assert!(!plain.header.layers.contains(&Layer::Pnetcdf));
    let top = trace_counts(&plain);
    let count = |op: Op| top.get(op.name()).map_or(0, |c| c.0);
    let nested = |op: Op| -> u64 {
        (0..np)
            .flat_map(|r| tf.trace.expand(r))
            .flat_map(|e| e.children)
            .filter(|c| c.op == op)
            .count() as u64
    };
    for op in [Op::FileWriteAtAll, Op::FileReadAtAll, Op::FileOpen] {
        assert!(count(op) >= u64::from(np) * 2, "{}", op.name());
        assert_eq!(nested(op), count(op), "{}", op.name());
    }
}

/// The trace of pnc_more stays near-constant in size from 4 to 16 ranks (the PnetCDF calls
/// and their children fold across ranks as any call does).
#[test]
fn trace_size_is_constant_in_ranks() {
    let dir = scratch();
    let sizes: Vec<(u32, u64)> = [4u32, 8, 16]
        .iter()
        .map(|&np| {
            let run = traced(dir.path(), np, true);
            (np, std::fs::metadata(&run.trace).unwrap().len())
        })
        .collect();
    eprintln!("pnc_more trace sizes with the PnetCDF layer: {sizes:?}");
    let min = sizes.iter().map(|s| s.1).min().unwrap();
    let max = sizes.iter().map(|s| s.1).max().unwrap();
    assert!(
        max as f64 <= 1.1 * min as f64,
        "trace sizes grow more than 1.1x: {sizes:?}"
    );
}

/// Whether the trace holds a PnetCDF event with children.
fn has_nested_pnetcdf(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match &n.kind {
        NodeKind::Event(e) => e.op.layer() == Layer::Pnetcdf && !e.children.is_empty(),
        NodeKind::Loop(l) => has_nested_pnetcdf(&l.body),
    })
}

/// pnc_more traced at 4, 8, 12 and 16 ranks with the layer extrapolates to 32 and 64, and
/// `iotrex diff` against real runs says identical, under Open MPI's defaults: the nested
/// calls of every collective MPI-IO call PnetCDF made are derived by the model of OMPIO, the
/// dimensions' lengths are K*n, and the PnetCDF calls' starts are functions of the rank.
#[test]
fn pnc_more_extrapolates_to_32_and_64() {
    let dir = scratch();
    let keep = |np: u32| -> PathBuf {
        let run = traced(dir.path(), np, true);
        assert!(has_nested_pnetcdf(&run.read().trace.nodes));
        let p = dir.path().join(format!("in.{np}.iotrex"));
        std::fs::rename(&run.trace, &p).unwrap();
        p
    };
    let inputs: Vec<PathBuf> = [4u32, 8, 12, 16].into_iter().map(keep).collect();
    for target in [32u32, 64] {
        let real = keep(target);
        let out = dir.path().join(format!("x.{target}.iotrex"));
        let (all, derived) = extrap_explained("pnc_more", &inputs, target, &out);
        assert!(
            !derived.is_empty() && derived.iter().all(|l| l.contains("derived by the model")),
            "pnc_more: at {target} the collective calls' nested calls must be derived:\n{all}"
        );
        assert!(
            all.lines().any(|l| l.starts_with("ncmpi_def_dim")
                && l.contains("length")
                && l.contains(&format!("{K}*n"))),
            "the dimension x must be K*n long:\n{all}"
        );
        let x = TraceFile::read(&out).unwrap();
        assert!(
            x.header.notes.iter().any(|n| n.contains("PnetCDF calls")),
            "{:?}",
            x.header.notes
        );
        assert_identical("pnc_more", &out, &real);
    }
}

/// `iotrex trace --pnetcdf` records the layer, `iotrex stats --stack` shows it above MPI-IO
/// with its ops and splits the collective completion's time over the calls below it, and
/// `iotrex report` draws it.
#[test]
fn trace_flag_and_stats_stack_show_the_layer() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let out = dir.path().join("pnc.4.iotrex");
    let file = data.join("t.nc").display().to_string();
    let bin = app("pnc_more").display().to_string();
    let o = iotrex_traced(
        &[
            "trace",
            "--pnetcdf",
            "-o",
            out.to_str().unwrap(),
            "--",
            "mpirun",
            "-np",
            "4",
            &bin,
            &file,
            "-k",
            "64",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", status_text(&o));
    let tf = TraceFile::read(&out).unwrap();
    assert!(tf.header.layers.contains(&Layer::Pnetcdf));
    assert!(pnetcdf_counts(&tf).contains_key("ncmpi_wait_all"));
    let o = iotrex(&["stats", "--stack", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let layer_rows: Vec<&str> = s
        .lines()
        .filter(|l| {
            ["PnetCDF ", "MPIIO ", "MPI ", "POSIX "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    assert!(
        layer_rows[0].starts_with("PnetCDF ") && layer_rows[1].starts_with("MPIIO "),
        "the layer comes first, above MPI-IO:\n{s}"
    );
    for op in ["ncmpi_put_vara_all", "ncmpi_iput_vara", "ncmpi_wait_all"] {
        assert!(
            s.lines()
                .any(|l| l.starts_with("PnetCDF") && l.contains(op)),
            "{op} missing:\n{s}"
        );
    }
    assert!(
        s.lines()
            // The parts below are listed by time, which load reorders: the MPI-IO call is
            // among them, wherever it comes.
            .any(|l| l.trim_start().starts_with("ncmpi_wait_all ")
                && l.split_once(" = ")
                    .is_some_and(|(_, parts)| parts.contains("MPI_File_write_at_all "))),
        "the collective completion's time is split over its MPI-IO call:\n{s}"
    );
    // The report draws the layer with the others (its per-layer charts had colours for four
    // I/O layers only).
    let page = dir.path().join("pnc.html");
    let o = iotrex(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("PnetCDF") && html.contains("ncmpi_wait_all"));
}
