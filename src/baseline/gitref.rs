//! Reading from git without checking anything out: baselines at a ref, merge-bases, changed files.
//!
//! A pull request must be compared with what it forked from, not with the moving tip of its
//! target branch (peers' trackers are full of "compared against the wrong commit"). So a
//! baseline ref is resolved to `git merge-base REF HEAD` and the file is read with
//! `git show COMMIT:PATH`, leaving the work tree untouched.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Git errors, each with the command that failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("`{path}` is not inside a git repository")]
    NotARepository { path: PathBuf },
    #[error("git {args} failed: {message}")]
    Failed { args: String, message: String },
    #[error(
        "no merge-base between `{reference}` and HEAD; in a shallow clone fetch the history (actions/checkout with `fetch-depth: 0`), or name a ref that shares history with HEAD"
    )]
    NoMergeBase { reference: String },
    #[error("`{path}` does not exist at {reference} ({commit}); {hint}")]
    MissingFile {
        path: String,
        reference: String,
        commit: String,
        hint: String,
    },
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| GitError::Failed {
            args: args.join(" "),
            message: format!("cannot run git: {e}"),
        })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs git in `dir` and returns its trimmed standard output.
pub fn git_text(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git(dir, args).map(|b| String::from_utf8_lossy(&b).trim().to_string())
}

/// The top folder of the repository containing `dir`.
pub fn toplevel(dir: &Path) -> Result<PathBuf, GitError> {
    git_text(dir, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|_| GitError::NotARepository {
            path: dir.to_path_buf(),
        })
}

/// The commit a ref names.
pub fn resolve(dir: &Path, reference: &str) -> Result<String, GitError> {
    let commit = format!("{reference}^{{commit}}");
    git_text(dir, &["rev-parse", "--verify", "--quiet", &commit])
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| GitError::Failed {
            args: format!("rev-parse {reference}"),
            message: format!(
                "`{reference}` does not name a commit; try a branch, tag or commit hash"
            ),
        })
}

/// The best common ancestor of `reference` and HEAD: what a pull request forked from. For a
/// ref that is already an ancestor of HEAD this is the ref itself.
pub fn merge_base(dir: &Path, reference: &str) -> Result<String, GitError> {
    resolve(dir, reference)?;
    git_text(dir, &["merge-base", reference, "HEAD"])
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| GitError::NoMergeBase {
            reference: reference.to_string(),
        })
}

/// Whether `ancestor` is HEAD or one of its ancestors.
pub fn is_ancestor_of_head(dir: &Path, ancestor: &str) -> Result<bool, GitError> {
    resolve(dir, ancestor)?;
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["merge-base", "--is-ancestor", ancestor, "HEAD"])
        .status()
        .map_err(|e| GitError::Failed {
            args: "merge-base --is-ancestor".into(),
            message: e.to_string(),
        })?;
    Ok(status.success())
}

/// `file`'s path relative to the repository top, with `/` separators, as `git show` wants it.
pub fn repo_relative(dir: &Path, file: &Path) -> Result<String, GitError> {
    let top = toplevel(dir)?
        .canonicalize()
        .map_err(|_| GitError::NotARepository {
            path: dir.to_path_buf(),
        })?;
    let absolute = if file.is_absolute() {
        file.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(file))
            .unwrap_or_else(|_| file.to_path_buf())
    };
    // Canonicalize the folder (the file itself may not exist in the work tree).
    let parent = absolute.parent().unwrap_or(Path::new("/"));
    let parent = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_path_buf());
    let full = parent.join(absolute.file_name().unwrap_or_default());
    let rel = full.strip_prefix(&top).map_err(|_| GitError::Failed {
        args: "show".into(),
        message: format!("`{}` lies outside the repository", file.display()),
    })?;
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

/// A file's bytes at a commit, read with `git show COMMIT:PATH`.
pub fn show(
    dir: &Path,
    commit: &str,
    repo_path: &str,
    reference: &str,
) -> Result<Vec<u8>, GitError> {
    git(dir, &["show", &format!("{commit}:{repo_path}")]).map_err(|_| GitError::MissingFile {
        path: repo_path.to_string(),
        reference: reference.to_string(),
        commit: commit[..12.min(commit.len())].to_string(),
        hint: "was the baseline committed there? (`git log --oneline -- PATH` lists the commits that touched it)".into(),
    })
}

/// Files changed since `reference`: `git diff --name-only REF...HEAD` (the pull request's own
/// changes, from the merge-base) plus uncommitted and untracked files. Paths are relative to
/// the repository top.
pub fn changed_files(dir: &Path, reference: &str) -> Result<Vec<String>, GitError> {
    resolve(dir, reference)?;
    let top = toplevel(dir)?;
    let range = format!("{reference}...HEAD");
    let mut files = Vec::new();
    for args in [
        &["diff", "--name-only", "-z", range.as_str()][..],
        &["diff", "--name-only", "-z", "HEAD"],
        &[
            "ls-files",
            "--others",
            "--exclude-standard",
            "-z",
            "--full-name",
        ],
    ] {
        let out = git(&top, args)?;
        files.extend(
            out.split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        );
    }
    files.sort();
    files.dedup();
    Ok(files)
}
