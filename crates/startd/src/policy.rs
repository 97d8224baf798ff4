//! A slot's policy: the expressions and numbers of the configuration that
//! decide its transitions, read once per (re)configuration.
//!
//! Each is looked up as the startd does: `SLOT<N>_NAME`, then
//! `SLOT_TYPE_<T>_NAME`, then `NAME` (with `STARTD.NAME` and the built-in
//! default applied by the configuration crate). Jobs of the vanilla
//! universe use `NAME_VANILLA` where it is defined.

use classad::{ClassAd, Env, Expr, Value};
use config::Config;

/// Every parameter this module reads besides the expressions of
/// `PUBLISHED_EXPRS` (both are checked against the parameter table by a
/// test, like the tidy rule for literal reads).
pub const PARAMS_READ: &[&str] = &[
    "RANK",
    "CLAIM_WORKLIFE",
    "MATCH_TIMEOUT",
    "KILLING_TIMEOUT",
    "ENABLE_BACKFILL",
    "MAX_CLAIM_ALIVES_MISSED",
    "ALIVE_INTERVAL",
    "JOB_RENICE_INCREMENT",
    "STARTD_ATTRS",
    "STARTD_EXPRS",
    "STARTD_JOB_ATTRS",
    "STARTD_JOB_EXPRS",
    "STARTD_SLOT_ATTRS",
    "STARTD_SLOT_EXPRS",
    "STARTD_VM_ATTRS",
    "STARTD_VM_EXPRS",
    "STARTD_LATCH_EXPRS",
    "SLOTS_CONNECTED_TO_CONSOLE",
    "SLOTS_CONNECTED_TO_KEYBOARD",
    "DISCONNECTED_KEYBOARD_IDLE_BOOST",
    "UPDATE_INTERVAL",
    "POLLING_INTERVAL",
    "STARTD_JOB_HOOK_KEYWORD",
    "FetchWorkDelay",
    "BACKFILL_SYSTEM",
    "SLOT_WEIGHT",
];

/// The policy expressions a slot publishes in its ad under their own
/// names, so that one can refer to another (`PREEMPT = ... || (SUSPEND &&
/// (WANT_SUSPEND == False))`).
pub const PUBLISHED_EXPRS: &[&str] = &[
    "START",
    "IS_OWNER",
    "SUSPEND",
    "CONTINUE",
    "PREEMPT",
    "KILL",
    "WANT_SUSPEND",
    "WANT_VACATE",
    "SUSPEND_VANILLA",
    "CONTINUE_VANILLA",
    "PREEMPT_VANILLA",
    "KILL_VANILLA",
    "WANT_SUSPEND_VANILLA",
    "WANT_VACATE_VANILLA",
    "RunBenchmarks",
    "START_BACKFILL",
    "EVICT_BACKFILL",
    "MachineMaxVacateTime",
    "MaxJobRetirementTime",
];

/// A configuration value that is not what the startd needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

/// One slot's policy.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The expressions by name (as `PUBLISHED_EXPRS` lists them), `None`
    /// where the configuration does not define one.
    pub exprs: Vec<(&'static str, Option<Expr>)>,
    /// The slot's RANK for jobs (machine RANK).
    pub rank: Option<Expr>,
    /// Seconds a claim accepts new jobs; `None` for ever (HTCondor's -1).
    pub claim_worklife: Option<i64>,
    pub match_timeout: i64,
    pub killing_timeout: i64,
    pub max_claim_alives_missed: i64,
    pub alive_interval: i64,
    pub enable_backfill: bool,
    /// The backfill program (`BACKFILL_SYSTEM`, and its
    /// `<SYSTEM>_Executable`, `_Arguments`, `_InitialDir`, `_Owner`).
    pub backfill: Option<BackfillProgram>,
    pub job_renice_increment: Option<Expr>,
    /// `STARTD_ATTRS`/`STARTD_EXPRS`: (name, expression) published as is.
    pub startd_attrs: Vec<(String, Expr)>,
    /// `STARTD_JOB_ATTRS`/`STARTD_JOB_EXPRS`: attributes of the running
    /// job copied into the slot ad.
    pub job_attrs: Vec<String>,
    /// `STARTD_SLOT_ATTRS`/`STARTD_SLOT_EXPRS`: attributes every slot
    /// publishes of every other as `slot<N>_<name>`.
    pub slot_attrs: Vec<String>,
    /// `STARTD_LATCH_EXPRS`: expressions whose value and time of last
    /// change are published as `<name>Value` and `<name>Time`.
    pub latch_exprs: Vec<(String, Expr)>,
    pub update_interval: i64,
    pub polling_interval: i64,
    /// Job hooks (`job-hooks-v7.txt`): the keyword of this slot's hooks
    /// (SLOT<N>_JOB_HOOK_KEYWORD, else STARTD_JOB_HOOK_KEYWORD) when its
    /// `<KEYWORD>_HOOK_FETCH_WORK` is defined, and the hook programs.
    pub hooks: Option<Hooks>,
    /// Seconds between attempts to fetch work (default 300).
    pub fetch_work_delay: Option<Expr>,
    /// `SLOT_WEIGHT`, published as `SlotWeight`: what the slot counts for
    /// in the users' usage (HTCondor's default: its Cpus).
    pub slot_weight: Option<Expr>,
}

/// The backfill client the startd runs on idle slots (HTCondor supports
/// BOINC; any program configured the same way will do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackfillProgram {
    pub system: String,
    pub executable: Option<String>,
    pub arguments: Option<String>,
    pub initial_dir: Option<String>,
    pub owner: Option<String>,
    /// `<SYSTEM>_Environment` (or `_Env`): `NAME=value` words, the submit
    /// language's new environment syntax.
    pub environment: Option<String>,
    /// `<SYSTEM>_Output` (or `_Out`), `<SYSTEM>_Error` (or `_Err`),
    /// `<SYSTEM>_Input` (or `_In`): the client's standard streams.
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    /// `<SYSTEM>_KillSig`: what asks it to stop (SIGTERM by default);
    /// after KILLING_TIMEOUT it is killed.
    pub kill_sig: Option<String>,
}

impl BackfillProgram {
    /// The job ad the starter runs the client from, as HTCondor's starter
    /// makes one out of the `<SYSTEM>_*` settings (its JICLocalConfig):
    /// run in place in its InitialDir, no file transfer. `Err` names the
    /// setting that is missing. Whom it runs as is the starter's rule: a
    /// root startd runs it as `<SYSTEM>_Owner`, never as root.
    pub fn job_ad(&self) -> Result<ClassAd, String> {
        let need = |v: &Option<String>, what: &str| {
            v.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                format!(
                    "BACKFILL_SYSTEM is {}, but {}_{what} is not set",
                    self.system, self.system
                )
            })
        };
        let mut ad = ClassAd::new();
        ad.insert_value("Cmd", need(&self.executable, "Executable")?.as_str());
        ad.insert_value("Iwd", need(&self.initial_dir, "InitialDir")?.as_str());
        ad.insert_value("JobUniverse", 5i64);
        ad.insert_value("ShouldTransferFiles", "NO");
        ad.insert_value(
            "KillSig",
            self.kill_sig.as_deref().unwrap_or("SIGTERM").trim(),
        );
        let optional = [
            ("Owner", &self.owner),
            ("Arguments", &self.arguments),
            ("Environment", &self.environment),
            ("Out", &self.output),
            ("Err", &self.error),
            ("In", &self.input),
        ];
        for (name, v) in optional {
            if let Some(v) = v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                ad.insert_value(name, v);
            }
        }
        ad.insert_value("BackfillSystem", self.system.as_str());
        Ok(ad)
    }
}

/// The startd's job hooks for one keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hooks {
    pub keyword: String,
    pub fetch_work: String,
    pub reply_fetch: Option<String>,
    pub evict_claim: Option<String>,
}

fn err(name: &str, e: impl std::fmt::Display) -> PolicyError {
    PolicyError(format!("{name}: {e}"))
}

impl Policy {
    /// The policy of slot `slot` (of type `slot_type`).
    pub fn read(config: &Config, slot: u32, slot_type: Option<u32>) -> Result<Policy, PolicyError> {
        let text = |name: &str| -> Result<Option<String>, PolicyError> {
            config
                .get_for_slot(slot, slot_type, name)
                .map_err(|e| err(name, e))
        };
        let expr = |name: &str| -> Result<Option<Expr>, PolicyError> {
            match text(name)? {
                None => Ok(None),
                Some(t) => classad::parse_expr(&t)
                    .map(Some)
                    .map_err(|e| err(name, format!("`{t}` is not a ClassAd expression: {e}"))),
            }
        };
        let number = |name: &str, default: i64| -> Result<i64, PolicyError> {
            match expr(name)? {
                None => Ok(default),
                Some(e) => match classad::eval_expr(&e, None, None, &Env::default()) {
                    Value::Int(i) => Ok(i),
                    Value::Real(x) if x.is_finite() => Ok(x as i64),
                    v => Err(err(name, format!("expected a number, got {v}"))),
                },
            }
        };
        let list = |name: &str| -> Result<Vec<String>, PolicyError> {
            Ok(text(name)?
                .map(|t| config::split_list(&t).map(str::to_string).collect())
                .unwrap_or_default())
        };
        let mut exprs = Vec::with_capacity(PUBLISHED_EXPRS.len());
        for name in PUBLISHED_EXPRS {
            exprs.push((*name, expr(name)?));
        }
        let mut startd_attrs = Vec::new();
        for name in list("STARTD_ATTRS")?
            .into_iter()
            .chain(list("STARTD_EXPRS")?)
        {
            if startd_attrs
                .iter()
                .any(|(n, _): &(String, Expr)| n.eq_ignore_ascii_case(&name))
            {
                continue;
            }
            if let Some(e) = expr(&name)? {
                startd_attrs.push((name, e));
            }
        }
        let mut latch_exprs = Vec::new();
        for name in list("STARTD_LATCH_EXPRS")? {
            if let Some(e) = expr(&name)? {
                latch_exprs.push((name, e));
            }
        }
        let worklife = number("CLAIM_WORKLIFE", 1200)?;
        let keyword = match config
            .get(&format!("SLOT{slot}_JOB_HOOK_KEYWORD"))
            .map_err(|e| err("JOB_HOOK_KEYWORD", e))?
        {
            Some(k) => Some(k),
            None => config
                .get("STARTD_JOB_HOOK_KEYWORD")
                .map_err(|e| err("STARTD_JOB_HOOK_KEYWORD", e))?,
        };
        let hook = |keyword: &str, which: &str| -> Result<Option<String>, PolicyError> {
            let name = format!("{keyword}_HOOK_{which}");
            config.get(&name).map_err(|e| err(&name, e))
        };
        let hooks = match keyword {
            Some(k) => match hook(&k, "FETCH_WORK")? {
                Some(fetch_work) => Some(Hooks {
                    reply_fetch: hook(&k, "REPLY_FETCH")?,
                    evict_claim: hook(&k, "EVICT_CLAIM")?,
                    keyword: k,
                    fetch_work,
                }),
                None => None,
            },
            None => None,
        };
        let backfill = match text("BACKFILL_SYSTEM")? {
            Some(system) => {
                // HTCondor's starter reads `<SYSTEM>_<job attribute>` or
                // the submit command's name (Cmd or Executable, ...).
                let part = |what: &str, alt: &str| -> Result<Option<String>, PolicyError> {
                    for w in [what, alt] {
                        let name = format!("{system}_{w}");
                        if let Some(v) = config.get(&name).map_err(|e| err(&name, e))? {
                            return Ok(Some(v));
                        }
                    }
                    Ok(None)
                };
                Some(BackfillProgram {
                    executable: part("Executable", "Cmd")?,
                    arguments: part("Arguments", "Args")?,
                    initial_dir: part("InitialDir", "Iwd")?,
                    owner: part("Owner", "Owner")?,
                    environment: part("Environment", "Env")?,
                    output: part("Output", "Out")?,
                    error: part("Error", "Err")?,
                    input: part("Input", "In")?,
                    kill_sig: part("KillSig", "KillSig")?,
                    system,
                })
            }
            None => None,
        };
        let enable_backfill = match text("ENABLE_BACKFILL")? {
            Some(t) => config::parse_bool(&t)
                .ok_or_else(|| err("ENABLE_BACKFILL", "expected true or false"))?,
            None => false,
        };
        Ok(Policy {
            exprs,
            rank: expr("RANK")?,
            claim_worklife: (worklife >= 0).then_some(worklife),
            match_timeout: number("MATCH_TIMEOUT", 120)?,
            killing_timeout: number("KILLING_TIMEOUT", 30)?,
            max_claim_alives_missed: number("MAX_CLAIM_ALIVES_MISSED", 6)?,
            alive_interval: number("ALIVE_INTERVAL", 300)?,
            enable_backfill,
            backfill,
            job_renice_increment: expr("JOB_RENICE_INCREMENT")?,
            startd_attrs,
            job_attrs: list("STARTD_JOB_ATTRS")?
                .into_iter()
                .chain(list("STARTD_JOB_EXPRS")?)
                .collect(),
            // The 6.8 names (STARTD_VM_*) still count, so old policies run.
            slot_attrs: list("STARTD_SLOT_ATTRS")?
                .into_iter()
                .chain(list("STARTD_SLOT_EXPRS")?)
                .chain(list("STARTD_VM_ATTRS")?)
                .chain(list("STARTD_VM_EXPRS")?)
                .collect(),
            latch_exprs,
            update_interval: number("UPDATE_INTERVAL", 300)?,
            polling_interval: number("POLLING_INTERVAL", 5)?,
            hooks,
            fetch_work_delay: expr("FetchWorkDelay")?,
            slot_weight: expr("SLOT_WEIGHT")?,
        })
    }

    /// The expression `name` as written in the configuration.
    pub fn expr(&self, name: &str) -> Option<&Expr> {
        self.exprs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, e)| e.as_ref())
    }

    /// The expression to use for `name` with this job: the `_VANILLA`
    /// variant for a vanilla-universe job where one is defined.
    pub fn for_job(
        &self,
        name: &'static str,
        job: Option<&ClassAd>,
    ) -> (&'static str, Option<&Expr>) {
        if let Some(job) = job {
            // `<name>_VANILLA`, found among the published names (no string
            // is made: the slot's policy is evaluated on every poll), and
            // only then the job's universe read (most policies have none).
            let variant = self.exprs.iter().find(|(n, e)| {
                e.is_some()
                    && n.len() == name.len() + "_VANILLA".len()
                    && n.ends_with("_VANILLA")
                    && n[..name.len()].eq_ignore_ascii_case(name)
            });
            if let Some((n, e)) = variant {
                if matches!(job.eval_attr("JobUniverse", &Env::default()), Value::Int(5)) {
                    return (n, e.as_ref());
                }
            }
        }
        (name, self.expr(name))
    }
}

/// Evaluates `expr` with the slot ad as MY and the job (if any) as TARGET.
pub fn evaluate(expr: Option<&Expr>, slot: &ClassAd, job: Option<&ClassAd>, env: &Env) -> Value {
    match expr {
        Some(e) => classad::eval_expr(e, Some(slot), job, env),
        None => Value::Undefined,
    }
}

/// HTCondor's reading of a policy value as a decision: true, or a non-zero
/// number; UNDEFINED and ERROR are not true.
pub fn is_true(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_read_is_in_the_table() {
        for name in PARAMS_READ.iter().chain(PUBLISHED_EXPRS) {
            assert!(
                config::params::lookup(name).is_some(),
                "{name} is read by the startd but is not in crates/config/src/params.rs"
            );
        }
    }

    fn config(text: &str) -> Config {
        config::load(
            &config::LoadOptions::new("STARTD", config::Root::File("c".into())),
            &config::MemFiles::new().with("c", text),
            &config::FixedHost::empty(),
        )
        .unwrap()
    }

    #[test]
    fn slot_settings_override_the_general_ones() {
        let c = config("START = KeyboardIdle > 60\nSLOT2_START = False\nSUSPEND = True\nSUSPEND_VANILLA = False\n");
        let p1 = Policy::read(&c, 1, None).unwrap();
        let p2 = Policy::read(&c, 2, None).unwrap();
        assert_eq!(p1.expr("START").unwrap().to_string(), "KeyboardIdle > 60");
        assert_eq!(p2.expr("START").unwrap().to_string(), "false");
        let vanilla = ClassAd::parse("[ JobUniverse = 5 ]").unwrap();
        let other = ClassAd::parse("[ JobUniverse = 9 ]").unwrap();
        assert_eq!(p1.for_job("SUSPEND", Some(&vanilla)).0, "SUSPEND_VANILLA");
        assert_eq!(p1.for_job("SUSPEND", Some(&other)).0, "SUSPEND");
        // The defaults: HTCondor's.
        assert_eq!(p1.claim_worklife, Some(1200));
        assert_eq!(p1.match_timeout, 120);
        assert_eq!(p1.killing_timeout, 30);
    }

    #[test]
    fn a_broken_expression_names_the_parameter() {
        let c = config("START = (KeyboardIdle >\n");
        let e = Policy::read(&c, 1, None).unwrap_err();
        assert!(
            e.0.starts_with("START: `(KeyboardIdle >` is not a ClassAd expression"),
            "{e}"
        );
    }
}
