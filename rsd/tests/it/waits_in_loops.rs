//! Off-CPU gap time measured on every iteration of a loop is kept whole by compression: the
//! loop cursor, which keeps only gaps and durations, once took a waited call aside as the
//! first of the next iteration and lost its waits (sync's compute after each barrier was
//! then planned as 4-5 times its CPU time, docs/xstorage.md).
use rsd::Op;
use rsd::compress::Compressor;
use rsd::timing::GapWaits;
use rsd::trace::{NodeKind, RawEvent};

/// pwrite (after a long gap, waited from the second on), barrier, 8 times: every pwrite's
/// waits are in the loop's sum (sync's pattern, `tests/apps/xstorage.c`).
#[test]
fn waits_of_every_iteration_are_summed() {
    let mut c = Compressor::new(0);
    let w = GapWaits {
        runq_ns: 1000,
        blocked_ns: 10,
    };
    let mut total = 0;
    for i in 0..8 {
        let mut e = RawEvent::new(Op::Pwrite, 1, vec![3, 4096, 0, 4096]);
        e.gap_ns = 5000;
        e.dur_ns = 10;
        if i > 0 {
            c.push_waited(&e, w);
            total += 1;
        } else {
            c.push(&e);
        }
        let mut b = RawEvent::new(Op::Barrier, 2, vec![0]);
        b.gap_ns = 5;
        b.dur_ns = 3000;
        c.push(&b);
    }
    let t = c.finish();
    let mut got = 0u64;
    fn walk(n: &[rsd::trace::Node], got: &mut u64) {
        for n in n {
            match &n.kind {
                NodeKind::Loop(l) => walk(&l.body, got),
                NodeKind::Event(e) => {
                    if let Some(w) = e.timing.waits {
                        *got += w.runq_ns;
                    }
                }
            }
        }
    }
    walk(&t.nodes, &mut got);
    assert_eq!(got, total * 1000, "{:?}", t.nodes);
    // Still one loop of 8 (pwrite, barrier) after the first pair.
    assert!(t.nodes.len() <= 3, "{:?}", t.nodes);
}
