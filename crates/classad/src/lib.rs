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
//! **Every evaluation has a bound.** Expressions come from users and are
//! evaluated on behalf of others (query constraints, Requirements, Rank,
//! policies), and one can double its work at each level (`a1 = a0 + a0;
//! a2 = a1 + a1; ...`) or its string (`strcat(s, s)`). So each evaluation
//! ([`ClassAd::eval_attr`], [`ClassAd::eval`], [`eval_expr`],
//! [`try_eval_expr`], each of the evaluations of [`matching`], and an
//! [`Evaluator`] until its budget is reset) has a budget of steps and of bytes
//! built, [`EvalLimits`] in [`Env::limits`] (a million steps and 32 MiB
//! unless the caller picks others with [`Env::with_limits`]; far above what
//! real expressions need). Over it, the evaluation stops within milliseconds
//! and its result is ERROR ([`EvalFailed`] from [`try_eval_expr`]); functions
//! charge what they would build before building it. To bound a whole
//! request, [`eval_expr_metered`] (or [`Evaluator::cost`]) says what one
//! evaluation spent, and [`EvalLimits::less`] what is left for the next:
//!
//! ```
//! use classad::{eval_expr_metered, parse_expr, ClassAd, Env, EvalLimits};
//!
//! let ads = vec![ClassAd::parse("[ Memory = 2048 ]").unwrap(); 3];
//! let constraint = parse_expr("Memory > 1024").unwrap();
//! let per_ad = Env::default();
//! let mut left = EvalLimits { max_steps: 1_000, max_bytes: 1 << 20 };
//! let mut matched = 0;
//! for ad in &ads {
//!     let env = per_ad.clone().with_limits(per_ad.limits.min(left));
//!     let (v, cost) = eval_expr_metered(&constraint, Some(ad), None, &env);
//!     left = left.less(cost);
//!     if v.is_true() {
//!         matched += 1;
//!     }
//! }
//! assert_eq!(matched, 3);
//! assert!(left.max_steps < 1_000);
//! ```
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
pub mod reads;
pub mod same;
pub mod time;
pub mod unparse;
pub mod value;
pub mod vectors;

pub use ad::ClassAd;
pub use error::ParseError;
pub use eval::{
    eval_expr, eval_expr_metered, try_eval_expr, Env, EvalCost, EvalFailed, EvalLimits, Evaluator,
    Scope, UserHomeLookup,
};
pub use expr::Expr;
pub use name::AttrName;
pub use parser::{parse_ad, parse_expr};
pub use value::{AbsTime, Value, ValueType};
