//! The HDF5 oracle: where parallel HDF5 puts its metadata and chunks at a scale nobody ran.
//!
//! Parallel HDF5's file layout at N ranks (where its file-space allocator places B-tree
//! nodes, object headers, chunks and contiguous storage) follows from the sequence of
//! collective HDF5 calls and their dimensions, not from N: every rank makes the same
//! metadata calls, and HDF5 allocates a dataset's storage when it is created or extended,
//! not when it is written. So rank 0's HDF5 calls, with the dimensions of N ranks, replayed
//! on one rank through the real library (MPI-IO driver, `mpirun -np 1`) make the metadata
//! entries and addresses the N-rank run makes: the entries its flush writes (the union over
//! the N ranks of what each wrote of the dealt flush) and every chunk's address.
//!
//! - [`plan_of`]: the calls to replay, from rank 0's events.
//! - [`run`]: runs `iotrex-h5oracle` (this crate's binary, which loads parallel HDF5 at run
//!   time) under `iotrex trace`, and gives its trace, which plan step each of its HDF5 calls
//!   replays, and every dataset's storage.
//!
//! The extrapolator uses it where HDF5's allocator decides addresses no exact model of the
//! inputs reaches (a chunk index that splits: `docs/chunk_btree.md`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod plan;
mod run;

pub use plan::{Plan, PlanError, Step, plan_of, plan_of_trace};
pub use run::{Chunk, Launch, Layout, OracleError, Run, Storage, run};
