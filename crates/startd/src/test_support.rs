//! What the crate's own tests share: a one-slot startd on a few lines of
//! configuration.

use crate::{MachineInfo, SlotResources, Startd};

/// The tests' clock at the start.
pub(crate) const T0: i64 = 1_700_000_000;

/// A startd of one slot (one CPU, 1 GB) on `text` (benchmarks off), at T0.
pub(crate) fn startd(text: &str) -> Startd {
    let c = config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("c".into())),
        &config::MemFiles::new().with("c", &format!("RunBenchmarks = False\n{text}")),
        &config::FixedHost::empty(),
    )
    .unwrap();
    let slot = SlotResources {
        cpus: 1.0,
        memory: 1024,
        disk: 1_000_000,
        swap: 0,
        custom: Vec::new(),
    };
    let machine = MachineInfo::new("exec.example.org", 1.0, 1024, 1_000_000);
    Startd::new(&c, machine, vec![(1, None, slot)], T0).unwrap()
}
