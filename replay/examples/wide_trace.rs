//! Writes an N-rank trace for measuring `--threads` at extrapolated scales without writing
//! N x the data: every rank writes MiB-sized collective blocks into the same 16 MiB of one
//! shared file (so each rank needs a MiB of write data, as a real N-rank SPMD code would, while
//! the file stays small), with a split, a ring of messages, a barrier and an allreduce per
//! iteration, and a read-back.
//!
//! `cargo run --release -p replay --example wide_trace -- RANKS ITERS OUT.iotrex`

use rsd::trace::RawEvent;
use rsd::{Compressor, Header, Op, TraceFile};

const MIB: i64 = 1 << 20;

fn ev(op: Op, site: u64, params: Vec<i64>) -> RawEvent {
    let mut e = RawEvent::new(op, 0x7700 + site, params);
    e.gap_ns = 200_000;
    e.dur_ns = 50_000;
    e
}

fn rank_events(r: u32, n: u32, iters: i64) -> Vec<RawEvent> {
    let (ri, ni) = (r as i64, n as i64);
    let right = (ri + 1) % ni - ri;
    let left = (ri - 1 + ni) % ni - ri;
    let mut open = ev(Op::FileOpen, 3, vec![0, 1 | 8, 0]);
    open.path = Some("wide/shared.dat".into());
    let mut v = vec![
        ev(Op::Init, 1, vec![]),
        ev(Op::CommSplit, 2, vec![0, ri % 4, ri, 2]),
        open,
    ];
    for k in 0..iters {
        let off = ((ri + k) % 16) * MIB;
        v.push(ev(Op::FileWriteAtAll, 4, vec![0, off, MIB, 1, MIB]));
        v.push(ev(Op::Isend, 5, vec![8, 7, right, 1, 0, 32, 100]));
        v.push(ev(Op::Recv, 6, vec![8, 7, left, 1, 0, 32]));
        v.push(ev(Op::Wait, 7, vec![100]));
        v.push(ev(Op::Barrier, 8, vec![2]));
    }
    v.push(ev(
        Op::FileReadAtAll,
        9,
        vec![0, (ri % 16) * MIB, MIB, 1, MIB],
    ));
    v.push(ev(Op::FileClose, 10, vec![0]));
    v.push(ev(Op::Allreduce, 11, vec![1, 7, 3, 0, 4]));
    v.push(ev(Op::Finalize, 12, vec![]));
    v
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    let [_, n, iters, out] = &a[..] else {
        return Err("usage: wide_trace RANKS ITERS OUT.iotrex".into());
    };
    let (n, iters): (u32, i64) = (n.parse()?, iters.parse()?);
    // Merge in batches so memory stays at a batch of per-rank traces.
    let mut merged: Option<rsd::trace::Trace> = None;
    for lo in (0..n).step_by(256) {
        let batch: Vec<_> = (lo..(lo + 256).min(n))
            .map(|r| {
                let mut c = Compressor::new(r);
                for e in rank_events(r, n, iters) {
                    c.push(&e);
                }
                c.finish()
            })
            .chain(merged.take())
            .collect();
        merged = Some(rsd::merge_tree(batch)?);
    }
    let mut header = Header::new(n);
    header.wall_ns = 1_000_000_000;
    let tf = TraceFile {
        header,
        trace: merged.ok_or("no ranks")?,
    };
    tf.write(std::path::Path::new(out))?;
    println!("{out}: {n} ranks, {iters} iterations");
    Ok(())
}
