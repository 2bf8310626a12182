//! What a replay needs from its MPI side: the threads runtime ([`crate::threads`]) or real MPI
//! (`replay_mpi`).

use crate::pattern::Pattern;
use crate::root::Mapped;
use crate::types::Types;
use filetable::{Effect, FileEnv, FileTable};
use rsd::trace::FlatEvent;

/// The MPI side of a replay: MPI-IO calls and MPI calls. As a [`FileEnv`], it tells the
/// file table what the ranks share (the real size of a file, shared file pointers).
pub trait Runtime: FileEnv {
    /// Issues an application-level MPI-IO call; `path` is the file's name resolved in the root
    /// for calls that name one (open, delete). Returns the file bytes moved, or an error message.
    fn mpiio(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String>;

    /// Issues an MPI call for real (`--comm real`), or, with `bookkeeping_only`, only what
    /// later calls depend on (communicator creation, which MPI-IO opens need).
    fn mpi(&mut self, e: &FlatEvent, types: &Types, bookkeeping_only: bool) -> Result<(), String>;

    /// Whether an unrecoverable error elsewhere means this rank should stop.
    fn aborted(&self) -> bool {
        false
    }

    /// Whether this collective MPI-IO call is emulated without the library's exchanges (the
    /// threads runtime): under `--comm delay` it then lasts at least its recorded time beyond
    /// its nested I/O.
    fn emulates_collective(&self, _e: &FlatEvent) -> bool {
        false
    }

    /// Whether this MPI-IO call is replayed through the POSIX calls the MPI library made for
    /// it when traced (its nested children), with [`Runtime::mpiio_sync`] for the call itself.
    /// The threads runtime does so for collective data calls: it has no collective buffering
    /// of its own, and the children are what the file system saw (an aggregator's large
    /// writes, nothing from the other ranks).
    fn via_children(&self, _e: &FlatEvent) -> bool {
        false
    }

    /// The call's synchronisation and bookkeeping (file pointers) without its data transfer,
    /// for calls [`Runtime::via_children`] accepts. Returns the bytes the call moved when traced.
    fn mpiio_sync(
        &mut self,
        e: &FlatEvent,
        path: Option<&Mapped>,
        files: &FileTable,
        fx: &Effect,
        data: &mut Pattern,
    ) -> Result<u64, String> {
        self.mpiio(e, path, files, fx, data)
    }

    /// Tells ranks `to` that this rank has ended its first `count` I/O calls (the measured
    /// dependencies, [`crate::deps`]). A runtime that cannot carry the signal says so.
    fn io_ended(&mut self, _count: u32, _to: &[u32]) -> Result<(), String> {
        Err("this runtime cannot honour I/O dependencies".into())
    }

    /// Waits until rank `from` has said it ended its first `count` I/O calls. Returns
    /// whether it had to wait (the calls had not all ended yet when asked).
    fn wait_io(&mut self, _from: u32, _count: u32) -> Result<bool, String> {
        Err("this runtime cannot honour I/O dependencies".into())
    }
}
