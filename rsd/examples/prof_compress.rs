//! Profiling aid: compresses a nested-loop stream (4 strided pwrites, an lseek and an fsync per
//! step) and prints ns per call. `cargo run --release -p rsd --example prof_compress`
use rsd::trace::RawEvent;
use rsd::{Compressor, Op};

fn main() {
    let mut v = Vec::new();
    for s in 0..20000i64 {
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
    let t = std::time::Instant::now();
    let mut c = Compressor::new(0);
    for e in &v {
        c.push(e);
    }
    println!(
        "{:.1} ns/event, {} items",
        t.elapsed().as_nanos() as f64 / v.len() as f64,
        c.len()
    );
}
