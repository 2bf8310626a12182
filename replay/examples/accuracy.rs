//! Issue accuracy after Buttress: one rank replays 8 KiB pwrites at 1,000 and 10,000 ops/s
//! (the compute gap between calls is the period) and prints the share of calls issued within
//! 10, 50 and 100 µs of their planned time, and p99. Run:
//! `cargo run --release -p replay --example accuracy [DIR] [RUNS]` (DIR defaults to /dev/shm,
//! RUNS to 3).
//!
//! Lateness is the issue time, stamped just before the call, against the absolute plan: the
//! trace's gaps and the calls' actual durations from the start. A rank that loses its core for
//! 8 ms at 10,000 ops/s therefore makes the next ~80 calls late, as in Buttress, not one.
//!
//! A shared machine preempts any thread now and then, whatever it runs. So that a reader can
//! tell the replayer's lateness from the machine's, each rate first prints a probe: a thread
//! that only reads the clock for as long as one replay, and counts the gaps between readings
//! (times it did not run) over 10, 50 and 100 µs. Each run is printed, then the best and the
//! median p99 over the runs. For a figure where other processes cannot take the core, run the
//! built example under `chrt -f 1` (SCHED_FIFO; the kernel still reserves 5% for others).

use rsd::trace::RawEvent;
use rsd::{Compressor, Header, Op, TraceFile};
use std::time::{Duration, Instant};

/// Calls per replay: two seconds' worth at each rate.
const SECONDS: u64 = 2;

fn trace(rate: u64) -> TraceFile {
    let n = (rate * SECONDS) as i64;
    let period = 1_000_000_000 / rate;
    let mut c = Compressor::new(0);
    let mut open = RawEvent::new(Op::Open, 1, vec![0o1101, 0o644, 3]);
    open.path = Some("bench/acc.dat".into());
    c.push(&open);
    for i in 0..n {
        let mut w = RawEvent::new(Op::Pwrite, 2, vec![3, 8192, (i % 128) * 8192, 8192]);
        w.gap_ns = period;
        w.dur_ns = 0;
        c.push(&w);
    }
    c.push(&RawEvent::new(Op::Close, 3, vec![3]));
    TraceFile {
        header: Header::new(1),
        trace: c.finish(),
    }
}

/// Reads the clock in a loop for `d` and returns the count of gaps over 10, 50 and 100 µs and
/// the largest gap, in µs.
fn probe(d: Duration) -> ([u64; 3], f64) {
    let start = Instant::now();
    let mut last = start;
    let mut over = [0u64; 3];
    let mut max = Duration::ZERO;
    while last - start < d {
        let now = Instant::now();
        let gap = now - last;
        for (i, t) in [10u64, 50, 100].iter().enumerate() {
            if gap > Duration::from_micros(*t) {
                over[i] += 1;
            }
        }
        max = max.max(gap);
        last = now;
    }
    (over, max.as_secs_f64() * 1e6)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "/dev/shm".into());
    let runs: usize = match args.next().map(|s| s.parse()) {
        None => 3,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: accuracy [DIR] [RUNS > 0]");
            std::process::exit(2);
        }
    };
    for rate in [1_000u64, 10_000] {
        let tf = trace(rate);
        let n = rate * SECONDS;
        let (over, max) = probe(Duration::from_secs(SECONDS));
        println!(
            "{rate:>6} ops/s  machine probe ({SECONDS} s of clock reads): {} gaps > 10us, {} > 50us, {} > 100us, max {max:.0}us",
            over[0], over[1], over[2]
        );
        let mut p99s = Vec::new();
        for run in 1..=runs {
            let root_dir = match tempfile::tempdir_in(&dir) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("accuracy: cannot create a scratch directory in {dir}: {e}");
                    std::process::exit(1);
                }
            };
            let root = replay::Root::new(root_dir.path()).expect("a fresh temporary directory");
            let r = match replay::run_threads(&tf, &root, &replay::Options::default()) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("accuracy: replay failed: {e}");
                    std::process::exit(1);
                }
            };
            let l = &r.lateness;
            println!(
                "{rate:>6} ops/s  run {run}: {n} x 8 KiB pwrite  within 10us {:5.1}%  50us {:5.1}%  100us {:5.1}%  p50 {:.1}us  p99 {:.1}us  max {:.1}us",
                l.within_10us * 100.0,
                l.within_50us * 100.0,
                l.within_100us * 100.0,
                l.p50 as f64 / 1e3,
                l.p99 as f64 / 1e3,
                l.max as f64 / 1e3
            );
            p99s.push(l.p99);
        }
        p99s.sort_unstable();
        println!(
            "{rate:>6} ops/s  p99 over {runs} runs: best {:.1}us  median {:.1}us   target at 10,000 ops/s: <= 50us",
            p99s[0] as f64 / 1e3,
            p99s[(p99s.len() - 1) / 2] as f64 / 1e3
        );
    }
}
