//! `kgate bisect GOOD BAD`: from "it regressed" to the commit that did it.
//!
//! A stage above the run and compare stages: it checks commits out into worktrees
//! ([`crate::run::worktree`]), measures each candidate interleaved against GOOD with the same
//! runner, adaptive looks and decision rule as `kgate check --against`, and feeds the verdicts
//! to a binary search ([`search`]) that is pure and tested without git.
//!
//! Every step measures against GOOD itself, not against the last commit found good: the
//! question is then the same at every step ("has this commit regressed against GOOD?"), its
//! answers are ordered along the history as a binary search needs, a slow drift of several
//! small changes is located where it crosses the threshold instead of being missed step by
//! step, and GOOD is built once. Each commit's worktree is kept (and built once) for the whole
//! bisect, so a commit measured twice, or for two benchmarks, is not rebuilt.
//!
//! The result ([`BisectReport`]) is a JSON contract (`schemas/bisect.schema.json`); [`render`]
//! shows it as a table or Markdown.

pub mod render;
pub mod search;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::baseline::gitref::{self, GitError};
use crate::compare::ComparePolicy;
use crate::model::report::{BenchmarkComparison, Design, Report};
use crate::model::results::{Failure, RunResults};
use crate::model::verdict::Verdict;
use crate::plan::Plan;
use crate::run::progress::Progress;
use crate::run::runner::{self, Revision, RunError};
use crate::run::worktree::{Worktree, WorktreeError};
use search::{Answer, Step};

/// Version of the bisect report format.
pub const BISECT_SCHEMA_VERSION: u32 = 1;

/// Bisect errors: the history, a checkout, the run, or GOOD and BAD themselves.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("GOOD and BAD are the same commit ({0}); name an older commit as GOOD")]
    SameCommit(String),
    #[error(
        "GOOD ({good}) is not an ancestor of BAD ({bad}); swap them, or name a GOOD on BAD's history"
    )]
    NotAncestor { good: String, bad: String },
    #[error(
        "GOOD ({good}) is not on BAD's first-parent history (it is on a branch merged into it); name the merge's first parent or a commit before the merge as GOOD"
    )]
    NotFirstParent { good: String },
    #[error("{side} ({commit}) cannot be measured: benchmark `{benchmark}` {message}")]
    EndpointFailed {
        side: &'static str,
        commit: String,
        benchmark: String,
        message: String,
    },
}

/// What a bisect found, over all its benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// At least one benchmark regressed at BAD against GOOD, and its culprit (a commit or a
    /// range) is named.
    Found,
    /// No benchmark regressed at BAD against GOOD: nothing to bisect.
    NotReproduced,
    /// No benchmark regressed at BAD, but at least one stayed inconclusive: neither
    /// reproduced nor ruled out.
    Undecided,
}

/// What the bisect found for one benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BenchmarkOutcome {
    /// One commit: the first at which the benchmark regressed against GOOD.
    Found,
    /// A range of commits: the first regressed one is among them, but the commits next to the
    /// boundary were skipped or stayed inconclusive.
    Range,
    /// BAD did not regress against GOOD.
    NotReproduced,
    /// BAD against GOOD stayed inconclusive.
    Undecided,
}

/// What one measurement of a commit said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StepOutcome {
    /// Not regressed against GOOD (unchanged, within the threshold, or improved).
    Good,
    /// Regressed against GOOD.
    Bad,
    /// Inconclusive after every repetition the adaptive plan allows.
    Inconclusive,
    /// Not measured: the build or the benchmark failed at this commit (as `git bisect skip`).
    Skipped,
}

/// A commit and its subject line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Commit {
    /// The full hash.
    pub commit: String,
    /// The first line of its message.
    pub subject: String,
    /// How many first-parent commits after GOOD it is (GOOD is 0, BAD is `commits`).
    pub position: usize,
}

/// One measurement: a commit interleaved against GOOD, for one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepRecord {
    #[serde(flatten)]
    pub commit: Commit,
    pub outcome: StepOutcome,
    /// The benchmark's verdict against GOOD (absent when skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The metric that decided: the regressed metric with the largest change, else the first
    /// gating metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Relative change against GOOD (0.05 is +5 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// Confidence interval of the change, at `ci_level`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_level: Option<f64>,
    /// Two-sided p-value (absent for deterministic metrics, decided by their tolerance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// Measured repetitions per side.
    pub repetitions: u32,
    /// Why: the metric's reason, or why the commit was skipped.
    pub reason: String,
    /// Seconds this step took (builds of commits not built before included).
    pub seconds: f64,
}

/// One benchmark's bisect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkBisect {
    pub name: String,
    pub outcome: BenchmarkOutcome,
    /// In one sentence.
    pub explanation: String,
    /// BAD measured against GOOD: the measurement that decides whether there is anything to
    /// bisect.
    pub endpoints: StepRecord,
    /// The first commit at which the benchmark regressed (outcome `found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<Commit>,
    /// The commits that may hold the first regression, oldest first (outcome `range`; for
    /// `found`, the culprit alone).
    #[serde(default)]
    pub range: Vec<Commit>,
    /// The search's measurements between GOOD and BAD, in the order taken.
    pub steps: Vec<StepRecord>,
    /// Measurements a linear scan from GOOD would have taken to the same answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear_steps: Option<usize>,
}

/// A bisect's result (the JSON contract of `kgate bisect --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectReport {
    /// Bisect report format version.
    pub schema_version: u32,
    /// `found`, `not-reproduced` or `undecided`.
    pub outcome: Outcome,
    /// The known-good commit; every step is measured interleaved against it.
    pub good: Commit,
    /// The known-bad commit.
    pub bad: Commit,
    /// First-parent commits after GOOD up to and including BAD.
    pub commits: usize,
    /// Significance level of each step's gate (as `gate.alpha`).
    pub alpha: f64,
    pub benchmarks: Vec<BenchmarkBisect>,
    /// Measurements taken, the endpoints included.
    pub measurements: usize,
    /// Commits checked out and built (each once).
    pub builds: usize,
    /// Wall time of the whole bisect, in seconds.
    pub seconds: f64,
    /// Things the reader should know (benchmarks left out of the search and why).
    pub notes: Vec<String>,
}

/// What to bisect.
pub struct Request<'a> {
    /// The configuration's folder in the work tree; its counterpart is measured in each
    /// commit's worktree.
    pub root: &'a Path,
    /// The plan (benchmarks, repetitions, builds), from the work tree's configuration.
    pub plan: &'a Plan,
    pub policy: &'a ComparePolicy,
    /// Each measurement's time budget for more looks (`gate.time_budget`).
    pub time_budget: Option<Duration>,
    pub good: &'a str,
    pub bad: &'a str,
}

/// Receives what a bisect does as it goes, for people to follow.
pub trait Observer {
    /// A commit is being checked out and built.
    fn building(&mut self, commit: &Commit);
    /// A measurement finished (`what` is the benchmark).
    fn measured(&mut self, benchmark: &str, step: &StepRecord);
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {
    fn building(&mut self, _: &Commit) {}
    fn measured(&mut self, _: &str, _: &StepRecord) {}
}

/// Runs a bisect: BAD against GOOD for every benchmark of the plan, then a search for each
/// benchmark that regressed.
pub fn bisect(
    request: &Request<'_>,
    progress: &mut dyn Progress,
    observer: &mut dyn Observer,
) -> Result<BisectReport, BisectError> {
    let started = Instant::now();
    let history = History::read(request.root, request.good, request.bad)?;
    let mut lab = Lab {
        request,
        history: &history,
        trees: BTreeMap::new(),
        progress,
        observer,
        measurements: 0,
    };
    let last = history.commits.len() - 1;
    let planned = &request.plan.benchmarks;
    let names: Vec<String> = planned.iter().map(|b| b.name.clone()).collect();
    let endpoints = lab.measure(last, &names)?;
    let mut benchmarks = Vec::new();
    let mut notes = Vec::new();
    for ((name, endpoint), plan) in names.iter().zip(endpoints).zip(planned) {
        lab.observer.measured(name, &endpoint);
        let verdict = endpoint.verdict.map(|v| v.as_str()).unwrap_or("skipped");
        let quiet = |outcome, explanation: String| BenchmarkBisect {
            name: name.clone(),
            outcome,
            explanation,
            endpoints: endpoint.clone(),
            culprit: None,
            range: Vec::new(),
            steps: Vec::new(),
            linear_steps: None,
        };
        match endpoint.outcome {
            StepOutcome::Bad => {}
            StepOutcome::Inconclusive => {
                let note = "not bisected: BAD against GOOD stayed inconclusive";
                notes.push(format!("`{name}` {note}"));
                benchmarks.push(quiet(
                    BenchmarkOutcome::Undecided,
                    format!(
                        "BAD against GOOD stayed inconclusive after {} repetitions per side: neither reproduced nor ruled out; raise {} or the threshold",
                        endpoint.repetitions,
                        plan.repetitions.setting_to_raise()
                    ),
                ));
                continue;
            }
            StepOutcome::Good | StepOutcome::Skipped => {
                benchmarks.push(quiet(
                    BenchmarkOutcome::NotReproduced,
                    format!("BAD against GOOD is {verdict}: no regression to bisect"),
                ));
                continue;
            }
        }
        let mut steps = Vec::new();
        let found = search::bisect(last, |position| {
            let record = lab.measure(position, std::slice::from_ref(name))?.remove(0);
            lab.observer.measured(name, &record);
            let step = match record.outcome {
                StepOutcome::Good => Step::Good,
                StepOutcome::Bad => Step::Bad,
                StepOutcome::Inconclusive => Step::Inconclusive,
                StepOutcome::Skipped => Step::Skipped,
            };
            steps.push(record);
            Ok::<_, BisectError>(step)
        })?;
        let (outcome, culprit, range, explanation, linear) = match found.answer {
            Answer::Commit(p) => {
                let c = history.commit(p);
                let explanation = format!(
                    "first regressed at {} ({}), {} after GOOD",
                    short(&c.commit),
                    c.subject,
                    crate::model::text::count(p, "commit", "commits")
                );
                // A linear scan measures GOOD's successors in order until the first bad one
                // (BAD itself is known).
                (
                    BenchmarkOutcome::Found,
                    Some(c.clone()),
                    vec![c],
                    explanation,
                    Some(p.min(last - 1)),
                )
            }
            Answer::Range { after, through } => {
                let range: Vec<Commit> = (after + 1..=through).map(|p| history.commit(p)).collect();
                let undecided: Vec<String> = steps
                    .iter()
                    .filter(|s| s.commit.position > after && s.commit.position < through)
                    .map(|s| format!("{} {}", short(&s.commit.commit), s.outcome.as_str()))
                    .collect();
                let explanation = format!(
                    "first regressed at one of {} commits, {} through {}: {} between the last good and the first bad commit",
                    range.len(),
                    short(&range[0].commit),
                    short(&history.commit(through).commit),
                    if undecided.is_empty() {
                        "nothing could be measured".to_string()
                    } else {
                        undecided.join(", ")
                    }
                );
                (BenchmarkOutcome::Range, None, range, explanation, None)
            }
        };
        benchmarks.push(BenchmarkBisect {
            name: name.clone(),
            outcome,
            explanation,
            endpoints: endpoint,
            culprit,
            range,
            steps,
            linear_steps: linear,
        });
    }
    let any = |of: &[BenchmarkOutcome]| benchmarks.iter().any(|b| of.contains(&b.outcome));
    let outcome = if any(&[BenchmarkOutcome::Found, BenchmarkOutcome::Range]) {
        Outcome::Found
    } else if any(&[BenchmarkOutcome::Undecided]) {
        Outcome::Undecided
    } else {
        Outcome::NotReproduced
    };
    let builds = lab.trees.len();
    let measurements = lab.measurements;
    drop(lab);
    Ok(BisectReport {
        schema_version: BISECT_SCHEMA_VERSION,
        outcome,
        good: history.commit(0),
        bad: history.commit(last),
        commits: last,
        alpha: request.policy.alpha,
        benchmarks,
        measurements,
        builds,
        seconds: started.elapsed().as_secs_f64(),
        notes,
    })
}

impl StepOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Good => "good",
            StepOutcome::Bad => "bad",
            StepOutcome::Inconclusive => "inconclusive",
            StepOutcome::Skipped => "skipped",
        }
    }
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Found => "found",
            Outcome::NotReproduced => "not-reproduced",
            Outcome::Undecided => "undecided",
        }
    }
}

impl BenchmarkOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            BenchmarkOutcome::Found => "found",
            BenchmarkOutcome::Range => "range",
            BenchmarkOutcome::NotReproduced => "not-reproduced",
            BenchmarkOutcome::Undecided => "undecided",
        }
    }
}

/// The first twelve characters of a hash.
pub fn short(commit: &str) -> &str {
    &commit[..12.min(commit.len())]
}

/// GOOD, then BAD's first-parent commits after it, oldest first.
struct History {
    commits: Vec<(String, String)>,
}

impl History {
    fn read(root: &Path, good: &str, bad: &str) -> Result<History, BisectError> {
        let top = gitref::toplevel(root)?;
        let good = gitref::resolve(&top, good)?;
        let bad = gitref::resolve(&top, bad)?;
        if good == bad {
            return Err(BisectError::SameCommit(good));
        }
        let base = gitref::git_text(&top, &["merge-base", &good, &bad])?;
        if base != good {
            return Err(BisectError::NotAncestor { good, bad });
        }
        let range = format!("{good}..{bad}");
        let log = [
            "log",
            "--first-parent",
            "--reverse",
            "--format=%H%x09%s",
            &range,
        ];
        let listing = gitref::git_text(&top, &log)?;
        let subject = gitref::git_text(&top, &["show", "-s", "--format=%s", &good])?;
        let mut commits = vec![(good.clone(), subject)];
        for line in listing.lines() {
            let (hash, subject) = line.split_once('\t').unwrap_or((line, ""));
            commits.push((hash.to_string(), subject.to_string()));
        }
        // The oldest listed commit must sit on GOOD: otherwise the first-parent chain passes
        // GOOD by on a merged branch, and its commits would not hold GOOD's changes.
        let first = &commits[1].0;
        let parent = gitref::git_text(&top, &["rev-parse", &format!("{first}^1")])?;
        if parent != good {
            return Err(BisectError::NotFirstParent { good });
        }
        Ok(History { commits })
    }

    fn commit(&self, position: usize) -> Commit {
        let (commit, subject) = &self.commits[position];
        Commit {
            commit: commit.clone(),
            subject: subject.clone(),
            position,
        }
    }
}

/// A commit checked out and built, kept for the whole bisect.
struct Built {
    tree: Worktree,
    /// The build steps that failed, by build index.
    failures: BTreeMap<usize, Failure>,
}

/// The worktrees, their builds, and the measurements.
struct Lab<'r, 'p> {
    request: &'r Request<'r>,
    history: &'r History,
    trees: BTreeMap<usize, Built>,
    progress: &'p mut dyn Progress,
    observer: &'p mut dyn Observer,
    measurements: usize,
}

impl Lab<'_, '_> {
    /// The worktree of the commit at `position`, checked out and built the first time.
    fn tree(&mut self, position: usize) -> Result<&Built, BisectError> {
        if !self.trees.contains_key(&position) {
            let commit = self.history.commit(position);
            self.observer.building(&commit);
            let tree = Worktree::checkout(self.request.root, &commit.commit)?;
            let revision = Revision {
                root: tree.root.clone(),
                label: Some(if position == 0 { "good" } else { "candidate" }),
            };
            let failures = runner::run_builds(self.request.plan, &revision, self.progress)?;
            self.trees.insert(position, Built { tree, failures });
        }
        Ok(&self.trees[&position])
    }

    /// Measures the commit at `position` interleaved against GOOD, for the benchmarks named;
    /// one record per name, in order. A benchmark that cannot be built or run at the candidate
    /// is a skipped step; at GOOD, or at BAD (the endpoints), it is an error.
    fn measure(
        &mut self,
        position: usize,
        names: &[String],
    ) -> Result<Vec<StepRecord>, BisectError> {
        let started = Instant::now();
        let last = self.history.commits.len() - 1;
        let plan = self.request.plan;
        let good_failures = self.tree(0)?.failures.clone();
        let good_root = self.tree(0)?.tree.root.clone();
        let candidate_failures = self.tree(position)?.failures.clone();
        let candidate_root: PathBuf = self.tree(position)?.tree.root.clone();
        let commit = self.history.commit(position);
        let endpoint_error = |side: &'static str, commit: &str, name: &str, message: &str| {
            BisectError::EndpointFailed {
                side,
                commit: short(commit).to_string(),
                benchmark: name.to_string(),
                message: message.to_string(),
            }
        };
        // Build failures first: they decide without measuring.
        let mut skipped: BTreeMap<String, String> = BTreeMap::new();
        let mut run = Vec::new();
        for name in names {
            let Some(b) = plan.benchmarks.iter().find(|b| &b.name == name) else {
                continue;
            };
            let build = b.build;
            if let Some(f) = build.and_then(|i| good_failures.get(&i)) {
                let good = self.history.commit(0);
                return Err(endpoint_error("GOOD", &good.commit, name, &f.message));
            }
            match build.and_then(|i| candidate_failures.get(&i)) {
                Some(f) if position == last => {
                    return Err(endpoint_error("BAD", &commit.commit, name, &f.message));
                }
                Some(f) => {
                    skipped.insert(name.clone(), f.message.clone());
                }
                None => run.push(b.clone()),
            }
        }
        let mut report = None;
        if !run.is_empty() {
            // Built already: the measurement runs no build step.
            let mut subset = plan.clone();
            subset.builds.clear();
            subset.benchmarks = run
                .into_iter()
                .map(|mut b| {
                    b.build = None;
                    // Every step runs the work tree's declaration on both sides: a step whose
                    // identity digest is GOOD's is identical code, and costs no measurement.
                    if b.identity.is_some() {
                        b.base_description = Some(b.description());
                    }
                    b
                })
                .collect();
            let adaptive = runner::Adaptive {
                policy: self.request.policy.clone(),
                time_budget: self.request.time_budget,
            };
            let (base, head) = runner::run_interleaved_adaptive(
                &subset,
                &Revision {
                    root: good_root,
                    label: Some("good"),
                },
                &Revision {
                    root: candidate_root,
                    label: Some("candidate"),
                },
                self.progress,
                Some(&adaptive),
            )?;
            self.measurements += 1;
            for b in &base.benchmarks {
                if let Some(why) = b.failed_because() {
                    let good = self.history.commit(0);
                    return Err(endpoint_error("GOOD", &good.commit, &b.name, why));
                }
            }
            for b in &head.benchmarks {
                if let Some(why) = b.failed_because() {
                    if position == last {
                        return Err(endpoint_error("BAD", &commit.commit, &b.name, why));
                    }
                    skipped.insert(b.name.clone(), why.to_string());
                }
            }
            let compared =
                crate::compare::compare(&base, &head, self.request.policy, Design::Interleaved);
            report = Some((compared, head));
        }
        let seconds = started.elapsed().as_secs_f64();
        Ok(names
            .iter()
            .map(|name| match (skipped.get(name), &report) {
                (Some(why), _) => skipped_record(&commit, why, seconds),
                (None, Some((report, head))) => record(&commit, name, report, head, seconds),
                (None, None) => skipped_record(&commit, "not in the plan", seconds),
            })
            .collect())
    }
}

fn skipped_record(commit: &Commit, why: &str, seconds: f64) -> StepRecord {
    StepRecord {
        commit: commit.clone(),
        outcome: StepOutcome::Skipped,
        verdict: None,
        metric: None,
        unit: None,
        change: None,
        ci: None,
        ci_level: None,
        p_value: None,
        repetitions: 0,
        reason: format!("skipped: {why}"),
        seconds,
    }
}

/// A step's record from the comparison of one benchmark.
fn record(
    commit: &Commit,
    name: &str,
    report: &Report,
    head: &RunResults,
    seconds: f64,
) -> StepRecord {
    let repetitions = head.benchmark(name).map(|b| b.repetitions).unwrap_or(0);
    let Some(b) = report.benchmarks.iter().find(|b| b.name == name) else {
        return skipped_record(commit, "the benchmark is not in the comparison", seconds);
    };
    let outcome = step_outcome(b.verdict);
    let metric = deciding_metric(b);
    StepRecord {
        commit: commit.clone(),
        outcome,
        verdict: Some(b.verdict),
        metric: metric.map(|m| m.name.clone()),
        unit: metric.map(|m| m.unit.clone()),
        change: metric.and_then(|m| m.change),
        ci: metric.and_then(|m| m.ci),
        ci_level: metric.and_then(|m| m.ci_level),
        p_value: metric.and_then(|m| m.p_value),
        repetitions,
        reason: match metric {
            Some(m) => format!("{}: {}", m.name, m.reason),
            None => b.explanation.clone(),
        },
        seconds,
    }
}

/// How a benchmark's verdict against GOOD answers the search.
pub fn step_outcome(verdict: Verdict) -> StepOutcome {
    match verdict {
        // A wrong answer is as bad as a slow one.
        Verdict::Regressed | Verdict::Incorrect => StepOutcome::Bad,
        Verdict::Inconclusive => StepOutcome::Inconclusive,
        // Identical code is no regression, and cost nothing to find out.
        Verdict::Unchanged
        | Verdict::WithinThreshold
        | Verdict::Improved
        | Verdict::NotGated
        | Verdict::Identical => StepOutcome::Good,
        // No comparison was possible (the benchmark is absent on a side, or failed there: a
        // commit that cannot be measured is skipped, as `git bisect skip` does).
        Verdict::New | Verdict::Missing | Verdict::Skipped | Verdict::Failed => {
            StepOutcome::Skipped
        }
    }
}

/// The metric behind a benchmark's verdict: its regressed metric with the largest change, else
/// the first gating metric with the benchmark's verdict, else the first gating one.
fn deciding_metric(b: &BenchmarkComparison) -> Option<&crate::model::report::MetricComparison> {
    let gating = || b.metrics.iter().filter(|m| m.gates);
    gating()
        .filter(|m| m.verdict == Verdict::Regressed)
        .max_by(|x, y| {
            let (x, y) = (x.change.unwrap_or(0.0), y.change.unwrap_or(0.0));
            x.abs().total_cmp(&y.abs())
        })
        .or_else(|| gating().find(|m| m.verdict == b.verdict))
        .or_else(|| gating().next())
        .or_else(|| b.metrics.first())
}
