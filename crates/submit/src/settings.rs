//! What submit reads from the configuration, read once per submission.
//!
//! The defaults for `RequestMemory` and `RequestDisk` need a word. The
//! submit vectors are HTCondor 24.0.24's, whose parameter table gives
//! `JOB_DEFAULT_REQUESTMEMORY = ifthenelse(MemoryUsage =!= UNDEFINED,
//! MemoryUsage, (ImageSize+1023)/1024)` and `JOB_DEFAULT_REQUESTDISK =
//! DiskUsage`; ferrocondor's table (`config::params`) holds HTCondor 25's
//! (`128` and an expression over `TransferInputSizeMB`). When the
//! configuration does not set them, submit uses 24.0's, so a job's ad is
//! what condor_submit 24.0 makes; a value the admin set is used as it is.

use config::{Config, Origin};

use crate::error::SubmitError;

/// HTCondor 24.0's built-in `JOB_DEFAULT_REQUESTMEMORY`.
pub(crate) const DEFAULT_REQUEST_MEMORY: &str =
    "ifthenelse(MemoryUsage =!= UNDEFINED,MemoryUsage,(ImageSize+1023)/1024)";
/// HTCondor 24.0's built-in `JOB_DEFAULT_REQUESTDISK`.
pub(crate) const DEFAULT_REQUEST_DISK: &str = "DiskUsage";
/// HTCondor's built-in `JOB_DEFAULT_REQUESTCPUS`.
pub(crate) const DEFAULT_REQUEST_CPUS: &str = "1";

#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub arch: String,
    pub opsys: String,
    pub opsys_and_ver: String,
    pub spool: String,
    pub filesystem_domain: Option<String>,
    pub append_requirements: Option<String>,
    pub append_req_vanilla: Option<String>,
    pub append_rank: Option<String>,
    pub append_rank_vanilla: Option<String>,
    pub default_request_cpus: String,
    pub default_request_memory: String,
    pub default_request_disk: String,
    pub default_lease_duration: Option<String>,
    pub default_should_transfer: Option<String>,
    pub default_universe: Option<String>,
    pub custom_resource_requirements: bool,
    pub warn_unused: bool,
    pub nice_user_group: String,
    /// `SUBMIT_ATTRS` and `SUBMIT_EXPRS`: (attribute, expression text).
    pub submit_attrs: Vec<(String, String)>,
}

fn get(
    name: &str,
    value: Result<Option<String>, config::LookupError>,
) -> Result<Option<String>, SubmitError> {
    value.map_err(|e| SubmitError::new(format!("the configuration's {name}: {e}")))
}

/// A `JOB_DEFAULT_*` value: the configuration's when an admin set it,
/// else HTCondor 24.0's.
fn job_default(
    config: &Config,
    name: &str,
    value: Result<Option<String>, config::LookupError>,
    builtin: &str,
) -> Result<String, SubmitError> {
    let set_by_admin = config
        .find(name)
        .is_some_and(|f| f.origin != Origin::Default);
    if !set_by_admin {
        return Ok(builtin.to_string());
    }
    Ok(get(name, value)?.unwrap_or_else(|| builtin.to_string()))
}

fn flag(value: Option<String>, default: bool) -> bool {
    value
        .and_then(|v| config::parse_bool(&v))
        .unwrap_or(default)
}

impl Settings {
    pub fn read(config: &Config) -> Result<Settings, SubmitError> {
        let c = config;
        let mut submit_attrs = Vec::new();
        for (list_name, list) in [
            ("SUBMIT_ATTRS", c.get("SUBMIT_ATTRS")),
            ("SUBMIT_EXPRS", c.get("SUBMIT_EXPRS")),
        ] {
            let Some(list) = get(list_name, list)? else {
                continue;
            };
            for name in config::split_list(&list) {
                // `+Name` in the list means the attribute Name.
                let attr = name.trim_start_matches('+');
                let value = c
                    .get(attr)
                    .map_err(|e| SubmitError::new(format!("{list_name} names {attr}: {e}")))?;
                if let Some(value) = value {
                    submit_attrs.push((attr.to_string(), value));
                }
            }
        }
        Ok(Settings {
            arch: get("ARCH", c.get("ARCH"))?.unwrap_or_default(),
            opsys: get("OPSYS", c.get("OPSYS"))?.unwrap_or_default(),
            opsys_and_ver: get("OPSYSANDVER", c.get("OPSYSANDVER"))?.unwrap_or_default(),
            spool: get("SPOOL", c.get("SPOOL"))?.unwrap_or_default(),
            filesystem_domain: get("FILESYSTEM_DOMAIN", c.get("FILESYSTEM_DOMAIN"))?,
            append_requirements: get("APPEND_REQUIREMENTS", c.get("APPEND_REQUIREMENTS"))?,
            append_req_vanilla: get("APPEND_REQ_VANILLA", c.get("APPEND_REQ_VANILLA"))?,
            append_rank: get("APPEND_RANK", c.get("APPEND_RANK"))?,
            append_rank_vanilla: get("APPEND_RANK_VANILLA", c.get("APPEND_RANK_VANILLA"))?,
            default_request_cpus: job_default(
                c,
                "JOB_DEFAULT_REQUESTCPUS",
                c.get("JOB_DEFAULT_REQUESTCPUS"),
                DEFAULT_REQUEST_CPUS,
            )?,
            default_request_memory: job_default(
                c,
                "JOB_DEFAULT_REQUESTMEMORY",
                c.get("JOB_DEFAULT_REQUESTMEMORY"),
                DEFAULT_REQUEST_MEMORY,
            )?,
            default_request_disk: job_default(
                c,
                "JOB_DEFAULT_REQUESTDISK",
                c.get("JOB_DEFAULT_REQUESTDISK"),
                DEFAULT_REQUEST_DISK,
            )?,
            default_lease_duration: get(
                "JOB_DEFAULT_LEASE_DURATION",
                c.get("JOB_DEFAULT_LEASE_DURATION"),
            )?,
            default_should_transfer: get(
                "SUBMIT_DEFAULT_SHOULD_TRANSFER_FILES",
                c.get("SUBMIT_DEFAULT_SHOULD_TRANSFER_FILES"),
            )?,
            default_universe: get("DEFAULT_UNIVERSE", c.get("DEFAULT_UNIVERSE"))?,
            custom_resource_requirements: flag(
                get(
                    "SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS",
                    c.get("SUBMIT_GENERATE_CUSTOM_RESOURCE_REQUIREMENTS"),
                )?,
                true,
            ),
            warn_unused: flag(
                get(
                    "WARN_ON_UNUSED_SUBMIT_FILE_MACROS",
                    c.get("WARN_ON_UNUSED_SUBMIT_FILE_MACROS"),
                )?,
                true,
            ),
            nice_user_group: get(
                "NICE_USER_ACCOUNTING_GROUP_NAME",
                c.get("NICE_USER_ACCOUNTING_GROUP_NAME"),
            )?
            .unwrap_or_else(|| "nice-user".into()),
            submit_attrs,
        })
    }
}
