//! GPU discovery through `nvidia-smi`, printing what HTCondor's
//! `condor_gpu_discovery` prints, so the startd reads it with
//! [`startd::resources::Inventory::parse`] as it would read the real tool.
//!
//! What we follow (HTCondor's `src/gpu/condor_gpu_discovery.cpp`, read for
//! its output, not copied): GPUs are named `GPU-` and the first 8 hex
//! digits of their UUID (`-short-uuid`, the default; `-uuid` gives the
//! whole UUID, `-by-index` `CUDA0`, `CUDA1`, ...). `DetectedGPUs` lists
//! them in device order. With `-properties` each GPU gets a nested ad
//! named after its id with `-` made `_` (`GPU_90b2dfd1 = [ id = "..." ]`),
//! holding, in name order: `Capability` (`9.0`), `DeviceName`,
//! `DevicePciBusId` (CUDA's form, `0000:00:06.0`), `DeviceUuid` (the UUID
//! without `GPU-`), `DriverVersion` and `MaxSupportedVersion` (the CUDA
//! driver version, `13.0` and 13000), `ECCEnabled`, `GlobalMemoryMb` and
//! `NvidiaDriver` (the kernel driver's version); `-extra` adds `ClockMhz`
//! (the highest SM clock) and `CoresPerCU`. Unless `-mixed` is given,
//! properties every GPU has alike move into one `Common = [ ... ]` ad (so
//! on a one-GPU machine, all of them), as HTCondor does; the startd gives
//! them back to every GPU. No GPUs print `DetectedGPUs=0`.
//!
//! What nvidia-smi cannot tell is left out: `ComputeUnits` (the SM
//! count), OpenCL and HIP devices, MIG instances, and `-dynamic`
//! properties; options asking for them are refused by name.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::nvidia_smi::{self, GpuDevice};

/// How condor_gpu_discovery names GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuIds {
    /// `GPU-90b2dfd1` (`-short-uuid`, the default).
    ShortUuid,
    /// `GPU-90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b` (`-uuid`).
    Uuid,
    /// The prefix and the index, `CUDA0` (`-by-index`).
    ByIndex,
}

/// The command line options of condor_gpu_discovery that we honour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryOptions {
    /// The resource name (`-tag`, default `GPUs`): `Detected<tag>`.
    pub tag: String,
    /// `-properties`: print each GPU's properties.
    pub properties: bool,
    /// `-extra`: and `ClockMhz`, `CoresPerCU`.
    pub extra: bool,
    /// `-mixed`: no `Common` ad.
    pub mixed: bool,
    pub ids: GpuIds,
    /// `-prefix` for `-by-index` ids (default `CUDA`).
    pub prefix: String,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        DiscoveryOptions {
            tag: "GPUs".into(),
            properties: false,
            extra: false,
            mixed: false,
            ids: GpuIds::ShortUuid,
            prefix: "CUDA".into(),
        }
    }
}

/// Why discovery gave nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// nvidia-smi is not installed (not on the PATH, or not at the path
    /// given): this machine has no NVIDIA driver to ask.
    NvidiaSmiMissing { program: PathBuf },
    /// nvidia-smi ran and failed (no driver loaded, a hung GPU...).
    NvidiaSmiFailed { program: PathBuf, message: String },
    /// nvidia-smi printed something we could not read.
    Unreadable {
        program: PathBuf,
        what: String,
        error: nvidia_smi::ParseError,
    },
    /// A condor_gpu_discovery option we do not know or cannot honour.
    BadOption { option: String, message: String },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NvidiaSmiMissing { program } => write!(
                f,
                "{}: not found, so no NVIDIA GPUs can be discovered (is the NVIDIA driver installed?)",
                program.display()
            ),
            GpuError::NvidiaSmiFailed { program, message } => {
                write!(f, "{} failed: {message}", program.display())
            }
            GpuError::Unreadable {
                program,
                what,
                error,
            } => write!(f, "{} {what}: {error}", program.display()),
            GpuError::BadOption { option, message } => {
                write!(f, "condor_gpu_discovery option `{option}`: {message}")
            }
        }
    }
}

impl std::error::Error for GpuError {}

/// condor_gpu_discovery's option matching: `--name` must be exact;
/// `-n...` may abbreviate `name` to no fewer than `min` characters (`None`:
/// no abbreviation).
fn is_option(arg: &str, name: &str, min: Option<usize>) -> bool {
    let Some(a) = arg.strip_prefix('-') else {
        return false;
    };
    match a.strip_prefix('-') {
        Some(exact) => exact == name,
        None => match min {
            None => a == name,
            Some(m) => !a.is_empty() && a.len() >= m.max(1) && name.starts_with(a),
        },
    }
}

impl DiscoveryOptions {
    /// Reads condor_gpu_discovery's command line (the part after the
    /// program).
    pub fn from_args(args: &str) -> Result<DiscoveryOptions, GpuError> {
        let mut o = DiscoveryOptions::default();
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut i = 0;
        let refuse = |arg: &str, why: &str| GpuError::BadOption {
            option: arg.to_string(),
            message: why.to_string(),
        };
        while i < words.len() {
            let arg = words[i];
            let value = |i: &mut usize| -> Result<String, GpuError> {
                *i += 1;
                words
                    .get(*i)
                    .map(|v| v.to_string())
                    .ok_or_else(|| refuse(arg, "expected a value after it"))
            };
            if is_option(arg, "properties", Some(1)) {
                o.properties = true;
            } else if is_option(arg, "extra", Some(3)) {
                o.properties = true;
                o.extra = true;
            } else if is_option(arg, "nested", Some(2)) {
            } else if is_option(arg, "mixed", Some(3)) || is_option(arg, "hetero", Some(3)) {
                o.mixed = true;
            } else if is_option(arg, "tag", Some(3)) {
                o.tag = value(&mut i)?;
            } else if is_option(arg, "prefix", Some(3)) {
                o.prefix = value(&mut i)?;
            } else if is_option(arg, "by-index", Some(4)) {
                o.ids = GpuIds::ByIndex;
            } else if is_option(arg, "uuid", Some(2)) {
                o.ids = GpuIds::Uuid;
            } else if is_option(arg, "short-uuid", None) {
                o.ids = GpuIds::ShortUuid;
            } else if is_option(arg, "cuda", None)
                || is_option(arg, "verbose", Some(4))
                || is_option(arg, "diagnostic", Some(4))
                || is_option(arg, "nvcuda", None)
                || is_option(arg, "cudart", Some(6))
                || is_option(arg, "dirty-environment", Some(4))
            {
                // Ways of asking CUDA; nvidia-smi answers the same.
            } else if is_option(arg, "not-nested", Some(6)) || is_option(arg, "no-nested", Some(5))
            {
                return Err(refuse(arg, "prefixed (not nested) properties are not supported; the startd reads nested property ads"));
            } else if [
                "dynamic", "cron", "opencl", "hip", "repeat", "divide", "packed", "config",
                "device", "simulate",
            ]
            .iter()
            .any(|n| is_option(arg, n, Some(3)) || arg.starts_with(&format!("-{n}:")))
            {
                return Err(refuse(
                    arg,
                    "not supported by ferrocondor's discovery through nvidia-smi",
                ));
            } else {
                return Err(refuse(arg, "not a condor_gpu_discovery option"));
            }
            i += 1;
        }
        Ok(o)
    }
}

/// CUDA cores per multiprocessor by compute capability, as
/// condor_gpu_discovery's table has them (the last known for newer ones).
fn cores_per_cu(major: u32, minor: u32) -> u32 {
    match (major, minor) {
        (1, _) => 8,
        (2, 0) => 32,
        (2, _) => 48,
        (3, _) => 192,
        (5, _) => 128,
        (6, 0) => 64,
        (6, _) => 128,
        (7, _) => 64,
        (8, 0) => 64,
        _ => 128,
    }
}

/// A ClassAd string literal.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The GPU's id as the options name it.
fn gpu_id(d: &GpuDevice, o: &DiscoveryOptions) -> String {
    let hex = d.uuid.strip_prefix("GPU-").unwrap_or(&d.uuid);
    match o.ids {
        GpuIds::ShortUuid => format!("GPU-{}", hex.get(..8).unwrap_or(hex)),
        GpuIds::Uuid => format!("GPU-{hex}"),
        GpuIds::ByIndex => format!("{}{}", o.prefix, d.index),
    }
}

/// CUDA's form of a PCI bus id: a 4-digit domain and upper-case hex
/// (`00000000:0a:00.0` is `0000:0A:00.0`).
fn cuda_pci_bus_id(id: &str) -> String {
    let id = match id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => id.to_string(),
    };
    id.to_ascii_uppercase()
}

/// A GPU's properties, by name (sorted, as HTCondor prints them), as
/// ClassAd literals.
fn properties(
    d: &GpuDevice,
    cuda_version: Option<&str>,
    o: &DiscoveryOptions,
) -> BTreeMap<&'static str, String> {
    let mut p = BTreeMap::new();
    if let Some((major, minor)) = d.capability {
        p.insert("Capability", format!("{major}.{minor}"));
        if o.extra {
            p.insert("CoresPerCU", cores_per_cu(major, minor).to_string());
        }
    }
    if let Some(n) = &d.name {
        p.insert("DeviceName", quoted(n));
    }
    if let Some(b) = &d.pci_bus_id {
        p.insert("DevicePciBusId", quoted(&cuda_pci_bus_id(b)));
    }
    p.insert(
        "DeviceUuid",
        quoted(d.uuid.strip_prefix("GPU-").unwrap_or(&d.uuid)),
    );
    if let Some(v) = cuda_version.and_then(nvidia_smi::cuda_driver_version) {
        p.insert("DriverVersion", format!("{}.{}", v / 1000, v % 100));
        p.insert("MaxSupportedVersion", v.to_string());
    }
    if let Some(e) = d.ecc_enabled {
        p.insert("ECCEnabled", e.to_string());
    }
    if let Some(m) = d.memory_mib {
        p.insert("GlobalMemoryMb", m.to_string());
    }
    if let Some(v) = &d.driver_version {
        p.insert("NvidiaDriver", quoted(v));
    }
    if o.extra {
        if let Some(c) = d.max_sm_clock_mhz {
            p.insert("ClockMhz", format!("{c}.00"));
        }
    }
    p
}

/// The text condor_gpu_discovery would print for these GPUs.
/// `cuda_version` is the CUDA version the driver supports (`13.0`), which
/// gives `DriverVersion`; without it that property is left out.
pub fn discovery_text(
    devices: &[GpuDevice],
    cuda_version: Option<&str>,
    o: &DiscoveryOptions,
) -> String {
    if devices.is_empty() {
        return format!("Detected{}=0\n", o.tag);
    }
    let ids: Vec<String> = devices.iter().map(|d| gpu_id(d, o)).collect();
    let mut out = format!("Detected{}=\"{}\"\n", o.tag, ids.join(", "));
    if !o.properties {
        return out;
    }
    // By id, as HTCondor keeps them (and prints them).
    let props: BTreeMap<&String, BTreeMap<&str, String>> = ids
        .iter()
        .zip(devices)
        .map(|(id, d)| (id, properties(d, cuda_version, o)))
        .collect();
    let mut common: BTreeMap<&str, String> = BTreeMap::new();
    if !o.mixed {
        if let Some(first) = props.values().next() {
            for (k, v) in first {
                if props.values().all(|p| p.get(k) == Some(v)) {
                    common.insert(k, v.clone());
                }
            }
        }
    }
    let ad = |pairs: &mut dyn Iterator<Item = (&&str, &String)>| -> String {
        pairs.map(|(k, v)| format!("{k}={v}; ")).collect()
    };
    if !common.is_empty() {
        out.push_str(&format!("Common=[ {}]\n", ad(&mut common.iter())));
    }
    for (id, p) in &props {
        let own = ad(&mut p.iter().filter(|(k, _)| !common.contains_key(**k)));
        out.push_str(&format!(
            "{}=[ id={}; {own}]\n",
            id.replace(['-', '/'], "_"),
            quoted(id)
        ));
    }
    out
}

/// How long nvidia-smi may take before it is given up on (a GPU in a bad
/// state can make it hang).
pub const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `program args`, its standard output as text; a program that is
/// missing, fails or outlives the timeout is an error.
fn run(program: &Path, args: &[&str]) -> Result<String, GpuError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            // Searched for on PATH (a bare name), a permission refusal means
            // no nvidia-smi this user can run was found there (a directory
            // on PATH it may not search), which is the same as none.
            std::io::ErrorKind::NotFound => GpuError::NvidiaSmiMissing {
                program: program.to_path_buf(),
            },
            std::io::ErrorKind::PermissionDenied if program.components().count() == 1 => {
                GpuError::NvidiaSmiMissing {
                    program: program.to_path_buf(),
                }
            }
            _ => GpuError::NvidiaSmiFailed {
                program: program.to_path_buf(),
                message: format!("could not start it: {e}"),
            },
        })?;
    // Read both pipes on threads so a chatty program cannot block on a
    // full pipe while we wait for it.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > NVIDIA_SMI_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GpuError::NvidiaSmiFailed {
                    program: program.to_path_buf(),
                    message: format!("gave no answer in {} s", NVIDIA_SMI_TIMEOUT.as_secs()),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                return Err(GpuError::NvidiaSmiFailed {
                    program: program.to_path_buf(),
                    message: e.to_string(),
                })
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else if stdout.contains("No devices were found") || stderr.contains("No devices were found") {
        Ok(String::new())
    } else {
        let said = if stderr.trim().is_empty() {
            &stdout
        } else {
            &stderr
        };
        Err(GpuError::NvidiaSmiFailed {
            program: program.to_path_buf(),
            message: format!("{status}: {}", said.trim()),
        })
    }
}

/// Discovers the GPUs by asking `nvidia_smi` (a path, or a name looked up
/// on the PATH): the device table from `--query-gpu`, the CUDA version
/// from `-q -x` (left out if that fails). Returns condor_gpu_discovery's
/// text.
pub fn discover(nvidia_smi: &Path, o: &DiscoveryOptions) -> Result<String, GpuError> {
    let query = format!("--query-gpu={}", nvidia_smi::QUERY_FIELDS);
    let csv = run(nvidia_smi, &[&query, "--format=csv"])?;
    let devices = nvidia_smi::parse_query_csv(&csv).map_err(|error| GpuError::Unreadable {
        program: nvidia_smi.to_path_buf(),
        what: "--query-gpu output".into(),
        error,
    })?;
    let cuda_version = if devices.is_empty() || !o.properties {
        None
    } else {
        run(nvidia_smi, &["-q", "-x"])
            .ok()
            .and_then(|xml| nvidia_smi::parse_xml(&xml).ok())
            .and_then(|r| r.cuda_version)
    };
    Ok(discovery_text(&devices, cuda_version.as_deref(), o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_as_condor_gpu_discovery_reads_them() {
        let o = DiscoveryOptions::from_args("-properties -extra").unwrap();
        assert!(o.properties && o.extra && !o.mixed);
        let o = DiscoveryOptions::from_args("-p -mix -tag Gpus --by-index").unwrap();
        assert!(o.properties && o.mixed);
        assert_eq!((o.tag.as_str(), o.ids), ("Gpus", GpuIds::ByIndex));
        assert_eq!(
            DiscoveryOptions::from_args("").unwrap(),
            DiscoveryOptions::default()
        );
        assert_eq!(
            DiscoveryOptions::from_args("-dynamic").unwrap_err().to_string(),
            "condor_gpu_discovery option `-dynamic`: not supported by ferrocondor's discovery through nvidia-smi"
        );
        assert_eq!(
            DiscoveryOptions::from_args("-bogus")
                .unwrap_err()
                .to_string(),
            "condor_gpu_discovery option `-bogus`: not a condor_gpu_discovery option"
        );
        assert!(DiscoveryOptions::from_args("-tag").is_err());
        // `--` asks for the whole name.
        assert!(DiscoveryOptions::from_args("--prop").is_err());
    }

    #[test]
    fn pci_bus_ids_in_cudas_form() {
        assert_eq!(cuda_pci_bus_id("00000000:00:06.0"), "0000:00:06.0");
        assert_eq!(cuda_pci_bus_id("00000000:a0:1c.0"), "0000:A0:1C.0");
        assert_eq!(cuda_pci_bus_id("0000:A0:1C.0"), "0000:A0:1C.0");
    }

    #[test]
    fn a_missing_nvidia_smi_is_an_error_value() {
        let e = discover(
            Path::new("/nonexistent/nvidia-smi"),
            &DiscoveryOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e,
            GpuError::NvidiaSmiMissing {
                program: "/nonexistent/nvidia-smi".into()
            }
        );
        assert!(e.to_string().contains("not found"));
    }
}
