//! A small harness for driving the engine in tests: a startd from
//! configuration text, readings, jobs, claims, and what happened.

#![allow(dead_code)]

pub mod examples;

use classad::ClassAd;
use config::{FixedHost, LoadOptions, MemFiles, Root};
use startd::{ClaimRequest, Event, MachineInfo, Readings, Ready, SlotResources, Startd};

/// A moment to start from (2023-11-14, a Tuesday, 22:13 UTC).
pub const T0: i64 = 1_700_000_000;

pub fn config(text: &str) -> config::Config {
    config::load(
        &LoadOptions::new("STARTD", Root::File("condor_config".into())),
        &MemFiles::new().with("condor_config", text),
        &FixedHost::empty().with_macro("DETECTED_CORES", "4"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A startd with `n` one-core slots and this configuration (benchmarks off
/// and every slot connected to the keyboard and console, unless the text
/// says otherwise), at T0.
pub fn startd(text: &str, n: u32) -> Startd {
    let c = config(&format!(
        "RunBenchmarks = False\nSLOTS_CONNECTED_TO_KEYBOARD = 1000\nSLOTS_CONNECTED_TO_CONSOLE = 1000\n{text}"
    ));
    let slots = (1..=n)
        .map(|id| {
            (
                id,
                None,
                SlotResources {
                    cpus: 1.0,
                    memory: 1024,
                    disk: 10_000_000,
                    swap: 0,
                    custom: Vec::new(),
                },
            )
        })
        .collect();
    let machine = MachineInfo::new(
        "exec.example.org",
        n as f64,
        1024 * n as i64,
        10_000_000 * n as i64,
    );
    Startd::new(&c, machine, slots, T0).unwrap_or_else(|e| panic!("{e}"))
}

/// Keyboard and console idle for `idle` seconds, with this machine load.
pub fn readings(idle: i64, load: f64) -> Readings {
    Readings {
        keyboard_idle: idle,
        console_idle: idle,
        load_avg: load,
        condor_load: Vec::new(),
    }
}

pub fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

/// A vanilla job of `owner`.
pub fn job(owner: &str) -> ClassAd {
    ad(&format!(
        "[ ClusterId = 1; ProcId = 0; Owner = \"{owner}\"; JobUniverse = 5; ImageSize = 1000; RequestCpus = 1 ]"
    ))
}

pub fn request(slot: &str, claim: &str, job: ClassAd) -> Event {
    Event::RequestClaim {
        slot: slot.into(),
        request: Box::new(ClaimRequest {
            claim_id: claim.into(),
            user: format!(
                "{}@example.org",
                match job.eval_attr("Owner", &classad::Env::default()) {
                    classad::Value::Str(s) => s.to_string(),
                    _ => "nobody".into(),
                }
            ),
            job,
            schedd: "submit.example.org".into(),
            alive_interval: None,
            by_user_priority: false,
            preempt_dynamic: Vec::new(),
        }),
    }
}

pub fn activate(slot: &str, claim: &str, job: ClassAd) -> Event {
    Event::Activate {
        slot: slot.into(),
        claim_id: claim.into(),
        job: Box::new(job),
    }
}

pub fn exited(slot: &str) -> Event {
    Event::StarterExited { slot: slot.into() }
}

/// The numbers of the transitions taken, in order.
pub fn numbers(r: &Ready) -> Vec<u8> {
    r.transitions.iter().map(|t| t.number).collect()
}

pub fn pair(s: &Startd, slot: usize) -> String {
    s.slots()[slot].pair().to_string()
}

/// Brings slot1 of `s` to Claimed/Busy with `job` at `now`.
pub fn run_job(s: &mut Startd, job: ClassAd, now: i64) {
    s.handle(request("slot1", "c1", job.clone()), now)
        .unwrap_or_else(|e| panic!("{e}"));
    s.handle(activate("slot1", "c1", job), now)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pair(s, 0), "Claimed/Busy");
}

/// The ad as sorted `name = expression` lines (order of insertion may
/// differ between copies; what an ad says does not).
pub fn lines(ad: &classad::ClassAd) -> Vec<String> {
    let mut v: Vec<String> = ad
        .iter()
        .map(|(n, e)| format!("{} = {e}", n.as_str().to_ascii_lowercase()))
        .collect();
    v.sort();
    v
}
