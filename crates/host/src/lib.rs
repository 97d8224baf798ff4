//! # host — what the machine says
//!
//! The execute point's eyes on Linux: it reads `/proc`, `/sys` and `/dev`,
//! asks the file system for free space and runs `nvidia-smi`, and turns
//! what it finds into the startd engine's inputs:
//! [`startd::resources::HostReadings`] once at start (cores, memory, disk,
//! swap, GPUs) and [`startd::Readings`] on every poll (load average,
//! keyboard and console idle, each slot's CondorLoadAvg).
//!
//! **It must never decide anything.** No policy lives here: what a reading
//! means (whether the owner is back, how load is shared among slots, how
//! many CPUs a slot gets) is the `startd` crate's business. This crate only
//! measures, and reports a failure to measure as an error value, never a
//! panic.
//!
//! Every reader takes the places it reads as parameters (a [`Root`] that
//! stands for `/`, a path, a program), so tests point it at a temporary
//! tree that mimics `/proc` and `/dev`; [`Root::system`] is the real
//! machine. The parsers under them take text and are pure.
//!
//! Where to start: [`machine::host_readings`] for the start-up readings,
//! [`sampler::Sampler`] for the periodic ones, [`gpu_discovery`] for GPUs,
//! and [`readings_file`] for the file tests and demos use to inject owner
//! activity:
//!
//! ## Readings override file
//!
//! A text file of `Name = value` lines that replaces measured values with
//! the ones written, read again on every reading (so a test can make the
//! owner come back by writing `KeyboardIdle = 0` while the pool runs, and
//! leave again by removing the line or the file). A missing file overrides
//! nothing. Names are HTCondor's attribute names, in any case:
//!
//! ```text
//! # The owner typed 5 seconds ago; the machine is busy.
//! KeyboardIdle = 5          # seconds
//! ConsoleIdle = 5           # seconds
//! TotalLoadAvg = 1.5        # the machine's load average (alias: LoadAvg)
//! CondorLoadAvg = 1.0, 0, 0.25   # each slot's job load, in the order of Startd::slots
//! DetectedCores = 6         # hardware threads (DETECTED_CORES)
//! DetectedPhysicalCpus = 6  # physical cores (DETECTED_PHYSICAL_CPUS)
//! DetectedCpusLimit = 4     # a cgroup or affinity limit
//! DetectedMemory = 16384    # MiB
//! Disk = 100000000          # KiB free under EXECUTE
//! TotalVirtualMemory = 0    # KiB (swap as HTCondor counts it)
//! ```
//!
//! [`Sampler`] puts the periodic readings (the idle times and loads) over
//! its measurements by itself when given the file; the machine readings
//! are the caller's to override, once at start, with
//! [`ReadingsOverride::read`] and [`ReadingsOverride::apply_host`].
//!
//! Blank lines and `#` comments (also after a value) are ignored; a name
//! given twice keeps its last value. A line that is not `Name = value`, an
//! unknown name or a value that is not a number is an error naming the
//! file, the line and what was expected.

pub mod cgroup;
pub mod cpus;
pub mod disk;
pub mod error;
pub mod gpu_discovery;
pub mod idle;
pub mod inventory;
pub mod job_load;
pub mod loadavg;
pub mod machine;
pub mod memory;
pub mod nvidia_smi;
pub mod readings_file;
pub mod root;
pub mod sampler;

pub use error::HostError;
pub use readings_file::ReadingsOverride;
pub use root::Root;
pub use sampler::Sampler;
