//! Running on VM hosts (`special-environments.txt`, "running on a virtual
//! machine host"): HTCondor installed both on a host and on the inner
//! virtual machines it runs, each a startd of its own, with the illusion
//! of two platforms kept to one job at a time.
//!
//! - The host's configuration names its inner machines (`VMP_VM_LIST`);
//!   while one of them runs a job, the host's START is overridden False.
//! - An inner machine's configuration names its host (`VMP_HOST_MACHINE`);
//!   while the host runs a job, the inner machine's START is overridden
//!   False, and each of its slot ads carries the host's machine attributes
//!   with the `HOST_` prefix, so its own START can ask whether the host is
//!   busy with other things (`HOST_KeyboardIdle`, `HOST_TotalLoadAvg`).
//!
//! HTCondor's old startds told each other directly; the modern form here
//! reads the peers' slot ads from the collector (the startd's shell asks
//! it, `daemons::execute`), since every startd publishes its ads there at
//! each poll anyway. This module is pure: given the configuration, the
//! peers' ads and `now`, it says what the collector is asked
//! ([`VmPeers::constraint`]) and what follows from its answer
//! ([`VmPeers::assess`]); the engine applies that with
//! [`crate::Startd::set_vm_peers`].

use classad::{ClassAd, Env, Expr, Value};
use config::Config;

use crate::policy::PolicyError;

/// The parameters this module reads (checked against the parameter table
/// by a test).
pub const PARAMS_READ: &[&str] = &["VMP_HOST_MACHINE", "VMP_VM_LIST"];

/// Who this startd's peers are: its host, its inner virtual machines, or
/// both (an inner machine that is itself a host, as nested virtualization
/// makes).
#[derive(Clone, Debug)]
pub struct VmPeers {
    /// VMP_HOST_MACHINE: the host this inner machine runs on.
    pub host: Option<String>,
    /// VMP_VM_LIST: the inner machines this host runs.
    pub vms: Vec<String>,
    /// This startd's own name (`slotN@NAME`): its own ads are never a
    /// peer's, even where a peer's name would match them (several startds
    /// of one host name, as a test bed on one machine has).
    pub own_startd: String,
    /// The collector's constraint, and each peer's part of it, built once.
    constraint: Expr,
    host_picks: Option<Expr>,
    vm_picks: Vec<(String, Expr)>,
}

/// The same peers (the constraint follows from them).
impl PartialEq for VmPeers {
    fn eq(&self, other: &VmPeers) -> bool {
        (&self.host, &self.vms, &self.own_startd) == (&other.host, &other.vms, &other.own_startd)
    }
}

/// What the peers' ads say now: what the engine publishes and overrides.
#[derive(Clone, Debug, Default)]
pub struct PeerView {
    /// `HOST_<attr>` and the host's value, for each of the inner machine's
    /// slot ads (none on a host, or when the host's ads are not known).
    pub host_attrs: Vec<(String, Expr)>,
    /// Why START is overridden False now, if it is: the peer and the slot
    /// that runs a job.
    pub start_override: Option<String>,
}

impl PeerView {
    /// The same view (the attributes' values compared as ClassAds compare
    /// them: `1` and `1.0` differ, strings by case).
    pub fn same_as(&self, other: &PeerView) -> bool {
        self.start_override == other.start_override
            && self.host_attrs.len() == other.host_attrs.len()
            && self
                .host_attrs
                .iter()
                .zip(&other.host_attrs)
                .all(|((a, x), (b, y))| a == b && classad::same::same_expr(x, y))
    }
}

/// Attributes of the host's ad that are not given a `HOST_` twin: what
/// kind of ad it is (meaningless on another ad), and the host's own
/// `HOST_` attributes where the host is itself an inner machine (so ads do
/// not grow a prefix per level).
fn left_out(name: &str) -> bool {
    name.eq_ignore_ascii_case("MyType")
        || name.eq_ignore_ascii_case("TargetType")
        || name
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("HOST_"))
}

/// A slot is running a job while it is Claimed (whatever its activity: a
/// claim is a job started or about to be) or Preempting (its job is still
/// leaving). Matched is not counted: the match may never become a claim,
/// and the claim's activation is checked against START again. Backfill is
/// not counted either: the backfill client is no HTCondor job and gives
/// way to a real one by its own policy.
fn runs_a_job(ad: &ClassAd, env: &Env) -> Option<String> {
    let state = match ad.eval_attr("State", env) {
        Value::Str(s) => s.to_string(),
        _ => return None,
    };
    if !(state.eq_ignore_ascii_case("Claimed") || state.eq_ignore_ascii_case("Preempting")) {
        return None;
    }
    let activity = match ad.eval_attr("Activity", env) {
        Value::Str(s) => s.to_string(),
        _ => "?".into(),
    };
    Some(format!("{state}/{activity}"))
}

fn text_attr(ad: &ClassAd, name: &str, env: &Env) -> Option<String> {
    match ad.eval_attr(name, env) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// A ClassAd string literal of `s`.
fn quoted(s: &str) -> String {
    Expr::from_value(Value::from(s)).to_string()
}

/// The constraint that picks the ads of the machine `name`: its `Machine`
/// (ClassAd `==` on strings ignores case), or, for a short name, the
/// `Machine` it begins (`vm1` names `vm1.example.org`: an admin writes
/// names as the host resolves them), or the address its daemon listens at
/// (`VMP_VM_LIST` may give IP addresses).
fn names_machine(name: &str) -> String {
    let dotted = format!("{name}.");
    // An IPv6 address is bracketed in a sinful string.
    let sinful = if name.contains(':') {
        format!("<[{name}]:")
    } else {
        format!("<{name}:")
    };
    format!(
        "(Machine == {m} || substr(Machine, 0, {dl}) == {d} || substr(MyAddress, 0, {sl}) == {s})",
        m = quoted(name),
        dl = dotted.chars().count(),
        d = quoted(&dotted),
        sl = sinful.chars().count(),
        s = quoted(&sinful),
    )
}

impl VmPeers {
    /// The peers the configuration names, or `None` where it names none
    /// (the usual machine: nothing to ask the collector).
    pub fn from_config(config: &Config, own_startd: &str) -> Result<Option<VmPeers>, PolicyError> {
        let err = |e: &dyn std::fmt::Display| PolicyError(e.to_string());
        let host = config
            .get("VMP_HOST_MACHINE")
            .map_err(|e| err(&e))?
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty());
        let vms = config.list("VMP_VM_LIST").map_err(|e| err(&e))?;
        VmPeers::new(host, vms, own_startd)
    }

    /// As [`VmPeers::from_config`], from the values themselves.
    pub fn new(
        host: Option<String>,
        vms: Vec<String>,
        own_startd: &str,
    ) -> Result<Option<VmPeers>, PolicyError> {
        if host.is_none() && vms.is_empty() {
            return Ok(None);
        }
        for name in host.iter().chain(&vms) {
            // A name is a host name or an address; anything else would
            // only make a constraint that matches nothing, silently.
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
            {
                return Err(PolicyError(format!(
                    "{} names `{name}`: expected host names or IP addresses",
                    if Some(name) == host.as_ref() {
                        "VMP_HOST_MACHINE"
                    } else {
                        "VMP_VM_LIST"
                    }
                )));
            }
        }
        let parse = |text: &str| {
            classad::parse_expr(text)
                .map_err(|e| PolicyError(format!("VMP_* constraint `{text}`: {e}")))
        };
        let text = host
            .iter()
            .chain(&vms)
            .map(|n| names_machine(n))
            .collect::<Vec<_>>()
            .join(" || ");
        let constraint = parse(&text)?;
        let host_picks = host
            .as_deref()
            .map(|h| parse(&names_machine(h)))
            .transpose()?;
        let vm_picks = vms
            .iter()
            .map(|v| Ok((v.clone(), parse(&names_machine(v))?)))
            .collect::<Result<Vec<_>, PolicyError>>()?;
        Ok(Some(VmPeers {
            host,
            vms,
            own_startd: own_startd.to_string(),
            constraint,
            host_picks,
            vm_picks,
        }))
    }

    /// The collector query's constraint: the startd ads of every peer
    /// (this startd's own ads may match too; [`VmPeers::assess`] leaves
    /// them out).
    pub fn constraint(&self) -> &Expr {
        &self.constraint
    }

    /// Whether `ad` is this startd's own.
    fn is_own(&self, ad: &ClassAd, env: &Env) -> bool {
        text_attr(ad, "Name", env)
            .and_then(|n| n.split_once('@').map(|(_, s)| s.to_string()))
            .is_some_and(|s| s.eq_ignore_ascii_case(&self.own_startd))
    }

    /// What the peers' slot ads (as the collector gave them) mean for this
    /// startd at `now`.
    ///
    /// The `HOST_` attributes are the host's machine attributes as one ad
    /// of it has them: its first slot's (lowest SlotID, then name), each
    /// evaluated there to its value (an expression copied as it is would
    /// read the inner machine's attributes, not the host's). Attributes
    /// that are UNDEFINED or ERROR on the host, and nested ads, are left
    /// out; a list is kept where its items are plain values. Per-slot
    /// figures (`HOST_Memory`, `HOST_State`) are thus slot 1's; the
    /// machine-wide ones (`HOST_TotalMemory`, `HOST_KeyboardIdle`,
    /// `HOST_TotalLoadAvg`) are the host's whatever its slots.
    pub fn assess(&self, peer_ads: &[ClassAd], now: i64) -> PeerView {
        let env = Env {
            now,
            ..Env::default()
        };
        let mut view = PeerView::default();
        let mut host_ads: Vec<&ClassAd> = Vec::new();
        let mut busy: Vec<String> = Vec::new();
        let picks = |e: &Expr, ad: &ClassAd| ad.eval(e, &env).as_bool() == Some(true);
        for ad in peer_ads {
            if self.is_own(ad, &env) {
                continue;
            }
            let of_host = self.host_picks.as_ref().is_some_and(|e| picks(e, ad));
            let of_vm = self
                .vm_picks
                .iter()
                .find(|(_, e)| picks(e, ad))
                .map(|(v, _)| v.as_str());
            if of_host {
                host_ads.push(ad);
            }
            let peer = match (of_host, of_vm) {
                (true, _) => format!("the host {}", self.host.as_deref().unwrap_or("")),
                (false, Some(vm)) => format!("the inner virtual machine {vm}"),
                (false, None) => continue,
            };
            if let Some(how) = runs_a_job(ad, &env) {
                let slot = text_attr(ad, "Name", &env).unwrap_or_else(|| "a slot".into());
                busy.push(format!("{peer} runs a job ({slot} is {how})"));
            }
        }
        busy.sort();
        busy.dedup();
        if !busy.is_empty() {
            view.start_override = Some(busy.join("; "));
        }
        host_ads.sort_by_key(|ad| {
            let id = match ad.eval_attr("SlotID", &env) {
                Value::Int(i) => i,
                _ => i64::MAX,
            };
            (id, text_attr(ad, "Name", &env).unwrap_or_default())
        });
        if let Some(first) = host_ads.first() {
            for (name, _) in first.iter() {
                let name = name.as_str();
                if left_out(name) {
                    continue;
                }
                let plain = match first.eval_attr(name, &env) {
                    Value::Undefined | Value::Error | Value::Ad(_) => None,
                    Value::List(l) if !l.items.iter().all(|e| matches!(e, Expr::Lit(_))) => None,
                    v => Some(Expr::from_value(v)),
                };
                if let Some(e) = plain {
                    view.host_attrs.push((format!("HOST_{name}"), e));
                }
            }
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn config(text: &str) -> Config {
        config::load(
            &config::LoadOptions::new("STARTD", config::Root::File("c".into())),
            &config::MemFiles::new().with("c", text),
            &config::FixedHost::empty(),
        )
        .unwrap()
    }

    fn slot(name: &str, machine: &str, address: &str, id: i64, state: &str) -> ClassAd {
        ClassAd::parse(&format!(
            r#"[ MyType = "Machine"; Name = "{name}"; Machine = "{machine}";
                MyAddress = "<{address}:9618?noUDP>"; SlotID = {id};
                State = "{state}"; Activity = "{activity}";
                Memory = {mem}; TotalMemory = 8192; KeyboardIdle = 400;
                TotalLoadAvg = 0.25; Start = KeyboardIdle > 300;
                Requirements = START; EnteredCurrentState = {NOW} - 60;
                StateAge = time() - EnteredCurrentState;
                ChildState = {{ "Claimed", "Idle" }}; Odd = {{ State }};
                Nested = [ a = 1 ]; Missing = NoSuchAttr; HOST_Memory = 1 ]"#,
            activity = if state == "Claimed" { "Busy" } else { "Idle" },
            mem = 1024 * id,
        ))
        .unwrap()
    }

    fn peers(host: Option<&str>, vms: &[&str], own: &str) -> VmPeers {
        VmPeers::new(
            host.map(str::to_string),
            vms.iter().map(|v| v.to_string()).collect(),
            own,
        )
        .unwrap()
        .unwrap()
    }

    fn attr(view: &PeerView, name: &str) -> Option<String> {
        view.host_attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.to_string())
    }

    #[test]
    fn every_parameter_read_is_in_the_table() {
        for name in PARAMS_READ {
            assert!(config::params::lookup(name).is_some(), "{name}");
        }
    }

    #[test]
    fn no_setting_no_peers() {
        assert_eq!(VmPeers::new(None, Vec::new(), "x").unwrap(), None);
        let c = config("");
        assert_eq!(VmPeers::from_config(&c, "x").unwrap(), None);
        let c = config(
            "VMP_HOST_MACHINE = host.example.org\nVMP_VM_LIST = vm1.example.org, vm2.example.org",
        );
        let p = VmPeers::from_config(&c, "x").unwrap().unwrap();
        assert_eq!(p.host.as_deref(), Some("host.example.org"));
        assert_eq!(p.vms, ["vm1.example.org", "vm2.example.org"]);
    }

    #[test]
    fn a_name_that_is_no_host_name_is_refused() {
        let e = VmPeers::new(None, vec!["vm1\" || true || \"".into()], "x").unwrap_err();
        assert!(e.0.contains("VMP_VM_LIST"), "{e}");
        let e = VmPeers::new(Some("a b(".into()), Vec::new(), "x").unwrap_err();
        assert!(e.0.contains("VMP_HOST_MACHINE"), "{e}");
    }

    #[test]
    fn the_inner_machine_publishes_the_host_s_first_slot_with_host_prefix() {
        let p = peers(Some("host.example.org"), &[], "vm.example.org");
        let ads = vec![
            slot(
                "slot2@host.example.org",
                "host.example.org",
                "10.0.0.1",
                2,
                "Unclaimed",
            ),
            slot(
                "slot1@host.example.org",
                "host.example.org",
                "10.0.0.1",
                1,
                "Unclaimed",
            ),
            slot(
                "slot1@other.example.org",
                "other.example.org",
                "10.0.0.9",
                1,
                "Claimed",
            ),
        ];
        let view = p.assess(&ads, NOW);
        assert!(view.start_override.is_none(), "{view:?}");
        assert_eq!(attr(&view, "HOST_Memory").as_deref(), Some("1024"));
        assert_eq!(attr(&view, "HOST_TotalMemory").as_deref(), Some("8192"));
        assert_eq!(
            attr(&view, "HOST_Machine").as_deref(),
            Some("\"host.example.org\"")
        );
        assert_eq!(attr(&view, "HOST_KeyboardIdle").as_deref(), Some("400"));
        assert_eq!(
            attr(&view, "HOST_TotalLoadAvg").as_deref(),
            Some("2.500000000000000E-01")
        );
        // Expressions are the host's values, not copies that would read
        // the inner machine's own attributes.
        assert_eq!(attr(&view, "HOST_Start").as_deref(), Some("true"));
        assert_eq!(attr(&view, "HOST_StateAge").as_deref(), Some("60"));
        assert_eq!(
            attr(&view, "HOST_ChildState").as_deref(),
            Some("{ \"Claimed\",\"Idle\" }")
        );
        for gone in [
            "HOST_MyType",
            "HOST_Odd",
            "HOST_Nested",
            "HOST_Missing",
            "HOST_HOST_Memory",
        ] {
            assert_eq!(attr(&view, gone), None, "{gone}");
        }
    }

    #[test]
    fn while_the_host_runs_a_job_the_inner_machine_does_not_start() {
        let p = peers(Some("host"), &[], "vm");
        let ads = vec![
            slot(
                "slot1@host.example.org",
                "host.example.org",
                "10.0.0.1",
                1,
                "Unclaimed",
            ),
            slot(
                "slot2@host.example.org",
                "host.example.org",
                "10.0.0.1",
                2,
                "Claimed",
            ),
        ];
        let view = p.assess(&ads, NOW);
        let why = view.start_override.as_deref().unwrap();
        assert!(
            why.contains("the host host runs a job")
                && why.contains("slot2@host.example.org is Claimed/Busy"),
            "{why}"
        );
        // The short name found the host by its full name.
        assert_eq!(attr(&view, "HOST_SlotID").as_deref(), Some("1"));
        // Preempting counts (the job is still leaving); Matched, Owner and
        // Backfill do not.
        for (state, overridden) in [
            ("Preempting", true),
            ("Matched", false),
            ("Owner", false),
            ("Backfill", false),
            ("Drained", false),
        ] {
            let ads = vec![slot("slot1@host", "host", "10.0.0.1", 1, state)];
            assert_eq!(
                p.assess(&ads, NOW).start_override.is_some(),
                overridden,
                "{state}"
            );
        }
    }

    #[test]
    fn while_an_inner_machine_runs_a_job_the_host_does_not_start() {
        // The host names its inner machines by name and by address.
        let p = peers(None, &["vm1.example.org", "10.0.0.7"], "host");
        let idle = vec![
            slot(
                "slot1@vm1.example.org",
                "vm1.example.org",
                "10.0.0.6",
                1,
                "Unclaimed",
            ),
            slot("slot1@vm2", "vm2.example.org", "10.0.0.7", 1, "Unclaimed"),
        ];
        let view = p.assess(&idle, NOW);
        assert!(view.start_override.is_none());
        // A host publishes no HOST_ attributes.
        assert!(view.host_attrs.is_empty());
        let busy = vec![
            slot(
                "slot1@vm1.example.org",
                "vm1.example.org",
                "10.0.0.6",
                1,
                "Unclaimed",
            ),
            slot("slot1@vm2", "vm2.example.org", "10.0.0.7", 1, "Claimed"),
        ];
        let why = p.assess(&busy, NOW).start_override.unwrap();
        assert!(
            why.contains(
                "the inner virtual machine 10.0.0.7 runs a job (slot1@vm2 is Claimed/Busy)"
            ),
            "{why}"
        );
        // An IPv6 address, as a sinful string brackets it.
        let p6 = peers(None, &["fd00::7"], "host");
        let ads = vec![ClassAd::parse(
            r#"[ Name = "slot1@v6"; Machine = "v6"; MyAddress = "<[fd00::7]:9618>";
                State = "Claimed"; Activity = "Busy" ]"#,
        )
        .unwrap()];
        assert!(p6.assess(&ads, NOW).start_override.is_some());
        // An address is not a prefix of another (10.0.0.7 is not 10.0.0.70).
        let other = vec![slot("slot1@vm3", "vm3", "10.0.0.70", 1, "Claimed")];
        assert!(p.assess(&other, NOW).start_override.is_none());
    }

    #[test]
    fn a_startd_is_never_its_own_peer() {
        // Two startds of one host name (a bed of hosts on one machine):
        // the host's own claimed slot does not stop it.
        let p = peers(None, &["shared"], "host-startd");
        let ads = vec![
            slot("slot1@host-startd", "shared", "10.0.0.1", 1, "Claimed"),
            slot("slot1@vm-startd", "shared", "10.0.0.2", 1, "Unclaimed"),
        ];
        assert!(p.assess(&ads, NOW).start_override.is_none());
        let ads = vec![slot("slot1@vm-startd", "shared", "10.0.0.2", 1, "Claimed")];
        assert!(p.assess(&ads, NOW).start_override.is_some());
    }

    #[test]
    fn the_constraint_picks_what_assess_reads() {
        let p = peers(Some("host.example.org"), &["10.0.0.7"], "me");
        let env = Env {
            now: NOW,
            ..Env::default()
        };
        let picked = |ad: &ClassAd| ad.eval(p.constraint(), &env).as_bool() == Some(true);
        assert!(picked(&slot(
            "slot1@h",
            "HOST.example.org",
            "10.0.0.1",
            1,
            "Owner"
        )));
        assert!(picked(&slot("slot1@v", "v", "10.0.0.7", 1, "Owner")));
        assert!(!picked(&slot("slot1@v", "v", "10.0.0.70", 1, "Owner")));
        assert!(!picked(&slot(
            "slot1@o",
            "other.example.org",
            "10.0.0.3",
            1,
            "Owner"
        )));
        // The constraint is a ClassAd expression the collector reads.
        let text = p.constraint().to_string();
        assert!(classad::parse_expr(&text).is_ok(), "{text}");
    }

    #[test]
    fn views_compare_by_value() {
        let p = peers(Some("host"), &[], "vm");
        let ads = vec![slot("slot1@host", "host", "10.0.0.1", 1, "Unclaimed")];
        let a = p.assess(&ads, NOW);
        assert!(a.same_as(&p.assess(&ads, NOW)));
        // StateAge moved on.
        assert!(!a.same_as(&p.assess(&ads, NOW + 1)));
        assert!(!a.same_as(&PeerView::default()));
    }

    // ---- the engine with a view ----------------------------------------

    fn engine(text: &str) -> crate::Startd {
        let c = config(&format!("RunBenchmarks = False\n{text}"));
        let resources = crate::SlotResources {
            cpus: 1.0,
            memory: 1024,
            disk: 1_000_000,
            swap: 0,
            custom: Vec::new(),
        };
        let machine = crate::MachineInfo::new("vm.example.org", 1.0, 1024, 1_000_000);
        crate::Startd::new(&c, machine, vec![(1, None, resources)], NOW).unwrap()
    }

    fn claim(s: &mut crate::Startd, now: i64) -> Result<(), String> {
        let job = ClassAd::parse("[ Owner = \"u\"; JobUniverse = 5; RequestCpus = 1 ]").unwrap();
        s.handle(
            crate::Event::RequestClaim {
                slot: "slot1".into(),
                request: Box::new(crate::ClaimRequest {
                    claim_id: "c1".into(),
                    user: "u@example.org".into(),
                    job,
                    schedd: "ap.example.org".into(),
                    alive_interval: None,
                    by_user_priority: false,
                    preempt_dynamic: Vec::new(),
                }),
            },
            now,
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    }

    fn start_of(s: &crate::Startd, now: i64) -> String {
        let ad = s.ad_of("slot1", now).unwrap();
        ad.eval_attr(
            "Start",
            &Env {
                now,
                ..Env::default()
            },
        )
        .to_string()
    }

    #[test]
    fn the_inner_machine_s_start_reads_the_host_s_attributes() {
        // The manual's example START for an inner virtual machine.
        let mut s = engine(
            "START = (KeyboardIdle > 150) && (HOST_KeyboardIdle > 150) \\\n\
             && (LoadAvg <= 0.3) && (HOST_TotalLoadAvg <= 0.3)",
        );
        s.tick(
            NOW,
            crate::Readings {
                keyboard_idle: 600,
                console_idle: 600,
                ..Default::default()
            },
        );
        // Nothing heard of the host: HOST_ attributes are UNDEFINED, so
        // START is not true and no claim is taken.
        assert_eq!(start_of(&s, NOW), "undefined");
        assert!(claim(&mut s, NOW).is_err());
        let p = peers(Some("host.example.org"), &[], "vm.example.org");
        let ads = vec![slot(
            "slot1@host.example.org",
            "host.example.org",
            "10.0.0.1",
            1,
            "Unclaimed",
        )];
        assert!(s.set_vm_peers(p.assess(&ads, NOW)));
        assert!(!s.set_vm_peers(p.assess(&ads, NOW)), "nothing changed");
        let ad = s.ad_of("slot1", NOW).unwrap();
        assert_eq!(
            ad.get("HOST_Machine").unwrap().to_string(),
            "\"host.example.org\""
        );
        assert_eq!(ad.get("HOST_TotalMemory").unwrap().to_string(), "8192");
        assert_eq!(start_of(&s, NOW), "true");
        // The host's owner comes back: its KeyboardIdle drops.
        let mut busy = ads[0].clone();
        busy.insert_value("KeyboardIdle", 5);
        s.set_vm_peers(p.assess(&[busy], NOW + 5));
        assert_eq!(start_of(&s, NOW + 5), "false");
    }

    #[test]
    fn start_is_false_while_the_peer_runs_a_job_and_claims_are_refused() {
        let mut s = engine("START = True");
        s.tick(NOW, crate::Readings::default());
        let p = peers(None, &["vm1"], "host.example.org");
        let claimed = vec![slot("slot1@vm1", "vm1", "10.0.0.2", 1, "Claimed")];
        s.set_vm_peers(p.assess(&claimed, NOW));
        s.tick(NOW + 1, crate::Readings::default());
        assert_eq!(start_of(&s, NOW + 1), "false");
        // The negotiator would not match it (Requirements is START), and
        // a claim that comes anyway is refused.
        let ad = s.ad_of("slot1", NOW + 1).unwrap();
        let req = ad.eval_attr(
            "Requirements",
            &Env {
                now: NOW + 1,
                ..Env::default()
            },
        );
        assert_eq!(req.to_string(), "false");
        let refused = claim(&mut s, NOW + 1).unwrap_err();
        assert!(refused.contains("START"), "{refused}");
        // The inner machine's job is done: START is the configuration's again.
        let idle = vec![slot("slot1@vm1", "vm1", "10.0.0.2", 1, "Unclaimed")];
        assert!(s.set_vm_peers(p.assess(&idle, NOW + 2)));
        s.tick(NOW + 2, crate::Readings::default());
        assert_eq!(start_of(&s, NOW + 2), "true");
        claim(&mut s, NOW + 2).unwrap();
        // A claim with no job yet is given up when START turns False
        // (HTCondor's Claimed/Idle rule), so the host does not hold a slot
        // for a job it may not run.
        s.set_vm_peers(p.assess(&claimed, NOW + 3));
        let r = s.tick(NOW + 3, crate::Readings::default());
        assert_eq!(
            r.transitions.first().map(|t| t.to.0),
            Some(crate::State::Preempting),
            "{r:?}"
        );
        // A running job is left alone: the manual overrides START, not
        // PREEMPT (the two can overlap only when both machines took a
        // job before hearing of the other's).
        let mut s = engine("START = True");
        s.tick(NOW, crate::Readings::default());
        claim(&mut s, NOW).unwrap();
        let job = ClassAd::parse("[ Owner = \"u\"; JobUniverse = 5; RequestCpus = 1 ]").unwrap();
        s.handle(
            crate::Event::Activate {
                slot: "slot1".into(),
                claim_id: "c1".into(),
                job: Box::new(job),
            },
            NOW,
        )
        .unwrap();
        s.set_vm_peers(p.assess(&claimed, NOW + 1));
        s.tick(NOW + 1, crate::Readings::default());
        assert_eq!(s.slots()[0].pair().to_string(), "Claimed/Busy");
    }
}
