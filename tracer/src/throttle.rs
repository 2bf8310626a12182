//! `iotrex sensitivity`'s delays (//TRACE's throttling): when [`rsd::sensitivity::THROTTLE_VAR`]
//! names this rank, every I/O call the application makes (POSIX and stdio at the top level,
//! MPI-IO, and the library layers' calls) sleeps that long after its start is taken and
//! before it is issued, so the trace shows it as a slower call. With a bandwidth
//! (`--bandwidth`), each such call that moved data is also followed by a sleep of its bytes
//! over that bandwidth, taken after it is recorded (outside the state's lock), so the rank
//! loses the time a storage that much slower would have cost it. Without the variable both
//! are 0 and a hook pays one relaxed load for each.

use std::sync::atomic::{AtomicU64, Ordering};

/// This rank's delay per I/O call, ns (0: none). Set once at start-up.
static DELAY_NS: AtomicU64 = AtomicU64::new(0);
/// The bandwidth this rank's I/O calls are held to, bytes/s (0: none). Set once at start-up.
static BPS: AtomicU64 = AtomicU64::new(0);

/// Reads the variable for `rank` (the launcher's rank, known before `MPI_Init`). A value
/// that does not parse is said once on stderr and delays nothing.
pub fn init(rank: Option<u32>) {
    let Ok(v) = std::env::var(rsd::sensitivity::THROTTLE_VAR) else {
        return;
    };
    match rsd::sensitivity::Throttle::parse(&v) {
        Ok(t) => {
            DELAY_NS.store(t.delay_for(rank.unwrap_or(0)), Ordering::Relaxed);
            BPS.store(t.bps_for(rank.unwrap_or(0)), Ordering::Relaxed);
        }
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

/// The sleep owed after a top-level call `op` with `params`, ns (0 without a bandwidth). Cheap
/// enough to compute under the state's lock; [`settle`] sleeps it after.
#[inline(always)]
pub fn owed(op: rsd::Op, params: &[i64]) -> u64 {
    let bps = BPS.load(Ordering::Relaxed);
    if bps == 0 {
        return 0;
    }
    rsd::sensitivity::bandwidth_delay_ns(op.data_bytes(params), bps)
}

/// Sleeps what [`owed`] gave, if anything.
#[inline(always)]
pub fn settle(ns: u64) {
    if ns != 0 {
        sleep(ns);
    }
}

#[cold]
fn sleep(ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(ns));
}
