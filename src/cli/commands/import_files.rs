//! `kgate import`: files that profilers and harnesses wrote, read into results with the
//! configuration's metric policies, derived where a device is named, and written.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, bail};

use super::{emit_results, load_config};
use crate::cli::ImportArgs;
use crate::import;
use crate::model::exit::ExitStatus;
use crate::model::results::RunResults;
use crate::model::text::{escape_log, escape_terminal};
use crate::plan::{MetricPolicy, Overrides, Plan};

pub fn import_files(config_path: &Path, args: ImportArgs) -> Result<u8> {
    let plan = if config_path.exists() {
        let loaded = load_config(config_path)?;
        Some((
            Plan::new(&loaded.config, &Overrides::default())?,
            loaded.config.gate.threshold.0,
        ))
    } else {
        None
    };
    let (policies, threshold) = match &plan {
        Some((plan, threshold)) => (
            plan.benchmarks
                .iter()
                .map(|b| (b.name.clone(), b.metrics.clone()))
                .collect::<BTreeMap<String, MetricPolicy>>(),
            *threshold,
        ),
        None => (BTreeMap::new(), 0.05),
    };
    let importer = args.format;
    let mut ctx = import::ImportContext::new(import::Policies::new(
        policies,
        MetricPolicy::permissive(threshold),
    ));
    if importer.kernel_selection().is_some() {
        ctx.selection = import::trace::TraceSelection::new(
            &args.kernel,
            &args.kernel_glob,
            args.pid,
            args.tid,
        )?;
    } else if !(args.kernel.is_empty() && args.kernel_glob.is_empty())
        || args.pid.is_some()
        || args.tid.is_some()
    {
        bail!(
            "--kernel, --kernel-glob, --pid and --tid apply to {} imports only",
            import::kernel_selection_formats()
        );
    }
    if let Some(nvtx) = &args.nvtx {
        if importer.name() != "nsys" {
            bail!("--nvtx applies to nsys imports only");
        }
        ctx.nvtx = Some(
            regex::Regex::new(nvtx).map_err(|e| anyhow::anyhow!("invalid --nvtx pattern: {e}"))?,
        );
    }
    let (files, taken) = import::expand_folders(importer.name(), &args.files)?;
    for line in &taken {
        eprintln!("import: {}", escape_log(line));
    }
    let mut results = importer.import(&files, &ctx)?;
    let files: Vec<String> = args
        .files
        .iter()
        .map(|f| format!("`{}`", f.display()))
        .collect();
    let what = format!("the {} import of {}", importer.name(), files.join(", "));
    if let Some((plan, _)) = &plan {
        crate::derive::utilization::apply_to_import(&mut results, plan);
    }
    // Whether the import measured anything is asked once utilization is derived: counter
    // readings without kernels are measured by the figures derived over their span.
    let hint = counters_hint(importer, config_path, plan.as_ref().map(|(p, _)| p));
    report_import(&results);
    results
        .require_measurements_hinted(&what, Some(&hint))
        .map_err(anyhow::Error::msg)?;
    emit_results(&results, args.output.as_deref(), args.pretty)?;
    Ok(ExitStatus::PASS)
}

/// What would have turned an import's counter readings into measurements, for the refusal
/// of an import that holds readings and nothing else: a device profile, whose utilization is
/// derived over the readings' span, and for a trace, a kernel selection.
fn counters_hint(
    importer: &dyn import::Importer,
    config_path: &Path,
    plan: Option<&Plan>,
) -> String {
    let profile = plan.and_then(|p| p.benchmarks.iter().find_map(|b| b.device.as_ref()));
    let mut hint = match (plan, profile) {
        (_, Some(profile)) => format!(
            "device profile `{}` derived no figure from them over their span (a track needs two readings or more; the notes above name the counters it could not read)",
            profile.name
        ),
        (Some(_), None) => format!(
            "utilization over their span needs a device profile, and the configuration `{}` names none (add `device: NAME`; built in: {})",
            config_path.display(),
            crate::config::device::builtin_names().join(", ")
        ),
        (None, None) => format!(
            "utilization over their span needs a device profile: `device: NAME` in the configuration (`{}` does not exist; -c FILE names another; built in: {})",
            config_path.display(),
            crate::config::device::builtin_names().join(", ")
        ),
    };
    if importer.kernel_selection().is_some() {
        hint.push_str(
            "; or select the kernel events beside them to time and read the counters against, with --kernel REGEX (or --kernel-glob GLOB, --pid, --tid)",
        );
    }
    hint
}

/// Says on stderr what an import noted and what in it looks like a mistake.
fn report_import(results: &RunResults) {
    print_import_notes(results);
    for w in crate::plan::declared::unit_lookalikes(results) {
        eprintln!("warning: {}", escape_log(&w));
    }
}

/// Says on stderr what an import noted in the results (rows it skipped, spreads it kept, what
/// it selected), so that nothing it decided is seen only by whoever opens the JSON. A note that
/// several benchmarks share is printed once, with how many.
fn print_import_notes(results: &RunResults) {
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
        eprintln!("note: {whom}: {}", escape_log(note));
    }
}
