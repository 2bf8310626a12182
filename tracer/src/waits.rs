//! Off-CPU time in the gaps between traced calls: what separates a rank's compute from the
//! time it waited because of something else (a page fault on a file mapping served by a slow
//! device, a core taken by another process or by the kernel's flush) while no traced call
//! was running. A replay on other storage then waits out the compute as compute and lets its
//! own I/O take what that storage takes (docs/xstorage.md).
//!
//! The scheduler's own per-thread counters say it: `/proc/thread-self/schedstat` holds the
//! thread's time on a CPU and its time runnable but waiting for one; the rest of a wall-time
//! interval it was blocked. Reading them is an open, a read and a close (about 5 us of CPU
//! here), so they are read only around gaps of at least [`MIN_GAP_NS`], where that costs at
//! most 1% of the gap: at the start of a call that follows such a gap, and at the end of a
//! call that followed one or lasted that long itself. The reading the gap is measured from
//! is the thread's last one, which is usually the end of the call before the gap; where calls
//! too short to be read came in between, the off-CPU time of the window is first given to
//! them (as much as their wall time), so a gap is never charged a wait that may have been a
//! call's. Every other call costs one relaxed load and two comparisons.

use rsd::timing::GapWaits;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Gaps at least this long are measured (and calls this long end with a reading, for the gap
/// after them).
pub const MIN_GAP_NS: u64 = 1_000_000;

/// The end of the last top-level call of any thread: `State::last_end`, readable without the
/// state's lock at a call's start.
static LAST_END: AtomicU64 = AtomicU64::new(0);

/// Set when the counters cannot be read (no `/proc`, or a kernel without scheduler
/// statistics): no gap is measured after that.
static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// `IOTREX_GAP_WAITS=0` turns the measurement off (for a comparison with traces that do not
/// have it: the replay then takes every gap as compute, as before format minor 11).
pub fn init() {
    if std::env::var("IOTREX_GAP_WAITS").is_ok_and(|v| v == "0") {
        UNAVAILABLE.store(true, Ordering::Relaxed);
    }
}

/// One reading of this thread's counters, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reading {
    /// The tracer's clock when read.
    at: u64,
    /// Time on a CPU.
    cpu: u64,
    /// Time runnable, waiting for a CPU.
    runq: u64,
}

thread_local! {
    /// This thread's last reading at the end of a call.
    static LAST: Cell<Option<Reading>> = const { Cell::new(None) };
    /// The reading taken at the start of the call being made, if its gap was long.
    static ENTRY: Cell<Option<Reading>> = const { Cell::new(None) };
}

/// The start of a top-level traced call (`child`: nested in another, never measured): the
/// tracer's clock, after reading the counters when the gap since the last call is long.
#[inline(always)]
pub fn call_start(child: bool) -> u64 {
    let t = crate::state::now_ns();
    if child || t.wrapping_sub(LAST_END.load(Ordering::Relaxed)) < MIN_GAP_NS {
        return t;
    }
    read_at_start()
}

#[cold]
#[inline(never)]
fn read_at_start() -> u64 {
    let r = read().map(|(r, _)| r);
    let _ = ENTRY.try_with(|e| e.set(r));
    // The reading's own cost belongs to the gap (CPU time, counted as such), not the call.
    crate::state::now_ns()
}

/// What a top-level call that ran from `t0` to `t1` after a gap of `gap` ns records as its
/// gap's off-CPU time (zero where the gap was not measured), and whether a reading should be
/// taken once the state's lock is released ([`read_at_end`]). Called under the lock.
#[inline(always)]
pub fn in_gap(t0: u64, t1: u64, gap: u64) -> (GapWaits, bool) {
    LAST_END.store(t1, Ordering::Relaxed);
    if gap < MIN_GAP_NS && t1.saturating_sub(t0) < MIN_GAP_NS {
        return (GapWaits::default(), false);
    }
    in_long_gap(t0, gap)
}

#[cold]
#[inline(never)]
fn in_long_gap(t0: u64, gap: u64) -> (GapWaits, bool) {
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return (GapWaits::default(), false);
    }
    let entry = ENTRY.try_with(|e| e.take()).ok().flatten();
    let last = LAST.try_with(|l| l.get()).ok().flatten();
    let w = match (entry, last) {
        // The entry reading is this call's: taken just before its start.
        (Some(e), Some(l)) if gap >= MIN_GAP_NS && e.at <= t0 && l.at <= e.at => split(l, e, gap),
        _ => GapWaits::default(),
    };
    (w, true)
}

/// The off-CPU time of a gap of `gap` ns that ends at reading `e`, from the thread's readings
/// `l` and `e`. The window between them is the gap and, before it, calls and short gaps that
/// were not read; those are given the window's off-CPU time first, up to their wall time.
fn split(l: Reading, e: Reading, gap: u64) -> GapWaits {
    let window = e.at - l.at;
    let cpu = e.cpu.saturating_sub(l.cpu);
    let runq = e.runq.saturating_sub(l.runq);
    let blocked = window.saturating_sub(cpu.saturating_add(runq));
    let before = window.saturating_sub(gap);
    let blocked_gap = blocked.saturating_sub(before).min(gap);
    let before_left = before.saturating_sub(blocked);
    let runq_gap = runq.saturating_sub(before_left).min(gap - blocked_gap);
    GapWaits {
        runq_ns: runq_gap,
        blocked_ns: blocked_gap,
    }
}

/// Takes this thread's reading at the end of a call (after [`in_gap`] asked for it).
#[cold]
#[inline(never)]
pub fn read_at_end() {
    if let Some((r, started)) = read() {
        let _ = LAST.try_with(|l| l.set(Some(dated_at_start(r, started))));
    }
}

/// A reading's own system calls take about 5 us of CPU; one that took longer waited inside.
const READ_CPU_NS: u64 = 20_000;

/// Reading `r`, which started at `started`, dated at its start, the wait inside it (a switch
/// its clock update brought about) taken out of its waiting for a core. A reading at the end
/// of a call opens the window of the gap after it, which starts at the call's end: dated
/// after that wait, with the wait in its counters, the window missed it, and the gap took it
/// for CPU time (0.2-0.3 ms a gap of 5 ms, 8 ranks on 2 cores). A reading at the start of a
/// call closes its window, so a wait inside it is in the window as it is.
fn dated_at_start(r: Reading, started: u64) -> Reading {
    let wait = r.at.saturating_sub(started).saturating_sub(READ_CPU_NS);
    Reading {
        at: started.min(r.at),
        cpu: r.cpu,
        runq: r.runq.saturating_sub(wait),
    }
}

/// Reads `/proc/thread-self/schedstat` ("cpu_ns runq_ns timeslices") with raw system calls
/// (the tracer's own `open` and `read` hooks are not to see it), dated after it is read; and
/// when it started.
///
/// The file gives the kernel's `sum_exec_runtime`, which for the running thread is only
/// brought up to date at a scheduler tick (4 ms at HZ=250) or a switch: read as it is, a
/// reading misses up to a tick of CPU time. Two such readings around a gap of pure compute
/// are off by the difference of their misses, as often short as long, and [`split`] clamps
/// the short ones to no off-CPU time: CPU time taken for "blocked" (0.36-0.54 ms of a 9 ms
/// compute gap of `xstorage` on a tmpfs, 4 ranks on 2 cores: 12% of the compute lost to
/// `--compute work` and `mean`). `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` first makes the
/// kernel add the time since the last update (`task_sched_runtime`), about 0.3 us more. A
/// switch it brings about (the update may end the thread's slice) comes before the file is
/// read, and the date after it, so the wait is in the window it is counted in.
fn read() -> Option<(Reading, u64)> {
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    let started = crate::state::now_ns();
    let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: a clock id and a writable timespec; the value is not used (only its effect).
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_THREAD_CPUTIME_ID,
            ts.as_mut_ptr(),
        )
    };
    let mut buf = [0u8; 128];
    let Some(fd) = crate::rawfd::open_read(c"/proc/thread-self/schedstat") else {
        UNAVAILABLE.store(true, Ordering::Relaxed);
        return None;
    };
    // SAFETY: `buf` is writable for its length; `fd` is ours until the close below.
    let n = unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
    crate::rawfd::close(fd);
    let at = crate::state::now_ns();
    let r = (n > 0)
        .then(|| parse(&buf[..n as usize]))
        .flatten()
        .map(|(cpu, runq)| Reading { at, cpu, runq });
    if r.is_none() {
        UNAVAILABLE.store(true, Ordering::Relaxed);
    }
    r.map(|r| (r, started))
}

/// The first two numbers of a schedstat line.
fn parse(b: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split_ascii_whitespace().map(|x| x.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(at: u64, cpu: u64, runq: u64) -> Reading {
        Reading { at, cpu, runq }
    }

    #[test]
    fn a_gap_read_at_both_ends_is_split_as_measured() {
        // 10 ms: 4 on a CPU, 1 waiting for one, 5 blocked.
        let w = split(
            r(0, 100, 50),
            r(10_000_000, 4_000_100, 1_000_050),
            10_000_000,
        );
        assert_eq!(w.runq_ns, 1_000_000);
        assert_eq!(w.blocked_ns, 5_000_000);
    }

    #[test]
    fn off_cpu_time_before_the_gap_is_the_calls_first() {
        // A 12 ms window: 2 ms of calls before a 10 ms gap, 3 ms blocked in all. The calls
        // may have been blocked for their 2 ms: the gap is charged 1 at most.
        let w = split(r(0, 0, 0), r(12_000_000, 9_000_000, 0), 10_000_000);
        assert_eq!(w.blocked_ns, 1_000_000);
        assert_eq!(w.runq_ns, 0);
        // Never more than the gap.
        let w = split(r(0, 0, 0), r(5_000_000, 0, 5_000_000), 2_000_000);
        assert_eq!(w.blocked_ns, 0);
        assert_eq!(w.runq_ns, 2_000_000);
    }

    #[test]
    fn a_wait_inside_an_end_reading_opens_the_next_window() {
        // Started at 1 ms, dated at 4 ms: 3 ms inside, of which all but the reading's own
        // cost was waiting for a core (in the counters already).
        let l = dated_at_start(r(4_000_000, 700_000, 3_500_000), 1_000_000);
        assert_eq!(l.at, 1_000_000);
        assert_eq!(l.runq, 3_500_000 - (3_000_000 - READ_CPU_NS));
        assert_eq!(l.cpu, 700_000);
        // A window from it over a 10 ms gap of 6 ms compute holds that wait: 3 ms (less the
        // reading's cost) of the gap waited for a core, not computed.
        let e = Reading {
            at: 11_000_000,
            cpu: 6_700_000,
            runq: 3_500_000 + 1_000_000,
        };
        let w = split(l, e, 10_000_000);
        assert_eq!(w.runq_ns, 1_000_000 + 3_000_000 - READ_CPU_NS);
        // A quick reading is only dated earlier.
        let q = dated_at_start(r(1_005_000, 1, 2), 1_000_000);
        assert_eq!((q.at, q.cpu, q.runq), (1_000_000, 1, 2));
    }

    #[test]
    fn schedstat_lines_parse() {
        assert_eq!(
            parse(b"94877079 536007917 37\n"),
            Some((94877079, 536007917))
        );
        assert_eq!(parse(b"garbage"), None);
        assert_eq!(parse(b"1"), None);
    }

    /// This thread's CPU time by its clock, which brings the kernel's count up to date.
    fn thread_cpu() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a clock id and a writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    #[test]
    fn a_reading_holds_the_cpu_time_up_to_it() {
        // Work with no clock read (which would bring the kernel's count up to date), several
        // milliseconds: without the update the file lags by up to a tick, 4 ms at HZ=250.
        let before = thread_cpu();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let (r, _) = read().expect("/proc/thread-self/schedstat");
        let clock = thread_cpu();
        assert!(
            clock - before > 5_000_000,
            "the work took {} ns",
            clock - before
        );
        // The reading's own system calls and the clock's: microseconds.
        assert!(
            clock >= r.cpu && clock - r.cpu < 200_000,
            "the reading says {} ns of CPU, the thread's clock just after {clock} ns",
            r.cpu
        );
    }
}
