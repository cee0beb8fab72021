//! The GitLab REST calls for the sticky merge-request note, over octocrab's HTTP stack (it is
//! already built for the GitHub client; here it only carries requests, with the token in
//! GitLab's own header).
//!
//! The note is found by its hidden marker *and* its author (the token's user) across every page
//! of notes (`per_page=100`, following `X-Next-Page`), then updated; otherwise created. A 401 or
//! 403 says which token was used and what it lacks: the `api` scope, or, for `CI_JOB_TOKEN`,
//! that GitLab does not let job tokens write notes at all. No message holds the token.

use std::time::Duration;

use http::header::HeaderName;
use octocrab::Octocrab;
use octocrab::service::middleware::retry::RetryConfig;
use serde::Deserialize;
use serde_json::json;

use super::GitlabToken;

/// Pages of notes read at most (100 notes each) before giving up.
const MAX_PAGES: u32 = 1000;

/// What a call was doing, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Identify,
    ListNotes,
    CreateNote,
    UpdateNote,
}

impl Operation {
    fn action(self) -> &'static str {
        match self {
            Operation::Identify => "identify the token's user (GET /user)",
            Operation::ListNotes => "list the merge request's notes",
            Operation::CreateNote => "create the merge-request note",
            Operation::UpdateNote => "update the merge-request note",
        }
    }
}

/// Failures talking to GitLab, each saying how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum GitlabError {
    #[error("cannot set up the GitLab client for {api_url}: {message}")]
    Client { api_url: String, message: String },
    #[error("GitLab refused the token (401 Unauthorized) to {}: {hint}", .operation.action())]
    Unauthorized { operation: Operation, hint: String },
    #[error("GitLab does not let the token {} (403 Forbidden): {hint}", .operation.action())]
    Forbidden { operation: Operation, hint: String },
    #[error("GitLab answered HTTP {status} to {} ({url}): {body}", .operation.action())]
    Status {
        operation: Operation,
        status: u16,
        url: String,
        body: String,
    },
    #[error("cannot reach GitLab at {url} to {}: {message}", .operation.action())]
    Transport {
        operation: Operation,
        url: String,
        message: String,
    },
    #[error("GitLab's answer to {} is not what its API documents: {message}", .operation.action())]
    Unexpected {
        operation: Operation,
        message: String,
    },
}

/// What became of the note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteOutcome {
    Created {
        id: u64,
        url: Option<String>,
    },
    Updated {
        id: u64,
        url: Option<String>,
    },
    /// No note of this job yet, and the policy did not call for a new one.
    Skipped,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
struct Note {
    id: u64,
    #[serde(default)]
    body: String,
    author: User,
}

/// The client for one project's merge requests.
pub struct GitlabClient {
    octocrab: Octocrab,
    api_url: String,
    project_id: String,
    job_token: bool,
}

impl GitlabClient {
    /// A client for `project_id` at `api_url` (`CI_API_V4_URL`). Call it inside a tokio runtime.
    pub fn new(
        api_url: &str,
        project_id: &str,
        token: &GitlabToken,
    ) -> Result<GitlabClient, GitlabError> {
        let client_error = |message: String| GitlabError::Client {
            api_url: api_url.to_string(),
            message,
        };
        let (header, value, job_token) = match token {
            GitlabToken::Access(t) => ("private-token", t, false),
            GitlabToken::Job(t) => ("job-token", t, true),
        };
        let octocrab = Octocrab::builder()
            .base_uri(api_url)
            .map_err(|e| client_error(e.to_string()))?
            .add_header(HeaderName::from_static(header), value.clone())
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(30)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| client_error(e.to_string()))?;
        Ok(GitlabClient {
            octocrab,
            api_url: api_url.trim_end_matches('/').to_string(),
            project_id: project_id.to_string(),
            job_token,
        })
    }

    fn hint(&self, status: u16) -> String {
        if self.job_token {
            "the job's CI_JOB_TOKEN was used, and GitLab lets job tokens call only a few API endpoints, not merge-request notes. Create a project access token with the `api` scope and the Reporter role (Settings → Access tokens), store it as a masked CI/CD variable named KGATE_GITLAB_TOKEN, and kgate posts with it".into()
        } else if status == 401 {
            "the access token in KGATE_GITLAB_TOKEN (or GITLAB_TOKEN) is wrong, expired or revoked; create a new one with the `api` scope".into()
        } else {
            format!(
                "the access token in KGATE_GITLAB_TOKEN (or GITLAB_TOKEN) lacks the `api` scope (a `read_api` token cannot write notes) or the Reporter role in project {}; create one with the `api` scope",
                self.project_id
            )
        }
    }

    /// Sends one request; returns the body and the `X-Next-Page` header of a 2xx answer.
    async fn send(
        &self,
        operation: Operation,
        method: http::Method,
        url: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(String, Option<String>), GitlabError> {
        let transport = |e: octocrab::Error| GitlabError::Transport {
            operation,
            url: url.to_string(),
            message: e.to_string(),
        };
        let response = match method {
            http::Method::POST => self.octocrab._post(url, body).await,
            http::Method::PUT => self.octocrab._put(url, body).await,
            _ => self.octocrab._get(url).await,
        }
        .map_err(transport)?;
        let status = response.status().as_u16();
        let next = response
            .headers()
            .get("x-next-page")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let text = self.octocrab.body_to_string(response).await;
        let text = text.map_err(transport)?;
        match status {
            200..=299 => Ok((text, next)),
            401 => Err(GitlabError::Unauthorized {
                operation,
                hint: self.hint(401),
            }),
            403 => Err(GitlabError::Forbidden {
                operation,
                hint: self.hint(403),
            }),
            _ => Err(GitlabError::Status {
                operation,
                status,
                url: url.to_string(),
                body: text.chars().take(300).collect(),
            }),
        }
    }

    fn parse<T: serde::de::DeserializeOwned>(
        operation: Operation,
        text: &str,
    ) -> Result<T, GitlabError> {
        serde_json::from_str(text).map_err(|e| GitlabError::Unexpected {
            operation,
            message: e.to_string(),
        })
    }

    fn notes_url(&self, iid: u64) -> String {
        let (api, project) = (&self.api_url, &self.project_id);
        format!("{api}/projects/{project}/merge_requests/{iid}/notes")
    }

    /// The username of the token's user.
    pub async fn identity(&self) -> Result<String, GitlabError> {
        let url = format!("{}/user", self.api_url);
        let (identify, get) = (Operation::Identify, http::Method::GET);
        let (text, _) = self.send(identify, get, &url, None).await?;
        Ok(Self::parse::<User>(Operation::Identify, &text)?.username)
    }

    /// The id of `author`'s note that opens with `marker` (its whole first line) on merge
    /// request `iid`, reading every page.
    pub async fn find_note(
        &self,
        iid: u64,
        marker: &str,
        author: &str,
    ) -> Result<Option<u64>, GitlabError> {
        let mut page = 1;
        loop {
            let notes = self.notes_url(iid);
            let url = format!("{notes}?per_page=100&page={page}&sort=asc&order_by=created_at");
            let (list, get) = (Operation::ListNotes, http::Method::GET);
            let (text, next) = self.send(list, get, &url, None).await?;
            let notes: Vec<Note> = Self::parse(Operation::ListNotes, &text)?;
            if let Some(n) = notes
                .iter()
                // The marker is the note's first line, where kgate writes it; another job's note
                // that quotes it elsewhere (in a diff) is not this job's.
                .find(|n| n.author.username == author && n.body.lines().next() == Some(marker))
            {
                return Ok(Some(n.id));
            }
            match next.and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n > page && n <= MAX_PAGES => page = n,
                Some(n) if n > MAX_PAGES => {
                    return Err(GitlabError::Unexpected {
                        operation: Operation::ListNotes,
                        message: format!("more than {MAX_PAGES} pages of notes"),
                    });
                }
                _ => return Ok(None),
            }
        }
    }

    /// Updates this job's note (found by `marker` and the token's user), or creates it when
    /// `create` allows. `web_url` (the project's page) gives the note's link.
    pub async fn upsert_note(
        &self,
        iid: u64,
        marker: &str,
        body: &str,
        create: bool,
        web_url: Option<&str>,
    ) -> Result<NoteOutcome, GitlabError> {
        let author = self.identity().await?;
        let web_url = web_url.map(|w| w.trim_end_matches('/'));
        let link = |id: u64| web_url.map(|w| format!("{w}/-/merge_requests/{iid}#note_{id}"));
        let payload = json!({ "body": body });
        match self.find_note(iid, marker, &author).await? {
            Some(id) => {
                let url = format!("{}/{id}", self.notes_url(iid));
                let (update, put) = (Operation::UpdateNote, http::Method::PUT);
                self.send(update, put, &url, Some(&payload)).await?;
                Ok(NoteOutcome::Updated { id, url: link(id) })
            }
            None if create => {
                let (create, post) = (Operation::CreateNote, http::Method::POST);
                let url = self.notes_url(iid);
                let (text, _) = self.send(create, post, &url, Some(&payload)).await?;
                let note: Note = Self::parse(Operation::CreateNote, &text)?;
                Ok(NoteOutcome::Created {
                    id: note.id,
                    url: link(note.id),
                })
            }
            None => Ok(NoteOutcome::Skipped),
        }
    }
}
