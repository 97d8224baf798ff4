//! # cedar — HTCondor's wire protocol
//!
//! What HTCondor's daemons and clients (the `htcondor` Python bindings, the
//! `condor_*` tools) put on a TCP connection, so that ferrocondor's daemons
//! and tools talk to them, and to each other, unchanged:
//!
//! - [`frame`]: packets (a 5-byte header, the payload) and messages;
//! - [`codec`]: integers, doubles, strings inside a message;
//! - [`ad`]: ClassAds on the wire (old syntax, private attributes);
//! - [`sinful`]: daemon addresses, `<ip:port?params>`;
//! - [`commands`]: HTCondor's command numbers;
//! - [`sock`]: the I/O edge, a blocking connection that sends and receives
//!   whole messages with deadlines;
//! - [`token`]: IDTOKENS, the pool's signed tokens and the TOKEN method;
//! - [`server`] and [`client`]: the two sides of the security handshake;
//! - [`capability`]: sessions both sides register without a handshake
//!   (a claim's, a schedd's for the negotiator).
//!
//! Everything but [`sock`] is pure: bytes and values in, bytes and values
//! out. The protocol is learned from HTCondor's sources and checked against
//! its real client (`htcondor==25.14.1`); the code is ours.
//!
//! **Architecture Invariant:** nothing a peer sends can make this crate
//! panic, allocate without a bound, or wait without a deadline: every count
//! and length is checked against a limit before it is used, and every read
//! has a timeout.
//!
//! Start at [`sock::Sock`] and [`codec::Encoder`].

pub mod ad;
pub mod auth;
pub mod authz;
pub mod capability;
pub mod client;
pub mod codec;
pub mod commands;
pub mod crypto;
pub mod frame;
pub mod policy;
pub mod qmgmt;
pub mod server;
pub mod sinful;
pub mod sock;
pub mod token;

pub use ad::{get_ad, get_ad_no_types, put_ad, PutOptions};

/// The version ferrocondor's daemons and tools announce (`CondorVersion`,
/// `RemoteVersion`): the protocol they speak is HTCondor 25.14.1's, and
/// peers decide what to send by it.
pub const CONDOR_VERSION: &str = "$CondorVersion: 25.14.1 2026-09-24 BuildID: ferrocondor-0.1.0 $";

/// `CondorPlatform`, as HTCondor's daemons announce it.
pub const CONDOR_PLATFORM: &str = "$CondorPlatform: x86_64_Linux $";
pub use codec::{DecodeError, Decoder, Encoder};
pub use sinful::Sinful;
pub use sock::{Sock, SockError};
