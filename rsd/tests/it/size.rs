//! Invariant 2, constant size: for an SPMD program the file does not grow with the rank count
//! or the iteration count.

use rsd::{Header, TraceFile};
use rsd_view::synth;

fn size(nranks: u32, iters: u64) -> usize {
    let tf = TraceFile {
        header: Header::new(nranks),
        trace: synth::spmd(nranks, iters),
    };
    tf.to_bytes().unwrap().len()
}

/// The structure is the same at every scale; what grows is the width of integers in the
/// encoding (counters, rank numbers), logarithmically: a few bytes per event each time a
/// counter or rank number crosses 127, 255 or 65535. Within 5% per 4x of ranks or 100x of
/// iterations, except the step across rank 255 (7%).
#[test]
fn size_is_flat_in_ranks_and_iterations() {
    let check = |(n0, i0): (u32, u64), (n1, i1): (u32, u64), bound: f64| {
        let (a, b) = (size(n0, i0) as f64, size(n1, i1) as f64);
        let growth = (b - a) / a;
        assert!(
            growth.abs() <= bound,
            "{n1}x{i1}: {b} B vs {n0}x{i0}: {a} B ({:+.1}%)",
            growth * 100.0
        );
    };
    check((4, 10), (16, 10), 0.05);
    check((16, 10), (64, 10), 0.05);
    check((64, 10), (256, 10), 0.07);
    check((256, 10), (1024, 10), 0.05);
    check((4, 10), (4, 1000), 0.05);
    check((4, 1000), (4, 100_000), 0.05);
    check((64, 10), (64, 1000), 0.05);
}

#[test]
fn affine_offsets_stay_one_entry() {
    // Ranks 0..N writing at rank*blocksize: one group per parameter, not N.
    let t = synth::spmd(64, 10);
    let dump = format!("{t:?}");
    let groups = dump.matches("Group {").count();
    let t4 = synth::spmd(4, 10);
    assert_eq!(
        groups,
        format!("{t4:?}").matches("Group {").count(),
        "group count must not depend on ranks"
    );
}
