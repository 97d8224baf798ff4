//! Partitionable slots and the dynamic slots carved out of them (the
//! manual's "Dynamic Provisioning" and "Defaults for Partitionable Slot
//! Sizes"): how big a dynamic slot a job gets, whether it fits in what the
//! partitionable slot has left, and giving the resources back when the
//! dynamic slot goes away.
//!
//! Sizing follows the startd: the job's `RequestCpus`, `RequestMemory`,
//! `RequestDisk`, `RequestVirtualMemory` and `Request<name>` (a schedd's
//! `_condor_Request*` first), after `MODIFY_REQUEST_EXPR_REQUEST*` rounded
//! them up; the rounded request is used only while the partitionable
//! slot's `Requirements` still accept the job, unless
//! `MUST_MODIFY_REQUEST_EXPRS` says to insist. A job without requests gets
//! `JOB_DEFAULT_REQUEST*`, as `condor_submit` would have given it (the
//! HTCondor startd instead assumes one CPU and refuses a job without
//! memory or disk requests).
//!
//! Under a consumption policy (`CONSUMPTION_POLICY`, the manual's
//! "Consumption policies"), the partitionable slot publishes a
//! `Consumption<Resource>` expression for each resource it divides, the
//! negotiator matches it to several jobs in one cycle by them, and the
//! dynamic slot gets exactly what they give for the job (the roundings of
//! `MODIFY_REQUEST_EXPR_*` do not apply).
//!
//! Dynamic slots are numbered from 1 within their parent (`slot1_1`,
//! `slot1_2`), each taking the lowest number not in use, so a number is
//! reused once its slot is gone, as HTCondor does. A dynamic slot gets
//! exactly what was asked (the manual's example: 10240 KiB of disk leaves
//! the partitionable slot `BIG-10240`); HTCondor's startd adds a little
//! slack to the disk, which we do not.

use std::collections::BTreeMap;
use std::fmt;

use classad::{ClassAd, Env, Expr, Value};
use config::Config;

use crate::layout::{instance_matches, Slot, SlotResources};
use crate::resources::MachineResources;

/// Slack when comparing CPUs (which may be fractional).
const EPSILON: f64 = 1e-6;

/// What a job gets in a dynamic slot.
#[derive(Clone, Debug)]
pub struct Request {
    pub cpus: f64,
    /// MiB.
    pub memory: i64,
    /// KiB.
    pub disk: i64,
    /// KiB, when the job asks (`RequestVirtualMemory`); otherwise the
    /// dynamic slot shares the partitionable slot's swap.
    pub swap: Option<i64>,
    /// Custom resources the job asks for (zero requests left out).
    pub custom: Vec<CustomRequest>,
    /// Whether the `MODIFY_REQUEST_EXPR_*` roundings were kept.
    pub modified: bool,
    /// The job ad as sized: defaults filled in, roundings applied if
    /// kept. Constraints (`Require<name>`) are evaluated against it.
    pub job: ClassAd,
}

/// A job's request for a custom resource.
#[derive(Clone, Debug)]
pub struct CustomRequest {
    pub name: String,
    pub amount: f64,
    /// `Require<name>`: which instances will do (`Capability >= 8.0`).
    pub constraint: Option<Expr>,
}

/// A partitionable slot: what it was given, what it has left, and the
/// dynamic slots carved from it.
#[derive(Clone, Debug)]
pub struct Partitionable {
    /// The slot's `SlotID`, name and type.
    pub id: u32,
    pub name: String,
    pub slot_type: Option<u32>,
    /// What the layout gave it (`TotalSlotCpus`, ...).
    pub provisioned: SlotResources,
    /// What is left for new dynamic slots (`Cpus`, `Memory`, ...).
    pub free: SlotResources,
    /// The consumption policy (`CONSUMPTION_POLICY`): for each resource,
    /// the `CONSUMPTION_<resource>` expression giving what a job takes.
    pub consumption: Option<Vec<(String, Expr)>>,
    children: BTreeMap<u32, Child>,
}

#[derive(Clone, Debug)]
struct Child {
    resources: SlotResources,
    /// Whether the child's swap was taken from the parent (it asked for
    /// some) or is shared with it.
    swap_taken: bool,
}

/// A dynamic slot, carved for one job.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicSlot {
    /// The partitionable slot's `SlotID`; the dynamic slot shares it.
    pub parent_id: u32,
    /// Its number within the parent (the `1` of `slot1_1`).
    pub sub_id: u32,
    /// `slot1_1`.
    pub name: String,
    pub resources: SlotResources,
}

impl DynamicSlot {
    /// `DynamicSlot = True` and `SlotType = "Dynamic"`, as the manual
    /// lists them.
    pub fn kind_attrs(&self, ad: &mut ClassAd) {
        ad.insert_value("DynamicSlot", true);
        ad.insert_value("SlotType", "Dynamic");
    }
}

/// The name of dynamic slot `sub_id` of the partitionable slot named
/// `parent` (`slot1`, 2 -> `slot1_2`).
pub fn dynamic_slot_name(parent: &str, sub_id: u32) -> String {
    format!("{parent}_{sub_id}")
}

/// Why no dynamic slot can be made for a job.
#[derive(Clone, Debug, PartialEq)]
pub enum CarveError {
    /// A parameter could not be read.
    Param(String),
    /// The partitionable slot's `Requirements` do not accept the job.
    NotAccepted { slot: String, modified: bool },
    /// The job does not say how much it needs, and there is no default.
    NoRequest { slot: String, attr: String },
    /// A consumption policy's `CONSUMPTION_<resource>` gives no amount of
    /// zero or more for the job.
    Consumption {
        slot: String,
        resource: String,
        value: String,
    },
    /// The job asks for more than the partitionable slot has left.
    DoesNotFit {
        slot: String,
        shortfalls: Vec<String>,
    },
}

impl fmt::Display for CarveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CarveError::Param(m) => f.write_str(m),
            CarveError::NotAccepted { slot, modified } => write!(
                f,
                "{slot}: the partitionable slot's Requirements do not accept the job{}",
                if *modified {
                    " with its requests rounded by MODIFY_REQUEST_EXPR_* (MUST_MODIFY_REQUEST_EXPRS is true)"
                } else {
                    ""
                }
            ),
            CarveError::NoRequest { slot, attr } => write!(
                f,
                "{slot}: the job has no {attr} and JOB_DEFAULT_{} gives none",
                attr.to_ascii_uppercase()
            ),
            CarveError::Consumption {
                slot,
                resource,
                value,
            } => write!(
                f,
                "{slot}: CONSUMPTION_{} is {value} for the job, not an amount of zero or more",
                resource.to_ascii_uppercase()
            ),
            CarveError::DoesNotFit { slot, shortfalls } => {
                write!(
                    f,
                    "the job does not fit in what {slot} has left: {}",
                    shortfalls.join("; ")
                )
            }
        }
    }
}

impl std::error::Error for CarveError {}

impl From<config::ParamError> for CarveError {
    fn from(e: config::ParamError) -> CarveError {
        CarveError::Param(e.to_string())
    }
}

impl From<config::LookupError> for CarveError {
    fn from(e: config::LookupError) -> CarveError {
        CarveError::Param(e.to_string())
    }
}

/// Evaluates `name` of `my` against `target`.
fn eval_attr(my: &ClassAd, target: &ClassAd, name: &str, env: &Env) -> Option<Value> {
    let e = my.get(name)?;
    Some(classad::eval_expr(e, Some(my), Some(target), env))
}

/// An integer as HTCondor's `EvalInteger` reads one: reals are truncated,
/// booleans are 0 or 1.
fn as_integer(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(r) if r.is_finite() => Some(r.trunc() as i64),
        Value::Bool(b) => Some(*b as i64),
        _ => None,
    }
}

/// A request attribute, the schedd's `_condor_<attr>` first.
fn request_value(job: &ClassAd, slot_ad: &ClassAd, attr: &str, env: &Env) -> Option<Value> {
    let schedd = format!("_condor_{attr}");
    for name in [schedd.as_str(), attr] {
        if let Some(v) = eval_attr(job, slot_ad, name, env) {
            if v.as_number().is_some() {
                return Some(v);
            }
        }
    }
    None
}

/// Whether `slot_ad`'s `Requirements` accept `job` (a slot ad without
/// Requirements accepts everything).
fn accepts(slot_ad: &ClassAd, job: &ClassAd, env: &Env) -> bool {
    match slot_ad.get("Requirements") {
        None => true,
        Some(e) => classad::eval_expr(e, Some(slot_ad), Some(job), env).as_bool() == Some(true),
    }
}

fn num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.2}")
    }
}

impl Partitionable {
    /// The partitionable slot a layout made, with nothing carved yet.
    pub fn new(slot: &Slot) -> Partitionable {
        Partitionable {
            id: slot.id,
            name: slot.name.clone(),
            slot_type: slot.slot_type,
            provisioned: slot.resources.clone(),
            free: slot.resources.clone(),
            consumption: None,
            children: BTreeMap::new(),
        }
    }

    /// Reads the slot's consumption policy. With `CONSUMPTION_POLICY`
    /// true, every resource it divides (Cpus, Memory, Disk and each custom
    /// resource) gets its `CONSUMPTION_<resource>` (slot type first), a
    /// custom resource without one taking what the job requests.
    pub fn read_consumption(&mut self, config: &Config) -> Result<(), CarveError> {
        let get = |name: &str| config.get_for_slot(self.id, self.slot_type, name);
        let on = match get("CONSUMPTION_POLICY")? {
            Some(t) => config::parse_bool(&t).ok_or_else(|| {
                CarveError::Param(format!("CONSUMPTION_POLICY: `{t}` is not true or false"))
            })?,
            None => false,
        };
        if !on {
            self.consumption = None;
            return Ok(());
        }
        let mut names: Vec<String> = ["Cpus", "Memory", "Disk"].map(String::from).to_vec();
        names.extend(self.provisioned.custom.iter().map(|c| c.name.clone()));
        let mut policy = Vec::with_capacity(names.len());
        for name in names {
            let knob = format!("CONSUMPTION_{}", name.to_ascii_uppercase());
            let text = get(&knob)?.unwrap_or_else(|| {
                format!("ifThenElse(target.Request{name} =?= undefined, 0, target.Request{name})")
            });
            let e = classad::parse_expr(&text).map_err(|e| {
                CarveError::Param(format!("{knob}: `{text}` is not a ClassAd expression: {e}"))
            })?;
            policy.push((name, e));
        }
        self.consumption = Some(policy);
        Ok(())
    }

    /// Under a consumption policy, the job with each `Request<resource>`
    /// replaced by what the policy says it takes (MY the partitionable
    /// slot, TARGET the job; a request the job lacks reads as 0), as
    /// HTCondor's startd sizes the dynamic slot.
    fn consume(
        &self,
        policy: &[(String, Expr)],
        job: &ClassAd,
        slot_ad: &ClassAd,
        env: &Env,
    ) -> Result<ClassAd, CarveError> {
        let mut target = job.clone();
        for (name, _) in policy {
            let attr = format!("Request{name}");
            if !target.contains(&attr) {
                target.insert_value(&attr, 0i64);
            }
        }
        let mut out = job.clone();
        for (name, e) in policy {
            let v = classad::eval_expr(e, Some(slot_ad), Some(&target), env);
            match v.as_number() {
                Some(x) if x >= 0.0 => {
                    let attr = format!("Request{name}");
                    if x.fract() == 0.0 {
                        out.insert_value(&attr, x as i64);
                    } else {
                        out.insert_value(&attr, x);
                    }
                    // The schedd's copies would otherwise win.
                    let schedd = format!("_condor_{attr}");
                    if out.contains(&schedd) {
                        out.remove(&schedd);
                    }
                }
                _ => {
                    return Err(CarveError::Consumption {
                        slot: self.name.clone(),
                        resource: name.clone(),
                        value: v.to_string(),
                    })
                }
            }
        }
        Ok(out)
    }

    /// The dynamic slots carved and not yet released, by number.
    pub fn children(&self) -> impl Iterator<Item = (u32, &SlotResources)> {
        self.children.iter().map(|(id, c)| (*id, &c.resources))
    }

    /// The number the next dynamic slot will get: the lowest not in use.
    pub fn next_sub_id(&self) -> u32 {
        (1..)
            .find(|n| !self.children.contains_key(n))
            .unwrap_or(u32::MAX)
    }

    /// How big a dynamic slot `job` gets from this slot, whose current ad
    /// is `slot_ad` (its `Requirements` decide whether rounded requests
    /// are kept; the rounding expressions see it as TARGET, the job as
    /// MY).
    pub fn request(
        &self,
        config: &Config,
        job: &ClassAd,
        slot_ad: &ClassAd,
        now: i64,
    ) -> Result<Request, CarveError> {
        let env = Env::at(now);
        // What condor_submit would have put in a job that states nothing.
        let mut job = job.clone();
        let defaults = [
            ("RequestCpus", config.expression("JOB_DEFAULT_REQUESTCPUS")?),
            (
                "RequestMemory",
                config.expression("JOB_DEFAULT_REQUESTMEMORY")?,
            ),
            ("RequestDisk", config.expression("JOB_DEFAULT_REQUESTDISK")?),
        ];
        for (attr, default) in defaults {
            if !job.contains(attr) {
                if let Some(e) = default {
                    job.insert(attr, e);
                }
            }
        }

        if let Some(policy) = &self.consumption {
            // The consumption policy decides the sizes; the
            // MODIFY_REQUEST_EXPR_* roundings do not apply.
            let consumed = self.consume(policy, &job, slot_ad, &env)?;
            if !accepts(slot_ad, &consumed, &env) {
                return Err(CarveError::NotAccepted {
                    slot: self.name.clone(),
                    modified: false,
                });
            }
            return self.sized(consumed, slot_ad, &env, false);
        }
        let mut modified = job.clone();
        let knobs = [
            ("RequestCpus", "MODIFY_REQUEST_EXPR_REQUESTCPUS"),
            ("RequestDisk", "MODIFY_REQUEST_EXPR_REQUESTDISK"),
            ("RequestMemory", "MODIFY_REQUEST_EXPR_REQUESTMEMORY"),
        ];
        for (attr, knob) in knobs {
            let Some(text) = config.get_for_slot(self.id, self.slot_type, knob)? else {
                continue;
            };
            let Ok(e) = classad::parse_expr(&text) else {
                continue;
            };
            // Only an integer result counts, as in HTCondor.
            if let Value::Int(v) = classad::eval_expr(&e, Some(&modified), Some(slot_ad), &env) {
                modified.insert_value(attr, v);
            }
        }
        let must = config
            .boolean("MUST_MODIFY_REQUEST_EXPRS")?
            .unwrap_or(false);
        let (job, was_modified) = if accepts(slot_ad, &modified, &env) {
            (modified, true)
        } else if must {
            return Err(CarveError::NotAccepted {
                slot: self.name.clone(),
                modified: true,
            });
        } else if accepts(slot_ad, &job, &env) {
            (job, false)
        } else {
            return Err(CarveError::NotAccepted {
                slot: self.name.clone(),
                modified: false,
            });
        };

        self.sized(job, slot_ad, &env, was_modified)
    }

    /// The dynamic slot's size from the job's (rounded or consumed)
    /// requests.
    fn sized(
        &self,
        job: ClassAd,
        slot_ad: &ClassAd,
        env: &Env,
        was_modified: bool,
    ) -> Result<Request, CarveError> {
        let env = env.clone();
        let cpus = request_value(&job, slot_ad, "RequestCpus", &env)
            .and_then(|v| as_integer(&v))
            .unwrap_or(1);
        let required = |attr: &str| {
            request_value(&job, slot_ad, attr, &env)
                .and_then(|v| as_integer(&v))
                .ok_or_else(|| CarveError::NoRequest {
                    slot: self.name.clone(),
                    attr: attr.to_string(),
                })
        };
        let memory = required("RequestMemory")?;
        let disk = required("RequestDisk")?;
        let swap =
            request_value(&job, slot_ad, "RequestVirtualMemory", &env).and_then(|v| as_integer(&v));
        let mut custom = Vec::new();
        for share in &self.provisioned.custom {
            let attr = format!("Request{}", share.name);
            let amount = eval_attr(&job, slot_ad, &attr, &env)
                .and_then(|v| v.as_number())
                .unwrap_or(0.0);
            if amount > 0.0 {
                custom.push(CustomRequest {
                    name: share.name.clone(),
                    amount,
                    constraint: job.get(&format!("Require{}", share.name)).cloned(),
                });
            }
        }
        Ok(Request {
            cpus: (cpus as f64).max(1.0),
            memory: memory.max(1),
            disk: disk.max(0),
            swap: swap.map(|s| s.max(0)),
            custom,
            modified: was_modified,
            job,
        })
    }

    /// The free instances of custom resource `name` that meet a request's
    /// constraint, in the machine's order.
    fn matching_ids(
        &self,
        machine: &MachineResources,
        req: &Request,
        c: &CustomRequest,
    ) -> Vec<String> {
        let Some(free) = self.free.custom(&c.name) else {
            return Vec::new();
        };
        let Some(r) = machine.custom(&c.name) else {
            return free.ids.clone();
        };
        free.ids
            .iter()
            .filter(|id| match &c.constraint {
                None => true,
                Some(e) => {
                    let index = r.ids.iter().position(|x| x == *id).unwrap_or(usize::MAX);
                    instance_matches(r, index, id, e, Some(&req.job))
                }
            })
            .cloned()
            .collect()
    }

    /// Whether the request fits in what the slot has left; if not, what
    /// is short, resource by resource.
    pub fn fits(&self, machine: &MachineResources, req: &Request) -> Result<(), CarveError> {
        let mut short = Vec::new();
        if req.cpus > self.free.cpus + EPSILON {
            short.push(format!(
                "Cpus: asks for {}, {} left",
                num(req.cpus),
                num(self.free.cpus)
            ));
        }
        if req.memory > self.free.memory {
            short.push(format!(
                "Memory: asks for {} MiB, {} MiB left",
                req.memory, self.free.memory
            ));
        }
        if req.disk > self.free.disk {
            short.push(format!(
                "Disk: asks for {} KiB, {} KiB left",
                req.disk, self.free.disk
            ));
        }
        if let Some(swap) = req.swap {
            if swap > self.free.swap {
                short.push(format!(
                    "VirtualMemory: asks for {swap} KiB, {} KiB left",
                    self.free.swap
                ));
            }
        }
        for c in &req.custom {
            let left = self.free.custom(&c.name).map_or(0.0, |s| s.amount);
            if c.amount > left + EPSILON {
                short.push(format!(
                    "{}: asks for {}, {} left",
                    c.name,
                    num(c.amount),
                    num(left)
                ));
                continue;
            }
            let has_ids = machine.custom(&c.name).is_some_and(|r| r.has_ids());
            if has_ids && c.constraint.is_some() {
                let matching = self.matching_ids(machine, req, c).len();
                let wanted = c.amount.trunc() as usize;
                if matching < wanted {
                    let text = c
                        .constraint
                        .as_ref()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    short.push(format!(
                        "{}: asks for {wanted} matching `{text}`, {matching} of the {} left match",
                        c.name,
                        num(left)
                    ));
                }
            }
        }
        if short.is_empty() {
            Ok(())
        } else {
            Err(CarveError::DoesNotFit {
                slot: self.name.clone(),
                shortfalls: short,
            })
        }
    }

    /// Carves a dynamic slot for the request, taking its resources (and
    /// the first free instances that meet its constraints) from this slot.
    pub fn carve(
        &mut self,
        machine: &MachineResources,
        req: &Request,
    ) -> Result<DynamicSlot, CarveError> {
        self.fits(machine, req)?;
        let sub_id = self.next_sub_id();
        let mut resources = SlotResources {
            cpus: req.cpus,
            memory: req.memory,
            disk: req.disk,
            swap: req.swap.unwrap_or(self.free.swap),
            custom: Vec::new(),
        };
        for share in &self.free.custom {
            let mut mine = share.clone();
            mine.amount = 0.0;
            mine.ids.clear();
            if let Some(c) = req
                .custom
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(&share.name))
            {
                mine.amount = c.amount;
                if !share.ids.is_empty() {
                    let ids = self.matching_ids(machine, req, c);
                    mine.ids = ids.into_iter().take(c.amount.trunc() as usize).collect();
                }
            }
            resources.custom.push(mine);
        }

        self.free.cpus -= resources.cpus;
        self.free.memory -= resources.memory;
        self.free.disk -= resources.disk;
        if req.swap.is_some() {
            self.free.swap -= resources.swap;
        }
        for (free, mine) in self.free.custom.iter_mut().zip(&resources.custom) {
            free.amount -= mine.amount;
            free.ids.retain(|id| !mine.ids.contains(id));
        }
        self.children.insert(
            sub_id,
            Child {
                resources: resources.clone(),
                swap_taken: req.swap.is_some(),
            },
        );
        Ok(DynamicSlot {
            parent_id: self.id,
            sub_id,
            name: dynamic_slot_name(&self.name, sub_id),
            resources,
        })
    }

    /// The dynamic slot `sub_id` has gone away: its resources (and its
    /// number) return to this slot. `None` if there is no such slot.
    pub fn release(&mut self, sub_id: u32) -> Option<SlotResources> {
        let child = self.children.remove(&sub_id)?;
        let r = &child.resources;
        self.free.cpus += r.cpus;
        self.free.memory += r.memory;
        self.free.disk += r.disk;
        if child.swap_taken {
            self.free.swap += r.swap;
        }
        for (i, free) in self.free.custom.iter_mut().enumerate() {
            if let Some(mine) = r.custom.iter().find(|c| c.name == free.name) {
                free.amount += mine.amount;
            }
            // Free ids in the order the slot was given them.
            let taken: Vec<&String> = self
                .children
                .values()
                .flat_map(|c| c.resources.custom.iter().filter(|s| s.name == free.name))
                .flat_map(|s| &s.ids)
                .collect();
            free.ids = self.provisioned.custom[i]
                .ids
                .iter()
                .filter(|id| !taken.contains(id))
                .cloned()
                .collect();
        }
        Some(child.resources)
    }
}
