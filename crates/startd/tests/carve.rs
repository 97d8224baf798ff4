//! Partitionable slots: the manual's dynamic provisioning example, the
//! defaults and roundings of "Defaults for Partitionable Slot Sizes",
//! jobs that do not fit, GPUs chosen by a job's constraint, and resources
//! returned when a dynamic slot ends.

use classad::ClassAd;
use startd::carve::{dynamic_slot_name, CarveError, Partitionable};
use startd::layout::layout;
use startd::resources::{HostReadings, Inventory, MachineResources};

fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty().with_macro("DETECTED_CORES", "10"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

const WHOLE_MACHINE: &str = "\
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = TRUE
";

/// "disk = BIG".
const BIG: i64 = 100_000_000;

struct Setup {
    config: config::Config,
    machine: MachineResources,
    pslot: Partitionable,
}

fn setup(extra: &str, host: HostReadings) -> Setup {
    let config = config(&format!("{WHOLE_MACHINE}{extra}"));
    let machine = MachineResources::from_config(&config, &host).unwrap();
    let slots = layout(&config, &machine).unwrap().slots;
    assert!(slots[0].partitionable);
    let pslot = Partitionable::new(&slots[0]);
    Setup {
        config,
        machine,
        pslot,
    }
}

/// The manual's Slot1: 10 CPUs, 10240 MiB, BIG disk.
fn manual_slot1() -> Setup {
    setup("", HostReadings::simple(10, 10240, BIG, 0))
}

fn job(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap()
}

/// A partitionable slot ad whose Requirements accept everything.
fn accepting() -> ClassAd {
    job("[ Requirements = true ]")
}

#[test]
fn manual_dynamic_provisioning_example() {
    let mut s = manual_slot1();
    let job_a = job("[ RequestCpus = 3; RequestMemory = 1024; RequestDisk = 10240 ]");
    let req = s.pslot.request(&s.config, &job_a, &accepting(), 0).unwrap();
    let d = s.pslot.carve(&s.machine, &req).unwrap();
    assert_eq!(d.name, "slot1_1");
    assert_eq!((d.parent_id, d.sub_id), (1, 1));
    assert_eq!(
        (d.resources.cpus, d.resources.memory, d.resources.disk),
        (3.0, 1024, 10240)
    );
    // "Slot1 advertises that it has the following resources still
    // available: cpu = 7, memory = 9216, disk = BIG-10240".
    assert_eq!(
        (s.pslot.free.cpus, s.pslot.free.memory, s.pslot.free.disk),
        (7.0, 9216, BIG - 10240)
    );
    // The slot keeps what it was given (TotalSlot*).
    assert_eq!(s.pslot.provisioned.cpus, 10.0);

    // "As each new job is allocated to Slot1, it breaks into Slot1_1,
    // Slot1_2, Slot1_3 etc."
    let d2 = s.pslot.carve(&s.machine, &req).unwrap();
    let d3 = s.pslot.carve(&s.machine, &req).unwrap();
    assert_eq!((d2.name.as_str(), d3.name.as_str()), ("slot1_2", "slot1_3"));
    assert_eq!(s.pslot.free.cpus, 1.0);

    // "until the entire set of Slot1's available resources have been
    // consumed by jobs."
    let e = s.pslot.carve(&s.machine, &req).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the job does not fit in what slot1 has left: Cpus: asks for 3, 1 left"
    );

    // A dynamic slot that ends gives everything back, and its name is
    // used again.
    let back = s.pslot.release(2).unwrap();
    assert_eq!(back, d2.resources);
    assert_eq!(
        (s.pslot.free.cpus, s.pslot.free.memory),
        (4.0, 10240 - 2048)
    );
    assert_eq!(s.pslot.next_sub_id(), 2);
    let again = s.pslot.carve(&s.machine, &req).unwrap();
    assert_eq!(again.name, "slot1_2");
    assert!(s.pslot.release(9).is_none());
    assert_eq!(s.pslot.children().count(), 3);
}

#[test]
fn dynamic_slots_say_what_they_are() {
    let mut s = manual_slot1();
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestMemory = 1; RequestDisk = 1 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    let d = s.pslot.carve(&s.machine, &req).unwrap();
    let mut ad = ClassAd::new();
    d.kind_attrs(&mut ad);
    let env = classad::Env::at(0);
    assert!(ad.eval_attr("DynamicSlot", &env).is_true());
    assert_eq!(ad.eval_attr("SlotType", &env).as_str(), Some("Dynamic"));
    assert_eq!(dynamic_slot_name("slot1", 7), "slot1_7");
}

/// "MODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {128})":
/// a dynamic slot is rounded up, so later jobs may reuse it.
#[test]
fn requests_are_rounded_by_the_modify_expressions() {
    let s = manual_slot1();
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestCpus = 2; RequestMemory = 1000; RequestDisk = 5000 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    assert!(req.modified);
    assert_eq!((req.cpus, req.memory, req.disk), (2.0, 1024, 5120));
}

#[test]
fn modify_expressions_can_be_set_per_slot_type() {
    let s = setup(
        "SLOT_TYPE_1_MODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {1000})\n",
        HostReadings::simple(10, 10240, BIG, 0),
    );
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestMemory = 1001; RequestDisk = 1 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    assert_eq!(req.memory, 2000);
}

/// MUST_MODIFY_REQUEST_EXPRS = False (the default): the rounded request is
/// used only if the partitionable slot still accepts the job.
#[test]
fn rounded_requests_that_no_longer_match_are_dropped_or_refused() {
    let s = manual_slot1();
    let slot_ad = job("[ Requirements = TARGET.RequestMemory <= 1000 ]");
    let j = job("[ RequestMemory = 1000; RequestDisk = 1024 ]");
    let req = s.pslot.request(&s.config, &j, &slot_ad, 0).unwrap();
    assert!(!req.modified);
    assert_eq!(req.memory, 1000);

    let s = setup(
        "MUST_MODIFY_REQUEST_EXPRS = True\n",
        HostReadings::simple(10, 10240, BIG, 0),
    );
    let e = s.pslot.request(&s.config, &j, &slot_ad, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "slot1: the partitionable slot's Requirements do not accept the job with its requests \
         rounded by MODIFY_REQUEST_EXPR_* (MUST_MODIFY_REQUEST_EXPRS is true)"
    );
    let too_big = job("[ RequestMemory = 2000; RequestDisk = 1024 ]");
    let s = manual_slot1();
    let e = s
        .pslot
        .request(&s.config, &too_big, &slot_ad, 0)
        .unwrap_err();
    assert!(matches!(
        e,
        CarveError::NotAccepted {
            modified: false,
            ..
        }
    ));
}

/// A job without requests gets JOB_DEFAULT_REQUESTCPUS (1),
/// JOB_DEFAULT_REQUESTMEMORY (128) and JOB_DEFAULT_REQUESTDISK
/// (`MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024`), as submit
/// would have given it.
#[test]
fn a_job_without_requests_gets_the_defaults() {
    let s = manual_slot1();
    let req = s
        .pslot
        .request(&s.config, &job("[ ]"), &accepting(), 0)
        .unwrap();
    assert_eq!((req.cpus, req.memory), (1.0, 128));
    assert_eq!(req.disk, 1024 * 1024);
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ TransferInputSizeMB = 2047 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    assert_eq!(req.disk, 2560 * 1024);

    // The schedd's _condor_Request* come first.
    let req = s
        .pslot
        .request(
            &s.config,
            &job(
                "[ RequestCpus = 1; _condor_RequestCpus = 4; RequestMemory = 1; RequestDisk = 1 ]",
            ),
            &accepting(),
            0,
        )
        .unwrap();
    assert_eq!(req.cpus, 4.0);
}

#[test]
fn a_job_without_a_memory_request_and_no_default_is_refused() {
    let s = setup(
        "JOB_DEFAULT_REQUESTMEMORY =\n",
        HostReadings::simple(10, 10240, BIG, 0),
    );
    let e = s
        .pslot
        .request(&s.config, &job("[ RequestDisk = 1 ]"), &accepting(), 0)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "slot1: the job has no RequestMemory and JOB_DEFAULT_REQUESTMEMORY gives none"
    );
}

#[test]
fn every_shortfall_is_named() {
    let s = manual_slot1();
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestCpus = 12; RequestMemory = 20480; RequestDisk = 1024 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    assert_eq!(
        s.pslot.fits(&s.machine, &req).unwrap_err().to_string(),
        "the job does not fit in what slot1 has left: Cpus: asks for 12, 10 left; \
         Memory: asks for 20480 MiB, 10240 MiB left"
    );
}

fn two_gpus() -> HostReadings {
    let mut host = HostReadings::simple(10, 10240, BIG, 0);
    host.inventories.insert(
        "GPUs".into(),
        Inventory::parse(
            r#"DetectedGPUs="GPU-c4a646d7, GPU-5368a050"
GPU_c4a646d7=[ id="GPU-c4a646d7"; Capability=7.0; ]
GPU_5368a050=[ id="GPU-5368a050"; Capability=8.0; ]
"#,
        )
        .unwrap(),
    );
    host
}

#[test]
fn a_jobs_gpu_constraint_chooses_the_gpu() {
    let mut s = setup("", two_gpus());
    assert_eq!(s.pslot.free.custom("GPUs").unwrap().ids.len(), 2);
    let j = job(
        "[ RequestGPUs = 1; RequireGPUs = Capability >= 8.0; RequestMemory = 1; RequestDisk = 1 ]",
    );
    let req = s.pslot.request(&s.config, &j, &accepting(), 0).unwrap();
    let d = s.pslot.carve(&s.machine, &req).unwrap();
    assert_eq!(d.resources.custom("GPUs").unwrap().ids, ["GPU-5368a050"]);
    assert_eq!(s.pslot.free.custom("GPUs").unwrap().ids, ["GPU-c4a646d7"]);
    assert_eq!(s.pslot.free.custom("GPUs").unwrap().amount, 1.0);

    // The other GPU is too old for a second such job.
    assert_eq!(
        s.pslot.carve(&s.machine, &req).unwrap_err().to_string(),
        "the job does not fit in what slot1 has left: \
         GPUs: asks for 1 matching `Capability >= 8.000000000000000E+00`, 0 of the 1 left match"
    );
    // A job without a constraint takes it.
    let any = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestGPUs = 1; RequestMemory = 1; RequestDisk = 1 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    let d2 = s.pslot.carve(&s.machine, &any).unwrap();
    assert_eq!(d2.resources.custom("GPUs").unwrap().ids, ["GPU-c4a646d7"]);

    // Released GPUs come back in the machine's order.
    s.pslot.release(d.sub_id).unwrap();
    s.pslot.release(d2.sub_id).unwrap();
    assert_eq!(
        s.pslot.free.custom("GPUs").unwrap().ids,
        ["GPU-c4a646d7", "GPU-5368a050"]
    );
    assert_eq!(s.pslot.free, s.pslot.provisioned);
}

#[test]
fn a_job_asking_for_no_gpus_gets_none() {
    let mut s = setup("", two_gpus());
    let req = s
        .pslot
        .request(
            &s.config,
            &job("[ RequestMemory = 1; RequestDisk = 1 ]"),
            &accepting(),
            0,
        )
        .unwrap();
    assert!(req.custom.is_empty());
    let d = s.pslot.carve(&s.machine, &req).unwrap();
    assert_eq!(d.resources.custom("GPUs").unwrap().amount, 0.0);
    assert!(d.resources.custom("GPUs").unwrap().ids.is_empty());
}
