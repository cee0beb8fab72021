//! A second revision checked out beside the work tree, for interleaved same-job comparison.
//!
//! `kgate check --against REF` measures REF and the current tree in the same job, alternating
//! their runs, because a baseline stored by another job carries machine offsets that no
//! within-job test can see. REF is checked out with `git worktree add --detach` into a
//! temporary folder and removed again afterwards, whatever happens.

use std::path::{Path, PathBuf};

use crate::baseline::gitref::{self, GitError};

/// Worktree errors.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(transparent)]
    Git(#[from] GitError),
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

impl Worktree {
    /// Checks out `reference` of the repository containing `config_root`.
    pub fn checkout(config_root: &Path, reference: &str) -> Result<Worktree, WorktreeError> {
        let config_root = config_root.canonicalize().map_err(WorktreeError::TempDir)?;
        let top = gitref::toplevel(&config_root)?;
        let commit = gitref::resolve(&top, reference)?;
        let relative = config_root
            .strip_prefix(&top)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let dir = tempfile::Builder::new()
            .prefix("kgate-against-")
            .tempdir()?;
        let checkout = dir.path().join("tree");
        let checkout_str = checkout.display().to_string();
        #[rustfmt::skip]
        let add: [&str; 6] = ["worktree", "add", "--detach", "--quiet", &checkout_str, &commit];
        gitref::git_text(&top, &add)?;
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
        let _ = gitref::git_text(&self.repo, &["worktree", "remove", "--force", &path]);
        let _ = gitref::git_text(&self.repo, &["worktree", "prune"]);
    }
}
