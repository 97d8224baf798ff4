//! The pool's roles at the service level: the real collector, negotiator,
//! schedd and startd roles, with the messages between them carried by the
//! test (an injected transport that delivers in order, one at a time) and
//! `now` set by the test (an injected clock). The startd's work (starting
//! a job, waiting for it, finishing it) is done here, synchronously, on
//! real processes. Nothing of the server (sockets, threads, timers) is
//! involved: what is tested is what the roles say to each other.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use daemons::collector_role::CollectorRole;
use daemons::execute::{NodeConfig, StartdRole, Work};
use daemons::negotiator_role::NegotiatorRole;
use daemons::roles::{Message, Outbox, Role, RoleName, ScheddAutoclusters};
use daemons::schedd_role::{ScheddIntervals, ScheddRole};
use daemons::{PoolConfig, Schedd};
use negotiator::accountant::Accountant;
use negotiator::collector::{AdType, CollectorStore};
use negotiator::cycle::Policy;
use negotiator::limits::ConcurrencyLimits;
use startd::resources::HostReadings;

const T0: i64 = 1_700_000_000;

fn config(subsystem: &str, text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new(subsystem, config::Root::File("c".into())),
        &config::MemFiles::new().with("c", text),
        &config::FixedHost::empty(),
    )
    .unwrap()
}

/// The four roles and the messages in flight between them.
struct Pool {
    collector: CollectorRole,
    negotiator: NegotiatorRole,
    schedd: ScheddRole,
    startd: StartdRole,
    wire: VecDeque<(RoleName, RoleName, Message)>,
    /// Every message delivered: (from, to, its kind).
    log: Vec<(RoleName, RoleName, String)>,
    /// What each NEGOTIATE told the schedd is significant, and each
    /// answer's kept autoclusters, in order.
    told: Vec<Vec<String>>,
    kept: Vec<Option<ScheddAutoclusters>>,
    /// The jobs each Matches named, and the roles' notes.
    matched: Vec<schedd::JobId>,
    notes: Vec<String>,
    /// The schedd's requests cross as between hosts (encoded and decoded
    /// by `local_protocol`).
    requests_across: bool,
    work: Vec<Work>,
    now: i64,
    _dir: tempfile::TempDir,
}

fn kind(m: &Message) -> String {
    let text = format!("{m:?}");
    let end = text.find([' ', '(', '{']).unwrap_or(text.len());
    text[..end].to_string()
}

impl Pool {
    fn new(slots: u32, startd_policy: &str) -> Pool {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        let policy = format!(
            "NUM_CPUS = {slots}\nRunBenchmarks = False\nUID_DOMAIN = pool\n\
             FILESYSTEM_DOMAIN = pool\n{startd_policy}"
        );
        let node = NodeConfig {
            startd: config("STARTD", &policy),
            negotiator: config("NEGOTIATOR", ""),
            collector: config("COLLECTOR", ""),
            hostname: "exec".into(),
            host: HostReadings::simple(slots, 4096, 1 << 30, 0),
            readings_file: None,
            execute_dir: dir.path().join("execute"),
        };
        let startd = StartdRole::new(&node, &state, T0).unwrap();
        let schedd = Schedd::open(
            &state.join("queue.db"),
            PoolConfig {
                uid_domain: "pool".into(),
                ..PoolConfig::default()
            },
            "<test>".into(),
        )
        .unwrap();
        let limits = ConcurrencyLimits::from_config(&node.negotiator).unwrap();
        let mut notes = Vec::new();
        let schedd = ScheddRole::new(
            schedd,
            "exec",
            Some("exec"),
            limits.clone(),
            ScheddIntervals {
                periodic: 60,
                alive: 300,
                update: 5,
                unused_claim: 600,
            },
            T0,
            &mut notes,
        );
        Pool {
            collector: CollectorRole::new(
                CollectorStore::from_config(&node.negotiator).unwrap(),
                5,
                "localhost",
            ),
            negotiator: NegotiatorRole::new(
                Accountant::from_config(&node.negotiator).unwrap(),
                limits,
                Policy::from_config(&node.negotiator).unwrap(),
                60,
                state.clone(),
            ),
            schedd,
            startd,
            wire: VecDeque::new(),
            log: Vec::new(),
            told: Vec::new(),
            kept: Vec::new(),
            matched: Vec::new(),
            notes: Vec::new(),
            requests_across: false,
            work: Vec::new(),
            now: T0,
            _dir: dir,
        }
    }

    fn post(&mut self, from: RoleName, out: Outbox) {
        for (to, m) in out.messages {
            // Messages for the startd and the schedd name the daemon (the
            // startd is "exec"; the schedd has PoolConfig's name).
            if let Some(name) = &to.name {
                let want = match to.role {
                    RoleName::Schedd => "localhost",
                    _ => "exec",
                };
                assert_eq!(name, want, "{to:?}: {m:?}");
            }
            if matches!(m, Message::Startd(_) | Message::ClaimNews(_)) {
                assert!(to.name.is_some(), "{to:?}: {m:?}");
            }
            let m = match m {
                m @ Message::Requests { .. } if self.requests_across => {
                    let line = daemons::local_protocol::encode(from, &m).unwrap();
                    daemons::local_protocol::decode(&line).unwrap().1
                }
                m => m,
            };
            self.wire.push_back((from, to.role, m));
        }
        self.work.extend(out.work);
        self.notes.extend(out.notes);
    }

    /// Delivers every message in flight, in order, until none is left.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            let Some((from, to, m)) = self.wire.pop_front() else {
                return;
            };
            self.log.push((from, to, kind(&m)));
            match &m {
                Message::Negotiate { significant, .. } => self.told.push(significant.clone()),
                Message::Requests { autoclusters, .. } => self.kept.push(autoclusters.clone()),
                Message::Matches { matches, .. } => {
                    self.matched.extend(matches.iter().map(|m| m.job));
                }
                _ => {}
            }
            let mut out = Outbox::default();
            let now = self.now;
            match to {
                RoleName::Collector => self.collector.receive(from, m, now, &mut out),
                RoleName::Negotiator => self.negotiator.receive(from, m, now, &mut out),
                RoleName::Schedd => self.schedd.receive(from, m, now, &mut out),
                RoleName::Startd => self.startd.receive(from, m, now, &mut out),
                // The defrag daemon takes no role messages.
                RoleName::Defrag => {}
            }
            self.post(to, out);
        }
        panic!("the roles never stopped talking");
    }

    /// Fires a role's timer `which` and settles.
    fn timer(&mut self, role: RoleName, which: usize) {
        let mut out = Outbox::default();
        let now = self.now;
        match role {
            RoleName::Collector => self.collector.timer(which, now, &mut out),
            RoleName::Negotiator => self.negotiator.timer(which, now, &mut out),
            RoleName::Schedd => self.schedd.timer(which, now, &mut out),
            RoleName::Startd => self.startd.timer(which, now, &mut out),
            RoleName::Defrag => {}
        }
        self.post(role, out);
        self.settle();
    }

    /// Submits `n` jobs of alice's running `/bin/sh -c script`.
    fn submit(&mut self, n: u32, script: &str, dir: &Path) {
        self.submit_with(n, script, dir, |_| String::new());
    }

    /// As [`Pool::submit`], job `p` with the attributes `extra(p)` too.
    fn submit_with(&mut self, n: u32, script: &str, dir: &Path, extra: impl Fn(u32) -> String) {
        let user = whoami();
        let cluster = self.schedd.schedd.new_cluster(&user).unwrap().cluster;
        let ads = (0..n)
            .map(|p| {
                format!(
                    "[ ClusterId = {cluster}; ProcId = {p}; Owner = \"{user}\"; User = \"{user}@pool\"; \
                     JobUniverse = 5; Cmd = \"/bin/sh\"; Arguments = \"-c '{script}'\"; \
                     Iwd = \"{}\"; JobStatus = 1; QDate = {T0}; RequestCpus = 1; \
                     RequestMemory = 64; RequestDisk = 1024; ShouldTransferFiles = \"NO\"; \
                     Requirements = TARGET.Memory >= RequestMemory; Out = \"/dev/null\"; \
                     Err = \"/dev/null\"; In = \"/dev/null\"; {} ]",
                    dir.display(),
                    extra(p)
                )
            })
            .collect();
        let parsed = daemons::schedd_service::ParsedSubmission::parse(wire::api::SubmitRequest {
            cluster,
            ads,
        })
        .unwrap();
        self.schedd
            .schedd
            .submit_parsed(&user, parsed, self.now)
            .unwrap();
        let mut out = Outbox::default();
        self.schedd.queue_changed(&mut out, self.now);
        self.post(RoleName::Schedd, out);
        self.settle();
    }

    /// Does the startd's work at once: starts jobs (blocking), waits for
    /// them to exit, finishes them; each outcome back to the startd.
    fn work(&mut self) {
        for _ in 0..1000 {
            let Some(w) = self.work.pop() else { return };
            let mut out = Outbox::default();
            let now = self.now;
            match w {
                Work::Start {
                    slot, run, spec, ..
                } => {
                    let started = starter::Starter::start(*spec);
                    self.startd.started(&slot, run, started, now);
                }
                Work::Watch { slot, run, .. } => {
                    for _ in 0..500 {
                        if self.startd.exited(&slot, run) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                }
                Work::Finish { slot, run, job } => {
                    let report = job.finish();
                    self.startd.finished(&slot, run, report, now);
                }
                Work::Hook { .. } | Work::QueryPeers { .. } | Work::QueryPlugins { .. } => {}
            }
            self.startd.flush(&mut out);
            self.post(RoleName::Startd, out);
            self.settle();
        }
        panic!("the work never ended");
    }

    fn status(&self, cluster: i64, proc: i64) -> Option<schedd::JobStatus> {
        self.schedd
            .schedd
            .queue()
            .status(schedd::JobId::new(cluster, proc))
    }

    fn said(&self, from: RoleName, to: RoleName, what: &str) -> usize {
        self.log
            .iter()
            .filter(|(f, t, k)| *f == from && *t == to && k == what)
            .count()
    }
}

/// Whose jobs the tests submit: the test's own user, or `nobody` when
/// the test runs as root (a root pool runs each job as its owner, and
/// refuses root's).
fn whoami() -> String {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return "nobody".into();
    }
    let mut buf = vec![0u8; 4096];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out = std::ptr::null_mut();
    // SAFETY: the buffers are valid for the call; the name is copied out
    // before they go.
    let found = unsafe {
        libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut out) == 0
            && !out.is_null()
    };
    if found {
        // SAFETY: getpwuid_r filled pw_name with a NUL-terminated string.
        unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }
            .to_string_lossy()
            .into_owned()
    } else {
        format!("uid{uid}")
    }
}

/// A directory the jobs run in (open to `nobody` when the test is root).
fn scratch(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = std::env::temp_dir().join(format!("ferrocondor-roles-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// The first poll makes the slots Unclaimed; their ads reach the
/// collector, and the startd asks the negotiator for a cycle.
fn start(p: &mut Pool) {
    p.timer(RoleName::Startd, 0);
    assert!(p.said(RoleName::Startd, RoleName::Collector, "UpdateAds") >= 1);
    let slots = p.collector.ads(&AdType::Startd, p.now);
    assert!(!slots.is_empty(), "the collector has the slot ads");
}

#[test]
fn a_submission_goes_through_negotiate_claim_activate_and_exit_by_messages() {
    let mut p = Pool::new(2, "START = True");
    start(&mut p);
    let dir = scratch("exit");
    p.submit(2, "exit 0", &dir);
    // The schedd asked for a cycle; the negotiator asked it for its
    // requests, then the collector for the slots, and sent the matches to
    // the schedd and each startd.
    assert!(p.said(RoleName::Schedd, RoleName::Negotiator, "Reschedule") >= 1);
    assert!(p.said(RoleName::Negotiator, RoleName::Schedd, "Negotiate") >= 1);
    assert!(p.said(RoleName::Schedd, RoleName::Negotiator, "Requests") >= 1);
    assert!(p.said(RoleName::Negotiator, RoleName::Collector, "QuerySlots") >= 1);
    assert_eq!(p.said(RoleName::Negotiator, RoleName::Schedd, "Matches"), 1);
    assert_eq!(
        p.said(RoleName::Negotiator, RoleName::Startd, "MatchInfo"),
        2
    );
    // The schedd claimed both slots and the startd granted them and took
    // the jobs (REQUEST_CLAIM, then ACTIVATE_CLAIM, all as Startd messages).
    assert_eq!(p.said(RoleName::Schedd, RoleName::Startd, "Startd"), 4);
    assert_eq!(p.said(RoleName::Startd, RoleName::Schedd, "ClaimNews"), 4);
    // The accountant hears of the claims.
    assert!(p.said(RoleName::Schedd, RoleName::Negotiator, "Charges") >= 1);
    // The jobs start and exit, as the starters say.
    p.work();
    assert!(p.said(RoleName::Startd, RoleName::Schedd, "Starter") >= 4);
    assert_eq!(p.status(1, 0), None, "completed jobs move to the history");
    assert_eq!(p.status(1, 1), None);
    // Nothing left to run: the claims are given back, and the accountant
    // hears they ended.
    let releases = p
        .log
        .iter()
        .filter(|(f, t, k)| *f == RoleName::Schedd && *t == RoleName::Startd && k == "Startd")
        .count();
    assert_eq!(releases, 6, "two claims, two activations, two releases");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_schedd_keeps_its_jobs_autoclusters_over_what_the_negotiator_found_significant() {
    let mut p = Pool::new(1, "START = False");
    start(&mut p);
    let dir = scratch("autoclusters");
    p.submit(3, "exit 0", &dir);
    // Before its first cycle over jobs the negotiator knows nothing yet:
    // the schedd offers no ids.
    assert!(!p.told.is_empty() && p.told.iter().all(Vec::is_empty));
    assert!(p.kept.iter().all(Option::is_none));
    // The next says what the cycle told the jobs apart by, and the
    // schedd answers with its jobs' autoclusters over those names: the
    // three alike jobs are one.
    p.now += 60;
    p.timer(RoleName::Negotiator, 0);
    let told = p.told.last().expect("a second NEGOTIATE");
    for name in ["Requirements", "RequestMemory", "Memory"] {
        assert!(
            told.iter().any(|t| t.eq_ignore_ascii_case(name)),
            "{name} in {told:?}"
        );
    }
    let kept = p.kept.last().cloned().flatten().expect("kept autoclusters");
    assert_eq!(kept.ids.len(), 1, "one submitter");
    assert_eq!(kept.ids[0].len(), 3);
    assert!(kept.ids[0].iter().all(|&i| i == kept.ids[0][0]));
    assert!(told
        .iter()
        .all(|t| kept.names.iter().any(|k| k.eq_ignore_ascii_case(t))));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_reconfig_asks_the_plugins_outside_the_role_and_takes_only_the_latest_answer() {
    let mut p = Pool::new(1, "START = True");
    start(&mut p);
    let methods = |p: &Pool| {
        let slots = p.collector.ads(&AdType::Startd, p.now);
        slots[0]
            .get("HasFileTransferPluginMethods")
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let before = methods(&p);
    let policy = "NUM_CPUS = 1\nRunBenchmarks = False\nUID_DOMAIN = pool\nSTART = True\n\
                  FILETRANSFER_PLUGINS = /nonexistent/plugin";
    let mut asked = Vec::new();
    for _ in 0..2 {
        p.startd.reconfigure(config("STARTD", policy)).unwrap();
        let mut out = Outbox::default();
        p.startd.flush(&mut out);
        for w in out.work.drain(..) {
            if let Work::QueryPlugins { asked: n, .. } = w {
                asked.push(n);
            }
        }
        p.post(RoleName::Startd, out);
        p.settle();
    }
    assert_eq!(
        asked.len(),
        2,
        "each reconfig asks, as work for outside the role"
    );
    // Nothing changes while the plugins are asked.
    assert_eq!(methods(&p), before);
    // The first reconfig's answer comes late: dropped.
    p.startd
        .plugins_heard(asked[0], "file,old".into(), Vec::new(), p.now);
    let mut out = Outbox::default();
    p.startd.flush(&mut out);
    p.post(RoleName::Startd, out);
    p.settle();
    assert_eq!(methods(&p), before);
    // The latest is advertised at once, with what went wrong asking.
    p.startd.plugins_heard(
        asked[1],
        "file,new".into(),
        vec!["a plugin did not answer".into()],
        p.now,
    );
    let mut out = Outbox::default();
    p.startd.flush(&mut out);
    assert!(out.notes.iter().any(|n| n.contains("did not answer")));
    p.post(RoleName::Startd, out);
    p.settle();
    assert_eq!(methods(&p), "\"file,new\"");
}

#[test]
fn abridged_requests_from_another_host_are_asked_again_when_the_pool_reads_more() {
    let mut p = Pool::new(1, "START = False");
    p.requests_across = true;
    start(&mut p);
    let dir = scratch("abridged");
    // Alike in all the pool reads today; job 0 is chemistry, job 1 physics.
    p.submit_with(4, "exit 0", &dir, |n| {
        format!(
            "Department = \"{}\"",
            ["chemistry", "physics"][n as usize % 2]
        )
    });
    p.now += 60;
    p.timer(RoleName::Negotiator, 0);
    let last = p.kept.last().cloned().flatten().expect("kept autoclusters");
    assert!(last.abridged, "three of the four jobs cross abridged");
    assert!(p.matched.is_empty());
    // The machine now takes physics only: the autoclusters were filed
    // without Department. The cycle is dropped and asked again; the job
    // that runs is the physics one, not the one the abridged ads would
    // have made of them all (chemistry, like job 0).
    let physics =
        "NUM_CPUS = 1\nRunBenchmarks = False\nUID_DOMAIN = pool\nFILESYSTEM_DOMAIN = pool\n\
         START = TARGET.Department =?= \"physics\"";
    p.startd.reconfigure(config("STARTD", physics)).unwrap();
    p.now += 60;
    p.timer(RoleName::Startd, 0);
    p.now += 60;
    p.timer(RoleName::Negotiator, 0);
    assert!(
        p.notes.iter().any(|n| n.contains("asking again")),
        "{:?}",
        p.notes
    );
    let told = p.told.last().expect("NEGOTIATE");
    assert!(told.iter().any(|t| t.eq_ignore_ascii_case("Department")));
    assert_eq!(p.matched.len(), 1, "one slot");
    assert_eq!(p.matched[0].proc % 2, 1, "a physics job: {:?}", p.matched);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cycle_with_no_idle_jobs_does_not_query_the_collector() {
    let mut p = Pool::new(1, "START = True");
    start(&mut p);
    p.log.clear();
    p.now += 60;
    p.timer(RoleName::Negotiator, 0);
    assert_eq!(
        p.said(RoleName::Negotiator, RoleName::Schedd, "Negotiate"),
        1
    );
    assert_eq!(
        p.said(RoleName::Schedd, RoleName::Negotiator, "Requests"),
        1
    );
    assert_eq!(
        p.said(RoleName::Negotiator, RoleName::Collector, "QuerySlots"),
        0
    );
}

#[test]
fn a_job_no_slot_takes_stays_idle_and_is_offered_at_every_cycle() {
    // START is false for everyone (the slots' Requirements): the cycle
    // finds no match, and the job stays idle, offered at every cycle.
    let mut p = Pool::new(1, "START = False");
    start(&mut p);
    let dir = scratch("refused");
    p.submit(1, "exit 0", &dir);
    assert_eq!(p.said(RoleName::Negotiator, RoleName::Schedd, "Matches"), 0);
    assert_eq!(p.status(1, 0), Some(schedd::JobStatus::Idle));
    p.log.clear();
    p.now += 60;
    p.timer(RoleName::Negotiator, 0);
    assert_eq!(
        p.said(RoleName::Schedd, RoleName::Negotiator, "Requests"),
        1
    );
    assert_eq!(
        p.said(RoleName::Negotiator, RoleName::Collector, "QuerySlots"),
        1
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_schedd_advertises_itself_and_its_submitters_and_withdraws_them() {
    let mut p = Pool::new(1, "START = False");
    start(&mut p);
    let dir = scratch("adverts");
    p.submit(1, "exit 0", &dir);
    p.timer(RoleName::Schedd, 2);
    let subs = p.collector.ads(&AdType::Submitter, p.now);
    assert_eq!(subs.len(), 1);
    assert_eq!(p.collector.ads(&AdType::Schedd, p.now).len(), 1);
    // The job leaves; the submitter's ad is withdrawn at the next update.
    let user = whoami();
    let sel = wire::api::ActRequest {
        action: wire::api::Action::Remove,
        selection: wire::api::Selection {
            mine: true,
            ..Default::default()
        },
        reason: None,
    };
    let snapshot = p.schedd.schedd.act_snapshot(&user, &sel, p.now);
    let targets = snapshot
        .select(&daemons::schedd_service::Budget::unlimited())
        .unwrap();
    p.schedd.schedd.act_on(&user, &sel, targets, p.now).unwrap();
    let mut out = Outbox::default();
    p.schedd.queue_changed(&mut out, p.now);
    p.post(RoleName::Schedd, out);
    p.settle();
    p.timer(RoleName::Schedd, 2);
    assert!(p.collector.ads(&AdType::Submitter, p.now).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}
