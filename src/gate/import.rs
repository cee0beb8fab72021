//! `kgate import` as a function: files that profilers and harnesses wrote, read into results
//! with the configuration's metric policies and derived where a device is named.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{GateError, Say};
use crate::import::{self, Importer};
use crate::model::results::RunResults;
use crate::model::text::{escape_log, escape_terminal};
use crate::plan::{BenchmarkPlan, MetricPolicy, Overrides, Plan};

/// What `kgate import` reads, and which kernels of a trace it takes.
#[derive(Debug)]
pub struct ImportOptions {
    pub format: &'static Importer,
    pub files: Vec<PathBuf>,
    pub kernel: Vec<String>,
    pub kernel_glob: Vec<String>,
    pub pid: Option<String>,
    pub tid: Option<String>,
    /// nsys: only the kernels launched inside an NVTX range matching this regex.
    pub nvtx: Option<String>,
}

/// Imports `options.files` under the configuration at `config` (where that file exists); says
/// what the import took, noted and looks like a mistake.
pub fn import(
    config: &Path,
    options: &ImportOptions,
    say: &mut Say<'_>,
) -> Result<RunResults, GateError> {
    let plan = match config.exists() {
        true => {
            let loaded = crate::config::load(config)?;
            let plan = Plan::new(&loaded.config, &Overrides::default())?;
            Some((plan, loaded.config.gate.threshold.0))
        }
        false => None,
    };
    let (policies, threshold) = match &plan {
        Some((plan, threshold)) => {
            let policy = |b: &BenchmarkPlan| (b.name.clone(), b.metrics.clone());
            (plan.benchmarks.iter().map(policy).collect(), *threshold)
        }
        None => (BTreeMap::new(), 0.05),
    };
    let importer = options.format;
    let policies = import::Policies::new(policies, MetricPolicy::permissive(threshold));
    let mut ctx = import::ImportContext::new(policies);
    let o = options;
    if importer.selection.is_some() {
        let (pid, tid) = (o.pid.clone(), o.tid.clone());
        ctx.selection = import::trace::TraceSelection::new(&o.kernel, &o.kernel_glob, pid, tid)?;
    } else if !(o.kernel.is_empty() && o.kernel_glob.is_empty())
        || o.pid.is_some()
        || o.tid.is_some()
    {
        return Err(GateError::Invalid(format!(
            "--kernel, --kernel-glob, --pid and --tid apply to {} imports only",
            import::kernel_selection_formats()
        )));
    }
    if let Some(nvtx) = &options.nvtx {
        if importer.name != "nsys" {
            return Err(GateError::Invalid(
                "--nvtx applies to nsys imports only".into(),
            ));
        }
        let invalid = |e: regex::Error| GateError::Invalid(format!("invalid --nvtx pattern: {e}"));
        ctx.nvtx = Some(regex::Regex::new(nvtx).map_err(invalid)?);
    }
    let (files, taken) = import::expand_folders(importer.name, &options.files)?;
    for line in &taken {
        say(&format!("import: {}", escape_log(line)));
    }
    let mut results = importer.import(&files, &ctx)?;
    let files: Vec<String> = options
        .files
        .iter()
        .map(|f| format!("`{}`", f.display()))
        .collect();
    let what = format!("the {} import of {}", importer.name, files.join(", "));
    if let Some((plan, _)) = &plan {
        crate::derive::utilization::apply_to_import(&mut results, plan);
    }
    // Whether the import measured anything is asked once utilization is derived: counter
    // readings without kernels are measured by the figures derived over their span.
    let hint = counters_hint(importer, config, plan.as_ref().map(|(p, _)| p));
    say_notes(&results, say);
    for w in crate::plan::declared::unit_lookalikes(&results) {
        say(&format!("warning: {}", escape_log(&w)));
    }
    let measured = results.require_measurements_hinted(&what, Some(&hint));
    measured.map_err(GateError::Invalid)?;
    Ok(results)
}

/// What would have turned an import's counter readings into measurements, for the refusal
/// of an import that holds readings and nothing else: a device profile, whose utilization is
/// derived over the readings' span, and for a trace, a kernel selection.
fn counters_hint(importer: &Importer, config: &Path, plan: Option<&Plan>) -> String {
    let profile = plan.and_then(|p| p.benchmarks.iter().find_map(|b| b.device.as_ref()));
    let builtin = crate::config::device::builtin_names().join(", ");
    let mut hint = match (plan, profile) {
        (_, Some(profile)) => format!(
            "device profile `{}` derived no figure from them over their span (a track needs two readings or more; the notes above name the counters it could not read)",
            profile.name
        ),
        (Some(_), None) => format!(
            "utilization over their span needs a device profile, and the configuration `{}` names none (add `device: NAME`; built in: {builtin})",
            config.display(),
        ),
        (None, None) => format!(
            "utilization over their span needs a device profile: `device: NAME` in the configuration (`{}` does not exist; -c FILE names another; built in: {builtin})",
            config.display(),
        ),
    };
    if importer.selection.is_some() {
        hint.push_str(
            "; or select the kernel events beside them to time and read the counters against, with --kernel REGEX (or --kernel-glob GLOB, --pid, --tid)",
        );
    }
    hint
}

/// Says what an import noted in the results (rows it skipped, spreads it kept, what it
/// selected), so that nothing it decided is seen only by whoever opens the JSON. A note that
/// several benchmarks share is said once, with how many.
fn say_notes(results: &RunResults, say: &mut Say<'_>) {
    let mut notes: Vec<(&str, Vec<&str>)> = Vec::new();
    for b in &results.benchmarks {
        for note in &b.provenance.notes {
            match notes.iter_mut().find(|(n, _)| *n == note.as_str()) {
                Some((_, names)) => names.push(&b.name),
                None => notes.push((note, vec![&b.name])),
            }
        }
    }
    for (note, names) in notes {
        let whom = match names.as_slice() {
            [one] => format!("`{}`", escape_terminal(one)),
            many => format!("{} benchmarks", many.len()),
        };
        say(&format!("note: {whom}: {}", escape_log(note)));
    }
}
