//! The header's provenance as `extrap::run` fills it (the scales used, the scales dropped as
//! inconsistent, the local queries set aside) and as `diff` reads it; a trace whose
//! provenance is in its notes only (written before the field) gives the same answers.

use extrap::diff::{DiffOptions, diff, render};
use extrap::patterns::{Pattern, events};
use extrap::{Extrapolated, Inconsistent, Input, Request};
use rsd::{Compressor, Op, Provenance, RawEvent, TraceFile};

/// The `Groups` pattern at `n` ranks, with `queries` MPI_Comm_size calls after MPI_Init and,
/// where `barrier`, a barrier before MPI_Finalize (another structure).
fn groups(n: u32, queries: usize, barrier: bool) -> TraceFile {
    groups_with(n, |_, calls| {
        let query = RawEvent::new(Op::CommSize, 0xe7a1_0001, vec![0, i64::from(n)]);
        calls.splice(1..1, std::iter::repeat_n(query, queries));
        if barrier {
            let at = calls.len() - 1;
            calls.insert(at, RawEvent::new(Op::Barrier, 0xe7a1_0002, vec![1]));
        }
    })
}

/// The `Groups` pattern at `n` ranks, each rank's calls changed by `edit` (given the rank).
fn groups_with(n: u32, edit: impl Fn(u32, &mut Vec<RawEvent>)) -> TraceFile {
    let per_rank = (0..n)
        .map(|r| {
            let mut calls = events(Pattern::Groups, r, n);
            edit(r, &mut calls);
            let mut c = Compressor::new(r);
            calls.iter().for_each(|e| c.push(e));
            c.finish()
        })
        .collect();
    let mut header = rsd::Header::new(n);
    header.command = vec!["groups".into()];
    header.clock = "synthetic".into();
    TraceFile {
        header,
        trace: rsd::merge_tree(per_rank).expect("disjoint ranks"),
    }
}

fn inputs(files: Vec<TraceFile>) -> Vec<Input> {
    files
        .into_iter()
        .map(|file| Input {
            name: format!("groups.{}.iotrex", file.header.nranks),
            file,
        })
        .collect()
}

/// `x` written and read back, as `iotrex extrap` leaves it on disk.
fn on_disk(x: &Extrapolated) -> TraceFile {
    let b = x.file.to_bytes().unwrap();
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 8);
    TraceFile::from_bytes(&b, std::path::Path::new("x.iotrex")).unwrap()
}

/// `f` as an extrapolation written before the field: its notes only.
fn old_style(f: &TraceFile) -> TraceFile {
    let mut old = f.clone();
    old.header.provenance = None;
    old
}

#[test]
fn an_extrapolation_says_its_scales_and_target() {
    let ins = inputs([4, 8, 12, 16].map(|n| groups(n, 1, false)).to_vec());
    let x = extrap::run(&Request::new(32), &ins).unwrap();
    let f = on_disk(&x);
    assert_eq!(
        f.header.provenance,
        Some(Provenance::new(&[4, 8, 12, 16], 32))
    );
    // The note stays for people, and says the same to an older reader.
    assert!(
        (f.header.notes.iter())
            .any(|n| n.starts_with("extrapolated from 4,8,12,16 ranks to 32 by iotrex extrap")),
        "{:?}",
        f.header.notes
    );
    let p = extrap::provenance::of(&f.header);
    assert_eq!(extrap::provenance::of(&old_style(&f).header), p);
    assert_eq!(extrap::provenance::of(&groups(4, 1, false).header), None);
}

#[test]
fn scales_dropped_as_inconsistent_are_in_the_provenance() {
    let mut files: Vec<TraceFile> = [4, 8, 16].map(|n| groups(n, 1, false)).to_vec();
    files.push(groups(12, 1, true));
    let req = Request::new(32).inconsistent(Inconsistent::Drop);
    let x = extrap::run(&req, &inputs(files)).unwrap();
    let f = on_disk(&x);
    let p = f.header.provenance.clone().expect("provenance");
    assert_eq!((p.scales.as_slice(), p.target), ([4, 8, 16].as_slice(), 32));
    assert_eq!(p.dropped, [12]);
    assert!(
        (f.header.notes.iter())
            .any(|n| n.starts_with("scales used: 4, 8 and 16; dropped (another structure): 12")),
        "{:?}",
        f.header.notes
    );
    assert_eq!(
        extrap::provenance::of(&old_style(&f).header),
        Some(p),
        "the notes of an older trace say the same"
    );
}

#[test]
fn local_queries_set_aside_are_in_the_provenance_and_diff_reads_them() {
    // One MPI_Comm_size at 4 and 12 ranks, three at 8 and 16: counts no model of the rank
    // count gives, so they are set aside.
    let ins = inputs(vec![
        groups(4, 1, false),
        groups(8, 3, false),
        groups(12, 1, false),
        groups(16, 3, false),
    ]);
    let x = extrap::run(&Request::new(32), &ins).unwrap();
    let f = on_disk(&x);
    let p = f.header.provenance.clone().expect("provenance");
    assert_eq!(p.set_aside, [Op::CommSize]);
    assert!(p.dropped.is_empty() && p.made_up_sites.is_empty() && !p.oracle_layout);
    let real = groups(32, 2, false);
    let opts = DiffOptions::default();
    let new = diff(&f, &real, &opts);
    assert!(new.identical, "{}", render(&new, "extrapolated", "real"));
    // Old style (the notes only) and typed only (the notes gone): the same answer.
    let old = diff(&old_style(&f), &real, &opts);
    assert_eq!(render(&old, "x", "real"), render(&new, "x", "real"));
    let mut typed = f.clone();
    typed.header.notes.clear();
    let only_typed = diff(&typed, &real, &opts);
    assert_eq!(render(&only_typed, "x", "real"), render(&new, "x", "real"));
    // Without either, the queries count against it.
    let mut neither = old_style(&f);
    neither.header.notes.clear();
    assert!(!diff(&neither, &real, &opts).identical);
}

/// Two outputs of ten time steps each after MPI_Init, an `MPI_Comm_size` before them; where
/// `progress` is `Some((rank, step))`, that rank asks `MPI_Comm_rank` before that step of the
/// second output, as a progress line printed by wall time does.
fn stepped(n: u32, progress: Option<(u32, usize)>) -> TraceFile {
    stepped_then(n, progress, false)
}

/// [`stepped`], with a barrier ahead of MPI_Finalize where `barrier`.
fn stepped_then(n: u32, progress: Option<(u32, usize)>, barrier: bool) -> TraceFile {
    groups_with(n, |r, calls| {
        let mut steps = vec![RawEvent::new(
            Op::CommSize,
            0xe7a1_0003,
            vec![0, i64::from(n)],
        )];
        for output in 0..2 {
            for step in 0..10 {
                if output == 1 && progress == Some((r, step)) {
                    steps.push(RawEvent::new(Op::CommRank, 0xe7a1_0004, vec![0, r.into()]));
                }
                steps.push(RawEvent::new(Op::Barrier, 0xe7a1_0005, vec![0]));
            }
            steps.push(RawEvent::new(
                Op::Allreduce,
                0xe7a1_0006,
                vec![1, 7, 3, 0, 4],
            ));
        }
        calls.splice(1..1, steps);
        if barrier {
            let at = calls.len() - 1;
            calls.insert(at, RawEvent::new(Op::Barrier, 0xe7a1_0002, vec![1]));
        }
    })
}

#[test]
fn a_query_that_splits_a_loop_away_from_the_first_difference_is_set_aside_alone() {
    // At 12 ranks rank 0 asked once, in the middle of the second output's steps: the outer
    // loop over the outputs is gone there, and the first difference (that loop against the
    // first output's steps) holds no query.
    let ins = inputs(vec![
        stepped(4, None),
        stepped(8, None),
        stepped(12, Some((0, 3))),
        stepped(16, None),
    ]);
    let x = extrap::run(&Request::new(32), &ins).unwrap();
    let p = on_disk(&x).header.provenance.clone().expect("provenance");
    // MPI_Comm_size agrees at every scale: kept.
    assert_eq!(p.set_aside, [Op::CommRank]);
    let real = stepped(32, Some((5, 7)));
    let d = diff(&on_disk(&x), &real, &DiffOptions::default());
    assert!(d.identical, "{}", render(&d, "extrapolated", "real"));
    // A structure the queries do not explain is still refused.
    let mut other = ins;
    other[3] = Input {
        name: "groups.16.iotrex".into(),
        file: groups(16, 0, true),
    };
    assert!(extrap::run(&Request::new(32), &other).is_err());
}

#[test]
fn a_query_only_the_real_run_makes_is_set_aside_by_diff_and_named() {
    // No input asked (the runs were quick); the real run's rank 5 asked in its second output
    // (it passed four seconds): the extrapolation cannot predict that call.
    let ins = inputs([4, 8, 12, 16].map(|n| stepped(n, None)).to_vec());
    let x = on_disk(&extrap::run(&Request::new(32), &ins).unwrap());
    assert!(x.header.provenance.as_ref().unwrap().set_aside.is_empty());
    let real = stepped(32, Some((5, 7)));
    let d = diff(&x, &real, &DiffOptions::default());
    let text = render(&d, "extrapolated", "real");
    assert!(d.identical, "{text}");
    let aside = d.set_aside.as_ref().expect("set aside");
    assert_eq!(
        (aside.ops.as_slice(), aside.calls),
        (["MPI_Comm_rank"].as_slice(), (0, 1))
    );
    assert_eq!(aside.unpredicted, ["MPI_Comm_rank"]);
    assert!(
        text.contains("no extrapolation set aside MPI_Comm_rank"),
        "{text}"
    );
    // Two real runs are compared call by call: the query counts against them.
    assert!(!diff(&stepped(32, None), &real, &DiffOptions::default()).identical);
    // A difference beyond the queries still shows.
    let other = stepped_then(32, Some((5, 7)), true);
    assert!(!diff(&x, &other, &DiffOptions::default()).identical);
}
