//! A second revision checked out beside the work tree, for interleaved same-job comparison.
//!
//! `kgate check --against REF` measures REF and the current tree in the same job, alternating
//! their runs, because a baseline stored by another job carries machine offsets that no
//! within-job test can see. REF is checked out with `git worktree add --detach` into a
//! temporary folder and removed again afterwards, whatever happens.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Worktree errors.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(
        "`{path}` is not inside a git repository, so `--against` cannot check out another revision"
    )]
    NotARepository { path: PathBuf },
    #[error("`{reference}` does not name a commit in this repository: {message}")]
    UnknownRef { reference: String, message: String },
    #[error("git {action} failed: {message}")]
    Git { action: String, message: String },
    #[error("cannot create a temporary folder: {0}")]
    TempDir(#[from] std::io::Error),
}

/// A checked-out revision; removed on drop.
#[derive(Debug)]
pub struct Worktree {
    repo: PathBuf,
    /// Owns the temporary folder; dropped (and deleted) after the worktree is unregistered.
    _folder: tempfile::TempDir,
    checkout: PathBuf,
    /// The configuration folder's counterpart inside the checkout.
    pub root: PathBuf,
    /// The full commit hash checked out.
    pub commit: String,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

impl Worktree {
    /// Checks out `reference` of the repository containing `config_root`.
    pub fn checkout(config_root: &Path, reference: &str) -> Result<Worktree, WorktreeError> {
        let config_root = config_root.canonicalize().map_err(WorktreeError::TempDir)?;
        let top = git(&config_root, &["rev-parse", "--show-toplevel"]).map_err(|_| {
            WorktreeError::NotARepository {
                path: config_root.clone(),
            }
        })?;
        let top = PathBuf::from(top);
        let commit = git(
            &top,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{reference}^{{commit}}"),
            ],
        )
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| WorktreeError::UnknownRef {
            reference: reference.to_string(),
            message: "try a branch, tag or commit hash (`git log` lists commits)".into(),
        })?;
        let relative = config_root
            .strip_prefix(&top)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let dir = tempfile::Builder::new()
            .prefix("kgate-against-")
            .tempdir()?;
        let checkout = dir.path().join("tree");
        let checkout_str = checkout.display().to_string();
        git(
            &top,
            &[
                "worktree",
                "add",
                "--detach",
                "--quiet",
                &checkout_str,
                &commit,
            ],
        )
        .map_err(|message| WorktreeError::Git {
            action: format!("worktree add {reference}"),
            message,
        })?;
        Ok(Worktree {
            repo: top,
            root: checkout.join(relative),
            checkout,
            _folder: dir,
            commit,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let path = self.checkout.display().to_string();
        let _ = git(&self.repo, &["worktree", "remove", "--force", &path]);
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}
