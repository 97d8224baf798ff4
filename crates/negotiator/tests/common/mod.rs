//! What the negotiator's tests share: the clock, a configuration, a
//! policy and ads from text, and the startd's figures that move with the
//! clock as far as the tests use them.

#![allow(dead_code)]

use classad::ClassAd;
use negotiator::cycle::Policy;

pub const NOW: i64 = 1_700_000_000;

pub fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("NEGOTIATOR", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

pub fn policy(text: &str) -> Policy {
    Policy::from_config(&config(text)).unwrap()
}

pub fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The startd's figures that move with the clock, as far as the tests use
/// them (the negotiator does not know the startd's list).
pub fn changes_with_time(name: &str) -> bool {
    ["KeyboardIdle", "TotalJobRunTime"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
}
