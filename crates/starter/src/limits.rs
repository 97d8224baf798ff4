//! The job's memory limit and what an out-of-memory kill means for it, as
//! HTCondor 25's starter decides them (pure: no I/O in this file; the
//! cgroup files are written and read by `cgroup` and `job`).
//!
//! HTCondor's references: `VanillaProc::StartJob` and
//! `VanillaProc::outOfMemoryEvent` (`src/condor_starter.V6.1/vanilla_proc.cpp`),
//! `ProcFamilyDirectCgroupV2` (`src/condor_utils/proc_family_direct_cgroup_v2.cpp`).

use classad::{eval::eval_attr, ClassAd, Env, Expr, Value};

use crate::job::{ExitKind, ExitStatus};

/// CGROUP_MEMORY_LIMIT_POLICY.
#[derive(Clone, Debug, PartialEq)]
pub enum MemoryLimitPolicy {
    /// `memory.max` is the slot's memory: the job cannot use more, and is
    /// held when the kernel kills it for trying.
    Hard,
    /// `memory.high` is the slot's memory: the kernel reclaims and throttles
    /// the job above it but does not kill it. (HTCondor 25 documents only
    /// hard, custom and none, and on cgroup v2 sets no limit for `soft`;
    /// `memory.high` is the v2 form of the soft limit its earlier releases
    /// set, so an admin who asks for soft gets one.)
    Soft,
    /// No limit; the cgroup still measures the job's memory.
    None,
    /// CGROUP_HARD_MEMORY_LIMIT_EXPR (`memory.max`) and
    /// CGROUP_SOFT_MEMORY_LIMIT_EXPR (`memory.high`), in MiB, evaluated
    /// with the slot ad as MY and the job ad as TARGET.
    Custom {
        hard: Option<LimitExpr>,
        soft: Option<LimitExpr>,
    },
}

/// A custom limit's expression, with the text it was parsed from (by
/// which two are compared).
#[derive(Clone, Debug)]
pub struct LimitExpr {
    pub text: String,
    pub expr: Expr,
}

impl PartialEq for LimitExpr {
    fn eq(&self, other: &LimitExpr) -> bool {
        self.text == other.text
    }
}

/// A configuration value the policy cannot use: which parameter, and what
/// is wrong (the daemon adds the text and where it was defined).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    pub param: &'static str,
    pub message: String,
}

impl MemoryLimitPolicy {
    /// The policy from the configuration's values: CGROUP_MEMORY_LIMIT_POLICY
    /// (case-insensitive), and for `custom` the two expressions.
    pub fn from_config(
        policy: &str,
        hard_expr: Option<&str>,
        soft_expr: Option<&str>,
    ) -> Result<MemoryLimitPolicy, PolicyError> {
        let expr = |param: &'static str, text: Option<&str>| match text
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            None => Ok(None),
            Some(t) => classad::parse_expr(t)
                .map(|expr| {
                    Some(LimitExpr {
                        text: t.to_string(),
                        expr,
                    })
                })
                .map_err(|e| PolicyError {
                    param,
                    message: format!("expected a ClassAd expression: {e}"),
                }),
        };
        match policy.trim().to_ascii_lowercase().as_str() {
            "hard" => Ok(MemoryLimitPolicy::Hard),
            "soft" => Ok(MemoryLimitPolicy::Soft),
            "none" => Ok(MemoryLimitPolicy::None),
            "custom" => {
                let hard = expr("CGROUP_HARD_MEMORY_LIMIT_EXPR", hard_expr)?;
                let soft = expr("CGROUP_SOFT_MEMORY_LIMIT_EXPR", soft_expr)?;
                if hard.is_none() && soft.is_none() {
                    return Err(PolicyError {
                        param: "CGROUP_MEMORY_LIMIT_POLICY",
                        message: "custom needs CGROUP_HARD_MEMORY_LIMIT_EXPR or \
                                  CGROUP_SOFT_MEMORY_LIMIT_EXPR (MiB; MY is the slot, \
                                  TARGET the job)"
                            .into(),
                    });
                }
                Ok(MemoryLimitPolicy::Custom { hard, soft })
            }
            _ => Err(PolicyError {
                param: "CGROUP_MEMORY_LIMIT_POLICY",
                message: "expected hard, soft, none or custom".into(),
            }),
        }
    }
}

/// The execute point's memory settings for its jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct MemorySettings {
    pub policy: MemoryLimitPolicy,
    /// DISABLE_SWAP_FOR_JOB: with a hard limit, `memory.swap.max` is 0, so
    /// a job over its limit is killed (and held) rather than swapping.
    pub disable_swap: bool,
    /// STARTER_ALWAYS_HOLD_ON_OOM: when false, a job killed for memory
    /// while well below its limit is taken to be the victim of a machine
    /// out of memory, and is evicted to run elsewhere rather than held.
    pub always_hold_on_oom: bool,
}

impl Default for MemorySettings {
    /// HTCondor 25's defaults (`param_info.in`).
    fn default() -> MemorySettings {
        MemorySettings {
            policy: MemoryLimitPolicy::Hard,
            disable_swap: true,
            always_hold_on_oom: true,
        }
    }
}

/// The cgroup memory files a job gets, in bytes; `None`: not written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryLimits {
    /// The job's memory in MiB as HTCondor counts it for the OOM message:
    /// the slot's provisioned `Memory`, whatever the policy.
    pub job_memory_mib: Option<u64>,
    pub max: Option<u64>,
    pub high: Option<u64>,
    pub swap_max: Option<u64>,
    /// A custom expression that gave no number (HTCondor ignores it, and
    /// says so in its log).
    pub ignored: Vec<String>,
}

const MIB: u64 = 1024 * 1024;

fn positive_mib(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) if *i > 0 => Some(*i as u64),
        Value::Real(r) if *r >= 1.0 => Some(*r as u64),
        _ => None,
    }
}

/// The limits for `job` on `slot`. The job's memory is the slot ad's
/// `Memory` (HTCondor limits to what the slot was provisioned, which for
/// a dynamic slot is the request rounded up); without a slot ad, the
/// job's `RequestMemory`.
pub fn memory_limits(
    settings: &MemorySettings,
    slot: Option<&ClassAd>,
    job: &ClassAd,
) -> MemoryLimits {
    let env = Env::default();
    let job_memory_mib = slot
        .and_then(|s| positive_mib(&s.eval_attr("Memory", &env)))
        .or_else(|| positive_mib(&job.eval_attr("RequestMemory", &env)));
    let mut limits = MemoryLimits {
        job_memory_mib,
        ..MemoryLimits::default()
    };
    let bytes = job_memory_mib.map(|m| m * MIB);
    match &settings.policy {
        MemoryLimitPolicy::Hard => limits.max = bytes,
        MemoryLimitPolicy::Soft => limits.high = bytes,
        MemoryLimitPolicy::None => {}
        MemoryLimitPolicy::Custom { hard, soft } => {
            let empty = ClassAd::new();
            let mut my = slot.cloned().unwrap_or(empty);
            let mut eval = |name: &str, limit: &LimitExpr| {
                my.insert(name, limit.expr.clone());
                let v = eval_attr(&my, Some(job), name, &env);
                my.remove(name);
                let mib = positive_mib(&v);
                if mib.is_none() {
                    limits.ignored.push(format!(
                        "{name} gave {}, not a number of MiB: no limit",
                        classad::unparse::value_to_string(&v)
                    ));
                }
                mib.map(|m| m * MIB)
            };
            limits.max = hard
                .as_ref()
                .and_then(|e| eval("CGROUP_HARD_MEMORY_LIMIT_EXPR", e));
            limits.high = soft
                .as_ref()
                .and_then(|e| eval("CGROUP_SOFT_MEMORY_LIMIT_EXPR", e));
        }
    }
    // HTCondor sets memory+swap to the hard limit, which on v2 (where
    // memory.swap.max counts swap alone) is a swap limit of 0.
    if settings.disable_swap && limits.max.is_some() {
        limits.swap_max = Some(0);
    }
    limits
}

/// The OOM counters of a cgroup's `memory.events` (which count the
/// cgroup's descendants too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryEvents {
    /// Times the cgroup hit `memory.max` and reclaim failed.
    pub oom: u64,
    /// Processes the OOM killer killed.
    pub oom_kill: u64,
    /// Times the whole cgroup was killed (`memory.oom.group`).
    pub oom_group_kill: u64,
}

impl MemoryEvents {
    pub fn parse(text: &str) -> MemoryEvents {
        let mut e = MemoryEvents::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (Some(key), Some(n)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match key {
                "oom" => e.oom = n,
                "oom_kill" => e.oom_kill = n,
                "oom_group_kill" => e.oom_group_kill = n,
                _ => {}
            }
        }
        e
    }

    /// HTCondor takes the larger of `oom_kill` and `oom_group_kill`.
    pub fn kills(&self) -> u64 {
        self.oom_kill.max(self.oom_group_kill)
    }
}

/// What the starter makes of an out-of-memory kill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OomVerdict {
    /// The job went over its memory: held with JobOutOfResources (34),
    /// subcode 102 (`OUT_OF_RESOURCES_SUB_CODE::Memory`; the schedd's
    /// `claims::exit_event` gives them), never run again as it is.
    Hold { reason: String },
    /// The machine ran out of memory and the job, well under its limit,
    /// was only the victim (STARTER_ALWAYS_HOLD_ON_OOM false): evicted, to
    /// run elsewhere.
    Evict { reason: String },
}

impl OomVerdict {
    pub fn reason(&self) -> &str {
        match self {
            OomVerdict::Hold { reason } | OomVerdict::Evict { reason } => reason,
        }
    }
}

/// Was the job killed for memory, and what follows? HTCondor's rule: the
/// cgroup counts an OOM kill, the main process died of SIGKILL, and the
/// starter was not itself stopping the job (a kill it sent is not the
/// job's fault).
pub fn oom_verdict(
    events: &MemoryEvents,
    status: ExitStatus,
    kind: ExitKind,
    job_memory_mib: Option<u64>,
    peak_mib: u64,
    always_hold: bool,
) -> Option<OomVerdict> {
    let sigkilled = matches!(status, ExitStatus::Signal { signal, .. } if signal == libc::SIGKILL);
    if events.kills() == 0 || !sigkilled || kind != ExitKind::Exit {
        return None;
    }
    let Some(limit) = job_memory_mib else {
        return Some(OomVerdict::Hold {
            reason: "Job has encountered an out-of-memory event.".into(),
        });
    };
    if !always_hold && peak_mib > 0 && (peak_mib as f64) < 0.9 * limit as f64 {
        return Some(OomVerdict::Evict {
            reason: "Worker node is out of memory".into(),
        });
    }
    // HTCondor reports the limit as the usage when it always holds (its
    // last poll may lag a fast-growing job) or measured nothing; the
    // measured peak is in the job ad's MemoryUsage either way.
    let usage = if always_hold || peak_mib == 0 {
        limit
    } else {
        peak_mib
    };
    Some(OomVerdict::Hold {
        reason: format!(
            "Job has gone over cgroup memory limit of {limit} megabytes. \
             Last measured usage: {usage} megabytes.  \
             Consider resubmitting with a higher request_memory."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(request_memory: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("RequestMemory", request_memory);
        ad
    }

    fn slot(memory: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("Memory", memory);
        ad
    }

    fn settings(policy: MemoryLimitPolicy) -> MemorySettings {
        MemorySettings {
            policy,
            ..MemorySettings::default()
        }
    }

    #[test]
    fn policy_names_are_htcondors_and_others_are_refused() {
        let p = |s| MemoryLimitPolicy::from_config(s, None, None);
        assert_eq!(p("hard"), Ok(MemoryLimitPolicy::Hard));
        assert_eq!(p(" Soft "), Ok(MemoryLimitPolicy::Soft));
        assert_eq!(p("NONE"), Ok(MemoryLimitPolicy::None));
        let e = p("strict").unwrap_err();
        assert_eq!(e.param, "CGROUP_MEMORY_LIMIT_POLICY");
        assert_eq!(e.message, "expected hard, soft, none or custom");
        let e = p("custom").unwrap_err();
        assert!(e.message.contains("CGROUP_HARD_MEMORY_LIMIT_EXPR"), "{e:?}");
        let e = MemoryLimitPolicy::from_config("custom", Some("Memory +"), None).unwrap_err();
        assert_eq!(e.param, "CGROUP_HARD_MEMORY_LIMIT_EXPR");
    }

    #[test]
    fn hard_limits_to_the_slot_memory_without_swap() {
        let l = memory_limits(&MemorySettings::default(), Some(&slot(2048)), &job(1000));
        assert_eq!(l.job_memory_mib, Some(2048));
        assert_eq!(l.max, Some(2048 * MIB));
        assert_eq!(l.high, None);
        assert_eq!(l.swap_max, Some(0));
        let with_swap = MemorySettings {
            disable_swap: false,
            ..MemorySettings::default()
        };
        assert_eq!(memory_limits(&with_swap, None, &job(64)).swap_max, None);
    }

    #[test]
    fn without_a_slot_ad_the_request_is_the_memory() {
        let l = memory_limits(&MemorySettings::default(), None, &job(64));
        assert_eq!(l.max, Some(64 * MIB));
        let none = memory_limits(&MemorySettings::default(), None, &ClassAd::new());
        assert_eq!(none, MemoryLimits::default());
    }

    #[test]
    fn soft_sets_memory_high_and_none_sets_nothing() {
        let l = memory_limits(
            &settings(MemoryLimitPolicy::Soft),
            Some(&slot(512)),
            &job(1),
        );
        assert_eq!((l.max, l.high, l.swap_max), (None, Some(512 * MIB), None));
        let l = memory_limits(
            &settings(MemoryLimitPolicy::None),
            Some(&slot(512)),
            &job(1),
        );
        assert_eq!((l.max, l.high, l.swap_max), (None, None, None));
        assert_eq!(l.job_memory_mib, Some(512));
    }

    #[test]
    fn custom_evaluates_against_the_slot_and_the_job() {
        let policy = MemoryLimitPolicy::from_config(
            "custom",
            Some("MY.Memory + TARGET.RequestMemory"),
            Some("Memory * 9 / 10"),
        )
        .unwrap();
        let l = memory_limits(&settings(policy), Some(&slot(1000)), &job(24));
        assert_eq!(l.max, Some(1024 * MIB));
        assert_eq!(l.high, Some(900 * MIB));
        assert_eq!(l.swap_max, Some(0));
        let policy = MemoryLimitPolicy::from_config("custom", Some("\"lots\""), None).unwrap();
        let l = memory_limits(&settings(policy), Some(&slot(1000)), &job(24));
        assert_eq!(l.max, None);
        assert_eq!(l.ignored.len(), 1, "{:?}", l.ignored);
    }

    #[test]
    fn memory_events_are_parsed() {
        let e = MemoryEvents::parse("low 0\nhigh 3\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
        assert_eq!(
            e,
            MemoryEvents {
                oom: 1,
                oom_kill: 1,
                oom_group_kill: 0
            }
        );
        assert_eq!(
            MemoryEvents::parse("oom_group_kill 2\noom_kill 1").kills(),
            2
        );
        assert_eq!(MemoryEvents::parse("garbage\noom_kill x").kills(), 0);
    }

    const KILLED: ExitStatus = ExitStatus::Signal {
        signal: libc::SIGKILL,
        core_dumped: false,
    };
    const ONE_KILL: MemoryEvents = MemoryEvents {
        oom: 1,
        oom_kill: 1,
        oom_group_kill: 0,
    };

    #[test]
    fn an_oom_kill_holds_with_htcondors_reason() {
        let v = oom_verdict(&ONE_KILL, KILLED, ExitKind::Exit, Some(64), 64, true);
        assert_eq!(
            v,
            Some(OomVerdict::Hold {
                reason: "Job has gone over cgroup memory limit of 64 megabytes. \
                         Last measured usage: 64 megabytes.  \
                         Consider resubmitting with a higher request_memory."
                    .into()
            })
        );
        let v = oom_verdict(&ONE_KILL, KILLED, ExitKind::Exit, None, 10, true);
        assert!(
            matches!(v, Some(OomVerdict::Hold { reason }) if reason.contains("out-of-memory event"))
        );
    }

    #[test]
    fn no_oom_kill_or_another_death_is_no_oom() {
        let none = MemoryEvents::default();
        assert_eq!(
            oom_verdict(&none, KILLED, ExitKind::Exit, Some(64), 1, true),
            None
        );
        let code = ExitStatus::Code(137);
        assert_eq!(
            oom_verdict(&ONE_KILL, code, ExitKind::Exit, Some(64), 1, true),
            None
        );
        let term = ExitStatus::Signal {
            signal: libc::SIGTERM,
            core_dumped: false,
        };
        assert_eq!(
            oom_verdict(&ONE_KILL, term, ExitKind::Exit, Some(64), 1, true),
            None
        );
        // The starter's own kill (vacate, remove, hold) is not the job's fault.
        for kind in [ExitKind::Evict, ExitKind::Remove, ExitKind::Hold] {
            assert_eq!(
                oom_verdict(&ONE_KILL, KILLED, kind, Some(64), 64, true),
                None
            );
        }
    }

    #[test]
    fn a_victim_of_a_full_machine_is_evicted_only_when_asked() {
        let v = oom_verdict(&ONE_KILL, KILLED, ExitKind::Exit, Some(1000), 100, false);
        assert!(matches!(v, Some(OomVerdict::Evict { .. })), "{v:?}");
        let v = oom_verdict(&ONE_KILL, KILLED, ExitKind::Exit, Some(1000), 950, false);
        assert!(
            matches!(&v, Some(OomVerdict::Hold { reason }) if reason.contains("Last measured usage: 950 megabytes")),
            "{v:?}"
        );
        let v = oom_verdict(&ONE_KILL, KILLED, ExitKind::Exit, Some(1000), 100, true);
        assert!(matches!(v, Some(OomVerdict::Hold { .. })), "{v:?}");
    }
}
