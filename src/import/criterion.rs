//! `kgate import criterion`: Criterion.rs results (`target/criterion/<id>/new/estimates.json`).
//!
//! `estimates.json` holds only bootstrap estimates (mean, median, slope, standard deviation,
//! each with a confidence interval) in nanoseconds. When the `sample.json` Criterion writes
//! next to it is there, each of its samples (total time over `iters` iterations) becomes one
//! sample of `time` per iteration, which is what the rank test needs; otherwise the mean point
//! estimate is the one sample and the provenance says so. The benchmark is named by
//! `benchmark.json`'s `full_id` when present, else by the folder above `new/`.
//!
//! Criterion 0.2 and older wrote another schema (capitalized statistics, `{"Mean": …}`); it is
//! refused with that story and the way out (Criterion 0.3 or newer), not as a missing key.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportError, Importer, Policies, content};
use crate::model::metric::Source;
use crate::model::results::RunResults;

fn read_json(path: &Path) -> Result<Value, ImportError> {
    input::read_json(path, "Criterion")
}

/// The statistics of Criterion 0.2 and older, whose `estimates.json` names them capitalized.
const OLD_STATISTICS: [&str; 5] = ["Mean", "Median", "MedianAbsDev", "Slope", "StdDev"];

/// Why `estimates` cannot be read: an old schema, or not Criterion's file at all.
fn refusal(estimates: &Value) -> String {
    let old = estimates
        .as_object()
        .is_some_and(|o| OLD_STATISTICS.iter().any(|k| o.contains_key(*k)));
    if old {
        "is an `estimates.json` in the schema of Criterion 0.2 or older (`Mean`, `Median`, … capitalized), which kgate does not read: re-run the benchmarks with Criterion 0.3 or newer and import `target/criterion/<id>/new/estimates.json`".into()
    } else {
        "has no `mean.point_estimate`, so it is not Criterion's `estimates.json`: import `target/criterion/<id>/new/estimates.json` (or that `new/` folder), which Criterion 0.3 and newer write".into()
    }
}

/// The name of the benchmark whose `estimates.json` is `path`.
fn benchmark_name(path: &Path) -> String {
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Ok(doc) = read_json(&dir.join("benchmark.json"))
        && let Some(id) = doc.get("full_id").and_then(Value::as_str)
    {
        return id.to_string();
    }
    let folder = if dir.file_name().is_some_and(|n| n == "new" || n == "base") {
        dir.parent()
    } else {
        Some(dir)
    };
    folder
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "criterion".to_string())
}

/// The rates a benchmark's declared `throughput` (in `benchmark.json` beside
/// `estimates.json`) makes of its time per iteration: `(metric, unit, amount per iteration)`,
/// and a note on what was made, or on a throughput kgate cannot read.
fn throughput(dir: &Path) -> (Vec<(&'static str, &'static str, f64)>, Option<String>) {
    let Ok(doc) = read_json(&dir.join("benchmark.json")) else {
        return (Vec::new(), None);
    };
    let Some(declared) = doc.get("throughput").filter(|t| !t.is_null()) else {
        return (Vec::new(), None);
    };
    let amount = |key: &str| declared.get(key).and_then(Value::as_f64);
    let both = |key: &str| declared.get("ElementsAndBytes")?.get(key)?.as_f64();
    let mut rates = Vec::new();
    if let Some(n) = amount("Bytes").or(amount("BytesDecimal")).or(both("bytes")) {
        rates.push(("bytes_per_second", "bytes/s", n));
    }
    if let Some(n) = amount("Elements").or(both("elements")) {
        rates.push(("elements_per_second", "elements/s", n));
    }
    let shown = declared.to_string();
    let note = if rates.is_empty() {
        format!(
            "Criterion's throughput `{shown}` is not one kgate reads (`Bytes`, `BytesDecimal`, `Elements`, `ElementsAndBytes`): no rate was made of it"
        )
    } else {
        let made: Vec<String> = rates
            .iter()
            .map(|(m, u, n)| format!("`{m}` ({n} per iteration / time per iteration, in {u})"))
            .collect();
        format!(
            "Criterion's throughput `{shown}`: recorded as {}, higher is better, a sample for each time sample",
            made.join(" and ")
        )
    };
    (rates, Some(note))
}

pub static CRITERION: Importer = Importer {
    name: "criterion",
    help: "Criterion.rs `estimates.json` (with `sample.json` beside it when present)",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Imports Criterion `estimates.json` files (or the folders holding them).
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "criterion");
    for given in files {
        let path = if given.is_dir() {
            let inside = given.join("estimates.json");
            if !inside.exists() {
                return Err(content(
                    given,
                    "is a folder without `estimates.json`, so not a Criterion benchmark's result folder: pass `target/criterion/<id>/new` (or the `estimates.json` in it)".into(),
                ));
            }
            inside
        } else {
            given.clone()
        };
        let estimates = read_json(&path)?;
        benchmarks.file(&path);
        let mean = estimates
            .pointer("/mean/point_estimate")
            .and_then(Value::as_f64)
            .ok_or_else(|| content(&path, refusal(&estimates)))?;
        let name = benchmark_name(&path);
        let (rates, note) = throughput(path.parent().unwrap_or(Path::new(".")));
        let start = benchmarks.get(&name).result_mut().repetitions;
        // The time per iteration of a sample, and the rates the throughput makes of it.
        let add_time = |benchmarks: &mut Benchmarks<'_>, rep: u32, t: f64| {
            benchmarks.add(&name, rep, "time", "ns", Source::Timer, t)?;
            for (metric, unit, amount) in &rates {
                if t > 0.0 {
                    benchmarks.add(&name, rep, metric, unit, Source::Timer, amount * 1e9 / t)?;
                }
            }
            Ok::<(), ImportError>(())
        };
        let sample_path = path.with_file_name("sample.json");
        let mut n = 0u32;
        if sample_path.exists() {
            let sample = read_json(&sample_path)?;
            benchmarks.file(&sample_path);
            let iters = sample.get("iters").and_then(Value::as_array);
            let times = sample.get("times").and_then(Value::as_array);
            let (Some(iters), Some(times)) = (iters, times) else {
                return Err(content(
                    &sample_path,
                    "has no `iters` and `times` arrays, so it is not the `sample.json` Criterion 0.3 and newer write; remove it to import the mean estimate alone, or re-run the benchmark".into(),
                ));
            };
            if iters.len() != times.len() {
                let (n_iters, n_times) = (iters.len(), times.len());
                return Err(content!(
                    &sample_path,
                    "has {n_iters} `iters` but {n_times} `times`, so its samples cannot be paired (a truncated or edited file); re-run the benchmark, or remove it to import the mean estimate alone"
                ));
            }
            for (i, t) in iters.iter().zip(times) {
                let (Some(i), Some(t)) = (i.as_f64(), t.as_f64()) else {
                    return Err(content(
                        &sample_path,
                        "holds a non-number in `iters` or `times`, which Criterion never writes (an edited file); re-run the benchmark, or remove it to import the mean estimate alone".into(),
                    ));
                };
                if i > 0.0 {
                    add_time(&mut benchmarks, start + n, t / i)?;
                    n += 1;
                }
            }
            benchmarks.imported(&name, &sample_path, start + n);
        } else {
            add_time(&mut benchmarks, start, mean)?;
            n = 1;
            let only = "mean point estimate only (no sample.json)";
            benchmarks.detail(&name, "criterion.samples", only);
        }
        benchmarks.imported(&name, &path, start + n);
        if let Some(note) = note {
            benchmarks.note(&name, note);
        }
        for key in ["mean", "median", "slope"] {
            let at = |field: &str| estimates.pointer(&format!("/{key}/{field}"))?.as_f64();
            let interval = |end: &str| at(&format!("confidence_interval/{end}"));
            if let (Some(p), Some(lo), Some(hi), Some(level)) = (
                at("point_estimate"),
                interval("lower_bound"),
                interval("upper_bound"),
                interval("confidence_level"),
            ) {
                benchmarks.detail(
                    &name,
                    &format!("criterion.{key}"),
                    &format!("{p:.3} ns ({:.0} % CI {lo:.3} … {hi:.3})", level * 100.0),
                );
            }
        }
    }
    benchmarks.finish(files)
}
