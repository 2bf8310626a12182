//! Communicators: the creations (as the splits the tracer records them as, or as the real
//! call for listed members and intercommunicators), their frees, and their handles.

use super::{MpiRuntime, check};
use mpi::ffi;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::os::raw::c_int;

impl MpiRuntime {
    /// A creation the tracer recorded as the split that builds the same communicator:
    /// MPI_Comm_create, MPI_Comm_split_type and the topology creations replay as MPI_Comm_split.
    pub(super) fn create_split(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let c = self.comm(e.p(Param::Comm))?;
        let mut nc = p.self_;
        let rc = if op == Op::CommDup {
            // SAFETY: a valid communicator and out-parameter.
            unsafe { ffi::MPI_Comm_dup(c, &mut nc) }
        } else {
            let color = e.p(Param::Color);
            let color = if color < 0 {
                p.undefined
            } else {
                color as c_int
            };
            // SAFETY: as above; every member of `c` makes this call in trace order.
            unsafe { ffi::MPI_Comm_split(c, color, e.p(Param::Key) as c_int, &mut nc) }
        };
        check(rc, op.name())?;
        let id = e.p(Param::Newcomm);
        if id >= 0 {
            self.comms.insert(id, nc);
        }
        Ok(())
    }

    /// MPI_Comm_free of a communicator the replay built, and of the graph built on it.
    pub(super) fn comm_free(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::CommFree => {
                let id = e.p(Param::Comm);
                if let Some(mut g) = self.graphs.remove(&id) {
                    // SAFETY: the graph communicator this runtime built on `id`, freed once.
                    check(unsafe { ffi::MPI_Comm_free(&mut g) }, "MPI_Comm_free")?;
                }
                if id != rsd::mpi::COMM_WORLD
                    && id != rsd::mpi::COMM_SELF
                    && let Some(mut c) = self.comms.remove(&id)
                {
                    // SAFETY: a communicator this runtime created, freed once.
                    check(unsafe { ffi::MPI_Comm_free(&mut c) }, "MPI_Comm_free")?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The creations whose members are listed, and intercommunicators, issued as the real
    /// call: MPI_Comm_create_group with the group of the listed MPI_COMM_WORLD ranks,
    /// MPI_Intercomm_merge, MPI_Intercomm_create with the recorded leaders.
    pub(super) fn create_listed(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        let p = self.p;
        let c = self.comm(e.p(Param::Comm))?;
        let mut nc = p.self_;
        // SAFETY (every arm): valid communicators and groups, arrays of the lengths given,
        // valid out-parameters; every process the call involves makes it in trace order.
        let rc = unsafe {
            match op {
                Op::CommCreateGroup => {
                    let ranks: Vec<c_int> =
                        op.list(&e.params).iter().map(|r| *r as c_int).collect();
                    let mut wg = std::mem::zeroed();
                    check(ffi::MPI_Comm_group(p.world, &mut wg), "MPI_Comm_group")?;
                    let mut g = std::mem::zeroed();
                    let rc = ffi::MPI_Group_incl(wg, ranks.len() as c_int, ranks.as_ptr(), &mut g);
                    ffi::MPI_Group_free(&mut wg);
                    check(rc, "MPI_Group_incl")?;
                    let rc = ffi::MPI_Comm_create_group(c, g, e.p(Param::Tag) as c_int, &mut nc);
                    ffi::MPI_Group_free(&mut g);
                    rc
                }
                Op::IntercommMerge => {
                    ffi::MPI_Intercomm_merge(c, e.p(Param::High) as c_int, &mut nc)
                }
                _ => {
                    // The peer communicator and remote leader matter at the local leader
                    // only, where the tracer recorded them.
                    let peer = match e.p(Param::PeerComm) {
                        id if id >= 0 => self.comm(id)?,
                        _ => p.world,
                    };
                    ffi::MPI_Intercomm_create(
                        c,
                        e.p(Param::LocalLeader) as c_int,
                        peer,
                        e.p(Param::RemoteLeader).max(0) as c_int,
                        e.p(Param::Tag) as c_int,
                        &mut nc,
                    )
                }
            }
        };
        check(rc, op.name())?;
        let id = e.p(Param::Newcomm);
        if id >= 0 {
            self.comms.insert(id, nc);
        }
        Ok(())
    }

    pub(super) fn comm(&self, id: i64) -> Result<ffi::MPI_Comm, String> {
        self.comms
            .get(&id)
            .copied()
            .ok_or_else(|| format!("communicator {id} was not created by a replayed call"))
    }

    pub(super) fn comm_rank(&self, c: ffi::MPI_Comm) -> i64 {
        let mut r = 0;
        // SAFETY: `c` is a valid communicator and `r` a valid out-parameter.
        unsafe { ffi::MPI_Comm_rank(c, &mut r) };
        r as i64
    }

    pub(super) fn comm_size(&self, c: ffi::MPI_Comm) -> i64 {
        let mut r = 0;
        // SAFETY: as in `comm_rank`.
        unsafe { ffi::MPI_Comm_size(c, &mut r) };
        r as i64
    }
}
