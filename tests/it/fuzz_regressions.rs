//! Every input the fuzzers ever found a problem with, replayed through the same entry points
//! the fuzz targets drive (`fuzz/src/lib.rs`, included here so that the test needs neither
//! libFuzzer nor a nightly feature). An input lives in `fuzz/regressions/<target>/`; a panic
//! or a results file that does not read back fails the test.

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

use std::path::Path;

#[test]
fn every_kept_fuzz_finding_stays_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut replayed = 0;
    for target in std::fs::read_dir(&root).unwrap() {
        let target = target.unwrap();
        if !target.file_type().unwrap().is_dir() {
            continue;
        }
        let name = target.file_name().into_string().unwrap();
        let entry = harness::by_target(&name)
            .unwrap_or_else(|| panic!("fuzz/regressions/{name}: no fuzz target of that name"));
        for input in std::fs::read_dir(target.path()).unwrap() {
            let input = input.unwrap().path();
            if input.file_name().is_some_and(|n| n == "README.md") {
                continue;
            }
            let data = std::fs::read(&input).unwrap();
            let outcome = std::panic::catch_unwind(|| entry(&data));
            assert!(outcome.is_ok(), "{} panics again", input.display());
            replayed += 1;
        }
    }
    assert!(
        replayed > 0,
        "no regression inputs were found under {}",
        root.display()
    );
}

/// Every target the fuzz crate builds has an entry point, and the other way round.
#[test]
fn fuzz_targets_and_entry_points_agree() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    for name in &names {
        assert!(
            harness::by_target(name).is_some(),
            "{name} has no entry point"
        );
    }
    // One target per import format, plus the protocol line, the config, perf, valgrind, the
    // results reader, the comparison, the stored report and the stored report commented.
    assert_eq!(names.len(), harness::IMPORT_TARGETS.len() + 8, "{names:?}");
    let manifest = std::fs::read_to_string(dir.parent().unwrap().join("Cargo.toml")).unwrap();
    for name in &names {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml lacks the [[bin]] of {name}"
        );
    }
}

/// The comparison target's check on its seeds (`fuzz/seeds/compare/`, pairs of the project's
/// own results files: see `fuzz/seeds/make_seeds.py`): each pair loads and compares, and its
/// report reads back, renders and cuts to a comment.
#[test]
fn results_files_compared_give_a_report_that_renders_and_cuts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/compare");
    let (mut seeds, mut cuts) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let compared = harness::compare_checked(&std::fs::read(&path).unwrap());
        assert!(compared.loaded, "{}", path.display());
        seeds += 1;
        cuts += compared.markdown_cuts;
    }
    assert!(seeds >= 15, "{seeds} seeds in {}", dir.display());
    // Some comments were cut, not only held whole.
    assert!(cuts >= 10, "{cuts} Markdown comments cut");
}

/// The stored-report target's check on its seeds (`fuzz/seeds/report/`, the reports `kgate
/// compare` wrote of the comparison's seeds, one with names that are markup in every format):
/// each loads, renders in every format within its limits with no script in its page, and
/// reads back the same once written again.
#[test]
fn stored_reports_render_within_their_limits() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/report");
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            harness::render_stored(&std::fs::read(&path).unwrap()),
            "{} did not load, so was not checked",
            path.display()
        );
        seeds += 1;
    }
    assert!(seeds >= 15, "{seeds} seeds in {}", dir.display());
}

/// The comment target's check on its seeds (the stored-report seeds and `fuzz/seeds/comment/`:
/// a report too large for one comment, and one whose names hold kgate's comment markers), as
/// `kgate comment` posts them: each loads, its comment fits with its marker first and alone,
/// and no check run passes a regressed or failed row.
#[test]
fn stored_reports_comment_with_one_marker_and_no_passing_regression() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut seeds = 0;
    for dir in ["report", "comment"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            assert!(
                harness::comment_stored(&std::fs::read(&path).unwrap()),
                "{} did not load, so was not checked",
                path.display()
            );
            seeds += 1;
        }
    }
    assert!(seeds >= 17, "{seeds} seeds in {}", root.display());
}
