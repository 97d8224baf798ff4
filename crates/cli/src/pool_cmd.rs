//! `ferrocondor pool up|down`: the personal pool in the foreground, and
//! asking it to stop; `ferrocondor master` and `ferrocondor daemon ROLE`:
//! the same pool with each role in a process of its own.

use std::io::Write;
use std::time::{Duration, Instant};

use config::Host;

use crate::args::PoolCommand;
use crate::errors::{Error, Outcome};
use crate::jobview::state_dir;

pub fn run(
    command: &PoolCommand,
    config_files: &dyn config::Files,
    host: &dyn Host,
    now: i64,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    match command {
        PoolCommand::Up { state } => {
            let dir = state_dir(state.as_deref());
            let read = read_configuration(config_files, host, now)?;
            let used = configuration_used(config_files, host);
            let pool_config = read.pool;
            let port =
                daemons::command_port::PortConfig::from_config(&read.negotiator, &dir, true, true)
                    .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
            let node = node_config(&dir, read.startd, read.negotiator, read.collector)?;
            let slots_note = format!(
                "execute directory: {}{}",
                node.execute_dir.display(),
                node.readings_file
                    .as_ref()
                    .map(|f| format!("\nreadings override file: {}", f.display()))
                    .unwrap_or_default()
            );
            let pool = daemons::Pool::up(&dir, pool_config, node)
                .and_then(|p| p.with_command_port(port))
                .map_err(|e| Error::Daemon(e.to_string()))?
                .with_reload(Box::new(reload));
            writeln!(
                out,
                "ferrocondor: personal pool up (access point, execute point, central manager)\n\
                 configuration: {used}\n\
                 state directory: {}\nsocket: {}\ncommand port (HTCondor's clients): {}\n{slots_note}\njobs in the queue: {}\n\
                 stop it with Ctrl-C or `ferrocondor pool down`",
                dir.display(),
                pool.socket()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                pool.command_address().unwrap_or_default(),
                pool.jobs()
            )?;
            out.flush()?;
            daemons::set_memory_release(crate::release_memory);
            pool.run().map_err(|e| Error::Daemon(e.to_string()))?;
            writeln!(out, "ferrocondor: pool down")?;
            Ok(Outcome::Success)
        }
        PoolCommand::Down { state } => {
            let dir = state_dir(state.as_deref());
            // condor_off: DC_OFF_GRACEFUL to the pool's schedd (the pool's
            // own process; under a master, the master stops them all).
            let daemons = crate::daemon_client::Daemons::new(Some(&dir))?;
            let schedd = daemons.schedd()?.clone();
            daemons.send_command(
                crate::daemon_client::Kind::Schedd,
                &schedd,
                cedar::commands::DC_OFF_GRACEFUL,
            )?;
            // Down means its address file is gone: the queue is closed by
            // then.
            let file = daemons.schedd_address_file().to_path_buf();
            let deadline = Instant::now() + Duration::from_secs(30);
            while file.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if file.exists() {
                return Err(Error::Daemon(format!(
                    "the pool at {} was asked to stop but is still there after 30 seconds",
                    dir.display()
                )));
            }
            writeln!(out, "pool at {} is down", dir.display())?;
            Ok(Outcome::Success)
        }
    }
}

/// `ferrocondor master`: the daemons DAEMON_LIST names (`use ROLE : ...`
/// makes it), each as `ferrocondor daemon ROLE`, restarted when they die.
pub fn master(
    state: Option<&std::path::Path>,
    files: &dyn config::Files,
    host: &dyn Host,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    let dir = state_dir(state);
    let (c, _) = crate::system::load_or_builtin("MASTER", files, host).map_err(Error::Config)?;
    let (roles, notes) =
        daemons::master::daemon_list(&c).map_err(|e| Error::Daemon(format!("DAEMON_LIST: {e}")))?;
    for n in notes {
        eprintln!("ferrocondor master: {n}");
    }
    if roles.is_empty() {
        return Err(Error::Daemon(
            "DAEMON_LIST names no daemon to run (add `use ROLE : Personal`, or \
             DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD)"
                .into(),
        ));
    }
    let backoff = daemons::master::Backoff::from_config(&c)
        .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
    let names: Vec<&str> = roles.iter().map(|r| r.daemon_name()).collect();
    writeln!(
        out,
        "ferrocondor master: state directory {}; running {}",
        dir.display(),
        names.join(", ")
    )?;
    out.flush()?;
    if daemons::kbdd::wanted(&c).map_err(|e| Error::Daemon(format!("DAEMON_LIST: {e}")))? {
        daemons::kbdd::supervise(daemons::master::this_program(), dir.clone());
    }
    daemons::master::run(&daemons::master::this_program(), &dir, &roles, backoff);
    Ok(Outcome::Success)
}

/// `ferrocondor kbdd` (and `daemon KBDD`): the keyboard daemon, telling
/// the startd of this state directory's pool.
pub fn kbdd(
    state: Option<&std::path::Path>,
    options: daemons::kbdd::Options,
    files: &dyn config::Files,
    host: &dyn Host,
) -> Result<Outcome, Error> {
    let dir = state_dir(state);
    let (c, _) = crate::system::load_or_builtin("KBDD", files, host).map_err(Error::Config)?;
    let get = |n: &str| c.get(n).ok().flatten();
    let hostname = get("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
    let client = cedar::client::ClientOptions::from_lookup(&get, &hostname);
    let roles = dir.join("roles");
    // Under a master: its pid, to end with it.
    let master = std::env::var(daemons::master::MASTER_PID_ENV)
        .ok()
        .and_then(|p| p.parse().ok());
    daemons::kbdd::run(
        options,
        || daemons::kbdd::startd_address(&roles),
        &client,
        master,
    )
    .map_err(|e| Error::Daemon(format!("kbdd: {e}")))?;
    Ok(Outcome::Success)
}

/// `ferrocondor daemon ROLE`: one role of a pool, in the foreground.
pub fn daemon(
    role: &str,
    state: Option<&std::path::Path>,
    files: &dyn config::Files,
    host: &dyn Host,
    now: i64,
    out: &mut dyn Write,
) -> Result<Outcome, Error> {
    if role.eq_ignore_ascii_case("KBDD") {
        return kbdd(state, daemons::kbdd::Options::default(), files, host);
    }
    let Some(role) = daemons::local_protocol::role_named(role) else {
        return Err(Error::Daemon(format!(
            "there is no daemon {role}: say COLLECTOR, NEGOTIATOR, SCHEDD, STARTD, KBDD or DEFRAG"
        )));
    };
    let dir = state_dir(state);
    if role == daemons::roles::RoleName::Defrag {
        return defrag(&dir, out);
    }
    let read = read_configuration(files, host, now)?;
    let port = daemons::command_port::PortConfig::from_config(
        &read.negotiator,
        &dir,
        role == daemons::roles::RoleName::Collector,
        role == daemons::roles::RoleName::Schedd,
    )
    .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
    let node = node_config(&dir, read.startd, read.negotiator, read.collector)?;
    let pool = daemons::Pool::daemon(&dir, read.pool, node, role)
        .and_then(|p| p.with_command_port(port))
        .map_err(|e| Error::Daemon(e.to_string()))?
        .with_reload(Box::new(reload));
    writeln!(
        out,
        "ferrocondor: the {} is up (state directory {})",
        role.daemon_name().to_lowercase(),
        dir.display()
    )?;
    out.flush()?;
    daemons::set_memory_release(crate::release_memory);
    pool.run().map_err(|e| Error::Daemon(e.to_string()))?;
    Ok(Outcome::Success)
}

/// `ferrocondor daemon DEFRAG`: the defrag daemon, a client of the pool
/// (`daemons::defrag_role`), with the DEFRAG subsystem's configuration.
fn defrag(dir: &std::path::Path, out: &mut dyn Write) -> Result<Outcome, Error> {
    let load = || {
        let (c, _) = crate::system::load_or_builtin(
            "DEFRAG",
            &crate::system::DiskFiles,
            &crate::system::RealHost::detect(),
        )
        .map_err(|e| e.to_string())?;
        Ok(daemons::defrag_role::DefragSetup::from_config(c, dir))
    };
    writeln!(
        out,
        "ferrocondor: the defrag daemon is up (state directory {})",
        dir.display()
    )?;
    out.flush()?;
    daemons::defrag_role::run(&load).map_err(Error::Daemon)?;
    Ok(Outcome::Success)
}

/// The execute point's side of the configuration, and what the machine
/// offers. EXECUTE is the configuration's when a file sets it, else
/// `<state>/execute` (a personal pool keeps everything in its state
/// directory); STARTD_READINGS_FILE names the readings override file.
fn node_config(
    dir: &std::path::Path,
    startd: config::Config,
    negotiator: config::Config,
    collector: config::Config,
) -> Result<daemons::NodeConfig, Error> {
    let set_in_a_file = |name: &str| {
        startd
            .find(name)
            .is_some_and(|f| !matches!(f.origin, config::Origin::Default))
    };
    let value = |name: &str| startd.get(name).ok().flatten();
    let execute_dir = match value("EXECUTE").filter(|_| set_in_a_file("EXECUTE")) {
        Some(e) => std::path::PathBuf::from(e),
        None => dir.join("execute"),
    };
    std::fs::create_dir_all(&execute_dir).map_err(|e| {
        Error::Daemon(format!(
            "EXECUTE {}: cannot create it: {e}",
            execute_dir.display()
        ))
    })?;
    let readings_file = value("STARTD_READINGS_FILE").map(std::path::PathBuf::from);
    let mut machine = host::machine::system_host_readings(&execute_dir)
        .map_err(|e| Error::Daemon(format!("reading this machine: {e}")))?;
    let sources = startd::resources::inventory_sources(&startd)
        .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
    if !sources.is_empty() {
        let (found, failed) =
            host::inventory::take_inventories(&sources, std::path::Path::new("nvidia-smi"));
        for (tag, why) in failed {
            // A machine without NVIDIA's driver simply has no GPUs to offer
            // (HTCondor's default discovery is as quiet about it).
            let no_driver = matches!(
                why,
                host::inventory::InventoryFailure::Gpu(
                    host::gpu_discovery::GpuError::NvidiaSmiMissing { .. }
                )
            );
            if !no_driver {
                eprintln!("ferrocondor: resource {tag} is not offered: {why}");
            }
        }
        machine.inventories = found;
    }
    if let Some(f) = &readings_file {
        match host::readings_file::ReadingsOverride::read(f) {
            Ok(Some(o)) => o.apply_host(&mut machine),
            Ok(None) => {}
            Err(e) => return Err(Error::Daemon(e.to_string())),
        }
    }
    let hostname = value("FULL_HOSTNAME").unwrap_or_else(|| "localhost".into());
    Ok(daemons::NodeConfig {
        startd,
        negotiator,
        collector,
        hostname,
        host: machine,
        readings_file,
        execute_dir,
    })
}

/// Which configuration the pool runs on, for its banner.
fn configuration_used(files: &dyn config::Files, host: &dyn Host) -> String {
    match crate::system::load_or_builtin("SCHEDD", files, host) {
        Ok((_, true)) => format!(
            "{} (HTCondor's minicondor settings: no configuration file was found; \
             set CONDOR_CONFIG to use one)",
            crate::system::BUILTIN_CONFIG
        ),
        Ok((c, false)) => match c.files().first() {
            Some(f) => f.to_string(),
            None => "defaults only (CONDOR_CONFIG=ONLY_ENV)".into(),
        },
        Err(e) => e.to_string(),
    }
}

/// The schedd's, the startd's, the negotiator's and the collector's
/// configuration.
fn read_configuration(
    files: &dyn config::Files,
    host: &dyn Host,
    now: i64,
) -> Result<daemons::Reloaded, Error> {
    let read = |subsystem: &str| {
        crate::system::load_or_builtin(subsystem, files, host)
            .map(|(c, _)| c)
            .map_err(Error::Config)
    };
    let pool = daemons::PoolConfig::from_config(&read("SCHEDD")?, crate::system::utc_offset(now))
        .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
    Ok(daemons::Reloaded {
        pool,
        startd: read("STARTD")?,
        negotiator: read("NEGOTIATOR")?,
        collector: read("COLLECTOR")?,
    })
}

/// `condor_reconfig`: the configuration read again, as at start.
fn reload() -> Result<daemons::Reloaded, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    read_configuration(
        &crate::system::DiskFiles,
        &crate::system::RealHost::detect(),
        now,
    )
    .map_err(|e| e.to_string())
}
