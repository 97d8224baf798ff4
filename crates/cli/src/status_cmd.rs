//! `ferrocondor status`: the pool's slot ads as HTCondor's condor_status
//! prints them: the default table (one row per slot, then the totals by
//! platform), `-compact` (one row per machine), `-total`, `-l`, `-af`,
//! `-json`, restricted by `-constraint` and by slot or machine names.
//! Presentation only: the ads come from the pool.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::Write;

use cedar::commands as cmd;
use classad::{ClassAd, Env, Value};

use crate::args::StatusArgs;
use crate::daemon_client::Daemons;
use crate::errors::{Error, Outcome};
use crate::jobview;
use crate::jobview::{duration, real as num, string as text};

pub fn run(a: &StatusArgs, now: i64, out: &mut dyn Write) -> Result<Outcome, Error> {
    if a.compact && (a.claimed || a.state || a.run) {
        let which = if a.claimed {
            "-claimed"
        } else if a.state {
            "-state"
        } else {
            "-run"
        };
        return Err(Error::Usage(format!(
            "{which} with -compact is not supported by ferrocondor yet"
        )));
    }
    // A bad -af or -format is said before the pool is asked.
    let mask = if a.print.is_empty() {
        None
    } else {
        Some(crate::printmask::PrintMask::parse(&a.print)?)
    };
    // -run shows the access points (condor_status' SDO_Schedd_Run).
    let schedd = a.schedd || a.run;
    crate::jobview::check_constraint(a.constraint.as_deref())?;
    let mut wanted = constraint(&a.targets, a.constraint.as_deref());
    if !schedd && !a.submitters && !a.any {
        if let Some(mode) = mode_constraint(a) {
            wanted = Some(match wanted {
                Some(w) => format!("{w} && ({mode})"),
                None => format!("({mode})"),
            });
        }
    }
    // condor_status asks the collector: the kind of ad as the command,
    // the constraint as the query's Requirements.
    let command = if a.any {
        cmd::QUERY_ANY_ADS
    } else if schedd {
        cmd::QUERY_SCHEDD_ADS
    } else if a.submitters {
        cmd::QUERY_SUBMITTOR_ADS
    } else {
        cmd::QUERY_STARTD_ADS
    };
    let mut ads = Daemons::new(None)?
        .located(a.pool.as_deref(), None)
        .query_collector(command, wanted.as_deref(), &[])?;
    let env = crate::system::ToolConfig::load()?.env(now);
    sort_slots(&mut ads, &env);
    let plain = !a.json && !a.long && mask.is_none() && !a.total;
    if a.any && plain {
        out.write_all(any_table(&ads, &env).as_bytes())?;
        return Ok(Outcome::Success);
    }
    if a.run && plain {
        out.write_all(schedd_run_table(&ads, &env).as_bytes())?;
        return Ok(Outcome::Success);
    }
    if plain && !a.compact && !schedd && !a.submitters {
        if a.claimed {
            out.write_all(claimed_table(&ads, &env).as_bytes())?;
            return Ok(Outcome::Success);
        }
        if a.state {
            out.write_all(state_table(&ads, &env).as_bytes())?;
            return Ok(Outcome::Success);
        }
    }
    let jobs_table = (a.schedd || a.submitters)
        && !a.json
        && !a.long
        && mask.is_none()
        && !a.total
        && !a.compact;
    let text = if jobs_table {
        job_counts_table(&ads, &env)
    } else if a.json {
        jobview::json(&ads)
    } else if a.long {
        jobview::long(&ads)
    } else if let Some(mask) = mask {
        mask.render(&ads, &env)
    } else if a.total {
        if ads.is_empty() {
            String::new()
        } else {
            format!("\n{}", totals(&ads, a.compact, &env))
        }
    } else if a.compact {
        compact_table(&ads, &env)
    } else {
        slot_table(&ads, &env)
    };
    out.write_all(text.as_bytes())?;
    Ok(Outcome::Success)
}

/// What -avail and -claimed select (HTCondor's PMODE_*_CONSTRAINT).
fn mode_constraint(a: &StatusArgs) -> Option<&'static str> {
    if a.avail {
        Some("State == \"Unclaimed\" && Cpus > 0 && Memory > 0")
    } else if a.claimed {
        Some("State == \"Claimed\"")
    } else {
        None
    }
}

/// The constraint the command line asks for: `-constraint`, and the slot
/// or machine names given (condor_status's host options: a name selects
/// the slot of that name, or every slot of the machine of that name).
fn constraint(targets: &[String], constraint: Option<&str>) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = constraint {
        parts.push(format!("({c})"));
    }
    if !targets.is_empty() {
        let names: Vec<String> = targets
            .iter()
            .map(|t| {
                let q = quote(t);
                format!("Name == {q} || Machine == {q}")
            })
            .collect();
        parts.push(format!("({})", names.join(" || ")));
    }
    (!parts.is_empty()).then(|| parts.join(" && "))
}

/// A ClassAd string literal.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

// ---- reading ads -------------------------------------------------------

// (number and text attribute readers: `jobview::real`, `jobview::string`)

fn flag(ad: &ClassAd, name: &str, env: &Env) -> bool {
    matches!(ad.eval_attr(name, env), Value::Bool(true))
}

/// HTCondor's default order: by Machine, then Name, numbers in names
/// compared as numbers (`slot2` before `slot10`).
fn sort_slots(ads: &mut [ClassAd], env: &Env) {
    let key = |ad: &ClassAd| {
        (
            text(ad, "Machine", env).unwrap_or_default(),
            text(ad, "Name", env).unwrap_or_default(),
        )
    };
    ads.sort_by(|a, b| {
        let (am, an) = key(a);
        let (bm, bn) = key(b);
        natural_cmp(&am, &bm).then_with(|| natural_cmp(&an, &bn))
    });
}

/// Compares runs of digits by value, everything else byte by byte.
fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let da = trim_zeros(&a[si..i]);
            let db = trim_zeros(&b[sj..j]);
            let o = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
            if o != Ordering::Equal {
                return o;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let n = d.iter().take_while(|&&c| c == b'0').count();
    &d[n.min(d.len().saturating_sub(1))..]
}

/// `text` cut to `width` characters and padded on the right.
fn left(text: &str, width: usize) -> String {
    let cut: String = text.chars().take(width).collect();
    format!("{cut:<width$}")
}

// ---- the default table ---------------------------------------------------

/// condor_status's default slot table: Name OpSys Arch State Activity
/// LoadAv Mem ActvtyTime, a blank line after the headings, then the
/// totals. The Name and Mem columns widen to their widest value (as
/// HTCondor's do when the output is not a terminal); OpSys, Arch, State
/// and Activity are cut to 10, 6, 9 and 8 characters as in HTCondor.
pub fn slot_table(ads: &[ClassAd], env: &Env) -> String {
    if ads.is_empty() {
        return String::new();
    }
    struct Row {
        name: String,
        opsys: String,
        arch: String,
        state: String,
        activity: String,
        load: String,
        mem: String,
        time: String,
    }
    let rows: Vec<Row> = ads
        .iter()
        .map(|ad| {
            // HTCondor measures from the ad's own clock when it has one.
            let clock = num(ad, "MyCurrentTime", env)
                .or_else(|| num(ad, "LastHeardFrom", env))
                .map_or(env.now, |t| t as i64);
            Row {
                name: text(ad, "Name", env).unwrap_or_else(|| "[????]".into()),
                opsys: text(ad, "OpSys", env).unwrap_or_else(|| "[?]".into()),
                arch: text(ad, "Arch", env).unwrap_or_else(|| "[?]".into()),
                state: text(ad, "State", env).unwrap_or_else(|| "[?]".into()),
                activity: text(ad, "Activity", env).unwrap_or_else(|| "[?]".into()),
                load: num(ad, "CondorLoadAvg", env)
                    .map_or_else(|| "[???]".into(), |l| format!("{l:.3}")),
                mem: num(ad, "Memory", env).map_or_else(|| "?".into(), |m| format!("{}", m as i64)),
                time: num(ad, "EnteredCurrentActivity", env)
                    .map_or_else(|| "[Unknown]".into(), |t| duration(clock - t as i64)),
            }
        })
        .collect();
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(19);
    let mem_w = rows.iter().map(|r| r.mem.len()).max().unwrap_or(0).max(4);
    let mut s = format!(
        "{:<name_w$} {:<10} {:<6} {:<9} {:<8} {:<6} {:<mem_w$}  ActvtyTime\n\n",
        "Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem"
    );
    for r in &rows {
        s.push_str(&format!(
            "{:<name_w$} {} {} {} {} {:>6} {:>mem_w$}{:>12}\n",
            r.name,
            left(&r.opsys, 10),
            left(&r.arch, 6),
            left(&r.state, 9),
            left(&r.activity, 8),
            r.load,
            r.mem,
            r.time
        ));
    }
    s.push('\n');
    s.push_str(&totals(ads, false, env));
    s
}

// ---- the totals ----------------------------------------------------------

/// One line of the totals: slots counted by State.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub owner: u64,
    pub claimed: u64,
    pub unclaimed: u64,
    pub matched: u64,
    pub preempting: u64,
    pub drained: u64,
    pub backfill: u64,
    pub backfill_idle: u64,
}

impl Counts {
    /// Counts a slot in `state`; an idle backfill slot is counted apart
    /// (BkIdle) and not in the total, a claimed one as Backfill.
    fn add(&mut self, state: &str, backfill_slot: bool) {
        let mut state = state;
        if backfill_slot {
            if state == "Unclaimed" {
                self.backfill_idle += 1;
                return;
            }
            if state == "Claimed" {
                state = "Backfill";
            }
        }
        match state {
            "Owner" => self.owner += 1,
            "Unclaimed" => self.unclaimed += 1,
            "Claimed" => self.claimed += 1,
            "Matched" => self.matched += 1,
            "Preempting" => self.preempting += 1,
            "Backfill" => self.backfill += 1,
            "Drained" => self.drained += 1,
            _ => return,
        }
        self.total += 1;
    }

    fn line(&self) -> String {
        format!(
            "{:>6} {:>5} {:>7} {:>9} {:>7} {:>10} {:>6} {:>8} {:>6}\n",
            self.total,
            self.owner,
            self.claimed,
            self.unclaimed,
            self.matched,
            self.preempting,
            self.drained,
            self.backfill,
            self.backfill_idle
        )
    }
}

/// The slots counted by state, per platform key and in all.
pub fn count(ads: &[ClassAd], compact: bool, env: &Env) -> (BTreeMap<String, Counts>, Counts) {
    let mut by_key: BTreeMap<String, Counts> = BTreeMap::new();
    let mut all = Counts::default();
    for ad in ads {
        let backfill = flag(ad, "SlotBackfill", env);
        let key = if compact {
            platform(ad, env)
        } else {
            match (text(ad, "Arch", env), text(ad, "OpSys", env)) {
                (Some(a), Some(o)) => Some(format!("{a}/{o}")),
                _ => None,
            }
        };
        let Some(key) = key else { continue };
        let mut states: Vec<String> = Vec::new();
        if compact && flag(ad, "PartitionableSlot", env) {
            // A partitionable slot stands for its dynamic slots, and for
            // itself while it has cores left.
            let name = text(ad, "Name", env).unwrap_or_default();
            states.extend(children(ads, &name, env).filter_map(|c| text(c, "State", env)));
            if num(ad, "Cpus", env).unwrap_or(0.0) >= 0.1 {
                states.extend(text(ad, "State", env));
            }
        } else if compact && flag(ad, "DynamicSlot", env) {
            continue;
        } else {
            states.extend(text(ad, "State", env));
        }
        for st in &states {
            by_key.entry(key.clone()).or_default().add(st, backfill);
            all.add(st, backfill);
        }
    }
    (by_key, all)
}

/// condor_status's summary: a heading, a line per platform (Arch/OpSys,
/// or for -compact the Platform column), then the Total line; keys
/// right-aligned in at least 14 characters.
pub fn totals(ads: &[ClassAd], compact: bool, env: &Env) -> String {
    let (by_key, all) = count(ads, compact, env);
    let w = by_key.keys().map(String::len).max().unwrap_or(0).max(14);
    let mut s = format!(
        "{:>w$}{:>6} {:>5} {:>7} {:>9} {:>7} {:>10} {:>6} {:>8} {:>6}\n\n",
        "",
        "Total",
        "Owner",
        "Claimed",
        "Unclaimed",
        "Matched",
        "Preempting",
        "Drain",
        "Backfill",
        "BkIdle"
    );
    for (key, c) in &by_key {
        s.push_str(&format!("{key:>w$}{}", c.line()));
    }
    if !by_key.is_empty() {
        s.push('\n');
    }
    s.push_str(&format!("{:>w$}{}", "Total", all.line()));
    s
}

// ---- -compact ------------------------------------------------------------

/// HTCondor's platform name: the architecture (X86_64 as x64) and
/// OpSysAndVer.
fn platform(ad: &ClassAd, env: &Env) -> Option<String> {
    let os = if text(ad, "OpSys", env).as_deref() == Some("WINDOWS") {
        text(ad, "OpSysShortName", env)?
    } else {
        text(ad, "OpSysAndVer", env)?
    };
    let arch = match text(ad, "Arch", env).unwrap_or_default().as_str() {
        "X86_64" => "x64".to_string(),
        "X86" => "x86".to_string(),
        a => a.to_string(),
    };
    Some(format!("{arch}/{os}"))
}

/// The dynamic slots carved from the partitionable slot `parent`.
fn children<'a>(
    ads: &'a [ClassAd],
    parent: &'a str,
    env: &'a Env,
) -> impl Iterator<Item = &'a ClassAd> + 'a {
    ads.iter().filter(move |c| {
        flag(c, "DynamicSlot", env) && text(c, "ParentSlotName", env).as_deref() == Some(parent)
    })
}

/// The two-letter state and activity code of the ST column (`Ui`, `Cb`).
fn code(state: Option<&str>, activity: Option<&str>) -> [char; 2] {
    let s = match state {
        Some("Owner") => 'O',
        Some("Unclaimed") => 'U',
        Some("Matched") => 'M',
        Some("Claimed") => 'C',
        Some("Preempting") => 'P',
        Some("Shutdown") => 'S',
        Some("Delete") => 'X',
        Some("Backfill") => 'F',
        Some("Drained") => 'D',
        _ => ' ',
    };
    let a = match activity {
        Some("Idle") => 'i',
        Some("Busy") => 'b',
        Some("Retiring") => 'r',
        Some("Vacating") => 'v',
        Some("Suspended") => 's',
        Some("Benchmarking") => 'e',
        Some("Killing") => 'k',
        _ => ' ',
    };
    [s, a]
}

fn slot_code(ad: &ClassAd, env: &Env) -> [char; 2] {
    code(
        text(ad, "State", env).as_deref(),
        text(ad, "Activity", env).as_deref(),
    )
}

/// Two codes folded into one: a letter that differs becomes `*`.
fn merge(a: [char; 2], b: [char; 2]) -> [char; 2] {
    [
        if a[0] == b[0] { a[0] } else { '*' },
        if a[1] == b[1] { a[1] } else { '*' },
    ]
}

fn busy(ad: &ClassAd, env: &Env) -> bool {
    matches!(
        text(ad, "State", env).as_deref(),
        Some("Claimed" | "Matched" | "Preempting")
    )
}

/// One row of -compact: a machine's static slots, or one partitionable
/// slot with its dynamic slots.
struct CompactRow {
    machine: String,
    platform: String,
    slots: String,
    cpus: i64,
    gpus: i64,
    total_gb: f64,
    free_cpus: i64,
    free_gb: f64,
    load: Option<f64>,
    st: [char; 2],
    jobs_per_min: Option<f64>,
    max_slot_gb: Option<f64>,
}

fn compact_rows(ads: &[ClassAd], env: &Env) -> Vec<CompactRow> {
    let gb = |ad: &ClassAd, attr: &str| num(ad, attr, env).unwrap_or(0.0) / 1024.0;
    let int = |ad: &ClassAd, attr: &str| num(ad, attr, env).unwrap_or(0.0) as i64;
    let mut rows: Vec<CompactRow> = Vec::new();
    // The row of each machine's static slots, by machine name.
    let mut static_row: BTreeMap<String, usize> = BTreeMap::new();
    for ad in ads {
        if flag(ad, "DynamicSlot", env) {
            continue;
        }
        let machine = text(ad, "Machine", env).unwrap_or_default();
        let load = match (num(ad, "TotalLoadAvg", env), num(ad, "TotalCpus", env)) {
            (Some(l), Some(c)) if c > 0.0 => Some(l / c),
            _ => None,
        };
        let starts = num(ad, "RecentJobStarts", env).map(|s| s / 20.0);
        if flag(ad, "PartitionableSlot", env) {
            let name = text(ad, "Name", env).unwrap_or_default();
            let kids: Vec<&ClassAd> = children(ads, &name, env).collect();
            let mut st = slot_code(ad, env);
            if let Some(first) = kids.first() {
                let consensus =
                    kids.iter()
                        .map(|k| slot_code(k, env))
                        .fold(slot_code(first, env), |a, b| {
                            // A preempting child shows, whatever the others do.
                            let mut m = merge(a, b);
                            if a[0] == 'P' || b[0] == 'P' {
                                m[0] = 'P';
                            }
                            if a[1] == 'v' || b[1] == 'v' {
                                m[1] = 'v';
                            }
                            m
                        });
                let exhausted = num(ad, "Cpus", env).unwrap_or(0.0) < 0.1;
                if st == ['U', 'i'] && exhausted {
                    st = consensus;
                } else if st[0] == 'D' && consensus[0] == 'C' {
                    st[0] = 'C';
                }
                if consensus[0] == 'P' {
                    st[0] = 'P';
                }
                if consensus[1] == 'v' {
                    st[1] = 'v';
                }
                st = merge(st, consensus);
            }
            let max_child = kids
                .iter()
                .filter_map(|k| num(k, "Memory", env))
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            rows.push(CompactRow {
                machine,
                platform: platform(ad, env).unwrap_or_default(),
                slots: format!("{:>4} ", kids.len()),
                cpus: int(ad, "TotalSlotCpus"),
                gpus: int(ad, "TotalSlotGPUs"),
                total_gb: gb(ad, "TotalSlotMemory"),
                free_cpus: int(ad, "Cpus"),
                free_gb: gb(ad, "Memory"),
                load,
                st,
                jobs_per_min: starts,
                max_slot_gb: max_child.map(|m| m / 1024.0),
            });
            continue;
        }
        let free = !busy(ad, env);
        match static_row.get(&machine) {
            Some(&i) => {
                let r = &mut rows[i];
                r.cpus += int(ad, "TotalSlotCpus");
                r.gpus += int(ad, "TotalSlotGPUs");
                r.total_gb += gb(ad, "TotalSlotMemory");
                if free {
                    r.free_cpus += int(ad, "Cpus");
                    r.free_gb += gb(ad, "Memory");
                }
                r.st = merge(r.st, slot_code(ad, env));
                r.jobs_per_min = match (r.jobs_per_min, starts) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                r.max_slot_gb = Some(r.max_slot_gb.unwrap_or(0.0).max(gb(ad, "Memory")));
                let n: i64 = r.slots.trim_end_matches('S').trim().parse().unwrap_or(1);
                r.slots = format!("{:>4}S", n + 1);
            }
            None => {
                static_row.insert(machine.clone(), rows.len());
                rows.push(CompactRow {
                    machine,
                    platform: platform(ad, env).unwrap_or_default(),
                    slots: format!("{:>4}S", 1),
                    cpus: int(ad, "TotalSlotCpus"),
                    gpus: int(ad, "TotalSlotGPUs"),
                    total_gb: gb(ad, "TotalSlotMemory"),
                    free_cpus: if free { int(ad, "Cpus") } else { 0 },
                    free_gb: if free { gb(ad, "Memory") } else { 0.0 },
                    load,
                    st: slot_code(ad, env),
                    jobs_per_min: starts,
                    max_slot_gb: Some(gb(ad, "Memory")),
                });
            }
        }
    }
    rows
}

/// `-compact`: one row per machine (its static slots folded together),
/// and one per partitionable slot, in HTCondor's columns: Machine
/// Platform Slots Cpus Gpus TotalGb FreCpu FreeGb CpuLoad ST Jobs/Min
/// MaxSlotGb; then the totals by platform. Unlike HTCondor, the Cpus,
/// Gpus and TotalGb of a machine of static slots are its slots' sums.
pub fn compact_table(ads: &[ClassAd], env: &Env) -> String {
    let rows = compact_rows(ads, env);
    if rows.is_empty() {
        return String::new();
    }
    let mw = rows
        .iter()
        .map(|r| r.machine.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let pw = rows
        .iter()
        .map(|r| r.platform.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut s = format!(
        "{:<mw$} {:<pw$} {:<5} {:>4} {:>4} {:>8} {:>6} {:>8} {:>7} {:<2} {:>8} {:>9}\n\n",
        "Machine",
        "Platform",
        "Slots",
        "Cpus",
        "Gpus",
        " TotalGb",
        "FreCpu",
        " FreeGb ",
        "CpuLoad",
        "ST",
        "Jobs/Min",
        "MaxSlotGb"
    );
    for r in &rows {
        s.push_str(&format!(
            "{:<mw$} {:<pw$} {} {:>4} {:>4} {:>8.2} {:>6} {:>8.2} {:>7} {}{} {:>8} {:>9}\n",
            r.machine,
            r.platform,
            r.slots,
            r.cpus,
            r.gpus,
            r.total_gb,
            r.free_cpus,
            r.free_gb,
            r.load.map_or_else(String::new, |l| format!("{l:.2}")),
            r.st[0],
            r.st[1],
            r.jobs_per_min
                .map_or_else(|| "_".to_string(), |j| format!("{j:.2}")),
            r.max_slot_gb
                .map_or_else(|| "*".to_string(), |m| format!("{m:.2}")),
        ));
    }
    s.push('\n');
    s.push_str(&totals(ads, true, env));
    s
}

/// `-schedd` and `-submitters`: one row per ad with its job counts, as
/// condor_status prints them (without its totals block).
/// `-any`: one row per ad, MyType TargetType Name (condor_status -any).
fn any_table(ads: &[ClassAd], env: &Env) -> String {
    let cell = |ad: &ClassAd, name: &str| match ad.eval_attr(name, env) {
        Value::Str(s) => s.to_string(),
        _ => String::new(),
    };
    let rows: Vec<[String; 3]> = ads
        .iter()
        .map(|ad| [cell(ad, "MyType"), cell(ad, "TargetType"), cell(ad, "Name")])
        .collect();
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(6);
    let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0).max(10);
    let mut text = format!("\n{:<w0$} {:<w1$} Name\n\n", "MyType", "TargetType");
    for r in rows {
        text.push_str(&format!("{:<w0$} {:<w1$} {}\n", r[0], r[1], r[2]));
    }
    text
}

fn job_counts_table(ads: &[ClassAd], env: &Env) -> String {
    let text = |ad: &ClassAd, n: &str| match ad.eval_attr(n, env) {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        _ => String::new(),
    };
    let rows: Vec<[String; 5]> = ads
        .iter()
        .map(|ad| {
            [
                text(ad, "Name"),
                text(ad, "Machine"),
                text(ad, "RunningJobs"),
                text(ad, "IdleJobs"),
                text(ad, "HeldJobs"),
            ]
        })
        .collect();
    let w = |i: usize, head: &str| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([head.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (w(0, "Name"), w(1, "Machine"));
    let mut out = format!(
        "{:<w0$} {:<w1$} RunningJobs IdleJobs HeldJobs\n\n",
        "Name", "Machine"
    );
    for r in &rows {
        out.push_str(&format!(
            "{:<w0$} {:<w1$} {:>11} {:>8} {:>8}\n",
            r[0], r[1], r[2], r[3], r[4]
        ));
    }
    out
}

// ---- -claimed, -state, -run ----------------------------------------------

/// Lines with the spaces at their ends cut (the last columns are padded).
fn trimmed(text: String) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The Name column's width, as the default table makes it.
fn name_width(ads: &[ClassAd], env: &Env) -> usize {
    ads.iter()
        .map(|ad| text(ad, "Name", env).map_or(6, |n| n.len()))
        .max()
        .unwrap_or(0)
        .max(19)
}

fn load_avg(ad: &ClassAd, env: &Env) -> String {
    num(ad, "CondorLoadAvg", env).map_or_else(|| "[???]".into(), |l| format!("{l:.3}"))
}

/// The ad's own clock, as the default table measures times from it.
fn ad_clock(ad: &ClassAd, env: &Env) -> i64 {
    num(ad, "MyCurrentTime", env)
        .or_else(|| num(ad, "LastHeardFrom", env))
        .map_or(env.now, |t| t as i64)
}

/// HTCondor's format_time: `%3d+%02d:%02d:%02d`.
fn elapsed(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{:>3}+{:02}:{:02}:{:02}",
        s / 86400,
        s % 86400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// `-claimed`: the claimed slots and who claimed them (condor_status'
/// PP_SLOTS_RUN: the default columns without State, Activity, Mem and
/// ActvtyTime, with RemoteUser and ClientMachine), then the machines,
/// MIPS, KFLOPS and mean load average by platform.
pub fn claimed_table(ads: &[ClassAd], env: &Env) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let nw = name_width(ads, env);
    let mut s = format!(
        "{:<nw$} {:<10} {:<6} {:<6} {:<20} {:<16}\n\n",
        "Name", "OpSys", "Arch", "LoadAv", "RemoteUser", "ClientMachine"
    );
    let field = |ad: &ClassAd, name: &str| text(ad, name, env).unwrap_or_else(|| "[??]".into());
    for ad in ads {
        s.push_str(&format!(
            "{:<nw$} {} {} {:>6} {:<20} {:<16}\n",
            text(ad, "Name", env).unwrap_or_else(|| "[????]".into()),
            left(&field(ad, "OpSys"), 10),
            left(&field(ad, "Arch"), 6),
            load_avg(ad, env),
            field(ad, "RemoteUser"),
            field(ad, "ClientMachine"),
        ));
    }
    s.push('\n');
    #[derive(Default)]
    struct Run {
        machines: u64,
        mips: i64,
        kflops: i64,
        load: f64,
    }
    let mut by_key: BTreeMap<String, Run> = BTreeMap::new();
    let mut all = Run::default();
    for ad in ads {
        let (Some(arch), Some(os)) = (text(ad, "Arch", env), text(ad, "OpSys", env)) else {
            continue;
        };
        for r in [by_key.entry(format!("{arch}/{os}")).or_default(), &mut all] {
            r.machines += 1;
            r.mips += num(ad, "Mips", env).unwrap_or(0.0) as i64;
            r.kflops += num(ad, "KFlops", env).unwrap_or(0.0) as i64;
            r.load += num(ad, "LoadAvg", env).unwrap_or(0.0);
        }
    }
    let line = |r: &Run| {
        format!(
            "{:>9}  {:>11}  {:>11}   {:.3}\n",
            r.machines,
            r.mips,
            r.kflops,
            if r.machines > 0 {
                r.load / r.machines as f64
            } else {
                0.0
            }
        )
    };
    let w = by_key.keys().map(String::len).max().unwrap_or(0).max(14);
    s.push_str(&format!(
        "{:>w$}{:>9}  {:>11}  {:>11}  {:>11}\n\n",
        "", "Machines", "MIPS", "KFLOPS", "AvgLoadAvg"
    ));
    for (key, r) in &by_key {
        s.push_str(&format!("{key:>w$}{}", line(r)));
    }
    s.push('\n');
    s.push_str(&format!("{:>w$}{}", "Total", line(&all)));
    trimmed(s)
}

/// `-state`: each slot's state and activity and how long it has been in
/// them (condor_status' PP_SLOTS_STATE), then the slots counted by state
/// for each activity. (HTCondor's Total column there stays 0, a slip in
/// its StartdStateTotal; here it counts the slots.)
pub fn state_table(ads: &[ClassAd], env: &Env) -> String {
    if ads.is_empty() {
        return String::new();
    }
    let nw = name_width(ads, env);
    let cpus: Vec<String> = ads
        .iter()
        .map(|ad| num(ad, "Cpus", env).map_or_else(|| "??".into(), |c| format!("{}", c as i64)))
        .collect();
    let activities: Vec<String> = ads
        .iter()
        .map(|ad| text(ad, "Activity", env).unwrap_or_else(|| "??".into()))
        .collect();
    let cw = cpus.iter().map(String::len).max().unwrap_or(0).max(3);
    let aw = activities.iter().map(String::len).max().unwrap_or(0).max(5);
    let mut s = format!(
        "{:<nw$} {:<cw$} {:<5} {:<6} {:<12} {:<7} {:<12} {:<aw$} {:<12}\n\n",
        "Name",
        "Cpu",
        " Mem",
        "LoadAv",
        "  KbdIdle",
        "State",
        "  StateTime",
        "Activ",
        "  ActvtyTime"
    );
    for (i, ad) in ads.iter().enumerate() {
        let clock = ad_clock(ad, env);
        let since = |attr: &str| {
            num(ad, attr, env).map_or_else(|| "??".into(), |t| elapsed(clock - t as i64))
        };
        s.push_str(&format!(
            "{:<nw$} {:<cw$} {:>5} {:>6} {:>12} {:<7} {:>12} {:<aw$} {:>12}\n",
            text(ad, "Name", env).unwrap_or_else(|| "??".into()),
            cpus[i],
            num(ad, "Memory", env).map_or_else(|| "??".into(), |m| format!("{}", m as i64)),
            load_avg(ad, env),
            num(ad, "KeyboardIdle", env).map_or_else(|| "??".into(), |k| elapsed(k as i64)),
            text(ad, "State", env).unwrap_or_else(|| "??".into()),
            since("EnteredCurrentState"),
            activities[i],
            num(ad, "EnteredCurrentActivity", env)
                .map_or_else(|| "-".into(), |t| elapsed(clock - t as i64)),
        ));
    }
    s.push('\n');
    let mut by_key: BTreeMap<String, Counts> = BTreeMap::new();
    let mut all = Counts::default();
    for ad in ads {
        let (Some(state), Some(activity)) = (text(ad, "State", env), text(ad, "Activity", env))
        else {
            continue;
        };
        let backfill = flag(ad, "SlotBackfill", env);
        by_key.entry(activity).or_default().add(&state, backfill);
        all.add(&state, backfill);
    }
    let w = by_key.keys().map(String::len).max().unwrap_or(0).max(14);
    s.push_str(&format!(
        "{:>w$}{:>6} {:>5} {:>9} {:>7} {:>10} {:>7} {:>6} {:>8} {:>6}\n\n",
        "",
        "Total",
        "Owner",
        "Unclaimed",
        "Claimed",
        "Preempting",
        "Matched",
        "Drain",
        "Backfill",
        "BkIdle"
    ));
    let line = |c: &Counts| {
        format!(
            "{:>6} {:>5} {:>9} {:>7} {:>10} {:>7} {:>6} {:>8} {:>6}\n",
            c.total,
            c.owner,
            c.unclaimed,
            c.claimed,
            c.preempting,
            c.matched,
            c.drained,
            c.backfill,
            c.backfill_idle
        )
    };
    for (key, c) in &by_key {
        s.push_str(&format!("{key:>w$}{}", line(c)));
    }
    s.push('\n');
    s.push_str(&format!("{:>w$}{}", "Total", line(&all)));
    trimmed(s)
}

/// `-run`: the access points running jobs (condor_status' PP_SCHEDD_RUN:
/// Name TotalJobs Shadows ActiveDAGs IdleDAGs RcntDone RcntStart, those
/// with a shadow or a scheduler-universe job running; no totals). The
/// pool's schedd ad has no ShadowsRunning or TotalJobAds yet, so its
/// running and queued jobs stand for them (each running job has one
/// shadow); what it does not publish prints blank, as HTCondor prints a
/// missing value.
pub fn schedd_run_table(ads: &[ClassAd], env: &Env) -> String {
    let int = |ad: &ClassAd, a: &str| num(ad, a, env).map(|v| v as i64);
    let shadows = |ad: &ClassAd| int(ad, "ShadowsRunning").or_else(|| int(ad, "TotalRunningJobs"));
    let total_jobs = |ad: &ClassAd| {
        int(ad, "TotalJobAds").or_else(|| {
            Some(
                int(ad, "TotalIdleJobs")?
                    + int(ad, "TotalRunningJobs")?
                    + int(ad, "TotalHeldJobs")?,
            )
        })
    };
    let rows: Vec<&ClassAd> = ads
        .iter()
        .filter(|ad| {
            shadows(ad).unwrap_or(0) + int(ad, "TotalSchedulerJobsRunning").unwrap_or(0) > 0
        })
        .collect();
    let names: Vec<String> = rows
        .iter()
        .map(|ad| text(ad, "Name", env).unwrap_or_default())
        .collect();
    let nw = names.iter().map(String::len).max().unwrap_or(0).max(4);
    let cell = |v: Option<i64>, w: usize| v.map_or_else(|| " ".repeat(w), |v| format!("{v:>w$}"));
    let mut s = format!(
        "{:<nw$} TotalJobs Shadows ActiveDAGs IdleDAGs RcntDone RcntStart\n\n",
        "Name"
    );
    for (ad, name) in rows.iter().zip(&names) {
        s.push_str(&format!(
            "{name:<nw$} {} {} {} {} {} {}\n",
            cell(total_jobs(ad), 9),
            cell(shadows(ad), 7),
            cell(int(ad, "TotalSchedulerJobsRunning"), 10),
            cell(int(ad, "TotalSchedulerJobsIdle"), 8),
            cell(int(ad, "RecentJobsCompleted"), 8),
            cell(int(ad, "RecentJobsStarted"), 9),
        ));
    }
    trimmed(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(id: u32, state: &str, activity: &str) -> ClassAd {
        ClassAd::parse(&format!(
            "[ Name = \"slot{id}@host\"; Machine = \"host\"; OpSys = \"LINUX\"; \
             OpSysAndVer = \"Debian12\"; Arch = \"X86_64\"; State = \"{state}\"; \
             Activity = \"{activity}\"; CondorLoadAvg = 0.25; Memory = 1024; Cpus = 1; \
             TotalSlotCpus = 1; TotalSlotMemory = 1024; TotalCpus = 2; TotalLoadAvg = 0.5; \
             SlotType = \"Static\"; EnteredCurrentActivity = 1000 ]"
        ))
        .unwrap()
    }

    #[test]
    fn the_default_table_is_condor_status_s() {
        let env = Env::at(1000 + 90061);
        let ads = vec![slot(1, "Unclaimed", "Idle"), slot(2, "Claimed", "Busy")];
        let t = slot_table(&ads, &env);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "Name                OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime"
        );
        assert_eq!(lines[1], "");
        assert_eq!(
            lines[2],
            "slot1@host          LINUX      X86_64 Unclaimed Idle      0.250 1024  1+01:01:01"
        );
        assert_eq!(lines[4], "");
        assert_eq!(
            lines[5],
            "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle"
        );
        assert_eq!(lines[6], "");
        assert_eq!(
            lines[7],
            "  X86_64/LINUX     2     0       1         1       0          0      0        0      0"
        );
        assert_eq!(lines[8], "");
        assert_eq!(
            lines[9],
            "         Total     2     0       1         1       0          0      0        0      0"
        );
        assert_eq!(lines.len(), 10);
    }

    #[test]
    fn compact_folds_static_slots_into_their_machine() {
        let env = Env::at(2000);
        let ads = vec![slot(1, "Unclaimed", "Idle"), slot(2, "Claimed", "Busy")];
        let t = compact_table(&ads, &env);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            [
                "Machine",
                "Platform",
                "Slots",
                "Cpus",
                "Gpus",
                "TotalGb",
                "FreCpu",
                "FreeGb",
                "CpuLoad",
                "ST",
                "Jobs/Min",
                "MaxSlotGb"
            ]
        );
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            [
                "host",
                "x64/Debian12",
                "2S",
                "2",
                "0",
                "2.00",
                "1",
                "1.00",
                "0.25",
                "**",
                "_",
                "1.00"
            ]
        );
        assert!(
            t.contains("  x64/Debian12     2     0       1         1"),
            "{t}"
        );
    }

    #[test]
    fn names_sort_naturally_and_backfill_counts_apart() {
        let env = Env::at(0);
        let mut ads = vec![slot(10, "Owner", "Idle"), slot(2, "Drained", "Idle")];
        sort_slots(&mut ads, &env);
        assert_eq!(text(&ads[0], "Name", &env).unwrap(), "slot2@host");
        let (_, all) = count(&ads, false, &env);
        assert_eq!((all.total, all.owner, all.drained), (2, 1, 1));
        let mut c = Counts::default();
        c.add("Unclaimed", true);
        c.add("Claimed", true);
        assert_eq!((c.total, c.backfill, c.backfill_idle), (1, 1, 1));
        assert_eq!(natural_cmp("a09", "a9"), Ordering::Equal);
        assert_eq!(natural_cmp("slot1_2", "slot1_10"), Ordering::Less);
    }

    #[test]
    fn names_on_the_command_line_become_a_constraint() {
        assert_eq!(constraint(&[], None), None);
        assert_eq!(
            constraint(&["slot1@h".into()], Some("Cpus > 0")).unwrap(),
            "(Cpus > 0) && (Name == \"slot1@h\" || Machine == \"slot1@h\")"
        );
    }
}
