//! The defrag daemon (`DEFRAG` in DAEMON_LIST, HTCondor's condor_defrag):
//! a thin shell around the pure policy `negotiator::defrag`.
//!
//! As in HTCondor, the defrag daemon is a client of the pool and nothing
//! else: it serves no command and holds no role's state. Every
//! DEFRAG_INTERVAL (the first poll at start) it asks the collector for the
//! partitionable slots' ads (QUERY_STARTD_ADS), hands them to
//! [`Defrag::poll`], and carries out the plan: CANCEL_DRAIN_JOBS, then
//! DRAIN_JOBS with the order's request ad (HowFast, DrainReason
//! `Defrag <name>`, ResumeOnCompletion, CheckExpr, StartExpr), each to the
//! machine's startd at its slot ad's `MyAddress`. A drain the startd
//! refuses, or a startd that cannot be reached, is [`Defrag::drain_failed`].
//! After each poll and every DEFRAG_UPDATE_INTERVAL it sends its daemon ad
//! ([`Defrag::ad`], `MyType = "Defrag"`) to the collector as
//! UPDATE_AD_GENERIC, and at the end INVALIDATE_ADS_GENERIC.
//!
//! It authenticates as the pool's daemons do (the SEC_CLIENT_* settings:
//! FS on one host, the pool's token across hosts), so it holds what the
//! startd's DRAIN_JOBS asks (ADMINISTRATOR) and the collector's generic
//! updates ask (DAEMON). SIGTERM or SIGINT ends it; SIGHUP (the master's
//! reconfig) reads the configuration again (the statistics stay).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cedar::client::{ClientOptions, SessionCache};
use cedar::commands as cmd;
use cedar::{PutOptions, Sinful};
use classad::ClassAd;
use negotiator::defrag::{Defrag, DefragPlan, DefragPolicy, DrainOrder, Schedule};

/// Where the defrag daemon finds the pool, and how it authenticates.
pub struct DefragSetup {
    /// The configuration as the DEFRAG subsystem reads it.
    pub config: config::Config,
    pub client: ClientOptions,
    /// COLLECTOR_HOST, when set.
    pub collector_host: Option<String>,
    /// The collector's address file (COLLECTOR_ADDRESS_FILE, else the
    /// state directory's).
    pub collector_file: std::path::PathBuf,
    /// FULL_HOSTNAME (the ad's `Machine`).
    pub hostname: String,
}

impl DefragSetup {
    /// The settings the configuration gives; `state_dir` holds the
    /// collector's address file when COLLECTOR_ADDRESS_FILE names none.
    pub fn from_config(c: config::Config, state_dir: &std::path::Path) -> DefragSetup {
        let get = |n: &str| c.get(n).ok().flatten();
        let hostname = get("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
        let mut client = ClientOptions::from_lookup(&get, &hostname);
        client.subsystem = "DEFRAG".into();
        DefragSetup {
            client,
            collector_host: get("COLLECTOR_HOST").filter(|h| !h.trim().is_empty()),
            collector_file: get("COLLECTOR_ADDRESS_FILE")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| state_dir.join(".collector_address")),
            hostname,
            config: c,
        }
    }
}

/// The defrag daemon: the policy's state and the pool's addresses.
pub struct DefragDaemon {
    pub defrag: Defrag,
    setup: DefragSetup,
    sessions: SessionCache,
    started: i64,
    update_interval: i64,
    sequence: i64,
}

fn param_error(e: impl std::fmt::Display) -> String {
    format!("configuration error: {e}")
}

impl DefragDaemon {
    pub fn new(setup: DefragSetup, now: i64) -> Result<DefragDaemon, String> {
        let policy = DefragPolicy::from_config(&setup.config).map_err(param_error)?;
        let update_interval = setup
            .config
            .integer_or("DEFRAG_UPDATE_INTERVAL", 300)
            .map_err(param_error)?;
        Ok(DefragDaemon {
            defrag: Defrag::new(policy),
            setup,
            sessions: SessionCache::new(),
            started: now,
            update_interval,
            sequence: 0,
        })
    }

    /// A new configuration (SIGHUP): the policy read again; when it polled
    /// last and its figures stay.
    pub fn reconfigure(&mut self, setup: DefragSetup) -> Result<(), String> {
        let policy = DefragPolicy::from_config(&setup.config).map_err(param_error)?;
        self.update_interval = setup
            .config
            .integer_or("DEFRAG_UPDATE_INTERVAL", 300)
            .map_err(param_error)?;
        self.defrag.policy = policy;
        self.setup = setup;
        Ok(())
    }

    fn collector(&self) -> Result<Sinful, String> {
        if let Some(h) = &self.setup.collector_host {
            let first = h.split([',', ' ']).find(|s| !s.is_empty()).unwrap_or("");
            if let Ok(a) = Sinful::parse(first, 0) {
                if a.port != 0 {
                    return Ok(a);
                }
            }
        }
        crate::role_transport::read_address(&self.setup.collector_file).ok_or_else(|| {
            format!(
                "no collector: COLLECTOR_HOST names no port and {} has no address",
                self.setup.collector_file.display()
            )
        })
    }

    /// The partitionable slots' ads, as the collector has them.
    fn startd_ads(&self) -> Result<Vec<ClassAd>, String> {
        let collector = self.collector()?;
        let fail = |e: &dyn std::fmt::Display| format!("asking the collector at {collector}: {e}");
        let (mut sock, _) = cedar::client::connect(
            &collector,
            cmd::QUERY_STARTD_ADS,
            &self.setup.client,
            Some(&self.sessions),
        )
        .map_err(|e| fail(&e))?;
        let mut q = ClassAd::new();
        q.insert_value("MyType", "Query");
        q.insert_value("TargetType", "Machine");
        let _ = q.insert_expr("Requirements", "PartitionableSlot =?= true");
        cedar::ad::query_collector(&mut sock, &q).map_err(|e| fail(&e))
    }

    /// One command with a request ad to a startd, and its `Result`.
    fn to_startd(&self, address: &str, command: i32, request: &ClassAd) -> Result<(), String> {
        let to = Sinful::parse(address, 0).map_err(|e| format!("address {address}: {e}"))?;
        let fail = |e: &dyn std::fmt::Display| format!("the startd at {to}: {e}");
        let (mut sock, _) =
            cedar::client::connect(&to, command, &self.setup.client, Some(&self.sessions))
                .map_err(|e| fail(&e))?;
        let mut e = sock.encoder();
        cedar::put_ad(&mut e, request, &PutOptions::default());
        sock.send(&e).map_err(|e| fail(&e))?;
        let msg = sock.recv().map_err(|e| fail(&e))?;
        let mut d = sock.decoder(&msg);
        let reply = cedar::get_ad(&mut d).map_err(|e| fail(&e))?;
        sock.close();
        if cedar::ad::flag_attr(&reply, "Result") {
            Ok(())
        } else {
            Err(fail(
                &cedar::ad::string_attr(&reply, "ErrorString")
                    .unwrap_or_else(|| "refused".to_string()),
            ))
        }
    }

    /// One poll: the collector's ads, the policy's plan, carried out.
    /// Lines for the log come back.
    pub fn poll(&mut self, now: i64) -> Vec<String> {
        let mut log = Vec::new();
        let ads = match self.startd_ads() {
            Ok(ads) => ads,
            Err(e) => {
                log.push(format!("no poll: {e}"));
                return log;
            }
        };
        let plan = self.defrag.poll(&ads, now);
        self.carry_out(&plan, &ads, &mut log);
        log
    }

    fn carry_out(&mut self, plan: &DefragPlan, ads: &[ClassAd], log: &mut Vec<String>) {
        for machine in &plan.cancel {
            let result = address_of(ads, machine)
                .ok_or_else(|| format!("no address for {machine}"))
                .and_then(|a| self.to_startd(&a, cmd::CANCEL_DRAIN_JOBS, &ClassAd::new()));
            match result {
                Ok(()) => log.push(format!("cancelled the draining of {machine}")),
                Err(e) => log.push(format!("could not cancel the draining of {machine}: {e}")),
            }
        }
        for order in &plan.drain {
            let result = address_of(ads, &order.machine)
                .ok_or_else(|| format!("no address for {}", order.machine))
                .and_then(|a| self.to_startd(&a, cmd::DRAIN_JOBS, &drain_request(order)));
            match result {
                Ok(()) => log.push(format!(
                    "{} draining of {} ({})",
                    order.how.name(),
                    order.machine,
                    order.reason
                )),
                Err(e) => {
                    self.defrag.drain_failed();
                    log.push(format!("could not drain {}: {e}", order.machine));
                }
            }
        }
        log.push(plan.why.clone());
    }

    /// The daemon ad: the policy's figures, and what every daemon's ad says.
    pub fn ad(&mut self, now: i64) -> ClassAd {
        self.sequence += 1;
        let mut ad = self.defrag.ad(now);
        ad.insert_value("Machine", self.setup.hostname.as_str());
        ad.insert_value("DaemonStartTime", self.started);
        ad.insert_value("MonitorSelfTime", now);
        ad.insert_value("UpdateSequenceNumber", self.sequence);
        ad.insert_value("UpdateInterval", self.update_interval);
        ad.insert_value("DefragInterval", self.defrag.policy.interval);
        ad.insert_value("CondorVersion", cedar::CONDOR_VERSION);
        ad
    }

    /// UPDATE_AD_GENERIC with the daemon ad.
    pub fn advertise(&mut self, now: i64) -> Result<(), String> {
        let ad = self.ad(now);
        self.to_collector(cmd::UPDATE_AD_GENERIC, &ad)
    }

    /// INVALIDATE_ADS_GENERIC for the daemon ad (at the end).
    pub fn withdraw(&self) -> Result<(), String> {
        let mut q = ClassAd::new();
        q.insert_value("MyType", "Query");
        q.insert_value("TargetType", "Defrag");
        q.insert_value("Name", self.defrag.policy.name.as_str());
        let _ = q.insert_expr(
            "Requirements",
            &format!(
                "Name == {}",
                classad::unparse::expr_to_string(&classad::Expr::Lit(classad::Value::Str(
                    self.defrag.policy.name.as_str().into()
                )))
            ),
        );
        self.to_collector(cmd::INVALIDATE_ADS_GENERIC, &q)
    }

    fn to_collector(&self, command: i32, ad: &ClassAd) -> Result<(), String> {
        let collector = self.collector()?;
        let fail =
            |e: &dyn std::fmt::Display| format!("updating the collector at {collector}: {e}");
        let (mut sock, _) = cedar::client::connect(
            &collector,
            command,
            &self.setup.client,
            Some(&self.sessions),
        )
        .map_err(|e| fail(&e))?;
        let mut e = sock.encoder();
        cedar::put_ad(&mut e, ad, &PutOptions::default());
        sock.send(&e).map_err(|e| fail(&e))?;
        sock.close();
        Ok(())
    }
}

/// The request ad of DRAIN_JOBS for an order (as HTCondor's
/// `DCStartd::drainJobs` writes it).
pub fn drain_request(order: &DrainOrder) -> ClassAd {
    let mut req = ClassAd::new();
    req.insert_value(
        "HowFast",
        match order.how {
            Schedule::Graceful => 0i64,
            Schedule::Quick => 10,
            Schedule::Fast => 20,
        },
    );
    req.insert_value("DrainReason", order.reason.as_str());
    req.insert_value("ResumeOnCompletion", i64::from(order.resume_on_completion));
    let _ = req.insert_expr("CheckExpr", &order.check_expr);
    if let Some(start) = &order.start_expr {
        req.insert("StartExpr", start.clone());
    }
    req
}

/// The `MyAddress` of a machine's slot ads (the machine is the part of a
/// slot's `Name` after `@`).
fn address_of(ads: &[ClassAd], machine: &str) -> Option<String> {
    ads.iter().find_map(|ad| {
        let name = cedar::ad::string_attr(ad, "Name")?;
        let m = name.split_once('@').map_or(name.as_str(), |(_, m)| m);
        if m.eq_ignore_ascii_case(machine) {
            cedar::ad::string_attr(ad, "MyAddress")
        } else {
            None
        }
    })
}

static STOP: AtomicBool = AtomicBool::new(false);
static RECONFIG: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_hangup(_: libc::c_int) {
    RECONFIG.store(true, Ordering::SeqCst);
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Runs the defrag daemon until SIGTERM or SIGINT; `load` reads the
/// configuration (again at SIGHUP). Lines for its log go to standard
/// error.
pub fn run(load: &dyn Fn() -> Result<DefragSetup, String>) -> Result<(), String> {
    // SAFETY: the handlers only store to atomics.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_hangup as *const () as libc::sighandler_t);
    }
    let mut daemon = DefragDaemon::new(load()?, now())?;
    let say = |line: &str| eprintln!("ferrocondor defrag: {line}");
    say(&format!(
        "{}: will evaluate the defragmentation policy every DEFRAG_INTERVAL={} seconds",
        daemon.defrag.policy.name, daemon.defrag.policy.interval
    ));
    let start = Instant::now();
    let secs = |n: i64| Duration::from_secs(n.max(1) as u64);
    let mut next_poll = Some(start);
    let mut next_update = start;
    while !STOP.load(Ordering::SeqCst) {
        if RECONFIG.swap(false, Ordering::SeqCst) {
            match load().and_then(|s| daemon.reconfigure(s)) {
                Ok(()) => say("reconfig: read the configuration again"),
                Err(e) => say(&format!("reconfig: kept the old configuration: {e}")),
            }
            let now = Instant::now();
            next_poll = (daemon.defrag.policy.interval > 0).then(|| {
                next_poll
                    .unwrap_or(now)
                    .min(now + secs(daemon.defrag.policy.interval))
            });
        }
        let t = Instant::now();
        let mut polled = false;
        if daemon.defrag.policy.interval > 0 && next_poll.is_some_and(|p| p <= t) {
            for line in daemon.poll(now()) {
                say(&line);
            }
            next_poll = Some(t + secs(daemon.defrag.policy.interval));
            polled = true;
        }
        if polled || next_update <= t {
            if let Err(e) = daemon.advertise(now()) {
                say(&e);
            }
            next_update = t + secs(daemon.update_interval);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Err(e) = daemon.withdraw() {
        say(&e);
    }
    say("down");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_order_becomes_htcondor_s_request_ad() {
        let order = DrainOrder {
            machine: "m1".into(),
            slot: "slot1@m1".into(),
            how: Schedule::Quick,
            reason: "Defrag d@h".into(),
            resume_on_completion: true,
            check_expr: "ExpectedMachineQuickDrainingCompletion <= 1200".into(),
            start_expr: Some(classad::parse_expr("TARGET.MaxJobRetirementTime =?= 0").unwrap()),
        };
        let req = drain_request(&order);
        assert_eq!(cedar::ad::int_attr(&req, "HowFast"), Some(10));
        assert_eq!(
            cedar::ad::string_attr(&req, "DrainReason").as_deref(),
            Some("Defrag d@h")
        );
        assert_eq!(cedar::ad::int_attr(&req, "ResumeOnCompletion"), Some(1));
        assert!(req.get("CheckExpr").is_some());
        assert!(req.get("StartExpr").is_some());
    }

    #[test]
    fn the_master_runs_defrag_after_the_pool_s_roles() {
        let c = config::load(
            &config::LoadOptions::new("MASTER", config::Root::File("c".into())),
            &config::MemFiles::new().with("c", "DAEMON_LIST = MASTER DEFRAG COLLECTOR STARTD\n"),
            &config::FixedHost::empty(),
        )
        .unwrap();
        let (roles, notes) = crate::master::daemon_list(&c).unwrap();
        use crate::roles::RoleName;
        assert_eq!(
            roles,
            [RoleName::Startd, RoleName::Collector, RoleName::Defrag]
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    /// A startd that cannot be reached: the drain the plan ordered is a
    /// failure in the daemon ad, not a success.
    #[test]
    fn a_drain_that_cannot_be_sent_counts_as_failed() {
        let c = config::load(
            &config::LoadOptions::new("DEFRAG", config::Root::File("c".into())),
            &config::MemFiles::new().with(
                "c",
                "FULL_HOSTNAME = cm\nDEFRAG_INTERVAL = 600\n\
                 DEFRAG_DRAINING_MACHINES_PER_HOUR = 3600\n",
            ),
            &config::FixedHost::empty(),
        )
        .unwrap();
        let setup = DefragSetup::from_config(c, std::path::Path::new("/nonexistent"));
        let mut d = DefragDaemon::new(setup, 1_700_000_000).unwrap();
        // Port 1 of loopback: nothing listens there.
        let ads = vec![ClassAd::parse(
            "[ Name = \"slot1@m1\"; SlotID = 1; PartitionableSlot = true; Cpus = 1; \
               TotalSlotCpus = 4; MyAddress = \"<127.0.0.1:1>\" ]",
        )
        .unwrap()];
        let plan = d.defrag.poll(&ads, 1_700_000_000);
        assert_eq!(plan.drain.len(), 1);
        let mut log = Vec::new();
        d.carry_out(&plan, &ads, &mut log);
        assert!(
            log.iter().any(|l| l.starts_with("could not drain m1")),
            "{log:?}"
        );
        let ad = d.ad(1_700_000_000);
        assert_eq!(cedar::ad::int_attr(&ad, "DrainSuccesses"), Some(0));
        assert_eq!(cedar::ad::int_attr(&ad, "DrainFailures"), Some(1));
        assert_eq!(
            cedar::ad::string_attr(&ad, "Machine").as_deref(),
            Some("cm")
        );
    }

    #[test]
    fn a_machine_is_found_at_its_slots_address() {
        let mut a = ClassAd::new();
        a.insert_value("Name", "slot1@m1.example");
        a.insert_value("MyAddress", "<127.0.0.1:9?noUDP>");
        assert_eq!(
            address_of(&[a], "m1.example").as_deref(),
            Some("<127.0.0.1:9?noUDP>")
        );
    }
}
