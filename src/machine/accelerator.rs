//! Accelerator detection for the environment fingerprint.
//!
//! A GPU timing compared across GPU models, drivers or clock settings measures the hardware, not
//! the change, so the fingerprint records them where a vendor tool can tell. Only NVIDIA's
//! `nvidia-smi` is queried today; without it the fields stay absent rather than guessed.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// What `nvidia-smi` reports about the first GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accelerator {
    pub model: String,
    pub driver: Option<String>,
    pub clocks: BTreeMap<String, String>,
}

/// The query `detect` sends; `parse_nvidia_smi` reads its answer.
pub const NVIDIA_SMI_QUERY: &str =
    "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.memory,clocks.applications.graphics";

/// Queries `nvidia-smi` when it is installed; `None` otherwise or when it fails.
pub fn detect() -> Option<Accelerator> {
    let out = Command::new("nvidia-smi")
        .args([NVIDIA_SMI_QUERY, "--format=csv,noheader,nounits"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
}

/// Parses the first line of `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`.
/// Fields reported as `[N/A]` or `[Not Supported]` are left out.
pub fn parse_nvidia_smi(text: &str) -> Option<Accelerator> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let known = |i: usize| {
        let v: &str = fields.get(i)?;
        (!v.is_empty() && !v.starts_with('[')).then(|| v.to_string())
    };
    let model = known(0)?;
    let mut clocks = BTreeMap::new();
    for (i, name) in [(2, "sm_max_mhz"), (3, "mem_max_mhz"), (4, "sm_app_mhz")] {
        clocks.extend(known(i).map(|v| (name.to_string(), v)));
    }
    Some(Accelerator {
        model,
        driver: known(1),
        clocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_query_answer_and_drops_unsupported_fields() {
        let a = parse_nvidia_smi("NVIDIA H200, 570.86.15, 1980, 3201, [N/A]\n").unwrap();
        assert_eq!(a.model, "NVIDIA H200");
        assert_eq!(a.driver.as_deref(), Some("570.86.15"));
        assert_eq!(a.clocks.get("sm_max_mhz").map(String::as_str), Some("1980"));
        let mem = a.clocks.get("mem_max_mhz").map(String::as_str);
        assert_eq!(mem, Some("3201"));
        assert!(!a.clocks.contains_key("sm_app_mhz"));
        assert!(parse_nvidia_smi("\n").is_none());
        assert!(parse_nvidia_smi("[N/A], 1").is_none());
    }
}
