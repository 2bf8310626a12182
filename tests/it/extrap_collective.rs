//! Collective MPI-IO under Open MPI's defaults (no `--mca` option, no hint): the nested POSIX
//! calls of the collective calls are made by OMPIO's aggregators, one per 8 ranks, so they
//! change shape between 4 and 16 ranks and cannot be fitted. `iotrex extrap` derives them with
//! the model of the library's collective buffering, from the configuration the tracer
//! records. Each program is traced at 4, 8, 12 and 16 ranks, extrapolated to 32 and 64, and
//! `iotrex diff` against a real run at that scale must say identical.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// Traces `app args` at `np` ranks into `dir/<np>.iotrex` (see [`trace_in`]).
fn trace(
    dir: &Path,
    data: &Path,
    np: u32,
    app_name: &str,
    args: &[&str],
    io: Option<&str>,
) -> PathBuf {
    let out = dir.join(format!("{np}.iotrex"));
    trace_in(&out, data, np, app_name, args, io);
    out
}

/// A scratch directory with a `data` directory in it, and `app args` traced there at 4, 8,
/// 12 and 16 ranks (see [`trace`]).
fn inputs(app_name: &str, args: &[&str], io: Option<&str>) -> (Vec<PathBuf>, tempfile::TempDir) {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let inputs = [4, 8, 12, 16]
        .iter()
        .map(|&np| trace(dir.path(), &data, np, app_name, args, io))
        .collect();
    (inputs, dir)
}

/// The inputs at 4, 8, 12 and 16 ranks extrapolate to 32 and 64 ranks with every collective
/// call's nested calls derived, and each is identical to a real run. Returns the inputs.
fn check(name: &str, app_name: &str, args: &[&str]) -> (Vec<PathBuf>, tempfile::TempDir) {
    check_with(name, app_name, args, None)
}

/// As [`check`], with the io component `io` (`None`: Open MPI's default, OMPIO).
fn check_with(
    name: &str,
    app_name: &str,
    args: &[&str],
    io: Option<&str>,
) -> (Vec<PathBuf>, tempfile::TempDir) {
    let (inputs, dir) = inputs(app_name, args, io);
    let data = dir.path().join("data");
    for target in [32u32, 64] {
        let real = trace(dir.path(), &data, target, app_name, args, io);
        let out = dir.path().join(format!("{target}.extrap.iotrex"));
        let (all, derived) = extrap_explained(name, &inputs, target, &out);
        // OMPIO's default: one aggregator per 8 ranks (the simple grouping's cost model
        // wants more, io_ompio_max_aggregators_ratio caps it); ROMIO's: one per node, and
        // all ranks run on this one.
        let (aggs, lib) = match io {
            None => (format!("{} aggregators", target / 8), "OMPIO"),
            Some(_) => ("1 aggregators (ranks 0)".to_string(), "ROMIO"),
        };
        assert!(
            !derived.is_empty()
                && derived
                    .iter()
                    .all(|l| l.contains("derived by the model") && l.contains(lib))
                && derived.iter().any(|l| l.contains(&aggs)),
            "{name}: at {target} every collective call site must be derived with {aggs}:\n{all}"
        );
        assert_identical(name, &out, &real);
    }
    (inputs, dir)
}

#[test]
fn ior_collective_segmented_with_readback() {
    check(
        "ior collective segmented",
        "ior_like",
        &[
            "-a",
            "mpiio",
            "-c",
            "-t",
            "65536",
            "-b",
            "131072",
            "-s",
            "2",
            "-R",
            "-o",
            "{d}/seg.dat",
        ],
    );
}

/// ior_like collective, strided, with the neighbour read-back: for both libraries.
const STRIDED: &[&str] = &[
    "-a",
    "mpiio",
    "-c",
    "-L",
    "strided",
    "-t",
    "4096",
    "-b",
    "8192",
    "-s",
    "2",
    "-R",
    "-o",
    "{d}/str.dat",
];

#[test]
fn ior_collective_strided_with_readback() {
    check("ior collective strided", "ior_like", STRIDED);
}

/// Strong scaling: each rank writes floor(T/n) bytes of a T-byte checkpoint, so the
/// aggregators' write sizes are a property of the whole call (n*floor(T/n)); 40 MiB takes
/// more than 2 cycles at 4 ranks, where OMPIO writes asynchronously (a `pwrite` per request,
/// recorded as collected) and 2 cycles or fewer from 16 ranks on.
#[test]
fn strong_scaling_checkpoints() {
    let (inputs, dir) = check(
        "checkpoints",
        "ckpt_strong",
        &[
            "{d}/ck.dat",
            "1000003",
            "-R",
            "+",
            "{d}/big.dat",
            "41943049",
            "-R",
        ],
    );
    // The same traces without the configuration (as an older tracer wrote them): the nested
    // calls cannot be derived, fitting them refuses, and the refusal says why both failed.
    let mut bare = Vec::new();
    for p in &inputs {
        let mut tf = rsd::TraceFile::read(p).unwrap();
        tf.header.mpi_config = None;
        let q = p.with_extension("bare.iotrex");
        tf.write(&q).unwrap();
        bare.push(q);
    }
    let out = dir.path().join("bare32.iotrex");
    let mut a: Vec<&str> = vec!["extrap"];
    a.extend(bare.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--ranks", "32", "-o", out.to_str().unwrap()]);
    let o = iotrex(&a);
    assert!(
        !o.status.success(),
        "without the configuration extrap must refuse:\n{}",
        text(&o)
    );
    assert!(
        text(&o).contains("not derived") && text(&o).contains("no MPI library configuration"),
        "{}",
        text(&o)
    );
}

/// ROMIO (`--mca io romio321`, not Open MPI's default: chosen to check its model, nothing
/// else set): the reads go through two-phase with one aggregator, the writes, which do not
/// interleave, are independent.
#[test]
fn romio_collective_programs() {
    check_with(
        "ROMIO ior collective strided",
        "ior_like",
        STRIDED,
        Some("romio321"),
    );
    check_with(
        "ROMIO checkpoints",
        "ckpt_strong",
        &["{d}/ck.dat", "1000003", "-R"],
        Some("romio321"),
    );
}

/// ior_like collective on a communicator of every rank made as `-C kind` says, into `file`.
fn on_comm<'a>(kind: &'a str, file: &'a str) -> [&'a str; 13] {
    [
        "-a", "mpiio", "-c", "-C", kind, "-t", "65536", "-b", "131072", "-s", "2", "-o", file,
    ]
}

/// IOR opens its file on a communicator it makes at start-up (`MPI_Comm_create` of the
/// world's group), and a split with one color and the rank as key is the same: every rank,
/// in the world's order, which the model takes as the world (`rsd::comms` rebuilds it).
/// Before, such files were left out of the model and the nested calls fitted: IOR's HDF5
/// and MPI-IO collective runs extrapolated to 32 ranks with the inputs' one aggregator
/// where OMPIO took four.
#[test]
fn ior_collective_on_a_communicator_of_every_rank() {
    for kind in ["create", "split"] {
        check(
            &format!("ior collective, -C {kind}"),
            "ior_like",
            &on_comm(kind, "{d}/cc.dat"),
        );
    }
}

/// The same program on a communicator of every rank in another order (keys reversed): the
/// model, which lays out the world's ranks, is not used, and `extrap` must not pass a fit of
/// the inputs' aggregators off as a derivation: it refuses, or says on stderr and in the
/// output's notes that the nested calls were fitted.
#[test]
fn a_communicator_in_another_order_is_not_taken_for_the_world() {
    let (inputs, dir) = inputs("ior_like", &on_comm("reverse", "{d}/rev.dat"), None);
    let out = dir.path().join("32.extrap.iotrex");
    let o = extrap(&inputs, 32, &out, &[]);
    let all = text(&o);
    assert!(
        all.contains("not made by every rank on a communicator of every rank in the world's order"),
        "the reason must be said:\n{all}"
    );
    if o.status.success() {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("fitted, not derived"),
            "a fit must be said on stderr:\n{all}"
        );
        let tf = rsd::TraceFile::read(&out).unwrap();
        assert!(
            tf.header
                .notes
                .iter()
                .any(|n| n.starts_with(extrap::FITTED_NOT_DERIVED)),
            "{:?}",
            tf.header.notes
        );
    }
}

/// The split collectives (`MPI_File_write_at_all_begin`/`_end`, read likewise) under the
/// defaults: OMPIO issues a begin's transfer as the rank's own asynchronous requests
/// (`aio_write`/`aio_read`), which the tracer records when the end collects them, as the
/// `pwrite`/`pread` each did: no byte is missing, no note says any is, and the calls
/// extrapolate like any others (the model derives blocking collectives only).
#[test]
fn split_collectives_under_the_defaults() {
    let args = [
        "-a",
        "mpiio",
        "-B",
        "-t",
        "65536",
        "-b",
        "131072",
        "-s",
        "2",
        "-R",
        "-o",
        "{d}/split.dat",
    ];
    let (inputs, dir) = inputs("ior_like", &args, None);
    for t in &inputs {
        let tf = rsd::TraceFile::read(t).unwrap();
        assert!(
            !tf.header.notes.iter().any(|n| n.contains("asynchronous")),
            "{}: {:?}",
            t.display(),
            tf.header.notes
        );
    }
    let data = dir.path().join("data");
    let real = trace(dir.path(), &data, 32, "ior_like", &args, None);
    let out = dir.path().join("32.extrap.iotrex");
    let o = extrap(&inputs, 32, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_identical("ior split collectives", &out, &real);
    // Rank 31 writes its two blocks of two transfers (segmented: 131072 B per rank and
    // segment), each begin's request collected by its end as one pwrite at the begin's offset.
    let tf = rsd::TraceFile::read(&out).unwrap();
    let ev = tf.trace.expand(31);
    let mut writes = Vec::new();
    for (i, e) in ev.iter().enumerate() {
        if e.op == rsd::Op::FileWriteAtAllBegin {
            let end = &ev[i + 1];
            assert_eq!(end.op, rsd::Op::FileWriteAtAllEnd);
            let p = end.children.first().expect("the end collects the request");
            assert_eq!(p.op, rsd::Op::Pwrite);
            writes.push((
                e.op.param(&e.params, rsd::Param::Offset),
                p.op.param(&p.params, rsd::Param::Offset),
                p.op.data_bytes(&p.params),
            ));
        }
    }
    let seg = 32 * 131072;
    let at = |s: i64, i: i64| 31 * 131072 + s * seg + i * 65536;
    let want: Vec<(i64, i64, u64)> = [(0, 0), (0, 1), (1, 0), (1, 1)]
        .iter()
        .map(|&(s, i)| (at(s, i), at(s, i), 65536))
        .collect();
    assert_eq!(writes, want, "rank 31's begins, the ends' pwrites");
}
