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
//! - [`stats`]: per-layer and per-rank totals.
//! - [`stack`]: inclusive and exclusive time per layer and op, and per call site over the layers below.
//! - [`show`]: readable text and JSON views for the CLI.
//! - [`chrome`]: Chrome/Perfetto `traceEvents` export.
//! - [`synth`]: synthetic traces for tests, benchmarks and the demo.
//!
//! The invariant everything here keeps: expanding a trace for rank `r` gives back exactly
//! rank `r`'s calls with every recorded parameter; only timing is summarised, and parameters
//! the user allowed to be approximate ([`approx`]) when their exact form is over budget.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod approx;
pub mod atomic;
pub mod chrome;
pub mod comms;
pub mod compress;
pub mod draw;
pub mod error;
pub mod format;
pub mod job;
pub mod layout;
pub mod merge;
pub mod mpi;
pub mod netcdf;
pub mod op;
pub mod path;
pub mod prefix;
pub mod ranks;
pub mod show;
pub mod stack;
pub mod stats;
pub mod synth;
pub mod timeline;
pub mod timing;
pub mod trace;
pub mod value;

pub use compress::Compressor;
pub use error::RsdError;
pub use format::{FORMAT_VERSION, HDF5_NOTE, Header, MpiConfig, TraceFile};
pub use merge::{merge, merge_tree};
pub use op::{Handle, Layer, Op, Param};
pub use ranks::RankSet;
pub use trace::{FlatEvent, RawEvent, Trace};
pub use value::{Elastic, RankFn, Val};
