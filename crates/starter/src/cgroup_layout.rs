//! Where a daemon's job cgroups go on cgroup v2, decided from what the
//! daemon found about its own cgroup (pure: [`cgroup::settle_job_cgroups`]
//! gathers the facts and carries the decision out).
//!
//! cgroup v2's no-internal-processes rule: a cgroup other than the root
//! may give its children controllers (memory, cpu, pids in its
//! `cgroup.subtree_control`) only while it holds no processes itself. A
//! daemon's own cgroup holds the daemon, so job cgroups made right under
//! it get no memory limit. HTCondor's starter puts job cgroups under
//! `BASE_CGROUP` (default `htcondor`) beside its own cgroup, a sibling:
//! `<parent of own>/<BASE_CGROUP>/...`; its systemd unit
//! (`condor.service`: `Delegate=true`, `DelegateSubgroup=leaf`) runs the
//! daemons in `condor.service/leaf`, so the jobs go to
//! `condor.service/htcondor`. Where nothing made that leaf for us, we make
//! it: a daemon alone in its cgroup moves into `<own>/leaf`, as systemd
//! would, and its jobs go to `<own>/<BASE_CGROUP>`.
//!
//! [`cgroup::settle_job_cgroups`]: crate::cgroup::settle_job_cgroups

use std::path::{Component, Path, PathBuf};

/// The leaf a daemon moves into (systemd's `DelegateSubgroup=leaf` name,
/// so a daemon started by HTCondor's unit and one that moved itself look
/// the same to the next daemon).
pub const LEAF: &str = "leaf";

/// What a daemon found about its own cgroup v2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnCgroup {
    /// Where the hierarchy is mounted.
    pub mount: PathBuf,
    /// The daemon's cgroup (absolute, under `mount`).
    pub own: PathBuf,
    /// `own` holds only this process and its children.
    pub only_ours: bool,
    /// The daemon may make cgroups in `own`.
    pub own_writable: bool,
    /// `own`'s parent holds no processes (meaningless at the root).
    pub parent_free: bool,
    /// The daemon may make cgroups in `own`'s parent.
    pub parent_writable: bool,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Jobs get no cgroup, for this reason.
    NoCgroups(String),
    /// Jobs get cgroups under `jobs`.
    Jobs {
        /// First move the daemon (and its children) into this leaf.
        leaf: Option<PathBuf>,
        /// The cgroup job cgroups are made in.
        jobs: PathBuf,
        /// The highest cgroup whose `cgroup.subtree_control` gets the
        /// controllers (then each one down to `jobs`): `Err` says why
        /// jobs get no limits there (they are still tracked, frozen and
        /// killed by their cgroup).
        controllers_from: Result<PathBuf, String>,
    },
}

/// BASE_CGROUP as a relative path: HTCondor reads it below the parent of
/// the daemon's cgroup; a leading `/` is dropped as HTCondor drops it,
/// and `..` (out of the daemon's subtree) is refused.
fn base_path(base: &str) -> Result<PathBuf, String> {
    let base = base.trim();
    if base.is_empty() {
        return Err("BASE_CGROUP is empty (HTCondor then makes no job cgroups)".into());
    }
    let rel = PathBuf::from(base.trim_start_matches('/'));
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!("BASE_CGROUP `{base}` is not a cgroup name"));
    }
    if rel.components().next() == Some(Component::Normal(LEAF.as_ref())) {
        return Err(format!(
            "BASE_CGROUP `{base}` would be the daemons' own leaf `{LEAF}`"
        ));
    }
    Ok(rel)
}

/// Where job cgroups go, given BASE_CGROUP and the daemon's own cgroup.
pub fn choose(base: &str, o: &OwnCgroup) -> Layout {
    let base = match base_path(base) {
        Ok(b) => b,
        Err(why) => return Layout::NoCgroups(why),
    };
    let at_root = o.own == o.mount;
    let parent = o
        .own
        .parent()
        .filter(|p| p.starts_with(&o.mount) && !at_root);
    let named_leaf = o.own.file_name() == Some(LEAF.as_ref());
    let sibling = |p: &Path| Layout::Jobs {
        leaf: None,
        jobs: p.join(&base),
        controllers_from: Ok(p.to_path_buf()),
    };
    match parent {
        // Already in a leaf (systemd's DelegateSubgroup=leaf, or a master
        // that moved itself): HTCondor's sibling.
        Some(p) if named_leaf && o.parent_free && o.parent_writable => sibling(p),
        // Alone in our cgroup: make the leaf ourselves.
        _ if o.only_ours && o.own_writable && !named_leaf => Layout::Jobs {
            leaf: Some(o.own.join(LEAF)),
            jobs: o.own.join(&base),
            controllers_from: Ok(o.own.clone()),
        },
        // The root is exempt from the rule.
        _ if at_root && o.own_writable => Layout::Jobs {
            leaf: None,
            jobs: o.own.join(&base),
            controllers_from: Ok(o.own.clone()),
        },
        // Others share our cgroup, but its parent has no processes:
        // HTCondor's sibling, as its starter makes it.
        Some(p) if o.parent_free && o.parent_writable => sibling(p),
        _ if o.own_writable => Layout::Jobs {
            leaf: None,
            jobs: o.own.join(&base),
            controllers_from: Err(format!(
                "`{}` also holds processes that are not this daemon's, and cgroup v2 gives \
                 no controllers below a cgroup with processes; run the daemon in a cgroup \
                 of its own (systemd: Delegate=yes)",
                o.own.display()
            )),
        },
        _ => Layout::NoCgroups(format!("`{}` is not writable", o.own.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(path: &str) -> OwnCgroup {
        OwnCgroup {
            mount: "/sys/fs/cgroup".into(),
            own: path.into(),
            only_ours: false,
            own_writable: true,
            parent_free: false,
            parent_writable: true,
        }
    }

    fn jobs(leaf: Option<&str>, jobs: &str, from: &str) -> Layout {
        Layout::Jobs {
            leaf: leaf.map(PathBuf::from),
            jobs: jobs.into(),
            controllers_from: Ok(from.into()),
        }
    }

    #[test]
    fn a_daemon_alone_in_its_cgroup_moves_into_a_leaf_and_jobs_go_beside_it() {
        let o = OwnCgroup {
            only_ours: true,
            ..own("/sys/fs/cgroup/pool.service")
        };
        assert_eq!(
            choose("htcondor", &o),
            jobs(
                Some("/sys/fs/cgroup/pool.service/leaf"),
                "/sys/fs/cgroup/pool.service/htcondor",
                "/sys/fs/cgroup/pool.service"
            )
        );
    }

    #[test]
    fn under_systemd_s_delegated_leaf_jobs_go_to_the_sibling_as_in_htcondor() {
        let o = OwnCgroup {
            parent_free: true,
            ..own("/sys/fs/cgroup/system.slice/condor.service/leaf")
        };
        assert_eq!(
            choose("htcondor", &o),
            jobs(
                None,
                "/sys/fs/cgroup/system.slice/condor.service/htcondor",
                "/sys/fs/cgroup/system.slice/condor.service"
            )
        );
        // The same when we are alone there: no leaf inside the leaf.
        let alone = OwnCgroup {
            only_ours: true,
            ..o.clone()
        };
        assert_eq!(choose("htcondor", &alone), choose("htcondor", &o));
    }

    #[test]
    fn at_the_root_jobs_go_below_it_without_moving() {
        let o = own("/sys/fs/cgroup");
        assert_eq!(
            choose("htcondor", &o),
            jobs(None, "/sys/fs/cgroup/htcondor", "/sys/fs/cgroup")
        );
    }

    #[test]
    fn sharing_a_cgroup_whose_parent_is_free_gives_htcondor_s_sibling() {
        let o = OwnCgroup {
            parent_free: true,
            ..own("/sys/fs/cgroup/user.slice/session-3.scope")
        };
        assert_eq!(
            choose("ferro/jobs", &o),
            jobs(
                None,
                "/sys/fs/cgroup/user.slice/ferro/jobs",
                "/sys/fs/cgroup/user.slice"
            )
        );
    }

    #[test]
    fn sharing_a_cgroup_with_others_leaves_jobs_tracked_but_unlimited() {
        let o = own("/sys/fs/cgroup/user.slice/session-3.scope");
        match choose("htcondor", &o) {
            Layout::Jobs {
                leaf: None,
                jobs,
                controllers_from: Err(why),
            } => {
                assert_eq!(
                    jobs,
                    PathBuf::from("/sys/fs/cgroup/user.slice/session-3.scope/htcondor")
                );
                assert!(why.contains("not this daemon's"), "{why}");
            }
            l => panic!("{l:?}"),
        }
    }

    #[test]
    fn no_cgroups_without_base_cgroup_or_a_writable_cgroup() {
        let o = own("/sys/fs/cgroup/a");
        assert!(
            matches!(choose("", &o), Layout::NoCgroups(w) if w.contains("BASE_CGROUP is empty"))
        );
        assert!(
            matches!(choose("../x", &o), Layout::NoCgroups(w) if w.contains("not a cgroup name"))
        );
        assert!(matches!(choose("leaf", &o), Layout::NoCgroups(_)));
        let ro = OwnCgroup {
            own_writable: false,
            parent_writable: false,
            ..o
        };
        assert!(
            matches!(choose("htcondor", &ro), Layout::NoCgroups(w) if w.contains("not writable"))
        );
        // A leading slash is dropped, as HTCondor drops it.
        let alone = OwnCgroup {
            only_ours: true,
            ..own("/sys/fs/cgroup/a")
        };
        assert_eq!(
            choose("/htcondor", &alone),
            jobs(
                Some("/sys/fs/cgroup/a/leaf"),
                "/sys/fs/cgroup/a/htcondor",
                "/sys/fs/cgroup/a"
            )
        );
    }
}
