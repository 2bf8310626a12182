//! How much work a command may do on a fuzzed trace (see the crate docs): the fuzz targets
//! run the commands only on traces within these limits.

use rsd::TraceFile;
use rsd::trace::{Node, NodeKind};

/// Most ranks a command is run on.
pub const RANKS: u64 = 64;
/// Most steps (calls, nested calls and loop iterations, empty ones included) of one rank.
pub const STEPS_PER_RANK: u64 = 20_000;

/// Whether `tf` is within the limits: at most [`RANKS`] ranks in the header and in the
/// trace, each walking at most [`STEPS_PER_RANK`] steps. The walk is `rsd::trace::visit`'s,
/// counting loop iterations too and stopping at the limit: a valid file may hold a loop of
/// 2^62 iterations over nothing, which an expansion walks without ever calling back.
pub fn within(tf: &TraceFile) -> bool {
    let ranks = tf.trace.ranks();
    if u64::from(tf.header.nranks) > RANKS || ranks.len() > RANKS {
        return false;
    }
    let mut ok = true;
    ranks.for_each(|r| {
        let mut steps = 0u64;
        ok = ok && u64::from(r) < RANKS && walk(&tf.trace.nodes, r, &mut Vec::new(), &mut steps);
    });
    ok
}

fn walk(nodes: &[Node], rank: u32, idx: &mut Vec<u64>, steps: &mut u64) -> bool {
    for n in nodes {
        if !n.ranks.contains(rank) {
            continue;
        }
        *steps += 1;
        if *steps > STEPS_PER_RANK {
            return false;
        }
        match &n.kind {
            NodeKind::Event(e) => {
                if !walk(&e.children, rank, idx, steps) {
                    return false;
                }
            }
            NodeKind::Loop(l) => {
                let iters = l.iters.eval_member(rank, idx).max(0) as u64;
                idx.push(0);
                for i in 0..iters {
                    *steps += 1;
                    *idx.last_mut().expect("pushed") = i;
                    if *steps > STEPS_PER_RANK || !walk(&l.body, rank, idx, steps) {
                        return false;
                    }
                }
                idx.pop();
            }
        }
    }
    true
}
