//! Point-to-point: sends and receives (matched, combined, persistent), probes, the attached
//! buffer, and the peers and tags as the replay issues them.

use super::Pending;
use super::{MpiRuntime, check, len};
use mpi::ffi;
use replay::types::Types;
use rsd::mpi::{ANY_SOURCE, PROC_NULL};
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::os::raw::{c_int, c_void};

impl MpiRuntime {
    /// Sends and receives of the recorded sizes to the recorded (relative) peers.
    pub(super) fn p2p(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let tsize = |q: Param| types.size(e.p(q));
        match op {
            Op::Mrecv | Op::Imrecv => {
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let id = e.p(Param::Message);
                let mut m = if id < 0 {
                    p.message_no_proc
                } else {
                    self.msgs.remove(&id).ok_or_else(|| {
                        format!("message {id} was not matched by a replayed probe")
                    })?
                };
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                // SAFETY: a matched message, a buffer of `n` bytes (kept until completion for
                // the nonblocking form), the byte type.
                unsafe {
                    if op == Op::Mrecv {
                        let rc = ffi::MPI_Mrecv(ptr, n, p.u8, &mut m, p.status_ignore);
                        check(rc, "MPI_Mrecv")
                    } else {
                        let mut req = p.request_null;
                        check(
                            ffi::MPI_Imrecv(ptr, n, p.u8, &mut m, &mut req),
                            "MPI_Imrecv",
                        )?;
                        self.reqs
                            .insert(e.p(Param::Request), Pending::with_buf(req, buf, false));
                        Ok(())
                    }
                }
            }
            _ if op.p2p().is_some() => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let peer = self.peer(c, e.p(Param::Peer));
                let tag = self.tag(e.p(Param::Tag));
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                // SAFETY (every arm): a buffer of `n` bytes kept alive until completion (held
                // in `reqs` for the nonblocking calls), the byte type, a valid communicator.
                // A ready send is issued as a standard one (the replay cannot promise the
                // receive is already posted, which MPI_Rsend requires), and so is a buffered one
                // (no buffer is attached); synchronous sends stay synchronous.
                unsafe {
                    match op {
                        Op::Send | Op::Rsend | Op::Bsend => {
                            check(ffi::MPI_Send(ptr, n, p.u8, peer, tag, c), op.name())
                        }
                        Op::Ssend => check(ffi::MPI_Ssend(ptr, n, p.u8, peer, tag, c), op.name()),
                        Op::Recv => check(
                            ffi::MPI_Recv(ptr, n, p.u8, peer, tag, c, p.status_ignore),
                            "MPI_Recv",
                        ),
                        _ => {
                            let mut req: ffi::MPI_Request = std::mem::zeroed();
                            let rc = match op {
                                Op::Irecv => ffi::MPI_Irecv(ptr, n, p.u8, peer, tag, c, &mut req),
                                Op::Issend => ffi::MPI_Issend(ptr, n, p.u8, peer, tag, c, &mut req),
                                _ => ffi::MPI_Isend(ptr, n, p.u8, peer, tag, c, &mut req),
                            };
                            check(rc, op.name())?;
                            self.reqs.insert(
                                e.p(Param::Request),
                                Pending::with_buf(req, buf, op == Op::Irecv),
                            );
                            Ok(())
                        }
                    }
                }
            }
            Op::SendrecvReplace => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                self.rbuf.resize(n as usize, 0);
                let (dest, src) = (
                    self.peer(c, e.p(Param::Dest)),
                    self.peer(c, e.p(Param::Source)),
                );
                let (st, rt) = (self.tag(e.p(Param::Sendtag)), self.tag(e.p(Param::Recvtag)));
                // SAFETY: a buffer of `n` bytes, the byte type, a valid communicator.
                let rc = unsafe {
                    ffi::MPI_Sendrecv_replace(
                        self.rbuf.as_mut_ptr() as *mut c_void,
                        n,
                        p.u8,
                        dest,
                        st,
                        src,
                        rt,
                        c,
                        p.status_ignore,
                    )
                };
                check(rc, "MPI_Sendrecv_replace")
            }
            Op::Sendrecv => {
                let c = self.comm(e.p(Param::Comm))?;
                let sn = len(e.p(Param::Sendcount) * tsize(Param::Sendtype));
                let rn = len(e.p(Param::Recvcount) * tsize(Param::Recvtype));
                let send = vec![0u8; sn as usize];
                self.rbuf.resize(rn as usize, 0);
                let (dest, src) = (
                    self.peer(c, e.p(Param::Dest)),
                    self.peer(c, e.p(Param::Source)),
                );
                let (st, rt) = (self.tag(e.p(Param::Sendtag)), self.tag(e.p(Param::Recvtag)));
                // SAFETY: buffers of the given sizes, byte types, a valid communicator.
                let rc = unsafe {
                    ffi::MPI_Sendrecv(
                        send.as_ptr() as *const c_void,
                        sn,
                        p.u8,
                        dest,
                        st,
                        self.rbuf.as_mut_ptr() as *mut c_void,
                        rn,
                        p.u8,
                        src,
                        rt,
                        c,
                        p.status_ignore,
                    )
                };
                check(rc, "MPI_Sendrecv")
            }
            _ => Ok(()),
        }
    }

    /// The persistent inits: the request made, kept until it is freed, started later.
    pub(super) fn persistent_init(&mut self, e: &FlatEvent, types: &Types) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let tsize = |q: Param| types.size(e.p(q));
        match op {
            _ if op.persistent().is_some() => {
                let c = self.comm(e.p(Param::Comm))?;
                let n = len(e.p(Param::Count) * tsize(Param::Datatype));
                let peer = self.peer(c, e.p(Param::Peer));
                let tag = self.tag(e.p(Param::Tag));
                let mut buf = vec![0u8; n as usize];
                let ptr = buf.as_mut_ptr() as *mut c_void;
                let mut req = p.request_null;
                // SAFETY: a buffer of `n` bytes kept in `persist` until the request is freed,
                // the byte type, a valid communicator. Ready and buffered persistent sends are
                // made standard, as their single-shot forms are.
                let rc = unsafe {
                    match op {
                        Op::RecvInit => ffi::MPI_Recv_init(ptr, n, p.u8, peer, tag, c, &mut req),
                        Op::SsendInit => ffi::MPI_Ssend_init(ptr, n, p.u8, peer, tag, c, &mut req),
                        _ => ffi::MPI_Send_init(ptr, n, p.u8, peer, tag, c, &mut req),
                    }
                };
                check(rc, op.name())?;
                self.persist.insert(
                    e.p(Param::Request),
                    Pending::with_buf(req, buf, op == Op::RecvInit),
                );
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// MPI_Buffer_attach and MPI_Buffer_detach.
    pub(super) fn buffer(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::BufferAttach => {
                self.detach()?;
                let mut b = vec![0u8; e.p(Param::Size).max(0) as usize];
                // SAFETY: a buffer kept in `attached` until it is detached.
                let rc = unsafe {
                    ffi::MPI_Buffer_attach(b.as_mut_ptr() as *mut c_void, len(b.len() as i64))
                };
                check(rc, "MPI_Buffer_attach")?;
                self.attached = Some(b);
                Ok(())
            }
            Op::BufferDetach => self.detach(),
            _ => Ok(()),
        }
    }

    /// The probes. One that found its message waits for it (MPI_Probe, or MPI_Mprobe for
    /// the matched forms): the message had been sent when the traced probe returned, so its
    /// sender does not wait on this rank for it. One that found none is issued as MPI_Iprobe,
    /// which takes nothing (an MPI_Improbe could take a message the trace's later receive
    /// expects).
    pub(super) fn probe(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let c = self.comm(e.p(Param::Comm))?;
        let peer = self.peer(c, e.p(Param::Peer));
        let tag = self.tag(e.p(Param::Tag));
        let found = e.get(Param::Flag).is_none_or(|f| f == 1);
        let matched = matches!(op, Op::Mprobe | Op::Improbe);
        // SAFETY (every arm): a valid communicator, MPI's own source and tag values, valid
        // out-parameters, the status ignored.
        unsafe {
            if !found {
                let mut flag: c_int = 0;
                let rc = ffi::MPI_Iprobe(peer, tag, c, &mut flag, self.p.status_ignore);
                return check(rc, "MPI_Iprobe");
            }
            if !matched {
                return check(
                    ffi::MPI_Probe(peer, tag, c, self.p.status_ignore),
                    "MPI_Probe",
                );
            }
            let mut m = self.p.message_no_proc;
            check(
                ffi::MPI_Mprobe(peer, tag, c, &mut m, self.p.status_ignore),
                "MPI_Mprobe",
            )?;
            let id = e.p(Param::Message);
            if id >= 0 {
                self.msgs.insert(id, m);
            }
        }
        Ok(())
    }

    pub(super) fn peer(&self, c: ffi::MPI_Comm, rel: i64) -> c_int {
        match rel {
            ANY_SOURCE => self.p.any_source,
            PROC_NULL => self.p.proc_null,
            _ => (self.comm_rank(c) + rel) as c_int,
        }
    }

    pub(super) fn tag(&self, t: i64) -> c_int {
        if t < 0 { self.p.any_tag } else { t as c_int }
    }

    /// Detaches the buffer MPI_Buffer_attach attached, if any.
    pub(super) fn detach(&mut self) -> Result<(), String> {
        if self.attached.take().is_some() {
            let mut at: *mut c_void = std::ptr::null_mut();
            let mut n: c_int = 0;
            // SAFETY: a buffer is attached; MPI writes its address and size to valid
            // out-parameters (the address parameter is a pointer to a pointer).
            let rc = unsafe {
                ffi::MPI_Buffer_detach(&mut at as *mut *mut c_void as *mut c_void, &mut n)
            };
            check(rc, "MPI_Buffer_detach")?;
        }
        Ok(())
    }
}
