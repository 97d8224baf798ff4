//! `ferrocondor pool up|down`: the personal pool in the foreground, and
//! asking it to stop.

use std::io::Write;
use std::time::{Duration, Instant};

use config::{load, Host, LoadOptions, Root};

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
            let config = load(
                &LoadOptions::new("SCHEDD", Root::Search),
                config_files,
                host,
            )
            .map_err(Error::Config)?;
            let pool_config =
                daemons::PoolConfig::from_config(&config, crate::system::utc_offset(now))
                    .map_err(|e| Error::Daemon(format!("configuration error: {e}")))?;
            let pool =
                daemons::Pool::up(&dir, pool_config).map_err(|e| Error::Daemon(e.to_string()))?;
            writeln!(
                out,
                "ferrocondor: personal pool up (access point only: jobs are queued, not run yet)\n\
                 state directory: {}\nsocket: {}\njobs in the queue: {}\n\
                 stop it with Ctrl-C or `ferrocondor pool down`",
                dir.display(),
                pool.socket().display(),
                pool.jobs()
            )?;
            out.flush()?;
            pool.run().map_err(|e| Error::Daemon(e.to_string()))?;
            writeln!(out, "ferrocondor: pool down")?;
            Ok(Outcome::Success)
        }
        PoolCommand::Down { state } => {
            let dir = state_dir(state.as_deref());
            let client = wire::Client::for_state_dir(&dir);
            let _: wire::api::Empty =
                client.call(wire::api::PATH_SHUTDOWN, &wire::api::Empty {})?;
            // Down means the socket is gone: the queue is closed by then.
            let deadline = Instant::now() + Duration::from_secs(30);
            while client.socket().exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if client.socket().exists() {
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
