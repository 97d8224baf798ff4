//! The example configurations of `examples/config/`, read from disk by the
//! real configuration crate, as an admin's root file would include them:
//! `include : /abs/path/examples/config/X.conf`, in order, after their
//! base. A startd is then built with as many slots as the configuration
//! asks for (NUM_SLOTS, else NUM_CPUS, else the detected cores).

#![allow(dead_code)]

use std::path::PathBuf;

use classad::ClassAd;
use config::{FileError, Files, FixedHost, LoadOptions, Root};
use startd::{Event, MachineInfo, Readings, Ready, Refusal, SlotResources, Startd};

use super::{activate, request};

/// The directory of the example files, absolute.
pub fn examples_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/config");
    dir.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// The absolute path of an example file.
pub fn example_path(name: &str) -> String {
    examples_dir().join(name).to_string_lossy().into_owned()
}

/// The text of an example file.
pub fn example_text(name: &str) -> String {
    let path = example_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An example file up to (not including) the line that starts with
/// `marker`: the part of it that transcribes an earlier step of the
/// document, to be pasted into a root file.
pub fn example_up_to(name: &str, marker: &str) -> String {
    let text = example_text(name);
    let end = text
        .find(&format!("\n{marker}"))
        .unwrap_or_else(|| panic!("{name} has no line starting with {marker:?}"));
    text[..end + 1].to_string()
}

/// Where the made-up root file lives (in the examples' directory, so a
/// relative include would mean the same to HTCondor and to us).
fn root_path() -> String {
    example_path("__scenario_root__.conf")
}

/// The disk, with the root file held in memory.
struct Disk {
    root: String,
}

impl Files for Disk {
    fn read(&self, path: &str) -> Result<String, FileError> {
        if path == root_path() {
            return Ok(self.root.clone());
        }
        std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            _ => FileError::Other(format!("{path}: {e}")),
        })
    }

    fn list_dir(&self, _path: &str) -> Result<Vec<String>, FileError> {
        Err(FileError::NotFound)
    }

    fn run(&self, command: &str) -> Result<String, String> {
        Err(format!("the scenario tests run no commands: {command}"))
    }
}

/// A host with `cores` cores (DETECTED_CORES, DETECTED_CPUS) and 4 GiB of
/// memory per core.
pub fn host(cores: u32) -> FixedHost {
    FixedHost::empty()
        .with_macro("DETECTED_CORES", &cores.to_string())
        .with_macro("DETECTED_CPUS", &cores.to_string())
        .with_macro("DETECTED_MEMORY", &(4096 * cores).to_string())
        .with_macro("FULL_HOSTNAME", "exec.example.org")
        .with_macro("HOSTNAME", "exec")
}

/// The root file for `parts`: a part ending in `.conf` is an example,
/// included by its absolute path; anything else is text of the root file
/// itself (a local setting, or part of an example pasted in).
///
/// Two settings that are not part of any policy under test come first or
/// last: every slot sees the keyboard and the console (the 6.8 chapter's
/// machines had one console that every slot watched; the examples do not
/// say), and benchmarks are off (v68-default.conf would otherwise send
/// every idle slot to Unclaimed/Benchmarking every four hours).
pub fn root_text(parts: &[&str]) -> String {
    let mut root =
        String::from("SLOTS_CONNECTED_TO_KEYBOARD = 1000\nSLOTS_CONNECTED_TO_CONSOLE = 1000\n");
    for p in parts {
        if p.ends_with(".conf") {
            root.push_str(&format!("include : {}\n", example_path(p)));
        } else {
            root.push_str(p);
            root.push('\n');
        }
    }
    root.push_str("RunBenchmarks = False\n");
    root
}

/// The configuration a startd reads from `parts` on a host with `cores`
/// cores.
pub fn load(parts: &[&str], cores: u32) -> config::Config {
    config::load(
        &LoadOptions::new("STARTD", Root::File(root_path())),
        &Disk {
            root: root_text(parts),
        },
        &host(cores),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// How many slots the configuration asks for.
pub fn slot_count(c: &config::Config, cores: u32) -> u32 {
    for name in ["NUM_SLOTS", "NUM_CPUS"] {
        if let Some(n) = c.integer(name).unwrap_or_else(|e| panic!("{e}")) {
            return n as u32;
        }
    }
    cores
}

/// A startd at `now` for `parts` on a host with `cores` cores, in a zone
/// `utc_offset` seconds east of UTC (ClockMin and ClockDay are local).
pub fn machine_at(parts: &[&str], cores: u32, utc_offset: i32, now: i64) -> Startd {
    let c = load(parts, cores);
    let n = slot_count(&c, cores);
    let slots = (1..=n)
        .map(|id| {
            (
                id,
                None,
                SlotResources {
                    cpus: 1.0,
                    memory: 4096 * cores as i64 / n as i64,
                    disk: 10_000_000,
                    ..SlotResources::default()
                },
            )
        })
        .collect();
    let mut machine = MachineInfo::new(
        "exec.example.org",
        n as f64,
        4096 * cores as i64,
        10_000_000 * n as i64,
    );
    machine.utc_offset = utc_offset;
    Startd::new(&c, machine, slots, now).unwrap_or_else(|e| panic!("{e}"))
}

/// A startd at `now` for `parts` on a one-core host in UTC.
pub fn machine(parts: &[&str], now: i64) -> Startd {
    machine_at(parts, 1, 0, now)
}

// ---- Time -------------------------------------------------------------

/// Epoch seconds of a UTC date and time (proleptic Gregorian).
pub fn utc(year: i64, month: i64, day: i64, hour: i64, minute: i64) -> i64 {
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + hour * 3600 + minute * 60
}

// ---- Readings ---------------------------------------------------------

/// The owner away for `idle` seconds; the machine loaded only by the
/// jobs (`jobs[i]` is slot i+1's job's load).
pub fn away(idle: i64, jobs: &[f64]) -> Readings {
    Readings {
        keyboard_idle: idle,
        console_idle: idle,
        load_avg: jobs.iter().sum(),
        condor_load: jobs.to_vec(),
    }
}

/// The owner typing (keyboard used `idle` seconds ago) and running
/// `owner_load` of their own, besides the jobs.
pub fn typing(idle: i64, owner_load: f64, jobs: &[f64]) -> Readings {
    Readings {
        keyboard_idle: idle,
        console_idle: idle,
        load_avg: owner_load + jobs.iter().sum::<f64>(),
        condor_load: jobs.to_vec(),
    }
}

/// One poll at `now` with these readings, then the schedds' keep-alives
/// for every claim (so that a claim's lease runs from the last poll: poll
/// at least every lease, 30 minutes by default; see [`poll_until`]).
/// Everything that happened, the keep-alives' part included.
pub fn poll(s: &mut Startd, now: i64, r: Readings) -> Ready {
    let mut ready = s.tick(now, r);
    let claims: Vec<String> = s
        .slots()
        .iter()
        .flat_map(|sl| sl.claim.iter().chain(sl.preempting.iter()))
        .map(|c| c.id.clone())
        .collect();
    for id in claims {
        let more = s
            .handle(Event::KeepAlive { claim_id: id }, now)
            .unwrap_or_else(|e| panic!("{e}"));
        ready.transitions.extend(more.transitions);
        ready.actions.extend(more.actions);
    }
    ready
}

/// Polls every `every` seconds from `from` up to (not including) `to`,
/// with the readings `r` gives for each moment; everything that happened.
pub fn poll_until(
    s: &mut Startd,
    from: i64,
    to: i64,
    every: i64,
    r: impl Fn(i64) -> Readings,
) -> Ready {
    let mut ready = Ready::default();
    let mut t = from;
    while t < to {
        let more = poll(s, t, r(t));
        ready.transitions.extend(more.transitions);
        ready.actions.extend(more.actions);
        t += every;
    }
    ready
}

// ---- Claims and jobs --------------------------------------------------

/// Claims `slot` for `job` and starts it on the claim, as a schedd does
/// right after the claim is granted. What happened, or why it was refused
/// (by the claim, or by the activation when the claim was lost first).
pub fn claim_and_run(
    s: &mut Startd,
    slot: &str,
    claim: &str,
    job: &ClassAd,
    now: i64,
) -> Result<Ready, Refusal> {
    let mut ready = s.handle(request(slot, claim, job.clone()), now)?;
    let more = s.handle(activate(slot, claim, job.clone()), now)?;
    ready.transitions.extend(more.transitions);
    ready.actions.extend(more.actions);
    Ok(ready)
}

/// Whether `slot` would accept a claim for `job` at `now` (tried on a
/// copy: nothing changes).
pub fn accepts(s: &Startd, slot: &str, job: &ClassAd, now: i64) -> bool {
    let mut copy = s.clone();
    copy.handle(request(slot, "probe", job.clone()), now)
        .is_ok()
}

/// The transition numbers of one slot in `r`.
pub fn of(r: &Ready, slot: &str) -> Vec<u8> {
    r.transitions
        .iter()
        .filter(|t| t.slot == slot)
        .map(|t| t.number)
        .collect()
}

/// The niceness the StartJob action of `slot` asks for.
pub fn nice_of(r: &Ready, slot: &str) -> i64 {
    r.actions
        .iter()
        .find_map(|a| match a {
            startd::Action::StartJob { slot: s, nice, .. } if s == slot => Some(*nice),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no StartJob for {slot} in {:?}", r.actions))
}

/// Whether `r` asks for this kind of action on `slot`.
pub fn asks(r: &Ready, slot: &str, kind: &str) -> bool {
    r.actions.iter().any(|a| {
        let (k, s) = match a {
            startd::Action::StartJob { slot, .. } => ("start", slot),
            startd::Action::SuspendJob { slot } => ("suspend", slot),
            startd::Action::ContinueJob { slot } => ("continue", slot),
            startd::Action::VacateJob { slot } => ("vacate", slot),
            startd::Action::KillJob { slot } => ("kill", slot),
            _ => return false,
        };
        k == kind && s == slot
    })
}

/// A slot's state and activity, by slot name.
pub fn pair_of(s: &Startd, slot: &str) -> String {
    s.slots()
        .iter()
        .find(|x| x.name == slot)
        .unwrap_or_else(|| panic!("no {slot}"))
        .pair()
        .to_string()
}

/// A numeric attribute of a slot's ad at `now`.
pub fn published_number(s: &Startd, slot: usize, name: &str, now: i64) -> f64 {
    let v = s.slot_ad(slot, now).eval_attr(name, &classad::Env::at(now));
    v.as_number()
        .unwrap_or_else(|| panic!("{name} is {v}, not a number"))
}

/// An attribute of a slot's ad at `now`, printed.
pub fn published(s: &Startd, slot: usize, name: &str, now: i64) -> String {
    s.slot_ad(slot, now)
        .eval_attr(name, &classad::Env::at(now))
        .to_string()
}
