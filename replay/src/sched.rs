//! M:N scheduling for `--threads`: more ranks than `--max-threads` run as stackful coroutines
//! on that many OS threads.
//!
//! An extrapolated trace of thousands of ranks cannot have one OS thread per rank on every
//! machine, yet a rank blocked in a barrier or a receive must not hold back the ranks it waits
//! for. Each rank's whole walk therefore runs on its own small coroutine stack (mmapped, with a
//! guard page), and every place a rank would block gives its worker thread to the next rank
//! instead: [`wait_until`] for a condition another rank makes true (barriers, receives),
//! [`sleep_until`] for a deadline (compute gaps, communication delays). The walk itself is
//! unchanged, so each rank's calls keep their order and the synchronisation between ranks is
//! the same as with one thread per rank.
//!
//! A worker round-robins its ranks. A rank blocked on a condition is only resumed after a
//! change that may concern a rank of its worker ([`notify_task`]: a message sent to it, a
//! barrier it is in released; [`notify`]: a rank finished or the replay aborted), or every
//! [`RECHECK`] in case a change was missed; a worker with nothing to run parks on its own
//! condition variable until such a change or its earliest deadline, so it never spins for
//! long, and a message wakes only the worker of its receiver, not every parked worker and
//! every blocked rank of the pool.
//!
//! What a coroutine cannot give away: a blocking I/O system call (or `--compute work`'s CPU
//! burn) holds its worker, so at most `workers` ranks are in I/O at once.

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A rank blocked on a condition is re-checked at least this often even if no change was
/// announced, and an idle worker parks at most this long: the same period as the abort checks
/// of thread ranks.
pub const RECHECK: Duration = Duration::from_millis(50);

/// Wake-ups closer than this to a deadline are not slept for: the worker yields its core until
/// the deadline instead, as [`crate::clock::wait_shared`] does (a condvar wait overshoots by
/// tens of microseconds).
const YIELD_BEFORE: Duration = Duration::from_nanos(crate::clock::YIELD_NS);

/// What a suspended rank tells its worker.
#[derive(Debug, Clone, Copy)]
enum Wake {
    /// Runnable again at once: it only let the others run.
    Now,
    /// Blocked until another rank changes shared state.
    Blocked,
    /// Asleep until this instant.
    At(Instant),
}

type Y = Yielder<(), Wake>;

thread_local! {
    /// The yielder of the coroutine running on this thread, while one runs.
    static CURRENT: Cell<Option<*const Y>> = const { Cell::new(None) };
    /// The pool this worker belongs to, for [`notify`] and [`notify_task`].
    static POOL: RefCell<Option<Arc<Pool>>> = const { RefCell::new(None) };
}

/// Whether the calling code runs as a rank coroutine of a pool.
pub fn in_task() -> bool {
    CURRENT.with(|c| c.get().is_some())
}

/// Suspends the running coroutine with `w`; false (and nothing done) outside one.
#[allow(unsafe_code)]
fn suspend(w: Wake) -> bool {
    let Some(y) = CURRENT.with(|c| c.take()) else {
        return false;
    };
    // SAFETY: CURRENT holds the yielder of the coroutine running on this thread, set by that
    // coroutine's own body (`run_task`) from the reference corosensei gives it, which stays
    // valid for as long as the body runs; the coroutine cannot move to another thread
    // (`Coroutine` is not `Send`). We took the pointer out of CURRENT, so while this
    // coroutine is suspended nothing on this thread can reach it, and we put it back only
    // once resumed, that is when this same coroutine runs again.
    let yielder = unsafe { &*y };
    yielder.suspend(w);
    CURRENT.with(|c| c.set(Some(y)));
    true
}

/// Lets the other ranks of this worker run; outside a pool, yields the OS thread.
pub fn yield_now() {
    if !suspend(Wake::Now) {
        std::thread::yield_now();
    }
}

/// Waits until `poll` gives a value, re-polling after other ranks change shared state (see
/// [`notify`]); returns that value. Meant for rank coroutines ([`in_task`]); elsewhere it polls
/// every 100 µs.
pub fn wait_until<T>(mut poll: impl FnMut() -> Option<T>) -> T {
    loop {
        if let Some(t) = poll() {
            return t;
        }
        if !suspend(Wake::Blocked) {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// Waits until `deadline`, letting the other ranks of this worker run meanwhile; returns at
/// once when it has passed. Outside a pool, waits as [`crate::clock::wait_shared`].
pub fn sleep_until(deadline: Instant) {
    while Instant::now() < deadline {
        if !suspend(Wake::At(deadline)) {
            crate::clock::wait_shared(deadline);
            return;
        }
    }
}

/// Announces a change any blocked rank may wait for (a rank finished or failed): every
/// blocked rank of this pool re-checks its condition. Does nothing outside a pool.
pub fn notify() {
    POOL.with(|p| {
        if let Some(p) = &*p.borrow() {
            p.workers.iter().for_each(Signal::bump);
        }
    });
}

/// Announces a change only the tasks `ids` (as numbered by [`run`]) wait for (a message to
/// one, a barrier of those released): the blocked ranks of their workers re-check their
/// conditions. Does nothing outside a pool.
pub fn notify_tasks(ids: impl IntoIterator<Item = usize>) {
    POOL.with(|p| {
        if let Some(p) = &*p.borrow() {
            let m = p.workers.len();
            let mut seen = vec![false; m];
            for i in ids {
                let w = i % m;
                if !std::mem::replace(&mut seen[w], true) {
                    p.workers[w].bump();
                }
            }
        }
    });
}

/// As [`notify_tasks`] for one task.
pub fn notify_task(id: usize) {
    notify_tasks([id]);
}

/// A pool: one change signal per worker (task `i` runs on worker `i % workers.len()`).
struct Pool {
    workers: Vec<Signal>,
}

/// Change announcements for one worker: a counter, and a condition variable it parks on.
#[derive(Default)]
struct Signal {
    epoch: AtomicU64,
    parked: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Signal {
    fn bump(&self) {
        // SeqCst on both sides: either the parker sees the new epoch before waiting, or this
        // sees the parker and notifies under the lock the parker checks under.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_all();
        }
    }

    /// Parks until the epoch moves past `seen` or `until`.
    fn park(&self, seen: u64, until: Instant) {
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.parked.fetch_add(1, Ordering::SeqCst);
        loop {
            let now = Instant::now();
            if self.epoch.load(Ordering::SeqCst) != seen || now >= until {
                break;
            }
            g = match self.cv.wait_timeout(g, until - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        self.parked.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One rank on a worker.
struct Task<T> {
    id: usize,
    co: Coroutine<(), Wake, T, DefaultStack>,
    wake: Wake,
    /// For a blocked rank: the epoch before its last check, and when that was.
    checked: (u64, Instant),
}

/// The body of every rank coroutine: registers its yielder for [`suspend`], runs the rank.
fn run_task<T>(y: &Y, f: impl FnOnce() -> T) -> T {
    CURRENT.with(|c| c.set(Some(y as *const Y)));
    let r = f();
    CURRENT.with(|c| c.set(None));
    r
}

/// Runs `n` tasks as coroutines with `stack` bytes of stack each on `workers` OS threads:
/// task `i` is `make(i)`, made and run on worker `i % workers`. Returns each task's result in
/// task order, or why it did not run to its end (its stack could not be mapped, its worker
/// could not start, or it panicked); `failed(i)` is called as soon as task `i` fails so the
/// others can give up instead of waiting for it.
pub fn run<T, F>(
    n: usize,
    workers: usize,
    stack: usize,
    make: impl Fn(usize) -> F + Sync,
    failed: impl Fn(usize) + Sync,
) -> Vec<Result<T, String>>
where
    T: Send + 'static,
    F: FnOnce() -> T + 'static,
{
    let workers = workers.clamp(1, n.max(1));
    let pool = Arc::new(Pool {
        workers: (0..workers).map(|_| Signal::default()).collect(),
    });
    let mut out: Vec<Option<Result<T, String>>> = (0..n).map(|_| None).collect();
    let (make, failed) = (&make, &failed);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for w in 0..workers {
            let mine = pool.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("ranks{w}"))
                .spawn_scoped(s, move || worker(w, n, stack, make, failed, mine));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    for i in (w..n).step_by(workers) {
                        failed(i);
                        out[i] = Some(Err(format!("cannot start worker thread {w}: {e}")));
                    }
                    pool.workers.iter().for_each(Signal::bump);
                }
            }
        }
        for h in handles {
            // A worker catches its ranks' panics, so joining fails only if the scheduler
            // itself panicked; its ranks then have no result and are reported below.
            if let Ok(done) = h.join() {
                for (i, r) in done {
                    out[i] = Some(r);
                }
            }
        }
    });
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err("its worker thread panicked".into())))
        .collect()
}

fn worker<T, F>(
    w: usize,
    n: usize,
    stack: usize,
    make: &(impl Fn(usize) -> F + Sync),
    failed: &(impl Fn(usize) + Sync),
    pool: Arc<Pool>,
) -> Vec<(usize, Result<T, String>)>
where
    T: Send + 'static,
    F: FnOnce() -> T + 'static,
{
    POOL.with(|p| *p.borrow_mut() = Some(pool.clone()));
    let workers = pool.workers.len();
    let sig = &pool.workers[w];
    let mut done = Vec::new();
    let mut tasks = Vec::new();
    let start = Instant::now();
    for id in (w..n).step_by(workers) {
        match DefaultStack::new(stack) {
            Ok(st) => {
                let f = make(id);
                tasks.push(Task {
                    id,
                    co: Coroutine::with_stack(st, move |y: &Y, ()| run_task(y, f)),
                    wake: Wake::Now,
                    checked: (0, start),
                });
            }
            Err(e) => {
                failed(id);
                done.push((id, Err(format!("cannot map the stack of rank {id}: {e}"))));
            }
        }
    }
    while !tasks.is_empty() {
        let seen = sig.epoch.load(Ordering::SeqCst);
        let mut progressed = false;
        let mut earliest: Option<Instant> = None;
        let mut i = 0;
        while i < tasks.len() {
            let now = Instant::now();
            let t = &mut tasks[i];
            let due = match t.wake {
                Wake::Now => true,
                Wake::At(d) => d <= now,
                // Nothing announced since its last check: it would find the same state.
                Wake::Blocked => {
                    sig.epoch.load(Ordering::SeqCst) != t.checked.0
                        || now.duration_since(t.checked.1) >= RECHECK
                }
            };
            if !due {
                if let Wake::At(d) = t.wake {
                    earliest = Some(earliest.map_or(d, |e| e.min(d)));
                }
                i += 1;
                continue;
            }
            let was_blocked = matches!(t.wake, Wake::Blocked);
            t.checked = (sig.epoch.load(Ordering::SeqCst), now);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.co.resume(())));
            // A panicking rank never cleared it.
            CURRENT.with(|c| c.set(None));
            match r {
                Ok(CoroutineResult::Yield(wk)) => {
                    progressed |= !(was_blocked && matches!(wk, Wake::Blocked));
                    if let Wake::At(d) = wk {
                        earliest = Some(earliest.map_or(d, |e| e.min(d)));
                    }
                    t.wake = wk;
                    i += 1;
                }
                Ok(CoroutineResult::Return(v)) => {
                    progressed = true;
                    let t = tasks.swap_remove(i);
                    done.push((t.id, Ok(v)));
                }
                Err(_) => {
                    progressed = true;
                    let t = tasks.swap_remove(i);
                    failed(t.id);
                    done.push((t.id, Err(format!("rank {} panicked", t.id))));
                }
            }
        }
        if progressed || tasks.is_empty() {
            continue;
        }
        // Nothing could run: wait for a change, the earliest deadline or the re-check period.
        let now = Instant::now();
        let until = earliest.map_or(now + RECHECK, |e| e.min(now + RECHECK));
        if until <= now + YIELD_BEFORE {
            std::thread::yield_now();
        } else {
            sig.park(seen, until - YIELD_BEFORE);
        }
    }
    POOL.with(|p| *p.borrow_mut() = None);
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn more_tasks_than_workers_wait_for_each_other() {
        // A chain: task i waits for task i-1's flag, in reverse order of how workers start
        // them, so every task but the first blocks before its predecessor has run.
        let n = 64;
        let t0 = Instant::now();
        let flags: Arc<Vec<AtomicBool>> =
            Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
        let r = run(
            n,
            3,
            64 << 10,
            |i| {
                let flags = flags.clone();
                move || {
                    let i = n - 1 - i;
                    assert!(in_task());
                    if i > 0 {
                        wait_until(|| flags[i - 1].load(Ordering::SeqCst).then_some(()));
                    }
                    flags[i].store(true, Ordering::SeqCst);
                    // Task n - 2 - i (as `run` numbers them) waits for this one.
                    if i + 1 < n {
                        notify_task(n - 2 - i);
                    }
                    i
                }
            },
            |_| {},
        );
        // Each wake-up is targeted: nothing waits for the 50 ms re-check.
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        let got: Vec<usize> = r.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, (0..n).rev().collect::<Vec<_>>());
        assert!(!in_task());
    }

    #[test]
    fn sleeping_tasks_share_a_worker_and_wake_on_time() {
        let t0 = Instant::now();
        let r = run(
            8,
            1,
            64 << 10,
            |i| {
                move || {
                    let d = t0 + Duration::from_millis(20 + i as u64);
                    sleep_until(d);
                    Instant::now().duration_since(d)
                }
            },
            |_| {},
        );
        // Eight sleeps until 20..27 ms on one thread overlap: one after the other they would
        // take at least 20 + 21 + ... + 27 = 188 ms. The bounds leave a loaded machine (this
        // runs beside other tests on 2 cores) room to be late without losing that distinction.
        assert!(
            t0.elapsed() < Duration::from_millis(180),
            "{:?}",
            t0.elapsed()
        );
        for late in r {
            assert!(late.unwrap() < Duration::from_millis(60));
        }
    }

    #[test]
    fn a_panic_fails_its_task_and_is_announced() {
        let failed = Mutex::new(Vec::new());
        let r = run(
            4,
            2,
            64 << 10,
            |i| {
                move || {
                    if i == 2 {
                        panic!("boom");
                    }
                    i
                }
            },
            |i| failed.lock().unwrap().push(i),
        );
        assert!(r[2].as_ref().is_err_and(|e| e.contains("rank 2 panicked")));
        assert_eq!(r[3], Ok(3));
        assert_eq!(*failed.lock().unwrap(), vec![2]);
    }
}
