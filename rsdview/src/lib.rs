//! Views of an iotrex trace, apart from the model (`rsd`) so the preloaded tracer, which links
//! the model, compiles none of them.
//!
//! - [`show`]: readable text and JSON views for the CLI.
//! - [`stats`]: per-layer and per-rank totals.
//! - [`stack`]: inclusive and exclusive time per layer and op, and per call site over the layers below.
//! - [`chrome`]: Chrome/Perfetto `traceEvents` export.
//! - [`timeline`]: a rank's timeline rebuilt from timing statistics (Chrome, Parquet, OTF2).
//! - [`synth`]: synthetic traces for tests, benchmarks and the demo.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chrome;
pub mod show;
pub mod stack;
pub mod stats;
pub mod synth;
pub mod timeline;
