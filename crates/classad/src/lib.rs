//! # classad — the ClassAd language
//!
//! ClassAds are how every part of ferrocondor describes things: machines, jobs,
//! and every policy expression. This crate is the language, with the semantics
//! of HTCondor (the system ferrocondor is compatible with): values, the
//! lexer and parser (new and old syntax), the evaluator with HTCondor's
//! three-valued logic and match-context scoping, the built-in function
//! library, symmetric matching, HTCondor's printing, and the JSON form of ads.
//!
//! **Architecture invariant:** this crate is pure. It never reads the clock,
//! the file system, the environment or the network, and never spawns anything.
//! Time, the local zone and randomness come in through [`Env`].
//!
//! Start reading at [`parse_expr`], [`ClassAd`], and [`eval::Evaluator`].

pub mod ad;
pub mod error;
pub mod eval;
pub mod expr;
pub mod functions;
pub mod json;
pub mod lexer;
pub mod matching;
pub mod name;
pub mod parser;
pub mod reader;
pub mod time;
pub mod unparse;
pub mod value;
pub mod vectors;

pub use ad::ClassAd;
pub use error::ParseError;
pub use eval::{eval_expr, try_eval_expr, Env, EvalFailed, Evaluator, Scope};
pub use expr::Expr;
pub use name::AttrName;
pub use parser::{parse_ad, parse_expr};
pub use value::{AbsTime, Value, ValueType};
