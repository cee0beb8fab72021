//! `kgate import proton`: Triton Proton's hatchet JSON (`proton.finalize()` → `*.hatchet`).
//!
//! A hatchet file is a JSON array: a call tree (frames with `metrics` and `children`) and,
//! last, the device table. Proton aggregates: a kernel node holds the total `time (ns)` of
//! `count` launches and no distribution, so each kernel yields one sample per file, the mean
//! time per launch (`time`, ns, a device timer), plus `count` and the launch-metadata metrics
//! (`flops8`…`flops64`, `bytes`) per launch. Kernel nodes are the ones carrying
//! `device_type`; a kernel reached along several paths is summed before dividing. The
//! devices the kernels ran on, from the device table, are the results' accelerator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::device::{Device, MEM_MAX_MHZ, SM_MAX_MHZ};
use super::gbench::read_json;
use super::{ImportContext, ImportError, Importer, Policies};
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// Totals of one kernel over the tree.
#[derive(Default)]
struct Totals {
    count: f64,
    time_ns: f64,
    others: BTreeMap<String, f64>,
    device: String,
}

fn walk(
    node: &Value,
    path: &Path,
    kernels: &mut BTreeMap<String, Totals>,
    order: &mut Vec<String>,
) -> Result<(), ImportError> {
    let metrics = node.get("metrics").and_then(Value::as_object);
    if let Some(m) = metrics
        && let Some(device_type) = m.get("device_type").and_then(Value::as_str)
    {
        let name = node
            .pointer("/frame/name")
            .and_then(Value::as_str)
            .ok_or_else(|| ImportError::Content {
                path: path.to_path_buf(),
                message: "a kernel node has no `frame.name`".into(),
            })?;
        if !kernels.contains_key(name) {
            order.push(name.to_string());
        }
        let t = kernels.entry(name.to_string()).or_default();
        let device_id = m
            .get("device_id")
            .map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_string))
            .unwrap_or_default();
        t.device = format!("{device_type} {device_id}");
        for (key, value) in m {
            let Some(v) = value.as_f64() else { continue };
            match key.as_str() {
                "count" => t.count += v,
                "time (ns)" => t.time_ns += v,
                "device_id" => {}
                other => *t.others.entry(other.to_string()).or_insert(0.0) += v,
            }
        }
    }
    if let Some(children) = node.get("children").and_then(Value::as_array) {
        for c in children {
            walk(c, path, kernels, order)?;
        }
    }
    Ok(())
}

/// The unit of a Proton metric key (`time (ns)` style keys carry theirs).
fn unit_of(key: &str) -> (&str, &str) {
    if let Some(open) = key.rfind(" (")
        && key.ends_with(')')
    {
        return (&key[..open], &key[open + 2..key.len() - 1]);
    }
    match key {
        "bytes" => ("bytes", "byte"),
        k if k.starts_with("flops") => (k, "flop"),
        k => (k, ""),
    }
}

/// `kgate import proton`.
pub struct Proton;

impl Importer for Proton {
    fn name(&self) -> &'static str {
        "proton"
    }

    fn help(&self) -> &'static str {
        "Triton Proton hatchet JSON"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// Imports Proton hatchet files.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "proton");
    for path in files {
        benchmarks.file(path);
        let doc = read_json(path, false)?;
        let parts =
            doc.as_array()
                .filter(|a| !a.is_empty())
                .ok_or_else(|| {
                    ImportError::Content {
                path: path.clone(),
                message:
                    "is not a Proton hatchet file: expected a JSON array [call tree, device table]"
                        .into(),
            }
                })?;
        let mut kernels = BTreeMap::new();
        let mut order = Vec::new();
        walk(&parts[0], path, &mut kernels, &mut order)?;
        let devices = parts.last().filter(|_| parts.len() > 1);
        let mut device = Device::default();
        for name in order {
            let t = &kernels[&name];
            if t.count <= 0.0 {
                continue;
            }
            let rep = benchmarks.get(&name).result_mut().repetitions;
            benchmarks.add(&name, rep, "time", "ns", Source::Timer, t.time_ns / t.count)?;
            benchmarks.add(&name, rep, "count", "", Source::Reported, t.count)?;
            for (key, total) in &t.others {
                let (metric, unit) = unit_of(key);
                benchmarks.add(&name, rep, metric, unit, Source::Reported, total / t.count)?;
            }
            benchmarks.imported(&name, path, rep + 1);
            benchmarks.detail(
                &name,
                "proton.samples",
                "mean per launch (Proton keeps totals only)",
            );
            let mut words = t.device.split(' ');
            if let (Some(kind), Some(id), Some(devices)) = (words.next(), words.next(), devices)
                && let Some(info) = devices.get(kind).and_then(|k| k.get(id))
            {
                let arch = info
                    .get("arch")
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string))
                    .unwrap_or_default();
                let sms = info
                    .get("num_sms")
                    .map(Value::to_string)
                    .unwrap_or_default();
                benchmarks.detail(
                    &name,
                    "proton.device",
                    &format!("{kind} {id}: arch {arch}, {sms} SMs"),
                );
                // The environment names each device a kernel ran on, without its index.
                device.accelerator(&format!("{kind} arch {arch}, {sms} SMs"));
                for (key, clock) in [
                    ("clock_rate", SM_MAX_MHZ),
                    ("memory_clock_rate", MEM_MAX_MHZ),
                ] {
                    if let Some(khz) = info.get(key).and_then(Value::as_f64) {
                        device.clock_khz(clock, khz);
                    }
                }
            }
        }
        benchmarks.device(path, device)?;
    }
    benchmarks.finish(files)
}
