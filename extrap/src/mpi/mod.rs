//! The MPI library's behaviour, as the extrapolation models it: the collective buffering of
//! its MPI-IO (Open MPI's OMPIO, ROMIO: `collio`'s models and configuration), which decides
//! the POSIX calls nested in collective calls ([`collective`], [`derive`]), and the process
//! grids `MPI_Dims_create` factorises ([`grid`]), and the node communicators of
//! `MPI_Comm_split_type` ([`nodes`]).

pub(crate) mod collective;
pub(crate) mod derive;
pub(crate) mod grid;
pub(crate) mod nodes;
