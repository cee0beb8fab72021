//! `kgate import hyperfine`: `hyperfine --export-json` output.
//!
//! Each result is a benchmark named by its command (or its parameter values, when hyperfine
//! ran a parameter scan); each entry of `times` (seconds) is one sample of `wall_time`, and
//! `memory_usage_byte` (hyperfine ≥ 1.20) gives `max_rss`. A command that exited non-zero
//! (`exit_codes`), or that older hyperfine marked `[ERROR]`, is recorded as a failed benchmark
//! with its samples kept, so the report names it instead of comparing its meaningless times.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportContext, ImportError, Importer, Policies, content};
use crate::model::json_array;
use crate::model::metric::Source;
use crate::model::results::{Failure, FailureKind, RunResults, Status};

/// `kgate import hyperfine`.
pub struct Hyperfine;

impl Importer for Hyperfine {
    fn name(&self) -> &'static str {
        "hyperfine"
    }

    fn help(&self) -> &'static str {
        "hyperfine `--export-json` output"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// Imports hyperfine JSON files.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "hyperfine");
    for path in files {
        benchmarks.file(path);
        // Read as it is parsed, one command's result at a time: `times` holds every run.
        let document =
            input::for_each_json_element(path, "hyperfine `--export-json`", "results", |i, r| {
                record_result(&mut benchmarks, path, i, &r)
            })?;
        if document.array != json_array::Found::Array {
            return Err(ImportError::Content {
                path: path.clone(),
                message: "has no `results` array, so it is not `hyperfine --export-json` output (perhaps `--export-markdown` or another tool's JSON); export with `hyperfine --export-json FILE`".into(),
            });
        }
    }
    benchmarks.finish(files)
}

/// Records the `i`-th element of a file's `results`: one command's runs, its parameters and
/// whether it failed.
fn record_result(
    benchmarks: &mut Benchmarks<'_>,
    path: &Path,
    i: usize,
    r: &Value,
) -> Result<(), ImportError> {
    let command = r.get("command").and_then(Value::as_str).ok_or_else(|| {
        content(path, format!("results[{i}] has no `command`, which every hyperfine version writes (an edited or foreign file); export again with `hyperfine --export-json FILE`"))
    })?;
    let name = command.trim_end_matches("[ERROR]").trim().to_string();
    let times = r.get("times").and_then(Value::as_array).ok_or_else(|| {
        content(path, format!("results[{i}] (`{name}`) has no `times`: kgate needs the individual runs, not only their summary; export again with a current hyperfine (`--export-json FILE`)"))
    })?;
    let start = benchmarks.get(&name).result_mut().repetitions;
    for (k, t) in times.iter().enumerate() {
        let v = t.as_f64().ok_or_else(|| ImportError::Content {
            path: path.to_path_buf(),
            message: format!("results[{i}].times[{k}] is not a number, which hyperfine never writes (an edited file); export again with `hyperfine --export-json FILE`"),
        })?;
        let rep = start + k as u32;
        benchmarks.add(&name, rep, "wall_time", "s", Source::Timer, v)?;
        if let Some(m) = r
            .get("memory_usage_byte")
            .and_then(|m| m.get(k))
            .and_then(Value::as_f64)
        {
            benchmarks.add(&name, rep, "max_rss", "byte", Source::Reported, m)?;
        }
    }
    benchmarks.imported(&name, path, start + times.len() as u32);
    if let Some(params) = r.get("parameters").and_then(Value::as_object) {
        let result = benchmarks.get(&name).result_mut();
        for (k, v) in params {
            let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            result.parameters.insert(k.clone(), shown);
        }
    }
    let bad_codes: Vec<String> = r
        .get("exit_codes")
        .and_then(Value::as_array)
        .map(|codes| {
            codes
                .iter()
                .filter(|c| c.as_i64() != Some(0))
                .map(|c| c.to_string())
                .collect()
        })
        .unwrap_or_default();
    let marked = command.trim_end().ends_with("[ERROR]");
    if marked || !bad_codes.is_empty() {
        let message = if bad_codes.is_empty() {
            "hyperfine marked the command `[ERROR]`: it exited non-zero (run with --ignore-failure)"
                .to_string()
        } else {
            format!(
                "hyperfine recorded exit codes {} (null: killed by a signal)",
                bad_codes.join(", ")
            )
        };
        let result = benchmarks.get(&name).result_mut();
        result.status = Status::Failed;
        result.failure = Some(Failure {
            kind: FailureKind::ExitStatus,
            message,
            stderr_tail: String::new(),
        });
    }
    Ok(())
}
