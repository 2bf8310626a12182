//! The iotrex trace model and everything that touches it without MPI.
//!
//! - [`op`]: the traced operations and their parameters.
//! - [`mpi`]: how MPI values (peers, tags, colors, communicators) are encoded.
//! - [`approx`]: declared approximation: summaries of parameters over a value budget.
//! - [`value`]: elastic values over loop iterations ([`Val`]) and ranks ([`Elastic`], [`RankFn`]).
//! - [`prefix`]: offsets that are prefix sums of the ranks' sizes (shared-file dumps).
//! - [`ranks`]: PRSD rank sets.
//! - [`timing`]: mergeable timing statistics.
//! - [`path`]: path templates with integer fields.
//! - [`trace`]: events, loops, the trace, and expansion of one rank.
//! - [`compress`]: the online per-rank compressor.
//! - [`merge`]: merging traces of disjoint rank sets (Myers alignment, radix tree).
//! - [`format`]: the `.iotrex` file format, the only code that knows its bytes.
//! - [`notation`]: the one text of values, timing, events and nodes.
//! - [`notes`]: header notes said of ranks, folded and said again at another scale.
//! - [`provenance`]: how an extrapolated trace was made, as the header says it.
//! - [`nodes`]: the nodes a run ran on and which rank ran where, as the header says it.
//! - [`runvalue`]: numbers that belong to the run (a job id, a pid), filled in afresh.
//! - [`exclude`]: the system's and the interpreter's files, which the tracer leaves out.
//! - [`draw`]: exact values drawn from summaries, for consumers that must issue calls.
//!
//! The views of a trace (`show`, `stats`, `stack`, the Chrome export) and the synthetic traces
//! are in the `rsd_view` crate: the preloaded tracer links this one and needs none of them.
//!
//! The invariant everything here keeps: expanding a trace for rank `r` gives back exactly
//! rank `r`'s calls with every recorded parameter; only timing is summarised, and parameters
//! the user allowed to be approximate ([`approx`]) when their exact form is over budget.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod approx;
pub mod atomic;
pub mod classes;
pub mod comms;
pub mod compress;
pub mod draw;
pub mod error;
pub mod exclude;
pub mod format;
pub mod job;
pub mod layout;
pub mod merge;
pub mod mpi;
pub mod netcdf;
pub mod nodes;
pub mod notation;
pub mod notes;
pub mod op;
pub mod path;
pub mod prefix;
pub mod process;
pub mod provenance;
pub mod ranks;
pub mod runvalue;
pub mod sensitivity;
pub mod timing;
pub mod trace;
pub mod value;

// The unit tests of the format build their sample with the synthetic traces of `rsd_view`,
// compiled here from the same source (a dev-dependency on `rsd_view` would give them a second
// copy of this crate's types); `rsd::` in that source then names this crate.
#[cfg(test)]
extern crate self as rsd;
#[cfg(test)]
#[path = "../../rsdview/src/synth.rs"]
#[allow(dead_code)] // the format tests need only `spmd`
mod synth;

pub use compress::Compressor;
pub use error::RsdError;
pub use format::{FORMAT_VERSION, HDF5_NOTE, Header, MpiConfig, TraceFile};
pub use merge::{merge, merge_tree};
pub use nodes::{NodeLayout, Placement};
pub use op::{Handle, Layer, Op, Param};
pub use provenance::Provenance;
pub use ranks::RankSet;
pub use trace::{FlatEvent, LoggedEvent, RawEvent, Trace};
pub use value::{Elastic, RankFn, Val};
