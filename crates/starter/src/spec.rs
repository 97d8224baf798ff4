//! What to run: the job ad, the execute point's settings, and the launch
//! parameters read from the ad (pure: no I/O in this file).

use std::path::PathBuf;
use std::time::Duration;

use classad::{ClassAd, Env, Value};

use crate::limits::MemorySettings;
use crate::quoting;
use crate::StartError;

/// Whom the job runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunAs {
    /// The job's `Owner` when the starter runs as root (a job is never run
    /// as root); the starter's own user otherwise, as HTCondor does.
    JobOwner,
    /// Always the starter's own user (a personal pool, tests).
    Starter,
}

/// Where the job's cgroup v2 goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupPolicy {
    /// Under the starter's own cgroup, when the cgroup v2 hierarchy is
    /// mounted and that cgroup is writable; signals otherwise.
    Auto,
    /// Under this cgroup directory (a delegated subtree, say
    /// `/sys/fs/cgroup/ferrocondor.slice`). Memory and CPU limits need one
    /// whose parent has no processes of its own, or the hierarchy's root.
    Under(PathBuf),
    /// No cgroup: signals to the process group and session.
    Disabled,
}

/// The starter's hooks (`<KEYWORD>_HOOK_PREPARE_JOB` and the others; the
/// daemon reads the configuration and passes the paths).
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    pub prepare_job: Option<PathBuf>,
    pub update_job_info: Option<PathBuf>,
    pub job_exit: Option<PathBuf>,
    /// How long the starter waits for a hook it waits on (PREPARE_JOB,
    /// JOB_EXIT, and UPDATE_JOB_INFO runs still going at the end) before
    /// killing it; `None` waits for ever.
    pub timeout: Option<Duration>,
}

/// The execute point's side of running a job.
#[derive(Clone, Debug)]
pub struct StarterSettings {
    /// EXECUTE: the sandbox is made under it.
    pub execute_dir: PathBuf,
    /// Keep the sandbox after the job (debugging; HTCondor's
    /// STARTER_DEBUG-style keeping).
    pub keep_sandbox: bool,
    /// JOB_RENICE_INCREMENT as the startd computed it (`nice` of
    /// `Action::StartJob`).
    pub nice_increment: i32,
    /// USER_JOB_WRAPPER: the job runs as `wrapper cmd args...`.
    pub user_job_wrapper: Option<PathBuf>,
    pub run_as: RunAs,
    pub cgroup: CgroupPolicy,
    /// CGROUP_MEMORY_LIMIT_POLICY and its companions: what the job's
    /// cgroup limits, and what an OOM kill means.
    pub memory: MemorySettings,
    pub hooks: Hooks,
    /// STARTER_INITIAL_UPDATE_INTERVAL and STARTER_UPDATE_INTERVAL: when
    /// UPDATE_JOB_INFO runs.
    pub initial_update_interval: Duration,
    pub update_interval: Duration,
    /// The slot's name (`_CONDOR_SLOT`) and ad (PREPARE_JOB's second ad,
    /// `.machine.ad` in the sandbox).
    pub slot_name: String,
    pub slot_ad: Option<ClassAd>,
    /// FILESYSTEM_DOMAIN: `ShouldTransferFiles = "IF_NEEDED"` runs in place
    /// when the job's `FileSystemDomain` is this one.
    pub file_system_domain: Option<String>,
    /// How long one input or output transfer may take before its helper is
    /// killed and the transfer fails (a hung network file system, a FUSE
    /// mount a user made, must not hold the execute point for ever).
    pub transfer_deadline: Duration,
    /// ENABLE_URL_TRANSFERS: URLs in transfer_input_files are fetched.
    pub enable_url_transfers: bool,
    /// FILETRANSFER_PLUGINS: the plugin programs, each asked `-classad`
    /// for the URL schemes it serves (the last one for a scheme wins).
    pub filetransfer_plugins: Vec<PathBuf>,
    /// The job's access point, when its files are on another host: the
    /// input comes from it and the output goes to it (else they are
    /// copied from and to the job's initial directory on this host).
    pub shadow: Option<crate::shadow::ShadowRef>,
    /// USE_PID_NAMESPACES: the job runs in a PID namespace of its own,
    /// under a small init (HTCondor's condor_pid_ns_init), with a `/proc`
    /// that shows only its own processes. Needs a starter running as
    /// root (HTCondor's `can_switch_ids()`); without, the job runs in the
    /// execute point's namespace and [`crate::Mechanisms`] says why.
    pub pid_namespace: bool,
    /// USE_GID_PROCESS_TRACKING: the group from MIN_TRACKING_GID..
    /// MAX_TRACKING_GID the execute point gave this job; it is added to
    /// the job's supplementary groups, and every process that carries it
    /// is the job's (needs a starter running as root).
    pub tracking_gid: Option<u32>,
}

impl StarterSettings {
    /// HTCondor's defaults, with the sandbox under `execute_dir`.
    pub fn new(execute_dir: impl Into<PathBuf>) -> StarterSettings {
        StarterSettings {
            execute_dir: execute_dir.into(),
            keep_sandbox: false,
            nice_increment: 0,
            user_job_wrapper: None,
            run_as: RunAs::JobOwner,
            cgroup: CgroupPolicy::Auto,
            memory: MemorySettings::default(),
            hooks: Hooks::default(),
            initial_update_interval: Duration::from_secs(8),
            update_interval: Duration::from_secs(300),
            slot_name: "slot1".into(),
            slot_ad: None,
            file_system_domain: None,
            transfer_deadline: Duration::from_secs(3600),
            enable_url_transfers: true,
            filetransfer_plugins: Vec::new(),
            shadow: None,
            pid_namespace: false,
            tracking_gid: None,
        }
    }
}

/// One job to run: its ad and the settings to run it with.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub job: ClassAd,
    pub settings: StarterSettings,
}

impl JobSpec {
    /// Checks the ad early (a daemon refuses a bad activation before it
    /// makes anything); [`crate::Starter::start`] reads it again after
    /// PREPARE_JOB, which may change it.
    pub fn new(job: ClassAd, settings: StarterSettings) -> Result<JobSpec, StartError> {
        Launch::from_ad(&job, settings.file_system_domain.as_deref())?;
        Ok(JobSpec { job, settings })
    }
}

/// What a job's input transfer copies from its initial directory: the
/// executable (transfer_executable), and the plain input files and
/// directories (transfer_input_files without its URLs, and the `input`
/// stream); its URLs are fetched by plugins on the execute point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferInputs {
    pub iwd: PathBuf,
    pub executable: Option<String>,
    pub inputs: Vec<String>,
    pub urls: Vec<String>,
}

/// The job's input transfer, as the starter does it, read from its ad
/// (the access point of a transfer between hosts reads it from its own
/// copy of the ad, never from what the execute point says).
pub fn transfer_inputs(job: &ClassAd) -> Result<TransferInputs, StartError> {
    let launch = Launch::from_ad(job, None)?;
    Ok(launch.inputs(true))
}

/// The launch parameters read from a job ad.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Launch {
    pub cmd: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub iwd: PathBuf,
    /// `In`, `Out`, `Err`; `None` for `/dev/null` or absent.
    pub stdin: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// Files are copied into a sandbox (else the job runs in `Iwd`).
    pub transfer: bool,
    pub transfer_executable: bool,
    pub transfer_input: Vec<String>,
    /// `TransferOutput`; `None`: every new or changed file.
    pub transfer_output: Option<Vec<String>>,
    pub kill_sig: i32,
    pub owner: Option<String>,
    pub request_cpus: Option<i64>,
    /// A parallel job's node: its number (`Node`) and how many nodes the
    /// job runs on (`CurrentHosts`), for `_CONDOR_PROCNO` and
    /// `_CONDOR_NPROCS`.
    pub parallel_node: Option<(i64, i64)>,
}

fn eval(ad: &ClassAd, name: &str) -> Value {
    // Job attributes the starter reads are literals or refer to the job
    // itself; the clock does not matter to them.
    ad.eval_attr(name, &Env::default())
}

fn string(ad: &ClassAd, name: &str) -> Result<Option<String>, StartError> {
    match eval(ad, name) {
        Value::Undefined => Ok(None),
        Value::Str(s) => Ok(Some(s.as_str().to_string())),
        other => Err(StartError::Ad(format!(
            "{name} must be a string, not {}",
            classad::unparse::value_to_string(&other)
        ))),
    }
}

fn list(ad: &ClassAd, name: &str) -> Result<Option<Vec<String>>, StartError> {
    Ok(string(ad, name)?.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    }))
}

fn stream(ad: &ClassAd, name: &str) -> Result<Option<String>, StartError> {
    Ok(string(ad, name)?.filter(|s| !s.is_empty() && s != "/dev/null"))
}

impl Launch {
    /// The input transfer: nothing when the job runs in place, unless
    /// `always` (the access point, where the execute point decided).
    pub fn inputs(&self, always: bool) -> TransferInputs {
        let transfer = self.transfer || always;
        let (urls, mut inputs): (Vec<String>, Vec<String>) = if transfer {
            self.transfer_input
                .iter()
                .cloned()
                .partition(|i| crate::url_plugin::scheme(i).is_some())
        } else {
            (Vec::new(), Vec::new())
        };
        if transfer {
            if let Some(n) = &self.stdin {
                if !self.transfer_input.contains(n) {
                    inputs.push(n.clone());
                }
            }
        }
        TransferInputs {
            iwd: self.iwd.clone(),
            executable: (transfer && self.transfer_executable).then(|| self.cmd.clone()),
            inputs,
            urls,
        }
    }

    pub fn from_ad(ad: &ClassAd, fs_domain: Option<&str>) -> Result<Launch, StartError> {
        let cmd = string(ad, "Cmd")?
            .filter(|c| !c.is_empty())
            .ok_or_else(|| StartError::Ad("no Cmd: the job names no program".into()))?;
        let args = match string(ad, "Arguments")? {
            Some(a) => {
                quoting::split_v2(&a).map_err(|e| StartError::Ad(format!("Arguments: {e}")))?
            }
            None => quoting::split_v1_args(&string(ad, "Args")?.unwrap_or_default()),
        };
        let env = match string(ad, "Environment")? {
            Some(e) => quoting::parse_env_v2(&e)
                .map_err(|e| StartError::Ad(format!("Environment: {e}")))?,
            None => match string(ad, "Env")? {
                Some(e) => {
                    let delim = string(ad, "EnvDelim")?
                        .and_then(|d| d.chars().next())
                        .unwrap_or(';');
                    quoting::parse_env_v1(&e, delim)
                        .map_err(|e| StartError::Ad(format!("Env: {e}")))?
                }
                None => Vec::new(),
            },
        };
        let iwd = string(ad, "Iwd")?
            .ok_or_else(|| StartError::Ad("no Iwd: the job has no initial directory".into()))?;
        let iwd = PathBuf::from(iwd);
        if !iwd.is_absolute() {
            return Err(StartError::Ad(format!(
                "Iwd `{}` is not an absolute path",
                iwd.display()
            )));
        }
        let should = string(ad, "ShouldTransferFiles")?
            .unwrap_or_else(|| "IF_NEEDED".into())
            .to_ascii_uppercase();
        let transfer = match should.as_str() {
            "YES" => true,
            "NO" => false,
            "IF_NEEDED" => {
                let job_domain = string(ad, "FileSystemDomain")?;
                !matches!((job_domain, fs_domain), (Some(j), Some(m)) if j.eq_ignore_ascii_case(m))
            }
            other => {
                return Err(StartError::Ad(format!(
                    "ShouldTransferFiles `{other}` is not YES, NO or IF_NEEDED"
                )))
            }
        };
        let transfer_executable = !matches!(eval(ad, "TransferExecutable"), Value::Bool(false));
        let kill_sig = match eval(ad, "KillSig") {
            Value::Undefined => libc::SIGTERM,
            Value::Int(n) => n as i32,
            Value::Str(s) => signal_number(s.as_str())
                .ok_or_else(|| StartError::Ad(format!("KillSig `{s}` is not a signal")))?,
            other => {
                return Err(StartError::Ad(format!(
                    "KillSig `{}` is not a signal",
                    classad::unparse::value_to_string(&other)
                )))
            }
        };
        let number = |name: &str| match eval(ad, name) {
            Value::Int(n) => Some(n),
            Value::Real(r) => Some(r.ceil() as i64),
            _ => None,
        };
        Ok(Launch {
            cmd,
            args,
            env,
            iwd,
            stdin: stream(ad, "In")?,
            stdout: stream(ad, "Out")?,
            stderr: stream(ad, "Err")?,
            transfer,
            transfer_executable,
            transfer_input: list(ad, "TransferInput")?.unwrap_or_default(),
            transfer_output: list(ad, "TransferOutput")?,
            kill_sig,
            owner: string(ad, "Owner")?,
            request_cpus: number("RequestCpus").filter(|c| *c > 0),
            parallel_node: (number("JobUniverse") == Some(11))
                .then(|| Some((number("Node")?, number("CurrentHosts")?)))
                .flatten(),
        })
    }
}

/// `SIGTERM`, `TERM`, `15` and the like to a number.
pub fn signal_number(name: &str) -> Option<i32> {
    let n = name.trim();
    if let Ok(v) = n.parse::<i32>() {
        return (v > 0 && v < 65).then_some(v);
    }
    let upper = n.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    Some(match bare {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "TSTP" => libc::SIGTSTP,
        "XCPU" => libc::SIGXCPU,
        "PWR" => libc::SIGPWR,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::reader::parse_old_ad(text).unwrap()
    }

    #[test]
    fn launch_reads_new_syntax_and_defaults() {
        let l = Launch::from_ad(
            &ad("Cmd = \"/bin/echo\"\nArguments = \"a 'b c'\"\nEnvironment = \"X=1 Y='2 3'\"\nIwd = \"/tmp\"\nOut = \"out\"\nErr = \"/dev/null\"\nKillSig = \"SIGINT\"\nRequestMemory = 128\nRequestCpus = 2\nShouldTransferFiles = \"YES\"\nTransferOutput = \"a, b\"\n"),
            None,
        )
        .unwrap();
        assert_eq!(l.args, vec!["a", "b c"]);
        assert_eq!(l.env[1], ("Y".into(), "2 3".into()));
        assert_eq!(l.stdout.as_deref(), Some("out"));
        assert_eq!(l.stderr, None);
        assert_eq!(l.kill_sig, libc::SIGINT);
        assert_eq!(l.request_cpus, Some(2));
        assert_eq!(l.transfer_output, Some(vec!["a".into(), "b".into()]));
        assert!(l.transfer && l.transfer_executable);
    }

    #[test]
    fn launch_reads_old_syntax() {
        let l = Launch::from_ad(
            &ad("Cmd = \"/bin/echo\"\nArgs = \"a  b\"\nEnv = \"X=1|Y=2\"\nEnvDelim = \"|\"\nIwd = \"/tmp\"\nShouldTransferFiles = \"IF_NEEDED\"\nFileSystemDomain = \"here\"\n"),
            Some("here"),
        )
        .unwrap();
        assert_eq!(l.args, vec!["a", "b"]);
        assert_eq!(
            l.env,
            vec![("X".into(), "1".into()), ("Y".into(), "2".into())]
        );
        assert!(!l.transfer);
        assert_eq!(l.kill_sig, libc::SIGTERM);
    }

    #[test]
    fn bad_ads_say_what_is_wrong() {
        let e = Launch::from_ad(&ad("Iwd = \"/tmp\"\n"), None).unwrap_err();
        assert!(e.to_string().contains("Cmd"), "{e}");
        let e = Launch::from_ad(&ad("Cmd = \"x\"\nIwd = \"rel\"\n"), None).unwrap_err();
        assert!(e.to_string().contains("absolute"), "{e}");
        let e = Launch::from_ad(
            &ad("Cmd = \"x\"\nIwd = \"/\"\nKillSig = \"SIGNOPE\"\n"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("SIGNOPE"), "{e}");
    }
}
