//! Extrapolation's integration tests, one binary.

mod diff;
mod extrapolate;
mod plausible;
mod provenance;
