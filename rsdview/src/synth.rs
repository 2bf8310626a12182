//! Synthetic traces of a typical SPMD I/O program, for tests, benchmarks and the demo.
//!
//! Each rank: `MPI_Init`; a file per process written in a loop (`out/file_<rank>`, 8 KiB per
//! iteration); a shared file written collectively, segmented by rank, where rank 0 aggregates
//! one POSIX write per call as OMPIO and ROMIO do; a barrier; rank 0 alone writes a log with
//! stdio; `MPI_Finalize`. Timing is pseudo-random but deterministic.

use rsd::compress::Compressor;
use rsd::merge::merge_tree;
use rsd::op::Op;
use rsd::trace::{RawEvent, Trace};

/// Bytes per POSIX write in the file-per-process phase.
pub const SMALL: i64 = 8192;
/// Bytes per rank per collective write.
pub const BLOCK: i64 = 1 << 20;
/// Iterations of the collective phase.
pub const COLLECTIVE_ITERS: u64 = 3;

fn ev(op: Op, site: u64, params: Vec<i64>, t: &mut u64) -> RawEvent {
    // xorshift for reproducible, varied timing.
    *t ^= *t << 13;
    *t ^= *t >> 7;
    *t ^= *t << 17;
    let mut e = RawEvent::new(op, 0x5157_0000 + site, params);
    e.gap_ns = 1_000 + *t % 5_000;
    e.dur_ns = 200 + (*t >> 20) % 2_000;
    e
}

/// Calls `f` with each call of `rank` in the synthetic program, without storing them.
pub fn for_each_event(rank: u32, nranks: u32, iters: u64, f: &mut dyn FnMut(&RawEvent)) {
    let r = rank as i64;
    let n = nranks as i64;
    let mut t = 0x9e37_79b9_7f4a_7c15 ^ (rank as u64 + 1);
    f(&ev(Op::Init, 1, vec![], &mut t));
    let mut open = ev(Op::Open, 2, vec![0o1101, 0o644, 3], &mut t);
    open.path = Some(format!("out/file_{rank}"));
    f(&open);
    for i in 0..iters as i64 {
        f(&ev(Op::Pwrite, 3, vec![3, SMALL, i * SMALL, SMALL], &mut t));
    }
    f(&ev(Op::Close, 4, vec![3], &mut t));
    // As the tracer records them: comm 0 is MPI_COMM_WORLD, amode 5 is Open MPI's
    // MPI_MODE_CREATE | MPI_MODE_WRONLY.
    let mut fo = ev(Op::FileOpen, 5, vec![0, 5, 0], &mut t);
    fo.path = Some("out/shared.dat".into());
    f(&fo);
    for i in 0..COLLECTIVE_ITERS as i64 {
        let off = (i * n + r) * BLOCK;
        let mut w = ev(Op::FileWriteAtAll, 6, vec![0, off, BLOCK, 1, BLOCK], &mut t);
        if rank == 0 {
            w.children.push(ev(
                Op::Pwrite,
                7,
                vec![4, n * BLOCK, i * n * BLOCK, n * BLOCK],
                &mut t,
            ));
        }
        f(&w);
    }
    f(&ev(Op::FileClose, 8, vec![0], &mut t));
    f(&ev(Op::Barrier, 9, vec![0], &mut t));
    if rank == 0 {
        let mut fo = ev(
            Op::Fopen,
            10,
            vec![rsd::op::fopen_mode::encode("w"), 5],
            &mut t,
        );
        fo.path = Some("out/log.txt".into());
        f(&fo);
        f(&ev(Op::Fwrite, 11, vec![5, 1, 64, 64], &mut t));
        f(&ev(Op::Fclose, 12, vec![5], &mut t));
    }
    f(&ev(Op::Finalize, 13, vec![], &mut t));
}

/// All calls of `rank`, in order.
pub fn events(rank: u32, nranks: u32, iters: u64) -> Vec<RawEvent> {
    let mut v = Vec::new();
    for_each_event(rank, nranks, iters, &mut |e| v.push(e.clone()));
    v
}

/// The compressed trace of one rank.
pub fn rank_trace(rank: u32, nranks: u32, iters: u64) -> Trace {
    let mut c = Compressor::new(rank);
    for_each_event(rank, nranks, iters, &mut |e| c.push(e));
    c.finish()
}

/// The merged trace of all ranks, through a binary radix tree of merges.
pub fn spmd(nranks: u32, iters: u64) -> Trace {
    let traces = (0..nranks).map(|r| rank_trace(r, nranks, iters)).collect();
    merge_tree(traces).expect("synthetic ranks are disjoint")
}

/// A program whose ranks differ in loop counts, sizes, files and which calls they make: rank `r`
/// writes `(r % 3 + 1)` KiB `r / 2 + 1` times to a shared file, opens a lock file of its
/// own, and every fifth rank writes a log.
pub fn uneven(nranks: u32) -> Trace {
    let traces = (0..nranks)
        .map(|r| {
            let mut c = Compressor::new(r);
            let ev = |op, site, params: Vec<i64>, path: Option<String>| RawEvent {
                path,
                ..RawEvent::new(op, site, params)
            };
            c.push(&ev(
                Op::Open,
                1,
                vec![0o101, 0o644, 3],
                Some(format!("lock.{r}")),
            ));
            c.push(&ev(Op::Open, 2, vec![0o1, 0o644, 4], Some("shared".into())));
            let size = (r as i64 % 3 + 1) * 1024;
            for i in 0..(r / 2 + 1) as i64 {
                c.push(&ev(Op::Pwrite, 3, vec![4, size, i * size, size], None));
            }
            if r % 5 == 0 {
                c.push(&ev(Op::Write, 4, vec![5, 40, 40], None));
            }
            c.finish()
        })
        .collect();
    rsd::merge::merge_tree(traces).expect("disjoint ranks")
}
