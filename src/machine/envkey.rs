//! Baseline keys: which fingerprint fields must match for two results to be comparable, and
//! which runner class a history belongs to.
//!
//! Comparing a run on one CPU or GPU model against a baseline from another measures the
//! hardware, not the change (a byte-identical binary "regressed" 13 % between two EPYC
//! generations in one peer's tracker). The fields that decide comparability are the CPU model,
//! core count and architecture, the OS, the accelerator with its driver and clocks, and the
//! tool and compiler versions. The kernel release, kgate's version and the git revision are
//! expected to change and only ever produce warnings.
//!
//! The machine part of those fields, hashed, is the runner class's key ([`class_key`]), the name
//! of the folder its history lives in. Tool versions stay out of it: which tools a run asks
//! depends on which benchmarks it ran (`--bench`, `--shard`, `--changed-since`) and on their
//! captures, so a key holding them named a different history for every selection.

use crate::machine::fingerprint::Fingerprint;

/// The fields that must match, as `(name, value)` pairs in a fixed order: the runner class's
/// ([`class_fields`]), then the versions of the tools the run asked.
pub fn key_fields(f: &Fingerprint) -> Vec<(String, String)> {
    let mut out = class_fields(f);
    for (name, v) in f
        .tools
        .iter()
        .filter(|(name, _)| !IGNORED_TOOLS.contains(&name.as_str()))
    {
        out.push((format!("tools.{name}"), v.clone()));
    }
    out
}

/// The fields of the machine a run was measured on (the runner class), in a fixed order: CPU
/// model, cores, architecture, OS, accelerator, driver and clocks.
pub fn class_fields(f: &Fingerprint) -> Vec<(String, String)> {
    let mut out = vec![
        ("cpu_model".to_string(), f.cpu_model.clone()),
        ("cores".to_string(), f.cores.to_string()),
        ("arch".to_string(), f.arch.clone()),
        ("os".to_string(), f.os.clone()),
        (
            "accelerator".to_string(),
            f.accelerator.clone().unwrap_or_default(),
        ),
        ("driver".to_string(), f.driver.clone().unwrap_or_default()),
    ];
    for (name, v) in &f.clocks {
        out.push((format!("clocks.{name}"), v.clone()));
    }
    out
}

/// Tools whose version cannot change a measurement (git only fetches the revision).
const IGNORED_TOOLS: [&str; 1] = ["git"];

/// The runner class's key, which names the folder of its history: `<arch>-<cores>c-<16 hex
/// digits>` (FNV-1a 64 of [`class_fields`], so it is the same on every platform and Rust
/// version). It never depends on which benchmarks ran or which tools they asked; for a run that
/// asked no tool but git it is the key earlier versions wrote ([`legacy_key`]).
pub fn class_key(f: &Fingerprint) -> String {
    hashed_key(f, class_fields(f))
}

/// The key versions before the runner-class key named histories by: [`key_fields`] hashed, the
/// tool versions included. Only for finding what they recorded.
pub fn legacy_key(f: &Fingerprint) -> String {
    hashed_key(f, key_fields(f))
}

fn hashed_key(f: &Fingerprint, fields: Vec<(String, String)>) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, value) in fields {
        for byte in name.bytes().chain([0]).chain(value.bytes()).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let arch: String = f
        .arch
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{arch}-{}c-{hash:016x}", f.cores)
}

/// Key fields that differ, as ``field: `a` vs `b` `` (a field absent on one side counts).
pub fn key_differences(base: &Fingerprint, head: &Fingerprint) -> Vec<String> {
    let a = key_fields(base);
    let b = key_fields(head);
    // A tool recorded on one side only was not asked on the other (older results record none),
    // so tools are compared where both sides know them.
    let both = |n: &str| {
        !n.starts_with("tools.") || (a.iter().any(|(x, _)| x == n) && b.iter().any(|(x, _)| x == n))
    };
    let mut names: Vec<&String> = a
        .iter()
        .chain(&b)
        .map(|(n, _)| n)
        .filter(|n| both(n))
        .collect();
    names.sort();
    names.dedup();
    let get = |side: &[(String, String)], name: &str| {
        side.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (get(&a, name), get(&b, name));
            (x != y).then(|| {
                let show = |v: &str| {
                    if v.is_empty() {
                        "(none)".to_string()
                    } else {
                        format!("`{v}`")
                    }
                };
                format!("{name}: {} vs {}", show(&x), show(&y))
            })
        })
        .collect()
}

/// Baseline and candidate come from environments whose key fields differ.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to compare results from different environments ({}); {hint}",
    differences.join("; ")
)]
pub struct FingerprintMismatch {
    pub differences: Vec<String>,
    pub hint: String,
}

/// Who allowed a comparison across environments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// `--allow-fingerprint-mismatch` on the command line.
    Flag,
    /// `gate.allow_fingerprint_mismatch: true` in the configuration.
    Config,
}

impl Allowance {
    /// The flag or key, as the user wrote it.
    pub fn as_str(self) -> &'static str {
        match self {
            Allowance::Flag => "--allow-fingerprint-mismatch was given",
            Allowance::Config => "the configuration sets `gate.allow_fingerprint_mismatch: true`",
        }
    }
}

/// Refuses differing environments unless allowed; when allowed, returns why, for the report's
/// one line on the environments (the comparison itself says which metrics still gate).
pub fn check_comparable(
    base: &Fingerprint,
    head: &Fingerprint,
    allowance: Option<Allowance>,
) -> Result<Option<Allowance>, FingerprintMismatch> {
    let differences = key_differences(base, head);
    if differences.is_empty() {
        return Ok(None);
    }
    if let Some(allowance) = allowance {
        return Ok(Some(allowance));
    }
    Err(FingerprintMismatch {
        differences,
        hint: "store a baseline measured on this runner class, compare against a revision with `--against REF`, or pass --allow-fingerprint-mismatch (or set `gate.allow_fingerprint_mismatch: true`) to compare anyway".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(cpu: &str) -> Fingerprint {
        Fingerprint {
            cpu_model: cpu.into(),
            cores: 8,
            arch: "x86_64".into(),
            os: "Debian".into(),
            kernel: "6.1".into(),
            ..Fingerprint::default()
        }
    }

    #[test]
    fn keys_depend_on_the_fields_that_matter_only() {
        let a = machine("EPYC 7763");
        let mut b = a.clone();
        b.kernel = "6.8".into();
        b.kgate_version = "9".into();
        assert_eq!(class_key(&a), class_key(&b));
        assert!(class_key(&a).starts_with("x86_64-8c-"));
        assert_eq!(class_key(&a).len(), "x86_64-8c-".len() + 16);
        let c = machine("EPYC 9V74");
        assert_ne!(class_key(&a), class_key(&c));
        let mut d = a.clone();
        d.accelerator = Some("NVIDIA H200".into());
        assert_ne!(class_key(&a), class_key(&d));
        let mut e = a.clone();
        e.tools.insert("git".into(), "git version 2.39".into());
        assert_eq!(class_key(&a), class_key(&e));
        assert_eq!(
            legacy_key(&a),
            legacy_key(&e),
            "git's version never mattered"
        );
        e.tools.insert("cargo".into(), "cargo 1.89.0".into());
        e.tools.insert("valgrind".into(), "valgrind-3.19.0".into());
        let class = class_key(&a);
        let same = "which tools a run asked does not name another runner class";
        assert_eq!(class, class_key(&e), "{same}");
        assert_ne!(legacy_key(&a), legacy_key(&e), "it did before");
        let kept = "a run that asked no tool keeps the folder it had";
        assert_eq!(class, legacy_key(&a), "{kept}");
        let one_side = key_differences(&a, &e);
        assert!(one_side.is_empty(), "a tool recorded on one side only");
        let mut f = e.clone();
        f.tools.insert("cargo".into(), "cargo 1.90.0".into());
        assert_eq!(
            key_differences(&e, &f),
            vec!["tools.cargo: `cargo 1.89.0` vs `cargo 1.90.0`".to_string()],
            "tool versions still decide comparability"
        );
    }

    /// The key of the fixture machine as earlier versions computed it, pinned: folders written
    /// by them must keep being found.
    #[test]
    fn class_keys_of_tool_less_runs_are_the_keys_history_folders_already_have() {
        let a = machine("EPYC 7763");
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        #[rustfmt::skip]
        let fields = [("cpu_model", "EPYC 7763"), ("cores", "8"), ("arch", "x86_64"), ("os", "Debian"),
                      ("accelerator", ""), ("driver", "")];
        for (name, value) in fields {
            for byte in name.bytes().chain([0]).chain(value.bytes()).chain([0]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        assert_eq!(class_key(&a), format!("x86_64-8c-{hash:016x}"));
    }

    #[test]
    fn mismatches_are_refused_by_name_unless_allowed() {
        let a = machine("EPYC 7763");
        let mut b = machine("EPYC 9V74");
        b.driver = Some("570.86".into());
        let err = check_comparable(&a, &b, None).unwrap_err();
        assert_eq!(
            err.differences,
            vec![
                "cpu_model: `EPYC 7763` vs `EPYC 9V74`".to_string(),
                "driver: (none) vs `570.86`".to_string()
            ]
        );
        assert_contains!(err.to_string(), "--allow-fingerprint-mismatch");
        let allowed = Some(Allowance::Config);
        assert_eq!(check_comparable(&a, &b, allowed).unwrap(), allowed);
        assert_eq!(check_comparable(&a, &a, None).unwrap(), None);
    }
}
