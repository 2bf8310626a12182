//! The trace format's integration tests, one binary: golden files, round trips, fuzz regressions,
//! size.

mod drains;
mod format_fuzz;
mod format_v2;
mod fuzz_regress;
mod golden;
mod roundtrip;
mod size;
mod waits_in_loops;
