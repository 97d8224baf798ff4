//! Pool history, as HTCondor's view collector (HTCondorView) keeps it: at
//! every sampling interval the collector's startd and submitter ads become
//! samples, averaged over a few samples and appended as text lines to the
//! history files of three levels of detail (level 0 a line per machine
//! every 4 samples, level 1 every 16, level 2 every 64), and a query over
//! a time range (`condor_stats`) reads them back.
//!
//! Pure: [`Sampler::sample`] takes the ads and `now` and returns what to
//! append to which file; [`choose_files`], [`data_reply`] and
//! [`list_reply`] answer a query from the files' texts. The daemon
//! (`daemons::pool_history`) reads the clock, writes and rotates the
//! files and reads them for a query.
//!
//! The files are HTCondor's: `viewhist<set>.<level>.new` (and `.old`, the
//! previous one, rotated when the new one outgrows its share of
//! POOL_HISTORY_MAX_STORAGE), one line per key and sample:
//! `<time>\t<key>\t:\t<values>`, the values as HTCondor's view server
//! writes them, so its `condor_stats` reads ours.

use std::collections::BTreeMap;

use classad::{ClassAd, Env};

/// How many levels of detail the history keeps.
pub const LEVELS: usize = 3;

/// What a history file holds (its number is HTCondor's, in the file name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataSet {
    /// Per submitter and access point (`user@domain/host`): running and
    /// idle jobs.
    Submittor,
    /// Per slot: keyboard idle time, load average, state.
    Startd,
    /// Per platform (`Arch/OpSys`, and `Total`): slots in each state.
    Groups,
    /// Per submitter (and `Total`): running and idle jobs, all access
    /// points together.
    SubmittorGroups,
}

impl DataSet {
    pub const ALL: [DataSet; 4] = [
        DataSet::Submittor,
        DataSet::Startd,
        DataSet::Groups,
        DataSet::SubmittorGroups,
    ];

    /// HTCondor's number of the data set (`viewhist<N>.<level>.new`).
    pub fn number(self) -> usize {
        match self {
            DataSet::Submittor => 0,
            DataSet::Startd => 1,
            DataSet::Groups => 2,
            DataSet::SubmittorGroups => 3,
        }
    }

    /// The file of a level (`new`, else the rotated `old` one).
    pub fn file_name(self, level: usize, old: bool) -> String {
        format!(
            "viewhist{}.{level}.{}",
            self.number(),
            if old { "old" } else { "new" }
        )
    }

    /// How many values each line has.
    fn width(self) -> usize {
        match self {
            DataSet::Submittor | DataSet::SubmittorGroups => 2,
            DataSet::Startd => 3,
            DataSet::Groups => STATES.len(),
        }
    }

    /// The values as HTCondor's view server prints them.
    fn format(self, v: &[f64]) -> String {
        match self {
            DataSet::Submittor | DataSet::SubmittorGroups => format!("{:.0}\t{:.0}", v[0], v[1]),
            DataSet::Startd => format!("{:.0}\t{:7.3}\t{:.0}", v[0], v[1], v[2]),
            DataSet::Groups => v
                .iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join("\t"),
        }
    }
}

/// The query commands of a view collector (HTCondor's numbers).
pub mod commands {
    pub const QUERY_HIST_STARTD: i32 = 22;
    pub const QUERY_HIST_STARTD_LIST: i32 = 23;
    pub const QUERY_HIST_SUBMITTOR: i32 = 24;
    pub const QUERY_HIST_SUBMITTOR_LIST: i32 = 25;
    pub const QUERY_HIST_GROUPS: i32 = 26;
    pub const QUERY_HIST_GROUPS_LIST: i32 = 27;
    pub const QUERY_HIST_SUBMITTORGROUPS: i32 = 28;
    pub const QUERY_HIST_SUBMITTORGROUPS_LIST: i32 = 29;
}

/// What a history query command asks: the data set, and whether it wants
/// the names in it (`_LIST`) rather than one name's samples.
pub fn query_of(command: i32) -> Option<(DataSet, bool)> {
    use commands::*;
    Some(match command {
        QUERY_HIST_STARTD => (DataSet::Startd, false),
        QUERY_HIST_STARTD_LIST => (DataSet::Startd, true),
        QUERY_HIST_SUBMITTOR => (DataSet::Submittor, false),
        QUERY_HIST_SUBMITTOR_LIST => (DataSet::Submittor, true),
        QUERY_HIST_GROUPS => (DataSet::Groups, false),
        QUERY_HIST_GROUPS_LIST => (DataSet::Groups, true),
        QUERY_HIST_SUBMITTORGROUPS => (DataSet::SubmittorGroups, false),
        QUERY_HIST_SUBMITTORGROUPS_LIST => (DataSet::SubmittorGroups, true),
        _ => return None,
    })
}

/// Machine states as HTCondorView numbers them (1 is Unclaimed).
pub const STATES: [&str; 9] = [
    "Unclaimed",
    "Matched",
    "Claimed",
    "Preempting",
    "Owner",
    "Shutdown",
    "Delete",
    "Backfill",
    "Drained",
];

/// HTCondorView's number of a state (1-based), none for an unknown one.
pub fn state_number(state: &str) -> Option<usize> {
    STATES
        .iter()
        .position(|s| s.eq_ignore_ascii_case(state))
        .map(|i| i + 1)
}

/// How many samples one line of a level averages (HTCondor's 4·4^level).
pub fn samples_per_line(level: usize) -> u32 {
    4 * 4u32.pow(level as u32)
}

/// How large one history file may grow before it is rotated: each data
/// set and level has a new and an old file, sharing POOL_HISTORY_MAX_STORAGE.
pub fn max_file_size(max_storage: u64) -> u64 {
    (max_storage / (LEVELS as u64 * DataSet::ALL.len() as u64 * 2)).max(1)
}

/// The values of one key averaged so far at one level.
#[derive(Clone, Debug, Default)]
struct Acc {
    sums: Vec<f64>,
    seen: u32,
    /// A state is not averaged: the last one seen.
    last_state: Option<f64>,
}

impl Acc {
    fn add(&mut self, values: &[f64]) {
        if self.sums.len() < values.len() {
            self.sums.resize(values.len(), 0.0);
        }
        for (s, v) in self.sums.iter_mut().zip(values) {
            *s += v;
        }
        self.seen += 1;
    }

    fn mean(&self) -> Vec<f64> {
        let n = f64::from(self.seen.max(1));
        self.sums.iter().map(|s| s / n).collect()
    }
}

/// Lines to append to one history file.
#[derive(Clone, Debug, PartialEq)]
pub struct Append {
    pub set: DataSet,
    pub level: usize,
    /// Whole lines, each ending in a newline.
    pub text: String,
}

/// The accumulated samples, between two lines of each level.
#[derive(Clone, Debug, Default)]
pub struct Sampler {
    /// Per data set and level, per key (sorted, so files are reproducible).
    acc: BTreeMap<(DataSet, usize), BTreeMap<String, Acc>>,
    /// Samples taken since each level last wrote.
    taken: [u32; LEVELS],
}

fn text(ad: &ClassAd, name: &str, env: &Env) -> Option<String> {
    ad.eval_attr(name, env).as_str().map(str::to_string)
}

fn number(ad: &ClassAd, name: &str, env: &Env) -> f64 {
    ad.eval_attr(name, env).as_number().unwrap_or(0.0)
}

impl Sampler {
    pub fn new() -> Sampler {
        Sampler::default()
    }

    /// One sample of the pool at `now`: the collector's slot ads and
    /// submitter ads. Returns the lines of the levels whose turn it is.
    pub fn sample<'a>(
        &mut self,
        startds: impl IntoIterator<Item = &'a ClassAd>,
        submitters: impl IntoIterator<Item = &'a ClassAd>,
        now: i64,
    ) -> Vec<Append> {
        let env = Env::at(now);
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        groups.insert("Total".into(), vec![0.0; STATES.len()]);
        let mut rows: Vec<(DataSet, String, Vec<f64>, Option<f64>)> = Vec::new();
        for ad in startds {
            let Some(name) = text(ad, "Name", &env) else {
                continue;
            };
            let Some(state) = text(ad, "State", &env).and_then(|s| state_number(&s)) else {
                continue;
            };
            let platform = format!(
                "{}/{}",
                text(ad, "Arch", &env).unwrap_or_else(|| "Unknown".into()),
                text(ad, "OpSys", &env).unwrap_or_else(|| "Unknown".into())
            );
            for g in ["Total".to_string(), platform] {
                groups.entry(g).or_insert_with(|| vec![0.0; STATES.len()])[state - 1] += 1.0;
            }
            let values = vec![
                number(ad, "KeyboardIdle", &env),
                number(ad, "LoadAvg", &env),
            ];
            rows.push((DataSet::Startd, name, values, Some(state as f64)));
        }
        for (g, counts) in groups {
            rows.push((DataSet::Groups, g, counts, None));
        }
        let mut users: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        users.insert("Total".into(), vec![0.0, 0.0]);
        for ad in submitters {
            let (Some(name), Some(machine)) = (text(ad, "Name", &env), text(ad, "Machine", &env))
            else {
                continue;
            };
            let jobs = vec![
                number(ad, "RunningJobs", &env),
                number(ad, "IdleJobs", &env),
            ];
            for u in ["Total".to_string(), name.clone()] {
                let t = users.entry(u).or_insert_with(|| vec![0.0, 0.0]);
                t[0] += jobs[0];
                t[1] += jobs[1];
            }
            rows.push((DataSet::Submittor, format!("{name}/{machine}"), jobs, None));
        }
        for (u, jobs) in users {
            rows.push((DataSet::SubmittorGroups, u, jobs, None));
        }
        for (set, key, values, state) in rows {
            for level in 0..LEVELS {
                let acc = self
                    .acc
                    .entry((set, level))
                    .or_default()
                    .entry(key.clone())
                    .or_default();
                acc.add(&values);
                if state.is_some() {
                    acc.last_state = state;
                }
            }
        }
        let mut out = Vec::new();
        for level in 0..LEVELS {
            self.taken[level] += 1;
            if self.taken[level] < samples_per_line(level) {
                continue;
            }
            self.taken[level] = 0;
            for set in DataSet::ALL {
                let Some(keys) = self.acc.remove(&(set, level)) else {
                    continue;
                };
                let mut text = String::new();
                for (key, acc) in keys {
                    let mut v = acc.mean();
                    v.resize(set.width(), 0.0);
                    if let Some(s) = acc.last_state {
                        v[set.width() - 1] = s;
                    }
                    text.push_str(&format!("{now}\t{key}\t:\t{}\n", set.format(&v)));
                }
                if !text.is_empty() {
                    out.push(Append { set, level, text });
                }
            }
        }
        out
    }
}

/// One line of a history file read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Line<'a> {
    pub time: i64,
    pub key: &'a str,
    /// What follows the `:` (values separated by tabs).
    pub rest: &'a str,
}

/// Reads a history line; a line that is not one (a torn write) is `None`.
pub fn parse_line(line: &str) -> Option<Line<'_>> {
    let (time, tail) = line.split_once('\t')?;
    let (key, rest) = tail.split_once("\t:")?;
    Some(Line {
        time: time.trim().parse().ok()?,
        key,
        rest,
    })
}

/// When a history file begins (its first line's time).
pub fn start_time(text: &str) -> Option<i64> {
    text.lines().find_map(parse_line).map(|l| l.time)
}

/// Which level answers a query from `from` to `to`, and whether its old
/// and its new file are read: the finest level whose files reach back to
/// `from`, else the one that reaches back furthest (HTCondor's
/// `ViewServer::HandleQuery`). `starts[level]` is (old, new) start times.
pub fn choose_files(
    starts: &[(Option<i64>, Option<i64>); LEVELS],
    from: i64,
    to: i64,
) -> Option<(usize, bool, bool)> {
    for (level, &(old, new)) in starts.iter().enumerate() {
        if let Some(n) = new {
            if from >= n {
                return Some((level, false, true));
            }
        }
        if let Some(o) = old {
            if from >= o {
                let read_new = new.is_some_and(|n| to >= n);
                return Some((level, true, read_new));
            }
        }
    }
    let mut best: Option<(usize, i64)> = None;
    for (level, &(old, new)) in starts.iter().enumerate() {
        if let Some(t) = old.or(new) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((level, t));
            }
        }
    }
    best.map(|(level, _)| (level, true, true))
}

/// The lines of one file that a data query answers with: those of `name`
/// (`*` for every name) from `from` to `to`. With `raw` (condor_stats'
/// `-orgformat`) the lines as stored; else each line's time as a
/// percentage of the range and its values (`"12.50\t..."`), a line whose
/// time rounds to the previous one's dropped (HTCondor's form).
pub fn data_reply(text: &str, from: i64, to: i64, raw: bool, name: &str, out: &mut Vec<String>) {
    let mut previous = 0i64;
    let span = (to - from).max(1) as f64;
    for raw_line in text.split_inclusive('\n') {
        if !raw_line.ends_with('\n') {
            break; // a line still being written
        }
        let Some(l) = parse_line(raw_line.trim_end_matches('\n')) else {
            continue;
        };
        if l.time > to {
            break;
        }
        if l.time < from || (name != "*" && l.key != name) {
            continue;
        }
        if raw {
            out.push(raw_line.to_string());
            continue;
        }
        let fraction = (l.time - from) as f64 / span;
        let thousandths = (1000.0 * fraction).round() as i64;
        if thousandths == previous {
            continue;
        }
        previous = thousandths;
        out.push(format!("{:.2}{}\n", fraction * 100.0, l.rest));
    }
}

/// The names in one file from `from` to `to`, each once (across files:
/// `seen` keeps them), each a line.
pub fn list_reply(
    text: &str,
    from: i64,
    to: i64,
    seen: &mut std::collections::BTreeSet<String>,
    out: &mut Vec<String>,
) {
    for raw_line in text.split_inclusive('\n') {
        if !raw_line.ends_with('\n') {
            break;
        }
        let Some(l) = parse_line(raw_line.trim_end_matches('\n')) else {
            continue;
        };
        if l.time > to {
            break;
        }
        if l.time < from || seen.contains(l.key) {
            continue;
        }
        seen.insert(l.key.to_string());
        out.push(format!("{}\n", l.key));
    }
}

/// The part of a file's text a torn write left at its end (a last line
/// without its newline), to cut off before appending: the length to keep.
pub fn whole_lines_len(text: &[u8]) -> usize {
    text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(name: &str, state: &str, load: f64, kbd: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Machine");
        ad.insert_value("Name", name);
        ad.insert_value("State", state);
        ad.insert_value("LoadAvg", load);
        ad.insert_value("KeyboardIdle", kbd);
        ad.insert_value("Arch", "X86_64");
        ad.insert_value("OpSys", "LINUX");
        ad
    }

    fn submitter(name: &str, running: i64, idle: i64) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("MyType", "Submitter");
        ad.insert_value("Name", name);
        ad.insert_value("Machine", "ap.example");
        ad.insert_value("RunningJobs", running);
        ad.insert_value("IdleJobs", idle);
        ad
    }

    #[test]
    fn four_samples_make_a_level_0_line_per_key_averaged_with_the_last_state() {
        let mut s = Sampler::new();
        let alice = [submitter("alice@x", 2, 6)];
        for (i, (state, load)) in [
            ("Unclaimed", 0.0),
            ("Claimed", 1.0),
            ("Claimed", 1.0),
            ("Owner", 0.0),
        ]
        .iter()
        .enumerate()
        {
            let a = s.sample(
                &[slot("slot1@h", state, *load, 100)],
                &alice,
                1000 + i as i64,
            );
            if i < 3 {
                assert!(a.is_empty(), "{a:?}");
            } else {
                let by: BTreeMap<DataSet, &str> = a
                    .iter()
                    .map(|x| {
                        assert_eq!(x.level, 0);
                        (x.set, x.text.as_str())
                    })
                    .collect();
                assert_eq!(by[&DataSet::Startd], "1003\tslot1@h\t:\t100\t  0.500\t5\n");
                assert_eq!(
                    by[&DataSet::Submittor],
                    "1003\talice@x/ap.example\t:\t2\t6\n"
                );
                assert_eq!(
                    by[&DataSet::SubmittorGroups],
                    "1003\tTotal\t:\t2\t6\n1003\talice@x\t:\t2\t6\n"
                );
                assert_eq!(
                    by[&DataSet::Groups],
                    "1003\tTotal\t:\t0.2\t0.0\t0.5\t0.0\t0.2\t0.0\t0.0\t0.0\t0.0\n\
                     1003\tX86_64/LINUX\t:\t0.2\t0.0\t0.5\t0.0\t0.2\t0.0\t0.0\t0.0\t0.0\n"
                );
            }
        }
        // Level 1 writes every 16 samples, level 2 every 64.
        let mut levels = Vec::new();
        for i in 4..64 {
            for a in s.sample(&[slot("slot1@h", "Claimed", 1.0, 0)], &[], 1000 + i) {
                levels.push(a.level);
            }
        }
        assert!(levels.contains(&1) && levels.contains(&2), "{levels:?}");
    }

    #[test]
    fn a_query_answers_one_names_lines_in_the_range_as_percentages_or_as_stored() {
        let file = "100\tslot1@h\t:\t0\t  1.000\t3\n\
                    100\tslot2@h\t:\t0\t  0.000\t1\n\
                    150\tslot1@h\t:\t5\t  0.500\t5\n\
                    300\tslot1@h\t:\t5\t  0.500\t1\n\
                    400\tslot1@h\t:\t9\t  0.2";
        let mut out = Vec::new();
        data_reply(file, 100, 300, false, "slot1@h", &mut out);
        assert_eq!(out, ["25.00\t5\t  0.500\t5\n", "100.00\t5\t  0.500\t1\n"]);
        out.clear();
        data_reply(file, 0, 1000, true, "*", &mut out);
        assert_eq!(out.len(), 4, "the torn last line is left out: {out:?}");
        out.clear();
        let mut seen = std::collections::BTreeSet::new();
        list_reply(file, 0, 1000, &mut seen, &mut out);
        list_reply(file, 0, 1000, &mut seen, &mut out);
        assert_eq!(out, ["slot1@h\n", "slot2@h\n"]);
    }

    #[test]
    fn a_query_reads_the_finest_level_that_reaches_back_far_enough() {
        let starts = [(Some(500), Some(900)), (None, Some(100)), (None, None)];
        assert_eq!(choose_files(&starts, 950, 1000), Some((0, false, true)));
        assert_eq!(choose_files(&starts, 600, 1000), Some((0, true, true)));
        assert_eq!(choose_files(&starts, 600, 800), Some((0, true, false)));
        assert_eq!(choose_files(&starts, 200, 1000), Some((1, false, true)));
        // Older than everything kept: the level that reaches furthest.
        assert_eq!(choose_files(&starts, 10, 1000), Some((1, true, true)));
        assert_eq!(choose_files(&[(None, None); LEVELS], 10, 1000), None);
    }

    #[test]
    fn storage_is_shared_by_every_file_and_a_torn_tail_is_cut() {
        assert_eq!(max_file_size(10_000_000), 10_000_000 / 24);
        assert_eq!(whole_lines_len(b"1\ta\t:\t1\n2\tb"), 8);
        assert_eq!(whole_lines_len(b"partial"), 0);
        assert_eq!(start_time("junk\n17\tx\t:\t1\t2\n"), Some(17));
    }
}
