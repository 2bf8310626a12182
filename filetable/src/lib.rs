//! The file semantics of a trace, in one place: the datatypes a rank builds ([`types`]) and
//! its open-file table ([`table`]), which resolves every call to the file, the direction and
//! the byte regions it touches, with MPI-IO views, etypes and filetypes applied once.
//!
//! `replay` (`--prep`, the threads runtime, the MPI runtime) and `codes_bridge` read traces
//! through it and keep only their issuing policy.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod table;
pub mod types;

pub use table::{Access, Effect, FileEnv, FileId, FileTable, Offline, OpenFile, Resolved, View};
pub use types::{Flat, Types};
