//! Each slot's `CondorLoadAvg`: the CPU its job's processes used over the
//! last interval, in CPUs (1.0 = one CPU kept busy). HTCondor's procapi
//! works the same way on Linux: a process's share is the change in its
//! user plus system time (`/proc/<pid>/stat` fields 14 and 15, in clock
//! ticks) over the wall time between two readings, and a process seen for
//! the first time is charged its whole CPU time over its age (from its
//! start, field 22, and `/proc/uptime`). The shares of a job's processes
//! add up to the slot's load.
//!
//! Which processes belong to which slot is the caller's knowledge (the
//! starter tracks a job's process family): they come in as pid lists.

use std::collections::HashMap;

use crate::Root;

/// The CPU figures of one `/proc/<pid>/stat`, in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcCpu {
    pub utime: u64,
    pub stime: u64,
    /// When the process started, in ticks after boot.
    pub starttime: u64,
}

/// Reads `/proc/<pid>/stat` text. The command name (field 2) is in
/// parentheses and may hold spaces and parentheses itself, so fields are
/// counted from the last `)`.
pub fn parse_proc_stat(text: &str) -> Option<ProcCpu> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state).
    let field = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(ProcCpu {
        utime: field(14)?,
        stime: field(15)?,
        starttime: field(22)?,
    })
}

/// Seconds since boot, the first figure of `/proc/uptime`.
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    ticks: u64,
    starttime: u64,
    at: f64,
}

/// Remembers each process's CPU time between readings.
#[derive(Clone, Debug)]
pub struct JobLoadTracker {
    ticks_per_second: f64,
    last: HashMap<u32, Sample>,
}

impl Default for JobLoadTracker {
    fn default() -> Self {
        JobLoadTracker::new()
    }
}

impl JobLoadTracker {
    /// A tracker using this kernel's clock-tick rate (`sysconf(_SC_CLK_TCK)`).
    pub fn new() -> JobLoadTracker {
        JobLoadTracker::with_ticks_per_second(rustix::param::clock_ticks_per_second())
    }

    /// A tracker for a `/proc` whose ticks run at this rate (tests).
    pub fn with_ticks_per_second(ticks: u64) -> JobLoadTracker {
        JobLoadTracker {
            ticks_per_second: ticks.max(1) as f64,
            last: HashMap::new(),
        }
    }

    /// Each slot's job load at `now` (epoch seconds, fractions kept), for
    /// the processes of each slot's job (`pids[i]` for the slot at index
    /// `i`). A process that is gone counts nothing; one whose pid was
    /// reused is a new process.
    pub fn measure(&mut self, root: &Root, pids: &[Vec<u32>], now: f64) -> Vec<f64> {
        let uptime = root
            .read_optional("proc/uptime")
            .and_then(|t| parse_uptime(&t));
        let mut seen = HashMap::new();
        let loads = pids
            .iter()
            .map(|slot| {
                let mut load = 0.0;
                for &pid in slot {
                    let Some(cpu) = root
                        .read_optional(format!("proc/{pid}/stat"))
                        .and_then(|t| parse_proc_stat(&t))
                    else {
                        continue;
                    };
                    let ticks = cpu.utime + cpu.stime;
                    let share = match self.last.get(&pid) {
                        Some(prev) if prev.starttime == cpu.starttime && now > prev.at => {
                            ticks.saturating_sub(prev.ticks) as f64
                                / self.ticks_per_second
                                / (now - prev.at)
                        }
                        _ => match uptime {
                            Some(up) => {
                                let age = up - cpu.starttime as f64 / self.ticks_per_second;
                                if age > 0.0 {
                                    ticks as f64 / self.ticks_per_second / age
                                } else {
                                    0.0
                                }
                            }
                            None => 0.0,
                        },
                    };
                    load += share.max(0.0);
                    seen.insert(
                        pid,
                        Sample {
                            ticks,
                            starttime: cpu.starttime,
                            at: now,
                        },
                    );
                }
                load
            })
            .collect();
        self.last = seen;
        loads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let t = "4242 (my (odd) job) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 9000 1000000 200 18446744073709551615\n";
        assert_eq!(
            parse_proc_stat(t),
            Some(ProcCpu {
                utime: 250,
                stime: 50,
                starttime: 9000
            })
        );
        assert_eq!(parse_proc_stat("1 (x) R 1"), None);
        assert_eq!(parse_uptime("350.25 700.00\n"), Some(350.25));
    }
}
