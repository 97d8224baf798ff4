//! Late materialization: a factory's job N, made from its digest and item
//! rows, is the job N an ordinary submission of the same description
//! makes.

use classad::unparse::ad_to_old_syntax;
use config::{load, FixedHost, LoadOptions, MemFiles as ConfigFiles, Root};
use submit::{
    factory_total, materialize, submit, submit_or_factory, FactorySubmission, Made, MemFiles,
    SubmitOptions,
};

fn configuration() -> config::Config {
    load(
        &LoadOptions::new("SUBMIT", Root::File("condor_config".into())),
        &ConfigFiles::new().with("condor_config", ""),
        &FixedHost::empty()
            .with_macro("ARCH", "X86_64")
            .with_macro("OPSYS", "LINUX"),
    )
    .unwrap()
}

fn files() -> MemFiles {
    MemFiles::new()
        .with("/home/alice/job.sh", "#!/bin/sh\n")
        .with("/home/alice/in.0", "zero")
        .with("/home/alice/in.1", "one!")
        .with("/home/alice/items.txt", "x 1\ny 2\n\nz 3\n")
        .with("/home/alice/data/a.dat", "")
        .with("/home/alice/data/b.dat", "")
}

fn options() -> SubmitOptions {
    let mut o = SubmitOptions::new(7, "alice", 1_700_000_000, "/home/alice");
    o.submit_file = "job.sub".into();
    o
}

fn factory_of(text: &str) -> FactorySubmission {
    let mut sunk = 0;
    let made = submit_or_factory(text, &options(), &configuration(), &files(), &mut |_| {
        sunk += 1;
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sunk, 0, "a factory hands out no job");
    match made {
        Made::Factory(f, _) => *f,
        Made::Jobs(_) => panic!("not a factory:\n{text}"),
    }
}

/// Every job of `text` made ordinarily and from its factory's digest
/// (read back from the text the schedd would keep) is the same ad.
fn check_same(text: &str, jobs: usize) {
    let ordinary = submit(text, &options(), &configuration(), &files())
        .unwrap_or_else(|e| panic!("{e}"))
        .jobs;
    assert_eq!(ordinary.len(), jobs, "{text}");
    let f = factory_of(text);
    assert_eq!(f.total, jobs as i64);
    let digest = f.digest("/spool/7/condor_submit.7.items");
    // The schedd knows only the digest and the rows: not the submitter's
    // directory (FACTORY.Iwd says it) nor its files.
    let mut schedd_options = options();
    schedd_options.cwd = "/".into();
    assert_eq!(
        factory_total(&digest, f.items.len(), &schedd_options, &configuration()).unwrap(),
        jobs as i64
    );
    assert_eq!(
        ad_to_old_syntax(&f.first_job),
        ad_to_old_syntax(&ordinary[0]),
        "job 0 (the cluster's ad)\ndigest:\n{digest}"
    );
    for (n, want) in ordinary.iter().enumerate() {
        let got = materialize(
            &digest,
            &f.items,
            n as i64,
            &schedd_options,
            &configuration(),
            &files(),
        )
        .unwrap_or_else(|e| panic!("job {n}: {e}\ndigest:\n{digest}"));
        assert_eq!(
            ad_to_old_syntax(&got),
            ad_to_old_syntax(want),
            "job {n}\ndigest:\n{digest}"
        );
    }
    assert!(materialize(
        &digest,
        &f.items,
        jobs as i64,
        &schedd_options,
        &configuration(),
        &files()
    )
    .is_err());
}

#[test]
fn a_count_with_process_and_step() {
    check_same(
        "executable = job.sh\narguments = $(Process) $(Step) $(Cluster)\n\
         output = out.$(ProcId)\nmax_materialize = 2\nqueue 5\n",
        5,
    );
}

#[test]
fn an_inline_from_list_with_two_variables_row_and_step() {
    check_same(
        "executable = job.sh\narguments = $(a) $(b) row=$(Row) step=$(Step) item=$(ItemIndex)\n\
         +Letter = \"$(a)\"\nmax_idle = 1\n\
         queue 2 a,b from (\n  p 10\n  q, 20\n  r   30 and more\n)\n",
        6,
    );
}

#[test]
fn a_from_file_with_an_empty_row_and_a_slice() {
    // The empty row keeps the variables of the row before it.
    check_same(
        "executable = job.sh\narguments = $(name) $(n) $(Row)\nmax_materialize = 1\n\
         queue name n from items.txt\n",
        4,
    );
    check_same(
        "executable = job.sh\narguments = $(name) $(n) $(Row)\nmax_materialize = 1\n\
         queue name n from [1:] items.txt\n",
        3,
    );
}

#[test]
fn in_lists_matching_and_per_job_input_files() {
    check_same(
        "executable = job.sh\ntransfer_input_files = in.$(Process)\n\
         arguments = \"'$(Item)' x\"\nmax_materialize = 1\nqueue in (alpha, beta)\n",
        2,
    );
    check_same(
        "executable = job.sh\narguments = $(f)\nmax_materialize = 3\n\
         queue f matching data/*.dat\n",
        2,
    );
}

#[test]
fn multi_line_values_conditionals_and_self_references() {
    check_same(
        "executable = job.sh\nenv = A=1\nenv = $(env);B=$(Process)\n\
         if defined env\n  +Flag = true\nendif\n\
         +Long @=end\n  \"a $(Step)\"\n@end\nmax_materialize = 4\nqueue 3\n",
        3,
    );
}

#[test]
fn the_limits_and_what_is_not_a_factory() {
    let f = factory_of("executable = job.sh\nmax_materialize = 2\nqueue 6\n");
    assert_eq!(
        (f.max_materialize, f.max_idle, f.limit()),
        (Some(2), None, 2)
    );
    let f = factory_of("executable = job.sh\nmax_idle = 3\nqueue 6\n");
    assert_eq!(
        (f.max_materialize, f.max_idle, f.limit()),
        (None, Some(3), 6)
    );
    assert_eq!(
        classad::unparse::expr_to_string(f.first_job.get("JobMaterializeMaxIdle").unwrap()),
        "3"
    );
    let f =
        factory_of("executable = job.sh\nmaterialize_max_idle = 1\nmax_materialize = 9\nqueue 4\n");
    assert_eq!(
        (f.max_materialize, f.max_idle, f.limit()),
        (Some(9), Some(1), 4)
    );
    // No limit: an ordinary submission.
    let made = submit_or_factory(
        "executable = job.sh\nqueue 2\n",
        &options(),
        &configuration(),
        &files(),
        &mut |_| Ok(()),
    )
    .unwrap();
    assert!(matches!(made, Made::Jobs(_)));
    // A factory has one queue statement.
    let e = submit_or_factory(
        "executable = job.sh\nmax_materialize = 1\nqueue 2\nqueue 3\n",
        &options(),
        &configuration(),
        &files(),
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("one queue statement"), "{e}");
    let e = submit_or_factory(
        "executable = job.sh\nmax_materialize = lots\nqueue 2\n",
        &options(),
        &configuration(),
        &files(),
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("expected an integer"), "{e}");
}

/// condor_submit -factory: a factory without max_materialize or max_idle,
/// no limit but the number of jobs.
#[test]
fn a_forced_factory_needs_no_limit() {
    let mut o = options();
    o.factory = true;
    let made = submit_or_factory(
        "executable = job.sh\narguments = $(Process)\nqueue 3\n",
        &o,
        &configuration(),
        &files(),
        &mut |_| panic!("a factory hands out no job"),
    )
    .unwrap();
    let Made::Factory(f, _) = made else {
        panic!("not a factory")
    };
    assert_eq!(
        (f.max_materialize, f.max_idle, f.total, f.limit()),
        (None, None, 3, 3)
    );
}

/// `$RANDOM_INTEGER()` and `$RANDOM_CHOICE()` with plain arguments are
/// drawn once, into the digest (condor_submit's `make_digest` expands
/// them): every job of the factory has the one value. One whose
/// arguments name a macro stays in the digest, drawn for each job.
#[test]
fn random_macros_are_drawn_once_into_the_digest_unless_they_name_a_macro() {
    let f = factory_of(
        "executable = job.sh\narguments = $RANDOM_INTEGER(1000,9999) $RANDOM_CHOICE(red,green,blue)\n\
         my.Seat = \"$RANDOM_INTEGER(0,$(Process))\"\nmax_materialize = 1\nqueue 4\n",
    );
    let digest = f.digest("");
    assert!(!digest.contains("$RANDOM_INTEGER(1000"), "{digest}");
    assert!(!digest.contains("$RANDOM_CHOICE"), "{digest}");
    assert!(digest.contains("$RANDOM_INTEGER(0,$(Process))"), "{digest}");
    let line = digest
        .lines()
        .find(|l| l.starts_with("arguments"))
        .unwrap_or_else(|| panic!("{digest}"));
    let drawn = line.split_once('=').unwrap().1.trim();
    let (n, colour) = drawn.split_once(' ').unwrap();
    assert!((1000..=9999).contains(&n.parse::<i64>().unwrap()), "{line}");
    assert!(["red", "green", "blue"].contains(&colour), "{line}");
    // Every job made from the digest has the one value.
    let mut schedd_options = options();
    schedd_options.cwd = "/".into();
    for proc in 0..4 {
        let job = materialize(
            &digest,
            &[],
            proc,
            &schedd_options,
            &configuration(),
            &files(),
        )
        .unwrap();
        let args = classad::unparse::expr_to_string(job.get("Args").unwrap());
        assert_eq!(args, format!("\"{drawn}\""), "job {proc}");
    }
}

/// SUBMIT_FACTORY_JOBS_BY_DEFAULT: condor_submit's "smart factory", a
/// queue statement of several jobs is a factory, one job is not.
#[test]
fn factory_jobs_by_default_makes_factories_of_several_jobs_only() {
    let mut o = options();
    o.factory_by_default = true;
    let made = |text: &str| {
        submit_or_factory(text, &o, &configuration(), &files(), &mut |_| Ok(())).unwrap()
    };
    assert!(matches!(
        made("executable = job.sh\nqueue 2\n"),
        Made::Factory(..)
    ));
    assert!(matches!(
        made("executable = job.sh\nqueue x in (a, b)\n"),
        Made::Factory(..)
    ));
    assert!(matches!(
        made("executable = job.sh\nqueue 1\n"),
        Made::Jobs(_)
    ));
    assert!(matches!(
        made("executable = job.sh\nqueue x in [1:2] (a, b, c)\n"),
        Made::Jobs(_)
    ));
}
