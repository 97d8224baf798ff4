//! # sim — the pool simulator
//!
//! Runs a whole pool on a virtual clock with the very same cores the
//! daemons use: each machine is a `startd::Startd` (its configuration read
//! by `config`), each access point a `schedd::JobQueue` fed by `submit`
//! with its claims kept by `schedd::claims` (match, claim, activate,
//! reuse, release: the pool's own claim protocol), and the central manager
//! is `negotiator::matchmaker::negotiation_cycle` with the `Accountant`
//! and `ConcurrencyLimits`. The simulator only plays what is not a core:
//! the clock, the owners at their keyboards, carrying the messages between
//! the cores (at once, in order), and the starter, which "runs" a job for
//! its run time unless the startd suspends or evicts it first.
//!
//! **Architecture invariant:** pure. No clock, no file, no environment, no
//! process; files come through [`Files`], randomness from [`rng::SplitMix64`]
//! seeded by the scenario. The same scenario and seed give the same report,
//! byte for byte.
//!
//! ## Use
//!
//! ```no_run
//! # fn main() -> Result<(), sim::SimError> {
//! # let text = "{}"; let files = sim::MemFiles::new();
//! let mut scenario = sim::Scenario::from_json(text)?;
//! scenario.seed = 7; // --seed
//! let report = sim::simulate(&scenario, &files)?;
//! print!("{}", report.to_text()); // or report.to_json(), report.to_html()
//! # Ok(()) }
//! ```
//!
//! `ferrocondor simulate SCENARIO [--json] [--html FILE] [--seed N]` reads
//! the file, sets `base_dir` to its directory (relative names in it are
//! taken from there), overrides `seed` if asked, calls [`simulate`] with a
//! [`Files`] over the disk, and prints `to_text()` or `to_json()`, writing
//! `to_html()` to FILE.
//!
//! ## The scenario (JSON)
//!
//! ```json
//! {
//!   "description": "free text",
//!   "seed": 1,                      // default 0
//!   "start": 1700000000,            // simulated epoch seconds at the start
//!   "duration": 86400,              // seconds to simulate (required)
//!   "config": ["/etc/pool.conf", {"text": "UID_DOMAIN = example.org"}],
//!   "negotiator_config": [{"text": "PREEMPTION_REQUIREMENTS = True"}],
//!   "machines": [
//!     {"class": "node", "count": 100, "cpus": 8, "memory": 16384,
//!      "disk": 10000000, "hostname": "node{n}.example.org",
//!      "config": [{"text": "NUM_SLOTS = 8"}]}
//!   ],
//!   "schedds": [{"name": "submit.example.org", "config": []}],
//!   "owners": [
//!     {"machines": "node", "from": 3600, "to": 7200, "keyboard": true, "load": 1.0},
//!     {"machines": "desk", "random": {"busy_mean": 1800, "idle_mean": 7200, "load": 1.0}}
//!   ],
//!   "jobs": [
//!     {"user": "alice", "schedd": "submit.example.org",
//!      "submit": "universe = vanilla\nexecutable = /bin/sleep\nqueue 10",
//!      "append": ["+Project = \"x\""],
//!      "at": [0, 600], "every": {"start": 0, "interval": 60, "count": 10},
//!      "runtime": {"uniform": [600, 1200]}, "exit_code": 0}
//!   ],
//!   "intervals": {"NEGOTIATOR_INTERVAL": 60, "POLLING_INTERVAL": 5,
//!                 "UPDATE_INTERVAL": 300, "PERIODIC_EXPR_INTERVAL": 60,
//!                 "ALIVE_INTERVAL": 300},
//!   "priority_factors": {"bob@example.org": 4},
//!   "initial_idle": 86400,
//!   "sample_interval": 300,
//!   "commands": [{"at": 3600, "machines": "node", "drain": {"how": "graceful"}}],
//!   "network": {"delay": [0, 5], "drop": 0.01, "lose": {"request_claim": 1}},
//!   "defrag": {"config": [{"text": "DEFRAG_DRAINING_MACHINES_PER_HOUR = 2"}]}
//! }
//! ```
//!
//! - Configuration lists (`config`, `negotiator_config`, a class's and a
//!   schedd's `config`) are read in order as one root file: a bare string
//!   or `{"file": P}` is `include : P`, `{"text": T}` is written inline.
//!   Every daemon reads `config` first; the negotiator then
//!   `negotiator_config`; condor_defrag (`defrag`, or `"defrag": true`)
//!   those two and then its own; a machine class and a schedd their own. A class's
//!   configuration is read once, with its first machine's host name.
//! - A machine class gives the cores, memory (MiB) and disk (KiB) the host
//!   would detect; the configuration lays out the slots.
//! - `owners`: an interval in seconds after the start (`keyboard`: the
//!   owner types; `load`: added to the load average), or a random process
//!   of exponential busy and idle periods; `machines` names a host or a
//!   class. Before any activity the keyboard has been idle `initial_idle`.
//! - `jobs`: each arrival runs condor_submit once on the description (its
//!   own `queue` statement says how many jobs; default: one vanilla job),
//!   with `append` as `-a` lines. `runtime` is seconds, `{"uniform": [lo,
//!   hi]}` or `{"exponential": mean}`, drawn per job from the seed.
//! - `intervals` override the configuration's (defaults: NEGOTIATOR 60,
//!   POLLING 5, UPDATE 300, PERIODIC_EXPR 60, ALIVE 300 seconds).
//! - `commands`: `vacate`, `drain` and `cancel_drain` for a class or a
//!   host at a time; a job with `"ignores_soft_kill": true` leaves only
//!   when the startd kills it.
//! - `fetch_work`: the jobs a machine's FETCH_WORK hook hands out, in turn.
//! - `network`: the claim messages between schedds and startds take a
//!   delay and may be lost (`drop`, or the first N of a kind by `lose`);
//!   the cores' timers deal with it (see `crates/sim/scenarios/README.md`).
//!
//! ## What is simulated, and how
//!
//! See the [`sim`] module. In short: the negotiator runs every
//! NEGOTIATOR_INTERVAL over the ads the startds last published; each match
//! is claimed at once (`RequestClaim`) and activated when the startd says
//! the claim is idle (after a preempted job has left); a claim is reused
//! for the submitter's next idle job that matches while CLAIM_WORKLIFE
//! allows, else released: all of it decided by `schedd::claims`. The accountant is charged per
//! claim (`add_match` / `remove_match`, keyed by claim id). Vanilla jobs do
//! not checkpoint: an evicted job starts over. A vacated job leaves one
//! second after its soft kill; a killed one at once.
//!
//! Accounting groups: the cycle has no per-group pie, so with groups
//! configured the simulator negotiates group by group (least served
//! first, the root last) over the slots not yet taken and keeps each
//! group's matches within its allocation (`Accountant::allocate`, cut by
//! `enforce_strict_quota`).

//!
//! ## Where the simulator stands in for a core (and why)
//!
//! - The startd core does not publish `HasFileTransfer`, `FileSystemDomain`
//!   or `UidDomain`; every job condor_submit makes requires them, so the
//!   simulator adds them to the slot ads it hands the negotiator (from
//!   FILESYSTEM_DOMAIN and UID_DOMAIN), as the starter's ad would.
//! - The cycle sorts every idle job into autoclusters every cycle (each
//!   autocluster offers at most as many jobs as the pool has cores);
//!   HTCondor's schedd keeps its autoclusters from cycle to cycle.
//! - `JobQueue::evaluate_periodic` walks every job; the simulator calls it
//!   only when SYSTEM_PERIODIC_* is set or a queued job has a periodic
//!   expression, and completed or removed jobs leave the queue.
//! - Concurrency limits in use are counted from the claims' jobs (their
//!   `ConcurrencyLimits` evaluated without the machine), since slot ads
//!   publish the running job's limits only through STARTD_JOB_ATTRS.

mod calendar;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod sim;

pub use report::{JobRecord, Report, Sample, Summary, TransitionRecord, Wait};
pub use scenario::{Scenario, SimError, Source};
pub use sim::{simulate, Files, MemFiles, Simulation};
