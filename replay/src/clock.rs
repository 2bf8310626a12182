//! Accurate waits and lateness statistics.
//!
//! A wait sleeps until shortly before its absolute deadline, then spins on the monotonic clock:
//! the kernel's sleep overshoots by tens of microseconds, spinning does not. Deadlines are
//! absolute per rank, so one late wake-up does not shift every later event.
//!
//! Spinning only helps when the spinning rank has a core to itself. When more ranks wait on a
//! node than it has cores (16 ranks on 2 cores, or `--threads` with 64 ranks), a spinning rank
//! takes the core from the rank whose deadline has come, and every rank ends up late by a
//! scheduler time slice (milliseconds). A [`Waiter`] therefore counts the ranks waiting in this
//! process, multiplies by the MPI ranks on this node (from the launcher's environment) and,
//! when that exceeds the cores, sleeps all the way to the deadline instead, only yielding for
//! the last few microseconds.

use serde::Serialize;
use std::num::NonZeroU64;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Sleep only until this long before the deadline, then spin. With the timer slack at 1 ns
/// (see [`Waiter::new`]) the kernel wakes a sleeper within a few tens of microseconds on an
/// idle core; this margin also covers a busy one.
pub const SPIN_NS: u64 = 200_000;

/// On an oversubscribed node: sleep until this long before the deadline, then yield the core
/// until it comes (a yield lets a rank whose deadline has come run first).
pub const YIELD_NS: u64 = 20_000;

/// Ranks of this process currently holding a [`Waiter`].
static RANKS_HERE: AtomicUsize = AtomicUsize::new(0);

/// The job's processes on this machine, where the MPI replay learnt them
/// ([`set_machine_procs`]).
static MACHINE_PROCS: OnceLock<usize> = OnceLock::new();

/// Says that `n` processes of the job run on this machine, as the MPI replay learns at start
/// from the ranks' machine ids ([`rsd::nodes::machine_id`]). The launcher counts the ranks of
/// its node only, and the emulated nodes of one machine (network and UTS namespaces) share
/// its cores: 2 nodes x 2 ranks on 2 cores are 4 ranks on 2 cores, not 2. Only the first
/// call counts.
pub fn set_machine_procs(n: usize) {
    let _ = MACHINE_PROCS.set(n.max(1));
}

/// MPI ranks on this machine: as learnt ([`set_machine_procs`]), else on this node from the
/// launcher (Open MPI, MPICH/Hydra, Slurm); 1 if unknown.
fn local_procs() -> usize {
    if let Some(&n) = MACHINE_PROCS.get() {
        return n;
    }
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        [
            "OMPI_COMM_WORLD_LOCAL_SIZE",
            "MPI_LOCALNRANKS",
            "SLURM_NTASKS_PER_NODE",
        ]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1)
    })
}

/// Cores of this node. The online CPU list, not this process's affinity: mpirun binds each
/// rank to one core when it does not oversubscribe, which says nothing about the node.
fn cores() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        let affinity = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| count_cpu_list(s.trim()))
            .unwrap_or(affinity)
            .max(1)
    })
}

/// The number of CPUs in a kernel CPU list such as `0-3,8,10-11`, or `None` if malformed.
fn count_cpu_list(s: &str) -> Option<usize> {
    let mut n = 0;
    for part in s.split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// Ranks on this machine when this process holds `ranks_here` of them, and its cores.
pub fn node_load(ranks_here: usize) -> (usize, usize) {
    (ranks_here.max(1) * local_procs(), cores())
}

/// Whether `ranks_here` ranks waiting in this process oversubscribe this node's cores.
pub fn oversubscribed(ranks_here: usize) -> bool {
    let (ranks, cores) = node_load(ranks_here);
    ranks > cores
}

/// One rank's waits. Creating it counts the rank as waiting in this process (until it is
/// dropped) and sets the calling thread's timer slack to 1 ns: the default 50 µs slack lets the
/// kernel defer a sleeper's wake-up by that much to batch timers, which is lateness.
#[derive(Debug)]
pub struct Waiter {
    _private: (),
}

impl Waiter {
    /// Registers a rank; call it on the thread that will wait.
    pub fn new() -> Self {
        // Failure only costs accuracy (the default slack stays), so it is not an error.
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
        RANKS_HERE.fetch_add(1, Ordering::Relaxed);
        Waiter { _private: () }
    }

    /// Waits until `deadline`, returning at once when it has passed.
    pub fn wait_until(&self, deadline: Instant) {
        // A pooled rank gives its worker thread to the other ranks until then.
        if crate::sched::in_task() {
            return crate::sched::sleep_until(deadline);
        }
        if oversubscribed(RANKS_HERE.load(Ordering::Relaxed)) {
            wait_shared(deadline);
        } else {
            wait_until(deadline);
        }
    }
}

impl Default for Waiter {
    fn default() -> Self {
        Waiter::new()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        RANKS_HERE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Waits shorter than this are spun through: a sleep this short costs more than it saves.
pub const MIN_SLEEP_NS: u64 = 20_000;

/// Waits until `deadline` by sleeping, then spinning for the last [`SPIN_NS`], or for the
/// last half of a wait shorter than twice that; returns at once when it has passed. For a rank
/// with a core to itself.
///
/// Why half: at 10,000 ops/s every wait is under 100 µs, and a fixed 200 µs margin spun
/// through all of them, so the rank used its core all the time. The kernel then throttles it:
/// for 50 ms a second under SCHED_FIFO (the real-time limit), for whole time slices when other
/// processes want the core. Under SCHED_FIFO on a loaded 2-core machine, sleeping half of
/// each wait issued 99.4% and 99.9% of a 10,000 ops/s replay's calls within 100 µs (p99 74 and
/// 21 µs), against 95.7% and 94.7% (p99 33 and 42 ms) with the fixed margin; under the normal
/// scheduler the two did alike.
pub fn wait_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    let left = deadline - now;
    let margin = if left >= Duration::from_nanos(2 * SPIN_NS) {
        Duration::from_nanos(SPIN_NS)
    } else if left >= Duration::from_nanos(2 * MIN_SLEEP_NS) {
        left / 2
    } else {
        left
    };
    if left > margin {
        std::thread::sleep(left - margin);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// Waits until `deadline` on an oversubscribed node: sleeps until [`YIELD_NS`] before it, then
/// yields the core until it comes, so that waiting ranks never hold a core a due rank needs.
pub fn wait_shared(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    let left = deadline - now;
    if left > Duration::from_nanos(YIELD_NS) {
        std::thread::sleep(left - Duration::from_nanos(YIELD_NS));
    }
    while Instant::now() < deadline {
        std::thread::yield_now();
    }
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Work shorter than this is spun on the monotonic clock rather than the thread's CPU clock.
pub const SHORT_WORK_NS: u64 = 20_000;

/// Computes for `work` of this thread's CPU time (`--compute work`): time spent off the core
/// does not count, so a rank sharing its core takes longer, as the application's did.
pub fn burn_cpu(work: Duration) {
    if work.is_zero() {
        return;
    }
    // Short work is spun on the monotonic clock (vDSO, no system call): a rank is rarely
    // descheduled within it, and two thread-clock reads per call (~0.5 us) made a replay of
    // many small calls 10-40% slower than its trace.
    if work < Duration::from_nanos(SHORT_WORK_NS) {
        let end = Instant::now() + work;
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        return;
    }
    let work = work.as_nanos() as u64;
    let end = thread_cpu_ns() + work;
    // Reading the thread clock is a system call (~0.2 us); a few hundred spins between reads
    // keep that cost small against the work without overshooting it by more than ~1 us.
    while thread_cpu_ns() < end {
        for _ in 0..256 {
            std::hint::spin_loop();
        }
    }
}

/// Sub-buckets per power of two in [`Lateness`]: values are kept to within 1/64 (1.6%).
const SUB: u64 = 64;
const SUB_BITS: u32 = 6;
/// Buckets for values up to 2^40 ns (18 minutes), beyond which everything shares the last.
const NBUCKETS: usize = ((40 - SUB_BITS as usize) + 1) * SUB as usize;

/// A log-linear histogram of lateness in ns: constant memory whatever the event count,
/// mergeable across ranks, exact counts under the 10/50/100 µs thresholds the issue asks for.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Lateness {
    /// Samples per bucket.
    pub buckets: Vec<u64>,
    /// Number of samples.
    pub count: u64,
    /// Largest sample.
    pub max: u64,
    /// Samples at most 10, 50 and 100 µs late.
    pub within: [u64; 3],
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; NBUCKETS],
            count: 0,
            max: 0,
            within: [0; 3],
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros(); // >= SUB_BITS
    let sub = (ns >> (e - SUB_BITS)) & (SUB - 1);
    (((e - SUB_BITS + 1) as u64 * SUB + sub) as usize).min(NBUCKETS - 1)
}

/// The smallest value of a bucket (an under-estimate by less than 1.6%).
fn bucket_low(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let e = b / SUB - 1 + SUB_BITS as u64;
    let sub = b % SUB;
    (1 << e) | (sub << (e - SUB_BITS as u64))
}

impl Lateness {
    /// Adds one sample.
    pub fn add(&mut self, ns: u64) {
        self.buckets[bucket(ns)] += 1;
        self.count += 1;
        self.max = self.max.max(ns);
        for (i, t) in [10_000, 50_000, 100_000].iter().enumerate() {
            if ns <= *t {
                self.within[i] += 1;
            }
        }
    }

    /// Folds another histogram in.
    pub fn merge(&mut self, o: &Lateness) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.max = self.max.max(o.max);
        for i in 0..3 {
            self.within[i] += o.within[i];
        }
    }

    /// The `q` quantile (0..=1) in ns, or 0 without samples.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max;
        }
        let mut seen = 0;
        for (b, c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_low(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            127,
            128,
            1000,
            10_000,
            123_456,
            1 << 39,
        ] {
            let b = bucket(v);
            assert!(b >= last);
            last = b;
            let lo = bucket_low(b);
            assert!(lo <= v && v - lo <= v / 64, "{v} -> {lo}");
        }
    }

    #[test]
    fn quantiles() {
        let mut l = Lateness::default();
        for v in 1..=1000u64 {
            l.add(v * 100);
        }
        let p50 = l.quantile(0.5);
        assert!((49_000..=50_000).contains(&p50), "{p50}");
        assert_eq!(l.quantile(1.0), 100_000);
        assert_eq!(l.within, [100, 500, 1000]);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn oversubscription_counts_ranks_against_cores() {
        // One rank never oversubscribes (unless the launcher says the node is full); a
        // thousand ranks as threads always do on any machine this runs on.
        assert!(!oversubscribed(1) || local_procs() > 1);
        assert!(oversubscribed(cores() + 1));
    }

    #[test]
    fn shared_wait_is_accurate() {
        let t = Instant::now() + Duration::from_micros(500);
        wait_shared(t);
        let now = Instant::now();
        assert!(now >= t);
        assert!(now - t < Duration::from_millis(5), "{:?}", now - t);
    }

    #[test]
    fn wait_is_accurate() {
        // Never early; its accuracy is measured by the `accuracy` example, not here (a test
        // beside others on 2 cores can lose the core for milliseconds).
        let t = Instant::now() + Duration::from_micros(500);
        wait_until(t);
        let now = Instant::now();
        assert!(now >= t, "returned {:?} early", t - now);
        assert!(now - t < Duration::from_millis(100), "{:?} late", now - t);
    }
}
