//! One test per job-state transition: the status it leads to, the
//! attributes HTCondor keeps through it, and the event log entry it writes.

mod common;

use common::{queue_with, show, SIMPLE, T0};
use schedd::{
    ExitHow, HoldCode, JobEvent, JobStatus, LogEvent, QueueError, RunReport, SystemPolicy,
};

fn started(host: &str) -> JobEvent {
    JobEvent::Started {
        host: host.into(),
        slot: "slot1@exec.example.org".into(),
        claim: None,
    }
}

const STARTD: &str = "<10.0.0.2:9618?addrs=10.0.0.2-9618>";

#[test]
fn submit_queues_an_idle_job_with_a_submit_event() {
    let (q, id) = queue_with(SIMPLE);
    assert_eq!(q.status(id), Some(JobStatus::Idle));
    assert_eq!(show(&q, id, "Owner").as_deref(), Some("\"alice\""));
    assert_eq!(show(&q, id, "EnteredCurrentStatus"), Some(T0.to_string()));
    assert_eq!(show(&q, id, "QDate"), Some(T0.to_string()));
}

#[test]
fn submit_on_hold_queues_a_held_job() {
    let (q, id) = queue_with("executable = job.sh\nhold = true\nqueue\n");
    assert_eq!(q.status(id), Some(JobStatus::Held));
    assert_eq!(show(&q, id, "HoldReasonCode").as_deref(), Some("15"));
}

#[test]
fn submit_refuses_a_status_other_than_idle_or_held() {
    use classad::ClassAd;
    use schedd::{SubmitPolicy, SubmitRefused};
    let submit = |status: Option<&str>| {
        let mut q = schedd::JobQueue::new();
        let cluster = q.new_cluster();
        let mut ads = common::job_ads(SIMPLE, cluster, "alice", &[]);
        match status {
            Some(s) => ads[0].insert("JobStatus", classad::parse_expr(s).unwrap()),
            None => {
                ads[0].remove("JobStatus");
            }
        }
        let r = q.submit(
            ads,
            "alice",
            &SubmitPolicy::none(),
            &ClassAd::new(),
            "<10.0.0.1:9618>",
            T0,
        );
        (q, r)
    };
    // Idle, Held, or none at all (Idle) are what a submission may say.
    for (given, status) in [
        (Some("1"), JobStatus::Idle),
        (Some("5"), JobStatus::Held),
        (None, JobStatus::Idle),
    ] {
        let (q, r) = submit(given);
        let id = r.unwrap().jobs[0];
        assert_eq!(q.status(id), Some(status), "{given:?}");
    }
    // Running, Removed, Completed, Transferring Output, Suspended, a
    // status that does not exist, a string: refused, and nothing queued.
    for given in ["2", "3", "4", "6", "7", "0", "42", "\"Idle\""] {
        let (q, r) = submit(Some(given));
        match r {
            Err(SubmitRefused::Malformed(why)) => assert!(
                why.contains(&format!("JobStatus = {given} may not be submitted"))
                    && why.contains("Idle (1), or Held (5)"),
                "{why}"
            ),
            other => panic!("JobStatus = {given}: {other:?}"),
        }
        assert!(q.is_empty(), "JobStatus = {given}");
    }
}

#[test]
fn matched_counts_matches_without_changing_status() {
    let (mut q, id) = queue_with(SIMPLE);
    let c = q
        .apply(id, JobEvent::Matched, T0 + 5, &SystemPolicy::none())
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Idle), JobStatus::Idle));
    assert_eq!(c.log, None);
    assert_eq!(show(&q, id, "NumJobMatches").as_deref(), Some("1"));
    assert_eq!(show(&q, id, "LastMatchTime"), Some((T0 + 5).to_string()));
}

#[test]
fn idle_to_running_when_started() {
    let (mut q, id) = queue_with(SIMPLE);
    let c = q
        .apply(id, started(STARTD), T0 + 10, &SystemPolicy::none())
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Idle), JobStatus::Running));
    assert_eq!(
        c.log,
        Some(LogEvent::Execute {
            host: STARTD.into(),
            slot_name: Some("slot1@exec.example.org".into())
        })
    );
    for (attr, want) in [
        ("JobStatus", "2"),
        ("LastJobStatus", "1"),
        ("NumShadowStarts", "1"),
        ("JobRunCount", "1"),
        ("NumJobStarts", "1"),
        ("RemoteHost", "\"slot1@exec.example.org\""),
    ] {
        assert_eq!(show(&q, id, attr).as_deref(), Some(want), "{attr}");
    }
    let t = (T0 + 10).to_string();
    for attr in [
        "EnteredCurrentStatus",
        "JobStartDate",
        "JobCurrentStartDate",
        "ShadowBday",
    ] {
        assert_eq!(show(&q, id, attr).as_deref(), Some(t.as_str()), "{attr}");
    }
    assert!(c.attributes.iter().any(|a| a == "JobStatus"));
}

#[test]
fn job_start_date_keeps_the_first_run() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0 + 10, &sys).unwrap();
    q.apply(
        id,
        JobEvent::Evicted {
            checkpointed: false,
            reason: None,
            report: RunReport::default(),
        },
        T0 + 110,
        &sys,
    )
    .unwrap();
    q.apply(id, started(STARTD), T0 + 200, &sys).unwrap();
    assert_eq!(show(&q, id, "JobStartDate"), Some((T0 + 10).to_string()));
    assert_eq!(
        show(&q, id, "JobCurrentStartDate"),
        Some((T0 + 200).to_string())
    );
    assert_eq!(show(&q, id, "NumJobStarts").as_deref(), Some("2"));
    assert_eq!(show(&q, id, "NumShadowStarts").as_deref(), Some("2"));
}

#[test]
fn running_to_suspended_and_back() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0 + 10, &sys).unwrap();
    let c = q
        .apply(id, JobEvent::Suspended { num_pids: 1 }, T0 + 20, &sys)
        .unwrap();
    assert_eq!(c.to, JobStatus::Suspended);
    assert_eq!(c.log, Some(LogEvent::Suspended { num_pids: 1 }));
    assert_eq!(
        show(&q, id, "LastSuspensionTime"),
        Some((T0 + 20).to_string())
    );
    assert_eq!(show(&q, id, "TotalSuspensions").as_deref(), Some("1"));
    let c = q.apply(id, JobEvent::Unsuspended, T0 + 50, &sys).unwrap();
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::Suspended), JobStatus::Running)
    );
    assert_eq!(c.log, Some(LogEvent::Unsuspended));
    assert_eq!(
        show(&q, id, "CumulativeSuspensionTime").as_deref(),
        Some("30")
    );
    assert_eq!(show(&q, id, "LastSuspensionTime").as_deref(), Some("0"));
}

#[test]
fn running_to_idle_when_evicted() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0 + 10, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Evicted {
                checkpointed: false,
                reason: Some("PREEMPT expression".into()),
                report: RunReport::default(),
            },
            T0 + 110,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Running), JobStatus::Idle));
    assert!(matches!(
        c.log,
        Some(LogEvent::Evicted { requeued: None, .. })
    ));
    assert_eq!(
        show(&q, id, "RemoteWallClockTime").as_deref(),
        Some("1.000000000000000E+02")
    );
    assert_eq!(show(&q, id, "CumulativeSlotTime").as_deref(), Some("100"));
    assert_eq!(show(&q, id, "CommittedTime").as_deref(), Some("0"));
    assert_eq!(show(&q, id, "LastVacateTime"), Some((T0 + 110).to_string()));
    assert_eq!(
        show(&q, id, "LastRemoteHost").as_deref(),
        Some("\"slot1@exec.example.org\"")
    );
    assert_eq!(show(&q, id, "RemoteHost"), None);
}

#[test]
fn suspended_to_idle_when_evicted_counts_the_suspension() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    q.apply(id, JobEvent::Suspended { num_pids: 3 }, T0 + 40, &sys)
        .unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Evicted {
                checkpointed: false,
                reason: None,
                report: RunReport::default(),
            },
            T0 + 100,
            &sys,
        )
        .unwrap();
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::Suspended), JobStatus::Idle)
    );
    assert_eq!(
        show(&q, id, "RemoteWallClockTime").as_deref(),
        Some("1.000000000000000E+02")
    );
    assert_eq!(
        show(&q, id, "CumulativeSuspensionTime").as_deref(),
        Some("60")
    );
}

#[test]
fn running_to_completed_when_it_exits() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0 + 10, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(0),
                report: RunReport::default(),
            },
            T0 + 70,
            &sys,
        )
        .unwrap();
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::Running), JobStatus::Completed)
    );
    assert!(matches!(
        c.log,
        Some(LogEvent::Terminated {
            how: ExitHow::Code(0),
            ..
        })
    ));
    for (attr, want) in [
        ("ExitCode", "0"),
        ("ExitBySignal", "false"),
        ("NumJobCompletions", "1"),
        ("RemoteWallClockTime", "6.000000000000000E+01"),
        ("CommittedTime", "60"),
        ("LastJobStatus", "2"),
    ] {
        assert_eq!(show(&q, id, attr).as_deref(), Some(want), "{attr}");
    }
    assert_eq!(show(&q, id, "CompletionDate"), Some((T0 + 70).to_string()));
    assert_eq!(show(&q, id, "ExitSignal"), None);
}

#[test]
fn exit_by_signal_records_the_signal() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    q.apply(
        id,
        JobEvent::Exited {
            how: ExitHow::Signal {
                signal: 9,
                core_file: None,
            },
            report: RunReport::default(),
        },
        T0 + 5,
        &sys,
    )
    .unwrap();
    assert_eq!(q.status(id), Some(JobStatus::Completed));
    assert_eq!(show(&q, id, "ExitBySignal").as_deref(), Some("true"));
    assert_eq!(show(&q, id, "ExitSignal").as_deref(), Some("9"));
    assert_eq!(show(&q, id, "ExitCode"), None);
}

#[test]
fn running_to_transferring_output_to_completed() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    let c = q
        .apply(id, JobEvent::TransferOutputStarted, T0 + 30, &sys)
        .unwrap();
    assert_eq!(c.to, JobStatus::TransferringOutput);
    assert_eq!(show(&q, id, "JobStatus").as_deref(), Some("6"));
    let c = q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(0),
                report: RunReport::default(),
            },
            T0 + 35,
            &sys,
        )
        .unwrap();
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::TransferringOutput), JobStatus::Completed)
    );
    assert_eq!(
        show(&q, id, "JobCurrentFinishTransferOutputDate"),
        Some((T0 + 35).to_string())
    );
}

#[test]
fn exit_with_on_exit_remove_false_requeues() {
    let (mut q, id) = queue_with("executable = job.sh\non_exit_remove = ExitCode == 0\nqueue\n");
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(3),
                report: RunReport::default(),
            },
            T0 + 10,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Running), JobStatus::Idle));
    match c.log {
        Some(LogEvent::Evicted {
            requeued: Some(ExitHow::Code(3)),
            reason: Some(r),
            ..
        }) => assert_eq!(
            r,
            "The job attribute OnExitRemove expression 'ExitCode == 0' evaluated to FALSE"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(show(&q, id, "NumJobCompletions").as_deref(), Some("1"));
}

#[test]
fn exit_with_on_exit_hold_holds_with_code_3() {
    let (mut q, id) = queue_with("executable = job.sh\non_exit_hold = ExitCode != 0\nqueue\n");
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(1),
                report: RunReport::default(),
            },
            T0 + 10,
            &sys,
        )
        .unwrap();
    assert_eq!(c.to, JobStatus::Held);
    assert_eq!(show(&q, id, "HoldReasonCode").as_deref(), Some("3"));
    assert_eq!(
        show(&q, id, "HoldReason").as_deref(),
        Some("\"The job attribute OnExitHold expression 'ExitCode != 0' evaluated to TRUE\"")
    );
    assert!(!c.stop, "the job already left its machine");
}

#[test]
fn idle_to_held_and_released() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    let c = q
        .apply(
            id,
            JobEvent::Held {
                reason: "disk full".into(),
                code: HoldCode(13),
                subcode: 28,
            },
            T0 + 5,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Idle), JobStatus::Held));
    assert!(!c.stop);
    assert_eq!(
        c.log,
        Some(LogEvent::Held {
            reason: Some("disk full".into()),
            code: 13,
            subcode: 28
        })
    );
    assert_eq!(show(&q, id, "NumHolds").as_deref(), Some("1"));
    assert_eq!(
        show(&q, id, "NumHoldsByReason").as_deref(),
        Some("[ TransferInputError = 1 ]")
    );
    let c = q
        .apply(
            id,
            JobEvent::Released {
                reason: "fixed".into(),
            },
            T0 + 9,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Held), JobStatus::Idle));
    assert_eq!(show(&q, id, "HoldReason"), None);
    assert_eq!(show(&q, id, "HoldReasonCode"), None);
    assert_eq!(
        show(&q, id, "LastHoldReason").as_deref(),
        Some("\"disk full\"")
    );
    assert_eq!(show(&q, id, "LastHoldReasonCode").as_deref(), Some("13"));
    assert_eq!(show(&q, id, "LastHoldReasonSubCode").as_deref(), Some("28"));
    assert_eq!(show(&q, id, "ReleaseReason").as_deref(), Some("\"fixed\""));
    assert_eq!(show(&q, id, "LastJobStatus").as_deref(), Some("5"));
}

#[test]
fn running_to_held_stops_the_job_and_counts_its_run() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Held {
                reason: "WANT_HOLD".into(),
                code: HoldCode::STARTD_HELD_JOB,
                subcode: 0,
            },
            T0 + 25,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Running), JobStatus::Held));
    assert!(c.stop);
    assert_eq!(
        show(&q, id, "RemoteWallClockTime").as_deref(),
        Some("2.500000000000000E+01")
    );
}

#[test]
fn idle_and_running_to_removed() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    let c = q
        .apply(
            id,
            JobEvent::Removed {
                reason: "gone".into(),
            },
            T0 + 1,
            &sys,
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Idle), JobStatus::Removed));
    assert!(!c.stop);
    assert_eq!(
        c.log,
        Some(LogEvent::Aborted {
            reason: Some("gone".into())
        })
    );
    assert_eq!(show(&q, id, "RemoveReason").as_deref(), Some("\"gone\""));

    let (mut q, id) = queue_with(SIMPLE);
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    let c = q
        .apply(
            id,
            JobEvent::Removed {
                reason: "gone".into(),
            },
            T0 + 7,
            &sys,
        )
        .unwrap();
    assert_eq!(
        (c.from, c.to),
        (Some(JobStatus::Running), JobStatus::Removed)
    );
    assert!(c.stop);
    assert_eq!(
        show(&q, id, "RemoteWallClockTime").as_deref(),
        Some("7.000000000000000E+00")
    );
}

#[test]
fn held_to_removed() {
    let (mut q, id) = queue_with("executable = job.sh\nhold = true\nqueue\n");
    let c = q
        .apply(
            id,
            JobEvent::Removed {
                reason: "no".into(),
            },
            T0 + 1,
            &SystemPolicy::none(),
        )
        .unwrap();
    assert_eq!((c.from, c.to), (Some(JobStatus::Held), JobStatus::Removed));
}

#[test]
fn events_that_make_no_sense_are_refused_and_change_nothing() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    let before = q.job(id).unwrap().to_string();
    let e = q
        .apply(id, JobEvent::Released { reason: "x".into() }, T0, &sys)
        .unwrap_err();
    assert_eq!(
        e,
        QueueError::WrongStatus {
            job: id,
            status: JobStatus::Idle,
            event: "released"
        }
    );
    assert_eq!(
        e.to_string(),
        format!("job {id} cannot be released: it is idle")
    );
    assert!(q.apply(id, JobEvent::Unsuspended, T0, &sys).is_err());
    assert!(q
        .apply(
            id,
            JobEvent::Exited {
                how: ExitHow::Code(0),
                report: RunReport::default()
            },
            T0,
            &sys
        )
        .is_err());
    assert_eq!(q.job(id).unwrap().to_string(), before);
    let missing = schedd::JobId::new(99, 0);
    assert_eq!(
        q.apply(missing, JobEvent::Matched, T0, &sys),
        Err(QueueError::NoSuchJob(missing))
    );
    // A completed job cannot be removed or held.
    q.apply(id, started(STARTD), T0, &sys).unwrap();
    q.apply(
        id,
        JobEvent::Exited {
            how: ExitHow::Code(0),
            report: RunReport::default(),
        },
        T0 + 1,
        &sys,
    )
    .unwrap();
    assert!(q
        .apply(id, JobEvent::Removed { reason: "x".into() }, T0 + 2, &sys)
        .is_err());
}

#[test]
fn clusters_are_numbered_in_order_and_restore_keeps_counting() {
    let (mut q, id) = queue_with(SIMPLE);
    assert_eq!(id, schedd::JobId::new(1, 0));
    assert_eq!(q.new_cluster(), 2);
    let jobs: Vec<_> = q.jobs().map(|(_, ad)| ad.clone()).collect();
    let mut r = schedd::JobQueue::restore(jobs, 0);
    assert_eq!(r.new_cluster(), 2);
    assert_eq!(r.status(id), Some(JobStatus::Idle));
}

#[test]
fn a_run_s_memory_raises_image_size_and_never_lowers_it() {
    let (mut q, id) = queue_with(SIMPLE);
    let none = SystemPolicy::none();
    let run = |kib: i64| RunReport {
        image_size_kib: Some(kib),
        resident_set_size_kib: Some(kib),
        ..RunReport::default()
    };
    q.apply(id, started(STARTD), T0 + 10, &none).unwrap();
    let evicted = JobEvent::Evicted {
        checkpointed: false,
        reason: None,
        report: run(4096),
    };
    let c = q.apply(id, evicted, T0 + 20, &none).unwrap();
    assert!(c.attributes.iter().any(|a| a == "ResidentSetSize"), "{c:?}");
    assert_eq!(show(&q, id, "ImageSize").as_deref(), Some("4096"));
    q.apply(id, started(STARTD), T0 + 30, &none).unwrap();
    let exited = JobEvent::Exited {
        how: ExitHow::Code(0),
        report: run(1024),
    };
    q.apply(id, exited, T0 + 40, &none).unwrap();
    assert_eq!(show(&q, id, "ImageSize").as_deref(), Some("4096"));
    assert_eq!(show(&q, id, "ResidentSetSize").as_deref(), Some("4096"));
}
