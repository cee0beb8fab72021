//! `kgate history` as functions: the series of a runner class's recorded jobs with the change
//! points found in each (in the order the jobs ran, or for the dashboard in the order of their
//! commits on HEAD's history), and results recorded into it.

use std::path::{Path, PathBuf};

use super::{GateError, Say, record};
use crate::baseline::gitref;
use crate::baseline::history::{self, HistoryRecord, JobSummary};
use crate::machine::envkey;
use crate::machine::fingerprint::Fingerprint;
use crate::model::results::RunResults;
use crate::model::text::{escape_terminal, web_address};
use crate::render::history::MetricHistory;
use crate::stats::changepoint::{self, Settings};

/// Which series `kgate history` shows.
#[derive(Debug, Clone, Default)]
pub struct HistoryOptions {
    /// The runner class's key (default: this machine's).
    pub key: Option<String>,
    pub bench: Option<String>,
    pub metric: Option<String>,
    /// The jobs in the order of their commits on HEAD's history, with the repository's web
    /// address for links (the dashboard), rather than in the order they ran.
    pub commit_order: bool,
    /// The repository's web address, over the CI's variables and git's `origin`.
    pub repo_url: Option<String>,
}

/// The series of a history, each with its change points.
pub struct History {
    pub key: String,
    /// Jobs recorded under the key.
    pub runs: usize,
    pub settings: Settings,
    pub series: Vec<MetricHistory>,
    /// With `commit_order`: what the order left out or could not do, and the web address.
    pub notes: Vec<String>,
    pub repo_url: Option<String>,
}

/// Appends results files to the history of their environment.
pub fn record_history(root: &Path, files: &[PathBuf], say: &mut Say<'_>) -> Result<(), GateError> {
    for f in files {
        record(root, &RunResults::load(f)?, None, say)?;
    }
    Ok(())
}

/// The history of `options.key` (default: this machine's runner class) under `root`.
pub fn history(
    root: &Path,
    options: &HistoryOptions,
    say: &mut Say<'_>,
) -> Result<History, GateError> {
    let key = match &options.key {
        Some(k) => k.clone(),
        None => envkey::class_key(&Fingerprint::capture(root)),
    };
    let records = history::load(root, &key)?;
    let known = history::keys(root);
    if records.is_empty() {
        let dir = history::key_dir(root, &key);
        let others = match known.is_empty() {
            true => String::new(),
            false => format!(" (histories exist for: {})", known.join(", ")),
        };
        return Err(GateError::Invalid(format!(
            "no history for environment `{key}` under {}; record runs with `kgate check --record` or `kgate history record RESULTS`{others}",
            dir.display()
        )));
    }
    if let Some(line) = which_history(root, &key, options.key.is_some(), &known)? {
        say(&line);
    }
    let settings = Settings::default();
    let runs = records.len();
    let selected = selected_series(&records, options);
    if selected.is_empty() {
        return Err(GateError::Invalid(format!(
            "no recorded metric matches --bench/--metric in the history of `{key}`"
        )));
    }
    let (series, notes, repo_url) = if options.commit_order {
        // The page's series are found again over the jobs in commit order.
        drop(selected);
        let (ordered, notes) = in_commit_order(root, records);
        let series = with_change_points(selected_series(&ordered, options), &settings);
        if series.is_empty() {
            return Err(GateError::Invalid(format!(
                "no recorded metric matches --bench/--metric among the jobs on HEAD's history in `{key}`"
            )));
        }
        (series, notes, repo_url(root, options.repo_url.as_deref())?)
    } else {
        (with_change_points(selected, &settings), Vec::new(), None)
    };
    Ok(History {
        key,
        runs,
        settings,
        series,
        notes,
        repo_url,
    })
}

/// The line `kgate history` says about the key it shows, where there is a choice: whose key it
/// is, the folders written by earlier versions that it gathers, and the other keys with a
/// history. `None` when the key's own folder is the only one.
fn which_history(
    root: &Path,
    key: &str,
    given: bool,
    known: &[String],
) -> Result<Option<String>, GateError> {
    let from = if given {
        "--key"
    } else {
        "this machine's runner class"
    };
    let mut line = format!("history of `{key}` ({from})");
    // Folder names come from the repository: shown inert on a terminal.
    let legacy: Vec<String> = history::folders_of(root, key)?
        .into_iter()
        .filter(|f| f.name != key)
        .map(|f| escape_terminal(&f.name).into_owned())
        .collect();
    if !legacy.is_empty() {
        let legacy = legacy.join(", ");
        line += &format!(", with the runs earlier versions filed under {legacy}");
    }
    let others: Vec<String> = known
        .iter()
        .filter(|k| *k != key)
        .map(|k| escape_terminal(k).into_owned())
        .collect();
    if !others.is_empty() {
        line.push_str(&format!(
            "; other keys with a history: {} (show one with --key KEY)",
            others.join(", ")
        ));
    }
    Ok((!legacy.is_empty() || !others.is_empty()).then_some(line))
}

/// The series over `records` of the metrics `--bench` and `--metric` select.
fn selected_series(
    records: &[HistoryRecord],
    options: &HistoryOptions,
) -> Vec<((String, String), Vec<JobSummary>)> {
    history::all_series(records)
        .into_iter()
        .filter(|((bench, metric), _)| {
            options.bench.as_ref().is_none_or(|b| b == bench)
                && options.metric.as_ref().is_none_or(|m| m == metric)
        })
        .collect()
}

/// Each series with the change points in its medians.
fn with_change_points(
    selected: Vec<((String, String), Vec<JobSummary>)>,
    settings: &Settings,
) -> Vec<MetricHistory> {
    selected
        .into_iter()
        .map(|((benchmark, metric), series)| {
            let medians: Vec<f64> = series.iter().map(|s| s.summary.median).collect();
            let change_points = changepoint::e_divisive(&medians, settings);
            MetricHistory {
                benchmark,
                metric,
                jobs: series,
                change_points,
            }
        })
        .collect()
}

/// The records in the order of their commits on HEAD's history (oldest first; jobs of one
/// commit in the order they ran), for the dashboard. Records stored in the order they ran may
/// disagree with it: jobs finish out of order, and run times have one-second resolution. Jobs
/// of commits not on HEAD's history (another branch) are left out; without git's history the
/// order they ran is kept. Either is said in the notes.
fn in_commit_order(root: &Path, records: Vec<HistoryRecord>) -> (Vec<HistoryRecord>, Vec<String>) {
    let args = ["rev-list", "--topo-order", "--reverse", "HEAD"];
    let Some(listed) = gitref::git_text(root, &args).ok() else {
        let note = "git cannot list HEAD's history here (not a repository, or no commit yet): jobs are in the order they ran";
        return (records, vec![note.into()]);
    };
    let position: rustc_hash::FxHashMap<&str, usize> =
        listed.lines().enumerate().map(|(i, c)| (c, i)).collect();
    let at = |r: &HistoryRecord| r.commit.as_deref().and_then(|c| position.get(c).copied());
    let total = records.len();
    let (mut on, off): (Vec<_>, Vec<_>) = records.into_iter().partition(|r| at(r).is_some());
    if on.is_empty() {
        let note = format!(
            "none of the {total} recorded jobs measured a commit on HEAD's history (a shallow clone? check out with fetch-depth: 0): jobs are in the order they ran"
        );
        return (off, vec![note]);
    }
    let off = off.len();
    // A stable sort: the jobs of one commit keep the order they ran in.
    on.sort_by_key(|r| at(r));
    let notes = if off > 0 {
        vec![format!(
            "{off} of the {total} recorded jobs measured commits that are not on HEAD's history (another branch, or older than a shallow clone) and are left out"
        )]
    } else {
        Vec::new()
    };
    (on, notes)
}

/// The repository's web address for commit links: the flag, else the CI's own variables, else
/// git's `origin` remote when it names a GitHub or GitLab host. A flag or a CI variable that is
/// not an http(s) address ([`web_address`]: `javascript:…` goes into no `href`) is an error
/// naming where it came from.
fn repo_url(root: &Path, flag: Option<&str>) -> Result<Option<String>, GateError> {
    let checked = |url: &str, from: &str| match web_address(url) {
        Some(url) => Ok(Some(url.to_string())),
        None => Err(GateError::Invalid(format!(
            "{from} `{}` is not a web address; give the repository's as --repo-url https://HOST/OWNER/REPO",
            escape_terminal(url)
        ))),
    };
    if let Some(url) = flag {
        return checked(url, "--repo-url");
    }
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let (Some(server), Some(repo)) = (var("GITHUB_SERVER_URL"), var("GITHUB_REPOSITORY")) {
        let url = format!("{}/{repo}", server.trim_end_matches('/'));
        return checked(&url, "GITHUB_SERVER_URL/GITHUB_REPOSITORY");
    }
    if let Some(url) = var("CI_PROJECT_URL") {
        return checked(&url, "CI_PROJECT_URL");
    }
    let remote = gitref::git_text(root, &["remote", "get-url", "origin"]).ok();
    // A remote that gives no plain address gives no links.
    Ok(remote
        .as_deref()
        .and_then(remote_address)
        .filter(|url| web_address(url).is_some()))
}

/// `https://github.com/o/r` from `git@github.com:o/r.git`, `ssh://git@host:22/o/r.git` or an
/// http(s) remote, for GitHub and GitLab hosts; credentials in the URL are dropped.
fn remote_address(remote: &str) -> Option<String> {
    let strip_user = |authority: &'_ str| -> String {
        authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host)
            .to_string()
    };
    let (host, path) = if let Some(rest) = remote
        .strip_prefix("https://")
        .or_else(|| remote.strip_prefix("http://"))
    {
        let (authority, path) = rest.split_once('/')?;
        (strip_user(authority), path)
    } else if let Some(rest) = remote.strip_prefix("ssh://") {
        let (authority, path) = rest.split_once('/')?;
        let host = strip_user(authority);
        // An ssh port is not the web server's.
        (host.split(':').next()?.to_string(), path)
    } else {
        let (authority, path) = remote.split_once(':')?;
        (strip_user(authority), path)
    };
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    if !(host.contains("github") || host.contains("gitlab")) || !path.contains('/') {
        return None;
    }
    Some(format!("https://{host}/{path}"))
}
