//! The CPU counter parsers on every perf stat, callgrind and cachegrind file of the
//! conformance corpus, with exact expected totals.

use crate::common::corpus;

use kgate::capture::perf;
use kgate::capture::valgrind::{self, Tool, TotalsFrom};

fn files(dir: &str) -> Vec<String> {
    let root = corpus().join(dir);
    let mut v: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

const CACHE9: [&str; 9] = [
    "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
];

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn every_callgrind_file() {
    let root = corpus();
    // (file, events, totals, where the totals came from)
    let expected: &[(&str, &[&str], &[i64], TotalsFrom)] = &[
        (
            "gprof2dot_bool.callgrind",
            &["Ir"],
            &[309292148],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_bzr.callgrind",
            &["Ticks"],
            &[1482829],
            TotalsFrom::Summary,
        ),
        (
            "gprof2dot_compare_test1.callgrind",
            &["Ir"],
            &[610235],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_compare_test2.callgrind",
            &["Ir"],
            &[610544],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_empty.callgrind",
            &CACHE9,
            &[0; 9],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_googlecode-issue34.callgrind",
            &CACHE9,
            &[
                192717159265,
                64592858456,
                41880232760,
                9202071,
                127695919,
                4750724,
                3468,
                44754,
                10930,
            ],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_googlecode-issue98.callgrind",
            &["Ir"],
            &[1356335734],
            TotalsFrom::Totals,
        ),
        (
            "gprof2dot_issue35.callgrind",
            &["Ir"],
            &[9600070538],
            TotalsFrom::Totals,
        ),
        (
            "iai_callgrind_3.21_cachesim_no_entry_point.out",
            &CACHE9,
            &[325259, 78145, 35789, 1595, 2119, 850, 1558, 1485, 799],
            TotalsFrom::Totals,
        ),
        (
            "iai_callgrind_3.21_when_entry_point.out",
            &CACHE9,
            &[3471, 889, 559, 143, 30, 7, 116, 4, 4],
            TotalsFrom::Totals,
        ),
        (
            "iai_synthetic_no_records_with_summary_and_totals.out",
            &CACHE9,
            &[0; 9],
            TotalsFrom::Totals,
        ),
        (
            "iai_synthetic_no_summary_no_totals.out",
            &CACHE9,
            &[1, 2, 3, 4, 5, 6, 7, 8, 9],
            TotalsFrom::CostLines,
        ),
        (
            "iai_synthetic_summary_and_totals.out",
            &CACHE9,
            &[11, 12, 13, 14, 15, 16, 17, 18, 19],
            TotalsFrom::Totals,
        ),
    ];
    let mut seen = vec!["iai_synthetic_invalid_version_too_high.out".to_string()];
    for (file, events, totals, from) in expected {
        let p = valgrind::read(&root.join("callgrind").join(file), Tool::Callgrind)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.events, *events, "{file}");
        assert_eq!(p.totals, *totals, "{file}");
        assert_eq!(p.totals_from, *from, "{file}");
        seen.push(file.to_string());
    }
    // Real files: the self-cost lines add up to `totals:` exactly (call lines excluded), while
    // `summary:` may be larger (325261 vs 325259) or zero.
    for file in [
        "gprof2dot_bool.callgrind",
        "gprof2dot_googlecode-issue34.callgrind",
        "iai_callgrind_3.21_cachesim_no_entry_point.out",
        "gprof2dot_issue35.callgrind",
    ] {
        let p = valgrind::read(&root.join("callgrind").join(file), Tool::Callgrind).unwrap();
        assert_eq!(p.cost_line_sum, p.totals, "{file}");
    }
    let p = valgrind::read(
        &root.join("callgrind/iai_callgrind_3.21_cachesim_no_entry_point.out"),
        Tool::Callgrind,
    )
    .unwrap();
    assert_eq!(p.summary.as_ref().unwrap()[0], 325261);
    let m = valgrind::metrics(&p);
    let get = |n: &str| m.iter().find(|(k, _)| k == n).unwrap().1;
    assert_eq!(get("D1_misses"), 2969.0);
    assert_eq!(get("LL_misses"), 3842.0);

    let e = valgrind::read(
        &root.join("callgrind/iai_synthetic_invalid_version_too_high.out"),
        Tool::Callgrind,
    )
    .unwrap_err();
    assert!(e.ends_with("callgrind output, line 2: unsupported format `version: 2`; the callgrind format has versions 0 and 1 (is this file from a newer Valgrind, or corrupted?)"), "{e}");
    seen.sort();
    assert_eq!(seen, files("callgrind"), "every corpus file is covered");
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn every_cachegrind_file() {
    let root = corpus();
    let expected: &[(&str, &[&str], &[i64])] = &[
        ("valgrind_docs_concord.cgout", &["Ir"], &[8201333]),
        (
            "valgrind_tests_ann-diff4a_synthetic.cgout",
            &["Ir"],
            &[7100],
        ),
        (
            "valgrind_tests_ann1.cgout",
            &[
                "Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
            ],
            &[5229753, 952, 931, 4057955, 1918, 1520, 18005, 745, 699],
        ),
        (
            "valgrind_tests_ann2_synthetic.cgout",
            &["A", "SomeCount", "VeryLongEventName"],
            &[100000, 100000, 0],
        ),
    ];
    let mut seen = Vec::new();
    for (file, events, totals) in expected {
        let p = valgrind::read(&root.join("cachegrind").join(file), Tool::Cachegrind)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.events, *events, "{file}");
        assert_eq!(p.totals, *totals, "{file}");
        assert_eq!(p.totals_from, TotalsFrom::Summary, "{file}");
        // Negative counts (cg_diff output) included, the cost lines add up to the summary.
        assert_eq!(p.cost_line_sum, p.totals, "{file}");
        seen.push(file.to_string());
    }
    assert_eq!(seen, files("cachegrind"), "every corpus file is covered");
}

/// (event, value, running percentage) of a parsed block.
fn counter(b: &perf::Block, event: &str) -> (Option<f64>, Option<f64>) {
    let c = b
        .counters
        .iter()
        .find(|c| c.event == event)
        .unwrap_or_else(|| panic!("{event}"));
    (c.value, c.running_pct)
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn every_perf_stat_file() {
    let root = corpus();
    let read =
        |f: &str| perf::read(&root.join("perf_stat").join(f)).unwrap_or_else(|e| panic!("{e}"));

    let b = read("ayuram_598APE_HW3_perf_stat_human.txt");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].command.as_deref(), Some("./main.exe 1000 5000"));
    assert_eq!(b[0].counters.len(), 12);
    assert_eq!(
        counter(&b[0], "instructions"),
        (Some(140_122_007_951.0), None)
    );
    assert_eq!(counter(&b[0], "task-clock"), (Some(18_003_700_000.0), None));
    assert_eq!(
        counter(&b[0], "elapsed_time"),
        (Some(18_005_087_828.0), None)
    );
    assert_eq!(counter(&b[0], "system_time"), (Some(0.0), None));

    let b = read("grahamking_two_sum_perf_stat_human_enUS_topdown.txt");
    assert_eq!(b.len(), 3);
    assert!(b.iter().all(|x| x.counters.len() == 16));
    assert_eq!(
        b[2].command.as_deref(),
        Some("./target/release/two_sum 300 s")
    );
    assert_eq!(
        counter(&b[0], "topdown-be-bound"),
        (Some(1_414_213_966.0), None)
    );
    assert_eq!(
        counter(&b[1], "instructions"),
        (Some(157_923_601_609.0), None)
    );
    assert_eq!(
        counter(&b[2], "elapsed_time"),
        (Some(8_557_783_540.0), None)
    );
    assert_eq!(counter(&b[2], "user_time"), (Some(8_527_491_000.0), None));

    // German-style locale: `.` groups digits, `,` is the decimal mark; hybrid PMU names.
    let b = read("kargjonas_tiled_matmul_main.profile_human_deDE_hybrid.txt");
    assert_eq!(b[0].counters.len(), 26);
    assert_eq!(
        counter(&b[0], "cpu_atom/cycles/"),
        (Some(3_642_649_330.0), Some(0.68))
    );
    assert_eq!(
        counter(&b[0], "cpu_core/instructions/"),
        (Some(11_012_810_078.0), Some(88.71))
    );
    assert_eq!(counter(&b[0], "task-clock"), (Some(1_101_010_000.0), None));
    assert_eq!(
        counter(&b[0], "cpu_atom/LLC-load-misses/"),
        (Some(0.0), Some(0.83))
    );
    assert_eq!(
        counter(&b[0], "elapsed_time"),
        (Some(1_101_976_138.0), None)
    );
    assert!(b[0].counters[0].multiplexed());

    let b = read("kargjonas_tiled_matmul_main.parallel2.profile_human_deDE_hybrid.txt");
    assert_eq!(b[0].counters.len(), 26);
    assert_eq!(
        counter(&b[0], "cpu_core/cycles/"),
        (Some(36_246_187_668.0), Some(57.96))
    );
    assert_eq!(counter(&b[0], "context-switches"), (Some(2909.0), None));
    assert_eq!(
        counter(&b[0], "elapsed_time"),
        (Some(2_007_931_346.0), None)
    );

    let b = read("kargjonas_tiled_matmul_main.parallel6.profile_human_deDE_hybrid.txt");
    assert_eq!(b[0].counters.len(), 26);
    assert_eq!(
        counter(&b[0], "cpu_atom/LLC-load-misses/"),
        (Some(7.0), Some(50.45))
    );
    assert_eq!(counter(&b[0], "cpu-clock"), (Some(2_132_120_000.0), None));
    assert_eq!(counter(&b[0], "elapsed_time"), (Some(254_132_990.0), None));

    let mut covered = vec![
        "ayuram_598APE_HW3_perf_stat_human.txt",
        "grahamking_two_sum_perf_stat_human_enUS_topdown.txt",
        "kargjonas_tiled_matmul_main.parallel2.profile_human_deDE_hybrid.txt",
        "kargjonas_tiled_matmul_main.parallel6.profile_human_deDE_hybrid.txt",
        "kargjonas_tiled_matmul_main.profile_human_deDE_hybrid.txt",
    ];
    covered.sort();
    assert_eq!(covered, files("perf_stat"), "every corpus file is covered");
}
