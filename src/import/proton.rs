//! `kgate import proton`: Triton Proton's hatchet JSON (`proton.finalize()` → `*.hatchet`).
//!
//! A hatchet file is a JSON array: a call tree (frames with `metrics` and `children`) and,
//! last, the device table. Proton aggregates: a kernel node holds the total `time (ns)` of
//! `count` launches and no distribution, so each kernel yields one sample per file, the mean
//! time per launch (`time`, ns, a device timer), plus `count` and the other metrics per
//! launch: launch metadata (`flops8`…`flops64`, `bytes`) and hardware counters
//! (`sm__cycles_active.avg`-style names, as CUPTI's range profiler reports them, `hardware`).
//! Kernel nodes are the ones carrying `device_type`, or hardware counters without children.
//!
//! A kernel's scopes stay apart: the frames above a kernel (`proton.scope("M=1024")`) are its
//! scope, and a kernel found under several scopes is one benchmark per scope, named
//! `SCOPE/KERNEL` with the scope as its `scope` parameter (a kernel under one scope only
//! keeps its own name). Within one scope, a kernel reached along several paths is summed
//! before dividing. Proton's own frames (`__proton…`, `<captured_at>`) are no scope. The
//! devices the kernels ran on, from the device table, are the results' accelerator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportError, Importer, Policies, content};
use crate::capture::device::{Device, MEM_MAX_MHZ, SM_MAX_MHZ};
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// Totals of one kernel in one scope over the tree.
#[derive(Default)]
struct Totals {
    count: f64,
    time_ns: f64,
    others: BTreeMap<String, f64>,
    device: String,
}

/// A kernel in a scope: `(scope, kernel)`; the scope is the frames above it joined by `/`.
type Key = (String, String);

/// Whether a metric key is a hardware counter as CUPTI names them (`unit__counter.rollup`).
fn is_counter(key: &str) -> bool {
    key.contains("__") && !key.contains(' ')
}

/// Whether a frame is Proton's own rather than a scope of the user's.
fn is_proton_frame(name: &str) -> bool {
    name.starts_with("__proton") || name == "<captured_at>"
}

/// The deepest JSON nesting a hatchet file may have. A scope takes two levels (its frame and
/// its `children`), so this is some 5,000 nested scopes; serde_json's own limit, 128 levels,
/// refused a tree of more than 62 as "not valid JSON". A deeper file is refused by this limit,
/// named.
const MAX_DEPTH: usize = 10_000;

/// The stack of the thread that reads, walks and drops a tree [`MAX_DEPTH`] deep (each level a
/// few frames of recursion); only what is used of it is ever touched.
const TREE_STACK: usize = 256 << 20;

/// The deepest nesting of arrays and objects in JSON `text` (strings skipped).
fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// What a hatchet file holds for the import: each kernel's totals per scope, in the order
/// first met, and the device table.
struct Tree {
    kernels: BTreeMap<Key, Totals>,
    order: Vec<Key>,
    devices: Option<Value>,
    /// The metric keys were spelled as older Proton spelled them (renamed on reading).
    old_keys: bool,
}

impl Tree {
    /// Adds the kernels of `node` and the nodes below it, in the scope `scope`.
    fn walk(
        &mut self,
        node: &Value,
        path: &Path,
        scope: &mut Vec<String>,
    ) -> Result<(), ImportError> {
        let metrics = node.get("metrics").and_then(Value::as_object);
        let children = node.get("children").and_then(Value::as_array);
        let device_type = metrics.and_then(|m| m.get("device_type")?.as_str());
        let counters_only = metrics.is_some_and(|m| m.keys().any(|k| is_counter(k)))
            && children.is_none_or(|c| c.is_empty());
        let name = node.pointer("/frame/name").and_then(Value::as_str);
        if let Some(m) = metrics
            && (device_type.is_some() || counters_only)
        {
            let name = name.ok_or_else(|| content(path, "has a kernel node without `frame.name`, which Proton always writes (an edited or foreign file); pass the `.hatchet` file `proton.finalize()` wrote".into()))?;
            let key = (scope.join("/"), name.to_string());
            if !self.kernels.contains_key(&key) {
                self.order.push(key.clone());
            }
            let t = self.kernels.entry(key).or_default();
            if let Some(device_type) = device_type {
                let device_id = m
                    .get("device_id")
                    .map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_string))
                    .unwrap_or_default();
                t.device = format!("{device_type} {device_id}");
            }
            for (key, value) in m {
                let Some(v) = value.as_f64() else { continue };
                match key.as_str() {
                    "count" => t.count += v,
                    "time (ns)" => t.time_ns += v,
                    "device_id" | "stream_id" | "start_time (ns)" | "end_time (ns)" => {}
                    other => *t.others.entry(other.to_string()).or_insert(0.0) += v,
                }
            }
        }
        if let Some(children) = children {
            // The root and Proton's own frames are no scope.
            let pushed = match name {
                Some(n) if n != "ROOT" && !is_proton_frame(n) && device_type.is_none() => {
                    scope.push(n.to_string());
                    true
                }
                _ => false,
            };
            for c in children {
                self.walk(c, path, scope)?;
            }
            if pushed {
                scope.pop();
            }
        }
        Ok(())
    }
}

/// Reads the hatchet file at `path` and walks its call tree, on a thread whose stack holds a
/// tree [`MAX_DEPTH`] deep (its parse, walk and drop all recurse).
fn read_tree(path: &Path) -> Result<Tree, ImportError> {
    const WHAT: &str = "Proton hatchet";
    let text = input::read_text(path, WHAT, input::MAX_FILE_BYTES)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let depth = json_depth(text);
    if depth > MAX_DEPTH {
        let scopes = MAX_DEPTH / 2;
        return Err(content!(
            path,
            "nests {depth} levels deep, more than the {MAX_DEPTH} kgate reads (some {scopes} nested scopes: each takes two levels)"
        ));
    }
    let read = || -> Result<Tree, ImportError> {
        let mut reader = serde_json::Deserializer::from_str(text);
        reader.disable_recursion_limit();
        let mut doc = serde::Deserialize::deserialize(&mut reader)
            .and_then(|doc: Value| reader.end().map(|()| doc))
            .map_err(|e| input::not_json(path, WHAT, &e))?;
        let tree = doc.as_array_mut().and_then(|a| a.first_mut());
        let old_keys = tree.is_some_and(modernize);
        let parts = doc
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| content(path, "is not a Proton hatchet file: that is a JSON array [call tree, device table], and this is not one; pass the `.hatchet` file `proton.finalize()` wrote (not the `.chrome_trace` of `data=\"trace\"`, which `kgate import chrome-trace` reads)".into()))?;
        let mut tree = Tree {
            kernels: BTreeMap::new(),
            order: Vec::new(),
            devices: parts.last().filter(|_| parts.len() > 1).cloned(),
            old_keys,
        };
        tree.walk(&parts[0], path, &mut Vec::new())?;
        Ok(tree)
    };
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("proton-tree".into())
            .stack_size(TREE_STACK)
            .spawn_scoped(scope, read)
            .map_err(|e| content!(path, "cannot start a thread to read its call tree: {e}"))?
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
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

/// Today's spelling of the metric keys older Proton wrote capitalised (`Count`, `Time (ns)`,
/// `DeviceId`, `DeviceType`, `StartTime (ns)`, `EndTime (ns)`), renamed in 2024.
#[rustfmt::skip]
const OLD_KEYS: [(&str, &str); 6] = [
    ("Count", "count"), ("Time (ns)", "time (ns)"), ("DeviceId", "device_id"),
    ("DeviceType", "device_type"), ("StartTime (ns)", "start_time (ns)"),
    ("EndTime (ns)", "end_time (ns)"),
];

/// Renames the older capitalised metric keys of every node below `node` to today's spelling;
/// true when there were any.
fn modernize(node: &mut Value) -> bool {
    let mut renamed = false;
    if let Some(metrics) = node.get_mut("metrics").and_then(Value::as_object_mut) {
        for (old, new) in OLD_KEYS {
            if !metrics.contains_key(new)
                && let Some(v) = metrics.remove(old)
            {
                metrics.insert(new.to_string(), v);
                renamed = true;
            }
        }
    }
    if let Some(children) = node.get_mut("children").and_then(Value::as_array_mut) {
        for c in children {
            renamed |= modernize(c);
        }
    }
    renamed
}

pub static PROTON: Importer = Importer {
    name: "proton",
    help: "Triton Proton hatchet JSON",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "proton");
    for path in files {
        benchmarks.file(path);
        let Tree {
            kernels,
            order,
            devices,
            old_keys,
        } = read_tree(path)?;
        // A kernel found under several scopes is one benchmark per scope.
        let mut scopes: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (scope, kernel) in &order {
            scopes.entry(kernel).or_default().insert(scope);
        }
        let devices = devices.as_ref();
        let mut device = Device::default();
        for key in &order {
            let (scope, kernel) = key;
            let t = &kernels[key];
            let apart = scopes[kernel.as_str()].len() > 1 && !scope.is_empty();
            let name = if apart {
                format!("{scope}/{kernel}")
            } else {
                kernel.clone()
            };
            let counters = t.others.keys().any(|k| is_counter(k));
            if t.count <= 0.0 && !counters {
                continue;
            }
            let rep = benchmarks.get(&name).result_mut().repetitions;
            // Without a launch count (a counters-only node) the values are as Proton wrote them.
            let per = if t.count > 0.0 { t.count } else { 1.0 };
            if t.count > 0.0 {
                benchmarks.add(&name, rep, "time", "ns", Source::Timer, t.time_ns / per)?;
                benchmarks.add(&name, rep, "count", "", Source::Reported, t.count)?;
            }
            for (key, total) in &t.others {
                let (metric, unit) = unit_of(key);
                let source = if is_counter(key) {
                    Source::Hardware
                } else {
                    Source::Reported
                };
                benchmarks.add(&name, rep, metric, unit, source, total / per)?;
            }
            benchmarks.imported(&name, path, rep + 1);
            if apart {
                let parameters = &mut benchmarks.get(&name).result_mut().parameters;
                parameters.insert("scope".into(), scope.clone());
            }
            if old_keys {
                let note = "the file spells Proton's metric keys the older way (`Count`, `Time (ns)`, `DeviceType`, `DeviceId`): read as today's `count`, `time (ns)`, `device_type`, `device_id`".to_string();
                benchmarks.note(&name, note);
            }
            let samples = if t.count > 0.0 {
                "mean per launch (Proton keeps totals only)"
            } else {
                "counters as Proton recorded them (no launch count)"
            };
            benchmarks.detail(&name, "proton.samples", samples);
            let mut words = t.device.split(' ');
            if let (Some(kind), Some(id), Some(devices)) = (words.next(), words.next(), devices)
                && let Some(info) = devices.get(kind).and_then(|k| k.get(id))
            {
                let arch = info
                    .get("arch")
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_string))
                    .unwrap_or_default();
                let sms = info.get("num_sms").map(Value::to_string);
                let sms = sms.unwrap_or_default();
                let described = format!("{kind} {id}: arch {arch}, {sms} SMs");
                benchmarks.detail(&name, "proton.device", &described);
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
