//! Issue accuracy after Buttress: one rank replays 8 KiB pwrites at 1,000 and 10,000 ops/s
//! (the compute gap between calls is the period) and prints the share of calls issued within
//! 10, 50 and 100 µs of their planned time, and p99. Run:
//! `cargo run --release -p replay --example accuracy [DIR]` (DIR defaults to /dev/shm).

use rsd::trace::RawEvent;
use rsd::{Compressor, Header, Op, TraceFile};

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/dev/shm".into());
    for rate in [1_000u64, 10_000] {
        let n = (rate * 2) as i64; // two seconds of calls
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
        let tf = TraceFile {
            header: Header::new(1),
            trace: c.finish(),
        };
        let root_dir = tempfile::tempdir_in(&dir).expect("scratch dir");
        let root = replay::Root::new(root_dir.path()).expect("root");
        let r = replay::run_threads(&tf, &root, &replay::Options::default()).expect("replay");
        let l = &r.lateness;
        println!(
            "{rate:>6} ops/s, {n} x 8 KiB pwrite: within 10us {:.1}%  50us {:.1}%  100us {:.1}%  p50 {:.1}us  p99 {:.1}us  max {:.1}us",
            l.within_10us * 100.0,
            l.within_50us * 100.0,
            l.within_100us * 100.0,
            l.p50 as f64 / 1e3,
            l.p99 as f64 / 1e3,
            l.max as f64 / 1e3
        );
    }
}
