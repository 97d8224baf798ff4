//! The accountant: who has used how much of the pool, and what that makes
//! each submitter's user priority.
//!
//! This is HTCondor's accountant (`condor_userprio` shows its records). A
//! submitter's *real* priority follows its recent usage with half-life
//! decay (`PRIORITY_HALFLIFE`); its *effective* priority is the real one
//! times a priority factor (`DEFAULT_PRIO_FACTOR`, `NICE_USER_PRIO_FACTOR`,
//! `REMOTE_PRIO_FACTOR`, `GROUP_PRIO_FACTOR_<g>`, or one set by
//! `condor_userprio -setfactor`). The negotiator hands out the pool in
//! inverse proportion to effective priorities, and accounting groups
//! (`GROUP_NAMES`) cap whole groups with quotas, sharing what a group leaves
//! unused as HTCondor's hierarchical group quotas do.
//!
//! The formulas are HTCondor's (the manual's "Priority Calculation";
//! `Accountant.cpp`, `GroupEntry.cpp` in HTCondor's negotiator):
//!
//! - every update, with `t` seconds passed and half-life `h`,
//!   `β = 0.5^(t/h)` and `prio = max(0.5, β·prio + (1-β)·recent)`, where
//!   `recent` is the weighted slots in use now plus the *uncharged time*
//!   (slot-seconds of matches that began or ended since the last update,
//!   negative for ones that began) divided by `t`;
//! - effective priority = real priority × priority factor.
//!
//! Pure: the state is plain data ([`AccountantState`]) that the `store`
//! crate persists; time is always an argument.

use std::collections::BTreeMap;

use classad::Value;
use config::{Config, ParamError};

/// The lowest (best) real priority: every submitter starts here.
pub const MIN_PRIORITY: f64 = 0.5;
/// The smallest priority factor HTCondor accepts (`-setfactor` below it is
/// raised to it).
pub const MIN_PRIORITY_FACTOR: f64 = 1.0;
/// HTCondor's name for the root of the group tree: submitters in no
/// (configured) accounting group.
pub const ROOT_GROUP: &str = "<none>";

/// The accountant's configuration, read once per (re)configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountantSettings {
    /// `PRIORITY_HALFLIFE`, seconds.
    pub half_life: f64,
    /// `DEFAULT_PRIO_FACTOR`.
    pub default_prio_factor: f64,
    /// `NICE_USER_PRIO_FACTOR`, for submitters named `nice-user.*`.
    pub nice_user_prio_factor: f64,
    /// `REMOTE_PRIO_FACTOR`, for submitters outside `ACCOUNTANT_LOCAL_DOMAIN`.
    pub remote_prio_factor: f64,
    /// `ACCOUNTANT_LOCAL_DOMAIN`; `None`: every submitter is local (HTCondor
    /// then ignores `REMOTE_PRIO_FACTOR`).
    pub local_domain: Option<String>,
    /// `NICE_USER_ACCOUNTING_GROUP_NAME`: the prefix that marks a nice user's
    /// submitter name (`nice-user.alice@domain`).
    pub nice_user_prefix: String,
    /// `NEGOTIATOR_USE_SLOT_WEIGHTS`: usage counts `SlotWeight`, not slots.
    pub use_slot_weights: bool,
    /// `NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION`.
    pub allow_quota_oversubscription: bool,
    /// `NEGOTIATOR_STRICT_ENFORCE_QUOTA`.
    pub strict_enforce_quota: bool,
}

impl Default for AccountantSettings {
    /// HTCondor 25's defaults.
    fn default() -> AccountantSettings {
        AccountantSettings {
            half_life: 86400.0,
            default_prio_factor: 1000.0,
            nice_user_prio_factor: 1e10,
            remote_prio_factor: 1e7,
            local_domain: None,
            nice_user_prefix: "nice-user".into(),
            use_slot_weights: true,
            allow_quota_oversubscription: true,
            strict_enforce_quota: true,
        }
    }
}

/// One accounting group as configured (`GROUP_NAMES` and its knobs).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupConfig {
    /// The full name as written in `GROUP_NAMES` (`group_physics.lhc`);
    /// [`ROOT_GROUP`] for the root.
    pub name: String,
    /// `GROUP_QUOTA_<g>` (slots) when `static_quota`, else
    /// `GROUP_QUOTA_DYNAMIC_<g>` (a fraction of the parent's quota).
    pub config_quota: f64,
    pub static_quota: bool,
    /// `GROUP_ACCEPT_SURPLUS_<g>`, default `GROUP_ACCEPT_SURPLUS`.
    pub accept_surplus: bool,
    /// `GROUP_AUTOREGROUP_<g>`, default `GROUP_AUTOREGROUP`.
    pub autoregroup: bool,
    /// `GROUP_PRIO_FACTOR_<g>`, if set: the factor of the group's submitters.
    pub prio_factor: Option<f64>,
    /// Index of the parent in [`GroupTree::groups`]; `None` for the root.
    pub parent: Option<usize>,
    /// Indexes of the children, in `GROUP_NAMES` order (sorted).
    pub children: Vec<usize>,
}

/// The tree of accounting groups: index 0 is the root ([`ROOT_GROUP`]),
/// the rest in breadth-first order as HTCondor walks them.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupTree {
    pub groups: Vec<GroupConfig>,
    /// `GROUP_AUTOREGROUP`, or any group's `GROUP_AUTOREGROUP_<g>`.
    pub autoregroup: bool,
    /// `GROUP_ACCEPT_SURPLUS`, or any group's `GROUP_ACCEPT_SURPLUS_<g>`.
    pub accept_surplus: bool,
}

impl GroupTree {
    /// A tree with only the root: no accounting groups configured.
    pub fn flat() -> GroupTree {
        GroupTree {
            groups: vec![GroupConfig {
                name: ROOT_GROUP.into(),
                config_quota: 0.0,
                static_quota: false,
                accept_surplus: true,
                autoregroup: false,
                prio_factor: None,
                parent: None,
                children: Vec::new(),
            }],
            autoregroup: false,
            accept_surplus: false,
        }
    }

    /// Builds the tree as HTCondor's `hgq_construct_tree` does: names
    /// sorted case-insensitively (so parents come first), a name whose
    /// parent is not listed or that repeats one is ignored, `<none>` is
    /// reserved.
    pub fn from_config(config: &Config) -> Result<GroupTree, ParamError> {
        let mut names = config.list("GROUP_NAMES")?;
        names.retain(|n| n != ROOT_GROUP);
        names.sort_by_key(|n| n.to_ascii_lowercase());
        let default_surplus = config.boolean("GROUP_ACCEPT_SURPLUS")?.unwrap_or(false);
        let default_regroup = config.boolean("GROUP_AUTOREGROUP")?.unwrap_or(false);
        let mut tree = GroupTree::flat();
        tree.accept_surplus = default_surplus;
        tree.autoregroup = default_regroup;
        // Built depth-first by name order, then renumbered breadth-first.
        let mut nodes = tree.groups.clone();
        for name in names {
            let path: Vec<&str> = name.split('.').collect();
            let mut at = 0usize;
            let mut missing_parent = false;
            for part in &path[..path.len() - 1] {
                match child_named(&nodes, at, part) {
                    Some(c) => at = c,
                    None => {
                        missing_parent = true;
                        break;
                    }
                }
            }
            let leaf = path[path.len() - 1];
            if missing_parent || child_named(&nodes, at, leaf).is_some() {
                continue;
            }
            // HTCondor reads the static quota in [0, INT_MAX] and the dynamic
            // one in [0, 1]; a value outside its range counts as unset.
            let (config_quota, static_quota) = match config.real(&format!("GROUP_QUOTA_{name}"))? {
                Some(q) if (0.0..=i32::MAX as f64).contains(&q) => (q, true),
                _ => match config.real(&format!("GROUP_QUOTA_DYNAMIC_{name}"))? {
                    Some(q) if (0.0..=1.0).contains(&q) => (q, false),
                    _ => (0.0, false),
                },
            };
            let accept_surplus = config
                .boolean(&format!("GROUP_ACCEPT_SURPLUS_{name}"))?
                .unwrap_or(default_surplus);
            let autoregroup = config
                .boolean(&format!("GROUP_AUTOREGROUP_{name}"))?
                .unwrap_or(default_regroup);
            let prio_factor = config
                .real(&format!("GROUP_PRIO_FACTOR_{name}"))?
                .filter(|f| *f != 0.0);
            tree.accept_surplus |= accept_surplus;
            tree.autoregroup |= autoregroup;
            nodes.push(GroupConfig {
                name: name.clone(),
                config_quota,
                static_quota,
                accept_surplus,
                autoregroup,
                prio_factor,
                parent: Some(at),
                children: Vec::new(),
            });
            let new = nodes.len() - 1;
            nodes[at].children.push(new);
        }
        nodes[0].autoregroup = tree.autoregroup;
        tree.groups = breadth_first(nodes);
        Ok(tree)
    }

    /// The index of the group named `name` (any case).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.name.eq_ignore_ascii_case(name))
    }

    /// The group a submitter's usage is charged to, as HTCondor's
    /// `GetAssignedGroup`: `group.user@domain` walks `group`'s path down the
    /// tree as far as it is configured; `user@domain` and unknown groups go
    /// to the root; a name without `@` is a group's own record.
    pub fn assigned_group(&self, submitter: &str) -> usize {
        let Some(at) = submitter.rfind('@') else {
            return self.index_of(submitter).unwrap_or(0);
        };
        let local = &submitter[..at];
        let Some(dot) = local.rfind('.') else {
            return 0;
        };
        let mut g = 0;
        for part in local[..dot].split('.') {
            match child_named(&self.groups, g, part) {
                Some(c) => g = c,
                None => break,
            }
        }
        g
    }
}

fn child_named(nodes: &[GroupConfig], at: usize, part: &str) -> Option<usize> {
    nodes[at].children.iter().copied().find(|&c| {
        let n = &nodes[c].name;
        let last = n.rsplit('.').next().unwrap_or(n);
        last.eq_ignore_ascii_case(part)
    })
}

fn breadth_first(nodes: Vec<GroupConfig>) -> Vec<GroupConfig> {
    let mut order = vec![0usize];
    let mut i = 0;
    while i < order.len() {
        order.extend(nodes[order[i]].children.iter().copied());
        i += 1;
    }
    let mut new_index = vec![0usize; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    order
        .iter()
        .map(|&old| {
            let mut g = nodes[old].clone();
            g.parent = g.parent.map(|p| new_index[p]);
            g.children = g.children.iter().map(|&c| new_index[c]).collect();
            g
        })
        .collect()
}

/// One customer record: a submitter (`user@domain`, `group.user@domain`)
/// or an accounting group (its name, no `@`). The fields are those of
/// HTCondor's `Customer.<name>` ads in `Accountantnew.log`.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomerRecord {
    pub name: String,
    /// Real user priority (never below [`MIN_PRIORITY`]).
    pub priority: f64,
    /// A factor set by `condor_userprio -setfactor`; `None` means the
    /// configured one applies.
    pub priority_factor: Option<f64>,
    /// Slots (matches) in use now.
    pub resources_used: u32,
    /// Weighted slots in use now (`SlotWeight`, or 1 per slot).
    pub weighted_resources_used: f64,
    /// For a group: weighted slots in use in its whole subtree (only
    /// kept for nested groups; drives the group's own priority).
    pub hier_weighted_resources_used: f64,
    /// Slot-seconds not yet charged: matches that ended since the last
    /// update add their time, ones that began subtract theirs.
    pub uncharged_time: f64,
    pub weighted_uncharged_time: f64,
    /// Slot-seconds used since `begin_usage_time` (`condor_userprio -usage`).
    pub accumulated_usage: f64,
    pub weighted_accumulated_usage: f64,
    pub begin_usage_time: i64,
    pub last_usage_time: i64,
}

impl CustomerRecord {
    fn new(name: &str) -> CustomerRecord {
        CustomerRecord {
            name: name.to_string(),
            priority: MIN_PRIORITY,
            priority_factor: None,
            resources_used: 0,
            weighted_resources_used: 0.0,
            hier_weighted_resources_used: 0.0,
            uncharged_time: 0.0,
            weighted_uncharged_time: 0.0,
            accumulated_usage: 0.0,
            weighted_accumulated_usage: 0.0,
            begin_usage_time: 0,
            last_usage_time: 0,
        }
    }
}

/// One match the accountant knows of: a slot claimed by a customer (the
/// `Resource.<name>` ads of HTCondor's accountant).
#[derive(Clone, Debug, PartialEq)]
pub struct MatchRecord {
    /// The slot (HTCondor: `Name@StartdIpAddr`).
    pub resource: String,
    pub customer: String,
    /// Slots the match stands for: 1, or a submitter's total when the
    /// caller gave only totals ([`Accountant::update`]).
    pub slots: u32,
    pub slot_weight: f64,
    pub start_time: i64,
}

/// Everything the accountant must remember across restarts: plain data,
/// sorted by name, for the `store` crate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccountantState {
    /// When priorities were last brought up to date.
    pub last_update: i64,
    pub customers: Vec<CustomerRecord>,
    pub matches: Vec<MatchRecord>,
}

/// What the hierarchical group quota algorithm gives one group for a cycle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupAllocation {
    /// The group's own quota (slots), from static and dynamic quotas.
    pub quota: f64,
    /// The quota of the group's whole subtree.
    pub subtree_quota: f64,
    /// What the group may use this cycle: its demand up to its quota, plus
    /// any surplus it was given.
    pub allocated: f64,
    /// Demand (running plus idle, weighted) the allocation did not cover.
    pub unmet: f64,
}

/// The accountant: configuration plus state.
#[derive(Clone, Debug)]
pub struct Accountant {
    pub settings: AccountantSettings,
    pub groups: GroupTree,
    last_update: i64,
    customers: BTreeMap<String, CustomerRecord>,
    matches: BTreeMap<String, MatchRecord>,
    /// Per group: when it last got a round-robin share of remainders (in
    /// memory only, as in HTCondor).
    rr_time: Vec<f64>,
    /// The last quotas computed by [`Accountant::allocate`] or
    /// [`Accountant::group_quotas`], by group index.
    last_quotas: Vec<GroupAllocation>,
}

impl Accountant {
    pub fn new(settings: AccountantSettings, groups: GroupTree) -> Accountant {
        let n = groups.groups.len();
        let mut a = Accountant {
            settings,
            groups,
            last_update: 0,
            customers: BTreeMap::new(),
            matches: BTreeMap::new(),
            rr_time: vec![0.0; n],
            last_quotas: Vec::new(),
        };
        // As HTCondor, every configured group has a record from the start.
        for g in 0..n {
            let name = a.groups.groups[g].name.clone();
            a.record_mut(&name);
        }
        a
    }

    /// Reads `PRIORITY_HALFLIFE`, the priority factors, the group tree and
    /// the negotiator's quota knobs.
    pub fn from_config(config: &Config) -> Result<Accountant, ParamError> {
        let d = AccountantSettings::default();
        let settings = AccountantSettings {
            half_life: config.real("PRIORITY_HALFLIFE")?.unwrap_or(d.half_life),
            default_prio_factor: config
                .real("DEFAULT_PRIO_FACTOR")?
                .unwrap_or(d.default_prio_factor),
            nice_user_prio_factor: config
                .real("NICE_USER_PRIO_FACTOR")?
                .unwrap_or(d.nice_user_prio_factor),
            remote_prio_factor: config
                .real("REMOTE_PRIO_FACTOR")?
                .unwrap_or(d.remote_prio_factor),
            local_domain: config.get("ACCOUNTANT_LOCAL_DOMAIN")?,
            nice_user_prefix: config
                .get("NICE_USER_ACCOUNTING_GROUP_NAME")?
                .unwrap_or(d.nice_user_prefix),
            use_slot_weights: config
                .boolean("NEGOTIATOR_USE_SLOT_WEIGHTS")?
                .unwrap_or(d.use_slot_weights),
            allow_quota_oversubscription: config
                .boolean("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION")?
                .unwrap_or(false),
            strict_enforce_quota: config
                .boolean("NEGOTIATOR_STRICT_ENFORCE_QUOTA")?
                .unwrap_or(true),
        };
        Ok(Accountant::new(settings, GroupTree::from_config(config)?))
    }

    /// Restores the state saved by [`Accountant::state`].
    pub fn with_state(mut self, state: AccountantState) -> Accountant {
        self.last_update = state.last_update;
        for r in state.customers {
            self.customers.insert(r.name.clone(), r);
        }
        self.matches = state
            .matches
            .into_iter()
            .map(|m| (m.resource.clone(), m))
            .collect();
        self
    }

    /// The state to persist.
    pub fn state(&self) -> AccountantState {
        AccountantState {
            last_update: self.last_update,
            customers: self.customers.values().cloned().collect(),
            matches: self.matches.values().cloned().collect(),
        }
    }

    pub fn last_update(&self) -> i64 {
        self.last_update
    }

    /// The record of `name`, if it has one.
    pub fn record(&self, name: &str) -> Option<&CustomerRecord> {
        self.customers.get(name)
    }

    /// Every record, by name.
    pub fn records(&self) -> impl Iterator<Item = &CustomerRecord> {
        self.customers.values()
    }

    fn record_mut(&mut self, name: &str) -> &mut CustomerRecord {
        self.customers
            .entry(name.to_string())
            .or_insert_with(|| CustomerRecord::new(name))
    }

    // ---- priorities -------------------------------------------------------

    /// The real user priority: smoothed recent usage, never below 0.5.
    pub fn real_priority(&self, customer: &str) -> f64 {
        self.customers
            .get(customer)
            .map_or(MIN_PRIORITY, |r| r.priority.max(MIN_PRIORITY))
    }

    /// The priority factor in force, chosen as HTCondor's
    /// `GetPriorityFactor`: one set by `-setfactor`; else a nice user's;
    /// else the group's `GROUP_PRIO_FACTOR_<g>`; else a remote user's (only
    /// when `ACCOUNTANT_LOCAL_DOMAIN` is set and differs); else the default.
    pub fn priority_factor(&self, customer: &str) -> f64 {
        if let Some(f) = self.customers.get(customer).and_then(|r| r.priority_factor) {
            if f >= MIN_PRIORITY_FACTOR {
                return f;
            }
        }
        let s = &self.settings;
        if !s.nice_user_prefix.is_empty() && customer.starts_with(s.nice_user_prefix.as_str()) {
            return s.nice_user_prio_factor;
        }
        let g = self.groups.assigned_group(customer);
        if let Some(f) = self.groups.groups[g].prio_factor {
            return f;
        }
        if let Some(local) = &s.local_domain {
            let domain = customer.find('@').map_or("", |at| &customer[at + 1..]);
            if local != domain {
                return s.remote_prio_factor;
            }
        }
        s.default_prio_factor
    }

    /// The effective user priority: real priority × priority factor. Lower
    /// is better; the pool is shared in inverse proportion to it.
    pub fn effective_priority(&self, customer: &str) -> f64 {
        self.real_priority(customer) * self.priority_factor(customer)
    }

    /// `condor_userprio -setfactor`: factors below 1 are raised to 1, as
    /// HTCondor does.
    pub fn set_factor(&mut self, customer: &str, factor: f64) {
        let f = if factor.is_finite() {
            factor.max(MIN_PRIORITY_FACTOR)
        } else {
            MIN_PRIORITY_FACTOR
        };
        self.record_mut(customer).priority_factor = Some(f);
    }

    /// `condor_userprio -setprio`: sets the real priority.
    pub fn set_priority(&mut self, customer: &str, priority: f64) {
        self.record_mut(customer).priority = priority.max(MIN_PRIORITY);
    }

    /// `condor_userprio -resetusage`.
    pub fn reset_usage(&mut self, customer: &str, now: i64) {
        let r = self.record_mut(customer);
        r.accumulated_usage = 0.0;
        r.weighted_accumulated_usage = 0.0;
        r.begin_usage_time = now;
    }

    /// `condor_userprio -delete`.
    pub fn delete_record(&mut self, customer: &str) -> bool {
        self.customers.remove(customer).is_some()
    }

    /// Weighted slots `customer` uses now (a group's own record for a
    /// group name).
    pub fn resources_in_use(&self, customer: &str) -> f64 {
        self.customers.get(customer).map_or(0.0, |r| {
            if self.settings.use_slot_weights {
                r.weighted_resources_used
            } else {
                r.resources_used as f64
            }
        })
    }

    // ---- charging usage ---------------------------------------------------

    /// Brings every priority up to `now` (HTCondor's `UpdatePriorities`).
    /// A clock that went backwards only moves the update time.
    pub fn update_priorities(&mut self, now: i64) {
        let passed = now - self.last_update;
        if passed == 0 {
            return;
        }
        if passed < 0 {
            self.last_update = now;
            return;
        }
        let aging = 0.5f64.powf(passed as f64 / self.settings.half_life);
        let t = passed as f64;
        for r in self.customers.values_mut() {
            let recent = r.resources_used as f64 + r.uncharged_time / t;
            let mut weighted_recent = r.weighted_resources_used + r.weighted_uncharged_time / t;
            if r.hier_weighted_resources_used > 0.0 {
                weighted_recent = r.hier_weighted_resources_used;
            }
            r.priority = (r.priority.max(MIN_PRIORITY) * aging + weighted_recent * (1.0 - aging))
                .max(MIN_PRIORITY);
            r.accumulated_usage += r.resources_used as f64 * t + r.uncharged_time;
            r.weighted_accumulated_usage +=
                r.weighted_resources_used * t + r.weighted_uncharged_time;
            if r.accumulated_usage > 0.0 && r.begin_usage_time == 0 {
                r.begin_usage_time = now;
            }
            if recent > 0.0 {
                r.last_usage_time = now;
            }
            r.uncharged_time = 0.0;
            r.weighted_uncharged_time = 0.0;
        }
        self.last_update = now;
    }

    /// Records that `customer` claimed `resource` at `now` (HTCondor's
    /// `AddMatch`): one more slot in use for the customer and its group,
    /// and the part of the interval before `now` taken back as uncharged
    /// time, so the next update charges only the time the match existed.
    pub fn add_match(&mut self, customer: &str, resource: &str, slot_weight: f64, now: i64) {
        let w = if self.settings.use_slot_weights && slot_weight >= 0.0 {
            slot_weight
        } else {
            1.0
        };
        self.add_match_weighted(customer, resource, 1, w, now);
    }

    fn add_match_weighted(&mut self, customer: &str, resource: &str, slots: u32, w: f64, now: i64) {
        if let Some(m) = self.matches.get(resource) {
            if m.customer == customer {
                return;
            }
            self.remove_match(resource, now);
        }
        let since = (now - self.last_update) as f64;
        let group = self.groups.assigned_group(customer);
        let group_name = self.groups.groups[group].name.clone();
        for name in [customer, group_name.as_str()] {
            let r = self.record_mut(name);
            r.resources_used += slots;
            r.weighted_resources_used += w;
            r.uncharged_time -= since * slots as f64;
            r.weighted_uncharged_time -= since * w;
            if name == group_name {
                break; // a group's own record is charged once
            }
        }
        self.charge_hierarchy(group, w);
        self.matches.insert(
            resource.to_string(),
            MatchRecord {
                resource: resource.to_string(),
                customer: customer.to_string(),
                slots,
                slot_weight: w,
                start_time: now,
            },
        );
    }

    /// Records that the match on `resource` ended at `now` (HTCondor's
    /// `RemoveMatch`): the time it ran since the last update becomes
    /// uncharged time, charged at the next update.
    pub fn remove_match(&mut self, resource: &str, now: i64) -> bool {
        let Some(m) = self.matches.remove(resource) else {
            return false;
        };
        let ran = (now - m.start_time.max(self.last_update)) as f64;
        let group = self.groups.assigned_group(&m.customer);
        let group_name = self.groups.groups[group].name.clone();
        for name in [m.customer.as_str(), group_name.as_str()] {
            let r = self.record_mut(name);
            r.resources_used = r.resources_used.saturating_sub(m.slots);
            r.weighted_resources_used = (r.weighted_resources_used - m.slot_weight).max(0.0);
            r.uncharged_time += ran * m.slots as f64;
            r.weighted_uncharged_time += ran * m.slot_weight;
            if name == group_name {
                break;
            }
        }
        self.charge_hierarchy(group, -m.slot_weight);
        true
    }

    /// Nested groups (`a.b.c`) charge their usage to every ancestor's
    /// subtree total, so a parent's priority reflects its children.
    fn charge_hierarchy(&mut self, group: usize, w: f64) {
        if group == 0 {
            return;
        }
        let mut name = self.groups.groups[group].name.clone();
        loop {
            let r = self.record_mut(&name);
            r.hier_weighted_resources_used = (r.hier_weighted_resources_used + w).max(0.0);
            match name.rfind('.') {
                Some(dot) => name.truncate(dot),
                None => break,
            }
        }
    }

    /// Makes the matches the accountant knows agree with the claimed slots
    /// (HTCondor's `CheckMatches`): each `(resource, customer, weight)` is
    /// a slot in Claimed or Preempting state and who it is charged to
    /// (its `AccountingGroup`, else `RemoteUser`). Matches no longer
    /// claimed by the same customer end at `now`.
    pub fn check_matches<'a>(
        &mut self,
        claimed: impl IntoIterator<Item = (&'a str, &'a str, f64)>,
        now: i64,
    ) {
        let claimed: BTreeMap<&str, (&str, f64)> =
            claimed.into_iter().map(|(r, c, w)| (r, (c, w))).collect();
        let stale: Vec<String> = self
            .matches
            .values()
            .filter(|m| claimed.get(m.resource.as_str()).map(|c| c.0) != Some(m.customer.as_str()))
            .map(|m| m.resource.clone())
            .collect();
        for r in stale {
            self.remove_match(&r, now);
        }
        for (resource, (customer, w)) in claimed {
            self.add_match(customer, resource, w, now);
        }
    }

    /// The simple form for a caller that knows only totals (the
    /// simulator): ages priorities to `now` with the usage in force since
    /// the last update, then makes `usage` (weighted slots per submitter)
    /// the usage in force from `now` on. Submitters absent from `usage`
    /// use nothing from `now`. It replaces every match recorded before:
    /// use it or the match calls, not both.
    pub fn update(&mut self, now: i64, usage: &BTreeMap<String, f64>) {
        self.update_priorities(now);
        let resources: Vec<String> = self.matches.keys().cloned().collect();
        for r in resources {
            self.remove_match(&r, now);
        }
        for (customer, &w) in usage {
            if w > 0.0 {
                // One aggregate match per submitter carries its whole usage.
                let key = format!("<total>{customer}");
                self.add_match_weighted(customer, &key, w.round().max(1.0) as u32, w, now);
            }
        }
    }

    /// Charges `weighted_slots` used from `from` to `to` that no match
    /// recorded (a job that started and ended between two updates). Time
    /// before the last update is not charged: it has already been aged.
    pub fn charge(&mut self, customer: &str, weighted_slots: f64, from: i64, to: i64) {
        let from = from.max(self.last_update);
        if to <= from || weighted_slots <= 0.0 {
            return;
        }
        let secs = (to - from) as f64;
        let group = self.groups.assigned_group(customer);
        let group_name = self.groups.groups[group].name.clone();
        for name in [customer, group_name.as_str()] {
            let r = self.record_mut(name);
            r.uncharged_time += secs;
            r.weighted_uncharged_time += secs * weighted_slots;
            if name == group_name {
                break;
            }
        }
    }

    // ---- accounting groups ------------------------------------------------

    /// The accounting group `submitter` is charged to ([`ROOT_GROUP`] if
    /// none).
    pub fn group_of(&self, submitter: &str) -> &str {
        &self.groups.groups[self.groups.assigned_group(submitter)].name
    }

    /// Each group's quota for a pool of `pool_size` weighted slots, as
    /// HTCondor's `hgq_assign_quotas`: static quotas first (scaled down if
    /// they exceed what the parent has, unless quota oversubscription is
    /// allowed), dynamic quotas share what is left in proportion (scaled to
    /// sum to at most 1), and a parent keeps what its children do not take.
    pub fn group_quotas(&mut self, pool_size: f64) -> BTreeMap<String, f64> {
        let mut alloc = vec![GroupAllocation::default(); self.groups.groups.len()];
        self.assign_quotas(0, pool_size, &mut alloc);
        let out = self
            .groups
            .groups
            .iter()
            .zip(&alloc)
            .map(|(g, a)| (g.name.clone(), a.quota))
            .collect();
        self.last_quotas = alloc;
        out
    }

    fn assign_quotas(&self, g: usize, quota: f64, alloc: &mut [GroupAllocation]) {
        if quota <= 0.0 {
            return;
        }
        let oversub = self.settings.allow_quota_oversubscription;
        alloc[g].subtree_quota = quota;
        let node = &self.groups.groups[g];
        let (mut sqsum, mut dqsum) = (0.0, 0.0);
        for &c in &node.children {
            let child = &self.groups.groups[c];
            if child.static_quota {
                sqsum += child.config_quota;
            } else {
                dqsum += child.config_quota;
            }
        }
        let sqa = if oversub { sqsum } else { sqsum.min(quota) };
        let dqa = (quota - sqa).max(0.0);
        let zs = if sqsum > 0.0 { sqsum } else { 1.0 };
        let zd = f64::max(dqsum, 1.0);
        let mut chq = 0.0;
        for &c in &node.children {
            let child = &self.groups.groups[c];
            let q = if child.static_quota {
                child.config_quota * (sqa / zs)
            } else {
                child.config_quota * (dqa / zd)
            }
            .max(0.0);
            self.assign_quotas(c, q, alloc);
            chq += q;
        }
        // The root's own "quota" is what its children leave: counting the
        // whole pool there would count surplus twice.
        alloc[g].quota = if oversub && g != 0 {
            quota
        } else {
            quota - chq
        }
        .max(0.0);
    }

    /// Quotas and this cycle's allocation per group, given each group's
    /// demand (weighted running plus idle jobs of its submitters, as their
    /// submitter ads say; keyed by group or by submitter name): HTCondor's `hgq_assign_quotas`, then
    /// `hgq_fairshare` (each group gets its demand up to its quota; what
    /// groups leave unused is surplus, shared within each subtree with the
    /// groups that accept surplus, in proportion to their quotas, then
    /// equally among zero-quota groups), then, when slots are not weighted,
    /// fractional remainders handed out round-robin to the groups served
    /// least recently. A group's allocation is its limit for the cycle.
    pub fn allocate(
        &mut self,
        pool_size: f64,
        demand: &BTreeMap<String, f64>,
        now: i64,
    ) -> BTreeMap<String, GroupAllocation> {
        let n = self.groups.groups.len();
        let mut alloc = vec![GroupAllocation::default(); n];
        self.assign_quotas(0, pool_size, &mut alloc);
        let mut hgq = Hgq {
            tree: &self.groups,
            quota: alloc.iter().map(|a| a.quota).collect(),
            subtree_quota: alloc.iter().map(|a| a.subtree_quota).collect(),
            requested: vec![0.0; n],
            subtree_requested: vec![0.0; n],
            allocated: vec![0.0; n],
            accept: self
                .groups
                .groups
                .iter()
                .map(|g| g.accept_surplus)
                .collect(),
            rr: vec![false; n],
            rr_time: self.rr_time.clone(),
            subtree_rr_time: vec![0.0; n],
        };
        for (name, &d) in demand {
            let g = self.groups.assigned_group(name);
            hgq.requested[g] += d.max(0.0);
        }
        hgq.fairshare(0);
        if !self.settings.use_slot_weights {
            hgq.recover_remainders(0);
        }
        if self.groups.autoregroup {
            // Regrouped submitters negotiate in the root for the whole pool.
            hgq.quota[0] = pool_size;
            hgq.allocated[0] = pool_size;
            alloc[0].quota = pool_size;
        }
        for (g, a) in alloc.iter_mut().enumerate() {
            a.allocated = hgq.allocated[g];
            a.unmet = hgq.requested[g].max(0.0);
            if hgq.rr[g] || hgq.requested[g] <= 0.0 {
                self.rr_time[g] = now as f64;
            }
        }
        self.last_quotas = alloc.clone();
        self.groups
            .groups
            .iter()
            .zip(alloc)
            .map(|(g, a)| (g.name.clone(), a))
            .collect()
    }

    /// HTCondor's `strict_enforce_quota` (when
    /// `NEGOTIATOR_STRICT_ENFORCE_QUOTA`): a group's limit of `slots`
    /// (absolute, usage included) is cut so that no ancestor that accepts
    /// no surplus goes over its quota. Uses the quotas of the last
    /// [`Accountant::allocate`] and the usage the accountant records.
    pub fn enforce_strict_quota(&self, group: &str, slots: f64) -> f64 {
        if !self.settings.strict_enforce_quota || self.last_quotas.is_empty() {
            return slots;
        }
        let Some(g) = self.groups.index_of(group) else {
            return slots;
        };
        let usage = |i: usize| self.resources_in_use(&self.groups.groups[i].name);
        let subtree_usage = |i: usize| -> f64 {
            let mut total = 0.0;
            let mut stack = vec![i];
            while let Some(x) = stack.pop() {
                total += usage(x);
                stack.extend(self.groups.groups[x].children.iter().copied());
            }
            total
        };
        let mut new = slots - usage(g);
        let mut at = Some(g);
        while let Some(l) = at {
            let node = &self.groups.groups[l];
            if !node.accept_surplus {
                let cap = if node.static_quota {
                    node.config_quota
                } else {
                    self.last_quotas[l].subtree_quota
                };
                let available = (cap - subtree_usage(l)).max(0.0);
                new = new.min(available);
            }
            at = node.parent;
        }
        new + usage(g)
    }

    /// The quota of `group` from the last allocation, if it was computed.
    pub fn quota_of(&self, group: &str) -> Option<f64> {
        let g = self.groups.index_of(group)?;
        self.last_quotas.get(g).map(|a| a.quota)
    }

    // ---- attributes for policy expressions -------------------------------

    /// The ephemeral attributes the negotiator puts in the *job* ad while
    /// it is matched (`SubmitterUserPrio`, `SubmittorPrio`, ...), for
    /// `PREEMPTION_REQUIREMENTS`, `PREEMPTION_RANK` and the like.
    /// `negotiating_group` is the group the submitter negotiates under (the
    /// root when it was regrouped).
    pub fn submitter_attributes(
        &self,
        submitter: &str,
        negotiating_group: Option<&str>,
    ) -> Vec<(&'static str, Value)> {
        let prio = self.effective_priority(submitter);
        let group = self.group_of(submitter).to_string();
        let negotiating = negotiating_group.unwrap_or(&group).to_string();
        let mut v = vec![
            ("SubmitterUserPrio", Value::Real(prio)),
            ("SubmittorPrio", Value::Real(prio)),
            (
                "SubmitterUserResourcesInUse",
                Value::Real(self.resources_in_use(submitter)),
            ),
            ("SubmitterGroup", Value::str(&group)),
            ("SubmitterNegotiatingGroup", Value::str(&negotiating)),
            (
                "SubmitterAutoregroup",
                Value::Bool(!negotiating.eq_ignore_ascii_case(&group)),
            ),
        ];
        if group != ROOT_GROUP {
            v.push((
                "SubmitterGroupResourcesInUse",
                Value::Real(self.resources_in_use(&group)),
            ));
            if let Some(q) = self.quota_of(&group) {
                v.push(("SubmitterGroupQuota", Value::Real(q)));
            }
        }
        v
    }

    /// The ephemeral attributes the negotiator puts in a claimed *slot*
    /// ad about the customer it runs for (`RemoteUserPrio`, ...).
    pub fn remote_attributes(
        &self,
        remote: &str,
        negotiating_group: Option<&str>,
    ) -> Vec<(&'static str, Value)> {
        let group = self.group_of(remote).to_string();
        let negotiating = negotiating_group.unwrap_or(&group).to_string();
        let mut v = vec![
            (
                "RemoteUserPrio",
                Value::Real(self.effective_priority(remote)),
            ),
            (
                "RemoteUserResourcesInUse",
                Value::Real(self.resources_in_use(remote)),
            ),
            ("RemoteGroup", Value::str(&group)),
            ("RemoteNegotiatingGroup", Value::str(&negotiating)),
            (
                "RemoteAutoregroup",
                Value::Bool(!negotiating.eq_ignore_ascii_case(&group)),
            ),
        ];
        if group != ROOT_GROUP {
            v.push((
                "RemoteGroupResourcesInUse",
                Value::Real(self.resources_in_use(&group)),
            ));
            if let Some(q) = self.quota_of(&group) {
                v.push(("RemoteGroupQuota", Value::Real(q)));
            }
        }
        v
    }
}

/// Working values of one run of the hierarchical group quota algorithm,
/// by group index (HTCondor keeps them in its `GroupEntry` nodes).
struct Hgq<'t> {
    tree: &'t GroupTree,
    quota: Vec<f64>,
    subtree_quota: Vec<f64>,
    requested: Vec<f64>,
    subtree_requested: Vec<f64>,
    allocated: Vec<f64>,
    accept: Vec<bool>,
    rr: Vec<bool>,
    rr_time: Vec<f64>,
    subtree_rr_time: Vec<f64>,
}

impl Hgq<'_> {
    /// Gives each group its demand up to its quota; returns the surplus
    /// left in the subtree after sharing it inside.
    fn fairshare(&mut self, g: usize) -> f64 {
        self.allocated[g] = self.requested[g].min(self.quota[g]);
        self.requested[g] -= self.allocated[g];
        self.subtree_requested[g] = self.requested[g];
        let mut surplus = self.quota[g] - self.allocated[g];
        let children = self.tree.groups[g].children.clone();
        if children.is_empty() {
            return surplus;
        }
        for c in children {
            surplus += self.fairshare(c);
            if self.accept[c] {
                self.subtree_requested[g] += self.subtree_requested[c];
            }
        }
        self.allocate_surplus(g, surplus)
    }

    /// A group shares surplus on an equal footing with its children: all
    /// of them if it covers every request, else by quota, then equally
    /// among zero-quota groups.
    fn allocate_surplus(&mut self, g: usize, mut surplus: f64) -> f64 {
        if surplus <= 0.0 {
            return 0.0;
        }
        if self.subtree_requested[g] <= 0.0 {
            return surplus;
        }
        let mut members = self.tree.groups[g].children.clone();
        members.push(g);
        let mut given = vec![0.0; members.len()];
        // The subtree root stands in as one more child that accepts surplus.
        let (save_accept, save_sq) = (self.accept[g], self.subtree_quota[g]);
        self.accept[g] = true;
        self.subtree_quota[g] = self.quota[g];
        let mut requested = self.subtree_requested[g];
        self.subtree_requested[g] = self.requested[g];
        let wants: Vec<f64> = members
            .iter()
            .map(|&m| {
                if self.accept[m] && self.subtree_requested[m] > 0.0 {
                    self.subtree_requested[m]
                } else {
                    0.0
                }
            })
            .collect();
        if surplus >= requested {
            given.clone_from(&wants);
            surplus -= requested;
            requested = 0.0;
        } else {
            let mut wants = wants;
            for by_quota in [true, false] {
                self.surplus_loop(
                    by_quota,
                    &members,
                    &mut given,
                    &mut wants,
                    &mut surplus,
                    &mut requested,
                );
            }
        }
        for (i, &m) in members[..members.len() - 1].iter().enumerate() {
            if given[i] > 0.0 {
                self.allocate_surplus(m, given[i]);
            }
        }
        let own = given[members.len() - 1];
        self.allocated[g] += own;
        self.requested[g] -= own;
        self.subtree_requested[g] = requested;
        self.accept[g] = save_accept;
        self.subtree_quota[g] = save_sq;
        surplus
    }

    fn surplus_loop(
        &self,
        by_quota: bool,
        members: &[usize],
        given: &mut [f64],
        wants: &mut [f64],
        surplus: &mut f64,
        requested: &mut f64,
    ) {
        while *surplus > 0.0 {
            let weight = |i: usize| {
                if by_quota {
                    self.subtree_quota[members[i]]
                } else {
                    1.0
                }
            };
            let z: f64 = (0..members.len())
                .filter(|&i| wants[i] > 0.0)
                .map(weight)
                .sum();
            if z <= 0.0 {
                break;
            }
            let mut never_capped = true;
            let mut sum = 0.0;
            for i in 0..members.len() {
                if wants[i] > 0.0 {
                    let mut a = *surplus * (weight(i) / z);
                    if a > wants[i] {
                        a = wants[i];
                        never_capped = false;
                    }
                    given[i] += a;
                    wants[i] -= a;
                    sum += a;
                }
            }
            *surplus -= sum;
            *requested -= sum;
            // Rounding can leave dust; HTCondor zeroes it to guarantee the
            // loop ends.
            if never_capped || *surplus < 0.0 {
                *surplus = 0.0;
            }
        }
    }

    /// With unweighted slots, allocations are whole slots: fractions go
    /// back into a surplus handed out one slot at a time.
    fn recover_remainders(&mut self, g: usize) -> f64 {
        let mut surplus = self.allocated[g] - self.allocated[g].floor();
        self.allocated[g] -= surplus;
        self.requested[g] += surplus;
        self.allocated[g] = (self.allocated[g] + 0.5).floor();
        self.requested[g] = (self.requested[g] + 0.5).floor();
        self.subtree_requested[g] = self.requested[g];
        self.subtree_rr_time[g] = if self.requested[g] > 0.0 {
            self.rr_time[g]
        } else {
            f64::MAX
        };
        let children = self.tree.groups[g].children.clone();
        if children.is_empty() {
            return surplus;
        }
        for c in children {
            surplus += self.recover_remainders(c);
            if self.accept[c] {
                self.subtree_requested[g] += self.subtree_requested[c];
                if self.subtree_requested[c] > 0.0 {
                    self.subtree_rr_time[g] = self.subtree_rr_time[g].min(self.subtree_rr_time[c]);
                }
            }
        }
        self.round_robin(g, surplus)
    }

    fn round_robin(&mut self, g: usize, mut surplus: f64) -> f64 {
        // Fractions that add up to a whole slot can sum to 0.9999999999:
        // HTCondor loses that slot for the cycle; we round it back.
        if (surplus - surplus.round()).abs() < 1e-6 {
            surplus = surplus.round();
        }
        self.subtree_requested[g] = self.subtree_requested[g].floor();
        if self.subtree_requested[g] <= 0.0 || surplus < 1.0 {
            return surplus;
        }
        let mut members = self.tree.groups[g].children.clone();
        members.push(g);
        let mut given = vec![0.0; members.len()];
        let (save_accept, save_rr) = (self.accept[g], self.subtree_rr_time[g]);
        self.accept[g] = true;
        self.subtree_rr_time[g] = self.rr_time[g];
        let mut requested = self.subtree_requested[g];
        self.subtree_requested[g] = self.requested[g];
        let mut wants: Vec<f64> = members
            .iter()
            .map(|&m| {
                if self.accept[m] && self.subtree_requested[m] > 0.0 {
                    self.subtree_requested[m]
                } else {
                    0.0
                }
            })
            .collect();
        let mut outstanding = wants.iter().filter(|w| **w > 0.0).count() as f64;
        // Least recently served first.
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| {
            self.subtree_rr_time[members[a]].total_cmp(&self.subtree_rr_time[members[b]])
        });
        while surplus >= 1.0 && requested > 0.0 {
            let amax = f64::max(1.0, (surplus / outstanding).floor());
            outstanding = 0.0;
            let mut sum = 0.0;
            for &i in &order {
                if wants[i] > 0.0 {
                    let a = wants[i].min(amax);
                    given[i] += a;
                    wants[i] -= a;
                    sum += a;
                    surplus -= a;
                    requested -= a;
                    self.rr[members[i]] = true;
                    if wants[i] > 0.0 {
                        outstanding += 1.0;
                    }
                    if surplus < amax {
                        break;
                    }
                }
            }
            if sum < 1.0 {
                break;
            }
        }
        for (i, &m) in members[..members.len() - 1].iter().enumerate() {
            if given[i] > 0.0 {
                self.round_robin(m, given[i]);
            }
        }
        let own = given[members.len() - 1];
        self.allocated[g] += own;
        self.requested[g] -= own;
        self.subtree_requested[g] = requested;
        self.accept[g] = save_accept;
        self.subtree_rr_time[g] = save_rr;
        surplus
    }
}

/// The cycle reads priorities straight from the accountant.
impl crate::cycle::Priorities for Accountant {
    fn effective_priority(&self, submitter: &str) -> f64 {
        Accountant::effective_priority(self, submitter)
    }

    fn resources_in_use(&self, submitter: &str) -> f64 {
        Accountant::resources_in_use(self, submitter)
    }
}
