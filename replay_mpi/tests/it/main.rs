//! The MPI replayer's integration tests, one binary: each module replays real traces with real
//! `mpirun`.

mod common;

mod compute;
mod lammps;
mod local_queries;
mod matching;
mod mpi_calls;
mod mpi_more;
mod one_error;
mod pool;
mod reduce_scatter;
mod replay;
mod stall;
mod start_up;
mod views_agree;
