//! The tracer's own time, left out of the gaps between the application's calls.
//!
//! A gap is what a replay waits out as the rank's compute, and what the timing models fit as
//! compute. Between two calls the tracer works too: after a call it records it, and before
//! the next it identifies the call site. Most of that is a few dozen nanoseconds, but two
//! parts are not: a call site seen for the first time is unwound and its modules' symbol
//! tables read (17-26 us each in `tests/apps/site_loop.c`, more for a module's first site:
//! in 4-rank traces of a program that does nothing between `MPI_Init` and `MPI_Comm_rank`,
//! the gap before the latter was 64-573 us, and is 12-153 us with this accounting),
//! and a call with children (an MPI-IO call and the POSIX calls the library made inside it)
//! is folded with its children (about 1 us). Both are timed where they happen, on their
//! cold paths, and the next gap is measured without them. A POSIX call's own recording on
//! the hot path (about 0.1 us) stays in the gap: timing it would cost as much again.
//!
//! Work done for a call made inside a traced call (a child's call site) falls within that
//! call's duration, not in a gap, and is not charged. One counter for the process, as the
//! gap is measured from the end of any thread's last call (`State::last_end`).

use std::sync::atomic::{AtomicU64, Ordering};

/// The tracer's own time since the last top-level call ended, ns.
static OWN_NS: AtomicU64 = AtomicU64::new(0);

/// Charges the tracer's work that started at `since` (ns, the tracer's clock) and ends now
/// to the gap being measured.
#[cold]
pub fn charge_since(since: u64) {
    let d = crate::state::now_ns().saturating_sub(since);
    OWN_NS.fetch_add(d, Ordering::Relaxed);
}

/// Charges the work of identifying a call site that started at `since`, unless the call is
/// made inside a traced call (its time is then that call's).
#[cold]
pub fn charge_site_since(since: u64) {
    if !crate::state::frame_open() {
        charge_since(since);
    }
}

/// The gap of a top-level call that started at `t0` after the last one ended at `last_end`,
/// without the tracer's own time charged since; the charges are consumed.
#[inline(always)]
pub fn gap(t0: u64, last_end: u64) -> u64 {
    let wall = t0.saturating_sub(last_end);
    let own = OWN_NS.load(Ordering::Relaxed);
    if own == 0 {
        return wall;
    }
    OWN_NS.fetch_sub(own, Ordering::Relaxed);
    wall.saturating_sub(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_leave_the_next_gap_only() {
        // The counter is the process's: this test is the only one in the crate to use it.
        OWN_NS.store(0, Ordering::Relaxed);
        assert_eq!(gap(5_000, 1_000), 4_000);
        OWN_NS.fetch_add(1_500, Ordering::Relaxed);
        assert_eq!(gap(5_000, 1_000), 2_500);
        // Consumed: the gap after is whole again.
        assert_eq!(gap(9_000, 6_000), 3_000);
        // A charge longer than the gap (another thread's work) leaves no gap, not a negative one.
        OWN_NS.fetch_add(10_000, Ordering::Relaxed);
        assert_eq!(gap(9_000, 6_000), 0);
        assert_eq!(OWN_NS.load(Ordering::Relaxed), 0);
    }
}
