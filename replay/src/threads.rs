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
use crate::types::Types;
use filetable::{Effect, FileEnv, FileTable};
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
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
}

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
}

impl CommObj {
    fn new(uid: u64, members: Vec<u32>) -> CommObj {
        let boxes = members.iter().map(|_| Mailbox::default()).collect();
        CommObj {
            uid,
            members,
            bar: Mutex::new((0, 0)),
            bar_cv: Condvar::new(),
            boxes,
        }
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
        let b = self
            .boxes
            .get(me)
            .ok_or_else(|| format!("rank {me} is not in the communicator"))?;
        if crate::sched::in_task() {
            return crate::sched::wait_until(|| self.poll_recv(sh, b, src, tag).transpose());
        }
        let mut q = b.q.lock().map_err(|_| "poisoned mailbox")?;
        while !self.take_msg(sh, &mut q, src, tag)? {
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
    ) -> Result<bool, String> {
        if let Some(i) = q
            .iter()
            .position(|m| src.is_none_or(|s| s == m.src) && tag.is_none_or(|t| t == m.tag))
        {
            q.remove(i);
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
    ) -> Result<Option<()>, String> {
        let mut q = b.q.lock().map_err(|_| "poisoned mailbox")?;
        Ok(self.take_msg(sh, &mut q, src, tag)?.then_some(()))
    }
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
    path: PathBuf,
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
    /// Posted receives not yet completed: (request, communicator, source, tag).
    pending: Vec<(i64, i64, Option<usize>, Option<i64>)>,
    /// This rank's read buffer (see [`Pattern::trim_read_buf`]).
    rbuf: Vec<u8>,
}

impl ThreadsRuntime {
    /// The runtime of `rank`.
    pub fn new(rank: u32, sh: Arc<Shared>) -> ThreadsRuntime {
        let mut comms = HashMap::new();
        comms.insert(rsd::mpi::COMM_WORLD, (sh.world.clone(), rank as usize));
        let me = Arc::new(CommObj::new(u64::MAX, vec![rank]));
        comms.insert(rsd::mpi::COMM_SELF, (me, 0));
        ThreadsRuntime {
            rank,
            sh,
            comms,
            created: HashMap::new(),
            files: HashMap::new(),
            pending: Vec::new(),
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
        for (req, comm, src, tag) in std::mem::take(&mut self.pending) {
            if which.is_none_or(|w| w == req) {
                let (c, me) = self.comm(comm)?;
                c.recv(&self.sh, me, src, tag)?;
            } else {
                keep.push((req, comm, src, tag));
            }
        }
        self.pending = keep;
        Ok(())
    }

    fn peer(me: usize, rel: i64, n: usize) -> Result<Option<usize>, String> {
        if rel == ANY_SOURCE || rel == PROC_NULL {
            return Ok(None);
        }
        let p = me as i64 + rel;
        if p < 0 || p as usize >= n {
            return Err(format!(
                "peer {p} (relative {rel}) is outside the communicator"
            ));
        }
        Ok(Some(p as usize))
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
        path: Option<&Path>,
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
            let path = path.ok_or("no path")?.to_path_buf();
            let file = OpenOptions::new()
                .read(amode & (RDONLY | RDWR) != 0)
                .write(amode & (WRONLY | RDWR) != 0)
                .create(amode & CREATE != 0 && amode & RDONLY == 0)
                .open(&path)
                .map_err(|er| format!("{}: {er}", path.display()))?;
            let shared = self
                .sh
                .shared_fps
                .lock()
                .map_err(|_| "poisoned")?
                .entry(path.clone())
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
                let _ = std::fs::remove_file(p);
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
                    let _ = std::fs::remove_file(&f.path);
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
}

impl Runtime for ThreadsRuntime {
    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Path>,
        _files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.file_call(e, path, fx, data, true)
    }

    fn mpi(&mut self, e: &FlatEvent, _types: &Types, bookkeeping_only: bool) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::CommDup => {
                return self.create_comm(
                    e.p(Param::Comm),
                    0,
                    self.rank as i64,
                    e.p(Param::Newcomm),
                );
            }
            // MPI_Comm_create and MPI_Comm_split_type are recorded as their equivalent split.
            Op::CommSplit | Op::CommCreate | Op::CommSplitType | Op::CartCreate => {
                return self.create_comm(
                    e.p(Param::Comm),
                    e.p(Param::Color),
                    e.p(Param::Key),
                    e.p(Param::Newcomm),
                );
            }
            _ if bookkeeping_only => return Ok(()),
            _ => {}
        }
        match op {
            _ if op.is_collective() => {
                let (c, _) = self.comm(e.p(Param::Comm))?;
                c.barrier(&self.sh)
            }
            // Every send mode delivers to a mailbox; what differs is when the sender may go on,
            // which a thread replay does not model.
            _ if matches!(op.p2p(), Some(rsd::op::P2p::Send { .. })) => {
                let (c, me) = self.comm(e.p(Param::Comm))?;
                match Self::peer(me, e.p(Param::Peer), c.members.len())? {
                    Some(d) => c.send(me, d, e.p(Param::Tag)),
                    None => Ok(()),
                }
            }
            Op::Recv | Op::Irecv => {
                let cid = e.p(Param::Comm);
                let (c, me) = self.comm(cid)?;
                let rel = e.p(Param::Peer);
                if rel == PROC_NULL {
                    return Ok(());
                }
                let src = Self::peer(me, rel, c.members.len())?;
                let tag = Some(e.p(Param::Tag)).filter(|t| *t >= 0);
                if op == Op::Recv {
                    c.recv(&self.sh, me, src, tag)
                } else {
                    self.pending.push((e.p(Param::Request), cid, src, tag));
                    Ok(())
                }
            }
            Op::Sendrecv => {
                let (c, me) = self.comm(e.p(Param::Comm))?;
                let n = c.members.len();
                if let Some(d) = Self::peer(me, e.p(Param::Dest), n)? {
                    c.send(me, d, e.p(Param::Sendtag))?;
                }
                if e.p(Param::Source) == PROC_NULL {
                    return Ok(());
                }
                let src = Self::peer(me, e.p(Param::Source), n)?;
                let tag = Some(e.p(Param::Recvtag)).filter(|t| *t >= 0);
                c.recv(&self.sh, me, src, tag)
            }
            Op::Wait => self.complete(Some(e.p(Param::Request))),
            // The request that completed, as recorded (-1: none was active).
            Op::Waitany => match e.p(Param::Request) {
                -1 => Ok(()),
                q => self.complete(Some(q)),
            },
            // A freed request completes on its own; a receive still posted is dropped.
            Op::RequestFree => {
                let q = e.p(Param::Request);
                self.pending.retain(|p| p.0 != q);
                Ok(())
            }
            Op::CommFree => {
                self.comms.remove(&e.p(Param::Comm));
                Ok(())
            }
            // The trace keeps only the count of a Waitall: it completes every posted receive.
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
        path: Option<&Path>,
        _files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.file_call(e, path, fx, data, false)
    }
}
