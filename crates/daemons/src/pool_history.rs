//! HTCondorView, the collector's side: forwarding the ads it accepts to
//! the view collectors CONDOR_VIEW_HOST names ([`ViewForwarder`]), and,
//! with KEEP_POOL_HISTORY, keeping the pool's history in POOL_HISTORY_DIR
//! ([`PoolHistory`]) and answering `condor_stats`' queries from it
//! ([`answer`]). What a sample holds and what a query answers are
//! `negotiator::pool_history`'s; this module appends, rotates and reads
//! the files, and carries ads to the view collectors.
//!
//! The files are append-only text, one sample's lines for a file written
//! by one `write` on a file opened for appending; a write cut short by a
//! crash leaves a last line without its newline, which readers skip and
//! which is cut off when the history is opened again. Each file is
//! rotated (`.new` renamed over `.old`) once it outgrows its share of
//! POOL_HISTORY_MAX_STORAGE, so the history never takes more than that.
//!
//! Touches only POOL_HISTORY_DIR (the tidy test's list).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cedar::client::{ClientOptions, SessionCache};
use cedar::commands as cmd;
use cedar::{put_ad, PutOptions, Sinful};
use classad::ClassAd;
use negotiator::collector::AdType;
use negotiator::pool_history::{self as core, DataSet, Sampler, LEVELS};

/// The collector's pool history: the samples being averaged and where
/// the files are.
pub struct PoolHistory {
    dir: PathBuf,
    sampler: Sampler,
    max_file: u64,
    /// POOL_HISTORY_SAMPLING_INTERVAL, seconds.
    pub interval: u64,
}

impl PoolHistory {
    /// Opens the history in `dir` (made if missing, as a directory of the
    /// pool's user), cutting off what a crash left half-written.
    pub fn open(dir: &Path, max_storage: u64, interval: u64) -> Result<PoolHistory, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("POOL_HISTORY_DIR {}: {e}", dir.display()))?;
        for set in DataSet::ALL {
            for level in 0..LEVELS {
                let path = dir.join(set.file_name(level, false));
                let Ok(bytes) = std::fs::read(&path) else {
                    continue;
                };
                let keep = core::whole_lines_len(&bytes);
                if keep < bytes.len() {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(keep as u64));
                    if let Err(e) = f {
                        return Err(format!("{}: {e}", path.display()));
                    }
                }
            }
        }
        Ok(PoolHistory {
            dir: dir.to_path_buf(),
            sampler: Sampler::new(),
            max_file: core::max_file_size(max_storage),
            interval: interval.max(1),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One sample of the collector's ads, appended where a level's turn
    /// came. A file that cannot be written is said, and the sample lost.
    pub fn sample(&mut self, startds: &[ClassAd], submitters: &[ClassAd], now: i64) {
        for a in self.sampler.sample(startds, submitters, now) {
            if let Err(e) = self.append(&a) {
                eprintln!("ferrocondor: collector: pool history: {e}");
            }
        }
    }

    fn append(&self, a: &core::Append) -> Result<(), String> {
        let path = self.dir.join(a.set.file_name(a.level, false));
        let say = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(say)?;
        f.write_all(a.text.as_bytes()).map_err(say)?;
        let size = f.metadata().map_err(say)?.len();
        if size > self.max_file {
            let old = self.dir.join(a.set.file_name(a.level, true));
            std::fs::rename(&path, &old).map_err(say)?;
        }
        Ok(())
    }
}

/// How many lines one answer may have, so that a query cannot make the
/// collector hold a whole history in memory (the files are bounded too).
const MAX_ANSWER_LINES: usize = 1_000_000;

/// The answer to a history query (QUERY_HIST_*) from the files in `dir`:
/// the lines to send, in order.
pub fn answer(dir: &Path, command: i32, from: i64, to: i64, raw: bool, arg: &str) -> Vec<String> {
    let Some((set, list)) = core::query_of(command) else {
        return Vec::new();
    };
    let read = |level: usize, old: bool| {
        std::fs::read_to_string(dir.join(set.file_name(level, old))).unwrap_or_default()
    };
    let mut starts = [(None, None); LEVELS];
    for (level, s) in starts.iter_mut().enumerate() {
        *s = (
            core::start_time(&read(level, true)),
            core::start_time(&read(level, false)),
        );
    }
    let Some((level, old, new)) = core::choose_files(&starts, from, to) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (wanted, is_old) in [(old, true), (new, false)] {
        if !wanted {
            continue;
        }
        let text = read(level, is_old);
        if list {
            core::list_reply(&text, from, to, &mut seen, &mut out);
        } else {
            core::data_reply(&text, from, to, raw, arg, &mut out);
        }
    }
    out.truncate(MAX_ANSWER_LINES);
    out
}

/// CONDOR_VIEW_HOST's view collectors and the ad types to forward them
/// (CONDOR_VIEW_CLASSAD_TYPES), as the collector reads them.
pub fn view_settings(c: &config::Config) -> Result<(Vec<String>, Vec<AdType>), String> {
    let hosts = c
        .list("CONDOR_VIEW_HOST")
        .map_err(|e| format!("collector: {e}"))?;
    let types = c
        .get("CONDOR_VIEW_CLASSAD_TYPES")
        .map_err(|e| format!("collector: {e}"))?;
    Ok((hosts, forwarded_types(types.as_deref())))
}

/// Which ads a collector forwards: CONDOR_VIEW_CLASSAD_TYPES' types, else
/// slots and submitters (HTCondor's default: what the view server keeps).
pub fn forwarded_types(list: Option<&str>) -> Vec<AdType> {
    match list.filter(|l| !l.trim().is_empty()) {
        Some(l) => l
            .split([',', ' ', '\t'])
            .filter(|t| !t.is_empty())
            .map(|t| match t.to_ascii_lowercase().as_str() {
                // HTCondor's old name for slot ads, and its new one.
                "startd" | "slot" => AdType::Startd,
                _ => AdType::from_my_type(t),
            })
            .collect(),
        None => vec![AdType::Startd, AdType::Submitter],
    }
}

fn update_command(kind: &AdType) -> i32 {
    match kind {
        AdType::Startd => cmd::UPDATE_STARTD_AD,
        AdType::Submitter => cmd::UPDATE_SUBMITTOR_AD,
        AdType::Schedd => cmd::UPDATE_SCHEDD_AD,
        AdType::Master => cmd::UPDATE_MASTER_AD,
        AdType::Negotiator => cmd::UPDATE_NEGOTIATOR_AD,
        AdType::Collector => cmd::UPDATE_COLLECTOR_AD,
        _ => cmd::UPDATE_AD_GENERIC,
    }
}

fn invalidate_command(kind: &AdType) -> i32 {
    match kind {
        AdType::Startd => cmd::INVALIDATE_STARTD_ADS,
        AdType::Submitter => cmd::INVALIDATE_SUBMITTOR_ADS,
        AdType::Schedd => cmd::INVALIDATE_SCHEDD_ADS,
        AdType::Master => cmd::INVALIDATE_MASTER_ADS,
        AdType::Negotiator => cmd::INVALIDATE_NEGOTIATOR_ADS,
        AdType::Collector => cmd::INVALIDATE_COLLECTOR_ADS,
        _ => cmd::INVALIDATE_ADS_GENERIC,
    }
}

/// A batch to forward: one command, its ads.
struct Batch {
    command: i32,
    ads: Vec<ClassAd>,
}

/// How many batches may wait for a view collector; more are lost (the
/// pool sends its ads again every update interval).
const QUEUE: usize = 1024;

/// How long a view collector that could not be reached is left alone
/// before the next try (HTCondor delays its reconnects likewise).
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// The view collectors this collector forwards to, each served by a
/// sender thread of its own with a bounded queue, so that a view
/// collector that is slow or down holds up neither the collector nor the
/// other view collectors.
pub struct ViewForwarder {
    types: Vec<AdType>,
    senders: Vec<mpsc::SyncSender<std::sync::Arc<Batch>>>,
}

impl ViewForwarder {
    /// Senders for `hosts` (CONDOR_VIEW_HOST's entries, `host[:port]`),
    /// leaving out any that is this collector itself (`me`, its command
    /// port's address): a shared configuration names the view collector
    /// to itself too.
    pub fn start(
        hosts: &[String],
        types: Vec<AdType>,
        client: ClientOptions,
        me: &str,
    ) -> Option<ViewForwarder> {
        let me = Sinful::parse(me, 0).ok();
        let mut senders = Vec::new();
        for host in hosts {
            let addr = match Sinful::parse(host, 9618) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("ferrocondor: collector: CONDOR_VIEW_HOST {host:?} is not an address ({e}); not forwarding there");
                    continue;
                }
            };
            if me.as_ref().is_some_and(|m| points_to_me(&addr, m)) {
                eprintln!("ferrocondor: collector: not forwarding to the view collector {host}: it is this collector");
                continue;
            }
            eprintln!("ferrocondor: collector: forwarding ads to the view collector {host}");
            senders.push(start_sender(host.clone(), addr, client.clone()));
        }
        (!senders.is_empty()).then_some(ViewForwarder { types, senders })
    }

    fn wanted(&self, kind: &AdType) -> bool {
        self.types.contains(kind)
    }

    /// Ads of `kind` the collector accepted. An ad that says
    /// `ShouldForward = False` stays here.
    pub fn updated(&self, kind: &AdType, ads: &[ClassAd]) {
        if !self.wanted(kind) {
            return;
        }
        let env = classad::Env::default();
        let ads: Vec<ClassAd> = ads
            .iter()
            .filter(|a| a.eval_attr("ShouldForward", &env).as_bool() != Some(false))
            .cloned()
            .collect();
        self.send(update_command(kind), ads);
    }

    /// An invalidation the collector carried out: the ads of `kind` the
    /// constraint selects.
    pub fn invalidated(&self, kind: &AdType, constraint: &classad::Expr) {
        if !self.wanted(kind) {
            return;
        }
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Query");
        ad.insert_value("TargetType", kind.my_type());
        ad.insert("Requirements", constraint.clone());
        self.send(invalidate_command(kind), vec![ad]);
    }

    fn send(&self, command: i32, ads: Vec<ClassAd>) {
        if ads.is_empty() {
            return;
        }
        let batch = std::sync::Arc::new(Batch { command, ads });
        for s in &self.senders {
            // A full queue: this batch is lost (said by the sender's
            // silence being noted at its next failure).
            let _ = s.try_send(batch.clone());
        }
    }
}

/// Whether the view host `view` is this collector (`me`): the same port,
/// at an address the view host's name resolves to, or on loopback when
/// this one listens there (or on every address).
fn points_to_me(view: &Sinful, me: &Sinful) -> bool {
    use std::net::ToSocketAddrs;
    if view.port != me.port {
        return false;
    }
    let Ok(m) = me.host.parse::<std::net::IpAddr>() else {
        return view.host.eq_ignore_ascii_case(&me.host);
    };
    let ips: Vec<std::net::IpAddr> = match view.host.parse::<std::net::IpAddr>() {
        Ok(v) => vec![v],
        Err(_) => (view.host.as_str(), view.port)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.ip()).collect())
            .unwrap_or_default(),
    };
    ips.iter()
        .any(|&v| v == m || (v.is_loopback() && m.is_loopback()) || m.is_unspecified())
}

fn start_sender(
    name: String,
    addr: Sinful,
    client: ClientOptions,
) -> mpsc::SyncSender<std::sync::Arc<Batch>> {
    let (tx, rx) = mpsc::sync_channel::<std::sync::Arc<Batch>>(QUEUE);
    let who = name.clone();
    let spawned = std::thread::Builder::new()
        .name("view-forwarder".into())
        .stack_size(1 << 20)
        .spawn(move || {
            let sessions = SessionCache::new();
            let mut failed_at: Option<Instant> = None;
            let mut said = false;
            while let Ok(batch) = rx.recv() {
                if failed_at.is_some_and(|t| t.elapsed() < RETRY_AFTER) {
                    continue;
                }
                match forward(&addr, &client, &sessions, &batch) {
                    Ok(()) => {
                        if said {
                            eprintln!("ferrocondor: collector: the view collector {name} is reachable again");
                        }
                        failed_at = None;
                        said = false;
                    }
                    Err(e) => {
                        if !said {
                            eprintln!("ferrocondor: collector: could not forward ads to the view collector {name} ({e}); trying again every {} s", RETRY_AFTER.as_secs());
                        }
                        said = true;
                        failed_at = Some(Instant::now());
                    }
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("ferrocondor: collector: no thread to forward to {who}: {e}");
    }
    tx
}

/// Sends a batch on one connection: the first ad after the handshake,
/// each further one as `[command][ad]`, then DC_NOP (as a collector's
/// client sends several updates over TCP).
fn forward(
    addr: &Sinful,
    client: &ClientOptions,
    sessions: &SessionCache,
    batch: &Batch,
) -> Result<(), String> {
    let (mut sock, _) = cedar::client::connect(addr, batch.command, client, Some(sessions))
        .map_err(|e| e.to_string())?;
    let opts = PutOptions {
        exclude_private: true,
        ..Default::default()
    };
    for (i, ad) in batch.ads.iter().enumerate() {
        let mut e = sock.encoder();
        if i > 0 {
            e.put_int(i64::from(batch.command));
        }
        put_ad(&mut e, ad, &opts);
        sock.send(&e).map_err(|e| e.to_string())?;
    }
    let mut e = sock.encoder();
    e.put_int(i64::from(cmd::DC_NOP));
    sock.send(&e).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_queries_are_numbered_and_named_as_htcondor_s() {
        // The pure core keeps its own numbers (it knows nothing of CEDAR);
        // they must be the ones logs and refusals name.
        use cedar::commands as c;
        use negotiator::pool_history::commands as h;
        for (ours, theirs, name) in [
            (
                h::QUERY_HIST_STARTD,
                c::QUERY_HIST_STARTD,
                "QUERY_HIST_STARTD",
            ),
            (
                h::QUERY_HIST_STARTD_LIST,
                c::QUERY_HIST_STARTD_LIST,
                "QUERY_HIST_STARTD_LIST",
            ),
            (
                h::QUERY_HIST_SUBMITTOR,
                c::QUERY_HIST_SUBMITTOR,
                "QUERY_HIST_SUBMITTOR",
            ),
            (
                h::QUERY_HIST_SUBMITTOR_LIST,
                c::QUERY_HIST_SUBMITTOR_LIST,
                "QUERY_HIST_SUBMITTOR_LIST",
            ),
            (
                h::QUERY_HIST_GROUPS,
                c::QUERY_HIST_GROUPS,
                "QUERY_HIST_GROUPS",
            ),
            (
                h::QUERY_HIST_GROUPS_LIST,
                c::QUERY_HIST_GROUPS_LIST,
                "QUERY_HIST_GROUPS_LIST",
            ),
            (
                h::QUERY_HIST_SUBMITTORGROUPS,
                c::QUERY_HIST_SUBMITTORGROUPS,
                "QUERY_HIST_SUBMITTORGROUPS",
            ),
            (
                h::QUERY_HIST_SUBMITTORGROUPS_LIST,
                c::QUERY_HIST_SUBMITTORGROUPS_LIST,
                "QUERY_HIST_SUBMITTORGROUPS_LIST",
            ),
        ] {
            assert_eq!(ours, theirs, "{name}");
            assert_eq!(c::name(ours), Some(name));
        }
        assert_eq!(c::name(427), Some("X_EVENT_NOTIFICATION"));
    }

    #[test]
    fn a_view_host_that_is_this_collector_is_recognised() {
        let me = Sinful::parse("<127.0.0.1:9700?noUDP>", 0).unwrap();
        for (host, mine) in [
            ("127.0.0.1:9700", true),
            ("localhost:9700", true),
            ("127.0.0.1:9701", false),
            ("10.0.0.1:9700", false),
        ] {
            let v = Sinful::parse(host, 9618).unwrap();
            assert_eq!(points_to_me(&v, &me), mine, "{host} -> {v}");
        }
    }

    #[test]
    fn slots_and_submitters_are_forwarded_unless_other_types_are_named() {
        assert_eq!(
            forwarded_types(None),
            vec![AdType::Startd, AdType::Submitter]
        );
        assert_eq!(
            forwarded_types(Some("Machine, Scheduler")),
            vec![AdType::Startd, AdType::Schedd]
        );
    }

    #[test]
    fn the_history_is_appended_rotated_within_its_storage_and_answered() {
        let dir = std::env::temp_dir().join(format!("fc-view-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A torn line left by a crash is cut at opening.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("viewhist1.0.new"),
            "5\tslot9@h\t:\t0\t  0.000\t1\n6\tslo",
        )
        .unwrap();
        let mut h = PoolHistory::open(&dir, 24 * 400, 1).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("viewhist1.0.new")).unwrap(),
            "5\tslot9@h\t:\t0\t  0.000\t1\n"
        );
        let mut slot = ClassAd::new();
        slot.insert_value("Name", "slot1@h");
        slot.insert_value("State", "Claimed");
        for t in 10..200 {
            h.sample(std::slice::from_ref(&slot), &[], t);
        }
        let new = std::fs::metadata(dir.join("viewhist1.0.new"))
            .unwrap()
            .len();
        assert!(new <= 400 + 40, "{new}");
        assert!(dir.join("viewhist1.0.old").exists());
        let lines = answer(
            &dir,
            core::commands::QUERY_HIST_STARTD,
            150,
            199,
            true,
            "slot1@h",
        );
        assert!(!lines.is_empty());
        assert!(
            lines
                .iter()
                .all(|l| l.contains("slot1@h\t:\t0\t  0.000\t3")),
            "{lines:?}"
        );
        let names = answer(
            &dir,
            core::commands::QUERY_HIST_STARTD_LIST,
            0,
            1000,
            false,
            "",
        );
        assert_eq!(names, ["slot1@h\n"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
