//! # config — HTCondor's configuration language
//!
//! Every policy an admin writes is in this language: macros expanded when
//! a value is asked for, `PREEMPT = ($(PREEMPT)) && ...` building on the
//! definition before, `if`/`else`, includes, the local configuration
//! directory, `use POLICY : Desktop` templates, `STARTD.NAME` prefixes, and
//! HTCondor's built-in defaults. This crate reads it exactly as HTCondor
//! 25 does (the oracle vectors under `oracle/vectors/config/` check it),
//! and remembers where every value came from.
//!
//! **Architecture invariant:** this crate is pure. Files, the environment
//! and the host's readings come in through the [`Files`] and [`Host`]
//! traits; it never touches the disk, the clock or a process itself.
//!
//! Start reading at [`load`] (what is read, in which order), then
//! [`Config::get`] (lookups and expansion, in `config.rs` and `expand.rs`).
//! The daemons read parameters through the typed accessors (`typed.rs`)
//! and the table of every parameter ferrocondor reads ([`params`]).

mod config;
mod error;
mod expand;
pub mod lines;
mod load;
pub mod macros;
pub mod params;
mod source;
mod syntax;
pub mod templates;
mod typed;

pub use config::{Config, Definition, Found, LookupError, Origin};
pub use error::{ConfigError, ErrorKind, Warning};
pub use expand::ExpandError;
pub use load::{load, reconfigure, LoadOptions, Root, COMPATIBLE_VERSION, DEFAULT_LOCATIONS};
pub use source::{FileError, Files, FixedHost, Host, MemFiles};
pub use typed::{parse_bool, split_list, ParamError};
