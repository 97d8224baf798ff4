//! # host — what the machine says (issue 7; being written)
//!
//! I/O: reads Linux's `/proc`, `/sys` and `/dev` and runs `nvidia-smi`, and
//! turns what it finds into the startd engine's inputs
//! (`startd::resources::HostReadings`, `startd::Readings`). No policy here:
//! the `startd` crate decides what the readings mean.
