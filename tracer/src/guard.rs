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
//! The flag lives in [`Thread`], this thread's one block of tracer state: the mode and the
//! call-site cache ([`crate::callsite::Sites`]). One block, because the tracer is a `cdylib`,
//! whose thread-locals are reached through `__tls_get_addr` (general-dynamic TLS model, about
//! 11 instructions each): a hook that looked up the mode and then the call-site cache paid
//! it twice. `const`, without destructor or lazy initialiser: it lives in static TLS and is
//! usable from the first hook call, before any constructor, and in any thread.

use crate::callsite::Sites;
use std::cell::{Cell, UnsafeCell};

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

/// This thread's tracer state.
pub struct Thread {
    mode: Cell<u8>,
    /// The call-site cache, used only by [`crate::callsite::signature_in`], which runs in mode
    /// `BUSY` and is therefore never re-entered on this thread (a hook reached from inside it,
    /// or from a signal handler interrupting it, sees `BUSY` and passes straight through).
    pub(crate) sites: UnsafeCell<Sites>,
}

thread_local! {
    static THREAD: Thread = const {
        Thread {
            mode: Cell::new(IDLE),
            sites: UnsafeCell::new(Sites::EMPTY),
        }
    };
}

/// Runs `f` with this thread's block: a hook takes it once and passes it on, so the hot path
/// makes one thread-local access.
#[inline(always)]
pub fn with_thread<R>(f: impl FnOnce(&Thread) -> R) -> R {
    f(this_thread())
}

/// This thread's block. `LocalKey::with` around a whole hook was not inlined (a call and a
/// frame more per traced call); only the address is taken inside it. The reference stays
/// valid for the thread's life (static TLS, no destructor: the block is never torn down
/// while the thread runs) and cannot leave the thread (`&Thread` is not `Send`: `Cell`).
#[inline(always)]
fn this_thread() -> &'static Thread {
    // SAFETY: see above: the block lives as long as the thread, the only one that can use it.
    THREAD.with(|t| unsafe { &*(t as *const Thread) })
}

impl Thread {
    /// This thread's mode.
    #[inline(always)]
    pub fn mode(&self) -> u8 {
        self.mode.get()
    }

    /// Enters mode `m` until the returned guard is dropped.
    #[inline(always)]
    pub fn enter(&self, m: u8) -> Enter<'_> {
        Enter {
            t: self,
            prev: self.mode.replace(m),
        }
    }
}

/// This thread's mode.
#[inline]
pub fn mode() -> u8 {
    THREAD.with(Thread::mode)
}

/// Sets this thread's mode for good (threads the MPI runtime starts never trace).
pub fn set_forever(m: u8) {
    THREAD.with(|t| t.mode.set(m));
}

/// Sets the mode until dropped, then restores the previous one: on this thread's block
/// ([`Enter::new`]), or on a block a hook already holds ([`Thread::enter`]).
pub struct Enter<'a> {
    t: &'a Thread,
    prev: u8,
}

impl Enter<'static> {
    /// Enters mode `m`.
    #[inline]
    pub fn new(m: u8) -> Enter<'static> {
        this_thread().enter(m)
    }
}

impl Enter<'_> {
    /// Switches mode without restoring yet.
    #[inline]
    pub fn switch(&self, m: u8) {
        self.t.mode.set(m);
    }
}

impl Drop for Enter<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.t.mode.set(self.prev);
    }
}
