//! GitHub integration: the Actions context and environment files ([`env`](mod@env)), the comment and
//! summary text fitted to GitHub's limits ([`body`]), and the REST calls ([`client`]).
//!
//! Kept apart from the pipeline: nothing below `commands` needs a network or a runtime, and
//! the async client runs on a current-thread runtime created only by the GitHub commands.

pub mod body;
pub mod client;
pub mod env;

use std::path::Path;
use std::process::Command;

use env::GithubContext;

/// Why posting from this checkout would be unsafe, or `None` when it is not.
///
/// A `pull_request_target` workflow runs with a write token and secrets; if it has checked
/// out the pull request's head from a fork, the code (and the report) came from whoever opened
/// the pull request, and posting with the write token is the "pwn request" pattern.
pub fn untrusted_checkout(ctx: &GithubContext, workdir: &Path) -> Option<String> {
    if ctx.event_name != "pull_request_target" {
        return None;
    }
    let event = &ctx.event;
    let from_fork = match (&event.head_repo, &event.base_repo) {
        (Some(head), Some(base)) => !head.eq_ignore_ascii_case(base),
        // A deleted fork has no head repository: treat it as a fork.
        (None, _) => true,
        (Some(_), None) => false,
    };
    if !from_fork {
        return None;
    }
    let head_sha = event.head_sha.as_deref()?;
    let checked_out = Command::new("git")
        .arg("-C")
        .arg(workdir)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())?;
    (checked_out == head_sha).then(|| {
        format!(
            "refusing to post from a `pull_request_target` job that has checked out the fork's head commit {head_sha} ({}): its code and report come from the pull request's author, and this job holds a write token. Run the benchmarks in a `pull_request` workflow and post from a `workflow_run` workflow (docs/github.md, \"Fork pull requests\"), or pass --allow-untrusted-checkout if the job is gated by an approval environment",
            event.head_repo.as_deref().unwrap_or("deleted fork")
        )
    })
}
