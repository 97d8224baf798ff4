//! The parameter table's defaults against HTCondor 25.14.1: for an empty
//! configuration, every parameter ferrocondor reads must expand to what
//! HTCondor answers (`tests/data/defaults.json`, produced by the oracle in
//! `oracle/config_oracle.py`; host-dependent values are listed there and
//! skipped, because they depend on the machine the oracle ran on).

use config::{load, FixedHost, LoadOptions, MemFiles, Root};
use serde_json::Value as Json;

fn data() -> Json {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/defaults.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn empty(subsystem: &str) -> config::Config {
    load(
        &LoadOptions::new(subsystem, Root::File("condor_config".into())),
        &MemFiles::new().with("condor_config", "# nothing\n"),
        &FixedHost::empty(),
    )
    .unwrap()
}

#[test]
fn every_default_expands_as_in_htcondor() {
    let d = data();
    let host_dependent: Vec<&str> = d["host_dependent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let config = empty("TOOL");
    let mut failures = Vec::new();
    let values = d["values"].as_object().unwrap();
    for (name, want) in values {
        if host_dependent.contains(&name.as_str()) {
            continue;
        }
        let got = config.get(name);
        let agrees = match (&got, want) {
            (Ok(Some(v)), Json::String(w)) => v == w,
            (Ok(None), Json::Null) => true,
            _ => false,
        };
        if !agrees {
            failures.push(format!("{name}: HTCondor {want}, we {got:?}"));
        }
    }
    for (name, want) in d["typed"].as_object().unwrap() {
        if host_dependent.contains(&name.as_str()) {
            continue;
        }
        let ours = match want {
            Json::Bool(_) => config.boolean(name).ok().flatten().map(Json::from),
            Json::Number(n) if n.is_i64() => config.integer(name).ok().flatten().map(Json::from),
            Json::Number(_) => config.real(name).ok().flatten().map(Json::from),
            _ => None,
        };
        if ours.as_ref() != Some(want) {
            failures.push(format!("{name} typed: HTCondor {want}, we {ours:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} defaults differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every table entry was asked of HTCondor.
    for p in config::params::PARAMS {
        assert!(
            values.contains_key(p.name),
            "{} is not in defaults.json: regenerate it",
            p.name
        );
    }
}

#[test]
fn subsystem_defaults_apply_to_their_subsystem_only() {
    let d = data();
    for (key, want) in d["subsystem_values"].as_object().unwrap() {
        let (sub, name) = key.split_once(':').unwrap();
        let got = empty(sub).get(name).unwrap();
        assert_eq!(got.as_deref(), want.as_str(), "{key}");
    }
    assert_eq!(
        empty("STARTD").get("IsStartd").unwrap().as_deref(),
        Some("true")
    );
    assert_eq!(
        empty("SCHEDD").get("IsStartd").unwrap().as_deref(),
        Some("false")
    );
}
