//! HTCondor's answers (shared/oracle/vectors) reproduced case by case.
//!
//! Every case runs; a failure lists each case that differs and how.
//! `FERROCONDOR_VECTORS` may point at another vectors directory.
//! `tests/data/` holds this crate's own vectors, made by the scripts beside
//! them with the same oracle (`tests/data/gen_*.py`).

use std::path::PathBuf;

use classad::vectors::{diff, run_case};
use classad::Env;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("FERROCONDOR_VECTORS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/vectors"),
    }
}

/// A fixed "now" inside the window the vectors are written for (2001..2100),
/// and a password database that knows the one user the vectors ask about.
fn env() -> Env {
    let mut env = Env::at(1_800_000_000);
    env.user_home = Some(std::sync::Arc::new(|user: &str| {
        (user == "nobody").then(|| "/nonexistent".to_string())
    }));
    env
}

fn check(mode: &str, file: &str) {
    check_path(mode, &vectors_dir().join(file));
}

fn check_path(mode: &str, path: &std::path::Path) {
    let file = path.display();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!("cannot read {file}: {e} (is ../shared beside the repository?)")
    });
    let env = env();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).expect("vector line is JSON");
        count += 1;
        let ours = run_case(mode, &case, &env);
        let d = diff(mode, &case, &ours);
        if !d.is_empty() {
            let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("?");
            let input = case
                .get("expr")
                .or_else(|| case.get("ad_text"))
                .cloned()
                .unwrap_or_default();
            failures.push(format!(
                "{id}  input {}\n    {}",
                input.to_string().chars().take(200).collect::<String>(),
                d.join("\n    ")
            ));
        }
    }
    assert!(count > 0, "{file} has no cases");
    if !failures.is_empty() {
        panic!(
            "{} of {count} {mode} cases differ from HTCondor:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

#[test]
fn classad_expr_vectors() {
    check("expr", "classad_expr.jsonl");
}

#[test]
fn classad_ads_vectors() {
    check("ad", "classad_ads.jsonl");
}

#[test]
fn classad_match_vectors() {
    check("match", "classad_match.jsonl");
}

/// `=?=`, `=!=`, `is`, `isnt` over every kind of value (lists and nested ads
/// literal, built by functions, selected, referred to), HTCondor's answers.
#[test]
fn meta_comparison_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/meta_compare.jsonl");
    check_path("expr", &path);
}

/// `userHome()` with every kind of argument, HTCondor's answers (its
/// password lookup found `nobody` at `/nonexistent`, as [`env`]'s does).
#[test]
fn user_home_vectors() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/user_home.jsonl");
    check_path("expr", &path);
}
