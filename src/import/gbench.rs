//! `kgate import gbench`: google/benchmark `--benchmark_format=json` output.
//!
//! google/benchmark writes non-finite doubles as bare `NaN`, `Infinity` and `-Infinity`, which
//! strict JSON parsers refuse; those tokens are rewritten to `null` outside strings before
//! serde_json reads each value (each run, as the file is read), and a metric whose value was
//! non-finite is skipped for that run.
//! Every `iteration` run is one sample; aggregates (`mean`, `median`, `stddev`, `cv`) are
//! derived from those samples and are used only when the file holds nothing else
//! (`--benchmark_report_aggregates_only`), in which case the median is the one sample.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::builder::Benchmarks;
use super::input;
use super::input::{ArrayError, Found, answer_scalars};
use super::{ImportError, Importer, Policies, content};
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// Keys of a run that are not user counters.
#[rustfmt::skip]
const KNOWN_KEYS: [&str; 27] = [
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "aggregate_name", "aggregate_unit", "error_occurred",
    "error_message", "skipped", "skip_message", "iterations", "real_time", "cpu_time", "time_unit",
    "label", "big_o", "cpu_coefficient", "real_coefficient", "rms", "allocs_per_iter",
    "max_bytes_used", "total_allocated_bytes", "net_heap_growth",
];

/// Rewrites bare `NaN`, `Infinity` and `-Infinity` (outside strings) to `null`; the text as
/// it is when it holds neither word (most values: a rewrite copies the text).
pub fn strict_json(text: &str) -> Cow<'_, str> {
    // Searchers built once: the text is each run's as the file is read, hundreds of thousands.
    static NAN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"NaN"));
    static INFINITY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"Infinity"));
    let bytes = text.as_bytes();
    if NAN.find(bytes).is_none() && INFINITY.find(bytes).is_none() {
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

pub static GBENCH: Importer = Importer {
    name: "gbench",
    help: "google/benchmark JSON",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Imports google/benchmark JSON files. Each file's runs are recorded as serde parses them
/// from the file's text: a parsed document of hundreds of thousands of runs would take seven
/// times the file.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "gbench");
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        // Median aggregates wait for the end of the file: they are the samples only when it
        // holds no other run (`--benchmark_report_aggregates_only`).
        let mut medians: Vec<(usize, Run)> = Vec::new();
        let mut has_iterations = false;
        let mut each = |i, run: Run| {
            if run.run_type.as_deref() != Some("aggregate") {
                has_iterations = true;
                record_run(&mut benchmarks, &mut counts, path, i, run).map(|_| ())
            } else {
                if !has_iterations && run.aggregate_name.as_deref() == Some("median") {
                    medians.push((i, run));
                }
                Ok(())
            }
        };
        let what = "google/benchmark JSON";
        let text = input::read_text(path, what, input::MAX_FILE_BYTES)?;
        // A leading byte-order mark is skipped (editors and PowerShell on Windows write one).
        let text = strict_json(text.strip_prefix('\u{feff}').unwrap_or(&text));
        let document = match input::for_each_element(&text, "benchmarks", &mut each) {
            Ok(document) => document,
            Err(ArrayError::Stopped(e)) => return Err(e),
            Err(ArrayError::Json(e)) => {
                let (line, column) = (e.line(), e.column());
                return Err(content!(
                    path,
                    "not valid JSON at line {line}, column {column}: {e}"
                ));
            }
        };
        if document.array != Found::Array {
            return Err(content(
                path,
                "has no `benchmarks` array; expected `--benchmark_format=json` output".into(),
            ));
        }
        if !has_iterations {
            for (i, run) in medians {
                if let Some(name) = record_run(&mut benchmarks, &mut counts, path, i, run)? {
                    benchmarks.detail(&name, "gbench.samples", "median aggregate only");
                }
            }
        }
        let library_version = document
            .others
            .get("context")
            .and_then(|c| c.get("library_version"))
            .and_then(Value::as_str);
        if let Some(version) = library_version {
            for name in benchmarks.names().to_vec() {
                benchmarks.detail(&name, "gbench.version", version);
            }
        }
    }
    benchmarks.finish(files)
}

/// Records one run (the `i`-th of its file) as one sample of its benchmark, whose name it
/// returns, or the benchmark's failure when google/benchmark reported an error or a skip.
fn record_run(
    benchmarks: &mut Benchmarks<'_>,
    counts: &mut BTreeMap<String, u32>,
    path: &Path,
    i: usize,
    run: Run,
) -> Result<Option<String>, ImportError> {
    let name = run
        .name()
        .ok_or_else(|| content!(path, "benchmarks[{i}] has no `name`"))?
        .to_string();
    if run.error_occurred || run.skipped {
        let message = run.error_message.as_ref().or(run.skip_message.as_ref());
        let message = message
            .and_then(|m| m.as_deref())
            .unwrap_or("error_occurred");
        let message = format!("google/benchmark reported: {message}");
        let result = benchmarks.get(&name).result_mut();
        result.fail(crate::model::results::FailureKind::ExitStatus, message);
        return Ok(None);
    }
    let unit = run.time_unit.as_deref().unwrap_or("ns");
    if !matches!(unit, "ns" | "us" | "ms" | "s") {
        return Err(content!(
            path,
            "benchmarks[{i}] has time_unit `{unit}`; expected ns, us, ms or s"
        ));
    }
    let rep = counts.entry(name.clone()).or_insert(0);
    for (key, value) in [("real_time", run.real_time), ("cpu_time", run.cpu_time)] {
        if let Some(v) = value {
            benchmarks.add(&name, *rep, key, unit, Source::Timer, v)?;
        }
    }
    let mut unplaced = Vec::new();
    for (key, v) in run.counters() {
        let unit = counter_unit(&key);
        if unit.is_empty() {
            unplaced.push(format!("`{key}`"));
        }
        benchmarks.add(&name, *rep, &key, &unit, Source::Reported, v)?;
    }
    if !unplaced.is_empty() {
        let note = format!(
            "user counter {} carries no unit in google/benchmark's JSON (nor its flags, such as `kIsRate`): recorded without a unit, lower is better; list it under `metrics` with `direction: higher` if it is a rate",
            unplaced.join(", ")
        );
        benchmarks.note(&name, note);
    }
    *rep += 1;
    benchmarks.imported(&name, path, *rep);
    Ok(Some(name))
}

/// The unit of a user counter, from its name (google/benchmark's JSON writes a counter's
/// value alone, its flags left out): the rates `SetBytesProcessed` and `SetItemsProcessed`
/// write (`bytes_per_second`, `items_per_second`), a name ending in a per-second unit
/// (`GB/s`, `bandwidth_GiB/s`) and FLOP rates (`GFLOPS`); empty for any other counter.
fn counter_unit(key: &str) -> String {
    let lower = key.to_ascii_lowercase();
    let last = key
        .rsplit(|c: char| c.is_whitespace() || matches!(c, '_' | '(' | '['))
        .next()
        .unwrap_or(key)
        .trim_end_matches([')', ']']);
    if lower == "bytes_per_second" {
        "bytes/s".into()
    } else if lower == "items_per_second" {
        "items/s".into()
    } else if lower.ends_with("_per_second") {
        format!("{}/s", &key[..key.len() - "_per_second".len()])
    } else if last.to_ascii_lowercase().ends_with("/s") && last.len() > 2 {
        last.to_string()
    } else if last.to_ascii_lowercase().ends_with("flops") {
        format!("{}/s", &last[..last.len() - 1])
    } else {
        String::new()
    }
}

/// A value as the import reads it: a number, a string, a boolean, or anything else.
enum Scalar {
    Number(f64),
    Text(String),
    Bool(bool),
    Other,
}

impl Scalar {
    fn number(self) -> Option<f64> {
        match self {
            Scalar::Number(v) => Some(v),
            _ => None,
        }
    }

    fn text(self) -> Option<String> {
        match self {
            Scalar::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
        struct ScalarVisitor;
        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Text(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Text(v))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// One element of the `benchmarks` array: the keys the import reads (a key written twice
/// counts as its last), and the numbers of the other keys, which are user counters.
#[derive(Default)]
struct Run {
    /// `name` and `run_name`, when present: a string, or `None` for any other value.
    name: Option<Option<String>>,
    run_name: Option<Option<String>>,
    run_type: Option<String>,
    aggregate_name: Option<String>,
    error_occurred: bool,
    skipped: bool,
    error_message: Option<Option<String>>,
    skip_message: Option<Option<String>>,
    time_unit: Option<String>,
    real_time: Option<f64>,
    cpu_time: Option<f64>,
    /// Every other key that is not one of [`KNOWN_KEYS`], in the order written.
    others: Vec<(String, Option<f64>)>,
}

impl Run {
    /// The benchmark's name: `run_name` where the run has the key, else `name`.
    fn name(&self) -> Option<&str> {
        self.run_name.as_ref().or(self.name.as_ref())?.as_deref()
    }

    /// The user counters: the numbers of the other keys, by key (a key written twice counts
    /// as its last).
    fn counters(mut self) -> impl Iterator<Item = (String, f64)> {
        // Stable: of a key written twice, the last stays last.
        self.others.sort_by(|a, b| a.0.cmp(&b.0));
        let mut others = self.others.into_iter().peekable();
        std::iter::from_fn(move || {
            loop {
                let (key, value) = others.next()?;
                if others.peek().is_some_and(|(next, _)| *next == key) {
                    continue;
                }
                if let Some(v) = value {
                    return Some((key, v));
                }
            }
        })
    }
}

impl<'de> Deserialize<'de> for Run {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Run, D::Error> {
        struct RunVisitor;
        impl<'de> Visitor<'de> for RunVisitor {
            type Value = Run;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a google/benchmark run object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Run, A::Error> {
                let mut run = Run::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let value: Scalar = map.next_value()?;
                    match key.as_ref() {
                        "name" => run.name = Some(value.text()),
                        "run_name" => run.run_name = Some(value.text()),
                        "run_type" => run.run_type = value.text(),
                        "aggregate_name" => run.aggregate_name = value.text(),
                        "error_occurred" => {
                            run.error_occurred = matches!(value, Scalar::Bool(true))
                        }
                        "skipped" => run.skipped = matches!(value, Scalar::Bool(true)),
                        "error_message" => run.error_message = Some(value.text()),
                        "skip_message" => run.skip_message = Some(value.text()),
                        "time_unit" => run.time_unit = value.text(),
                        "real_time" => run.real_time = value.number(),
                        "cpu_time" => run.cpu_time = value.number(),
                        known if KNOWN_KEYS.contains(&known) => {}
                        _ => run.others.push((key.into_owned(), value.number())),
                    }
                }
                Ok(run)
            }
            // An element that is not an object has none of the keys (and so no name).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Run, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Run::default())
            }
            answer_scalars!(Run::default());
        }
        deserializer.deserialize_any(RunVisitor)
    }
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

    fn import_text(text: &str) -> Result<RunResults, ImportError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        std::fs::write(&path, text).unwrap();
        let policies = Policies::permissive();
        import(&[path], &policies)
    }

    #[test]
    fn runs_read_as_they_are_parsed_keep_what_a_parsed_document_gave() {
        // User counters by key, a key written twice counting as its last; strings, arrays
        // and objects under other keys are not counters; aggregates beside iterations are not
        // samples.
        let r = import_text(
            r#"{"context": {"library_version": "v1.9.1"}, "benchmarks": [
              {"name": "A", "run_type": "iteration", "real_time": 1, "cpu_time": 2, "time_unit": "us",
               "zeta": 3, "alpha": 7, "alpha": 8, "label": "x", "s": "str", "arr": [1, 2], "obj": {"a": 1}},
              {"name": "A_mean", "run_name": "A", "run_type": "aggregate", "aggregate_name": "median", "real_time": 9},
              {"name": "A", "real_time": 5, "real_time": "late", "cpu_time": 6, "time_unit": "us"}]}"#,
        )
        .unwrap();
        let b = &r.benchmarks[0];
        let names: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["real_time", "cpu_time", "alpha", "zeta"]);
        assert_eq!(b.metric("real_time").unwrap().values, [1000.0]);
        assert_eq!(b.metric("cpu_time").unwrap().values, [2000.0, 6000.0]);
        assert_eq!(b.metric("alpha").unwrap().values, [8.0]);
        assert_eq!(b.provenance.details["gbench.version"], "v1.9.1");
        assert!(!b.provenance.details.contains_key("gbench.samples"));
        // Median aggregates are the samples of a file that holds nothing else; a failed one is
        // the benchmark's failure, without the note.
        let r = import_text(
            r#"{"benchmarks": [
              {"name": "A_median", "run_name": "A", "run_type": "aggregate", "aggregate_name": "median", "real_time": 8},
              {"name": "A_mean", "run_name": "A", "run_type": "aggregate", "aggregate_name": "mean", "real_time": 9},
              {"name": "B_median", "run_name": "B", "run_type": "aggregate", "aggregate_name": "median", "error_occurred": true, "error_message": "boom"}]}"#,
        )
        .unwrap();
        assert_eq!(r.benchmarks[0].metric("real_time").unwrap().values, [8.0]);
        let (a, b) = (&r.benchmarks[0], &r.benchmarks[1]);
        let samples = &a.provenance.details["gbench.samples"];
        assert_eq!(samples, "median aggregate only");
        assert!(!b.provenance.details.contains_key("gbench.samples"));
        assert_contains!(b.failure.as_ref().unwrap().message, "boom");
        // Refused: no array, the array twice, a run without a name (by its index).
        for (text, expected) in [
            (r#"{"benchmarks": {"a": 1}}"#, "has no `benchmarks` array"),
            (r#"[1, 2]"#, "has no `benchmarks` array"),
            (
                r#"{"benchmarks": [], "benchmarks": []}"#,
                "the key `benchmarks` is written twice",
            ),
            (
                r#"{"benchmarks": [{"name": "A", "real_time": 1}"#,
                "not valid JSON at line 1",
            ),
            (
                r#"{"benchmarks": [{"name": "A", "real_time": 1}, {"real_time": 1}]}"#,
                "benchmarks[1] has no `name`",
            ),
            (r#"{"benchmarks": [5]}"#, "benchmarks[0] has no `name`"),
        ] {
            assert_contains!(import_text(text).unwrap_err().to_string(), expected);
        }
    }
}
