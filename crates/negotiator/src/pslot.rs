//! Partitionable slots at the negotiator: what a match takes from one
//! (the consumption policy), and what preempting its dynamic slots would
//! give back (pslot preemption).
//!
//! With a consumption policy (`CONSUMPTION_POLICY` on the execute point),
//! the partitionable slot's ad carries `MachineResources` and a
//! `Consumption<Resource>` expression for each resource; the negotiator
//! evaluates them (MY = slot, TARGET = job), checks the slot has enough of
//! every resource and more than nothing of one, deducts them, and charges
//! the difference in `SlotWeight` before and after, so several jobs match
//! one partitionable slot in a cycle (HTCondor's `consumption_policy.cpp`).
//! Without one, a match takes the job's `RequestCpus`, `RequestMemory` and
//! `RequestDisk` (and `Request<Resource>` for other advertised resources),
//! so the cycle still fills a partitionable slot with several jobs rather
//! than handing the whole slot to one.

use classad::{ClassAd, Env, Expr, Value};

/// One resource a match takes, and how much.
#[derive(Clone, Debug, PartialEq)]
pub struct Take {
    pub resource: String,
    pub amount: f64,
}

/// The resources a partitionable slot divides: `MachineResources` (less
/// swap, which is never consumed), or Cpus, Memory and Disk.
pub fn assets(slot: &ClassAd, env: &Env) -> Vec<String> {
    match slot.eval_attr("MachineResources", env) {
        Value::Str(s) => s
            .split([' ', ','])
            .filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case("swap"))
            .map(str::to_string)
            .collect(),
        _ => vec!["Cpus".into(), "Memory".into(), "Disk".into()],
    }
}

/// Whether the slot follows a consumption policy: partitionable, with
/// `MachineResources` and a `Consumption<Resource>` for each resource.
pub fn supports_policy(slot: &ClassAd, env: &Env) -> bool {
    if !slot.eval_attr("PartitionableSlot", env).is_true() {
        return false;
    }
    let Value::Str(_) = slot.eval_attr("MachineResources", env) else {
        return false;
    };
    assets(slot, env)
        .iter()
        .all(|a| slot.contains(&format!("Consumption{a}")))
}

/// What matching `job` to `slot` takes. `None` when a consumption
/// expression does not give a number of zero or more (HTCondor then refuses
/// the match).
pub fn consumption(job: &ClassAd, slot: &ClassAd, env: &Env) -> Option<Vec<Take>> {
    let policy = supports_policy(slot, env);
    let mut takes = Vec::new();
    for a in assets(slot, env) {
        let amount = if policy {
            // A missing Request<Resource> reads as 0, as HTCondor's
            // cp_compute_consumption assigns it for the evaluation.
            let v = match slot.get(&format!("Consumption{a}")) {
                Some(e) => {
                    let with_default;
                    let j = if job.contains(&format!("Request{a}")) {
                        job
                    } else {
                        with_default = {
                            let mut j = job.clone();
                            j.insert_value(&format!("Request{a}"), 0i64);
                            j
                        };
                        &with_default
                    };
                    classad::eval_expr(e, Some(slot), Some(j), env)
                }
                None => Value::Undefined,
            };
            match v.as_number() {
                Some(x) if x >= 0.0 => x,
                _ => return None,
            }
        } else {
            let default = if a.eq_ignore_ascii_case("cpus") {
                1.0
            } else {
                0.0
            };
            match classad::eval::eval_attr(job, Some(slot), &format!("Request{a}"), env) {
                Value::Undefined => default,
                v => v.as_number().filter(|x| *x >= 0.0)?,
            }
        };
        takes.push(Take {
            resource: a,
            amount,
        });
    }
    Some(takes)
}

/// Whether `slot` has what `takes` asks for: enough of each resource, and
/// something of at least one (a match that takes nothing is refused).
pub fn sufficient(slot: &ClassAd, takes: &[Take], env: &Env) -> bool {
    let mut positive = false;
    for t in takes {
        let have = slot.eval_attr(&t.resource, env).as_number().unwrap_or(0.0);
        if have < t.amount {
            return false;
        }
        positive |= t.amount > 0.0;
    }
    positive
}

/// The job with its `Request<Resource>` replaced by what the consumption
/// policy takes, so that its Requirements judge what it will really get
/// (HTCondor's cp_override_requested). Only requests the job has are
/// replaced.
pub fn override_requests(job: &ClassAd, takes: &[Take]) -> ClassAd {
    let mut j = job.clone();
    for t in takes {
        let name = format!("Request{}", t.resource);
        if j.contains(&name) {
            j.insert_value(&name, number(t.amount));
        }
    }
    j
}

/// Takes the resources out of the slot ad.
pub fn deduct(slot: &mut ClassAd, takes: &[Take], env: &Env) {
    for t in takes {
        let have = slot.eval_attr(&t.resource, env).as_number().unwrap_or(0.0);
        slot.insert_value(&t.resource, number(have - t.amount));
    }
}

/// Adds a dynamic slot's resources back to its partitionable slot (what
/// preempting it would return). Only resources the partitionable slot
/// advertises are added, as HTCondor's pslotMultiMatch does.
pub fn give_back(pslot: &mut ClassAd, dslot: &ClassAd, resources: &[String], env: &Env) {
    for r in resources {
        let Some(have) = pslot.eval_attr(r, env).as_number() else {
            continue;
        };
        let have = have.floor();
        match dslot.eval_attr(r, env) {
            Value::Int(i) => pslot.insert_value(r, have as i64 + i),
            Value::Real(x) => pslot.insert_value(r, have + x),
            _ => {}
        }
    }
}

/// An integer when the amount is whole, as HTCondor's
/// assign_preserve_integers keeps `Cpus` an integer.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::Int(x as i64)
    } else {
        Value::Real(x)
    }
}

/// The literal value of an expression, if it is one.
pub fn literal(e: Option<&Expr>) -> Option<&Value> {
    match e? {
        Expr::Lit(v) => Some(v),
        Expr::Folded(f) => Some(&f.value),
        _ => None,
    }
}
