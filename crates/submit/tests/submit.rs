//! Behaviour beyond the oracle's reach: what condor_submit does where the
//! Python bindings the oracle uses differ (several `queue` statements,
//! `queue 0`, `-a` commands), warnings, and the errors people read.

use classad::unparse::expr_to_string;
use config::{load, FixedHost, LoadOptions, MemFiles as ConfigFiles, Root};
use submit::{submit, MemFiles, Submission, SubmitError, SubmitOptions};

fn configuration(text: &str) -> config::Config {
    load(
        &LoadOptions::new("SUBMIT", Root::File("condor_config".into())),
        &ConfigFiles::new().with("condor_config", text),
        &FixedHost::empty()
            .with_macro("ARCH", "X86_64")
            .with_macro("OPSYS", "LINUX"),
    )
    .unwrap()
}

fn files() -> MemFiles {
    MemFiles::new()
        .with("/home/alice/job.sh", "#!/bin/sh\n")
        .with("/home/alice/items.txt", "x\ny\n")
        .with("/home/alice/common.sub", "request_cpus = 3\n")
}

fn options() -> SubmitOptions {
    let mut o = SubmitOptions::new(7, "alice", 1_700_000_000, "/home/alice");
    o.submit_file = "job.sub".into();
    o
}

fn run_with(text: &str, o: &SubmitOptions, config: &str) -> Result<Submission, SubmitError> {
    submit(text, o, &configuration(config), &files())
}

fn run(text: &str) -> Submission {
    run_with(text, &options(), "").unwrap_or_else(|e| panic!("{e}"))
}

fn fail(text: &str) -> SubmitError {
    match run_with(text, &options(), "") {
        Ok(s) => panic!("accepted, {} jobs", s.jobs.len()),
        Err(e) => e,
    }
}

fn attr(s: &Submission, job: usize, name: &str) -> String {
    s.jobs[job]
        .get(name)
        .map(expr_to_string)
        .unwrap_or_else(|| "<absent>".into())
}

#[test]
fn each_queue_statement_queues_with_the_commands_before_it() {
    let s = run(
        "executable = job.sh\narguments = first\nqueue 2\narguments = second $(Process)\nqueue\n",
    );
    assert_eq!(s.jobs.len(), 3);
    assert_eq!(attr(&s, 1, "Args"), "\"first\"");
    assert_eq!(attr(&s, 2, "Args"), "\"second 2\"");
    assert_eq!(attr(&s, 2, "ProcId"), "2");
}

#[test]
fn queue_zero_queues_nothing() {
    // condor_submit queues no job; the Python bindings would make one.
    assert_eq!(run("executable = job.sh\nqueue 0\n").jobs.len(), 0);
}

#[test]
fn append_commands_act_before_the_first_queue() {
    let mut o = options();
    o.append = vec![
        "+BolognaBatchJob = True".into(),
        "periodic_remove = (RemoteWallClockTime > 60*60)".into(),
        "arguments = from-a".into(),
    ];
    let s = run_with(
        "executable = job.sh\narguments = from-file\nqueue\n",
        &o,
        "APPEND_REQ_VANILLA = (BolognaBatchServer == True)\n",
    )
    .unwrap();
    assert_eq!(attr(&s, 0, "BolognaBatchJob"), "true");
    assert_eq!(attr(&s, 0, "Args"), "\"from-a\"");
    assert_eq!(
        attr(&s, 0, "PeriodicRemove"),
        "(RemoteWallClockTime > 60 * 60)"
    );
    assert!(attr(&s, 0, "Requirements").starts_with("((BolognaBatchServer == true)) && "));
    // A description without a queue statement may get one from -a.
    o.append = vec!["queue 2".into()];
    assert_eq!(
        run_with("executable = job.sh\n", &o, "")
            .unwrap()
            .jobs
            .len(),
        2
    );
    o.append = vec!["if defined X".into()];
    let e = run_with("executable = job.sh\nqueue\n", &o, "").unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("<-a>", 1));
}

#[test]
fn append_requirements_for_other_universes() {
    let s = run_with(
        "universe = local\nexecutable = job.sh\nrequirements = Memory > 1\nrank = Mips\nqueue\n",
        &options(),
        "APPEND_REQUIREMENTS = (Site == \"bo\")\nAPPEND_REQ_VANILLA = (Never == 1)\nAPPEND_RANK = KFlops\n",
    )
    .unwrap();
    assert_eq!(
        attr(&s, 0, "Requirements"),
        "(Memory > 1) && ((Site == \"bo\")) && (TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)"
    );
    assert_eq!(attr(&s, 0, "Rank"), "(Mips) + (KFlops)");
}

#[test]
fn submit_exprs_and_attrs_are_copied_and_lose_to_the_file() {
    let s = run_with(
        "executable = job.sh\n+Site = \"mine\"\nqueue\n",
        &options(),
        "Site = \"theirs\"\nSlots = 4\nSUBMIT_EXPRS = Slots\nSUBMIT_ATTRS = Site\n",
    )
    .unwrap();
    assert_eq!(attr(&s, 0, "Site"), "\"mine\"");
    assert_eq!(attr(&s, 0, "Slots"), "4");
}

#[test]
fn unused_lines_are_warned_about() {
    let s = run("executable = job.sh\nexcutable = typo.sh\nHELPER = x\narguments = $(HELPER)\nlog_xml = true\nqueue\n");
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    let w = &s.warnings[0];
    assert_eq!((w.file.as_str(), w.line), ("job.sub", 2));
    assert!(w.message.contains("excutable = typo.sh"), "{w}");
    let quiet = run_with(
        "executable = job.sh\nexcutable = typo.sh\nqueue\n",
        &options(),
        "WARN_ON_UNUSED_SUBMIT_FILE_MACROS = false\n",
    )
    .unwrap();
    assert!(quiet.warnings.is_empty());
}

#[test]
fn includes_tagged_values_and_the_environment() {
    let mut o = options();
    o.environment = vec![
        ("HOME".into(), "/home/alice".into()),
        ("PATH".into(), "/bin".into()),
    ];
    let s = run_with(
        "include : common.sub\nexecutable = job.sh\ngetenv = true\nenvironment = \"PATH=/usr/bin\"\nX @=end\n  one\n  two\n@end\narguments = \"$ENV(HOME) $ENV(NOPE)\"\n+Multi = \"$(X)\"\nqueue\n",
        &o,
        "",
    )
    .unwrap();
    assert_eq!(attr(&s, 0, "RequestCpus"), "3");
    assert_eq!(
        attr(&s, 0, "Environment"),
        "\"HOME=/home/alice PATH=/usr/bin\""
    );
    assert_eq!(attr(&s, 0, "Arguments"), "\"/home/alice UNDEFINED\"");
    assert_eq!(attr(&s, 0, "Multi"), "\"one\\ntwo\"");
}

#[test]
fn queue_from_a_file_and_a_command() {
    let s = run("executable = job.sh\narguments = $(Item)\nqueue Item from items.txt\n");
    assert_eq!(s.jobs.len(), 2);
    assert_eq!(attr(&s, 1, "Args"), "\"y\"");
    let e = fail("executable = job.sh\nqueue Item from seq 1 3 |\n");
    assert!(e.message.contains("not allowed"), "{e}");
    let e = fail("executable = job.sh\nqueue Item from nothing.txt\n");
    assert!(e.message.contains("nothing.txt"), "{e}");
}

#[test]
fn errors_name_the_line_and_the_command() {
    let e = fail("executable = job.sh\nuniverse = nosuchuniverse\nqueue\n");
    assert_eq!((e.line, e.command.as_deref()), (2, Some("universe")));
    assert!(e.message.contains("'nosuchuniverse'"), "{e}");
    assert!(e.to_string().starts_with("job.sub:2: universe: "), "{e}");

    let e = fail("executable = job.sh\nqueue Item frm (a b)\n");
    assert_eq!((e.line, e.command.as_deref()), (2, Some("queue")));
    assert!(
        e.message.contains("invalid queue count `Item frm (a b)`"),
        "{e}"
    );

    let e = fail("executable = job.sh\nrequest_memory = 10Q\nqueue\n");
    assert_eq!((e.line, e.command.as_deref()), (2, Some("request_memory")));

    let e = fail("executable = job.sh\nthis is not valid\nqueue\n");
    assert_eq!(e.line, 2);
    assert_eq!(e.text.as_deref(), Some("this is not valid"));

    let e = fail("executable = job.sh\nqueue Item from (\na\n");
    assert!(e.message.contains("line `)`"), "{e}");

    let e = fail("executable = job.sh\nif defined X\nqueue\n");
    assert!(e.message.contains("`endif` missing"), "{e}");

    let e = fail("A = $(B)\nB = $(A)\nexecutable = job.sh\narguments = $(A)\nqueue\n");
    assert_eq!((e.line, e.command.as_deref()), (4, Some("arguments")));
    assert!(e.message.contains("refer to each other"), "{e}");

    let e = fail("executable = job.sh\n");
    assert!(e.message.contains("no `queue` statement"), "{e}");

    let e = fail("executable = job.sh\nuniverse = java\nqueue\n");
    assert!(e.message.contains("does not run"), "{e}");
}

#[test]
fn the_old_env_command_keeps_the_old_form() {
    let s = run("executable = job.sh\nenv = A=1;B=2\nqueue\n");
    assert_eq!(attr(&s, 0, "Env"), "\"A=1;B=2\"");
    assert_eq!(attr(&s, 0, "EnvDelim"), "\";\"");
    assert_eq!(attr(&s, 0, "Environment"), "<absent>");
}

/// Output URLs need a plugin for their scheme, as condor_submit's
/// Requirements say (checked against 24.0.24's bindings): the
/// output_destination's scheme and each URL target of
/// transfer_output_remaps, kept as written.
#[test]
fn output_urls_ask_for_their_plugins() {
    let s = run("executable = /home/alice/job.sh\n\
         should_transfer_files = YES\n\
         transfer_output_files = out.txt\n\
         transfer_output_remaps = \"out.txt = abc://place/out.txt; b.txt = https://h/x; c = plain\"\n\
         queue\n");
    let req = attr(&s, 0, "Requirements");
    assert!(
        req.contains("stringListIMember(\"abc\",TARGET.HasFileTransferPluginMethods)")
            && req.contains("stringListIMember(\"https\",TARGET.HasFileTransferPluginMethods)"),
        "{req}"
    );
    assert_eq!(
        attr(&s, 0, "TransferOutputRemaps"),
        "\"out.txt = abc://place/out.txt; b.txt = https://h/x; c = plain\""
    );
    assert_eq!(attr(&s, 0, "WantTransferPluginMethods"), "\"abc,https\"");
    let s = run("executable = /home/alice/job.sh\n\
         should_transfer_files = YES\n\
         output_destination = zkm://results/\n\
         queue\n");
    assert_eq!(attr(&s, 0, "OutputDestination"), "\"zkm://results/\"");
    assert!(attr(&s, 0, "Requirements").contains("stringListIMember(\"zkm\""));
}

/// Jobs of one statement whose making reads nothing per job are copies
/// of the first with their own ProcId; anything per job read anywhere
/// (through a macro of a macro, a loop variable, a random value) makes
/// each job on its own.
#[test]
fn jobs_that_differ_only_by_proc_id_and_jobs_that_differ_more() {
    let plain = run("executable = job.sh\narguments = a b\nqueue 3\n");
    assert_eq!(plain.jobs.len(), 3);
    for (i, job) in plain.jobs.iter().enumerate() {
        assert_eq!(attr(&plain, i, "ProcId"), i.to_string());
        let mut same = job.clone();
        same.insert_value("ProcId", 0i64);
        assert_eq!(
            classad::unparse::ad_to_old_syntax(&same),
            classad::unparse::ad_to_old_syntax(&plain.jobs[0]),
            "job {i}"
        );
    }
    let deep = run("executable = job.sh\nA = $(B)\nB = x$(Process)\narguments = $(A)\nqueue 3\n");
    let args: Vec<String> = (0..3).map(|i| attr(&deep, i, "Args")).collect();
    assert_eq!(args, ["\"x0\"", "\"x1\"", "\"x2\""]);
    let looped = run("executable = job.sh\narguments = $(Item)\nqueue Item in (p, q)\n");
    assert_eq!(attr(&looped, 1, "Args"), "\"q\"");
    let step = run("executable = job.sh\narguments = s$(Step)\nqueue 2\n");
    assert_eq!(attr(&step, 1, "Args"), "\"s1\"");
    // A random value is drawn for each job, as HTCondor expands the macro
    // anew for every job; the same seed draws the same values again.
    let random = "executable = job.sh\narguments = $RANDOM_INTEGER(1,1000000000)\nqueue 4\n";
    let drawn: Vec<String> = (0..4).map(|i| attr(&run(random), i, "Args")).collect();
    let mut distinct = drawn.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{drawn:?}");
    let again: Vec<String> = (0..4).map(|i| attr(&run(random), i, "Args")).collect();
    assert_eq!(drawn, again);
}

/// A job whose making reads nothing that changes from job to job comes
/// as a copy of the statement's first job (what a tool streaming a large
/// cluster needs not build again), and is the job `submit` makes.
#[test]
fn jobs_that_differ_only_by_proc_id_come_as_copies_of_the_first() {
    let text = "executable = job.sh\narguments = a\nqueue 2\n\
                arguments = $(Process)\nqueue 2\narguments = b\nqueue 3\n";
    let whole = run(text).jobs;
    let mut seen = Vec::new();
    let mut rebuilt = Vec::new();
    submit::submit_or_factory_jobs(
        text,
        &options(),
        &configuration(""),
        &files(),
        &mut |job: submit::MadeJob<'_>| {
            seen.push(match &job {
                submit::MadeJob::Whole(ad) => format!("whole {}", attr_of(ad, "ProcId")),
                submit::MadeJob::Copy { of, proc } => {
                    format!("{proc} copy of {}", attr_of(of, "ProcId"))
                }
            });
            rebuilt.push(job.into_ad());
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(
        seen,
        [
            "whole 0",
            "1 copy of 0",
            "whole 2",
            "whole 3",
            "whole 4",
            "5 copy of 4",
            "6 copy of 4"
        ]
    );
    let text_of = |ads: &[classad::ClassAd]| -> Vec<String> {
        ads.iter().map(classad::unparse::ad_to_old_syntax).collect()
    };
    assert_eq!(text_of(&rebuilt), text_of(&whole));
}

fn attr_of(ad: &classad::ClassAd, name: &str) -> String {
    expr_to_string(ad.get(name).unwrap())
}
