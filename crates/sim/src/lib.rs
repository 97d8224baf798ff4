//! # sim — the pool simulator (being written; issue 6)
