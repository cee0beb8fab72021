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
use super::{ImportError, Importer, Policies, content};
use crate::model::metric::Source;
use crate::model::results::{FailureKind, RunResults};

pub static HYPERFINE: Importer = Importer {
    name: "hyperfine",
    help: "hyperfine `--export-json` output",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "hyperfine");
    for path in files {
        benchmarks.file(path);
        // Read as it is parsed, one command's result at a time: `times` holds every run.
        let document =
            input::read_json_array(path, "hyperfine `--export-json`", "results", |i, r| {
                record_result(&mut benchmarks, path, i, &r)
            })?;
        if document.array != input::Found::Array {
            return Err(content(path, "has no `results` array, so it is not `hyperfine --export-json` output (perhaps `--export-markdown` or another tool's JSON); export with `hyperfine --export-json FILE`".into()));
        }
    }
    benchmarks.finish(files)
}

/// A value of the file as a message shows it: its JSON, cut after 40 characters.
fn shown(v: &Value) -> String {
    crate::model::text::cut(&v.to_string(), 40)
}

/// The exit codes of a command that were not 0 (`null`: killed by a signal), from
/// `exit_codes` (absent before hyperfine 1.12). What hyperfine never writes there (an object,
/// `true`, a string, a fraction) is refused by its place: read as "no failures", it passed a
/// command whose exit codes no one could read.
fn bad_exit_codes(
    path: &Path,
    i: usize,
    name: &str,
    codes: Option<&Value>,
) -> Result<Vec<String>, ImportError> {
    let refuse = |at: String, got: &Value| {
        let got = shown(got);
        let wanted = match at.ends_with(']') {
            true => "an exit code",
            false => "a list of exit codes",
        };
        content!(
            path,
            "results[{i}].{at} (`{name}`) is {got}, not {wanted}; hyperfine writes integers there (null for a signal); export again with `hyperfine --export-json FILE`"
        )
    };
    let codes = match codes {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(codes)) => codes,
        Some(other) => return Err(refuse("exit_codes".into(), other)),
    };
    let mut bad = Vec::new();
    for (k, code) in codes.iter().enumerate() {
        match code {
            Value::Null => bad.push("null".to_string()),
            Value::Number(n) if n.as_i64().is_some() => {
                if n.as_i64() != Some(0) {
                    bad.push(n.to_string());
                }
            }
            other => return Err(refuse(format!("exit_codes[{k}]"), other)),
        }
    }
    Ok(bad)
}

/// The peak memory of run `k` from `memory_usage_byte` (hyperfine ≥ 1.20; absent before): a
/// number, or a refusal naming its place where the file holds anything else there.
fn memory_of(
    path: &Path,
    i: usize,
    name: &str,
    memory: Option<&Value>,
    k: usize,
) -> Result<Option<f64>, ImportError> {
    let (at, got) = match memory {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(values)) => match values.get(k) {
            None => return Ok(None),
            Some(v) if v.as_f64().is_some() => return Ok(v.as_f64()),
            Some(v) => (format!("memory_usage_byte[{k}]"), v),
        },
        Some(other) => ("memory_usage_byte".to_string(), other),
    };
    Err(content!(
        path,
        "results[{i}].{at} (`{name}`) is {}, not a number of bytes, which hyperfine never writes (an edited file); export again with `hyperfine --export-json FILE`",
        shown(got)
    ))
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
        content!(path, "results[{i}] has no `command`, which every hyperfine version writes (an edited or foreign file); export again with `hyperfine --export-json FILE`")
    })?;
    let name = command.trim_end_matches("[ERROR]").trim().to_string();
    let times = r.get("times").and_then(Value::as_array).ok_or_else(|| {
        content!(path, "results[{i}] (`{name}`) has no `times`: kgate needs the individual runs, not only their summary; export again with a current hyperfine (`--export-json FILE`)")
    })?;
    let start = benchmarks.get(&name).result_mut().repetitions;
    for (k, t) in times.iter().enumerate() {
        let v = t.as_f64().ok_or_else(|| content!(path, "results[{i}].times[{k}] is not a number, which hyperfine never writes (an edited file); export again with `hyperfine --export-json FILE`"))?;
        let rep = start + k as u32;
        benchmarks.add(&name, rep, "wall_time", "s", Source::Timer, v)?;
        if let Some(m) = memory_of(path, i, &name, r.get("memory_usage_byte"), k)? {
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
    let bad_codes = bad_exit_codes(path, i, &name, r.get("exit_codes"))?;
    let marked = command.trim_end().ends_with("[ERROR]");
    if marked || !bad_codes.is_empty() {
        let codes = bad_codes.join(", ");
        let message = match bad_codes.is_empty() {
            true => "hyperfine marked the command `[ERROR]`: it exited non-zero (run with --ignore-failure)".to_string(),
            false => format!("hyperfine recorded exit codes {codes} (null: killed by a signal)"),
        };
        let result = benchmarks.get(&name).result_mut();
        result.fail(FailureKind::ExitStatus, message);
    }
    Ok(())
}
