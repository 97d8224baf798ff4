//! The manual's schedd policy examples ("condor_schedd Policy
//! Configuration"): submit requirements with reasons, submit warnings, job
//! transforms; and who may act on which job.

mod common;

use classad::ClassAd;
use common::{config, job_ads, show, SIMPLE, T0};
use schedd::{
    JobQueue, JobStatus, LogEvent, QueueError, SubmitPolicy, SubmitRefused, SuperUsers, UserAction,
};

const REQUIREMENTS: &str = r#"
SUBMIT_REQUIREMENT_NAMES = NotStandardUniverse, MinimalRequestMemory, NotChris
SUBMIT_REQUIREMENT_NotStandardUniverse = JobUniverse != 1
SUBMIT_REQUIREMENT_MinimalRequestMemory = RequestMemory > 512
SUBMIT_REQUIREMENT_NotChris = Owner != "chris"
SUBMIT_REQUIREMENT_NotStandardUniverse_REASON = "This pool does not accept standard universe jobs."
SUBMIT_REQUIREMENT_MinimalRequestMemory_REASON = strcat( "The job only requested ", \
  RequestMemory, " Megabytes.  If that small amount is really enough, please contact ..." )
SUBMIT_REQUIREMENT_NotChris_REASON = "Chris, you may only submit jobs to the instructional pool."
"#;

fn try_submit(
    policy: &SubmitPolicy,
    owner: &str,
    description: &str,
) -> (JobQueue, Result<schedd::Submitted, SubmitRefused>) {
    let mut q = JobQueue::new();
    let cluster = q.new_cluster();
    let ads = job_ads(description, cluster, owner, &[]);
    let r = q.submit(ads, owner, policy, &ClassAd::new(), "<10.0.0.1:9618>", T0);
    (q, r)
}

#[test]
fn submit_requirements_refuse_with_their_reasons() {
    let policy = SubmitPolicy::from_config(&config(REQUIREMENTS)).unwrap();
    let (_, ok) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 1024\nqueue\n",
    );
    assert!(ok.is_ok(), "{ok:?}");

    let (q, small) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 100\nqueue 3\n",
    );
    assert_eq!(
        small.unwrap_err(),
        SubmitRefused::Requirement {
            name: "MinimalRequestMemory".into(),
            reason: "The job only requested 100 Megabytes.  If that small amount is really enough, please contact ...".into()
        }
    );
    assert!(q.is_empty(), "a refused cluster leaves nothing behind");

    let (_, chris) = try_submit(
        &policy,
        "chris",
        "executable = job.sh\nrequest_memory = 1024\nqueue\n",
    );
    assert_eq!(
        chris.unwrap_err().to_string(),
        "Chris, you may only submit jobs to the instructional pool."
    );
}

#[test]
fn the_first_failing_requirement_is_the_only_one_reported() {
    let policy = SubmitPolicy::from_config(&config(REQUIREMENTS)).unwrap();
    let (_, r) = try_submit(
        &policy,
        "chris",
        "executable = job.sh\nrequest_memory = 10\nqueue\n",
    );
    assert!(
        matches!(r, Err(SubmitRefused::Requirement { name, .. }) if name == "MinimalRequestMemory")
    );
}

#[test]
fn a_requirement_without_a_reason_names_itself() {
    let policy = SubmitPolicy::from_config(&config(
        "SUBMIT_REQUIREMENT_NAMES = NeedsMemory\nSUBMIT_REQUIREMENT_NeedsMemory = RequestMemory > 4096\n",
    ))
    .unwrap();
    let (_, r) = try_submit(&policy, "alice", SIMPLE);
    assert_eq!(
        r.unwrap_err().to_string(),
        "Submit requirement NeedsMemory evaluated to non-true."
    );
}

#[test]
fn submit_warnings_queue_the_job_and_reach_the_submit_event() {
    let text = format!(
        "{REQUIREMENTS}\n{}",
        r#"SUBMIT_REQUIREMENT_NAMES = OneGig $(SUBMIT_REQUIREMENT_NAMES)
SUBMIT_REQUIREMENT_OneGig = RequestMemory > 1024
SUBMIT_REQUIREMENT_OneGig_REASON = "As of <date>, the minimum requested memory will be 1024."
SUBMIT_REQUIREMENT_OneGig_IS_WARNING = TRUE
"#
    );
    let policy = SubmitPolicy::from_config(&config(&text)).unwrap();
    let (q, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 800\nqueue\n",
    );
    let s = r.unwrap();
    assert_eq!(
        s.warning.as_deref(),
        Some("As of <date>, the minimum requested memory will be 1024.")
    );
    assert_eq!(q.len(), 1);
    let event = s.changes[0].log.as_ref().unwrap();
    let text = event.format(s.jobs[0], T0, &schedd::LogFormat::default());
    assert_eq!(
        text,
        "000 (001.000.000) 2023-11-14 22:13:20 Job submitted from host: <10.0.0.1:9618>\n    WARNING: Committed job submission into the queue with the following warning(s): As of <date>, the minimum requested memory will be 1024.\n...\n"
    );
    // A warning does not stop the evaluation: a later failing requirement
    // still refuses.
    let (_, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 100\nqueue\n",
    );
    assert!(
        matches!(r, Err(SubmitRefused::Requirement { name, .. }) if name == "MinimalRequestMemory")
    );
}

const TRANSFORMS: &str = r#"
JOB_TRANSFORM_NAMES = AssignGroup, SL6ToDocker

JOB_TRANSFORM_AssignGroup @=end
   # map Owner to group using the existing accounting group attribute as requested group
   EVALSET AcctGroup = userMap("Groups",Owner,AcctGroup)
   EVALSET AccountingGroup = join(".",AcctGroup,Owner)
@end

JOB_TRANSFORM_SL6ToDocker @=end
   # match only vanilla jobs that have WantSL6 and do not already have a DockerImage
   REQUIREMENTS JobUniverse==5 && WantSL6 && DockerImage =?= undefined
   SET  WantDocker = true
   SET  DockerImage = "SL6"
   SET  Requirements = TARGET.HasDocker && $(MY.Requirements)
@end
"#;

#[test]
fn the_manuals_sl6_to_docker_transform() {
    let policy = SubmitPolicy::from_config(&config(TRANSFORMS)).unwrap();
    let (q, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\n+WantSL6 = true\nqueue\n",
    );
    let s = r.unwrap();
    let id = s.jobs[0];
    assert_eq!(show(&q, id, "WantDocker").as_deref(), Some("true"));
    assert_eq!(show(&q, id, "DockerImage").as_deref(), Some("\"SL6\""));
    let req = show(&q, id, "Requirements").unwrap();
    assert!(
        req.starts_with("TARGET.HasDocker && (TARGET.Arch == "),
        "{req}"
    );
    // AssignGroup ran first: no user map here, so userMap gives undefined.
    assert!(q.job(id).unwrap().get("AcctGroup").is_some());

    // Jobs that do not want SL6 are left alone.
    let (q, r) = try_submit(&policy, "alice", SIMPLE);
    let id = r.unwrap().jobs[0];
    assert_eq!(show(&q, id, "WantDocker"), None);
    assert!(show(&q, id, "Requirements")
        .unwrap()
        .starts_with("(TARGET.Arch"));
}

#[test]
fn transforms_run_before_the_submit_requirements() {
    let text = r#"
JOB_TRANSFORM_NAMES = Project, Memory
JOB_TRANSFORM_Project = DEFAULT Project "general"
JOB_TRANSFORM_Memory @=end
   REQUIREMENTS RequestMemory < 1024
   SET RequestMemory 1024
@end
SUBMIT_REQUIREMENT_NAMES = OneGig
SUBMIT_REQUIREMENT_OneGig = RequestMemory >= 1024
"#;
    let policy = SubmitPolicy::from_config(&config(text)).unwrap();
    let (q, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 100\n+Project = \"cms\"\nqueue\n",
    );
    let id = r.unwrap().jobs[0];
    assert_eq!(show(&q, id, "RequestMemory").as_deref(), Some("1024"));
    assert_eq!(show(&q, id, "Project").as_deref(), Some("\"cms\""));
    let (q, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\nrequest_memory = 2048\nqueue\n",
    );
    let id = r.unwrap().jobs[0];
    assert_eq!(show(&q, id, "RequestMemory").as_deref(), Some("2048"));
    assert_eq!(show(&q, id, "Project").as_deref(), Some("\"general\""));
}

#[test]
fn the_older_classad_form_of_a_transform() {
    let text = r#"
JOB_TRANSFORM_NAMES = Old
JOB_TRANSFORM_Old = [ Requirements = Owner == "alice"; copy_Cmd = "OriginalCmd"; delete_In = true; set_Rank = 10; eval_set_Doubled = JobPrio * 2 + 1; ]
"#;
    let policy = SubmitPolicy::from_config(&config(text)).unwrap();
    let (q, r) = try_submit(
        &policy,
        "alice",
        "executable = job.sh\npriority = 4\nqueue\n",
    );
    let id = r.unwrap().jobs[0];
    assert_eq!(
        show(&q, id, "OriginalCmd").as_deref(),
        Some("\"/home/alice/job.sh\"")
    );
    assert_eq!(show(&q, id, "In"), None);
    assert_eq!(show(&q, id, "Rank").as_deref(), Some("10"));
    assert_eq!(show(&q, id, "Doubled").as_deref(), Some("9"));

    let (q, r) = try_submit(&policy, "bob", "executable = job.sh\nqueue\n");
    let id = r.unwrap().jobs[0];
    assert_eq!(show(&q, id, "OriginalCmd"), None);
}

#[test]
fn a_broken_transform_is_a_configuration_error_naming_it() {
    let e = SubmitPolicy::from_config(&config(
        "JOB_TRANSFORM_NAMES = Broken\nJOB_TRANSFORM_Broken @=end\nSET A 1\nSETT B 2\n@end\n",
    ))
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("JOB_TRANSFORM_Broken line 2: `SETT` is not a transform statement"),
        "{e}"
    );
    let e = SubmitPolicy::from_config(&config("JOB_TRANSFORM_NAMES = Missing\n")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "JOB_TRANSFORM_Missing: JOB_TRANSFORM_NAMES lists Missing, but JOB_TRANSFORM_Missing is not defined"
    );
}

#[test]
fn owners_act_on_their_jobs_others_are_refused_with_why() {
    let (mut q, r) = try_submit(&SubmitPolicy::none(), "alice", SIMPLE);
    let id = r.unwrap().jobs[0];
    let su = SuperUsers::from_config(&config("")).unwrap();
    assert_eq!(su, SuperUsers::default());

    let e = q
        .user_action("bob", &su, id, UserAction::Remove { reason: None }, T0 + 1)
        .unwrap_err();
    let QueueError::NotPermitted(refusal) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(refusal.owner.as_deref(), Some("alice"));
    assert_eq!(
        e.to_string(),
        "permission denied: bob may not remove job 1.0, which belongs to alice; only its owner and the queue super users may (the queue super users (QUEUE_SUPER_USERS) are root, condor)"
    );
    assert_eq!(q.status(id), Some(JobStatus::Idle));

    let c = q
        .user_action(
            "alice",
            &su,
            id,
            UserAction::Hold {
                reason: None,
                subcode: 0,
            },
            T0 + 2,
        )
        .unwrap();
    assert_eq!(
        c.log,
        Some(LogEvent::Held {
            reason: Some("via condor_hold (by user alice)".into()),
            code: 1,
            subcode: 0
        })
    );
    assert_eq!(
        show(&q, id, "NumHoldsByReason").as_deref(),
        Some("[ UserRequest = 1 ]")
    );
    let c = q
        .user_action(
            "condor",
            &su,
            id,
            UserAction::Release { reason: None },
            T0 + 3,
        )
        .unwrap();
    assert_eq!(c.to, JobStatus::Idle);
    assert_eq!(
        show(&q, id, "ReleaseReason").as_deref(),
        Some("\"via condor_release (by user condor)\"")
    );
    let su = SuperUsers::from_config(&config("QUEUE_SUPER_USERS = admin\n")).unwrap();
    assert!(q
        .user_action(
            "condor",
            &su,
            id,
            UserAction::Remove { reason: None },
            T0 + 4
        )
        .is_err());
    let c = q
        .user_action(
            "admin",
            &su,
            id,
            UserAction::Remove {
                reason: Some("cleanup".into()),
            },
            T0 + 4,
        )
        .unwrap();
    assert_eq!(c.to, JobStatus::Removed);
}

#[test]
fn the_schedd_sets_the_owner() {
    let (q, r) = try_submit(&SubmitPolicy::none(), "alice", SIMPLE);
    let id = r.unwrap().jobs[0];
    assert_eq!(show(&q, id, "Owner").as_deref(), Some("\"alice\""));
}

#[test]
fn transform_statements_we_do_not_support_are_refused_not_ignored() {
    for text in [
        "UNIVERSE vanilla\nSET Site \"x\"",
        "TRANSFORM 2\nSET Site \"x\"",
    ] {
        let e = schedd::Transform::parse("T", text).unwrap_err();
        assert!(e.to_string().contains("not supported yet"), "{e}");
    }
}
