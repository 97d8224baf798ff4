//! How the tools reach the pool's daemons: HTCondor's wire protocol
//! (CEDAR, the `cedar` crate) with HTCondor's security, the same commands
//! HTCondor's own tools send (HTCondor's `condor_daemon_client`).
//!
//! Where each daemon is, as HTCondor's tools find it:
//! - the collector: COLLECTOR_HOST when it names a port, else the address
//!   file a personal pool writes (COLLECTOR_ADDRESS_FILE, else
//!   `<state>/.collector_address`);
//! - the schedd: SCHEDD_ADDRESS_FILE (else `<state>/.schedd_address`),
//!   else the schedd ad's MyAddress at the collector;
//! - the negotiator and the startds: their ads' MyAddress at the
//!   collector.
//!
//! Who we are is never claimed here: the daemon takes it from the
//! authentication (FS on the pool's host, or a token).
//!
//! This module never prints: it returns ads and errors that say which
//! daemon, where, and what went wrong.

use std::cell::{Cell, OnceCell};
use std::path::{Path, PathBuf};

use cedar::client::{ClientError, ClientOptions, SessionCache};
use cedar::commands as cmd;
use cedar::sock::{Sock, SockError};
use cedar::{get_ad, put_ad, PutOptions, Sinful};
use classad::ClassAd;

use crate::errors::Error;

/// The pool's daemons as this tool reaches them.
pub struct Daemons {
    options: ClientOptions,
    sessions: SessionCache,
    /// The pool's state directory, for its address files and messages.
    state: PathBuf,
    /// Set once a lookup found no pool (no address file, or nothing
    /// answering at a local one): the tools that can go on without one
    /// (condor_history reads the history itself) ask.
    found_no_pool: Cell<bool>,
    collector_host: Option<String>,
    collector_file: PathBuf,
    schedd_file: PathBuf,
    /// FULL_HOSTNAME.
    hostname: String,
    /// SCHEDD_NAME, else FULL_HOSTNAME: the local schedd's name, as
    /// condor_q's banner shows it.
    schedd_name: String,
    /// `-name`: the schedd is the one of that name at the collector, not
    /// the local one of the address file.
    schedd_named: bool,
    collector: OnceCell<Sinful>,
    schedd: OnceCell<Sinful>,
}

/// Which daemon an address is for, in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Collector,
    Schedd,
    Negotiator,
    Startd,
    Master,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Collector => "collector",
            Kind::Schedd => "schedd",
            Kind::Negotiator => "negotiator",
            Kind::Startd => "startd",
            Kind::Master => "master",
        }
    }
}

impl Daemons {
    /// The daemons of the pool the configuration (read as the TOOL
    /// subsystem) and the state directory (`state`, else
    /// `FERROCONDOR_STATE`, ...) name.
    pub fn new(state: Option<&Path>) -> Result<Daemons, Error> {
        let config = crate::system::ToolConfig::load()?;
        let get = |n: &str| config.get(n);
        Ok(Daemons::from_lookup(
            &get,
            &crate::jobview::state_dir(state),
        ))
    }

    /// As [`Daemons::new`], the parameters looked up by `get`.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>, state: &Path) -> Daemons {
        let hostname = get("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
        let options = ClientOptions::from_lookup(get, &hostname);
        let file = |name: &str, default: &str| {
            get(name)
                .map(PathBuf::from)
                .unwrap_or_else(|| state.join(default))
        };
        Daemons {
            options,
            sessions: SessionCache::new(),
            state: state.to_path_buf(),
            found_no_pool: Cell::new(false),
            collector_host: get("COLLECTOR_HOST"),
            collector_file: file("COLLECTOR_ADDRESS_FILE", ".collector_address"),
            schedd_file: file("SCHEDD_ADDRESS_FILE", ".schedd_address"),
            // As the schedd builds its name from SCHEDD_NAME (`name@host`).
            schedd_name: startd::publish::daemon_name(
                &get("SCHEDD_NAME").unwrap_or_default(),
                &hostname,
            ),
            schedd_named: false,
            hostname,
            collector: OnceCell::new(),
            schedd: OnceCell::new(),
        }
    }

    /// Where the local schedd writes its address (SCHEDD_ADDRESS_FILE).
    pub fn schedd_address_file(&self) -> &Path {
        &self.schedd_file
    }

    /// HTCondor's tools' `-pool HOST[:PORT]` (the collector, port 9618 when
    /// none is named) and `-name SCHEDD` (the access point of that name,
    /// found at the collector).
    pub fn located(mut self, pool: Option<&str>, name: Option<&str>) -> Daemons {
        if let Some(p) = pool {
            let with_port = match Sinful::parse(p, 0) {
                Ok(a) if a.port == 0 => format!("{p}:9618"),
                _ => p.to_string(),
            };
            self.collector_host = Some(with_port);
            // Another pool's: not this host's address files.
            self.schedd_named = true;
        }
        if let Some(n) = name {
            self.schedd_name = n.to_string();
            self.schedd_named = true;
        }
        self
    }

    /// This host's name (FULL_HOSTNAME).
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// The local schedd's name (SCHEDD_NAME, else the host's name).
    pub fn schedd_name(&self) -> &str {
        &self.schedd_name
    }

    /// The pool's state directory.
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// Whether a lookup found that no pool runs here.
    pub fn found_no_pool(&self) -> bool {
        self.found_no_pool.get()
    }

    /// No pool to talk to: how to start one.
    fn no_pool(&self, detail: Option<String>) -> Error {
        self.found_no_pool.set(true);
        Error::Daemon(format!(
            "no pool is running at {}{}: start one with `ferrocondor pool up`",
            self.state.display(),
            detail.map(|d| format!(" ({d})")).unwrap_or_default()
        ))
    }

    /// The first line of an address file, or `None` when there is none.
    fn address_file(&self, file: &Path) -> Result<Option<Sinful>, Error> {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::read(file, e)),
        };
        match text.lines().next().map(str::trim).filter(|l| !l.is_empty()) {
            None => Ok(None),
            Some(line) => match Sinful::parse(line, 0) {
                Ok(a) if a.port != 0 => Ok(Some(a)),
                Ok(_) => Err(format!("no port in {line:?}")),
                Err(e) => Err(format!("{e}: {line:?}")),
            }
            .map_err(|why| {
                Error::Input(format!(
                    "{}: not a daemon's address ({why})",
                    file.display()
                ))
            }),
        }
    }

    /// The collector's address.
    pub fn collector(&self) -> Result<&Sinful, Error> {
        if let Some(a) = self.collector.get() {
            return Ok(a);
        }
        let named = match &self.collector_host {
            Some(h) => {
                let first = h.split([',', ' ']).find(|s| !s.is_empty()).unwrap_or("");
                Some(Sinful::parse(first, 0).map_err(|e| {
                    Error::Input(format!("COLLECTOR_HOST {h:?} is not an address: {e}"))
                })?)
            }
            None => None,
        };
        let addr = match named.filter(|s| s.port != 0) {
            Some(a) => a,
            None => self
                .address_file(&self.collector_file)?
                .ok_or_else(|| self.no_pool(None))?,
        };
        Ok(self.collector.get_or_init(|| addr))
    }

    /// The schedd's address: its address file, else its ad at the
    /// collector.
    pub fn schedd(&self) -> Result<&Sinful, Error> {
        if let Some(a) = self.schedd.get() {
            return Ok(a);
        }
        let local = match self.schedd_named {
            true => None,
            false => self.address_file(&self.schedd_file)?,
        };
        let addr = match local {
            Some(a) => a,
            None if self.collector_host.is_some() || self.schedd_named => {
                let ads = self.query_collector(
                    cmd::QUERY_SCHEDD_ADS,
                    Some(&format!("Name == {}", classad_string(&self.schedd_name))),
                    &["MyAddress", "Name"],
                )?;
                if ads.is_empty() {
                    return Err(Error::Daemon(format!(
                        "the collector at {} knows no schedd named {} (see `ferrocondor status -schedd`)",
                        self.collector()?,
                        self.schedd_name
                    )));
                }
                self.my_address(Kind::Schedd, ads.first())?
            }
            None => return Err(self.no_pool(None)),
        };
        Ok(self.schedd.get_or_init(|| addr))
    }

    /// `MyAddress` of a daemon's ad, or why there is none.
    pub fn my_address(&self, kind: Kind, ad: Option<&ClassAd>) -> Result<Sinful, Error> {
        let Some(ad) = ad else {
            return Err(Error::Daemon(format!(
                "the collector at {} knows no {}",
                self.collector()?,
                kind.name()
            )));
        };
        let text = cedar::ad::string_attr(ad, "MyAddress").ok_or_else(|| {
            Error::Daemon(format!(
                "the {}'s ad at the collector has no MyAddress",
                kind.name()
            ))
        })?;
        Sinful::parse(&text, 0).map_err(|e| {
            Error::Daemon(format!(
                "the {}'s ad at the collector has a MyAddress that is not one ({e}): {text:?}",
                kind.name()
            ))
        })
    }

    /// A connection to `addr` (the `kind` daemon) for `command`, its
    /// security handshake done: the command's payload goes next.
    pub fn connect(&self, kind: Kind, addr: &Sinful, command: i32) -> Result<Sock, Error> {
        match cedar::client::connect(addr, command, &self.options, Some(&self.sessions)) {
            Ok((sock, _)) => Ok(sock),
            Err(ClientError::Connect { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                ) && self.is_local(addr) =>
            {
                Err(self.no_pool(Some(format!("nothing answers at {addr}"))))
            }
            // The daemon authenticated us and refused the command.
            Err(e @ ClientError::Denied { .. }) => {
                Err(self.refused(kind, addr, command, &format!("permission denied ({e})")))
            }
            Err(e) => Err(self.refused(kind, addr, command, &e.to_string())),
        }
    }

    /// Whether `addr` came from this pool's own address files (a stale
    /// one means the pool is not running).
    fn is_local(&self, addr: &Sinful) -> bool {
        // A pool named with -pool/-name is another's: its daemons'
        // silence says nothing of this host's pool.
        !self.schedd_named && (self.collector_host.is_none() || self.schedd.get() == Some(addr))
    }

    /// A failure talking to a daemon, for the person.
    pub fn refused(&self, kind: Kind, addr: &Sinful, command: i32, why: &str) -> Error {
        Error::Daemon(format!(
            "{} to the {} at {addr}: {why}",
            cmd::describe(command),
            kind.name()
        ))
    }

    /// A failure on an open connection.
    pub fn broken(&self, kind: Kind, addr: &Sinful, command: i32, e: SockError) -> Error {
        self.refused(kind, addr, command, &e.to_string())
    }

    /// Sends one message of `ad` and reads ads until the final one (whose
    /// `Owner` is 0, as HTCondor ends a query): the ads, and the final ad.
    pub fn query(
        &self,
        kind: Kind,
        addr: &Sinful,
        command: i32,
        request: &ClassAd,
    ) -> Result<(Vec<ClassAd>, ClassAd), Error> {
        let fail = |e: SockError| self.broken(kind, addr, command, e);
        let mut sock = self.connect(kind, addr, command)?;
        let mut e = sock.encoder();
        put_ad(&mut e, request, &PutOptions::default());
        sock.send(&e).map_err(fail)?;
        let mut ads = Vec::new();
        loop {
            let msg = sock.recv().map_err(fail)?;
            let mut d = sock.decoder(&msg);
            // A message may hold several ads (history sends them all in one).
            loop {
                let ad = get_ad(&mut d).map_err(|e| fail(SockError::Decode(e)))?;
                // The final ad: `Owner = 0` (a job's Owner is a string).
                if matches!(
                    ad.eval_attr("Owner", &classad::Env::default()),
                    classad::Value::Int(0)
                ) {
                    return Ok((ads, ad));
                }
                ads.push(ad);
                if d.remaining() == 0 {
                    break;
                }
            }
        }
    }

    /// The collector's ads of one kind (`QUERY_STARTD_ADS`, ...) that make
    /// `constraint` true, with only `projection`'s attributes when given.
    pub fn query_collector(
        &self,
        command: i32,
        constraint: Option<&str>,
        projection: &[&str],
    ) -> Result<Vec<ClassAd>, Error> {
        let addr = self.collector()?.clone();
        let fail = |e: SockError| self.broken(Kind::Collector, &addr, command, e);
        let mut sock = self.connect(Kind::Collector, &addr, command)?;
        let mut req = ClassAd::new();
        req.insert_value("MyType", "Query");
        req.insert_value("TargetType", target_type(command));
        set_expr(&mut req, "Requirements", constraint.unwrap_or("true"))?;
        if !projection.is_empty() {
            req.insert_value("Projection", projection.join(" ").as_str());
        }
        cedar::ad::query_collector(&mut sock, &req).map_err(fail)
    }
}

impl Daemons {
    /// The schedd's jobs that make `constraint` true (QUERY_JOB_ADS_WITH_AUTH,
    /// as condor_q asks), with only `projection`'s attributes when given;
    /// and the schedd's summary ad (the counts condor_q's totals show).
    pub fn query_jobs(
        &self,
        constraint: Option<&str>,
        projection: &[&str],
    ) -> Result<(Vec<ClassAd>, ClassAd), Error> {
        let addr = self.schedd()?.clone();
        let mut req = ClassAd::new();
        set_expr(&mut req, "Requirements", constraint.unwrap_or("true"))?;
        if !projection.is_empty() {
            req.insert_value("Projection", projection.join("\n").as_str());
        }
        let (ads, summary) = self.query(Kind::Schedd, &addr, cmd::QUERY_JOB_ADS_WITH_AUTH, &req)?;
        refused_in(&summary)?;
        Ok((ads, summary))
    }

    /// The factories' cluster ads (late materialization) that make
    /// `constraint` true, as condor_q -factory asks for them
    /// (`IncludeClusterAd`, `NoProcAds`).
    pub fn query_factories(&self, constraint: Option<&str>) -> Result<Vec<ClassAd>, Error> {
        let addr = self.schedd()?.clone();
        let mut req = ClassAd::new();
        let mut c =
            "(ProcId is undefined) && (JobMaterializeDigestFile isnt undefined)".to_string();
        if let Some(more) = constraint {
            c = format!("{c} && ({more})");
        }
        set_expr(&mut req, "Requirements", &c)?;
        req.insert_value("IncludeClusterAd", true);
        req.insert_value("NoProcAds", true);
        let (ads, summary) = self.query(Kind::Schedd, &addr, cmd::QUERY_JOB_ADS_WITH_AUTH, &req)?;
        refused_in(&summary)?;
        Ok(ads)
    }

    /// The summary ad alone of a job query (`SummaryOnly`, as `condor_q
    /// -totals` asks): the counts of the jobs `constraint` selects
    /// (`Jobs`, `Idle`, ...), the caller's (`My*`) and everyone's
    /// (`Allusers*`), with no job ad sent.
    pub fn query_job_totals(&self, constraint: Option<&str>) -> Result<ClassAd, Error> {
        let addr = self.schedd()?.clone();
        let mut req = ClassAd::new();
        set_expr(&mut req, "Requirements", constraint.unwrap_or("true"))?;
        req.insert_value("SummaryOnly", true);
        let (_, summary) = self.query(Kind::Schedd, &addr, cmd::QUERY_JOB_ADS_WITH_AUTH, &req)?;
        refused_in(&summary)?;
        Ok(summary)
    }

    /// Jobs that have left the queue (QUERY_SCHEDD_HISTORY, as
    /// condor_history asks the schedd), newest first, at most `limit`.
    pub fn query_history(
        &self,
        constraint: Option<&str>,
        projection: &[&str],
        limit: Option<usize>,
    ) -> Result<Vec<ClassAd>, Error> {
        let addr = self.schedd()?.clone();
        let mut req = ClassAd::new();
        set_expr(&mut req, "Requirements", constraint.unwrap_or("true"))?;
        if !projection.is_empty() {
            req.insert_value("Projection", projection.join(",").as_str());
        }
        req.insert_value("NumJobMatches", limit.map_or(-1, |l| l as i64));
        let (ads, summary) = self.query(Kind::Schedd, &addr, cmd::QUERY_SCHEDD_HISTORY, &req)?;
        refused_in(&summary)?;
        Ok(ads)
    }

    /// ACT_ON_JOBS: `action` (HTCondor's JobAction: hold 1, release 2,
    /// remove 3) on the jobs `ids` name (each job's result comes back,
    /// AR_LONG), or else on those `constraint` selects (totals only),
    /// recording `reason`. The schedd's result ad; when it acted on any
    /// job, the change is on disk.
    pub fn act_on_jobs(
        &self,
        action: i64,
        ids: &[String],
        constraint: Option<&str>,
        reason: Option<&str>,
    ) -> Result<ClassAd, Error> {
        let addr = self.schedd()?.clone();
        let command = cmd::ACT_ON_JOBS;
        let fail = |e: SockError| self.broken(Kind::Schedd, &addr, command, e);
        let mut req = ClassAd::new();
        req.insert_value("JobAction", action);
        if ids.is_empty() {
            req.insert_value("ActionResultType", 1i64);
            set_expr(&mut req, "ActionConstraint", constraint.unwrap_or("true"))?;
        } else {
            req.insert_value("ActionResultType", 2i64);
            req.insert_value("ActionIds", ids.join(",").as_str());
        }
        if let Some(r) = reason {
            let attr = match action {
                1 => "HoldReason",
                2 => "ReleaseReason",
                _ => "RemoveReason",
            };
            req.insert_value(attr, r);
        }
        let mut sock = self.connect(Kind::Schedd, &addr, command)?;
        let mut e = sock.encoder();
        put_ad(&mut e, &req, &PutOptions::default());
        sock.send(&e).map_err(fail)?;
        let msg = sock.recv().map_err(fail)?;
        let mut d = sock.decoder(&msg);
        let result = get_ad(&mut d).map_err(|e| fail(SockError::Decode(e)))?;
        if cedar::ad::int_attr(&result, "ActionResult") == Some(1) {
            // The client's "go ahead", then the schedd's: the change is
            // committed.
            let mut e = sock.encoder();
            e.put_int(1);
            sock.send(&e).map_err(fail)?;
            let msg = sock.recv().map_err(fail)?;
            let mut d = sock.decoder(&msg);
            let ok = d.get_int().map_err(|e| fail(SockError::Decode(e)))?;
            if ok != 1 {
                return Err(self.refused(
                    Kind::Schedd,
                    &addr,
                    command,
                    "the schedd did not commit the change",
                ));
            }
        }
        Ok(result)
    }

    /// Sends `command` with no payload (DC_OFF_GRACEFUL, DC_RECONFIG_FULL,
    /// as condor_off and condor_reconfig do).
    pub fn send_command(&self, kind: Kind, addr: &Sinful, command: i32) -> Result<(), Error> {
        let sock = self.connect(kind, addr, command)?;
        sock.close();
        Ok(())
    }
}

/// A summary ad's refusal (`ErrorCode` not 0): its `ErrorString`.
fn refused_in(summary: &ClassAd) -> Result<(), Error> {
    match cedar::ad::int_attr(summary, "ErrorCode") {
        Some(code) if code != 0 => Err(Error::Daemon(
            cedar::ad::string_attr(summary, "ErrorString")
                .unwrap_or_else(|| format!("the schedd refused the query (error {code})")),
        )),
        _ => Ok(()),
    }
}

/// The `TargetType` a collector query names for `command`.
fn target_type(command: i32) -> &'static str {
    match command {
        cmd::QUERY_STARTD_ADS => "Machine",
        cmd::QUERY_SCHEDD_ADS => "Scheduler",
        cmd::QUERY_SUBMITTOR_ADS => "Submitter",
        cmd::QUERY_NEGOTIATOR_ADS => "Negotiator",
        cmd::QUERY_COLLECTOR_ADS => "Collector",
        cmd::QUERY_MASTER_ADS => "DaemonMaster",
        _ => "Any",
    }
}

/// `name = EXPR` in `ad`, the expression parsed; a bad one is the user's
/// error, named.
pub fn set_expr(ad: &mut ClassAd, name: &str, expr: &str) -> Result<(), Error> {
    let parsed = classad::Expr::parse(expr).map_err(|e| Error::parse("<constraint>", e))?;
    ad.insert(name, parsed);
    Ok(())
}

/// `s` as a ClassAd string literal.
pub fn classad_string(s: &str) -> String {
    classad::unparse::expr_to_string(&classad::Expr::Lit(classad::Value::Str(s.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_personal_pool_is_found_by_its_address_files() {
        let dir = std::env::temp_dir().join(format!("fc-daemon-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = Daemons::from_lookup(&lookup(&[]), &dir);
        let e = d.collector().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "no pool is running at {}: start one with `ferrocondor pool up`",
                dir.display()
            )
        );
        std::fs::write(
            dir.join(".collector_address"),
            "<127.0.0.1:9618?noUDP>\n$CondorVersion: x $\n",
        )
        .unwrap();
        std::fs::write(dir.join(".schedd_address"), "garbage\n").unwrap();
        assert_eq!(d.collector().unwrap().port, 9618);
        let e = d.schedd().unwrap_err().to_string();
        assert!(e.contains(".schedd_address: not a daemon's address"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn collector_host_with_a_port_wins_over_the_address_file() {
        let d = Daemons::from_lookup(
            &lookup(&[
                ("COLLECTOR_HOST", "cm.example.org:9620"),
                ("SCHEDD_NAME", "ap1"),
            ]),
            Path::new("/nonexistent"),
        );
        let c = d.collector().unwrap();
        assert_eq!((c.host.as_str(), c.port), ("cm.example.org", 9620));
        // As HTCondor builds a daemon's name: `name@host`.
        assert_eq!(d.schedd_name(), "ap1@localhost");
    }

    #[test]
    fn a_bad_constraint_is_named_as_the_user_wrote_it() {
        let mut ad = ClassAd::new();
        let e = set_expr(&mut ad, "Requirements", "Owner ==").unwrap_err();
        assert!(e.to_string().starts_with("<constraint>"), "{e}");
        assert_eq!(classad_string("a\"b"), "\"a\\\"b\"");
    }
}
