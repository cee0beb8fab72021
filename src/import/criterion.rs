//! `kgate import criterion`: Criterion.rs results (`target/criterion/<id>/new/estimates.json`).
//!
//! `estimates.json` holds only bootstrap estimates (mean, median, slope, standard deviation,
//! each with a confidence interval) in nanoseconds. When the `sample.json` Criterion writes
//! next to it is there, each of its samples (total time over `iters` iterations) becomes one
//! sample of `time` per iteration, which is what the rank test needs; otherwise the mean point
//! estimate is the one sample and the provenance says so. The benchmark is named by
//! `benchmark.json`'s `full_id` when present, else by the folder above `new/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::gbench::read_json;
use super::{ImportContext, ImportError, Importer, Policies};
use crate::model::metric::Source;
use crate::model::results::RunResults;

fn content(path: &Path, message: String) -> ImportError {
    ImportError::Content {
        path: path.to_path_buf(),
        message,
    }
}

/// The name of the benchmark whose `estimates.json` is `path`.
fn benchmark_name(path: &Path) -> String {
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Ok(doc) = read_json(&dir.join("benchmark.json"), false)
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

/// `kgate import criterion`.
pub struct Criterion;

impl Importer for Criterion {
    fn name(&self) -> &'static str {
        "criterion"
    }

    fn help(&self) -> &'static str {
        "Criterion.rs `estimates.json` (with `sample.json` beside it when present)"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// Imports Criterion `estimates.json` files (or the folders holding them).
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "criterion");
    for given in files {
        let path = if given.is_dir() {
            given.join("estimates.json")
        } else {
            given.clone()
        };
        let estimates = read_json(&path, false)?;
        benchmarks.file(&path);
        let mean = estimates
            .pointer("/mean/point_estimate")
            .and_then(Value::as_f64)
            .ok_or_else(|| {
                content(
                    &path,
                    "has no `mean.point_estimate`; expected Criterion's estimates.json".into(),
                )
            })?;
        let name = benchmark_name(&path);
        let start = benchmarks.get(&name).result_mut().repetitions;
        let sample_path = path.with_file_name("sample.json");
        let mut n = 0u32;
        if sample_path.exists() {
            let sample = read_json(&sample_path, false)?;
            benchmarks.file(&sample_path);
            let iters = sample.get("iters").and_then(Value::as_array);
            let times = sample.get("times").and_then(Value::as_array);
            let (Some(iters), Some(times)) = (iters, times) else {
                return Err(content(
                    &sample_path,
                    "has no `iters` and `times` arrays".into(),
                ));
            };
            if iters.len() != times.len() {
                return Err(content(
                    &sample_path,
                    format!("has {} `iters` but {} `times`", iters.len(), times.len()),
                ));
            }
            for (i, t) in iters.iter().zip(times) {
                let (Some(i), Some(t)) = (i.as_f64(), t.as_f64()) else {
                    return Err(content(
                        &sample_path,
                        "holds a non-number in `iters` or `times`".into(),
                    ));
                };
                if i > 0.0 {
                    benchmarks.add(&name, start + n, "time", "ns", Source::Timer, t / i)?;
                    n += 1;
                }
            }
            benchmarks.imported(&name, &sample_path, start + n);
        } else {
            benchmarks.add(&name, start, "time", "ns", Source::Timer, mean)?;
            n = 1;
            benchmarks.detail(
                &name,
                "criterion.samples",
                "mean point estimate only (no sample.json)",
            );
        }
        benchmarks.imported(&name, &path, start + n);
        for key in ["mean", "median", "slope"] {
            if let (Some(p), Some(lo), Some(hi), Some(level)) = (
                estimates
                    .pointer(&format!("/{key}/point_estimate"))
                    .and_then(Value::as_f64),
                estimates
                    .pointer(&format!("/{key}/confidence_interval/lower_bound"))
                    .and_then(Value::as_f64),
                estimates
                    .pointer(&format!("/{key}/confidence_interval/upper_bound"))
                    .and_then(Value::as_f64),
                estimates
                    .pointer(&format!("/{key}/confidence_interval/confidence_level"))
                    .and_then(Value::as_f64),
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
