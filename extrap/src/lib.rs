//! Aligns traces taken at several rank counts and synthesizes the trace at another rank count.
//!
//! Not built yet: see issue "Extrapolation". Placeholder crate.
