//! Handlers for baselines by ref, fingerprint refusal, history, waivers, shards, merge and
//! diff-aware selection; `commands` calls into these so its own flow stays readable.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result, bail};
use std::io::Write as _;

use crate::baseline;
use crate::baseline::gitref;
use crate::baseline::history;
use crate::cli::{
    BaselineUpdateArgs, HistoryAction, HistoryArgs, HistoryFormat, MergeArgs, RunSelection,
};
use crate::compare::waivers;
use crate::config::LoadedConfig;
use crate::machine::envkey;
use crate::machine::fingerprint::Fingerprint;
use crate::model::exit::ExitStatus;
use crate::model::report::Report;
use crate::model::results::{RESULTS_SCHEMA_VERSION, RunResults};
use crate::model::text::escape_terminal;
use crate::model::units::{format_change, format_value};
use crate::plan::selection;
use crate::plan::shard::{self, Shard};
use crate::render::history_html::{DEFAULT_MAX_CHARTS, HistoryChart, write_history_page};
use crate::stats::changepoint::{self, Settings};
use crate::store::fsutil::{self, Overwrite};

/// A baseline file as committed at the merge-base of `reference` and HEAD.
pub fn baseline_at_ref(root: &Path, path: &Path, reference: &str) -> Result<RunResults> {
    let commit = gitref::merge_base(root, reference)?;
    let repo_path = gitref::repo_relative(root, path)?;
    let bytes = gitref::show(root, &commit, &repo_path, reference)?;
    let label = format!(
        "{repo_path} at {} (merge-base of {reference} and HEAD)",
        &commit[..12]
    );
    eprintln!("baseline: {label}");
    // Read from the blob itself: errors name the file in the repository, not a copy of it.
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("the baseline {label} is not UTF-8 text"))?;
    RunResults::parse(&text, Path::new(&repo_path))
        .with_context(|| format!("cannot read the baseline {label}"))
}

/// Refuses incomparable environments (exit 2) unless allowed; adds the override's warning.
pub fn check_environments(
    base: &RunResults,
    head: &RunResults,
    allowance: Option<envkey::Allowance>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if let Some(allowance) =
        envkey::check_comparable(&base.environment, &head.environment, allowance)?
    {
        // The comparison wrote one line on the environments; say who allowed it there.
        let line = warnings
            .iter()
            .position(|w| w.starts_with(crate::compare::ENVIRONMENTS_DIFFER));
        let note = format!("compared anyway because {}", allowance.as_str());
        match line {
            Some(i) => {
                let rest = warnings.remove(i);
                warnings.insert(0, format!("{rest} ({note})"));
            }
            None => warnings.insert(0, note),
        }
    }
    Ok(())
}

/// Who allowed a comparison across environments: the flag wins over the configuration.
pub fn allowance(flag: bool, config: bool) -> Option<envkey::Allowance> {
    if flag {
        Some(envkey::Allowance::Flag)
    } else if config {
        Some(envkey::Allowance::Config)
    } else {
        None
    }
}

/// Applies `.kgate/waivers.yaml` (when present) to a report.
pub fn apply_waivers(root: &Path, report: &mut Report) -> Result<()> {
    let list = waivers::load(root)?;
    waivers::apply(report, &list, &waivers::Clock::now(Some(root)));
    Ok(())
}

/// Appends results to the history; prints where.
pub fn record(root: &Path, results: &RunResults) -> Result<()> {
    let path = history::record(root, results).context("cannot record the run in the history")?;
    eprintln!("recorded {}", path.display());
    Ok(())
}

/// [`record`] with the verdicts and MDEs of the comparison the run was checked by.
pub fn record_checked(root: &Path, results: &RunResults, report: &Report) -> Result<()> {
    let path = history::record_checked(root, results, report)
        .context("cannot record the run in the history")?;
    eprintln!("recorded {}", path.display());
    Ok(())
}

/// Results of an empty run: nothing selected, but the environment still recorded.
pub fn empty_run(root: &Path) -> RunResults {
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: env!("CARGO_PKG_VERSION").to_string(),
        created: crate::model::results::now_rfc3339(),
        environment: Fingerprint::capture(root),
        benchmarks: Vec::new(),
    }
}

fn selected_names(loaded: &LoadedConfig, selection: &RunSelection) -> Vec<String> {
    loaded
        .config
        .benchmarks
        .iter()
        .map(|b| b.name.clone())
        .filter(|n| selection.bench.is_empty() || selection.bench.contains(n))
        .collect()
}

/// Narrows a selection to one shard; `None` when the shard is empty.
pub fn shard_selection(
    loaded: &LoadedConfig,
    selection: &RunSelection,
    shard: Shard,
) -> Result<Option<RunSelection>> {
    let names = selected_names(loaded, selection);
    // The runner class's history, whichever benchmarks and tools the recorded runs used.
    let key = envkey::class_key(&Fingerprint::capture(&loaded.root));
    let mut durations = history::latest_durations(&history::load(&loaded.root, &key)?);
    if durations.is_empty() {
        let path = baseline::resolve(&loaded.root, baseline::DEFAULT_NAME)?;
        if let Ok(base) = RunResults::load(&path) {
            durations = base
                .benchmarks
                .iter()
                .filter_map(|b| Some((b.name.clone(), history::duration_ns(b)?)))
                .collect();
        }
    }
    let parts = shard::assign(&names, &durations, shard.count);
    let mine = parts[shard.index - 1].clone();
    eprintln!(
        "shard {}/{}: {} of {} benchmarks ({})",
        shard.index,
        shard.count,
        mine.len(),
        names.len(),
        if mine.is_empty() {
            "none".to_string()
        } else {
            mine.join(", ")
        }
    );
    if mine.is_empty() {
        return Ok(None);
    }
    Ok(Some(RunSelection {
        bench: mine,
        ..selection.clone()
    }))
}

/// Benchmarks to run and to skip for `--changed-since`.
pub fn changed_selection(
    loaded: &LoadedConfig,
    selection: &RunSelection,
    reference: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    let changed = gitref::changed_files(&loaded.root, reference)?;
    let top = gitref::toplevel(&loaded.root)?.canonicalize()?;
    let root = loaded.root.canonicalize()?;
    let prefix = root
        .strip_prefix(&top)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let local = selection::relative_to(&changed, &prefix);
    let config_name = loaded
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let config_changed = local.contains(&config_name);
    let wanted: Vec<_> = loaded
        .config
        .benchmarks
        .iter()
        .filter(|b| selection.bench.is_empty() || selection.bench.contains(&b.name))
        .cloned()
        .collect();
    let (run, skipped) = selection::affected(&wanted, &local, config_changed)?;
    eprintln!(
        "changed since {reference}: {} file{}; running {} benchmark{}, skipping {}",
        changed.len(),
        if changed.len() == 1 { "" } else { "s" },
        run.len(),
        if run.len() == 1 { "" } else { "s" },
        skipped.len()
    );
    Ok((run, skipped))
}

/// `kgate merge`.
pub fn merge(args: &MergeArgs) -> Result<u8> {
    let mut merge = shard::Merge::new();
    for f in &args.files {
        merge.add(f.display().to_string(), RunResults::load(f)?)?;
    }
    let merged = merge.finish()?;
    super::emit_results(&merged, args.output.as_deref(), args.pretty)?;
    eprintln!(
        "merged {}: {}",
        crate::model::text::count(args.files.len(), "file", "files"),
        crate::model::text::count(merged.benchmarks.len(), "benchmark", "benchmarks")
    );
    Ok(ExitStatus::PASS)
}

/// `kgate baseline update`.
pub fn baseline_update(
    loaded: &LoadedConfig,
    args: &BaselineUpdateArgs,
    fresh: &RunResults,
) -> Result<u8> {
    let path = baseline::resolve(&loaded.root, &args.name)?;
    let old = if path.exists() {
        Some(RunResults::load(&path).context("cannot read the stored baseline")?)
    } else {
        None
    };
    let diff = baseline::median_diff(old.as_ref(), fresh, &args.name);
    if diff.is_empty() && old.as_ref() == Some(fresh) {
        eprintln!(
            "baseline `{}` is already these results; nothing to do",
            args.name
        );
        return Ok(ExitStatus::PASS);
    }
    if diff.is_empty() {
        println!("medians unchanged (samples and environment differ)");
    } else {
        print!("{diff}");
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "not replacing baseline `{}` without confirmation; review the diff above and rerun with --yes",
                args.name
            );
        }
        eprint!("write {}? [y/N] ", path.display());
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("left unchanged");
            return Ok(ExitStatus::PASS);
        }
    }
    fresh
        .save(&path, Overwrite::Allow)
        .with_context(|| format!("cannot write baseline {}", path.display()))?;
    eprintln!("updated baseline `{}` ({})", args.name, path.display());
    Ok(ExitStatus::PASS)
}

/// The line `kgate history` says on stderr about the key it shows, where there is a choice:
/// whose key it is, the folders written by earlier versions that it gathers, and the other
/// keys with a history. `None` when the key's own folder is the only one.
fn which_history(root: &Path, key: &str, given: bool, known: &[String]) -> Result<Option<String>> {
    let mut line = format!(
        "history of `{key}` ({})",
        if given {
            "--key"
        } else {
            "this machine's runner class"
        }
    );
    // Folder names come from the repository: shown inert on a terminal.
    let legacy: Vec<String> = history::folders_of(root, key)?
        .into_iter()
        .filter(|f| f.name != key)
        .map(|f| crate::model::text::escape_terminal(&f.name).into_owned())
        .collect();
    if !legacy.is_empty() {
        line.push_str(&format!(
            ", with the runs earlier versions filed under {}",
            legacy.join(", ")
        ));
    }
    let others: Vec<String> = known
        .iter()
        .filter(|k| *k != key)
        .map(|k| crate::model::text::escape_terminal(k).into_owned())
        .collect();
    if !others.is_empty() {
        line.push_str(&format!(
            "; other keys with a history: {} (show one with --key KEY)",
            others.join(", ")
        ));
    }
    Ok((!legacy.is_empty() || !others.is_empty()).then_some(line))
}

/// `kgate history`.
pub fn history(root: &Path, args: &HistoryArgs) -> Result<u8> {
    if let Some(HistoryAction::Record { files }) = &args.action {
        for f in files {
            record(root, &RunResults::load(f)?)?;
        }
        return Ok(ExitStatus::PASS);
    }
    if args.key.as_deref() == Some("list") {
        for k in history::keys(root) {
            println!("{k}");
        }
        return Ok(ExitStatus::PASS);
    }
    let key = match &args.key {
        Some(k) => k.clone(),
        None => envkey::class_key(&Fingerprint::capture(root)),
    };
    let records = history::load(root, &key)?;
    let known = history::keys(root);
    if records.is_empty() {
        bail!(
            "no history for environment `{key}` under {}; record runs with `kgate check --record` or `kgate history record RESULTS`{}",
            history::key_dir(root, &key).display(),
            if known.is_empty() {
                String::new()
            } else {
                format!(" (histories exist for: {})", known.join(", "))
            }
        );
    }
    if let Some(line) = which_history(root, &key, args.key.is_some(), &known)? {
        eprintln!("{line}");
    }
    let settings = Settings::default();
    let selected = selected_series(&records, args);
    if selected.is_empty() {
        bail!("no recorded metric matches --bench/--metric in the history of `{key}`");
    }
    let format = match (args.format, args.json) {
        (Some(f), _) => f,
        (None, true) => HistoryFormat::Json,
        (None, false) => HistoryFormat::Text,
    };
    if args.max_charts.is_some() && format != HistoryFormat::Html {
        bail!("--max-charts sets how many charts the HTML page draws; add --format html");
    }
    let path = args.output.as_deref().unwrap_or(Path::new("-"));
    let (written, shown) = match format {
        HistoryFormat::Json | HistoryFormat::Text => {
            let out = with_change_points(selected, &settings);
            let written = if format == HistoryFormat::Json {
                fsutil::write_atomic_with(path, Overwrite::Allow, |to| {
                    write_history_json(&key, &out, to)
                })
            } else {
                fsutil::write_atomic(
                    path,
                    history_text(&key, records.len(), &settings, &out).as_bytes(),
                    Overwrite::Allow,
                )
            };
            (written, out.len())
        }
        HistoryFormat::Html => {
            // The page's series are found again over the jobs in commit order.
            drop(selected);
            let (ordered, mut notes) = in_commit_order(root, records);
            let out = with_change_points(selected_series(&ordered, args), &settings);
            if out.is_empty() {
                bail!(
                    "no recorded metric matches --bench/--metric among the jobs on HEAD's history in `{key}`"
                );
            }
            let repo_url = repo_url(root, args.repo_url.as_deref())?;
            if repo_url.is_none() {
                eprintln!(
                    "note: the repository's web address is not known (no --repo-url, no GITHUB_REPOSITORY or CI_PROJECT_URL, no GitHub or GitLab `origin` remote); the page does not link to commits"
                );
            }
            for n in &mut notes {
                eprintln!("note: {n}");
                *n = format!("{}{}", n[..1].to_uppercase(), &n[1..]);
            }
            let charts: Vec<HistoryChart> = out
                .iter()
                .map(|(bench, metric, series, points)| HistoryChart {
                    benchmark: bench,
                    metric,
                    jobs: series,
                    change_points: points,
                })
                .collect();
            let max_charts = match args.max_charts.unwrap_or(DEFAULT_MAX_CHARTS) {
                0 => None,
                n => Some(n),
            };
            let written = fsutil::write_atomic_with(path, Overwrite::Allow, |to| {
                write_history_page(to, &key, &charts, repo_url.as_deref(), &notes, max_charts)
            });
            let charted = max_charts.map_or(charts.len(), |n| n.min(charts.len()));
            if charted < charts.len() {
                eprintln!(
                    "note: {charted} of {} series charted, the rest summarised in a table (`--max-charts 0` charts them all)",
                    charts.len()
                );
            }
            (written, out.len())
        }
    };
    written.with_context(|| format!("cannot write the history to {}", path.display()))?;
    if let Some(p) = &args.output {
        eprintln!(
            "wrote the history of {key} ({}) to {}",
            crate::model::text::count(shown, "metric", "metrics"),
            p.display()
        );
    }
    Ok(ExitStatus::PASS)
}

/// The series over `records` of the metrics `--bench` and `--metric` select.
fn selected_series(
    records: &[history::HistoryRecord],
    args: &HistoryArgs,
) -> Vec<((String, String), Vec<history::JobSummary>)> {
    history::all_series(records)
        .into_iter()
        .filter(|((bench, metric), _)| {
            args.bench.as_ref().is_none_or(|b| b == bench)
                && args.metric.as_ref().is_none_or(|m| m == metric)
        })
        .collect()
}

/// Each series with the change points in its medians.
fn with_change_points(
    selected: Vec<((String, String), Vec<history::JobSummary>)>,
    settings: &Settings,
) -> Vec<MetricHistory> {
    selected
        .into_iter()
        .map(|((bench, metric), series)| {
            let medians: Vec<f64> = series.iter().map(|s| s.summary.median).collect();
            let points = changepoint::e_divisive(&medians, settings);
            (bench, metric, series, points)
        })
        .collect()
}

/// The records in the order of their commits on HEAD's history (oldest first; jobs of one
/// commit in the order they ran), for the dashboard. Records stored in the order they ran may
/// disagree with it: jobs finish out of order, and run times have one-second resolution. Jobs
/// of commits not on HEAD's history (another branch) are left out; without git's history the
/// order they ran is kept. Either is said in the notes.
fn in_commit_order(
    root: &Path,
    records: Vec<history::HistoryRecord>,
) -> (Vec<history::HistoryRecord>, Vec<String>) {
    let listed = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-list", "--topo-order", "--reverse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let Some(listed) = listed else {
        return (
            records,
            vec!["git cannot list HEAD's history here (not a repository, or no commit yet): jobs are in the order they ran".into()],
        );
    };
    let position: rustc_hash::FxHashMap<&str, usize> =
        listed.lines().enumerate().map(|(i, c)| (c, i)).collect();
    let at =
        |r: &history::HistoryRecord| r.commit.as_deref().and_then(|c| position.get(c).copied());
    let total = records.len();
    let (mut on, off): (Vec<_>, Vec<_>) = records.into_iter().partition(|r| at(r).is_some());
    if on.is_empty() {
        return (
            off,
            vec![format!(
                "none of the {total} recorded jobs measured a commit on HEAD's history (a shallow clone? check out with fetch-depth: 0): jobs are in the order they ran"
            )],
        );
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

type MetricHistory = (
    String,
    String,
    Vec<history::JobSummary>,
    Vec<changepoint::ChangePoint>,
);

/// `kgate history --format json`, its keys in alphabetical order (as the document has always
/// had them). Serialised from the histories as they are, straight into the output: building a
/// `serde_json::Value` of every run first held four times the output in memory.
#[derive(serde::Serialize)]
struct HistoryJson<'a> {
    key: &'a str,
    #[serde(serialize_with = "metric_histories_json")]
    metrics: &'a [MetricHistory],
}

#[derive(serde::Serialize)]
struct MetricHistoryJson<'a> {
    benchmark: &'a str,
    change_points: Vec<ChangePointJson<'a>>,
    metric: &'a str,
    #[serde(serialize_with = "runs_json")]
    runs: &'a [history::JobSummary],
    unit: &'a str,
}

#[derive(serde::Serialize)]
struct RunJson<'a> {
    commit: &'a Option<String>,
    created: &'a str,
    mde: Option<f64>,
    median: f64,
    n: usize,
    verdict: Option<crate::model::verdict::Verdict>,
}

#[derive(serde::Serialize)]
struct ChangePointJson<'a> {
    commit: &'a Option<String>,
    created: &'a str,
    index: usize,
    p_value: f64,
    relative_change: f64,
}

fn metric_histories_json<S: serde::Serializer>(
    out: &&[MetricHistory],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(out.iter().map(|(bench, metric, series, points)| {
        MetricHistoryJson {
            benchmark: bench,
            change_points: points
                .iter()
                .map(|p| ChangePointJson {
                    commit: &series[p.index].commit,
                    created: &series[p.index].created,
                    index: p.index,
                    p_value: p.p_value,
                    relative_change: p.relative_change,
                })
                .collect(),
            metric,
            runs: series,
            unit: series.last().map_or("", |s| s.unit.as_str()),
        }
    }))
}

fn runs_json<S: serde::Serializer>(
    series: &&[history::JobSummary],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(series.iter().map(|s| RunJson {
        commit: &s.commit,
        created: &s.created,
        mde: s.mde,
        median: s.summary.median,
        n: s.summary.n,
        verdict: s.verdict,
    }))
}

/// Writes [`HistoryJson`] of `out`, indented, with a final newline.
fn write_history_json(
    key: &str,
    out: &[MetricHistory],
    to: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut buffer = fsutil::serializer_buffer(to);
    serde_json::to_writer_pretty(&mut buffer, &HistoryJson { key, metrics: out })?;
    buffer.write_all(b"\n")?;
    buffer.flush()
}

fn history_text(key: &str, runs: usize, settings: &Settings, out: &[MetricHistory]) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "history of {key}: {runs} runs (change points: E-divisive means, permutation test, {} shuffles, seed {:#x}, p ≤ {})",
        settings.permutations, settings.seed, settings.max_p
    );
    for (bench, metric, series, points) in out {
        let _ = writeln!(
            text,
            "\n{} / {}: {} runs",
            escape_terminal(bench),
            escape_terminal(metric),
            series.len()
        );
        for (i, s) in series.iter().enumerate() {
            let commit = s.commit.as_deref().map_or("-", |c| {
                c.char_indices().nth(12).map_or(c, |(i, _)| &c[..i])
            });
            let commit = escape_terminal(commit);
            let mark = points
                .iter()
                .find(|p| p.index == i)
                .map(|p| {
                    format!(
                        "  ◀ change point: {} (p = {})",
                        format_change(p.relative_change),
                        crate::compare::format_p(p.p_value)
                    )
                })
                .unwrap_or_default();
            let verdict = s
                .verdict
                .map(|v| format!("  {}", v.as_str()))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "  {}  {commit}  {:>12}  n={}{verdict}{mark}",
                s.created,
                format_value(s.summary.median, &s.unit),
                s.summary.n
            );
        }
        if points.is_empty() {
            let _ = writeln!(text, "  no change point");
        }
    }
    text
}

/// The repository's web address for commit links: the flag, else the CI's own variables, else
/// git's `origin` remote when it names a GitHub or GitLab host. A flag or a CI variable that is
/// not an http(s) address ([`web_address`]: `javascript:…` goes into no `href`) is an error
/// naming where it came from.
fn repo_url(root: &Path, flag: Option<&str>) -> Result<Option<String>> {
    let checked = |url: &str, from: &str| -> Result<Option<String>> {
        match crate::model::text::web_address(url) {
            Some(url) => Ok(Some(url.to_string())),
            None => bail!(
                "{from} `{}` is not a web address; give the repository's as --repo-url https://HOST/OWNER/REPO",
                escape_terminal(url)
            ),
        }
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
    let remote = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["remote", "get-url", "origin"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    // A remote that gives no plain address gives no links.
    Ok(remote
        .as_deref()
        .and_then(web_address)
        .filter(|url| crate::model::text::web_address(url).is_some()))
}

/// `https://github.com/o/r` from `git@github.com:o/r.git`, `ssh://git@host:22/o/r.git` or an
/// http(s) remote, for GitHub and GitLab hosts; credentials in the URL are dropped.
fn web_address(remote: &str) -> Option<String> {
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
