//! How many CPUs the machine has, counted as HTCondor counts them on Linux:
//! `DETECTED_CORES` is the hardware threads the kernel schedules (each
//! `processor` entry of `/proc/cpuinfo`), `DETECTED_PHYSICAL_CPUS` the
//! distinct (`physical id`, `core id`) pairs, and `DETECTED_CPUS_LIMIT`
//! the smaller of the CPUs this process may run on (`Cpus_allowed_list`
//! of `/proc/self/status`, what `sched_getaffinity` reports) and a cgroup
//! v2 CPU quota.

use std::collections::BTreeSet;

use crate::{cgroup, HostError, Root};

/// What `/proc/cpuinfo` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    /// Hardware threads (`processor` entries).
    pub processors: u32,
    /// Physical cores: distinct (`physical id`, `core id`) pairs, or the
    /// processors where the kernel gives no core ids (some ARM and s390
    /// kernels).
    pub physical_cores: u32,
}

/// Counts processors and physical cores in `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut processors = 0u32;
    let mut cores = BTreeSet::new();
    let mut physical_id = String::new();
    let mut core_id: Option<String> = None;
    let mut flush = |physical_id: &str, core_id: &mut Option<String>| {
        if let Some(c) = core_id.take() {
            cores.insert((physical_id.to_string(), c));
        }
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => {
                flush(&physical_id, &mut core_id);
                physical_id.clear();
                processors += 1;
            }
            "physical id" => physical_id = value.trim().to_string(),
            "core id" => core_id = Some(value.trim().to_string()),
            _ => {}
        }
    }
    flush(&physical_id, &mut core_id);
    let physical_cores = if cores.is_empty() {
        processors
    } else {
        cores.len() as u32
    };
    CpuInfo {
        processors,
        physical_cores,
    }
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11` is 7), or
/// `None` when it is not one.
pub fn parse_cpu_list(text: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// The CPUs this process may run on, from `/proc/self/status`.
pub fn parse_allowed_cpus(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
}

/// The CPU readings the startd needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuReadings {
    /// `DETECTED_CORES`.
    pub hyperthread_cpus: u32,
    /// `DETECTED_PHYSICAL_CPUS`.
    pub physical_cpus: u32,
    /// `DETECTED_CPUS_LIMIT`, when something limits this process to fewer
    /// CPUs than the machine has.
    pub limit: Option<u32>,
}

/// Reads `/proc/cpuinfo`, `/proc/self/status` and the cgroup quota under
/// `root`.
pub fn read_cpus(root: &Root) -> Result<CpuReadings, HostError> {
    let info = parse_cpuinfo(&root.read("proc/cpuinfo")?);
    if info.processors == 0 {
        return Err(HostError::new(
            root.path("proc/cpuinfo"),
            "no `processor` entries: cannot count the CPUs",
        ));
    }
    let affinity = root
        .read_optional("proc/self/status")
        .and_then(|s| parse_allowed_cpus(&s))
        .filter(|&n| n > 0 && n < info.processors);
    let quota = cgroup::cpu_limit(root, &cgroup::locate(root)).filter(|&n| n < info.processors);
    let limit = match (affinity, quota) {
        (Some(a), Some(q)) => Some(a.min(q)),
        (a, q) => a.or(q),
    };
    Ok(CpuReadings {
        hyperthread_cpus: info.processors,
        physical_cpus: info.physical_cores,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sockets, two cores each, two threads per core.
    const TWO_SOCKETS_HT: &str = "\
processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\n\
processor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n\
processor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n\n\
processor\t: 3\nphysical id\t: 1\ncore id\t\t: 1\n\n\
processor\t: 4\nphysical id\t: 0\ncore id\t\t: 0\n\n\
processor\t: 5\nphysical id\t: 0\ncore id\t\t: 1\n\n\
processor\t: 6\nphysical id\t: 1\ncore id\t\t: 0\n\n\
processor\t: 7\nphysical id\t: 1\ncore id\t\t: 1\n\n";

    #[test]
    fn cpuinfo_counts_threads_and_cores() {
        assert_eq!(
            parse_cpuinfo(TWO_SOCKETS_HT),
            CpuInfo {
                processors: 8,
                physical_cores: 4
            }
        );
        // No core ids (an ARM kernel): every processor is a core.
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n";
        assert_eq!(
            parse_cpuinfo(arm),
            CpuInfo {
                processors: 2,
                physical_cores: 2
            }
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(7));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(
            parse_allowed_cpus("Name:\tcat\nCpus_allowed:\tf\nCpus_allowed_list:\t0-1\n"),
            Some(2)
        );
    }
}
