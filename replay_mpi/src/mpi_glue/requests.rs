//! Requests: started, completed (waits and tests as recorded), cancelled and freed.

use super::Pending;
use super::{MpiRuntime, check};
use mpi::ffi;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::any::Any;
use std::os::raw::c_int;

impl MpiRuntime {
    /// MPI_Start and MPI_Startall of the persistent requests the replay made.
    pub(super) fn start(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::Start | Op::Startall => {
                let ids: Vec<i64> = if op == Op::Start {
                    vec![e.p(Param::Request)]
                } else {
                    op.list(&e.params).to_vec()
                };
                let mut hs = Vec::with_capacity(ids.len());
                for i in &ids {
                    let q = self.persist.get(i).ok_or_else(|| {
                        format!("request {i} was not made by a replayed persistent init")
                    })?;
                    hs.push(q.req);
                }
                // SAFETY: inactive persistent requests whose buffers live in `persist`; MPI
                // does not change their handles when it starts them.
                let rc = unsafe {
                    if op == Op::Start {
                        ffi::MPI_Start(&mut hs[0])
                    } else {
                        ffi::MPI_Startall(hs.len() as c_int, hs.as_mut_ptr())
                    }
                };
                check(rc, op.name())?;
                self.active.extend(ids);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The completion calls, as recorded: what they completed is completed here.
    pub(super) fn complete(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::Wait => self.wait(Some(e.p(Param::Request))),
            // The request that completed, as recorded (-1: none was active).
            Op::Waitany => match e.p(Param::Request) {
                -1 => Ok(()),
                q => self.wait(Some(q)),
            },
            // Completed rather than freed: MPI_Request_free would leave the operation reading
            // or writing a buffer the replay is about to drop. Its message is matched (checked
            // before the replay), so the wait ends. A persistent request is completed if
            // started, then freed for real (inactive, nothing reads its buffer any more).
            Op::RequestFree => {
                let q = e.p(Param::Request);
                self.wait(Some(q))?;
                if let Some(mut r) = self.persist.remove(&q) {
                    // SAFETY: an inactive persistent request, freed once.
                    check(unsafe { ffi::MPI_Request_free(&mut r.req) }, op.name())?;
                }
                Ok(())
            }
            // A test that found its requests complete completes them; one that did not is
            // issued as MPI_Test(all) on the same requests.
            Op::Test => {
                let q = e.p(Param::Request);
                match e.p(Param::Flag) {
                    1 => self.wait(Some(q)),
                    _ => self.test_all(&[q]),
                }
            }
            Op::Testany => match (e.p(Param::Flag), e.p(Param::Request)) {
                (1, q) if q >= 0 => self.wait(Some(q)),
                // Which requests it tested is not recorded: nothing to issue.
                _ => Ok(()),
            },
            Op::Testall => match e.p(Param::Flag) {
                1 => op
                    .list(&e.params)
                    .iter()
                    .try_for_each(|q| self.wait(Some(*q))),
                _ => self.test_all(op.list(&e.params)),
            },
            // The requests that completed, as recorded.
            Op::Waitsome | Op::Testsome => op
                .list(&e.params)
                .iter()
                .try_for_each(|q| self.wait(Some(*q))),
            // Receives only: the matching check counts a cancelled send as sent (whether the
            // traced cancel succeeded is not recorded, and MPI rarely cancels a send), so the
            // replay lets it go; a cancelled receive was taken back by the check.
            Op::Cancel => {
                let q = e.p(Param::Request);
                let r = match self.reqs.get_mut(&q) {
                    Some(r) => Some(r),
                    None if self.active.contains(&q) => self.persist.get_mut(&q),
                    None => None,
                };
                match r {
                    // SAFETY: an active receive; its completion call follows in the trace.
                    Some(r) if r.recv => {
                        check(unsafe { ffi::MPI_Cancel(&mut r.req) }, "MPI_Cancel")
                    }
                    _ => Ok(()),
                }
            }
            // The trace keeps only a Waitall's count: it completes every pending request.
            Op::Waitall => self.wait(None),
            _ => Ok(()),
        }
    }

    pub(super) fn wait(&mut self, id: Option<i64>) -> Result<(), String> {
        let ids: Vec<i64> = match id {
            Some(i) => vec![i],
            None => self.reqs.keys().chain(&self.active).copied().collect(),
        };
        for i in ids {
            if let Some(mut p) = self.reqs.remove(&i) {
                // SAFETY: `p.req` is an active request whose buffer `p._buf` is still alive;
                // the status is ignored.
                let rc = unsafe { ffi::MPI_Wait(&mut p.req, self.p.status_ignore) };
                check(rc, "MPI_Wait")?;
            } else if self.active.remove(&i)
                && let Some(p) = self.persist.get_mut(&i)
            {
                // SAFETY: a started persistent request, its buffer alive in `persist`; it
                // becomes inactive and stays allocated.
                let rc = unsafe { ffi::MPI_Wait(&mut p.req, self.p.status_ignore) };
                check(rc, "MPI_Wait")?;
            }
        }
        Ok(())
    }

    /// Keeps a nonblocking call's request and what it reads or writes until it completes.
    pub(super) fn keep(&mut self, id: i64, req: ffi::MPI_Request, keep: Vec<Box<dyn Any>>) {
        self.reqs.insert(
            id,
            Pending {
                req,
                _buf: Vec::new(),
                _keep: keep,
                recv: false,
            },
        );
    }

    /// MPI_Testall on the listed requests still active: when it finds them all complete
    /// they are completed here too (a test that found nothing in the trace may find its
    /// request complete in the replay, which the later wait then skips).
    pub(super) fn test_all(&mut self, ids: &[i64]) -> Result<(), String> {
        let live: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|i| self.reqs.contains_key(i) || self.active.contains(i))
            .collect();
        let mut hs: Vec<ffi::MPI_Request> = live
            .iter()
            .filter_map(|i| self.reqs.get(i).or(self.persist.get(i)).map(|p| p.req))
            .collect();
        let mut flag: c_int = 0;
        // SAFETY: active requests whose buffers are alive, as copies of the handles: MPI
        // changes none when it finds them not all complete; when it does, the completed
        // non-persistent ones are dropped below and the persistent ones keep their handle.
        let rc = unsafe {
            ffi::MPI_Testall(
                hs.len() as c_int,
                hs.as_mut_ptr(),
                &mut flag,
                self.p.statuses_ignore,
            )
        };
        check(rc, "MPI_Testall")?;
        if flag != 0 {
            for i in live {
                self.reqs.remove(&i);
                self.active.remove(&i);
            }
        }
        Ok(())
    }
}
