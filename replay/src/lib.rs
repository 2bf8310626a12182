//! Replays a trace with real I/O, under MPI or with threads in one process.
//!
//! Not built yet: see issue "Replay". Placeholder crate.
