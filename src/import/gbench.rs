//! `kgate import gbench`: google/benchmark `--benchmark_format=json` output.
//!
//! google/benchmark writes non-finite doubles as bare `NaN`, `Infinity` and `-Infinity`, which
//! strict JSON parsers refuse; those tokens are rewritten to `null` outside strings before
//! serde_json reads the file, and a metric whose value was non-finite is skipped for that run.
//! Every `iteration` run is one sample; aggregates (`mean`, `median`, `stddev`, `cv`) are
//! derived from those samples and are used only when the file holds nothing else
//! (`--benchmark_report_aggregates_only`), in which case the median is the one sample.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportContext, ImportError, Importer, Policies};
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// Keys of a run that are not user counters.
const KNOWN_KEYS: [&str; 27] = [
    "name",
    "family_index",
    "per_family_instance_index",
    "run_name",
    "run_type",
    "repetitions",
    "repetition_index",
    "threads",
    "aggregate_name",
    "aggregate_unit",
    "error_occurred",
    "error_message",
    "skipped",
    "skip_message",
    "iterations",
    "real_time",
    "cpu_time",
    "time_unit",
    "label",
    "big_o",
    "cpu_coefficient",
    "real_coefficient",
    "rms",
    "allocs_per_iter",
    "max_bytes_used",
    "total_allocated_bytes",
    "net_heap_growth",
];

/// Rewrites bare `NaN`, `Infinity` and `-Infinity` (outside strings) to `null`; the text as
/// it is when it holds neither word (most files: a rewrite copies the whole text).
pub fn strict_json(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    if memchr::memmem::find(bytes, b"NaN").is_none()
        && memchr::memmem::find(bytes, b"Infinity").is_none()
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        // Bytes, not `str` slices: outside strings any byte may follow (a stray non-ASCII
        // character), and slicing text there would split a character.
        let token = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| bytes[i..].starts_with(t.as_bytes()));
        if let Some(t) = token {
            out.push_str(&text[copied..i]);
            out.push_str("null");
            i += t.len();
            copied = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The JSON document of a google/benchmark file: read within [`input::MAX_FILE_BYTES`], a
/// leading byte-order mark skipped (editors and PowerShell on Windows write one), bare
/// non-finite tokens rewritten.
fn read_json(path: &Path) -> Result<Value, ImportError> {
    let text = input::read_text(path, "google/benchmark JSON", input::MAX_FILE_BYTES)?;
    let text = strict_json(text.strip_prefix('\u{feff}').unwrap_or(&text));
    serde_json::from_str(&text).map_err(|e| ImportError::Content {
        path: path.to_path_buf(),
        message: format!(
            "not valid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ),
    })
}

fn content(path: &Path, message: String) -> ImportError {
    ImportError::Content {
        path: path.to_path_buf(),
        message,
    }
}

/// `kgate import gbench`.
pub struct Gbench;

impl Importer for Gbench {
    fn name(&self) -> &'static str {
        "gbench"
    }

    fn help(&self) -> &'static str {
        "google/benchmark JSON"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// Imports google/benchmark JSON files.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "gbench");
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        let doc = read_json(path)?;
        let runs = doc
            .get("benchmarks")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                content(
                    path,
                    "has no `benchmarks` array; expected `--benchmark_format=json` output".into(),
                )
            })?;
        let has_iterations = runs
            .iter()
            .any(|r| r.get("run_type").and_then(Value::as_str) != Some("aggregate"));
        for (i, run) in runs.iter().enumerate() {
            let run_type = run
                .get("run_type")
                .and_then(Value::as_str)
                .unwrap_or("iteration");
            if run_type == "aggregate"
                && (has_iterations
                    || run.get("aggregate_name").and_then(Value::as_str) != Some("median"))
            {
                continue;
            }
            let name = run
                .get("run_name")
                .or_else(|| run.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| content(path, format!("benchmarks[{i}] has no `name`")))?
                .to_string();
            if run.get("error_occurred").and_then(Value::as_bool) == Some(true)
                || run.get("skipped").and_then(Value::as_bool) == Some(true)
            {
                let message = run
                    .get("error_message")
                    .or_else(|| run.get("skip_message"))
                    .and_then(Value::as_str)
                    .unwrap_or("error_occurred");
                let result = benchmarks.get(&name).result_mut();
                result.status = crate::model::results::Status::Failed;
                result.failure = Some(crate::model::results::Failure {
                    kind: crate::model::results::FailureKind::ExitStatus,
                    message: format!("google/benchmark reported: {message}"),
                    stderr_tail: String::new(),
                });
                continue;
            }
            let unit = run.get("time_unit").and_then(Value::as_str).unwrap_or("ns");
            if !matches!(unit, "ns" | "us" | "ms" | "s") {
                return Err(content(
                    path,
                    format!("benchmarks[{i}] has time_unit `{unit}`; expected ns, us, ms or s"),
                ));
            }
            let rep = counts.entry(name.clone()).or_insert(0);
            for key in ["real_time", "cpu_time"] {
                if let Some(v) = run.get(key).and_then(Value::as_f64) {
                    benchmarks.add(&name, *rep, key, unit, Source::Timer, v)?;
                }
            }
            if let Some(map) = run.as_object() {
                for (key, value) in map {
                    if KNOWN_KEYS.contains(&key.as_str()) {
                        continue;
                    }
                    if let Some(v) = value.as_f64() {
                        benchmarks.add(&name, *rep, key, "", Source::Reported, v)?;
                    }
                }
            }
            *rep += 1;
            let n = *rep;
            benchmarks.imported(&name, path, n);
            if run_type == "aggregate" {
                benchmarks.detail(&name, "gbench.samples", "median aggregate only");
            }
        }
        if let Some(version) = doc
            .pointer("/context/library_version")
            .and_then(Value::as_str)
        {
            for name in benchmarks.names().to_vec() {
                benchmarks.detail(&name, "gbench.version", version);
            }
        }
    }
    benchmarks.finish(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_non_finite_tokens_become_null_outside_strings() {
        let text = r#"{"a": NaN, "b": -Infinity, "c": Infinity, "d": "NaN \" Infinity"}"#;
        let v: Value = serde_json::from_str(&strict_json(text)).unwrap();
        assert!(v["a"].is_null() && v["b"].is_null() && v["c"].is_null());
        assert_eq!(v["d"], "NaN \" Infinity");
    }
}
