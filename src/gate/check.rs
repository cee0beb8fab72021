//! `kgate check` as a function: the suite run (beside the base revision, interleaved, with
//! `--against`) and compared, waivers applied, regressions profiled, the run recorded; the
//! report comes back as a value for the CLI to write and for `kgate ci` to post.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{
    Checked, GateError, Say, apply_waivers, baseline_at_ref, check_environments, load_history,
    record, run_suite, warn_declared,
};
use crate::baseline::{self, gitref, history};
use crate::compare::{self, ComparePolicy, adjust};
use crate::config::{self, LoadedConfig};
use crate::model::evidence::Evidence;
use crate::model::report::{Design, Report};
use crate::model::results::RunResults;
use crate::model::text::{count, escape_log, escape_terminal};
use crate::plan::{Overrides, Plan, selection};
use crate::run::progress::Progress;
use crate::run::runner::{self, Revision};
use crate::run::worktree::Worktree;

/// The revision `--against` (or `--against-tip`) measures interleaved with the work tree.
#[derive(Debug, Clone)]
pub struct Against {
    pub reference: String,
    /// REF's tip itself rather than its merge-base with HEAD.
    pub tip: bool,
}

/// What `kgate check` runs and compares against.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    pub selection: Overrides,
    /// The stored baseline: a name in `.kgate/baselines/` or a results file.
    pub baseline: String,
    pub against: Option<Against>,
    /// Read the baseline file as committed at the merge-base of this reference and HEAD.
    pub baseline_ref: Option<String>,
    pub allow_fingerprint_mismatch: bool,
    /// Run only the benchmarks whose `paths` match a file changed since this reference.
    pub changed_since: Option<String>,
    /// Append the candidate's results, with the verdicts, to the history.
    pub record: bool,
    /// Measure benchmarks whose identity digest is the same on both sides too.
    pub measure_identical: bool,
    /// Earlier jobs' results: the prediction-interval model for noisy metrics.
    pub history: Vec<PathBuf>,
    /// Profile regressed benchmarks under a deeper capture (also `gate.on_regression`).
    pub profile_regressions: bool,
    /// Keep every sample in the report's evidence.
    pub full_evidence: bool,
}

/// Runs the suite (and the base revision's, interleaved, with `--against`) and compares.
pub fn check(
    loaded: &LoadedConfig,
    options: &CheckOptions,
    progress: &mut dyn Progress,
    say: &mut Say<'_>,
) -> Result<Checked, GateError> {
    let policy = ComparePolicy::from(&loaded.config.gate);
    // The base revision's work tree, kept for profiling the base side of a regression.
    let mut base_tree: Option<Worktree> = None;
    let (mut report, base, head) = match &options.against {
        Some(against) => {
            crate::github::refuse_untrusted_run(&loaded.root)?;
            let mut plan = Plan::new(&loaded.config, &options.selection)?;
            let (commit, what) = against_commit(&loaded.root, &against.reference, against.tip)?;
            let tree = Worktree::checkout(&loaded.root, &commit)?;
            say(&format!(
                "measuring {what} ({}) interleaved with the work tree",
                &tree.commit[..12.min(tree.commit.len())]
            ));
            let removed = match declared_at_base(loaded, &options.selection, &tree.root, &what, say)
            {
                Some(base_plan) => {
                    let declared: HashSet<String> = base_plan
                        .benchmarks
                        .iter()
                        .map(|b| b.name.clone())
                        .collect();
                    for b in plan.benchmarks.iter_mut() {
                        b.head_only = !declared.contains(&b.name);
                        // The base's own declaration enters its side's identity digest, so a
                        // change to the command or the settings is always measured.
                        if b.identity.is_some() && !options.measure_identical {
                            b.base_description = base_plan
                                .benchmarks
                                .iter()
                                .find(|x| x.name == b.name && x.identity.is_some())
                                .map(|x| x.description());
                        }
                    }
                    // Only a run of the whole suite can tell that one is gone.
                    let mut removed: Vec<String> = declared
                        .into_iter()
                        .filter(|name| !loaded.config.benchmarks.iter().any(|b| &b.name == name))
                        .collect();
                    if !options.selection.only.is_empty() {
                        removed.clear();
                    }
                    removed
                }
                None => Vec::new(),
            };
            let side = |root: &PathBuf, label| Revision {
                root: root.clone(),
                label: Some(label),
            };
            let (base_rev, head_rev) = (side(&tree.root, "base"), side(&loaded.root, "head"));
            let adaptive = runner::Adaptive {
                policy: policy.clone(),
                time_budget: loaded.config.gate.time_budget.map(|d| d.0),
            };
            let (base, mut head) = runner::run_interleaved_adaptive(
                &plan,
                &base_rev,
                &head_rev,
                progress,
                Some(&adaptive),
            )?;
            warn_declared(&plan, &mut head, say);
            let mut report = compare::compare(&base, &head, &policy, Design::Interleaved);
            if !removed.is_empty() {
                adjust::mark_removed(&mut report, &removed);
            }
            report.evidence = Some(Evidence::from_runs(Some(&base), &head));
            base_tree = Some(tree);
            (report, Some(base), head)
        }
        None => {
            let (report, head) = against_stored(loaded, options, &policy, progress, say)?;
            (report, None, head)
        }
    };
    apply_waivers(&loaded.root, &mut report)?;
    if options.profile_regressions
        || loaded.config.gate.on_regression == config::OnRegression::Profile
    {
        profile_regressions(loaded, options, base_tree.as_ref(), &mut report, say)?;
    }
    if options.record {
        record(&loaded.root, &head, Some(&report), say)?;
    }
    if !options.full_evidence {
        report.bound_evidence();
    }
    Ok(Checked {
        report,
        base,
        head,
        fail_on_inconclusive: loaded.config.gate.fail_on_inconclusive,
    })
}

/// The suite run and compared against a stored baseline (or none, on a first run).
fn against_stored(
    loaded: &LoadedConfig,
    options: &CheckOptions,
    policy: &ComparePolicy,
    progress: &mut dyn Progress,
    say: &mut Say<'_>,
) -> Result<(Report, RunResults), GateError> {
    let path = baseline::resolve(&loaded.root, &options.baseline)?;
    let (selection, skipped) = match &options.changed_since {
        Some(reference) => {
            let (run, skipped) = changed_selection(loaded, &options.selection, reference, say)?;
            let selection = (!run.is_empty()).then(|| Overrides {
                only: run,
                ..options.selection.clone()
            });
            (selection, skipped)
        }
        None => (Some(options.selection.clone()), Vec::new()),
    };
    if options.baseline_ref.is_none()
        && !path.exists()
        && options.baseline != baseline::DEFAULT_NAME
    {
        // A name someone typed that is not there: a typo, most likely; said before the
        // suite runs. A missing default baseline is a first run, measured below.
        let (name, listing) = (&options.baseline, baseline::listing(&loaded.root));
        return Err(GateError::Invalid(format!(
            "no baseline `{name}` at {}; {listing}. Store it with `kgate baseline save --name {name}`",
            path.display()
        )));
    }
    if options.baseline_ref.is_none() && !path.exists() {
        let head = run_suite(loaded, selection.as_ref(), progress, say)?;
        let reason = format!(
            "no baseline at {}; store one with `kgate baseline save`, or compare against a revision with `kgate check --against REF`",
            path.display()
        );
        let mut report = compare::no_baseline(&head, policy, reason);
        if !skipped.is_empty() {
            let why = "skipped: not affected by the changed files";
            adjust::mark_skipped(&mut report, &skipped, None, why);
        }
        report.evidence = Some(Evidence::from_runs(None, &head));
        return Ok((report, head));
    }
    let base = match &options.baseline_ref {
        Some(reference) => baseline_at_ref(&loaded.root, &path, reference, say)?,
        None => {
            RunResults::load(&path).map_err(super::within("cannot read the stored baseline"))?
        }
    };
    let history = load_history(&options.history)?;
    let head = run_suite(loaded, selection.as_ref(), progress, say)?;
    // Earlier jobs for the prediction-interval model: the files given with --history,
    // else the history store's records of this runner class (kept by --record): the
    // key `--record` files them under, whichever benchmarks this run selected.
    let key = crate::machine::envkey::class_key(&head.environment);
    let records = history::load(&loaded.root, &key)?;
    let (medians, off_level) = if history.is_empty() {
        history::job_medians(&records)
    } else {
        let medians = compare::job_medians(std::iter::once(&base).chain(&history));
        (medians, 0)
    };
    let mut report =
        compare::compare_with_job_medians(&base, &head, &medians, policy, Design::StoredBaseline);
    if off_level > 0 {
        let jobs = count(off_level, "recorded job", "recorded jobs");
        let is = if off_level == 1 { "is" } else { "are" };
        report.warnings.push(format!(
            "{jobs} in which the gate found a metric regressed or improved {is} left out of that metric's prediction interval: off the baseline's level, such a job cannot describe it"
        ));
    }
    let allowance = (
        options.allow_fingerprint_mismatch,
        loaded.config.gate.allow_fingerprint_mismatch,
    );
    check_environments(&base, &head, allowance, &mut report.warnings)?;
    if !skipped.is_empty() {
        let why = format!(
            "skipped: no file changed since {} matches its `paths`",
            options.changed_since.as_deref().unwrap_or("the reference")
        );
        adjust::mark_skipped(&mut report, &skipped, Some(&base), &why);
    }
    // The baseline's other benchmarks were not asked for: not run, not missing.
    let unselected: Vec<String> = base
        .benchmarks
        .iter()
        .map(|b| &b.name)
        .filter(|name| !options.selection.only.is_empty() && !options.selection.only.contains(name))
        .filter(|name| loaded.config.benchmarks.iter().any(|b| &b.name == *name))
        .cloned()
        .collect();
    if !unselected.is_empty() {
        let why = "skipped: not selected (`--bench`)";
        adjust::mark_skipped(&mut report, &unselected, Some(&base), why);
    }
    let mut evidence = Evidence::from_runs(Some(&base), &head);
    history::add_to_evidence(&mut evidence, &records);
    report.evidence = Some(evidence);
    Ok((report, head))
}

/// Benchmarks to run and to skip for `--changed-since`.
fn changed_selection(
    loaded: &LoadedConfig,
    selection: &Overrides,
    reference: &str,
    say: &mut Say<'_>,
) -> Result<(Vec<String>, Vec<String>), GateError> {
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
    let wanted: Vec<_> = super::selected(loaded, selection).cloned().collect();
    let (run, skipped) = selection::affected(&wanted, &local, config_changed)?;
    let files = count(changed.len(), "file", "files");
    let (running, skipping) = (count(run.len(), "benchmark", "benchmarks"), skipped.len());
    let line =
        format!("changed since {reference}: {files}; running {running}, skipping {skipping}");
    say(&line);
    Ok((run, skipped))
}

/// The plan of the base revision's configuration (its file at the same place in the base's
/// tree, `base_root`), with this run's overrides but every benchmark: a benchmark it does not
/// declare is measured on the head side only and reported `new`, and the declaration of one it
/// does enters the base side's identity digest. None, with a warning, where that file cannot
/// be read as a configuration (every benchmark is then measured on both sides, and one that
/// fails at the base is an error).
fn declared_at_base(
    loaded: &LoadedConfig,
    selection: &Overrides,
    base_root: &Path,
    what: &str,
    say: &mut Say<'_>,
) -> Option<Plan> {
    let file = base_root.join(loaded.path.file_name()?);
    if !file.exists() {
        say(&format!(
            "note: {what} has no `{}`: it declares no benchmark, so every benchmark is new and none gates",
            escape_terminal(&file.file_name()?.to_string_lossy())
        ));
        return Some(Plan {
            builds: Vec::new(),
            benchmarks: Vec::new(),
            policy: loaded.config.gate.clone(),
        });
    }
    let every = Overrides {
        only: Vec::new(),
        ..selection.clone()
    };
    let (doing, e) = match config::load(&file).map(|base| Plan::new(&base.config, &every)) {
        Ok(Ok(plan)) => return Some(plan),
        Ok(Err(e)) => ("planned", e.to_string()),
        Err(e) => ("read", e.to_string()),
    };
    say(&format!(
        "warning: the configuration of {what} cannot be {doing} ({}); every benchmark is measured on both sides",
        escape_log(&e)
    ));
    None
}

/// Re-runs each regressed benchmark under a deeper capture on each side that can be re-run
/// (see `crate::profile`) and attaches what changed to the report.
fn profile_regressions(
    loaded: &LoadedConfig,
    options: &CheckOptions,
    base_tree: Option<&Worktree>,
    report: &mut Report,
    say: &mut Say<'_>,
) -> Result<(), GateError> {
    let regressed = report.summary.regressed;
    if regressed == 0 {
        return Ok(());
    }
    let plan = Plan::new(&loaded.config, &options.selection)?;
    let budget = loaded
        .config
        .gate
        .profile_budget
        .map_or(config::DEFAULT_PROFILE_BUDGET, |d| d.0);
    say(&format!(
        "profiling {} under a deeper capture",
        count(regressed, "regressed benchmark", "regressed benchmarks")
    ));
    let sides = crate::profile::Sides {
        base: base_tree.map(|t| t.root.as_path()),
        head: &loaded.root,
    };
    let profiled = crate::profile::profile_regressions(report, &plan, &sides, budget);
    if profiled < regressed {
        say(&format!(
            "profiled {profiled} of {regressed}; the report's profile notes say why the others were not"
        ));
    }
    Ok(())
}

/// The commit `check --against REF` measures, and how to name it: the merge-base of REF and
/// HEAD (what the branch started from, so that commits REF gained since do not count as the
/// branch's changes), or REF itself with `--against-tip`. When HEAD contains REF (`HEAD`,
/// `HEAD~1`, an ancestor branch) the two are the same commit.
fn against_commit(root: &Path, reference: &str, tip: bool) -> Result<(String, String), GateError> {
    let top = gitref::toplevel(root)?;
    let commit = gitref::resolve(&top, reference)?;
    if tip {
        return Ok((commit, reference.to_string()));
    }
    let base = gitref::merge_base(&top, reference)?;
    let what = if base == commit {
        reference.to_string()
    } else {
        format!("the merge-base of {reference} and HEAD")
    };
    Ok((base, what))
}
