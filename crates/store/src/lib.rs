//! # store — the job queue on disk (SQLite), crash-safe (being written; issue 5)
