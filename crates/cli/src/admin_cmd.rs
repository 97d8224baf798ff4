//! The personal pool's administrative tools, as HTCondor's: `vacate`
//! (condor_vacate), `drain` (condor_drain), `userprio` (condor_userprio)
//! and `reconfig` (condor_reconfig). Each asks the running pool and says
//! what was done in HTCondor's words; a refusal (not the pool's owner, a
//! configuration that does not read) is the pool's message, exit 2.

use std::io::Write;

use cedar::commands as cmd;
use cedar::sock::SockError;
use cedar::{get_ad, get_ad_no_types, put_ad, PutOptions, Sinful};
use classad::{ClassAd, Env, Value};

use crate::args::{DrainArgs, UserprioArgs, VacateArgs};
use crate::daemon_client::{classad_string, Daemons, Kind};
use crate::errors::{Error, Outcome};

/// The pool's daemons as the administrative tools reach them, and which
/// of them are this host's.
struct Admin {
    daemons: Daemons,
}

impl Admin {
    /// The pool the configuration (read as the TOOL subsystem) and the
    /// state directory name, as [`Daemons::new`] finds it.
    fn new() -> Result<Admin, Error> {
        Ok(Admin {
            daemons: Daemons::new(None)?,
        })
    }

    /// FULL_HOSTNAME: which daemons are this host's.
    fn hostname(&self) -> &str {
        self.daemons.hostname()
    }

    /// Sends `payload` (nothing when empty) as the command's message, then
    /// waits for the daemon's answer: an ad, or the end of the connection
    /// once the daemon has done it (commands HTCondor answers with
    /// nothing). An answer that says the command failed is an error.
    fn send(
        &self,
        kind: Kind,
        addr: &Sinful,
        command: i32,
        payload: impl FnOnce(&mut cedar::Encoder),
    ) -> Result<Option<ClassAd>, Error> {
        let fail = |e: SockError| self.daemons.broken(kind, addr, command, e);
        let mut sock = self.daemons.connect(kind, addr, command)?;
        let mut e = sock.encoder();
        payload(&mut e);
        if !e.is_empty() {
            sock.send(&e).map_err(fail)?;
        }
        let answer = match sock.recv_next().map_err(fail)? {
            None => None,
            Some(msg) => {
                let mut d = sock.decoder(&msg);
                // The negotiator sends its priority table without types,
                // as HTCondor's does; every other answer is a whole ad.
                let ad = if command == cmd::GET_PRIORITY {
                    get_ad_no_types(&mut d)
                } else {
                    get_ad(&mut d)
                };
                Some(ad.map_err(|e| fail(SockError::Decode(e)))?)
            }
        };
        sock.close();
        match answer.as_ref().and_then(failure) {
            Some(why) => Err(self.daemons.refused(kind, addr, command, &why)),
            None => Ok(answer),
        }
    }

    /// The startds' slots, from their ads at the collector.
    fn slots(&self) -> Result<Vec<Slot>, Error> {
        let ads = self.daemons.query_collector(
            cmd::QUERY_STARTD_ADS,
            None,
            &["Name", "Machine", "MyAddress"],
        )?;
        ads.iter()
            .map(|ad| {
                Ok(Slot {
                    name: string_attr(ad, "Name"),
                    machine: string_attr(ad, "Machine"),
                    address: self.daemons.my_address(Kind::Startd, Some(ad))?,
                })
            })
            .collect()
    }

    /// The local startd: the one whose slots are this host's (else the
    /// pool's only one).
    fn local_startd<'s>(&self, slots: &'s [Slot]) -> Result<&'s Slot, Error> {
        let here = slots.iter().find(|s| s.machine == self.hostname());
        let only = match slots.first() {
            Some(first) if slots.iter().all(|s| s.address == first.address) => Some(first),
            _ => None,
        };
        here.or(only).ok_or_else(|| {
            Error::Input(match slots.is_empty() {
                true => "the collector knows no startd in this pool".to_string(),
                false => format!(
                    "no startd of this host ({}) is known to the collector: name a machine (see `ferrocondor status`)",
                    self.hostname()
                ),
            })
        })
    }
}

/// Why an answer ad says its command failed (`Result = false`, or a
/// nonzero `ErrorCode`), or `None`.
fn failure(ad: &ClassAd) -> Option<String> {
    let env = Env::default();
    let failed = matches!(ad.eval_attr("Result", &env), Value::Bool(false))
        || matches!(ad.eval_attr("ErrorCode", &env), Value::Int(c) if c != 0);
    failed.then(|| {
        let why = string_attr(ad, "ErrorString");
        if why.is_empty() {
            match ad.eval_attr("ErrorCode", &env) {
                Value::Int(c) => format!("failed with error code {c}"),
                _ => "failed".to_string(),
            }
        } else {
            why
        }
    })
}

/// `name`'s string value, or nothing.
fn string_attr(ad: &ClassAd, name: &str) -> String {
    cedar::ad::string_attr(ad, name).unwrap_or_default()
}

/// One slot ad at the collector: its name, its machine, its startd.
#[derive(Clone, Debug, PartialEq)]
struct Slot {
    name: String,
    machine: String,
    address: Sinful,
}

/// What a target on the command line names: the whole machine, or one
/// slot (by its startd-local name, `slot1`, or its full name).
#[derive(Debug, PartialEq)]
enum Target<'s> {
    Machine(&'s Slot),
    Slot(&'s Slot),
}

fn resolve<'s>(target: &str, slots: &'s [Slot]) -> Result<Target<'s>, Error> {
    if let Some(s) = slots.iter().find(|s| s.machine == target) {
        return Ok(Target::Machine(s));
    }
    let found = slots.iter().find(|s| {
        s.name == target || s.name.split_once('@').map(|(local, _)| local) == Some(target)
    });
    match found {
        Some(s) => Ok(Target::Slot(s)),
        None => Err(Error::Input(format!(
            "there is no slot or machine named {target} in this pool (see `ferrocondor status`)"
        ))),
    }
}

/// `condor_vacate [-fast] [MACHINE|SLOT...]`: evicts the jobs of the
/// slots named (every slot of the local startd when none is), which go
/// back to idle in the queue. A slot gets VACATE_CLAIM(_FAST) with its
/// name, a machine VACATE_ALL_CLAIMS (VACATE_ALL_FAST), at its startd.
pub fn vacate(a: &VacateArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let admin = Admin::new()?;
    let (all, one) = if a.fast {
        (cmd::VACATE_ALL_FAST, cmd::VACATE_CLAIM_FAST)
    } else {
        (cmd::VACATE_ALL_CLAIMS, cmd::VACATE_CLAIM)
    };
    let said = |c: i32| {
        if c == all {
            all_name(a.fast)
        } else {
            one_name(a.fast)
        }
    };
    let slots = admin.slots()?;
    // (command, the slot's name for VACATE_CLAIM, where, whom).
    let mut plan: Vec<(i32, Option<String>, Sinful, String)> = Vec::new();
    if a.targets.is_empty() {
        let s = admin.local_startd(&slots)?;
        plan.push((all, None, s.address.clone(), "local startd".into()));
    } else {
        for t in &a.targets {
            match resolve(t, &slots)? {
                Target::Machine(s) => plan.push((
                    all,
                    None,
                    s.address.clone(),
                    format!("startd {}", s.machine),
                )),
                Target::Slot(s) => plan.push((
                    one,
                    Some(s.name.clone()),
                    s.address.clone(),
                    format!("startd {}", s.name),
                )),
            }
        }
    }
    for (command, slot, addr, whom) in plan {
        admin.send(Kind::Startd, &addr, command, |e| {
            if let Some(name) = &slot {
                e.put_str(name);
            }
        })?;
        writeln!(out, "Sent \"{}\" command to {whom}", said(command))?;
    }
    Ok(Outcome::Success)
}

/// HTCondor's names for the vacate commands, as condor_vacate says them.
fn all_name(fast: bool) -> &'static str {
    if fast {
        "Vacate-All-Claims-Fast"
    } else {
        "Vacate-All-Claims"
    }
}

fn one_name(fast: bool) -> &'static str {
    if fast {
        "Vacate-Claim-Fast"
    } else {
        "Vacate-Claim"
    }
}

/// HTCondor's DRAIN_GRACEFUL, DRAIN_QUICK, DRAIN_FAST.
fn how_fast(a: &DrainArgs) -> i64 {
    if a.fast {
        20
    } else if a.quick {
        10
    } else {
        0
    }
}

/// condor_drain's request ad (DCStartd::drainJobs): DrainReason (else
/// `by USER`), HowFast, ResumeOnCompletion, StartExpr.
fn drain_request(a: &DrainArgs, user: &str) -> Result<ClassAd, Error> {
    let mut req = ClassAd::new();
    let reason = a.reason.clone().unwrap_or_else(|| format!("by {user}"));
    req.insert_value("DrainReason", reason.as_str());
    req.insert_value("HowFast", how_fast(a));
    req.insert_value("ResumeOnCompletion", i64::from(a.resume_on_completion));
    if let Some(start) = &a.start {
        let parsed = classad::parse_expr(start).map_err(|e| {
            Error::Input(format!(
                "the start expression does not parse: {}",
                e.display_with_source("<start>")
            ))
        })?;
        req.insert("StartExpr", parsed);
    }
    if let Some(check) = &a.check {
        let parsed = classad::parse_expr(check).map_err(|e| {
            Error::Input(format!(
                "the check expression does not parse: {}",
                e.display_with_source("<check>")
            ))
        })?;
        req.insert("CheckExpr", parsed);
    }
    Ok(req)
}

/// `condor_drain [-graceful|-quick|-fast] [-resume-on-completion]
/// [-start EXPR] [-reason TEXT] [-check EXPR] [MACHINE]`, and `-cancel`: DRAIN_JOBS or
/// CANCEL_DRAIN_JOBS with a request ad to the machine's startd (the local
/// one when none is named), which answers with `Result`.
pub fn drain(a: &DrainArgs, out: &mut dyn Write) -> Result<Outcome, Error> {
    let admin = Admin::new()?;
    let req = if a.cancel {
        ClassAd::new()
    } else {
        drain_request(a, &crate::jobview::my_name())?
    };
    let slots = admin.slots()?;
    let startd = match &a.machine {
        Some(m) => slots.iter().find(|s| &s.machine == m).ok_or_else(|| {
            Error::Input(format!(
                "there is no machine named {m} in this pool (see `ferrocondor status`)"
            ))
        })?,
        None => admin.local_startd(&slots)?,
    };
    let command = if a.cancel {
        cmd::CANCEL_DRAIN_JOBS
    } else {
        cmd::DRAIN_JOBS
    };
    let answer = admin.send(Kind::Startd, &startd.address, command, |e| {
        put_ad(e, &req, &PutOptions::default());
    })?;
    if answer.is_none() {
        return Err(admin.daemons.refused(
            Kind::Startd,
            &startd.address,
            command,
            "the startd closed the connection without an answer",
        ));
    }
    if a.cancel {
        writeln!(out, "Sent request to cancel draining on {}", startd.machine)?;
    } else {
        writeln!(out, "Sent request to drain {}", startd.machine)?;
    }
    Ok(Outcome::Success)
}

/// `condor_reconfig`: DC_RECONFIG_FULL to each of this host's daemons
/// (one process serves every role of `pool up`; `ferrocondor master` runs
/// one per role, each with its own port), found from their ads at the
/// collector; each reads its configuration again.
pub fn reconfig(out: &mut dyn Write) -> Result<Outcome, Error> {
    let admin = Admin::new()?;
    let constraint = format!(
        "Machine == {} && MyAddress isnt undefined",
        classad_string(admin.hostname())
    );
    let ads = admin.daemons.query_collector(
        cmd::QUERY_ANY_ADS,
        Some(&constraint),
        &["MyType", "Machine", "MyAddress"],
    )?;
    let mut found = Vec::new();
    for ad in &ads {
        let kind = kind_of(&string_attr(ad, "MyType"));
        found.push((kind, admin.daemons.my_address(kind, Some(ad))?));
    }
    // Under a master, each daemon of this host says where it listens in
    // the state directory: those are told even when the collector has not
    // (or no longer) their ads.
    for (kind, role) in [
        (Kind::Collector, daemons::roles::RoleName::Collector),
        (Kind::Negotiator, daemons::roles::RoleName::Negotiator),
        (Kind::Schedd, daemons::roles::RoleName::Schedd),
        (Kind::Startd, daemons::roles::RoleName::Startd),
    ] {
        let file =
            daemons::role_transport::address_file(&admin.daemons.state().join("roles"), role);
        let addr = daemons::role_transport::read_address(&file);
        if let Some(addr) = addr {
            found.push((kind, addr));
        }
    }
    let targets = daemons_to_tell(found);
    if targets.is_empty() {
        return Err(Error::Daemon(format!(
            "the collector at {} knows no daemon of this host ({})",
            admin.daemons.collector()?,
            admin.hostname()
        )));
    }
    for (kind, addr) in &targets {
        admin.send(*kind, addr, cmd::DC_RECONFIG_FULL, |_| {})?;
    }
    writeln!(out, "Sent \"Reconfig\" command to local master")?;
    Ok(Outcome::Success)
}

/// Which daemon an ad's MyType is, for messages.
fn kind_of(my_type: &str) -> Kind {
    match my_type.to_ascii_lowercase().as_str() {
        "collector" => Kind::Collector,
        "negotiator" => Kind::Negotiator,
        "scheduler" | "submitter" => Kind::Schedd,
        "machine" => Kind::Startd,
        _ => Kind::Master,
    }
}

/// Each address once (a process that serves several roles is told once),
/// the collector first (it answers the others' updates), in the order
/// found otherwise.
fn daemons_to_tell(found: Vec<(Kind, Sinful)>) -> Vec<(Kind, Sinful)> {
    let mut out: Vec<(Kind, Sinful)> = Vec::new();
    let (first, rest): (Vec<_>, Vec<_>) =
        found.into_iter().partition(|(k, _)| *k == Kind::Collector);
    for (kind, addr) in first.into_iter().chain(rest) {
        let same = |a: &Sinful| a.host == addr.host && a.port == addr.port;
        if !out.iter().any(|(_, a)| same(a)) {
            out.push((kind, addr));
        }
    }
    out
}

/// The accountant's table as GET_PRIORITY gives it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priorities {
    /// `LastUpdate`: when the accountant last updated the priorities.
    pub last_update: i64,
    pub rows: Vec<PrioRow>,
}

/// One submitter (or accounting group) of the table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrioRow {
    pub name: String,
    pub effective_priority: f64,
    /// 0 when the ad gives no factor (HTCondor shows no factor then).
    pub priority_factor: f64,
    /// WeightedResourcesUsed, else ResourcesUsed.
    pub resources_used: f64,
    pub accumulated_usage_hours: f64,
    pub begin_usage_time: i64,
    pub last_usage_time: i64,
    pub is_group: bool,
}

impl PrioRow {
    /// The real priority: the effective one over the factor.
    fn real_priority(&self) -> f64 {
        if self.priority_factor > 0.0 {
            self.effective_priority / self.priority_factor
        } else {
            0.0
        }
    }
}

/// The table in the negotiator's priority ad, read as condor_userprio
/// reads it (`CollectInfo`): `NumSubmittors`, then for each N `NameN` and
/// `PriorityN` (a record without both is left out), `PriorityFactorN`,
/// `WeightedResourcesUsedN` (else `ResourcesUsedN`),
/// `WeightedAccumulatedUsageN` (seconds), `BeginUsageTimeN`,
/// `LastUsageTimeN`, `IsAccountingGroupN`; `LastUpdate`.
pub fn priorities(ad: &ClassAd) -> Priorities {
    let env = Env::default();
    let int = |n: &str| match ad.eval_attr(n, &env) {
        Value::Int(i) => Some(i),
        Value::Real(r) => Some(r as i64),
        _ => None,
    };
    let real = |n: &str| match ad.eval_attr(n, &env) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) => Some(r),
        _ => None,
    };
    let count = int("NumSubmittors").unwrap_or(0).max(0);
    let mut rows = Vec::new();
    for i in 1..=count {
        let (Value::Str(name), Some(priority)) = (
            ad.eval_attr(&format!("Name{i}"), &env),
            real(&format!("Priority{i}")),
        ) else {
            continue;
        };
        let resources = real(&format!("WeightedResourcesUsed{i}"))
            .or_else(|| real(&format!("ResourcesUsed{i}")))
            .unwrap_or(0.0);
        rows.push(PrioRow {
            name: name.to_string(),
            effective_priority: priority,
            priority_factor: real(&format!("PriorityFactor{i}")).unwrap_or(0.0),
            resources_used: resources,
            accumulated_usage_hours: real(&format!("WeightedAccumulatedUsage{i}")).unwrap_or(0.0)
                / 3600.0,
            begin_usage_time: int(&format!("BeginUsageTime{i}")).unwrap_or(0),
            last_usage_time: int(&format!("LastUsageTime{i}")).unwrap_or(0),
            is_group: matches!(
                ad.eval_attr(&format!("IsAccountingGroup{i}"), &env),
                Value::Bool(true)
            ),
        });
    }
    Priorities {
        last_update: int("LastUpdate").unwrap_or(0),
        rows,
    }
}

/// `condor_userprio`: with -setfactor, -setprio or -resetusage, the
/// change (SET_PRIORITYFACTOR, SET_PRIORITY, RESET_USAGE to the
/// negotiator) and HTCondor's sentence about it; otherwise the table
/// (GET_PRIORITY). The negotiator is found by its ad at the collector.
pub fn userprio(a: &UserprioArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    let number = |what: &str, v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .ok_or_else(|| Error::Usage(format!("{what}: `{v}` is not a number")))
    };
    let set_factor = match a.setfactor.as_slice() {
        [user, f] => {
            let f = number("-setfactor", f)?;
            if f < 1.0 {
                return Err(Error::Usage(
                    "Priority factors must be greater than or equal to 1.".into(),
                ));
            }
            Some((user.clone(), f))
        }
        _ => None,
    };
    let set_priority = match a.setprio.as_slice() {
        [user, p] => Some((user.clone(), number("-setprio", p)?)),
        _ => None,
    };
    let admin = Admin::new()?;
    let negotiators =
        admin
            .daemons
            .query_collector(cmd::QUERY_NEGOTIATOR_ADS, None, &["Name", "MyAddress"])?;
    let negotiator = admin
        .daemons
        .my_address(Kind::Negotiator, negotiators.first())?;
    let to_negotiator = |command: i32, payload: &dyn Fn(&mut cedar::Encoder)| {
        admin.send(Kind::Negotiator, &negotiator, command, payload)
    };
    let changed = set_factor.is_some() || set_priority.is_some() || a.resetusage.is_some();
    if let Some((user, p)) = &set_priority {
        to_negotiator(cmd::SET_PRIORITY, &|e| {
            e.put_str(user).put_double(*p);
        })?;
        writeln!(out, "The priority of {user} was set to {p:.6}")?;
    }
    if let Some((user, f)) = &set_factor {
        to_negotiator(cmd::SET_PRIORITYFACTOR, &|e| {
            e.put_str(user).put_double(*f);
        })?;
        writeln!(out, "The priority factor of {user} was set to {f:.6}")?;
    }
    if let Some(user) = &a.resetusage {
        to_negotiator(cmd::RESET_USAGE, &|e| {
            e.put_str(user);
        })?;
        writeln!(out, "The accumulated usage of {user} was reset")?;
    }
    if changed {
        return Ok(Outcome::Success);
    }
    let ad = to_negotiator(cmd::GET_PRIORITY, &|_| {})?.ok_or_else(|| {
        admin.daemons.refused(
            Kind::Negotiator,
            &negotiator,
            cmd::GET_PRIORITY,
            "the negotiator closed the connection without the priorities",
        )
    })?;
    let table = priorities(&ad);
    let offset = crate::system::utc_offset(now);
    let view = View {
        all: a.all,
        min_last_usage: if a.allusers { -1 } else { now - 86_400 },
        utc_offset: offset,
    };
    out.write_all(userprio_table(&table, &view).as_bytes())?;
    Ok(Outcome::Success)
}

/// How the userprio table is shown.
pub struct View {
    /// `-all`: also the real priority and the usage start and last times.
    pub all: bool,
    /// Users whose last usage is older are left out (`-allusers`: -1).
    pub min_last_usage: i64,
    pub utc_offset: i32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Priority,
    RealPrio,
    Factor,
    ResUsed,
    WtResUsed,
    UseTime1,
    UseTime2,
    UseDeltaT,
}

impl Col {
    fn width(self) -> usize {
        match self {
            Col::Priority | Col::WtResUsed => 12,
            Col::RealPrio => 8,
            Col::Factor => 9,
            Col::ResUsed => 6,
            Col::UseTime1 | Col::UseTime2 => 16,
            Col::UseDeltaT => 10,
        }
    }

    fn heading(self) -> (&'static str, &'static str) {
        match self {
            Col::Priority => ("Effective", "Priority"),
            Col::RealPrio => ("Real", "Priority"),
            Col::Factor => ("Priority", "Factor"),
            Col::ResUsed => ("Wghted", "In Use"),
            Col::WtResUsed => ("Total Usage", "(wghted-hrs)"),
            Col::UseTime1 => ("Usage", "Start Time"),
            Col::UseTime2 => ("Last", "Usage Time"),
            Col::UseDeltaT => ("Time Since", "Last Usage"),
        }
    }
}

/// `text` centred in `w` (the extra space on the right), cut to `w`.
fn center(text: &str, w: usize) -> String {
    let t: String = text.chars().take(w).collect();
    let l = (w - t.len()) / 2;
    format!("{}{t}{}", " ".repeat(l), " ".repeat(w - l - t.len()))
}

/// `text` right-aligned in `w`, cut to `w`.
fn right(text: &str, w: usize) -> String {
    let t: String = text.chars().take(w).collect();
    format!("{t:>w$}")
}

/// HTCondor's number cell: `%W.Df`, or `%.{W-6}g` when that is too wide.
fn float_cell(v: f64, w: usize, decimals: usize) -> String {
    let s = format!("{v:>w$.decimals$}");
    if s.len() <= w {
        return s;
    }
    right(&general(v, w.saturating_sub(6)), w)
}

/// C's `%.Pg`.
fn general(v: f64, precision: usize) -> String {
    let p = precision.max(1);
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let strip = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if x < -4 || x >= p as i32 {
        let m = strip(mantissa.to_string());
        format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs())
    } else {
        strip(format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, v))
    }
}

/// `M/D HH:MM` (`%2d/%-2d %02d:%02d`), as condor_userprio's first line.
fn short_date(t: i64, offset: i32) -> String {
    let c = classad::time::civil(t, offset);
    format!("{:>2}/{:<2} {:02}:{:02}", c.month, c.day, c.hour, c.minute)
}

/// `M/DD/YYYY HH:MM` (`%2d/%02d/%-4d %02d:%02d`).
fn long_date(t: i64, offset: i32) -> String {
    let c = classad::time::civil(t, offset);
    format!(
        "{:>2}/{:02}/{:<4} {:02}:{:02}",
        c.month, c.day, c.year, c.hour, c.minute
    )
}

/// `D+HH:MM`.
fn delta(secs: i64) -> String {
    let s = secs.max(0);
    format!("{}+{:02}:{:02}", s / 86400, s % 86400 / 3600, s % 3600 / 60)
}

/// condor_userprio's table: `Last Priority Update:`, two heading rows,
/// dashes, a row per submitter used in the last day (every one with
/// -allusers), by effective priority, dashes, and `Number of users:`
/// with the totals. The root group's own record (`<none>`) is not shown.
pub fn userprio_table(answer: &Priorities, view: &View) -> String {
    if answer.rows.is_empty() {
        return String::new();
    }
    let cols: Vec<Col> = if view.all {
        vec![
            Col::Priority,
            Col::RealPrio,
            Col::Factor,
            Col::ResUsed,
            Col::WtResUsed,
            Col::UseTime1,
            Col::UseTime2,
            Col::UseDeltaT,
        ]
    } else {
        vec![
            Col::Priority,
            Col::Factor,
            Col::ResUsed,
            Col::WtResUsed,
            Col::UseDeltaT,
        ]
    };
    // A submitter with slots in use uses the pool now, even before the
    // accountant's next update charges it; one never charged counts as
    // used before any day (HTCondor's -1).
    let last_usage = |r: &PrioRow| {
        if r.resources_used > 0.0 {
            r.last_usage_time.max(answer.last_update)
        } else if r.last_usage_time == 0 {
            -1
        } else {
            r.last_usage_time
        }
    };
    let mut shown: Vec<&PrioRow> = answer
        .rows
        .iter()
        .filter(|r| last_usage(r) >= view.min_last_usage)
        .filter(|r| !(r.is_group && r.name == "<none>"))
        .collect();
    shown.sort_by(|a, b| {
        a.effective_priority
            .total_cmp(&b.effective_priority)
            .then_with(|| a.name.cmp(&b.name))
    });
    let count_label = |n: usize| format!("Number of users: {n}");
    let name_w = shown
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .clamp(10, 99)
        .max(count_label(answer.rows.len()).len());
    let line = |first: String, cells: &dyn Fn(Col) -> String| {
        let mut l = format!(
            "{:<name_w$}",
            first.chars().take(name_w).collect::<String>()
        );
        for &c in &cols {
            l.push(' ');
            l.push_str(&cells(c));
        }
        l.push('\n');
        l
    };
    let mut s = format!(
        "Last Priority Update: {}\n",
        short_date(answer.last_update, view.utc_offset)
    );
    s.push_str(&line(String::new(), &|c| center(c.heading().0, c.width())));
    s.push_str(&line("User Name".into(), &|c| {
        center(c.heading().1, c.width())
    }));
    let dashes = line("-".repeat(name_w), &|c| "-".repeat(c.width()));
    s.push_str(&dashes);
    let (mut users, mut in_use, mut usage) = (0, 0.0, 0.0);
    for r in &shown {
        if !r.is_group {
            users += 1;
            in_use += r.resources_used;
            usage += r.accumulated_usage_hours;
        }
        s.push_str(&line(r.name.clone(), &|c| {
            let w = c.width();
            match c {
                Col::Priority => float_cell(r.effective_priority, w, 2),
                Col::RealPrio => float_cell(r.real_priority(), w, 2),
                Col::Factor if r.priority_factor > 0.0 => float_cell(r.priority_factor, w, 2),
                Col::Factor => " ".repeat(w),
                Col::ResUsed => float_cell(r.resources_used, w, 0),
                Col::WtResUsed => float_cell(r.accumulated_usage_hours, w, 2),
                Col::UseTime1 if r.begin_usage_time > 0 => {
                    right(&long_date(r.begin_usage_time, view.utc_offset), w)
                }
                Col::UseTime2 if last_usage(r) > 0 => {
                    right(&long_date(last_usage(r), view.utc_offset), w)
                }
                Col::UseTime1 | Col::UseTime2 => " ".repeat(w),
                Col::UseDeltaT => {
                    let d = answer.last_update - last_usage(r);
                    right(&if d <= 0 { "<now>".into() } else { delta(d) }, w)
                }
            }
        }));
    }
    s.push_str(&dashes);
    s.push_str(&line(count_label(users), &|c| {
        let w = c.width();
        match c {
            Col::ResUsed => float_cell(in_use, w, 0),
            Col::WtResUsed => float_cell(usage, w, 2),
            Col::UseTime2 if view.min_last_usage > 0 => {
                right(&long_date(view.min_last_usage, view.utc_offset), w)
            }
            Col::UseDeltaT if view.min_last_usage > 0 => {
                let d = answer.last_update - view.min_last_usage;
                right(&if d <= 0 { "<now>".into() } else { delta(d) }, w)
            }
            _ => " ".repeat(w),
        }
    }));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, prio: f64, used: f64, last: i64) -> PrioRow {
        PrioRow {
            name: name.into(),
            effective_priority: prio,
            priority_factor: 1000.0,
            resources_used: used,
            accumulated_usage_hours: 0.5,
            begin_usage_time: 1_700_000_000,
            last_usage_time: last,
            is_group: false,
        }
    }

    #[test]
    fn the_userprio_table_is_htcondors() {
        let now = 1_700_000_000;
        let answer = Priorities {
            last_update: now,
            rows: vec![
                row("bob@host", 2000.0, 0.0, now - 3700),
                row("alice@host", 500.5, 1.0, now),
                row("old@host", 500.0, 0.0, now - 90_000),
                PrioRow {
                    is_group: true,
                    ..row("<none>", 500.0, 1.0, now)
                },
            ],
        };
        let view = View {
            all: false,
            min_last_usage: now - 86_400,
            utc_offset: 0,
        };
        let t = userprio_table(&answer, &view);
        let lines: Vec<&str> = t.lines().collect();
        let want = [
            "Last Priority Update: 11/14 22:13",
            "                    Effective   Priority  Wghted Total Usage  Time Since",
            "User Name            Priority    Factor   In Use (wghted-hrs) Last Usage",
            "------------------ ------------ --------- ------ ------------ ----------",
            "alice@host               500.50   1000.00      1         0.50      <now>",
            "bob@host                2000.00   1000.00      0         0.50    0+01:01",
            "------------------ ------------ --------- ------ ------------ ----------",
            "Number of users: 2                             1         1.00    1+00:00",
        ];
        assert_eq!(lines, want, "{t}");
        assert_eq!(lines.len(), 8);
    }

    #[test]
    fn numbers_too_wide_fall_back_to_general_form() {
        assert_eq!(float_cell(1.5, 6, 0), "     2");
        assert_eq!(general(123456789.0, 6), "1.23457e+08");
        assert_eq!(general(0.0001, 3), "0.0001");
        assert_eq!(general(1234.0, 3), "1.23e+03");
        assert_eq!(float_cell(1e20, 9, 2), "    1e+20");
    }

    /// The ad as HTCondor's negotiator (and ours) sends it.
    fn priority_ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap()
    }

    #[test]
    fn the_priority_ad_is_read_as_condor_userprio_reads_it() {
        let ad = priority_ad(
            r#"[ LastUpdate = 1700000000; NumSubmittors = 3;
                Name1 = "alice@host"; Priority1 = 1000.0; PriorityFactor1 = 2000.0;
                ResourcesUsed1 = 2; WeightedResourcesUsed1 = 1.5;
                WeightedAccumulatedUsage1 = 5400.0; AccumulatedUsage1 = 5400.0;
                BeginUsageTime1 = 1699990000; LastUsageTime1 = 1699999000;
                IsAccountingGroup1 = false; AccountingGroup1 = "alice@host";
                Name2 = "broken@host";
                Name3 = "<none>"; Priority3 = 500; ResourcesUsed3 = 1;
                IsAccountingGroup3 = true ]"#,
        );
        let t = priorities(&ad);
        assert_eq!(t.last_update, 1_700_000_000);
        assert_eq!(t.rows.len(), 2, "a record without Priority is left out");
        let a = &t.rows[0];
        assert_eq!(
            a,
            &PrioRow {
                name: "alice@host".into(),
                effective_priority: 1000.0,
                priority_factor: 2000.0,
                resources_used: 1.5,
                accumulated_usage_hours: 1.5,
                begin_usage_time: 1_699_990_000,
                last_usage_time: 1_699_999_000,
                is_group: false,
            }
        );
        assert_eq!(a.real_priority(), 0.5);
        let g = &t.rows[1];
        assert!(g.is_group);
        assert_eq!(g.effective_priority, 500.0, "an integer priority reads");
        assert_eq!(
            g.resources_used, 1.0,
            "ResourcesUsed without the weighted one"
        );
        assert_eq!((g.priority_factor, g.real_priority()), (0.0, 0.0));
        assert_eq!(priorities(&ClassAd::new()), Priorities::default());
    }

    #[test]
    fn an_answer_that_says_failed_is_an_error() {
        let ad = |t: &str| priority_ad(t);
        assert_eq!(failure(&ad("[ Result = true; RequestID = \"1\" ]")), None);
        assert_eq!(failure(&ad("[ ErrorCode = 0 ]")), None);
        assert_eq!(
            failure(&ad(
                "[ Result = false; ErrorCode = 1; ErrorString = \"already draining\" ]"
            )),
            Some("already draining".into())
        );
        assert_eq!(
            failure(&ad("[ ErrorCode = 4 ]")),
            Some("failed with error code 4".into())
        );
    }

    fn slot(name: &str, machine: &str, port: u16) -> Slot {
        Slot {
            name: name.into(),
            machine: machine.into(),
            address: Sinful::parse(&format!("<127.0.0.1:{port}>"), 0).unwrap(),
        }
    }

    #[test]
    fn targets_name_a_machine_or_a_slot() {
        let slots = [
            slot("slot1@a.example", "a.example", 1),
            slot("slot2@a.example", "a.example", 1),
            slot("slot1@b.example", "b.example", 2),
        ];
        assert_eq!(
            resolve("b.example", &slots).unwrap(),
            Target::Machine(&slots[2])
        );
        assert_eq!(
            resolve("slot2@a.example", &slots).unwrap(),
            Target::Slot(&slots[1])
        );
        assert_eq!(resolve("slot1", &slots).unwrap(), Target::Slot(&slots[0]));
        let e = resolve("slot9", &slots).unwrap_err().to_string();
        assert!(e.contains("no slot or machine named slot9"), "{e}");
    }

    #[test]
    fn each_daemon_is_told_once_the_collector_first() {
        let at = |p: u16| Sinful::parse(&format!("<127.0.0.1:{p}?noUDP>"), 0).unwrap();
        // `pool up`: every role at one address.
        let one = daemons_to_tell(vec![
            (Kind::Startd, at(9)),
            (Kind::Schedd, at(9)),
            (Kind::Collector, at(9)),
            (Kind::Negotiator, at(9)),
        ]);
        assert_eq!(one, [(Kind::Collector, at(9))]);
        // `master`: one process per role; the slots share their startd's.
        let four = daemons_to_tell(vec![
            (Kind::Startd, at(4)),
            (Kind::Startd, at(4)),
            (Kind::Schedd, at(3)),
            (Kind::Negotiator, at(2)),
            (Kind::Collector, at(1)),
        ]);
        let kinds: Vec<Kind> = four.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                Kind::Collector,
                Kind::Startd,
                Kind::Schedd,
                Kind::Negotiator
            ]
        );
        assert_eq!(kind_of("Machine"), Kind::Startd);
        assert_eq!(kind_of("Scheduler"), Kind::Schedd);
    }

    #[test]
    fn the_drain_request_is_condor_drains() {
        let a = DrainArgs {
            machine: None,
            graceful: false,
            quick: true,
            fast: false,
            resume_on_completion: true,
            start: Some("Owner == \"x\"".into()),
            reason: None,
            check: None,
            cancel: false,
        };
        let req = drain_request(&a, "alice").unwrap();
        let env = Env::default();
        assert!(matches!(req.eval_attr("HowFast", &env), Value::Int(10)));
        assert!(matches!(
            req.eval_attr("ResumeOnCompletion", &env),
            Value::Int(1)
        ));
        assert_eq!(string_attr(&req, "DrainReason"), "by alice");
        assert!(req.get("StartExpr").is_some());
        let bad = DrainArgs {
            start: Some("1 +".into()),
            ..a
        };
        let e = drain_request(&bad, "alice").unwrap_err().to_string();
        assert!(e.contains("the start expression does not parse"), "{e}");
    }
}
