//! The start-up readings: what the machine offers to be divided into
//! slots ([`HostReadings`]).

use std::collections::BTreeMap;
use std::path::Path;

use startd::resources::{HostReadings, Inventory};

use crate::{cpus, disk, memory, HostError, Root};

/// Cores, memory, free disk under `execute` and swap, read under `root`,
/// with the inventories already taken (see [`crate::inventory`]).
pub fn host_readings(
    root: &Root,
    execute: &Path,
    inventories: BTreeMap<String, Inventory>,
) -> Result<HostReadings, HostError> {
    let cpus = cpus::read_cpus(root)?;
    let mem = memory::read_memory(root)?;
    Ok(HostReadings {
        physical_cpus: cpus.physical_cpus,
        hyperthread_cpus: cpus.hyperthread_cpus,
        cpus_limit: cpus.limit,
        memory: mem.memory,
        disk: disk::free_disk_kib(execute)?,
        swap: mem.swap,
        inventories,
    })
}

/// The real machine's readings, without inventories.
pub fn system_host_readings(execute: &Path) -> Result<HostReadings, HostError> {
    host_readings(&Root::system(), execute, BTreeMap::new())
}
