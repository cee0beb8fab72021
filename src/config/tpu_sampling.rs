//! XProf's counter-sampling options for a TPU benchmark, from the counters it requests.
//!
//! On a TPU the profiler samples the TensorCore's performance counters only when the program
//! asks for them: `jax.profiler.ProfileOptions().advanced_configuration` takes the text proto
//! `tpu_tc_perf_counter_sampling_options` (`interval_us:1 scaling:0 counter_size_bits:3
//! indices:56 indices:57 …`). Writing that string by hand means looking up each counter's index
//! (its register id's offset in the TensorCore block, over 8) in XProf's counter tables; kgate
//! knows the index from the device profile (`index:`), so it writes the string, exactly as
//! XProf's capture dialog formats it, and hands it to the benchmark for each counter pass
//! (`KGATE_TPU_COUNTER_SAMPLING_OPTIONS`). The settings are checked here, when the
//! configuration loads, so a wrong one is an error naming its key rather than a profile that
//! silently sampled nothing.

use super::CounterSampling;
use super::device::DeviceProfile;

/// The `advanced_configuration` key the string is meant for (the TensorCore component).
pub const OPTIONS_KEY: &str = "tpu_tc_perf_counter_sampling_options";
/// `interval_us` when the configuration sets neither it nor the external trigger: 1 µs, the
/// period of XProf's kernel profiling (`tpu_enable_kernel_profiling`: "standard TC counters
/// every 1 us") and the floor of periodic sampling.
pub const DEFAULT_INTERVAL_US: u32 = 1;
/// `counter_size_bits` when not set: XProf's default, code 3 (64-bit counters).
pub const DEFAULT_COUNTER_SIZE_BITS: u8 = 3;

/// The sampling options of each counter pass, and what could not be put in them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassOptions {
    /// One entry per counter pass: the options string, or `None` when none of the pass's
    /// counters has an index.
    pub options: Vec<Option<String>>,
    /// What was left out and why (requested counters without an index).
    pub notes: Vec<String>,
}

/// A sampling setting that cannot be used: the key under `counters` and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SamplingError {
    /// The key under the benchmark's `counters`, such as `interval_us`.
    pub key: &'static str,
    pub message: String,
}

/// Whether kgate can write sampling options for this profile: some counter of it has a
/// TensorCore counter index.
pub fn indexed(profile: &DeviceProfile) -> bool {
    profile.counters.values().any(|c| c.index.is_some())
}

/// Whether the profile is a TPU's: it is named `tpu…` or gives counters an index.
fn tpu(profile: &DeviceProfile) -> bool {
    profile.name.to_ascii_lowercase().starts_with("tpu") || indexed(profile)
}

/// Checks a benchmark's sampling settings against the device profile (`None` without
/// `device:`).
pub fn check(c: &CounterSampling, profile: Option<&DeviceProfile>) -> Result<(), SamplingError> {
    if c.interval_us == Some(0) {
        return Err(SamplingError {
            key: "interval_us",
            message: "XProf's periodic sampling period is a whole number of microseconds, at least 1 (`interval_us: 1`); for finer resolution sample at kernel boundaries with `external_trigger: true` instead".into(),
        });
    }
    if c.interval_us.is_some() && c.external_trigger {
        return Err(SamplingError {
            key: "external_trigger",
            message: "`external_trigger: true` and `interval_us` exclude each other: XProf samples either every interval or at the external trigger (custom-call boundaries); remove one of them".into(),
        });
    }
    if let Some(code) = c.counter_size_bits
        && code > 3
    {
        // The width code of a number of bits written instead.
        let meant = [8, 16, 32, 64].iter().position(|&bits| bits == code);
        let message = match meant {
            Some(k) => format!(
                "`counter_size_bits` is XProf's width code 0–3 (2^(code+3) bits), not a number of bits: for {code}-bit counters write `counter_size_bits: {k}`"
            ),
            None => format!(
                "{code} is not a width code: `counter_size_bits` is 0, 1, 2 or 3 (8, 16, 32 or 64-bit counters; default 3)"
            ),
        };
        return Err(SamplingError {
            key: "counter_size_bits",
            message,
        });
    }
    let set = if c.interval_us.is_some() {
        Some("interval_us")
    } else if c.external_trigger {
        Some("external_trigger")
    } else if c.counter_size_bits.is_some() {
        Some("counter_size_bits")
    } else {
        None
    };
    let usable = profile.filter(|p| indexed(p));
    if let Some(key) = set {
        let why = match (profile, usable) {
            (None, _) => {
                "the configuration names no `device:` (such as `device: tpu-v7x`)".to_string()
            }
            (Some(p), None) => format!(
                "the device profile `{}` gives no counter a TPU counter index (`index:`)",
                p.name
            ),
            (Some(_), Some(_)) if c.request.is_empty() => {
                "the benchmark requests no counters (`counters.request`)".to_string()
            }
            _ => String::new(),
        };
        if !why.is_empty() {
            return Err(SamplingError {
                key,
                message: format!(
                    "`{key}` is a TPU counter-sampling option that kgate passes in KGATE_TPU_COUNTER_SAMPLING_OPTIONS, but {why}; remove the key or request TPU counters"
                ),
            });
        }
    }
    let Some(p) = usable else { return Ok(()) };
    if let (Some(us), Some(floor)) = (c.interval_us, &p.sampling_floor_ns)
        && f64::from(us) * 1000.0 < floor.value
    {
        return Err(SamplingError {
            key: "interval_us",
            message: format!(
                "{us} µs is below the shortest periodic sampling interval of `{}`, {} ns ({}); use a longer interval or `external_trigger: true`",
                p.name, floor.value, floor.source
            ),
        });
    }
    for name in &c.request {
        if p.counter_key(name).is_none() {
            let keys: Vec<&str> = p.counters.keys().map(String::as_str).collect();
            let hint = crate::model::text::did_you_mean(name, &keys)
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            let (name, profile) = (crate::model::text::escape_terminal(name), &p.name);
            let message = format!(
                "`{name}` is not a counter of the device profile `{profile}`{hint}, so kgate cannot give its sampling index; its counters: {}; a counter it lacks goes under `profiles.{profile}.counters` with its `index:`",
                keys.join(", ")
            );
            return Err(SamplingError {
                key: "request",
                message,
            });
        }
    }
    Ok(())
}

/// The sampling options of each counter pass (`passes`, the requested names as the plan split
/// them), formatted as XProf's capture dialog does: `interval_us:N` or
/// `is_external_trigger:true`, then `scaling:S`, `counter_size_bits:B` and one `indices:I` per
/// counter, ascending. Empty for a profile that is not a TPU's.
pub fn options(
    profile: &DeviceProfile,
    c: &CounterSampling,
    passes: &[Vec<String>],
) -> PassOptions {
    let mut out = PassOptions::default();
    if !tpu(profile) {
        return out;
    }
    let interval = c.interval_us.unwrap_or(DEFAULT_INTERVAL_US);
    let when = match c.external_trigger {
        true => "is_external_trigger:true".to_string(),
        false => format!("interval_us:{interval}"),
    };
    let bits = c.counter_size_bits.unwrap_or(DEFAULT_COUNTER_SIZE_BITS);
    let head = format!("{when} scaling:{} counter_size_bits:{bits}", c.scaling);
    let mut left_out: Vec<&str> = Vec::new();
    for pass in passes {
        let mut indices: Vec<u32> = Vec::new();
        for name in pass {
            match profile
                .counter_key(name)
                .and_then(|k| profile.counters.get(k))
                .and_then(|spec| spec.index)
            {
                Some(i) => indices.push(i),
                None => left_out.push(name),
            }
        }
        indices.sort_unstable();
        indices.dedup();
        out.options.push(if indices.is_empty() {
            None
        } else {
            let list: Vec<String> = indices.iter().map(|i| format!("indices:{i}")).collect();
            Some(format!("{head} {}", list.join(" ")))
        });
    }
    if !left_out.is_empty() {
        let names: Vec<String> = left_out
            .iter()
            .map(|n| format!("`{}`", crate::model::text::escape_terminal(n)))
            .collect();
        let passes_without = out.options.iter().filter(|o| o.is_none()).count();
        let (has, it_is) = if names.len() == 1 {
            ("has", "it is")
        } else {
            ("have", "they are")
        };
        let passes = out.options.len();
        let without = match passes_without {
            0 => String::new(),
            n => format!("; {n} of {passes} counter passes therefore get no sampling options"),
        };
        let (names, profile) = (names.join(", "), &profile.name);
        out.notes.push(format!(
            "{names} requested on `{profile}` {has} no TensorCore counter index (`index:` in the profile), so {it_is} not in KGATE_TPU_COUNTER_SAMPLING_OPTIONS (XProf samples other components through their own options or counter sets){without}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::device::builtin;

    fn sampling(yaml: &str) -> CounterSampling {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// XProf's frontend (`profiler_options.component.ts`, `convertValuesToIndices`): within the
    /// component's block, index = floor((register id − the block's smallest id) / 8).
    fn frontend_index(id: u64, block_min: u64) -> u32 {
        ((id - block_min) / 8) as u32
    }

    /// The profile's indices are the frontend's, computed from the v7x register ids of the
    /// die-0 TensorCore block (XProf `tpu_counter_ids_v7x.h`; its smallest id is COUNT_CYCLES).
    #[test]
    fn v7x_indices_are_the_frontends_from_the_register_ids() {
        const TC_MIN: u64 = 2_791_874_568;
        #[rustfmt::skip]
        let ids: [(&str, u64); 14] = [
            ("cycles", 2_791_874_568), ("scalar_issue", 2_791_874_576),
            ("vector_issue", 2_791_874_792), ("valu_0", 2_791_874_816), ("vst", 2_791_874_848),
            ("vld_0", 2_791_874_864), ("vld_1", 2_791_874_872),
            ("mxu_busy_0", 2_791_875_016), ("mxu_busy_1", 2_791_875_024), ("mxu_busy_2", 2_791_875_032),
            ("xlu_busy_0", 2_791_875_152), ("xlu_busy_1", 2_791_875_160), ("xlu_busy_2", 2_791_875_168),
            ("sync_wait", 2_791_875_408),
        ];
        let v7x = builtin("tpu-v7x").unwrap();
        for (key, id) in ids {
            let index = Some(frontend_index(id, TC_MIN));
            assert_eq!(v7x.counters[key].index, index, "{key}");
        }
        // The XProf docs' own example: SCALAR_ALU_INSTRUCTION_0/1 and MXU_BUSY_0/1/2.
        #[rustfmt::skip]
        let docs = [2_791_874_648, 2_791_874_656, 2_791_875_016, 2_791_875_024, 2_791_875_032];
        let indices = docs.map(|id| frontend_index(id, TC_MIN));
        assert_eq!(indices, [10, 11, 56, 57, 58]);
    }

    #[test]
    fn the_string_is_formatted_as_xprofs_capture_dialog_does() {
        let v7x = builtin("tpu-v7x").unwrap();
        let c = sampling("{request: [sync_wait, mxu_busy_2, cycles, COUNT_MXU_BUSY_1]}");
        let o = options(&v7x, &c, std::slice::from_ref(&c.request));
        assert_eq!(
            o.options,
            [Some(
                "interval_us:1 scaling:0 counter_size_bits:3 indices:0 indices:57 indices:58 indices:105"
                    .to_string()
            )]
        );
        assert!(o.notes.is_empty());
        // The XProf docs' example string, from the counters' names.
        let c = sampling(
            "{interval_us: 1, counter_size_bits: 1, request: [mxu_busy_0, mxu_busy_1, mxu_busy_2]}",
        );
        let o = options(&v7x, &c, std::slice::from_ref(&c.request));
        assert_eq!(
            o.options[0].as_deref(),
            Some("interval_us:1 scaling:0 counter_size_bits:1 indices:56 indices:57 indices:58")
        );
        let c = sampling("{external_trigger: true, scaling: 4, request: [mxu_busy_1]}");
        let o = options(&v7x, &c, std::slice::from_ref(&c.request));
        assert_eq!(
            o.options[0].as_deref(),
            Some("is_external_trigger:true scaling:4 counter_size_bits:3 indices:57")
        );
    }

    #[test]
    fn each_pass_gets_its_own_string_and_counters_without_an_index_are_named() {
        let v7x = builtin("tpu-v7x").unwrap();
        let c = sampling("{interval_us: 10, request: [cycles, sync_wait, hbm_rd_beats]}");
        let passes = vec![
            strings(&["cycles", "sync_wait"]),
            strings(&["hbm_rd_beats"]),
        ];
        let o = options(&v7x, &c, &passes);
        assert_eq!(
            o.options,
            [
                Some("interval_us:10 scaling:0 counter_size_bits:3 indices:0 indices:105".into()),
                None
            ]
        );
        assert_eq!(o.notes.len(), 1);
        let note = &o.notes[0];
        let start = "`hbm_rd_beats` requested on `tpu-v7x` has no TensorCore counter index";
        assert!(note.starts_with(start), "{note}");
        assert!(o.notes[0].ends_with("1 of 2 counter passes therefore get no sampling options"));
        // Not a TPU: nothing to say.
        let h100 = builtin("h100").unwrap();
        assert_eq!(options(&h100, &c, &passes), PassOptions::default());
    }

    #[test]
    fn settings_are_checked_naming_the_key() {
        let v7x = builtin("tpu-v7x").unwrap();
        let err = |yaml: &str, p: Option<&DeviceProfile>| check(&sampling(yaml), p).unwrap_err();
        let e = err("{interval_us: 0, request: [cycles]}", Some(&v7x));
        assert_eq!(e.key, "interval_us");
        assert_contains!(e.message, "at least 1");
        let both = "{interval_us: 5, external_trigger: true, request: [cycles]}";
        let e = err(both, Some(&v7x));
        assert_eq!(e.key, "external_trigger");
        assert_contains!(e.message, "exclude each other");
        let e = err("{counter_size_bits: 64, request: [cycles]}", Some(&v7x));
        assert_contains!(e.message, "write `counter_size_bits: 3`");
        let e = err("{counter_size_bits: 5, request: [cycles]}", Some(&v7x));
        assert_contains!(e.message, "0, 1, 2 or 3");
        let e = err("{interval_us: 2}", Some(&v7x));
        assert_contains!(e.message, "requests no counters");
        let e = err("{interval_us: 2, request: [cycles]}", None);
        assert_contains!(e.message, "no `device:`");
        let h100 = builtin("h100").unwrap();
        let e = err("{external_trigger: true, request: [cycles]}", Some(&h100));
        assert_contains!(e.message, "`h100` gives no counter a TPU counter index");
        let e = err("{request: [mxu_busy1]}", Some(&v7x));
        assert_eq!(e.key, "request");
        assert_contains!(e.message, "(did you mean `mxu_busy_1`?)");
        // Aliases and full register names are counters too; other profiles are not checked.
        let aliases = sampling("{request: [COUNT_SYNC_WAIT, cycles], interval_us: 1}");
        check(&aliases, Some(&v7x)).unwrap();
        check(&sampling("{request: [anything]}"), Some(&h100)).unwrap();
        check(&sampling("{request: [anything]}"), None).unwrap();
    }
}
