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
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn ncu_details_pages_without_body_items_keep_their_names() {
    let c = corpus();
    let r = run("ncu", &[c.join("ncu/superbenchmark_cublaslt_ncu.log")]);
    let b = &r.benchmarks[0];
    assert_eq!(values(b, "SM Frequency"), [1_239_496_049.13]);
    assert_eq!(values(b, "Elapsed Cycles"), [508_757.0]);
    assert!(b.provenance.notes.is_empty(), "{:?}", b.provenance.notes);
}

// --- issue #17: inputs without an end -------------------------------------------------------

#[test]
#[cfg_attr(kgate_no_dev_zero, ignore = "needs /dev/zero")]
fn ncu_import_of_dev_zero_is_refused_with_the_bound() {
    assert!(Path::new("/dev/zero").exists(), "/dev/zero is missing");
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

// --- 4. Omniperf merged CSV and repeated header rows ----------------------------------------

const VECCOPY: &str = "vecCopy(double*, double*, double*, int, int)";

#[test]
fn rocprof_omniperf_merged_csv_has_no_pass_suffixed_counters() {
    let r = run(
        "rocprof",
        &[fixture("rocprof/omniperf_merged_pmc_perf.csv")],
    );
    let b = benchmark(&r, VECCOPY);
    let mut names: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    // 6 counters and the time (before: 8 counters, `wave_size_1` and `wave_size_2` among
    // them, and no time: the merged timestamps have a fraction).
    assert_eq!(
        names,
        [
            "FETCH_SIZE",
            "SQ_CYCLES",
            "SQ_WAVES",
            "TCC_HIT_sum",
            "TCC_MISS_sum",
            "WRITE_SIZE",
            "kernel_time"
        ]
    );
    assert_eq!(values(b, "SQ_CYCLES"), [1_985_676.0, 1_990_001.0]);
    assert_eq!(values(b, "TCC_MISS_sum"), [300.0, 290.0]);
    assert_eq!(values(b, "kernel_time"), [16_160.0, 13_680.0]);
    assert!(
        b.provenance
            .notes
            .iter()
            .any(|n| n.contains("timestamps with a fraction")),
        "{:?}",
        b.provenance.notes
    );
}

#[test]
fn rocprof_repeated_header_row_is_a_header_not_a_dispatch() {
    let path = fixture("rocprof/concatenated_results.csv");
    let r = run("rocprof", std::slice::from_ref(&path));
    // Before: a third benchmark `KernelName` came from the repeated header.
    let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, [VECCOPY]);
    let b = benchmark(&r, VECCOPY);
    assert_eq!(values(b, "SQ_CYCLES"), [1_985_676.0, 1_990_001.0]);
    assert_eq!(values(b, "kernel_time"), [16_160.0, 13_680.0]);
    assert_eq!(b.repetitions, 2);
    assert_eq!(
        b.provenance.notes,
        [format!(
            "`{}`: 1 header row inside the table (files joined one after another) read as headers, not as data",
            path.display()
        )]
    );
}

#[test]
fn rocprof_a_header_of_other_columns_inside_the_table_starts_a_new_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(
        dir.path(),
        "two_passes.csv",
        "Index,KernelName,SQ_WAVES,BeginNs,EndNs\n0,\"k.kd\",16,100,150\nIndex,KernelName,FETCH_SIZE,BeginNs,EndNs\n0,\"k.kd\",8192,200,260\n",
    );
    let r = run("rocprof", &[path]);
    let b = benchmark(&r, "k");
    // Before: 8192 was read as a second `SQ_WAVES`.
    assert_eq!(values(b, "SQ_WAVES"), [16.0]);
    assert_eq!(values(b, "FETCH_SIZE"), [8192.0]);
    assert_eq!(values(b, "kernel_time"), [50.0, 60.0]);
}

// --- 5. rocprof command companion -----------------------------------------------------------

#[test]
fn rocprof_command_file_with_commas_is_free_text() {
    let r = run(
        "rocprof",
        &[
            fixture("rocprof/laplacian_results.csv"),
            fixture("rocprof/cmd"),
        ],
    );
    let b = benchmark(&r, "laplacian_kernel");
    assert_eq!(values(b, "kernel_time"), [2_647_539.0, 2_644_539.0]);
    assert_eq!(
        b.provenance
            .details
            .get("rocprof.command")
            .map(String::as_str),
        Some("./laplacian_dp_kernel1 --sizes 256,512,1024 --iters 10")
    );
}

#[test]
fn rocprof_single_line_command_with_commas_under_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = common::write(dir.path(), "command.txt", "./app -n 1,2,3\n");
    let r = run("rocprof", &[fixture("rocprof/laplacian_results.csv"), cmd]);
    assert_eq!(
        r.benchmarks[0]
            .provenance
            .details
            .get("rocprof.command")
            .map(String::as_str),
        Some("./app -n 1,2,3")
    );
}

// --- 12. refusals that say what the file is, why, and what to do ----------------------------

#[test]
fn criterion_0_2_estimates_are_refused_as_an_old_schema() {
    let path = fixture("criterion/old_schema_0_2/new/estimates.json");
    let e = error("criterion", std::slice::from_ref(&path));
    assert_eq!(
        e,
        format!(
            "`{}`: is an `estimates.json` in the schema of Criterion 0.2 or older (`Mean`, `Median`, … capitalized), which kgate does not read: re-run the benchmarks with Criterion 0.3 or newer and import `target/criterion/<id>/new/estimates.json`",
            path.display()
        )
    );
    // The folder form says the same.
    let e = error("criterion", &[fixture("criterion/old_schema_0_2/new")]);
    assert!(e.contains("Criterion 0.2 or older"), "{e}");
}

#[test]
fn criterion_folder_without_estimates_and_foreign_json_are_refused_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let e = error("criterion", &[dir.path().to_path_buf()]);
    assert!(
        e.contains("is a folder without `estimates.json`")
            && e.contains("target/criterion/<id>/new"),
        "{e}"
    );
    let other = common::write(dir.path(), "other.json", "{\"results\": []}");
    let e = error("criterion", &[other]);
    assert!(
        e.contains("has no `mean.point_estimate`, so it is not Criterion's `estimates.json`"),
        "{e}"
    );
}

#[test]
fn importers_refuse_a_file_of_another_format_naming_the_format_and_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let json = common::write(dir.path(), "x.json", "{\"something\": 1}");
    let cases = [
        ("hyperfine", "so it is not `hyperfine --export-json` output"),
        (
            "pytest-benchmark",
            "so it is not pytest-benchmark JSON; export with `pytest --benchmark-json FILE`",
        ),
        ("proton", "is not a Proton hatchet file"),
    ];
    for (format, expected) in cases {
        let e = error(format, std::slice::from_ref(&json));
        assert!(e.contains(expected), "{format}: {e}");
    }
    let broken = common::write(dir.path(), "broken.json", "{\"results\": [");
    let e = error("hyperfine", &[broken]);
    assert!(
        e.contains("is not valid JSON (line 1, column 13") && e.contains("so it is not hyperfine"),
        "{e}"
    );
    let csv = common::write(dir.path(), "x.csv", "a,b,c\n1,2,3\n");
    let e = error("rocprof", &[csv]);
    assert!(
        e.contains("is not a rocprof file kgate reads: its first line `a,b,c`"),
        "{e}"
    );
    let e = error("ncu", &[json]);
    assert!(
        e.contains("ncu wrote no CSV") && e.contains("or this is not ncu `--csv` output"),
        "{e}"
    );
}

#[test]
#[cfg_attr(kgate_no_dev_zero, ignore = "needs /dev/zero")]
fn json_and_csv_importers_refuse_dev_zero_cleanly() {
    assert!(Path::new("/dev/zero").exists(), "/dev/zero is missing");
    for format in [
        "rocprof",
        "proton",
        "criterion",
        "pytest-benchmark",
        "hyperfine",
        "perf-stat",
    ] {
        let e = error(format, &[PathBuf::from("/dev/zero")]);
        let bound = if format == "perf-stat" {
            "more than 64 MiB, which is not perf stat output"
        } else {
            "is not text (a NUL byte at offset 0)"
        };
        assert!(
            e.contains("/dev/zero") && e.contains(bound),
            "{format}: {e}"
        );
    }
}

// --- 7. Proton scopes and counters ----------------------------------------------------------

#[test]
fn proton_keeps_a_kernels_scopes_apart_and_its_counters() {
    let r = run("proton", &[fixture("proton/scopes_and_counters.hatchet")]);
    let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
    // Before: one `matmul_kernel` with the mean of all 30 launches (20000 ns), and no
    // `softmax_kernel`.
    assert_eq!(
        names,
        [
            "matmul_M=256/matmul_kernel",
            "matmul_M=512/matmul_kernel",
            "matmul_M=1024/matmul_kernel",
            "softmax_kernel"
        ]
    );
    for (name, scope, time, flops) in [
        (
            "matmul_M=256/matmul_kernel",
            "matmul_M=256",
            2_000.0,
            33_554_432.0,
        ),
        (
            "matmul_M=512/matmul_kernel",
            "matmul_M=512",
            8_000.0,
            268_435_456.0,
        ),
        (
            "matmul_M=1024/matmul_kernel",
            "matmul_M=1024",
            50_000.0,
            2_147_483_648.0,
        ),
    ] {
        let b = benchmark(&r, name);
        assert_eq!(values(b, "time"), [time], "{name}");
        assert_eq!(values(b, "count"), [10.0], "{name}");
        assert_eq!(values(b, "flops16"), [flops], "{name}");
        assert_eq!(b.parameters.get("scope").map(String::as_str), Some(scope));
    }
    let big = benchmark(&r, "matmul_M=1024/matmul_kernel");
    assert_eq!(values(big, "sm__cycles_active.avg"), [950_000.0]);
    assert_eq!(
        big.metric("sm__cycles_active.avg").unwrap().source,
        kgate::model::metric::Source::Hardware
    );
    let softmax = benchmark(&r, "softmax_kernel");
    assert_eq!(
        values(softmax, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        [45.25]
    );
    assert_eq!(values(softmax, "dram__bytes_read.sum"), [1_048_576.0]);
    assert!(softmax.metric("time").is_none());
    assert_eq!(
        softmax.provenance.details["proton.samples"],
        "counters as Proton recorded them (no launch count)"
    );
}

/// What an import notes in the results is said on stderr too, once per distinct note.
#[test]
fn import_notes_are_printed_not_only_stored() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf_stat/human_r5.txt");
    let out = common::kgate(dir.path())
        .args(["import", "perf-stat"])
        .arg(&fixture)
        .args(["-o", "r.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    let err = common::stderr_of(&out);
    assert!(
        err.contains("note: ") && err.contains("mean of 5 runs"),
        "{err}"
    );
}

/// `compare` and `check` cut Markdown to GitHub's comment limit by default, to `--max-chars`
/// when given, and not at all with `--max-chars 0`.
#[test]
fn markdown_from_compare_fits_a_comment_by_default() {
    let dir = tempfile::tempdir().unwrap();
    for (name, scale) in [("base", 1.0), ("head", 1.3)] {
        let mut lines = String::new();
        for b in 0..3000 {
            for r in 0..3 {
                lines.push_str(&format!(
                    "{{\"benchmark\": \"kernel_{b:04}_with_a_long_descriptive_name\", \"metric\": \"kernel_time\", \"value\": {}, \"unit\": \"ns\", \"source\": \"timer\"}}\n",
                    (1000.0 + f64::from(r)) * scale
                ));
            }
        }
        common::write(dir.path(), &format!("{name}.jsonl"), &lines);
        let out = common::kgate(dir.path())
            .args([
                "import",
                "protocol",
                &format!("{name}.jsonl"),
                "-o",
                &format!("{name}.json"),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr_of(&out));
    }
    let markdown = |extra: &[&str]| {
        let out = common::kgate(dir.path())
            .args(["compare", "base.json", "head.json", "--format", "markdown"])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let default = markdown(&[]);
    assert!(
        default.chars().count() <= 65_536,
        "{} chars",
        default.chars().count()
    );
    let small = markdown(&["--max-chars", "5000"]);
    assert!(
        small.chars().count() <= 5000,
        "{} chars",
        small.chars().count()
    );
    let whole = markdown(&["--max-chars", "0"]);
    assert!(
        whole.chars().count() > 65_536,
        "{} chars",
        whole.chars().count()
    );
    let out = common::kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--max-chars", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr_of(&out).contains("--max-chars applies to --format markdown only"));
}

/// Folders as inputs: a `jax.profiler.trace` log directory, `target/criterion`, and an empty
/// folder, which is refused by naming what was looked for.
#[test]
fn folders_are_walked_for_the_formats_own_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir
        .path()
        .join("logdir/plugins/profile/2026_12_01_10_00_00");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/jax/jax_cpu.xplane.pb"),
        run_dir.join("host.xplane.pb"),
    )
    .unwrap();
    let out = common::kgate(dir.path())
        .args(["import", "xplane", "logdir", "-o", "x.json"])
        .output()
        .unwrap();
    let err = common::stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("import: `logdir`: took 1 file (each one repetition): plugins/profile/2026_12_01_10_00_00/host.xplane.pb"),
        "{err}"
    );
    let from_folder = RunResults::load(&dir.path().join("x.json")).unwrap();
    let direct = run("xplane", &[run_dir.join("host.xplane.pb")]);
    assert_eq!(from_folder.benchmarks.len(), direct.benchmarks.len());
    assert!(!from_folder.benchmarks.is_empty());

    // target/criterion: every benchmark's `new/estimates.json`, not `base/` or `change/`.
    let criterion = dir.path().join("target/criterion/sum/1000");
    std::fs::create_dir_all(criterion.join("base")).unwrap();
    common::copy_tree(&root.join("tests/fixtures/criterion/sum_1000"), &criterion);
    common::copy_tree(&criterion.join("new"), &criterion.join("base"));
    let out = common::kgate(dir.path())
        .args(["import", "criterion", "target/criterion", "-o", "c.json"])
        .output()
        .unwrap();
    let err = common::stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("took 1 file (each one repetition): sum/1000/new/estimates.json"),
        "{err}"
    );

    // An empty folder: refused, once, naming the patterns.
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = common::kgate(dir.path())
        .args(["import", "xplane", "empty"])
        .output()
        .unwrap();
    let err = common::stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is a folder with no xplane files in it (looked for **/*.xplane.pb)"),
        "{err}"
    );
    assert!(!err.contains("os error 21"), "{err}");
}

/// `perf stat -I` prints a line per counter per interval, each led by the interval's end
/// time: one run, whose counts are the sums over its intervals (an idle interval is
/// `<not counted>`, 0 there). Both forms, written by the real perf.
#[test]
fn perf_stat_interval_output_sums_its_intervals() {
    let r = run("perf-stat", &[fixture("perf_stat/interval_csv.txt")]);
    let b = benchmark(&r, "interval_csv");
    // 0.97 + 0.06 msec over four intervals, two of them `<not counted>`.
    assert_eq!(values(b, "task-clock"), [1_030_000.0]);
    assert_eq!(values(b, "page-faults"), [75.0]);
    assert!(has_note(
        b,
        "perf stat -I output: each counter is the sum of its 4 intervals (an interval perf printed `<not counted>` for counts as 0, the counter idle then)"
    ));
    let r = run("perf-stat", &[fixture("perf_stat/interval_human.txt")]);
    let b = benchmark(&r, "interval_human");
    assert_eq!(values(b, "task-clock"), [1_200_000.0]); // 1.14 + 0.06 msec
    assert_eq!(values(b, "page-faults"), [76.0]);
    assert!(has_note(
        b,
        "perf stat -I output: each counter is the sum of its 3 intervals (an interval perf printed `<not counted>` for counts as 0, the counter idle then)"
    ));
}

/// Callgrind-format files written by other tools name their own events: a time (`ns`) is a
/// timer reading, noisy, without the deterministic tolerance of Valgrind's counts; an event
/// kgate cannot place (`Ticks` of bzr's profiler, `Hits` of a sampler) is `reported`. Each
/// says so in a note; Valgrind's own events stay `simulated` with the tolerance.
#[test]
fn callgrind_format_files_of_other_tools_are_not_simulated() {
    let source = |b: &BenchmarkResult, m: &str| {
        let m = b.metric(m).unwrap();
        (
            m.source.as_str(),
            m.unit.clone(),
            m.gate.tolerance.is_some(),
        )
    };
    let r = run("callgrind", &[fixture("callgrind/timed_ns.callgrind")]);
    let b = benchmark(&r, "timed_ns");
    assert_eq!(values(b, "ns"), [10500.0]);
    assert_eq!(source(b, "ns"), ("timer", "ns".to_string(), false));
    assert!(
        has_note(
            b,
            "event `ns` of this callgrind-format file (written by `a function timer writing the callgrind format`) is a time, not a count of Valgrind's simulation: recorded as a `timer` reading (noisy, tested like any time, no deterministic tolerance)"
        ),
        "{:?}",
        b.provenance.notes
    );

    let r = run("callgrind", &[fixture("callgrind/hits.callgrind")]);
    let b = benchmark(&r, "hits");
    assert_eq!(values(b, "Hits"), [42.0]);
    assert_eq!(source(b, "Hits"), ("reported", String::new(), false));
    assert!(b.provenance.notes.iter().any(|n| n.starts_with("event `Hits` of this callgrind-format file")
        && n.ends_with("is not one of Valgrind's events: recorded as `reported` (informational unless the configuration lists it), not `simulated`")), "{:?}", b.provenance.notes);

    // A real file of bzr's profiler: `events: Ticks`.
    let r = run(
        "callgrind",
        &[corpus().join("callgrind/gprof2dot_bzr.callgrind")],
    );
    let b = benchmark(&r, "gprof2dot_bzr");
    assert_eq!(source(b, "Ticks"), ("reported", String::new(), false));
    assert!(
        has_note(
            b,
            "event `Ticks` of this callgrind-format file is not one of Valgrind's events: recorded as `reported` (informational unless the configuration lists it), not `simulated`"
        ),
        "{:?}",
        b.provenance.notes
    );

    // Valgrind's own file: simulated, with the tolerance, and no note about events.
    let r = run(
        "callgrind",
        &[corpus().join("callgrind/iai_callgrind_3.21_cachesim_no_entry_point.out")],
    );
    let b = &r.benchmarks[0];
    assert_eq!(source(b, "Ir"), ("simulated", String::new(), true));
    assert_eq!(source(b, "LL_misses"), ("simulated", String::new(), true));
    assert!(
        !b.provenance
            .notes
            .iter()
            .any(|n| n.contains("callgrind-format file"))
    );
}

/// google/benchmark's JSON writes a user counter's value without its flags: the rates
/// `SetBytesProcessed` and `SetItemsProcessed` write, and counters named by a per-second
/// unit (`GB/s`, `GFLOPS`), get that unit and direction higher; any other counter is
/// unitless and lower, and a note says so.
#[test]
fn gbench_rate_counters_have_a_unit_and_direction_higher() {
    use kgate::model::metric::Direction;
    let shape = |b: &BenchmarkResult, m: &str| {
        let m = b.metric(m).unwrap();
        (m.unit.clone(), m.direction)
    };
    let r = run("gbench", &[fixture("gbench/rate_counters.json")]);
    let b = benchmark(&r, "BM_copy/1048576");
    assert_eq!(
        shape(b, "bytes_per_second"),
        ("bytes/s".to_string(), Direction::Higher)
    );
    assert_eq!(
        shape(b, "items_per_second"),
        ("items/s".to_string(), Direction::Higher)
    );
    assert_eq!(shape(b, "GB/s"), ("GB/s".to_string(), Direction::Higher));
    assert_eq!(values(b, "GB/s"), [20.97152]);
    assert_eq!(
        shape(b, "GFLOPS"),
        ("GFLOP/s".to_string(), Direction::Higher)
    );
    assert_eq!(shape(b, "checksum"), (String::new(), Direction::Lower));
    assert!(
        has_note(
            b,
            "user counter `checksum` carries no unit in google/benchmark's JSON (nor its flags, such as `kIsRate`): recorded without a unit, lower is better; list it under `metrics` with `direction: higher` if it is a rate"
        ),
        "{:?}",
        b.provenance.notes
    );

    // A file the real google/benchmark wrote: `items_per_second` from `SetItemsProcessed`.
    let r = run("gbench", &[fixture("gbench/sum_repetitions.json")]);
    let b = benchmark(&r, "BM_sum/64");
    assert_eq!(
        shape(b, "items_per_second"),
        ("items/s".to_string(), Direction::Higher)
    );
}

/// Criterion's `throughput` (`Throughput::Bytes(1048576)` in `benchmark.json`) becomes the
/// rate its user expects, `bytes_per_second`, direction higher, a sample per time sample.
#[test]
fn criterion_throughput_becomes_a_rate() {
    use kgate::model::metric::Direction;
    let r = run("criterion", &[fixture("criterion/copy_1mib/new")]);
    let b = benchmark(&r, "copy/1MiB");
    assert_eq!(values(b, "time"), [100_000.0, 125_000.0]);
    let m = b.metric("bytes_per_second").unwrap();
    assert_eq!(
        (m.unit.as_str(), m.direction),
        ("bytes/s", Direction::Higher)
    );
    assert_eq!(m.values, [10_485_760_000.0, 8_388_608_000.0]);
    assert!(
        has_note(
            b,
            "Criterion's throughput `{\"Bytes\":1048576}`: recorded as `bytes_per_second` (1048576 per iteration / time per iteration, in bytes/s), higher is better, a sample for each time sample"
        ),
        "{:?}",
        b.provenance.notes
    );
    // Without a throughput, no rate.
    let r = run("criterion", &[fixture("criterion/sum_1000/new")]);
    assert!(r.benchmarks[0].metric("bytes_per_second").is_none());
}

/// Human `perf stat` output appended by a script: a banner before each run, a comment between
/// them, and blocks of two locales. The foreign lines are skipped and counted in a note; each
/// block is read in its own locale, and the two runs of one command are two repetitions.
#[test]
fn perf_stat_human_blocks_with_foreign_lines_between_them() {
    let r = run(
        "perf-stat",
        &[fixture("perf_stat/appended_runs_two_locales.txt")],
    );
    assert_eq!(r.benchmarks.len(), 1);
    let b = benchmark(&r, "appended_runs_two_locales");
    assert_eq!(values(b, "task-clock"), [830_000.0, 970_000.0]);
    assert_eq!(values(b, "page-faults"), [58.0, 80.0]);
    assert_eq!(values(b, "elapsed_time"), [11_800_300.0, 11_900_600.0]);
    assert!(
        has_note(
            b,
            "skipped 2 lines that are not perf stat output (the first, line 1: `=== run 1 of bench.sh on host-a (LANG=C) ===`); each `Performance counter stats for` block was read in its own locale"
        ),
        "{:?}",
        b.provenance.notes
    );
}

/// A gzip-compressed export (`results.csv.gz`, `out.json.gz`) is read as the tool wrote it by
/// every JSON and CSV importer, told apart by the gzip magic bytes as `chrome-trace` does,
/// instead of being refused as "a NUL byte at offset 8".
#[test]
fn gzip_compressed_exports_are_read_by_every_text_importer() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let gzip = |from: &Path, name: &str| {
        let to = dir.path().join(name);
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&to).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(&std::fs::read(from).unwrap()).unwrap();
        gz.finish().unwrap();
        to
    };
    let c = corpus();
    for (format, file, name) in [
        (
            "rocprof",
            c.join("rocprof/rocprof_v1_mi100_timestamps.csv"),
            "results.csv.gz",
        ),
        (
            "ncu",
            c.join("ncu/olajide_rtx5070_saxpy_metrics.csv"),
            "saxpy.csv.gz",
        ),
        (
            "gbench",
            fixture("gbench/sum_repetitions.json"),
            "sum.json.gz",
        ),
        (
            "hyperfine",
            c.join("hyperfine/zeroows_1brc_hyperfine.json"),
            "h.json.gz",
        ),
        (
            "pytest-benchmark",
            c.join("pytest_benchmark/gab_pytest_output.json"),
            "p.json.gz",
        ),
        (
            "proton",
            c.join("proton/proton_test_examples_triton.json"),
            "t.hatchet.gz",
        ),
        ("perf-stat", fixture("perf_stat/csv_r3.txt"), "perf.txt.gz"),
        (
            "callgrind",
            c.join("callgrind/gprof2dot_bool.callgrind"),
            "callgrind.out.gz",
        ),
    ] {
        let plain = run(format, std::slice::from_ref(&file));
        let packed = run(format, &[gzip(&file, name)]);
        assert_eq!(plain.benchmarks.len(), packed.benchmarks.len(), "{format}");
        for (a, b) in plain.benchmarks.iter().zip(&packed.benchmarks) {
            let metrics = |x: &BenchmarkResult| {
                x.metrics
                    .iter()
                    .map(|m| (m.name.clone(), m.values.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(metrics(a), metrics(b), "{format}: {}", a.name);
        }
    }
    // A gzip file of another format is refused for what it holds, not as binary.
    let json = dir.path().join("results.json");
    std::fs::write(&json, "{\"rocprofiler-sdk-tool\": []}\n").unwrap();
    let e = error("rocprof", &[gzip(&json, "results.json.gz")]);
    assert!(!e.contains("NUL byte"), "{e}");
}

/// Proton before 2024 spelled its kernel metrics capitalised (`Count`, `Time (ns)`,
/// `DeviceType`): read as today's keys, with a note, instead of "no benchmark was found".
#[test]
fn proton_older_capitalised_keys_are_read() {
    let r = run("proton", &[fixture("proton/old_key_spelling.hatchet")]);
    let b = benchmark(&r, "matmul_kernel");
    assert_eq!(values(b, "time"), [2048.0]);
    assert_eq!(values(b, "count"), [4.0]);
    assert_eq!(values(b, "flops16"), [1e9]);
    assert_eq!(
        b.provenance.details["proton.device"],
        "CUDA 0: arch 80, 108 SMs"
    );
    assert!(
        has_note(
            b,
            "the file spells Proton's metric keys the older way (`Count`, `Time (ns)`, `DeviceType`, `DeviceId`): read as today's `count`, `time (ns)`, `device_type`, `device_id`"
        ),
        "{:?}",
        b.provenance.notes
    );
}

/// Columns that describe a dispatch are no counters: rocprof-compute's merged CSV keeps each
/// pass's `XCC_Index` with a merge suffix (`XCC_Index_5`), and rocprofv3's `kernel_trace.csv`
/// carries launch attributes (`Grid_Size_X`, `Workgroup_Size_Y`, `Private_Segment_Size`).
#[test]
fn rocprof_identity_and_launch_columns_are_not_counters() {
    let names = |r: &RunResults| {
        r.benchmarks
            .iter()
            .map(|b| {
                let metrics: Vec<&str> = b.metrics.iter().map(|m| m.name.as_str()).collect();
                (b.name.clone(), metrics.join(","))
            })
            .collect::<Vec<_>>()
    };
    let r = run("rocprof", &[fixture("rocprof_compute/pmc_perf.csv")]);
    assert_eq!(
        names(&r),
        [(
            "vecCopy(double*, double*, double*, int, int)".to_string(),
            "kernel_time,SQ_WAVES,SQ_CYCLES,TCC_HIT_sum,TCC_MISS_sum,GRBM_GUI_ACTIVE".to_string()
        )]
    );
    let r = run("rocprof", &[fixture("rocprofv3/kernel_trace.csv")]);
    assert_eq!(
        names(&r),
        [
            (
                "__amd_rocclr_initHeap".to_string(),
                "kernel_time".to_string()
            ),
            (
                "taylor_base(float*, float*, unsigned long, unsigned long)".to_string(),
                "kernel_time".to_string()
            )
        ]
    );
    let b = benchmark(
        &r,
        "taylor_base(float*, float*, unsigned long, unsigned long)",
    );
    assert_eq!(values(b, "kernel_time"), [270_192.0, 214_513.0]);
}

/// rocprofv3 `--stats` writes the same header for HIP API calls as for kernels: a file of
/// API calls (told by its name, or by rows that all name API calls) is skipped with a note,
/// so that a folder import does not mix `hipMalloc` with the kernels; alone, it is refused.
#[test]
fn rocprof_stats_of_hip_api_calls_are_not_kernels() {
    let e = error("rocprof", &[fixture("rocprofv3/hip_api_stats.csv")]);
    assert!(
        e.contains("holds rocprof `--stats` of API calls or memory copies only")
            && e.contains("not of kernels"),
        "{e}"
    );
    // Under another name, told by its rows.
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("stats.csv");
    std::fs::copy(fixture("rocprofv3/hip_api_stats.csv"), &renamed).unwrap();
    let e = error("rocprof", &[renamed]);
    assert!(e.contains("not of kernels"), "{e}");

    // Beside the kernels' statistics: the kernels only, with a word.
    let r = run(
        "rocprof",
        &[
            fixture("rocprofv3/hip_api_stats.csv"),
            fixture("rocprofv3/kernel_stats.csv"),
        ],
    );
    let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "void addition_kernel<float>(float*, float const*, float const*, int, int)",
            "__amd_rocclr_fillBufferAligned"
        ]
    );
    let b = &r.benchmarks[0];
    assert_eq!(values(b, "kernel_time"), [10480.0]);
    assert!(
        b.provenance.notes.iter().any(|n| n.ends_with(
            "hip_api_stats.csv`: rocprof `--stats` of HIP API calls, not of kernels: skipped (the kernels' are in `<pid>_kernel_stats.csv`, or rocprof v1's `results.stats.csv`)"
        )),
        "{:?}",
        b.provenance.notes
    );
}
