//! Exports of generated and hand-built traces, read back with codes_stats.

use codes_bridge::{
    CodesError, CodesStats, ExportOptions, Format, codes_stats, export, export_file,
};
use rsd::{Compressor, Header, Layer, Op, RawEvent, TraceFile};
use rsd_view::stats::summarize;
use rsd_view::synth::{BLOCK, COLLECTIVE_ITERS, SMALL};
use std::path::Path;

fn synth(nranks: u32, iters: u64) -> TraceFile {
    TraceFile {
        header: Header::new(nranks),
        trace: rsd_view::synth::spmd(nranks, iters),
    }
}

fn opts(format: Format, max_blocksize: Option<u64>) -> ExportOptions {
    ExportOptions {
        format,
        max_blocksize,
        force: false,
        nranks_check: false,
    }
}

/// The counts the documented mapping implies, from `iotrex stats` totals of a POSIX-traced
/// trace whose MPI-IO opens and closes have no nested calls and whose data calls do:
/// opens = open + openat + creat + fopen + MPI_File_open, closes likewise, barriers =
/// MPI_Barrier, reads/writes = the POSIX and stdio data calls (nested ones included, the
/// MPI-IO calls themselves not).
fn expected(tf: &TraceFile) -> CodesStats {
    let s = summarize(&tf.trace);
    let c = |ops: &[Op]| -> (u64, u64) {
        ops.iter().fold((0, 0), |acc, op| {
            let t = s.ops.get(&(op.layer(), *op)).cloned().unwrap_or_default();
            (acc.0 + t.count, acc.1 + t.bytes)
        })
    };
    let reads = c(&[Op::Read, Op::Pread, Op::Readv, Op::Preadv, Op::Fread]);
    let writes = c(&[
        Op::Write,
        Op::Pwrite,
        Op::Writev,
        Op::Pwritev,
        Op::Fwrite,
        Op::Fprintf,
    ]);
    CodesStats {
        ranks: s.ranks,
        num_opens: c(&[Op::Open, Op::Openat, Op::Creat, Op::Fopen, Op::FileOpen]).0,
        num_closes: c(&[Op::Close, Op::Fclose, Op::FileClose]).0,
        num_barriers: c(&[Op::Barrier]).0,
        total_delay: 0.0,
        num_reads: reads.0,
        read_size: reads.1,
        num_writes: writes.0,
        write_size: writes.1,
        warnings: Vec::new(),
    }
}

fn counts_only(mut s: CodesStats) -> CodesStats {
    s.total_delay = 0.0;
    s.warnings.clear();
    s
}

#[test]
fn synth_counts_match_stats_in_both_formats() {
    for (n, iters) in [(1, 1), (4, 10), (16, 7)] {
        let tf = synth(n, iters);
        let want = expected(&tf);
        assert_eq!(want.num_writes, u64::from(n) * iters + COLLECTIVE_ITERS + 1);
        for format in [Format::Recorder, Format::Iolang] {
            let dir = tempfile::tempdir().unwrap();
            let rep = export(&tf, dir.path(), &opts(format, None)).unwrap();
            let got = codes_stats(dir.path(), format).unwrap();
            assert_eq!(counts_only(got.clone()), want, "{format} n={n}");
            assert!(got.warnings.is_empty(), "{:?}", got.warnings);
            // The writer's own tally agrees with the loader's.
            assert_eq!(rep.counts.opens, got.num_opens);
            assert_eq!(rep.counts.writes, got.num_writes);
            assert_eq!(rep.counts.write_bytes, got.write_size);
            assert_eq!(rep.counts.barriers, got.num_barriers);
            assert_eq!(rep.counts.idle_ranks, 0);
            assert_eq!(rep.synthesized_opens, 0);
            assert!(rep.warnings.is_empty(), "{:?}", rep.warnings);
            let delay = rep.counts.delay_ns as f64 / 1e9;
            assert!(
                (got.total_delay - delay).abs() < 1e-9,
                "{format}: {} vs {delay}",
                got.total_delay
            );
            assert_eq!(
                rep.files,
                u64::from(n) + u64::from(format == Format::Iolang)
            );
        }
    }
}

#[test]
fn recorder_and_iolang_see_the_same_delays() {
    // Recorder drops what it cannot express; what it keeps plus what it drops is iolang's total.
    let tf = synth(8, 12);
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let rec = export(&tf, d1.path(), &opts(Format::Recorder, None)).unwrap();
    let iol = export(&tf, d2.path(), &opts(Format::Iolang, None)).unwrap();
    assert_eq!(iol.dropped_delay_ns, 0);
    assert!(rec.dropped_delay_ns > 0);
    assert_eq!(
        rec.counts.delay_ns + rec.dropped_delay_ns,
        iol.counts.delay_ns
    );
}

#[test]
fn max_blocksize_keeps_bytes_and_splits_exactly() {
    let (n, iters) = (8u32, 5u64);
    let tf = synth(n, iters);
    for format in [Format::Recorder, Format::Iolang] {
        let d0 = tempfile::tempdir().unwrap();
        export(&tf, d0.path(), &opts(format, None)).unwrap();
        let base = codes_stats(d0.path(), format).unwrap();
        // The recorder cap (2048 ops per rank) rules out the smallest sizes there.
        let sizes: &[u64] = match format {
            Format::Recorder => &[16_000, 256 << 10, 1 << 30],
            Format::Iolang => &[4096, 8192, 8191, 256 << 10, 1 << 30],
        };
        for &bs in sizes {
            let d = tempfile::tempdir().unwrap();
            let rep = export(&tf, d.path(), &opts(format, Some(bs))).unwrap();
            let s = codes_stats(d.path(), format).unwrap();
            assert_eq!(s.write_size, base.write_size, "{format} {bs}");
            assert_eq!(s.read_size, base.read_size);
            // Per rank: `iters` pwrites of SMALL; rank 0 also aggregates COLLECTIVE_ITERS
            // writes of n*BLOCK and one 64-byte fwrite.
            let pieces = |b: u64| b.div_ceil(bs);
            let want = u64::from(n) * iters * pieces(SMALL as u64)
                + COLLECTIVE_ITERS * pieces(u64::from(n) * BLOCK as u64)
                + pieces(64);
            assert_eq!(s.num_writes, want, "{format} {bs}");
            assert_eq!(rep.split_extra, want - base.num_writes);
            assert_eq!(
                (s.num_opens, s.num_closes, s.num_barriers),
                (base.num_opens, base.num_closes, base.num_barriers)
            );
            assert!((s.total_delay - base.total_delay).abs() < 1e-9);
        }
    }
}

/// A rank's program with the given (op, params, path, gap_ns, dur_ns).
fn trace_of(nranks: u32, posix_traced: bool, prog: &dyn Fn(u32) -> Vec<RawEvent>) -> TraceFile {
    let traces = (0..nranks)
        .map(|r| {
            let mut c = Compressor::new(r);
            for e in prog(r) {
                c.push(&e);
            }
            c.finish()
        })
        .collect();
    let mut header = Header::new(nranks);
    if !posix_traced {
        header.layers.retain(|l| *l != Layer::Posix);
    }
    TraceFile {
        header,
        trace: rsd::merge_tree(traces).unwrap(),
    }
}

fn ev(
    op: Op,
    site: u64,
    params: Vec<i64>,
    path: Option<&str>,
    gap_us: u64,
    dur_us: u64,
) -> RawEvent {
    let mut e = RawEvent::new(op, site, params);
    e.path = path.map(str::to_string);
    e.gap_ns = gap_us * 1_000;
    e.dur_ns = dur_us * 1_000;
    e
}

#[test]
fn delays_follow_the_mapping_and_the_recorder_loader() {
    let tf = trace_of(2, true, &|_| {
        vec![
            ev(Op::Init, 1, vec![], None, 50, 20),
            ev(Op::Open, 2, vec![0o101, 0o644, 3], Some("d/f"), 5, 1),
            ev(Op::Pwrite, 3, vec![3, 100, 0, 100], None, 100, 30),
            ev(Op::Barrier, 4, vec![1], None, 2, 7),
            ev(Op::Close, 5, vec![3], None, 3, 1),
            ev(Op::Finalize, 6, vec![], None, 40, 10),
        ]
    });
    // iolang: 75 (init + gap) before open, 100 before the write, 2 before the barrier, 3
    // before close (the barrier's own wait is simulated), 50 at the end: 230 us per rank.
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Iolang, None)).unwrap();
    assert_eq!(rep.counts.delay_ns, 2 * 230_000);
    let k = std::fs::read_to_string(d.path().join("rank1.kernel")).unwrap();
    let h = codes_bridge::hash::iolang_file_id("d/f");
    assert_eq!(
        k,
        format!(
            "r = getgrouprank -1;\nsleep 75000;\nopen {h};\nsleep 100000;\nwriteat {h}, 100, 0;\nsleep 2000;\nsync 0;\nsleep 3000;\nclose {h};\nsleep 50000;\nexit 0;\n"
        )
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("meta.txt")).unwrap(),
        "1 0 0 rank0.kernel\n1 1 1 rank1.kernel\n"
    );
    let s = codes_stats(d.path(), Format::Iolang).unwrap();
    assert!((s.total_delay - 460e-6).abs() < 1e-12, "{}", s.total_delay);

    // recorder: 75 and 100 are kept; the 2 before the barrier moves after it and, with the 3
    // before close, stays under 10 us, so it is carried and finally dropped with the last 50.
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    assert_eq!(rep.counts.delay_ns, 2 * 175_000);
    assert_eq!(rep.dropped_delay_ns, 2 * 55_000);
    let log = std::fs::read_to_string(d.path().join("log.0")).unwrap();
    assert_eq!(
        log,
        "1.000000000 iotrex_start\n\
         1.000075000 open (d/f, 65, 420) 3 0.000001000\n\
         1.000176000 write (3, 0x0, 100, 0) 100 0.000030000\n\
         BARRIER\n\
         1.000000000 close (3) 0 0.000001000\n"
    );
    let s = codes_stats(d.path(), Format::Recorder).unwrap();
    assert!((s.total_delay - 350e-6).abs() < 1e-9, "{}", s.total_delay);
    assert_eq!(
        (s.num_opens, s.num_writes, s.num_barriers, s.num_closes),
        (2, 2, 2, 2)
    );
}

#[test]
fn posix_off_maps_mpiio_to_posix_with_tracked_offsets() {
    // MPI_File_open with MPI_MODE_APPEND on an existing file, individual and explicit-offset
    // writes, a seek, a view: offsets come from the MPI file pointer.
    let tf = trace_of(3, false, &|r| {
        let r = i64::from(r);
        vec![
            ev(
                Op::FileOpen,
                1,
                vec![1, 1 | 8, 0],
                Some("out/a b.dat"),
                1,
                1,
            ),
            ev(
                Op::FileWriteAt,
                2,
                vec![0, r * 4096, 4096, 1, 4096],
                None,
                1,
                1,
            ),
            ev(Op::FileSeek, 3, vec![0, 100, 600], None, 1, 1),
            ev(Op::FileWrite, 4, vec![0, 10, 1, 10], None, 1, 1),
            ev(Op::FileWrite, 4, vec![0, 10, 1, 10], None, 1, 1),
            ev(Op::FileSetView, 5, vec![0, 1 << 20, 1, 1], None, 1, 1),
            ev(Op::FileReadAt, 6, vec![0, 8, 8, 1, 8], None, 1, 1),
            ev(Op::FileReadAll, 7, vec![0, 16, 1, 16], None, 1, 1),
            ev(Op::FileClose, 8, vec![0], None, 1, 1),
        ]
    });
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let log = std::fs::read_to_string(d.path().join("log.2")).unwrap();
    let io: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("write (") || l.contains("read ("))
        .collect();
    let args: Vec<String> = io
        .iter()
        .map(|l| l[l.find('(').unwrap()..=l.find(')').unwrap()].to_string())
        .collect();
    assert_eq!(
        args,
        [
            "(3, 0x0, 4096, 8192)",
            "(3, 0x0, 10, 100)",
            "(3, 0x0, 10, 110)",
            "(3, 0x0, 8, 1048584)",
            "(3, 0x0, 16, 1048576)",
        ]
    );
    // The path is percent-encoded so the loader does not split it at the space.
    assert!(log.contains(" open (out/a%20b.dat, 66, 420) 3 "), "{log}");
    let s = codes_stats(d.path(), Format::Recorder).unwrap();
    assert_eq!(
        (s.num_writes, s.write_size, s.num_reads, s.read_size),
        (9, 3 * 4116, 6, 3 * 24)
    );
}

#[test]
fn split_collectives_export_as_their_begins_and_seek_shared_moves_the_shared_pointer() {
    // A begin moves its bytes where its blocking collective would; its end and the shared
    // pointer's seek move none, but the seek places the ordered begin that follows.
    let tf = trace_of(2, false, &|r| {
        let r = i64::from(r);
        vec![
            ev(Op::FileOpen, 1, vec![0, 1 | 8, 0], Some("out/s.dat"), 1, 1),
            ev(
                Op::FileWriteAtAllBegin,
                2,
                vec![0, r * 64, 64, 1, 64],
                None,
                1,
                1,
            ),
            ev(Op::FileWriteAtAllEnd, 3, vec![0], None, 1, 1),
            ev(Op::FileReadAllBegin, 4, vec![0, 32, 1, 32], None, 1, 1),
            ev(Op::FileReadAllEnd, 5, vec![0], None, 1, 1),
            ev(Op::FileSeekShared, 6, vec![0, 1000, 600], None, 1, 1),
            ev(Op::FileWriteOrderedBegin, 7, vec![0, 8, 1, 8], None, 1, 1),
            ev(Op::FileWriteOrderedEnd, 8, vec![0], None, 1, 1),
            ev(Op::FileClose, 9, vec![0], None, 1, 1),
        ]
    });
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let log = std::fs::read_to_string(d.path().join("log.1")).unwrap();
    let args: Vec<String> = log
        .lines()
        .filter(|l| l.contains("write (") || l.contains("read ("))
        .map(|l| l[l.find('(').unwrap()..=l.find(')').unwrap()].to_string())
        .collect();
    // Offline, each rank's shared pointer is its own: rank 1's ordered write lands at 1000.
    assert_eq!(
        args,
        ["(3, 0x0, 64, 64)", "(3, 0x0, 32, 0)", "(3, 0x0, 8, 1000)"]
    );
}

#[test]
fn recorder_logs_avoid_every_loader_quirk() {
    let tf = synth(5, 9);
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, Some(300_000))).unwrap();
    for r in 0..5 {
        let log = std::fs::read_to_string(d.path().join(format!("log.{r}"))).unwrap();
        let mut open_fds = std::collections::HashSet::new();
        assert!(log.starts_with("1.000000000 iotrex_start\n"));
        for l in log.lines() {
            assert!(!l.is_empty(), "blank line in log.{r}");
            let first = l.split([' ', ',']).next().unwrap();
            assert_ne!(first, "0", "bare 0 timestamp: {l}");
            if first != "BARRIER" {
                assert!(first.parse::<f64>().unwrap() >= 1.0, "{l}");
            }
            let args = |l: &str| -> Vec<i64> {
                let a = &l[l.find('(').unwrap() + 1..l.find(')').unwrap()];
                a.split(", ").map(|x| x.parse().unwrap_or(-1)).collect()
            };
            if l.contains(" open (") {
                let a = args(l);
                assert!(a[1] & 0o100 != 0, "open without O_CREAT: {l}");
                let fd: i64 = l.split(' ').nth(5).unwrap().parse().unwrap();
                assert!(open_fds.insert(fd), "fd {fd} reused before its close: {l}");
            } else if l.contains(" close (") {
                assert!(open_fds.remove(&args(l)[0]), "{l}");
            } else if l.contains(" write (") || l.contains(" read (") {
                let a = args(l);
                assert_eq!(a.len(), 4, "{l}");
                assert!(open_fds.contains(&a[0]), "{l}");
                assert!(a[2] <= 300_000, "{l}");
            }
        }
    }
}

#[test]
fn idle_ranks_get_an_open_and_nranks_check_refuses_them() {
    // Header says 6 ranks, only 4 have events.
    let mut tf = synth(4, 2);
    tf.header.nranks = 6;
    let e = export(
        &tf,
        tempfile::tempdir().unwrap().path(),
        &ExportOptions {
            nranks_check: true,
            ..opts(Format::Recorder, None)
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            CodesError::NranksMismatch {
                header: 6,
                rank: 4,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("--nranks-check"));

    let want = expected(&tf);
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    assert_eq!(rep.counts.idle_ranks, 2);
    let s = codes_stats(d.path(), Format::Recorder).unwrap();
    assert_eq!(s.ranks, 6);
    assert_eq!(s.num_opens, want.num_opens + 2);
    assert_eq!(s.num_closes, want.num_closes + 2);
    assert_eq!(s.num_writes, want.num_writes);
    assert_eq!(
        std::fs::read_to_string(d.path().join("log.5"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    // Ranks without events still have unmatched barriers: the export says so.
    assert!(
        rep.warnings.iter().any(|w| w.contains("barriers")),
        "{:?}",
        rep.warnings
    );

    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Iolang, None)).unwrap();
    let s = codes_stats(d.path(), Format::Iolang).unwrap();
    assert_eq!((s.ranks, s.num_opens), (6, want.num_opens));
}

#[test]
fn non_empty_directory_needs_force_and_force_replaces_old_ranks() {
    let d = tempfile::tempdir().unwrap();
    export(&synth(8, 2), d.path(), &opts(Format::Recorder, None)).unwrap();
    std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
    let e = export(&synth(4, 2), d.path(), &opts(Format::Recorder, None)).unwrap_err();
    assert!(matches!(e, CodesError::DirNotEmpty { .. }));
    assert!(e.to_string().contains("--force"), "{e}");
    assert!(e.to_string().contains(&d.path().display().to_string()));
    export(
        &synth(4, 2),
        d.path(),
        &ExportOptions {
            force: true,
            ..opts(Format::Recorder, None)
        },
    )
    .unwrap();
    assert_eq!(codes_stats(d.path(), Format::Recorder).unwrap().ranks, 4);
    assert!(!d.path().join("log.4").exists());
    assert_eq!(
        std::fs::read_to_string(d.path().join("notes.txt")).unwrap(),
        "mine"
    );
    // An empty existing directory and a missing one are fine.
    let e = tempfile::tempdir().unwrap();
    export(&synth(2, 1), e.path(), &opts(Format::Iolang, None)).unwrap();
    export(
        &synth(2, 1),
        &e.path().join("new/sub"),
        &opts(Format::Iolang, None),
    )
    .unwrap();
    assert_eq!(
        codes_stats(&e.path().join("new/sub/meta.txt"), Format::Iolang)
            .unwrap()
            .ranks,
        2
    );
}

#[test]
fn too_many_ops_for_recorder_suggests_iolang() {
    // 2100 pwrites on every rank: over the recorder loader's 2048.
    let tf = synth(2, 2100);
    let d = tempfile::tempdir().unwrap();
    let e = export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap_err();
    assert!(
        matches!(
            e,
            CodesError::TooManyOps {
                rank: 0,
                limit: 2048,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("--format iolang"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let rep = export(
        &tf,
        d.path(),
        &ExportOptions {
            force: true,
            ..opts(Format::Iolang, None)
        },
    )
    .unwrap();
    assert!(rep.max_ops_per_rank > 2048);
    assert_eq!(
        codes_stats(d.path(), Format::Iolang).unwrap().num_writes,
        2 * 2100 + 3 + 1
    );

    // Splitting can push a rank over too: 1 MiB collective pieces of 1 KiB.
    let e = export(
        &synth(2, 1),
        tempfile::tempdir().unwrap().path(),
        &opts(Format::Recorder, Some(1024)),
    )
    .unwrap_err();
    assert!(matches!(e, CodesError::TooManyOps { .. }));
    // Exactly at the cap is fine: 2048 ops (open, 2046 writes, close).
    let tf = trace_of(1, true, &|_| {
        let mut v = vec![ev(Op::Open, 1, vec![0o101, 0o644, 3], Some("f"), 0, 0)];
        v.extend((0..2046).map(|i| ev(Op::Pwrite, 2, vec![3, 1, i, 1], None, 0, 0)));
        v.push(ev(Op::Close, 3, vec![3], None, 0, 0));
        v
    });
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    assert_eq!(rep.max_ops_per_rank, 2048);
    let s = codes_stats(d.path(), Format::Recorder).unwrap();
    assert_eq!((s.num_writes, s.num_closes), (2046, 1));
    assert!(s.warnings.is_empty());
}

#[test]
fn bad_inputs_are_refused_with_the_input_named() {
    // Corrupt trace.
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.iotrex");
    std::fs::write(&bad, b"not a trace at all, just bytes").unwrap();
    let e = export_file(&bad, &d.path().join("out"), &opts(Format::Recorder, None)).unwrap_err();
    assert!(matches!(e, CodesError::Trace(_)), "{e}");
    assert!(e.to_string().contains("bad.iotrex"), "{e}");
    // A good trace file goes through.
    let good = d.path().join("good.iotrex");
    synth(3, 2).write(&good).unwrap();
    let rep = export_file(&good, &d.path().join("out"), &opts(Format::Iolang, None)).unwrap();
    assert_eq!(rep.ranks, 3);

    // More ranks than the output directory can take: CODES' path buffers are fixed-size.
    let long = d
        .path()
        .join("x".repeat(200))
        .join("y".repeat(200))
        .join("z".repeat(150));
    let e = export(&synth(2, 1), &long, &opts(Format::Recorder, None)).unwrap_err();
    assert!(matches!(e, CodesError::TooManyRanks { .. }), "{e}");
    assert!(e.to_string().contains("-o"), "{e}");
    // A directory path of exactly `len` bytes, in components the file system accepts.
    let deep = |c: &str, len: usize| {
        let mut p = d.path().to_path_buf();
        while p.display().to_string().len() + 1 < len {
            let room = len - p.display().to_string().len() - 1;
            p = p.join(c.repeat(room.min(200)));
        }
        assert_eq!(p.display().to_string().len(), len);
        p
    };
    let mut tf = synth(2, 1);
    // 495 + "/rank1.kernel" fits CODES' 512 bytes...
    export(&tf, &deep("m", 495), &opts(Format::Iolang, None)).unwrap();
    // ...but "/rank9999999.kernel" does not.
    tf.header.nranks = 10_000_000;
    let e = export(&tf, &deep("n", 495), &opts(Format::Iolang, None)).unwrap_err();
    assert!(matches!(e, CodesError::TooManyRanks { .. }), "{e}");

    // No ranks; output path that is a file; codes-stats on nothing.
    tf.header.nranks = 0;
    assert!(matches!(
        export(&tf, &d.path().join("o2"), &opts(Format::Iolang, None)),
        Err(CodesError::NoRanks)
    ));
    let e = export(&synth(1, 1), &bad, &opts(Format::Recorder, None)).unwrap_err();
    assert!(matches!(e, CodesError::NotADirectory { .. }), "{e}");
    let e = codes_stats(&d.path().join("nothing"), Format::Recorder).unwrap_err();
    assert!(e.to_string().contains("nothing"), "{e}");
    let e = codes_stats(d.path(), Format::Iolang).unwrap_err();
    assert!(e.to_string().contains("meta.txt"), "{e}");
    assert!(
        "xml"
            .parse::<Format>()
            .unwrap_err()
            .to_string()
            .contains("--format")
    );
}

#[test]
fn stats_serialize_with_codes_names() {
    let tf = synth(2, 3);
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let s = codes_stats(d.path(), Format::Recorder).unwrap();
    let j = serde_json::to_value(&s).unwrap();
    for k in [
        "NUM_OPENS",
        "NUM_CLOSES",
        "NUM_BARRIERS",
        "TOTAL_DELAY",
        "NUM_READS",
        "READ_SIZE",
        "NUM_WRITES",
        "WRITE_SIZE",
    ] {
        assert!(j.get(k).is_some(), "{k} missing in {j}");
    }
    assert_eq!(j["NUM_WRITES"], 2 * 3 + 3 + 1);
    let text = s.to_string();
    assert!(text.starts_with("NUM_OPENS:       5\n"), "{text}");
    assert!(text.contains("TOTAL_DELAY:     0.0"), "{text}");
    let _ = Path::new(".");
}

/// The calls of the rest of the MPI API (persistent requests, probes, tests, nonblocking and
/// neighbourhood collectives, topology and intercommunicator creation) export as delays: each
/// one's gap and duration, in both formats, with the I/O around them unchanged.
#[test]
fn the_rest_of_the_mpi_api_exports_as_delays() {
    let first = Op::ALL
        .iter()
        .position(|o| *o == Op::SendInit)
        .expect("appended ops");
    // The MPI batch ends at MPI_Intercomm_merge; the later file calls were appended after it.
    let last = Op::ALL
        .iter()
        .position(|o| *o == Op::IntercommMerge)
        .expect("appended ops");
    let new: Vec<Op> = Op::ALL[first..=last].to_vec();
    assert!(new.len() >= 57, "{}", new.len());
    let tf = trace_of(2, true, &|_| {
        let mut v = vec![
            ev(Op::Init, 1, vec![], None, 1, 2),
            ev(Op::Open, 2, vec![0o101, 0o644, 3], Some("d/f"), 1, 2),
        ];
        for (i, op) in new.iter().enumerate() {
            // MPI_COMM_SELF (1) everywhere an id goes: no barrier of the world among them.
            v.push(ev(
                *op,
                10 + i as u64,
                vec![1; op.params().len()],
                None,
                1,
                2,
            ));
        }
        v.push(ev(Op::Pwrite, 3, vec![3, 100, 0, 100], None, 1, 2));
        v.push(ev(Op::Close, 4, vec![3], None, 1, 2));
        v.push(ev(Op::Finalize, 5, vec![], None, 1, 2));
        v
    });
    let n = new.len() as u64;
    // Every gap, and the duration of every MPI call (Init, Finalize and the new ones).
    let per_rank_ns = ((n + 5) + 2 * (n + 2)) * 1_000;
    let want = expected(&tf);
    assert_eq!(
        (want.num_opens, want.num_writes, want.num_barriers),
        (2, 2, 0)
    );
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Iolang, None)).unwrap();
    assert_eq!(rep.counts.delay_ns, 2 * per_rank_ns);
    let got = codes_stats(d.path(), Format::Iolang).unwrap();
    assert_eq!(counts_only(got), want);
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let got = codes_stats(d.path(), Format::Recorder).unwrap();
    assert_eq!(counts_only(got), want);
}

/// The local queries (MPI_Comm_rank, MPI_Comm_size, the Cartesian queries, the processor name,
/// MPI_Finalized, MPI_Comm_set_errhandler) move nothing: each exports as a delay of its gap and
/// duration in both formats, no open, read, write or barrier of its own, and the world's
/// barrier after them is still a barrier (none of them makes a sub-communicator).
#[test]
fn local_queries_export_as_delays() {
    use rsd::mpi::{COMM_WORLD, PROC_NULL, errhandler};
    use rsd::op::args;
    let tf = trace_of(2, true, &|r| {
        let r = i64::from(r);
        let mut cart_get = args::cart_get(2, 2, 1);
        cart_get.extend([2, 0, r]);
        let mut cart_rank = args::cart_rank(2, 1, 1 - r);
        cart_rank.extend([1 - r]);
        let (s, d) = if r == 0 {
            (PROC_NULL, 1)
        } else {
            (-1, PROC_NULL)
        };
        vec![
            ev(Op::Init, 1, vec![], None, 1, 2),
            ev(Op::CommRank, 2, args::comm_rank(COMM_WORLD, r), None, 1, 2),
            ev(Op::CommSize, 3, args::comm_size(COMM_WORLD, 2), None, 1, 2),
            ev(Op::Open, 4, vec![0o101, 0o644, 3], Some("d/f"), 1, 2),
            ev(Op::CartCreate, 5, args::cart_create(0, 0, r, 2), None, 1, 2),
            ev(Op::CartGet, 6, cart_get, None, 1, 2),
            ev(Op::CartRank, 7, cart_rank, None, 1, 2),
            ev(
                Op::CartShift,
                8,
                args::cart_shift(2, 0, 1, s, d),
                None,
                1,
                2,
            ),
            ev(
                Op::GetProcessorName,
                9,
                args::get_processor_name(9),
                None,
                1,
                2,
            ),
            ev(Op::Finalized, 10, args::finalized(0), None, 1, 2),
            ev(
                Op::CommSetErrhandler,
                11,
                args::comm_set_errhandler(2, errhandler::ERRORS_RETURN),
                None,
                1,
                2,
            ),
            ev(Op::Pwrite, 12, vec![3, 100, 0, 100], None, 1, 2),
            ev(Op::Barrier, 13, args::barrier(COMM_WORLD), None, 1, 2),
            ev(Op::Close, 14, vec![3], None, 1, 2),
            ev(Op::Finalize, 15, vec![], None, 1, 2),
        ]
    });
    let want = expected(&tf);
    assert_eq!(
        (
            want.num_opens,
            want.num_writes,
            want.write_size,
            want.num_barriers
        ),
        (2, 2, 200, 2)
    );
    // Every gap, and the duration of every MPI call but the barrier's (whose wait the
    // simulator's synchronisation reproduces): Init, the creation, the eight queries and
    // Finalize.
    let per_rank_ns = 15 * 1_000 + 11 * 2_000;
    let d = tempfile::tempdir().unwrap();
    let rep = export(&tf, d.path(), &opts(Format::Iolang, None)).unwrap();
    assert_eq!(rep.counts.delay_ns, 2 * per_rank_ns);
    let got = codes_stats(d.path(), Format::Iolang).unwrap();
    assert_eq!(counts_only(got), want);
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let got = codes_stats(d.path(), Format::Recorder).unwrap();
    assert_eq!(counts_only(got), want);
}

/// CODES simulates no page cache and no write-back: the cache and durability calls
/// (`posix_fadvise`, `readahead`, `sync_file_range`, `syncfs`, `sync`, `madvise`, `fdatasync`,
/// `fcntl(F_SETFL)`) export as delays of their gap and duration in both formats. iolang's
/// `sync` is a barrier of all ranks, so a POSIX `sync` must not become one (ranks that sync
/// at different points would hang the simulation); an O_DIRECT open keeps its flag in the
/// recorder log's open, which the loader reads for O_CREAT only.
#[test]
fn cache_and_durability_calls_export_as_delays_never_as_barriers() {
    use rsd::op::args;
    let direct = 0o40000 | 0o102; // O_DIRECT | O_CREAT | O_RDWR
    let tf = trace_of(2, true, &|r| {
        let mut v = vec![
            ev(Op::Open, 2, vec![direct, 0o644, 3], Some("d/f"), 1, 2),
            ev(Op::Pwrite, 3, vec![3, 4096, 0, 4096], None, 1, 2),
            ev(Op::Fdatasync, 4, args::fdatasync(3), None, 1, 2),
            ev(
                Op::SyncFileRange,
                5,
                args::sync_file_range(3, 0, 4096, 7, 0),
                None,
                1,
                2,
            ),
            ev(Op::Fadvise, 6, args::fadvise(3, 0, 0, 4, 0), None, 1, 2),
            ev(Op::Readahead, 7, args::readahead(3, 0, 4096, 0), None, 1, 2),
            ev(Op::Syncfs, 8, args::syncfs(3, 0), None, 1, 2),
            ev(Op::Madvise, 9, args::madvise(3, 0, 4096, 3, 0), None, 1, 2),
            ev(Op::Fcntl, 10, vec![3, 4, 0, 0o40000], None, 1, 2),
        ];
        // Only rank 0 syncs: a barrier of its own would wait for rank 1 forever.
        if r == 0 {
            v.push(ev(Op::Sync, 11, args::sync(), None, 1, 2));
        }
        v.push(ev(Op::Pread, 12, vec![3, 4096, 0, 4096], None, 1, 2));
        v.push(ev(Op::Close, 13, vec![3], None, 1, 2));
        v
    });
    let want = expected(&tf);
    assert_eq!(
        (
            want.num_opens,
            want.num_reads,
            want.num_writes,
            want.num_barriers
        ),
        (2, 2, 2, 0)
    );
    for format in [Format::Iolang, Format::Recorder] {
        let d = tempfile::tempdir().unwrap();
        let rep = export(&tf, d.path(), &opts(format, None)).unwrap();
        // Every gap (12 calls on rank 0, 11 on rank 1) and the durations of the calls that
        // are not opens, reads, writes or closes (rank 0: 8, rank 1: 7).
        // The recorder loader drops what is left after the last operation (reported).
        assert_eq!(
            rep.counts.delay_ns + rep.dropped_delay_ns,
            (12 + 8 * 2 + 11 + 7 * 2) * 1_000,
            "{format:?}"
        );
        let got = codes_stats(d.path(), format).unwrap();
        assert_eq!(counts_only(got), want, "{format:?}");
    }
    let d = tempfile::tempdir().unwrap();
    export(&tf, d.path(), &opts(Format::Recorder, None)).unwrap();
    let log = std::fs::read_to_string(d.path().join("log.0")).unwrap();
    assert!(log.contains(&format!("open (d/f, {direct}, 420)")), "{log}");
}
