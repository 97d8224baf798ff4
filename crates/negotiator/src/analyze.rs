//! Why a job does not run: the pure logic behind `q -better-analyze`.
//!
//! [`analyze`] takes one job ad, the collector's slot ads, an [`Env`] (the
//! time) and, optionally, the accountant's priorities and the last cycle's
//! [`Reason`] for the job, and returns an [`Analysis`]: the same findings
//! HTCondor's `condor_q -better-analyze` prints, as plain data, with
//! [`Analysis::render`] to print them in a layout close to HTCondor's.
//!
//! - **The job's Requirements, clause by clause.** The expression is split
//!   at its top-level `&&` (nested `&&` and parentheses flattened; a clause
//!   that is a bare reference to an `&&` chain of the same ad is opened up),
//!   and for each clause the report counts the slots it matches on its own
//!   and the slots left after it and every clause before it.
//! - **Slots that refuse the job.** Of the slots the job's Requirements
//!   accept, those whose own Requirements (START) are not true for the job,
//!   grouped by which top-level clauses of the slot's expression are false
//!   or undefined, with the slot attributes those clauses read.
//! - **The run summary.** Slots rejected by the job's requirements, slots
//!   that reject the job, offline slots, slots running the submitter's own
//!   jobs, slots serving others (with priorities: those whose user has the
//!   better priority, and those PREEMPTION_REQUIREMENTS protects), and slots
//!   willing to run the job.
//! - **Suggestions.** For a clause that matches no slot, what would let it
//!   match: the best value any slot offers for a comparison, the values the
//!   pool has for an equality, or that no slot defines an attribute.
//!
//! Every expression is evaluated as matching does: MY is the ad the
//! expression lives in, TARGET the other ad.

use std::collections::{BTreeMap, HashSet};

use classad::expr::BinOp;
use classad::matching::accepts;
use classad::name::Special;
use classad::unparse::{expr_to_string, value_to_string};
use classad::{eval_expr, AttrName, ClassAd, Env, Expr, Value};

use crate::cycle::{Priorities, Reason, PRIORITY_DELTA};

/// What the analysis may know besides the ads.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// The accountant's priorities: with them, claimed slots are sorted
    /// into those the job could preempt and those it could not.
    pub priorities: Option<&'a dyn Priorities>,
    /// The negotiator's `PREEMPTION_REQUIREMENTS` (MY = slot, TARGET = job),
    /// read only together with `priorities`.
    pub preemption_requirements: Option<&'a Expr>,
    /// The submitter the job negotiates as; by default its
    /// `AccountingGroup`, else `User`, else `Owner`.
    pub submitter: Option<&'a str>,
    /// Why the last negotiation cycle left the job's autocluster unmatched.
    pub last_reason: Option<&'a Reason>,
}

/// The findings for one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// `cluster.proc`, the proc with three digits (`12.003`).
    pub job_id: String,
    /// The job's Requirements as written; `None` if it has none.
    pub requirements: Option<String>,
    /// Job attributes the Requirements read (directly or through other
    /// job attributes), as `name = expression` written in the ad, by name.
    pub job_attributes: Vec<(String, String)>,
    /// The top-level clauses of the job's Requirements, in order.
    pub clauses: Vec<ClauseStep>,
    /// How many slot ads were analyzed.
    pub slots: usize,
    /// How many distinct machines (`Machine`, else the slot's `Name`) they are on.
    pub machines: usize,
    /// Slots the job accepts but whose own Requirements refuse it, grouped
    /// by the clauses that refuse it; the largest group first.
    pub rejections: Vec<RejectionGroup>,
    pub totals: Totals,
    /// The submitter and its effective priority, when priorities were given.
    pub submitter_priority: Option<(String, f64)>,
    /// The last cycle's reason, in HTCondor's words.
    pub last_reason: Option<String>,
    pub suggestions: Vec<Suggestion>,
}

/// One top-level clause of the job's Requirements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClauseStep {
    /// Its position, from 0.
    pub index: usize,
    /// The clause as the unparser prints it, outer parentheses removed.
    pub text: String,
    /// Slots this clause alone is true for.
    pub matched: usize,
    /// Slots this clause and every earlier one are true for.
    pub remaining: usize,
    /// Slots for which this clause is undefined.
    pub undefined: usize,
}

/// Slots whose own Requirements refuse the job for the same clauses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectionGroup {
    /// The clauses of the slot's Requirements that are not true.
    pub clauses: Vec<FailedClause>,
    pub slots: Vec<RejectingSlot>,
}

/// A clause of a slot's Requirements (START) that is not true for the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedClause {
    /// Its position among the top-level clauses of the slot's expression.
    pub index: usize,
    pub text: String,
    /// What it evaluated to: `false`, `undefined`, `error`, or another value.
    pub value: String,
}

/// One slot of a [`RejectionGroup`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectingSlot {
    pub name: String,
    /// The slot's attributes that the failed clauses read, with their
    /// values in this slot (`KeyboardIdle`, `120`).
    pub attributes: Vec<(String, String)>,
}

/// HTCondor's run analysis summary, in slots. Each slot is counted once,
/// at the first of these tests it fails.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// The job's Requirements are not true for the slot.
    pub rejected_by_job: usize,
    /// The slot's own Requirements (START) are not true for the job.
    pub rejected_by_slot: usize,
    /// Both match, but the slot is offline.
    pub offline: usize,
    /// Both match; the slot is claimed by the job's own submitter.
    pub running_your_jobs: usize,
    /// Both match; the slot serves another user (whose priority is at
    /// least as good, when priorities are known).
    pub serving_others: usize,
    /// Both match; the job could preempt the user by priority, but
    /// PREEMPTION_REQUIREMENTS is not true.
    pub preemption_requirements: usize,
    /// Both match and the slot would take the job: unclaimed, or (with
    /// priorities) claimed by a user the job may preempt.
    pub willing: usize,
    /// Of `willing`, those that are claimed (the job would preempt).
    pub willing_by_preemption: usize,
}

/// What might let the job run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suggestion {
    /// The job has no Requirements expression, so it matches nothing.
    NoRequirements,
    /// A clause reads attributes that no slot defines.
    Undefined {
        clause: usize,
        text: String,
        attributes: Vec<String>,
    },
    /// A clause reads job attributes that are undefined (the job does not
    /// define them, or their value is `undefined`): the clause is undefined
    /// for every slot, whatever the slots offer.
    JobUndefined {
        clause: usize,
        text: String,
        attributes: Vec<String>,
    },
    /// A comparison no slot satisfies: the best value the pool offers.
    Limit {
        clause: usize,
        text: String,
        /// The slot attribute compared (as written in the clause).
        attribute: String,
        /// The operator with the slot attribute on the left.
        op: &'static str,
        /// What the job asks for.
        wanted: String,
        /// "largest" or "smallest".
        best_kind: &'static str,
        /// The best value any slot offers, and on how many slots.
        best: String,
        best_slots: usize,
        /// The job attribute on the other side, if the clause compares
        /// against one, and the bound it would have to meet.
        job_attribute: Option<(String, &'static str)>,
    },
    /// An equality no slot satisfies: the values the slots have.
    Values {
        clause: usize,
        text: String,
        attribute: String,
        wanted: String,
        /// Distinct values and how many slots have each, most common first.
        offered: Vec<(String, usize)>,
    },
    /// A clause true for no slot, with nothing more specific to say.
    NoSlot { clause: usize, text: String },
    /// Every clause matches some slot, but no slot satisfies them all:
    /// `clause` is the first that leaves none of the `before` slots the
    /// earlier clauses left.
    Conflict {
        clause: usize,
        text: String,
        before: usize,
    },
    /// Slots the job matches refuse it; `text` is the slot clause that
    /// fails on the most of them.
    SlotsRefuse {
        slots: usize,
        text: String,
        failing: usize,
    },
    /// Every slot that matches is busy with other work.
    AllClaimed { slots: usize },
}

impl Suggestion {
    /// One line of advice.
    pub fn text(&self) -> String {
        match self {
            Suggestion::NoRequirements => {
                "the job has no Requirements expression, so it matches no slot".to_string()
            }
            Suggestion::Undefined {
                clause,
                text,
                attributes,
            } => {
                let (noun, verb) = if attributes.len() == 1 {
                    ("attribute", "it")
                } else {
                    ("attributes", "them")
                };
                format!(
                    "[{clause}] {text}: no slot defines the {noun} {}; the clause is undefined \
                     for every slot (check the spelling, or ask the pool's admin which slots \
                     should advertise {verb})",
                    attributes.join(", ")
                )
            }
            Suggestion::JobUndefined {
                clause,
                text,
                attributes,
            } => {
                let (verb, it) = if attributes.len() == 1 {
                    ("is", "it")
                } else {
                    ("are", "them")
                };
                format!(
                    "[{clause}] {text}: the job's {} {verb} undefined, so the clause is \
                     undefined for every slot (give the job {it}: {})",
                    attributes.join(", "),
                    attributes
                        .iter()
                        .map(|a| submit_command(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            Suggestion::Limit {
                clause,
                text,
                attribute,
                op,
                wanted,
                best_kind,
                best,
                best_slots,
                job_attribute,
            } => {
                let mut s = format!(
                    "[{clause}] {text}: no slot has {attribute} {op} {wanted}; the {best_kind} \
                     is {best} ({best_slots} {})",
                    plural(*best_slots, "slot", "slots")
                );
                if let Some((name, bound)) = job_attribute {
                    s.push_str(&format!(
                        "; with {name} {bound} {best} this clause would match"
                    ));
                }
                s
            }
            Suggestion::Values {
                clause,
                text,
                attribute,
                wanted,
                offered,
            } => {
                let list: Vec<String> = offered.iter().map(|(v, n)| format!("{v} ({n})")).collect();
                format!(
                    "[{clause}] {text}: no slot has {attribute} == {wanted}; the slots have {}",
                    list.join(", ")
                )
            }
            Suggestion::NoSlot { clause, text } => {
                format!("[{clause}] {text}: no slot satisfies this clause")
            }
            Suggestion::Conflict {
                clause,
                text,
                before,
            } => format!(
                "[{clause}] {text}: every clause matches some slot, but none of the {before} \
                 {} the earlier clauses leave satisfies this one",
                plural(*before, "slot", "slots")
            ),
            Suggestion::SlotsRefuse {
                slots,
                text,
                failing,
            } => format!(
                "{slots} {} the job matches {} it by {} own requirements; most often \
                 ({failing}) because `{text}` is not true",
                plural(*slots, "slot", "slots"),
                plural(*slots, "refuses", "refuse"),
                plural(*slots, "its", "their"),
            ),
            Suggestion::AllClaimed { slots } => format!(
                "all {slots} {} that match are claimed by other work; the job waits for one \
                 to be released (or for a better priority to preempt)",
                plural(*slots, "slot", "slots")
            ),
        }
    }
}

fn plural<'s>(n: usize, one: &'s str, many: &'s str) -> &'s str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// The text HTCondor gives a rejection reason (`LastRejMatchReason`).
pub fn reason_text(reason: &Reason) -> String {
    match reason {
        Reason::JobConstraint => "NEGOTIATOR_JOB_CONSTRAINT is not true for the job".to_string(),
        Reason::ConcurrencyLimit(names) => {
            format!("concurrency limit {} reached", names.join(","))
        }
        Reason::PreemptionRequirements => "PREEMPTION_REQUIREMENTS == False".to_string(),
        Reason::InsufficientPriority => "insufficient priority".to_string(),
        Reason::SubmitterLimit => "submitter limit exceeded".to_string(),
        Reason::NoMatch => "no match found".to_string(),
    }
}

/// Analyzes why `job` does or does not match `slots`.
pub fn analyze(job: &ClassAd, slots: &[ClassAd], env: &Env, ctx: Context<'_>) -> Analysis {
    let job_id = job_id(job, env);
    let submitter = ctx
        .submitter
        .map(str::to_string)
        .or_else(|| job_submitter(job, env));
    let requirements = job.get("Requirements");

    // 1. The job's Requirements, clause by clause.
    let mut job_clauses = Vec::new();
    if let Some(req) = requirements {
        flatten(req, job, &mut job_clauses, &mut Vec::new());
    }
    let mut clauses: Vec<ClauseStep> = job_clauses
        .iter()
        .enumerate()
        .map(|(index, c)| ClauseStep {
            index,
            text: expr_to_string(c),
            matched: 0,
            remaining: 0,
            undefined: 0,
        })
        .collect();
    for slot in slots {
        let mut still = true;
        for (step, clause) in clauses.iter_mut().zip(&job_clauses) {
            let v = eval_expr(clause, Some(job), Some(slot), env);
            let ok = accepts(&v);
            step.matched += usize::from(ok);
            step.undefined += usize::from(v.is_undefined());
            still &= ok;
            step.remaining += usize::from(still);
        }
    }

    // 2 and 3. Each slot, as HTCondor's summary sorts it.
    let mut totals = Totals::default();
    let mut groups: Vec<RejectionGroup> = Vec::new();
    let prio = match (ctx.priorities, &submitter) {
        (Some(p), Some(name)) => Some((name.clone(), p.effective_priority(name))),
        _ => None,
    };
    let mut machines: HashSet<String> = HashSet::new();
    let mut slot_clause_failures: BTreeMap<String, usize> = BTreeMap::new();
    for (i, slot) in slots.iter().enumerate() {
        let name = string_attr(slot, "Name", env).unwrap_or_else(|| format!("slot#{i}"));
        let machine = string_attr(slot, "Machine", env).unwrap_or_else(|| name.clone());
        machines.insert(machine);
        let job_ok =
            requirements.is_some_and(|r| accepts(&eval_expr(r, Some(job), Some(slot), env)));
        if !job_ok {
            totals.rejected_by_job += 1;
            continue;
        }
        let slot_ok = slot
            .get("Requirements")
            .is_some_and(|r| accepts(&eval_expr(r, Some(slot), Some(job), env)));
        if !slot_ok {
            totals.rejected_by_slot += 1;
            let (failed, attributes) = slot_failures(slot, job, env);
            for f in &failed {
                *slot_clause_failures.entry(f.text.clone()).or_default() += 1;
            }
            let entry = RejectingSlot { name, attributes };
            match groups.iter_mut().find(|g| g.clauses == failed) {
                Some(g) => g.slots.push(entry),
                None => groups.push(RejectionGroup {
                    clauses: failed,
                    slots: vec![entry],
                }),
            }
            continue;
        }
        if slot.eval_attr("Offline", env).is_true() {
            totals.offline += 1;
            continue;
        }
        let Some(user) = remote_user(slot, env) else {
            totals.willing += 1;
            continue;
        };
        if submitter.as_deref() == Some(user.as_str())
            || string_attr(slot, "RemoteUser", env)
                .is_some_and(|u| string_attr(job, "User", env).is_some_and(|j| j == u))
        {
            totals.running_your_jobs += 1;
            continue;
        }
        match (&prio, ctx.priorities) {
            (Some((name, mine)), Some(p))
                if p.effective_priority(&user) >= mine + PRIORITY_DELTA =>
            {
                let allowed = match ctx.preemption_requirements {
                    Some(req) => {
                        let mut s = slot.clone();
                        s.insert_value("RemoteUserPrio", p.effective_priority(&user));
                        s.insert_value("RemoteUserResourcesInUse", p.resources_in_use(&user));
                        let mut j = job.clone();
                        j.insert_value("SubmitterUserPrio", *mine);
                        j.insert_value("SubmittorPrio", *mine);
                        j.insert_value("SubmitterUserResourcesInUse", p.resources_in_use(name));
                        accepts(&eval_expr(req, Some(&s), Some(&j), env))
                    }
                    None => true,
                };
                if allowed {
                    totals.willing += 1;
                    totals.willing_by_preemption += 1;
                } else {
                    totals.preemption_requirements += 1;
                }
            }
            _ => totals.serving_others += 1,
        }
    }
    // Largest group first; ties keep the order the slots came in.
    groups.sort_by_key(|g| std::cmp::Reverse(g.slots.len()));

    // 4. Suggestions.
    let mut suggestions = Vec::new();
    if requirements.is_none() {
        suggestions.push(Suggestion::NoRequirements);
    }
    for (step, clause) in clauses.iter().zip(&job_clauses) {
        if step.matched == 0 && !slots.is_empty() {
            suggestions.push(clause_suggestion(step, clause, job, slots, env));
        }
    }
    if !slots.is_empty() && clauses.iter().all(|c| c.matched > 0) {
        let mut before = slots.len();
        for c in &clauses {
            if c.remaining == 0 {
                suggestions.push(Suggestion::Conflict {
                    clause: c.index,
                    text: c.text.clone(),
                    before,
                });
                break;
            }
            before = c.remaining;
        }
    }
    if totals.rejected_by_slot > 0 {
        if let Some((text, failing)) = slot_clause_failures
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        {
            suggestions.push(Suggestion::SlotsRefuse {
                slots: totals.rejected_by_slot,
                text: text.clone(),
                failing: *failing,
            });
        }
    }
    let busy = totals.running_your_jobs + totals.serving_others + totals.preemption_requirements;
    if totals.willing == 0 && busy > 0 {
        suggestions.push(Suggestion::AllClaimed { slots: busy });
    }

    Analysis {
        job_id,
        requirements: requirements.map(expr_to_string),
        job_attributes: requirements
            .map(|r| job_attributes(r, job))
            .unwrap_or_default(),
        clauses,
        slots: slots.len(),
        machines: machines.len(),
        rejections: groups,
        totals,
        submitter_priority: prio,
        last_reason: ctx.last_reason.map(reason_text),
        suggestions,
    }
}

impl Analysis {
    /// True if some slot would run the job now.
    pub fn can_run(&self) -> bool {
        self.totals.willing > 0
    }

    /// The report as text, laid out like HTCondor's `-better-analyze`.
    pub fn render(&self) -> String {
        let id = &self.job_id;
        let mut out = String::new();
        match &self.requirements {
            Some(r) => {
                out.push_str(&format!(
                    "The Requirements expression for job {id} is\n\n    {r}\n\n"
                ));
            }
            None => out.push_str(&format!("Job {id} has no Requirements expression.\n\n")),
        }
        if !self.job_attributes.is_empty() {
            out.push_str(&format!("Job {id} defines the following attributes:\n\n"));
            for (name, value) in &self.job_attributes {
                out.push_str(&format!("    {name} = {value}\n"));
            }
            out.push('\n');
        }
        if !self.clauses.is_empty() {
            out.push_str(&format!(
                "The Requirements expression for job {id} reduces to these conditions:\n\n"
            ));
            out.push_str("         Slots      Slots\n");
            out.push_str("Step    Matched  Remaining  Condition\n");
            out.push_str("-----  --------  ---------  ---------\n");
            for c in &self.clauses {
                out.push_str(&format!(
                    "{:<5} {:>9} {:>10}  {}\n",
                    format!("[{}]", c.index),
                    c.matched,
                    c.remaining,
                    c.text
                ));
            }
            out.push('\n');
        }
        if let Some(reason) = &self.last_reason {
            out.push_str(&format!("Reason for last match failure: {reason}\n\n"));
        }
        if !self.rejections.is_empty() {
            out.push_str(&format!(
                "{} {} the job by {} own Requirements (START); these clauses are not true:\n",
                self.totals.rejected_by_slot,
                plural(self.totals.rejected_by_slot, "slot rejects", "slots reject"),
                plural(self.totals.rejected_by_slot, "its", "their")
            ));
            for g in &self.rejections {
                out.push('\n');
                let names: Vec<&str> = g.slots.iter().map(|s| s.name.as_str()).collect();
                out.push_str(&format!(
                    "  {} {}: {}\n",
                    g.slots.len(),
                    plural(g.slots.len(), "slot", "slots"),
                    names.join(", ")
                ));
                for c in &g.clauses {
                    out.push_str(&format!(
                        "    {:<5} {:<9}  {}\n",
                        format!("[{}]", c.index),
                        c.value,
                        c.text
                    ));
                }
                for s in &g.slots {
                    if s.attributes.is_empty() {
                        continue;
                    }
                    let attrs: Vec<String> = s
                        .attributes
                        .iter()
                        .map(|(n, v)| format!("{n} = {v}"))
                        .collect();
                    out.push_str(&format!("      {}: {}\n", s.name, attrs.join(", ")));
                }
            }
            out.push('\n');
        }
        if let Some((name, p)) = &self.submitter_priority {
            out.push_str(&format!("Submitter {name} has a priority of {p:.3}\n"));
        }
        let t = &self.totals;
        let with = if self.submitter_priority.is_some() {
            "considering user priority"
        } else {
            "ignoring user priority"
        };
        out.push_str(&format!(
            "\n{}:  Run analysis summary {with}.  Of {} {} on {} {},\n",
            summary_id(id),
            self.slots,
            plural(self.slots, "slot", "slots"),
            self.machines,
            plural(self.machines, "machine", "machines")
        ));
        out.push_str(&format!(
            "  {:5} slots are rejected by your job's requirements\n",
            t.rejected_by_job
        ));
        out.push_str(&format!(
            "  {:5} slots reject your job because of their own requirements\n",
            t.rejected_by_slot
        ));
        if t.running_your_jobs > 0 || self.submitter_priority.is_some() {
            out.push_str(&format!(
                "  {:5} slots match and are already running your jobs\n",
                t.running_your_jobs
            ));
        }
        if self.submitter_priority.is_some() {
            out.push_str(&format!(
                "  {:5} slots match but are serving users with a better priority in the pool\n",
                t.serving_others
            ));
            out.push_str(&format!(
                "  {:5} slots match but will not currently preempt their existing job\n",
                t.preemption_requirements
            ));
        } else if t.serving_others > 0 {
            out.push_str(&format!(
                "  {:5} slots match but are serving other users\n",
                t.serving_others
            ));
        }
        if t.offline > 0 {
            out.push_str(&format!(
                "  {:5} slots match but are currently offline\n",
                t.offline
            ));
        }
        out.push_str(&format!(
            "  {:5} slots match and are willing to run your job\n",
            t.willing
        ));
        let both = t.offline
            + t.running_your_jobs
            + t.serving_others
            + t.preemption_requirements
            + t.willing;
        if self.slots == t.rejected_by_job || both == 0 {
            out.push_str("\nWARNING:  Be advised:\n");
            if self.slots == 0 {
                out.push_str("   There are no slots to match\n");
            } else if self.slots == t.rejected_by_job {
                out.push_str("   No slot matches the job's Requirements\n");
            } else {
                out.push_str(
                    "   The slots the job matches all refuse it by their own Requirements\n",
                );
            }
        }
        if !self.suggestions.is_empty() {
            out.push_str("\nSuggestions:\n\n");
            for s in &self.suggestions {
                out.push_str(&format!("   {}\n", s.text()));
            }
        }
        out
    }
}

/// The id as the summary line prints it: the cluster, too, with at
/// least three digits (`012.003`).
fn summary_id(id: &str) -> String {
    match id.split_once('.') {
        Some((c, p)) if c.bytes().all(|b| b.is_ascii_digit()) => format!("{c:0>3}.{p}"),
        _ => id.to_string(),
    }
}

/// `cluster.proc` as HTCondor prints it (`12.003`).
fn job_id(job: &ClassAd, env: &Env) -> String {
    let cluster = job.eval_attr("ClusterId", env).as_int();
    let proc_ = job.eval_attr("ProcId", env).as_int();
    match (cluster, proc_) {
        (Some(c), Some(p)) => format!("{c}.{p:03}"),
        (Some(c), None) => format!("{c}"),
        _ => "?".to_string(),
    }
}

fn string_attr(ad: &ClassAd, name: &str, env: &Env) -> Option<String> {
    ad.get(name)?;
    ad.eval_attr(name, env).as_str().map(str::to_string)
}

/// The submitter a job negotiates as.
fn job_submitter(job: &ClassAd, env: &Env) -> Option<String> {
    ["AccountingGroup", "User", "Owner"]
        .iter()
        .find_map(|a| string_attr(job, a, env))
}

/// The user a claimed slot serves, as the cycle reads it: a preempting
/// claim's first, then the accounting group, then the remote user.
fn remote_user(slot: &ClassAd, env: &Env) -> Option<String> {
    [
        "PreemptingAccountingGroup",
        "PreemptingUser",
        "AccountingGroup",
        "RemoteUser",
    ]
    .iter()
    .find_map(|a| string_attr(slot, a, env))
}

fn strip_parens(mut e: &Expr) -> &Expr {
    while let Expr::Paren(inner) = e {
        e = inner;
    }
    e
}

/// The name `e` refers to in its own ad, if it is a bare reference
/// (`Name`, `MY.Name`).
fn my_reference(e: &Expr) -> Option<&AttrName> {
    match e {
        Expr::Attr(n) if n.special() == Special::None => Some(n),
        Expr::Select(base, n) if matches!(strip_parens(base), Expr::Attr(m) if m.special() == Special::My) => {
            Some(n)
        }
        _ => None,
    }
}

/// How deep bare references are opened up (`Requirements = START`,
/// `START = IsDesktop && ...`).
const MAX_INLINE: usize = 16;

/// Splits `e` into its top-level `&&` clauses, opening parentheses, nested
/// `&&`, and bare references to `START` or to an `&&` chain defined in `ad`.
fn flatten<'e>(e: &'e Expr, ad: &'e ClassAd, out: &mut Vec<&'e Expr>, open: &mut Vec<String>) {
    let e = strip_parens(e);
    if let Expr::Binary(BinOp::And, operands) = e {
        flatten(&operands.0, ad, out, open);
        flatten(&operands.1, ad, out, open);
        return;
    }
    if let Some(name) = my_reference(e) {
        if let Some(body) = ad.get(name.as_str()) {
            let key = name.as_str().to_ascii_lowercase();
            let chain = matches!(strip_parens(body), Expr::Binary(BinOp::And, _));
            if !matches!(body, Expr::Lit(_))
                && (chain || name.is("START"))
                && open.len() < MAX_INLINE
                && !open.contains(&key)
            {
                open.push(key);
                flatten(body, ad, out, open);
                open.pop();
                return;
            }
        }
    }
    out.push(e);
}

/// Which ad a reference names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefSide {
    My,
    Target,
    /// Unscoped: the ad the expression lives in if it defines the name,
    /// else the other ad.
    Either,
}

/// Every attribute `e` reads, with the ad it names.
fn references(e: &Expr, out: &mut Vec<(RefSide, AttrName)>) {
    match e {
        Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::Ad(_) => {}
        Expr::Attr(n) => {
            if n.special() == Special::None {
                out.push((RefSide::Either, n.clone()));
            }
        }
        Expr::Absolute(n) => out.push((RefSide::My, n.clone())),
        Expr::Select(base, n) => match strip_parens(base) {
            Expr::Attr(b) if b.special() == Special::My => out.push((RefSide::My, n.clone())),
            Expr::Attr(b) if b.special() == Special::Target => {
                out.push((RefSide::Target, n.clone()))
            }
            other => references(other, out),
        },
        Expr::Index(a, b) | Expr::Elvis(a, b) => {
            references(a, out);
            references(b, out);
        }
        Expr::Unary(_, a) | Expr::Paren(a) => references(a, out),
        Expr::Binary(_, ab) => {
            references(&ab.0, out);
            references(&ab.1, out);
        }
        Expr::Cond(abc) => {
            references(&abc.0, out);
            references(&abc.1, out);
            references(&abc.2, out);
        }
        Expr::Call(c) => c.args.iter().for_each(|a| references(a, out)),
        Expr::List(items) => items.iter().for_each(|a| references(a, out)),
        Expr::Folded(f) => references(&f.expr, out),
    }
}

/// The names `e` reads from its own ad `my` (defined there), and those it
/// reads from the other ad, each once, in order of appearance.
fn split_references(e: &Expr, my: &ClassAd) -> (Vec<AttrName>, Vec<AttrName>) {
    let mut refs = Vec::new();
    references(e, &mut refs);
    let (mut mine, mut other): (Vec<AttrName>, Vec<AttrName>) = (Vec::new(), Vec::new());
    for (side, n) in refs {
        let to_mine = match side {
            RefSide::My => true,
            RefSide::Target => false,
            RefSide::Either => my.contains(n.as_str()),
        };
        let list = if to_mine { &mut mine } else { &mut other };
        if !list.contains(&n) {
            list.push(n);
        }
    }
    (mine, other)
}

/// The job attributes `req` reads, followed through the job's own
/// expressions (`RequestDisk = DiskUsage` shows both), as written.
fn job_attributes(req: &Expr, job: &ClassAd) -> Vec<(String, String)> {
    let mut seen: Vec<AttrName> = Vec::new();
    let mut todo = split_references(req, job).0;
    while let Some(n) = todo.pop() {
        if seen.contains(&n) || n.is("Requirements") || seen.len() >= 64 {
            continue;
        }
        if let Some(e) = job.get(n.as_str()) {
            todo.extend(split_references(e, job).0);
            seen.push(n);
        }
    }
    let mut out: Vec<(String, String)> = seen
        .iter()
        .filter_map(|n| {
            let (name, e) = job.lookup_entry(n)?;
            Some((name.as_str().to_string(), expr_to_string(e)))
        })
        .collect();
    out.sort_by_key(|(n, _)| n.to_ascii_lowercase());
    out
}

/// The clauses of `slot`'s Requirements that are not true for `job`, and
/// the slot attributes they read with this slot's values.
fn slot_failures(
    slot: &ClassAd,
    job: &ClassAd,
    env: &Env,
) -> (Vec<FailedClause>, Vec<(String, String)>) {
    let Some(req) = slot.get("Requirements") else {
        return (
            vec![FailedClause {
                index: 0,
                text: "(no Requirements)".to_string(),
                value: "undefined".to_string(),
            }],
            Vec::new(),
        );
    };
    let mut parts = Vec::new();
    flatten(req, slot, &mut parts, &mut Vec::new());
    let mut failed = Vec::new();
    let mut names: Vec<AttrName> = Vec::new();
    for (index, clause) in parts.iter().enumerate() {
        let v = eval_expr(clause, Some(slot), Some(job), env);
        if accepts(&v) {
            continue;
        }
        failed.push(FailedClause {
            index,
            text: expr_to_string(clause),
            value: value_to_string(&v),
        });
        for n in split_references(clause, slot).0 {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let attributes = names
        .iter()
        .map(|n| {
            let v = classad::eval::eval_attr(slot, Some(job), n.as_str(), env);
            (n.as_str().to_string(), value_to_string(&v))
        })
        .collect();
    (failed, attributes)
}

/// The slot attribute a side of a comparison names: `TARGET.x`, or an
/// unscoped `x` the job does not define.
fn target_attribute<'e>(e: &'e Expr, job: &ClassAd) -> Option<&'e AttrName> {
    match strip_parens(e) {
        Expr::Attr(n) if n.special() == Special::None && !job.contains(n.as_str()) => Some(n),
        Expr::Select(base, n) if matches!(strip_parens(base), Expr::Attr(t) if t.special() == Special::Target) => {
            Some(n)
        }
        _ => None,
    }
}

/// How a job gets attribute `attr`: the submit command that sets it where
/// one does (`request_memory = ...` for RequestMemory), else `+attr = ...`.
fn submit_command(attr: &str) -> String {
    for (name, command) in [
        ("RequestMemory", "request_memory"),
        ("RequestCpus", "request_cpus"),
        ("RequestDisk", "request_disk"),
        ("RequestGpus", "request_gpus"),
    ] {
        if attr.eq_ignore_ascii_case(name) {
            return format!("`{command} = ...` in the submit description");
        }
    }
    format!("`+{attr} = ...` in the submit description")
}

/// `a op b` read as `b op' a`.
fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

/// What to say about a clause of the job's Requirements no slot satisfies.
fn clause_suggestion(
    step: &ClauseStep,
    clause: &Expr,
    job: &ClassAd,
    slots: &[ClassAd],
    env: &Env,
) -> Suggestion {
    let (clause_no, text) = (step.index, step.text.clone());
    let (from_job, wanted_from_slot) = split_references(clause, job);
    let missing: Vec<String> = wanted_from_slot
        .iter()
        .filter(|n| !slots.iter().any(|s| s.contains(n.as_str())))
        .map(|n| n.as_str().to_string())
        .collect();
    // What the job lacks comes first: `TARGET.Memory >= RequestMemory`
    // with no RequestMemory is the job's to fix, not the slots'. An
    // unscoped name neither side defines is the job's when it is compared
    // with an explicit `TARGET.` attribute (as request_memory's clause
    // is written); alone (`CUDACapability >= 8.0`) it is the slots'.
    let compared_with_target = |name: &str| {
        let Expr::Binary(_, operands) = strip_parens(clause) else {
            return false;
        };
        let is_bare = |e: &Expr| matches!(strip_parens(e), Expr::Attr(n) if n.special() == Special::None && n.as_str() == name);
        let is_target = |e: &Expr| matches!(strip_parens(e), Expr::Select(base, _) if matches!(strip_parens(base), Expr::Attr(t) if t.special() == Special::Target));
        let (l, r) = (&operands.0, &operands.1);
        (is_bare(l) && is_target(r)) || (is_target(l) && is_bare(r))
    };
    let mut job_undefined: Vec<String> = from_job
        .iter()
        .filter(|n| {
            // Only what the job alone makes undefined (not an attribute
            // that reads the slot).
            job.get(n.as_str())
                .is_none_or(|e| split_references(e, job).1.is_empty())
                && matches!(job.eval_attr(n.as_str(), env), Value::Undefined)
        })
        .map(|n| n.as_str().to_string())
        .collect();
    for n in &missing {
        if compared_with_target(n) && !job_undefined.contains(n) {
            job_undefined.push(n.clone());
        }
    }
    if !job_undefined.is_empty() {
        return Suggestion::JobUndefined {
            clause: clause_no,
            text,
            attributes: job_undefined,
        };
    }
    if !missing.is_empty() {
        return Suggestion::Undefined {
            clause: clause_no,
            text,
            attributes: missing,
        };
    }
    let no_slot = Suggestion::NoSlot {
        clause: clause_no,
        text: text.clone(),
    };
    let Expr::Binary(op, operands) = strip_parens(clause) else {
        return no_slot;
    };
    let (l, r) = (&operands.0, &operands.1);
    let (attr, other, op) = match (target_attribute(l, job), target_attribute(r, job)) {
        (Some(a), None) => (a, r, *op),
        (None, Some(a)) => (a, l, flip(*op)),
        _ => return no_slot,
    };
    // The job's side must read only the job.
    if !split_references(other, job).1.is_empty() {
        return no_slot;
    }
    let wanted = eval_expr(other, Some(job), None, env);
    let offered: Vec<Value> = slots
        .iter()
        .map(|s| classad::eval::eval_attr(s, Some(job), attr.as_str(), env))
        .collect();
    let job_attribute = my_reference(strip_parens(other))
        .filter(|n| job.contains(n.as_str()))
        .map(|n| n.as_str().to_string());
    match op {
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let numbers: Vec<(f64, &Value)> = offered
                .iter()
                .filter(|v| matches!(v, Value::Int(_) | Value::Real(_)))
                .filter_map(|v| Some((v.as_number()?, v)))
                .collect();
            let largest = matches!(op, BinOp::Gt | BinOp::Ge);
            let best = numbers.iter().copied().reduce(|a, b| {
                if (largest && b.0 > a.0) || (!largest && b.0 < a.0) {
                    b
                } else {
                    a
                }
            });
            let Some((best_n, best_v)) = best else {
                return no_slot;
            };
            // The bound the job's side must meet: `x >= j` needs `j <= x`.
            let bound = flip(op).symbol();
            Suggestion::Limit {
                clause: clause_no,
                text,
                attribute: attr.as_str().to_string(),
                op: op.symbol(),
                wanted: value_to_string(&wanted),
                best_kind: if largest { "largest" } else { "smallest" },
                best: value_to_string(best_v),
                best_slots: numbers.iter().filter(|(n, _)| *n == best_n).count(),
                job_attribute: job_attribute.map(|n| (n, bound)),
            }
        }
        BinOp::Eq | BinOp::MetaEq => {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for v in &offered {
                let s = value_to_string(v);
                match counts.iter_mut().find(|(t, _)| *t == s) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((s, 1)),
                }
            }
            counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Suggestion::Values {
                clause: clause_no,
                text,
                attribute: attr.as_str().to_string(),
                wanted: value_to_string(&wanted),
                offered: counts,
            }
        }
        _ => no_slot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        ClassAd::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn slot(name: &str, machine: &str, arch: &str, memory: i64) -> ClassAd {
        ad(&format!(
            "[Name = \"{name}\"; Machine = \"{machine}\"; Arch = \"{arch}\"; OpSys = \"LINUX\"; \
              Memory = {memory}; Cpus = 1; State = \"Unclaimed\"; START = true; \
              Requirements = START]"
        ))
    }

    #[test]
    fn flatten_opens_parentheses_nested_and_and_start() {
        let s = ad("[START = (KeyboardIdle > 15 * 60) && (LoadAvg < 0.3); \
                     Requirements = (START) && ((Memory > 0 && Cpus > 0))]");
        let mut parts = Vec::new();
        flatten(
            s.get("Requirements").unwrap(),
            &s,
            &mut parts,
            &mut Vec::new(),
        );
        let texts: Vec<String> = parts.iter().map(|e| expr_to_string(e)).collect();
        assert_eq!(
            texts,
            [
                "KeyboardIdle > 15 * 60",
                "LoadAvg < 3.000000000000000E-01",
                "Memory > 0",
                "Cpus > 0"
            ]
        );
    }

    #[test]
    fn flatten_stops_at_a_reference_cycle() {
        let s = ad("[START = START && Cpus > 0; Requirements = START]");
        let mut parts = Vec::new();
        flatten(
            s.get("Requirements").unwrap(),
            &s,
            &mut parts,
            &mut Vec::new(),
        );
        let texts: Vec<String> = parts.iter().map(|e| expr_to_string(e)).collect();
        assert_eq!(texts, ["START", "Cpus > 0"]);
    }

    #[test]
    fn clause_counts_and_remaining() {
        let job = ad("[ClusterId = 7; ProcId = 2; RequestMemory = 6000; \
                       Requirements = (TARGET.Arch == \"X86_64\") && (TARGET.Memory >= RequestMemory)]");
        let slots = [
            slot("a", "m1", "X86_64", 8192),
            slot("b", "m1", "X86_64", 4096),
            slot("c", "m2", "aarch64", 8192),
        ];
        let a = analyze(&job, &slots, &Env::at(0), Context::default());
        assert_eq!(a.job_id, "7.002");
        assert_eq!(a.machines, 2);
        assert_eq!(
            a.clauses
                .iter()
                .map(|c| (c.matched, c.remaining))
                .collect::<Vec<_>>(),
            [(2, 2), (2, 1)]
        );
        assert_eq!(a.totals.willing, 1);
        assert_eq!(a.totals.rejected_by_job, 2);
        assert!(a.suggestions.is_empty(), "{:?}", a.suggestions);
    }

    #[test]
    fn a_comparison_written_the_other_way_round() {
        let job = ad("[ClusterId = 1234; ProcId = 0; RequestMemory = 9000; \
                       Requirements = RequestMemory < TARGET.Memory]");
        let slots = [
            slot("a", "m1", "X86_64", 8192),
            slot("b", "m2", "X86_64", 2048),
        ];
        let a = analyze(&job, &slots, &Env::at(0), Context::default());
        assert_eq!(a.suggestions.len(), 1);
        assert_eq!(
            a.suggestions[0].text(),
            "[0] RequestMemory < TARGET.Memory: no slot has Memory > 9000; the largest is \
             8192 (1 slot); with RequestMemory < 8192 this clause would match"
        );
        assert!(a.render().contains("\n1234.000:  Run analysis summary"));
        assert_eq!(summary_id("7.002"), "007.002");
    }

    #[test]
    fn reason_texts_are_htcondors() {
        assert_eq!(reason_text(&Reason::NoMatch), "no match found");
        assert_eq!(
            reason_text(&Reason::ConcurrencyLimit(vec!["db".into(), "tape".into()])),
            "concurrency limit db,tape reached"
        );
    }
}
