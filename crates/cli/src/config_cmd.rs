//! `ferrocondor config_val`: configuration values, as HTCondor's
//! `condor_config_val` prints them, plus `--json` for scripts.

use std::io::Write;

use config::{load, Config, Files, Host, LoadOptions, Origin, Root};

use crate::args::ConfigValArgs;
use crate::errors::{Error, Outcome};

pub fn run(
    a: &ConfigValArgs,
    files: &dyn Files,
    host: &dyn Host,
    host_readings: &startd::resources::HostReadings,
    now: i64,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let opts = LoadOptions {
        subsystem: a.subsystem.to_ascii_uppercase(),
        local_name: a.local_name.clone(),
        root: Root::Search,
    };
    let config = load(&opts, files, host).map_err(Error::Config)?;
    for w in config.warnings() {
        writeln!(diag, "{w}")?;
    }
    if a.config {
        for f in config.files() {
            writeln!(out, "{f}")?;
        }
        if a.names.is_empty() && !a.dump {
            return Ok(Outcome::Success);
        }
    }
    if a.dump {
        return dump(a, &config, out);
    }
    if a.names.is_empty() {
        return Err(Error::Usage("name a parameter, or use --dump".into()));
    }
    if a.json {
        return json(a, &config, out, diag);
    }
    if a.evaluate {
        return evaluate(a, &config, host_readings, now, out, diag);
    }
    let mut outcome = Outcome::Success;
    for name in &a.names {
        let value = if a.raw {
            config.raw(name).map(str::to_string)
        } else {
            config.get(name).map_err(Error::Lookup)?
        };
        match value {
            None => {
                writeln!(diag, "Not defined: {name}")?;
                outcome = Outcome::NotDefined;
            }
            Some(v) if a.verbose => verbose(name, &v, &config, out)?,
            Some(v) => writeln!(out, "{v}")?,
        }
    }
    Ok(outcome)
}

/// `-evaluate`: each value as a ClassAd expression, evaluated in the ad of
/// the machine's first slot as the startd would publish it now (the
/// machine laid out by the configuration, nobody at the keyboard).
fn evaluate(
    a: &ConfigValArgs,
    config: &Config,
    host: &startd::resources::HostReadings,
    now: i64,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let hostname = config
        .get("FULL_HOSTNAME")
        .ok()
        .flatten()
        .unwrap_or_else(|| "localhost".into());
    let mut machine = startd::Startd::from_config(config, &hostname, host, now).map_err(|e| {
        Error::Usage(format!(
            "the machine ad cannot be built from this configuration: {e}"
        ))
    })?;
    machine.tick(now, startd::Readings::default());
    if machine.slots().is_empty() {
        return Err(Error::Usage("the configuration lays out no slot".into()));
    }
    let ad = machine.slot_ad(0, now);
    let mut env = classad::Env::at(now);
    // userHome() as HTCondor resolves it: the password database, unless the
    // configuration turns that off.
    if config
        .boolean("CLASSAD_ENABLE_USER_HOME")
        .map_err(|e| Error::Input(format!("configuration error: {e}")))?
        .unwrap_or(true)
    {
        env.user_home = Some(starter::user_home_lookup());
    }
    let mut outcome = Outcome::Success;
    for name in &a.names {
        let Some(text) = config.get(name).map_err(Error::Lookup)? else {
            writeln!(diag, "Not defined: {name}")?;
            outcome = Outcome::NotDefined;
            continue;
        };
        let expr = classad::parse_expr(&text).map_err(|e| Error::parse(format!("<{name}>"), e))?;
        let value = classad::eval_expr(&expr, Some(&ad), None, &env);
        writeln!(out, "{}", classad::unparse::value_to_string(&value))?;
    }
    Ok(outcome)
}

/// `NAME = value`, where it was defined, its text, and what it overrides.
fn verbose(name: &str, value: &str, config: &Config, out: &mut dyn Write) -> Result<(), Error> {
    let found = config.find(name).expect("a defined value was found");
    writeln!(out, "{} = {value}", found.name)?;
    writeln!(out, " # at: {}", found.origin)?;
    writeln!(out, " # raw: {}", found.raw)?;
    let history = config.history(&found.name);
    for earlier in history.iter().rev().skip(1) {
        writeln!(out, " # overrides: {}: {}", earlier.origin, earlier.raw)?;
    }
    if found.origin != Origin::Default {
        if let Some(default) = config::params::default_for(name, config.subsystem()) {
            writeln!(out, " # overrides: {}: {default}", Origin::Default)?;
        }
    }
    Ok(())
}

/// `--json`: one object, `{NAME: value}`, the value a string, `null` when
/// the parameter is not defined, or `{"error": MESSAGE}` when it cannot be
/// expanded (a macro loop). Any such failure makes the command fail (exit 2,
/// every message on stderr) after the object is printed, as a lookup that
/// fails does without `--json`.
fn json(
    a: &ConfigValArgs,
    config: &Config,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let mut map = serde_json::Map::new();
    let mut failed = Vec::new();
    for name in &a.names {
        let value = if a.raw {
            Ok(config.raw(name).map(str::to_string))
        } else {
            config.get(name)
        };
        let value = match value {
            Ok(v) => v.map_or(serde_json::Value::Null, serde_json::Value::String),
            Err(e) => {
                let what = serde_json::json!({ "error": e.to_string() });
                failed.push(e);
                what
            }
        };
        map.insert(name.clone(), value);
    }
    writeln!(out, "{}", serde_json::Value::Object(map))?;
    // The last failure is the command's error (reported by `main`); any
    // before it are reported here, in the order they were asked for.
    let Some(last) = failed.pop() else {
        return Ok(Outcome::Success);
    };
    for e in failed {
        writeln!(diag, "{}", Error::Lookup(e))?;
    }
    Err(Error::Lookup(last))
}

fn dump(a: &ConfigValArgs, config: &Config, out: &mut dyn Write) -> Result<Outcome, Error> {
    let matches = |name: &str| {
        a.names.is_empty()
            || a.names
                .iter()
                .any(|p| name.to_ascii_uppercase().contains(&p.to_ascii_uppercase()))
    };
    let mut entries: Vec<(String, String)> = config
        .defined()
        .into_iter()
        .filter(|d| matches(&d.name))
        .map(|d| (d.name.clone(), d.raw.clone()))
        .collect();
    if a.defaults {
        for p in config::params::PARAMS {
            if config.exact(p.name).is_none() && !p.default.is_empty() && matches(p.name) {
                entries.push((p.name.to_string(), p.default.to_string()));
            }
        }
        entries.sort_by_key(|(n, _)| n.to_ascii_uppercase());
    }
    writeln!(
        out,
        "# Configuration for {}, from {}",
        config.subsystem(),
        if config.files().is_empty() {
            "no file".to_string()
        } else {
            config.files().join(", ")
        }
    )?;
    for (name, raw) in entries {
        let value = if a.expand {
            match config.expand(&raw) {
                Ok(v) => v,
                Err(e) => {
                    writeln!(out, "# {name}: {e}")?;
                    continue;
                }
            }
        } else {
            raw
        };
        if value.contains('\n') {
            // Printed so that the dump reads back as configuration.
            writeln!(out, "{name} @=end\n{value}\n@end")?;
        } else {
            writeln!(out, "{name} = {value}")?;
        }
    }
    Ok(Outcome::Success)
}
