//! `MPI_Abort`: the application ends every rank of the job. Before the library gets to do it
//! (and the launcher to kill the ranks, which under MPICH's Hydra leaves no exit handler
//! running), the aborting rank writes what it recorded, flagged incomplete and saying it
//! aborted ([`crate::finalize::on_abort`]); then the library's own abort runs as it would
//! untraced. `PMPI_Abort` is hooked too (a library or the Fortran binding calling the profiling
//! name, as Open MPI's `mpi_abort_` does), and the Fortran binding's own `mpi_abort_` for
//! MPIs whose binding does not go through either.

use super::H;
use super::fortran::{Fint, set, v};
use crate::real::real;
use libc::c_int;

type AbortFn = unsafe extern "C" fn(H, c_int) -> c_int;

/// Writes this rank's trace, then calls the library's `PMPI_Abort`.
fn abort_common(comm: H, code: c_int) -> c_int {
    crate::finalize::on_abort(code);
    let Some(f) = real!("PMPI_Abort", AbortFn) else {
        crate::state::say("cannot find PMPI_Abort in the loaded MPI library");
        // The application asked to end: it must not go on as if MPI_Abort returned.
        std::process::exit(if code == 0 { 1 } else { code });
    };
    // SAFETY: forwarding the application's arguments.
    unsafe { f(comm, code) }
}

/// Wrapper: `MPI_Abort`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm: H, code: c_int) -> c_int {
    abort_common(comm, code)
}

/// Wrapper: `PMPI_Abort`, called by libraries and by Open MPI's Fortran binding.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PMPI_Abort(comm: H, code: c_int) -> c_int {
    abort_common(comm, code)
}

/// Fortran `MPI_ABORT(comm, errorcode, ierr)`: the trace, then the binding's own function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mpi_abort_(comm: *const Fint, code: *const Fint, ierr: *mut Fint) {
    crate::finalize::on_abort(v(code));
    let Some(f) = real!(
        "mpi_abort_",
        unsafe extern "C" fn(*const Fint, *const Fint, *mut Fint)
    ) else {
        return set(ierr, super::MPI_ERR_OTHER);
    };
    // SAFETY: forwarding the program's arguments.
    unsafe { f(comm, code, ierr) };
}

fortran_spellings! {
    mpi_abort_ => MPI_ABORT, mpi_abort__, ompi_abort_f;
}
