//! The GitHub Actions side of a run: the context a job sees and the files it writes back.
//!
//! The runner describes the job through `GITHUB_*` variables and an event payload file; it
//! takes results back through environment files (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`) and
//! workflow commands on stdout (`::error …::`). All three have sharp edges that this module
//! handles in one place: the payload differs per event (the pull request's head commit is not
//! `GITHUB_SHA`, which is a synthetic merge commit; a `workflow_run` event carries its own
//! fields), outputs need a heredoc with an unguessable delimiter for multi-line values, the job
//! summary is capped at 1 MiB, and workflow-command text must be escaped so a benchmark name
//! cannot inject another command.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// GitHub's limit on a step's job summary (`$GITHUB_STEP_SUMMARY`), in bytes.
pub const STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Errors reading the context or writing the environment files.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error(
        "cannot read the event payload {path} (named by GITHUB_EVENT_PATH): {source}; when kgate runs in a container, mount the file and pass the GITHUB_* variables through"
    )]
    ReadEvent {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the event payload {path} is not valid JSON: {source}")]
    ParseEvent {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "GITHUB_REPOSITORY is `{0}`, expected `owner/name`; set it (Actions sets it for every job)"
    )]
    Repository(String),
    #[error("cannot write {what} to {path}: {source}")]
    Write {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "output name `{0}` is not usable: names may not be empty or hold `=`, `<` or line breaks"
    )]
    OutputName(String),
}

/// What the event payload says about the commit under test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventInfo {
    /// The pull request the run belongs to, when there is one.
    pub pr_number: Option<u64>,
    /// The commit under test: the pull request's head, not the merge commit.
    pub head_sha: Option<String>,
    /// The pull request's base branch (`main`), when there is one.
    pub base_ref: Option<String>,
    /// The base branch's commit the event names.
    pub base_sha: Option<String>,
    /// `owner/name` of the repository the head commit comes from (a fork for fork PRs).
    pub head_repo: Option<String>,
    /// `owner/name` of the repository the pull request targets.
    pub base_repo: Option<String>,
    /// The head branch name (used to find a fork PR of a `workflow_run` event).
    pub head_branch: Option<String>,
    /// The login owning the head repository.
    pub head_owner: Option<String>,
}

fn string_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Extracts the fields kgate needs from an event payload of the named event.
///
/// The payload is read as loose JSON rather than octocrab's models: webhook payloads differ
/// from API objects, and kgate needs a handful of fields from four event kinds.
pub fn parse_event(event_name: &str, payload: &Value) -> EventInfo {
    match event_name {
        "pull_request" | "pull_request_target" => EventInfo {
            pr_number: payload
                .get("number")
                .and_then(Value::as_u64)
                .or_else(|| payload.pointer("/pull_request/number")?.as_u64()),
            head_sha: string_at(payload, "/pull_request/head/sha"),
            base_ref: string_at(payload, "/pull_request/base/ref"),
            base_sha: string_at(payload, "/pull_request/base/sha"),
            head_repo: string_at(payload, "/pull_request/head/repo/full_name"),
            base_repo: string_at(payload, "/pull_request/base/repo/full_name"),
            head_branch: string_at(payload, "/pull_request/head/ref"),
            head_owner: string_at(payload, "/pull_request/head/repo/owner/login"),
        },
        "workflow_run" => {
            // `pull_requests` is filled only for pull requests from the same repository; for
            // a fork it is empty and the PR is found from the head branch and commit.
            let pr = payload.pointer("/workflow_run/pull_requests/0");
            EventInfo {
                pr_number: pr.and_then(|p| p.get("number")?.as_u64()),
                head_sha: string_at(payload, "/workflow_run/head_sha"),
                base_ref: pr.and_then(|p| string_at(p, "/base/ref")),
                base_sha: pr.and_then(|p| string_at(p, "/base/sha")),
                head_repo: string_at(payload, "/workflow_run/head_repository/full_name"),
                base_repo: string_at(payload, "/workflow_run/repository/full_name")
                    .or_else(|| string_at(payload, "/repository/full_name")),
                head_branch: string_at(payload, "/workflow_run/head_branch"),
                head_owner: string_at(payload, "/workflow_run/head_repository/owner/login"),
            }
        }
        "push" => EventInfo {
            head_sha: string_at(payload, "/after"),
            base_sha: string_at(payload, "/before").filter(|s| s.bytes().any(|b| b != b'0')),
            head_repo: string_at(payload, "/repository/full_name"),
            base_repo: string_at(payload, "/repository/full_name"),
            ..EventInfo::default()
        },
        _ => EventInfo {
            head_repo: string_at(payload, "/repository/full_name"),
            base_repo: string_at(payload, "/repository/full_name"),
            ..EventInfo::default()
        },
    }
}

/// The job as the Actions runner describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubContext {
    pub event_name: String,
    pub owner: String,
    pub repo: String,
    /// REST API root (`GITHUB_API_URL`; differs on GitHub Enterprise Server).
    pub api_url: String,
    pub server_url: String,
    pub run_id: Option<String>,
    /// The job's name in the workflow (`GITHUB_JOB`), the default sticky-comment id.
    pub job: Option<String>,
    /// `GITHUB_SHA`: for pull requests, the synthetic merge commit.
    pub sha: Option<String>,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub event: EventInfo,
}

impl GithubContext {
    /// Reads the context from the process environment.
    pub fn from_env() -> Result<Option<GithubContext>, EnvError> {
        let vars: BTreeMap<String, String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("GITHUB_"))
            .collect();
        GithubContext::from_vars(&vars)
    }

    /// Reads the context from the given variables; `None` outside GitHub Actions (no
    /// `GITHUB_REPOSITORY`).
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<Option<GithubContext>, EnvError> {
        let get = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
        let Some(repository) = get("GITHUB_REPOSITORY") else {
            return Ok(None);
        };
        let (owner, repo) = repository
            .split_once('/')
            .filter(|(o, r)| !o.is_empty() && !r.is_empty() && !r.contains('/'))
            .ok_or_else(|| EnvError::Repository(repository.clone()))?;
        let event_name = get("GITHUB_EVENT_NAME").unwrap_or_default();
        let event = match get("GITHUB_EVENT_PATH") {
            Some(path) => {
                let path = PathBuf::from(path);
                let text =
                    std::fs::read_to_string(&path).map_err(|source| EnvError::ReadEvent {
                        path: path.clone(),
                        source,
                    })?;
                let payload: Value = serde_json::from_str(&text)
                    .map_err(|source| EnvError::ParseEvent { path, source })?;
                parse_event(&event_name, &payload)
            }
            None => EventInfo::default(),
        };
        Ok(Some(GithubContext {
            event_name,
            owner: owner.to_string(),
            repo: repo.to_string(),
            api_url: get("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
            server_url: get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into()),
            run_id: get("GITHUB_RUN_ID"),
            job: get("GITHUB_JOB"),
            sha: get("GITHUB_SHA"),
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            event,
        }))
    }

    /// The commit to report on: the event's head commit, else `GITHUB_SHA`.
    pub fn head_sha(&self) -> Option<&str> {
        self.event.head_sha.as_deref().or(self.sha.as_deref())
    }

    /// The page of this workflow run, where the job summary is shown.
    /// None where the address would not be a plain web address (`GITHUB_SERVER_URL` of
    /// `javascript:…`): the comment then links to nothing.
    pub fn run_url(&self) -> Option<String> {
        let (server, run_id) = (self.server_url.trim_end_matches('/'), self.run_id.as_ref()?);
        let (owner, repo) = (&self.owner, &self.repo);
        let url = format!("{server}/{owner}/{repo}/actions/runs/{run_id}");
        crate::model::text::web_address(&url).map(str::to_string)
    }
}

fn append(path: &Path, what: &'static str, text: &str) -> Result<(), EnvError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|source| EnvError::Write {
            what,
            path: path.to_path_buf(),
            source,
        })
}

/// The `$GITHUB_OUTPUT` lines for one output: `name=value`, or for a value with line breaks
/// the heredoc form `name<<DELIM`, value, `DELIM` with a random delimiter that the value
/// does not contain (so a value cannot end the heredoc early and set other outputs).
pub fn output_entry(name: &str, value: &str) -> Result<String, EnvError> {
    if name.is_empty() || name.contains(['=', '<', '\n', '\r']) {
        return Err(EnvError::OutputName(name.to_string()));
    }
    if !value.contains(['\n', '\r']) {
        return Ok(format!("{name}={value}\n"));
    }
    let delimiter = loop {
        let (high, low) = (fastrand::u64(..), fastrand::u64(..));
        let candidate = format!("ghadelimiter_{high:016x}{low:016x}");
        if !value.contains(&candidate) {
            break candidate;
        }
    };
    Ok(format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"))
}

/// Appends outputs to the `$GITHUB_OUTPUT` file.
pub fn write_outputs(path: &Path, outputs: &[(&str, String)]) -> Result<(), EnvError> {
    let mut text = String::new();
    for (name, value) in outputs {
        text.push_str(&output_entry(name, value)?);
    }
    append(path, "step outputs", &text)
}

/// Appends Markdown to the job summary; the caller keeps it under [`summary_room`].
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<(), EnvError> {
    append(path, "the job summary", markdown)
}

/// How many bytes the job summary file at `path` still takes before GitHub's 1 MiB limit.
pub fn summary_room(path: &Path) -> usize {
    let used = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    STEP_SUMMARY_LIMIT.saturating_sub(usize::try_from(used).unwrap_or(usize::MAX))
}

/// Escapes a workflow command's message: `%`, `\r` and `\n` as the runner decodes them, and
/// every other character that acts on a terminal or hides in a line (ESC, an OSC 8 link, the
/// line separators, a byte-order mark) as its visible escape, as on a terminal: the command is
/// printed to the job's log before the runner reads it.
pub fn escape_data(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if crate::model::text::is_invisible_control(c) => {
                crate::model::text::push_visible(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out
}

/// Escapes a workflow command's property value: as data, plus `:` and `,`.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// Annotation levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Notice,
}

/// One workflow-command line: `::error title=…::message`.
pub fn annotation(level: Level, title: &str, message: &str) -> String {
    let command = match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Notice => "notice",
    };
    let (title, message) = (escape_property(title), escape_data(message));
    format!("::{command} title={title}::{message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_text_cannot_inject_commands() {
        let (title, text) = ("kgate: a,b:c", "100% slower\n::error::injected\r");
        let escaped = "::error title=kgate%3A a%2Cb%3Ac::100%25 slower%0A::error::injected%0D";
        assert_eq!(annotation(Level::Error, title, text), escaped);
        let (title, text) = ("k\u{1b}[2J", "a\u{1b}]8;;x\u{7}\u{2028}\u{feff}");
        let escaped = "::warning title=k\\u{1b}[2J::a\\u{1b}]8;;x\\u{7}\\u{2028}\\u{feff}";
        assert_eq!(annotation(Level::Warning, title, text), escaped);
    }

    #[test]
    fn single_line_outputs_use_the_plain_form() {
        assert_eq!(output_entry("verdict", "pass").unwrap(), "verdict=pass\n");
        let refused = output_entry("a=b", "x");
        assert!(matches!(refused, Err(EnvError::OutputName(_))));
    }

    #[test]
    fn multi_line_outputs_use_a_random_heredoc_delimiter() {
        let a = output_entry("names", "one\ntwo").unwrap();
        let b = output_entry("names", "one\ntwo").unwrap();
        let lines: Vec<&str> = a.lines().collect();
        assert_eq!(lines.len(), 4);
        let delimiter = lines[0].strip_prefix("names<<").unwrap();
        assert!(delimiter.len() > 20, "{delimiter}");
        assert_eq!(&lines[1..3], ["one", "two"]);
        assert_eq!(lines[3], delimiter);
        assert_ne!(a, b, "the delimiter is random");
    }
}
