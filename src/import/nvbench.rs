//! `kgate import nvbench`: NVIDIA nvbench `--json` output (JSON format version 1).
//!
//! One benchmark per state: the benchmark's name, then its device and its axis values as
//! `axis_values` holds them (`copy_sweep_grid_shape/Device=0/BlockSize=256/NumBlocks=64`; the
//! state's own name shows a pow2 axis as `2^8`), which also become the benchmark's parameters.
//! Summaries are read by `tag`, never by their display name (two are called "Noise"); every
//! value is a string, times are seconds and "percentages" are fractions.
//!
//! nvbench stores summaries, not samples: a state's cold GPU time is the mean of its sample
//! size of isolated launches, with their relative standard deviation. Each file therefore
//! gives one value per metric and state (one repetition); the relative standard deviation and
//! the sample size are kept in the benchmark's details, and a note says that a single mean
//! per side cannot be tested (several runs' files imported together are one value per run,
//! which the rank test can use). A skipped state (`is_skipped`, `summaries: null`) is kept as
//! a benchmark without measurements and with nvbench's reason, in a note and in the details:
//! nothing failed, and nothing was measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::device::{Device, MEM_MAX_MHZ, SM_MAX_MHZ};
use super::input;
use super::{ImportContext, ImportError, Importer, Policies, content};
use crate::model::json_array::Found;
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// The cold (isolated) GPU time's tags: mean, relative standard deviation, sample size.
const GPU_MEAN: &str = "nv/cold/time/gpu/mean";
const GPU_NOISE: &str = "nv/cold/time/gpu/stdev/relative";
const SAMPLES: &str = "nv/cold/sample_size";
/// The mean SM clock over the cold samples (Hz), where nvbench recorded it.
const SM_CLOCK: &str = "nv/cold/sm_clock_rate/mean";

/// The time metrics: (tag, metric, what it is).
const TIMES: [(&str, &str); 3] = [
    (GPU_MEAN, "kernel_time"),
    ("nv/cold/time/cpu/mean", "cpu_time"),
    ("nv/batch/time/gpu/mean", "batch_kernel_time"),
];

/// The note on every measured state.
const SUMMARY_NOTE: &str = "nvbench stores each state's summaries, not its samples: every metric is one value per file (kernel_time is the mean of `nvbench.samples` isolated launches, their relative standard deviation in `nvbench.noise`), so a single file per side cannot be tested and its comparison is inconclusive; import several runs' files together for one value per run";

/// `kgate import nvbench`.
pub struct Nvbench;

impl Importer for Nvbench {
    fn name(&self) -> &'static str {
        "nvbench"
    }

    fn help(&self) -> &'static str {
        "NVIDIA nvbench JSON (--json), one benchmark per state"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// A state as the import names it: its benchmark's name and the device it ran on.
struct Seen {
    device: Option<i64>,
}

/// Imports nvbench JSON files, a benchmark (with its states) at a time as each file is read.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "nvbench");
    // Values recorded so far per state, in file order: a state met in several files is one
    // repetition per file.
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        let mut seen: Vec<(String, Seen)> = Vec::new();
        let document =
            input::for_each_json_element(path, "nvbench JSON", "benchmarks", |i, bench| {
                read_benchmark(&mut benchmarks, &mut counts, &mut seen, path, i, &bench)
            })?;
        if document.array != Found::Array {
            return Err(content(
                path,
                "has no `benchmarks` array; expected the file nvbench writes with `--json`".into(),
            ));
        }
        let meta = document.others.get("meta");
        let version = meta.and_then(|m| m.pointer("/version/json/major"));
        if let Some(major) = version
            && number(major) != Some(1.0)
        {
            return Err(content(
                path,
                format!(
                    "is nvbench JSON version {}; kgate reads version 1",
                    text(meta.and_then(|m| m.pointer("/version/json/string")))
                        .unwrap_or_else(|| major.to_string())
                ),
            ));
        }
        let devices = devices(document.others.get("devices"));
        let mut device = Device::default();
        let tool = text(meta.and_then(|m| m.pointer("/version/nvbench/string")));
        if let Some(tool) = &tool {
            device.tool("nvbench", tool);
        }
        for (name, state) in &seen {
            let Some(id) = state.device else { continue };
            let Some(d) = devices.get(&id) else {
                return Err(content(
                    path,
                    format!("state `{name}` ran on device {id}, which `devices` does not list"),
                ));
            };
            if let Some(model) = &d.name {
                device.accelerator(model);
                benchmarks
                    .get(name)
                    .result_mut()
                    .parameters
                    .insert("device_name".into(), model.clone());
            }
            if let Some(hz) = d.sm_hz {
                device.clock_mhz(SM_MAX_MHZ, hz / 1e6);
            }
            if let Some(hz) = d.mem_hz {
                device.clock_mhz(MEM_MAX_MHZ, hz / 1e6);
            }
            if let Some(tool) = &tool {
                benchmarks.detail(name, "nvbench.version", tool);
            }
        }
        benchmarks.device(path, device)?;
    }
    benchmarks.finish(files)
}

/// One entry of `devices`.
struct DeviceEntry {
    name: Option<String>,
    sm_hz: Option<f64>,
    mem_hz: Option<f64>,
}

/// The `devices` list by id.
fn devices(list: Option<&Value>) -> BTreeMap<i64, DeviceEntry> {
    let mut out = BTreeMap::new();
    for d in list.and_then(Value::as_array).into_iter().flatten() {
        let Some(id) = d.get("id").and_then(number) else {
            continue;
        };
        out.insert(
            id as i64,
            DeviceEntry {
                name: text(d.get("name")),
                sm_hz: d.get("sm_default_clock_rate").and_then(number),
                mem_hz: d.get("global_memory_bus_peak_clock_rate").and_then(number),
            },
        );
    }
    out
}

/// A number written as a number or (as nvbench writes summary values) as a string.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|v| v.is_finite())
}

/// A string, or a number's text.
fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of the summary tagged `tag`: its `data` entry named `value`.
fn summary(summaries: &[Value], tag: &str) -> Option<Value> {
    let s = summaries
        .iter()
        .rev()
        .find(|s| s.get("tag").and_then(Value::as_str) == Some(tag))?;
    s.get("data")?
        .as_array()?
        .iter()
        .rev()
        .find(|d| d.get("name").and_then(Value::as_str) == Some("value"))?
        .get("value")
        .cloned()
}

/// The name of a state: its benchmark's, its device, then each axis and its value.
fn state_name(bench: &str, device: Option<i64>, axes: &[(String, String)]) -> String {
    let mut name = bench.to_string();
    if let Some(d) = device {
        name.push_str(&format!("/Device={d}"));
    }
    for (axis, value) in axes {
        name.push_str(&format!("/{axis}={value}"));
    }
    name
}

/// Appends `value` to the detail `key` of benchmark `name` (one value per file, in order).
fn append_detail(benchmarks: &mut Benchmarks<'_>, name: &str, key: &str, value: &str) {
    let details = &mut benchmarks.get(name).result_mut().provenance.details;
    match details.get_mut(key) {
        Some(old) => {
            old.push_str(", ");
            old.push_str(value);
        }
        None => {
            details.insert(key.to_string(), value.to_string());
        }
    }
}

/// Records the states of the `i`-th benchmark of `path`.
fn read_benchmark(
    benchmarks: &mut Benchmarks<'_>,
    counts: &mut BTreeMap<String, u32>,
    seen: &mut Vec<(String, Seen)>,
    path: &Path,
    i: usize,
    bench: &Value,
) -> Result<(), ImportError> {
    let bench_name = bench
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| content(path, format!("benchmarks[{i}] has no `name`")))?;
    let states = match bench.get("states") {
        Some(Value::Array(states)) => states.as_slice(),
        Some(Value::Null) | None => &[],
        Some(_) => {
            return Err(content(
                path,
                format!("benchmark `{bench_name}` has `states` that is not an array"),
            ));
        }
    };
    for (j, state) in states.iter().enumerate() {
        let where_ = || format!("benchmark `{bench_name}`, states[{j}]");
        let device =
            match state.get("device") {
                None | Some(Value::Null) => None,
                Some(d) => Some(number(d).ok_or_else(|| {
                    content(path, format!("{}: `device` is not a number", where_()))
                })? as i64),
            };
        let mut axes = Vec::new();
        for a in state
            .get("axis_values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(axis), Some(value)) = (text(a.get("name")), text(a.get("value"))) else {
                return Err(content(
                    path,
                    format!("{}: an axis value without `name` or `value`", where_()),
                ));
            };
            axes.push((axis, value));
        }
        let name = state_name(bench_name, device, &axes);
        {
            let result = benchmarks.get(&name).result_mut();
            if let Some(d) = device {
                result.parameters.insert("device".into(), d.to_string());
            }
            for (axis, value) in &axes {
                result.parameters.insert(axis.clone(), value.clone());
            }
        }
        if !seen.iter().any(|(n, _)| *n == name) {
            seen.push((name.clone(), Seen { device }));
        }
        let skipped = state.get("is_skipped").and_then(Value::as_bool) == Some(true);
        let summaries = state.get("summaries").and_then(Value::as_array);
        let rep = *counts.get(&name).unwrap_or(&0);
        let Some(summaries) = summaries.filter(|_| !skipped) else {
            let reason =
                text(state.get("skip_reason")).unwrap_or_else(|| "no reason given".to_string());
            let why = if skipped {
                format!("skipped by nvbench: {reason}")
            } else {
                "nvbench wrote no summaries for this state".to_string()
            };
            append_detail(benchmarks, &name, "nvbench.skipped", &reason);
            let notes = &mut benchmarks.get(&name).result_mut().provenance.notes;
            if !notes.contains(&why) {
                notes.push(why);
            }
            benchmarks.imported(&name, path, rep);
            continue;
        };
        let mut measured = false;
        for (tag, metric) in TIMES {
            if let Some(v) = summary(summaries, tag).as_ref().and_then(number) {
                benchmarks.add(&name, rep, metric, "s", Source::Timer, v)?;
                measured = true;
            }
        }
        let gpu_mean = summary(summaries, GPU_MEAN).as_ref().and_then(number);
        let clock = summary(summaries, SM_CLOCK).as_ref().and_then(number);
        if let (Some(t), Some(hz)) = (gpu_mean, clock) {
            benchmarks.add(
                &name,
                rep,
                "kernel_cycles",
                "cycles",
                Source::Derived,
                t * hz,
            )?;
        }
        for (tag, key) in [
            (SAMPLES, "nvbench.samples"),
            (GPU_NOISE, "nvbench.noise"),
            (SM_CLOCK, "nvbench.sm_clock_hz"),
        ] {
            if let Some(v) = text(summary(summaries, tag).as_ref()) {
                append_detail(benchmarks, &name, key, &v);
            }
        }
        if measured {
            counts.insert(name.clone(), rep + 1);
            benchmarks.imported(&name, path, rep + 1);
            let notes = &mut benchmarks.get(&name).result_mut().provenance.notes;
            if !notes.iter().any(|n| n == SUMMARY_NOTE) {
                notes.push(SUMMARY_NOTE.to_string());
            }
        } else {
            benchmarks.imported(&name, path, rep);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import_text(text: &str) -> Result<RunResults, ImportError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        std::fs::write(&path, text).unwrap();
        let policies = Policies::new(BTreeMap::new(), crate::plan::MetricPolicy::permissive(0.05));
        import(&[path], &policies)
    }

    fn summary_json(tag: &str, name: &str, value: &str) -> String {
        format!(
            r#"{{"tag": "{tag}", "name": "{name}", "hint": "x", "data": [{{"name": "value", "type": "float64", "value": "{value}"}}]}}"#
        )
    }

    #[test]
    fn states_are_named_by_axis_values_and_summaries_read_by_tag() {
        let summaries = [
            summary_json(SAMPLES, "Samples", "120"),
            summary_json("nv/cold/time/cpu/stdev/relative", "Noise", "0.5"),
            summary_json(GPU_MEAN, "GPU Time", "0.002"),
            summary_json(GPU_NOISE, "Noise", "0.01"),
            summary_json(SM_CLOCK, "Clock", "1500000000"),
            summary_json("nv/batch/time/gpu/mean", "Batch GPU", "0.0015"),
        ]
        .join(",");
        let text = format!(
            r#"{{"meta": {{"version": {{"json": {{"major": 1, "string": "1.0.0"}}, "nvbench": {{"string": "0.1.0"}}}}}},
              "devices": [{{"id": 0, "name": "NVIDIA H100", "sm_default_clock_rate": 1980000000}}],
              "benchmarks": [{{"name": "copy", "states": [
                {{"name": "Device=0 Size=2^8", "device": 0,
                  "axis_values": [{{"name": "Size", "type": "int64", "value": "256"}}, {{"name": "T", "type": "string", "value": "F32"}}],
                  "summaries": [{summaries}], "is_skipped": false}},
                {{"name": "Device=0 Size=2^9", "device": 0,
                  "axis_values": [{{"name": "Size", "type": "int64", "value": "512"}}, {{"name": "T", "type": "string", "value": "F32"}}],
                  "summaries": null, "is_skipped": true, "skip_reason": "too big"}}]}}]}}"#
        );
        let r = import_text(&text).unwrap();
        let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "copy/Device=0/Size=256/T=F32",
                "copy/Device=0/Size=512/T=F32"
            ]
        );
        let b = &r.benchmarks[0];
        assert_eq!(b.metric("kernel_time").unwrap().values, [2_000_000.0]);
        assert_eq!(b.metric("batch_kernel_time").unwrap().values, [1_500_000.0]);
        assert_eq!(b.metric("kernel_time").unwrap().source, Source::Timer);
        // 2 ms at 1.5 GHz.
        let cycles = b.metric("kernel_cycles").unwrap();
        assert_eq!(
            (cycles.values[0], cycles.source),
            (3_000_000.0, Source::Derived)
        );
        assert!(b.metric("cpu_time").is_none());
        assert_eq!(b.provenance.details["nvbench.samples"], "120");
        assert_eq!(b.provenance.details["nvbench.noise"], "0.01");
        assert_eq!(b.provenance.details["nvbench.version"], "0.1.0");
        assert_eq!(b.parameters["Size"], "256");
        assert_eq!(b.parameters["device"], "0");
        assert_eq!(b.parameters["device_name"], "NVIDIA H100");
        assert_eq!(b.repetitions, 1);
        assert!(b.provenance.notes.iter().any(|n| n == SUMMARY_NOTE));
        // The skipped state is kept, measured nothing, failed nothing, and says why.
        let s = &r.benchmarks[1];
        assert!(s.metrics.is_empty() && s.failure.is_none());
        assert_eq!(s.status, crate::model::results::Status::Ok);
        assert_eq!(s.provenance.details["nvbench.skipped"], "too big");
        assert_eq!(s.provenance.notes, ["skipped by nvbench: too big"]);
        assert_eq!(
            r.environment.accelerator.as_deref(),
            Some("NVIDIA H100"),
            "{:?}",
            r.environment
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        for (text, expected) in [
            (r#"{"benchmarks": {"a": 1}}"#, "has no `benchmarks` array"),
            (
                r#"{"meta": {"version": {"json": {"major": 2, "string": "2.0.0"}}}, "benchmarks": []}"#,
                "is nvbench JSON version 2.0.0",
            ),
            (
                r#"{"benchmarks": [{"states": []}]}"#,
                "benchmarks[0] has no `name`",
            ),
            (
                r#"{"devices": [], "benchmarks": [{"name": "a", "states": [{"device": 3, "summaries": null, "is_skipped": true}]}]}"#,
                "ran on device 3, which `devices` does not list",
            ),
            (r#"{"benchmarks": []}"#, "no nvbench benchmark was found"),
        ] {
            let err = import_text(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
