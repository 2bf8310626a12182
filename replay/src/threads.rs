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

use crate::engine::{Pattern, Runtime};
use crate::root::Mapped;
use crate::types::Types;
use filetable::{Effect, FileEnv, FileTable};
use rsd::op::{Creation as Made, Op, P2p, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

struct Msg {
    src: usize,
    tag: i64,
}

#[derive(Default)]
struct Mailbox {
    q: Mutex<Vec<Msg>>,
    cv: Condvar,
}

/// A communicator: its members (global ranks, in communicator-rank order), a reusable barrier
/// and one mailbox per member.
struct CommObj {
    uid: u64,
    members: Vec<u32>,
    bar: Mutex<(usize, u64)>,
    bar_cv: Condvar,
    boxes: Vec<Mailbox>,
    /// Nonblocking collectives each member has started: the k-th one completes once every
    /// member has started k (they start them in the same order).
    started: Mutex<Vec<u64>>,
    started_cv: Condvar,
}

impl CommObj {
    fn new(uid: u64, members: Vec<u32>) -> CommObj {
        let boxes = members.iter().map(|_| Mailbox::default()).collect();
        CommObj {
            uid,
            bar: Mutex::new((0, 0)),
            bar_cv: Condvar::new(),
            started: Mutex::new(vec![0; members.len()]),
            started_cv: Condvar::new(),
            members,
            boxes,
        }
    }

    /// Member `me` starts its `k`-th nonblocking collective on this communicator.
    fn start_collective(&self, me: usize, k: u64) -> Result<(), String> {
        let mut g = self.started.lock().map_err(|_| "poisoned collective")?;
        if let Some(s) = g.get_mut(me) {
            *s = k;
        }
        self.started_cv.notify_all();
        crate::sched::notify_tasks(self.members.iter().map(|m| *m as usize));
        Ok(())
    }

    /// Waits until every member has started its `k`-th nonblocking collective.
    fn complete_collective(&self, sh: &Shared, k: u64) -> Result<(), String> {
        // A member that finished before starting it never will.
        let stuck = |g: &[u64]| -> Result<(), String> {
            sh.check(&[])?;
            for (i, s) in g.iter().enumerate() {
                let m = self.members[i];
                if *s < k && sh.finished[m as usize].load(Ordering::Relaxed) {
                    return Err(format!(
                        "rank {m} finished without joining this nonblocking collective"
                    ));
                }
            }
            Ok(())
        };
        if crate::sched::in_task() {
            return crate::sched::wait_until(|| {
                let g = match self.started.lock() {
                    Ok(g) => g,
                    Err(_) => return Some(Err("poisoned collective".to_string())),
                };
                if g.iter().all(|s| *s >= k) {
                    return Some(Ok(()));
                }
                stuck(&g).err().map(Err)
            });
        }
        let mut g = self.started.lock().map_err(|_| "poisoned collective")?;
        while !g.iter().all(|s| *s >= k) {
            stuck(&g)?;
            let (ng, _) = self
                .started_cv
                .wait_timeout(g, POLL)
                .map_err(|_| "poisoned collective")?;
            g = ng;
        }
        Ok(())
    }

    fn barrier(&self, sh: &Shared) -> Result<(), String> {
        if self.members.len() <= 1 {
            return Ok(());
        }
        let mut g = self.bar.lock().map_err(|_| "poisoned barrier")?;
        let gen_ = g.1;
        g.0 += 1;
        if g.0 == self.members.len() {
            g.0 = 0;
            g.1 += 1;
            self.bar_cv.notify_all();
            crate::sched::notify_tasks(self.members.iter().map(|m| *m as usize));
            return Ok(());
        }
        if crate::sched::in_task() {
            // A coroutine must not block its worker (the ranks it waits for may share it),
            // nor hold the lock while suspended.
            drop(g);
            let mut seen = usize::MAX;
            return crate::sched::wait_until(|| {
                let g = match self.bar.lock() {
                    Ok(g) => g,
                    Err(_) => return Some(Err("poisoned barrier".to_string())),
                };
                if g.1 != gen_ {
                    return Some(Ok(()));
                }
                sh.check_since(&self.members, &mut seen).err().map(Err)
            });
        }
        while g.1 == gen_ {
            let (ng, _) = self
                .bar_cv
                .wait_timeout(g, POLL)
                .map_err(|_| "poisoned barrier")?;
            g = ng;
            if g.1 == gen_ {
                sh.check(&self.members)?;
            }
        }
        Ok(())
    }

    fn send(&self, src: usize, dst: usize, tag: i64) -> Result<(), String> {
        let b = self
            .boxes
            .get(dst)
            .ok_or_else(|| format!("destination {dst} is not in the communicator"))?;
        b.q.lock()
            .map_err(|_| "poisoned mailbox")?
            .push(Msg { src, tag });
        b.cv.notify_all();
        crate::sched::notify_task(self.members[dst] as usize);
        Ok(())
    }

    /// Waits for a message from `src` (None: any source) with `tag` (None: any tag).
    fn recv(
        &self,
        sh: &Shared,
        me: usize,
        src: Option<usize>,
        tag: Option<i64>,
    ) -> Result<(), String> {
        self.wait_msg(sh, me, src, tag, true)
    }

    /// Waits for a message as [`CommObj::recv`] does, taking it (a receive) or leaving it
    /// for a later receive (a probe, `take` false).
    fn wait_msg(
        &self,
        sh: &Shared,
        me: usize,
        src: Option<usize>,
        tag: Option<i64>,
        take: bool,
    ) -> Result<(), String> {
        let b = self
            .boxes
            .get(me)
            .ok_or_else(|| format!("rank {me} is not in the communicator"))?;
        if crate::sched::in_task() {
            return crate::sched::wait_until(|| self.poll_recv(sh, b, src, tag, take).transpose());
        }
        let mut q = b.q.lock().map_err(|_| "poisoned mailbox")?;
        while !self.take_msg(sh, &mut q, src, tag, take)? {
            let (nq, _) = b.cv.wait_timeout(q, POLL).map_err(|_| "poisoned mailbox")?;
            q = nq;
        }
        Ok(())
    }

    /// One look at a locked mailbox: `Ok(true)` when a matching message was taken,
    /// `Ok(false)` to wait on, `Err` when it can never come (the replay aborted, or the source
    /// finished without sending it).
    fn take_msg(
        &self,
        sh: &Shared,
        q: &mut Vec<Msg>,
        src: Option<usize>,
        tag: Option<i64>,
        take: bool,
    ) -> Result<bool, String> {
        // An any-tag receive never takes a neighbourhood collective's message.
        let tag_ok = |m: &Msg| match tag {
            Some(t) => t == m.tag,
            None => m.tag != NEIGHBOR_TAG,
        };
        if let Some(i) = q
            .iter()
            .position(|m| src.is_none_or(|s| s == m.src) && tag_ok(m))
        {
            if take {
                q.remove(i);
            }
            return Ok(true);
        }
        sh.check(&[])?;
        if let Some(s) = src
            && sh.finished[self.members[s] as usize].load(Ordering::Relaxed)
            && !q.iter().any(|m| m.src == s)
        {
            return Err(format!(
                "rank {} finished without sending this message",
                self.members[s]
            ));
        }
        Ok(false)
    }

    /// [`CommObj::take_msg`] for a pooled receive: `Ok(Some(()))` when a message was taken,
    /// `Ok(None)` to wait on.
    fn poll_recv(
        &self,
        sh: &Shared,
        b: &Mailbox,
        src: Option<usize>,
        tag: Option<i64>,
        take: bool,
    ) -> Result<Option<()>, String> {
        let mut q = b.q.lock().map_err(|_| "poisoned mailbox")?;
        Ok(self.take_msg(sh, &mut q, src, tag, take)?.then_some(()))
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

use rsd::mpi::amode::{CREATE, DELETE_ON_CLOSE, RDONLY, RDWR, WRONLY};
use rsd::mpi::{ANY_SOURCE, PROC_NULL, UNDEFINED};

/// An open MPI file: the real file and what the ranks share; views and pointers are the file
/// table's.
struct MFile {
    file: File,
    /// Its name in the root, held open for MPI_MODE_DELETE_ON_CLOSE.
    path: Mapped,
    comm: (Arc<CommObj>, usize),
    /// The shared file pointer, in etypes, shared by every rank that opened the path.
    shared: Arc<AtomicU64>,
    delete_on_close: bool,
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

    fn create_comm(&mut self, parent: i64, color: i64, key: i64, newid: i64) -> Result<(), String> {
        let (pc, me) = self.comm(parent)?;
        let seq = self.created.entry(pc.uid).or_insert(0);
        *seq += 1;
        let slot_key = (pc.uid, *seq);
        let slot = {
            let mut m = self.sh.creating.lock().map_err(|_| "poisoned")?;
            m.entry(slot_key)
                .or_insert_with(|| {
                    Arc::new(Creation {
                        entries: Mutex::new(vec![None; pc.members.len()]),
                        made: Mutex::new(HashMap::new()),
                    })
                })
                .clone()
        };
        slot.entries.lock().map_err(|_| "poisoned")?[me] = Some((color, key));
        pc.barrier(&self.sh)?;
        if color != UNDEFINED && newid >= 0 {
            let entries = slot.entries.lock().map_err(|_| "poisoned")?.clone();
            let mut group: Vec<(i64, usize)> = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.filter(|(c, _)| *c == color).map(|(_, k)| (k, i)))
                .collect();
            group.sort();
            let members: Vec<u32> = group.iter().map(|(_, i)| pc.members[*i]).collect();
            let my = group.iter().position(|(_, i)| *i == me).unwrap_or(0);
            let obj = slot
                .made
                .lock()
                .map_err(|_| "poisoned")?
                .entry(color)
                .or_insert_with(|| {
                    Arc::new(CommObj::new(
                        self.sh.next_uid.fetch_add(1, Ordering::SeqCst),
                        members,
                    ))
                })
                .clone();
            self.comms.insert(newid, (obj, my));
        }
        // Second barrier: nobody reuses the slot before everyone has read it.
        pc.barrier(&self.sh)?;
        if me == 0 {
            self.sh
                .creating
                .lock()
                .map_err(|_| "poisoned")?
                .remove(&slot_key);
        }
        Ok(())
    }

    fn complete(&mut self, which: Option<i64>) -> Result<(), String> {
        let mut keep = Vec::new();
        for (req, p) in std::mem::take(&mut self.pending) {
            if which.is_none_or(|w| w == req) {
                match p {
                    Pend::Recv(comm, src, tag) => {
                        let (c, me) = self.comm(comm)?;
                        c.recv(&self.sh, me, src, tag)?;
                    }
                    Pend::Neighbors(comm, srcs) => {
                        let (c, me) = self.comm(comm)?;
                        for s in srcs {
                            c.recv(&self.sh, me, Some(s), Some(NEIGHBOR_TAG))?;
                        }
                    }
                    Pend::Coll(c, k) => c.complete_collective(&self.sh, k)?,
                }
            } else {
                keep.push((req, p));
            }
        }
        self.pending = keep;
        Ok(())
    }

    /// Where stored peer `rel` of a call on communicator `cid` is, with the communicator and
    /// the caller's index in its members. On an intercommunicator a peer is a rank of the
    /// remote group, stored relative to the caller's local rank.
    fn endpoint(&self, cid: i64, rel: i64) -> Result<(Arc<CommObj>, usize, To), String> {
        let (c, me) = self.comm(cid)?;
        if rel == PROC_NULL {
            return Ok((c, me, To::Null));
        }
        if rel == ANY_SOURCE {
            return Ok((c, me, To::Any));
        }
        let (local, remote, n) = self
            .inter
            .get(&cid)
            .copied()
            .unwrap_or((0, 0, c.members.len()));
        let p = (me - local) as i64 + rel;
        if p < 0 || p as usize >= n {
            return Err(format!(
                "peer {p} (relative {rel}) is outside the communicator"
            ));
        }
        Ok((c, me, To::Rank(remote + p as usize)))
    }

    /// A point-to-point send of one message (every mode: sends are eager).
    fn send_to(&self, cid: i64, rel: i64, tag: i64) -> Result<(), String> {
        match self.endpoint(cid, rel)? {
            (c, me, To::Rank(d)) => c.send(me, d, tag),
            _ => Ok(()),
        }
    }

    /// A blocking receive (`take`) or probe of one message.
    fn recv_from(&self, cid: i64, rel: i64, tag: i64, take: bool) -> Result<(), String> {
        let (c, me, src) = match self.endpoint(cid, rel)? {
            (_, _, To::Null) => return Ok(()),
            (c, me, To::Any) => (c, me, None),
            (c, me, To::Rank(s)) => (c, me, Some(s)),
        };
        c.wait_msg(&self.sh, me, src, Some(tag).filter(|t| *t >= 0), take)
    }

    /// A receive posted now and completed with request `req`.
    fn post_recv(&mut self, req: i64, cid: i64, rel: i64, tag: i64) -> Result<(), String> {
        let src = match self.endpoint(cid, rel)? {
            (_, _, To::Null) => return Ok(()),
            (_, _, To::Any) => None,
            (_, _, To::Rank(s)) => Some(s),
        };
        self.pending
            .push((req, Pend::Recv(cid, src, Some(tag).filter(|t| *t >= 0))));
        Ok(())
    }

    /// A neighbourhood collective: one message to each destination now, one from each
    /// source at completion (now for the blocking forms, with `req` for the others).
    fn neighborhood(&mut self, e: &FlatEvent, req: Option<i64>) -> Result<(), String> {
        let cid = e.p(Param::Comm);
        let n =
            e.op.neighborhood(&e.params)
                .ok_or_else(|| format!("{} lacks its neighbour lists", e.op.name()))?;
        for d in n.destinations {
            self.send_to(cid, *d, NEIGHBOR_TAG)?;
        }
        let mut srcs = Vec::new();
        for s in n.sources {
            if let (_, _, To::Rank(i)) = self.endpoint(cid, *s)? {
                srcs.push(i);
            }
        }
        self.pending
            .push((req.unwrap_or(i64::MIN), Pend::Neighbors(cid, srcs)));
        match req {
            Some(_) => Ok(()),
            None => self.complete(Some(i64::MIN)),
        }
    }

    /// Starts persistent request `r`: one message sent, or one receive posted.
    fn start(&mut self, r: i64) -> Result<(), String> {
        let p = *self
            .persistent
            .get(&r)
            .ok_or_else(|| format!("request {r} was not made by a replayed persistent init"))?;
        if p.send {
            self.send_to(p.comm, p.peer, p.tag)
        } else {
            self.post_recv(r, p.comm, p.peer, p.tag)
        }
    }

    /// Starts this rank's next nonblocking collective on `cid`, completed with `req`.
    fn start_collective(&mut self, cid: i64, req: i64) -> Result<(), String> {
        let (c, me) = self.comm(cid)?;
        let k = self.nb_started.entry(c.uid).or_insert(0);
        *k += 1;
        c.start_collective(me, *k)?;
        self.pending.push((req, Pend::Coll(c, *k)));
        Ok(())
    }

    /// Joins the communicator of the listed `members` (MPI_COMM_WORLD ranks, in order) that
    /// this call makes from `parent`, kind `kind` (a tag or one of the kinds above).
    fn join_listed(
        &mut self,
        parent_uid: u64,
        kind: i64,
        members: Vec<u32>,
    ) -> Result<(Arc<CommObj>, usize), String> {
        let me = members
            .iter()
            .position(|m| *m == self.rank)
            .ok_or_else(|| format!("rank {} is not among the members it lists", self.rank))?;
        let seen = self
            .listed_seen
            .entry((parent_uid, kind, members.clone()))
            .or_insert(0);
        *seen += 1;
        let key = (parent_uid, kind, members.clone(), *seen);
        let n = members.len();
        let mut m = self.sh.listed.lock().map_err(|_| "poisoned")?;
        let (obj, taken) = {
            let ent = m.entry(key.clone()).or_insert_with(|| {
                (
                    Arc::new(CommObj::new(
                        self.sh.next_uid.fetch_add(1, Ordering::SeqCst),
                        members,
                    )),
                    0,
                )
            });
            ent.1 += 1;
            (ent.0.clone(), ent.1)
        };
        if taken == n {
            m.remove(&key);
        }
        Ok((obj, me))
    }

    /// The communicator creations whose members are listed, and intercommunicators.
    fn create_listed(&mut self, e: &FlatEvent) -> Result<(), String> {
        let cid = e.p(Param::Comm);
        let (pc, _) = self.comm(cid)?;
        let list: Vec<u32> =
            e.op.list(&e.params)
                .iter()
                .map(|r| u32::try_from(*r).map_err(|_| format!("member {r} is no rank")))
                .collect::<Result<_, _>>()?;
        let newid = e.p(Param::Newcomm);
        if e.op == Op::IntercommCreate {
            // Both groups build the same object: the group whose first rank is lower first.
            let local = pc.members.clone();
            let local_first = local <= list;
            let (a, b) = if local_first {
                (local, list)
            } else {
                (list, local)
            };
            let (la, lb) = (a.len(), b.len());
            let mut all = a;
            all.extend(b);
            let (obj, me) = self.join_listed(INTER_UID, e.p(Param::Tag), all)?;
            obj.barrier(&self.sh)?;
            if newid >= 0 {
                let (l, r, n) = if local_first {
                    (0, la, lb)
                } else {
                    (la, 0, la)
                };
                self.inter.insert(newid, (l, r, n));
                self.comms.insert(newid, (obj, me));
            }
            return Ok(());
        }
        let kind = if e.op == Op::IntercommMerge {
            MERGE_KIND
        } else {
            e.p(Param::Tag)
        };
        let (obj, me) = self.join_listed(pc.uid, kind, list)?;
        obj.barrier(&self.sh)?;
        if newid >= 0 {
            self.comms.insert(newid, (obj, me));
        }
        Ok(())
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

fn fh_err(id: i64) -> String {
    format!("file handle {id} is not open (its MPI_File_open was not replayed)")
}

impl ThreadsRuntime {
    /// An MPI-IO call as positioned I/O on the shared file; without `move_data`, all but the
    /// transfer itself ([`Runtime::mpiio_sync`]: the nested POSIX calls move the data).
    fn file_call(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        fx: &Effect,
        data: &mut Pattern,
        move_data: bool,
    ) -> Result<u64, String> {
        let op = e.op;
        // MPI_File_delete names no handle.
        let fh = e.get(Param::Fh).unwrap_or(0);
        let collective = collective_op(op);
        if op == Op::FileOpen {
            let comm = self
                .comm(e.p(Param::Comm))
                .unwrap_or_else(|_| self.comms[&1].clone());
            comm.0.barrier(&self.sh)?;
            if fh < 0 {
                return Ok(0);
            }
            let amode = e.p(Param::Amode);
            let path = path.ok_or("no path")?.clone();
            let mut flags = match (amode & (RDONLY | RDWR) != 0, amode & (WRONLY | RDWR) != 0) {
                (true, true) => libc::O_RDWR,
                (false, true) => libc::O_WRONLY,
                _ => libc::O_RDONLY,
            };
            if amode & CREATE != 0 && amode & RDONLY == 0 {
                flags |= libc::O_CREAT;
            }
            let file = path
                .open(flags, 0o666)
                .map_err(|er| format!("{}: {er}", path.path().display()))?;
            let shared = self
                .sh
                .shared_fps
                .lock()
                .map_err(|_| "poisoned")?
                .entry(path.path().to_path_buf())
                .or_default()
                .clone();
            self.files.insert(
                fh,
                MFile {
                    file,
                    path,
                    comm,
                    shared,
                    delete_on_close: amode & DELETE_ON_CLOSE != 0,
                },
            );
            return Ok(0);
        }
        if op == Op::FileDelete {
            if let Some(p) = path {
                let _ = p.unlink();
            }
            return Ok(0);
        }
        if collective {
            let c = self
                .files
                .get(&fh)
                .ok_or_else(|| fh_err(fh))?
                .comm
                .0
                .clone();
            c.barrier(&self.sh)?;
        }
        let f = self.files.get_mut(&fh).ok_or_else(|| fh_err(fh))?;
        match op {
            Op::FileClose => {
                let f = self.files.remove(&fh).ok_or_else(|| fh_err(fh))?;
                if f.delete_on_close && f.comm.1 == 0 {
                    let _ = f.path.unlink();
                }
                return Ok(0);
            }
            Op::FileSetSize => {
                f.file
                    .set_len(e.p(Param::Size).max(0) as u64)
                    .map_err(|er| er.to_string())?;
                return Ok(0);
            }
            // As under MPI: a filetype built on a type the trace never built is bytes from the
            // displacement, and the view is reported as not replayed.
            Op::FileSetView => {
                return match fx {
                    Effect::SetView {
                        unbuilt: Some(why), ..
                    } => Err(why.clone()),
                    _ => Ok(0),
                };
            }
            Op::FileSync => {
                f.file.sync_all().map_err(|er| er.to_string())?;
                return Ok(0);
            }
            _ => {}
        }
        // The file table put the call's bytes in the file's regions (view, etype, filetype,
        // the pointer it used); the other calls (seeks, get_size) moved them already.
        let Effect::Access(acc) = fx else {
            return Ok(0);
        };
        let (write, bytes) = (acc.dir == rsd::op::Dir::Write, acc.bytes as i64);
        if !move_data {
            return Ok(bytes as u64);
        }
        let regions = acc.regions.iter().map(|&(o, n)| (o, n as usize));
        if write {
            let buf = data.get(bytes as usize);
            let mut at = 0usize;
            for (o, n) in regions {
                f.file
                    .write_all_at(&buf[at..at + n], o)
                    .map_err(|er| er.to_string())?;
                at += n;
            }
            Ok(bytes as u64)
        } else {
            Pattern::with_read_buf(&mut self.rbuf, bytes as usize, |rbuf| {
                let mut got = 0usize;
                'regions: for (o, n) in regions {
                    let end = got + n;
                    let mut pos = o;
                    while got < end {
                        match f.file.read_at(&mut rbuf[got..end], pos) {
                            // End of file: MPI stops a read there, holes past it included.
                            Ok(0) => break 'regions,
                            Ok(k) => {
                                got += k;
                                pos += k as u64;
                            }
                            Err(er) => return Err(er.to_string()),
                        }
                    }
                }
                Ok(got as u64)
            })
        }
    }
}

/// What the ranks of one process share: the real file (its size, which other ranks' writes
/// change) and the shared file pointer.
impl FileEnv for ThreadsRuntime {
    fn size(&mut self, fh: i64) -> Option<u64> {
        let f = self.files.get(&fh)?;
        f.file.metadata().ok().map(|m| m.len())
    }

    fn fetch_add_shared(&mut self, fh: i64, units: i64) -> Option<i64> {
        let f = self.files.get(&fh)?;
        Some(f.shared.fetch_add(units.max(0) as u64, Ordering::SeqCst) as i64)
    }

    // Every rank reads the pointer between two barriers (so all read the same place, no
    // shared access pending before nor started after), stores the same new place, and waits
    // for all to have stored it before any takes from it again. A barrier that fails (the
    // replay aborted) leaves the pointer alone: the rank stops at its next blocking call.
    fn seek_shared(&mut self, fh: i64, to: &dyn Fn(i64) -> i64) -> bool {
        let Some(f) = self.files.get(&fh) else {
            return false;
        };
        let (comm, shared) = (f.comm.0.clone(), f.shared.clone());
        if comm.barrier(&self.sh).is_err() {
            return true;
        }
        let at = shared.load(Ordering::SeqCst) as i64;
        if comm.barrier(&self.sh).is_err() {
            return true;
        }
        shared.store(to(at).max(0) as u64, Ordering::SeqCst);
        let _ = comm.barrier(&self.sh);
        true
    }
}

impl Runtime for ThreadsRuntime {
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
