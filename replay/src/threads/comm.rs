//! A communicator of the threads runtime: its members, a reusable barrier, the progress of
//! its nonblocking collectives and a mailbox per member.

use super::{NEIGHBOR_TAG, POLL, Shared};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};

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
pub(super) struct CommObj {
    pub(super) uid: u64,
    pub(super) members: Vec<u32>,
    bar: Mutex<(usize, u64)>,
    bar_cv: Condvar,
    boxes: Vec<Mailbox>,
    /// Nonblocking collectives each member has started: the k-th one completes once every
    /// member has started k (they start them in the same order).
    started: Mutex<Vec<u64>>,
    started_cv: Condvar,
}

impl CommObj {
    pub(super) fn new(uid: u64, members: Vec<u32>) -> CommObj {
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
    pub(super) fn start_collective(&self, me: usize, k: u64) -> Result<(), String> {
        let mut g = self.started.lock().map_err(|_| "poisoned collective")?;
        if let Some(s) = g.get_mut(me) {
            *s = k;
        }
        self.started_cv.notify_all();
        crate::sched::notify_tasks(self.members.iter().map(|m| *m as usize));
        Ok(())
    }

    /// Waits until every member has started its `k`-th nonblocking collective.
    pub(super) fn complete_collective(&self, sh: &Shared, k: u64) -> Result<(), String> {
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

    pub(super) fn barrier(&self, sh: &Shared) -> Result<(), String> {
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

    pub(super) fn send(&self, src: usize, dst: usize, tag: i64) -> Result<(), String> {
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
    pub(super) fn recv(
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
    pub(super) fn wait_msg(
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
