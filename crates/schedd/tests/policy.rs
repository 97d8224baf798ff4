//! Job policy through the queue: the periodic evaluation and the exit
//! policy, the pool-wide SYSTEM_PERIODIC_* expressions read from a
//! configuration, and the Bologna Batch System's `periodic_remove`
//! (requirement 8: a short job may run one hour, then it is killed and
//! removed).

mod common;

use classad::ClassAd;
use common::{config, job_ads, queue_with, show, SIMPLE, T0};
use schedd::{
    ExitHow, HoldCode, JobEvent, JobQueue, JobStatus, LogEvent, RunReport, SubmitPolicy,
    SystemPolicy,
};

fn started() -> JobEvent {
    JobEvent::Started {
        host: "<10.0.0.2:9618>".into(),
        slot: "slot1@bbs1.infn.it".into(),
        claim: None,
    }
}

/// The options `bbs_submit_short` adds (the Bologna document's addendum);
/// `bbs_submit_long` adds `+LongRunningJob = True` too.
const BBS_SHORT: &[&str] = &[
    "+BolognaBatchJob = True",
    "should_transfer_files = IF_NEEDED",
    "when_to_transfer_output = ON_EXIT",
    "universe = vanilla",
    "periodic_remove = ( LongRunningJob =!= True && (RemoteWallClockTime > 60*60) ) ",
];

const BBS_EXAMPLE: &str =
    "universe = vanilla\nexecutable = job.sh\noutput = ls.out\nerror = ls.err\nlog = ls.log\nqueue\n";

fn bbs_queue(long: bool) -> (JobQueue, schedd::JobId) {
    let mut q = JobQueue::new();
    let cluster = q.new_cluster();
    let mut append: Vec<&str> = BBS_SHORT.to_vec();
    if long {
        append.insert(1, "+LongRunningJob = True");
    }
    let ads = job_ads(BBS_EXAMPLE, cluster, "alice", &append);
    let s = q
        .submit(
            ads,
            "alice",
            &SubmitPolicy::none(),
            &ClassAd::new(),
            "<10.0.0.1:9618>",
            T0,
        )
        .unwrap();
    (q, s.jobs[0])
}

#[test]
fn bologna_short_job_is_removed_once_it_has_run_an_hour() {
    let (mut q, id) = bbs_queue(false);
    let sys = SystemPolicy::none();
    assert!(show(&q, id, "PeriodicRemove").is_some());
    q.apply(id, started(), T0 + 100, &sys).unwrap();
    // The shadow counts the current run in RemoteWallClockTime: an hour
    // has not yet passed.
    assert!(q.evaluate_periodic(T0 + 100 + 3599, &sys).is_empty());
    assert_eq!(q.status(id), Some(JobStatus::Running));
    let changes = q.evaluate_periodic(T0 + 100 + 3601, &sys);
    assert_eq!(changes.len(), 1);
    let c = &changes[0];
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::Running), JobStatus::Removed)
    );
    assert!(c.stop, "the job is killed");
    let Some(LogEvent::Aborted {
        reason: Some(reason),
    }) = &c.log
    else {
        panic!("{:?}", c.log)
    };
    assert!(
        reason.starts_with("The job attribute PeriodicRemove expression '")
            && reason.ends_with("' evaluated to TRUE"),
        "{reason}"
    );
    assert_eq!(
        show(&q, id, "RemoteWallClockTime").as_deref(),
        Some("3.601000000000000E+03")
    );
}

#[test]
fn bologna_short_job_preempted_by_its_startd_is_removed_from_the_queue() {
    // The startd's PREEMPT kills a short job after an hour; the schedd's
    // periodic_remove then takes it out of the queue so it does not wait
    // for a machine forever.
    let (mut q, id) = bbs_queue(false);
    let sys = SystemPolicy::none();
    q.apply(id, started(), T0, &sys).unwrap();
    q.apply(
        id,
        JobEvent::Evicted {
            checkpointed: false,
            reason: None,
            report: RunReport::default(),
        },
        T0 + 3650,
        &sys,
    )
    .unwrap();
    let changes = q.evaluate_periodic(T0 + 3660, &sys);
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].from, changes[0].to),
        (Some(JobStatus::Idle), JobStatus::Removed)
    );
    assert!(!changes[0].stop);
}

#[test]
fn bologna_long_job_is_never_removed() {
    let (mut q, id) = bbs_queue(true);
    let sys = SystemPolicy::none();
    q.apply(id, started(), T0, &sys).unwrap();
    assert!(q.evaluate_periodic(T0 + 10 * 3600, &sys).is_empty());
    assert_eq!(q.status(id), Some(JobStatus::Running));
}

#[test]
fn undefined_periodic_hold_holds_with_code_5() {
    let (mut q, id) =
        queue_with("executable = job.sh\nperiodic_hold = NoSuchAttribute > 3\nqueue\n");
    let changes = q.evaluate_periodic(T0 + 60, &SystemPolicy::none());
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].to, JobStatus::Held);
    assert_eq!(
        show(&q, id, "HoldReasonCode").as_deref(),
        Some(HoldCode::JOB_POLICY_UNDEFINED.0.to_string().as_str())
    );
    assert_eq!(
        show(&q, id, "HoldReason").as_deref(),
        Some("\"The job attribute PeriodicHold expression 'NoSuchAttribute > 3' evaluated to UNDEFINED\"")
    );
    // A held job is not held again, and an undefined release leaves it held.
    assert!(q
        .evaluate_periodic(T0 + 120, &SystemPolicy::none())
        .is_empty());
}

#[test]
fn periodic_hold_reason_and_subcode_from_submit() {
    let (mut q, id) = queue_with(
        "executable = job.sh\nperiodic_hold = (time() - QDate) > 100\nperiodic_hold_reason = \"waited too long\"\nperiodic_hold_subcode = 7\nqueue\n",
    );
    assert!(q
        .evaluate_periodic(T0 + 100, &SystemPolicy::none())
        .is_empty());
    let c = q.evaluate_periodic(T0 + 101, &SystemPolicy::none());
    assert_eq!(
        c[0].log,
        Some(LogEvent::Held {
            reason: Some("waited too long".into()),
            code: 3,
            subcode: 7
        })
    );
    let _ = id;
}

#[test]
fn periodic_release_releases_a_held_job() {
    let (mut q, id) = queue_with(
        "executable = job.sh\nhold = true\nperiodic_release = (time() - EnteredCurrentStatus) > 300\nqueue\n",
    );
    assert!(q
        .evaluate_periodic(T0 + 300, &SystemPolicy::none())
        .is_empty());
    let c = q.evaluate_periodic(T0 + 301, &SystemPolicy::none());
    assert_eq!(
        (c[0].from, c[0].to),
        (Some(JobStatus::Held), JobStatus::Idle)
    );
    assert_eq!(
        show(&q, id, "ReleaseReason").as_deref(),
        Some("\"The job attribute PeriodicRelease expression '(time() - EnteredCurrentStatus) > 300' evaluated to TRUE\"")
    );
}

const SYSTEM: &str = "\
SYSTEM_PERIODIC_HOLD = RemoteWallClockTime > 600
SYSTEM_PERIODIC_HOLD_REASON = strcat(\"Ran for \", int(RemoteWallClockTime), \" seconds, more than 10 minutes\")
SYSTEM_PERIODIC_HOLD_SUBCODE = 77
SYSTEM_PERIODIC_RELEASE = HoldReasonCode == 26 && NumHolds < 2
SYSTEM_PERIODIC_REMOVE = NoSuchAttribute > 1
";

#[test]
fn system_periodic_hold_uses_its_reason_and_subcode() {
    let sys = SystemPolicy::from_config(&config(SYSTEM)).unwrap();
    let (mut q, id) = queue_with(SIMPLE);
    q.apply(id, started(), T0, &sys).unwrap();
    assert!(q.evaluate_periodic(T0 + 600, &sys).is_empty());
    let c = q.evaluate_periodic(T0 + 601, &sys);
    assert_eq!(c.len(), 1);
    assert!(c[0].stop);
    assert_eq!(
        c[0].log,
        Some(LogEvent::Held {
            reason: Some("Ran for 601 seconds, more than 10 minutes".into()),
            code: 26,
            subcode: 77
        })
    );
    assert_eq!(
        show(&q, id, "NumHoldsByReason").as_deref(),
        Some("[ SystemPolicy = 1 ]")
    );
    // SYSTEM_PERIODIC_RELEASE lets it go once; the undefined
    // SYSTEM_PERIODIC_REMOVE never fires. The idle job's wall clock still
    // says 601 s, so the system hold fires again, and this time the
    // release does not (NumHolds is 2).
    let c = q.evaluate_periodic(T0 + 700, &sys);
    assert_eq!(c[0].to, JobStatus::Idle);
    assert_eq!(
        show(&q, id, "ReleaseReason").as_deref(),
        Some("\"The system macro SYSTEM_PERIODIC_RELEASE expression 'HoldReasonCode == 26 && NumHolds < 2' evaluated to TRUE\"")
    );
    let c = q.evaluate_periodic(T0 + 800, &sys);
    assert_eq!(
        (c[0].from, c[0].to),
        (Some(JobStatus::Idle), JobStatus::Held)
    );
    assert!(!c[0].stop);
    assert!(q.evaluate_periodic(T0 + 900, &sys).is_empty());
    assert_eq!(show(&q, id, "NumHolds").as_deref(), Some("2"));
}

#[test]
fn the_jobs_own_expression_comes_before_the_systems() {
    let sys = SystemPolicy::from_config(&config("SYSTEM_PERIODIC_HOLD = true\n")).unwrap();
    let (mut q, _) = queue_with("executable = job.sh\nperiodic_hold = true\nqueue\n");
    let c = q.evaluate_periodic(T0, &sys);
    assert!(matches!(c[0].log, Some(LogEvent::Held { code: 3, .. })));
    let (mut q, _) = queue_with("executable = job.sh\nperiodic_hold = false\nqueue\n");
    let c = q.evaluate_periodic(T0, &sys);
    assert_eq!(
        c[0].log,
        Some(LogEvent::Held {
            reason: Some(
                "The system macro SYSTEM_PERIODIC_HOLD expression 'true' evaluated to TRUE".into()
            ),
            code: 26,
            subcode: 0
        })
    );
}

#[test]
fn a_literal_false_system_expression_is_ignored() {
    let sys = SystemPolicy::from_config(&config("SYSTEM_PERIODIC_REMOVE = false\n")).unwrap();
    let (mut q, _) = queue_with(SIMPLE);
    assert!(q.evaluate_periodic(T0 + 1, &sys).is_empty());
}

#[test]
fn periodic_remove_at_exit_comes_before_on_exit_remove() {
    let (mut q, id) = queue_with(
        "executable = job.sh\nperiodic_remove = ExitCode =?= 2\non_exit_remove = false\nqueue\n",
    );
    let sys = SystemPolicy::none();
    q.apply(id, started(), T0, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(2),
                report: RunReport::default(),
            },
            T0 + 1,
            &sys,
        )
        .unwrap();
    assert_eq!(c.to, JobStatus::Removed);
}

/// `CurrentHosts`, as condor_q -l shows it: 1 while the job runs on a
/// machine, 0 before and after (HTCondor's shadow sets it).
#[test]
fn current_hosts_is_one_while_the_job_runs() {
    let (mut q, id) = bbs_queue(false);
    let sys = SystemPolicy::none();
    let hosts = |q: &JobQueue| {
        q.job(id)
            .unwrap()
            .eval_attr("CurrentHosts", &classad::Env::at(T0))
            .as_int()
    };
    assert_eq!(hosts(&q), Some(0), "at submit");
    q.apply(id, started(), T0 + 1, &sys).unwrap();
    assert_eq!(hosts(&q), Some(1), "running");
    q.apply(
        id,
        JobEvent::Evicted {
            checkpointed: false,
            reason: None,
            report: RunReport::default(),
        },
        T0 + 2,
        &sys,
    )
    .unwrap();
    assert_eq!(hosts(&q), Some(0), "evicted");
    q.apply(id, started(), T0 + 3, &sys).unwrap();
    assert_eq!(hosts(&q), Some(1), "running again");
    q.apply(
        id,
        JobEvent::Exited {
            how: ExitHow::Code(0),
            report: RunReport::default(),
        },
        T0 + 4,
        &sys,
    )
    .unwrap();
    assert_eq!(hosts(&q), Some(0), "exited");
}
