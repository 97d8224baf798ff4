//! How job ads look on the terminal, in HTCondor's formats: condor_q's
//! batch and -nobatch tables, -hold and -run, condor_history's table,
//! `-l`, `-af` and `-json`. Presentation only: the ads come from the pool.

use std::collections::BTreeMap;
use std::path::PathBuf;

use classad::{ClassAd, Env, Value};
use wire::api::{JobSpec, Totals};

/// The pool's state directory: `explicit`, else $FERROCONDOR_STATE, else
/// $XDG_STATE_HOME/ferrocondor, else ~/.local/state/ferrocondor.
pub fn state_dir(explicit: Option<&std::path::Path>) -> PathBuf {
    if let Some(d) = explicit {
        return d.to_path_buf();
    }
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
    if let Some(d) = var("FERROCONDOR_STATE") {
        return PathBuf::from(d);
    }
    if let Some(d) = var("XDG_STATE_HOME") {
        return PathBuf::from(d).join("ferrocondor");
    }
    let home = var("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    home.join(".local/state/ferrocondor")
}

/// Parses the `-constraint` the user typed on its own, before it is joined
/// with the ids and owners into the query's constraint, so that a syntax
/// error shows the user's own text with a caret at the column.
pub fn check_constraint(constraint: Option<&str>) -> Result<(), crate::errors::Error> {
    match constraint {
        Some(c) => classad::Expr::parse(c)
            .map(drop)
            .map_err(|e| crate::errors::Error::parse("-constraint", e)),
        None => Ok(()),
    }
}

/// The ClassAd constraint that selects the jobs a command line names, as
/// HTCondor's tools build it: any of the ids (`ClusterId == 3`, or with
/// `ProcId`), any of the owners, `constraint`, and, for condor_q's
/// default, only `mine`'s jobs. `None` selects every job.
pub fn job_constraint(
    targets: &[String],
    constraint: Option<&str>,
    mine: Option<&str>,
) -> Option<String> {
    let quote = crate::daemon_client::classad_string;
    let mut ids = Vec::new();
    let mut owners = Vec::new();
    for t in targets {
        match JobSpec::parse(t) {
            Some(JobSpec {
                cluster,
                proc: Some(p),
            }) => ids.push(format!("(ClusterId == {cluster} && ProcId == {p})")),
            Some(JobSpec { cluster, .. }) => ids.push(format!("ClusterId == {cluster}")),
            None => owners.push(format!("Owner == {}", quote(t))),
        }
    }
    let mut parts = Vec::new();
    for any in [ids, owners] {
        match any.len() {
            0 => {}
            1 => parts.push(any.into_iter().next().unwrap_or_default()),
            _ => parts.push(format!("({})", any.join(" || "))),
        }
    }
    if let Some(me) = mine {
        parts.push(format!("Owner == {}", quote(me)));
    }
    if let Some(c) = constraint {
        parts.push(format!("({c})"));
    }
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(parts.join(" && ")),
    }
}

/// The name of the user running this tool (condor_q's "my jobs").
pub fn my_name() -> String {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    cedar::auth::user_name(uid).unwrap_or_else(|| uid.to_string())
}

fn int(ad: &ClassAd, name: &str, env: &Env) -> Option<i64> {
    match ad.eval_attr(name, env) {
        Value::Int(i) => Some(i),
        Value::Real(r) => Some(r as i64),
        _ => None,
    }
}

pub(crate) fn real(ad: &ClassAd, name: &str, env: &Env) -> Option<f64> {
    match ad.eval_attr(name, env) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) => Some(r),
        _ => None,
    }
}

pub(crate) fn string(ad: &ClassAd, name: &str, env: &Env) -> Option<String> {
    match ad.eval_attr(name, env) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

fn id_of(ad: &ClassAd, env: &Env) -> (i64, i64) {
    (
        int(ad, "ClusterId", env).unwrap_or(-1),
        int(ad, "ProcId", env).unwrap_or(-1),
    )
}

/// `M/DD HH:MM` in local time, as condor_q prints QDate.
pub fn short_date(t: i64, utc_offset: i32) -> String {
    let c = classad::time::civil(t, utc_offset);
    format!("{}/{:02} {:02}:{:02}", c.month, c.day, c.hour, c.minute)
}

/// `MM/DD/YY HH:MM:SS`, as the banner prints the time of the query.
fn banner_date(t: i64, utc_offset: i32) -> String {
    let c = classad::time::civil(t, utc_offset);
    format!(
        "{:02}/{:02}/{:02} {:02}:{:02}:{:02}",
        c.month,
        c.day,
        c.year.rem_euclid(100),
        c.hour,
        c.minute,
        c.second
    )
}

/// `D+HH:MM:SS`, as condor_q prints RUN_TIME and condor_status ActvtyTime.
pub(crate) fn duration(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86400,
        s % 86400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

fn status_letter(status: Option<i64>) -> &'static str {
    match status {
        Some(1) => "I",
        Some(2) => "R",
        Some(3) => "X",
        Some(4) => "C",
        Some(5) => "H",
        Some(6) => ">",
        Some(7) => "S",
        _ => "?",
    }
}

/// Wall-clock time used: the finished runs, plus the current one.
fn run_time(ad: &ClassAd, env: &Env) -> i64 {
    let done = real(ad, "RemoteWallClockTime", env).unwrap_or(0.0) as i64;
    let current = match (
        int(ad, "JobStatus", env),
        int(ad, "JobCurrentStartDate", env),
    ) {
        (Some(2 | 6 | 7), Some(start)) if start > 0 => (env.now - start).max(0),
        _ => 0,
    };
    done + current
}

/// The command as condor_q shows it: the executable's name and arguments.
fn command(ad: &ClassAd, env: &Env) -> String {
    let cmd = string(ad, "Cmd", env).unwrap_or_default();
    let base = cmd.rsplit('/').next().unwrap_or(&cmd).to_string();
    match string(ad, "Arguments", env).or_else(|| string(ad, "Args", env)) {
        Some(a) if !a.is_empty() => format!("{base} {a}"),
        _ => base,
    }
}

fn owner(ad: &ClassAd, env: &Env) -> String {
    string(ad, "Owner", env).unwrap_or_else(|| "?".into())
}

/// `-- Schedd: NAME : ADDRESS @ DATE`, after a blank line, as condor_q starts.
pub fn banner(schedd: &str, address: &str, now: i64, utc_offset: i32) -> String {
    format!(
        "\n\n-- Schedd: {schedd} : {address} @ {}\n",
        banner_date(now, utc_offset)
    )
}

fn totals_line(label: &str, t: &Totals) -> String {
    format!(
        "Total for {label}: {} jobs; {} completed, {} removed, {} idle, {} running, {} held, {} suspended\n",
        t.jobs, t.completed, t.removed, t.idle, t.running, t.held, t.suspended
    )
}

/// The three totals lines condor_q ends with.
pub fn totals(
    query: &[ClassAd],
    user: &str,
    user_totals: &Totals,
    all: &Totals,
    env: &Env,
) -> String {
    let mut q = Totals::default();
    for ad in query {
        q.jobs += 1;
        match int(ad, "JobStatus", env) {
            Some(1) => q.idle += 1,
            Some(2 | 6) => q.running += 1,
            Some(3) => q.removed += 1,
            Some(4) => q.completed += 1,
            Some(5) => q.held += 1,
            Some(7) => q.suspended += 1,
            _ => {}
        }
    }
    totals_lines(&q, user, user_totals, all)
}

/// The three totals lines, from counts already made (`-totals`: the
/// schedd's summary).
pub fn totals_lines(query: &Totals, user: &str, user_totals: &Totals, all: &Totals) -> String {
    let mut s = String::from("\n");
    s.push_str(&totals_line("query", query));
    s.push_str(&totals_line(user, user_totals));
    s.push_str(&totals_line("all users", all));
    s
}

/// condor_q's default batch view: one line per owner and batch.
/// `next_proc` is each factory cluster's JobMaterializeNextProcId: a
/// factory's jobs not yet made are not done (condor_q counts its DONE as
/// the jobs made less those in the queue, `reduce_procs` in
/// `queue.cpp`).
pub fn batch_table(
    ads: &[ClassAd],
    env: &Env,
    utc_offset: i32,
    next_proc: &BTreeMap<i64, i64>,
) -> String {
    #[derive(Default)]
    struct Batch {
        submitted: i64,
        run: u64,
        idle: u64,
        held: u64,
        in_queue: u64,
        total_procs: BTreeMap<i64, i64>,
        in_queue_of: BTreeMap<i64, i64>,
        ids: Vec<(i64, i64)>,
    }
    let mut batches: BTreeMap<(String, String), Batch> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for ad in ads {
        let (c, p) = id_of(ad, env);
        let name = string(ad, "JobBatchName", env).unwrap_or_else(|| format!("ID: {c}"));
        let key = (owner(ad, env), name);
        if !batches.contains_key(&key) {
            order.push(key.clone());
        }
        let b = batches.entry(key).or_default();
        let qdate = int(ad, "QDate", env).unwrap_or(0);
        if b.submitted == 0 || qdate < b.submitted {
            b.submitted = qdate;
        }
        match int(ad, "JobStatus", env) {
            Some(1) => b.idle += 1,
            Some(2 | 6 | 7) => b.run += 1,
            Some(5) => b.held += 1,
            _ => {}
        }
        b.in_queue += 1;
        *b.in_queue_of.entry(c).or_insert(0) += 1;
        let procs = int(ad, "TotalSubmitProcs", env).unwrap_or(0);
        let e = b.total_procs.entry(c).or_insert(0);
        *e = (*e).max(procs).max(p + 1);
        b.ids.push((c, p));
    }
    let ow = order.iter().map(|k| k.0.len()).max().unwrap_or(0).max(5);
    let bw = order.iter().map(|k| k.1.len()).max().unwrap_or(0).max(10);
    let dash = |n: u64| {
        if n == 0 {
            "_".to_string()
        } else {
            n.to_string()
        }
    };
    let mut s = format!(
        "{:<ow$} {:<bw$} {:>11} {:>6} {:>6} {:>6} {:>6} {:>6} JOB_IDS\n",
        "OWNER", "BATCH_NAME", "SUBMITTED", "DONE", "RUN", "IDLE", "HOLD", "TOTAL"
    );
    for key in order {
        let b = &batches[&key];
        let total: i64 = b.total_procs.values().sum();
        let total = (total as u64).max(b.in_queue);
        // A factory's jobs: made, less those in the queue; another
        // cluster's: all, less those running, idle or held.
        let (mut factory_total, mut factory_done) = (0u64, 0u64);
        for (c, n) in &b.in_queue_of {
            if let Some(next) = next_proc.get(c) {
                factory_total += b.total_procs.get(c).copied().unwrap_or(0).max(0) as u64;
                factory_done += (next - n).max(0) as u64;
            }
        }
        let others = total.saturating_sub(factory_total);
        let done = if factory_total == 0 {
            total - (b.run + b.idle + b.held).min(total)
        } else {
            // What the other clusters have present (running, idle, held)
            // is what they have in the queue less their done ones.
            let factory_present: u64 = b
                .in_queue_of
                .iter()
                .filter(|(c, _)| next_proc.contains_key(c))
                .map(|(_, n)| *n as u64)
                .sum();
            let active_others = (b.run + b.idle + b.held).saturating_sub(factory_present);
            factory_done + others.saturating_sub(active_others)
        };
        let mut ids = b.ids.clone();
        ids.sort();
        let first = ids[0];
        let last = ids[ids.len() - 1];
        let job_ids = if first == last {
            format!("{}.{}", first.0, first.1)
        } else if first.0 == last.0 {
            format!("{}.{}-{}", first.0, first.1, last.1)
        } else {
            format!("{}.{} ... {}.{}", first.0, first.1, last.0, last.1)
        };
        s.push_str(&format!(
            "{:<ow$} {:<bw$} {:>11} {:>6} {:>6} {:>6} {:>6} {:>6} {job_ids}\n",
            key.0,
            key.1,
            short_date(b.submitted, utc_offset),
            dash(done),
            dash(b.run),
            dash(b.idle),
            dash(b.held),
            total
        ));
    }
    s
}

fn id_cell(ad: &ClassAd, env: &Env) -> String {
    let (c, p) = id_of(ad, env);
    format!("{c:>4}.{p:<3}")
}

/// condor_q -factory: one line per factory cluster (its cluster ad, with
/// the counts the schedd adds), HTCondor's columns.
pub fn factory_table(ads: &[ClassAd], env: &Env, utc_offset: i32) -> String {
    let mut s = format!(
        "{:<9} {:<14} {:>11} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:<4} {}\n",
        " ID",
        "OWNER",
        "SUBMITTED",
        " LIMIT",
        "PRESNT",
        "  RUN ",
        "  IDLE",
        "  HOLD",
        "NEXTID",
        "MODE",
        "DIGEST"
    );
    let n = |ad: &ClassAd, name: &str| int(ad, name, env).unwrap_or(0);
    for ad in ads {
        let mode = match int(ad, "JobMaterializePaused", env) {
            None => "",
            Some(-1) => "Errs",
            Some(0) => "Norm",
            Some(1) => "Held",
            Some(2) => "Done",
            Some(3) => "Gone",
            Some(_) => "Unk",
        };
        s.push_str(&format!(
            "{:>4}.    {:<14} {:>11} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:<4} {}\n",
            n(ad, "ClusterId"),
            owner(ad, env),
            short_date(n(ad, "QDate"), utc_offset),
            n(ad, "JobMaterializeLimit"),
            n(ad, "JobsPresent"),
            n(ad, "JobsRunning"),
            n(ad, "JobsIdle"),
            n(ad, "JobsHeld"),
            n(ad, "JobMaterializeNextProcId"),
            mode,
            string(ad, "JobMaterializeDigestFile", env).unwrap_or_default()
        ));
    }
    s
}

/// condor_q -nobatch.
pub fn nobatch_table(ads: &[ClassAd], env: &Env, utc_offset: i32) -> String {
    let mut s = format!(
        "{:<8} {:<14} {:>11} {:>12} {:<2} {:<3} {:<4} {}\n",
        " ID", "OWNER", "SUBMITTED", "RUN_TIME", "ST", "PRI", "SIZE", "CMD"
    );
    for ad in ads {
        let size = real(ad, "ImageSize", env).unwrap_or(0.0) / 1024.0;
        s.push_str(&format!(
            "{} {:<14} {:>11} {:>12} {:<2} {:<3} {:<4} {}\n",
            id_cell(ad, env),
            owner(ad, env),
            short_date(int(ad, "QDate", env).unwrap_or(0), utc_offset),
            duration(run_time(ad, env)),
            status_letter(int(ad, "JobStatus", env)),
            int(ad, "JobPrio", env).unwrap_or(0),
            format!("{size:.1}"),
            command(ad, env)
        ));
    }
    s
}

/// condor_q -hold.
pub fn hold_table(ads: &[ClassAd], env: &Env, utc_offset: i32) -> String {
    let mut s = format!(
        "{:<8} {:<14} {:>11} {}\n",
        " ID", "OWNER", "HELD_SINCE", "HOLD_REASON"
    );
    for ad in ads {
        s.push_str(&format!(
            "{} {:<14} {:>11} {}\n",
            id_cell(ad, env),
            owner(ad, env),
            short_date(
                int(ad, "EnteredCurrentStatus", env).unwrap_or(0),
                utc_offset
            ),
            string(ad, "HoldReason", env).unwrap_or_default()
        ));
    }
    s
}

/// condor_q -run.
pub fn run_table(ads: &[ClassAd], env: &Env, utc_offset: i32) -> String {
    let mut s = format!(
        "{:<8} {:<14} {:>11} {:>12} {}\n",
        " ID", "OWNER", "SUBMITTED", "RUN_TIME", "HOST(S)"
    );
    for ad in ads {
        s.push_str(&format!(
            "{} {:<14} {:>11} {:>12} {}\n",
            id_cell(ad, env),
            owner(ad, env),
            short_date(int(ad, "QDate", env).unwrap_or(0), utc_offset),
            duration(run_time(ad, env)),
            string(ad, "RemoteHost", env).unwrap_or_default()
        ));
    }
    s
}

/// condor_history's default table.
pub fn history_table(ads: &[ClassAd], env: &Env, utc_offset: i32) -> String {
    let mut s = format!(
        "{:<8} {:<14} {:>11} {:>12} {:<2} {:>11} {}\n",
        " ID", "OWNER", "SUBMITTED", "RUN_TIME", "ST", "COMPLETED", "CMD"
    );
    for ad in ads {
        let completed = match int(ad, "CompletionDate", env) {
            Some(t) if t > 0 => short_date(t, utc_offset),
            _ => "???".into(),
        };
        s.push_str(&format!(
            "{} {:<14} {:>11} {:>12} {:<2} {:>11} {}\n",
            id_cell(ad, env),
            owner(ad, env),
            short_date(int(ad, "QDate", env).unwrap_or(0), utc_offset),
            duration(run_time(ad, env)),
            status_letter(int(ad, "JobStatus", env)),
            completed,
            command(ad, env)
        ));
    }
    s
}

/// `-l`: each ad in old syntax, followed by a blank line.
pub fn long(ads: &[ClassAd]) -> String {
    let mut s = String::new();
    for ad in ads {
        s.push_str(&classad::unparse::ad_to_old_syntax(ad));
        s.push('\n');
    }
    s
}

/// `-json`: HTCondor's JSON list (`[]` when there are none, so it parses).
pub fn json(ads: &[ClassAd]) -> String {
    let text = classad::json::ads_to_json_text(ads.iter());
    if text.is_empty() {
        "[]\n".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_dates_are_htcondors() {
        assert_eq!(duration(0), "0+00:00:00");
        assert_eq!(duration(90061), "1+01:01:01");
        assert_eq!(short_date(1_700_000_000, 0), "11/14 22:13");
        assert_eq!(banner_date(1_700_000_000, 0), "11/14/23 22:13:20");
    }

    #[test]
    fn the_batch_view_counts_by_status() {
        let env = Env::at(1_700_000_100);
        let ads: Vec<ClassAd> = (0..3)
            .map(|p| {
                ClassAd::parse(&format!(
                    "[ ClusterId = 4; ProcId = {p}; Owner = \"alice\"; QDate = 1700000000; JobStatus = {}; TotalSubmitProcs = 4 ]",
                    if p == 1 { 5 } else { 1 }
                ))
                .unwrap()
            })
            .collect();
        let t = batch_table(&ads, &env, 0, &BTreeMap::new());
        let line = t.lines().nth(1).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["alice", "ID:", "4", "11/14", "22:13", "1", "_", "2", "1", "4", "4.0-2"]
        );
        // A factory of 4 that has made 3 (job 0 left): 1 done, not the 1
        // it has yet to make.
        let t = batch_table(&ads[1..], &env, 0, &BTreeMap::from([(4, 3)]));
        let line = t.lines().nth(1).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["alice", "ID:", "4", "11/14", "22:13", "1", "_", "1", "1", "4", "4.1-2"]
        );
    }
}
