//! Resource requests: `request_memory` and `request_disk` take a size with
//! an optional unit, everything else (`request_cpus`, `request_gpus`,
//! `request_<custom>`) is a ClassAd expression.
//!
//! A size is a number (sign and fraction allowed), optional blanks, and
//! optionally `K`, `M`, `G`, `T` or `P` (any case, an optional `B` after
//! it); without a unit memory is in MiB and disk in KiB. HTCondor turns it
//! into bytes and divides rounding up the C way, `(bytes + unit - 1) /
//! unit` truncated toward zero, so `0.5` MiB is 1 and `-5` is -4 (both
//! checked against HTCondor 24.0.24). Text that is not such a size (`2 *
//! 1024`, `1.2e3`) is kept as an expression.

use classad::{Expr, Value};

/// The unit a size without one is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BaseUnit {
    /// MiB (`request_memory`).
    Mega,
    /// KiB (`request_disk`).
    Kilo,
}

impl BaseUnit {
    fn bytes(self) -> i128 {
        match self {
            BaseUnit::Mega => 1 << 20,
            BaseUnit::Kilo => 1 << 10,
        }
    }
}

/// The size `text` names in `base` units, or `None` when it is not a
/// number with an optional unit.
pub(crate) fn parse_size(text: &str, base: BaseUnit) -> Option<i64> {
    let t = text.trim();
    let num_end = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(t.len(), |(i, _)| i);
    let (num, unit) = t.split_at(num_end);
    if !num.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let number: f64 = num.parse().ok()?;
    let unit = unit.trim_start();
    let unit_bytes: i128 = match unit.to_ascii_uppercase().as_str() {
        "" => base.bytes(),
        "K" | "KB" => 1 << 10,
        "M" | "MB" => 1 << 20,
        "G" | "GB" => 1 << 30,
        "T" | "TB" => 1 << 40,
        "P" | "PB" => 1 << 50,
        _ => return None,
    };
    let bytes = (number * unit_bytes as f64) as i128;
    let per = base.bytes();
    // C's integer division truncates toward zero, and so does Rust's.
    let value = (bytes + per - 1) / per;
    i64::try_from(value).ok()
}

/// The expression a request's value becomes: a size for memory and disk,
/// else the text as a ClassAd expression.
pub(crate) fn request_expr(text: &str, base: Option<BaseUnit>) -> Result<Expr, String> {
    if let Some(base) = base {
        if let Some(n) = parse_size(text, base) {
            return Ok(Expr::Lit(Value::Int(n)));
        }
    }
    classad::parse_expr(text.trim()).map_err(|e| e.message())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        let m = |t| parse_size(t, BaseUnit::Mega);
        assert_eq!(m("2GB"), Some(2048));
        assert_eq!(m("1.5G"), Some(1536));
        assert_eq!(m("100"), Some(100));
        assert_eq!(m("1.5"), Some(2));
        assert_eq!(m("0.5"), Some(1));
        assert_eq!(m("512K"), Some(1));
        assert_eq!(m("1T"), Some(1_048_576));
        assert_eq!(m("3 GB"), Some(3072));
        assert_eq!(m("1 m"), Some(1));
        assert_eq!(m("1.25M"), Some(2));
        assert_eq!(m("-5"), Some(-4));
        assert_eq!(m("0"), Some(0));
        assert_eq!(m("1.2e3"), None);
        assert_eq!(m("2 * 1024"), None);
        assert_eq!(m("1000000b"), None);
        assert_eq!(m("2KiB"), None);
        assert_eq!(m("MY.Foo"), None);
    }

    #[test]
    fn disk_sizes() {
        let d = |t| parse_size(t, BaseUnit::Kilo);
        assert_eq!(d("1G"), Some(1_048_576));
        assert_eq!(d("1024K"), Some(1024));
        assert_eq!(d("1.25M"), Some(1280));
        assert_eq!(d("0.5"), Some(1));
        assert_eq!(d("1T"), Some(1_073_741_824));
    }

    #[test]
    fn other_requests_are_expressions() {
        assert!(request_expr("1T", None).is_err());
        assert!(request_expr("2 * 1024", Some(BaseUnit::Mega)).is_ok());
        assert!(request_expr("1,5", Some(BaseUnit::Kilo)).is_err());
    }
}
