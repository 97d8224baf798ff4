//! Free disk under `EXECUTE`, as HTCondor's `sysapi_disk_space` measures
//! it: the blocks an unprivileged user may still write (`f_bavail`, not
//! `f_bfree`, which counts root's reserve) times the fragment size, in
//! KiB.

use std::path::Path;

use crate::HostError;

/// Free KiB on the file system that holds `dir`.
pub fn free_disk_kib(dir: &Path) -> Result<i64, HostError> {
    let st = rustix::fs::statvfs(dir)
        .map_err(|e| HostError::new(dir, format!("cannot measure free space (statvfs): {e}")))?;
    let bytes = u128::from(st.f_bavail) * u128::from(st.f_frsize);
    Ok(i64::try_from(bytes / 1024).unwrap_or(i64::MAX))
}
