//! The process-wide tracer state: configuration, the rank's compressor, the symbolic handle
//! tables, and the recording entry points every hook goes through.

use crate::callsite::AddrHasher;
use crate::guard;
use rsd::{Compressor, Op, RawEvent};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{PoisonError, TryLockError};

/// Set once the constructor has run and cleared when the tracer disables itself or the process
/// forks: hooks record only while it is set.
pub static RECORDING: AtomicBool = AtomicBool::new(false);
/// Set in a forked child: it neither records nor writes a trace.
pub static FORKED: AtomicBool = AtomicBool::new(false);

/// The state behind one lock. Hooks never hold it while calling into the dynamic loader (call
/// sites are resolved outside it), so a hook running inside `dlopen` cannot deadlock.
pub static STATE: StateLock = StateLock::new();

/// The lock around the state: one compressor per process, so a multi-threaded program's
/// calls are recorded in the order they took the lock, as with the `Mutex` it replaces.
///
/// Every traced call takes it, so taking and releasing it uncontended is the cheapest there
/// is: one compare-and-swap, and a plain store to release (no second atomic read-modify-write,
/// no poison flag: `std::sync::Mutex` spent about 20 instructions and two locked operations
/// per call). A thread that finds it taken spins briefly, then sleeps on a futex with a
/// timeout. The release does not wake a sleeper it cannot see yet (its read of `sleepers`
/// may pass its store, x86 reorders a load before an earlier store): such a sleeper wakes at
/// its timeout, so a rare lost wake-up costs at most [`StateLock::NAP_NS`], never a hang.
/// There is no poisoning: a panic inside is caught by [`with_state`], which releases the lock
/// on unwinding and disables the tracer; `lock` and `try_lock` keep the `Mutex` signatures
/// (never poisoned) so their callers read the same.
pub struct StateLock {
    /// 1 while held.
    held: AtomicU32,
    /// Threads asleep (or about to sleep) waiting for it.
    sleepers: AtomicU32,
    state: UnsafeCell<Option<State>>,
}

// SAFETY: the state is reached only through a `StateGuard`, which exists for one thread at a
// time (`held` is taken with an acquiring compare-and-swap and released with a release store).
unsafe impl Sync for StateLock {}

/// The state, held; released when dropped.
pub struct StateGuard<'a>(&'a StateLock);

impl StateLock {
    /// Longest sleep of a waiting thread before it looks again (a lost wake-up's cost).
    const NAP_NS: i64 = 200_000;

    const fn new() -> StateLock {
        StateLock {
            held: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            state: UnsafeCell::new(None),
        }
    }

    #[inline(always)]
    fn try_take(&self) -> bool {
        self.held
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, waiting for it. Never poisoned (the `Result` keeps `Mutex::lock`'s
    /// shape).
    #[inline(always)]
    pub fn lock(&self) -> Result<StateGuard<'_>, PoisonError<StateGuard<'_>>> {
        if !self.try_take() {
            self.wait();
        }
        Ok(StateGuard(self))
    }

    /// Takes the lock if it is free (signal handlers, which must not wait).
    pub fn try_lock(&self) -> Result<StateGuard<'_>, TryLockError<StateGuard<'_>>> {
        if self.try_take() {
            Ok(StateGuard(self))
        } else {
            Err(TryLockError::WouldBlock)
        }
    }

    #[cold]
    #[inline(never)]
    fn wait(&self) {
        for _ in 0..64 {
            std::hint::spin_loop();
            if self.held.load(Ordering::Relaxed) == 0 && self.try_take() {
                return;
            }
        }
        loop {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            if self.held.load(Ordering::SeqCst) != 0 {
                let nap = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: Self::NAP_NS,
                };
                // SAFETY: FUTEX_WAIT on a live, aligned u32, with a valid timeout; it returns
                // at once if the word is no longer 1.
                unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        self.held.as_ptr(),
                        libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                        1u32,
                        &nap as *const libc::timespec,
                    )
                };
            }
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
            if self.try_take() {
                return;
            }
        }
    }

    /// Takes the lock around a traced `fork` (the hook), so the child never inherits it held
    /// by a thread it does not have, nor the state half-changed.
    pub fn hold_for_fork(&self) {
        std::mem::forget(self.lock());
    }

    /// Releases it after the fork: in the parent as a guard would; in the child, where no
    /// other thread exists, the waiters' count goes too.
    pub fn release_after_fork(&self, child: bool) {
        if child {
            self.sleepers.store(0, Ordering::Relaxed);
        }
        drop(StateGuard(self));
    }

    #[cold]
    #[inline(never)]
    fn wake(&self) {
        // SAFETY: FUTEX_WAKE on a live, aligned u32.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.held.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            )
        };
    }
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = Option<State>;
    #[inline(always)]
    fn deref(&self) -> &Option<State> {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.0.state.get() }
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Option<State> {
        // SAFETY: the guard holds the lock, and `&mut self` makes this the only reference.
        unsafe { &mut *self.0.state.get() }
    }
}

impl Drop for StateGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.held.store(0, Ordering::Release);
        if self.0.sleepers.load(Ordering::Relaxed) != 0 {
            self.0.wake();
        }
    }
}

/// Descriptors the application opened through a traced call, as a lock-free bitmap, so calls
/// on every other descriptor (sockets, pipes, stdout, the MPI runtime's files) skip the lock.
const FD_WORDS: usize = 1024;
static FD_BITS: [AtomicU64; FD_WORDS] = [const { AtomicU64::new(0) }; FD_WORDS];

/// Whether `fd` may be in the open-file table.
#[inline]
pub fn fd_traced(fd: i32) -> bool {
    if fd < 0 {
        return false;
    }
    let fd = fd as usize;
    if fd >= FD_WORDS * 64 {
        return true; // beyond the bitmap: let the table decide
    }
    FD_BITS[fd / 64].load(Ordering::Relaxed) & (1 << (fd % 64)) != 0
}

fn fd_mark(fd: i32, on: bool) {
    if fd < 0 || fd as usize >= FD_WORDS * 64 {
        return;
    }
    let fd = fd as usize;
    if on {
        FD_BITS[fd / 64].fetch_or(1 << (fd % 64), Ordering::Relaxed);
    } else {
        FD_BITS[fd / 64].fetch_and(!(1 << (fd % 64)), Ordering::Relaxed);
    }
}

/// Options, read from the environment once at start-up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Frames of the call stack hashed into the call-site signature (`IOTREX_STACK_DEPTH`).
    pub depth: usize,
    /// Write the flat per-rank debug log (`IOTREX_RAW=1`).
    pub raw: bool,
    /// Output path (`IOTREX_OUT`).
    pub out: Option<String>,
    /// Executable name, for the default output path.
    pub exe: String,
    /// The command line.
    pub argv: Vec<String>,
    /// Compressed nodes held per rank before recording stops (`IOTREX_MAX_NODES`).
    pub max_nodes: usize,
    /// Session directories to normalise.
    pub session_dirs: Vec<String>,
    /// Rank from the launcher's environment, if any.
    pub env_rank: Option<u32>,
    /// Rank count from the launcher's environment, if any.
    pub env_size: Option<u32>,
    /// Print where the trace went, its size and the merge time (`IOTREX_VERBOSE=1`).
    pub verbose: bool,
    /// What may be summarised when over budget (`IOTREX_APPROX`, `IOTREX_VALUE_BUDGET`).
    pub approx: rsd::approx::Policy,
    /// Why the approximation settings were not taken (the defaults apply), for the notes.
    pub approx_error: Option<String>,
    /// Why `IOTREX_EXCLUDE`/`IOTREX_INCLUDE` were not taken (the default exclusions apply),
    /// for the notes.
    pub exclude_error: Option<String>,
    /// Drains of `MPI_Waitsome` calls recorded as one call each (`IOTREX_APPROX` with
    /// `order`, [`rsd::approx::ORDER`]).
    pub drains: bool,
    /// The executable's GNU build id, read at start-up (the header is also built in signal
    /// handlers, which must not read files).
    pub build_id: Option<String>,
    /// The run's own ids, which numbers in paths are matched against (rank 0's pid is added
    /// at `MPI_Init`); `None` with `IOTREX_RUN_IDS=0`.
    pub run_ids: Option<rsd::runvalue::RunIds>,
}

/// A table of open handles: a handle's symbolic id is its slot, the lowest free one, as the
/// kernel does for descriptors, so ids are the same on every rank and in every iteration.
#[derive(Debug, Default)]
pub struct Table {
    slots: Vec<Option<usize>>,
    /// Small handles (descriptors) -> id + 1 (0: absent), by index: looked up on every traced
    /// call, where a hash lookup cost a fifth of the recording.
    direct: Vec<u32>,
    // Larger handles (addresses of streams, MPI files, requests). SipHash would cost more than
    // the rest of the lookup, and the keys are not attacker-chosen.
    map: HashMap<usize, usize, BuildHasherDefault<AddrHasher>>,
}

/// Handles below this are kept in [`Table::direct`].
const DIRECT: usize = 1 << 16;

impl Table {
    /// Adds a handle (replacing a stale entry for the same handle) and returns its id.
    pub fn insert(&mut self, h: usize) -> i64 {
        self.remove(h);
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.slots[i] = Some(h);
        if h < DIRECT {
            if self.direct.len() <= h {
                self.direct.resize(h + 1, 0);
            }
            self.direct[h] = i as u32 + 1;
        } else {
            self.map.insert(h, i);
        }
        i as i64
    }

    /// The id of a handle.
    #[inline]
    pub fn get(&self, h: usize) -> Option<i64> {
        if h < DIRECT {
            return match self.direct.get(h) {
                Some(&i) if i > 0 => Some(i as i64 - 1),
                _ => None,
            };
        }
        self.map.get(&h).map(|&i| i as i64)
    }

    /// Removes a handle, returning the id it had.
    pub fn remove(&mut self, h: usize) -> Option<i64> {
        let i = if h < DIRECT {
            let d = self.direct.get_mut(h).filter(|i| **i > 0)?;
            std::mem::replace(d, 0) as usize - 1
        } else {
            self.map.remove(&h)?
        };
        self.slots[i] = None;
        Some(i as i64)
    }
}

/// Symbolic ids for handles that are not slots (communicators, datatypes, reduction ops):
/// predefined ones get fixed ids, new ones are numbered in creation order, which SPMD ranks share.
#[derive(Debug, Default)]
pub struct Ids {
    map: HashMap<usize, i64>,
    next: i64,
}

impl Ids {
    /// Ids of handles seen for the first time start at `first`.
    pub fn starting_at(first: i64) -> Ids {
        Ids {
            map: HashMap::new(),
            next: first,
        }
    }

    /// Gives `h` the fixed id `id`.
    pub fn fixed(&mut self, h: usize, id: i64) {
        self.map.insert(h, id);
    }

    /// The id of `h`, numbering it if new.
    pub fn id(&mut self, h: usize) -> i64 {
        if let Some(&i) = self.map.get(&h) {
            return i;
        }
        let i = self.next;
        self.next += 1;
        self.map.insert(h, i);
        i
    }

    /// Forgets `h` (freed handles can come back at the same address as a new object).
    pub fn forget(&mut self, h: usize) {
        self.map.remove(&h);
    }
}

/// Everything recorded by this process.
pub struct State {
    /// Options.
    pub cfg: Config,
    /// This process's rank (from the environment until `MPI_Init` confirms it).
    pub rank: u32,
    /// The online compressor.
    pub comp: Compressor,
    /// The flat log of `IOTREX_RAW=1`.
    pub raw: Option<Vec<RawEvent>>,
    /// End of the last recorded call, ns on the monotonic clock.
    pub last_end: u64,
    /// When tracing started (constructor or `MPI_Init`).
    pub start_ns: u64,
    /// POSIX descriptors opened through traced calls.
    pub fds: Table,
    /// stdio streams opened through traced calls.
    pub streams: Table,
    /// MPI files.
    pub files: Table,
    /// Directory streams opened through a traced `opendir`.
    pub dirs: Table,
    /// Mappings of traced descriptors by start address (`posix_more`).
    pub maps: std::collections::BTreeMap<usize, crate::posix_more::Mapping>,
    /// HDF5 identifiers (files, groups, datasets, attributes, dataspaces) traced calls
    /// returned (`hdf5`).
    pub h5: Table,
    /// PnetCDF file ids and pending nonblocking requests (`pnetcdf`).
    pub pnc: crate::pnetcdf::Ids,
    /// NetCDF file ids traced calls returned (`netcdf`).
    pub nc: Table,
    /// Outstanding MPI requests.
    pub reqs: Table,
    /// The persistent ones among them (`MPI_Send_init`, ...): a completion leaves them in
    /// `reqs`, only `MPI_Request_free` removes them.
    pub persistent: std::collections::HashSet<usize>,
    /// Matched messages (`MPI_Mprobe`) not yet received.
    pub msgs: Table,
    /// Communicators.
    pub comms: Ids,
    /// Datatypes, with their sizes cached.
    pub types: Ids,
    /// Datatype sizes by handle.
    pub type_sizes: HashMap<usize, i64>,
    /// Reduction operations.
    pub ops: Ids,
    /// Error handlers (`rsd::mpi::errhandler`).
    pub errhandlers: Ids,
    /// Why the trace is incomplete.
    pub notes: Vec<String>,
    /// MPI functions the program imports that are not recorded ([`crate::unseen`]), found at
    /// `MPI_Init` by rank 0.
    pub unrecorded_mpi: Vec<String>,
    /// The MPI library's I/O configuration, kept by rank 0 (`mpi::config`).
    pub mpi_config: Option<rsd::MpiConfig>,
    /// The CPUs per node at `MPI_Init`, kept by rank 0 (`rsd::Header::node_cores`).
    pub node_cores: Vec<(u32, u32)>,
    /// Nodes that were one machine, kept by rank 0 (`rsd::Header::shared_machines`).
    pub shared_machines: Vec<rsd::nodes::SharedMachine>,
    /// Where each rank ran at `MPI_Init`, kept by rank 0 (`rsd::Header::node_layout`).
    pub node_layout: Option<rsd::NodeLayout>,
    /// Rank 0's open MPI files' paths by handle, for the hints of their views (`mpi::config`).
    pub hinted_files: HashMap<usize, String>,
    /// Whether something was not recorded.
    pub incomplete: bool,
    /// `MPI_Init` returned.
    pub mpi_initialized: bool,
    /// The trace was handed over (finalize or exit).
    pub done: bool,
}

impl State {
    /// A fresh state.
    pub fn new(cfg: Config, now: u64) -> State {
        let rank = cfg.env_rank.unwrap_or(0);
        let mut comp = Compressor::new(rank);
        comp.coalesce_drains(cfg.drains);
        if let Some(ids) = &cfg.run_ids {
            comp.set_run_ids(ids.clone());
        }
        State {
            rank,
            comp,
            raw: cfg.raw.then(Vec::new),
            last_end: now,
            start_ns: now,
            fds: Table::default(),
            streams: Table::default(),
            files: Table::default(),
            dirs: Table::default(),
            maps: Default::default(),
            h5: Table::default(),
            pnc: Default::default(),
            nc: Table::default(),
            reqs: Table::default(),
            persistent: Default::default(),
            msgs: Table::default(),
            comms: Ids::starting_at(2),
            types: Ids::starting_at(1000),
            type_sizes: HashMap::new(),
            ops: Ids::starting_at(100),
            errhandlers: Ids::starting_at(rsd::mpi::errhandler::FIRST_USER),
            notes: Vec::new(),
            unrecorded_mpi: Vec::new(),
            mpi_config: None,
            node_cores: Vec::new(),
            shared_machines: Vec::new(),
            node_layout: None,
            hinted_files: HashMap::new(),
            incomplete: false,
            mpi_initialized: false,
            done: false,
            cfg,
        }
    }

    /// The state of a forked child of slot `slot` (`crate::procs`): a fresh compressor and
    /// timing, no notes, no MPI; the descriptor, stream, file and mapping tables kept, since
    /// the child inherits what they name.
    pub fn reset_for_child(&mut self, slot: u32, now: u64) {
        let mut cfg = self.cfg.clone();
        cfg.raw = false;
        cfg.env_rank = Some(slot);
        if let Some(ids) = &mut cfg.run_ids {
            // SAFETY: getpid has no preconditions.
            ids.own_pid = i64::from(unsafe { libc::getpid() });
        }
        let fresh = State::new(cfg, now);
        let old = std::mem::replace(self, fresh);
        self.fds = old.fds;
        self.streams = old.streams;
        self.files = old.files;
        self.dirs = old.dirs;
        self.maps = old.maps;
    }

    /// Adds a descriptor to the table.
    pub fn fd_open(&mut self, fd: i32) -> i64 {
        fd_mark(fd, true);
        crate::exclude::forget(fd);
        self.fds.insert(fd as usize)
    }

    /// Adds the descriptor an opening call returned (`r`), if it succeeded: its id, or -1.
    pub fn fd_open_result(&mut self, r: i64) -> i64 {
        if r >= 0 { self.fd_open(r as i32) } else { -1 }
    }

    /// Removes a descriptor from the table.
    pub fn fd_close(&mut self, fd: i32) -> Option<i64> {
        fd_mark(fd, false);
        self.fds.remove(fd as usize)
    }

    /// The id of a traced descriptor.
    #[inline]
    pub fn fd(&self, fd: i32) -> Option<i64> {
        if fd < 0 {
            return None;
        }
        self.fds.get(fd as usize)
    }

    /// Applies the session-directory normalisation.
    pub fn norm_path(&self, p: String) -> String {
        crate::paths::normalize(&p, &self.cfg.session_dirs).unwrap_or(p)
    }

    /// Whether a top-level call may be recorded now; flags the trace when the node limit stops
    /// recording.
    #[inline]
    fn admit(&mut self) -> bool {
        !self.done && (self.comp.len() < self.cfg.max_nodes || self.over_limit())
    }

    /// The node limit is reached: says so once in the notes, and refuses the call.
    #[cold]
    fn over_limit(&mut self) -> bool {
        if !self.incomplete || !self.notes.iter().any(|n| n.contains("IOTREX_MAX_NODES")) {
            self.incomplete = true;
            self.notes.push(format!(
                    "rank {}: compressed trace reached IOTREX_MAX_NODES={} nodes; later calls were not recorded",
                    self.rank, self.cfg.max_nodes
                ));
        }
        false
    }

    /// Records a top-level call.
    pub fn push(&mut self, ev: RawEvent) {
        if !self.admit() {
            return;
        }
        self.comp.push(&ev);
        if let Some(r) = &mut self.raw {
            r.push(ev);
        }
    }

    /// [`State::push`], giving the call back unless the raw log keeps it (its vectors can
    /// then be reused).
    pub fn push_back(&mut self, ev: RawEvent) -> Option<RawEvent> {
        if self.admit() {
            self.comp.push(&ev);
            if let Some(r) = &mut self.raw {
                r.push(ev);
                return None;
            }
        }
        Some(ev)
    }

    /// Records a top-level call whose gap held `waits` of off-CPU time ([`crate::waits`]).
    #[cold]
    pub fn push_waited(&mut self, ev: RawEvent, waits: rsd::timing::GapWaits) {
        if !self.admit() {
            return;
        }
        self.comp.push_waited(&ev, waits);
        if let Some(r) = &mut self.raw {
            r.push(ev);
        }
    }

    /// Records a top-level call without path or children from borrowed parameters: the
    /// compressor's steady state then needs no allocation. Always inlined into the hook: as a
    /// call of its own it cost about 20 instructions per traced call.
    #[inline(always)]
    fn push_call(&mut self, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
        if !self.admit() {
            return;
        }
        self.comp.push_call(op, sig, params, gap_ns, dur_ns);
        if let Some(r) = &mut self.raw {
            push_raw(r, op, sig, params, gap_ns, dur_ns);
        }
    }
}

/// Appends a call to the `IOTREX_RAW=1` log (out of the hot path).
#[cold]
fn push_raw(r: &mut Vec<RawEvent>, op: Op, sig: u64, params: &[i64], gap_ns: u64, dur_ns: u64) {
    r.push(RawEvent {
        op,
        sig,
        path: None,
        params: params.to_vec(),
        gap_ns,
        dur_ns,
        children: Vec::new(),
    });
}

/// Monotonic clock, ns ([`crate::clock`]: the TSC where usable).
#[inline(always)]
pub fn now_ns() -> u64 {
    crate::clock::now_ns()
}

/// Writes one line to stderr with a raw syscall (no std I/O: we may be inside a `write` hook).
pub fn say(msg: &str) {
    let line = format!("iotrex: {msg}\n");
    // SAFETY: the buffer is valid for its length; SYS_write on fd 2 has no other precondition.
    unsafe {
        libc::syscall(
            libc::SYS_write,
            2,
            line.as_ptr() as *const libc::c_void,
            line.len(),
        )
    };
}

/// Stops recording after an internal error: one line on stderr, and the trace is flagged.
pub fn disable(why: &str) {
    if RECORDING.swap(false, Ordering::SeqCst) {
        say(&format!("tracer disabled: {why}"));
    }
    if let Ok(mut g) = STATE.try_lock()
        && let Some(st) = g.as_mut()
    {
        st.incomplete = true;
        st.notes
            .push(format!("rank {}: tracer disabled: {why}", st.rank));
    }
}

/// Runs `f` on the state under the lock. A panic inside is caught here (it must never cross
/// the FFI boundary into the application) and disables the tracer.
#[inline]
pub fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    // `catch_unwind` costs nothing while nothing panics (unwinding is table-driven: no
    // instruction of the traced call's path belongs to it, checked with callgrind), and a
    // panic must not reach the application: without it an `extern "C"` hook would abort the
    // process. The guard releases the lock as the panic unwinds past it.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = match STATE.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.as_mut().map(f)
    }));
    match r {
        Ok(v) => v,
        Err(_) => {
            disable("internal error (panic) while recording");
            None
        }
    }
}

/// Whether this thread should trace a call now, and if so whether it is a child.
#[inline]
pub fn traceable() -> Option<bool> {
    guard::with_thread(traceable_in)
}

/// [`traceable`] with this thread's block in hand.
#[inline(always)]
pub fn traceable_in(t: &guard::Thread) -> Option<bool> {
    let m = t.mode();
    if m == guard::BUSY || !RECORDING.load(Ordering::Relaxed) {
        return None;
    }
    Some(m == guard::IN_MPIIO || m == guard::IN_HDF5 || m == guard::IN_NETCDF)
}

/// The calls made inside the running container calls of one thread, and the vectors of the
/// calls recorded before, kept for the next ones: a traced MPI-IO call and its children
/// then allocate no vector for the children or their parameters in the steady state.
struct Frames {
    /// Innermost last (an HDF5 call's frame below the frame of an MPI-IO call it made): the
    /// children recorded so far and the end of the previous one, for the gaps.
    open: Vec<(Vec<RawEvent>, u64)>,
    /// Emptied children vectors.
    lists: Vec<Vec<RawEvent>>,
    /// Emptied parameter vectors.
    params: Vec<Vec<i64>>,
}

/// How many emptied vectors of each kind a thread keeps.
const SPARE_VECS: usize = 64;

thread_local! {
    static CHILDREN: std::cell::RefCell<Frames> = const {
        std::cell::RefCell::new(Frames {
            open: Vec::new(),
            lists: Vec::new(),
            params: Vec::new(),
        })
    };
}

/// Opens a frame for the children of a call that starts at `t0`.
pub fn open_frame(t0: u64) {
    CHILDREN.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            let list = c.lists.pop().unwrap_or_default();
            c.open.push((list, t0));
        }
    });
}

/// Whether a call of this thread has a frame open for children.
pub fn frame_open() -> bool {
    CHILDREN.with(|c| c.try_borrow().is_ok_and(|c| !c.open.is_empty()))
}

/// Closes the innermost frame, giving its children.
pub fn close_frame() -> Vec<RawEvent> {
    CHILDREN.with(|c| {
        c.try_borrow_mut()
            .ok()
            .and_then(|mut c| c.open.pop())
            .map(|f| f.0)
            .unwrap_or_default()
    })
}

/// `params` in a vector kept from an earlier call if there is one.
fn params_vec(params: &[i64]) -> Vec<i64> {
    let mut v = CHILDREN
        .with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.params.pop()))
        .unwrap_or_default();
    v.extend_from_slice(params);
    v
}

/// Keeps the vectors of a recorded call (its parameters, its children and theirs) for the
/// next calls of this thread.
fn recycle(ev: RawEvent) {
    CHILDREN.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            keep(&mut c, ev);
        }
    });
}

fn keep(f: &mut Frames, mut ev: RawEvent) {
    if f.params.len() < SPARE_VECS && ev.params.capacity() > 0 {
        ev.params.clear();
        f.params.push(ev.params);
    }
    if ev.children.capacity() == 0 {
        return;
    }
    let mut list = ev.children;
    for c in list.drain(..) {
        keep(f, c);
    }
    if f.lists.len() < SPARE_VECS {
        f.lists.push(list);
    }
}

/// Adds a finished call to the innermost frame, its gap measured from the previous child's
/// end (or the frame's start).
fn push_child(mut ev: RawEvent, t0: u64, t1: u64) {
    CHILDREN.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut()
            && let Some(f) = c.open.last_mut()
        {
            ev.gap_ns = t0.saturating_sub(f.1);
            f.1 = t1;
            f.0.push(ev);
        }
    });
}

/// One finished call, ready to record.
pub struct Call {
    /// Operation.
    pub op: Op,
    /// Call-site signature.
    pub sig: u64,
    /// Start, ns.
    pub t0: u64,
    /// End, ns.
    pub t1: u64,
}

/// Records `call` with what `build` derives from the state (`None`: not recorded), either as a
/// top-level event or, when `child`, as a child of the running MPI-IO call. The parameters
/// may be a `Vec` or, on hot paths, a fixed array that costs no allocation.
#[inline]
pub fn record<P: AsRef<[i64]>>(
    call: Call,
    child: bool,
    build: impl FnOnce(&mut State) -> Option<(P, Option<String>)>,
) {
    let mut out = None;
    let mut read_after = false;
    let mut owed = 0;
    with_state(|st| {
        let (params, path) = build(st)?;
        let params = params.as_ref();
        let path = path.map(|p| st.norm_path(p));
        let dur = call.t1.saturating_sub(call.t0);
        if !child {
            owed = crate::throttle::owed(call.op, params);
        }
        let event = |path, gap_ns, params| RawEvent {
            op: call.op,
            sig: call.sig,
            path,
            params,
            gap_ns,
            dur_ns: dur,
            children: Vec::new(),
        };
        if child {
            out = Some(event(path, 0, params_vec(params)));
        } else {
            let gap = crate::own::gap(call.t0, st.last_end);
            st.last_end = call.t1;
            let (waits, read) = crate::waits::in_gap(call.t0, call.t1, gap);
            read_after = read;
            if !waits.is_zero() {
                st.push_waited(event(path, gap, params.to_vec()), waits);
            } else if path.is_none() {
                st.push_call(call.op, call.sig, params, gap, dur);
            } else {
                st.push(event(path, gap, params.to_vec()));
            }
        }
        Some(())
    });
    if read_after {
        // Outside the lock: the reading is a few system calls.
        crate::waits::read_at_end();
    }
    crate::throttle::settle(owed);
    if let Some(ev) = out {
        push_child(ev, call.t0, call.t1);
    }
}

/// Runs a hooked call that is to be recorded: under the re-entry guard, timed, recorded with
/// what `build` derives from the state and the call's result (`None`: not recorded, such as a
/// descriptor the table does not know), with the call's `errno` left for the caller. The one
/// core of the POSIX, stdio and descriptor hooks.
#[inline]
pub fn run_recorded<T: Copy, P: AsRef<[i64]>>(
    op: Op,
    child: bool,
    call: impl FnOnce() -> T,
    build: impl FnOnce(&mut State, T) -> Option<(P, Option<String>)>,
) -> T {
    guard::with_thread(|t| run_recorded_in(t, op, child, call, build))
}

/// [`run_recorded`] with this thread's block in hand: the guard and the call-site cache are
/// reached through it, one thread-local access for the whole hook.
#[inline(always)]
pub fn run_recorded_in<T: Copy, P: AsRef<[i64]>>(
    t: &guard::Thread,
    op: Op,
    child: bool,
    call: impl FnOnce() -> T,
    build: impl FnOnce(&mut State, T) -> Option<(P, Option<String>)>,
) -> T {
    let _g = t.enter(guard::BUSY);
    let sig = crate::callsite::signature_in(t);
    let t0 = crate::waits::call_start(child);
    if !child {
        crate::throttle::pause();
    }
    let r = call();
    let t1 = now_ns();
    // This thread's errno slot, looked up once for saving and restoring.
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above; read and written on this thread only.
    let e = unsafe { *errno };
    record(Call { op, sig, t0, t1 }, child, |st| build(st, r));
    // SAFETY: as above.
    unsafe { *errno = e };
    r
}

/// Records a call that carries children: top-level, or when `child` in the innermost frame
/// (an MPI-IO call made by HDF5, with its own POSIX children).
pub fn record_nested(
    call: Call,
    child: bool,
    children: Vec<RawEvent>,
    build: impl FnOnce(&mut State) -> Option<(Vec<i64>, Option<String>)>,
) {
    if !child {
        return record_parent(call, children, build);
    }
    let ev = with_state(|st| {
        let (params, path) = build(st)?;
        Some(RawEvent {
            op: call.op,
            sig: call.sig,
            path: path.map(|p| st.norm_path(p)),
            params,
            gap_ns: 0,
            dur_ns: call.t1.saturating_sub(call.t0),
            children,
        })
    });
    if let Some(Some(ev)) = ev {
        push_child(ev, call.t0, call.t1);
    }
}

/// Runs a call of a library layer above MPI-IO (HDF5, PnetCDF, NetCDF) that is to be recorded: timed
/// under the re-entry guard, in mode `inner` while the real call runs, so the calls the library
/// makes become the event's children; recorded at the top level or, when `child` (made inside
/// a traced call of a library above it: HDF5 below NetCDF), as that call's child with its own
/// children. `build` gives the parameters from the state and the call's result.
pub fn library_call<T: Copy>(
    op: Op,
    path: Option<String>,
    inner: u8,
    child: bool,
    call: impl FnOnce() -> T,
    build: impl FnOnce(&mut State, T) -> Vec<i64>,
) -> T {
    let g = guard::Enter::new(guard::BUSY);
    let sig = crate::callsite::signature();
    let t0 = crate::waits::call_start(child);
    if !child {
        crate::throttle::pause();
    }
    open_frame(t0);
    g.switch(inner);
    let r = call();
    let t1 = now_ns();
    g.switch(guard::BUSY);
    let children = close_frame();
    record_nested(Call { op, sig, t0, t1 }, child, children, |st| {
        Some((build(st, r), path))
    });
    r
}

/// Records a top-level call that carries children.
pub fn record_parent(
    call: Call,
    children: Vec<RawEvent>,
    build: impl FnOnce(&mut State) -> Option<(Vec<i64>, Option<String>)>,
) {
    let mut read_after = false;
    let mut owed = 0;
    let done = with_state(|st| {
        let (params, path) = build(st)?;
        let path = path.map(|p| st.norm_path(p));
        owed = crate::throttle::owed(call.op, &params);
        let gap = crate::own::gap(call.t0, st.last_end);
        st.last_end = call.t1;
        let (waits, read) = crate::waits::in_gap(call.t0, call.t1, gap);
        read_after = read;
        let ev = RawEvent {
            op: call.op,
            sig: call.sig,
            path,
            params,
            gap_ns: gap,
            dur_ns: call.t1.saturating_sub(call.t0),
            children,
        };
        if waits.is_zero() {
            st.push_back(ev)
        } else {
            st.push_waited(ev, waits);
            None
        }
    });
    if let Some(Some(ev)) = done {
        // Outside the lock.
        recycle(ev);
    }
    if read_after {
        crate::waits::read_at_end();
    }
    // Folding a call with its children is the tracer's own time, not the application's.
    crate::own::charge_since(call.t1);
    crate::throttle::settle(owed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_reuses_lowest_slot() {
        let mut t = Table::default();
        assert_eq!(t.insert(10), 0);
        assert_eq!(t.insert(11), 1);
        assert_eq!(t.insert(12), 2);
        assert_eq!(t.remove(11), Some(1));
        assert_eq!(t.insert(99), 1);
        assert_eq!(t.get(12), Some(2));
        // Re-inserting a live handle (a descriptor closed behind our back) frees its old slot.
        assert_eq!(t.insert(10), 0);
        assert_eq!(t.get(99), Some(1));
        // Addresses (streams, MPI files) and descriptors share the rules.
        let big = 0x7f00_dead_beef;
        assert_eq!(t.insert(big), 3);
        assert_eq!(t.get(big), Some(3));
        assert_eq!(t.remove(big), Some(3));
        assert_eq!(t.get(big), None);
        assert_eq!(t.remove(12), Some(2));
        assert_eq!(t.get(12), None);
        assert_eq!(t.remove(12), None);
        assert_eq!(t.get(5000), None);
    }

    #[test]
    fn ids_number_new_handles_in_order() {
        let mut ids = Ids::starting_at(5);
        ids.fixed(1, 0);
        assert_eq!(ids.id(1), 0);
        assert_eq!(ids.id(77), 5);
        assert_eq!(ids.id(78), 6);
        assert_eq!(ids.id(77), 5);
        ids.forget(77);
        assert_eq!(ids.id(77), 7);
    }
}
