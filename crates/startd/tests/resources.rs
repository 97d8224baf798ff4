//! What the machine offers: overrides of the detected CPUs and memory,
//! custom resources, and GPUs read from `condor_gpu_discovery -properties`
//! or `nvidia-smi --query-gpu` output.

use startd::resources::{HostReadings, Inventory, InventorySource, MachineResources};

fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty().with_macro("DETECTED_CORES", "8"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn machine(text: &str, host: &HostReadings) -> MachineResources {
    MachineResources::from_config(&config(text), host).unwrap_or_else(|e| panic!("{e}"))
}

/// 8 physical cores with 2 threads each, 32 GiB, 1 TB free, 4 GiB swap.
fn host() -> HostReadings {
    HostReadings {
        physical_cpus: 8,
        hyperthread_cpus: 16,
        cpus_limit: None,
        memory: 32768,
        disk: 1_000_000_000,
        swap: 4_194_304,
        inventories: Default::default(),
    }
}

/// `condor_gpu_discovery -properties` on two A100s (from HTCondor's own
/// sources), with an extra attribute that is not a property.
const A100_DISCOVERY: &str = r#"DetectedGPUs="GPU-5368a050, GPU-5d2744da"
Common=[ DriverVersion=11.40; MaxSupportedVersion=11040; ]
GPU_5368a050=[ id="GPU-5368a050"; Capability=8.0; ClockMhz=1410.00; CoresPerCU=64; DeviceName="NVIDIA A100-SXM4-40GB"; DevicePciBusId="0000:A0:1C.0"; DeviceUuid="GPU-5368a050-ed79-fab9-5cba-0d37c5f12c81"; ECCEnabled=true; GlobalMemoryMb=40536; ]
GPU_5d2744da=[ id="GPU-5d2744da"; Capability=8.0; ClockMhz=1410.00; CoresPerCU=64; DeviceName="NVIDIA A100-SXM4-40GB"; DevicePciBusId="0000:A0:1D.0"; DeviceUuid="GPU-5d2744da-c329-024c-6477-17d879625691"; ECCEnabled=true; GlobalMemoryMb=40536; ]
CUDARuntimeVersion=11.40
"#;

fn env() -> classad::Env {
    classad::Env::at(0)
}

#[test]
fn cpus_count_hyperthreads_unless_told_not_to() {
    assert_eq!(machine("", &host()).cpus, 16);
    let m = machine("COUNT_HYPERTHREAD_CPUS = false\n", &host());
    assert_eq!((m.cpus, m.detected_cpus), (8, 8));
    let mut limited = host();
    limited.cpus_limit = Some(4);
    assert_eq!(machine("", &limited).cpus, 4);
}

#[test]
fn num_cpus_and_memory_override_the_readings() {
    let m = machine("NUM_CPUS = 3\nMEMORY = 2000\n", &host());
    assert_eq!((m.cpus, m.detected_cpus), (3, 16));
    assert_eq!((m.memory, m.detected_memory), (2000, 32768));
    // MEMORY = 0 means "use what was detected"; RESERVED_MEMORY comes off.
    let m = machine("MEMORY = 0\nRESERVED_MEMORY = 768\n", &host());
    assert_eq!(m.memory, 32000);
    // RESERVED_DISK is in MiB, the disk in KiB.
    let m = machine("RESERVED_DISK = 1000\n", &host());
    assert_eq!(m.disk, 1_000_000_000 - 1_024_000);
    let e = MachineResources::from_config(&config("NUM_CPUS = -2\n"), &host()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "NUM_CPUS: -2 CPUs: the number must not be negative"
    );
}

#[test]
fn machine_resource_counts_lists_and_expressions() {
    let m = machine(
        "MACHINE_RESOURCE_Cogs = 16\nMACHINE_RESOURCE_Bandwidth = 2 * 500\nMACHINE_RESOURCE_Tapes = t0, t1 t2\n",
        &host(),
    );
    let names: Vec<&str> = m.custom.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Bandwidth", "Cogs", "Tapes"]);
    assert_eq!(m.custom("cogs").unwrap().count, 16.0);
    assert!(!m.custom("cogs").unwrap().has_ids());
    assert_eq!(m.custom("Bandwidth").unwrap().count, 1000.0);
    assert_eq!(m.custom("Tapes").unwrap().ids, ["t0", "t1", "t2"]);
}

#[test]
fn offline_instances_are_not_counted() {
    let m = machine(
        "MACHINE_RESOURCE_GPUs = CUDA0, CUDA1, CUDA2\nOFFLINE_MACHINE_RESOURCE_GPUs = CUDA1\n",
        &host(),
    );
    let g = m.custom("GPUs").unwrap();
    assert_eq!((g.count, g.detected), (2.0, 3.0));
    assert_eq!(g.ids, ["CUDA0", "CUDA2"]);
    let ad = m.machine_attrs();
    assert_eq!(ad.eval_attr("TotalGPUs", &env()).as_int(), Some(2));
    assert_eq!(ad.eval_attr("DetectedGPUs", &env()).as_int(), Some(2));
    assert_eq!(ad.eval_attr("OfflineGPUs", &env()).as_str(), Some("CUDA1"));
}

#[test]
fn machine_resource_names_limits_which_resources_count() {
    let m = machine(
        "MACHINE_RESOURCE_NAMES = Cogs\nMACHINE_RESOURCE_Cogs = 4\nMACHINE_RESOURCE_Gears = 2\n",
        &host(),
    );
    assert_eq!(m.custom.len(), 1);
    assert_eq!(
        m.warnings,
        ["local machine resource Gears is not in MACHINE_RESOURCE_NAMES, so it will have no effect"]
    );
}

#[test]
fn reserved_resource_names_are_refused() {
    let e = MachineResources::from_config(&config("MACHINE_RESOURCE_Memory = 3\n"), &host())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "MACHINE_RESOURCE_Memory: 'Memory' is a reserved resource name (Cpus, Memory, Disk and Swap are the standard resources)"
    );
}

#[test]
fn gpu_discovery_runs_by_default_and_inventories_when_configured() {
    // HTCondor 25 looks for GPUs on every execute point (STARTD_DETECT_GPUS).
    let sources = startd::resources::inventory_sources(&config("")).unwrap();
    assert_eq!(
        sources,
        [InventorySource::GpuDiscovery {
            args: "-properties".into()
        }]
    );
    assert!(
        startd::resources::inventory_sources(&config("STARTD_DETECT_GPUS = false\n"))
            .unwrap()
            .is_empty()
    );
    // `use feature : GPUs` names the discovery program as an inventory.
    let sources = startd::resources::inventory_sources(&config("use feature : GPUs\n")).unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].tag(), "GPUs");
    match &sources[0] {
        InventorySource::Command { command, .. } => {
            assert!(
                command.contains("condor_gpu_discovery") && command.contains("-properties"),
                "{command}"
            )
        }
        other => panic!("{other:?}"),
    }
    // A configured GPUs resource turns the default discovery off.
    assert!(
        startd::resources::inventory_sources(&config("MACHINE_RESOURCE_GPUs = 2\n"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn gpu_discovery_output_gives_ids_and_properties() {
    let mut h = host();
    h.inventories
        .insert("GPUs".into(), Inventory::parse(A100_DISCOVERY).unwrap());
    let m = machine("use feature : GPUs\n", &h);
    let g = m.custom("GPUs").unwrap();
    assert_eq!(g.ids, ["GPU-5368a050", "GPU-5d2744da"]);
    let p = &g.properties["GPU-5d2744da"];
    assert_eq!(p.eval_attr("Capability", &env()).as_number(), Some(8.0));
    assert_eq!(p.eval_attr("GlobalMemoryMb", &env()).as_int(), Some(40536));
    // Common properties belong to every GPU; `id` is not a property.
    assert_eq!(p.eval_attr("DriverVersion", &env()).as_number(), Some(11.4));
    assert!(!p.contains("id"));
    // The rest of the output goes into the machine ad; the property ads
    // do not.
    let ad = m.machine_attrs();
    assert_eq!(
        ad.eval_attr("CUDARuntimeVersion", &env()).as_number(),
        Some(11.4)
    );
    assert!(!ad.contains("GPU_5368a050") && !ad.contains("Common"));
    assert_eq!(ad.eval_attr("TotalGPUs", &env()).as_int(), Some(2));
    assert_eq!(
        ad.eval_attr("MachineResources", &env()).as_str(),
        Some("Cpus Memory Disk Swap GPUs")
    );
}

#[test]
fn default_gpu_discovery_output_counts_too() {
    let mut h = host();
    h.inventories
        .insert("GPUs".into(), Inventory::parse("DetectedGPUs=0\n").unwrap());
    let m = machine("", &h);
    assert_eq!(m.custom("GPUs").unwrap().count, 0.0);
    // Without the output (the daemon ran nothing) there is no GPUs resource.
    assert!(machine("", &host()).custom.is_empty());
}

#[test]
fn inventory_lines_that_are_not_attributes_are_errors() {
    let e = Inventory::parse("DetectedGPUs=\"GPU-1\"\n# note\n\nthis is not an attribute\n")
        .unwrap_err();
    assert_eq!(e.line, 4);
    assert!(e.to_string().starts_with("line 4: not an attribute"), "{e}");
}
