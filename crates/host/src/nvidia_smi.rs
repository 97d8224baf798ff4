//! What `nvidia-smi` prints, read into [`GpuDevice`]s: the CSV of
//! `--query-gpu=... --format=csv`, the XML of `-q -x`, the list of `-L`
//! and the banner of a plain `nvidia-smi`. Pure parsers; running the
//! program is [`crate::gpu_discovery`]'s job.
//!
//! nvidia-smi lists whole GPUs; MIG instances are not read.

use std::fmt;

/// One GPU, with what nvidia-smi told about it (`None`: not told, or
/// `[N/A]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuDevice {
    /// nvidia-smi's index (its order, which is CUDA's by PCI bus).
    pub index: u32,
    /// `GPU-90b2dfd1-480c-2eb4-b6ab-c0f0d728c40b`.
    pub uuid: String,
    pub name: Option<String>,
    /// Total memory, MiB.
    pub memory_mib: Option<u64>,
    /// CUDA compute capability (major, minor).
    pub capability: Option<(u32, u32)>,
    /// As nvidia-smi prints it: `00000000:00:06.0`.
    pub pci_bus_id: Option<String>,
    pub ecc_enabled: Option<bool>,
    /// The highest SM clock, MHz.
    pub max_sm_clock_mhz: Option<u32>,
    /// The kernel driver's version (`580.159.04`).
    pub driver_version: Option<String>,
}

/// Output that could not be read: the 1-based line and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// nvidia-smi's way of saying "no value".
fn given(v: &str) -> Option<&str> {
    let v = v.trim();
    (!v.is_empty() && !v.starts_with('[') && v != "N/A").then_some(v)
}

/// The number a value starts with (`81559 MiB` is 81559).
fn leading_number(v: &str) -> Option<u64> {
    given(v)?.split_whitespace().next()?.parse().ok()
}

fn capability(v: &str) -> Option<(u32, u32)> {
    let (a, b) = given(v)?.split_once('.')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

fn enabled(v: &str) -> Option<bool> {
    match given(v)? {
        v if v.eq_ignore_ascii_case("enabled") => Some(true),
        v if v.eq_ignore_ascii_case("disabled") => Some(false),
        _ => None,
    }
}

/// The fields asked of `nvidia-smi --query-gpu` for discovery.
pub const QUERY_FIELDS: &str =
    "index,uuid,name,memory.total,compute_cap,driver_version,pci.bus_id,ecc.mode.current,clocks.max.sm";

/// Reads `nvidia-smi --query-gpu=<fields> --format=csv`. The header line
/// says which column is which (`memory.total [MiB]`), so any order and any
/// subset with a `uuid` column will do; unknown columns are ignored.
pub fn parse_query_csv(text: &str) -> Result<Vec<GpuDevice>, ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Ok(Vec::new());
    };
    let columns: Vec<String> = header
        .split(',')
        .map(|c| {
            c.split('[')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    if !columns.iter().any(|c| c == "uuid") {
        return Err(ParseError {
            line: 1,
            message: format!(
                "expected a header line naming a `uuid` column, found `{}`",
                header.trim()
            ),
        });
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != columns.len() {
            return Err(ParseError {
                line: i + 1,
                message: format!(
                    "expected {} comma-separated fields as the header has, found {}",
                    columns.len(),
                    fields.len()
                ),
            });
        }
        let mut d = GpuDevice {
            index: out.len() as u32,
            ..GpuDevice::default()
        };
        for (col, v) in columns.iter().zip(&fields) {
            match col.as_str() {
                "index" => {
                    if let Some(n) = leading_number(v) {
                        d.index = n as u32;
                    }
                }
                "uuid" => d.uuid = v.to_string(),
                "name" => d.name = given(v).map(str::to_string),
                "memory.total" => d.memory_mib = leading_number(v),
                "compute_cap" => d.capability = capability(v),
                "driver_version" => d.driver_version = given(v).map(str::to_string),
                "pci.bus_id" => d.pci_bus_id = given(v).map(str::to_string),
                "ecc.mode.current" => d.ecc_enabled = enabled(v),
                "clocks.max.sm" => d.max_sm_clock_mhz = leading_number(v).map(|n| n as u32),
                _ => {}
            }
        }
        if !d.uuid.starts_with("GPU-") {
            return Err(ParseError {
                line: i + 1,
                message: format!("expected a GPU UUID (`GPU-...`), found `{}`", d.uuid),
            });
        }
        out.push(d);
    }
    Ok(out)
}

/// What `nvidia-smi -q -x` says about the machine and its GPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XmlReport {
    /// The kernel driver's version.
    pub driver_version: Option<String>,
    /// The highest CUDA version the driver supports (`13.0`).
    pub cuda_version: Option<String>,
    /// The GPUs, without their compute capability (the XML does not give
    /// it).
    pub devices: Vec<GpuDevice>,
}

/// Reads the XML of `nvidia-smi -q -x`.
pub fn parse_xml(text: &str) -> Result<XmlReport, ParseError> {
    use quick_xml::events::Event;

    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let line_at = |pos: u64| text[..(pos as usize).min(text.len())].matches('\n').count() + 1;
    let mut report = XmlReport::default();
    let mut path: Vec<String> = Vec::new();
    let mut value = String::new();
    loop {
        let event = reader.read_event().map_err(|e| ParseError {
            line: line_at(reader.error_position()),
            message: format!("not nvidia-smi's XML: {e}"),
        })?;
        match event {
            Event::Start(e) => {
                path.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                value.clear();
                if path.len() == 2 && path[0] == "nvidia_smi_log" && path[1] == "gpu" {
                    report.devices.push(GpuDevice {
                        index: report.devices.len() as u32,
                        driver_version: report.driver_version.clone(),
                        ..GpuDevice::default()
                    });
                }
            }
            Event::Text(t) => value.push_str(&t.decode().unwrap_or_default()),
            Event::GeneralRef(r) => {
                let name = r.decode().unwrap_or_default();
                match r.resolve_char_ref() {
                    Ok(Some(c)) => value.push(c),
                    _ => value.push_str(match name.as_ref() {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    }),
                }
            }
            Event::End(_) => {
                let p: Vec<&str> = path.iter().map(String::as_str).collect();
                match p.as_slice() {
                    ["nvidia_smi_log", "driver_version"] => {
                        report.driver_version = given(&value).map(str::to_string)
                    }
                    ["nvidia_smi_log", "cuda_version"] => {
                        report.cuda_version = given(&value).map(str::to_string)
                    }
                    ["nvidia_smi_log", "gpu", rest @ ..] => {
                        if let Some(d) = report.devices.last_mut() {
                            match rest {
                                ["product_name"] => d.name = given(&value).map(str::to_string),
                                ["uuid"] => d.uuid = value.trim().to_string(),
                                ["pci", "pci_bus_id"] => {
                                    d.pci_bus_id = given(&value).map(str::to_string)
                                }
                                ["fb_memory_usage", "total"] => {
                                    d.memory_mib = leading_number(&value)
                                }
                                ["ecc_mode", "current_ecc"] => d.ecc_enabled = enabled(&value),
                                ["max_clocks", "sm_clock"] => {
                                    d.max_sm_clock_mhz = leading_number(&value).map(|n| n as u32)
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                path.pop();
                value.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !path.is_empty() || (report.devices.is_empty() && !text.contains("nvidia_smi_log")) {
        return Err(ParseError {
            line: line_at(text.len() as u64),
            message: "expected an <nvidia_smi_log> document".into(),
        });
    }
    if let Some(d) = report.devices.iter().find(|d| !d.uuid.starts_with("GPU-")) {
        return Err(ParseError {
            line: 1,
            message: format!("GPU {} has no UUID (`GPU-...`): `{}`", d.index, d.uuid),
        });
    }
    Ok(report)
}

/// Reads `nvidia-smi -L` (`GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`);
/// the indented MIG lines are skipped.
pub fn parse_list(text: &str) -> Result<Vec<GpuDevice>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with(char::is_whitespace) {
            continue;
        }
        let err = || ParseError {
            line: i + 1,
            message: format!("expected `GPU <n>: <name> (UUID: GPU-...)`, found `{line}`"),
        };
        let rest = line.strip_prefix("GPU ").ok_or_else(err)?;
        let (index, rest) = rest.split_once(':').ok_or_else(err)?;
        let (name, uuid) = rest.rsplit_once("(UUID:").ok_or_else(err)?;
        let uuid = uuid.trim().trim_end_matches(')').trim();
        if !uuid.starts_with("GPU-") {
            return Err(err());
        }
        out.push(GpuDevice {
            index: index.trim().parse().map_err(|_| err())?,
            uuid: uuid.to_string(),
            name: Some(name.trim().to_string()),
            ..GpuDevice::default()
        });
    }
    Ok(out)
}

/// The driver and CUDA versions in the banner of a plain `nvidia-smi`
/// (`| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |`).
pub fn parse_banner(text: &str) -> (Option<String>, Option<String>) {
    let after = |key: &str| -> Option<String> {
        let i = text.find(key)? + key.len();
        text[i..]
            .split_whitespace()
            .next()
            .filter(|v| *v != "|")
            .map(str::to_string)
    };
    (after("Driver Version:"), after("CUDA Version:"))
}

/// The CUDA driver version as CUDA's `cuDriverGetVersion` gives it
/// (`1000 * major + 10 * minor`: `13.0` is 13000, `12.2` is 12020).
pub fn cuda_driver_version(cuda_version: &str) -> Option<u32> {
    let (major, minor) = cuda_version
        .trim()
        .split_once('.')
        .unwrap_or((cuda_version.trim(), "0"));
    Some(major.parse::<u32>().ok()? * 1000 + minor.parse::<u32>().ok()? * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_and_missing_values() {
        let t = "uuid, name, memory.total [MiB], compute_cap, ecc.mode.current\n\
                 GPU-aaaaaaaa-1, Tesla T4, 15360 MiB, 7.5, [N/A]\n";
        let d = &parse_query_csv(t).unwrap()[0];
        assert_eq!(d.index, 0);
        assert_eq!(d.capability, Some((7, 5)));
        assert_eq!(d.memory_mib, Some(15360));
        assert_eq!(d.ecc_enabled, None);
        assert_eq!(parse_query_csv("").unwrap(), []);
        assert_eq!(
            parse_query_csv("name\nx\n").unwrap_err().to_string(),
            "line 1: expected a header line naming a `uuid` column, found `name`"
        );
        assert_eq!(
            parse_query_csv("uuid, name\nGPU-1\n")
                .unwrap_err()
                .to_string(),
            "line 2: expected 2 comma-separated fields as the header has, found 1"
        );
    }

    #[test]
    fn cuda_versions() {
        assert_eq!(cuda_driver_version("13.0"), Some(13000));
        assert_eq!(cuda_driver_version("12.2"), Some(12020));
        assert_eq!(cuda_driver_version("11"), Some(11000));
        assert_eq!(cuda_driver_version("x"), None);
    }

    #[test]
    fn broken_xml_names_a_line() {
        let e = parse_xml("<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>\n").unwrap_err();
        assert!(e.message.starts_with("not nvidia-smi's XML"), "{e}");
        assert!(parse_xml("hello").is_err());
    }
}
