//! # tidy — the project's rules, checked as tests
//!
//! `cargo test -p tidy` fails when a pure crate (see ARCHITECTURE.md) reads
//! the clock, the environment, files or the network, spawns a process, uses
//! an unseeded random number generator, or depends on an I/O crate. It has no
//! code of its own; the checks are in `tests/tidy.rs`.
