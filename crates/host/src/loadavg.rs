//! The machine's load average (HTCondor's `TotalLoadAvg`): the first,
//! one-minute figure of `/proc/loadavg`, which is what HTCondor's
//! `sysapi_load_avg` reads on Linux.

use crate::{HostError, Root};

/// The one-minute load average in `/proc/loadavg` text
/// (`0.52 0.58 0.59 2/123 4567`).
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// Reads `/proc/loadavg` under `root`.
pub fn read_loadavg(root: &Root) -> Result<f64, HostError> {
    let text = root.read("proc/loadavg")?;
    parse_loadavg(&text).ok_or_else(|| {
        HostError::new(
            root.path("proc/loadavg"),
            format!(
                "expected the load average as a number first, found `{}`",
                text.trim()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_figure() {
        assert_eq!(parse_loadavg("0.52 0.58 0.59 2/123 4567\n"), Some(0.52));
        assert_eq!(parse_loadavg("x 1 2"), None);
        assert_eq!(parse_loadavg(""), None);
    }
}
