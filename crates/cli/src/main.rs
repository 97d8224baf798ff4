//! `ferrocondor`: the one binary for every tool and daemon.
//!
//! This file only wires things together: parse the command line, read the
//! outside world (the clock), run a command, turn its outcome into an exit
//! status. The commands live in their own modules; errors and exit codes in
//! `errors`. The binary is the outermost layer: it may read files and the
//! clock so that the crates beneath it never do.

mod act_cmd;
mod adfile;
mod admin_cmd;
mod args;
mod bench_cmd;
mod bench_hosts;
mod classad_cmd;
mod config_cmd;
mod daemon_client;
mod errors;
mod jobview;
mod links_cmd;
mod pool_cmd;
mod printmask;
mod q_cmd;
mod simulate_cmd;
mod stats_cmd;
mod status_cmd;
mod submit_cmd;
mod system;
mod testbed;
mod token_cmd;

use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{CommandFactory, FromArgMatches};

use args::{Cli, Command};

/// mimalloc: ClassAd trees are many small allocations, and it makes parsing
/// them markedly faster than the system allocator (see the classad benchmark).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's own (linked with the allocator): frees what the calling
    /// thread's heap keeps unused and, with `force`, hands the memory freed
    /// back to the system at once rather than after its purge delay.
    fn mi_collect(force: bool);
}

/// Hands memory freed back to the system. mimalloc keeps freed memory for
/// reuse and gives it back only as later allocations pass by, so a pool
/// that read a 100 MB request and then sat idle kept the memory (its RSS
/// stayed up); the pool calls this after a large request.
pub(crate) fn release_memory() {
    // SAFETY: mi_collect takes no pointers and may be called at any time.
    unsafe { mi_collect(true) }
}

fn main() -> ExitCode {
    // clap prints usage errors itself and exits with 2, the same code as ours.
    // Run as condor_q, condor_submit, ...: the command that tool is.
    let argv = match args::as_tool(std::env::args_os().collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let argv = match args::normalize_config_val(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let matches = match Cli::command().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => return usage_error(e, &argv),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return usage_error(e, &argv),
    };
    // -af and -format keep their order, which clap's fields do not say.
    if let Some((_, sub)) = matches.subcommand() {
        match &mut cli.command {
            Command::Q(a) => a.print = args::print_items(sub),
            Command::Status(a) => a.print = args::print_items(sub),
            Command::History(a) => a.print = args::print_items(sub),
            _ => {}
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Classad(a) => {
            // userHome() finds users as HTCondor's tools do by default
            // (CLASSAD_ENABLE_USER_HOME is true): in the password database.
            let env = classad::Env::at(a.now.unwrap_or_else(real_clock))
                .with_user_home(starter::user_home_lookup());
            classad_cmd::run(&a.command, &env, &mut out)
        }
        Command::ConfigVal(a) => {
            let host = system::RealHost::detect();
            let readings = system::host_readings();
            config_cmd::run(
                a,
                &system::DiskFiles,
                &host,
                &readings,
                real_clock(),
                &mut out,
                &mut std::io::stderr(),
            )
        }
        Command::Simulate(a) => simulate_cmd::run(a, &mut out),
        Command::Q(a) => q_cmd::run(a, a.now.unwrap_or_else(real_clock), &mut out),
        Command::Pool(a) => {
            let host = system::RealHost::detect();
            pool_cmd::run(
                &a.command,
                &system::DiskFiles,
                &host,
                real_clock(),
                &mut out,
            )
        }
        Command::InstallLinks { dir } => links_cmd::install(dir, &mut out),
        Command::Master { state } => {
            let host = system::RealHost::detect();
            pool_cmd::master(state.as_deref(), &system::DiskFiles, &host, &mut out)
        }
        Command::Kbdd {
            state,
            once,
            notify,
        } => {
            let host = system::RealHost::detect();
            pool_cmd::kbdd(
                state.as_deref(),
                daemons::kbdd::Options {
                    once: *once,
                    always_notify: *notify,
                },
                &system::DiskFiles,
                &host,
            )
        }
        Command::Daemon { role, state } => {
            let host = system::RealHost::detect();
            pool_cmd::daemon(
                role,
                state.as_deref(),
                &system::DiskFiles,
                &host,
                real_clock(),
                &mut out,
            )
        }
        Command::Rm(a) => act_cmd::run(
            a,
            wire::api::Action::Remove,
            &mut out,
            &mut std::io::stderr(),
        ),
        Command::Hold(a) => {
            act_cmd::run(a, wire::api::Action::Hold, &mut out, &mut std::io::stderr())
        }
        Command::Release(a) => act_cmd::run(
            a,
            wire::api::Action::Release,
            &mut out,
            &mut std::io::stderr(),
        ),
        Command::VacateJob(a) => act_cmd::run(
            &a.act,
            if a.fast {
                wire::api::Action::VacateFast
            } else {
                wire::api::Action::Vacate
            },
            &mut out,
            &mut std::io::stderr(),
        ),
        Command::History(a) => act_cmd::history(a, real_clock(), &mut out),
        Command::Bench(b) => match &b.command {
            args::BenchCommand::Throughput(a) => {
                let host = system::RealHost::detect();
                bench_cmd::run(a, &host, real_clock(), &mut out, &mut std::io::stderr())
            }
        },
        Command::Status(a) => status_cmd::run(a, real_clock(), &mut out),
        Command::Stats(a) => stats_cmd::run(&a.args, real_clock(), &mut out),
        Command::Vacate(a) => admin_cmd::vacate(a, &mut out),
        Command::Drain(a) => admin_cmd::drain(a, &mut out),
        Command::Userprio(a) => admin_cmd::userprio(a, real_clock(), &mut out),
        Command::Token(a) => token_cmd::run(&a.command, real_clock(), &mut out),
        Command::Reconfig => admin_cmd::reconfig(&mut out),
        Command::Submit(a) => {
            let host = system::RealHost::detect();
            submit_cmd::run(
                a,
                &system::DiskFiles,
                &host,
                real_clock(),
                &mut out,
                &mut std::io::stderr(),
            )
        }
    };
    let result = result.and_then(|outcome| {
        out.flush()?;
        Ok(outcome)
    });
    errors::finish(result)
}

/// The real time, read here so that the ClassAd crate stays pure.
fn real_clock() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A command line clap refuses. An option it does not know is named whole
/// (clap names what it could not take, `-t` of `-totals`), and said to be
/// one ferrocondor does not have yet; anything else is clap's message.
fn usage_error(e: clap::Error, argv: &[std::ffi::OsString]) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) {
            let bad = bad.split('=').next().unwrap_or(bad).to_string();
            let words: Vec<&str> = argv.iter().filter_map(|a| a.to_str()).collect();
            let whole = words
                .iter()
                .skip(2)
                .find(|a| a.starts_with('-') && (a.starts_with(&bad) || bad.starts_with(*a)))
                .map_or(bad.as_str(), |a| a.split('=').next().unwrap_or(a));
            let command = words.get(1).copied().unwrap_or("ferrocondor");
            eprintln!("{}", args::not_supported(command, whole));
            return ExitCode::from(2);
        }
    }
    let _ = e.print();
    ExitCode::from(if e.use_stderr() { 2 } else { 0 })
}
