//! Running the inventory programs the configuration names
//! ([`startd::resources::inventory_sources`]) and reading their output
//! into [`Inventory`]s for [`startd::resources::HostReadings`].
//!
//! `condor_gpu_discovery` is not shipped: where the configuration names it
//! (`use FEATURE : GPUs` sets `MACHINE_RESOURCE_INVENTORY_GPUs =
//! $(LIBEXEC)/condor_gpu_discovery -properties $(GPU_DISCOVERY_EXTRA)`),
//! and for HTCondor's default discovery (`STARTD_DETECT_GPUS`), its
//! arguments go to [`crate::gpu_discovery`], which asks nvidia-smi. Any
//! other program is run as written (split on white space, no shell) and
//! its standard output read as an inventory ad.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use startd::resources::{Inventory, InventoryError, InventorySource};

use crate::gpu_discovery::{self, DiscoveryOptions, GpuError};

/// An inventory that could not be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InventoryFailure {
    /// GPU discovery failed (no nvidia-smi, a failing driver, a bad
    /// option).
    Gpu(GpuError),
    /// A program could not be run, or failed.
    Program { program: PathBuf, message: String },
    /// Its output was not an inventory ad.
    Output {
        command: String,
        error: InventoryError,
    },
}

impl fmt::Display for InventoryFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryFailure::Gpu(e) => write!(f, "{e}"),
            InventoryFailure::Program { program, message } => {
                write!(f, "{}: {message}", program.display())
            }
            InventoryFailure::Output { command, error } => {
                write!(f, "the output of `{command}`, {error}")
            }
        }
    }
}

impl std::error::Error for InventoryFailure {}

/// Whether `program` names HTCondor's GPU discovery tool.
fn is_gpu_discovery(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "condor_gpu_discovery" || n == "condor_gpu_discovery.exe")
}

/// The text one inventory source prints. `nvidia_smi` is the program GPU
/// discovery asks (`nvidia-smi` to look it up on the PATH).
pub fn inventory_text(
    source: &InventorySource,
    nvidia_smi: &Path,
) -> Result<String, InventoryFailure> {
    let (program, args) = match source {
        InventorySource::GpuDiscovery { args } => ("condor_gpu_discovery", args.as_str()),
        InventorySource::Command { command, .. } => {
            let t = command.trim();
            t.split_once(char::is_whitespace).unwrap_or((t, ""))
        }
    };
    if is_gpu_discovery(program) {
        let o = DiscoveryOptions::from_args(args).map_err(InventoryFailure::Gpu)?;
        return gpu_discovery::discover(nvidia_smi, &o).map_err(InventoryFailure::Gpu);
    }
    let output = Command::new(program)
        .args(args.split_whitespace())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| InventoryFailure::Program {
            program: program.into(),
            message: format!("could not run it: {e}"),
        })?;
    if !output.status.success() {
        return Err(InventoryFailure::Program {
            program: program.into(),
            message: format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Takes every inventory: what could be read, by tag (for
/// [`startd::resources::HostReadings::inventories`]), and what could not,
/// with its tag, for the log. A resource whose inventory failed is simply
/// not offered.
pub fn take_inventories(
    sources: &[InventorySource],
    nvidia_smi: &Path,
) -> (BTreeMap<String, Inventory>, Vec<(String, InventoryFailure)>) {
    let mut found = BTreeMap::new();
    let mut failed = Vec::new();
    for s in sources {
        let command = match s {
            InventorySource::Command { command, .. } => command.clone(),
            InventorySource::GpuDiscovery { args } => format!("condor_gpu_discovery {args}"),
        };
        let parsed = inventory_text(s, nvidia_smi).and_then(|text| {
            Inventory::parse(&text).map_err(|error| InventoryFailure::Output {
                command: command.trim().to_string(),
                error,
            })
        });
        match parsed {
            Ok(inv) => {
                found.insert(s.tag().to_string(), inv);
            }
            Err(e) => failed.push((s.tag().to_string(), e)),
        }
    }
    (found, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condor_gpu_discovery_is_recognised_by_name() {
        assert!(is_gpu_discovery("/usr/libexec/condor/condor_gpu_discovery"));
        assert!(is_gpu_discovery("condor_gpu_discovery"));
        assert!(!is_gpu_discovery("/usr/bin/my_gpu_discovery"));
    }

    #[test]
    fn other_programs_run_as_written() {
        let s = InventorySource::Command {
            tag: "Cogs".into(),
            command: "/bin/echo DetectedCogs=\"c1, c2\"".into(),
        };
        let (found, failed) = take_inventories(&[s], Path::new("nvidia-smi"));
        assert!(failed.is_empty(), "{failed:?}");
        assert!(found["Cogs"].ad.contains("DetectedCogs"));

        let broken = InventorySource::Command {
            tag: "Cogs".into(),
            command: "/nonexistent/inventory -x".into(),
        };
        let (found, failed) = take_inventories(&[broken], Path::new("nvidia-smi"));
        assert!(found.is_empty());
        assert!(failed[0]
            .1
            .to_string()
            .starts_with("/nonexistent/inventory: could not run it"));
    }
}
