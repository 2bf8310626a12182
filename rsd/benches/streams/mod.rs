//! The call streams the compression benchmarks feed, shared by `rsd` (criterion) and
//! `compress_calls` (one pass, for instruction counts).

use rsd::Op;
use rsd::trace::RawEvent;

/// A timestep loop: each step writes 4 blocks at advancing offsets, seeks, and syncs.
pub fn nested_stream(steps: i64) -> Vec<RawEvent> {
    let mut v = Vec::new();
    for s in 0..steps {
        for b in 0..4 {
            let mut e = RawEvent::new(Op::Pwrite, 1, vec![3, 65536, (s * 4 + b) * 65536, 65536]);
            e.gap_ns = 900 + (s as u64 * 7 + b as u64) % 200;
            e.dur_ns = 3000 + (s as u64 * 13) % 500;
            v.push(e);
        }
        v.push(RawEvent::new(
            Op::Lseek,
            2,
            vec![3, 0, 1, (s + 1) * 4 * 65536],
        ));
        v.push(RawEvent::new(Op::Fsync, 3, vec![3]));
    }
    v
}
