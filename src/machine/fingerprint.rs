//! The environment fingerprint: which machine, software and revision produced a result.
//!
//! A timing means little without the machine it came from. Every result records the CPU model
//! and core count, the OS and kernel, kgate's version, the git revision (with a dirty flag) and
//! the versions of the tools used, so that comparisons across machines can be refused or at
//! least flagged. Imported results take their device from the files instead
//! (`capture::device`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::machine::accelerator::Accelerator;

/// Where and with what a result was measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Fingerprint {
    /// CPU model name, as the OS reports it.
    pub cpu_model: String,
    /// Logical CPUs available to the process.
    pub cores: u32,
    /// CPU architecture, such as `x86_64`.
    pub arch: String,
    /// Operating system (distribution name and version where known).
    pub os: String,
    /// Kernel release.
    pub kernel: String,
    /// Version of kgate.
    pub kgate_version: String,
    /// The git revision measured, when the benchmarks live in a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRevision>,
    /// Versions of the external tools used (name → version string).
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// Accelerator model (for example `NVIDIA H200`), where one was detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// Accelerator driver version, where detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Accelerator clocks (such as `sm_max_mhz`, `mem_max_mhz`), where detected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clocks: BTreeMap<String, String>,
    /// The results were imported (`kgate import`) from files written elsewhere. The
    /// accelerator, driver, clocks and tools are then the ones the files name (absent where
    /// they name none, never this machine's), and the host fields are `unknown` (or what the
    /// files say) when the files name a device; see docs/accelerators.md.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imported: bool,
}

/// The value of a host field that the imported files do not name.
pub const UNKNOWN: &str = "unknown";

/// A git revision and whether the work tree had uncommitted changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GitRevision {
    /// Full commit hash of HEAD.
    pub commit: String,
    /// Tracked files differ from the commit.
    pub dirty: bool,
}

impl Fingerprint {
    /// Reads the fingerprint of this machine; `repo` is a folder inside the measured work tree.
    pub fn capture(repo: &Path) -> Fingerprint {
        Fingerprint::capture_host(repo).with_accelerator(crate::machine::accelerator::detect())
    }

    /// This machine's fingerprint without its accelerator (`nvidia-smi` is not asked): the
    /// base of imported results, whose device comes from the files.
    pub fn capture_host(repo: &Path) -> Fingerprint {
        Fingerprint {
            cpu_model: cpu_model(),
            cores: std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
            arch: std::env::consts::ARCH.to_string(),
            os: os_name(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease")
                .unwrap_or_else(|| std::env::consts::OS.to_string()),
            kgate_version: env!("CARGO_PKG_VERSION").to_string(),
            git: git_revision(repo),
            ..Fingerprint::default()
        }
    }

    fn with_accelerator(mut self, found: Option<Accelerator>) -> Fingerprint {
        if let Some(a) = found {
            self.accelerator = Some(a.model);
            self.driver = a.driver;
            self.clocks = a.clocks;
        }
        self
    }

    /// Fields that differ between two fingerprints, as `field: a ≠ b` lines. The revision and
    /// kgate's own version are expected to differ and are not listed.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, a: &str, b: &str| {
            if a != b {
                out.push(format!("{name}: `{a}` vs `{b}`"));
            }
        };
        cmp("cpu_model", &self.cpu_model, &other.cpu_model);
        cmp("cores", &self.cores.to_string(), &other.cores.to_string());
        cmp("arch", &self.arch, &other.arch);
        cmp("os", &self.os, &other.os);
        cmp("kernel", &self.kernel, &other.kernel);
        for (tool, version) in &self.tools {
            if let Some(v) = other.tools.get(tool) {
                cmp(&format!("tools.{tool}"), version, v);
            }
        }
        out
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

fn os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

/// HEAD's commit and the dirty flag, or `None` outside a git work tree.
pub fn git_revision(repo: &Path) -> Option<GitRevision> {
    let commit = git(repo, &["rev-parse", "--verify", "HEAD"])?;
    let status = git(repo, &["status", "--porcelain", "--untracked-files=no"]).unwrap_or_default();
    Some(GitRevision {
        commit,
        dirty: !status.is_empty(),
    })
}

fn git(repo: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The first line of `program --version`, for the tools map.
pub fn tool_version(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_describes_this_machine() {
        let f = Fingerprint::capture(Path::new("."));
        assert!(f.cores >= 1);
        assert_eq!(f.arch, std::env::consts::ARCH);
        assert_eq!(f.kgate_version, env!("CARGO_PKG_VERSION"));
        assert!(!f.cpu_model.is_empty());
    }

    #[test]
    fn differences_name_the_fields() {
        let cpu = |model: &str| Fingerprint {
            cpu_model: model.into(),
            cores: 2,
            ..Fingerprint::default()
        };
        let (a, b) = (cpu("A"), cpu("B"));
        assert_eq!(a.differences(&b), vec!["cpu_model: `A` vs `B`".to_string()]);
        assert!(a.differences(&a).is_empty());
    }
}
