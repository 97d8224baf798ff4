//! What the machine offers to be divided into slots: CPUs, memory, disk,
//! swap, and custom resources (`MACHINE_RESOURCE_<name>`, GPUs found by an
//! inventory program), after the configuration's overrides.
//!
//! The daemon reads the host (core counts, memory, free disk, swap) and
//! runs the inventory programs [`inventory_sources`] names; it hands the
//! readings and the programs' parsed output ([`Inventory`]) to
//! [`MachineResources::from_config`]. Nothing here touches the machine.
//!
//! Units are HTCondor's: memory in MiB, disk and swap in KiB.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use classad::{ClassAd, Expr, Value};
use config::{Config, ParamError};

/// Resource names HTCondor keeps for its own standard resources: a custom
/// resource may not take them.
const RESERVED_NAMES: &[&str] = &["CPU", "CPUS", "DISK", "SWAP", "MEM", "MEMORY", "RAM"];

/// What the daemon read from the host.
#[derive(Clone, Debug, Default)]
pub struct HostReadings {
    /// Physical cores (`DETECTED_PHYSICAL_CPUS`).
    pub physical_cpus: u32,
    /// Hardware threads the kernel schedules (`DETECTED_CORES`).
    pub hyperthread_cpus: u32,
    /// A lower limit from cgroups or CPU affinity, if any.
    pub cpus_limit: Option<u32>,
    /// Physical memory, MiB (already capped by a cgroup limit, as HTCondor
    /// does).
    pub memory: i64,
    /// Free space on the partition holding `EXECUTE`, KiB.
    pub disk: i64,
    /// Swap (HTCondor's `TotalVirtualMemory`), KiB.
    pub swap: i64,
    /// What each inventory program the daemon ran printed, parsed, by
    /// resource name (`GPUs`); see [`inventory_sources`].
    pub inventories: BTreeMap<String, Inventory>,
}

impl HostReadings {
    /// A machine with `cpus` cores (no hyperthreads), `memory` MiB, and
    /// `disk` and `swap` KiB: for tests and the simulator.
    pub fn simple(cpus: u32, memory: i64, disk: i64, swap: i64) -> HostReadings {
        HostReadings {
            physical_cpus: cpus,
            hyperthread_cpus: cpus,
            cpus_limit: None,
            memory,
            disk,
            swap,
            inventories: BTreeMap::new(),
        }
    }
}

/// A program the daemon should run to learn about a custom resource; its
/// output, parsed into an [`Inventory`], goes into
/// [`HostReadings::inventories`] under [`InventorySource::tag`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InventorySource {
    /// `MACHINE_RESOURCE_INVENTORY_<tag> = command`: the command prints an
    /// ad with `Detected<tag>` (see [`Inventory::parse`]).
    Command { tag: String, command: String },
    /// HTCondor's built-in GPU discovery (`STARTD_DETECT_GPUS`, on when no
    /// `GPUs` resource is configured): `condor_gpu_discovery <args>`, or
    /// anything that gives the same facts (the `host` crate makes that
    /// text from `nvidia-smi`). Its tag is `GPUs`.
    GpuDiscovery { args: String },
}

impl InventorySource {
    /// The resource name the output is for.
    pub fn tag(&self) -> &str {
        match self {
            InventorySource::Command { tag, .. } => tag,
            InventorySource::GpuDiscovery { .. } => "GPUs",
        }
    }
}

/// One custom resource of the machine.
#[derive(Clone, Debug)]
pub struct CustomResource {
    /// The name as configured (`GPUs`, `Cogs`); attribute names are built
    /// from it (`TotalGPUs`, `RequestGPUs`).
    pub name: String,
    /// How many are usable: the count, or the number of instance ids that
    /// are not offline.
    pub count: f64,
    /// How many were detected, offline ones included.
    pub detected: f64,
    /// Instance ids, in the order given (`GPU-90b2dfd1`, `CUDA0`), offline
    /// ones left out; empty for a resource that is only a count.
    pub ids: Vec<String>,
    /// Ids marked offline (`OFFLINE_MACHINE_RESOURCE_<name>`,
    /// `Offline<name>` in an inventory).
    pub offline: Vec<String>,
    /// Each instance's properties (a GPU's `Capability`, `DeviceName`,
    /// ...), by id.
    pub properties: BTreeMap<String, ClassAd>,
}

impl CustomResource {
    /// Whether the resource is a set of named instances (which slots get
    /// by id) rather than a plain quantity.
    pub fn has_ids(&self) -> bool {
        !self.ids.is_empty()
    }
}

/// Everything the machine offers, after `NUM_CPUS`, `MEMORY`,
/// `RESERVED_MEMORY`, `RESERVED_DISK` and the custom-resource settings.
#[derive(Clone, Debug)]
pub struct MachineResources {
    /// CPUs to divide (`NUM_CPUS`, or what was detected).
    pub cpus: u32,
    /// CPUs detected (`DETECTED_CPUS`: hyperthreads counted or not, as
    /// `COUNT_HYPERTHREAD_CPUS` says, within any limit).
    pub detected_cpus: u32,
    /// Memory to divide, MiB (`MEMORY` or detected, less `RESERVED_MEMORY`).
    pub memory: i64,
    /// Memory detected, MiB.
    pub detected_memory: i64,
    /// Disk to divide, KiB (free space less `RESERVED_DISK`).
    pub disk: i64,
    /// Swap, KiB.
    pub swap: i64,
    /// Custom resources, in HTCondor's order (by name, ignoring case).
    pub custom: Vec<CustomResource>,
    /// Attributes inventory programs printed besides their resource
    /// (`CUDADriverVersion`, ...): HTCondor copies them into the machine
    /// ads.
    pub inventory_attrs: ClassAd,
    /// Things worth a line in the log (a resource left out by
    /// `MACHINE_RESOURCE_NAMES`, an inventory without `Detected<name>`).
    pub warnings: Vec<String>,
}

/// A configuration that does not describe a usable machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceError {
    /// The parameter at fault.
    pub param: String,
    pub message: String,
}

impl fmt::Display for ResourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for ResourceError {}

impl From<ParamError> for ResourceError {
    fn from(e: ParamError) -> ResourceError {
        ResourceError {
            param: e.name.clone(),
            message: e.to_string(),
        }
    }
}

impl From<config::LookupError> for ResourceError {
    fn from(e: config::LookupError) -> ResourceError {
        ResourceError {
            param: e.name.clone(),
            message: e.to_string(),
        }
    }
}

const MACHINE_RESOURCE_: &str = "MACHINE_RESOURCE_";

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    if s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
    {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}

/// The names of the machine's `MACHINE_RESOURCE_*` definitions (as
/// written, without a `STARTD.` prefix), in a stable order. HTCondor
/// looks only at what the configuration defines, never at defaults.
fn machine_resource_params(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for def in config.defined() {
        let name = match def.name.split_once('.') {
            Some((prefix, rest)) if prefix.eq_ignore_ascii_case(config.subsystem()) => rest,
            Some(_) => continue,
            None => def.name.as_str(),
        };
        let is_resource = strip_prefix_ignore_case(name, MACHINE_RESOURCE_)
            .is_some_and(|tag| !tag.is_empty() && !tag.eq_ignore_ascii_case("NAMES"));
        if is_resource && !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            names.push(name.to_string());
        }
    }
    names
}

/// The inventory programs the daemon should run before building the
/// machine's resources: every `MACHINE_RESOURCE_INVENTORY_<tag>`, and
/// HTCondor's GPU discovery when no GPUs resource is configured and
/// `STARTD_DETECT_GPUS` is not turned off.
pub fn inventory_sources(config: &Config) -> Result<Vec<InventorySource>, ResourceError> {
    let mut out = Vec::new();
    let mut has_gpus = false;
    for name in machine_resource_params(config) {
        let tag = &name[MACHINE_RESOURCE_.len()..];
        if let Some(inv_tag) = strip_prefix_ignore_case(tag, "INVENTORY_") {
            has_gpus |= inv_tag.eq_ignore_ascii_case("GPUs");
            if let Some(command) = config.get(&name)? {
                out.push(InventorySource::Command {
                    tag: inv_tag.to_string(),
                    command,
                });
            }
        } else {
            has_gpus |= tag.eq_ignore_ascii_case("GPUs") && config.is_defined(&name);
        }
    }
    if !has_gpus {
        if let Some(args) = config.get("STARTD_DETECT_GPUS")? {
            let t = args.trim();
            // "false" and "0" turn discovery off; "true" and "1" are a
            // mistake HTCondor only logs (the value is the tool's
            // arguments, not a switch).
            let off = t.eq_ignore_ascii_case("false") || t == "0";
            let misused = t.eq_ignore_ascii_case("true") || t == "1";
            if !off && !misused {
                out.push(InventorySource::GpuDiscovery {
                    args: t.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// A quantity written in a `MACHINE_RESOURCE_<name>` value or an
/// inventory's `Detected<name>`: a number, an expression giving one
/// (`2*4`), or else a list of instance ids.
fn parse_quantity(text: &str) -> Result<f64, Vec<String>> {
    let t = text.trim();
    if let Ok(n) = t.parse::<f64>() {
        return Ok(n);
    }
    if let Ok(e) = classad::parse_expr(t) {
        if let Some(n) = classad::eval_expr(&e, None, None, &classad::Env::default()).as_number() {
            return Ok(n);
        }
    }
    Err(t
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect())
}

/// What an inventory program printed: an ad with `Detected<tag>` (a count
/// or a list of ids), optionally `Offline<tag>`, per-instance property ads
/// (nested ads named after the id, or carrying `id = "..."`), a `Common`
/// ad of properties every instance shares, and any other attributes (which
/// HTCondor publishes in the machine ads).
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    pub ad: ClassAd,
}

/// Inventory output that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryError {
    /// 1-based line of the output.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for InventoryError {}

impl Inventory {
    /// Reads the ad an inventory program prints, one `Name = value` per
    /// line, as `condor_gpu_discovery -properties` does:
    ///
    /// ```text
    /// DetectedGPUs="GPU-5368a050, GPU-5d2744da"
    /// Common=[ DriverVersion=11.40; MaxSupportedVersion=11040; ]
    /// GPU_5368a050=[ id="GPU-5368a050"; Capability=8.0; GlobalMemoryMb=40536; ]
    /// ```
    ///
    /// Blank lines and `#` comments are skipped; a line that is not an
    /// attribute is an error naming it (HTCondor would silently stop
    /// reading there).
    pub fn parse(text: &str) -> Result<Inventory, InventoryError> {
        let mut ad = ClassAd::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let (name, expr) = classad::reader::parse_old_attr(t).map_err(|e| InventoryError {
                line: i + 1,
                message: format!("not an attribute (`Name = value`): {e}"),
            })?;
            ad.insert(name.trim(), expr);
        }
        Ok(Inventory { ad })
    }
}

/// An id turned into an attribute name the way HTCondor does
/// (`GPU-90b2dfd1` -> `GPU_90b2dfd1`): every character that cannot be in
/// a name becomes `_`.
pub fn clean_attr_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The value of a string attribute of `ad`.
fn string_attr(ad: &ClassAd, name: &str) -> Option<String> {
    match classad::eval_expr(ad.get(name)?, Some(ad), None, &classad::Env::default()) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

impl MachineResources {
    /// The machine's resources from the host's readings and the
    /// configuration.
    pub fn from_config(
        config: &Config,
        readings: &HostReadings,
    ) -> Result<MachineResources, ResourceError> {
        let count_hyper = config.boolean("COUNT_HYPERTHREAD_CPUS")?.unwrap_or(true);
        let mut detected_cpus = if count_hyper {
            readings.hyperthread_cpus
        } else {
            readings.physical_cpus
        };
        if let Some(limit) = readings.cpus_limit {
            detected_cpus = detected_cpus.min(limit);
        }
        // NUM_CPUS defaults to $(DETECTED_CPUS_LIMIT); when the host's
        // macros do not define that, it is empty and the reading stands.
        let cpus = match config.integer("NUM_CPUS")? {
            Some(n) if n < 0 => {
                return Err(ResourceError {
                    param: "NUM_CPUS".into(),
                    message: format!("{n} CPUs: the number must not be negative"),
                })
            }
            Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
            None => detected_cpus,
        };
        // MEMORY = 0 means "not set", as in HTCondor.
        let memory = match config.integer("MEMORY")? {
            Some(m) if m > 0 => m,
            _ => readings.memory,
        };
        let reserved = config.integer("RESERVED_MEMORY")?.unwrap_or(0);
        let memory = (memory - reserved).max(0);
        // RESERVED_DISK is in MiB.
        let reserved_disk = config.integer("RESERVED_DISK")?.unwrap_or(0) * 1024;
        let disk = (readings.disk - reserved_disk).max(0);

        let mut machine = MachineResources {
            cpus,
            detected_cpus,
            memory,
            detected_memory: readings.memory,
            disk,
            swap: readings.swap.max(0),
            custom: Vec::new(),
            inventory_attrs: ClassAd::new(),
            warnings: Vec::new(),
        };
        machine.read_custom(config, readings)?;
        Ok(machine)
    }

    fn read_custom(
        &mut self,
        config: &Config,
        readings: &HostReadings,
    ) -> Result<(), ResourceError> {
        let mut found: Vec<CustomResource> = Vec::new();
        for name in machine_resource_params(config) {
            let tag = name[MACHINE_RESOURCE_.len()..].to_string();
            if let Some(inv_tag) = strip_prefix_ignore_case(&tag, "INVENTORY_") {
                if let Some(r) = self.read_inventory(config, inv_tag, readings)? {
                    found.push(r);
                }
                continue;
            }
            let Some(value) = config.get(&name)? else {
                continue;
            };
            let offline = offline_ids(config, &tag)?;
            found.push(resource_from_quantity(&tag, &value, &offline));
        }
        // HTCondor's default GPU discovery (no GPUs resource configured).
        let has_gpus = found.iter().any(|r| r.name.eq_ignore_ascii_case("GPUs"));
        if !has_gpus
            && inventory_sources(config)?
                .iter()
                .any(|s| matches!(s, InventorySource::GpuDiscovery { .. }))
        {
            if let Some(r) = self.read_inventory(config, "GPUs", readings)? {
                found.push(r);
            }
        }

        let allowed = config.list("MACHINE_RESOURCE_NAMES")?;
        for r in found {
            if !allowed.is_empty() && !allowed.iter().any(|a| a.eq_ignore_ascii_case(&r.name)) {
                self.warnings.push(format!(
                    "local machine resource {} is not in MACHINE_RESOURCE_NAMES, so it will have no effect",
                    r.name
                ));
                continue;
            }
            if RESERVED_NAMES
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&r.name))
            {
                return Err(ResourceError {
                    param: format!("MACHINE_RESOURCE_{}", r.name),
                    message: format!(
                        "'{}' is a reserved resource name (Cpus, Memory, Disk and Swap are the standard resources)",
                        r.name
                    ),
                });
            }
            if let Some(other) = self
                .custom
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(&r.name))
            {
                return Err(ResourceError {
                    param: format!("MACHINE_RESOURCE_{}", r.name),
                    message: format!(
                        "the resource {} is defined twice (also as {}, perhaps by an inventory)",
                        r.name, other.name
                    ),
                });
            }
            self.custom.push(r);
        }
        self.custom.sort_by_key(|r| r.name.to_ascii_lowercase());
        Ok(())
    }

    fn read_inventory(
        &mut self,
        config: &Config,
        tag: &str,
        readings: &HostReadings,
    ) -> Result<Option<CustomResource>, ResourceError> {
        let Some(inv) = readings
            .inventories
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(tag))
            .map(|(_, v)| v)
        else {
            // The daemon did not run it (or could not): no such resource.
            return Ok(None);
        };
        let mut ad = inv.ad.clone();
        let offline = match string_attr(&ad, &format!("Offline{tag}")) {
            Some(v) => parse_quantity(&v).err().unwrap_or_default(),
            None => offline_ids(config, tag)?,
        };
        let detected_name = format!("Detected{tag}");
        let mut r = match ad.get(&detected_name) {
            None => {
                self.warnings.push(format!(
                    "the inventory for {tag} has no {detected_name}: counting 0 {tag}"
                ));
                resource_from_quantity(tag, "0", &offline)
            }
            Some(e) => match classad::eval_expr(e, Some(&ad), None, &classad::Env::default()) {
                Value::Str(s) => resource_from_quantity(tag, &s, &offline),
                v => match v.as_number() {
                    Some(n) => resource_from_quantity(tag, &n.to_string(), &offline),
                    None => {
                        self.warnings.push(format!(
                            "{detected_name} in the inventory for {tag} is neither a count nor a list of ids: counting 0 {tag}"
                        ));
                        resource_from_quantity(tag, "0", &offline)
                    }
                },
            },
        };
        // Nested ads are per-instance properties: `Common` for all of
        // them, the others for the instance their `id` (or their name)
        // names. They do not go into the machine ad.
        let nested: Vec<(String, Arc<ClassAd>)> = ad
            .iter_inserted()
            .filter_map(|(n, e)| match e {
                Expr::Ad(a) => Some((n.as_str().to_string(), a.clone())),
                _ => None,
            })
            .collect();
        let all_ids: Vec<String> = r.ids.iter().chain(&r.offline).cloned().collect();
        for (name, props) in &nested {
            if name.eq_ignore_ascii_case("common") {
                for id in &all_ids {
                    r.properties.entry(id.clone()).or_default().update(props);
                }
                ad.remove(name);
            }
        }
        for (name, props) in &nested {
            if name.eq_ignore_ascii_case("common") {
                continue;
            }
            let id = string_attr(props, "id").unwrap_or_else(|| name.clone());
            if all_ids.contains(&id) {
                let entry = r.properties.entry(id).or_default();
                entry.update(props);
                entry.remove("id");
                ad.remove(name);
            }
        }
        // What remains goes into the machine ads; the resource's own
        // attributes are computed per slot.
        ad.remove(tag);
        ad.remove(&detected_name);
        ad.remove(&format!("Offline{tag}"));
        self.inventory_attrs.update(&ad);
        Ok(Some(r))
    }

    /// The custom resource `name` (any case).
    pub fn custom(&self, name: &str) -> Option<&CustomResource> {
        self.custom
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// The machine-wide attributes every slot ad carries: `TotalCpus`,
    /// `TotalMemory`, `DetectedCpus`, `DetectedMemory`,
    /// `TotalVirtualMemory`, `Total<name>` and `Detected<name>` for each
    /// custom resource (equal, as in HTCondor's slot ads: the usable
    /// count), `Offline<name>` where some are offline, `MachineResources`
    /// (the resource names), and what the inventories printed besides.
    pub fn machine_attrs(&self) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("TotalCpus", self.cpus as i64);
        ad.insert_value("TotalMemory", self.memory);
        ad.insert_value("DetectedCpus", self.detected_cpus as i64);
        ad.insert_value("DetectedMemory", self.detected_memory);
        ad.insert_value("TotalVirtualMemory", self.swap);
        let mut names = String::from("Cpus Memory Disk Swap");
        for r in &self.custom {
            ad.insert_value(&format!("Detected{}", r.name), number(r.count));
            ad.insert_value(&format!("Total{}", r.name), number(r.count));
            if !r.offline.is_empty() {
                ad.insert_value(&format!("Offline{}", r.name), r.offline.join(",").as_str());
            }
            names.push(' ');
            names.push_str(&r.name);
        }
        ad.insert_value("MachineResources", names.as_str());
        ad.update(&self.inventory_attrs);
        ad
    }
}

/// `OFFLINE_MACHINE_RESOURCE_<tag>`: ids taken out of use.
fn offline_ids(config: &Config, tag: &str) -> Result<Vec<String>, ResourceError> {
    let knob = format!("OFFLINE_MACHINE_RESOURCE_{tag}");
    Ok(match config.get(&knob)? {
        Some(v) => parse_quantity(&v).err().unwrap_or_default(),
        None => Vec::new(),
    })
}

/// A count as HTCondor publishes it: an integer when it is whole.
pub(crate) fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::Int(x as i64)
    } else {
        Value::Real(x)
    }
}

/// A resource from its quantity text: a count, or ids (less the offline
/// ones).
fn resource_from_quantity(tag: &str, value: &str, offline: &[String]) -> CustomResource {
    let (count, detected, ids, offline) = match parse_quantity(value) {
        Ok(n) => {
            let n = n.max(0.0);
            // Offline ids of a plain count only lower the count.
            (
                (n - offline.len() as f64).max(0.0),
                n,
                Vec::new(),
                offline.to_vec(),
            )
        }
        Err(ids) => {
            let detected = ids.len() as f64;
            let (off, on): (Vec<String>, Vec<String>) =
                ids.into_iter().partition(|id| offline.contains(id));
            (on.len() as f64, detected, on, off)
        }
    };
    CustomResource {
        name: tag.to_string(),
        count,
        detected,
        ids,
        offline,
        properties: BTreeMap::new(),
    }
}
