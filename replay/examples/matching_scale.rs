//! Measures the `--comm real` matching check ([`replay::matching`]) on large generated traces:
//! N ranks, each iteration of a loop of ITERS an exchange on the world and an allreduce on a
//! split communicator. In the first trace every iteration exchanges with the same neighbours
//! (a ring), so the check walks the loop body once per rank; in the second the distance of the
//! exchange cycles through 1, 2, 4, ... with the iteration (a recursive-doubling pattern), so
//! each iteration is evaluated.
//!
//! `cargo run --release -p replay --example matching_scale -- RANKS ITERS`, or `-- TRACE` to
//! time the check on a trace file.

use replay::matching::{Outcome, check};
use rsd::op::args;
use rsd::trace::{RawEvent, Trace};
use rsd::{Compressor, Op};
use std::time::Instant;

fn rank_events(r: u32, n: u32, iters: i64, doubling: bool) -> Vec<RawEvent> {
    let (ri, ni) = (r as i64, n as i64);
    let levels = (64 - (n as u64 - 1).leading_zeros()).max(1) as i64;
    let mut v = vec![
        RawEvent::new(Op::Init, 1, vec![]),
        RawEvent::new(Op::CommSplit, 2, args::comm_split(0, ri % 4, ri, 2)),
    ];
    for k in 0..iters {
        let d = if doubling { 1 << (k % levels) } else { 1 };
        let to = (ri + d) % ni - ri;
        let from = (ri - d).rem_euclid(ni) - ri;
        v.push(RawEvent::new(
            Op::Isend,
            3,
            args::isend(8, 7, to, 1, 0, 32, 100),
        ));
        v.push(RawEvent::new(Op::Recv, 4, args::recv(8, 7, from, 1, 0, 32)));
        v.push(RawEvent::new(Op::Wait, 5, args::wait(100)));
        v.push(RawEvent::new(
            Op::Allreduce,
            6,
            args::allreduce(1, 7, 1, 2, 8),
        ));
    }
    v.push(RawEvent::new(Op::Finalize, 7, vec![]));
    v
}

fn trace(n: u32, iters: i64, doubling: bool) -> Trace {
    let ts = (0..n)
        .map(|r| {
            let mut c = Compressor::new(r);
            rank_events(r, n, iters, doubling)
                .iter()
                .for_each(|e| c.push(e));
            c.finish()
        })
        .collect();
    rsd::merge_tree(ts).expect("merges")
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() == 2 {
        // A trace file: time the check on it.
        let tf = replay::load(std::path::Path::new(&a[1]), true).expect("reads the trace");
        let n = replay::nranks(&tf);
        let t0 = Instant::now();
        let r = check(&tf.trace, n);
        println!(
            "{}: {n} ranks, {} calls traced: {:.3} s, {:?}",
            a[1],
            rsd_view::stats::summarize(&tf.trace)
                .per_layer()
                .values()
                .map(|v| v.0)
                .sum::<u64>(),
            t0.elapsed().as_secs_f64(),
            r.map_err(|e| e.to_string())
        );
        return;
    }
    if a.len() != 3 {
        eprintln!("usage: matching_scale RANKS ITERS | matching_scale TRACE");
        std::process::exit(2);
    }
    let n: u32 = a[1].parse().expect("RANKS");
    let iters: i64 = a[2].parse().expect("ITERS");
    for doubling in [false, true] {
        let t = trace(n, iters, doubling);
        let t0 = Instant::now();
        let r = check(&t, n);
        let el = t0.elapsed();
        let calls = match &r {
            Ok(Outcome::Matched { calls }) | Ok(Outcome::TooLarge { calls }) => *calls,
            Err(_) => 0,
        };
        println!(
            "{} ranks x {} iterations, {}: {} calls traced, {} evaluated, {:.3} s, {}",
            n,
            iters,
            if doubling {
                "distance varies"
            } else {
                "fixed ring"
            },
            u64::from(n) * (4 * iters as u64 + 3),
            calls,
            el.as_secs_f64(),
            match r {
                Ok(Outcome::Matched { .. }) => "matched".to_string(),
                Ok(Outcome::TooLarge { .. }) => "too large: not checked".to_string(),
                Err(e) => e.to_string(),
            }
        );
    }
}
