//! `ferrocondor simulate SCENARIO`: a whole pool on a virtual clock.

use std::io::Write;

use crate::args::SimulateArgs;
use crate::errors::{Error, Outcome};

pub fn run(a: &SimulateArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let text = std::fs::read_to_string(&a.scenario).map_err(|e| Error::read(&a.scenario, e))?;
    let origin = a.scenario.display().to_string();
    let mut scenario =
        sim::Scenario::from_json(&text).map_err(|e| Error::Input(format!("{origin}: {e}")))?;
    // Files the scenario names are taken from its own directory.
    let dir = a
        .scenario
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(std::path::Path::new("."));
    let dir = dir.canonicalize().map_err(|e| Error::read(dir, e))?;
    scenario.base_dir = dir.display().to_string();
    if let Some(seed) = a.seed {
        scenario.seed = seed;
    }
    let report =
        sim::simulate(&scenario, &DiskFiles).map_err(|e| Error::Input(format!("{origin}: {e}")))?;
    if let Some(path) = &a.html {
        std::fs::write(path, report.to_html()).map_err(Error::Write)?;
    }
    if a.json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        write!(out, "{}", report.to_text())?;
    }
    Ok(Outcome::Success)
}

struct DiskFiles;

impl sim::Files for DiskFiles {
    fn read(&self, path: &str) -> Result<String, config::FileError> {
        std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => config::FileError::NotFound,
            _ => config::FileError::Other(e.to_string()),
        })
    }
}
