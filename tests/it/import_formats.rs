//! The files people really have (issue #14): perf stat with other separators and `-r N`, ncu
//! body items, Omniperf's merged CSV, rocprof companion files, Proton scopes and counters, the
//! refusals of every importer, and inputs without an end (issue #17). Each test asserts the
//! values imported, not only that the import succeeded; fixtures under
//! `tests/fixtures/<format>/` say in a README how they were made.

use crate::common::{self, corpus};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kgate::import::{ImportContext, Policies, importer};
use kgate::model::results::{BenchmarkResult, RunResults};
use kgate::plan::MetricPolicy;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

fn import(format: &str, files: &[PathBuf]) -> Result<RunResults, kgate::import::ImportError> {
    let importer = importer(format).unwrap_or_else(|| panic!("no import format `{format}`"));
    let policies = Policies::new(BTreeMap::new(), MetricPolicy::permissive(0.05));
    importer.import(files, &ImportContext::new(policies))
}

fn run(format: &str, files: &[PathBuf]) -> RunResults {
    import(format, files).unwrap_or_else(|e| panic!("{files:?}: {e}"))
}

fn error(format: &str, files: &[PathBuf]) -> String {
    match import(format, files) {
        Ok(_) => panic!("{files:?} imported but should fail"),
        Err(e) => e.to_string(),
    }
}

fn values(b: &BenchmarkResult, metric: &str) -> Vec<f64> {
    b.metric(metric)
        .unwrap_or_else(|| {
            let names: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
            panic!("{}: no metric `{metric}` in {names:?}", b.name)
        })
        .values
        .clone()
}

fn benchmark<'a>(r: &'a RunResults, name: &str) -> &'a BenchmarkResult {
    r.benchmarks
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
            panic!("no benchmark `{name}` in {names:?}")
        })
}

fn has_note(b: &BenchmarkResult, text: &str) -> bool {
    b.provenance.notes.iter().any(|n| n == text)
}

// --- 1. perf stat -x with any separator -----------------------------------------------------

#[test]
fn perf_stat_semicolon_separator_with_decimal_commas() {
    let r = run("perf-stat", &[fixture("perf_stat/semicolon_deDE_r3.txt")]);
    let b = benchmark(&r, "semicolon_deDE_r3");
    assert_eq!(values(b, "task-clock"), [1_000_000.0]); // `1,00;msec`
    assert_eq!(values(b, "page-faults"), [80.0]);
    assert!(b.metric("instructions").is_none());
    assert_eq!(b.provenance.unavailable[0].counter, "instructions");
    assert!(has_note(
        b,
        "perf counter `task-clock` is the mean of repeated runs (`perf stat -r`); perf states a spread of ± 1.97 %"
    ));
    assert!(has_note(
        b,
        "perf counter `page-faults` is the mean of repeated runs (`perf stat -r`); perf states a spread of ± 0.83 %"
    ));
}

#[test]
fn perf_stat_tab_separator_with_decimal_commas() {
    let r = run("perf-stat", &[fixture("perf_stat/tab_deDE.txt")]);
    let b = benchmark(&r, "tab_deDE");
    assert_eq!(values(b, "task-clock"), [930_000.0]); // `0,93\tmsec`
    assert_eq!(values(b, "page-faults"), [79.0]);
    assert_eq!(b.provenance.unavailable.len(), 1);
    assert!(b.provenance.notes.is_empty(), "{:?}", b.provenance.notes);
}

#[test]
fn perf_stat_comma_separator_with_a_decimal_comma_is_still_refused_with_the_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(
        dir.path(),
        "de.csv",
        "1,41,msec,task-clock,1414273,100,00,0,CPUs utilized\n",
    );
    let e = error("perf-stat", &[path]);
    assert!(
        e.contains("`perf stat -x,` ran under a decimal-comma locale, which makes the fields ambiguous: run perf with LC_ALL=C, or give it another separator (`-x';'`)"),
        "{e}"
    );
}

// --- 2. perf stat -r N ----------------------------------------------------------------------

#[test]
fn perf_stat_repeated_runs_human_output_keeps_mean_and_spread() {
    let r = run("perf-stat", &[fixture("perf_stat/human_r5.txt")]);
    let b = benchmark(&r, "human_r5");
    assert_eq!(values(b, "task-clock"), [830_000.0]);
    assert_eq!(values(b, "page-faults"), [58.0]);
    // `0.0118003 +- 0.0000613 seconds time elapsed  ( +-  0.52% )`
    assert_eq!(values(b, "elapsed_time"), [11_800_300.0]);
    assert!(has_note(
        b,
        "perf counter `task-clock` is the mean of 5 runs (`perf stat -r 5`); perf states a spread of ± 2.24 %"
    ));
    assert!(has_note(
        b,
        "perf counter `elapsed_time` is the mean of 5 runs (`perf stat -r 5`); perf states a spread of ± 0.52 % (61300 ns)"
    ));
}

#[test]
fn perf_stat_repeated_runs_human_output_in_a_decimal_comma_locale() {
    let r = run("perf-stat", &[fixture("perf_stat/human_deDE_r3.txt")]);
    let b = benchmark(&r, "human_deDE_r3");
    assert_eq!(values(b, "task-clock"), [970_000.0]);
    assert_eq!(values(b, "page-faults"), [80.0]);
    assert_eq!(values(b, "elapsed_time"), [11_900_600.0]);
    assert!(has_note(
        b,
        "perf counter `elapsed_time` is the mean of 3 runs (`perf stat -r 3`); perf states a spread of ± 0.41 % (49100 ns)"
    ));
    assert!(has_note(
        b,
        "perf counter `page-faults` is the mean of 3 runs (`perf stat -r 3`); perf states a spread of ± 0.83 %"
    ));
}

#[test]
fn perf_stat_repeated_runs_csv_and_json_variance_columns() {
    let r = run("perf-stat", &[fixture("perf_stat/csv_r3.txt")]);
    let b = benchmark(&r, "csv_r3");
    assert_eq!(values(b, "task-clock"), [640_000.0]);
    assert_eq!(values(b, "page-faults"), [57.0]);
    assert!(has_note(
        b,
        "perf counter `task-clock` is the mean of repeated runs (`perf stat -r`); perf states a spread of ± 3.11 %"
    ));
    let r = run("perf-stat", &[fixture("perf_stat/json_r3.txt")]);
    let b = benchmark(&r, "json_r3");
    assert_eq!(values(b, "task-clock"), [621_866.0]);
    assert_eq!(values(b, "page-faults"), [56.0]);
    assert!(has_note(
        b,
        "perf counter `page-faults` is the mean of repeated runs (`perf stat -r`); perf states a spread of ± 0.6 %"
    ));
}

// --- 3. ncu body items ----------------------------------------------------------------------

#[test]
fn ncu_body_item_rows_stay_apart_and_a_repeated_row_is_reported() {
    let r = run("ncu", &[fixture("ncu/body_items_details.csv")]);
    assert_eq!(r.benchmarks.len(), 1);
    let b = &r.benchmarks[0];
    assert_eq!(
        b.name,
        "sgemm_kernel(float const*, float const*, float*, int)"
    );
    // 22 distinct rows, 22 metrics (17 before: rows that differed only in the body item
    // were merged or dropped without a word).
    assert_eq!(
        b.metrics.len(),
        22,
        "{:?}",
        b.metrics.iter().map(|m| &m.name).collect::<Vec<_>>()
    );
    assert_eq!(values(b, "SM Frequency"), [1_395_000_000.0]);
    let chart = "GPU Speed Of Light Roofline Chart";
    for (body, hz) in [
        ("Single Precision Roofline", 1_395_000_000.0),
        ("Double Precision Roofline", 1_395_000_001.0),
        ("Single Precision Achieved Value", 1_394_000_000.0),
        ("Double Precision Achieved Value", 1_394_000_001.0),
    ] {
        assert_eq!(values(b, &format!("{chart}: {body}: SM Frequency")), [hz]);
    }
    assert_eq!(
        values(
            b,
            &format!("{chart}: Single Precision Roofline: DRAM Bandwidth")
        ),
        [3_352_000_000_000.0]
    );
    assert_eq!(
        values(
            b,
            &format!("{chart}: Double Precision Achieved Value: DRAM Bandwidth")
        ),
        [418_000_000_000.0]
    );
    assert_eq!(
        values(
            b,
            &format!(
                "{chart}: Single Precision Achieved Value: Predicated-On FFMA Operations Per Cycle"
            )
        ),
        [88.5]
    );
    assert_eq!(values(b, "Elapsed Cycles"), [508_757.0]);
    assert_eq!(values(b, "Threads"), [262_144.0]);
    assert_eq!(
        b.provenance.notes,
        [
            "1 details-page row not imported: each repeats the section, body item and metric of an earlier row of the same launch (the first: `GPU Speed Of Light Roofline Chart` / `Single Precision Roofline` / `DRAM Bandwidth`), so ncu wrote that metric twice"
        ]
    );
}

#[test]
fn ncu_details_pages_without_body_items_keep_their_names() {
    let Some(c) = corpus() else { return };
    let r = run("ncu", &[c.join("ncu/superbenchmark_cublaslt_ncu.log")]);
    let b = &r.benchmarks[0];
    assert_eq!(values(b, "SM Frequency"), [1_239_496_049.13]);
    assert_eq!(values(b, "Elapsed Cycles"), [508_757.0]);
    assert!(b.provenance.notes.is_empty(), "{:?}", b.provenance.notes);
}

// --- issue #17: inputs without an end -------------------------------------------------------

#[test]
fn ncu_import_of_dev_zero_is_refused_with_the_bound() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let e = error("ncu", &[PathBuf::from("/dev/zero")]);
    assert_eq!(
        e,
        "`/dev/zero`: has a line longer than 16 MiB, so it is not ncu `--csv` output (ncu writes one row per line; this looks like binary data or an endless stream); pass the file that `ncu --csv` or `--log-file` wrote"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = common::kgate(dir.path())
        .args(["import", "ncu", "/dev/zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr_of(&out));
    assert!(
        common::stderr_of(&out).contains("has a line longer than 16 MiB"),
        "{}",
        common::stderr_of(&out)
    );
}
