//! `kgate import`: results from files written where kgate did not run the benchmark.
//!
//! Offline import lets the gate work where a profiler or harness ran elsewhere (a GPU box, a
//! cluster job). One submodule per format; each ends in the same [`Collector`] as a live run,
//! so units, sources and gate rules are resolved identically.
//!
//! [`Collector`]: crate::capture::Collector

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::protocol::ProtocolError;
use crate::model::results::{BenchmarkResult, RESULTS_SCHEMA_VERSION, RunResults};
use crate::plan::MetricPolicy;

/// [`content`] of a `format!` message: `content!(path, "has no `{key}`")`. Defined before the
/// format modules, which use it by its textual scope.
macro_rules! content {
    ($path:expr, $($message:tt)+) => {
        $crate::import::content($path, format!($($message)+))
    };
}

pub mod builder;
pub mod counters;
pub mod criterion;
pub mod cutlass;
pub mod gbench;
pub mod hyperfine;
mod input;
pub mod kernelbench;
pub mod ncu;
pub mod nsys;
pub mod nvbench;
pub mod protocol;
pub mod proton;
pub mod pytest_benchmark;
pub mod rocpd;
pub mod rocprof;
pub mod trace;

/// Import errors.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read but its content is wrong; `message` says where and how to fix it.
    #[error("`{path}`: {message}")]
    Content { path: PathBuf, message: String },
}

/// [`ImportError::Content`] of the file at `path`.
pub(crate) fn content(path: &Path, message: String) -> ImportError {
    ImportError::Content {
        path: path.to_path_buf(),
        message,
    }
}

/// [`ImportError::Read`] of the file at `path`, for `map_err`.
pub(crate) fn read_error(path: &Path) -> impl Fn(std::io::Error) -> ImportError + Copy + '_ {
    move |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// Metric settings for imported benchmarks: from the configuration by benchmark name, else a
/// fallback in which every metric gates.
#[derive(Debug, Clone)]
pub struct Policies {
    by_benchmark: BTreeMap<String, MetricPolicy>,
    fallback: MetricPolicy,
}

impl Policies {
    pub fn new(by_benchmark: BTreeMap<String, MetricPolicy>, fallback: MetricPolicy) -> Policies {
        Policies {
            by_benchmark,
            fallback,
        }
    }

    /// The policy for a benchmark name.
    pub fn for_benchmark(&self, name: &str) -> &MetricPolicy {
        self.by_benchmark.get(name).unwrap_or(&self.fallback)
    }

    /// No configuration: every metric gates at 5 %.
    #[cfg(test)]
    pub(crate) fn permissive() -> Policies {
        Policies::new(BTreeMap::new(), MetricPolicy::permissive(0.05))
    }
}

/// One import format: its name on the command line (`kgate import NAME`, part of DESIGN.md's
/// contract), a line of help without a final period (clap's style), for formats that take
/// `--kernel`, `--kernel-glob`, `--pid` and `--tid` what the last two name in their files
/// (other formats refuse those options), and the import itself, which reads the files (each
/// one repetition, unless the format says otherwise) into results. Every format is a static in
/// its own submodule, listed once in [`IMPORTERS`]; the command line's format list and its
/// texts about kernel selection come from that list.
pub struct Importer {
    pub name: &'static str,
    pub help: &'static str,
    pub selection: Option<SelectionScope>,
    pub import: fn(&[PathBuf], &ImportContext) -> Result<RunResults, ImportError>,
}

impl Importer {
    /// Reads the files into results.
    pub fn import(
        &self,
        files: &[PathBuf],
        ctx: &ImportContext,
    ) -> Result<RunResults, ImportError> {
        (self.import)(files, ctx)
    }
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// What `--pid` and `--tid` choose in a format's files, in words for the help (`only this
/// process (pid or process name)`).
#[derive(Debug, Clone, Copy)]
pub struct SelectionScope {
    pub pid: &'static str,
    pub tid: &'static str,
}

/// Every import format, in DESIGN.md's order. A new format is a submodule (its `mod` line
/// above) with an [`Importer`] static, and its line here.
pub static IMPORTERS: &[&Importer] = &[
    &protocol::PROTOCOL,
    &ncu::NCU,
    &nsys::NSYS,
    &rocprof::ROCPROF,
    &rocpd::ROCPD,
    &trace::chrome::CHROME_TRACE,
    &trace::xplane::XPLANE,
    &proton::PROTON,
    &gbench::GBENCH,
    &nvbench::NVBENCH,
    &pytest_benchmark::PYTEST_BENCHMARK,
    &hyperfine::HYPERFINE,
    &criterion::CRITERION,
    &cutlass::CUTLASS,
    &kernelbench::KERNELBENCH,
    &counters::PERF_STAT,
    &counters::CALLGRIND,
    &counters::CACHEGRIND,
];

/// The files of each format that a folder given to `kgate import` is searched for, as globs
/// on the path below the folder (`*` stays within one folder, `**` crosses folders). A tool's
/// output folder (`jax.profiler.trace`'s log directory, `target/criterion`, a folder of
/// rocprof or ncu CSVs) can then be given as it is.
#[rustfmt::skip]
pub static FOLDER_FILES: &[(&str, &[&str])] = &[
    ("protocol", &["**/*.jsonl", "**/*.ndjson"]),
    ("ncu", &["**/*.csv"]),
    ("nsys", &["**/*.sqlite"]),
    ("rocprof", &["**/*.csv"]),
    ("rocpd", &["**/*.db"]),
    ("chrome-trace", &["**/*.trace.json", "**/*.trace.json.gz",
                       "**/*.pt.trace.json", "**/*.pt.trace.json.gz"]),
    ("xplane", &["**/*.xplane.pb"]),
    ("proton", &["**/*.hatchet"]),
    ("gbench", &["**/*.json"]),
    ("nvbench", &["**/*.json"]),
    ("pytest-benchmark", &["**/*.json"]),
    ("hyperfine", &["**/*.json"]),
    // A `new` folder itself, or every benchmark's `new` below `target/criterion`.
    ("criterion", &["estimates.json", "**/new/estimates.json"]),
    ("cutlass", &["**/*.csv"]),
    ("kernelbench", &["**/eval_results.json", "**/baseline_time_*.json"]),
    ("perf-stat", &["**/*.txt", "**/*.log", "**/*.perf"]),
    ("callgrind", &["**/callgrind.out*", "**/*.callgrind"]),
    ("cachegrind", &["**/cachegrind.out*", "**/*.cgout"]),
];

/// The inputs of an import with every folder replaced by the files of the format inside it
/// (sorted by path; each file one repetition, as if named on the command line), and a line per
/// folder saying what was taken. A folder with no such file is refused, naming what was looked
/// for.
pub fn expand_folders(
    format: &str,
    inputs: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<String>), ImportError> {
    let patterns = FOLDER_FILES
        .iter()
        .find(|(name, _)| *name == format)
        .map(|(_, p)| *p)
        .unwrap_or(&[]);
    let mut builder = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::GlobBuilder::new(p).literal_separator(true).build();
        builder.add(glob.expect("the folder patterns are valid globs"));
    }
    let set = builder
        .build()
        .expect("the folder patterns are valid globs");
    let mut files = Vec::new();
    let mut said = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let mut found = Vec::new();
        for entry in walkdir::WalkDir::new(input).sort_by_file_name() {
            let entry = entry.map_err(|e| ImportError::Read {
                path: e.path().unwrap_or(input).to_path_buf(),
                source: e.into(),
            })?;
            if !entry.file_type().is_file() {
                continue;
            }
            let relative = entry.path().strip_prefix(input).unwrap_or(entry.path());
            if set.is_match(relative) {
                found.push(entry.path().to_path_buf());
            }
        }
        if found.is_empty() {
            return Err(content!(
                input,
                "is a folder with no {format} files in it (looked for {}); name the files, or the folder the tool wrote them to",
                patterns.join(", ")
            ));
        }
        let names: Vec<String> = found
            .iter()
            .take(5)
            .map(|f| f.strip_prefix(input).unwrap_or(f).display().to_string())
            .collect();
        let more = match found.len() - names.len() {
            0 => String::new(),
            more => format!(" and {more} more"),
        };
        let every = (found.len() > 1).then_some(", every run in the folder");
        let every = every.unwrap_or_default();
        let took = crate::model::text::count(found.len(), "file", "files");
        let (shown, names) = (input.display(), names.join(", "));
        said.push(format!(
            "`{shown}`: took {took} (each one repetition){every}: {names}{more}"
        ));
        files.extend(found);
    }
    Ok((files, said))
}

/// The importer of a format name.
pub fn importer(name: &str) -> Option<&'static Importer> {
    IMPORTERS.iter().copied().find(|i| i.name == name)
}

/// The formats that take a kernel selection, with what their `--pid` and `--tid` choose.
pub fn taking_kernel_selection() -> impl Iterator<Item = (&'static str, SelectionScope)> {
    IMPORTERS
        .iter()
        .filter_map(|i| Some((i.name, i.selection?)))
}

/// The formats that take a kernel selection, in words: `chrome-trace and xplane`.
pub fn kernel_selection_formats() -> String {
    let names: Vec<&str> = taking_kernel_selection().map(|(name, _)| name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

/// What an import is given besides its files.
#[derive(Debug, Clone)]
pub struct ImportContext {
    /// Metric settings by benchmark name.
    pub policies: Policies,
    /// Which events are kernels, for formats that take a kernel selection (the default
    /// selects each format's own default).
    pub selection: trace::TraceSelection,
    /// `--nvtx`: for `nsys`, only the kernels launched inside an NVTX range whose name matches.
    pub nvtx: Option<regex::Regex>,
}

impl ImportContext {
    /// A context with the default kernel selection.
    pub fn new(policies: Policies) -> ImportContext {
        ImportContext {
            policies,
            selection: trace::TraceSelection::default(),
            nvtx: None,
        }
    }
}

/// Wraps imported benchmarks in a results file whose environment is the device the files
/// name ([`crate::capture::device::Device::environment`]), never this machine's accelerator.
pub fn run_results(
    benchmarks: Vec<BenchmarkResult>,
    device: &crate::capture::device::Device,
    host: crate::machine::fingerprint::Fingerprint,
) -> RunResults {
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: env!("CARGO_PKG_VERSION").to_string(),
        created: crate::model::results::now_rfc3339(),
        environment: device.environment(host),
        benchmarks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format names are a contract: the registry holds exactly these, once each.
    #[test]
    fn the_registry_holds_the_documented_formats_once_each() {
        let names: Vec<&str> = IMPORTERS.iter().map(|i| i.name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let documented = "protocol ncu nsys rocprof rocpd chrome-trace xplane proton gbench nvbench \
                          pytest-benchmark hyperfine criterion cutlass kernelbench perf-stat \
                          callgrind cachegrind";
        assert_eq!(names, documented.split_whitespace().collect::<Vec<_>>());
        assert!(self::importer("chrome_trace").is_none());
        for importer in IMPORTERS {
            let help = importer.help;
            let one_line = !help.is_empty() && !help.ends_with('.') && !help.contains('\n');
            assert!(one_line, "{}: one line of help", importer.name);
            let found = self::importer(importer.name).map(|i| i.name);
            assert_eq!(found, Some(importer.name));
            assert!(
                FOLDER_FILES
                    .iter()
                    .any(|(name, p)| *name == importer.name && !p.is_empty()),
                "{}: no folder patterns",
                importer.name
            );
        }
    }

    #[test]
    fn the_trace_formats_take_a_kernel_selection() {
        assert_eq!(kernel_selection_formats(), "chrome-trace and xplane");
    }
}
