//! How the machine is divided into slots (the manual's "Dividing System
//! Resources in Multi-core Machines"): one slot per CPU by default,
//! `NUM_SLOTS` identical slots, or slot types (`SLOT_TYPE_<N>`,
//! `NUM_SLOTS_TYPE_<N>`, `SLOT_TYPE_<N>_PARTITIONABLE`) that give each slot
//! fractions, percentages, amounts or an automatic share of every resource,
//! custom resources and GPUs (by id, with constraints on their
//! properties) included.
//!
//! [`layout`] gives the slots, numbered `slot1`, `slot2`, ... in type order,
//! or an error that says what cannot be done: which resource the slot types
//! overcommit and by how much, which value does not parse, which GPU
//! constraint no free GPU meets.
//!
//! Where HTCondor's rules are arbitrary we keep them, so layouts come out
//! the same: CPUs are shared as real numbers (a third of 8 CPUs is 2.67,
//! published as `Cpus = 2`), memory shares are truncated to whole MiB,
//! automatic shares of custom resources are rounded up with the excess
//! going to the first slots, disk and swap are always fractions of what is
//! free. Unlike HTCondor, memory amounts may carry a unit (`mem=2G`), and
//! an overcommitted layout is reported with totals for every resource
//! rather than the first slot that did not fit.

use std::fmt;

use classad::ad::Refresher;
use classad::{ClassAd, Expr, Value};
use config::{Config, LookupError, ParamError};

use crate::resources::{clean_attr_name, CustomResource, MachineResources};

/// Slack for comparing shares: HTCondor lets a layout be over by up to a
/// millionth.
const EPSILON: f64 = 1e-6;

/// One slot of the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// `SlotID`: 1, 2, ... in type order.
    pub id: u32,
    /// `slot1`, ... (`STARTD_RESOURCE_PREFIX` or
    /// `SLOT_TYPE_<N>_NAME_PREFIX` instead of `slot`).
    pub name: String,
    /// The slot type (`SLOT_TYPE_<N>`); `None` for the evenly divided
    /// layout HTCondor calls type 0.
    pub slot_type: Option<u32>,
    /// `SLOT_TYPE_<N>_PARTITIONABLE`: dynamic slots are carved out of it.
    pub partitionable: bool,
    /// What the slot has.
    pub resources: SlotResources,
    /// The slot's share of the free disk and of the swap: both change over
    /// time, and the slot keeps its share ([`Slot::refresh`]).
    pub disk_fraction: f64,
    pub swap_fraction: f64,
}

impl Slot {
    /// The slot's disk and swap once the machine's free disk or swap (KiB)
    /// has changed: its share of each, as HTCondor recomputes them.
    pub fn refresh(&mut self, disk: i64, swap: i64) {
        self.resources.disk = disk_share(disk, self.disk_fraction);
        self.resources.swap = swap_share(swap, self.swap_fraction);
    }
}

/// What a slot has (or a job asks for): CPUs, memory (MiB), disk (KiB),
/// swap (KiB), and custom resources.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SlotResources {
    /// A real number: automatic and fractional shares need not be whole.
    pub cpus: f64,
    pub memory: i64,
    pub disk: i64,
    pub swap: i64,
    /// One entry per custom resource of the machine, in the machine's
    /// order (zero amounts included).
    pub custom: Vec<CustomShare>,
}

/// A slot's part of one custom resource.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CustomShare {
    /// The resource's name (`GPUs`).
    pub name: String,
    pub amount: f64,
    /// The instances the slot holds (`GPU-90b2dfd1`), for resources that
    /// have ids.
    pub ids: Vec<String>,
}

impl SlotResources {
    /// The CPUs as HTCondor publishes them in `Cpus`: a whole number, with
    /// a little slack for shares like 2.9999.
    pub fn whole_cpus(&self) -> i64 {
        (self.cpus + 0.1) as i64
    }

    /// The share of custom resource `name` (any case).
    pub fn custom(&self, name: &str) -> Option<&CustomShare> {
        self.custom
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Writes the slot's resource attributes into its ad: `Cpus`,
    /// `Memory`, `Disk`, `VirtualMemory`, `TotalSlotCpus`,
    /// `TotalSlotMemory`, `TotalSlotDisk` (what it was given: `provisioned`,
    /// which for a partitionable slot is more than what it has left), and
    /// for each custom resource `<name>`, `TotalSlot<name>`,
    /// `Assigned<name>` (its ids) and the assigned instances' properties:
    /// `<name>_<property>` for properties all of them share, and
    /// `<name>_<id>` a nested ad of each instance's properties with its
    /// `Id` (HTCondor's default nested form).
    pub fn publish(
        &self,
        provisioned: &SlotResources,
        machine: &MachineResources,
        w: &mut Refresher<'_>,
    ) {
        w.value("Cpus", self.whole_cpus());
        w.value("TotalSlotCpus", provisioned.whole_cpus());
        w.value("Memory", self.memory);
        w.value("TotalSlotMemory", provisioned.memory);
        w.value("Disk", self.disk);
        w.value("TotalSlotDisk", provisioned.disk);
        w.value("VirtualMemory", self.swap);
        for share in &self.custom {
            w.value(&share.name, share.amount.trunc() as i64);
            let total = provisioned.custom(&share.name).map_or(0.0, |c| c.amount);
            w.value(&format!("TotalSlot{}", share.name), total.trunc() as i64);
            if share.ids.is_empty() {
                continue;
            }
            w.value(
                &format!("Assigned{}", share.name),
                share.ids.join(",").as_str(),
            );
            if let Some(r) = machine.custom(&share.name) {
                publish_properties(&share.name, &share.ids, r, w.ad());
            }
        }
    }
}

/// `<name>_<property>` for the properties every assigned instance has
/// alike, and one nested ad per instance.
fn publish_properties(name: &str, ids: &[String], r: &CustomResource, ad: &mut ClassAd) {
    let props: Vec<(&String, &ClassAd)> = ids
        .iter()
        .filter_map(|id| r.properties.get(id).map(|p| (id, p)))
        .collect();
    let Some((_, first)) = props.first() else {
        return;
    };
    for (attr, expr) in first.iter_inserted() {
        let text = expr.to_string();
        let common = props[1..]
            .iter()
            .all(|(_, p)| p.get(attr.as_str()).is_some_and(|e| e.to_string() == text));
        if common {
            ad.insert(format!("{name}_{}", attr.as_str()).as_str(), expr.clone());
        }
    }
    for (id, p) in props {
        let mut nested = p.clone();
        nested.insert_value("Id", id.as_str());
        ad.insert(
            format!("{name}_{}", clean_attr_name(id)).as_str(),
            Expr::Ad(nested.into()),
        );
    }
}

/// The slots of the machine, and what is worth logging about them.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub slots: Vec<Slot>,
    pub warnings: Vec<String>,
}

/// A layout that cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutError {
    /// A parameter that could not be read (not a number, a broken macro).
    Param(String),
    /// A value HTCondor refuses: `SLOT_TYPE_0`, a share that does not
    /// parse, an absolute amount of disk, an unknown resource.
    Invalid { param: String, message: String },
    /// The explicit shares add up to more than the machine has.
    Overcommitted(Vec<Overcommit>),
    /// What is left for the automatic shares is too little for the slots
    /// that take them.
    AutoTooSmall { resource: String, message: String },
    /// A slot asks for instances of a resource (GPUs) that no unassigned
    /// instance can give.
    Unbindable { slot: String, message: String },
}

/// One overcommitted resource.
#[derive(Clone, Debug, PartialEq)]
pub struct Overcommit {
    /// `CPUs`, `memory`, `disk`, `swap` or the custom resource's name.
    pub resource: String,
    /// What the slot types ask for and what there is (in the resource's
    /// unit: CPUs, MiB, a fraction of the disk or swap, instances).
    pub asked: f64,
    pub available: f64,
    /// Who asks: (parameter, number of slots, amount each).
    pub by_type: Vec<(String, u32, f64)>,
}

impl fmt::Display for Overcommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (asked, available, over) = match self.resource.as_str() {
            "CPUs" => (
                format!("{} CPUs", num(self.asked)),
                format!("the machine has {}", num(self.available)),
                num(self.asked - self.available),
            ),
            "memory" => (
                format!("{} MiB of memory", num(self.asked)),
                format!("the machine has {} MiB", num(self.available)),
                format!("{} MiB", num(self.asked - self.available)),
            ),
            "disk" | "swap" => (
                format!("{}% of the {}", num(self.asked * 100.0), self.resource),
                "which is more than all of it".to_string(),
                format!("{} points", num((self.asked - self.available) * 100.0)),
            ),
            other => (
                format!("{} {other}", num(self.asked)),
                format!("the machine has {}", num(self.available)),
                num(self.asked - self.available),
            ),
        };
        write!(
            f,
            "slot types ask for {asked}, {available} ({over} too many: "
        )?;
        for (i, (param, n, each)) in self.by_type.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let each = match self.resource.as_str() {
                "disk" | "swap" => format!("{}%", num(each * 100.0)),
                _ => num(*each),
            };
            if *n == 1 {
                write!(f, "{param} gives {each} to its slot")?;
            } else {
                write!(f, "{param} gives {each} to each of {n} slots")?;
            }
        }
        f.write_str(")")
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Param(m) => f.write_str(m),
            LayoutError::Invalid { param, message } => write!(f, "{param}: {message}"),
            LayoutError::Overcommitted(list) => {
                for (i, o) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{o}")?;
                }
                Ok(())
            }
            LayoutError::AutoTooSmall { message, .. } => f.write_str(message),
            LayoutError::Unbindable { slot, message } => write!(f, "{slot}: {message}"),
        }
    }
}

impl std::error::Error for LayoutError {}

impl From<ParamError> for LayoutError {
    fn from(e: ParamError) -> LayoutError {
        LayoutError::Param(e.to_string())
    }
}

impl From<LookupError> for LayoutError {
    fn from(e: LookupError) -> LayoutError {
        LayoutError::Param(e.to_string())
    }
}

/// A number for a message: whole numbers without decimals, others with
/// at most two.
fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// How much of one resource a slot type asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Share {
    /// An even part of what the explicit shares leave.
    Auto,
    /// A fraction of the machine's total (`1/4`, `25%`).
    Fraction(f64),
    /// An amount (CPUs, MiB, instances).
    Amount(f64),
}

/// One slot type, read.
#[derive(Clone, Debug)]
struct TypeSpec {
    /// The type number; 0 for the evenly divided layout.
    ty: u32,
    /// The parameter that defines it, for messages.
    param: String,
    count: u32,
    partitionable: bool,
    cpus: Share,
    memory: Share,
    disk: Share,
    swap: Share,
    /// Aligned with the machine's custom resources: the share and the
    /// constraint on which instances (`GPUs = 2 : Capability >= 8.0`).
    custom: Vec<(Share, Option<Constraint>)>,
}

#[derive(Clone, Debug)]
struct Constraint {
    text: String,
    expr: Expr,
}

/// Whether `attr` is a leading part of `word`, ignoring case: HTCondor
/// accepts `c`, `cpu`, `Cpus` for cpus, `m`, `mem` for memory, and so on.
fn abbreviates(attr: &str, word: &str) -> bool {
    !attr.is_empty() && attr.len() <= word.len() && word[..attr.len()].eq_ignore_ascii_case(attr)
}

/// A number, with a unit for memory amounts (in MiB).
fn parse_amount(text: &str, memory: bool) -> Option<f64> {
    let t = text.trim();
    if let Ok(n) = t.parse::<f64>() {
        return n.is_finite().then_some(n);
    }
    if !memory {
        return None;
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "k" | "kb" | "kib" => 1.0 / 1024.0,
        "m" | "mb" | "mib" => 1.0,
        "g" | "gb" | "gib" => 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * scale)
}

fn parse_share(text: &str, memory: bool) -> Result<Share, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("auto") || t.eq_ignore_ascii_case("automatic") {
        return Ok(Share::Auto);
    }
    let bad =
        || {
            format!(
            "`{t}` is not a share: write a number{}, a percentage (25%), a fraction (1/4) or auto",
            if memory { " (MiB, or with a unit: 512M, 2G)" } else { "" }
        )
        };
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(p.is_finite() && p >= 0.0) {
            return Err(bad());
        }
        return Ok(Share::Fraction(p / 100.0));
    }
    if let Some((a, b)) = t.split_once('/') {
        let a: f64 = a.trim().parse().map_err(|_| bad())?;
        let b: f64 = b.trim().parse().map_err(|_| bad())?;
        if !(b > 0.0 && a >= 0.0 && a.is_finite() && b.is_finite()) {
            return Err(format!("`{t}`: a fraction needs a positive denominator"));
        }
        return Ok(Share::Fraction(a / b));
    }
    match parse_amount(t, memory) {
        Some(n) if n >= 0.0 => Ok(Share::Amount(n)),
        _ => Err(bad()),
    }
}

/// The items of a slot type's value. A value on several lines (`@=`
/// blocks) has one item per line, so that a constraint may contain
/// spaces and commas' neighbours; otherwise items are separated by commas
/// and blanks, and blanks around `=` are allowed (`cpus = 2, mem = 1G`).
fn split_items(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let pieces: Vec<&str> = if text.contains('\n') {
        text.lines().collect()
    } else {
        vec![text]
    };
    for piece in pieces {
        if piece.contains(':') {
            // A constraint: keep the line (or comma-separated part) whole.
            if text.contains('\n') {
                out.push(piece.trim().to_string());
            } else {
                for part in piece.split(',') {
                    out.push(part.trim().to_string());
                }
            }
            continue;
        }
        // Glue `name = value` together, then split on commas and blanks.
        let mut glued = String::new();
        let mut chars = piece.trim().chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_whitespace() {
                let mut rest = chars.clone();
                while rest.peek().is_some_and(|c| c.is_whitespace()) {
                    rest.next();
                }
                if rest.peek() == Some(&'=') || glued.ends_with('=') {
                    continue;
                }
            }
            glued.push(c);
            if c == '=' {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
        }
        out.extend(
            glued
                .split(|c: char| c == ',' || c.is_whitespace())
                .map(str::to_string),
        );
    }
    out.retain(|s| !s.is_empty());
    out
}

fn invalid(param: &str, message: impl Into<String>) -> LayoutError {
    LayoutError::Invalid {
        param: param.to_string(),
        message: message.into(),
    }
}

/// Reads one slot type's value (`None`: everything automatic).
fn parse_type(
    ty: u32,
    param: &str,
    text: Option<&str>,
    machine: &MachineResources,
    warnings: &mut Vec<String>,
) -> Result<TypeSpec, LayoutError> {
    let mut default = Share::Auto;
    let mut cpus = None;
    let mut memory = None;
    let mut disk = None;
    let mut swap = None;
    let mut custom: Vec<(Option<Share>, Option<Constraint>)> =
        vec![(None, None); machine.custom.len()];
    for item in text.map(split_items).unwrap_or_default() {
        let Some((attr, value)) = item.split_once('=') else {
            // A share for every resource not named.
            default = parse_share(&item, false).map_err(|m| invalid(param, m))?;
            let too_big = matches!(default, Share::Fraction(f) if f > 1.0 + EPSILON);
            if too_big || matches!(default, Share::Amount(_)) {
                return Err(invalid(
                    param,
                    format!(
                        "`{item}` is invalid: a share for all resources must be a percentage (like 25%), \
                         a fraction (like 1/4) or auto; to give amounts, name the resources (like c=1, r=25%, s=25%, d=25%)"
                    ),
                ));
            }
            continue;
        };
        let attr = attr.trim();
        let (value, constraint) = match value.split_once(':') {
            Some((v, c)) => (v.trim(), Some(c.trim())),
            None => (value.trim(), None),
        };
        if value.is_empty() {
            return Err(invalid(param, format!("`{item}`: no value for {attr}")));
        }
        if let Some(i) = machine
            .custom
            .iter()
            .position(|r| r.name.eq_ignore_ascii_case(attr))
        {
            let share =
                parse_share(value, false).map_err(|m| invalid(param, format!("{attr}: {m}")))?;
            let constraint = match constraint {
                Some(c) if !c.is_empty() => Some(Constraint {
                    text: c.to_string(),
                    expr: classad::parse_expr(c).map_err(|e| {
                        invalid(
                            param,
                            format!("the constraint on {attr} is not a ClassAd expression: {e}"),
                        )
                    })?,
                }),
                _ => None,
            };
            custom[i] = (Some(share), constraint);
            continue;
        }
        let is_cpus = abbreviates(attr, "cpus");
        let is_memory = abbreviates(attr, "ram") || abbreviates(attr, "memory");
        let is_swap = abbreviates(attr, "swap") || abbreviates(attr, "virtualmemory");
        let is_disk = abbreviates(attr, "disk");
        if constraint.is_some() && (is_cpus || is_memory || is_swap || is_disk) {
            return Err(invalid(
                param,
                format!("`{item}`: a constraint (after `:`) chooses instances of a custom resource; {attr} has none"),
            ));
        }
        let share =
            parse_share(value, is_memory).map_err(|m| invalid(param, format!("{attr}: {m}")))?;
        if is_cpus {
            cpus = Some(share);
        } else if is_memory {
            memory = Some(share);
        } else if is_swap || is_disk {
            let what = if is_swap { "swap" } else { "disk" };
            if let Share::Amount(_) = share {
                return Err(invalid(
                    param,
                    format!(
                        "`{item}`: give {what} as a percentage or fraction (it changes over time, so a slot keeps a share of it)"
                    ),
                ));
            }
            if is_swap {
                swap = Some(share);
            } else {
                disk = Some(share);
            }
        } else if let Share::Amount(n) = share {
            if n > 0.0 {
                let mut known = vec!["cpus", "memory", "disk", "swap"];
                known.extend(machine.custom.iter().map(|r| r.name.as_str()));
                return Err(invalid(
                    param,
                    format!(
                        "unknown resource `{attr}` in `{item}` (this machine has: {})",
                        known.join(", ")
                    ),
                ));
            }
        } else {
            // A share of a resource this machine lacks is fine: one
            // configuration can serve machines with and without GPUs.
            warnings.push(format!(
                "{param}: this machine has no resource `{attr}`, so `{item}` gives nothing"
            ));
        }
    }
    Ok(TypeSpec {
        ty,
        param: param.to_string(),
        count: 0,
        partitionable: false,
        cpus: cpus.unwrap_or(default),
        memory: memory.unwrap_or(default),
        disk: disk.unwrap_or(default),
        swap: swap.unwrap_or(default),
        custom: custom
            .into_iter()
            .map(|(s, c)| (s.unwrap_or(default), c))
            .collect(),
    })
}

/// A slot's explicit amounts (`None`: automatic).
#[derive(Clone, Debug)]
struct Want {
    spec: usize,
    cpus: Option<f64>,
    memory: Option<i64>,
    disk: Option<f64>,
    swap: Option<f64>,
    custom: Vec<Option<f64>>,
}

fn want(spec_index: usize, spec: &TypeSpec, machine: &MachineResources) -> Want {
    let cpus = match spec.cpus {
        Share::Auto => None,
        // HTCondor never gives a slot less than one CPU.
        Share::Fraction(f) => Some((f * machine.cpus as f64).max(1.0)),
        Share::Amount(n) => Some(n.max(1.0)),
    };
    let memory = match spec.memory {
        Share::Auto => None,
        Share::Fraction(f) => Some(((f * machine.memory as f64) as i64).max(1)),
        Share::Amount(n) => Some((n as i64).max(1)),
    };
    let fraction = |s: Share| match s {
        Share::Auto => None,
        Share::Fraction(f) | Share::Amount(f) => Some(f),
    };
    Want {
        spec: spec_index,
        cpus,
        memory,
        disk: fraction(spec.disk),
        swap: fraction(spec.swap),
        custom: spec
            .custom
            .iter()
            .zip(&machine.custom)
            .map(|((s, _), r)| match *s {
                Share::Auto => None,
                Share::Fraction(f) => Some(f * r.count),
                Share::Amount(n) => Some(n),
            })
            .collect(),
    }
}

fn disk_share(total: i64, fraction: f64) -> i64 {
    (total as f64 * fraction).ceil() as i64
}

fn swap_share(total: i64, fraction: f64) -> i64 {
    (total as f64 * fraction).floor() as i64
}

/// The machine's slots, as the configuration divides its resources.
pub fn layout(config: &Config, machine: &MachineResources) -> Result<Layout, LayoutError> {
    let mut warnings = Vec::new();
    // HTCondor reserves type 0 for the evenly divided layout.
    for name in ["SLOT_TYPE_0", "NUM_SLOTS_TYPE_0"] {
        if config.is_defined(name) {
            return Err(invalid(
                name,
                "type 0 is the evenly divided layout used when no NUM_SLOTS_TYPE_<N> is set; \
                 it cannot be defined (number slot types from 1)",
            ));
        }
    }
    let max_types = config.integer("MAX_SLOT_TYPES")?.unwrap_or(10).max(0) as u32;
    for def in config.defined() {
        let upper = def.name.to_ascii_uppercase();
        let n = upper
            .strip_prefix("SLOT_TYPE_")
            .or_else(|| upper.strip_prefix("NUM_SLOTS_TYPE_"))
            .and_then(|n| n.parse::<u32>().ok());
        if let Some(n) = n {
            if n > max_types {
                warnings.push(format!(
                    "{} is ignored: MAX_SLOT_TYPES is {max_types}",
                    def.name
                ));
            }
        }
    }

    let mut specs = Vec::new();
    for ty in 1..=max_types {
        let count_param = format!("NUM_SLOTS_TYPE_{ty}");
        let count = config.integer(&count_param)?.unwrap_or(0);
        if count < 0 {
            return Err(invalid(
                &count_param,
                format!("{count} slots: the number must not be negative"),
            ));
        }
        if count == 0 {
            continue;
        }
        let param = format!("SLOT_TYPE_{ty}");
        let text = config.get(&param)?;
        let mut spec = parse_type(ty, &param, text.as_deref(), machine, &mut warnings)?;
        spec.count = count as u32;
        spec.partitionable = config
            .boolean(&format!("SLOT_TYPE_{ty}_PARTITIONABLE"))?
            .unwrap_or(false);
        specs.push(spec);
    }
    if specs.is_empty() {
        // Evenly divided: NUM_SLOTS slots (one per CPU by default), each
        // with an automatic share of everything.
        let partitionable = config
            .boolean(&format!("SLOT_TYPE_{}_PARTITIONABLE", 0))?
            .unwrap_or(false);
        let default = if partitionable {
            1
        } else {
            machine.cpus as i64
        };
        let count = config.integer("NUM_SLOTS")?.unwrap_or(default);
        if count < 0 {
            return Err(invalid(
                "NUM_SLOTS",
                format!("{count} slots: the number must not be negative"),
            ));
        }
        if count > machine.cpus as i64 {
            return Err(LayoutError::AutoTooSmall {
                resource: "CPUs".into(),
                message: format!(
                    "NUM_SLOTS = {count} asks for more slots than the machine has CPUs ({}): every slot needs at least one CPU",
                    machine.cpus
                ),
            });
        }
        let mut spec = parse_type(0, "NUM_SLOTS", None, machine, &mut warnings)?;
        spec.count = count as u32;
        spec.partitionable = partitionable;
        specs.push(spec);
    }

    let mut wants = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        for _ in 0..spec.count {
            wants.push(want(i, spec, machine));
        }
    }
    check_overcommit(&specs, &wants, machine)?;
    let mut slots = auto_shares(config, &specs, &wants, machine)?;
    bind_ids(&specs, &wants, machine, &mut slots)?;
    Ok(Layout { slots, warnings })
}

/// The explicit shares, added up per resource, must fit in the machine.
fn check_overcommit(
    specs: &[TypeSpec],
    wants: &[Want],
    machine: &MachineResources,
) -> Result<(), LayoutError> {
    let mut over = Vec::new();
    let mut check = |resource: &str, available: f64, amount: &dyn Fn(&Want) -> Option<f64>| {
        let asked: f64 = wants.iter().filter_map(amount).sum();
        if asked > available + EPSILON {
            let by_type = specs
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let w = wants.iter().find(|w| w.spec == i)?;
                    amount(w).map(|each| (s.param.clone(), s.count, each))
                })
                .collect();
            over.push(Overcommit {
                resource: resource.to_string(),
                asked,
                available,
                by_type,
            });
        }
    };
    check("CPUs", machine.cpus as f64, &|w| w.cpus);
    check("memory", machine.memory as f64, &|w| {
        w.memory.map(|m| m as f64)
    });
    check("swap", 1.0, &|w| w.swap);
    check("disk", 1.0, &|w| w.disk);
    for (i, r) in machine.custom.iter().enumerate() {
        check(&r.name, r.count, &|w| w.custom[i]);
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(LayoutError::Overcommitted(over))
    }
}

/// Replaces automatic shares by what is left, divided evenly, and builds
/// the slots.
fn auto_shares(
    config: &Config,
    specs: &[TypeSpec],
    wants: &[Want],
    machine: &MachineResources,
) -> Result<Vec<Slot>, LayoutError> {
    let autos = |f: &dyn Fn(&Want) -> bool| wants.iter().filter(|w| f(w)).count();
    let who = |f: &dyn Fn(&Want) -> bool| {
        let mut params: Vec<&str> = Vec::new();
        for w in wants.iter().filter(|w| f(w)) {
            let p = specs[w.spec].param.as_str();
            if !params.contains(&p) {
                params.push(p);
            }
        }
        params.join(" and ")
    };

    let explicit_cpus: f64 = wants.iter().filter_map(|w| w.cpus).sum();
    let cpu_autos = autos(&|w| w.cpus.is_none());
    let cpus_left = machine.cpus as f64 - explicit_cpus;
    let auto_cpus = if cpu_autos > 0 {
        let each = cpus_left / cpu_autos as f64;
        if each < 1.0 - EPSILON {
            return Err(LayoutError::AutoTooSmall {
                resource: "CPUs".into(),
                message: format!(
                    "{} of the machine's {} CPUs are left for the {cpu_autos} slots with an automatic CPU share ({}): \
                     {} each, but every slot needs at least one CPU",
                    num(cpus_left.max(0.0)),
                    machine.cpus,
                    who(&|w| w.cpus.is_none()),
                    num(each.max(0.0)),
                ),
            });
        }
        each
    } else {
        0.0
    };

    let explicit_mem: i64 = wants.iter().filter_map(|w| w.memory).sum();
    let mem_autos = autos(&|w| w.memory.is_none()) as i64;
    let auto_mem = if mem_autos > 0 {
        let each = (machine.memory - explicit_mem) / mem_autos;
        if each < 1 {
            return Err(LayoutError::AutoTooSmall {
                resource: "memory".into(),
                message: format!(
                    "{} MiB of memory are left for {mem_autos} slots with an automatic share ({}): less than 1 MiB each",
                    (machine.memory - explicit_mem).max(0),
                    who(&|w| w.memory.is_none()),
                ),
            });
        }
        each
    } else {
        0
    };

    let fraction_auto = |what: &str,
                         get: &dyn Fn(&Want) -> Option<f64>|
     -> Result<f64, LayoutError> {
        let n = wants.iter().filter(|w| get(w).is_none()).count();
        if n == 0 {
            return Ok(0.0);
        }
        let left = 1.0 - wants.iter().filter_map(get).sum::<f64>();
        let each = left / n as f64;
        if each <= EPSILON {
            return Err(LayoutError::AutoTooSmall {
                resource: what.into(),
                message: format!(
                    "the explicit {what} shares take all of the {what}, leaving nothing for {n} slots with an automatic share ({})",
                    who(&|w| get(w).is_none())
                ),
            });
        }
        Ok(each)
    };
    let auto_swap = fraction_auto("swap", &|w| w.swap)?;
    let auto_disk = fraction_auto("disk", &|w| w.disk)?;

    // Custom resources: whole numbers, rounded up, the excess to the
    // first slots; nothing when less than one is left.
    let mut custom_left: Vec<f64> = machine
        .custom
        .iter()
        .enumerate()
        .map(|(i, r)| r.count - wants.iter().filter_map(|w| w.custom[i]).sum::<f64>())
        .collect();
    let initially_left = custom_left.clone();
    let mut custom_autos: Vec<usize> = (0..machine.custom.len())
        .map(|i| wants.iter().filter(|w| w.custom[i].is_none()).count())
        .collect();

    let prefix = config.get("STARTD_RESOURCE_PREFIX")?;
    let mut slots = Vec::with_capacity(wants.len());
    for (n, w) in wants.iter().enumerate() {
        let spec = &specs[w.spec];
        let id = n as u32 + 1;
        let mut custom = Vec::with_capacity(machine.custom.len());
        for (i, r) in machine.custom.iter().enumerate() {
            let amount = match w.custom[i] {
                Some(a) => a,
                None => {
                    let a = if initially_left[i] < 1.0 {
                        0.0
                    } else {
                        (custom_left[i] / custom_autos[i] as f64).ceil().max(0.0)
                    };
                    custom_left[i] -= a;
                    custom_autos[i] -= 1;
                    a
                }
            };
            custom.push(CustomShare {
                name: r.name.clone(),
                amount,
                ids: Vec::new(),
            });
        }
        let disk_fraction = w.disk.unwrap_or(auto_disk);
        let swap_fraction = w.swap.unwrap_or(auto_swap);
        let type_prefix = config.get(&format!("SLOT_TYPE_{}_NAME_PREFIX", spec.ty))?;
        let name_prefix = type_prefix
            .or_else(|| prefix.clone())
            .unwrap_or_else(|| "slot".to_string());
        slots.push(Slot {
            id,
            name: format!("{name_prefix}{id}"),
            slot_type: (spec.ty > 0).then_some(spec.ty),
            partitionable: spec.partitionable,
            resources: SlotResources {
                cpus: w.cpus.unwrap_or(auto_cpus),
                memory: w.memory.unwrap_or(auto_mem),
                disk: disk_share(machine.disk, disk_fraction),
                swap: swap_share(machine.swap, swap_fraction),
                custom,
            },
            disk_fraction,
            swap_fraction,
        });
    }
    Ok(slots)
}

/// Whether instance `index` (id `id`) of resource `r` meets a
/// constraint: a literal string names an id (any case), a literal integer
/// an index among the resource's instances; anything else is evaluated
/// against the instance's properties, as MY when a slot type's constraint
/// is checked (`job` is `None`), as TARGET with the job as MY when a job's
/// `Require<name>` is (so the job's own attributes are found too).
pub(crate) fn instance_matches(
    r: &CustomResource,
    index: usize,
    id: &str,
    constraint: &Expr,
    job: Option<&ClassAd>,
) -> bool {
    match literal(constraint) {
        Some(Value::Str(s)) => return s.eq_ignore_ascii_case(id),
        Some(Value::Int(i)) => return *i == index as i64,
        _ => {}
    }
    let empty = ClassAd::new();
    let props = r.properties.get(id).unwrap_or(&empty);
    let env = classad::Env::default();
    match job {
        None => classad::eval_expr(constraint, Some(props), None, &env).is_true(),
        Some(job) => classad::eval_expr(constraint, Some(job), Some(props), &env).is_true(),
    }
}

fn literal(e: &Expr) -> Option<&Value> {
    match e {
        Expr::Lit(v) => Some(v),
        Expr::Paren(inner) => literal(inner),
        _ => None,
    }
}

/// Gives each slot the instances (GPU ids) its share of a resource with
/// ids amounts to, in slot order, each taking the first free instances
/// that meet its type's constraint.
fn bind_ids(
    specs: &[TypeSpec],
    wants: &[Want],
    machine: &MachineResources,
    slots: &mut [Slot],
) -> Result<(), LayoutError> {
    for (i, r) in machine.custom.iter().enumerate() {
        if !r.has_ids() {
            continue;
        }
        let mut owner: Vec<Option<u32>> = vec![None; r.ids.len()];
        for (slot, w) in slots.iter_mut().zip(wants) {
            let spec = &specs[w.spec];
            let constraint = spec.custom[i].1.as_ref();
            let wanted = slot.resources.custom[i].amount.trunc() as usize;
            let mut got = Vec::new();
            for (index, id) in r.ids.iter().enumerate() {
                if got.len() == wanted {
                    break;
                }
                if owner[index].is_some() {
                    continue;
                }
                if constraint.is_some_and(|c| !instance_matches(r, index, id, &c.expr, None)) {
                    continue;
                }
                owner[index] = Some(slot.id);
                got.push(id.clone());
            }
            if got.len() < wanted {
                // Every unassigned instance, those it took included.
                let unassigned: Vec<&str> = r
                    .ids
                    .iter()
                    .zip(&owner)
                    .filter(|(id, o)| o.is_none() || got.contains(id))
                    .map(|(id, _)| id.as_str())
                    .collect();
                let matching = match constraint {
                    Some(c) => format!(
                        "; of the unassigned {} ({}), {} match `{}`",
                        r.name,
                        unassigned.join(", "),
                        got.len(),
                        c.text
                    ),
                    None => format!(
                        "; {} unassigned {} left ({})",
                        unassigned.len(),
                        r.name,
                        unassigned.join(", ")
                    ),
                };
                return Err(LayoutError::Unbindable {
                    slot: format!("{} ({})", slot.name, spec.param),
                    message: format!("asks for {wanted} {}{matching}", r.name),
                });
            }
            slot.resources.custom[i].ids = got;
        }
    }
    Ok(())
}

/// The attributes that tell what kind of slot it is, as the manual lists
/// them: `PartitionableSlot = True` and `SlotType = "Partitionable"` for a
/// partitionable slot, `SlotType = "Static"` for the others (dynamic slots
/// get theirs from [`crate::carve::DynamicSlot::kind_attrs`]).
pub fn kind_attrs(slot: &Slot, ad: &mut ClassAd) {
    if slot.partitionable {
        ad.insert_value("PartitionableSlot", true);
        ad.insert_value("SlotType", "Partitionable");
    } else {
        ad.insert_value("SlotType", "Static");
    }
}
