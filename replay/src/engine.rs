//! One rank's replay: walks the rank's events lazily with their timing, waits out compute gaps
//! against absolute deadlines, issues POSIX and stdio calls through the OS, and hands MPI and
//! MPI-IO calls to a [`Runtime`] (threads in one process, or real MPI).

use crate::clock::Waiter;
use crate::deps::{IoCounter, IoDeps};
use crate::error::ReplayError;
use crate::local::{Local, Resolve};
use crate::options::{CommMode, ComputeMode, LayerView, Options};
use crate::report::RankStats;
use crate::root::{Mapped, Root};
use crate::watchdog::Watch;
use filetable::{Effect, FileTable};
use rsd::op::{Dir, Handle, Layer, Op, Param};
use rsd::timing::{Stats, Timing};
use rsd::trace::{Event, FlatEvent, Node, NodeKind, flatten_event, visit, visit_calls};
use std::collections::HashMap;
use std::time::{Duration, Instant};

// Where the rest of the replay and replay_mpi have always named them.
pub use crate::pattern::Pattern;
pub use crate::runtime::Runtime;

/// The mean time an event's nested calls took per occurrence of the event, in ns: their
/// recorded durations summed over every occurrence, over the event's occurrences.
fn children_dur(e: &Event) -> f64 {
    fn total(nodes: &[Node]) -> f64 {
        nodes
            .iter()
            .map(|n| match &n.kind {
                NodeKind::Event(c) => c.timing.dur.total() + total(&c.children),
                NodeKind::Loop(l) => total(&l.body),
            })
            .sum()
    }
    if e.timing.dur.count == 0 {
        return 0.0;
    }
    total(&e.children) / e.timing.dur.count as f64
}

/// One rank's replayer.
pub struct RankEngine<'a, R: Runtime> {
    rank: u32,
    opts: &'a Options,
    root: &'a Root,
    rt: R,
    /// The descriptors and streams this rank opened through the OS.
    local: Local,
    /// Paths of open MPI files, for nested POSIX calls under `--layer posix` whose descriptor
    /// the MPI library opened without the trace seeing it.
    fh_paths: HashMap<i64, String>,
    /// Descriptors opened for nested calls of an MPI file (by its handle), closed with it so a
    /// later file the library gave the same descriptor number is not written through them.
    nested_fds: HashMap<i64, Vec<i64>>,
    /// The rank's open files and datatypes: where each MPI-IO call's bytes lie.
    files: FileTable,
    data: Pattern,
    /// The planned issue time of the next call.
    deadline: Instant,
    /// The traced mean duration of the call being issued (`--open-loop` plans by it).
    traced_dur: f64,
    /// Waits out deadlines (spinning, or sleeping on an oversubscribed node).
    waiter: Waiter,
    start: Instant,
    rng: u64,
    /// Totals, filled as the rank goes.
    pub stats: RankStats,
    fatal: Option<ReplayError>,
    /// Where this rank's count of calls done goes, for a progress bar.
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The watchdog's view of this rank: the watch and this rank's slot in it.
    watch: Option<(std::sync::Arc<Watch>, usize)>,
    /// The measured I/O dependencies honoured ([`crate::deps`]), and this rank's count of
    /// its I/O calls as they number them.
    deps: Option<std::sync::Arc<IoDeps>>,
    io_count: IoCounter,
}

impl<'a, R: Runtime> RankEngine<'a, R> {
    /// A replayer for `rank`.
    pub fn new(rank: u32, opts: &'a Options, root: &'a Root, rt: R) -> Self {
        let now = Instant::now();
        RankEngine {
            rank,
            opts,
            root,
            rt,
            local: Local::default(),
            fh_paths: HashMap::new(),
            nested_fds: HashMap::new(),
            files: FileTable::new(),
            data: Pattern::default(),
            deadline: now,
            traced_dur: 0.0,
            waiter: Waiter::new(),
            start: now,
            rng: 0x2545_f491_4f6c_dd1d ^ (u64::from(rank) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            stats: RankStats {
                rank,
                ..RankStats::default()
            },
            fatal: None,
            progress: None,
            watch: None,
            deps: None,
            io_count: IoCounter::default(),
        }
    }

    /// Honours the I/O dependencies of `deps` (the same table on every rank).
    pub fn with_deps(mut self, deps: Option<std::sync::Arc<IoDeps>>) -> Self {
        if let Some(d) = &deps {
            self.io_count = IoCounter::new(d.from_init);
        }
        self.deps = deps;
        self
    }

    /// Tells `watch` (slot `slot`) what this rank is in, so that a stall is seen and reported.
    pub fn with_watch(mut self, watch: std::sync::Arc<Watch>, slot: usize) -> Self {
        self.watch = Some((watch, slot));
        self
    }

    /// Reports the calls done to `done` every [`crate::progress::EVERY`] calls.
    pub fn with_progress(mut self, done: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        self.progress = Some(done);
        self
    }

    /// The runtime, for the caller's own end-of-run work.
    pub fn runtime(&mut self) -> &mut R {
        &mut self.rt
    }

    /// Replays every event of this rank in `nodes`, in order, never holding more than one
    /// event's expansion in memory. Returns the rank's totals.
    pub fn run(self, nodes: &[Node]) -> Result<RankStats, ReplayError> {
        self.run_with(nodes, |_| {})
    }

    /// As [`RankEngine::run`], calling `finish` on the runtime after the last event, inside
    /// the timed run (the MPI runtime closes what the trace left open there).
    pub fn run_with(
        mut self,
        nodes: &[Node],
        finish: impl FnOnce(&mut R),
    ) -> Result<RankStats, ReplayError> {
        self.start = Instant::now();
        self.deadline = self.start;
        let mut idx = Vec::new();
        let rank = self.rank;
        let mut done = 0u64;
        let watch = self.watch.clone();
        let (stall, scale) = (self.opts.stall_timeout, self.opts.time_scale);
        let mut one = |s: &mut Self, e: &Event, idx: &mut Vec<u64>, top: bool| {
            // A loaded trace is resolved (`crate::load`); one that is not stops here rather
            // than replaying each model's start as the offset.
            let Some(flat) = flatten_event(e, rank, idx) else {
                s.fatal = Some(ReplayError::Unresolved {
                    rank,
                    op: e.op.name(),
                    sig: e.sig,
                });
                return false;
            };
            if let Some((w, slot)) = &watch {
                let b = crate::watchdog::bound(stall, e.timing.dur.max as f64, scale);
                w.enter(*slot, &flat, done, b);
            }
            // Only top-level calls are numbered, as the sensitivity's timelines number them.
            let io_call = match (&s.deps, top) {
                (Some(_), true) => s.io_count.next(e.op),
                _ => None,
            };
            s.step(&flat, e, io_call);
            if let Some((w, slot)) = &watch {
                w.leave(*slot);
            }
            done += 1;
            if done.is_multiple_of(crate::progress::EVERY)
                && let Some(p) = &s.progress
            {
                p.store(done, std::sync::atomic::Ordering::Relaxed);
            }
            s.fatal.is_none() && !s.rt.aborted()
        };
        // Library calls above MPI-IO (HDF5) are containers: what they made is issued, after
        // the container (as `visit_calls` hands them out).
        visit(nodes, rank, &mut idx, &mut |e, idx| {
            one(&mut self, e, idx, true)
                && (!e.op.layer().is_container()
                    || visit_calls(&e.children, rank, idx, &mut |c, idx| {
                        one(&mut self, c, idx, false)
                    }))
        });
        // Close what the trace left open, flushing stdio buffers, inside the timed run.
        if let Some((w, slot)) = &watch {
            w.enter_finish(*slot, stall);
        }
        self.local.close_all();
        let (n, why) = std::mem::take(&mut self.local.buffered_direct);
        self.stats.buffered_direct = n;
        self.stats.buffered_direct_why = why;
        finish(&mut self.rt);
        if let Some((w, slot)) = &watch {
            w.done(*slot);
        }
        self.stats.time_ns = self.start.elapsed().as_nanos() as u64;
        match self.fatal.take() {
            Some(e) => Err(e),
            None => Ok(self.stats),
        }
    }

    fn scaled(&self, ns: f64) -> Duration {
        Duration::from_nanos((ns * self.opts.time_scale).max(0.0) as u64)
    }

    fn next_rand(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// A draw from a timing histogram: a bin weighted by its count, then uniform inside the
    /// bin clipped to the recorded min and max.
    fn sample(&mut self, s: &Stats) -> f64 {
        let total: u64 = s.bins.iter().sum();
        if total == 0 || s.count == 0 {
            return s.mean;
        }
        let mut pick = self.next_rand() % total;
        let mut bin = 0;
        for (b, c) in s.bins.iter().enumerate() {
            if pick < *c {
                bin = b;
                break;
            }
            pick -= c;
        }
        let lo = if bin == 0 { 0 } else { 1u64 << (2 * bin) };
        let hi = if bin + 1 >= s.bins.len() {
            s.max
        } else {
            (1u64 << (2 * (bin + 1))) - 1
        };
        let (lo, hi) = (lo.max(s.min), hi.min(s.max).max(lo.max(s.min)));
        let u = (self.next_rand() >> 11) as f64 / (1u64 << 53) as f64;
        lo as f64 + u * (hi - lo) as f64
    }

    fn wait_gap(&mut self, t: &Timing) {
        // Time the traced rank was blocked between calls (a page fault on a mapping served by
        // its storage, say) is not compute: this replay's storage takes what it takes.
        let blocked = t.gap.mean - t.gap_compute_mean(false);
        let gap = match self.opts.compute {
            ComputeMode::None => return,
            ComputeMode::Mean => t.gap.mean - blocked,
            ComputeMode::Sample => (self.sample(&t.gap) - blocked).max(0.0),
            ComputeMode::Work => {
                // The CPU time of the gaps where the trace measured it; else the least
                // contended instance, the closest the trace comes to the work itself. The rest
                // of the gap was waiting, which the replay meets for real.
                let work = match t.waits {
                    Some(_) => t.gap_compute_mean(true).round() as u64,
                    None if t.gap.count == 0 => 0,
                    None => t.gap.min,
                };
                self.stats.compute_plan_ns += work;
                let t0 = Instant::now();
                crate::clock::burn_cpu(self.scaled(work as f64));
                // Progress is measured in work done, not on the wall clock: the plan is now.
                self.deadline = Instant::now();
                self.stats.compute_ns += (self.deadline - t0).as_nanos() as u64;
                return;
            }
        };
        self.stats.compute_plan_ns += gap.max(0.0) as u64;
        self.deadline += self.scaled(gap);
        let t0 = Instant::now();
        self.waiter.wait_until(self.deadline);
        self.stats.compute_ns += t0.elapsed().as_nanos() as u64;
    }

    /// Replays one call; `io_call`: its number among this rank's I/O calls, when dependencies
    /// are honoured.
    fn step(&mut self, e: &FlatEvent, ev: &Event, io_call: Option<u32>) {
        let t = &ev.timing;
        self.wait_gap(t);
        if let Some(k) = io_call {
            self.await_deps(k);
        }
        self.traced_dur = t.dur.mean;
        match e.op.layer() {
            Layer::Posix | Layer::Stdio => {
                self.timed_io(e.op, |s| s.posix(e));
            }
            Layer::MpiIo => match self.opts.layer {
                LayerView::App => {
                    let t0 = Instant::now();
                    let mut nested_io = Duration::ZERO;
                    if self.rt.via_children(e) {
                        self.timed_io(e.op, |s| s.mpiio(e, true));
                        let t1 = Instant::now();
                        self.issue_children(e);
                        nested_io = t1.elapsed();
                    } else {
                        self.timed_io(e.op, |s| s.mpiio(e, false));
                        for c in &e.children {
                            self.credit(c);
                        }
                    }
                    if self.opts.comm == CommMode::Delay && self.rt.emulates_collective(e) {
                        // What a collective spent beyond its nested I/O when traced was the
                        // library's exchanges and waits: communication, which --comm delay
                        // sleeps. The barrier already waited counts towards it; the nested
                        // calls' own time is this replay's.
                        let exchange = self.scaled((t.dur.mean - children_dur(ev)).max(0.0));
                        let done = t0 + exchange + nested_io;
                        if done > self.deadline {
                            self.deadline = done;
                            let w0 = Instant::now();
                            self.waiter.wait_until(done);
                            self.stats.comm_ns += w0.elapsed().as_nanos() as u64;
                        }
                    }
                }
                LayerView::Posix => {
                    self.track_fh(e);
                    self.stats.count(e.op, e.op.data_bytes(&e.params), true);
                    self.issue_children(e);
                }
            },
            Layer::Mpi => self.mpi(e, t),
            // A library call above MPI-IO (HDF5, PnetCDF, NetCDF) issues nothing itself: its
            // children do, lifted after it by `load` or handed out after it by `run_with`
            // (`visit_calls`).
            Layer::Hdf5 | Layer::Pnetcdf | Layer::Netcdf => {
                self.stats.count(e.op, e.op.data_bytes(&e.params), true)
            }
        }
        if let Some(k) = io_call {
            self.signal_deps(k + 1);
        }
    }

    /// Waits, before issuing I/O call `k`, until the ranks it depends on have ended the calls
    /// it waited for when measured. What follows is planned from the end of the wait, as
    /// after a real MPI call that waited for other ranks.
    fn await_deps(&mut self, k: u32) {
        let Some(deps) = self.deps.clone() else {
            return;
        };
        let waits = deps.waits(self.rank, k);
        if waits.is_empty() {
            return;
        }
        let t0 = Instant::now();
        for &(from, after) in waits {
            self.stats.io_dep_waits += 1;
            match self.rt.wait_io(from, after) {
                Ok(true) => self.stats.io_dep_blocked += 1,
                Ok(false) => {}
                Err(m) => self.fail(format!(
                    "I/O call {k} waiting for rank {from}'s first {after} I/O calls: {m}"
                )),
            }
        }
        let t1 = Instant::now();
        self.stats.io_dep_wait_ns += (t1 - t0).as_nanos() as u64;
        self.deadline = self.deadline.max(t1);
    }

    /// Tells the ranks waiting for this rank's first `count` I/O calls that they have ended.
    fn signal_deps(&mut self, count: u32) {
        let Some(deps) = self.deps.clone() else {
            return;
        };
        let to = deps.signals(self.rank, count);
        if !to.is_empty()
            && let Err(m) = self.rt.io_ended(count, to)
        {
            self.fail(format!("signalling the end of I/O call {count}: {m}"));
        }
    }

    /// Records a failed call, with when it failed.
    fn fail(&mut self, msg: String) {
        let at = self.start.elapsed().as_nanos() as u64;
        self.stats.fail(at, msg);
    }

    /// Counts a call without issuing it, with its own nested calls.
    fn credit(&mut self, e: &FlatEvent) {
        self.stats.count(e.op, e.op.data_bytes(&e.params), true);
        for c in &e.children {
            self.credit(c);
        }
    }

    fn track_fh(&mut self, e: &FlatEvent) {
        match e.op {
            Op::FileOpen => {
                if let Some(p) = &e.path {
                    self.fh_paths.insert(e.p(Param::Fh), p.clone());
                }
            }
            Op::FileClose => {
                self.fh_paths.remove(&e.p(Param::Fh));
            }
            _ => {}
        }
    }

    /// Issues the POSIX calls nested in MPI-IO call `e`, on its file.
    fn issue_children(&mut self, e: &FlatEvent) {
        // MPI_File_delete names no handle.
        let fh = e.get(Param::Fh).unwrap_or(0);
        let parent = self.fh_paths.get(&fh).cloned();
        for c in &e.children {
            self.nested_posix(c, parent.as_deref().map(|p| (p, fh)));
        }
    }

    /// A POSIX call nested in an MPI-IO call (`parent`: the MPI file's path and handle), under
    /// `--layer posix` or [`Runtime::via_children`]. Its descriptor may be one the MPI library
    /// opened outside the trace: then it is opened on the MPI file's path.
    fn nested_posix(&mut self, c: &FlatEvent, parent: Option<(&str, i64)>) {
        let fd = c.get(Param::Fd).unwrap_or(-1);
        if c.op.handle() == Some(Handle::Fd)
            && !self.local.fds.contains_key(&fd)
            && let Some((p, fh)) = parent
        {
            // The MPI file's name, as the library opened it (without a ROMIO prefix).
            match self.root.map_mpi(p, true) {
                Ok(path) => {
                    if let Ok(f) = path.open(libc::O_RDWR | libc::O_CREAT, 0o666) {
                        self.local.fds.insert(fd, f);
                        self.nested_fds.entry(fh).or_default().push(fd);
                    }
                }
                // A missing parent: the descriptor stays unopened and its calls fail.
                Err(ReplayError::Path { .. }) => {}
                Err(err) => {
                    self.fatal = Some(err);
                    return;
                }
            }
        }
        self.timed_io(c.op, |s| s.posix(c));
        for cc in &c.children {
            self.nested_posix(cc, parent);
        }
    }

    /// Runs one I/O call, recording its lateness against the deadline and its duration; the
    /// deadline then moves on by the call's actual duration, so a slow file system delays
    /// later calls as it would have delayed the application, while sleep errors do not add up:
    /// a POSIX or stdio call issued late (its rank lost the core) keeps the plan, and the gaps
    /// after it shrink until the rank is back on time (planning from the late call's end added
    /// every lost time slice to the rank's time, and hid all but the first late call). An
    /// MPI-IO call that waits for other ranks (collectives, shared pointers) is planned the
    /// same way, as a real MPI call is (see `mpi`): had the rank been on time it would have
    /// waited longer, so the lateness it absorbed comes off the gaps after it.
    fn timed_io(&mut self, op: Op, f: impl FnOnce(&mut Self) -> Result<u64, String>) {
        let t0 = Instant::now();
        if !matches!(self.opts.compute, ComputeMode::None | ComputeMode::Work) {
            let late = t0.saturating_duration_since(self.deadline);
            self.stats.lateness.add(late.as_nanos() as u64);
        }
        let r = f(self);
        let t1 = Instant::now();
        let dur = t1 - t0;
        self.stats.io_ns += dur.as_nanos() as u64;
        self.deadline = if self.opts.open_loop {
            self.deadline + self.scaled(self.traced_dur)
        } else {
            self.deadline + dur
        };
        if self.opts.compute == ComputeMode::None {
            self.deadline = t1;
        }
        match r {
            Ok(bytes) => self.stats.count(op, bytes, false),
            Err(msg) => {
                // The call was issued and failed: it counts, with no bytes. A refused path
                // stops the replay; other failures are reported.
                self.stats.count(op, 0, false);
                if self.fatal.is_none() {
                    self.fail(msg);
                }
            }
        }
    }

    /// Maps an MPI-IO call's file name (see [`Root::map_mpi`]); MPI_File_delete names the
    /// entry itself. An open whose name cannot be resolved stops the replay whatever the
    /// reason: it is collective, and the other ranks would wait for this one.
    fn map_mpi_path(&mut self, e: &FlatEvent) -> Result<Mapped, String> {
        let traced = e.path.as_deref().unwrap_or("");
        if e.op == Op::FileDelete {
            return self
                .root
                .map_entry(rsd::mpi::strip_fs_prefix(traced), false)
                .map_err(|err| refuse(&mut self.fatal, err));
        }
        self.root.map_mpi(traced, true).map_err(|err| {
            let msg = err.to_string();
            self.fatal = Some(err);
            msg
        })
    }

    /// Issues an MPI-IO call; with `sync_only`, everything but its data transfer (its nested
    /// POSIX calls move the data).
    fn mpiio(&mut self, e: &FlatEvent, sync_only: bool) -> Result<u64, String> {
        self.track_fh(e);
        if e.op == Op::FileClose
            && let Some(fds) = self.nested_fds.remove(&e.p(Param::Fh))
        {
            for fd in fds {
                self.local.fds.remove(&fd);
            }
        }
        let path = match &e.path {
            Some(_) => Some(self.map_mpi_path(e)?),
            None => None,
        };
        // The file table resolves the call before it is issued (its regions, the pointers it
        // moves), except an open, whose initial pointer may depend on the file the runtime
        // opens (MPI_MODE_APPEND starts at its end).
        let apply = |s: &mut Self| {
            s.files
                .apply(e.op, &e.params, e.path.as_deref(), None, &mut s.rt)
                .0
        };
        let open = e.op == Op::FileOpen;
        let fx = if open { Effect::None } else { apply(self) };
        let r = if sync_only {
            self.rt
                .mpiio_sync(e, path.as_ref(), &self.files, &fx, &mut self.data)
        } else {
            self.rt
                .mpiio(e, path.as_ref(), &self.files, &fx, &mut self.data)
        };
        if open {
            apply(self);
        }
        r.map_err(|m| format!("{} {}: {m}", e.op.name(), e.path.as_deref().unwrap_or("")))
    }

    fn mpi(&mut self, e: &FlatEvent, t: &Timing) {
        self.files
            .apply(e.op, &e.params, None, None, &mut filetable::Offline);
        let t0 = Instant::now();
        let creates_comm = e.op.creates_comm();
        // MPI_Init's own exchange lets no rank out before all have come in, and the traced
        // wall time starts when it returns: the ranks leave it together here too (the
        // runtime's barrier), and the replay's wall time starts there, so that what a program
        // does before MPI_Init (an interpreter's start-up, imports) is replayed but not
        // counted, as the trace does not count it.
        let init = e.op == Op::Init && self.opts.comm != CommMode::Skip;
        match self.opts.comm {
            CommMode::Real => {
                if let Err(m) = self.rt.mpi(e, self.files.types(), false) {
                    self.fail(format!("{}: {m}", e.op.name()));
                }
            }
            CommMode::Delay | CommMode::Skip => {
                if (creates_comm || init)
                    && let Err(m) = self.rt.mpi(e, self.files.types(), !init)
                {
                    self.fail(format!("{}: {m}", e.op.name()));
                }
                if self.opts.comm == CommMode::Delay && !matches!(e.op, Op::Init | Op::Finalize) {
                    // Absolute, like a compute gap: a delay that starts late ends on plan.
                    self.deadline += self.scaled(t.dur.mean);
                    self.waiter.wait_until(self.deadline);
                }
            }
        }
        let t1 = Instant::now();
        // A real call moves the plan on by its length from where the plan was, not from when
        // it was issued: a rank that woke late from a gap (on an oversubscribed node a woken
        // rank waits for a core the other ranks' MPI calls poll on) catches up in the gaps
        // after it, as after a POSIX call. Planning from the late start added every wake-up's
        // lateness to the rank's time: LAMMPS at 4 ranks on 2 cores, a real call every 30 us
        // of compute, waited out 15-57% more compute than its trace planned. A call that
        // waited for a late peer would have ended then anyway; the lateness it absorbed comes
        // off the next gaps, whose own wake-ups are late in turn. (A delay has already moved
        // the deadline by its length; adding its duration again under `--compute none` made
        // consecutive delays twice as long.)
        if self.opts.comm == CommMode::Real {
            self.deadline += t1 - t0;
            if self.opts.compute == ComputeMode::None {
                self.deadline = t1;
            }
        }
        self.stats.comm_ns += (t1 - t0).as_nanos() as u64;
        self.stats.count(e.op, 0, false);
        if init {
            // The plan starts again where the ranks left MPI_Init together: a rank that waited
            // there for the others does not make up for it in its next gaps.
            self.deadline = t1;
            self.stats.before_init_ns = Some((t1 - self.start).as_nanos() as u64);
        }
    }

    /// Issues a POSIX or stdio call. Returns the bytes it moved.
    fn posix(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let (root, fatal) = (self.root, &mut self.fatal);
        let mut map_path = |e: &FlatEvent, how: Resolve| {
            let traced = e.path.as_deref().unwrap_or("");
            match how {
                Resolve::Create => root.map(traced, true),
                Resolve::Existing => root.map(traced, false),
                Resolve::Entry => root.map_entry(traced, false),
                Resolve::NewEntry => root.map_entry(traced, true),
            }
            .map_err(|err| refuse(fatal, err))
        };
        let bytes = self.local.issue(e, &mut self.data, &mut map_path, root)?;
        let op = e.op;
        if op.dir() == Dir::Read && bytes != op.data_bytes(&e.params) {
            self.fail(format!(
                "{}: read {bytes} bytes, the trace recorded {} (the file is shorter: try --prep)",
                op.name(),
                op.data_bytes(&e.params)
            ));
        }
        Ok(bytes)
    }
}

/// The message of a path that could not be mapped; a path refused (out of the root, onto a
/// special file) also stops the replay through `fatal`, a path the file system could not
/// resolve (a missing parent) fails only its call.
fn refuse(fatal: &mut Option<ReplayError>, err: ReplayError) -> String {
    let msg = err.to_string();
    if !matches!(err, ReplayError::Path { .. }) {
        *fatal = Some(err);
    }
    msg
}
