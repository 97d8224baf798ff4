//! The job event log, byte for byte as HTCondor writes it
//! (`src/condor_utils/condor_event.cpp`): a whole job's life through the
//! queue, and each event's text.

mod common;

use classad::ClassAd;
use common::{queue_with, SIMPLE, T0};
use schedd::{
    EndedBy, ExitHow, JobEvent, JobId, LogEvent, LogFormat, RunReport, Rusage, SystemPolicy, Usage,
};

fn text(e: &LogEvent, t: i64) -> String {
    e.format(JobId::new(1, 0), t, &LogFormat::default())
}

#[test]
fn a_jobs_life_in_its_event_log() {
    let (mut q, id) = queue_with(SIMPLE);
    let sys = SystemPolicy::none();
    let mut log = String::new();
    let mut step = |q: &mut schedd::JobQueue, ev: JobEvent, t: i64| {
        let c = q.apply(id, ev, t, &sys).unwrap();
        if let Some(e) = c.log {
            log.push_str(&e.format(id, t, &LogFormat::default()));
        }
    };
    step(
        &mut q,
        JobEvent::Started {
            host: "<10.0.0.2:9618?addrs=10.0.0.2-9618>".into(),
            slot: "slot1_1@exec.example.org".into(),
            claim: None,
        },
        T0 + 10,
    );
    step(&mut q, JobEvent::Suspended { num_pids: 2 }, T0 + 20);
    step(&mut q, JobEvent::Unsuspended, T0 + 30);
    step(
        &mut q,
        JobEvent::Evicted {
            checkpointed: false,
            reason: None,
            report: RunReport {
                remote_user_cpu: 3,
                ..RunReport::default()
            },
        },
        T0 + 40,
    );
    step(
        &mut q,
        JobEvent::Started {
            host: "<10.0.0.3:9618>".into(),
            slot: "slot2@exec2.example.org".into(),
            claim: None,
        },
        T0 + 100,
    );
    let resources = ClassAd::parse(
        "[ Cpus = 1; RequestCpus = 1; CpusUsage = 0.02; Disk = 1029772; RequestDisk = 1; DiskUsage = 25; Memory = 512; RequestMemory = 1; MemoryUsage = 0 ]",
    )
    .unwrap();
    step(
        &mut q,
        JobEvent::Exited {
            how: ExitHow::Code(0),
            report: RunReport {
                remote_user_cpu: 3725,
                remote_sys_cpu: 90061,
                bytes_sent: 1234.0,
                bytes_received: 28.0,
                resources: Some(resources),
                ..RunReport::default()
            },
        },
        T0 + 200,
    );
    assert_eq!(
        log,
        "001 (001.000.000) 2023-11-14 22:13:30 Job executing on host: <10.0.0.2:9618?addrs=10.0.0.2-9618>\n\
         \tSlotName: slot1_1@exec.example.org\n\
         ...\n\
         010 (001.000.000) 2023-11-14 22:13:40 Job was suspended.\n\
         \tNumber of processes actually suspended: 2\n\
         ...\n\
         011 (001.000.000) 2023-11-14 22:13:50 Job was unsuspended.\n\
         ...\n\
         004 (001.000.000) 2023-11-14 22:14:00 Job was evicted.\n\
         \t(0) CPU times\n\
         \t\tUsr 0 00:00:03, Sys 0 00:00:00  -  Run Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
         \t0  -  Run Bytes Sent By Job\n\
         \t0  -  Run Bytes Received By Job\n\
         ...\n\
         001 (001.000.000) 2023-11-14 22:15:00 Job executing on host: <10.0.0.3:9618>\n\
         \tSlotName: slot2@exec2.example.org\n\
         ...\n\
         005 (001.000.000) 2023-11-14 22:16:40 Job terminated.\n\
         \t(1) Normal termination (return value 0)\n\
         \t\tUsr 0 01:02:05, Sys 1 01:01:01  -  Run Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
         \t\tUsr 0 01:02:08, Sys 1 01:01:01  -  Total Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n\
         \t1234  -  Run Bytes Sent By Job\n\
         \t28  -  Run Bytes Received By Job\n\
         \t1234  -  Total Bytes Sent By Job\n\
         \t28  -  Total Bytes Received By Job\n\
         \tPartitionable Resources :    Usage  Request Allocated \n\
         \t   Cpus                 :     0.02        1         1 \n\
         \t   Disk (KB)            :    25           1   1029772 \n\
         \t   Memory (MB)          :     0           1       512 \n\
         \n\
         \tJob terminated of its own accord at 2023-11-14T22:16:40Z with exit-code 0.\n\
         ...\n"
    );
}

#[test]
fn submit_event_with_notes() {
    let e = LogEvent::Submit {
        host: "<128.105.136.53:37317?addrs=128.105.136.53-37317&noUDP&sock=19966_e869_5>".into(),
        log_notes: Some("DAG Node: A".into()),
        user_notes: None,
        warnings: None,
    };
    assert_eq!(
        text(&e, T0),
        "000 (001.000.000) 2023-11-14 22:13:20 Job submitted from host: <128.105.136.53:37317?addrs=128.105.136.53-37317&noUDP&sock=19966_e869_5>\n    DAG Node: A\n...\n"
    );
}

#[test]
fn held_released_aborted() {
    let held = LogEvent::Held {
        reason: Some("via condor_hold (by user alice)".into()),
        code: 1,
        subcode: 0,
    };
    assert_eq!(
        text(&held, T0),
        "012 (001.000.000) 2023-11-14 22:13:20 Job was held.\n\tvia condor_hold (by user alice)\n\tCode 1 Subcode 0\n...\n"
    );
    let unspecified = LogEvent::Held {
        reason: None,
        code: 0,
        subcode: 0,
    };
    assert_eq!(
        text(&unspecified, T0),
        "012 (001.000.000) 2023-11-14 22:13:20 Job was held.\n\tReason unspecified\n\tCode 0 Subcode 0\n...\n"
    );
    let released = LogEvent::Released {
        reason: Some("via condor_release (by user alice)".into()),
    };
    assert_eq!(
        text(&released, T0),
        "013 (001.000.000) 2023-11-14 22:13:20 Job was released.\n\tvia condor_release (by user alice)\n...\n"
    );
    let aborted = LogEvent::Aborted {
        reason: Some("two\nlines".into()),
    };
    assert_eq!(
        text(&aborted, T0),
        "009 (001.000.000) 2023-11-14 22:13:20 Job was aborted.\n\ttwo|lines\n...\n"
    );
}

#[test]
fn terminated_by_a_signal_and_requeued_evictions() {
    let t = LogEvent::Terminated {
        how: ExitHow::Signal {
            signal: 11,
            core_file: Some("/home/alice/core.123".into()),
        },
        usage: Usage::default(),
        ended_by: Some(EndedBy::Other {
            who: "startd".into(),
            when: T0,
            how_code: 1,
            how: "DEACTIVATE_CLAIM".into(),
        }),
    };
    assert_eq!(
        text(&t, T0),
        "005 (001.000.000) 2023-11-14 22:13:20 Job terminated.\n\
         \t(0) Abnormal termination (signal 11)\n\
         \t(1) Corefile in: /home/alice/core.123\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n\
         \t0  -  Run Bytes Sent By Job\n\
         \t0  -  Run Bytes Received By Job\n\
         \t0  -  Total Bytes Sent By Job\n\
         \t0  -  Total Bytes Received By Job\n\
         \n\
         \tJob terminated by startd at 2023-11-14T22:13:20Z (using method 1: DEACTIVATE_CLAIM).\n\
         ...\n"
    );
    let requeued = LogEvent::Evicted {
        checkpointed: false,
        usage: Usage {
            run_remote: Rusage {
                user_secs: 61,
                sys_secs: 1,
            },
            ..Usage::default()
        },
        requeued: Some(ExitHow::Signal {
            signal: 9,
            core_file: None,
        }),
        reason: Some("The job attribute OnExitRemove expression 'false' evaluated to FALSE".into()),
    };
    assert_eq!(
        text(&requeued, T0),
        "004 (001.000.000) 2023-11-14 22:13:20 Job was evicted.\n\
         \t(0) Job terminated and was requeued\n\
         \t\tUsr 0 00:01:01, Sys 0 00:00:01  -  Run Remote Usage\n\
         \t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n\
         \t0  -  Run Bytes Sent By Job\n\
         \t0  -  Run Bytes Received By Job\n\
         \t(0) Abnormal termination (signal 9)\n\
         \t(0) No core file\n\
         \tThe job attribute OnExitRemove expression 'false' evaluated to FALSE\n\
         ...\n"
    );
}

#[test]
fn event_numbers_are_htcondors() {
    let n: Vec<u32> = [
        LogEvent::Unsuspended,
        LogEvent::Suspended { num_pids: 0 },
        LogEvent::Aborted { reason: None },
        LogEvent::Released { reason: None },
    ]
    .iter()
    .map(LogEvent::number)
    .collect();
    assert_eq!(n, vec![11, 10, 9, 13]);
}
