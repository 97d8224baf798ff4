//! Memory and swap, from `/proc/meminfo`. `DETECTED_MEMORY` is `MemTotal`
//! in MiB, capped by a cgroup memory limit when one is smaller (as
//! HTCondor caps it); `TotalVirtualMemory` is what HTCondor's
//! `sysapi_swap_space` gives on Linux: free swap plus total RAM, in KiB.

use crate::{cgroup, HostError, Root};

/// The lines of `/proc/meminfo` the startd uses, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub mem_total: u64,
    pub swap_total: u64,
    pub swap_free: u64,
}

/// Reads `MemTotal`, `SwapTotal` and `SwapFree` (`Name:  123 kB`); a
/// missing line reads as 0.
pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kib = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        match key {
            "MemTotal" => m.mem_total = kib,
            "SwapTotal" => m.swap_total = kib,
            "SwapFree" => m.swap_free = kib,
            _ => {}
        }
    }
    m
}

/// Memory as the startd counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryReadings {
    /// MiB, capped by a cgroup limit.
    pub memory: i64,
    /// `TotalVirtualMemory`, KiB.
    pub swap: i64,
}

/// Reads `/proc/meminfo` and the cgroup memory limits under `root`.
pub fn read_memory(root: &Root) -> Result<MemoryReadings, HostError> {
    let info = parse_meminfo(&root.read("proc/meminfo")?);
    if info.mem_total == 0 {
        return Err(HostError::new(
            root.path("proc/meminfo"),
            "no `MemTotal` line: cannot tell the machine's memory",
        ));
    }
    let mut memory = info.mem_total / 1024;
    if let Some(limit) = cgroup::memory_limit(root, &cgroup::locate(root)) {
        memory = memory.min(limit / (1024 * 1024));
    }
    Ok(MemoryReadings {
        memory: memory as i64,
        swap: (info.swap_free + info.mem_total) as i64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines() {
        let t = "MemTotal:       24684096 kB\nMemFree:  100 kB\nSwapTotal:  2048 kB\nSwapFree:  1024 kB\n";
        assert_eq!(
            parse_meminfo(t),
            MemInfo {
                mem_total: 24684096,
                swap_total: 2048,
                swap_free: 1024
            }
        );
        assert_eq!(parse_meminfo(""), MemInfo::default());
    }
}
