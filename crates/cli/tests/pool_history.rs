//! Pool history (HTCondorView) on real processes: a personal pool whose
//! collector forwards its ads (CONDOR_VIEW_HOST) to a second collector
//! process that keeps the history (KEEP_POOL_HISTORY) on ports and
//! directories of its own; jobs run; `status -pool` and `stats` against
//! the view collector show the machines and the user's jobs over time.

mod common;

use std::path::Path;

use common::{command, command_with_config, err, out, scratch, wait_for, write, PoolProcess};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A tool of the pool on `state`, asking the view collector at `view`.
fn tool(state: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    command(state, &[])
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_pools_collector_forwards_to_a_view_collector_whose_history_stats_reads() {
    let dir = scratch("pool-history");
    let (main_port, view_port) = (free_port(), free_port());
    let view_host = format!("127.0.0.1:{view_port}");
    let history = dir.join("history");

    // The view collector: a collector alone, configured by the example
    // file, on its own port and state directory, sampling every second.
    // It is named as CONDOR_VIEW_HOST too (as a pool's global file would
    // name it): it is itself, left out.
    let view_state = dir.join("view-state");
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/config/condor-view.conf");
    let view_env: Vec<(&str, String)> = vec![
        ("COLLECTOR_HOST", view_host.clone()),
        ("CONDOR_VIEW_HOST", view_host.clone()),
        ("POOL_HISTORY_DIR", history.display().to_string()),
        ("POOL_HISTORY_SAMPLING_INTERVAL", "1".into()),
    ];
    let env: Vec<(&str, &str)> = view_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let view = PoolProcess::spawn_by(
        &view_state,
        command_with_config(&view_state, &example, &env),
        &["daemon", "COLLECTOR"],
        |c| c.spawn().unwrap(),
    );

    // The pool, its configuration file naming no view collector yet.
    let state = dir.join("state");
    let main_host = format!("127.0.0.1:{main_port}");
    let config = dir.join("condor_config");
    write(&config, "NUM_CPUS = 2\n");
    let pool = PoolProcess::start_with_config(
        &state,
        &config,
        &[
            ("COLLECTOR_HOST", &main_host),
            ("POLLING_INTERVAL", "1"),
            ("UPDATE_INTERVAL", "1"),
            ("NEGOTIATOR_INTERVAL", "1"),
        ],
    );
    let at_view = || {
        let o = command_with_config(&state, &config, &[])
            .current_dir(&dir)
            .args(["status", "-pool", &view_host, "-af", "Name"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", err(&o));
        out(&o).lines().map(str::to_string).collect::<Vec<String>>()
    };
    // A setting for the negotiator alone is not the collector's: the
    // collector reads the configuration as the COLLECTOR subsystem.
    // The pool's file rewritten, then condor_reconfig.
    let reconfig = |text: &str| {
        write(&config, text);
        let o = command_with_config(&state, &config, &[("COLLECTOR_HOST", &main_host)])
            .current_dir(&dir)
            .arg("reconfig")
            .output()
            .unwrap();
        assert!(o.status.success(), "reconfig: {}", err(&o));
    };
    reconfig(&format!(
        "NUM_CPUS = 2\nNEGOTIATOR.CONDOR_VIEW_HOST = {view_host}\n"
    ));
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        at_view().is_empty(),
        "nothing is forwarded yet (NEGOTIATOR.CONDOR_VIEW_HOST is not the collector's)"
    );
    // As the manual says: CONDOR_VIEW_HOST in the pool's file, then
    // condor_reconfig.
    reconfig(&format!("NUM_CPUS = 2\nCONDOR_VIEW_HOST = {view_host}\n"));

    // `status -pool` at the view collector shows the pool's slots.
    let slots = wait_for(30, "the slots at the view collector", || {
        let names = at_view();
        (names.len() == 2).then_some(names)
    });
    assert!(slots.iter().all(|s| s.starts_with("slot")), "{slots:?}");
    let log = view.daemon_log();
    assert!(
        log.contains("not forwarding to the view collector")
            && log.contains("it is this collector"),
        "{log}"
    );
    assert!(
        pool.daemon_log()
            .contains(&format!("forwarding ads to the view collector {view_host}")),
        "{}",
        pool.daemon_log()
    );

    // Jobs run on both slots for a while.
    write(
        &dir.join("a.sub"),
        "executable = /bin/sleep\narguments = 6\nqueue 4\n",
    );
    let o = tool(&state, &dir, &["submit", "a.sub"]);
    assert!(o.status.success(), "{}", err(&o));

    let stats = |args: &[&str]| {
        let mut a = vec!["stats", "-pool", view_host.as_str()];
        a.extend_from_slice(args);
        let o = tool(&state, &dir, &a);
        assert!(o.status.success(), "stats {args:?}: {}", err(&o));
        out(&o)
    };
    // The user, as the access point names its submitter.
    let user = wait_for(30, "the user in the history", || {
        let users = stats(&["-usergrouplist"]);
        users
            .lines()
            .find(|u| *u != "Total" && u.contains('@'))
            .map(str::to_string)
    });
    let submitter = wait_for(10, "the submitter in the history", || {
        stats(&["-userlist"]).lines().next().map(str::to_string)
    });
    assert!(submitter.starts_with(&format!("{user}/")), "{submitter}");
    // The user's jobs over time: running ones, as stored (-orgformat:
    // `time name : running idle`).
    let running = wait_for(40, "running jobs in the user's history", || {
        let lines = stats(&["-userquery", &submitter, "-orgformat"]);
        lines
            .lines()
            .filter_map(|l| l.split('\t').nth(3)?.trim().parse::<f64>().ok())
            .any(|r| r >= 1.0)
            .then_some(lines)
    });
    assert!(running.lines().all(|l| l.contains(&submitter)), "{running}");
    // The machines: both listed, and claimed slots among the samples of
    // the pool's total (`-resgroupquery Total`: slots by state, Claimed
    // the third).
    let machines = stats(&["-resourcelist"]);
    for s in &slots {
        assert!(machines.lines().any(|l| l == s), "{s} in {machines}");
    }
    wait_for(40, "claimed slots in the pool's history", || {
        stats(&["-resgroupquery", "Total", "-orgformat"])
            .lines()
            .filter_map(|l| l.split('\t').nth(5)?.trim().parse::<f64>().ok())
            .any(|c| c > 0.0)
            .then_some(())
    });
    // condor_stats' form: time as a percentage of the range, then the
    // keyboard idle time, the load and the state's name.
    let one = stats(&["-resourcequery", &slots[0], "-lasthours", "1"]);
    let first = one.lines().next().unwrap_or_default();
    let fields: Vec<&str> = first.split('\t').collect();
    assert_eq!(fields.len(), 4, "{one}");
    assert!(
        fields[0]
            .parse::<f64>()
            .is_ok_and(|p| (0.0..=100.0).contains(&p)),
        "{one}"
    );
    assert!(
        ["UNCLAIMED", "CLAIMED", "MATCHED", "OWNER", "PRE-EMPTING"].contains(&fields[3]),
        "{one}"
    );
    assert_eq!(stats(&["-resourcequery", "nosuch@host"]), "No Data.\n");

    // The plot, in the simulator's report style.
    let page = dir.join("history.html");
    stats(&["-html", "-f", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for want in [
        "<h2>Slots by state</h2>",
        "<svg",
        "Claimed",
        &user,
        &slots[0],
    ] {
        assert!(html.contains(want), "{want} in {html}");
    }
    // Invalidations are forwarded too: once the user's jobs are done,
    // the access point withdraws its submitter ad, and the view
    // collector drops it.
    wait_for(60, "the submitter withdrawn at the view collector", || {
        let o = tool(
            &state,
            &dir,
            &["status", "-pool", &view_host, "-submitters", "-af", "Name"],
        );
        (o.status.success() && out(&o).trim().is_empty()).then_some(())
    });
    // The history's files are HTCondor's.
    for f in [
        "viewhist1.0.new",
        "viewhist0.0.new",
        "viewhist2.0.new",
        "viewhist3.0.new",
    ] {
        assert!(history.join(f).exists(), "{f}");
    }
}
