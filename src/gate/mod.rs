//! The pipeline's commands as library functions: `check`, `compare`, `import`, `merge`,
//! `history`, `calibrate` and `bisect` each take a plain options struct, run the stages in
//! order and return what they found (results, a report, a history, a calibration, a bisect)
//! as values; [`ci`] posts a report from a CI job.
//! Nothing here parses a flag, prints or writes an output: the lines a person reads while the
//! work goes on (what is measured, skipped, recorded) go to a `say` callback, and the CLI
//! writes the outcome, as hyperfine's and ripgrep's binaries are thin over their libraries.

mod bisect;
mod check;
pub mod ci;
mod history;
mod import;

use std::path::{Path, PathBuf};

pub use bisect::{BisectOptions, bisect};
pub use check::{Against, CheckOptions, check};
pub use history::{History, HistoryOptions, history, record_history};
pub use import::{ImportOptions, import};

use crate::baseline::{self, gitref, history as store_history};
use crate::compare::{self, ComparePolicy, waivers};
use crate::config::{self, LoadedConfig};
use crate::machine::envkey;
use crate::machine::fingerprint::Fingerprint;
use crate::model::evidence::Evidence;
use crate::model::report::{Design, Report};
use crate::model::results::{RESULTS_SCHEMA_VERSION, RunResults};
use crate::plan::shard::{self, Shard};
use crate::plan::{Overrides, Plan};
use crate::run::progress::Progress;
use crate::run::runner::{self, Revision, RunError};

/// Why a command could not finish: a stage's error, or a refusal that says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Plan(#[from] crate::plan::UnknownBenchmark),
    #[error(transparent)]
    Refused(#[from] crate::github::Refused),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Worktree(#[from] crate::run::worktree::WorktreeError),
    #[error(transparent)]
    Git(#[from] gitref::GitError),
    #[error(transparent)]
    Baseline(#[from] baseline::BaselineError),
    #[error(transparent)]
    History(#[from] store_history::HistoryError),
    #[error(transparent)]
    Results(#[from] crate::store::ResultsError),
    #[error(transparent)]
    Environments(#[from] envkey::FingerprintMismatch),
    #[error(transparent)]
    Waivers(#[from] waivers::WaiverError),
    #[error(transparent)]
    Merge(#[from] shard::MergeError),
    #[error(transparent)]
    Glob(#[from] crate::plan::selection::BadGlob),
    #[error(transparent)]
    Import(#[from] crate::import::ImportError),
    #[error(transparent)]
    Selection(#[from] crate::import::trace::SelectionError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Github(#[from] crate::github::client::GithubError),
    #[error(transparent)]
    Gitlab(#[from] crate::gitlab::client::GitlabError),
    /// What cannot be done as asked, and what to do instead.
    #[error("{0}")]
    Invalid(String),
    /// What was being done, over the error that stopped it.
    #[error("{what}")]
    Context {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Wraps an error under what was being done: `cannot read the stored baseline: …`.
fn within<E: std::error::Error + Send + Sync + 'static>(
    what: impl Into<String>,
) -> impl FnOnce(E) -> GateError {
    move |e| GateError::Context {
        what: what.into(),
        source: Box::new(e),
    }
}

/// Where the lines go that a command says as it works (stderr, for the CLI).
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// What a check or a comparison measured and decided, before anything is written: `kgate ci`
/// posts this report as it is.
pub struct Checked {
    pub report: Report,
    /// The base side, where it was measured (`--against`) or read from a file (`compare`).
    pub base: Option<RunResults>,
    pub head: RunResults,
    /// The configuration's `gate.fail_on_inconclusive`.
    pub fail_on_inconclusive: bool,
}

/// Runs the selected benchmarks of the work tree and checks the metrics the configuration
/// declared (a declared gating metric that is absent fails its benchmark); an empty run, the
/// environment still recorded, where the selection took nothing (`None`).
pub fn run_suite(
    loaded: &LoadedConfig,
    selection: Option<&Overrides>,
    progress: &mut dyn Progress,
    say: &mut Say<'_>,
) -> Result<RunResults, GateError> {
    let Some(selection) = selection else {
        return Ok(RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: env!("CARGO_PKG_VERSION").to_string(),
            created: crate::model::results::now_rfc3339(),
            environment: Fingerprint::capture(&loaded.root),
            benchmarks: Vec::new(),
        });
    };
    crate::github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, selection)?;
    let revision = Revision {
        root: loaded.root.clone(),
        label: None,
    };
    let mut results = runner::run_plan(&plan, &revision, progress)?;
    warn_declared(&plan, &mut results, say);
    Ok(results)
}

/// What `kgate calibrate` measured: the work tree run as sides A and B, interleaved, and the
/// noise between them.
pub struct Calibrated {
    pub a: RunResults,
    pub b: RunResults,
    pub calibration: compare::calibrate::Calibration,
}

/// `kgate calibrate`: the selected benchmarks of the work tree interleaved against
/// themselves, and the noise the configuration's policy sees between the two sides.
pub fn calibrate(
    loaded: &LoadedConfig,
    selection: &Overrides,
    progress: &mut dyn Progress,
) -> Result<Calibrated, GateError> {
    let policy = ComparePolicy::from(&loaded.config.gate);
    crate::github::refuse_untrusted_run(&loaded.root)?;
    let plan = Plan::new(&loaded.config, selection)?;
    let side = |label| Revision {
        root: loaded.root.clone(),
        label: Some(label),
    };
    let (a, b) = runner::run_interleaved(&plan, &side("A"), &side("B"), progress)?;
    let calibration = compare::calibrate::analyse(&a, &b, &policy);
    Ok(Calibrated { a, b, calibration })
}

fn warn_declared(plan: &Plan, results: &mut RunResults, say: &mut Say<'_>) {
    for w in crate::plan::declared::check_declared_metrics(plan, results) {
        say(&format!("warning: {}", crate::model::text::escape_log(&w)));
    }
}

/// The configured benchmarks a selection takes.
fn selected<'c>(
    loaded: &'c LoadedConfig,
    selection: &'c Overrides,
) -> impl Iterator<Item = &'c config::BenchmarkConfig> {
    let taken = |b: &&config::BenchmarkConfig| {
        selection.only.is_empty() || selection.only.contains(&b.name)
    };
    loaded.config.benchmarks.iter().filter(taken)
}

/// Narrows a selection to one shard, balanced by the recorded durations; `None` when the shard
/// is empty.
pub fn shard_selection(
    loaded: &LoadedConfig,
    selection: &Overrides,
    shard: Shard,
    say: &mut Say<'_>,
) -> Result<Option<Overrides>, GateError> {
    let names: Vec<String> = selected(loaded, selection)
        .map(|b| b.name.clone())
        .collect();
    // The runner class's history, whichever benchmarks and tools the recorded runs used.
    let key = envkey::class_key(&Fingerprint::capture(&loaded.root));
    let mut durations = store_history::latest_durations(&store_history::load(&loaded.root, &key)?);
    if durations.is_empty() {
        let path = baseline::resolve(&loaded.root, baseline::DEFAULT_NAME)?;
        if let Ok(base) = RunResults::load(&path) {
            durations = base
                .benchmarks
                .iter()
                .filter_map(|b| Some((b.name.clone(), store_history::duration_ns(b)?)))
                .collect();
        }
    }
    let parts = shard::assign(&names, &durations, shard.count);
    let mine = parts[shard.index - 1].clone();
    let listed = if mine.is_empty() {
        "none".to_string()
    } else {
        mine.join(", ")
    };
    let (index, count, of, n) = (shard.index, shard.count, names.len(), mine.len());
    let line = format!("shard {index}/{count}: {n} of {of} benchmarks ({listed})");
    say(&line);
    Ok((!mine.is_empty()).then(|| Overrides {
        only: mine,
        ..selection.clone()
    }))
}

/// Appends results to the history, with the verdicts and MDEs of the comparison they were
/// checked by where there is one; says where.
pub fn record(
    root: &Path,
    results: &RunResults,
    report: Option<&Report>,
    say: &mut Say<'_>,
) -> Result<(), GateError> {
    let summary = store_history::HistoryRecord::from_results(results);
    let summary = match report {
        Some(report) => summary.with_report(report),
        None => summary,
    };
    let path = store_history::record_summary(root, summary)
        .map_err(within("cannot record the run in the history"))?;
    say(&format!("recorded {}", path.display()));
    Ok(())
}

/// `kgate merge`: shard results joined into one.
pub fn merge(files: &[PathBuf]) -> Result<RunResults, GateError> {
    let mut merge = shard::Merge::new();
    for f in files {
        merge.add(f.display().to_string(), RunResults::load(f)?)?;
    }
    Ok(merge.finish()?)
}

/// A baseline file as committed at the merge-base of `reference` and HEAD.
fn baseline_at_ref(
    root: &Path,
    path: &Path,
    reference: &str,
    say: &mut Say<'_>,
) -> Result<RunResults, GateError> {
    let commit = gitref::merge_base(root, reference)?;
    let repo_path = gitref::repo_relative(root, path)?;
    let bytes = gitref::show(root, &commit, &repo_path, reference)?;
    let short = commit.get(..12).unwrap_or(&commit);
    let label = format!("{repo_path} at {short} (merge-base of {reference} and HEAD)");
    say(&format!("baseline: {label}"));
    // Read from the blob itself: errors name the file in the repository, not a copy of it.
    let text = String::from_utf8(bytes)
        .map_err(|_| GateError::Invalid(format!("the baseline {label} is not UTF-8 text")))?;
    RunResults::parse(&text, Path::new(&repo_path))
        .map_err(within(format!("cannot read the baseline {label}")))
}

/// Refuses incomparable environments unless allowed (the flag wins over the configuration);
/// puts who allowed it at the head of the warnings.
fn check_environments(
    base: &RunResults,
    head: &RunResults,
    (flag, config): (bool, bool),
    warnings: &mut Vec<String>,
) -> Result<(), GateError> {
    let allowance = match (flag, config) {
        (true, _) => Some(envkey::Allowance::Flag),
        (false, true) => Some(envkey::Allowance::Config),
        (false, false) => None,
    };
    if let Some(allowance) =
        envkey::check_comparable(&base.environment, &head.environment, allowance)?
    {
        // The comparison wrote one line on the environments; say who allowed it there.
        let line = warnings
            .iter()
            .position(|w| w.starts_with(compare::ENVIRONMENTS_DIFFER));
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

/// Applies `.kgate/waivers.yaml` (when present) to a report.
fn apply_waivers(root: &Path, report: &mut Report) -> Result<(), GateError> {
    let list = waivers::load(root)?;
    waivers::apply(report, &list, &waivers::Clock::now(Some(root)));
    Ok(())
}

/// Earlier jobs' results for the prediction-interval model.
fn load_history(paths: &[PathBuf]) -> Result<Vec<RunResults>, GateError> {
    let load = |p: &PathBuf| {
        RunResults::load(p).map_err(within(format!("cannot read history file {}", p.display())))
    };
    paths.iter().map(load).collect()
}

/// What `kgate compare BASE HEAD` reads and how it decides.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    pub base: PathBuf,
    pub head: PathBuf,
    /// The significance level, over the configuration's.
    pub alpha: Option<f64>,
    /// Read BASE as committed at the merge-base of this reference and HEAD.
    pub baseline_ref: Option<String>,
    pub allow_fingerprint_mismatch: bool,
    /// Earlier jobs' results: the prediction-interval model for noisy metrics.
    pub history: Vec<PathBuf>,
    /// Keep every sample in the report's evidence.
    pub full_evidence: bool,
}

/// `kgate compare`: two results files compared under the policy of the configuration at
/// `config`, where that file exists.
pub fn compare_files(
    config: &Path,
    options: &CompareOptions,
    say: &mut Say<'_>,
) -> Result<Checked, GateError> {
    let root = config::root_of(config);
    // The configuration's gate policy applies only when one is named explicitly or present.
    let gate = match config.exists() {
        true => Some(config::load(config)?.config.gate),
        false => None,
    };
    let mut policy = gate.as_ref().map(ComparePolicy::from).unwrap_or_default();
    if let Some(alpha) = options.alpha {
        if !(alpha > 0.0 && alpha < 0.5) {
            return Err(GateError::Invalid(format!(
                "--alpha {alpha} is not a usable significance level; use a value between 0 and 0.5, such as 0.01"
            )));
        }
        policy.alpha = alpha;
    }
    let allowed = gate.as_ref().is_some_and(|g| g.allow_fingerprint_mismatch);
    let base = match &options.baseline_ref {
        Some(reference) => baseline_at_ref(&root, &options.base, reference, say)?,
        None => RunResults::load(&options.base)?,
    };
    let head = RunResults::load(&options.head)?;
    let history = load_history(&options.history)?;
    let design = match history.is_empty() {
        true => Design::Files,
        false => Design::StoredBaseline,
    };
    let mut report = compare::compare_with_history(&base, &head, &history, &policy, design);
    let allowance = (options.allow_fingerprint_mismatch, allowed);
    check_environments(&base, &head, allowance, &mut report.warnings)?;
    apply_waivers(&root, &mut report)?;
    if options.full_evidence {
        report.evidence = Some(Evidence::from_runs(Some(&base), &head));
    } else {
        report.attach_bounded_evidence(Some(&base), &head);
    }
    Ok(Checked {
        report,
        base: Some(base),
        head,
        fail_on_inconclusive: gate.is_some_and(|g| g.fail_on_inconclusive),
    })
}
