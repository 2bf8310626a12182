//! The `iotrex` command-line tool (under construction).
fn main() {}
