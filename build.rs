//! Tells the integration tests which of their prerequisites this machine lacks, so that a test
//! that cannot run is reported as ignored, with the reason, instead of passing without testing
//! (`cargo test` then counts it under "ignored"). Under `CI` the tests themselves fail on a
//! missing prerequisite instead, so a CI run never skips silently.
//!
//! The profiler databases that are too large to keep in the repository are found through
//! `KGATE_NSYS_SAMPLES` (a folder holding nsys-ai's `mfu_2gpu_before.sqlite` and
//! `mfu_2gpu_after.sqlite`) and `KGATE_ROCPD_SAMPLE` (batched_gemm's `21_results.db`); tests
//! that need them are ignored where they are absent, under `CI` too (CI does not fetch them).
//!
//! Only the environment is watched (`KGATE_CORPUS`, and the two above); after installing a tool (google-benchmark,
//! jax for `python3`, valgrind and a C compiler, perf, cmark-gfm, setpriv), or putting the
//! corpus at
//! `../shared/corpus`,
//! `touch build.rs` to look again.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=KGATE_CORPUS");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=KGATE_NSYS_SAMPLES");
    println!("cargo::rerun-if-env-changed=KGATE_ROCPD_SAMPLE");
    for cfg in [
        "kgate_no_corpus",
        "kgate_no_gbench",
        "kgate_no_jax",
        "kgate_no_valgrind",
        "kgate_no_perf",
        "kgate_no_dev_zero",
        "kgate_no_cmark_gfm",
        "kgate_no_setpriv",
        "kgate_no_nsys_samples",
        "kgate_no_rocpd_sample",
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let under_ci = std::env::var_os("CI").is_some();
    let nsys = std::env::var_os("KGATE_NSYS_SAMPLES").map(std::path::PathBuf::from);
    if !nsys.is_some_and(|d| {
        d.join("mfu_2gpu_before.sqlite").is_file() && d.join("mfu_2gpu_after.sqlite").is_file()
    }) {
        println!("cargo::rustc-cfg=kgate_no_nsys_samples");
    }
    if !std::env::var_os("KGATE_ROCPD_SAMPLE").is_some_and(|f| Path::new(&f).is_file()) {
        println!("cargo::rustc-cfg=kgate_no_rocpd_sample");
    }
    let corpus = std::env::var_os("KGATE_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
                .join("../shared/corpus")
        });
    if !corpus.is_dir() && !under_ci {
        println!("cargo::rustc-cfg=kgate_no_corpus");
    }
    let gbench = Path::new("/usr/include/benchmark/benchmark.h").is_file()
        || Path::new("/usr/local/include/benchmark/benchmark.h").is_file();
    if !gbench && !under_ci {
        println!("cargo::rustc-cfg=kgate_no_gbench");
    }
    // jax for `python3` (found, not imported: a find_spec takes milliseconds, an import seconds).
    let jax = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('jax') is None)",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !jax && !under_ci {
        println!("cargo::rustc-cfg=kgate_no_jax");
    }
    // valgrind (with a C compiler, for the tests that build a C program to run under it), perf
    // and cmark-gfm: `--version` runs and succeeds, the check the tests themselves make.
    let runs = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    for (ok, cfg) in [
        (runs("valgrind") && runs("cc"), "kgate_no_valgrind"),
        (runs("perf"), "kgate_no_perf"),
        // GitHub's Markdown renderer, for the tests that read rendered comments.
        (runs("cmark-gfm"), "kgate_no_cmark_gfm"),
    ] {
        if !ok && !under_ci {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    if !Path::new("/dev/zero").exists() && !under_ci {
        println!("cargo::rustc-cfg=kgate_no_dev_zero");
    }
    // Running kgate as an unprivileged user: the tests' own user, or `nobody` through setpriv
    // (util-linux) when the tests run as root.
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if root && !runs("setpriv") && !under_ci {
        println!("cargo::rustc-cfg=kgate_no_setpriv");
    }
}
