//! Point-to-point messages through the mailboxes, requests and their completion, persistent
//! requests, and the neighbourhood and nonblocking collectives built on them.

use super::comm::CommObj;
use super::{NEIGHBOR_TAG, Pend, ThreadsRuntime, To};
use rsd::mpi::{ANY_SOURCE, PROC_NULL};
use rsd::op::Param;
use rsd::trace::FlatEvent;
use std::sync::Arc;

impl ThreadsRuntime {
    pub(super) fn complete(&mut self, which: Option<i64>) -> Result<(), String> {
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
    pub(super) fn send_to(&self, cid: i64, rel: i64, tag: i64) -> Result<(), String> {
        match self.endpoint(cid, rel)? {
            (c, me, To::Rank(d)) => c.send(me, d, tag),
            _ => Ok(()),
        }
    }

    /// A blocking receive (`take`) or probe of one message.
    pub(super) fn recv_from(&self, cid: i64, rel: i64, tag: i64, take: bool) -> Result<(), String> {
        let (c, me, src) = match self.endpoint(cid, rel)? {
            (_, _, To::Null) => return Ok(()),
            (c, me, To::Any) => (c, me, None),
            (c, me, To::Rank(s)) => (c, me, Some(s)),
        };
        c.wait_msg(&self.sh, me, src, Some(tag).filter(|t| *t >= 0), take)
    }

    /// A receive posted now and completed with request `req`.
    pub(super) fn post_recv(
        &mut self,
        req: i64,
        cid: i64,
        rel: i64,
        tag: i64,
    ) -> Result<(), String> {
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
    pub(super) fn neighborhood(&mut self, e: &FlatEvent, req: Option<i64>) -> Result<(), String> {
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
    pub(super) fn start(&mut self, r: i64) -> Result<(), String> {
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
    pub(super) fn start_collective(&mut self, cid: i64, req: i64) -> Result<(), String> {
        let (c, me) = self.comm(cid)?;
        let k = self.nb_started.entry(c.uid).or_insert(0);
        *k += 1;
        c.start_collective(me, *k)?;
        self.pending.push((req, Pend::Coll(c, *k)));
        Ok(())
    }
}
