//! The accountant's figures across restarts: `<state>/accountant.json`,
//! what `condor_userprio` shows (each submitter's priority, factor and
//! accumulated usage), written after a negotiation cycle that matched,
//! after a `userprio` request, and at shutdown; read at start (a crash
//! loses the usage charged since the last write). Matches are not kept: no claim outlives the
//! pool. Written to a temporary file and renamed, so a crash leaves the
//! old file or the new one, never half of one.

use std::path::Path;

use negotiator::accountant::{AccountantState, CustomerRecord};
use serde_json::{json, Value};

pub const FILE: &str = "accountant.json";

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;

pub fn save(dir: &Path, state: &AccountantState) -> Result<(), String> {
    let customers: Vec<Value> = state
        .customers
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "priority": c.priority,
                "priority_factor": c.priority_factor,
                "accumulated_usage": c.accumulated_usage,
                "weighted_accumulated_usage": c.weighted_accumulated_usage,
                "begin_usage_time": c.begin_usage_time,
                "last_usage_time": c.last_usage_time,
            })
        })
        .collect();
    let text = json!({ "last_update": state.last_update, "customers": customers }).to_string();
    let path = dir.join(FILE);
    let tmp = dir.join(format!("{FILE}.new"));
    // Private to the pool (0600), like the job queue.
    let _ = std::fs::remove_file(&tmp);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            format!(
                "{}: cannot write the accountant's figures: {e}",
                path.display()
            )
        })
}

/// The figures a previous pool saved; none when there is no file.
pub fn load(dir: &Path) -> Result<Option<AccountantState>, String> {
    let path = dir.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let bad = |what: &str| format!("{}: not the accountant's figures: {what}", path.display());
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let num = |c: &Value, k: &str| c.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |c: &Value, k: &str| c.get(k).and_then(Value::as_i64).unwrap_or(0);
    let mut customers = Vec::new();
    for c in v
        .get("customers")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no customers list"))?
    {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a customer without a name"))?;
        customers.push(CustomerRecord {
            name: name.to_string(),
            priority: num(c, "priority"),
            priority_factor: c.get("priority_factor").and_then(Value::as_f64),
            resources_used: 0,
            weighted_resources_used: 0.0,
            hier_weighted_resources_used: 0.0,
            uncharged_time: 0.0,
            weighted_uncharged_time: 0.0,
            accumulated_usage: num(c, "accumulated_usage"),
            weighted_accumulated_usage: num(c, "weighted_accumulated_usage"),
            begin_usage_time: int(c, "begin_usage_time"),
            last_usage_time: int(c, "last_usage_time"),
        });
    }
    Ok(Some(AccountantState {
        last_update: int(&v, "last_update"),
        customers,
        matches: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_survive_a_save_and_a_load_and_matches_do_not() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), None);
        let mut acc =
            negotiator::accountant::Accountant::from_config(&config::Config::empty("NEGOTIATOR"))
                .unwrap();
        acc.add_match("alice@here", "slot1@here", 1.0, 1000);
        acc.set_factor("alice@here", 10.0);
        acc.update_priorities(5000);
        save(dir.path(), &acc.state()).unwrap();
        let back = load(dir.path()).unwrap().unwrap();
        assert!(back.matches.is_empty());
        let alice = back
            .customers
            .iter()
            .find(|c| c.name == "alice@here")
            .unwrap();
        let before = acc.record("alice@here").unwrap();
        assert_eq!(alice.priority, before.priority);
        assert_eq!(alice.priority_factor, Some(10.0));
        assert_eq!(alice.accumulated_usage, before.accumulated_usage);
        assert_eq!(alice.resources_used, 0);
        assert_eq!(back.last_update, 5000);
        std::fs::write(dir.path().join(FILE), "{").unwrap();
        assert!(load(dir.path())
            .unwrap_err()
            .contains("not the accountant's figures"));
    }
}
