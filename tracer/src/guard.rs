//! The per-thread re-entry guard.
//!
//! Every hook first looks at its thread's mode. Only `IDLE` (the application calling),
//! `IN_MPIIO` (a POSIX call made by the MPI library inside a traced MPI-IO call, recorded as a
//! child) and `IN_HDF5` (an MPI, MPI-IO or POSIX call made by HDF5 inside a traced HDF5 call,
//! recorded as its child, an MPI-IO one with its own POSIX children; PnetCDF's calls too) and
//! `IN_NETCDF` (the same below a traced NetCDF call, and HDF5 calls too, each with its own
//! children) are traced; in `BUSY` the hook goes straight to the real function. The tracer's own
//! work (recording, writing the trace, the MPI runtime inside `MPI_Init`) runs in `BUSY`, which
//! is what keeps it from tracing itself or recursing.
//!
//! The flag is a `const` thread-local of a `Cell<u8>`: no destructor and no lazy initialiser,
//! so it lives in static TLS and is usable from the first hook call, before any constructor.

use std::cell::Cell;

/// The application is running: trace.
pub const IDLE: u8 = 0;
/// The tracer or an MPI call is running: pass through.
pub const BUSY: u8 = 1;
/// A traced MPI-IO call is running: POSIX calls become its children.
pub const IN_MPIIO: u8 = 2;
/// A traced library call (HDF5, PnetCDF: a container layer) is running: MPI, MPI-IO and
/// POSIX calls become its children.
pub const IN_HDF5: u8 = 3;
/// A traced NetCDF call is running: HDF5 calls (with the HDF5 layer on), MPI, MPI-IO and POSIX
/// calls become its children.
pub const IN_NETCDF: u8 = 4;

thread_local! {
    static MODE: Cell<u8> = const { Cell::new(IDLE) };
}

/// This thread's mode.
#[inline]
pub fn mode() -> u8 {
    MODE.with(Cell::get)
}

/// Sets this thread's mode for good (threads the MPI runtime starts never trace).
pub fn set_forever(m: u8) {
    MODE.with(|c| c.set(m));
}

/// Sets the mode until dropped, then restores the previous one.
pub struct Enter {
    prev: u8,
}

impl Enter {
    /// Enters mode `m`.
    #[inline]
    pub fn new(m: u8) -> Enter {
        Enter {
            prev: MODE.with(|c| c.replace(m)),
        }
    }

    /// Switches mode without restoring yet.
    #[inline]
    pub fn switch(&self, m: u8) {
        MODE.with(|c| c.set(m));
    }
}

impl Drop for Enter {
    #[inline]
    fn drop(&mut self) {
        MODE.with(|c| c.set(self.prev));
    }
}
