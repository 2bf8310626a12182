//! Synthetic programs for tests and benchmarks: one I/O pattern each, traced per rank through
//! `rsd`'s compressor and merged as the tracer merges, at any rank count.
//!
//! They stand in for real mini-app traces where a pattern must be known exactly: the
//! extrapolation of the traces at 4, 8, 12 and 16 ranks must equal the directly generated
//! trace at 32 or 64, and patterns the models cannot express must be refused.

use rsd::op::Op;
use rsd::trace::{RawEvent, Trace};
use rsd::{Compressor, merge_tree};

/// Bytes per block.
pub const B: i64 = 1 << 20;
/// Total iterations of the strong-scaling pattern, shared by all ranks.
pub const STRONG_TOTAL: i64 = 960;
/// The extra offset of odd ranks in the plugin pattern.
pub const ODD_SHIFT: i64 = 4096;

/// The patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// `rsd_view::synth::spmd` with 10 iterations: weak scaling, file per process, collective
    /// writes with rank-0 aggregation, rank-0 stdio.
    Spmd,
    /// Strong scaling: `960/n` writes per rank into a shared file, contiguous per rank.
    Strong,
    /// N-to-N/k: groups of 4 ranks share `out/file_<rank/4>`, each writing its segment.
    Groups,
    /// Each rank writes its own file, then reads back its neighbour's: `out/file.%08d` of
    /// `(rank+1) % n` at offset `((rank+1) % n) * B`.
    Neighbour,
    /// Offsets from a hash of the rank and n: no exact model can predict them.
    Random,
    /// Offset `rank*B` for even ranks and `rank*B + 4096` for odd ones: only a plugin model
    /// expresses it.
    EvenOdd,
}

impl Pattern {
    /// Every pattern that must extrapolate with the built-in models.
    pub const EXACT: [Pattern; 4] = [
        Pattern::Spmd,
        Pattern::Strong,
        Pattern::Groups,
        Pattern::Neighbour,
    ];
}

fn ev(op: Op, site: u64, params: Vec<i64>, rank: u32, i: u64) -> RawEvent {
    let mut e = RawEvent::new(op, 0xe7a0_0000 + site, params);
    // Timing with a known law per rank count: duration 2000 + 64000/n ns is set by the
    // caller where it matters; a small deterministic wobble elsewhere.
    e.gap_ns = 1_000 + (rank as u64 * 7 + i * 13) % 50;
    e.dur_ns = 500;
    e
}

fn with_path(mut e: RawEvent, p: String) -> RawEvent {
    e.path = Some(p);
    e
}

fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The calls of `rank` in a run of `n` ranks.
pub fn events(p: Pattern, rank: u32, n: u32) -> Vec<RawEvent> {
    if p == Pattern::Spmd {
        return rsd_view::synth::events(rank, n, 10);
    }
    let (r, nn) = (rank as i64, n as i64);
    let mut v = vec![ev(Op::Init, 1, vec![], rank, 0)];
    match p {
        Pattern::Spmd => unreachable!(),
        Pattern::Strong => {
            let per = STRONG_TOTAL / nn;
            v.push(with_path(
                ev(Op::Open, 2, vec![0o101, 0o644, 3], rank, 0),
                "out/shared.dat".into(),
            ));
            for i in 0..per {
                let mut e = ev(
                    Op::Pwrite,
                    3,
                    vec![3, B, (r * per + i) * B, B],
                    rank,
                    i as u64,
                );
                // Per-call time shrinks with the rank count: 2000 + 64000/n ns.
                e.dur_ns = 2_000 + 64_000 / n as u64;
                v.push(e);
            }
            v.push(ev(Op::Close, 4, vec![3], rank, 0));
        }
        Pattern::Groups => {
            v.push(with_path(
                ev(Op::Open, 2, vec![0o101, 0o644, 3], rank, 0),
                format!("out/file_{}", rank / 4),
            ));
            for i in 0..8 {
                v.push(ev(
                    Op::Pwrite,
                    3,
                    vec![3, B, (i * 4 + r % 4) * B, B],
                    rank,
                    i as u64,
                ));
            }
            v.push(ev(Op::Close, 4, vec![3], rank, 0));
        }
        Pattern::Neighbour => {
            v.push(with_path(
                ev(Op::Open, 2, vec![0o101, 0o644, 3], rank, 0),
                format!("out/file.{rank:08}"),
            ));
            v.push(ev(Op::Pwrite, 3, vec![3, B, r * B, B], rank, 0));
            v.push(ev(Op::Close, 4, vec![3], rank, 0));
            v.push(ev(Op::Barrier, 5, vec![1], rank, 0));
            let nb = (r + 1) % nn;
            v.push(with_path(
                ev(Op::Open, 6, vec![0, 0, 3], rank, 0),
                format!("out/file.{nb:08}"),
            ));
            v.push(ev(Op::Pread, 7, vec![3, B, nb * B, B], rank, 0));
            v.push(ev(Op::Close, 8, vec![3], rank, 0));
        }
        Pattern::Random => {
            v.push(with_path(
                ev(Op::Open, 2, vec![0o101, 0o644, 3], rank, 0),
                "out/shared.dat".into(),
            ));
            for i in 0..4u64 {
                let off = (hash((n as u64) << 32 | (rank as u64) << 8 | i) % 4096) as i64 * 4096;
                v.push(ev(Op::Pwrite, 3, vec![3, 4096, off, 4096], rank, i));
            }
            v.push(ev(Op::Close, 4, vec![3], rank, 0));
        }
        Pattern::EvenOdd => {
            v.push(with_path(
                ev(Op::Open, 2, vec![0o101, 0o644, 3], rank, 0),
                "out/shared.dat".into(),
            ));
            let off = r * B + (r % 2) * ODD_SHIFT;
            v.push(ev(Op::Pwrite, 3, vec![3, 4096, off, 4096], rank, 0));
            v.push(ev(Op::Close, 4, vec![3], rank, 0));
        }
    }
    v.push(ev(Op::Finalize, 9, vec![], rank, 0));
    v
}

/// The merged trace of `n` ranks.
pub fn trace(p: Pattern, n: u32) -> Trace {
    if p == Pattern::Spmd {
        return rsd_view::synth::spmd(n, 10);
    }
    let per_rank = (0..n)
        .map(|r| {
            let mut c = Compressor::new(r);
            for e in events(p, r, n) {
                c.push(&e);
            }
            c.finish()
        })
        .collect();
    merge_tree(per_rank).expect("synthetic ranks are disjoint")
}

/// The trace file of `n` ranks, with a header saying where it came from.
pub fn trace_file(p: Pattern, n: u32) -> rsd::TraceFile {
    let mut header = rsd::Header::new(n);
    header.command = vec![format!("extrap::patterns::{p:?}"), n.to_string()];
    header.clock = "synthetic".into();
    // Wall time with a known law: 1 ms + 20 us per rank.
    header.wall_ns = 1_000_000 + 20_000 * n as u64;
    rsd::TraceFile {
        header,
        trace: trace(p, n),
    }
}
