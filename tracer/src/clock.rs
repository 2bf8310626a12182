//! The tracer's clock: `CLOCK_MONOTONIC` in nanoseconds, read from the TSC where the kernel
//! trusts it (docs/tracer-cost.md, "The clock").
//!
//! A traced call reads the clock twice. `clock_gettime` through the vDSO costs ~41 ns here
//! (it reads the TSC itself, plus the kernel's conversion data behind a sequence counter);
//! `rdtsc` and one multiplication cost a fraction of that. The values stay what they were:
//! nanoseconds of `CLOCK_MONOTONIC`, same origin, so the trace format does not change and the
//! ranks' timestamps stay comparable across processes (the merge and the Chrome export align
//! them).
//!
//! How: a linear map `ns = a_ns + (tsc - a_tsc) * mult / 2^32`, fitted to `CLOCK_MONOTONIC`.
//! The slope is always measured from the process's first pair of readings (taken in
//! [`init`]) to the latest one, so it gets more precise as the run goes on; the map is
//! re-anchored on `CLOCK_MONOTONIC` after a window as long as the time measured so far (capped
//! at [`MAX_WINDOW_NS`]): a reading's error, about 2 x (the jitter of one paired reading) /
//! (the baseline) x (the window), stays near that jitter, tens of ns. Until the baseline
//! reaches [`CALIBRATION_NS`] every read is `clock_gettime` (calibrating). A re-anchor never
//! moves the map backwards (its new origin is the later of `CLOCK_MONOTONIC` and the old
//! map's value), so one thread's readings never decrease.
//!
//! Used only where it is sound: x86_64, an invariant TSC (CPUID 0x80000007 EDX bit 8, the
//! flag behind /proc/cpuinfo's `constant_tsc` and `nonstop_tsc`), and the kernel's clocksource
//! `tsc` (the kernel checked the TSCs of all CPUs agree and did not fall back: a process
//! migrating between CPUs reads the same clock). Elsewhere, or with `IOTREX_CLOCK=monotonic`,
//! every read is `clock_gettime`.
//!
//! Threads: the map is published under a sequence counter (a seqlock). A reader that sees it
//! change, or is not the thread that wins the re-anchor, reads `clock_gettime` for that one
//! value, which agrees with the map to within its error.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering, fence};

/// Every read is `clock_gettime` (the default, before [`init`], and where the TSC is unusable).
const MONOTONIC: u8 = 0;
/// `clock_gettime`, until the baseline is long enough to fit the map.
const CALIBRATING: u8 = 1;
/// The TSC through the map.
const TSC: u8 = 2;

/// The shortest baseline the first slope is measured over.
pub const CALIBRATION_NS: u64 = 1_000_000;
/// The longest stretch between two re-anchors.
pub const MAX_WINDOW_NS: u64 = 1_000_000_000;

static MODE: AtomicU8 = AtomicU8::new(MONOTONIC);
/// The first paired reading (TSC, ns): the slope's origin.
static O_TSC: AtomicU64 = AtomicU64::new(0);
static O_NS: AtomicU64 = AtomicU64::new(0);
/// The map, under `SEQ` (odd while being written).
static SEQ: AtomicU64 = AtomicU64::new(0);
static A_TSC: AtomicU64 = AtomicU64::new(0);
static A_NS: AtomicU64 = AtomicU64::new(0);
static MULT: AtomicU64 = AtomicU64::new(0);
/// The TSC value from which the next read re-anchors.
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// `CLOCK_MONOTONIC`, ns, from the kernel.
#[inline]
pub fn monotonic_ns() -> u64 {
    // Not zeroed first (two instructions per call): clock_gettime fills it.
    let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux, so
    // the call succeeds and writes it whole.
    let ts = unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, ts.as_mut_ptr());
        ts.assume_init()
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC`, ns: through the TSC map when it is set up, else from the kernel.
#[inline(always)]
pub fn now_ns() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if MODE.load(Ordering::Relaxed) == TSC {
        let s = SEQ.load(Ordering::Acquire);
        let (a_tsc, a_ns, mult, limit) = (
            A_TSC.load(Ordering::Relaxed),
            A_NS.load(Ordering::Relaxed),
            MULT.load(Ordering::Relaxed),
            LIMIT.load(Ordering::Relaxed),
        );
        let t = tsc();
        fence(Ordering::Acquire);
        if t < limit && SEQ.load(Ordering::Relaxed) == s && s & 1 == 0 {
            return map(t, a_tsc, a_ns, mult);
        }
        return slow();
    }
    if MODE.load(Ordering::Relaxed) == CALIBRATING {
        return slow();
    }
    monotonic_ns()
}

/// The map's value at `t` (a reading before the anchor, which another thread's re-anchor can
/// give, counts as the anchor).
#[inline(always)]
fn map(t: u64, a_tsc: u64, a_ns: u64, mult: u64) -> u64 {
    let d = t.saturating_sub(a_tsc);
    a_ns + ((u128::from(d) * u128::from(mult)) >> 32) as u64
}

#[inline(always)]
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // Not `rdtscp`/`lfence`: the reading may move by a few cycles around the instructions
        // next to it, nothing next to the tens of ns a traced call's timing resolves.
        // SAFETY: rdtsc exists on every x86_64 CPU; it only reads the counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// A paired reading (TSC, `CLOCK_MONOTONIC`): the TSC halfway between two readings around it.
/// The tightest of a few tries: a thread preempted between the readings (16 ranks share 2
/// cores here) would pair the clock with a TSC value milliseconds away and tilt the slope.
fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..4 {
        let a = tsc();
        let ns = monotonic_ns();
        let b = tsc();
        let gap = b.saturating_sub(a);
        if gap < best.0 {
            best = (gap, a + gap / 2, ns);
        }
        // ~1 us at 2 GHz: a vDSO read without interruption takes ~100 ticks.
        if gap < 2_000 {
            break;
        }
    }
    (best.1, best.2)
}

/// Calibrating, or re-anchoring: the thread that takes the sequence counter fits the map from
/// a new paired reading; any other reads `CLOCK_MONOTONIC` for this one value.
#[cold]
#[inline(never)]
fn slow() -> u64 {
    let s = SEQ.load(Ordering::Relaxed);
    if s & 1 == 1
        || SEQ
            .compare_exchange(s, s + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return monotonic_ns();
    }
    // The writer's side of the seqlock: the map's stores come after the counter is odd.
    fence(Ordering::Release);
    let (t, ns) = pair();
    let (o_tsc, o_ns) = (O_TSC.load(Ordering::Relaxed), O_NS.load(Ordering::Relaxed));
    let elapsed = ns.saturating_sub(o_ns);
    let mut out = ns;
    if MODE.load(Ordering::Relaxed) != MONOTONIC && elapsed >= CALIBRATION_NS {
        match fit(t, ns, o_tsc, o_ns) {
            Some(mult) => {
                // Never backwards: the old map's value at `t` if it is ahead of the kernel's.
                let a_ns = if MODE.load(Ordering::Relaxed) == TSC {
                    ns.max(map(
                        t,
                        A_TSC.load(Ordering::Relaxed),
                        A_NS.load(Ordering::Relaxed),
                        MULT.load(Ordering::Relaxed),
                    ))
                } else {
                    ns
                };
                let window = elapsed.min(MAX_WINDOW_NS);
                let ticks =
                    ((u128::from(window) << 32) / u128::from(mult)).min(u128::from(u64::MAX));
                A_TSC.store(t, Ordering::Relaxed);
                A_NS.store(a_ns, Ordering::Relaxed);
                MULT.store(mult, Ordering::Relaxed);
                LIMIT.store(t.saturating_add(ticks as u64), Ordering::Relaxed);
                MODE.store(TSC, Ordering::Relaxed);
                out = a_ns;
            }
            None => MODE.store(MONOTONIC, Ordering::Relaxed),
        }
    }
    SEQ.store(s + 2, Ordering::Release);
    out
}

/// The slope, ns per tick times 2^32, from the origin to (`t`, `ns`); `None` when the TSC did
/// not advance or the rate is not a plausible one (100 MHz to 20 GHz).
fn fit(t: u64, ns: u64, o_tsc: u64, o_ns: u64) -> Option<u64> {
    let dt = t.checked_sub(o_tsc).filter(|&d| d > 0)?;
    let dn = ns.checked_sub(o_ns)?;
    let mult = (u128::from(dn) << 32) / u128::from(dt);
    // 20 GHz: 0.05 ns per tick; 100 MHz: 10 ns per tick.
    ((1u128 << 32) / 20..=(10u128 << 32))
        .contains(&mult)
        .then_some(mult as u64)
}

/// Whether the TSC may stand in for `CLOCK_MONOTONIC` here (see the module's text).
fn usable() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // Leaf 0x80000000 gives the highest extended leaf, so 0x80000007 is asked only where
        // it exists.
        let invariant =
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0;
        invariant
            && std::fs::read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .is_ok_and(|b| b.trim_ascii() == b"tsc")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Where the values come from (`IOTREX_CLOCK`: `monotonic` forces `clock_gettime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Monotonic,
    Tsc,
}

/// Chooses the source (once per process, in the constructor, under the re-entry guard: the
/// clocksource file's read is not recorded) and takes the slope's origin.
pub fn init() -> Source {
    let forced = std::env::var("IOTREX_CLOCK").is_ok_and(|v| v == "monotonic");
    if forced || !usable() {
        MODE.store(MONOTONIC, Ordering::Relaxed);
        return Source::Monotonic;
    }
    let (t, ns) = pair();
    O_TSC.store(t, Ordering::Relaxed);
    O_NS.store(ns, Ordering::Relaxed);
    MODE.store(CALIBRATING, Ordering::Release);
    Source::Tsc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_and_fit() {
        // 2 GHz: half a ns per tick.
        let mult = fit(2_000_000_000, 1_000_000_000, 0, 0).unwrap();
        assert_eq!(mult, 1 << 31);
        assert_eq!(map(1_000, 0, 5, mult), 505);
        // A reading before the anchor counts as the anchor.
        assert_eq!(map(10, 100, 7, mult), 7);
        assert_eq!(fit(5, 10, 5, 0), None);
        assert_eq!(fit(1_000, 1_000_000, 0, 0), None);
    }

    /// On a machine where the TSC is used, the map's values stay within a few microseconds of
    /// `CLOCK_MONOTONIC` read just before and after, and never decrease.
    #[test]
    fn tracks_clock_monotonic() {
        if init() != Source::Tsc {
            return;
        }
        let mut last = 0;
        let mut took_tsc = false;
        let start = monotonic_ns();
        while monotonic_ns() - start < 30 * CALIBRATION_NS {
            let before = monotonic_ns();
            let v = now_ns();
            let after = monotonic_ns();
            took_tsc |= MODE.load(Ordering::Relaxed) == TSC;
            assert!(v >= last, "decreased: {last} -> {v}");
            assert!(
                v + 5_000 >= before && v <= after + 5_000,
                "{v} not within 5 us of [{before}, {after}]"
            );
            last = v;
        }
        assert!(took_tsc, "never left calibration");
    }
}
