//! Helpers shared by the integration tests: the binary under test, files in a temporary folder,
//! and the conformance corpus.

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;

/// `kgate` run in `dir`, with CI detection and colour off so output is stable.
pub fn kgate(dir: &Path) -> assert_cmd::Command {
    let mut cmd = cargo_bin_cmd!("kgate");
    cmd.current_dir(dir).env_remove("CI").env("NO_COLOR", "1");
    cmd
}

/// `kgate check --against main --no-progress --format FORMAT` in `dir`, run to its end.
pub fn check_against_main(dir: &Path, format: &str) -> std::process::Output {
    kgate(dir)
        .args([
            "check",
            "--against",
            "main",
            "--no-progress",
            "--format",
            format,
        ])
        .output()
        .unwrap()
}

/// Writes `text` to `dir/name`, creating folders on the way; returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs git in `dir` with a throw-away identity; asserts success and returns its trimmed
/// stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=kgate",
            "-c",
            "user.email=kgate@example.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr_of(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git repository in `dir` whose first commit, on `main`, holds `files` (name, text).
pub fn committed_repository(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q", "-b", "main"]);
    for (name, text) in files {
        write(dir, name, text);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
}

/// Waits until `path` exists: a benchmark that creates it has started, however long a loaded
/// machine took to get there. Fails after two minutes.
pub fn wait_for_file(path: &Path) {
    let waiting = std::time::Instant::now();
    while !path.exists() {
        assert!(
            waiting.elapsed() < std::time::Duration::from_secs(120),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A process's stderr as text.
pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

pub fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The conformance corpus: `KGATE_CORPUS`, else `../shared/corpus` beside the crate. A test
/// that reads it is marked `#[cfg_attr(kgate_no_corpus, ignore = "…")]` (build.rs looks for the
/// same folder), so a missing corpus fails here only under `CI` or where it went away after
/// the build.
pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("KGATE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    assert!(
        dir.is_dir(),
        "the conformance corpus is missing at {}: set KGATE_CORPUS to its folder",
        dir.display()
    );
    dir
}

/// Fails unless `tool --version` runs and succeeds. A test that needs the tool is marked
/// `#[cfg_attr(kgate_no_TOOL, ignore = "…")]` (build.rs makes the same check), so this fails
/// only under `CI`, where `.ci/run` installs `package`, or where the tool went away after the
/// build (`touch build.rs`).
pub fn require_tool(tool: &str, package: &str) {
    let runs = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs,
        "`{tool} --version` does not run: install {package} (`.ci/run` does)"
    );
}

/// Copies a folder recursively, leaving out `target` build folders.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The bundled example suite (`kgate.yaml` and `examples/kernels/`) copied into `dir`.
pub fn copy_example_suite(dir: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(repo.join("kgate.yaml"), dir.join("kgate.yaml")).unwrap();
    std::fs::create_dir_all(dir.join("examples/kernels")).unwrap();
    copy_tree(
        &repo.join("examples/kernels"),
        &dir.join("examples/kernels"),
    );
}

/// Switches the example suite in `dir` to its slow matmul, the regression the tests catch.
pub fn use_naive_matmul(dir: &Path) {
    let variants = dir.join("examples/kernels/src/variants.rs");
    let text = std::fs::read_to_string(&variants).unwrap();
    let slow = text.replace("MATMUL: &str = \"blocked\"", "MATMUL: &str = \"naive\"");
    assert_ne!(slow, text, "variants.rs no longer names the blocked matmul");
    std::fs::write(&variants, slow).unwrap();
}

/// A stand-in `nvidia-smi` in `dir/bin` that reports an NVIDIA H200, as the importing machine's
/// GPU; returns a `PATH` with it first. Imported files were measured elsewhere, so their
/// results must not claim this GPU.
pub fn path_with_fake_nvidia_smi(dir: &Path) -> std::ffi::OsString {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\necho 'NVIDIA H200, 570.86.15, 1980, 3201, [N/A]'\n",
    )
    .unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = std::ffi::OsString::from(bin.as_os_str());
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(":");
        path.push(rest);
    }
    path
}

/// A JSON array of numbers as f64s: results write whole numbers without a fraction (`88000`),
/// which serde_json's `Value` keeps apart from `88000.0`, the same number.
pub fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|n| n.as_f64().unwrap_or_else(|| panic!("not a number: {n}")))
        .collect()
}

/// A trace's kernels with their durations, for comparisons.
pub fn kernels(samples: &kgate::import::trace::TraceSamples) -> Vec<(String, Vec<f64>)> {
    samples.kernels.clone()
}
