//! `iotrex sensitivity`'s delays (//TRACE's throttling): when [`rsd::sensitivity::THROTTLE_VAR`]
//! names this rank, every I/O call the application makes (POSIX and stdio at the top level,
//! MPI-IO, and the library layers' calls) sleeps that long after its start is taken and
//! before it is issued, so the trace shows it as a slower call. Without the variable the
//! delay is 0 and a hook pays one relaxed load.

use std::sync::atomic::{AtomicU64, Ordering};

/// This rank's delay per I/O call, ns (0: none). Set once at start-up.
static DELAY_NS: AtomicU64 = AtomicU64::new(0);

/// Reads the variable for `rank` (the launcher's rank, known before `MPI_Init`). A value
/// that does not parse is said once on stderr and delays nothing.
pub fn init(rank: Option<u32>) {
    let Ok(v) = std::env::var(rsd::sensitivity::THROTTLE_VAR) else {
        return;
    };
    match rsd::sensitivity::Throttle::parse(&v) {
        Ok(t) => DELAY_NS.store(t.delay_for(rank.unwrap_or(0)), Ordering::Relaxed),
        Err(e) => crate::state::say(&format!("{e}; no delay")),
    }
}

/// Sleeps this rank's delay, if any. Called inside the hook's re-entry guard (mode `BUSY`),
/// between the call's start time and the real call.
#[inline(always)]
pub fn pause() {
    let d = DELAY_NS.load(Ordering::Relaxed);
    if d != 0 {
        sleep(d);
    }
}

#[cold]
fn sleep(ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(ns));
}
