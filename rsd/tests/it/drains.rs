//! Drains of `MPI_Waitsome` calls (`IOTREX_APPROX` with `order`): calls of one site on one
//! request array that together complete every request are one call completing them all, so
//! the loop structure no longer depends on how the completions fell into calls; anything
//! else is recorded as it was.

use rsd::trace::{Node, NodeKind, RawEvent};
use rsd::{Compressor, Op, Trace};

fn call(op: Op, sig: u64, params: &[i64], gap: u64, dur: u64) -> RawEvent {
    RawEvent {
        op,
        sig,
        path: None,
        params: params.to_vec(),
        gap_ns: gap,
        dur_ns: dur,
        children: Vec::new(),
    }
}

/// One halo exchange of four requests (ids 0-3) completed by Waitsome calls whose
/// completions are `split` (each inner list one call's ids).
fn exchange(split: &[&[i64]]) -> Vec<RawEvent> {
    let mut v = vec![
        call(Op::Irecv, 1, &[40, 14, -1, 0, 0, 320, 0], 10, 1),
        call(Op::Isend, 2, &[40, 14, 1, 0, 0, 320, 1], 10, 1),
        call(Op::Irecv, 3, &[40, 14, 1, 1, 0, 320, 2], 10, 1),
        call(Op::Isend, 4, &[40, 14, -1, 1, 0, 320, 3], 10, 1),
    ];
    for ids in split {
        let mut p = vec![4, ids.len() as i64];
        p.extend_from_slice(ids);
        v.push(call(Op::Waitsome, 5, &p, 7, 100));
    }
    v
}

fn compress(calls: &[RawEvent], coalesce: bool) -> (Trace, u64, u64) {
    let mut c = Compressor::new(0);
    c.coalesce_drains(coalesce);
    for e in calls {
        c.push(e);
    }
    (c.finish(), c.events(), c.drains())
}

fn skeleton(nodes: &[Node], out: &mut String) {
    for n in nodes {
        match &n.kind {
            NodeKind::Event(e) => out.push_str(&format!("{} ", e.op.name())),
            NodeKind::Loop(l) => {
                out.push_str(&format!("loop x{:?} {{ ", l.iters.for_rank(0)));
                skeleton(&l.body, out);
                out.push_str("} ");
            }
        }
    }
}

#[test]
fn drains_split_differently_give_one_structure() {
    let splits: [&[&[i64]]; 4] = [
        &[&[0, 1, 2, 3]],
        &[&[3], &[0, 1, 2]],
        &[&[1], &[0], &[3, 2]],
        &[&[2, 0], &[1], &[3]],
    ];
    let mut calls = Vec::new();
    for i in 0..40 {
        calls.extend(exchange(splits[i % 4]));
    }
    let (t, events, drains) = compress(&calls, true);
    // Every call was pushed; three drains of four took more than one call.
    assert_eq!(events, calls.len() as u64);
    assert_eq!(drains, 30);
    let mut s = String::new();
    skeleton(&t.nodes, &mut s);
    assert_eq!(
        s,
        "loop xSome(Const(40)) { MPI_Irecv MPI_Isend MPI_Irecv MPI_Isend MPI_Waitsome } "
    );
    let flat = t.expand(0);
    assert_eq!(flat.len(), 40 * 5);
    for w in flat.iter().filter(|e| e.op == Op::Waitsome) {
        assert_eq!(w.params, [4, 4, 0, 1, 2, 3]);
    }
    // The coalesced call spans the calls it replaces: durations and the gaps between them.
    let NodeKind::Loop(l) = &t.nodes[0].kind else {
        panic!("{s}")
    };
    let NodeKind::Event(w) = &l.body[4].kind else {
        panic!("{s}")
    };
    // Per exchange: 1 call (100), 2 calls (207), 3 calls (314), 3 calls (314).
    let mean = (100.0 + 207.0 + 314.0 + 314.0) / 4.0;
    assert!(
        (w.timing.dur.mean - mean).abs() < 1e-6,
        "{:?}",
        w.timing.dur
    );
}

#[test]
fn without_order_or_outside_a_drain_calls_stay_as_they_were() {
    let calls = exchange(&[&[3], &[0, 1, 2]]);
    // Off (the default): two Waitsome calls.
    let (t, _, drains) = compress(&calls, false);
    assert_eq!(drains, 0);
    assert_eq!(
        t.expand(0).iter().filter(|e| e.op == Op::Waitsome).count(),
        2
    );
    // On, but the run ends before every request completed: the calls as they were.
    let partial = exchange(&[&[3], &[0]]);
    let (t, events, drains) = compress(&partial, true);
    assert_eq!((events, drains), (partial.len() as u64, 0));
    let flat = t.expand(0);
    let ws: Vec<_> = flat.iter().filter(|e| e.op == Op::Waitsome).collect();
    assert_eq!(ws.len(), 2);
    assert_eq!(ws[0].params, [4, 1, 3]);
    assert_eq!(ws[1].params, [4, 1, 0]);
    // Another call between two Waitsome calls, or an id completed twice (requests refilled,
    // not a drain): as they were.
    let mut mixed = exchange(&[&[3]]);
    mixed.push(call(Op::Barrier, 9, &[0], 1, 1));
    mixed.push(call(Op::Waitsome, 5, &[4, 3, 0, 1, 2], 1, 1));
    mixed.push(call(Op::Waitsome, 5, &[4, 2, 3, 0], 1, 1));
    mixed.push(call(Op::Waitsome, 5, &[4, 2, 3, 0], 1, 1));
    let (t, _, drains) = compress(&mixed, true);
    assert_eq!(drains, 0);
    let flat: Vec<_> = t.expand(0).into_iter().map(|e| e.params).collect();
    assert_eq!(
        flat[4..],
        [
            vec![4, 1, 3],
            vec![0],
            vec![4, 3, 0, 1, 2],
            vec![4, 2, 3, 0],
            vec![4, 2, 3, 0]
        ]
    );
}

#[test]
fn order_is_a_word_of_iotrex_approx_and_not_in_the_default() {
    use rsd::approx::{DEFAULT_APPROX, Policy};
    assert!(Policy::orders(Some("comm,order")));
    assert!(Policy::orders(Some(" order ")));
    assert!(!Policy::orders(None));
    assert!(!Policy::orders(Some(DEFAULT_APPROX)));
    // It summarises no parameter.
    assert_eq!(Policy::parse_layers("comm,order").unwrap(), (true, false));
    assert_eq!(Policy::parse_layers("order").unwrap(), (false, false));
    let e = Policy::parse_layers("orders").unwrap_err().to_string();
    assert!(e.contains("order"), "{e}");
}

/// Under load the tracer measures off-CPU time in the gaps between the calls of a drain
/// (`Compressor::push_waited`): the drain is still one call, so a loaded run has the
/// structure of an idle one; the first call's waits are the coalesced call's.
#[test]
fn waits_measured_inside_a_drain_do_not_break_it() {
    use rsd::timing::GapWaits;
    let splits: [&[&[i64]]; 2] = [&[&[0, 1, 2, 3]], &[&[2], &[0, 3], &[1]]];
    let mut calls = Vec::new();
    for i in 0..20 {
        calls.extend(exchange(splits[i % 2]));
    }
    let (idle, _, _) = compress(&calls, true);
    let mut c = Compressor::new(0);
    c.coalesce_drains(true);
    let w = GapWaits {
        runq_ns: 5,
        blocked_ns: 0,
    };
    for (i, e) in calls.iter().enumerate() {
        // Every Waitsome call of every third exchange waited in its gap.
        if e.op == Op::Waitsome && (i / 6) % 3 == 0 {
            c.push_waited(e, w);
        } else {
            c.push(e);
        }
    }
    let loaded = c.finish();
    assert_eq!(c.drains(), 10);
    let (mut a, mut b) = (String::new(), String::new());
    skeleton(&idle.nodes, &mut a);
    skeleton(&loaded.nodes, &mut b);
    assert_eq!(a, b);
    let ws: Vec<_> = loaded
        .expand(0)
        .into_iter()
        .filter(|e| e.op == Op::Waitsome)
        .map(|e| e.params)
        .collect();
    assert_eq!(ws.len(), 20);
    assert!(ws.iter().all(|p| p == &[4, 4, 0, 1, 2, 3]), "{ws:?}");
    let NodeKind::Loop(l) = &loaded.nodes[0].kind else {
        panic!("{b}")
    };
    let NodeKind::Event(ev) = &l.body[4].kind else {
        panic!("{b}")
    };
    assert!(
        ev.timing.waits.is_some_and(|x| x.runq_ns > 0),
        "{:?}",
        ev.timing.waits
    );
}
