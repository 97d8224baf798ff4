//! The startd role's side of running on VM hosts, at the service level: a
//! real `StartdRole` configured with VMP_VM_LIST, its polls, the peer
//! queries it asks for and what it makes of the answers (the collector
//! and the transport are the test). The query itself and two real
//! machines: `crates/cli/tests/vm_hosts.rs`.

use classad::ClassAd;
use daemons::execute::{NodeConfig, StartdRole, Work};
use daemons::roles::{Message, Outbox, Role};
use startd::resources::HostReadings;

const T0: i64 = 1_700_000_000;

fn startd(text: &str, dir: &std::path::Path) -> StartdRole {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let startd = config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("c".into())),
        &config::MemFiles::new().with(
            "c",
            &format!("NUM_CPUS = 1\nRunBenchmarks = False\nSTART = True\n{text}"),
        ),
        &config::FixedHost::empty(),
    )
    .unwrap();
    let node = NodeConfig {
        startd,
        negotiator: empty_config("NEGOTIATOR"),
        collector: empty_config("COLLECTOR"),
        hostname: "host.example.org".into(),
        host: HostReadings::simple(1, 4096, 1 << 30, 0),
        readings_file: None,
        execute_dir: dir.join("execute"),
    };
    StartdRole::new(&node, &state, T0).unwrap()
}

/// An empty configuration as `subsystem` reads it.
fn empty_config(subsystem: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new(subsystem, config::Root::File("c".into())),
        &config::MemFiles::new().with("c", ""),
        &config::FixedHost::empty(),
    )
    .unwrap()
}

/// The queries a step asked for.
fn queries(out: &Outbox) -> usize {
    out.work
        .iter()
        .filter(|w| matches!(w, Work::QueryPeers { .. }))
        .count()
}

/// `Start` of the last slot ad sent to the collector, evaluated.
fn published_start(out: &Outbox) -> Option<String> {
    out.messages.iter().rev().find_map(|(_, m)| match m {
        Message::UpdateAds { ads, .. } => ads.first().map(|ad| {
            ad.eval_attr(
                "Start",
                &classad::Env {
                    now: T0,
                    ..classad::Env::default()
                },
            )
            .to_string()
        }),
        _ => None,
    })
}

fn vm_slot(state: &str) -> ClassAd {
    ClassAd::parse(&format!(
        r#"[ Name = "slot1@vm1.example.org"; Machine = "vm1.example.org";
            MyAddress = "<10.0.0.2:9618>"; SlotID = 1; State = "{state}";
            Activity = "Busy" ]"#
    ))
    .unwrap()
}

#[test]
fn one_peer_query_at_a_time_and_start_false_while_the_inner_machine_runs_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = startd("VMP_VM_LIST = vm1.example.org", dir.path());
    let mut out = Outbox::default();
    s.flush(&mut out);
    assert!(
        out.notes
            .iter()
            .any(|n| n.contains("VMP_VM_LIST: this host runs the inner virtual machines vm1")),
        "{:?}",
        out.notes
    );
    // The first poll asks; the next ones wait for its answer.
    let mut out = Outbox::default();
    s.timer(0, T0, &mut out);
    assert_eq!(queries(&out), 1);
    assert_eq!(published_start(&out).as_deref(), Some("true"));
    let mut out = Outbox::default();
    s.timer(0, T0 + 1, &mut out);
    assert_eq!(queries(&out), 0, "a query is already out");

    // The inner machine's slot is claimed: START is False, sent at once.
    let mut out = Outbox::default();
    s.peers_heard(Ok(vec![vm_slot("Claimed")]), T0 + 2);
    s.flush(&mut out);
    assert_eq!(published_start(&out).as_deref(), Some("false"));
    assert!(
        out.notes.iter().any(|n| n.contains(
            "VMP: START is overridden False: the inner virtual machine vm1.example.org runs \
             a job (slot1@vm1.example.org is Claimed/Busy)"
        )),
        "{:?}",
        out.notes
    );
    let mut out = Outbox::default();
    s.timer(0, T0 + 3, &mut out);
    assert_eq!(queries(&out), 1, "answered: the next poll asks again");

    // The collector cannot be asked: said once, and nothing is
    // overridden.
    for t in [T0 + 4, T0 + 5] {
        let mut out = Outbox::default();
        s.peers_heard(Err("connection refused".into()), t);
        s.flush(&mut out);
        let said = out
            .notes
            .iter()
            .filter(|n| n.contains("could not be had (connection refused)"))
            .count();
        assert_eq!(said, usize::from(t == T0 + 4), "{:?}", out.notes);
        if t == T0 + 4 {
            assert_eq!(published_start(&out).as_deref(), Some("true"));
        }
    }
    let mut out = Outbox::default();
    s.peers_heard(Ok(vec![vm_slot("Unclaimed")]), T0 + 6);
    s.flush(&mut out);
    assert!(
        out.notes.iter().any(|n| n.contains("answers again")),
        "{:?}",
        out.notes
    );
}

#[test]
fn a_lost_query_is_asked_again_and_a_startd_without_vmp_asks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = startd("VMP_HOST_MACHINE = host2.example.org", dir.path());
    let mut out = Outbox::default();
    s.timer(0, T0, &mut out);
    assert_eq!(queries(&out), 1);
    let mut out = Outbox::default();
    s.timer(0, T0 + 119, &mut out);
    assert_eq!(queries(&out), 0);
    let mut out = Outbox::default();
    s.timer(0, T0 + 120, &mut out);
    assert_eq!(queries(&out), 1, "no answer in 120 s: asked again");

    let dir = tempfile::tempdir().unwrap();
    let mut plain = startd("", dir.path());
    let mut out = Outbox::default();
    plain.timer(0, T0, &mut out);
    assert_eq!(queries(&out), 0);

    // A name that is no host name is a configuration error.
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let bad = config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("c".into())),
        &config::MemFiles::new().with("c", "NUM_CPUS = 1\nVMP_VM_LIST = vm1\"||true"),
        &config::FixedHost::empty(),
    )
    .unwrap();
    let node = NodeConfig {
        startd: bad,
        negotiator: empty_config("NEGOTIATOR"),
        collector: empty_config("COLLECTOR"),
        hostname: "h".into(),
        host: HostReadings::simple(1, 4096, 1 << 30, 0),
        readings_file: None,
        execute_dir: dir.path().join("execute"),
    };
    let e = StartdRole::new(&node, &state, T0).err().unwrap();
    assert!(e.contains("VMP_VM_LIST"), "{e}");
}
