//! Handlers for baselines by ref, fingerprint refusal, history, waivers, shards, merge and
//! diff-aware selection; `commands` calls into these so its own flow stays readable.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::baseline;
use crate::baseline::gitref;
use crate::baseline::history;
use crate::cli::{BaselineUpdateArgs, HistoryAction, HistoryArgs, MergeArgs, RunSelection};
use crate::compare::waivers;
use crate::config::LoadedConfig;
use crate::machine::envkey;
use crate::machine::fingerprint::Fingerprint;
use crate::model::exit::ExitStatus;
use crate::model::fsutil::Overwrite;
use crate::model::report::Report;
use crate::model::results::{RESULTS_SCHEMA_VERSION, RunResults};
use crate::model::units::{format_change, format_value};
use crate::plan::selection;
use crate::plan::shard::{self, Shard};
use crate::stats::changepoint::{self, Settings};

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
    let dir = tempfile::tempdir()?;
    let copy = dir.path().join("baseline.json");
    std::fs::write(&copy, bytes)?;
    RunResults::load(&copy).with_context(|| format!("cannot read the baseline {label}"))
}

/// Refuses incomparable environments (exit 2) unless allowed; adds the override's warning.
pub fn check_environments(
    base: &RunResults,
    head: &RunResults,
    allowance: Option<envkey::Allowance>,
    report: &mut Report,
) -> Result<()> {
    if let Some(allowance) =
        envkey::check_comparable(&base.environment, &head.environment, allowance)?
    {
        // The comparison wrote one line on the environments; say who allowed it there.
        let line = report
            .warnings
            .iter()
            .position(|w| w.starts_with(crate::compare::ENVIRONMENTS_DIFFER));
        let note = format!("compared anyway because {}", allowance.as_str());
        match line {
            Some(i) => {
                let rest = report.warnings.remove(i);
                report.warnings.insert(0, format!("{rest} ({note})"));
            }
            None => report.warnings.insert(0, note),
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
    let key = envkey::baseline_key(&Fingerprint::capture(&loaded.root));
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
    let mut parts = Vec::new();
    for f in &args.files {
        parts.push((f.display().to_string(), RunResults::load(f)?));
    }
    let merged = shard::merge(&parts)?;
    super::emit_results(&merged, args.output.as_deref(), args.pretty)?;
    eprintln!(
        "merged {} files: {} benchmarks",
        parts.len(),
        merged.benchmarks.len()
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
        None => envkey::baseline_key(&Fingerprint::capture(root)),
    };
    let records = history::load(root, &key)?;
    if records.is_empty() {
        let known = history::keys(root);
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
    let settings = Settings::default();
    let mut out = Vec::new();
    for (bench, metric) in history::metric_pairs(&records) {
        if args.bench.as_ref().is_some_and(|b| *b != bench)
            || args.metric.as_ref().is_some_and(|m| *m != metric)
        {
            continue;
        }
        let series = history::series(&records, &bench, &metric);
        let medians: Vec<f64> = series.iter().map(|s| s.summary.median).collect();
        let points = changepoint::e_divisive(&medians, &settings);
        out.push((bench, metric, series, points));
    }
    if out.is_empty() {
        bail!("no recorded metric matches --bench/--metric in the history of `{key}`");
    }
    if args.json {
        let value: Vec<_> = out
            .iter()
            .map(|(bench, metric, series, points)| {
                json!({
                    "benchmark": bench,
                    "metric": metric,
                    "unit": series.last().map(|s| s.unit.clone()).unwrap_or_default(),
                    "runs": series.iter().map(|s| json!({
                        "created": s.created, "commit": s.commit, "n": s.summary.n, "median": s.summary.median,
                    })).collect::<Vec<_>>(),
                    "change_points": points.iter().map(|p| json!({
                        "index": p.index,
                        "commit": series[p.index].commit,
                        "created": series[p.index].created,
                        "relative_change": p.relative_change,
                        "p_value": p.p_value,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"key": key, "metrics": value}))?
        );
        return Ok(ExitStatus::PASS);
    }
    println!(
        "history of {key}: {} runs (change points: E-divisive means, permutation test, {} shuffles, seed {:#x}, p ≤ {})",
        records.len(),
        settings.permutations,
        settings.seed,
        settings.max_p
    );
    for (bench, metric, series, points) in &out {
        println!("\n{bench} / {metric}: {} runs", series.len());
        for (i, s) in series.iter().enumerate() {
            let commit = s
                .commit
                .as_deref()
                .map(|c| &c[..12.min(c.len())])
                .unwrap_or("-");
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
            println!(
                "  {}  {commit}  {:>12}  n={}{mark}",
                s.created,
                format_value(s.summary.median, &s.unit),
                s.summary.n
            );
        }
        if points.is_empty() {
            println!("  no change point");
        }
    }
    Ok(ExitStatus::PASS)
}
