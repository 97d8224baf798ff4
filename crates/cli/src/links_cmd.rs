//! `ferrocondor install-links DIR`: links named after HTCondor's tools
//! (`condor_q`, `condor_submit`, ...) to this program, which acts as the
//! tool its name says (`args::as_tool`), so that scripts written for
//! HTCondor run unchanged.

use std::io::Write;
use std::path::Path;

use crate::args::TOOLS;
use crate::errors::{Error, Outcome};

/// `ferrocondor install-links DIR`: a link to this program for each tool
/// in [`TOOLS`]; a link already there to this program is kept, any
/// other file of that name is left alone and named.
pub fn install(dir: &Path, out: &mut dyn Write) -> Result<Outcome, Error> {
    let me = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Error::Daemon(format!("where is this program? {e}")))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::Daemon(format!("{}: {e}", dir.display())))?;
    let mut refused = Vec::new();
    for (tool, _) in TOOLS {
        let link = dir.join(tool);
        match std::fs::read_link(&link) {
            Ok(target) if target == me => continue,
            Ok(_) => {
                std::fs::remove_file(&link)
                    .map_err(|e| Error::Daemon(format!("{}: {e}", link.display())))?;
            }
            Err(_) if link.symlink_metadata().is_ok() => {
                refused.push(link.display().to_string());
                continue;
            }
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&me, &link)
            .map_err(|e| Error::Daemon(format!("{}: {e}", link.display())))?;
    }
    writeln!(
        out,
        "links to {} for {} tools in {}",
        me.display(),
        TOOLS.len() - refused.len(),
        dir.display()
    )?;
    if !refused.is_empty() {
        return Err(Error::Daemon(format!(
            "not replaced (not links): {}",
            refused.join(", ")
        )));
    }
    Ok(Outcome::Success)
}
