//! The slot ad: what a slot publishes to the collector, and the ad its own
//! policy expressions are evaluated in (HTCondor evaluates START, SUSPEND,
//! ... with the slot ad as MY, so they can refer to each other and to
//! State, KeyboardIdle, LoadAvg and the rest).

use classad::{ClassAd, Expr, Value};

use crate::engine::Startd;
use crate::slot::SlotKind;
use crate::state::State;

/// The machine-wide facts every slot ad carries.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineInfo {
    /// The host's name (`Machine`); slots are named `slotN@Machine`.
    pub hostname: String,
    pub arch: String,
    pub opsys: String,
    pub opsys_and_ver: String,
    /// Seconds east of UTC, for ClockMin and ClockDay.
    pub utc_offset: i32,
    /// Total cores, memory (MiB) and disk (KiB) of the machine.
    pub total_cpus: f64,
    pub total_memory: i64,
    pub total_disk: i64,
    /// Custom resources: name, detected instances, total.
    pub custom: Vec<(String, String, f64)>,
}

impl MachineInfo {
    /// A machine with the given name and sizes (Linux on x86_64, UTC).
    pub fn new(hostname: &str, cpus: f64, memory: i64, disk: i64) -> MachineInfo {
        MachineInfo {
            hostname: hostname.to_string(),
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            opsys_and_ver: "LINUX".into(),
            utc_offset: 0,
            total_cpus: cpus,
            total_memory: memory,
            total_disk: disk,
            custom: Vec::new(),
        }
    }
}

fn int(ad: &mut ClassAd, name: &str, v: i64) {
    ad.insert_value(name, v);
}

fn real(ad: &mut ClassAd, name: &str, v: f64) {
    ad.insert_value(name, v);
}

fn text(ad: &mut ClassAd, name: &str, v: &str) {
    ad.insert_value(name, v);
}

impl Startd {
    /// The ad of slot `i` at `now`: what it publishes, and where its policy
    /// is evaluated.
    pub fn slot_ad(&self, i: usize, now: i64) -> ClassAd {
        self.build_ad(i, now, true)
    }

    fn build_ad(&self, i: usize, now: i64, cross_slot: bool) -> ClassAd {
        let s = &self.slots[i];
        let m = &self.machine;
        let mut ad = ClassAd::new();
        text(&mut ad, "MyType", "Machine");
        text(&mut ad, "TargetType", "Job");
        text(&mut ad, "Name", &format!("{}@{}", s.name, m.hostname));
        text(&mut ad, "Machine", &m.hostname);
        int(&mut ad, "SlotID", s.id as i64);
        // The 6.8 name, so that old policies run unchanged.
        int(&mut ad, "VirtualMachineID", s.id as i64);
        if let Some(t) = s.slot_type {
            int(&mut ad, "SlotTypeID", t as i64);
        }
        match &s.kind {
            SlotKind::Static => text(&mut ad, "SlotType", "Static"),
            SlotKind::Partitionable => {
                ad.insert_value("PartitionableSlot", true);
                text(&mut ad, "SlotType", "Partitionable");
            }
            SlotKind::Dynamic { parent, sub_id } => {
                ad.insert_value("DynamicSlot", true);
                text(&mut ad, "SlotType", "Dynamic");
                text(
                    &mut ad,
                    "ParentSlotName",
                    &format!("{parent}@{}", m.hostname),
                );
                int(&mut ad, "DSlotId", *sub_id as i64);
            }
        }
        text(&mut ad, "State", s.state.name());
        text(&mut ad, "Activity", s.activity.name());
        int(&mut ad, "EnteredCurrentState", s.entered_state);
        int(&mut ad, "EnteredCurrentActivity", s.entered_activity);
        text(&mut ad, "Arch", &m.arch);
        text(&mut ad, "OpSys", &m.opsys);
        text(&mut ad, "OpSysAndVer", &m.opsys_and_ver);
        match &self.resources {
            // The machine as the configuration laid it out: resources,
            // custom resources and GPU properties, as `layout` publishes them.
            Some(machine) => {
                ad.update(&machine.machine_attrs());
                s.resources.publish(&s.provisioned, machine, &mut ad);
            }
            None => {
                int(&mut ad, "Cpus", s.resources.whole_cpus());
                int(&mut ad, "Memory", s.resources.memory);
                int(&mut ad, "Disk", s.resources.disk);
                real(&mut ad, "TotalCpus", m.total_cpus);
                int(&mut ad, "TotalMemory", m.total_memory);
                int(&mut ad, "TotalDisk", m.total_disk);
            }
        }
        int(&mut ad, "TotalSlots", self.slots.len() as i64);

        // What the host says, as this slot sees it.
        let (keyboard, console) = self.idle_times(i, now);
        int(&mut ad, "KeyboardIdle", keyboard);
        int(&mut ad, "ConsoleIdle", console);
        real(&mut ad, "LoadAvg", s.load_avg);
        real(&mut ad, "CondorLoadAvg", s.condor_load_avg);
        real(&mut ad, "TotalLoadAvg", self.readings.load_avg);
        real(
            &mut ad,
            "TotalCondorLoadAvg",
            self.slots.iter().map(|s| s.condor_load_avg).sum(),
        );
        ad.insert_value("CpuIsBusy", s.cpu_busy_since.is_some());
        let local = now + m.utc_offset as i64;
        int(&mut ad, "ClockMin", local.rem_euclid(86_400) / 60);
        // 1970-01-01 was a Thursday (day 4, Sunday being 0).
        int(
            &mut ad,
            "ClockDay",
            (local.div_euclid(86_400) + 4).rem_euclid(7),
        );
        int(&mut ad, "LastBenchmark", s.last_benchmark);
        if let Some(v) = s.mips {
            int(&mut ad, "Mips", v);
        }
        if let Some(v) = s.kflops {
            int(&mut ad, "KFlops", v);
        }

        // The policy, under its own names, so expressions can refer to one
        // another (the desktop PREEMPT reads SUSPEND and WANT_SUSPEND).
        for (name, e) in &s.policy.exprs {
            if let Some(e) = e {
                ad.insert(*name, e.clone());
            }
        }
        let start = self.start_expr(i);
        ad.insert("Start", start.clone());
        // Not matchable while Matched, Preempting or Drained (and while
        // draining, START is the drain's own start expression, false by
        // default).
        let not_matchable = matches!(s.state, State::Matched | State::Preempting | State::Drained);
        ad.insert(
            "Requirements",
            if not_matchable {
                Expr::from_value(Value::Bool(false))
            } else {
                start
            },
        );
        ad.insert(
            "Rank",
            s.policy
                .rank
                .clone()
                .unwrap_or_else(|| Expr::from_value(Value::Real(0.0))),
        );
        real(
            &mut ad,
            "CurrentRank",
            s.claim.as_ref().map_or(0.0, |c| c.rank),
        );
        for (name, e) in &s.policy.startd_attrs {
            ad.insert(name.as_str(), e.clone());
        }
        for (name, value, changed) in &s.latches {
            ad.insert_value(&format!("{name}Value"), value.clone());
            int(&mut ad, &format!("{name}Time"), *changed);
        }
        // Without a CpuBusy latch, CpuBusyTime is how long the CPU has been
        // busy (the 6.8 meaning the Bologna policy reads); with one, the
        // latch publishes the time it last changed instead.
        if !s
            .latches
            .iter()
            .any(|(n, _, _)| n.eq_ignore_ascii_case("CpuBusy"))
        {
            int(
                &mut ad,
                "CpuBusyTime",
                s.cpu_busy_since.map_or(0, |t| now - t),
            );
        }

        // The claim and its job.
        if let Some(c) = &s.claim {
            text(&mut ad, "RemoteUser", &c.user);
            text(&mut ad, "RemoteOwner", &c.owner);
            text(&mut ad, "ClientMachine", &c.schedd);
            text(&mut ad, "RemoteScheddName", &c.schedd);
            int(
                &mut ad,
                "TotalClaimRunTime",
                c.run_time + s.job_run_time(now),
            );
            int(
                &mut ad,
                "TotalClaimSuspendTime",
                c.suspend_time + s.job_suspended_total + s.suspended_since.map_or(0, |t| now - t),
            );
        }
        if let (Some(job), Some(start)) = (&s.job, s.job_start) {
            int(&mut ad, "JobStart", start);
            int(&mut ad, "TotalJobRunTime", s.job_run_time(now));
            int(
                &mut ad,
                "TotalJobSuspendTime",
                s.job_suspended_total + s.suspended_since.map_or(0, |t| now - t),
            );
            let id = |a: &str| match job.eval_attr(a, &classad::Env::default()) {
                Value::Int(i) => Some(i),
                _ => None,
            };
            if let (Some(c), Some(p)) = (id("ClusterId"), id("ProcId")) {
                text(&mut ad, "JobId", &format!("{c}.{p}"));
            }
            if let Some(u) = id("JobUniverse") {
                int(&mut ad, "JobUniverse", u);
            }
            for name in &s.policy.job_attrs {
                if let Some(e) = job.get(name) {
                    ad.insert(name.as_str(), e.clone());
                }
            }
        }
        if let Some(d) = &self.drain {
            ad.insert_value("Draining", true);
            int(&mut ad, "DrainingRequestId", d.id as i64);
        }
        // Other slots' attributes, as STARTD_SLOT_ATTRS asks (also under
        // the 6.8 `vm<N>_` names).
        if cross_slot && !s.policy.slot_attrs.is_empty() {
            let env = self.env(now);
            for (j, other) in self.slots.iter().enumerate() {
                let other_ad = if j == i {
                    None
                } else {
                    Some(self.build_ad(j, now, false))
                };
                for name in &s.policy.slot_attrs {
                    let v = match &other_ad {
                        Some(a) => a.eval_attr(name, &env),
                        None => ad.eval_attr(name, &env),
                    };
                    ad.insert_value(&format!("slot{}_{name}", other.id), v.clone());
                    ad.insert_value(&format!("vm{}_{name}", other.id), v);
                }
            }
        }
        ad
    }
}
