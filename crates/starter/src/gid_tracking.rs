//! USE_GID_PROCESS_TRACKING: a supplementary group from the range
//! MIN_TRACKING_GID..=MAX_TRACKING_GID marks every process of one job.
//! Only root may change a process's group list, so no process of the job
//! can shed the mark, whatever session it makes; the starter finds the
//! job's processes by it (`/proc/<pid>/status`, `Groups:`).
//!
//! Pure: the settings from the configuration's text, and which group a new
//! job gets given those in use. The execute point keeps which job holds
//! which group (one per running job, never given to another while the
//! job's run lasts).

use std::collections::BTreeSet;
use std::fmt;

/// The tracking groups an execute point hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackingGids {
    pub min: u32,
    pub max: u32,
}

/// A configuration HTCondor would refuse (its procd EXCEPTs): the
/// parameter at fault and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GidRangeError {
    pub param: &'static str,
    pub message: String,
}

impl fmt::Display for GidRangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message)
    }
}

impl std::error::Error for GidRangeError {}

/// The largest range looked at (HTCondor needs one group per slot).
const MOST: u32 = 65_536;

impl TrackingGids {
    /// From USE_GID_PROCESS_TRACKING's MIN_TRACKING_GID and
    /// MAX_TRACKING_GID (their texts, `None` when not set). `is_group`
    /// says whether a gid names a group of the system: a range that takes
    /// one in would make that group's processes a job's.
    pub fn from_config(
        min: Option<&str>,
        max: Option<&str>,
        is_group: impl Fn(u32) -> Option<String>,
    ) -> Result<TrackingGids, GidRangeError> {
        let read = |param: &'static str, text: Option<&str>| -> Result<u32, GidRangeError> {
            let text = text
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or(GidRangeError {
                    param,
                    message: "USE_GID_PROCESS_TRACKING is true, but this is not set \
                          (the range of group ids set aside for tracking jobs)"
                        .into(),
                })?;
            match text.parse::<u32>() {
                Ok(0) => Err(GidRangeError {
                    param,
                    message: "USE_GID_PROCESS_TRACKING is true, but this is 0 \
                              (group 0 is root's)"
                        .into(),
                }),
                Ok(g) => Ok(g),
                Err(_) => Err(GidRangeError {
                    param,
                    message: format!("`{text}` is not a group id (a whole number from 1)"),
                }),
            }
        };
        let min = read("MIN_TRACKING_GID", min)?;
        let max = read("MAX_TRACKING_GID", max)?;
        if min > max {
            return Err(GidRangeError {
                param: "MAX_TRACKING_GID",
                message: format!(
                    "the range is empty: MAX_TRACKING_GID ({max}) is below MIN_TRACKING_GID ({min})"
                ),
            });
        }
        if max - min >= MOST {
            return Err(GidRangeError {
                param: "MAX_TRACKING_GID",
                message: format!(
                    "the range {min}-{max} holds more than {MOST} groups (one per slot is enough)"
                ),
            });
        }
        if let Some((gid, name)) = (min..=max).find_map(|g| is_group(g).map(|n| (g, n))) {
            return Err(GidRangeError {
                param: "MIN_TRACKING_GID",
                message: format!(
                    "the range {min}-{max} overlaps the system's group `{name}` ({gid}): \
                     its processes would be taken for a job's; set aside ids no group uses"
                ),
            });
        }
        Ok(TrackingGids { min, max })
    }

    /// How many jobs can run at once.
    pub fn len(&self) -> usize {
        (self.max - self.min) as usize + 1
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The group for a new job: the lowest of the range that no running
    /// job holds; `Err` (HTCondor's "no more tracking GIDs") when every
    /// one is taken.
    pub fn next_free(&self, in_use: &BTreeSet<u32>) -> Result<u32, String> {
        (self.min..=self.max)
            .find(|g| !in_use.contains(g))
            .ok_or_else(|| {
                format!(
                    "no more tracking GIDs: all {} of MIN_TRACKING_GID..MAX_TRACKING_GID \
                     ({}-{}) are held by running jobs",
                    self.len(),
                    self.min,
                    self.max
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: u32) -> Option<String> {
        None
    }

    #[test]
    fn the_manual_s_range_gives_eight_groups_lowest_free_first() {
        let r = TrackingGids::from_config(Some("750"), Some("757"), none).unwrap();
        assert_eq!(r.len(), 8);
        let mut used = BTreeSet::new();
        for want in 750..=757 {
            let g = r.next_free(&used).unwrap();
            assert_eq!(g, want);
            used.insert(g);
        }
        let e = r.next_free(&used).unwrap_err();
        assert!(e.contains("no more tracking GIDs"), "{e}");
        used.remove(&752);
        assert_eq!(r.next_free(&used), Ok(752), "a freed group is given again");
    }

    #[test]
    fn a_missing_empty_or_overlapping_range_is_an_error_naming_the_parameter() {
        let e = TrackingGids::from_config(None, Some("757"), none).unwrap_err();
        assert_eq!(e.param, "MIN_TRACKING_GID");
        assert!(e.to_string().contains("not set"), "{e}");
        let e = TrackingGids::from_config(Some("750"), Some(" "), none).unwrap_err();
        assert_eq!(e.param, "MAX_TRACKING_GID");
        let e = TrackingGids::from_config(Some("0"), Some("7"), none).unwrap_err();
        assert_eq!(e.param, "MIN_TRACKING_GID");
        let e = TrackingGids::from_config(Some("x"), Some("7"), none).unwrap_err();
        assert!(e.to_string().contains("`x` is not a group id"), "{e}");
        let e = TrackingGids::from_config(Some("757"), Some("750"), none).unwrap_err();
        assert_eq!(e.param, "MAX_TRACKING_GID");
        assert!(e.message.contains("empty"), "{e}");
        let e = TrackingGids::from_config(Some("1"), Some("4000000"), none).unwrap_err();
        assert!(e.message.contains("more than"), "{e}");
        let staff = |g: u32| (g == 753).then(|| "staff".to_string());
        let e = TrackingGids::from_config(Some("750"), Some("757"), staff).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "MIN_TRACKING_GID: the range 750-757 overlaps the system's group `staff` (753)"
            ),
            "{e}"
        );
    }
}
