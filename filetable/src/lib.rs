//! The file semantics of a trace, in one place: the datatypes a rank builds ([`types`]) and
//! its open-file table ([`table`]), which resolves every call to the file, the direction and
//! the byte regions it touches, with MPI-IO views, etypes and filetypes applied once.
//!
//! `replay` (`--prep`, the threads runtime, the MPI runtime) and `codes_bridge` read traces
//! through it and keep only their issuing policy.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod darray;
pub mod table;
pub mod types;

pub use table::{Access, Effect, FileEnv, FileId, FileTable, Offline, OpenFile, Resolved, View};
pub use types::{Flat, Types};

/// The calls of `e` that touch files themselves, in order: `e`, or for a library layer's call
/// (a container: HDF5, PnetCDF, NetCDF, which [`FileTable::apply`] gives no effect) the calls
/// it made, containers inside walked into in turn. An HDF5 program's MPI-IO calls are its
/// `H5Dwrite`s' children: readers that resolve the application's calls to files take these.
pub fn file_calls(e: &rsd::FlatEvent) -> Vec<&rsd::FlatEvent> {
    fn walk<'a>(e: &'a rsd::FlatEvent, out: &mut Vec<&'a rsd::FlatEvent>) {
        if e.op.layer().is_container() {
            for c in &e.children {
                walk(c, out);
            }
        } else {
            out.push(e);
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}
