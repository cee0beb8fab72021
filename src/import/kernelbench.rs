//! `kgate import kernelbench`: the outputs of ScalingIntelligence's KernelBench.
//!
//! Two files carry its timings:
//! - `runs/RUN/eval_results.json` of `scripts/eval_from_generations.py`: per problem id a list
//!   of evaluated samples (older versions: one object), each with `compiled`, `correctness`,
//!   `metadata` (what went wrong) and `runtime_stats` (`mean`, `std`, `num_trials`, the GPU's
//!   name as `hardware`; milliseconds). One benchmark per (problem, sample),
//!   `problem_ID/sample_N`. A sample that did not compile failed (its build); one whose output
//!   did not match the reference has its correctness failed, with KernelBench's reason; a
//!   sample KernelBench did not time (`runtime` −1) is kept without measurements and says so.
//! - `results/timing/GPU/baseline_time_*.json` of `scripts/generate_baseline_time.py`: the
//!   reference (PyTorch) timings, per level and problem file: `level1/1_Square_matrix_…`.
//!
//! KernelBench keeps summaries, not samples: `kernel_time` is the mean of `num_trials` timed
//! launches, one value per file, and it keeps the standard deviation and count behind it (its
//! `spread`) for Welch's test on summaries. KernelBench rounds the mean and the deviation to
//! three significant digits, which a note on every benchmark states: a change smaller than
//! that rounding cannot be seen. Its `excessive_speedup` warning (a kernel far faster than the
//! reference, which KernelBench treats as suspect) is kept as a note.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::builder::Benchmarks;
use super::{ImportError, Importer, Policies, content, input};
use crate::capture::device::Device;
use crate::model::metric::Source;
use crate::model::results::{Correctness, FailureKind, RunResults, Spread};

/// The note on every timed benchmark.
const SUMMARY_NOTE: &str = "KernelBench keeps a summary, not samples: kernel_time is the mean of `kernelbench.trials` timed launches, rounded by KernelBench to three significant digits, with their standard deviation (also rounded) for Welch's test; a change smaller than that rounding cannot be seen";

pub static KERNELBENCH: Importer = Importer {
    name: "kernelbench",
    help: "KernelBench eval_results.json or baseline_time_*.json",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "kernelbench");
    for path in files {
        benchmarks.file(path);
        let document = input::read_json(path, "KernelBench JSON")?;
        let Some(top) = document.as_object().filter(|o| !o.is_empty()) else {
            return Err(not_kernelbench(path));
        };
        let mut device = Device::default();
        if top.keys().all(|k| k.parse::<u64>().is_ok()) {
            for (problem, samples) in top {
                let samples = match samples {
                    Value::Array(list) => list.iter().collect(),
                    one => vec![one],
                };
                for (i, sample) in samples.into_iter().enumerate() {
                    let id = sample.get("sample_id").and_then(Value::as_u64);
                    let name = format!("problem_{problem}/sample_{}", id.unwrap_or(i as u64));
                    evaluated(&mut benchmarks, &mut device, path, &name, sample)?;
                }
            }
        } else if top.keys().all(|k| k.starts_with("level")) {
            for (level, problems) in top {
                let Some(problems) = problems.as_object() else {
                    return Err(content!(
                        path,
                        "`{level}` is not an object of problems and their timings"
                    ));
                };
                for (file, stats) in problems {
                    let name = format!("{level}/{}", file.trim_end_matches(".py"));
                    timed(&mut benchmarks, &mut device, path, &name, stats)?;
                }
            }
        } else {
            return Err(not_kernelbench(path));
        }
        benchmarks.device(path, device)?;
    }
    benchmarks.finish(files)
}

fn not_kernelbench(path: &Path) -> ImportError {
    content(
        path,
        "is neither KernelBench's eval_results.json (an object keyed by problem id) nor a baseline timing file (keyed by `level1`, `level2`…); give the files KernelBench's eval_from_generations.py or generate_baseline_time.py wrote".into(),
    )
}

/// One evaluated sample of `eval_results.json`.
fn evaluated(
    benchmarks: &mut Benchmarks<'_>,
    device: &mut Device,
    path: &Path,
    name: &str,
    sample: &Value,
) -> Result<(), ImportError> {
    let Some(sample) = sample.as_object() else {
        return Err(content!(
            path,
            "`{name}` is not an object with `compiled`, `correctness` and `runtime`"
        ));
    };
    let flag = |key: &str| sample.get(key).and_then(Value::as_bool);
    let empty = Map::new();
    let metadata = sample.get("metadata").and_then(Value::as_object);
    let metadata = metadata.unwrap_or(&empty);
    let said = |keys: &[&str]| -> Option<String> {
        let parts: Vec<String> = keys
            .iter()
            .filter_map(|k| metadata.get(*k).map(|v| (k, v)))
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    };
    benchmarks.imported(name, path, 0);
    let result = benchmarks.get(name).result_mut();
    if flag("compiled") == Some(false) {
        let why = said(&["compilation_error_name", "compilation_error"]);
        let why = why.unwrap_or_else(|| "no reason recorded".into());
        let message = format!("KernelBench could not compile it ({why})");
        result.fail(FailureKind::Build, message);
        return Ok(());
    }
    match flag("correctness") {
        Some(true) => {
            Correctness::record(&mut result.correctness, true, said(&["correctness_trials"]))
        }
        Some(false) => {
            #[rustfmt::skip]
            let keys = [
                "correctness_issue", "max_difference", "runtime_error_name", "runtime_error",
                "correctness_trials",
            ];
            let why = said(&keys).unwrap_or_else(|| "KernelBench's output check failed".into());
            Correctness::record(&mut result.correctness, false, Some(why));
        }
        None => {}
    }
    if metadata.get("excessive_speedup") == Some(&Value::Bool(true)) {
        result.provenance.notes.push(
            "KernelBench flagged an excessive speedup over the reference (`excessive_speedup`): it treats one as suspect, so check the kernel's answers and how it was timed".into(),
        );
    }
    let stats = sample.get("runtime_stats").filter(|s| {
        s.as_object().is_some_and(|o| !o.is_empty())
            && sample.get("runtime").and_then(Value::as_f64) != Some(-1.0)
    });
    match stats {
        Some(stats) => timed(benchmarks, device, path, name, stats),
        None => {
            let why = said(&["error_during_performance"])
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            benchmarks.note(
                name,
                format!(
                    "KernelBench did not time this sample (`runtime` −1){why}: nothing was measured"
                ),
            );
            Ok(())
        }
    }
}

/// The timing summary `stats` (`mean`, `std`, `num_trials`, ms) of benchmark `name`.
fn timed(
    benchmarks: &mut Benchmarks<'_>,
    device: &mut Device,
    path: &Path,
    name: &str,
    stats: &Value,
) -> Result<(), ImportError> {
    let field = |key: &str| stats.get(key).and_then(Value::as_f64);
    let Some(mean) = field("mean") else {
        return Err(content!(
            path,
            "`{name}`: its timing has no numeric `mean` (milliseconds)"
        ));
    };
    let rep = benchmarks.get(name).result_mut().repetitions;
    benchmarks.add(name, rep, "kernel_time", "ms", Source::Timer, mean)?;
    benchmarks.imported(name, path, rep + 1);
    let trials = field("num_trials");
    if let Some(hardware) = stats.get("hardware").and_then(Value::as_str) {
        device.accelerator(hardware);
        benchmarks.detail(name, "kernelbench.hardware", hardware);
    }
    if let Some(n) = trials {
        benchmarks.detail(name, "kernelbench.trials", &n.to_string());
    }
    let result = benchmarks.get(name).result_mut();
    if let Some(m) = result.metrics.iter_mut().find(|m| m.name == "kernel_time") {
        // The spread of one mean; a second file's mean makes it one value per run, rank-tested.
        m.spread = match (m.values.as_slice(), field("std"), trials) {
            // KernelBench's `std` is NumPy's default, the population deviation (n in the
            // denominator); Welch's test takes the sample deviation (n − 1).
            ([_], Some(sd), Some(n)) if sd >= 0.0 && n >= 2.0 && n.fract() == 0.0 => Some(Spread {
                sd: sd * 1e6 * (n / (n - 1.0)).sqrt(),
                n: n as u64,
            }),
            _ => None,
        };
    }
    benchmarks.note(name, SUMMARY_NOTE.to_string());
    Ok(())
}
