//! How much work a command may do on a fuzzed trace (see the crate docs): the fuzz targets
//! run the commands only on traces within these limits.

use rsd::TraceFile;

/// Most ranks a command is run on.
pub const RANKS: u64 = 64;
/// Most calls (nested ones included) expanded for one rank.
pub const CALLS_PER_RANK: u64 = 20_000;

/// Whether `tf` is within the limits: at most [`RANKS`] ranks in the header and in the
/// trace, each expanding to at most [`CALLS_PER_RANK`] calls (counted by an expansion stopped
/// at the limit).
pub fn within(tf: &TraceFile) -> bool {
    let ranks = tf.trace.ranks();
    if u64::from(tf.header.nranks) > RANKS || ranks.len() > RANKS {
        return false;
    }
    let mut ok = true;
    ranks.for_each(|r| {
        if !ok || u64::from(r) >= RANKS {
            ok = false;
            return;
        }
        let mut calls = 0u64;
        tf.trace.expand_with(r, &mut |e| {
            calls += 1 + e.children.len() as u64;
            calls <= CALLS_PER_RANK
        });
        ok = calls <= CALLS_PER_RANK;
    });
    ok
}
