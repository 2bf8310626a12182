//! The tracer's side of [`rsd::exclude`]: calls on files under an excluded directory are not
//! recorded, only counted, per directory, in fixed slots of atomics (no lock, no allocation
//! in a hook), and the descriptors opened there are remembered so that their reads and writes
//! are counted too.

use rsd::exclude::{Excluded, MAX_RULES, Rules};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

static RULES: OnceLock<Rules> = OnceLock::new();
static CALLS: [AtomicU64; MAX_RULES] = [const { AtomicU64::new(0) }; MAX_RULES];
static BYTES: [AtomicU64; MAX_RULES] = [const { AtomicU64::new(0) }; MAX_RULES];
/// Descriptors below this are remembered; a higher one opened under an excluded directory is
/// left out all the same, its later calls just not counted.
const FDS: usize = 1 << 16;
/// The slot + 1 of the excluded directory each descriptor was opened under (0: none).
static FD_SLOT: [AtomicU8; FDS] = [const { AtomicU8::new(0) }; FDS];

/// Reads the rules from the environment (at start-up); returns why they could not be taken,
/// for the header's notes (the defaults then apply).
pub fn init() -> Option<String> {
    let (rules, err) = match Rules::from_env(|v| std::env::var(v).ok()) {
        Ok(r) => (r, None),
        Err(e) => (
            Rules::default(),
            Some(format!("{e}; the default exclusions were used")),
        ),
    };
    let _ = RULES.set(rules);
    err
}

/// The slot of the excluded directory holding `path`, if it is excluded.
#[inline]
pub fn slot(path: &str) -> Option<usize> {
    RULES.get()?.excluding(path)
}

/// Counts a call left out under slot `slot` that moved `bytes`.
#[inline]
pub fn count(slot: usize, bytes: i64) {
    if let (Some(c), Some(b)) = (CALLS.get(slot), BYTES.get(slot)) {
        c.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(bytes.max(0) as u64, Ordering::Relaxed);
    }
}

/// Remembers that descriptor `fd` (a successful open's result) is on an excluded file.
pub fn opened(fd: i64, slot: usize) {
    if let Some(s) = usize::try_from(fd).ok().and_then(|f| FD_SLOT.get(f)) {
        s.store(slot as u8 + 1, Ordering::Relaxed);
    }
}

/// The slot of the excluded directory descriptor `fd` was opened under.
#[inline]
pub fn of_fd(fd: i32) -> Option<usize> {
    let s = FD_SLOT
        .get(usize::try_from(fd).ok()?)?
        .load(Ordering::Relaxed);
    (s != 0).then(|| usize::from(s - 1))
}

/// Forgets descriptor `fd` (closed, or opened again on a traced file).
#[inline]
pub fn forget(fd: i32) {
    if let Some(s) = usize::try_from(fd).ok().and_then(|f| FD_SLOT.get(f)) {
        s.store(0, Ordering::Relaxed);
    }
}

/// Counts nothing left out so far: a forked child starts its own counts (its parent's stay
/// the parent's).
pub fn reset_counts() {
    for (c, b) in CALLS.iter().zip(&BYTES) {
        c.store(0, Ordering::Relaxed);
        b.store(0, Ordering::Relaxed);
    }
}

/// What was left out so far, per excluded directory that had any call.
pub fn taken() -> Vec<Excluded> {
    let Some(rules) = RULES.get() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, (c, b)) in CALLS.iter().zip(&BYTES).enumerate() {
        let calls = c.load(Ordering::Relaxed);
        if calls > 0 {
            let e = Excluded {
                prefix: rules.dir(i).to_string(),
                calls,
                bytes: b.load(Ordering::Relaxed),
            };
            rsd::exclude::add(&mut out, &[e]);
        }
    }
    out
}
