//! Handing the trace over: the finalize-time radix-tree merge over PMPI point-to-point, the
//! write by rank 0, the per-rank fallback when a process exits without `MPI_Finalize` or the
//! merge does not end with the merged trace (a signal, a rank that never answers), and the
//! `IOTREX_RAW=1` debug log.
//!
//! The merge never hangs on a rank that stopped answering: once every rank has reached
//! `MPI_Finalize` (an unbounded wait, as `MPI_Finalize` itself has: ranks legitimately arrive
//! minutes apart), each wait of the merge is bounded by `IOTREX_MERGE_TIMEOUT` seconds per
//! round of the tree (default 60). A subtree that does not arrive in time is left out of the
//! merged trace, which is flagged incomplete and names it; the ranks left out write their
//! own files (`<stem>.rank<r>.iotrex`), as do ranks killed by a signal while they wait.

use crate::mpi::{self, H};
use crate::outfile::{self, Dest};
use crate::real::real;
use crate::state::{RECORDING, STATE, State, now_ns, say};
use libc::c_int;
use rsd::{Header, Trace, TraceFile};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What one rank sends to its parent in the merge tree.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Payload {
    trace: Trace,
    wall_ns: u64,
    incomplete: bool,
    notes: Vec<String>,
    /// Calls left out under excluded directories, summed over the ranks merged so far.
    #[serde(default)]
    excluded: Vec<rsd::exclude::Excluded>,
    /// The forked children of the ranks merged so far (`crate::procs`).
    #[serde(default)]
    processes: Option<rsd::process::Processes>,
}

impl Payload {
    /// Folds this rank's forked children in (`crate::procs::fold`): their calls, groups,
    /// notes and excluded counts.
    fn with_children(mut self) -> Payload {
        let f = crate::procs::fold(&mut self.trace);
        self.notes.extend(f.notes);
        rsd::exclude::add(&mut self.excluded, &f.excluded);
        self.processes = f.processes;
        self
    }

    /// Joins the children of the ranks merged in.
    fn add_children(&mut self, more: Option<&rsd::process::Processes>) {
        match (&mut self.processes, more) {
            (Some(p), Some(m)) => p.add(m),
            (None, Some(m)) => self.processes = Some(m.clone()),
            _ => {}
        }
    }
}

/// The trace path: `IOTREX_OUT`, or `./<exe>.<nranks>.iotrex`.
pub fn out_path(st: &State, nranks: u32) -> String {
    match &st.cfg.out {
        Some(p) if !p.is_empty() => p.clone(),
        _ => format!("{}.{nranks}.iotrex", st.cfg.exe),
    }
}

/// `app.8.iotrex` -> `app.8.rank3.iotrex`: where a rank writes on its own.
pub fn rank_path(out: &str, rank: u32, ext: &str) -> String {
    rsd::job::rank_path(out, rank, ext)
}

/// Each round of the merge waits this long for a rank (`IOTREX_MERGE_TIMEOUT`, in seconds).
static MERGE_TIMEOUT_MS: AtomicU64 = AtomicU64::new(DEFAULT_MERGE_TIMEOUT_S * 1000);
const DEFAULT_MERGE_TIMEOUT_S: u64 = 60;
/// The variable that sets [`MERGE_TIMEOUT_MS`].
const MERGE_TIMEOUT_VAR: &str = "IOTREX_MERGE_TIMEOUT";

/// At start-up (the constructor): the merge's timeout and the output writer's set-up.
pub fn init() {
    outfile::init();
    if let Ok(v) = std::env::var(MERGE_TIMEOUT_VAR) {
        match v.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s.is_finite() => {
                MERGE_TIMEOUT_MS.store((s * 1000.0).ceil() as u64, Ordering::SeqCst)
            }
            _ => say(&format!(
                "{MERGE_TIMEOUT_VAR}={v:?} is not a number of seconds above 0; the merge waits {DEFAULT_MERGE_TIMEOUT_S} s per round"
            )),
        }
    }
}

fn merge_timeout() -> Duration {
    Duration::from_millis(MERGE_TIMEOUT_MS.load(Ordering::SeqCst))
}

/// The timeout as the notes and messages say it.
fn timeout_text() -> String {
    format!(
        "{} s ({MERGE_TIMEOUT_VAR})",
        MERGE_TIMEOUT_MS.load(Ordering::SeqCst) as f64 / 1000.0
    )
}

/// This rank's own calls, encoded as its per-rank file when `MPI_Finalize` begins and
/// written at once, before the merge starts, so that they are on disk whatever happens to
/// this process during the merge (mpirun follows its SIGTERM with SIGKILL one second later,
/// a batch system may send SIGKILL alone, an application may ignore SIGTERM). The file is
/// removed once the merged trace holding this rank is written; if it could not be written
/// then, it is written again when the merge fails (from the signal handler, when its parent
/// in the merge stops answering, or at exit).
struct Pending {
    dest: Dest,
    alt: Option<Dest>,
    bytes: Vec<u8>,
    rank: u32,
    /// Where the file was written before the merge, until it is removed.
    early: Option<String>,
}

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);
/// Set once [`PENDING`] was written (or made unnecessary), so it is written once.
static PENDING_DONE: AtomicBool = AtomicBool::new(false);
/// Set once stderr was told where a per-rank file written before the merge is kept.
static PENDING_TOLD: AtomicBool = AtomicBool::new(false);

/// Writes this rank's pending file, if there is one still to write; `why` goes on stderr when
/// `tell` (not from a signal handler: a killed rank's file is its usual outcome). Never blocks
/// (the signal handler calls it): a lock held elsewhere means the merge is setting it up, and
/// nothing is written.
fn write_pending(why: &str, tell: bool) {
    let Ok(g) = PENDING.try_lock() else { return };
    let Some(p) = g.as_ref() else { return };
    if PENDING_DONE.swap(true, Ordering::SeqCst) {
        // Written before the merge began: it stays, and where it is gets said once.
        if let Some(at) = &p.early
            && tell
            && !PENDING_TOLD.swap(true, Ordering::SeqCst)
        {
            say(&format!("rank {}: {why}; its calls are in {at}", p.rank));
        }
        return;
    }
    let what = format!("rank {}'s calls ({why})", p.rank);
    if let Some(at) = outfile::put_or_fallback(&what, &p.dest, p.alt.as_ref(), &p.bytes, false)
        && at == p.dest.path
        && tell
    {
        say(&format!("rank {}: {why}; its calls are in {at}", p.rank));
    }
}

/// The merged trace holds this rank's calls: nothing to write on its own, and the file
/// written before the merge goes.
fn pending_not_needed() {
    PENDING_DONE.store(true, Ordering::SeqCst);
    let mut g = match PENDING.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if let Some(at) = g.as_mut().and_then(|p| p.early.take()) {
        let _ = std::fs::remove_file(at);
    }
}

/// Which run of the program this is (see [`rsd::Header::run_id`]): chosen by rank 0 at
/// `MPI_Init` and broadcast, so every per-rank file of the run carries the same one.
static RUN_ID: OnceLock<String> = OnceLock::new();

/// Rank 0's pid, broadcast with the run's id: the pid of the run (a name every rank makes
/// with it, OMPIO's lock file, is one run value on every rank).
static ROOT_PID: OnceLock<i64> = OnceLock::new();

/// Inside `MPI_Init`, on the tracer's communicator `comm` (collective; handles as the
/// addresses or integers they are, `byte` being `MPI_BYTE`): rank 0 picks the run's id (its
/// clock, pid and host, hashed) and sends it with its pid, every rank receives them.
pub fn agree_run_id(comm: usize, byte: usize, rank: u32) {
    type BcastFn = unsafe extern "C" fn(*mut libc::c_void, c_int, H, c_int, H) -> c_int;
    let Some(bcast) = real!("PMPI_Bcast", BcastFn) else {
        return;
    };
    let mut id = [0u8; 24];
    if rank == 0 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::time::SystemTime::now().hash(&mut h);
        std::process::id().hash(&mut h);
        let mut host = [0u8; 256];
        // SAFETY: a writable buffer of the length given.
        unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) };
        host.hash(&mut h);
        id[..16].copy_from_slice(format!("{:016x}", h.finish()).as_bytes());
        id[16..].copy_from_slice(&i64::from(std::process::id()).to_le_bytes());
    }
    let (comm, byte) = (comm as H, byte as H);
    // SAFETY: a 24-byte buffer, MPI_BYTE, root 0, the tracer's communicator (valid on every
    // rank, which all call this).
    if unsafe { bcast(id.as_mut_ptr().cast(), id.len() as c_int, byte, 0, comm) } != 0 {
        return;
    }
    if let Ok(s) = std::str::from_utf8(&id[..16]) {
        let _ = RUN_ID.set(s.to_string());
    }
    let mut pid = [0u8; 8];
    pid.copy_from_slice(&id[16..]);
    let _ = ROOT_PID.set(i64::from_le_bytes(pid));
}

/// Rank 0's pid, once agreed.
pub fn root_pid() -> Option<i64> {
    ROOT_PID.get().copied()
}

/// This run's id, once agreed.
fn run_id() -> Option<String> {
    RUN_ID.get().cloned()
}

/// Takes the state out of the lock, so nothing below holds it while doing I/O (the `close`
/// hook takes it).
fn take_state() -> Option<State> {
    RECORDING.store(false, Ordering::SeqCst);
    let mut g = match STATE.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let st = g.as_mut()?;
    if st.done {
        return None;
    }
    st.done = true;
    // Keep a husk in place (done = true) so later hooks see a finished tracer.
    let cfg = st.cfg.clone();
    let husk = State::new(cfg, 0);
    let mut st = std::mem::replace(st, husk);
    if let Some(h) = g.as_mut() {
        h.done = true;
    }
    st.done = true;
    Some(st)
}

fn write_raw(st: &State, out: &str) {
    let Some(raw) = &st.raw else { return };
    let path = rank_path(out, st.rank, "jsonl");
    let mut buf = Vec::new();
    for ev in raw {
        if serde_json::to_writer(&mut buf, &ev.logged()).is_err() {
            say(&format!("cannot encode the raw log for rank {}", st.rank));
            return;
        }
        buf.push(b'\n');
    }
    if let Err(e) = std::fs::File::create(&path).and_then(|mut f| f.write_all(&buf)) {
        say(&format!("cannot write {path}: {e}"));
    }
}

fn header(st: &State, nranks: u32, p: &Payload) -> Header {
    let mut h = Header::new(nranks);
    h.command = st.cfg.argv.clone();
    h.wall_ns = p.wall_ns;
    h.incomplete = p.incomplete;
    h.notes = rsd::notes::fold_rank_notes(&p.notes);
    h.unrecorded_mpi = st.unrecorded_mpi.clone();
    h.mpi_config = st.mpi_config.clone();
    h.build_id = st.cfg.build_id.clone();
    h.node_cores = st.node_cores.clone();
    h.node_layout = st.node_layout.clone();
    h.shared_machines = st.shared_machines.clone();
    h.excluded = p.excluded.clone();
    h.processes = p.processes.clone();
    if let Some(e) = &st.cfg.exclude_error {
        h.notes.push(e.clone());
    }
    // The layers this tracer recorded: a library's above MPI-IO on top when it was on and
    // its calls are in the trace. The layers are on by default; a program without the library
    // keeps the header it had before they existed.
    let on = |f: &std::sync::atomic::AtomicBool| f.load(std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    containers_in(&p.trace.nodes, &mut seen);
    let libs = [
        (rsd::op::Layer::Hdf5, on(&crate::hdf5::ENABLED)),
        (rsd::op::Layer::Pnetcdf, on(&crate::pnetcdf::ENABLED)),
        (rsd::op::Layer::Netcdf, on(&crate::netcdf::ENABLED)),
    ]
    .map(|(l, on)| (l, on && seen.contains(&l)));
    if libs[0].1
        && let Some(v) = crate::hdf5::version()
    {
        h.notes.push(format!("{}{v}", rsd::HDF5_NOTE));
    }
    if libs.iter().any(|l| l.1) {
        h.layers = rsd::op::Layer::STACK
            .into_iter()
            .filter(|l| libs.iter().all(|(lib, on)| l != lib || *on))
            .collect();
    }
    h
}

/// The container layers (HDF5, PnetCDF, NetCDF) whose calls are in `nodes`, nested ones too.
fn containers_in(nodes: &[rsd::trace::Node], out: &mut Vec<rsd::op::Layer>) {
    for n in nodes {
        match &n.kind {
            rsd::trace::NodeKind::Event(e) => {
                let l = e.op.layer();
                if l.is_container() {
                    if !out.contains(&l) {
                        out.push(l);
                    }
                    containers_in(&e.children, out);
                }
            }
            rsd::trace::NodeKind::Loop(l) => containers_in(&l.body, out),
        }
    }
}

/// The bytes of `tf`, its numbers that matched the run's own ids (recorded as run-value
/// markers by the compressor, [`rsd::runvalue::RunIds`]) made run values: every file the
/// tracer writes goes through here, merged or one rank's.
pub(crate) fn encoded(tf: &TraceFile) -> Result<Vec<u8>, rsd::RsdError> {
    if !rsd::runvalue::marked(&tf.trace.nodes) {
        return tf.to_bytes();
    }
    let mut t = tf.clone();
    rsd::runvalue::restore(&mut t.trace.nodes);
    t.to_bytes()
}

/// Writes `tf` at `path`, whole or not at all, or in the temporary directory when `path`
/// refuses it (see [`outfile`]); returns where it went.
fn write_trace(path: &str, tf: &TraceFile) -> Option<String> {
    match encoded(tf) {
        Ok(b) => outfile::write_path("the trace", path, &b),
        Err(e) => {
            say(&format!("cannot encode the trace for {path}: {e}"));
            None
        }
    }
}

/// The PMPI calls of the merge, on the tracer's communicator. Requests and statuses are only
/// ever passed by address, so one layout serves both ABIs: a pointer-sized, zeroed request
/// (Open MPI's pointer, MPICH's int) and a 64-byte status (either library's `MPI_Status`).
struct Pmpi {
    comm: H,
    byte: H,
    isend: IsendFn,
    iprobe: IprobeFn,
    recv: RecvFn,
    test: TestFn,
    get_count: GetCountFn,
    ibarrier: IbarrierFn,
    request_free: unsafe extern "C" fn(*mut H) -> c_int,
}

type IsendFn =
    unsafe extern "C" fn(*const libc::c_void, c_int, H, c_int, c_int, H, *mut H) -> c_int;
type IprobeFn = unsafe extern "C" fn(c_int, c_int, H, *mut c_int, *mut libc::c_void) -> c_int;
type RecvFn =
    unsafe extern "C" fn(*mut libc::c_void, c_int, H, c_int, c_int, H, *mut libc::c_void) -> c_int;
type TestFn = unsafe extern "C" fn(*mut H, *mut c_int, *mut libc::c_void) -> c_int;
type GetCountFn = unsafe extern "C" fn(*const libc::c_void, H, *mut c_int) -> c_int;
type IbarrierFn = unsafe extern "C" fn(H, *mut H) -> c_int;

/// Tag of the traces sent up the merge tree, and of the word sent back down that the merged
/// trace was written (on the tracer's own communicator, so any values would do).
const TAG: c_int = 0x10_7e;
const TAG_DONE: c_int = TAG + 1;

/// Why a wait of the merge ended without its message.
#[derive(Debug, PartialEq)]
enum Missed {
    /// The deadline passed.
    Timeout,
    /// MPI refused (an error code), or the message was malformed.
    Failed,
}

/// Polls `ready` until it says done or `deadline` passes: busy at first (a merge round is
/// usually quick), then sleeping up to 2 ms between polls, so ranks waiting on a slow one
/// leave the node's cores to it.
fn poll(
    deadline: Option<Instant>,
    mut ready: impl FnMut() -> Result<bool, ()>,
) -> Result<(), Missed> {
    let mut nap = Duration::from_micros(20);
    for i in 0u64.. {
        match ready() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(()) => return Err(Missed::Failed),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Missed::Timeout);
        }
        if i < 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(2));
        }
    }
    Err(Missed::Timeout)
}

impl Pmpi {
    fn load(comm: H, byte: H) -> Option<Pmpi> {
        Some(Pmpi {
            comm,
            byte,
            isend: real!("PMPI_Isend", IsendFn)?,
            iprobe: real!("PMPI_Iprobe", IprobeFn)?,
            recv: real!("PMPI_Recv", RecvFn)?,
            test: real!("PMPI_Test", TestFn)?,
            get_count: real!("PMPI_Get_count", GetCountFn)?,
            ibarrier: real!("PMPI_Ibarrier", IbarrierFn)?,
            request_free: real!("PMPI_Request_free", unsafe extern "C" fn(*mut H) -> c_int)?,
        })
    }

    /// Waits for a started request until `deadline`. On a timeout the request is left to
    /// MPI (`MPI_Request_free`) and `keep` (its buffer) leaked, since MPI may still read it.
    fn wait(&self, mut req: H, deadline: Option<Instant>, keep: Vec<u8>) -> Result<(), Missed> {
        let mut status = [0u64; 8];
        let r = poll(deadline, || {
            let mut flag: c_int = 0;
            // SAFETY: `req` is the request MPI gave, `flag` and `status` valid out-parameters.
            let rc = unsafe { (self.test)(&mut req, &mut flag, status.as_mut_ptr().cast()) };
            if rc != 0 { Err(()) } else { Ok(flag != 0) }
        });
        if r.is_err() {
            // SAFETY: the request is still active; freeing lets MPI complete it on its own.
            unsafe { (self.request_free)(&mut req) };
            std::mem::forget(keep);
        }
        r
    }

    /// Sends `bytes` to `dest` with `tag`, waiting until `deadline` at most.
    fn send(
        &self,
        bytes: Vec<u8>,
        dest: i64,
        tag: c_int,
        deadline: Option<Instant>,
    ) -> Result<(), Missed> {
        // A compressed trace over 2 GiB means the compression failed anyway; the caller sends
        // a flagged empty payload instead.
        let n = c_int::try_from(bytes.len()).map_err(|_| Missed::Failed)?;
        let mut req: H = std::ptr::null_mut();
        // SAFETY: the buffer stays alive until the request completes (or is leaked by `wait`);
        // `comm` is the tracer's communicator and `dest` a rank in it.
        let rc = unsafe {
            (self.isend)(
                bytes.as_ptr().cast(),
                n,
                self.byte,
                dest as c_int,
                tag,
                self.comm,
                &mut req,
            )
        };
        if rc != 0 {
            return Err(Missed::Failed);
        }
        self.wait(req, deadline, bytes)
    }

    /// Receives one message from `src` with `tag`, of whatever length, waiting for it until
    /// `deadline` at most.
    fn recv(&self, src: i64, tag: c_int, deadline: Option<Instant>) -> Result<Vec<u8>, Missed> {
        let mut status = [0u64; 8];
        poll(deadline, || {
            let mut flag: c_int = 0;
            // SAFETY: valid out-parameters; `comm` is the tracer's communicator.
            let rc = unsafe {
                (self.iprobe)(
                    src as c_int,
                    tag,
                    self.comm,
                    &mut flag,
                    status.as_mut_ptr().cast(),
                )
            };
            if rc != 0 { Err(()) } else { Ok(flag != 0) }
        })?;
        let mut n: c_int = 0;
        // SAFETY: `status` is the one the probe filled.
        if unsafe { (self.get_count)(status.as_ptr().cast(), self.byte, &mut n) } != 0 || n < 0 {
            return Err(Missed::Failed);
        }
        let mut buf = vec![0u8; n as usize];
        // SAFETY: `buf` holds the `n` bytes the probed message has, which this receive takes.
        let rc = unsafe {
            (self.recv)(
                buf.as_mut_ptr().cast(),
                n,
                self.byte,
                src as c_int,
                tag,
                self.comm,
                status.as_mut_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(Missed::Failed);
        }
        Ok(buf)
    }

    /// Waits, without a deadline, until every rank has reached the merge.
    fn barrier(&self) -> Result<(), Missed> {
        let mut req: H = std::ptr::null_mut();
        // SAFETY: `comm` is the tracer's communicator; `req` a valid out-parameter.
        if unsafe { (self.ibarrier)(self.comm, &mut req) } != 0 {
            return Err(Missed::Failed);
        }
        self.wait(req, None, Vec::new())
    }
}

/// `trace` with its over-budget parameters summarised as the configuration allows
/// ([`rsd::approx::bound`]); on each rank before the merge, so what travels stays bounded,
/// and at rank 0 after it.
fn bounded(mut trace: rsd::Trace, cfg: &crate::state::Config) -> rsd::Trace {
    rsd::approx::bound(&mut trace, &cfg.approx);
    trace
}

/// Prepares [`PENDING`]: this rank's own calls as its per-rank file, flagged incomplete.
fn set_pending(st: &State, out: &str, nranks: u32, own: &Payload) {
    let mut notes = own.notes.clone();
    notes.push(format!(
        "rank {}: the merge in MPI_Finalize did not complete (a signal, or a rank that did not answer); only this rank's calls are in this file",
        st.rank
    ));
    let p = Payload {
        trace: own.trace.clone(),
        wall_ns: own.wall_ns,
        incomplete: true,
        notes,
        excluded: own.excluded.clone(),
        processes: own.processes.clone(),
    };
    let mut header = header(st, nranks, &p);
    header.run_id = run_id();
    let tf = TraceFile {
        header,
        trace: p.trace,
    };
    let path = rank_path(out, st.rank, "iotrex");
    let (Ok(bytes), Some(dest)) = (encoded(&tf), Dest::new(&path)) else {
        return;
    };
    let alt = outfile::fallback(&path);
    // On disk before the merge starts; quietly, since it is removed once the merged trace
    // holds it (where it stays is said when the merge fails).
    let early = if outfile::put(&dest, &bytes, false).is_ok() {
        Some(dest.path.clone())
    } else {
        alt.as_ref()
            .filter(|a| outfile::put(a, &bytes, false).is_ok())
            .map(|a| a.path.clone())
    };
    let pending = Pending {
        alt,
        dest,
        bytes,
        rank: st.rank,
        early,
    };
    if let Ok(mut g) = PENDING.lock() {
        if pending.early.is_some() {
            PENDING_DONE.store(true, Ordering::SeqCst);
        }
        *g = Some(pending);
    }
}

/// `MPI_Finalize` is recorded when it is entered, before the merge it hosts, so it would keep
/// 0 ns. Once every rank has reached it (the tracer's barrier), its duration is set to the
/// time from `since` (the start of the tracer's work in it, microseconds after the call's
/// entry) to now: the wait for the last rank, which `MPI_Finalize`'s own synchronisation would
/// have had, plus the encoding of this rank's fallback file. The merge, the write and
/// `PMPI_Finalize` itself come after the trace is taken and are not in it.
fn time_finalize(trace: &mut Trace, since: u64, rank: u32) {
    let last = trace
        .nodes
        .iter_mut()
        .rev()
        .find_map(|n| match &mut n.kind {
            rsd::trace::NodeKind::Event(e)
                if e.op == rsd::Op::Finalize && e.timing.dur.count == 1 =>
            {
                Some(e)
            }
            _ => None,
        });
    if let Some(e) = last {
        e.timing.dur = rsd::timing::Stats::one(now_ns().saturating_sub(since), rank);
    }
}

/// Inside `MPI_Finalize`: merges every rank's trace over a binary radix tree (in round k, rank
/// r receives from r + 2^k when r is a multiple of 2^(k+1), otherwise sends to r - 2^k and is
/// done) and rank 0 writes the file, then tells the ranks it holds, down the same tree. Every
/// rank takes part whatever happened before (a rank whose tracer was disabled sends an empty,
/// flagged trace); each wait after the first barrier is bounded (see the module's text).
pub fn merge_and_write(comm: H) {
    let Some(g) = mpi::globals() else { return };
    let t_start = now_ns();
    let byte = g.byte as H;
    let rank = mpi::comm_rank(comm);
    let size = mpi::comm_size(comm);
    let st = std::panic::catch_unwind(take_state).ok().flatten();
    let mut payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &st {
        Some(st) => Payload {
            trace: bounded(st.comp.finish(), &st.cfg),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete,
            notes: st
                .notes
                .iter()
                .cloned()
                .chain(crate::posix_more::unrecorded_note(st.rank))
                .collect(),
            excluded: crate::exclude::taken(),
            processes: None,
        }
        .with_children(),
        None => Payload {
            incomplete: true,
            notes: vec![format!("rank {rank}: no trace (tracer state lost)")],
            ..Payload::default()
        },
    }))
    .unwrap_or_else(|_| Payload {
        incomplete: true,
        notes: vec![format!("rank {rank}: internal error building the trace")],
        ..Payload::default()
    });
    let out = st.as_ref().map(|s| out_path(s, size as u32));
    if let (Some(st), Some(out)) = (&st, &out) {
        write_raw(st, out);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            set_pending(st, out, size as u32, &payload)
        }));
    }
    let Some(m) = Pmpi::load(comm, byte) else {
        say("the MPI library lacks a call the merge needs; each rank writes its own file");
        write_pending("no merge", true);
        return;
    };
    // Unbounded: ranks reach MPI_Finalize when their work is done, minutes apart if need be,
    // and MPI_Finalize itself would wait for them too.
    if m.barrier().is_err() {
        say("the tracer's barrier failed at MPI_Finalize; each rank writes its own file");
        write_pending("no merge", true);
        return;
    }
    time_finalize(&mut payload.trace, t_start, rank as u32);
    let t0 = Instant::now();
    let t = merge_timeout();
    let at = |rounds: u32| Some(t0 + t * rounds);
    let mut merged_from: Vec<i64> = Vec::new();
    let (mut step, mut round) = (1i64, 0u32);
    let mut parent = None;
    while step < size {
        if rank % (2 * step) == 0 {
            let src = rank + step;
            if src < size {
                let got = m
                    .recv(src, TAG, at(round + 1))
                    .and_then(|b| rmp_serde::from_slice::<Payload>(&b).map_err(|_| Missed::Failed));
                match got {
                    Ok(p) => {
                        merged_from.push(src);
                        let merged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            rsd::merge(&payload.trace, &p.trace)
                        }));
                        match merged {
                            Ok(Ok(t)) => payload.trace = t,
                            Ok(Err(e)) => {
                                payload.incomplete = true;
                                payload.notes.push(format!("merge with rank {src}: {e}"));
                            }
                            Err(_) => {
                                payload.incomplete = true;
                                payload
                                    .notes
                                    .push(format!("merge with rank {src}: internal error"));
                            }
                        }
                        payload.wall_ns = payload.wall_ns.max(p.wall_ns);
                        payload.incomplete |= p.incomplete;
                        payload.notes.extend(p.notes);
                        rsd::exclude::add(&mut payload.excluded, &p.excluded);
                        payload.add_children(p.processes.as_ref());
                    }
                    Err(Missed::Timeout) => {
                        let last = (src + step).min(size) - 1;
                        let who = if last > src {
                            format!("ranks {src}-{last}")
                        } else {
                            format!("rank {src}")
                        };
                        say(&format!(
                            "rank {rank}: no trace from {who} within {}; the merge goes on without them, and they write their own files",
                            timeout_text()
                        ));
                        payload.incomplete = true;
                        payload.notes.push(format!(
                            "{who}: trace not received within {} at MPI_Finalize; not in this trace",
                            timeout_text()
                        ));
                    }
                    Err(Missed::Failed) => {
                        payload.incomplete = true;
                        payload
                            .notes
                            .push(format!("ranks from {src}: trace not received"));
                    }
                }
            }
        } else {
            parent = Some(rank - step);
            let bytes = rmp_serde::to_vec(&payload).unwrap_or_default();
            let bytes = if c_int::try_from(bytes.len()).is_ok() {
                bytes
            } else {
                // The parent still waits for a message; an empty flagged payload.
                let empty = Payload {
                    incomplete: true,
                    notes: vec![format!("rank {rank}: trace too large to send")],
                    ..Payload::default()
                };
                rmp_serde::to_vec(&empty).unwrap_or_default()
            };
            if let Err(e) = m.send(bytes, rank - step, TAG, at(round + 2)) {
                say(&format!(
                    "rank {rank}: could not hand its trace to rank {} ({}); it writes its own file",
                    rank - step,
                    match e {
                        Missed::Timeout => format!("no answer within {}", timeout_text()),
                        Missed::Failed => "MPI refused".to_string(),
                    }
                ));
                write_pending("its parent in the merge did not answer", true);
                return;
            }
            break;
        }
        step *= 2;
        round += 1;
    }
    let rounds = (size.max(1) as u64).next_power_of_two().trailing_zeros();
    let written = if rank == 0 {
        st.as_ref().zip(out.as_ref()).is_some_and(|(st, out)| {
            let w = write_merged(st, out, size as u32, payload);
            if st.cfg.verbose
                && let Some(w) = &w
            {
                let bytes = std::fs::metadata(w).map(|m| m.len()).unwrap_or(0);
                say(&format!(
                    "{size} ranks merged in {:.1} ms; trace {w} ({bytes} bytes); rank 0 unwound \
                     {} call-site stacks",
                    now_ns().saturating_sub(t_start) as f64 / 1e6,
                    crate::callsite::unwound()
                ));
            }
            w.is_some()
        })
    } else {
        // The word comes back down the tree once rank 0 has written.
        let word = parent.map(|p| m.recv(p, TAG_DONE, at(rounds + 2)));
        match word {
            Some(Ok(w)) => w.first() == Some(&1),
            Some(Err(Missed::Timeout)) => {
                write_pending(
                    &format!(
                        "no word from rank 0 that the merged trace holds it within {}",
                        timeout_text()
                    ),
                    true,
                );
                return;
            }
            _ => false,
        }
    };
    // The ranks merged here are in the file (or not, and then they write their own).
    for c in merged_from {
        let _ = m.send(vec![u8::from(written)], c, TAG_DONE, at(rounds + 3));
    }
    if written {
        pending_not_needed();
    } else {
        write_pending("the merged trace could not be written", true);
    }
}

/// Rank 0, after the merge: finishes the merged trace and writes it; returns where it went.
fn write_merged(st: &State, out: &str, size: u32, mut payload: Payload) -> Option<String> {
    // Offsets that are prefix sums of the ranks' sizes (a shared-file dump) become that
    // model while every rank's exact values are here, before any size is summarised.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rsd::prefix::recognise(&mut payload.trace)
    }));
    // The ranks' summaries joined in the merge; a parameter that some ranks summarised and
    // others kept exact becomes one summary here.
    payload.trace = bounded(std::mem::take(&mut payload.trace), &st.cfg);
    if let Some(e) = &st.cfg.approx_error {
        payload
            .notes
            .push(format!("{e}; the default approximation was used"));
    }
    if st.cfg.drains {
        payload.notes.push(rsd::approx::ORDER_NOTE.to_string());
    }
    // Non-rank processes of the job that wrote before any rank existed (a helper the job
    // script ran first) hand the output over to the ranks.
    let taken = crate::job::take_back();
    if st.cfg.verbose {
        for t in &taken {
            say(&format!("trace of a non-rank process of this job: {t}"));
        }
    }
    let tf = TraceFile {
        header: header(st, size, &payload),
        trace: payload.trace,
    };
    write_trace(out, &tf)
}

/// Set by the launcher (`IOTREX_ONE_WRITER=1`, read at start-up) for a plain command: every
/// process of the command inherits the same `IOTREX_OUT`, so a shell running `a; b` would have
/// each program overwrite the last one's trace. With it set, the first process to write claims
/// the path (an exclusive create, after the launcher removed any stale file); later ones write
/// `<stem>.pid<PID>.iotrex` beside it.
pub static ONE_WRITER: AtomicBool = AtomicBool::new(false);

/// Set while `at_exit` writes: a terminating signal that arrives then is held back until the
/// file is written (see [`crate::signals`]).
pub static EXITING: AtomicBool = AtomicBool::new(false);

/// `app.iotrex` -> `app.pid1234.iotrex`: where a process that lost the claim on the path writes.
pub fn pid_path(out: &str, pid: u32) -> String {
    let stem = out.strip_suffix(".iotrex").unwrap_or(out);
    format!("{stem}.pid{pid}.iotrex")
}

/// What one process writes on its own, outside the finalize merge: the path and the file.
struct Alone {
    path: String,
    /// `IOTREX_OUT` (or the default), for the raw log's name.
    out: String,
    /// A serial program's trace, whose path may be claimed (see [`ONE_WRITER`]) and which the
    /// job's ranks, if any start later, take back (see [`crate::job`]).
    serial: bool,
    tf: TraceFile,
}

/// The file a process writes on its own, or `None` when it must write nothing. `why` says
/// what ended the process early (a signal); `None` for a normal exit.
fn alone(st: &State, why: Option<&str>) -> Option<Alone> {
    let mut notes = st.notes.clone();
    notes.extend(crate::posix_more::unrecorded_note(st.rank));
    if st.mpi_initialized {
        let nranks = st.cfg.env_size.unwrap_or(1);
        notes.push(format!(
            "rank {}: {} without MPI_Finalize; only this rank's calls are in this file",
            st.rank,
            why.unwrap_or("exited")
        ));
        let out = out_path(st, nranks);
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: true,
            notes,
            excluded: crate::exclude::taken(),
            processes: None,
        }
        .with_children();
        let mut header = header(st, nranks, &p);
        header.run_id = run_id();
        Some(Alone {
            path: rank_path(&out, st.rank, "iotrex"),
            out,
            serial: false,
            tf: TraceFile {
                header,
                trace: p.trace,
            },
        })
    } else if st.cfg.env_size.is_none() && (st.comp.events() > 0 || crate::procs::holds_processes())
    {
        // A process that recorded nothing writes nothing: a preloaded wrapper (`timeout`,
        // `env`) exits after the program it ran and must not overwrite that program's trace.
        // Unless its tree holds processes: the program it forked and exec'd is one of them
        // (`crate::procs`), and wrote no trace of its own.
        // Nor does a process of a job whose ranks own the trace (a launcher, a helper of the
        // job script), unless asked to keep it under a name that says what it is.
        let of_mpi_job = crate::job::has_ranks();
        if of_mpi_job && !crate::job::ALL_PROCESSES.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(w) = why {
            notes.push(format!("{w}; the calls up to then are in this file"));
        }
        let out = if of_mpi_job {
            notes.push(format!(
                "not an MPI rank: a process ({}) of an MPI job, kept by IOTREX_ALL_PROCESSES=1",
                st.cfg.exe
            ));
            crate::job::own_nonrank_path(st.cfg.out.as_deref(), &st.cfg.exe)
        } else {
            out_path(st, 1)
        };
        let p = Payload {
            trace: st.comp.finish(),
            wall_ns: now_ns().saturating_sub(st.start_ns),
            incomplete: st.incomplete || why.is_some(),
            notes,
            excluded: crate::exclude::taken(),
            processes: None,
        }
        .with_children();
        Some(Alone {
            path: out.clone(),
            out,
            serial: !of_mpi_job,
            tf: TraceFile {
                header: header(st, 1, &p),
                trace: p.trace,
            },
        })
    } else {
        // Launched by mpirun but never called MPI_Init: a helper process (a shell, a script
        // the rank ran); it writes nothing rather than overwrite the ranks' trace.
        None
    }
}

/// Opens `path` for writing, created with mode 0644 and `flags` (`O_EXCL`, `O_TRUNC`), by the
/// raw system call (no hook, no lock: the signal handler uses it). `Err(errno)` on failure.
fn create_raw(path: &std::ffi::CStr, flags: c_int) -> Result<libc::c_long, c_int> {
    // SAFETY: `path` is a NUL-terminated path; openat with O_CREAT takes a mode argument.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC | flags,
            0o644,
        )
    };
    if fd < 0 {
        Err(crate::posix::errno())
    } else {
        Ok(fd)
    }
}

/// Creates `path` if it does not exist (raw syscalls: the signal handler uses this too).
/// `Err(errno)` otherwise.
fn create_excl(path: &str) -> Result<(), c_int> {
    let c = std::ffi::CString::new(path).map_err(|_| libc::EINVAL)?;
    let fd = create_raw(&c, libc::O_EXCL)?;
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::syscall(libc::SYS_close, fd) };
    Ok(())
}

/// The path a serial program writes: `out`, unless [`ONE_WRITER`] is set and another process
/// of the same command claimed it first; then `<stem>.pid<PID>.iotrex`, or `-2`, `-3`, ...
/// after the pid when that is taken too (a process that wrote before `exec` and the program
/// it became share the pid).
fn claim(out: &str) -> String {
    if !ONE_WRITER.load(Ordering::SeqCst) {
        return out.to_string();
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::syscall(libc::SYS_getpid) } as u32;
    let first = pid_path(out, pid);
    let candidate = |k: u32| match k {
        0 => out.to_string(),
        1 => first.clone(),
        _ => {
            let stem = first.strip_suffix(".iotrex").unwrap_or(&first);
            format!("{stem}-{k}.iotrex")
        }
    };
    // This process already claimed a path (a snapshot written from a signal handler the
    // application then survived): it writes there again.
    let mine = CLAIMED.load(Ordering::SeqCst);
    if mine > 0 {
        return candidate(mine - 1);
    }
    for k in 0..100 {
        let p = candidate(k);
        match create_excl(&p) {
            Ok(()) => {
                CLAIMED.store(k + 1, Ordering::SeqCst);
                return p;
            }
            Err(e) if e == libc::EEXIST => continue,
            // Any other error: the write fails on the same path and says why.
            Err(_) => return p,
        }
    }
    first
}

/// Which path of [`claim`] this process holds: 0 none, k + 1 for candidate k.
static CLAIMED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// At process exit: a serial program writes its trace; an MPI rank that never reached
/// `MPI_Finalize` writes what it recorded on its own, flagged incomplete (no communication, so
/// it cannot hang).
pub fn at_exit() {
    at_end(rsd::process::End::Exit(None));
}

/// [`at_exit`], and before `exec`: a traced forked child writes its record, ended by `end`
/// (an `exit` status the hook saw replaces `Exit(None)`).
fn at_end(end: rsd::process::End) {
    if crate::procs::is_child() {
        let end = match (end, crate::procs::EXIT_STATUS.load(Ordering::SeqCst)) {
            (rsd::process::End::Exit(None), s) if s != i32::MIN => rsd::process::End::Exit(Some(s)),
            (e, _) => e,
        };
        crate::procs::write_record(end);
        return;
    }
    if crate::state::FORKED.load(Ordering::SeqCst) || mpi::WRONG_MPI.load(Ordering::SeqCst) {
        return;
    }
    if crate::procs::exec_own_record() {
        crate::procs::restart_after_failed_exec();
    }
    EXITING.store(true, Ordering::SeqCst);
    // Exiting inside MPI_Finalize, before the merged trace was confirmed (an MPI error
    // handler that exits, say): this rank's own calls.
    write_pending("exited during the merge in MPI_Finalize", true);
    if let Some(st) = take_state()
        && let Some(a) = alone(&st, None)
    {
        write_raw(&st, &a.out);
        let path = if a.serial { claim(&a.path) } else { a.path };
        let at = write_trace(&path, &a.tf);
        if let Some(at) = &at
            && a.serial
        {
            crate::job::note_written(at, st.cfg.out.as_deref(), &st.cfg.exe);
        }
        if st.cfg.verbose {
            say(&format!(
                "trace {}; {} call-site stacks unwound",
                at.as_deref().unwrap_or("not written"),
                crate::callsite::unwound()
            ));
        }
    }
    // A process that wrote no trace leaves no spool of children behind.
    crate::procs::discard();
    crate::job::cleanup_if_root();
    EXITING.store(false, Ordering::SeqCst);
    crate::signals::raise_held();
}

/// In `MPI_Abort`, before the library's own: this rank's calls, written as at exit without
/// `MPI_Finalize` and saying it aborted, since the launcher may kill the process before any
/// exit handler runs. Inside the merge (an error handler that aborts), the file written when
/// it began stays. Once only: the state is taken.
pub fn on_abort(code: c_int) {
    if crate::procs::is_child()
        || crate::state::FORKED.load(Ordering::SeqCst)
        || mpi::WRONG_MPI.load(Ordering::SeqCst)
    {
        return;
    }
    let why = format!("called MPI_Abort (error code {code})");
    write_pending(&why, true);
    if let Some(st) = take_state()
        && let Some(a) = alone(&st, Some(&why))
    {
        write_raw(&st, &a.out);
        let path = if a.serial { claim(&a.path) } else { a.path };
        if let Some(at) = write_trace(&path, &a.tf)
            && a.serial
        {
            crate::job::note_written(&at, st.cfg.out.as_deref(), &st.cfg.exe);
        }
    }
}

/// Before `exec`: the process image is replaced without running exit handlers, so what this
/// process recorded is written now, as at exit, and recording stops (a failed `exec` leaves
/// the rest of the process untraced). Used for shells that `exec` their last command.
pub fn before_exec() {
    at_end(rsd::process::End::Exec);
}

/// In the handler of a terminating signal: writes what this process recorded, the way
/// [`at_exit`] would, flagged incomplete with `why`. `last`: the process is about to die, so
/// recording stops; otherwise (the application handles the signal and may go on) it is a
/// snapshot, and a later exit or finalize writes again.
///
/// It never blocks: if the state lock is held (the signal interrupted a hook on this thread,
/// or another thread is recording), it says so in one line and writes nothing. The file is
/// encoded under the lock and written after releasing it, with raw syscalls.
pub fn on_signal(why: &str, last: bool) {
    if crate::procs::is_child() {
        // A child that survives the signal (its handler returns) goes on recording.
        if last {
            let n = crate::signals::SIGNALLED.load(Ordering::SeqCst);
            crate::procs::write_record(rsd::process::End::Signal(n));
        }
        return;
    }
    if crate::state::FORKED.load(Ordering::SeqCst) || mpi::WRONG_MPI.load(Ordering::SeqCst) {
        return;
    }
    // Inside MPI_Finalize, before the merged trace was confirmed: the file encoded when the
    // merge began (the state below is already taken).
    write_pending(why, false);
    let encoded = {
        let mut g = match STATE.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                say(&format!(
                    "{why}: the tracer state was in use, so this process's trace is not written"
                ));
                return;
            }
        };
        let Some(st) = g.as_mut() else { return };
        if st.done {
            return;
        }
        if last {
            RECORDING.store(false, Ordering::SeqCst);
            st.done = true;
        }
        let Some(a) = alone(st, Some(why)) else {
            return;
        };
        let who = Some((st.cfg.out.clone(), st.cfg.exe.clone()));
        match encoded(&a.tf) {
            Ok(b) => (a.path, a.serial, b, who),
            Err(e) => {
                say(&format!("{why}: cannot encode the trace: {e}"));
                return;
            }
        }
    };
    let (path, serial, bytes, who) = encoded;
    let path = if serial { claim(&path) } else { path };
    let Some(d) = Dest::new(&path) else { return };
    let at = outfile::put_or_fallback(
        "this process's trace",
        &d,
        outfile::fallback(&path).as_ref(),
        &bytes,
        false,
    );
    if let (Some(at), true, Some((out, exe))) = (at, serial, who) {
        crate::job::note_written(&at, out.as_deref(), &exe);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rank_paths() {
        assert_eq!(
            super::rank_path("a/app.8.iotrex", 3, "jsonl"),
            "a/app.8.rank3.jsonl"
        );
        assert_eq!(super::rank_path("out", 0, "iotrex"), "out.rank0.iotrex");
        assert_eq!(super::pid_path("d/ls.iotrex", 42), "d/ls.pid42.iotrex");
    }
}
