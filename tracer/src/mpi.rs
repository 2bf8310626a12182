//! MPI wrappers. The application's `MPI_*` calls land here (this library is preloaded before
//! libmpi) and are forwarded to `PMPI_*`, looked up at run time so that the library has no link
//! dependency on MPI and serial programs load it too.
//!
//! Handles follow the ABI of the MPI found at `MPI_Init` (see `abi`): Open MPI, where every
//! handle is a pointer and predefined handles are the addresses of `ompi_mpi_*` globals, or
//! MPICH, where handles are integers with constant predefined values. Any other MPI is
//! reported, and the tracer then only passes calls through, which is safe because forwarding a
//! register-sized argument does not depend on its type.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

pub mod abi;

use crate::callsite::signature;
use crate::guard::{BUSY, Enter, IDLE, IN_HDF5, IN_MPIIO};
use crate::posix::cpath;
use crate::real::{lookup_global, real};
use crate::state::{
    Call, RECORDING, State, close_frame, now_ns, open_frame, record_nested, record_parent, say,
    with_state,
};
use abi::{Flavour, hv};
use libc::{c_char, c_int, c_void};
use rsd::Op;
use rsd::op::args;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A handle (`MPI_Comm`, `MPI_Datatype`, `MPI_File`, ...), pointer-sized: a pointer in Open MPI,
/// a 4-byte int passed in the same register in MPICH.
pub type H = *mut c_void;

const MPI_SUCCESS: c_int = 0;
const MPI_ERR_OTHER: c_int = 16;

/// `pmpi!(name, fn type)`: the `PMPI_*` function a wrapper forwards to, or `MPI_ERR_OTHER`
/// from the wrapper when the loaded MPI lacks it.
macro_rules! pmpi {
    ($name:expr, $ty:ty) => {
        match real!($name, $ty) {
            Some(f) => f,
            None => {
                say(concat!("cannot find ", $name, " in the loaded MPI library"));
                return MPI_ERR_OTHER;
            }
        }
    };
}

#[macro_use]
mod record;
mod abort;
mod coll;
mod comm;
pub(crate) mod config;
mod file;
pub mod fortran;
pub mod fortran_f08;
mod handles;
mod init;
pub mod kinds;
mod local;
mod mca;
mod p2p;
mod topo;
mod types;

pub use abort::*;
pub use coll::*;
pub use comm::*;
pub use file::*;
pub(crate) use handles::*;
pub use handles::{Globals, TRACER_COMM, WRONG_MPI, globals};
pub use init::*;
pub(crate) use init::{finalize_common, init_common};
pub use local::*;
pub use p2p::*;
pub use topo::*;
pub use types::*;
