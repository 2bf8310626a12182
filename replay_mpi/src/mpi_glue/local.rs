//! The local queries, asked again of the replayed library: they cost what the program's did
//! and move nothing.

use super::{MpiRuntime, check};
use mpi::ffi;
use rsd::op::{Op, Param};
use rsd::trace::FlatEvent;
use std::os::raw::c_int;

impl MpiRuntime {
    /// A local query as the program asked it (the Cartesian ones not at all: see below).
    pub(super) fn local_query(&mut self, e: &FlatEvent) -> Result<(), String> {
        let op = e.op;
        match op {
            Op::CommRank => {
                let c = self.comm(e.p(Param::Comm))?;
                let mut r = 0;
                // SAFETY: a communicator this runtime holds and a valid out-parameter.
                check(unsafe { ffi::MPI_Comm_rank(c, &mut r) }, "MPI_Comm_rank")
            }
            Op::CommSize => {
                let c = self.comm(e.p(Param::Comm))?;
                let mut n = 0;
                // SAFETY: as for MPI_Comm_rank.
                check(unsafe { ffi::MPI_Comm_size(c, &mut n) }, "MPI_Comm_size")
            }
            // No call: the topology communicators are replayed as the splits they are recorded
            // as, without a topology to ask (a Cartesian query there is an MPI error), and
            // their neighbourhood collectives bring their own graph. The queries are local, so
            // nothing any other rank waits for is lost.
            Op::CartGet | Op::CartRank | Op::CartShift => Ok(()),
            // Asked again with the entries as given (a failed call recorded none: nothing to
            // ask). The grid is the replayed library's, which the program's traced calls
            // already carry in their values.
            Op::DimsCreate => {
                let nd = e.p(Param::Ndims);
                let given = Op::DimsCreate
                    .array_values(&e.params, "given")
                    .unwrap_or_default();
                if nd <= 0 || given.len() != nd as usize {
                    return Ok(());
                }
                let mut dims: Vec<c_int> = given.iter().map(|&d| d as c_int).collect();
                // SAFETY: `dims` holds `ndims` entries.
                let rc = unsafe {
                    ffi::MPI_Dims_create(e.p(Param::Size) as c_int, nd as c_int, dims.as_mut_ptr())
                };
                check(rc, "MPI_Dims_create")
            }
            Op::GetProcessorName => {
                // Larger than either library's MPI_MAX_PROCESSOR_NAME (256, 128).
                let mut name = vec![0 as std::os::raw::c_char; 1024];
                let mut len = 0;
                // SAFETY: a buffer longer than MPI_MAX_PROCESSOR_NAME, a valid out-parameter.
                let rc = unsafe { ffi::MPI_Get_processor_name(name.as_mut_ptr(), &mut len) };
                check(rc, "MPI_Get_processor_name")
            }
            Op::Finalized => {
                let mut flag = 0;
                // SAFETY: a valid out-parameter.
                check(unsafe { ffi::MPI_Finalized(&mut flag) }, "MPI_Finalized")
            }
            // The predefined handlers are set as traced (an error on the communicator then
            // returns to the replay, which reports it, or aborts it, as it did the program);
            // a program's own handler is a function of the program, which the replay does not
            // have, and MPI_ERRORS_ABORT is MPI-4's (the replay's bindings lack it): those
            // leave the communicator's handler as it was.
            Op::CommSetErrhandler => {
                use rsd::mpi::errhandler::{ERRORS_ARE_FATAL, ERRORS_RETURN};
                let c = self.comm(e.p(Param::Comm))?;
                // SAFETY: constant globals of the rsmpi shim, only read.
                let h = match e.p(Param::Errhandler) {
                    ERRORS_ARE_FATAL => unsafe { ffi::RSMPI_ERRORS_ARE_FATAL },
                    ERRORS_RETURN => unsafe { ffi::RSMPI_ERRORS_RETURN },
                    _ => return Ok(()),
                };
                // SAFETY: a communicator this runtime holds and a predefined handler.
                check(
                    unsafe { ffi::MPI_Comm_set_errhandler(c, h) },
                    "MPI_Comm_set_errhandler",
                )
            }
            _ => Ok(()),
        }
    }
}
