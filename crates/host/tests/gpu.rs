//! GPU discovery on the real output of `nvidia-smi` on a machine with one
//! H100 (`shared/fixtures/gpu-h100/`): each form parses to the same GPU,
//! the discovery text is what condor_gpu_discovery prints, and a startd
//! configured with `use FEATURE : GPUs` publishes the GPU from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use host::gpu_discovery::{discovery_text, DiscoveryOptions, GpuError};
use host::inventory::{take_inventories, InventoryFailure};
use host::nvidia_smi::{self, GpuDevice};
use startd::resources::{HostReadings, Inventory};

const CSV: &str = include_str!("../../../../shared/fixtures/gpu-h100/nvidia-smi-query.csv");
const XML: &str = include_str!("../../../../shared/fixtures/gpu-h100/nvidia-smi-q.xml");
const LIST: &str = include_str!("../../../../shared/fixtures/gpu-h100/nvidia-smi-L.txt");
const BANNER: &str = include_str!("../../../../shared/fixtures/gpu-h100/nvidia-smi.txt");

const UUID: &str = "GPU-90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b";
const NAME: &str = "NVIDIA H100 80GB HBM3";

fn h100() -> GpuDevice {
    GpuDevice {
        index: 0,
        uuid: UUID.into(),
        name: Some(NAME.into()),
        memory_mib: Some(81559),
        capability: Some((9, 0)),
        pci_bus_id: Some("00000000:00:06.0".into()),
        ecc_enabled: Some(true),
        max_sm_clock_mhz: Some(1980),
        driver_version: Some("580.159.04".into()),
    }
}

#[test]
fn query_csv() {
    assert_eq!(nvidia_smi::parse_query_csv(CSV).unwrap(), [h100()]);
}

#[test]
fn xml_has_all_but_the_compute_capability() {
    let r = nvidia_smi::parse_xml(XML).unwrap();
    assert_eq!(r.driver_version.as_deref(), Some("580.159.04"));
    assert_eq!(r.cuda_version.as_deref(), Some("13.0"));
    let expected = GpuDevice {
        capability: None,
        ..h100()
    };
    assert_eq!(r.devices, [expected]);
}

#[test]
fn list_and_banner() {
    let l = nvidia_smi::parse_list(LIST).unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!((l[0].index, l[0].uuid.as_str()), (0, UUID));
    assert_eq!(l[0].name.as_deref(), Some(NAME));
    assert_eq!(
        nvidia_smi::parse_banner(BANNER),
        (Some("580.159.04".into()), Some("13.0".into()))
    );
    assert!(nvidia_smi::parse_list("GPU zero\n").is_err());
}

fn options(args: &str) -> DiscoveryOptions {
    DiscoveryOptions::from_args(args).unwrap()
}

/// What `condor_gpu_discovery -properties` prints for this machine: one
/// GPU, so every property is common to all GPUs.
const H100_DISCOVERY: &str = r#"DetectedGPUs="GPU-90b2dfd1"
Common=[ Capability=9.0; DeviceName="NVIDIA H100 80GB HBM3"; DevicePciBusId="0000:00:06.0"; DeviceUuid="90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b"; DriverVersion=13.0; ECCEnabled=true; GlobalMemoryMb=81559; MaxSupportedVersion=13000; NvidiaDriver="580.159.04"; ]
GPU_90b2dfd1=[ id="GPU-90b2dfd1"; ]
"#;

#[test]
fn discovery_text_as_condor_gpu_discovery_prints_it() {
    let devices = nvidia_smi::parse_query_csv(CSV).unwrap();
    let text = discovery_text(&devices, Some("13.0"), &options("-properties"));
    assert_eq!(text, H100_DISCOVERY);
    // Without -properties, only the ids.
    assert_eq!(
        discovery_text(&devices, Some("13.0"), &options("")),
        "DetectedGPUs=\"GPU-90b2dfd1\"\n"
    );
    // -mixed keeps every property with its GPU; -extra adds the clock and
    // cores per multiprocessor.
    assert_eq!(
        discovery_text(&devices, None, &options("-extra -mixed -uuid")),
        "DetectedGPUs=\"GPU-90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b\"\n\
         GPU_90b2dfd1_480c_2eb4_b6ab_c0f0d728c40b=[ id=\"GPU-90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b\"; \
         Capability=9.0; ClockMhz=1980.00; CoresPerCU=128; DeviceName=\"NVIDIA H100 80GB HBM3\"; \
         DevicePciBusId=\"0000:00:06.0\"; DeviceUuid=\"90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b\"; \
         ECCEnabled=true; GlobalMemoryMb=81559; NvidiaDriver=\"580.159.04\"; ]\n"
    );
    assert_eq!(
        discovery_text(&[], None, &options("-p")),
        "DetectedGPUs=0\n"
    );
}

#[test]
fn two_gpus_share_what_they_have_alike() {
    let mut second = h100();
    second.index = 1;
    second.uuid = "GPU-1b2c3d4e-0000-0000-0000-000000000000".into();
    second.pci_bus_id = Some("00000000:0a:00.0".into());
    let text = discovery_text(
        &[h100(), second],
        Some("12.2"),
        &options("-properties -by-index"),
    );
    assert_eq!(
        text,
        "DetectedGPUs=\"CUDA0, CUDA1\"\n\
         Common=[ Capability=9.0; DeviceName=\"NVIDIA H100 80GB HBM3\"; DriverVersion=12.20; \
         ECCEnabled=true; GlobalMemoryMb=81559; MaxSupportedVersion=12020; NvidiaDriver=\"580.159.04\"; ]\n\
         CUDA0=[ id=\"CUDA0\"; DevicePciBusId=\"0000:00:06.0\"; DeviceUuid=\"90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b\"; ]\n\
         CUDA1=[ id=\"CUDA1\"; DevicePciBusId=\"0000:0A:00.0\"; DeviceUuid=\"1b2c3d4e-0000-0000-0000-000000000000\"; ]\n"
    );
    // The text is an inventory the startd reads.
    let inv = Inventory::parse(&text).unwrap();
    assert!(inv.ad.contains("CUDA1") && inv.ad.contains("Common"));
}

fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty().with_macro("DETECTED_CORES", "4"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

const GPU_STARTD: &str = "\
use FEATURE : GPUs
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = TRUE
";

/// A startd from `GPU_STARTD` on a 4-core machine with these inventories.
fn gpu_slot_ad(inventories: BTreeMap<String, Inventory>) -> classad::ClassAd {
    let c = config(GPU_STARTD);
    let mut h = HostReadings::simple(4, 16384, 100_000_000, 0);
    h.inventories = inventories;
    let s = startd::Startd::from_config(&c, "gpu.example.org", &h, 1_700_000_000)
        .unwrap_or_else(|e| panic!("{e}"));
    s.slot_ad(0, 1_700_000_000)
}

fn assert_publishes_the_h100(ad: &classad::ClassAd) {
    let env = classad::Env::at(1_700_000_000);
    assert_eq!(ad.eval_attr("TotalGPUs", &env).as_int(), Some(1));
    assert_eq!(ad.eval_attr("GPUs", &env).as_int(), Some(1));
    assert_eq!(
        ad.eval_attr("AssignedGPUs", &env).as_str(),
        Some("GPU-90b2dfd1")
    );
    assert_eq!(ad.eval_attr("GPUs_Capability", &env).as_number(), Some(9.0));
    assert_eq!(ad.eval_attr("GPUs_DeviceName", &env).as_str(), Some(NAME));
    assert_eq!(
        ad.eval_attr("GPUs_GlobalMemoryMb", &env).as_int(),
        Some(81559)
    );
    let nested = classad::parse_expr("GPUs_GPU_90b2dfd1.Id").unwrap();
    assert_eq!(
        classad::eval_expr(&nested, Some(ad), None, &env).as_str(),
        Some("GPU-90b2dfd1")
    );
    let ecc = classad::parse_expr("GPUs_GPU_90b2dfd1.ECCEnabled").unwrap();
    assert_eq!(
        classad::eval_expr(&ecc, Some(ad), None, &env).as_bool(),
        Some(true)
    );
    let inv_sources = startd::resources::inventory_sources(&config(GPU_STARTD)).unwrap();
    assert_eq!(inv_sources.len(), 1);
}

#[test]
fn a_startd_with_the_gpus_feature_publishes_the_discovered_gpu() {
    let devices = nvidia_smi::parse_query_csv(CSV).unwrap();
    let cuda = nvidia_smi::parse_xml(XML).unwrap().cuda_version;
    let text = discovery_text(&devices, cuda.as_deref(), &options("-properties"));
    let mut inv = BTreeMap::new();
    inv.insert("GPUs".to_string(), Inventory::parse(&text).unwrap());
    assert_publishes_the_h100(&gpu_slot_ad(inv));
}

/// A stand-in for nvidia-smi that prints the H100's answers.
fn fake_nvidia_smi(dir: &Path, exit: i32) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/gpu-h100");
    let script = format!(
        "#!/bin/sh\n\
         if [ {exit} -ne 0 ]; then echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2; exit {exit}; fi\n\
         case \"$1\" in\n\
         --query-gpu=*) cat '{csv}' ;;\n\
         -q) cat '{xml}' ;;\n\
         *) exit 2 ;;\n\
         esac\n",
        csv = fixtures.join("nvidia-smi-query.csv").display(),
        xml = fixtures.join("nvidia-smi-q.xml").display(),
    );
    let p = dir.join(format!("nvidia-smi-{exit}"));
    std::fs::write(&p, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn the_configured_inventory_runs_discovery_through_nvidia_smi() {
    let dir = tempfile::tempdir().unwrap();
    let smi = fake_nvidia_smi(dir.path(), 0);
    let sources = startd::resources::inventory_sources(&config(GPU_STARTD)).unwrap();
    let (found, failed) = take_inventories(&sources, &smi);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        host::inventory::inventory_text(&sources[0], &smi).unwrap(),
        H100_DISCOVERY
    );
    assert_publishes_the_h100(&gpu_slot_ad(found));
}

#[test]
fn a_missing_or_failing_nvidia_smi_is_an_error_not_a_panic() {
    let sources = startd::resources::inventory_sources(&config(GPU_STARTD)).unwrap();
    let (found, failed) = take_inventories(&sources, Path::new("/nonexistent/nvidia-smi"));
    assert!(found.is_empty());
    assert_eq!(failed[0].0, "GPUs");
    assert!(matches!(
        failed[0].1,
        InventoryFailure::Gpu(GpuError::NvidiaSmiMissing { .. })
    ));
    assert_eq!(
        failed[0].1.to_string(),
        "/nonexistent/nvidia-smi: not found, so no NVIDIA GPUs can be discovered (is the NVIDIA driver installed?)"
    );
    // Without the inventory the startd offers no GPUs, and starts.
    let ad = gpu_slot_ad(found);
    assert!(
        ad.eval_attr("TotalGPUs", &classad::Env::at(0))
            .as_int()
            .unwrap_or(0)
            == 0
    );

    let dir = tempfile::tempdir().unwrap();
    let broken = fake_nvidia_smi(dir.path(), 9);
    let (_, failed) = take_inventories(&sources, &broken);
    let msg = failed[0].1.to_string();
    assert!(
        msg.contains("failed: exit status: 9: NVIDIA-SMI has failed"),
        "{msg}"
    );
}
