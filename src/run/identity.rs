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

/// Runs an identity command (`sh -c`) in a folder and gives its standard output, or why not.
pub type RunCommand<'a> = &'a dyn Fn(&str, &Path) -> Result<Vec<u8>, String>;

/// The digest of `identity` in `dir` (the benchmark's working directory in one revision's
/// tree), for a benchmark declared as `description` on a runner of `class`, its commands run by
/// `run`: hex SHA-256. Err says why it cannot be taken (a file pattern that matches nothing or
/// leaves the revision, a command that fails); the benchmark is then measured.
pub fn digest(
    identity: &Identity,
    description: &str,
    class: &str,
    dir: &Path,
    run: RunCommand<'_>,
) -> Result<String, String> {
    let mut hash = Sha256::new();
    hash.update(b"kgate identity 1\0");
    for part in [description, class] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    for file in files(identity, dir)? {
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
        let output = run(command, dir)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh -c` without a time limit, for the tests (the runner's has one).
    fn sh(command: &str, dir: &Path) -> Result<Vec<u8>, String> {
        let out = std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(dir)
            .output()
            .map_err(|e| e.to_string())?;
        match out.status.code() {
            Some(0) => Ok(out.stdout),
            code => Err(format!(
                "identity command `{command}` exited with status {code:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
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
        let of =
            |description: &str, class: &str| digest(&identity, description, class, d, &sh).unwrap();
        let first = of("bench", "x86");
        assert_eq!(first.len(), 64);
        let same = "the same inputs give the same digest";
        assert_eq!(first, of("bench", "x86"), "{same}");
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
        let err = |identity: Identity| digest(&identity, "b", "c", d, &sh).unwrap_err();
        let files = |f: &str| Identity {
            files: vec![f.into()],
            commands: Vec::new(),
        };
        assert!(err(files("build/*.cubin")).contains("matches no file"));
        assert!(err(files("missing.so")).contains("matches no file"));
        assert!(err(files("../outside")).contains("leaves the revision's tree"));
        assert!(err(files("/etc/passwd")).contains("leaves the revision's tree"));
        let commands = vec!["echo no such tool >&2; exit 3".into()];
        let why = err(Identity {
            files: Vec::new(),
            commands,
        });
        assert_contains!(why, "exited with status");
        assert_contains!(why, "no such tool");
    }
}
