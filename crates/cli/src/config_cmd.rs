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
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    if a.evaluate {
        return Err(Error::Unsupported(
            "--evaluate evaluates against the local machine ad, which the startd publishes; the startd is not built yet".into(),
        ));
    }
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

fn json(
    a: &ConfigValArgs,
    config: &Config,
    out: &mut dyn Write,
    diag: &mut dyn Write,
) -> Result<Outcome, Error> {
    let mut map = serde_json::Map::new();
    for name in &a.names {
        let value = if a.raw {
            Ok(config.raw(name).map(str::to_string))
        } else {
            config.get(name)
        };
        let value = match value {
            Ok(v) => v,
            Err(e) => {
                writeln!(diag, "{e}")?;
                None
            }
        };
        map.insert(
            name.clone(),
            value.map_or(serde_json::Value::Null, serde_json::Value::String),
        );
    }
    writeln!(out, "{}", serde_json::Value::Object(map))?;
    Ok(Outcome::Success)
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
