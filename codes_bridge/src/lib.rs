//! Turns a trace into CODES workloads (recorder text or iolang).
//!
//! Not built yet: see issue "CODES bridge". Placeholder crate.
