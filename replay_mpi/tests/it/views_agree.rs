//! One trace, the same bytes everywhere: real mini-app traces whose MPI-IO goes through views
//! with non-byte etypes and noncontiguous filetypes (vector, resized, subarray, darray,
//! hindexed, hindexed_block, indexed_block, dup) are exported to CODES and replayed under mpirun and
//! with threads, and every consumer must put each rank's bytes exactly where the application
//! put them (its own files say where: each rank writes its own byte value, holes stay 0).
//!
//! The traces are taken as they are, then stripped of their nested POSIX calls (what a trace
//! taken without POSIX tracing holds): the consumers must then derive the file regions from the
//! MPI-IO calls themselves, through the file table, which is where they used to disagree (the
//! CODES view added etype offsets as bytes and ignored the filetype).

use crate::common;
use common::*;
use replay::{CollectiveIo, CommMode, ComputeMode, Options, Root};
use rsd::trace::{Node, NodeKind};
use rsd::{Layer, TraceFile};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The trace without nested POSIX calls, and with POSIX tracing marked off.
fn strip_posix(mut tf: TraceFile) -> TraceFile {
    fn strip(nodes: &mut [Node]) {
        for n in nodes {
            match &mut n.kind {
                NodeKind::Event(e) => e.children.clear(),
                NodeKind::Loop(l) => strip(&mut l.body),
            }
        }
    }
    strip(&mut tf.trace.nodes);
    tf.header.layers.retain(|l| *l != Layer::Posix);
    tf
}

/// (rank, file name) -> byte offsets written, from a CODES recorder export in `dir`.
fn codes_writes(dir: &Path, nranks: u32) -> BTreeMap<(u32, String), BTreeSet<u64>> {
    let mut out: BTreeMap<(u32, String), BTreeSet<u64>> = BTreeMap::new();
    for r in 0..nranks {
        let log = std::fs::read_to_string(dir.join(format!("log.{r}"))).unwrap();
        let mut fds: HashMap<String, String> = HashMap::new();
        for line in log.lines() {
            // `T open (path, flags, mode) fd dur` and `T write (fd, 0x0, size, offset) ret dur`.
            let Some((call, rest)) = line.split_once(" (") else {
                continue;
            };
            let name = call.rsplit(' ').next().unwrap();
            let (args, tail) = rest.split_once(')').unwrap();
            let args: Vec<&str> = args.split(", ").collect();
            match name {
                "open" => {
                    let fd = tail.split_whitespace().next().unwrap().to_string();
                    let file = args[0].rsplit('/').next().unwrap().to_string();
                    fds.insert(fd, file);
                }
                "write" => {
                    let file = fds[args[0]].clone();
                    let (size, off): (u64, u64) =
                        (args[2].parse().unwrap(), args[3].parse().unwrap());
                    out.entry((r, file)).or_default().extend(off..off + size);
                }
                _ => {}
            }
        }
    }
    out
}

/// Traces `app` at 4 ranks into a fresh OUT, strips the trace, and checks that the CODES
/// export, the mpirun replay and the threads replay put every rank's bytes of `files` where the
/// application did. `marker(rank)` is the byte value the app writes for `rank`; `files` as in
/// [`replayed_bytes`] (each rank's write calls on the file, in bytes).
fn assert_regions_agree(
    app: &str,
    args: &[String],
    marker: fn(u32) -> u8,
    files: &[(&str, Vec<usize>)],
) {
    assert_regions_agree_by(app, args, marker, |f| f.to_vec(), files)
}

/// [`assert_regions_agree`] for an app whose files do not hold its markers themselves:
/// `markers(file)` gives each byte's marker (0 for a hole) from the file's content.
fn assert_regions_agree_by(
    app: &str,
    args: &[String],
    marker: fn(u32) -> u8,
    markers: fn(&[u8]) -> Vec<u8>,
    files: &[(&str, Vec<usize>)],
) {
    let t = tempfile::tempdir_in("/dev/shm").unwrap();
    let Some((tracer, bin)) = app_setup(app, t.path()) else {
        return;
    };
    let out = t.path().join("orig");
    std::fs::create_dir(&out).unwrap();
    let traced = t.path().join("app.4.iotrex");
    let mut all = vec![out.to_str().unwrap()];
    all.extend(args.iter().map(String::as_str));
    trace_app(4, &tracer, &bin, &all, &traced);
    let tf = strip_posix(replay::load(&traced, false).unwrap());
    assert!(
        !tf.header.layers.contains(&Layer::Posix),
        "the stripped trace says POSIX was not traced"
    );
    let trace = t.path().join("app.mpiio.4.iotrex");
    tf.write(&trace).unwrap();

    // What the application wrote: for each rank, the offsets holding its byte.
    let truth = |name: &str, r: u32| -> BTreeSet<u64> {
        let orig = markers(&std::fs::read(out.join(name)).unwrap());
        (0..orig.len() as u64)
            .filter(|i| orig[*i as usize] == marker(r))
            .collect()
    };

    // CODES: every write of every rank, per file.
    let codes = t.path().join("codes");
    let export = codes_bridge::ExportOptions::default();
    codes_bridge::export_file(&trace, &codes, &export).unwrap();
    let writes = codes_writes(&codes, 4);
    for (name, _) in files {
        for r in 0..4 {
            let got = writes
                .get(&(r, name.to_string()))
                .cloned()
                .unwrap_or_default();
            let want = truth(name, r);
            assert!(!want.is_empty(), "{app}: rank {r} wrote nothing to {name}");
            assert_eq!(
                got.len(),
                want.len(),
                "export codes: rank {r}'s bytes of {name}"
            );
            assert!(
                got == want,
                "export codes: rank {r}'s bytes of {name} are elsewhere"
            );
        }
    }

    // Both replays: exactly the bytes the application's layout implies.
    let check = |root: &Path, how: &str| {
        for (name, calls) in files {
            let orig = markers(&std::fs::read(out.join(name)).unwrap());
            let p = Root::new(root)
                .unwrap()
                .lexical(out.join(name).to_str().unwrap());
            let got = std::fs::read(&p).unwrap_or_else(|e| panic!("{how}: {}: {e}", p.display()));
            let want = replayed_bytes(&remarked(&orig, marker), calls);
            assert_eq!(got.len(), want.len(), "{how}: size of {name}");
            let bad = (0..want.len()).find(|i| got[*i] != want[*i]);
            assert!(bad.is_none(), "{how}: {name} differs first at byte {bad:?}");
        }
    };
    let root_m: PathBuf = t.path().join("root_mpi");
    replay_mpi(4, &trace, &root_m, &["--comm", "real", "--compute", "none"]);
    check(&root_m, "mpirun");
    let root_t = t.path().join("root_threads");
    std::fs::create_dir(&root_t).unwrap();
    let o = Options {
        compute: ComputeMode::None,
        collective_io: CollectiveIo::Ranks,
        ..opts(CommMode::Real)
    };
    let r = replay::run_threads(&tf, &Root::new(&root_t).unwrap(), &o).unwrap();
    assert_clean(&r);
    check(&root_t, "--threads");
}

/// `orig` with each rank's marker replaced by rank+1, the convention of [`replayed_bytes`].
fn remarked(orig: &[u8], marker: fn(u32) -> u8) -> Vec<u8> {
    let by: HashMap<u8, u8> = (0..4u32).map(|r| (marker(r), r as u8 + 1)).collect();
    orig.iter()
        .map(|b| by.get(b).copied().unwrap_or(0))
        .collect()
}

/// view_app: a resized vector of MPI_INT (etype MPI_INT) written collectively then into the
/// filetype's next copy, and a subarray of chars written with write_at_all.
#[test]
fn vector_resized_and_subarray_views_agree_across_export_and_replays() {
    let (nb, b, rows, cols) = (8usize, 16usize, 6usize, 24usize);
    let args: Vec<String> = [nb, b, rows, cols].iter().map(|v| v.to_string()).collect();
    assert_regions_agree(
        "view_app",
        &args,
        |r| r as u8 + 1,
        &[
            ("view_vec", vec![nb * b * 4, b * 4]),
            ("view_sub", vec![rows * cols]),
        ],
    );
}

/// hindexed_app: hindexed, hindexed_block, indexed_block and a dup'd type as filetypes, each
/// written collectively into its own region of one file.
#[test]
fn hindexed_family_views_agree_across_export_and_replays() {
    let (nb, block) = (4usize, 64usize);
    let args = vec![nb.to_string(), block.to_string()];
    assert_regions_agree(
        "hindexed_app",
        &args,
        |r| b'a' + (r % 26) as u8,
        &[("hindexed", vec![nb * block; 4])],
    );
}

/// darray.c: darray filetypes (BLOCK, CYCLIC(k) and NONE, C and Fortran order, 2-D and 3-D,
/// uneven blocks), one collective write per rank and file, then a collective read of the
/// whole file. Its ints say who wrote them (the top byte is the rank + 1): each byte's marker.
#[test]
fn darray_views_agree_across_export_and_replays() {
    fn markers(file: &[u8]) -> Vec<u8> {
        file.chunks(4)
            .flat_map(|w| {
                let who = if w.len() == 4 { w[3] } else { 0 };
                vec![who; w.len()]
            })
            .collect()
    }
    let files: Vec<(&str, Vec<usize>)> = [
        "darray_block_block_c",
        "darray_cyclic_block_f",
        "darray_none_cyclic_c",
        "darray_block_cyclic_none_c",
        "darray_cyclic_block_block_f",
    ]
    .iter()
    .map(|f| (*f, vec![usize::MAX]))
    .collect();
    assert_regions_agree_by("darray", &[], |r| r as u8 + 1, markers, &files);
}
