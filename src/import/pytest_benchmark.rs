//! `kgate import pytest-benchmark`: `--benchmark-json` output and `.benchmarks/` storage files.
//!
//! Every number in these files is seconds per iteration. Each round in `stats.data` is one
//! sample of `time`; files edited to stay small hold strings among the rounds (`"... omitted
//! …"`), which are skipped and noted. Files written without `--benchmark-save-data` (and the
//! 2015 schema) hold no rounds: the median is then the one sample, and the provenance says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::{ImportError, Importer, Policies, content};
use crate::model::metric::Source;
use crate::model::results::RunResults;

pub static PYTEST_BENCHMARK: Importer = Importer {
    name: "pytest-benchmark",
    help: "pytest-benchmark JSON",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "pytest-benchmark");
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        // Read as it is parsed, one benchmark at a time: `stats.data` holds every round.
        let mut imported: Vec<String> = Vec::new();
        let what = "pytest-benchmark `--benchmark-json`";
        let document = input::read_json_array(path, what, "benchmarks", |i, b| {
            imported.push(record_benchmark(&mut benchmarks, &mut counts, path, i, &b)?);
            Ok(())
        })?;
        if document.array != input::Found::Array {
            return Err(content(path, "has no `benchmarks` array, so it is not pytest-benchmark JSON; export with `pytest --benchmark-json FILE`, or pass a file from `.benchmarks/` (`--benchmark-autosave`)"
                .into()));
        }
        // pytest-benchmark writes its version after the benchmarks.
        if let Some(v) = document.others.get("version").and_then(Value::as_str) {
            for name in &imported {
                benchmarks.detail(name, "pytest-benchmark.version", v);
            }
        }
    }
    benchmarks.finish(files)
}

/// Records the `i`-th element of a file's `benchmarks`: its rounds (or its median, where the
/// file has none) as samples of the benchmark, whose name it returns.
fn record_benchmark(
    benchmarks: &mut Benchmarks<'_>,
    counts: &mut BTreeMap<String, u32>,
    path: &Path,
    i: usize,
    b: &Value,
) -> Result<String, ImportError> {
    let name = b
        .get("fullname")
        .or_else(|| b.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| content!(path, "benchmarks[{i}] has neither `fullname` nor `name`, which pytest-benchmark always writes (an edited or foreign file); export again with `pytest --benchmark-json FILE`"))?
        .to_string();
    let stats = b.get("stats").ok_or_else(|| content!(path, "benchmark `{name}` has no `stats`, which pytest-benchmark always writes (an edited or foreign file); export again with `pytest --benchmark-json FILE`"))?;
    let rep = counts.entry(name.clone()).or_insert(0);
    let data = stats.get("data").and_then(Value::as_array);
    let rounds: Vec<f64> = data
        .map(|d| d.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    if rounds.is_empty() {
        let median = stats.get("median").and_then(Value::as_f64).ok_or_else(|| {
            content!(path, "benchmark `{name}` has neither `stats.data` nor `stats.median`, so it holds no time kgate can gate on (an edited file); export again with `pytest --benchmark-json FILE`")
        })?;
        benchmarks.add(&name, *rep, "time", "s", Source::Timer, median)?;
        *rep += 1;
        let only = "median only (no stats.data)";
        benchmarks.detail(&name, "pytest-benchmark.samples", only);
    } else {
        for v in &rounds {
            benchmarks.add(&name, *rep, "time", "s", Source::Timer, *v)?;
            *rep += 1;
        }
        let skipped = data.map_or(0, Vec::len) - rounds.len();
        if skipped > 0 {
            let skipped = format!("{skipped} non-numeric entries in stats.data");
            benchmarks.detail(&name, "pytest-benchmark.skipped_data", &skipped);
        }
    }
    benchmarks.imported(&name, path, *rep);
    Ok(name)
}
