//! GitLab merge requests: the CI context `kgate ci` reads from GitLab's predefined variables
//! ([`GitlabContext`]) and the REST calls that keep one sticky note per job on the merge request
//! ([`client`]).
//!
//! Beside `github/` rather than behind a shared trait: the two forges share the note's text
//! (`github::body`, composed by the command) and the comment policy, but little else. GitLab
//! has no check runs or job summaries, its tokens and their scopes differ, and pagination is
//! by headers. So what is common is passed in as strings, and each module speaks its own API.

pub mod client;

/// Where kgate runs in GitLab CI, from the job's predefined variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitlabContext {
    /// `CI_API_V4_URL`, e.g. `https://gitlab.com/api/v4`.
    pub api_url: String,
    /// `CI_PROJECT_ID`.
    pub project_id: String,
    /// `CI_MERGE_REQUEST_IID`: set only in merge-request pipelines.
    pub merge_request: Option<u64>,
    /// `CI_JOB_NAME`, the default job id of the note.
    pub job_name: Option<String>,
    /// `CI_JOB_URL`, linked from the note.
    pub job_url: Option<String>,
}

/// The token the notes are posted with.
#[derive(Clone, PartialEq, Eq)]
pub enum GitlabToken {
    /// A project, group or personal access token (`KGATE_GITLAB_TOKEN`, else `GITLAB_TOKEN`),
    /// sent as `PRIVATE-TOKEN`.
    Access(String),
    /// The job's own `CI_JOB_TOKEN`, sent as `JOB-TOKEN`. GitLab does not let it write notes;
    /// kgate tries it and says what to set instead.
    Job(String),
}

impl std::fmt::Debug for GitlabToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself, whatever prints it.
        f.write_str(match self {
            GitlabToken::Access(_) => "GitlabToken::Access(***)",
            GitlabToken::Job(_) => "GitlabToken::Job(***)",
        })
    }
}

/// Why the GitLab context cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(
        "GitLab CI is detected (GITLAB_CI=true) but {0} is not set; kgate needs CI_API_V4_URL and CI_PROJECT_ID (GitLab 9.0 or later sets both)"
    )]
    Missing(&'static str),
    #[error(
        "CI_MERGE_REQUEST_IID `{0}` is not a merge-request number; GitLab sets it in merge-request pipelines only"
    )]
    BadIid(String),
}

impl GitlabContext {
    /// The context from the environment: `None` outside GitLab CI (`GITLAB_CI` not `true`).
    pub fn from_env() -> Result<Option<GitlabContext>, ContextError> {
        Self::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// [`from_env`](Self::from_env) over any variable lookup.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<GitlabContext>, ContextError> {
        if var("GITLAB_CI").as_deref() != Some("true") {
            return Ok(None);
        }
        let api_url = var("CI_API_V4_URL").ok_or(ContextError::Missing("CI_API_V4_URL"))?;
        let project_id = var("CI_PROJECT_ID").ok_or(ContextError::Missing("CI_PROJECT_ID"))?;
        let merge_request = match var("CI_MERGE_REQUEST_IID") {
            None => None,
            Some(v) => Some(v.trim().parse().map_err(|_| ContextError::BadIid(v))?),
        };
        Ok(Some(GitlabContext {
            api_url: api_url.trim_end_matches('/').to_string(),
            project_id,
            merge_request,
            job_name: var("CI_JOB_NAME"),
            // Linked from the note: only a plain web address.
            job_url: var("CI_JOB_URL").filter(|u| crate::model::text::web_address(u).is_some()),
        }))
    }

    /// The token to post with: an access token when one is set, else the job token.
    pub fn token(var: impl Fn(&str) -> Option<String>) -> Option<GitlabToken> {
        var("KGATE_GITLAB_TOKEN")
            .or_else(|| var("GITLAB_TOKEN"))
            .map(GitlabToken::Access)
            .or_else(|| var("CI_JOB_TOKEN").map(GitlabToken::Job))
    }

    /// The job name as a note id: characters outside letters, digits and `._:/-` become `-`,
    /// runs of `-` become one (a note's marker is an HTML comment), at most 100 characters.
    pub fn job_id(&self) -> Option<String> {
        let mut id = String::new();
        for c in self.job_name.as_deref()?.chars() {
            let c = if c.is_ascii_alphanumeric() || "._:/".contains(c) {
                c
            } else {
                '-'
            };
            if !(c == '-' && (id.is_empty() || id.ends_with('-'))) && id.len() < 100 {
                id.push(c);
            }
        }
        let id = id.trim_end_matches('-').to_string();
        (!id.is_empty()).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn reads_a_merge_request_pipeline_and_nothing_outside_gitlab() {
        assert_eq!(GitlabContext::from_vars(vars(&[])).unwrap(), None);
        let ctx = GitlabContext::from_vars(vars(&[
            ("GITLAB_CI", "true"),
            ("CI_API_V4_URL", "https://gitlab.example.com/api/v4/"),
            ("CI_PROJECT_ID", "42"),
            ("CI_MERGE_REQUEST_IID", "7"),
            ("CI_JOB_NAME", "bench: gpu [a100]"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(ctx.api_url, "https://gitlab.example.com/api/v4");
        assert_eq!(ctx.merge_request, Some(7));
        assert_eq!(ctx.job_id().as_deref(), Some("bench:-gpu-a100"));
        let err = GitlabContext::from_vars(vars(&[("GITLAB_CI", "true"), ("CI_PROJECT_ID", "1")]))
            .unwrap_err();
        assert_contains!(err.to_string(), "CI_API_V4_URL is not set");
    }

    #[test]
    fn an_access_token_wins_over_the_job_token_and_neither_prints() {
        let t = GitlabContext::token(vars(&[
            ("CI_JOB_TOKEN", "jt"),
            ("KGATE_GITLAB_TOKEN", "pat"),
        ]));
        assert_eq!(t, Some(GitlabToken::Access("pat".into())));
        assert_eq!(format!("{t:?}"), "Some(GitlabToken::Access(***))");
        let t = GitlabContext::token(vars(&[("CI_JOB_TOKEN", "jt")]));
        assert_eq!(t, Some(GitlabToken::Job("jt".into())));
    }
}
