//! A benchmark's identity digest: what its performance depends on, hashed in one revision's
//! tree after that revision's build.
//!
//! Accelerator time is what a gate costs. When the kernels a benchmark runs are byte for byte
//! the same on both sides (the same built `.cubin`, the same SASS, the same function bytes) and
//! so is everything declared about the benchmark, measuring it again can only find noise, so
//! `check --against` reports it `identical` instead. The digest is taken in each side's own
//! work tree after its own build, never with the other side's build files (CCCL's pitfall:
//! building the base with the head's build files hides real changes), and covers the
//! benchmark's declaration on that side and the runner class, so a change to the command, the
//! settings or the machine is always measured.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Identity;
use crate::run::runner::{ProcessSpec, Revision, run_process};

/// How long one identity command may run.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The digest of `identity` in `revision`, for a benchmark declared as `description` whose
/// working directory is `cwd` (relative to the revision's root) on a runner of `class`: hex
/// SHA-256. Err says why it cannot be taken (a file pattern that matches nothing or leaves the
/// revision, a command that fails); the benchmark is then measured.
pub fn digest(
    identity: &Identity,
    description: &str,
    class: &str,
    revision: &Revision,
    cwd: &Path,
) -> Result<String, String> {
    let dir = revision.root.join(cwd);
    let mut hash = Sha256::new();
    hash.update(b"kgate identity 1\0");
    for part in [description, class] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    for file in files(identity, &dir)? {
        let bytes = std::fs::read(dir.join(&file))
            .map_err(|e| format!("identity file `{}` cannot be read: {e}", file.display()))?;
        let name = file.to_string_lossy();
        hash.update(b"file\0");
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    for command in &identity.commands {
        let output = command_output(command, &dir)?;
        hash.update(b"command\0");
        hash.update((command.len() as u64).to_le_bytes());
        hash.update(command.as_bytes());
        hash.update((output.len() as u64).to_le_bytes());
        hash.update(&output);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The files the patterns name, relative to `dir`, sorted and each once. A pattern is a path or
/// a glob relative to the working directory; one that is absolute or climbs out with `..`, or
/// that matches nothing, is an error.
fn files(identity: &Identity, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = std::collections::BTreeSet::new();
    for pattern in &identity.files {
        let path = Path::new(pattern);
        if path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "identity file `{pattern}` leaves the revision's tree: give a path relative to the benchmark's working directory, without `..`"
            ));
        }
        let before = found.len();
        if pattern.contains(['*', '?', '[', '{']) {
            let glob = globset::Glob::new(pattern)
                .map_err(|e| format!("identity file pattern `{pattern}`: {e}"))?
                .compile_matcher();
            for entry in walkdir::WalkDir::new(dir).follow_links(false) {
                let entry = entry.map_err(|e| format!("identity files: {e}"))?;
                if !entry.file_type().is_file() {
                    continue;
                }
                if let Ok(relative) = entry.path().strip_prefix(dir)
                    && glob.is_match(relative)
                {
                    found.insert(relative.to_path_buf());
                }
            }
        } else if dir.join(path).is_file() {
            found.insert(path.to_path_buf());
        }
        if found.len() == before && !found.iter().any(|f| f == path) {
            return Err(format!(
                "identity file `{pattern}` matches no file in the revision (after its build)"
            ));
        }
    }
    Ok(found.into_iter().collect())
}

/// The standard output of `sh -c command` in `dir`, run as a build step is (kgate's
/// environment, which holds no credential), with a time limit.
fn command_output(command: &str, dir: &Path) -> Result<Vec<u8>, String> {
    let out = tempfile::NamedTempFile::new()
        .map_err(|e| format!("identity command `{command}`: no temporary file: {e}"))?;
    let argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("{command} > \"$KGATE_IDENTITY_OUTPUT\""),
    ];
    let outcome = run_process(&ProcessSpec {
        argv: &argv,
        cwd: dir,
        env: vec![(
            "KGATE_IDENTITY_OUTPUT".to_string(),
            out.path().to_string_lossy().into_owned(),
        )],
        clear_env: false,
        pass_env: &[],
        timeout: COMMAND_TIMEOUT,
    })
    .map_err(|e| format!("identity command `{command}` cannot start: {e}"))?;
    if let Some(f) = crate::run::runner::failure_of(&outcome, COMMAND_TIMEOUT) {
        let mut why = format!("identity command `{command}` {}", f.message);
        if let Some(last) = f.stderr_tail.lines().last() {
            why.push_str(&format!(": {last}"));
        }
        return Err(why);
    }
    std::fs::read(out.path()).map_err(|e| format!("identity command `{command}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(root: &Path) -> Revision {
        Revision {
            root: root.to_path_buf(),
            label: None,
        }
    }

    #[test]
    fn the_digest_follows_the_files_the_commands_the_declaration_and_the_class() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("build")).unwrap();
        std::fs::write(d.join("build/k.cubin"), b"sass 1").unwrap();
        std::fs::write(d.join("build/other.o"), b"x").unwrap();
        let identity = Identity {
            files: vec!["build/*.cubin".into()],
            commands: vec!["cat build/k.cubin | wc -c".into()],
        };
        let of = |description: &str, class: &str| {
            digest(&identity, description, class, &revision(d), Path::new(".")).unwrap()
        };
        let first = of("bench", "x86");
        assert_eq!(first.len(), 64);
        assert_eq!(
            first,
            of("bench", "x86"),
            "the same inputs give the same digest"
        );
        assert_ne!(first, of("bench --n 2", "x86"), "the declaration");
        assert_ne!(first, of("bench", "aarch64"), "the runner class");
        std::fs::write(d.join("build/other.o"), b"y").unwrap();
        assert_eq!(first, of("bench", "x86"), "a file outside the identity");
        std::fs::write(d.join("build/k.cubin"), b"sass 2").unwrap();
        assert_ne!(first, of("bench", "x86"), "a file of the identity");
    }

    #[test]
    fn patterns_that_match_nothing_or_leave_the_tree_and_failing_commands_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let err = |identity: Identity| {
            digest(&identity, "b", "c", &revision(d), Path::new(".")).unwrap_err()
        };
        let files = |f: &str| Identity {
            files: vec![f.into()],
            commands: Vec::new(),
        };
        assert!(err(files("build/*.cubin")).contains("matches no file"));
        assert!(err(files("missing.so")).contains("matches no file"));
        assert!(err(files("../outside")).contains("leaves the revision's tree"));
        assert!(err(files("/etc/passwd")).contains("leaves the revision's tree"));
        let failing = Identity {
            files: Vec::new(),
            commands: vec!["echo no such tool >&2; exit 3".into()],
        };
        let why = err(failing);
        assert!(why.contains("exited with status 3"), "{why}");
        assert!(why.contains("no such tool"), "{why}");
    }
}
