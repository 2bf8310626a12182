//! `--threads`: every rank as a thread of one process, without MPI (the MPIOR way).
//!
//! Barriers and collectives become barriers over the threads of the communicator's ranks;
//! point-to-point messages go through per-rank mailboxes (sends are eager, so a send never
//! waits for its receive, as MPI allows for small messages); MPI-IO calls become the
//! equivalent positioned I/O on the shared file, with collective calls synchronised over the
//! file's communicator. Noncontiguous file views are flattened from the recorded datatype
//! constructors and each access is split into one positioned call per file region it touches.
//! Each rank is one OS thread with a small stack, or, past `--max-threads`, a coroutine on a
//! bounded pool of threads ([`crate::sched`]): there every wait below yields the coroutine
//! instead of blocking its thread. Either way the order and synchronisation of every rank's
//! calls are exactly those of the trace.

mod comm;
mod create;
mod file;
mod p2p;

use crate::engine::{Pattern, Runtime};
use crate::root::Mapped;
use crate::types::Types;
use comm::CommObj;
use file::MFile;
use filetable::{Effect, FileTable};
use rsd::op::{Creation as Made, Op, P2p, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often a blocked thread checks whether the replay was aborted.
const POLL: Duration = Duration::from_millis(50);

/// State shared by every rank thread.
pub struct Shared {
    world: Arc<CommObj>,
    next_uid: AtomicU64,
    /// Communicators being created by dup/split, keyed by (parent uid, creation number).
    creating: Mutex<HashMap<(u64, u64), Arc<Creation>>>,
    /// Shared file pointers, by file.
    shared_fps: Mutex<HashMap<PathBuf, Arc<AtomicU64>>>,
    /// Set when a rank stops on an error or finishes: blocked ranks then give up instead of
    /// waiting forever for it.
    pub abort: AtomicBool,
    finished: Vec<AtomicBool>,
    /// How many ranks have finished: a pooled waiter re-reads its members' flags only when
    /// this moved (a 1,024-rank barrier re-checked at every message would scan 1,024 flags).
    nfinished: AtomicUsize,
    /// Collective MPI-IO data calls are replayed through their nested POSIX calls (set when
    /// the trace recorded the POSIX layer and the application view is replayed).
    pub children_io: AtomicBool,
    /// Communicators whose members are listed (Comm_create_group, Intercomm_merge,
    /// Intercomm_create), keyed by (parent uid, tag or kind, members, occurrence): the first
    /// member to arrive builds it, the last one to take it removes the entry.
    listed: Mutex<HashMap<ListedKey, (Arc<CommObj>, usize)>>,
    /// Each rank's count of I/O calls ended, as last signalled ([`crate::deps`]); written
    /// under `io_lock`, so that a rank waiting on `io_cv` never misses a signal.
    io_done: Vec<AtomicU32>,
    io_lock: Mutex<()>,
    io_cv: Condvar,
    /// The dependencies every rank honours, set once before the ranks start.
    pub io_deps: std::sync::OnceLock<Arc<crate::deps::IoDeps>>,
}

/// (parent uid, tag or kind, members in order, occurrence of this key at each member).
type ListedKey = (u64, i64, Vec<u32>, u64);

/// The tag of the messages a neighbourhood collective exchanges through the mailboxes: no
/// application tag (never negative but for MPI_ANY_TAG), and never matched by an any-tag
/// receive.
const NEIGHBOR_TAG: i64 = i64::MIN;
/// The "tag" of an `MPI_Intercomm_merge` in [`ListedKey`].
const MERGE_KIND: i64 = i64::MIN;
/// The "parent" of an `MPI_Intercomm_create` in [`ListedKey`] (its two groups have two).
const INTER_UID: u64 = u64::MAX - 1;
/// The uid of rank 0's MPI_COMM_SELF; rank r's is this minus r (created uids count up from 1).
const SELF_UID: u64 = u64::MAX - 2;

impl Shared {
    /// State for `nranks` rank threads.
    pub fn new(nranks: u32) -> Arc<Shared> {
        Arc::new(Shared {
            world: Arc::new(CommObj::new(0, (0..nranks).collect())),
            next_uid: AtomicU64::new(1),
            creating: Mutex::new(HashMap::new()),
            shared_fps: Mutex::new(HashMap::new()),
            abort: AtomicBool::new(false),
            finished: (0..nranks).map(|_| AtomicBool::new(false)).collect(),
            nfinished: AtomicUsize::new(0),
            children_io: AtomicBool::new(false),
            listed: Mutex::new(HashMap::new()),
            io_done: (0..nranks).map(|_| AtomicU32::new(0)).collect(),
            io_lock: Mutex::new(()),
            io_cv: Condvar::new(),
            io_deps: std::sync::OnceLock::new(),
        })
    }

    /// Marks `rank` as done: a collective still waiting for it can never complete.
    pub fn finish(&self, rank: u32) {
        if let Some(f) = self.finished.get(rank as usize)
            && !f.swap(true, Ordering::SeqCst)
        {
            self.nfinished.fetch_add(1, Ordering::SeqCst);
        }
        crate::sched::notify();
    }

    /// Makes every blocked rank give up (a rank failed).
    pub fn set_abort(&self) {
        self.abort.store(true, Ordering::SeqCst);
        crate::sched::notify();
    }

    /// As [`Shared::check`] for a pooled waiter that last saw `*seen` ranks finished: the
    /// members' flags are read only when that count moved.
    fn check_since(&self, members: &[u32], seen: &mut usize) -> Result<(), String> {
        let now = self.nfinished.load(Ordering::SeqCst);
        if now == *seen {
            return self.check(&[]);
        }
        *seen = now;
        self.check(members)
    }

    /// Rank `rank` has ended `count` I/O calls: the ranks `to` waiting for it re-check.
    fn io_ended(&self, rank: u32, count: u32, to: &[u32]) -> Result<(), String> {
        let done = self.io_done.get(rank as usize).ok_or("rank out of range")?;
        {
            let _g = self.io_lock.lock().map_err(|_| "poisoned I/O signal")?;
            done.fetch_max(count, Ordering::SeqCst);
            self.io_cv.notify_all();
        }
        crate::sched::notify_tasks(to.iter().map(|&r| r as usize));
        Ok(())
    }

    /// Waits until rank `from` has ended `count` I/O calls; whether it had to wait. A rank
    /// that finished short of them never will: an error naming it.
    fn wait_io(&self, from: u32, count: u32) -> Result<bool, String> {
        let done = self.io_done.get(from as usize).ok_or("rank out of range")?;
        let reached = || done.load(Ordering::SeqCst) >= count;
        if reached() {
            return Ok(false);
        }
        let gone = || -> Result<(), String> {
            self.check(&[])?;
            if self.finished[from as usize].load(Ordering::SeqCst) && !reached() {
                return Err(format!(
                    "rank {from} finished before ending the {count} I/O calls this call waits for"
                ));
            }
            Ok(())
        };
        if crate::sched::in_task() {
            return crate::sched::wait_until(|| {
                if reached() {
                    return Some(Ok(true));
                }
                gone().err().map(Err)
            });
        }
        let mut g = self.io_lock.lock().map_err(|_| "poisoned I/O signal")?;
        while !reached() {
            gone()?;
            g = self
                .io_cv
                .wait_timeout(g, POLL)
                .map_err(|_| "poisoned I/O signal")?
                .0;
        }
        Ok(true)
    }

    fn check(&self, members: &[u32]) -> Result<(), String> {
        if self.abort.load(Ordering::Relaxed) {
            return Err("replay aborted by another rank's error".into());
        }
        for m in members {
            if self.finished[*m as usize].load(Ordering::Relaxed) {
                return Err(format!(
                    "rank {m} finished without joining this call (the trace's ranks disagree)"
                ));
            }
        }
        Ok(())
    }
}

/// What completing a request waits for.
enum Pend {
    /// A posted receive: communicator id, source, tag (None: any).
    Recv(i64, Option<usize>, Option<i64>),
    /// Receives from a neighbourhood collective's sources (communicator id, sources).
    Neighbors(i64, Vec<usize>),
    /// The `k`-th nonblocking collective on a communicator.
    Coll(Arc<CommObj>, u64),
}

/// A persistent request: each start sends (or posts a receive) on `comm` to/from `peer`
/// (relative) with `tag`.
#[derive(Clone, Copy)]
struct Persistent {
    send: bool,
    comm: i64,
    peer: i64,
    tag: i64,
}

/// Where a peer of a point-to-point call is.
enum To {
    /// `MPI_PROC_NULL`: nothing to do.
    Null,
    /// `MPI_ANY_SOURCE`.
    Any,
    /// This index in the communicator's members.
    Rank(usize),
}

/// A communicator being created by dup or split: every member deposits its (color, key).
struct Creation {
    entries: Mutex<Vec<Option<(i64, i64)>>>,
    made: Mutex<HashMap<i64, Arc<CommObj>>>,
}

/// The threads runtime of one rank.
pub struct ThreadsRuntime {
    rank: u32,
    sh: Arc<Shared>,
    comms: HashMap<i64, (Arc<CommObj>, usize)>,
    created: HashMap<u64, u64>,
    files: HashMap<i64, MFile>,
    /// Requests not yet completed, in the order they were started.
    pending: Vec<(i64, Pend)>,
    /// Intercommunicators: (offset of the local group in the members, offset of the remote
    /// group, size of the remote group). Their members are the two groups, one after the other.
    inter: HashMap<i64, (usize, usize, usize)>,
    /// Persistent requests: what each start of them sends or receives.
    persistent: HashMap<i64, Persistent>,
    /// Nonblocking collectives this rank started, by communicator uid.
    nb_started: HashMap<u64, u64>,
    /// How many times this rank made each listed creation (see [`ListedKey`]).
    listed_seen: HashMap<(u64, i64, Vec<u32>), u64>,
    /// This rank's read buffer (see [`Pattern::trim_read_buf`]).
    rbuf: Vec<u8>,
}

impl ThreadsRuntime {
    /// The runtime of `rank`.
    pub fn new(rank: u32, sh: Arc<Shared>) -> ThreadsRuntime {
        let mut comms = HashMap::new();
        comms.insert(rsd::mpi::COMM_WORLD, (sh.world.clone(), rank as usize));
        // Each rank's own uid: creations from MPI_COMM_SELF are keyed by their parent's uid,
        // and one shared by every rank mixed their (color, key) entries.
        let me = Arc::new(CommObj::new(SELF_UID - u64::from(rank), vec![rank]));
        comms.insert(rsd::mpi::COMM_SELF, (me, 0));
        ThreadsRuntime {
            rank,
            sh,
            comms,
            created: HashMap::new(),
            files: HashMap::new(),
            pending: Vec::new(),
            inter: HashMap::new(),
            persistent: HashMap::new(),
            nb_started: HashMap::new(),
            listed_seen: HashMap::new(),
            rbuf: Vec::new(),
        }
    }

    fn comm(&self, id: i64) -> Result<(Arc<CommObj>, usize), String> {
        self.comms
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("communicator {id} was not created by a replayed call"))
    }
}

/// Collective MPI-IO calls that move data.
pub fn collective_data(op: Op) -> bool {
    matches!(
        op,
        Op::FileReadAll
            | Op::FileReadAtAll
            | Op::FileReadOrdered
            | Op::FileWriteAll
            | Op::FileWriteAtAll
            | Op::FileWriteOrdered
            | Op::FileIreadAll
            | Op::FileIwriteAll
            // A split collective's begin moves its data (its end only completes it).
            | Op::FileReadAllBegin
            | Op::FileWriteAllBegin
            | Op::FileReadAtAllBegin
            | Op::FileWriteAtAllBegin
            | Op::FileReadOrderedBegin
            | Op::FileWriteOrderedBegin
    )
}

/// Collective MPI-IO calls: replayed after a barrier over the file's communicator.
fn collective_op(op: Op) -> bool {
    collective_data(op)
        || matches!(
            op,
            Op::FileOpen | Op::FileClose | Op::FileSetSize | Op::FileSetView
        )
}

impl Runtime for ThreadsRuntime {
    fn io_ended(&mut self, count: u32, to: &[u32]) -> Result<(), String> {
        self.sh.io_ended(self.rank, count, to)
    }

    fn wait_io(&mut self, from: u32, count: u32) -> Result<bool, String> {
        self.sh.wait_io(from, count)
    }

    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        _files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.file_call(e, path, fx, data, true)
    }

    fn mpi(&mut self, e: &FlatEvent, _types: &Types, bookkeeping_only: bool) -> Result<(), String> {
        let op = e.op;
        match op.creation() {
            Some(Made::Dup) => {
                let cid = e.p(Param::Comm);
                let (_, me) = self.comm(cid)?;
                // The parent's order, so relative peers mean the same on the copy.
                self.create_comm(cid, 0, me as i64, e.p(Param::Newcomm))?;
                if let Some(i) = self.inter.get(&cid).copied() {
                    self.inter.insert(e.p(Param::Newcomm), i);
                }
                return Ok(());
            }
            // MPI_Comm_create, MPI_Comm_split_type and the topology creations are recorded as
            // their equivalent split.
            Some(Made::Split) => {
                return self.create_comm(
                    e.p(Param::Comm),
                    e.p(Param::Color),
                    e.p(Param::Key),
                    e.p(Param::Newcomm),
                );
            }
            Some(Made::Members | Made::Intercomm) => return self.create_listed(e),
            None if bookkeeping_only => return Ok(()),
            None => {}
        }
        let q = || e.p(Param::Request);
        match op {
            _ if op.is_neighborhood() => {
                let req = op.is_nonblocking_collective().then(q);
                self.neighborhood(e, req)
            }
            _ if op.is_nonblocking_collective() => self.start_collective(e.p(Param::Comm), q()),
            _ if op.is_collective() => {
                let (c, _) = self.comm(e.p(Param::Comm))?;
                c.barrier(&self.sh)
            }
            // MPI_Init's exchange: no rank leaves before every rank has come (the engine
            // starts the wall time there).
            Op::Init => self.sh.world.barrier(&self.sh),
            // Every send mode delivers to a mailbox; what differs is when the sender may go on,
            // which a thread replay does not model.
            _ if matches!(op.p2p(), Some(P2p::Send { .. })) => {
                self.send_to(e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag))
            }
            // A matched probe takes the message: it is the receive (its Mrecv completes it).
            Op::Recv | Op::Mprobe => {
                self.recv_from(e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag), true)
            }
            Op::Improbe if e.p(Param::Flag) == 1 => {
                self.recv_from(e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag), true)
            }
            // A probe that found its message waits for it, leaving it queued (it had been sent
            // before the probe returned, so its sender does not wait on this rank for it); one
            // that found none does nothing.
            Op::Probe => self.recv_from(e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag), false),
            Op::Iprobe if e.p(Param::Flag) == 1 => {
                self.recv_from(e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag), false)
            }
            Op::Irecv => self.post_recv(q(), e.p(Param::Comm), e.p(Param::Peer), e.p(Param::Tag)),
            Op::Sendrecv | Op::SendrecvReplace => {
                let cid = e.p(Param::Comm);
                self.send_to(cid, e.p(Param::Dest), e.p(Param::Sendtag))?;
                self.recv_from(cid, e.p(Param::Source), e.p(Param::Recvtag), true)
            }
            _ if op.persistent().is_some() => {
                let p = Persistent {
                    send: matches!(op.persistent(), Some(P2p::Send { .. })),
                    comm: e.p(Param::Comm),
                    peer: e.p(Param::Peer),
                    tag: e.p(Param::Tag),
                };
                self.persistent.insert(q(), p);
                Ok(())
            }
            Op::Start => self.start(q()),
            Op::Startall => op.list(&e.params).iter().try_for_each(|r| self.start(*r)),
            Op::Wait => self.complete(Some(q())),
            // The request that completed, as recorded (-1: none was active).
            Op::Waitany => match q() {
                -1 => Ok(()),
                r => self.complete(Some(r)),
            },
            // A test that found its request complete completes it; one that did not, nothing
            // (the completion comes at a later call, which the trace records too).
            Op::Test | Op::Testany => match (e.p(Param::Flag), q()) {
                (1, r) if r >= 0 => self.complete(Some(r)),
                _ => Ok(()),
            },
            Op::Testall if e.p(Param::Flag) == 1 => op
                .list(&e.params)
                .iter()
                .try_for_each(|r| self.complete(Some(*r))),
            Op::Waitsome | Op::Testsome => op
                .list(&e.params)
                .iter()
                .try_for_each(|r| self.complete(Some(*r))),
            // A freed request completes on its own; a receive still posted is dropped, and so
            // is a cancelled one (whether the cancel succeeded is not recorded: if the receive
            // had matched, its message stays in the mailbox).
            Op::RequestFree | Op::Cancel => {
                let r = q();
                self.pending.retain(|p| p.0 != r);
                if op == Op::RequestFree {
                    self.persistent.remove(&r);
                }
                Ok(())
            }
            Op::CommFree => {
                self.comms.remove(&e.p(Param::Comm));
                self.inter.remove(&e.p(Param::Comm));
                Ok(())
            }
            // The trace keeps only the count of a Waitall: it completes every pending request.
            Op::Waitall => self.complete(None),
            _ => Ok(()),
        }
    }

    fn aborted(&self) -> bool {
        self.sh.abort.load(Ordering::Relaxed)
    }

    fn emulates_collective(&self, e: &FlatEvent) -> bool {
        collective_op(e.op)
    }

    fn via_children(&self, e: &FlatEvent) -> bool {
        collective_data(e.op) && self.sh.children_io.load(Ordering::Relaxed)
    }

    fn mpiio_sync(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        _files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.file_call(e, path, fx, data, false)
    }
}
