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
//! gives one value per metric and state (one repetition); `kernel_time`, `cpu_time` and
//! `kernel_cycles` (the GPU mean times the mean SM clock, where recorded; the time's relative
//! standard deviation taken as its own) keep the standard deviation and sample count behind
//! the mean (their `spread`), so that `kgate compare` tests them with Welch's test on
//! summaries; `batch_kernel_time`, whose spread nvbench does not record, is shown and not
//! gated. Several runs' files imported together are one value per run (without spread), which
//! the rank test uses. Where nvbench wrote the per-sample file of `--jsonbin` (its
//! `nv/json/bin:nv/cold/sample_times` summary names `RESULT.json-bin/N.bin`, little-endian
//! float32 seconds) and the file sits beside the JSON, `kernel_time` is those samples instead,
//! one repetition per JSON file, and the means of `cpu_time` and `batch_kernel_time` are kept
//! without gating, so that the rank test on the samples decides. A state whose mean SM clock
//! is below nvbench's throttle threshold (75 % of the device's default) is marked not
//! comparable (the `not_comparable` detail, with the clocks). A skipped state (`is_skipped`,
//! `summaries: null`) is kept as a benchmark without measurements and with nvbench's reason,
//! in a note and in the details: nothing failed, and nothing was measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportError, Importer, Policies, content, read_error};
use crate::capture::device::{Device, MEM_MAX_MHZ, SM_MAX_MHZ};
use crate::model::metric::{Direction, Source};
use crate::model::results::{NOT_COMPARABLE, RunResults, Spread};

/// The cold (isolated) GPU time's tags: mean, relative standard deviation, sample size.
const GPU_MEAN: &str = "nv/cold/time/gpu/mean";
const GPU_NOISE: &str = "nv/cold/time/gpu/stdev/relative";
const SAMPLES: &str = "nv/cold/sample_size";
/// The mean SM clock over the cold samples (Hz), where nvbench recorded it.
const SM_CLOCK: &str = "nv/cold/sm_clock_rate/mean";
/// nvbench's default throttle threshold: a clock below this fraction of the device's default
/// SM clock has throttled.
const THROTTLE_THRESHOLD: f64 = 0.75;
/// The `--jsonbin` file of the cold GPU sample times: data `filename` and `size`.
const SAMPLE_TIMES_FILE: &str = "nv/json/bin:nv/cold/sample_times";
/// The most samples read from one `--jsonbin` file (nvbench's default stops at a few
/// thousand).
const MAX_SAMPLES: u64 = 1 << 26;

/// The time metrics: the mean's tag, the tag of its relative standard deviation (none for
/// the batch time), the metric.
#[rustfmt::skip]
const TIMES: [(&str, Option<&str>, &str); 3] = [
    (GPU_MEAN, Some(GPU_NOISE), "kernel_time"),
    ("nv/cold/time/cpu/mean", Some("nv/cold/time/cpu/stdev/relative"), "cpu_time"),
    ("nv/batch/time/gpu/mean", None, "batch_kernel_time"),
];

/// The note on every measured state.
const SUMMARY_NOTE: &str = "nvbench stores each state's summaries, not its samples: every metric is one value per file (kernel_time is the mean of `nvbench.samples` isolated launches, their relative standard deviation in `nvbench.noise`); kernel_time, cpu_time and kernel_cycles keep the standard deviation and count behind their mean (`spread`), which Welch's test compares, and batch_kernel_time, whose spread nvbench does not record, is shown and not gated; several runs' files imported together are one value per run, which the rank test compares";

/// The note on every state whose sample times were read.
const SAMPLES_NOTE: &str = "kernel_time holds the sample times of nvbench's `--jsonbin` file (`nvbench.sample_times`), one repetition per JSON file; cpu_time and batch_kernel_time are means, one value per file, shown and not gated";

pub static NVBENCH: Importer = Importer {
    name: "nvbench",
    help: "NVIDIA nvbench JSON (--json), one benchmark per state",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Imports nvbench JSON files, a benchmark (with its states) at a time as each file is read.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "nvbench");
    // Values recorded so far per state, in file order: a state met in several files is one
    // repetition per file.
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        let mut seen: Vec<Seen> = Vec::new();
        let document = input::read_json_array(path, "nvbench JSON", "benchmarks", |i, bench| {
            read_benchmark(&mut benchmarks, &mut counts, &mut seen, path, i, &bench)
        })?;
        if document.array != input::Found::Array {
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
            return Err(content!(
                path,
                "is nvbench JSON version {}; kgate reads version 1",
                text(meta.and_then(|m| m.pointer("/version/json/string")))
                    .unwrap_or_else(|| major.to_string())
            ));
        }
        let devices = devices(document.others.get("devices"));
        let mut device = Device::default();
        let tool = text(meta.and_then(|m| m.pointer("/version/nvbench/string")));
        if let Some(tool) = &tool {
            device.tool("nvbench", tool);
        }
        for Seen {
            name,
            device: id,
            clock_hz,
        } in &seen
        {
            let Some(id) = *id else { continue };
            let Some(d) = devices.get(&id) else {
                return Err(content!(
                    path,
                    "state `{name}` ran on device {id}, which `devices` does not list"
                ));
            };
            if let Some(model) = &d.name {
                device.accelerator(model);
                let parameters = &mut benchmarks.get(name).result_mut().parameters;
                parameters.insert("device_name".into(), model.clone());
            }
            if let Some(hz) = d.sm_hz {
                device.clock_mhz(SM_MAX_MHZ, hz / 1e6);
                if let Some(clock) = clock_hz.filter(|c| *c < THROTTLE_THRESHOLD * hz) {
                    throttled(&mut benchmarks, name, clock, hz);
                }
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

/// A state of the file being read: its benchmark's name, its device, and the lowest mean SM
/// clock nvbench recorded for it.
struct Seen {
    name: String,
    device: Option<i64>,
    clock_hz: Option<f64>,
}

/// Flags state `name`, whose mean SM clock was `clock` Hz against the device's default
/// `default` Hz, as throttled: not comparable ([`NOT_COMPARABLE`]).
fn throttled(benchmarks: &mut Benchmarks<'_>, name: &str, clock: f64, default: f64) {
    let mhz = |hz: f64| format!("{:.0} MHz", hz / 1e6);
    let (clock, default) = (mhz(clock), mhz(default));
    let clocks = format!("{clock} of {default} default");
    let why = format!(
        "throttled: nvbench's mean SM clock, {clock}, is below 75 % of the device's default {default} (nvbench's throttle threshold)"
    );
    benchmarks.detail(name, "nvbench.throttled", &clocks);
    benchmarks.detail(name, NOT_COMPARABLE, &why);
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
    summary_field(summaries, tag, "value")
}

/// The `data` entry named `field` of the summary tagged `tag`.
fn summary_field(summaries: &[Value], tag: &str, field: &str) -> Option<Value> {
    let named =
        |v: &&Value, key: &str, wanted: &str| v.get(key).and_then(Value::as_str) == Some(wanted);
    let s = summaries.iter().rev().find(|s| named(s, "tag", tag))?;
    let data = s.get("data")?.as_array()?;
    data.iter()
        .rev()
        .find(|d| named(d, "name", field))?
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

/// What a state says of its `--jsonbin` sample times.
enum SampleFile {
    /// It names no file.
    Unnamed,
    /// It names one that is not beside the JSON: the paths looked for, in words.
    Absent(String),
    /// The file found and its samples (seconds).
    Read(PathBuf, Vec<f64>),
}

/// The cold GPU sample times (seconds) of a state from the `--jsonbin` file it names, when
/// that file sits beside the JSON at `path`: the name as written relative to the JSON's folder,
/// else the file's name in `JSON-bin/` there. Refused when the file does not hold `size`
/// float32 values.
fn sample_times(path: &Path, summaries: &[Value]) -> Result<SampleFile, ImportError> {
    let Some(name) = text(summary_field(summaries, SAMPLE_TIMES_FILE, "filename").as_ref()) else {
        return Ok(SampleFile::Unnamed);
    };
    let size = summary_field(summaries, SAMPLE_TIMES_FILE, "size")
        .as_ref()
        .and_then(number)
        .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= MAX_SAMPLES as f64)
        .ok_or_else(|| {
            content!(
                path,
                "`{SAMPLE_TIMES_FILE}` names `{name}` without a usable `size`"
            )
        })? as u64;
    let dir = path.parent().unwrap_or(Path::new(""));
    let written = Path::new(&name);
    let mut candidates = Vec::new();
    if written.is_relative() {
        candidates.push(dir.join(written));
    }
    if let (Some(json), Some(file)) = (path.file_name(), written.file_name()) {
        let mut folder = json.to_os_string();
        folder.push("-bin");
        candidates.push(dir.join(folder).join(file));
    }
    let Some(found) = candidates.iter().find(|c| c.is_file()).cloned() else {
        let looked = candidates.iter().map(|c| format!("`{}`", c.display()));
        let looked: Vec<String> = looked.collect();
        return Ok(SampleFile::Absent(looked.join(" or ")));
    };
    let read_error = read_error(&found);
    // The length first: a file of another size is refused without being read.
    let len = std::fs::metadata(&found).map_err(read_error)?.len();
    let bytes = if len == size * 4 {
        std::fs::read(&found).map_err(read_error)?
    } else {
        Vec::new()
    };
    if bytes.len() as u64 != size * 4 {
        return Err(content!(
            &found,
            "holds {len} bytes, but the JSON says {size} float32 sample times ({} bytes)",
            size * 4
        ));
    }
    let values = bytes
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    Ok(SampleFile::Read(found, values))
}

/// Gives `metric` of state `name` the spread of its one value: `noise` (relative) of it over
/// `n` samples, for Welch's test on summaries. Without either, or once a second file gave the
/// state another value (several runs' means are rank-tested), it has none.
fn set_spread(
    benchmarks: &mut Benchmarks<'_>,
    name: &str,
    metric: &str,
    noise: Option<f64>,
    n: Option<f64>,
) {
    let result = benchmarks.get(name).result_mut();
    let Some(m) = result.metrics.iter_mut().find(|m| m.name == metric) else {
        return;
    };
    m.spread = match (m.values.as_slice(), noise, n) {
        ([v], Some(noise), Some(n)) if noise >= 0.0 && n >= 0.0 && n.fract() == 0.0 => {
            Some(Spread {
                sd: noise * v.abs(),
                n: n as u64,
            })
        }
        _ => None,
    };
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
    seen: &mut Vec<Seen>,
    path: &Path,
    i: usize,
    bench: &Value,
) -> Result<(), ImportError> {
    let bench_name = bench
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| content!(path, "benchmarks[{i}] has no `name`"))?;
    let states = match bench.get("states") {
        Some(Value::Array(states)) => states.as_slice(),
        Some(Value::Null) | None => &[],
        Some(_) => {
            return Err(content!(
                path,
                "benchmark `{bench_name}` has `states` that is not an array"
            ));
        }
    };
    for (j, state) in states.iter().enumerate() {
        let at = format!("benchmark `{bench_name}`, states[{j}]");
        let device = match state.get("device") {
            None | Some(Value::Null) => None,
            Some(d) => {
                let d =
                    number(d).ok_or_else(|| content!(path, "{at}: `device` is not a number"))?;
                Some(d as i64)
            }
        };
        let mut axes = Vec::new();
        let values = state.get("axis_values").and_then(Value::as_array);
        for a in values.into_iter().flatten() {
            let (Some(axis), Some(value)) = (text(a.get("name")), text(a.get("value"))) else {
                return Err(content!(
                    path,
                    "{at}: an axis value without `name` or `value`"
                ));
            };
            axes.push((axis, value));
        }
        let name = state_name(bench_name, device, &axes);
        let parameters = &mut benchmarks.get(&name).result_mut().parameters;
        if let Some(d) = device {
            parameters.insert("device".into(), d.to_string());
        }
        parameters.extend(axes.iter().cloned());
        if !seen.iter().any(|s| s.name == name) {
            seen.push(Seen {
                name: name.clone(),
                device,
                clock_hz: None,
            });
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
        let samples = match sample_times(path, summaries)? {
            SampleFile::Read(file, values) => Some((file, values)),
            SampleFile::Absent(looked) => {
                let note = format!(
                    "the `--jsonbin` sample times were not found beside the JSON (looked for {looked}): kernel_time is the mean"
                );
                benchmarks.note(&name, note);
                None
            }
            SampleFile::Unnamed => None,
        };
        let mut measured = false;
        if let Some((file, values)) = &samples {
            for v in values {
                benchmarks.add(&name, rep, "kernel_time", "s", Source::Timer, *v)?;
            }
            let shown = file.display().to_string();
            append_detail(benchmarks, &name, "nvbench.sample_times", &shown);
            measured = !values.is_empty();
        }
        let sample_size = summary(summaries, SAMPLES).as_ref().and_then(number);
        for (tag, noise, metric) in TIMES {
            let Some(v) = summary(summaries, tag).as_ref().and_then(number) else {
                continue;
            };
            if samples.is_some() && metric == "kernel_time" {
                continue;
            }
            if samples.is_none() && noise.is_some() {
                benchmarks.add(&name, rep, metric, "s", Source::Timer, v)?;
                let noise = noise.and_then(|t| summary(summaries, t).as_ref().and_then(number));
                set_spread(benchmarks, &name, metric, noise, sample_size);
            } else {
                // Shown, not gated: a mean beside samples (which decide), or one whose spread
                // nvbench does not record. The checks `add` makes of a time, made here.
                let ns = v * 1e9;
                if !(ns.is_finite() && ns >= 0.0) {
                    return Err(content!(path, "{at}: `{tag}` is {v} s, not a time"));
                }
                let (timer, lower) = (Source::Timer, Direction::Lower);
                let collector = benchmarks.get(&name);
                let added = collector.add_counter(rep, metric, "ns", timer, lower, false, ns);
                added.map_err(|e| content!(path, "benchmark `{name}`: {e}"))?;
            }
            measured = true;
        }
        let gpu_mean = summary(summaries, GPU_MEAN).as_ref().and_then(number);
        let clock = summary(summaries, SM_CLOCK).as_ref().and_then(number);
        if let (Some(hz), Some(s)) = (clock, seen.iter_mut().find(|s| s.name == name)) {
            s.clock_hz = Some(s.clock_hz.map_or(hz, |low| low.min(hz)));
        }
        if let (Some(t), Some(hz)) = (gpu_mean, clock) {
            let (cycles, derived) = (t * hz, Source::Derived);
            benchmarks.add(&name, rep, "kernel_cycles", "cycles", derived, cycles)?;
            let noise = summary(summaries, GPU_NOISE).as_ref().and_then(number);
            set_spread(benchmarks, &name, "kernel_cycles", noise, sample_size);
        }
        #[rustfmt::skip]
        let kept = [(SAMPLES, "nvbench.samples"), (GPU_NOISE, "nvbench.noise"),
                    (SM_CLOCK, "nvbench.sm_clock_hz")];
        for (tag, key) in kept {
            if let Some(v) = text(summary(summaries, tag).as_ref()) {
                append_detail(benchmarks, &name, key, &v);
            }
        }
        if measured {
            counts.insert(name.clone(), rep + 1);
            benchmarks.imported(&name, path, rep + 1);
            let note = if samples.is_some() {
                SAMPLES_NOTE
            } else {
                SUMMARY_NOTE
            };
            benchmarks.note(&name, note.to_string());
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
        let policies = Policies::permissive();
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
        let (small, large) = (
            "copy/Device=0/Size=256/T=F32",
            "copy/Device=0/Size=512/T=F32",
        );
        assert_eq!(names, [small, large]);
        let b = &r.benchmarks[0];
        assert_eq!(b.metric("kernel_time").unwrap().values, [2_000_000.0]);
        assert_eq!(b.metric("batch_kernel_time").unwrap().values, [1_500_000.0]);
        // The means keep their spread for Welch's test; the batch time has none and does not
        // gate.
        let spread = |m: &str| b.metric(m).unwrap().spread.map(|s| (s.sd, s.n));
        assert_eq!(spread("kernel_time"), Some((20_000.0, 120)));
        assert_eq!(spread("kernel_cycles"), Some((30_000.0, 120)));
        assert_eq!(spread("batch_kernel_time"), None);
        assert!(!b.metric("batch_kernel_time").unwrap().gate.gates);
        assert_eq!(b.metric("kernel_time").unwrap().source, Source::Timer);
        // 2 ms at 1.5 GHz.
        let cycles = b.metric("kernel_cycles").unwrap();
        let cycles = (cycles.values[0], cycles.source);
        assert_eq!(cycles, (3_000_000.0, Source::Derived));
        assert!(b.metric("cpu_time").is_none());
        assert_eq!(b.provenance.details["nvbench.samples"], "120");
        assert_eq!(b.provenance.details["nvbench.noise"], "0.01");
        assert_eq!(b.provenance.details["nvbench.version"], "0.1.0");
        assert_eq!(b.parameters["Size"], "256");
        assert_eq!(b.parameters["device"], "0");
        assert_eq!(b.parameters["device_name"], "NVIDIA H100");
        assert_eq!(b.repetitions, 1);
        assert!(b.provenance.notes.contains(&SUMMARY_NOTE.to_string()));
        // 1500 MHz of 1980 is 75.8 %: not throttled.
        assert!(!b.provenance.details.contains_key("nvbench.throttled"));
        // The skipped state is kept, measured nothing, failed nothing, and says why.
        let s = &r.benchmarks[1];
        assert!(s.metrics.is_empty() && s.failure.is_none());
        assert_eq!(s.status, crate::model::results::Status::Ok);
        assert_eq!(s.provenance.details["nvbench.skipped"], "too big");
        assert_eq!(s.provenance.notes, ["skipped by nvbench: too big"]);
        let accelerator = r.environment.accelerator.as_deref();
        assert_eq!(accelerator, Some("NVIDIA H100"), "{:?}", r.environment);
    }

    /// A state of one benchmark, `simple`, whose summaries name a `--jsonbin` file.
    fn jsonbin_state(file: &str, size: usize) -> String {
        let summaries = [
            summary_json(SAMPLES, "Samples", &size.to_string()),
            summary_json(GPU_MEAN, "GPU Time", "0.002"),
            summary_json("nv/cold/time/cpu/mean", "CPU Time", "0.003"),
            format!(
                r#"{{"tag": "{SAMPLE_TIMES_FILE}", "name": "Sample Times File", "data": [{{"name": "filename", "type": "string", "value": "{file}"}}, {{"name": "size", "type": "int64", "value": "{size}"}}]}}"#
            ),
        ]
        .join(",");
        format!(
            r#"{{"benchmarks": [{{"name": "simple", "states": [{{"name": "Device=0", "device": 0, "axis_values": null, "summaries": [{summaries}], "is_skipped": false}}]}}],
               "devices": [{{"id": 0, "name": "NVIDIA H100"}}]}}"#
        )
    }

    #[test]
    fn jsonbin_sample_times_beside_the_json_are_the_samples() {
        let dir = tempfile::tempdir().unwrap();
        let times = [0.001_f32, 0.002, 0.0015];
        let bytes: Vec<u8> = times.iter().flat_map(|t| t.to_le_bytes()).collect();
        std::fs::create_dir(dir.path().join("run.json-bin")).unwrap();
        std::fs::write(dir.path().join("run.json-bin/0.bin"), &bytes).unwrap();
        let policies = Policies::permissive();
        // The name as nvbench writes it (relative to the JSON's folder), and as an older one
        // wrote it (the path it wrote to, elsewhere): both found beside the JSON.
        for written in ["run.json-bin/0.bin", "/elsewhere/run.json-bin/0.bin"] {
            let path = dir.path().join("run.json");
            std::fs::write(&path, jsonbin_state(written, 3)).unwrap();
            let r = import(std::slice::from_ref(&path), &policies).unwrap();
            let b = &r.benchmarks[0];
            let expected: Vec<f64> = times.iter().map(|t| f64::from(*t) * 1e9).collect();
            let kernel = b.metric("kernel_time").unwrap();
            assert_eq!(kernel.values, expected);
            assert!(kernel.gate.gates);
            // The CPU mean is kept, in ns, without gating.
            let cpu = b.metric("cpu_time").unwrap();
            assert_eq!(cpu.values, [3_000_000.0]);
            assert!(!cpu.gate.gates);
            assert_eq!(b.repetitions, 1);
            assert!(b.provenance.notes.contains(&SAMPLES_NOTE.to_string()));
            assert!(b.provenance.details["nvbench.sample_times"].ends_with("0.bin"));
        }
        // A negative mean beside the samples is refused, as `add` refuses one without them.
        let path = dir.path().join("run.json");
        let refusal = |text: String| {
            std::fs::write(&path, text).unwrap();
            let refused = import(std::slice::from_ref(&path), &policies);
            refused.unwrap_err().to_string()
        };
        let negative = jsonbin_state("run.json-bin/0.bin", 3).replace("\"0.003\"", "\"-0.003\"");
        let e = refusal(negative);
        assert_contains!(e, "`nv/cold/time/cpu/mean` is -0.003 s, not a time");
        // A file of the wrong length is refused; a missing one leaves the mean, with a note.
        let err = refusal(jsonbin_state("run.json-bin/0.bin", 4));
        assert_contains!(err, "holds 12 bytes, but the JSON says 4 float32");
        std::fs::write(&path, jsonbin_state("run.json-bin/7.bin", 3)).unwrap();
        let r = import(std::slice::from_ref(&path), &policies).unwrap();
        let b = &r.benchmarks[0];
        assert_eq!(b.metric("kernel_time").unwrap().values, [2_000_000.0]);
        assert!(b.metric("cpu_time").unwrap().gate.gates);
        let notes = &b.provenance.notes;
        let not_found = "the `--jsonbin` sample times were not found";
        assert!(notes.iter().any(|n| n.starts_with(not_found)), "{notes:?}");
        assert!(notes.contains(&SUMMARY_NOTE.to_string()));
    }

    #[test]
    fn a_state_below_nvbenchs_throttle_threshold_is_flagged() {
        let state = |clock: &str| {
            format!(
                r#"{{"name": "Device=0", "device": 0, "axis_values": [{{"name": "C", "type": "string", "value": "{clock}"}}], "is_skipped": false, "summaries": [{}, {}]}}"#,
                summary_json(GPU_MEAN, "GPU Time", "0.001"),
                summary_json(SM_CLOCK, "Clock Rate", clock)
            )
        };
        let (low, usual) = (state("1400000000"), state("1600000000"));
        let text = format!(
            r#"{{"devices": [{{"id": 0, "name": "NVIDIA H100", "sm_default_clock_rate": "2000000000"}}],
               "benchmarks": [{{"name": "k", "states": [{low}, {usual}]}}]}}"#
        );
        let r = import_text(&text).unwrap();
        let low = r.benchmark("k/Device=0/C=1400000000").unwrap();
        let details = &low.provenance.details;
        assert_eq!(details["nvbench.throttled"], "1400 MHz of 2000 MHz default");
        let below = "throttled: nvbench's mean SM clock, 1400 MHz, is below 75 %";
        assert!(details[NOT_COMPARABLE].starts_with(below), "{details:?}");
        // 1 ms at 1.4 GHz.
        assert_eq!(low.metric("kernel_cycles").unwrap().values, [1_400_000.0]);
        let usual = r.benchmark("k/Device=0/C=1600000000").unwrap();
        assert!(!usual.provenance.details.contains_key("nvbench.throttled"));
        assert!(!usual.provenance.details.contains_key(NOT_COMPARABLE));
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
            assert_contains!(import_text(text).unwrap_err().to_string(), expected);
        }
    }
}
