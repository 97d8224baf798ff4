//! # starter — runs one job (issue 7; being written)
//!
//! I/O: makes the job's sandbox, starts it as a process group of its own,
//! suspends, continues and kills it, measures it, and reports its exit into
//! the job ad. What to do and when is the `startd` engine's decision; this
//! crate only carries it out.
