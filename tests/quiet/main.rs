//! Tests whose verdicts rest on wall times measured at two moments, in their own test binary
//! (`cargo test --test quiet`). A stored baseline and the check after it are taken seconds
//! apart; beside the `it` binary's hundreds of processes, the machine's load changes between
//! the two and moves a 50 ms sleep by 5 % or more, which the gate rightly calls a change.
//! `cargo test` runs test binaries one after another, so these run after `it`, not beside it,
//! and [`alone`] runs them one at a time.

#[path = "../it/common.rs"]
#[allow(dead_code)]
mod common;

use common::{kgate, stderr_of, write};

/// Held for the whole of each test of this binary, so that no two measure at once.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it poisons it; the next one measures all the same.
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The code blocks of the README's "Use it on your code in five minutes", in order.
fn quick_start_blocks() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("## Use it on your code in five minutes")
        .expect("the README's quick start");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    let mut blocks = Vec::new();
    let mut lines = section[..end].lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            blocks.push((lang.to_string(), body.join("\n") + "\n"));
        }
    }
    blocks
}

/// The README's quick start, word for word: the script and the configuration it shows, then
/// each `kgate` command it lists, in a fresh git repository; then the change it suggests
/// (`sleep 0.1`) makes `kgate check` and `kgate check --against main` fail. The install line
/// is the one step not run: the binary under test is the one it would install.
#[test]
fn the_readme_quick_start_works() {
    let _alone = alone();
    let blocks = quick_start_blocks();
    assert_eq!(
        blocks.len(),
        4,
        "install, bench.sh, kgate.yaml, commands: {blocks:?}"
    );
    assert!(blocks[0].1.starts_with("cargo install --locked --path ."));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::git(d, &["init", "-q", "-b", "main"]);
    write(d, "bench.sh", &blocks[1].1);
    write(d, "kgate.yaml", &blocks[2].1);
    common::git(d, &["add", "."]);
    common::git(d, &["commit", "-q", "-m", "benchmarks"]);
    let commands: Vec<Vec<&str>> = blocks[3]
        .1
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let run = |argv: &[&str]| {
        assert_eq!(
            argv[0], "kgate",
            "a README command that is not kgate: {argv:?}"
        );
        kgate(d)
            .args(&argv[1..])
            .arg("--no-progress")
            .output()
            .unwrap()
    };
    for argv in &commands {
        // `validate` takes no progress flag.
        let out = if argv[1] == "validate" {
            kgate(d).args(&argv[1..]).output().unwrap()
        } else {
            run(argv)
        };
        // The report too, so that a verdict on a loaded machine can be read from the log.
        assert_eq!(
            out.status.code(),
            Some(0),
            "{argv:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr_of(&out)
        );
    }
    // "Make the work slower (`sleep 0.1`)".
    let slower = blocks[1].1.replace("sleep 0.05", "sleep 0.1");
    assert_ne!(slower, blocks[1].1);
    write(d, "bench.sh", &slower);
    for argv in &commands[2..] {
        let out = run(argv);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{argv:?}: {text}{}",
            stderr_of(&out)
        );
        assert!(text.contains("regressed"), "{argv:?}: {text}");
    }
}
