//! # wire — the pool's API: HTTP+JSON over a Unix-domain socket
//!
//! The messages the tools and the daemons exchange ([`api`]), and a small
//! blocking client ([`Client`]) that the command-line tools use to send one
//! request and read its answer. The server side is the `daemons` crate's.
//!
//! Job ads travel as ClassAd text in new syntax (`[ A = 1; ... ]`), which
//! HTCondor's printer and parser round-trip exactly, so this crate needs no
//! ClassAd semantics of its own: it carries text, and the ends parse it.
//!
//! Why a blocking client: every tool makes one request and exits, so an
//! async runtime would only add start-up time and dependencies. The client
//! speaks the small part of HTTP/1.1 it needs (a request with a
//! `Content-Length`, `Connection: close`, a response with a length or
//! chunked) over `std::os::unix::net::UnixStream`.
//!
//! **Architecture Invariant:** `wire` decides nothing: it moves requests and
//! answers, and turns transport failures into errors a person can act on
//! ("no pool is running at ...: start one with `ferrocondor pool up`").
//!
//! Start at [`Client`] and [`api`].

pub mod api;
mod client;

pub use client::{Client, Error};

/// The socket's name inside a pool's state directory.
pub const SOCKET_NAME: &str = "pool.sock";
