//! HTCondor's own answers for configuration cases
//! (`oracle/vectors/config/`): every case, every key, offline.
//!
//! A case directory holds `condor_config` (which may include other files of
//! the case), `keys.txt` (names to ask; `SUBSYS:NAME` asks as that daemon),
//! optionally `env.json`, and HTCondor 25.14.1's answers in
//! `expected.json` (and `typed.json` for parameters HTCondor converts to
//! numbers or booleans). Set FERROCONDOR_VECTORS to read another copy.
//! `tests/data/cases/` holds more cases of the same form that we wrote and
//! HTCondor answered (see its README).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use config::{load, Config, FileError, Files, FixedHost, LoadOptions, Root};
use serde_json::Value as Json;

fn vectors_dir() -> PathBuf {
    match std::env::var("FERROCONDOR_VECTORS") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/oracle/vectors"),
    }
    .join("config")
}

/// The files of one case directory, read from disk.
struct CaseFiles(PathBuf);

impl Files for CaseFiles {
    fn read(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_to_string(self.0.join(path)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            _ => FileError::Other(e.to_string()),
        })
    }
    fn list_dir(&self, path: &str) -> Result<Vec<String>, FileError> {
        let entries = std::fs::read_dir(self.0.join(path)).map_err(|_| FileError::NotFound)?;
        Ok(entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }
    fn run(&self, command: &str) -> Result<String, String> {
        Err(format!("no commands in vector cases: {command}"))
    }
}

fn host(case: &Path) -> FixedHost {
    let mut host = FixedHost::empty();
    if let Ok(text) = std::fs::read_to_string(case.join("env.json")) {
        let env: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
        for (k, v) in env {
            host = host.with_env(&k, &v);
        }
    }
    host
}

fn keys(case: &Path) -> Vec<String> {
    std::fs::read_to_string(case.join("keys.txt"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

fn load_case(case: &Path, subsystem: &str) -> Result<Config, config::ConfigError> {
    load(
        &LoadOptions::new(subsystem, Root::File("condor_config".into())),
        &CaseFiles(case.to_path_buf()),
        &host(case),
    )
}

/// The line HTCondor's message blames ("... Line 3 while reading ...").
fn htcondor_line(message: &str) -> Option<u32> {
    let at = message.rfind("Line ")?;
    message[at + 5..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Checks one case; returns the differences.
fn check_case(case: &Path) -> Vec<String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let expected: serde_json::Map<String, Json> =
        serde_json::from_str(&std::fs::read_to_string(case.join("expected.json")).unwrap())
            .unwrap();
    let typed: serde_json::Map<String, Json> = std::fs::read_to_string(case.join("typed.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_default();
    let mut failures = Vec::new();
    let keys = keys(case);

    if let Some(Json::String(error)) = expected.get("!error") {
        if error.starts_with("timeout") {
            // HTCondor expands a macro loop forever; we must say which
            // macros loop, and still answer for the others.
            let config =
                load_case(case, "TOOL").expect("a macro loop is found at lookup, not load");
            let mut looped = false;
            for key in &keys {
                if let Err(e) = config.get(key) {
                    looped = true;
                    let msg = e.to_string();
                    if !msg.contains("refer to each other") {
                        failures.push(format!("{name}: {key}: loop message unclear: {msg}"));
                    }
                }
            }
            if !looped {
                failures.push(format!("{name}: no key reported the macro loop"));
            }
            return failures;
        }
        match load_case(case, "TOOL") {
            Ok(_) => failures.push(format!(
                "{name}: HTCondor refuses this configuration ({error:?}), we accepted it"
            )),
            Err(e) => {
                if let Some(line) = htcondor_line(error) {
                    if e.line != line {
                        failures.push(format!(
                            "{name}: HTCondor blames line {line}, we blame {}: {e}",
                            e.line
                        ));
                    }
                }
            }
        }
        return failures;
    }

    let mut by_subsystem: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for key in keys {
        let (sub, param) = match key.split_once(':') {
            Some((s, p)) => (s.to_string(), p.to_string()),
            None => ("TOOL".to_string(), key.clone()),
        };
        by_subsystem.entry(sub).or_default().push((key, param));
    }
    for (sub, params) in by_subsystem {
        let config = match load_case(case, &sub) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name} ({sub}): load failed: {e}"));
                continue;
            }
        };
        for (key, param) in params {
            let want = expected
                .get(&key)
                .unwrap_or_else(|| panic!("{name}: no answer for {key}"));
            let got = config.get(&param);
            let agrees = match (&got, want) {
                (Ok(Some(v)), Json::String(w)) => v == w,
                (Ok(None) | Err(_), Json::Null) => true,
                _ => false,
            };
            if !agrees {
                failures.push(format!("{name}: {key}: HTCondor {want}, we {got:?}"));
            }
            if let Some(t) = typed.get(&key) {
                let ours = match t {
                    Json::Bool(_) => config.boolean(&param).ok().flatten().map(Json::from),
                    Json::Number(n) if n.is_i64() => {
                        config.integer(&param).ok().flatten().map(Json::from)
                    }
                    Json::Number(_) => config.real(&param).ok().flatten().map(Json::from),
                    _ => None,
                };
                if ours.as_ref() != Some(t) {
                    failures.push(format!(
                        "{name}: {key} as a typed value: HTCondor {t}, we {ours:?}"
                    ));
                }
            }
        }
    }
    failures
}

fn check_all(dir: &Path, at_least: usize) {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= at_least,
        "expected at least {at_least} cases in {}",
        dir.display()
    );
    let failures: Vec<String> = cases.iter().flat_map(|c| check_case(c)).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_configuration_vector_agrees_with_htcondor() {
    check_all(&vectors_dir(), 61);
}

/// Cases of our own (`tests/data/cases/`), in the same form, answered by
/// the same oracle: the corners our implementation had to pin down.
#[test]
fn our_oracle_cases_agree_with_htcondor() {
    check_all(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/cases"),
        24,
    );
}
