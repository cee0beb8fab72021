//! Talking to the GitHub REST API through octocrab: the sticky comment and the check run.
//!
//! octocrab's own retry layer is switched off and retries are done here, around each call,
//! because the rules matter and are tested: server errors (5xx) back off exponentially;
//! secondary rate limits (429, or 403 with `retry-after` or the "secondary rate limit"
//! message) wait as long as `retry-after` says; anything else fails at once with a message
//! that names the permission the token lacks. The comment is found by its hidden marker
//! *and* its author, across every page, so kgate never edits anyone else's comment.

use std::future::Future;
use std::time::Duration;

use octocrab::Octocrab;
use octocrab::models::CommentId;
use octocrab::models::issues::Comment;
use octocrab::service::middleware::retry::RetryConfig;
use serde_json::{Value, json};

/// The login that owns comments made with the workflow's `GITHUB_TOKEN`.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// What a call was doing, for error messages: the action and the permission it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Identify,
    ListComments,
    CreateComment,
    UpdateComment,
    FindPullRequest,
    CreateCheckRun,
    UpdateCheckRun,
}

impl Operation {
    fn action(self) -> &'static str {
        match self {
            Operation::Identify => "identify the token's account",
            Operation::ListComments => "list the pull request's comments",
            Operation::CreateComment => "create the pull-request comment",
            Operation::UpdateComment => "update the pull-request comment",
            Operation::FindPullRequest => "find the pull request of the head commit",
            Operation::CreateCheckRun => "create the check run",
            Operation::UpdateCheckRun => "complete the check run",
        }
    }

    /// The `permissions:` entry the job needs for this call.
    pub fn permission(self) -> &'static str {
        match self {
            Operation::Identify => "(none)",
            Operation::ListComments
            | Operation::CreateComment
            | Operation::UpdateComment
            | Operation::FindPullRequest => "pull-requests: write",
            Operation::CreateCheckRun | Operation::UpdateCheckRun => "checks: write",
        }
    }
}

/// Failures talking to GitHub, each saying how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error(
        "GitHub rejected the token (401 Unauthorized) trying to {}: {message}; pass a valid token with --token or the GITHUB_TOKEN variable (in a workflow: `token: ${{{{ github.token }}}}`)",
        .operation.action()
    )]
    Unauthorized {
        operation: Operation,
        message: String,
    },
    #[error(
        "GitHub refused to {} (403 Forbidden: {message}): the token lacks `{}`; add `permissions: {{ {} }}` to the job. Pull requests from forks only get a read-only token: post from a `workflow_run` workflow instead (docs/github.md, \"Fork pull requests\")",
        .operation.action(), .operation.permission(), .operation.permission()
    )]
    Forbidden {
        operation: Operation,
        message: String,
    },
    #[error(
        "GitHub answered 404 Not Found trying to {}: {message}; check the repository and pull request number, and that the token can see the repository (it needs `{}`)",
        .operation.action(), .operation.permission()
    )]
    NotFound {
        operation: Operation,
        message: String,
    },
    #[error("GitHub failed to {} after {attempts} attempts: {message}", .operation.action())]
    GaveUp {
        operation: Operation,
        attempts: u32,
        message: String,
    },
    #[error("cannot {}: {message}", .operation.action())]
    Other {
        operation: Operation,
        message: String,
    },
    #[error("cannot set up the GitHub client for {api_url}: {message}")]
    Client { api_url: String, message: String },
}

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The first wait after a server error; doubled after each further one.
    pub backoff: Duration,
    /// The wait for a secondary rate limit that gives no `retry-after`.
    pub rate_limit_wait: Duration,
    /// The longest wait kgate accepts; a longer `retry-after` fails at once.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            backoff: Duration::from_secs(2),
            rate_limit_wait: Duration::from_secs(60),
            max_wait: Duration::from_secs(300),
        }
    }
}

enum Decision {
    Retry(Duration),
    Fail(GithubError),
}

fn header<'a>(err: &'a octocrab::GitHubError, name: &str) -> Option<&'a str> {
    err.headers.as_ref()?.get(name)?.to_str().ok()
}

/// Decides what to do after a failed attempt (`attempt` counts from 0).
fn decide(
    policy: &RetryPolicy,
    operation: Operation,
    attempt: u32,
    err: octocrab::Error,
) -> Decision {
    let last = attempt + 1 >= policy.attempts;
    let give_up = |message: String| {
        Decision::Fail(GithubError::GaveUp {
            operation,
            attempts: attempt + 1,
            message,
        })
    };
    let gh = match err {
        octocrab::Error::GitHub { source, .. } => source,
        other => {
            let message = other.to_string();
            return if last {
                give_up(message)
            } else if matches!(
                other,
                octocrab::Error::Hyper { .. } | octocrab::Error::Service { .. }
            ) {
                Decision::Retry(policy.backoff * 2u32.pow(attempt))
            } else {
                Decision::Fail(GithubError::Other { operation, message })
            };
        }
    };
    let status = gh.status_code.as_u16();
    let message = gh.message.clone();
    let retry_after = header(&gh, "retry-after").and_then(|v| v.trim().parse::<u64>().ok());
    let secondary = status == 429
        || (status == 403
            && (retry_after.is_some()
                || message.to_ascii_lowercase().contains("rate limit")
                || header(&gh, "x-ratelimit-remaining") == Some("0")));
    if secondary {
        let wait = match retry_after {
            Some(s) => Duration::from_secs(s),
            None => match header(&gh, "x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok()) {
                Some(reset) => {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0);
                    Duration::from_secs(reset.saturating_sub(now).max(1))
                }
                None => policy.rate_limit_wait,
            },
        };
        if last || wait > policy.max_wait {
            return give_up(format!(
                "rate limited ({status}: {message}); GitHub asked to wait {} s",
                wait.as_secs()
            ));
        }
        return Decision::Retry(wait);
    }
    match status {
        401 => Decision::Fail(GithubError::Unauthorized { operation, message }),
        403 => Decision::Fail(GithubError::Forbidden { operation, message }),
        404 => Decision::Fail(GithubError::NotFound { operation, message }),
        500..=599 if !last => Decision::Retry(policy.backoff * 2u32.pow(attempt)),
        500..=599 => give_up(format!("{status}: {message}")),
        _ => Decision::Fail(GithubError::Other {
            operation,
            message: format!("{status}: {message}"),
        }),
    }
}

/// The outcome of posting the sticky comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentOutcome {
    Created {
        id: u64,
        url: String,
    },
    Updated {
        id: u64,
        url: String,
    },
    /// The policy allowed no new comment and there was none to update.
    Skipped,
}

impl CommentOutcome {
    pub fn url(&self) -> Option<&str> {
        match self {
            CommentOutcome::Created { url, .. } | CommentOutcome::Updated { url, .. } => Some(url),
            CommentOutcome::Skipped => None,
        }
    }
}

/// Check-run conclusions kgate uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
}

impl Conclusion {
    /// The conclusion `kgate comment` gives its check run, from a stored report (the artifact
    /// another job uploaded, a pull request's own among them) once its verdicts were recomputed
    /// from its rows (`compare::adjust::reconcile`, which counts `waived_regressions`): a pass
    /// that rests on waivers the report itself claims is neutral, since a job that only reads
    /// the report cannot check them.
    pub fn of_stored_report(
        report: &crate::model::report::Report,
        waived_regressions: usize,
    ) -> Conclusion {
        use crate::model::verdict::RunVerdict;
        match report.verdict {
            RunVerdict::Pass if waived_regressions > 0 => Conclusion::Neutral,
            RunVerdict::Pass => Conclusion::Success,
            RunVerdict::Regressed | RunVerdict::Error => Conclusion::Failure,
            RunVerdict::Inconclusive | RunVerdict::NoBaseline => Conclusion::Neutral,
        }
    }

    /// `self`, made no better than the gate's own status (`--gate-status`, from the job that
    /// measured): that status can fail a check the rows pass, never pass one they fail.
    pub fn no_better_than(self, gate: Option<Conclusion>) -> Conclusion {
        match (gate, self) {
            (Some(Conclusion::Failure), _) => Conclusion::Failure,
            (Some(Conclusion::Neutral), Conclusion::Success) => Conclusion::Neutral,
            _ => self,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Neutral => "neutral",
        }
    }
}

/// A client for one repository.
pub struct GithubClient {
    octocrab: Octocrab,
    owner: String,
    repo: String,
    policy: RetryPolicy,
}

impl GithubClient {
    /// A client for `owner/repo` at `api_url` (`https://api.github.com`, or a GitHub
    /// Enterprise Server's `https://HOST/api/v3`). Call it inside a tokio runtime (octocrab
    /// spawns its service onto the current one).
    pub fn new(
        api_url: &str,
        token: &str,
        owner: &str,
        repo: &str,
    ) -> Result<GithubClient, GithubError> {
        let client_error = |message: String| GithubError::Client {
            api_url: api_url.to_string(),
            message,
        };
        let octocrab = Octocrab::builder()
            .base_uri(api_url)
            .map_err(|e| client_error(e.to_string()))?
            .personal_token(token.to_string())
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(30)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| client_error(e.to_string()))?;
        Ok(GithubClient {
            octocrab,
            owner: owner.to_string(),
            repo: repo.to_string(),
            policy: RetryPolicy::default(),
        })
    }

    /// Replaces the retry policy (tests use short waits).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> GithubClient {
        self.policy = policy;
        self
    }

    async fn call<T, F, Fut>(&self, operation: Operation, mut f: F) -> Result<T, GithubError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = octocrab::Result<T>>,
    {
        let mut attempt = 0;
        loop {
            match f().await {
                Ok(v) => return Ok(v),
                Err(err) => match decide(&self.policy, operation, attempt, err) {
                    Decision::Retry(wait) => {
                        let (action, ms) = (operation.action(), wait.as_millis());
                        eprintln!("kgate: GitHub call to {action} failed; retrying in {ms} ms");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    Decision::Fail(e) => return Err(e),
                },
            }
        }
    }

    /// The login of the token's account: `GET /user`, which works for personal tokens; an
    /// installation token (the workflow's `GITHUB_TOKEN`) cannot read it, and its comments are
    /// authored by `github-actions[bot]`.
    pub async fn identity(&self) -> Result<String, GithubError> {
        let get_user = || self.octocrab.get::<Value, _, ()>("/user", None);
        let user = self.call(Operation::Identify, get_user).await;
        match user {
            Ok(v) => Ok(v
                .get("login")
                .and_then(Value::as_str)
                .unwrap_or(ACTIONS_BOT)
                .to_string()),
            Err(GithubError::Forbidden { .. } | GithubError::NotFound { .. }) => {
                Ok(ACTIONS_BOT.to_string())
            }
            Err(e) => Err(e),
        }
    }

    /// The comment on pull request `pr` that opens with `marker` (its first line, where kgate
    /// writes it: [`super::body::carries_marker`]) and was written by `author`, searching every
    /// page.
    pub async fn find_comment(
        &self,
        pr: u64,
        marker: &str,
        author: &str,
    ) -> Result<Option<Comment>, GithubError> {
        let issues = self.octocrab.issues(&self.owner, &self.repo);
        let mut page_number = 1u32;
        loop {
            let list = || {
                issues
                    .list_comments(pr)
                    .per_page(100)
                    .page(page_number)
                    .send()
            };
            let page = self.call(Operation::ListComments, list).await?;
            if let Some(found) = page.items.into_iter().find(|c| {
                c.user.login.eq_ignore_ascii_case(author)
                    && c.body
                        .as_deref()
                        .is_some_and(|b| super::body::carries_marker(b, marker))
            }) {
                return Ok(Some(found));
            }
            if page.next.is_none() {
                return Ok(None);
            }
            page_number += 1;
        }
    }

    /// Updates kgate's comment for this marker, or creates one when `create` allows.
    pub async fn upsert_comment(
        &self,
        pr: u64,
        marker: &str,
        author: &str,
        body: &str,
        create: bool,
    ) -> Result<CommentOutcome, GithubError> {
        let issues = self.octocrab.issues(&self.owner, &self.repo);
        match self.find_comment(pr, marker, author).await? {
            Some(existing) => {
                let id: CommentId = existing.id;
                let update = || issues.update_comment(id, body);
                let updated = self.call(Operation::UpdateComment, update).await?;
                Ok(CommentOutcome::Updated {
                    id: updated.id.into_inner(),
                    url: updated.html_url.to_string(),
                })
            }
            None if create => {
                let create = || issues.create_comment(pr, body);
                let created = self.call(Operation::CreateComment, create).await?;
                Ok(CommentOutcome::Created {
                    id: created.id.into_inner(),
                    url: created.html_url.to_string(),
                })
            }
            None => Ok(CommentOutcome::Skipped),
        }
    }

    /// The open pull request whose head is `head_owner:head_branch` at commit `head_sha`: how
    /// a `workflow_run` of a fork PR (whose event lists no pull requests) finds its PR.
    pub async fn find_pull_request(
        &self,
        head_owner: &str,
        head_branch: &str,
        head_sha: &str,
    ) -> Result<Option<u64>, GithubError> {
        let route = format!("/repos/{}/{}/pulls", self.owner, self.repo);
        let params = json!({"head": format!("{head_owner}:{head_branch}"), "state": "open", "per_page": 100});
        let get_pulls = || self.octocrab.get::<Value, _, _>(&route, Some(&params));
        let pulls = self.call(Operation::FindPullRequest, get_pulls).await?;
        Ok(pulls.as_array().and_then(|list| {
            list.iter()
                .find(|p| p.pointer("/head/sha").and_then(Value::as_str) == Some(head_sha))
                .and_then(|p| p.get("number")?.as_u64())
        }))
    }

    /// Creates a check run `name` on `head_sha`, in progress; returns its id.
    pub async fn start_check_run(&self, name: &str, head_sha: &str) -> Result<u64, GithubError> {
        let route = format!("/repos/{}/{}/check-runs", self.owner, self.repo);
        let body = json!({"name": name, "head_sha": head_sha, "status": "in_progress"});
        let create = || self.octocrab.post::<_, Value>(&route, Some(&body));
        let run = self.call(Operation::CreateCheckRun, create).await?;
        run.get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| GithubError::Other {
                operation: Operation::CreateCheckRun,
                message: "the response holds no check-run id".into(),
            })
    }

    /// Completes a check run; returns its page's URL when GitHub gives one.
    pub async fn finish_check_run(
        &self,
        id: u64,
        conclusion: Conclusion,
        title: &str,
        summary: &str,
    ) -> Result<Option<String>, GithubError> {
        let route = format!("/repos/{}/{}/check-runs/{id}", self.owner, self.repo);
        let body = json!({
            "status": "completed",
            "conclusion": conclusion.as_str(),
            "output": {"title": title, "summary": summary},
        });
        let complete = || self.octocrab.patch::<Value, _, _>(&route, Some(&body));
        let run = self.call(Operation::UpdateCheckRun, complete).await?;
        let url = run.get("html_url").and_then(Value::as_str);
        Ok(url.map(str::to_string))
    }
}
