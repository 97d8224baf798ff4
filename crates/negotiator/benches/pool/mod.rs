//! The pools the negotiation benches match against: eight-slot machines
//! of several types (70% x86_64, memory and speed by type), every other
//! slot claimed by one of `users` submitters (`user<N>@pool`).

use classad::ClassAd;

pub const NOW: i64 = 1_700_000_000;

pub fn slots(machines: usize, types: usize, users: usize) -> Vec<ClassAd> {
    let mut out = Vec::with_capacity(machines * 8);
    for m in 0..machines {
        let ty = m % types;
        let arch = if ty * 10 < types * 7 {
            "X86_64"
        } else {
            "aarch64"
        };
        let mem = 2048 * (1 + ty % 4);
        let kflops = 1_000_000 + 50_000 * ty;
        for s in 1..=8 {
            let i = out.len();
            let claim = if i % 2 == 1 {
                let u = i % users;
                format!(
                    "RemoteUser = \"user{u}@pool\"; RemoteOwner = \"user{u}\"; State = \"Claimed\"; \
                     Activity = \"Busy\"; TotalJobRunTime = {}; JobStart = {};",
                    i % 7200,
                    NOW - (i % 7200) as i64
                )
            } else {
                "State = \"Unclaimed\"; Activity = \"Idle\";".to_string()
            };
            let text = format!(
                "[Name = \"slot{s}@m{m}.pool\"; Machine = \"m{m}.pool\"; SlotID = {s}; MyType = \"Machine\"; \
                  Arch = \"{arch}\"; OpSys = \"LINUX\"; Cpus = 1; Memory = {mem}; Disk = 1000000; \
                  KFlops = {kflops}; Mips = 20000; LoadAvg = 0.0{}; KeyboardIdle = {}; \
                  Start = TARGET.RequestMemory <= Memory; Requirements = START; Rank = 0.0; \
                  CurrentRank = 0.0; {claim} SlotWeight = Cpus]",
                i % 10,
                1000 + i % 977
            );
            out.push(ClassAd::parse(&text).unwrap());
        }
    }
    out
}
