//! # schedd — the access point's job queue, as pure logic
//!
//! What HTCondor's *condor_schedd* (with its shadows) decides about jobs:
//! the job queue of clusters and procs and the job state machine
//! ([`queue`]), job policy — `periodic_hold/release/remove`,
//! `on_exit_hold/remove`, `SYSTEM_PERIODIC_*` ([`policy`]) — the schedd's
//! submit policy — job transforms ([`transform`]) and submit requirements
//! ([`submit_policy`]) — who may act on which job ([`authz`]), and the job
//! event log's text ([`userlog`]), and who may edit which attribute of a
//! queued job ([`edit`]). Job statuses, hold codes and attribute
//! names are HTCondor's ([`job`]).
//!
//! **Architecture invariant:** this crate decides, never acts. It reads no
//! clock (`now` is an argument), no file, no environment, and runs nothing:
//! every call returns what changed ([`queue::Change`]: the status change,
//! the attributes touched, the event log entry to write, whether the job
//! must be stopped) and the daemon persists, writes and kills. That makes
//! every transition a unit test and lets the simulator run the real queue.
//!
//! Start reading at [`queue::JobQueue::apply`].

pub mod authz;
mod claim_ids;
pub mod claims;
pub mod dedicated;
pub mod edit;
pub mod factory;
pub mod index;
pub mod job;
pub mod policy;
pub mod queue;
pub mod submit_policy;
pub mod transform;
pub mod userlog;

pub use authz::{Refusal, SuperUsers};
pub use edit::{EditError, EditPlan, EditRules, EditTarget};
pub use factory::{Factory, FactoryError};
pub use index::{StatusCounts, Terms};
pub use job::{attr, HoldCode, JobId, JobStatus};
pub use policy::{ExitDecision, PolicyAction, SystemPolicy};
pub use queue::{Change, JobEvent, JobQueue, QueueError, RunReport, Submitted, UserAction};
pub use submit_policy::{PolicyError, SubmitPolicy, SubmitRefused, SubmitRequirements};
pub use transform::{Transform, TransformError, Transforms};
pub use userlog::{EndedBy, ExitHow, LogEvent, LogFormat, Rusage, Usage};
