//! `q -better-analyze` on realistic pools: what a user reads when a job
//! does not run.

use classad::{ClassAd, Env, Expr};
use negotiator::analyze::{analyze, Analysis, Context, Suggestion};
use negotiator::cycle::{Priorities, Reason};

fn ad(text: &str) -> ClassAd {
    ClassAd::parse(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A slot as the startd publishes it: Requirements is START.
fn slot(name: &str, arch: &str, memory: i64, extra: &str) -> ClassAd {
    let machine = name.split('@').nth(1).unwrap_or(name);
    ad(&format!(
        "[MyType = \"Machine\"; Name = \"{name}\"; Machine = \"{machine}\"; Arch = \"{arch}\"; \
          OpSys = \"LINUX\"; Memory = {memory}; Disk = 1000000; Cpus = 1; \
          State = \"Unclaimed\"; Activity = \"Idle\"; START = true; Requirements = START; \
          FileSystemDomain = \"pool\"; HasFileTransfer = true; {extra}]"
    ))
}

/// Four x86_64 slots with 8 GB on two machines, four aarch64 with 4 GB on two.
fn pool() -> Vec<ClassAd> {
    let mut v = Vec::new();
    for m in ["x1", "x2"] {
        for s in 1..=2 {
            v.push(slot(
                &format!("slot{s}@{m}.example.org"),
                "X86_64",
                8192,
                "",
            ));
        }
    }
    for m in ["a1", "a2"] {
        for s in 1..=2 {
            v.push(slot(
                &format!("slot{s}@{m}.example.org"),
                "aarch64",
                4096,
                "",
            ));
        }
    }
    v
}

/// A job as submit makes it, with its default clauses.
fn job(request_memory: i64, extra_requirements: &str) -> ClassAd {
    ad(&format!(
        "[MyType = \"Job\"; ClusterId = 42; ProcId = 0; Owner = \"alice\"; User = \"alice@pool\"; \
          RequestMemory = {request_memory}; RequestDisk = DiskUsage; DiskUsage = 20; RequestCpus = 1; \
          FileSystemDomain = \"pool\"; JobUniverse = 5; \
          Requirements = {extra_requirements}(TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && \
          (TARGET.Memory >= RequestMemory) && \
          ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))]"
    ))
}

fn run(job: &ClassAd, slots: &[ClassAd]) -> Analysis {
    analyze(job, slots, &Env::at(1_700_000_000), Context::default())
}

fn counts(a: &Analysis) -> Vec<(&str, usize, usize)> {
    a.clauses
        .iter()
        .map(|c| (c.text.as_str(), c.matched, c.remaining))
        .collect()
}

#[test]
fn memory_request_larger_than_every_slot() {
    let j = job(16384, "");
    let a = run(&j, &pool());
    assert_eq!(
        counts(&a),
        [
            ("TARGET.OpSys == \"LINUX\"", 8, 8),
            ("TARGET.Disk >= RequestDisk", 8, 8),
            ("TARGET.Memory >= RequestMemory", 0, 0),
            (
                "(TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)",
                8,
                0
            ),
        ]
    );
    assert_eq!(a.totals.rejected_by_job, 8);
    assert_eq!(a.totals.willing, 0);
    assert_eq!(a.machines, 4);
    assert_eq!(a.suggestions.len(), 1, "{:?}", a.suggestions);
    let s = a.suggestions[0].text();
    assert!(
        s.contains("no slot has Memory >= 16384; the largest is 8192 (4 slots)"),
        "{s}"
    );
    assert!(
        s.contains("with RequestMemory <= 8192 this clause would match"),
        "{s}"
    );

    let text = a.render();
    assert!(
        text.contains("The Requirements expression for job 42.000 is"),
        "{text}"
    );
    assert!(text.contains("    RequestMemory = 16384\n"), "{text}");
    // Followed through RequestDisk = DiskUsage.
    assert!(
        text.contains(
            "    DiskUsage = 20\n    FileSystemDomain = \"pool\"\n    RequestDisk = DiskUsage\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("[2]           0          0  TARGET.Memory >= RequestMemory\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\n042.000:  Run analysis summary ignoring user priority.  Of 8 slots on 4 machines,\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("      8 slots are rejected by your job's requirements\n"),
        "{text}"
    );
    assert!(
        text.contains("      0 slots match and are willing to run your job\n"),
        "{text}"
    );
    assert!(
        text.contains("No slot matches the job's Requirements"),
        "{text}"
    );
}

#[test]
fn arch_clause_excludes_half_the_pool() {
    let j = job(2048, "(TARGET.Arch == \"X86_64\") && ");
    let a = run(&j, &pool());
    assert_eq!(a.clauses[0].text, "TARGET.Arch == \"X86_64\"");
    assert_eq!((a.clauses[0].matched, a.clauses[0].remaining), (4, 4));
    assert!(a
        .clauses
        .iter()
        .skip(1)
        .all(|c| c.matched == 8 && c.remaining == 4));
    assert_eq!(a.totals.rejected_by_job, 4);
    assert_eq!(a.totals.willing, 4);
    assert!(a.can_run());
    assert!(a.suggestions.is_empty(), "{:?}", a.suggestions);
    let text = a.render();
    assert!(
        text.contains("[0]           4          4  TARGET.Arch == \"X86_64\"\n"),
        "{text}"
    );
    assert!(
        text.contains("      4 slots are rejected by your job's requirements\n"),
        "{text}"
    );
    assert!(
        text.contains("      4 slots match and are willing to run your job\n"),
        "{text}"
    );
    assert!(!text.contains("WARNING"), "{text}");
}

#[test]
fn an_arch_no_slot_has_lists_what_the_pool_offers() {
    let j = job(1024, "(TARGET.Arch == \"ppc64le\") && ");
    let a = run(&j, &pool());
    let s: Vec<String> = a.suggestions.iter().map(Suggestion::text).collect();
    assert_eq!(s.len(), 1, "{s:?}");
    assert!(
        s[0].contains(
            "no slot has Arch == \"ppc64le\"; the slots have \"X86_64\" (4), \"aarch64\" (4)"
        ),
        "{s:?}"
    );
}

#[test]
fn desktop_start_rejects_while_the_keyboard_is_in_use() {
    let desktop = "START = (KeyboardIdle > 15 * 60) && (LoadAvg < 0.3)";
    let slots = vec![
        slot(
            "slot1@busy.example.org",
            "X86_64",
            8192,
            &format!("KeyboardIdle = 120; LoadAvg = 0.05; {desktop}"),
        ),
        slot(
            "slot1@idle.example.org",
            "X86_64",
            8192,
            &format!("KeyboardIdle = 3600; LoadAvg = 0.1; {desktop}"),
        ),
        slot(
            "slot1@typing.example.org",
            "X86_64",
            8192,
            &format!("KeyboardIdle = 30; LoadAvg = 0.02; {desktop}"),
        ),
        slot(
            "slot1@build.example.org",
            "X86_64",
            8192,
            &format!("KeyboardIdle = 5; LoadAvg = 1.5; {desktop}"),
        ),
    ];
    let j = job(1024, "");
    let a = run(&j, &slots);
    assert_eq!(a.totals.rejected_by_job, 0);
    assert_eq!(a.totals.rejected_by_slot, 3);
    assert_eq!(a.totals.willing, 1);

    // busy and typing fail on KeyboardIdle only; build on both clauses.
    assert_eq!(a.rejections.len(), 2, "{:?}", a.rejections);
    let g = &a.rejections[0];
    let names: Vec<&str> = g.slots.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["slot1@busy.example.org", "slot1@typing.example.org"]
    );
    assert_eq!(g.clauses.len(), 1);
    assert_eq!(g.clauses[0].text, "KeyboardIdle > 15 * 60");
    assert_eq!(g.clauses[0].value, "false");
    assert_eq!(
        g.slots[0].attributes,
        [("KeyboardIdle".to_string(), "120".to_string())]
    );
    let g = &a.rejections[1];
    assert_eq!(g.slots[0].name, "slot1@build.example.org");
    assert_eq!(
        g.clauses.iter().map(|c| c.index).collect::<Vec<_>>(),
        [0, 1]
    );

    let s = a
        .suggestions
        .iter()
        .map(Suggestion::text)
        .collect::<Vec<_>>();
    assert!(
        s.iter().any(|t| t.contains("3 slots the job matches refuse it by their own requirements; most often (3) because `KeyboardIdle > 15 * 60` is not true")),
        "{s:?}"
    );
    let text = a.render();
    assert!(
        text.contains("3 slots reject the job by their own Requirements (START); these clauses are not true:\n"),
        "{text}"
    );
    assert!(
        text.contains("  2 slots: slot1@busy.example.org, slot1@typing.example.org\n"),
        "{text}"
    );
    assert!(
        text.contains("    [0]   false      KeyboardIdle > 15 * 60\n"),
        "{text}"
    );
    assert!(
        text.contains("      slot1@busy.example.org: KeyboardIdle = 120\n"),
        "{text}"
    );
    assert!(
        text.contains("      3 slots reject your job because of their own requirements\n"),
        "{text}"
    );
}

#[test]
fn a_slot_that_is_matched_refuses_everything() {
    // A slot in Matched state publishes Requirements = false.
    let mut s = slot("slot1@m.example.org", "X86_64", 8192, "");
    s.insert_expr("Requirements", "false").unwrap();
    let a = run(&job(1024, ""), &[s]);
    assert_eq!(a.totals.rejected_by_slot, 1);
    assert_eq!(a.rejections[0].clauses[0].text, "false");
    assert!(a
        .render()
        .contains("The slots the job matches all refuse it by their own Requirements"));
}

fn claimed(name: &str, user: &str) -> ClassAd {
    slot(
        name,
        "X86_64",
        8192,
        &format!("State = \"Claimed\"; Activity = \"Busy\"; RemoteUser = \"{user}\"; RemoteOwner = \"{user}\""),
    )
}

#[test]
fn matches_but_every_matching_slot_is_claimed() {
    let mut slots = vec![
        claimed("slot1@x1.example.org", "bob@pool"),
        claimed("slot2@x1.example.org", "bob@pool"),
        claimed("slot1@x2.example.org", "alice@pool"),
    ];
    slots.push(slot("slot1@a1.example.org", "aarch64", 4096, ""));
    let j = job(1024, "(TARGET.Arch == \"X86_64\") && ");
    let a = run(&j, &slots);
    assert_eq!(a.totals.rejected_by_job, 1);
    assert_eq!(a.totals.serving_others, 2);
    assert_eq!(a.totals.running_your_jobs, 1);
    assert_eq!(a.totals.willing, 0);
    assert!(!a.can_run());
    assert!(
        a.suggestions.contains(&Suggestion::AllClaimed { slots: 3 }),
        "{:?}",
        a.suggestions
    );
    let text = a.render();
    assert!(
        text.contains("      1 slots match and are already running your jobs\n"),
        "{text}"
    );
    assert!(
        text.contains("      2 slots match but are serving other users\n"),
        "{text}"
    );
    assert!(
        text.contains("      0 slots match and are willing to run your job\n"),
        "{text}"
    );
    assert!(
        text.contains("all 3 slots that match are claimed by other work"),
        "{text}"
    );
}

struct Prios(Vec<(&'static str, f64)>);

impl Priorities for Prios {
    fn effective_priority(&self, submitter: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == submitter)
            .map_or(0.5, |(_, p)| *p)
    }
    fn resources_in_use(&self, _submitter: &str) -> f64 {
        1.0
    }
}

#[test]
fn priorities_sort_claimed_slots() {
    let slots = vec![
        claimed("slot1@x1.example.org", "bob@pool"),
        claimed("slot1@x2.example.org", "carol@pool"),
    ];
    let prios = Prios(vec![
        ("alice@pool", 1.0),
        ("bob@pool", 50.0),
        ("carol@pool", 1.2),
    ]);
    let j = job(1024, "");
    let ctx = Context {
        priorities: Some(&prios),
        last_reason: Some(&Reason::InsufficientPriority),
        ..Context::default()
    };
    let a = analyze(&j, &slots, &Env::at(0), ctx);
    // bob's priority is worse by far: alice may preempt; carol's is not.
    assert_eq!(a.totals.willing, 1);
    assert_eq!(a.totals.willing_by_preemption, 1);
    assert_eq!(a.totals.serving_others, 1);
    let text = a.render();
    assert!(
        text.contains("Submitter alice@pool has a priority of 1.000\n"),
        "{text}"
    );
    assert!(
        text.contains("Run analysis summary considering user priority."),
        "{text}"
    );
    assert!(
        text.contains(
            "      1 slots match but are serving users with a better priority in the pool\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Reason for last match failure: insufficient priority\n"),
        "{text}"
    );

    // PREEMPTION_REQUIREMENTS sees the priorities the cycle would add.
    let req = Expr::parse("RemoteUserPrio > SubmitterUserPrio * 100").unwrap();
    let ctx = Context {
        preemption_requirements: Some(&req),
        ..ctx
    };
    let a = analyze(&j, &slots, &Env::at(0), ctx);
    assert_eq!(a.totals.willing, 0);
    assert_eq!(a.totals.preemption_requirements, 1);
    assert!(a
        .render()
        .contains("      1 slots match but will not currently preempt their existing job\n"));
}

#[test]
fn an_attribute_no_slot_defines() {
    let j = job(
        1024,
        "(TARGET.HasCUDA == true) && (CUDACapability >= 8.0) && ",
    );
    let a = run(&j, &pool());
    assert_eq!(counts(&a)[0], ("TARGET.HasCUDA == true", 0, 0));
    assert_eq!(a.clauses[0].undefined, 8);
    assert_eq!(a.clauses[1].undefined, 8);
    let s: Vec<String> = a.suggestions.iter().map(Suggestion::text).collect();
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(
        s[0].starts_with("[0] TARGET.HasCUDA == true: no slot defines the attribute HasCUDA;"),
        "{s:?}"
    );
    assert!(
        s[1].contains("no slot defines the attribute CUDACapability"),
        "{s:?}"
    );
    assert!(a.render().contains("Suggestions:"));
}

#[test]
fn clauses_that_each_match_but_never_together() {
    // x86_64 slots have 8 GB, but only aarch64 slots are in the wanted domain.
    let mut slots = pool();
    for s in slots.iter_mut().skip(4) {
        s.insert_value("Site", "north");
    }
    let j = job(
        1024,
        "(TARGET.Arch == \"X86_64\") && (TARGET.Site =?= \"north\") && ",
    );
    let a = run(&j, &slots);
    assert_eq!(counts(&a)[1], ("TARGET.Site is \"north\"", 4, 0));
    let s: Vec<String> = a.suggestions.iter().map(Suggestion::text).collect();
    assert_eq!(
        s,
        ["[1] TARGET.Site is \"north\": every clause matches some slot, but none of the 4 slots the earlier clauses leave satisfies this one"]
    );
}

#[test]
fn a_job_without_requirements() {
    let j = ad("[ClusterId = 3; ProcId = 1]");
    let a = run(&j, &pool());
    assert!(a.clauses.is_empty());
    assert_eq!(a.totals.rejected_by_job, 8);
    assert_eq!(a.suggestions, [Suggestion::NoRequirements]);
    assert!(a
        .render()
        .starts_with("Job 3.001 has no Requirements expression."));
}

#[test]
fn an_empty_pool() {
    let a = run(&job(1024, ""), &[]);
    assert_eq!(a.slots, 0);
    assert!(a.clauses.iter().all(|c| c.matched == 0));
    assert!(a.suggestions.is_empty());
    let text = a.render();
    assert!(text.contains("Of 0 slots on 0 machines,"), "{text}");
    assert!(text.contains("There are no slots to match"), "{text}");
}
