//! The replay's watchdog: no replay waits forever.
//!
//! Every call a rank issues is bracketed by [`Watch::enter`] and [`Watch::leave`], which store
//! (lock-free, a few relaxed atomics) what the rank is in and since when. One thread per
//! process looks at the slots four times a second; when a rank has been inside one call past
//! that call's bound it reports what every rank of the process is blocked in and calls the
//! runtime's stall action (the threads runtime makes every rank give up, then exits the
//! process if one does not; the MPI runtime aborts the job). A call's bound comes from the
//! trace: `--stall-timeout` plus ten times the longest the call took when traced (scaled by
//! `--time-scale`), so a slow call that was slow when traced is not mistaken for a hang, and a
//! receive whose message never comes ends after the timeout.

use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `--stall-timeout`'s default.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How many times its longest traced duration a call may take beyond `--stall-timeout`.
pub const TRACED_FACTOR: f64 = 10.0;
/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(250);
/// Ranks listed in a stall report; the rest are counted.
const LISTED: usize = 32;

/// `since` of a slot whose rank is between calls.
const IDLE: u64 = 0;
/// `since` of a slot whose rank finished.
const DONE: u64 = u64::MAX;
/// `op` of a slot in the rank's end-of-run work (closing what the trace left open).
const FINISHING: usize = usize::MAX;

#[derive(Default)]
struct Slot {
    rank: AtomicU64,
    /// Nanoseconds since the watch started, plus one, when the current call began.
    since: AtomicU64,
    bound_ns: AtomicU64,
    /// Index in [`Op::ALL`], or [`FINISHING`].
    op: AtomicUsize,
    /// The rank's call number (0-based).
    call: AtomicU64,
    peer: AtomicI64,
    tag: AtomicI64,
    comm: AtomicI64,
    /// The request a completion or start call acts on (or a nonblocking call makes).
    req: AtomicI64,
}

/// What the ranks of this process are in, for the watchdog.
pub struct Watch {
    t0: Instant,
    slots: Box<[Slot]>,
    fired: AtomicBool,
}

impl Watch {
    /// A watch over `ranks`, one slot each, in that order.
    pub fn new(ranks: impl IntoIterator<Item = u32>) -> Arc<Watch> {
        let slots: Box<[Slot]> = ranks
            .into_iter()
            .map(|r| {
                let s = Slot::default();
                s.rank.store(u64::from(r), Ordering::Relaxed);
                s
            })
            .collect();
        Arc::new(Watch {
            t0: Instant::now(),
            slots,
            fired: AtomicBool::new(false),
        })
    }

    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64 + 1
    }

    /// Slot `slot`'s rank starts call number `call`, `e`, which may take up to `bound`.
    pub fn enter(&self, slot: usize, e: &FlatEvent, call: u64, bound: Duration) {
        let Some(s) = self.slots.get(slot) else {
            return;
        };
        let idx = Op::ALL.iter().position(|o| *o == e.op).unwrap_or(FINISHING);
        s.op.store(idx, Ordering::Relaxed);
        s.call.store(call, Ordering::Relaxed);
        let peer = e
            .get(Param::Peer)
            .or(e.get(Param::Source))
            .or(e.get(Param::Root))
            .unwrap_or(i64::MIN);
        s.peer.store(peer, Ordering::Relaxed);
        s.tag.store(
            e.get(Param::Tag)
                .or(e.get(Param::Recvtag))
                .unwrap_or(i64::MIN),
            Ordering::Relaxed,
        );
        s.comm
            .store(e.get(Param::Comm).unwrap_or(i64::MIN), Ordering::Relaxed);
        s.req
            .store(e.get(Param::Request).unwrap_or(i64::MIN), Ordering::Relaxed);
        s.bound_ns.store(
            bound.as_nanos().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
        s.since.store(self.now(), Ordering::Release);
    }

    /// Slot `slot`'s rank starts its end-of-run work (closing files, flushing streams).
    pub fn enter_finish(&self, slot: usize, bound: Duration) {
        if let Some(s) = self.slots.get(slot) {
            s.op.store(FINISHING, Ordering::Relaxed);
            s.bound_ns.store(
                bound.as_nanos().min(u64::MAX as u128) as u64,
                Ordering::Relaxed,
            );
            s.since.store(self.now(), Ordering::Release);
        }
    }

    /// Slot `slot`'s rank left its call.
    pub fn leave(&self, slot: usize) {
        if let Some(s) = self.slots.get(slot) {
            s.since.store(IDLE, Ordering::Release);
        }
    }

    /// Slot `slot`'s rank is done (finished or failed).
    pub fn done(&self, slot: usize) {
        if let Some(s) = self.slots.get(slot) {
            s.since.store(DONE, Ordering::Release);
        }
    }

    /// Whether the watchdog reported a stall.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// The stall report when some rank is past its call's bound.
    pub fn stalled(&self) -> Option<String> {
        let now = self.now();
        let over = self.slots.iter().find(|s| {
            let since = s.since.load(Ordering::Acquire);
            since != IDLE
                && since != DONE
                && now.saturating_sub(since) > s.bound_ns.load(Ordering::Relaxed)
        })?;
        let mut out = format!(
            "replay stalled: rank {} has been in {} past its bound of {}",
            over.rank.load(Ordering::Relaxed),
            describe(over),
            secs(over.bound_ns.load(Ordering::Relaxed)),
        );
        out.push_str("\nwhere each rank is:");
        for (i, s) in self.slots.iter().enumerate() {
            if i == LISTED {
                out.push_str(&format!(
                    "\n  ... and {} more ranks",
                    self.slots.len() - LISTED
                ));
                break;
            }
            let since = s.since.load(Ordering::Acquire);
            let r = s.rank.load(Ordering::Relaxed);
            let what = match since {
                IDLE => format!(
                    "between calls (after call {})",
                    s.call.load(Ordering::Relaxed)
                ),
                DONE => "finished".to_string(),
                _ => format!("in {} for {}", describe(s), secs(now.saturating_sub(since))),
            };
            out.push_str(&format!("\n  rank {r}: {what}"));
        }
        Some(out)
    }
}

fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// "MPI_Recv (call 12, peer +1, tag 5, comm 0)", with the parameters the call has.
fn describe(s: &Slot) -> String {
    let op = s.op.load(Ordering::Relaxed);
    let Some(op) = Op::ALL.get(op) else {
        return "its end-of-run work (closing the files the trace left open)".to_string();
    };
    let mut parts = vec![format!("call {}", s.call.load(Ordering::Relaxed))];
    let peer = s.peer.load(Ordering::Relaxed);
    if peer != i64::MIN {
        let what = if op.index(Param::Root).is_some() {
            format!("root {peer}")
        } else {
            // Stored relative to the caller.
            format!("peer {peer:+}")
        };
        parts.push(what);
    }
    for (name, v) in [("tag", &s.tag), ("comm", &s.comm), ("request", &s.req)] {
        let v = v.load(Ordering::Relaxed);
        if v != i64::MIN {
            parts.push(format!("{name} {v}"));
        }
    }
    format!("{} ({})", op.name(), parts.join(", "))
}

/// The bound of a call whose longest traced duration was `traced_max_ns`.
pub fn bound(stall_timeout: Duration, traced_max_ns: f64, time_scale: f64) -> Duration {
    let traced = (traced_max_ns.max(0.0) * time_scale * TRACED_FACTOR).min(1e18);
    stall_timeout + Duration::from_nanos(traced as u64)
}

/// The watchdog thread; stops when dropped.
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts watching `watch`; on the first stall, prints the report to stderr and runs
    /// `on_stall` on the watchdog's thread (once), with the flag that dropping the watchdog
    /// sets (so the action can wait for the replay to wind down, and act if it does not).
    pub fn start(
        watch: Arc<Watch>,
        on_stall: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> Watchdog {
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                while !st.load(Ordering::SeqCst) {
                    std::thread::sleep(TICK);
                    if let Some(report) = watch.stalled() {
                        watch.fired.store(true, Ordering::SeqCst);
                        eprintln!("{report}");
                        on_stall(&st);
                        return;
                    }
                }
            })
            .ok();
        Watchdog { stop, handle }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take()
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(op: Op, params: Vec<i64>) -> FlatEvent {
        FlatEvent {
            op,
            sig: 0,
            path: None,
            params,
            children: Vec::new(),
        }
    }

    #[test]
    fn reports_the_rank_past_its_bound_and_where_the_others_are() {
        let w = Watch::new([0, 1, 2]);
        let recv = ev(Op::Recv, rsd::op::args::recv(1, 0, 1, 7, 0, 4));
        w.enter(0, &recv, 12, Duration::ZERO);
        w.enter(1, &recv, 3, Duration::from_secs(3600));
        w.done(2);
        std::thread::sleep(Duration::from_millis(2));
        let r = w.stalled().expect("rank 0 is past a zero bound");
        assert!(
            r.starts_with(
                "replay stalled: rank 0 has been in MPI_Recv (call 12, peer +1, tag 7, comm 0)"
            ),
            "{r}"
        );
        assert!(
            r.contains("rank 1: in MPI_Recv (call 3, peer +1, tag 7, comm 0) for"),
            "{r}"
        );
        assert!(r.contains("rank 2: finished"), "{r}");
        // A completion names its request.
        w.enter(1, &ev(Op::Wait, rsd::op::args::wait(4)), 4, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        let r = w.stalled().expect("both past their bound");
        assert!(r.contains("MPI_Wait (call 4, request 4)"), "{r}");
        w.leave(0);
        w.leave(1);
        assert!(w.stalled().is_none(), "no rank is past its bound");
    }

    #[test]
    fn bounds_grow_with_the_traced_duration() {
        let t = Duration::from_secs(5);
        assert_eq!(bound(t, 0.0, 1.0), t);
        assert_eq!(bound(t, 1e9, 1.0), Duration::from_secs(15));
        assert_eq!(bound(t, 1e9, 2.0), Duration::from_secs(25));
        assert_eq!(bound(t, f64::NAN, 1.0), t);
    }

    #[test]
    fn the_watchdog_fires_once_on_a_stall() {
        let w = Watch::new([0]);
        let (tx, rx) = std::sync::mpsc::channel();
        let _dog = Watchdog::start(w.clone(), move |_| tx.send(()).unwrap());
        w.enter(0, &ev(Op::Barrier, vec![0]), 0, Duration::from_millis(10));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the stall action ran");
        assert!(w.fired());
    }
}
