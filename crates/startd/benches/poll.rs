//! How long one policy poll takes: a 128-slot machine running the Bologna
//! Batch System policy (the examples' configuration, read by the real
//! configuration crate), with a mix of BB jobs, other jobs and idle slots.
//!
//! `cargo bench -p startd --bench poll` prints criterion's figures; the
//! per-slot cost is the poll time divided by 128.

use std::hint::black_box;
use std::path::PathBuf;

use classad::ClassAd;
use config::{FileError, Files, FixedHost, LoadOptions, Root};
use criterion::{criterion_group, criterion_main, Criterion};
use startd::{ClaimRequest, Event, MachineInfo, Readings, SlotResources, Startd};

struct Disk(PathBuf);

impl Files for Disk {
    fn read(&self, path: &str) -> Result<String, FileError> {
        std::fs::read_to_string(self.0.join(path)).map_err(|_| FileError::NotFound)
    }
    fn list_dir(&self, _: &str) -> Result<Vec<String>, FileError> {
        Err(FileError::NotFound)
    }
    fn run(&self, _: &str) -> Result<String, String> {
        Err("no commands".into())
    }
}

const T0: i64 = 1_700_000_000;
const SLOTS: u32 = 128;

fn bologna() -> Startd {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/config");
    let files = Disk(examples).with_root(
        "include : v68-default.conf\ninclude : bologna-infn-pool.conf\ninclude : bologna-server.conf\nNUM_SHORT_RUNNING_VMS = 32\nSLOTS_CONNECTED_TO_KEYBOARD = 1000\nRunBenchmarks = False\n",
    );
    let config = config::load(
        &LoadOptions::new("STARTD", Root::File("root.conf".into())),
        &files,
        &FixedHost::empty().with_macro("DETECTED_CORES", "128"),
    )
    .expect("the Bologna examples load");
    let slots = (1..=SLOTS)
        .map(|id| {
            (
                id,
                None,
                SlotResources {
                    cpus: 1.0,
                    memory: 2048,
                    disk: 20_000_000,
                    swap: 0,
                    custom: Vec::new(),
                },
            )
        })
        .collect();
    let machine = MachineInfo::new("bbs01.bo.infn.it", 128.0, 262_144, 2_560_000_000);
    let mut s = Startd::new(&config, machine, slots, T0).expect("the policy reads");
    s.tick(
        T0,
        Readings {
            keyboard_idle: 3600,
            console_idle: 3600,
            ..Readings::default()
        },
    );
    // Three quarters of the slots run jobs: BB jobs (short on the short
    // VMs, long on the others) and some ordinary INFN jobs.
    for id in 1..=SLOTS {
        if id % 4 == 0 {
            continue;
        }
        let bb = id % 3 != 0;
        let job = ClassAd::parse(&format!(
            "[ ClusterId = {id}; ProcId = 0; Owner = \"user{id}\"; JobUniverse = 5; ImageSize = 50000; \
               BolognaBatchJob = {bb}; SUBMIT_SITE_DOMAIN = \"bo.infn.it\"; LongRunningJob = {}; \
               RemoteWallClockTime = 100 ]",
            id > 32
        ))
        .unwrap();
        let slot = format!("slot{id}");
        let claim = format!("c{id}");
        let request = ClaimRequest {
            claim_id: claim.clone(),
            job: job.clone(),
            schedd: "bbs-submit.bo.infn.it".into(),
            user: format!("user{id}@bo.infn.it"),
            alive_interval: None,
            by_user_priority: false,
            preempt_dynamic: Vec::new(),
        };
        if s.handle(
            Event::RequestClaim {
                slot: slot.clone(),
                request: Box::new(request),
            },
            T0,
        )
        .is_ok()
        {
            if let Err(e) = s.handle(
                Event::Activate {
                    slot,
                    claim_id: claim,
                    job: Box::new(job),
                },
                T0,
            ) {
                panic!("{e}");
            }
        }
    }
    s
}

fn readings(_now: i64) -> Readings {
    Readings {
        keyboard_idle: 3600,
        console_idle: 3600,
        // The jobs' own load, and a little of the system's.
        load_avg: (1..=SLOTS).filter(|id| id % 4 != 0).count() as f64 + 0.2,
        condor_load: (1..=SLOTS)
            .map(|id| if id % 4 == 0 { 0.0 } else { 1.0 })
            .collect(),
    }
}

trait WithRoot {
    fn with_root(self, text: &str) -> RootedDisk;
}

impl WithRoot for Disk {
    fn with_root(self, text: &str) -> RootedDisk {
        RootedDisk(self, text.to_string())
    }
}

/// The examples' directory, plus a root file in memory.
struct RootedDisk(Disk, String);

impl Files for RootedDisk {
    fn read(&self, path: &str) -> Result<String, FileError> {
        if path == "root.conf" {
            Ok(self.1.clone())
        } else {
            self.0.read(path)
        }
    }
    fn list_dir(&self, p: &str) -> Result<Vec<String>, FileError> {
        self.0.list_dir(p)
    }
    fn run(&self, c: &str) -> Result<String, String> {
        self.0.run(c)
    }
}

fn poll(c: &mut Criterion) {
    let mut s = bologna();
    let busy = s.slots().iter().filter(|s| s.job.is_some()).count();
    assert!(busy >= 60, "only {busy} slots run jobs");
    eprintln!("{busy} of {SLOTS} slots run jobs");
    // Every poll at the same moment: each does the full evaluation, and no
    // lease or worklife runs out halfway through the measurement.
    let now = T0 + 10;
    c.bench_function("poll: 128-slot machine, Bologna policy", |b| {
        b.iter(|| black_box(s.tick(now, readings(now))))
    });
    assert_eq!(s.slots().iter().filter(|s| s.job.is_some()).count(), busy);
}

/// A 64-core machine as one partitionable slot.
fn partitionable() -> Startd {
    let config = config::load(
        &LoadOptions::new("STARTD", Root::File("root.conf".into())),
        &Disk(PathBuf::from("."))
            .with_root("use FEATURE : PartitionableSlot\nRunBenchmarks = False\n"),
        &FixedHost::empty().with_macro("DETECTED_CORES", "64"),
    )
    .unwrap();
    let host = startd::resources::HostReadings::simple(64, 262_144, 2_000_000_000, 0);
    let mut s = Startd::from_config(&config, "wn01.example.org", &host, T0).unwrap();
    s.tick(T0, Readings::default());
    s
}

/// Claims 64 one-core jobs on the partitionable slot: 64 dynamic slots.
fn carve_64(s: &mut Startd) {
    for n in 1..=64 {
        let job = ClassAd::parse(&format!(
            "[ ClusterId = {n}; ProcId = 0; Owner = \"u{n}\"; JobUniverse = 5; RequestCpus = 1; RequestMemory = 2048; RequestDisk = 1000000 ]"
        ))
        .unwrap();
        let request = ClaimRequest {
            claim_id: format!("c{n}"),
            job,
            schedd: "submit.example.org".into(),
            user: format!("u{n}@example.org"),
            alive_interval: None,
            by_user_priority: false,
            preempt_dynamic: Vec::new(),
        };
        let job = request.job.clone();
        s.handle(
            Event::RequestClaim {
                slot: "slot1".into(),
                request: Box::new(request),
            },
            T0 + 1,
        )
        .expect("the job fits");
        s.handle(
            Event::Activate {
                slot: format!("slot1_{n}"),
                claim_id: format!("c{n}"),
                job: Box::new(job),
            },
            T0 + 1,
        )
        .expect("the job starts");
    }
}

fn carve(c: &mut Criterion) {
    c.bench_function("carve: 64 dynamic slots from one partitionable slot", |b| {
        b.iter_batched(
            partitionable,
            |mut s| {
                carve_64(&mut s);
                black_box(s)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    let mut s = partitionable();
    carve_64(&mut s);
    assert_eq!(s.slots().len(), 65);
    let now = T0 + 10;
    c.bench_function("poll: partitionable slot with 64 dynamic slots", |b| {
        b.iter(|| black_box(s.tick(now, Readings::default())))
    });
    assert_eq!(s.slots().iter().filter(|s| s.job.is_some()).count(), 64);
}

criterion_group!(benches, poll, carve);
criterion_main!(benches);
