//! One rank's replay: walks the rank's events lazily with their timing, waits out compute gaps
//! against absolute deadlines, issues POSIX and stdio calls through the OS, and hands MPI and
//! MPI-IO calls to a [`Runtime`] (threads in one process, or real MPI).

use crate::clock::Waiter;
use crate::error::ReplayError;
use crate::options::{CommMode, ComputeMode, LayerView, Options};
use crate::report::RankStats;
use crate::root::Root;
use crate::types::Types;
use crate::watchdog::Watch;
use filetable::{Effect, FileEnv, FileTable};
use rsd::op::{Dir, Handle, Layer, Op, Param};
use rsd::timing::{Stats, Timing};
use rsd::trace::{Event, FlatEvent, Node, NodeKind, flatten_event, visit};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Deterministic write data: byte `i` of every write buffer is a fixed function of `i`, so the
/// files a replay leaves are reproducible and compressible patterns do not flatter the storage.
///
/// Every rank writes the same bytes, so the process keeps one read-only buffer for all of
/// them (one per rank was 1 GiB at 1,024 ranks writing MiBs); a rank holds a reference to
/// the buffer that was large enough for its largest write so far.
#[derive(Debug, Default)]
pub struct Pattern {
    buf: std::sync::Arc<Vec<u8>>,
}

impl Pattern {
    /// A rank keeps a read buffer up to this size between calls; larger ones go back to the
    /// process's free list after their call ([`Pattern::trim_read_buf`]): 1,024 ranks each
    /// keeping a buffer of their largest read held 1 GiB at 1 MiB reads, though only the
    /// ranks inside a read at the same moment need one.
    pub const READ_BUF_OWN: usize = 16 << 10;
    /// Buffers larger than this are freed rather than kept on the free list.
    pub const READ_BUF_KEEP: usize = 4 << 20;
    /// Buffers on the free list at most (at most 256 MiB, however many ranks).
    const READ_BUFS_FREE: usize = 64;

    /// The pattern byte at position `i`.
    pub fn byte(i: usize) -> u8 {
        let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (x >> 56) as u8 ^ (i as u8)
    }

    /// A buffer of at least `n` pattern bytes.
    pub fn get(&mut self, n: usize) -> &[u8] {
        if self.buf.len() < n {
            self.buf = Pattern::shared(n);
        }
        &self.buf[..n]
    }

    /// The process's pattern buffer, made at least `n` bytes long. A poisoned lock still
    /// holds a valid buffer (it is only replaced whole), so it is used as is.
    fn shared(n: usize) -> std::sync::Arc<Vec<u8>> {
        static SHARED_PATTERN: std::sync::RwLock<Option<std::sync::Arc<Vec<u8>>>> =
            std::sync::RwLock::new(None);
        if let Some(b) = &*SHARED_PATTERN.read().unwrap_or_else(|e| e.into_inner())
            && b.len() >= n
        {
            return b.clone();
        }
        let mut w = SHARED_PATTERN.write().unwrap_or_else(|e| e.into_inner());
        let old = w.as_ref().map_or(0, |b| b.len());
        if old >= n {
            return w.as_ref().map(|b| b.clone()).unwrap_or_default();
        }
        // Doubling: a replay whose writes grow step by step rebuilds the buffer a logarithmic
        // number of times; ranks still holding an older, smaller one keep at most as much again.
        let len = n.max(old.saturating_mul(2)).max(64 << 10);
        let b = std::sync::Arc::new((0..len).map(Pattern::byte).collect::<Vec<u8>>());
        *w = Some(b.clone());
        b
    }

    /// The process's free read buffers.
    fn free_read_bufs() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
        static FREE: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
        // A poisoned list still holds valid buffers.
        FREE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer for a read of `n` bytes: the rank's own `own` when it has one, else one from
    /// the free list, else a new one; resized to `n`.
    pub fn take_read_buf(own: &mut Vec<u8>, n: usize) -> Vec<u8> {
        let mut buf = std::mem::take(own);
        if buf.capacity() < n
            && let Some(b) = Pattern::free_read_bufs().pop()
        {
            buf = b;
        }
        buf.resize(n, 0);
        buf
    }

    /// Runs `f` on a read buffer of `n` bytes taken as [`Pattern::take_read_buf`] does, then
    /// gives it back to `own` and trims it ([`Pattern::trim_read_buf`]).
    pub fn with_read_buf<T>(own: &mut Vec<u8>, n: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
        let mut buf = Pattern::take_read_buf(own, n);
        let r = f(&mut buf);
        *own = buf;
        Pattern::trim_read_buf(own);
        r
    }

    /// After a read: a buffer above [`Pattern::READ_BUF_OWN`] leaves the rank, onto the free
    /// list (or freed, above [`Pattern::READ_BUF_KEEP`] or when the list is full).
    pub fn trim_read_buf(buf: &mut Vec<u8>) {
        if buf.capacity() <= Pattern::READ_BUF_OWN {
            return;
        }
        let b = std::mem::take(buf);
        if b.capacity() <= Pattern::READ_BUF_KEEP {
            let mut free = Pattern::free_read_bufs();
            if free.len() < Pattern::READ_BUFS_FREE {
                free.push(b);
            }
        }
    }
}

/// The MPI side of a replay: MPI-IO calls and MPI calls. As a [`FileEnv`], it tells the
/// file table what the ranks share (the real size of a file, shared file pointers).
pub trait Runtime: FileEnv {
    /// Issues an application-level MPI-IO call; `path` is the re-rooted path for calls that name
    /// one. Returns the file bytes moved, or an error message.
    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Path>,
        files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String>;

    /// Issues an MPI call for real (`--comm real`), or, with `bookkeeping_only`, only what
    /// later calls depend on (communicator creation, which MPI-IO opens need).
    fn mpi(&mut self, e: &FlatEvent, types: &Types, bookkeeping_only: bool) -> Result<(), String>;

    /// Whether an unrecoverable error elsewhere means this rank should stop.
    fn aborted(&self) -> bool {
        false
    }

    /// Whether this collective MPI-IO call is emulated without the library's exchanges (the
    /// threads runtime): under `--comm delay` it then lasts at least its recorded time beyond
    /// its nested I/O.
    fn emulates_collective(&self, _e: &FlatEvent) -> bool {
        false
    }

    /// Whether this MPI-IO call is replayed through the POSIX calls the MPI library made for
    /// it when traced (its nested children), with [`Runtime::mpiio_sync`] for the call itself.
    /// The threads runtime does so for collective data calls: it has no collective buffering
    /// of its own, and the children are what the file system saw (an aggregator's large
    /// writes, nothing from the other ranks).
    fn via_children(&self, _e: &FlatEvent) -> bool {
        false
    }

    /// The call's synchronisation and bookkeeping (file pointers) without its data transfer,
    /// for calls [`Runtime::via_children`] accepts. Returns the bytes the call moved when traced.
    fn mpiio_sync(
        &mut self,
        e: &FlatEvent,
        path: Option<&Path>,
        files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.mpiio(e, path, files, fx, data)
    }
}

/// A stdio stream: a file plus a write-behind buffer the size of glibc's default, so the
/// calls that reach the file system are the ones stdio would make.
#[derive(Debug)]
struct Stream {
    file: File,
    buf: Vec<u8>,
}

const STDIO_BUF: usize = 4096;

impl Stream {
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        if self.buf.len() + data.len() > STDIO_BUF {
            self.flush()?;
        }
        if data.len() >= STDIO_BUF {
            self.file.write_all(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Reads exactly `n` bytes or up to end of file; returns the count read.
fn read_up_to(
    mut f: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
    buf: &mut [u8],
) -> std::io::Result<u64> {
    let mut got = 0;
    while got < buf.len() {
        match f(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got as u64)
}

/// The open file an event's `fd` parameter names. A free function so that a write can borrow
/// the descriptor table and the pattern buffer at once.
fn fd_in<'f>(fds: &'f mut HashMap<i64, File>, e: &FlatEvent) -> Result<&'f mut File, String> {
    let id = e.p(Param::Fd);
    fds.get_mut(&id).ok_or_else(|| {
        format!(
            "{}: descriptor {id} is not open (its open was not replayed)",
            e.op.name()
        )
    })
}

/// The open stream an event's `stream` parameter names (a free function for the same reason
/// as [`fd_in`]).
fn stream_in<'s>(
    streams: &'s mut HashMap<i64, Stream>,
    e: &FlatEvent,
) -> Result<&'s mut Stream, String> {
    let id = e.p(Param::Stream);
    streams.get_mut(&id).ok_or_else(|| {
        format!(
            "{}: stream {id} is not open (its fopen was not replayed)",
            e.op.name()
        )
    })
}

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
    fds: HashMap<i64, File>,
    streams: HashMap<i64, Stream>,
    /// Paths of open MPI files, for nested POSIX calls under `--layer posix` whose descriptor
    /// the MPI library opened without the trace seeing it.
    fh_paths: HashMap<i64, String>,
    /// Descriptors opened for nested calls of an MPI file (by its handle), closed with it so a
    /// later file the library gave the same descriptor number is not written through them.
    nested_fds: HashMap<i64, Vec<i64>>,
    /// The rank's open files and datatypes: where each MPI-IO call's bytes lie.
    files: FileTable,
    data: Pattern,
    rbuf: Vec<u8>,
    /// The planned issue time of the next call.
    deadline: Instant,
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
            fds: HashMap::new(),
            streams: HashMap::new(),
            fh_paths: HashMap::new(),
            nested_fds: HashMap::new(),
            files: FileTable::new(),
            data: Pattern::default(),
            rbuf: Vec::new(),
            deadline: now,
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
        }
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
        visit(nodes, rank, &mut idx, &mut |e, idx| {
            let flat = flatten_event(e, rank, idx);
            if let Some((w, slot)) = &watch {
                let b = crate::watchdog::bound(stall, e.timing.dur.max as f64, scale);
                w.enter(*slot, &flat, done, b);
            }
            self.step(&flat, e);
            if let Some((w, slot)) = &watch {
                w.leave(*slot);
            }
            done += 1;
            if done.is_multiple_of(crate::progress::EVERY)
                && let Some(p) = &self.progress
            {
                p.store(done, std::sync::atomic::Ordering::Relaxed);
            }
            self.fatal.is_none() && !self.rt.aborted()
        });
        // Close what the trace left open, flushing stdio buffers, inside the timed run.
        if let Some((w, slot)) = &watch {
            w.enter_finish(*slot, stall);
        }
        self.streams.clear();
        self.fds.clear();
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
        let gap = match self.opts.compute {
            ComputeMode::None => return,
            ComputeMode::Mean => t.gap.mean,
            ComputeMode::Sample => self.sample(&t.gap),
            ComputeMode::Work => {
                // The least contended instance is the closest the trace comes to the work
                // itself; the rest of the gap was waiting, which the replay meets for real.
                let work = if t.gap.count == 0 { 0 } else { t.gap.min };
                let t0 = Instant::now();
                crate::clock::burn_cpu(self.scaled(work as f64));
                // Progress is measured in work done, not on the wall clock: the plan is now.
                self.deadline = Instant::now();
                self.stats.compute_ns += (self.deadline - t0).as_nanos() as u64;
                return;
            }
        };
        self.deadline += self.scaled(gap);
        let t0 = Instant::now();
        self.waiter.wait_until(self.deadline);
        self.stats.compute_ns += t0.elapsed().as_nanos() as u64;
    }

    fn step(&mut self, e: &FlatEvent, ev: &Event) {
        let t = &ev.timing;
        self.wait_gap(t);
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
        }
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
            && !self.fds.contains_key(&fd)
            && let Some((p, fh)) = parent
        {
            match self.root.map(p, true) {
                Ok(path) => {
                    if let Ok(f) = OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create(true)
                        .truncate(false)
                        .open(&path)
                    {
                        self.fds.insert(fd, f);
                        self.nested_fds.entry(fh).or_default().push(fd);
                    }
                }
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
    /// MPI-IO call may wait for other ranks (collectives, shared pointers), so what follows it
    /// is planned from its end, as the application's next call followed it.
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
        self.deadline = if op.layer() == Layer::MpiIo {
            self.deadline.max(t0) + dur
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
                    self.stats.fail(msg);
                }
            }
        }
    }

    fn map_path(&mut self, e: &FlatEvent, create_parents: bool) -> Result<PathBuf, String> {
        let traced = e.path.as_deref().unwrap_or("");
        match self.root.map(traced, create_parents) {
            Ok(p) => Ok(p),
            Err(err) => {
                let msg = err.to_string();
                self.fatal = Some(err);
                Err(msg)
            }
        }
    }

    fn fd(&mut self, e: &FlatEvent) -> Result<&mut File, String> {
        fd_in(&mut self.fds, e)
    }

    fn stream(&mut self, e: &FlatEvent) -> Result<&mut Stream, String> {
        stream_in(&mut self.streams, e)
    }

    /// Issues an MPI-IO call; with `sync_only`, everything but its data transfer (its nested
    /// POSIX calls move the data).
    fn mpiio(&mut self, e: &FlatEvent, sync_only: bool) -> Result<u64, String> {
        self.track_fh(e);
        if e.op == Op::FileClose
            && let Some(fds) = self.nested_fds.remove(&e.p(Param::Fh))
        {
            for fd in fds {
                self.fds.remove(&fd);
            }
        }
        let path = match &e.path {
            Some(_) => Some(self.map_path(e, true)?),
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
                .mpiio_sync(e, path.as_deref(), &self.files, &fx, &mut self.data)
        } else {
            self.rt
                .mpiio(e, path.as_deref(), &self.files, &fx, &mut self.data)
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
        match self.opts.comm {
            CommMode::Real => {
                if let Err(m) = self.rt.mpi(e, self.files.types(), false) {
                    self.stats.fail(format!("{}: {m}", e.op.name()));
                }
            }
            CommMode::Delay | CommMode::Skip => {
                if creates_comm && let Err(m) = self.rt.mpi(e, self.files.types(), true) {
                    self.stats.fail(format!("{}: {m}", e.op.name()));
                }
                if self.opts.comm == CommMode::Delay && !matches!(e.op, Op::Init | Op::Finalize) {
                    // Absolute, like a compute gap: a delay that starts late ends on plan.
                    self.deadline += self.scaled(t.dur.mean);
                    self.waiter.wait_until(self.deadline);
                }
            }
        }
        let t1 = Instant::now();
        // A real call may wait for other ranks: plan what follows from its end. (A delay has
        // already moved the deadline by its length; adding its duration again under
        // `--compute none` made consecutive delays twice as long.)
        if self.opts.comm == CommMode::Real {
            self.deadline = self.deadline.max(t0) + (t1 - t0);
        }
        self.stats.comm_ns += (t1 - t0).as_nanos() as u64;
        self.stats.count(e.op, 0, false);
    }

    /// Issues a POSIX or stdio call. Returns the bytes it moved.
    fn posix(&mut self, e: &FlatEvent) -> Result<u64, String> {
        let op = e.op;
        let io = |what: &str, err: std::io::Error| format!("{} {what}: {err}", op.name());
        let size = |v: i64| v.max(0) as usize;
        let bytes = match op {
            Op::Open | Op::Openat | Op::Creat => {
                let (flags, mode) = if op == Op::Creat {
                    (
                        libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                        e.p(Param::Mode),
                    )
                } else {
                    (e.p(Param::Flags) as i32, e.p(Param::Mode))
                };
                let id = e.p(Param::Fd);
                if id < 0 {
                    // The traced open failed: nothing to replay.
                    return Ok(0);
                }
                let path = self.map_path(e, true)?;
                let acc = flags & libc::O_ACCMODE;
                // O_DIRECT needs aligned buffers the replay does not promise; the file was
                // opened successfully in the trace, so it is created if it is missing (--prep
                // gives it its recorded size).
                let custom = (flags & !(libc::O_ACCMODE | libc::O_DIRECT)) | libc::O_CREAT;
                let f = OpenOptions::new()
                    .read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
                    .write(acc == libc::O_WRONLY || acc == libc::O_RDWR)
                    .custom_flags(custom)
                    .mode(if mode > 0 { mode as u32 } else { 0o644 })
                    .open(&path)
                    .map_err(|er| io(&path.display().to_string(), er))?;
                self.fds.insert(id, f);
                0
            }
            Op::Close => {
                self.fds.remove(&e.p(Param::Fd));
                0
            }
            // A descriptor copy (dup, dup2, dup3, F_DUPFD): the same open file under another
            // id, sharing its offset as the original's did (`try_clone` is dup(2)). A dup2 onto
            // a traced descriptor closed that one first.
            Op::Dup => {
                let closed = e.p(Param::Closed);
                if closed >= 0 {
                    self.fds.remove(&closed);
                }
                let new = e.p(Param::Newfd);
                if new >= 0 {
                    let f = fd_in(&mut self.fds, e)?
                        .try_clone()
                        .map_err(|er| io("", er))?;
                    self.fds.insert(new, f);
                }
                0
            }
            // The buffer is borrowed, not copied: a copy per call sat between the lateness
            // stamp and the syscall and cost ~0.5 us per 8 KiB.
            Op::Write | Op::Writev => {
                let n = size(e.p(Param::Ret));
                fd_in(&mut self.fds, e)?
                    .write_all(self.data.get(n))
                    .map_err(|er| io("", er))?;
                n as u64
            }
            Op::Pwrite | Op::Pwritev => {
                let n = size(e.p(Param::Ret));
                let off = e.p(Param::Offset).max(0) as u64;
                fd_in(&mut self.fds, e)?
                    .write_all_at(self.data.get(n), off)
                    .map_err(|er| io("", er))?;
                n as u64
            }
            Op::Read | Op::Readv => {
                let n = size(e.p(Param::Ret));
                let fds = &mut self.fds;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    fd_in(fds, e)
                        .and_then(|f| read_up_to(|b| f.read(b), buf).map_err(|er| io("", er)))
                })?
            }
            Op::Pread | Op::Preadv => {
                let n = size(e.p(Param::Ret));
                let off = e.p(Param::Offset).max(0) as u64;
                let fds = &mut self.fds;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    let f = fd_in(fds, e)?;
                    let mut pos = off;
                    read_up_to(
                        |b| {
                            let k = f.read_at(b, pos)?;
                            pos += k as u64;
                            Ok(k)
                        },
                        buf,
                    )
                    .map_err(|er| io("", er))
                })?
            }
            Op::Lseek => {
                let off = e.p(Param::Offset);
                let from = match e.p(Param::Whence) {
                    0 => SeekFrom::Start(off.max(0) as u64),
                    1 => SeekFrom::Current(off),
                    2 => SeekFrom::End(off),
                    // SEEK_DATA/SEEK_HOLE: go where the traced call went.
                    _ => SeekFrom::Start(e.p(Param::Ret).max(0) as u64),
                };
                self.fd(e)?.seek(from).map_err(|er| io("", er))?;
                0
            }
            Op::Fsync => {
                self.fd(e)?.sync_all().map_err(|er| io("", er))?;
                0
            }
            Op::Fdatasync => {
                self.fd(e)?.sync_data().map_err(|er| io("", er))?;
                0
            }
            Op::Ftruncate => {
                let len = e.p(Param::Length).max(0) as u64;
                self.fd(e)?.set_len(len).map_err(|er| io("", er))?;
                0
            }
            // Metadata calls: their outcome (a file missing or not) is the file system's
            // answer; it is not a replay failure.
            Op::Unlink => {
                let p = self.map_path(e, false)?;
                let _ = std::fs::remove_file(p);
                0
            }
            Op::Mkdir => {
                let p = self.map_path(e, true)?;
                let _ = std::fs::create_dir(p);
                0
            }
            Op::Rmdir => {
                let p = self.map_path(e, false)?;
                let _ = std::fs::remove_dir(p);
                0
            }
            Op::Stat | Op::Access => {
                let p = self.map_path(e, false)?;
                let _ = std::fs::metadata(p);
                0
            }
            // fcntl's effect (locks, flags) is not recorded beyond its command.
            Op::Fcntl => 0,
            Op::Fopen => {
                let bits = e.p(Param::Mode);
                let id = e.p(Param::Stream);
                if id < 0 {
                    return Ok(0);
                }
                let path = self.map_path(e, true)?;
                // Opened read-write whatever the mode: stdio checks the mode in user space, and
                // a stream the trace shows writing is written. 'w' truncates, 'a' appends.
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(bits & rsd::op::fopen_mode::W != 0)
                    .custom_flags(if bits & rsd::op::fopen_mode::A != 0 {
                        libc::O_APPEND
                    } else {
                        0
                    })
                    .open(&path)
                    .map_err(|er| io(&path.display().to_string(), er))?;
                self.streams.insert(
                    id,
                    Stream {
                        file: f,
                        buf: Vec::new(),
                    },
                );
                0
            }
            Op::Fclose => {
                if let Some(mut s) = self.streams.remove(&e.p(Param::Stream)) {
                    s.flush().map_err(|er| io("", er))?;
                }
                0
            }
            Op::Fwrite | Op::Fprintf => {
                let n = op.data_bytes(&e.params) as usize;
                let data = self.data.get(n).to_vec();
                self.stream(e)?.write(&data).map_err(|er| io("", er))?;
                n as u64
            }
            Op::Fread => {
                let n = op.data_bytes(&e.params) as usize;
                let streams = &mut self.streams;
                Pattern::with_read_buf(&mut self.rbuf, n, |buf| {
                    let s = stream_in(streams, e)?;
                    s.flush().map_err(|er| io("", er))?;
                    read_up_to(|b| s.file.read(b), buf).map_err(|er| io("", er))
                })?
            }
            Op::Fseek => {
                let off = e.p(Param::Offset);
                let from = match e.p(Param::Whence) {
                    1 => SeekFrom::Current(off),
                    2 => SeekFrom::End(off),
                    _ => SeekFrom::Start(off.max(0) as u64),
                };
                let s = self.stream(e)?;
                s.flush().map_err(|er| io("", er))?;
                s.file.seek(from).map_err(|er| io("", er))?;
                0
            }
            Op::Fflush => {
                self.stream(e)?.flush().map_err(|er| io("", er))?;
                0
            }
            _ => 0,
        };
        if op.dir() == Dir::Read && bytes != op.data_bytes(&e.params) {
            self.stats.fail(format!(
                "{}: read {bytes} bytes, the trace recorded {} (the file is shorter: try --prep)",
                op.name(),
                op.data_bytes(&e.params)
            ));
        }
        Ok(bytes)
    }
}
