//! Exact models for extrapolation (constant, linear, inverse, rank-modulo, ...), timing fits and the plugin ABI.
//!
//! Not built yet: see issue "Extrapolation". This crate is a placeholder so the workspace layout of
//! ARCHITECTURE.md exists from the start.
