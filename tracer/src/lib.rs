//! The LD_PRELOAD tracer (`libiotrex_tracer.so`).
//!
//! Not built yet: see issue "Tracer". Placeholder crate.
