//! Real processes: each test starts a real job and looks at it through
//! `/proc`, the files it wrote and the ad the starter gave back.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use classad::ClassAd;
use starter::{
    CgroupPolicy, ExitKind, ExitStatus, FinishProblem, JobSpec, Limit, RunAs, StartError, Starter,
    StarterSettings, SuspendMechanism,
};

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("execute")).unwrap();
        fs::create_dir(dir.path().join("iwd")).unwrap();
        World { dir }
    }
    fn iwd(&self) -> PathBuf {
        self.dir.path().join("iwd")
    }
    fn settings(&self) -> StarterSettings {
        let mut s = StarterSettings::new(self.dir.path().join("execute"));
        s.run_as = RunAs::Starter;
        s
    }
    /// A job ad running `cmd` with new-syntax `args`, in place (no transfer).
    fn job(&self, cmd: &str, args: &str) -> ClassAd {
        let mut ad = ClassAd::new();
        ad.insert_value("Cmd", cmd);
        ad.insert_value("Arguments", args);
        ad.insert_value("Iwd", self.iwd().display().to_string().as_str());
        ad.insert_value("Out", "out");
        ad.insert_value("Err", "err");
        ad.insert_value("ShouldTransferFiles", "NO");
        ad
    }
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        p
    }
    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.iwd().join(name)).unwrap_or_default()
    }
    fn sandboxes(&self) -> usize {
        fs::read_dir(self.dir.path().join("execute"))
            .unwrap()
            .count()
    }
}

fn int(ad: &ClassAd, name: &str) -> Option<i64> {
    ad.eval_attr(name, &classad::Env::default()).as_int()
}

fn state(pid: i32) -> Option<char> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..].chars().next()
}

fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|c| c != 'Z' && c != 'X')
}

/// Waits (briefly) until `f` holds.
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn echo_writes_stdout_and_exits_zero() {
    let w = World::new();
    let job =
        Starter::start(JobSpec::new(w.job("/bin/echo", "hello world"), w.settings()).unwrap())
            .unwrap();
    let r = job.finish();
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_eq!(w.read("out"), "hello world\n");
    assert_eq!(int(&r.job, "ExitCode"), Some(0));
    assert_eq!(
        r.job
            .eval_attr("ExitBySignal", &classad::Env::default())
            .as_bool(),
        Some(false)
    );
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(w.sandboxes(), 0, "the sandbox is removed");
}

#[test]
fn exit_codes_and_signals_reach_the_ad() {
    let w = World::new();
    let r = Starter::start(JobSpec::new(w.job("/bin/sh", "-c 'exit 7'"), w.settings()).unwrap())
        .unwrap()
        .finish();
    assert_eq!(r.status, ExitStatus::Code(7));
    assert_eq!(int(&r.job, "ExitCode"), Some(7));

    let r =
        Starter::start(JobSpec::new(w.job("/bin/sh", "-c 'kill -9 $$'"), w.settings()).unwrap())
            .unwrap()
            .finish();
    assert!(
        matches!(r.status, ExitStatus::Signal { signal: 9, .. }),
        "{:?}",
        r.status
    );
    assert_eq!(int(&r.job, "ExitSignal"), Some(9));
    assert_eq!(
        r.job
            .eval_attr("ExitBySignal", &classad::Env::default())
            .as_bool(),
        Some(true)
    );
    assert!(r.job.get("ExitCode").is_none());
    assert_eq!(r.kind, ExitKind::Exit);
}

/// A job whose children ignore SIGTERM: the soft kill leaves them, the
/// hard kill leaves nothing of the tree. With the cgroup, a grandchild
/// that made a session of its own is found too.
fn kill_tree(policy: CgroupPolicy) {
    let w = World::new();
    let mut settings = w.settings();
    settings.cgroup = policy;
    let escapee = if matches!(settings.cgroup, CgroupPolicy::Disabled) {
        ""
    } else {
        "setsid sh -c 'trap \"\" TERM; sleep 30' & "
    };
    let script = w.script(
        "tree.sh",
        &format!("trap '' TERM\n(trap '' TERM; sleep 30) & (sh -c 'trap \"\" TERM; sleep 30' &) ; {escapee}\nwait"),
    );
    let mut job =
        Starter::start(JobSpec::new(w.job(script.to_str().unwrap(), ""), settings).unwrap())
            .unwrap();
    let want = if escapee.is_empty() { 4 } else { 6 };
    assert!(
        eventually(|| job.tree_pids().len() >= want),
        "tree: {:?}",
        job.tree_pids()
    );
    let pids = job.tree_pids();
    job.soft_kill().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(pids.iter().all(|&p| alive(p)), "SIGTERM is ignored by all");
    job.hard_kill().unwrap();
    assert!(job.wait_timeout(Duration::from_secs(5)).unwrap().is_some());
    let r = job.finish();
    assert!(eventually(|| pids.iter().all(|&p| !alive(p))), "survivors");
    assert_eq!(r.kind, ExitKind::Evict);
    assert!(matches!(r.status, ExitStatus::Signal { signal: 9, .. }));
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

#[test]
fn soft_then_hard_kill_leaves_no_process_with_signals() {
    kill_tree(CgroupPolicy::Disabled);
}

#[test]
fn soft_then_hard_kill_leaves_no_process_with_the_cgroup() {
    let probe = Starter::probe(&CgroupPolicy::Auto);
    if probe.cgroup_parent.is_err() {
        eprintln!("no writable cgroup v2: {:?}", probe.cgroup_parent);
        return;
    }
    kill_tree(CgroupPolicy::Auto);
}

fn suspend_resume(policy: CgroupPolicy) {
    let w = World::new();
    let mut settings = w.settings();
    settings.cgroup = policy;
    let mut job = Starter::start(
        JobSpec::new(w.job("/bin/sh", "-c 'sleep 0.2; echo done'"), settings).unwrap(),
    )
    .unwrap();
    assert!(eventually(|| job.tree_pids().len() == 2));
    job.suspend().unwrap();
    assert!(job.is_suspended());
    match job.mechanisms().suspend {
        SuspendMechanism::Signals => {
            for p in job.tree_pids() {
                assert!(
                    eventually(|| state(p) == Some('T')),
                    "{p} is stopped: {:?}, tree {:?}",
                    fs::read_to_string(format!("/proc/{p}/stat")),
                    job.tree_pids()
                );
            }
        }
        SuspendMechanism::CgroupFreezer => {
            let cg = job.mechanisms().cgroup.clone().unwrap();
            let events = fs::read_to_string(cg.join("cgroup.events")).unwrap();
            assert!(events.contains("frozen 1"), "{events}");
        }
    }
    // Its sleep is over, but a suspended job cannot exit.
    assert_eq!(job.wait_timeout(Duration::from_millis(350)).unwrap(), None);
    job.resume().unwrap();
    if job.mechanisms().suspend == SuspendMechanism::Signals {
        for p in job.tree_pids() {
            assert!(eventually(|| state(p) != Some('T')), "{p} runs");
        }
    }
    let r = job.finish();
    assert_eq!(r.status, ExitStatus::Code(0));
    assert_eq!(w.read("out"), "done\n");
    assert!(r.duration >= Duration::from_millis(350));
}

#[test]
fn suspend_and_resume_with_signals() {
    suspend_resume(CgroupPolicy::Disabled);
}

#[test]
fn suspend_and_resume_with_the_cgroup_freezer() {
    suspend_resume(CgroupPolicy::Auto);
}

#[test]
fn renice_is_visible_in_proc() {
    let w = World::new();
    let mut settings = w.settings();
    settings.nice_increment = 5;
    let mut job =
        Starter::start(JobSpec::new(w.job("/bin/sleep", "5"), settings).unwrap()).unwrap();
    let nice = |pid: &str| -> i64 {
        let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        s[s.rfind(')').unwrap() + 2..]
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    };
    let ours = nice("self");
    assert_eq!(nice(&job.pid().to_string()), (ours + 5).min(19));
    // Its own session and process group.
    let s = fs::read_to_string(format!("/proc/{}/stat", job.pid())).unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split_whitespace().collect();
    assert_eq!(f[2], job.pid().to_string(), "process group");
    assert_eq!(f[3], job.pid().to_string(), "session");
    job.hard_kill().unwrap();
    job.finish();
}

#[test]
fn environment_and_arguments_reach_the_job() {
    let w = World::new();
    let mut ad = w.job(
        "/bin/sh",
        "-c 'echo \"$1|$2|$FOO|$BAR|$_CONDOR_SCRATCH_DIR|$OMP_NUM_THREADS\"' sh 'a b' c",
    );
    ad.insert_value("Environment", "FOO=x BAR='y z'");
    ad.insert_value("RequestCpus", 3i64);
    let r = Starter::start(JobSpec::new(ad, w.settings()).unwrap())
        .unwrap()
        .finish();
    let out = w.read("out");
    let parts: Vec<&str> = out.trim_end().split('|').collect();
    assert_eq!(&parts[..4], ["a b", "c", "x", "y z"], "{out}");
    assert!(parts[4].contains("/execute/dir_"), "{out}");
    assert_eq!(parts[5], "3");
    assert_eq!(r.status, ExitStatus::Code(0));

    // The old syntaxes.
    let mut ad = w.job("/bin/sh", "");
    ad.remove("Arguments");
    ad.insert_value("Args", "-c  echo${IFS}$FOO$BAZ");
    ad.insert_value("Env", "FOO=1;BAZ=2");
    Starter::start(JobSpec::new(ad, w.settings()).unwrap())
        .unwrap()
        .finish();
    assert_eq!(w.read("out"), "12\n");
}

#[test]
fn files_are_transferred_in_and_back() {
    let w = World::new();
    fs::write(w.iwd().join("in.txt"), "input\n").unwrap();
    let mut ad = w.job("/bin/sh", "-c 'cat in.txt > new.txt; pwd; cat'");
    ad.insert_value("ShouldTransferFiles", "YES");
    ad.insert_value("TransferExecutable", false);
    ad.insert_value("TransferInput", "in.txt");
    ad.insert_value("In", "in.txt");
    let r = Starter::start(JobSpec::new(ad, w.settings()).unwrap())
        .unwrap()
        .finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(w.read("new.txt"), "input\n");
    let out = w.read("out");
    assert!(out.contains("/execute/dir_"), "ran in the sandbox: {out}");
    assert!(out.ends_with("input\n"), "stdin from In: {out}");
    assert_eq!(w.sandboxes(), 0);

    // A named output that is not there is reported.
    let mut ad = w.job("/bin/true", "");
    ad.insert_value("ShouldTransferFiles", "YES");
    ad.insert_value("TransferOutput", "missing.dat");
    let r = Starter::start(JobSpec::new(ad, w.settings()).unwrap())
        .unwrap()
        .finish();
    assert_eq!(r.problems.len(), 1);
    assert!(r.problems[0].to_string().contains("missing.dat"));
}

#[test]
fn prepare_job_failure_aborts_with_its_reason() {
    let w = World::new();
    let mut settings = w.settings();
    settings.hooks.prepare_job =
        Some(w.script("prepare", "cat > /dev/null; echo not today >&2; exit 3"));
    let e = Starter::start(JobSpec::new(w.job("/bin/echo", "never"), settings).unwrap())
        .err()
        .unwrap();
    assert!(matches!(
        e,
        StartError::Hook {
            hook: "PREPARE_JOB",
            ..
        }
    ));
    assert!(e.to_string().contains("not today"), "{e}");
    assert_eq!(w.read("out"), "", "the job did not run");
    assert_eq!(w.sandboxes(), 0);
}

#[test]
fn prepare_job_reads_the_ads_and_updates_the_job() {
    let w = World::new();
    let seen = w.dir.path().join("prepare.in");
    let mut settings = w.settings();
    let mut slot = ClassAd::new();
    slot.insert_value("Name", "slot1@here");
    settings.slot_ad = Some(slot);
    settings.hooks.prepare_job = Some(w.script(
        "prepare",
        &format!("cat > {}; echo 'Arguments = \"from-hook\"'", seen.display()),
    ));
    let r = Starter::start(JobSpec::new(w.job("/bin/echo", "original"), settings).unwrap())
        .unwrap()
        .finish();
    assert_eq!(w.read("out"), "from-hook\n");
    let input = fs::read_to_string(&seen).unwrap();
    let (job, slot) = input.split_once("-----\n").expect("two ads");
    assert!(job.contains("Cmd = \"/bin/echo\""), "{input}");
    assert!(slot.contains("Name = \"slot1@here\""), "{input}");
    assert_eq!(r.status, ExitStatus::Code(0));
}

#[test]
fn job_exit_gets_the_final_ad() {
    let w = World::new();
    let seen = w.dir.path().join("exit.in");
    let mut settings = w.settings();
    settings.hooks.job_exit = Some(w.script(
        "exit",
        &format!("cat > {0}; echo \"how=$1\" >> {0}", seen.display()),
    ));
    Starter::start(JobSpec::new(w.job("/bin/sh", "-c 'exit 3'"), settings).unwrap())
        .unwrap()
        .finish();
    let text = fs::read_to_string(&seen).unwrap();
    let ad = classad::reader::parse_old_ad(text.trim_end().trim_end_matches("how=exit")).unwrap();
    assert_eq!(int(&ad, "ExitCode"), Some(3));
    assert!(
        ad.contains("ExitReason") && ad.contains("JobDuration") && ad.contains("RemoteUserCpu")
    );
    assert!(text.ends_with("how=exit\n"), "{text}");
}

#[test]
fn update_job_info_runs_during_a_longer_job() {
    let w = World::new();
    let seen = w.dir.path().join("update.in");
    let mut settings = w.settings();
    settings.initial_update_interval = Duration::from_millis(30);
    settings.update_interval = Duration::from_millis(1000);
    settings.hooks.update_job_info =
        Some(w.script("update", &format!("cat >> {}", seen.display())));
    let mut job =
        Starter::start(JobSpec::new(w.job("/bin/sleep", "0.2"), settings).unwrap()).unwrap();
    let pid = job.pid();
    job.wait().unwrap();
    job.finish();
    let text = fs::read_to_string(&seen).unwrap();
    let ad = classad::reader::parse_old_ad(&text).unwrap();
    assert_eq!(
        ad.eval_attr("JobState", &classad::Env::default()).as_str(),
        Some("Running")
    );
    assert_eq!(int(&ad, "JobPid"), Some(pid as i64));
    assert!(int(&ad, "NumPids").unwrap() >= 1);
    assert!(int(&ad, "JobStartDate").unwrap() > 1_600_000_000);
    assert!(
        ad.contains("RemoteUserCpu") && ad.contains("RemoteSysCpu") && ad.contains("ImageSize")
    );
}

#[test]
fn usage_and_user_job_wrapper() {
    let w = World::new();
    let wrapper = w.script("wrapper", "echo wrapped; exec \"$@\"");
    let mut settings = w.settings();
    settings.user_job_wrapper = Some(wrapper);
    // Long enough to be sampled while it runs (memory is measured by
    // sampling the tree, every 200 ms at most: a job that ends before the
    // first sample reports none, see the crate docs).
    let mut ad = w.job(
        "/bin/sh",
        "-c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.5; echo counted'",
    );
    ad.insert_value("RequestMemory", 64i64);
    let r = Starter::start(JobSpec::new(ad, settings).unwrap())
        .unwrap()
        .finish();
    assert_eq!(w.read("out"), "wrapped\ncounted\n");
    assert!(r.usage.user_cpu + r.usage.sys_cpu > 0.0, "{:?}", r.usage);
    assert!(r.usage.peak_rss_kib > 0);
    assert!(int(&r.job, "ImageSize").unwrap() > 0);
    assert!(int(&r.job, "MemoryUsage").unwrap() >= 1);
    assert_ne!(r.mechanisms.memory_limit, Limit::NotRequested);
    eprintln!("mechanisms: {:?}", r.mechanisms);
}

#[test]
fn runs_as_the_owner_when_root() {
    let w = World::new();
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    let mut ad = w.job("/usr/bin/id", "-u");
    ad.insert_value("Owner", "nobody");
    ad.insert_value("ShouldTransferFiles", "YES");
    ad.insert_value("TransferExecutable", false);
    let root = unsafe_geteuid() == 0;
    if root {
        // The job's output goes back as the job's user, into a directory
        // of that user's (as a submitter's initial directory is).
        std::os::unix::fs::chown(w.iwd(), Some(65534), Some(65534)).unwrap();
        fs::set_permissions(w.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let job = Starter::start(JobSpec::new(ad, settings).unwrap()).unwrap();
    let r = job.finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let expect = if root {
        assert_eq!(r.mechanisms.user.as_ref().unwrap().name, "nobody");
        r.mechanisms.user.as_ref().unwrap().uid
    } else {
        unsafe_geteuid()
    };
    assert_eq!(w.read("out").trim(), expect.to_string());

    // Never as root.
    if root {
        let mut ad = w.job("/usr/bin/id", "-u");
        ad.insert_value("Owner", "root");
        let mut settings = w.settings();
        settings.run_as = RunAs::JobOwner;
        let e = Starter::start(JobSpec::new(ad, settings).unwrap())
            .err()
            .unwrap();
        assert!(matches!(e, StartError::RunAs { .. }), "{e}");
    }
}

fn unsafe_geteuid() -> u32 {
    fs::metadata("/proc/self")
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid()
        })
        .unwrap()
}

#[test]
fn start_errors_name_what_failed() {
    let w = World::new();
    let e = Starter::start(JobSpec::new(w.job("/no/such/program", ""), w.settings()).unwrap())
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("/no/such/program") && text.contains("exec"),
        "{text}"
    );

    let mut ad = w.job("/bin/echo", "");
    ad.insert_value("In", "absent.txt");
    let e = Starter::start(JobSpec::new(ad, w.settings()).unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("standard input"), "{e}");
    assert_eq!(w.sandboxes(), 0);
}

#[test]
fn probe_reports_the_machine() {
    let p = Starter::probe(&CgroupPolicy::Auto);
    eprintln!("probe: {p:?}");
    assert_eq!(p.running_as_root, unsafe_geteuid() == 0);
}

#[test]
fn a_dropped_job_is_killed_and_cleaned_up() {
    let w = World::new();
    let job =
        Starter::start(JobSpec::new(w.job("/bin/sleep", "5"), w.settings()).unwrap()).unwrap();
    let pid = job.pid();
    let cgroup = job.mechanisms().cgroup.clone();
    drop(job);
    assert!(!alive(pid));
    assert_eq!(w.sandboxes(), 0);
    if let Ok(cg) = cgroup {
        assert!(!cg.exists(), "{}", cg.display());
    }
}

/// For a root starter's tests: a world whose Iwd belongs to `nobody`
/// (the job's owner), open to it; `None` (said on stderr) unless root.
fn world_of_nobody() -> Option<World> {
    if unsafe_geteuid() != 0 {
        eprintln!("skipped: needs root (a job owner other than the starter's user)");
        return None;
    }
    let w = World::new();
    fs::set_permissions(w.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(w.iwd(), Some(65534), Some(65534)).unwrap();
    Some(w)
}

/// A root starter reads the job's input and writes its output as the job's
/// owner: a file only root may read is not transferred in, and output is
/// not written where only root may write, not even through a symlink the
/// job made in its sandbox.
#[test]
fn a_root_starter_touches_files_only_as_the_job_owner() {
    let Some(w) = world_of_nobody() else {
        return;
    };
    let secret = w.dir.path().join("secret");
    fs::write(&secret, "s3cret").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    let job = |args: &str| {
        let mut ad = w.job("/bin/sh", args);
        ad.insert_value("Owner", "nobody");
        ad.insert_value("ShouldTransferFiles", "YES");
        ad.insert_value("TransferExecutable", false);
        ad
    };
    let mut ad = job("-c true");
    ad.insert_value("TransferInput", secret.display().to_string().as_str());
    let e = match Starter::start(JobSpec::new(ad, settings.clone()).unwrap()) {
        Err(e) => e,
        Ok(_) => panic!("a root-only file was transferred for nobody"),
    };
    assert!(matches!(e, StartError::Input { .. }), "{e}");
    assert!(e.to_string().contains("Permission denied"), "{e}");

    // The job links its output to a place only root may write.
    let victim = w.dir.path().join("victim");
    let mut ad = job(&format!("-c 'ln -s {} linked'", victim.display()));
    ad.insert_value("TransferOutput", "linked");
    let r = Starter::start(JobSpec::new(ad, settings.clone()).unwrap())
        .unwrap()
        .finish();
    assert!(
        !victim.exists(),
        "written as root through the job's symlink"
    );
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    // And the job's output may not be sent where only root may write.
    let mut ad = job("-c 'echo hi'");
    ad.insert_value("Out", victim.display().to_string().as_str());
    let r = Starter::start(JobSpec::new(ad, settings).unwrap())
        .unwrap()
        .finish();
    assert!(!victim.exists(), "output written as root");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
}

/// A root starter runs the job's hooks as the job's user, as HTCondor's
/// starter does: they work in the job's sandbox.
#[test]
fn a_root_starter_runs_the_job_hooks_as_the_job_owner() {
    let Some(w) = world_of_nobody() else {
        return;
    };
    let record = w.iwd().join("hooks");
    let hook = |name: &str| {
        w.script(
            name,
            &format!(
                "cat > /dev/null; echo {name} $(id -u) >> {}",
                record.display()
            ),
        )
    };
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    settings.hooks.prepare_job = Some(hook("prepare"));
    settings.hooks.job_exit = Some(hook("exit"));
    let mut ad = w.job("/bin/true", "");
    ad.insert_value("Owner", "nobody");
    let r = Starter::start(JobSpec::new(ad, settings).unwrap())
        .unwrap()
        .finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(
        fs::read_to_string(&record).unwrap(),
        "prepare 65534\nexit 65534\n"
    );
}

/// A root starter runs a URL plugin as the job's user, in the sandbox,
/// through the user-priv helper (never as root): the plugin's `-classad`
/// answer picks it for `zkm://`, and the file it writes is the job's.
#[test]
fn a_root_starter_runs_url_plugins_as_the_job_owner() {
    let Some(w) = world_of_nobody() else {
        return;
    };
    let plugin = w.script(
        "zkm_plugin",
        "if [ \"$1\" = -classad ]; then\n\
           echo 'PluginVersion = \"0.1\"'; echo 'PluginType = \"FileTransfer\"'\n\
           echo 'SupportedMethods = \"zkm\"'; echo 'MultipleFileSupport = true'; exit 0\n\
         fi\n\
         local=$(sed 's/.*LocalFileName = \"\\([^\"]*\\)\".*/\\1/' \"$2\")\n\
         { id -u; pwd; } > \"$local\"\n\
         echo '[ TransferSuccess = true; TransferUrl = \"zkm://who\" ]' > \"$4\"",
    );
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    settings.filetransfer_plugins = vec![plugin];
    let mut ad = w.job("/bin/sh", "-c 'cat who'");
    ad.insert_value("Owner", "nobody");
    ad.insert_value("ShouldTransferFiles", "YES");
    ad.insert_value("TransferExecutable", false);
    ad.insert_value("TransferInput", "zkm://who");
    let r = Starter::start(JobSpec::new(ad, settings).unwrap())
        .unwrap()
        .finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let out = w.read("out");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("65534"), "{out}");
    let cwd = lines.next().unwrap_or_default();
    assert!(
        cwd.starts_with(w.dir.path().join("execute").to_str().unwrap()),
        "{out}"
    );
}

/// A root starter uploads output through a URL plugin as the job's user:
/// the plugin runs with `-upload` as uid 65534, the file it stores is the
/// job's, and a failed upload is reported with HTCondor's subcode.
#[test]
fn a_root_starter_uploads_output_through_url_plugins_as_the_job_owner() {
    let Some(w) = world_of_nobody() else {
        return;
    };
    let store = w.dir.path().join("store");
    fs::create_dir(&store).unwrap();
    std::os::unix::fs::chown(&store, Some(65534), Some(65534)).unwrap();
    let plugin = w.script(
        "zkm_plugin",
        &format!(
            "if [ \"$1\" = -classad ]; then\n\
               echo 'PluginVersion = \"0.1\"'; echo 'PluginType = \"FileTransfer\"'\n\
               echo 'SupportedMethods = \"zkm\"'; echo 'MultipleFileSupport = true'; exit 0\n\
             fi\n\
             [ \"$5\" = -upload ] || exit 7\n\
             url=$(sed 's/.*Url = \"zkm:\\/\\/\\([^\"]*\\)\".*/\\1/' \"$2\")\n\
             local=$(sed 's/.*LocalFileName = \"\\([^\"]*\\)\".*/\\1/' \"$2\")\n\
             if [ \"$url\" = refused ]; then\n\
               echo '[ TransferSuccess = false; TransferUrl = \"zkm://refused\"; TransferError = \"zkm: the store refused it\" ]' > \"$4\"; exit 2\n\
             fi\n\
             {{ cat \"$local\"; id -u; }} > {}/\"$url\"\n\
             echo \"[ TransferSuccess = true; TransferUrl = \\\"zkm://$url\\\" ]\" > \"$4\"",
            store.display()
        ),
    );
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    settings.filetransfer_plugins = vec![plugin];
    let job = |remaps: &str| {
        let mut ad = w.job("/bin/sh", "-c 'echo result > res.txt'");
        ad.insert_value("Owner", "nobody");
        ad.insert_value("ShouldTransferFiles", "YES");
        ad.insert_value("TransferExecutable", false);
        ad.insert_value("TransferOutput", "res.txt");
        ad.insert_value("TransferOutputRemaps", remaps);
        ad
    };
    let r =
        Starter::start(JobSpec::new(job("res.txt = zkm://stored.txt"), settings.clone()).unwrap())
            .unwrap()
            .finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(
        fs::read_to_string(store.join("stored.txt")).unwrap(),
        "result\n65534\n"
    );
    assert_eq!(fs::metadata(store.join("stored.txt")).unwrap().uid(), 65534);
    assert!(!w.iwd().join("res.txt").exists());

    let r = Starter::start(JobSpec::new(job("res.txt = zkm://refused"), settings).unwrap())
        .unwrap()
        .finish();
    match r.problems.as_slice() {
        [FinishProblem::UrlOutput {
            url,
            reason,
            subcode,
            ..
        }] => {
            assert_eq!(url, "zkm://refused");
            assert!(reason.contains("zkm: the store refused it"), "{reason}");
            assert_eq!(*subcode, 2 << 8);
        }
        other => panic!("{other:?}"),
    }
}

/// A root starter fetches an `http://` input itself, as the job's user:
/// the file in the sandbox is the job's.
#[test]
fn a_root_starter_fetches_http_inputs_as_the_job_owner() {
    let Some(w) = world_of_nobody() else {
        return;
    };
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/data/in.txt", server.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        for mut c in server.incoming().flatten() {
            let mut r = std::io::BufReader::new(c.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    let mut settings = w.settings();
    settings.run_as = RunAs::JobOwner;
    let mut ad = w.job("/bin/sh", "-c 'stat -c %u in.txt; cat in.txt'");
    ad.insert_value("Owner", "nobody");
    ad.insert_value("ShouldTransferFiles", "YES");
    ad.insert_value("TransferExecutable", false);
    ad.insert_value("TransferInput", url.as_str());
    let r = Starter::start(JobSpec::new(ad, settings).unwrap())
        .unwrap()
        .finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(w.read("out"), "65534\nhello");
}

/// ENABLE_URL_TRANSFERS = false: a job that names a URL for input or
/// output is refused before it starts; an output_destination that is no
/// URL is none.
#[test]
fn url_transfers_disabled_refuse_jobs_that_name_urls() {
    let w = World::new();
    let mut settings = w.settings();
    settings.enable_url_transfers = false;
    let job = |attr: &str, value: &str| {
        let mut ad = w.job("/bin/true", "");
        ad.insert_value("ShouldTransferFiles", "YES");
        ad.insert_value("TransferExecutable", false);
        ad.insert_value(attr, value);
        Starter::start(JobSpec::new(ad, settings.clone()).unwrap())
    };
    match job("TransferInput", "zkm://thing") {
        Err(e @ StartError::UrlInput(_)) => assert!(e.to_string().contains("zkm://thing"), "{e}"),
        other => panic!("{:?}", other.err()),
    }
    match job("OutputDestination", "https://h/out?sig=secret") {
        Err(e @ StartError::UrlOutput(_)) => {
            let e = e.to_string();
            assert!(e.contains("https://h/out") && !e.contains("secret"), "{e}");
        }
        other => panic!("{:?}", other.err()),
    }
    let r = job("OutputDestination", "/not/a/url").unwrap().finish();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}
