//! Device profiles: the clocks, peak rates and counter definitions that turn raw counter
//! increments into utilization.
//!
//! A utilization is only as good as the clock and peak it divides by, so these numbers are
//! data, not code: YAML files shipped with kgate (`profiles/*.yaml`), each number with the
//! source it was taken from, which `kgate.yaml` can select (`device:`), override and extend
//! (`profiles:`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A number and where it comes from (a datasheet, a profiler's source file, a measurement).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sourced {
    pub value: f64,
    /// Where the number was taken from.
    pub source: String,
}

/// One hardware counter a device exposes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    /// The profiler's index for the counter (TPU TensorCore counter index), for reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// What one increment counts: `cycles` (a busy-cycle counter, which gives a utilization),
    /// `beats` or `bytes` (memory traffic, which gives a bandwidth), or anything else.
    #[serde(default)]
    pub unit: String,
    /// Parallel pipes the counter sums over (its utilization divides by them; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lanes: Option<u32>,
    /// Bytes per increment of a `beats` counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_unit: Option<f64>,
    /// Which way is better for the counter's utilization: `higher` for busy counters
    /// (default), `lower` for stall counters such as `sync_wait`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<crate::model::metric::Direction>,
    /// Other names the counter goes by in profiler traces (XProf's `COUNT_MXU_BUSY_1` tracks,
    /// the Perf Counters tool's register names), matched without regard to case, whole or up
    /// to a `.` that starts the trace's value name (`COUNT_MXU_BUSY_1.TC Stats`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// A named formula over counter increments (XProf's utilization formulas and the like).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Formula {
    /// Arithmetic over counter names (evaluated by the `exmex` crate).
    pub expr: String,
    #[serde(default)]
    pub unit: String,
    /// Where the formula comes from.
    #[serde(default)]
    pub source: String,
    /// Which way is better (default: `higher` for a `%`, `lower` otherwise; `lower` for a
    /// share of idle or stalled cycles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<crate::model::metric::Direction>,
    /// `expr` parsed, the first time it is asked for ([`Formula::parsed`]).
    #[serde(skip)]
    #[schemars(skip)]
    parsed: Compiled<Option<exmex::FlatEx<f64>>>,
}

impl Formula {
    /// `expr` parsed once, however many windows it is evaluated over; `None` where it does
    /// not parse.
    pub fn parsed(&self) -> Option<&exmex::FlatEx<f64>> {
        self.parsed
            .0
            .get_or_init(|| exmex::parse::<f64>(&self.expr).ok())
            .as_ref()
    }
}

/// A value compiled from a profile's text (a formula, a regular expression) the first time it
/// is needed and kept with it: a trace import derives utilization for thousands of kernels
/// under one profile. Not part of the profile's format, and equal whatever it holds, as it is
/// a function of the text beside it. That text is set once: a profile is deserialized whole,
/// after its `base` is merged in as JSON ([`resolve`]), and nothing edits `expr` or `core`
/// afterwards; code that wants another text builds a new `Formula` or `RegisterNames`.
#[derive(Debug, Clone)]
struct Compiled<T>(std::sync::OnceLock<T>);

impl<T> Default for Compiled<T> {
    fn default() -> Self {
        Compiled(std::sync::OnceLock::new())
    }
}

impl<T> PartialEq for Compiled<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// How a device's full register names map to counter keys: the part after the last
/// `after` marker, without one of the `strip` prefixes, compared without regard to case with
/// the keys and aliases (which are stripped the same way); `core` is a regular expression
/// whose first group is the core (TPU v7x: the die, `DIE1_`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterNames {
    /// The marker the counter's own name follows (`UNPRIVILEGED_`).
    #[serde(default)]
    pub after: String,
    /// Prefixes the counter's name drops (`COUNT_`).
    #[serde(default)]
    pub strip: Vec<String>,
    /// A regular expression whose first capture group is the core number (`DIE(\d+)_`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<String>,
    /// Where the naming scheme comes from.
    #[serde(default)]
    pub source: String,
    /// `core` compiled, the first time it is asked for.
    #[serde(skip)]
    #[schemars(skip)]
    core_rule: Compiled<Option<regex::Regex>>,
}

/// A device's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The clock busy-cycle counters count in, in Hz.
    pub clock_hz: Sourced,
    /// Peak memory (HBM or DRAM) bandwidth in bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth: Option<Sourced>,
    /// Peak FLOP rates per precision (`bf16`, `fp8`, `fp32`…), in FLOP per second.
    #[serde(default)]
    pub flops: BTreeMap<String, Sourced>,
    /// Units per core (MXUs, SMs, CUs).
    #[serde(default)]
    pub units: BTreeMap<String, Sourced>,
    /// Hardware counters one pass can collect; absent where no limit is documented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_per_pass: Option<Sourced>,
    /// Shortest periodic sampling interval, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_floor_ns: Option<Sourced>,
    /// Counters by the name benchmarks report them under.
    #[serde(default)]
    pub counters: BTreeMap<String, CounterSpec>,
    /// Derived metrics computed from counter increments, by name. A formula may use
    /// `core_cycles`: the first of `cycle_counters` the window has.
    #[serde(default)]
    pub formulas: BTreeMap<String, Formula>,
    /// Counter keys that measure the core's own cycles, preferred first: a busy counter's
    /// utilization divides by the first one measured in the same window (XProf's
    /// denominator), else by the window's time × `clock_hz`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cycle_counters: Vec<String>,
    /// How full register names map to counter keys (absent: names match keys and aliases
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register_names: Option<RegisterNames>,
}

impl DeviceProfile {
    /// The profile's key for a counter a benchmark or trace reported as `name`: the name
    /// itself when it is a key, else the key that it, or its part before one of its `.`s (a
    /// trace names a track's values `track.value`), is or has as an alias (aliases without
    /// regard to case). `None` when the profile does not know the counter.
    pub fn counter_key<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        let prefixes = name.match_indices('.').map(|(i, _)| &name[..i]);
        let candidates = std::iter::once(name).chain(prefixes);
        for candidate in candidates {
            if let Some((key, _)) = self.counters.get_key_value(candidate) {
                return Some(key.as_str());
            }
            let aliased = self.counters.iter().find(|(_, spec)| {
                spec.aliases
                    .iter()
                    .any(|alias| alias.eq_ignore_ascii_case(candidate))
            });
            if let Some((key, _)) = aliased {
                return Some(key.as_str());
            }
            // The register naming rule, applied to the name and to keys and aliases alike.
            if let Some(rule) = &self.register_names {
                let short = rule.short(candidate);
                let found = self.counters.iter().find(|(key, spec)| {
                    key.eq_ignore_ascii_case(short)
                        || spec
                            .aliases
                            .iter()
                            .any(|alias| rule.short(alias).eq_ignore_ascii_case(short))
                });
                if let Some((key, _)) = found {
                    return Some(key.as_str());
                }
            }
        }
        None
    }

    /// The core a register name names, by the profile's `register_names.core` rule.
    pub fn register_core(&self, name: &str) -> Option<u32> {
        core_of(self.register_core_regex()?, name)
    }

    /// The compiled `register_names.core` rule (checked when the profile is resolved),
    /// compiled once.
    pub fn register_core_regex(&self) -> Option<&regex::Regex> {
        let names = self.register_names.as_ref()?;
        names
            .core_rule
            .0
            .get_or_init(|| regex::Regex::new(names.core.as_deref()?).ok())
            .as_ref()
    }
}

/// The core a register name names by a compiled `register_names.core` rule.
pub fn core_of(rule: &regex::Regex, name: &str) -> Option<u32> {
    rule.captures(name)?.get(1)?.as_str().parse().ok()
}

impl DeviceProfile {
    fn check(self) -> Result<DeviceProfile, ProfileError> {
        if let Some(rule) = &self.register_names
            && !(rule.after.is_ascii() && rule.strip.iter().all(|s| s.is_ascii()))
        {
            return Err(ProfileError::Invalid {
                name: self.name.clone(),
                message: "`register_names.after` and `strip` must be ASCII, as register names are"
                    .into(),
            });
        }
        if let Some(pattern) = self.register_names.as_ref().and_then(|r| r.core.as_deref()) {
            let re = regex::Regex::new(pattern).map_err(|e| ProfileError::Invalid {
                name: self.name.clone(),
                message: format!("`register_names.core` is not a regular expression: {e}"),
            })?;
            if re.captures_len() < 2 {
                return Err(ProfileError::Invalid {
                    name: self.name.clone(),
                    message: format!(
                        "`register_names.core` (`{pattern}`) needs a capture group for the core number, as in `DIE(\\d+)_`"
                    ),
                });
            }
        }
        Ok(self)
    }
}

impl RegisterNames {
    /// A register name's own part: after the last `after` marker (the whole name without
    /// one), without the first `strip` prefix it has.
    pub fn short<'a>(&self, name: &'a str) -> &'a str {
        let mut rest = name;
        let (bytes, after) = (name.as_bytes(), self.after.as_bytes());
        // Without allocating: this runs for every reading of a profile's tens of thousands of
        // registers. An ASCII marker matches only at character boundaries.
        if !after.is_empty()
            && after.is_ascii()
            && bytes.len() >= after.len()
            && let Some(i) = (0..=bytes.len() - after.len())
                .rev()
                .find(|&i| bytes[i..i + after.len()].eq_ignore_ascii_case(after))
        {
            rest = &name[i + after.len()..];
        }
        for prefix in &self.strip {
            if rest.len() > prefix.len()
                && rest.is_char_boundary(prefix.len())
                && rest[..prefix.len()].eq_ignore_ascii_case(prefix)
            {
                return &rest[prefix.len()..];
            }
        }
        rest
    }
}

/// The profiles shipped with kgate, as (name, YAML).
pub const BUILTIN: [(&str, &str); 7] = [
    ("tpu-v6e", include_str!("../../profiles/tpu-v6e.yaml")),
    ("tpu-v7x", include_str!("../../profiles/tpu-v7x.yaml")),
    ("h100", include_str!("../../profiles/h100.yaml")),
    ("h200", include_str!("../../profiles/h200.yaml")),
    ("b200", include_str!("../../profiles/b200.yaml")),
    ("mi300x", include_str!("../../profiles/mi300x.yaml")),
    ("cpu", include_str!("../../profiles/cpu.yaml")),
];

/// A profile that cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("key `device`: no device profile named `{name}`; known: {known}")]
    Unknown { name: String, known: String },
    #[error("key `profiles.{name}`: {message}")]
    Invalid { name: String, message: String },
}

/// The names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

fn builtin_value(name: &str) -> Option<serde_json::Value> {
    let text = BUILTIN.iter().find(|(n, _)| *n == name)?.1;
    Some(serde_saphyr::from_str(text).expect("built-in profiles are valid YAML"))
}

/// A built-in profile by name.
pub fn builtin(name: &str) -> Option<DeviceProfile> {
    resolve(name, &BTreeMap::new()).ok()
}

/// Resolves profile `name` with the configuration's `profiles:` overrides. An override of a
/// built-in name changes only the keys it sets; a new name starts from the profile named by
/// its `base:` key (or from nothing, and must then set every required key).
pub fn resolve(
    name: &str,
    overrides: &BTreeMap<String, serde_json::Value>,
) -> Result<DeviceProfile, ProfileError> {
    let mut seen = Vec::new();
    let value = resolve_value(name, overrides, &mut seen)?;
    let profile: DeviceProfile = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let why = crate::model::text::plain_serde(Some(&path), &e.into_inner().to_string());
        let message = format!("{why}; a profile needs `clock_hz: {{value, source}}`");
        ProfileError::Invalid {
            name: name.to_string(),
            message,
        }
    })?;
    profile.check()
}

fn resolve_value(
    name: &str,
    overrides: &BTreeMap<String, serde_json::Value>,
    seen: &mut Vec<String>,
) -> Result<serde_json::Value, ProfileError> {
    if seen.iter().any(|s| s == name) {
        return Err(ProfileError::Invalid {
            name: name.to_string(),
            message: format!("`base` chain loops: {}", seen.join(" → ")),
        });
    }
    seen.push(name.to_string());
    let Some(over) = overrides.get(name) else {
        return builtin_value(name).ok_or_else(|| ProfileError::Unknown {
            name: name.to_string(),
            known: known(overrides),
        });
    };
    let mut over = over.clone();
    let base = match over.as_object_mut() {
        Some(map) => map.remove("base"),
        None => {
            return Err(ProfileError::Invalid {
                name: name.to_string(),
                message: "must be a map of profile keys".into(),
            });
        }
    };
    let mut value = match base {
        Some(serde_json::Value::String(b)) => resolve_value(&b, overrides, seen)?,
        Some(_) => {
            return Err(ProfileError::Invalid {
                name: name.to_string(),
                message: "`base` must name a profile".into(),
            });
        }
        None => builtin_value(name).unwrap_or_else(|| serde_json::json!({})),
    };
    merge(&mut value, over);
    value["name"] = serde_json::Value::String(name.to_string());
    Ok(value)
}

fn known(overrides: &BTreeMap<String, serde_json::Value>) -> String {
    let mut names: Vec<String> = builtin_names().iter().map(|s| s.to_string()).collect();
    names.extend(overrides.keys().cloned());
    names.sort();
    names.dedup();
    names.join(", ")
}

/// Deep merge: maps merge key by key, anything else replaces.
fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Splits `requested` counters into the fewest passes of at most `per_pass` counters each,
/// keeping their order (without per-block constraints, ⌈n / per_pass⌉ passes are optimal).
/// `per_pass` of `None` or 0 means no documented limit: one pass.
pub fn plan_passes(requested: &[String], per_pass: Option<u32>) -> Vec<Vec<String>> {
    let mut unique: Vec<String> = Vec::new();
    for c in requested {
        if !unique.contains(c) {
            unique.push(c.clone());
        }
    }
    match per_pass {
        Some(n) if n > 0 && unique.len() > n as usize => {
            unique.chunks(n as usize).map(<[String]>::to_vec).collect()
        }
        _ if unique.is_empty() => Vec::new(),
        _ => vec![unique],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_and_names_its_sources() {
        for name in builtin_names() {
            let p = builtin(name).unwrap_or_else(|| panic!("profile {name} parses"));
            assert_eq!(p.name, name);
            assert!(p.clock_hz.value > 0.0 && !p.clock_hz.source.is_empty());
            for s in p.flops.values().chain(p.units.values()) {
                let named = !s.source.is_empty();
                assert!(named, "{name}: every number names its source");
            }
        }
        const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
        let v7x = builtin("tpu-v7x").unwrap();
        assert_eq!(v7x.clock_hz.value, 1.9e9);
        assert_eq!(v7x.memory_bandwidth.unwrap().value, 3433.0 * GIB);
        assert_eq!(v7x.counters["sync_wait"].index, Some(105));
        let v6e = builtin("tpu-v6e").unwrap();
        assert_eq!(v6e.clock_hz.value, 1.75e9);
        assert_eq!(v6e.memory_bandwidth.unwrap().value, 1525.5 * GIB);
    }

    #[test]
    fn overrides_change_only_what_they_set_and_new_profiles_extend_a_base() {
        let overrides: BTreeMap<String, serde_json::Value> = serde_saphyr::from_str(
            "h100: {clock_hz: {value: 1.755e9, source: locked with nvidia-smi -lgc}}\nmine: {base: tpu-v7x, counters_per_pass: {value: 8, source: measured}}\n",
        )
        .unwrap();
        let h100 = resolve("h100", &overrides).unwrap();
        assert_eq!(h100.clock_hz.value, 1.755e9);
        assert_eq!(h100.memory_bandwidth.unwrap().value, 3.35e12);
        let mine = resolve("mine", &overrides).unwrap();
        assert_eq!(mine.name, "mine");
        assert_eq!(mine.counters_per_pass.unwrap().value, 8.0);
        assert_eq!(mine.clock_hz.value, 1.9e9);
        let bad: BTreeMap<String, serde_json::Value> = serde_saphyr::from_str(
            "v: {base: tpu-v7x, register_names: {after: X_, core: \"DIE\\\\d_\"}}\n",
        )
        .unwrap();
        let err = resolve("v", &bad).unwrap_err().to_string();
        assert_contains!(err, "needs a capture group");
        let err = resolve("nope", &overrides).unwrap_err().to_string();
        assert!(err.contains("no device profile named `nope`") && err.contains("tpu-v7x"));
    }

    #[test]
    fn trace_names_map_to_counter_keys_through_aliases() {
        let v7x = builtin("tpu-v7x").unwrap();
        assert_eq!(v7x.counter_key("mxu_busy_1"), Some("mxu_busy_1"));
        assert_eq!(v7x.counter_key("COUNT_MXU_BUSY_1"), Some("mxu_busy_1"));
        let tc_stats = v7x.counter_key("COUNT_MXU_BUSY_2.TC Stats");
        assert_eq!(tc_stats, Some("mxu_busy_2"));
        assert_eq!(v7x.counter_key("count_sync_wait"), Some("sync_wait"));
        assert_eq!(v7x.counter_key("mxu_busy_1.value"), Some("mxu_busy_1"));
        assert_eq!(v7x.counter_key("COUNT_MXU_BUSY_9"), None);
        assert_eq!(v7x.counter_key("GPU 0 Utilization.GPU Utilization"), None);
        // No alias names two counters, and none is another counter's key.
        for name in builtin_names() {
            let p = builtin(name).unwrap();
            let mut seen: Vec<String> = p.counters.keys().map(|k| k.to_lowercase()).collect();
            for spec in p.counters.values() {
                for alias in &spec.aliases {
                    let alias = alias.to_lowercase();
                    assert!(!seen.contains(&alias), "{name}: alias `{alias}` is taken");
                    seen.push(alias);
                }
            }
        }
    }

    #[test]
    fn passes_are_the_fewest_and_keep_order() {
        let names = ["a", "b", "c", "d", "e", "a"].map(String::from);
        let passes = plan_passes(&names, Some(2));
        assert_eq!(passes, vec![vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
        assert_eq!(plan_passes(&names, None).len(), 1);
        assert_eq!(plan_passes(&names, Some(5)).len(), 1);
        assert!(plan_passes(&[], Some(4)).is_empty());
    }
}
