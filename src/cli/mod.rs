//! Command-line flags, parsed into plain data (clap derive) and nothing else.
//!
//! Turning flags into a plan and running it is `commands`' job; keeping the two apart (as
//! ripgrep and bencher do) lets the library be used and tested without a command line.

pub mod commands;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use crate::github::body::CommentPolicy;
use crate::import::{self, IMPORTERS, Importer};
use crate::render::Format;

/// `--format`'s names for the library's report formats: the flag's words live here, with the
/// rest of the command line, not in the renderers.
impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Format::Table,
            Format::Markdown,
            Format::Json,
            Format::Html,
            Format::Junit,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Format::Table => PossibleValue::new("table"),
            Format::Markdown => PossibleValue::new("markdown"),
            Format::Json => PossibleValue::new("json"),
            Format::Html => {
                PossibleValue::new("html").help("A self-contained HTML page with SVG plots")
            }
            Format::Junit => {
                PossibleValue::new("junit").help("JUnit XML: a test case per benchmark and metric")
            }
        })
    }
}

/// `--comment`'s names for the comment policies.
impl clap::ValueEnum for CommentPolicy {
    fn value_variants<'a>() -> &'a [Self] {
        &CommentPolicy::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.as_str());
        Some(match self {
            CommentPolicy::Always => value.help("Create or update the comment on every run"),
            CommentPolicy::OnChange => value.help(
                "Create it when a benchmark changed (failed, regressed, improved, new, missing or inconclusive); keep an existing one up to date",
            ),
            CommentPolicy::OnRegression => {
                value.help("Create it when something regressed; keep an existing one up to date")
            }
            CommentPolicy::Never => value.help("Never comment"),
        })
    }
}

/// kgate: catch performance regressions in compute kernels before they merge.
#[derive(Debug, Parser)]
#[command(name = "kgate", version, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 pass, 1 regression, 2 error, 3 inconclusive (when the policy fails on it), 4 no baseline."
)]
pub struct Cli {
    /// Configuration file.
    #[arg(
        short,
        long,
        global = true,
        default_value = "kgate.yaml",
        value_name = "FILE"
    )]
    pub config: PathBuf,
    #[command(subcommand)]
    pub command: Commands,
}

#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Run the benchmarks and write their results (JSON).
    Run(RunArgs),
    /// Run the benchmarks and compare against the stored baseline (or, with --against, a git
    /// revision measured interleaved in the same job).
    Check(CheckArgs),
    /// Compare two result files.
    Compare(CompareArgs),
    /// Build results from files produced elsewhere.
    #[command(
        after_long_help = "Correctness: where a format records a check of the kernel's answers (the protocol's `{\"correct\": false, \"detail\": …}` line, CUTLASS's `Disposition`, KernelBench's `correctness`), each benchmark's results carry it; compared, a candidate that failed its check is `incorrect` whatever its speed, and the run exits 1. A build that failed (KernelBench `compiled: false`, a CUTLASS `Status` other than `success`) is `failed`, exit 2.\n\nSummaries: nvbench and KernelBench store a mean with its standard deviation and count, not samples; compared, such a metric is tested with Welch's test on those summaries. Formats: docs/accelerators.md."
    )]
    Import(ImportArgs),
    /// Render a stored JSON report again in another format, without re-running anything.
    Report(RenderArgs),
    /// Manage stored baselines.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Join shard results (`kgate run --shard i/n`) into one results file.
    Merge(MergeArgs),
    /// Show each metric's history and the change points found in it, or record results.
    History(HistoryArgs),
    /// Write a commented starter configuration.
    Init(InitArgs),
    /// Check a configuration file and report the first problem.
    Validate,
    /// `check` for GitHub Actions: job summary, outputs, annotations, then the sticky PR
    /// comment and check run (docs/github.md); in GitLab CI the JUnit report and the sticky
    /// merge-request note (docs/gitlab.md).
    Ci(CiArgs),
    /// Post a JSON report (from `check --format json` or `ci`) as the sticky PR comment and
    /// check run, or in GitLab CI as the merge request's sticky note: the step that posts,
    /// apart from the one that ran the benchmarks.
    Comment(CommentArgs),
    /// Find the first commit between GOOD and BAD at which the benchmarks regress: each step
    /// measured interleaved against GOOD, as `check --against` (README: "Find the commit that
    /// regressed").
    Bisect(BisectArgs),
    /// Measure this machine's noise with A/A runs (the work tree interleaved against itself)
    /// and suggest a threshold and a repetition count.
    Calibrate(CalibrateArgs),
}

/// Output formats of `kgate calibrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CalibrateFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub selection: RunSelection,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CalibrateFormat::Table)]
    pub format: CalibrateFormat,
    /// Write the calibration here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Output formats of `kgate bisect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BisectFormat {
    Table,
    Markdown,
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 1 found (a culprit commit or range named), 0 not reproduced (BAD does not regress against GOOD), 3 undecided (BAD against GOOD stayed inconclusive), 2 error."
)]
pub struct BisectArgs {
    /// A commit (branch, tag, hash) at which the benchmarks were fine.
    pub good: String,
    /// A later commit at which they regressed; GOOD must be on its first-parent history.
    pub bad: String,
    #[command(flatten)]
    pub selection: RunSelection,
    /// Output format.
    #[arg(long, value_enum, default_value_t = BisectFormat::Table)]
    pub format: BisectFormat,
    /// Write the result here instead of to stdout (the summary line still goes to stderr).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the JSON report here, whatever --format says (for CI: Markdown for people,
    /// JSON for the script that files the issue).
    #[arg(long, value_name = "FILE")]
    pub save_report: Option<PathBuf>,
}

/// Flags shared by everything that runs benchmarks.
#[derive(Debug, Clone, Args)]
pub struct RunSelection {
    /// Run only this benchmark (repeatable).
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: Vec<String>,
    /// Override every benchmark's measured repetitions.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: Option<u32>,
    /// Override every benchmark's warm-up count.
    #[arg(long, value_name = "N")]
    pub warmup: Option<u32>,
    /// Skip the build steps.
    #[arg(long)]
    pub no_build: bool,
    /// No progress output on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub selection: RunSelection,
    /// Write the results here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Indent the JSON for people (the default is compact: one line, a fraction of the size).
    #[arg(long)]
    pub pretty: bool,
    /// Run only shard i of n (1-based, such as `2/4`); benchmarks are assigned stably and
    /// balanced by their recorded durations.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::plan::shard::Shard>,
    /// Also append the results to the history under `.kgate/history/`.
    #[arg(long)]
    pub record: bool,
}

/// Report output flags.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the report here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with status 3 when a gating metric is inconclusive (overrides the configuration).
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// How much of a report is shown.
#[derive(Debug, Clone, Default, Args)]
pub struct ViewArgs {
    /// Show every metric in the table, the informational ones too (by default the table shows
    /// the metrics that gate, and says how many others it left out).
    #[arg(long)]
    pub all_metrics: bool,
    /// Cut Markdown to at most this many characters, dropping the least important parts first
    /// (default: 65536, GitHub's limit for a comment; 1048576 for a job summary; 0: no limit).
    #[arg(long, value_name = "CHARS")]
    pub max_chars: Option<usize>,
    /// Keep every sample and counter reading of every benchmark in the report (by default the
    /// report keeps them for the benchmarks that changed or could not be decided, thins long
    /// series, and counts what it left out under `evidence.omitted`).
    #[arg(long)]
    pub full_evidence: bool,
    /// Indent a JSON report for people (the default is compact: one line, about two thirds
    /// of the size).
    #[arg(long)]
    pub pretty: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub selection: RunSelection,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Baseline name in `.kgate/baselines/` or a results file.
    #[arg(long, value_name = "NAME|FILE", default_value = crate::baseline::DEFAULT_NAME, conflicts_with_all = ["against", "against_tip"])]
    pub baseline: String,
    /// Measure the merge-base of this git revision (branch, tag, commit) and HEAD interleaved
    /// with the work tree instead of using a stored baseline: the commit your branch started
    /// from, so that only your branch's changes are measured. For a REF that HEAD contains
    /// (`HEAD`, `HEAD~1`) that is REF itself.
    #[arg(long, value_name = "REF", conflicts_with = "against_tip")]
    pub against: Option<String>,
    /// Like --against, but measure REF's tip itself, even when REF moved on after HEAD
    /// branched off (its newer commits then count as changes of the work tree).
    #[arg(long, value_name = "REF")]
    pub against_tip: Option<String>,
    /// Also write the candidate's results here.
    #[arg(long, value_name = "FILE")]
    pub save_results: Option<PathBuf>,
    /// Read the baseline file as committed at the merge-base of REF and HEAD (for a pull
    /// request, the commit it forked from), without checking anything out.
    #[arg(long, value_name = "REF", conflicts_with_all = ["against", "against_tip"])]
    pub baseline_ref: Option<String>,
    /// Compare even when baseline and candidate come from different environments; the report
    /// says so.
    #[arg(long)]
    pub allow_fingerprint_mismatch: bool,
    /// Run only benchmarks whose `paths` match a file changed since REF (REF...HEAD plus
    /// uncommitted changes); report the others as skipped with their baseline values.
    #[arg(long, value_name = "REF", conflicts_with_all = ["against", "against_tip"])]
    pub changed_since: Option<String>,
    /// Also append the candidate's results to the history under `.kgate/history/`.
    #[arg(long)]
    pub record: bool,
    /// With `--against`: measure benchmarks whose `identity` digest is the same on both sides
    /// too (a periodic full run, an A/A calibration), instead of reporting them `identical`.
    #[arg(long)]
    pub measure_identical: bool,
    /// Results of earlier jobs (repeatable): with a stored baseline, noisy metrics are then
    /// decided by a prediction interval over the jobs' medians.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["against", "against_tip"])]
    pub history: Vec<PathBuf>,
    /// After a regression verdict, run each regressed benchmark once more per side under a
    /// deeper capture (callgrind per function) and attach what changed to the report, as
    /// `gate.on_regression: profile` does.
    #[arg(long)]
    pub profile_regressions: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline results file.
    pub base: PathBuf,
    /// Candidate results file.
    pub head: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Significance level (default: `gate.alpha` of the configuration, `-c FILE` or
    /// ./kgate.yaml when that exists; else 0.01).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Read BASE (a path in the repository) as committed at the merge-base of REF and HEAD.
    #[arg(long, value_name = "REF")]
    pub baseline_ref: Option<String>,
    /// Compare even when the two files come from different environments; the report says so.
    #[arg(long)]
    pub allow_fingerprint_mismatch: bool,
    /// Results of earlier jobs (repeatable): the baseline is then treated as stored by another
    /// job and noisy metrics are decided by a prediction interval over the jobs' medians.
    #[arg(long, value_name = "FILE")]
    pub history: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Input format.
    #[arg(value_parser = import_format())]
    pub format: &'static Importer,
    /// Input files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the results here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Indent the JSON for people (the default is compact: one line, a fraction of the size).
    #[arg(long)]
    pub pretty: bool,
    #[arg(
        long = "kernel",
        value_name = "REGEX",
        help = kernel_selection_help("take kernels whose name matches this regex (repeatable)")
    )]
    pub kernel: Vec<String>,
    #[arg(
        long = "kernel-glob",
        value_name = "GLOB",
        help = kernel_selection_help("take kernels whose whole name matches this glob (repeatable)")
    )]
    pub kernel_glob: Vec<String>,
    #[arg(long, value_name = "ID|NAME", help = scope_help(|s| s.pid))]
    pub pid: Option<String>,
    #[arg(long, value_name = "ID|NAME", help = scope_help(|s| s.tid))]
    pub tid: Option<String>,
    /// nsys: take only the kernels launched (their CUDA runtime call) inside an NVTX range
    /// whose name matches this regex.
    #[arg(long, value_name = "REGEX")]
    pub nvtx: Option<String>,
}

/// The import formats of the registry, each with its help line.
fn import_format() -> impl TypedValueParser<Value = &'static Importer> {
    let values = IMPORTERS
        .iter()
        .map(|i| PossibleValue::new(i.name).help(i.help));
    PossibleValuesParser::new(values)
        .try_map(|name| import::importer(&name).ok_or("not an import format"))
}

/// `chrome-trace, xplane: TEXT`, naming the formats that take a kernel selection.
fn kernel_selection_help(text: &str) -> String {
    let names: Vec<&str> = import::taking_kernel_selection()
        .map(|(name, _)| name)
        .collect();
    format!("{}: {text}", names.join(", "))
}

/// `chrome-trace: only this process (pid or process name); xplane: this plane (id or name)`,
/// from what each format's `--pid` (or `--tid`) chooses.
fn scope_help(choice: fn(&import::SelectionScope) -> &'static str) -> String {
    let parts: Vec<String> = import::taking_kernel_selection()
        .map(|(name, scope)| format!("{name}: {}", choice(&scope)))
        .collect();
    parts.join("; ")
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A JSON report written by `kgate compare|check --format json -o FILE`.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Store results as a baseline (runs the suite when no results file is given).
    Save(BaselineSaveArgs),
    /// Replace a baseline with new results, showing the change of every median first.
    Update(BaselineUpdateArgs),
}

#[derive(Debug, Args)]
pub struct BaselineUpdateArgs {
    /// Results file to store; without it the benchmarks are run now.
    pub results: Option<PathBuf>,
    /// Baseline name.
    #[arg(long, default_value = crate::baseline::DEFAULT_NAME)]
    pub name: String,
    /// Write without asking (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub selection: RunSelection,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard result files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the merged results here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Indent the JSON for people (the default is compact: one line, a fraction of the size).
    #[arg(long)]
    pub pretty: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,
    /// Only this benchmark.
    #[arg(long = "bench", value_name = "NAME")]
    pub bench: Option<String>,
    /// Only this metric.
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// The runner class's key (default: this machine's, whichever benchmarks and tools the
    /// recorded runs used; `kgate history --key list` prints the keys with a history).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Print JSON instead of text (the same as `--format json`).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Output format: text, json, or html (a page of charts, one per benchmark and metric, for
    /// GitHub Pages).
    #[arg(long, value_enum)]
    pub format: Option<HistoryFormat>,
    /// Write the output here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The repository's web address, for the HTML page's links to commits (default:
    /// $GITHUB_SERVER_URL/$GITHUB_REPOSITORY in GitHub Actions, $CI_PROJECT_URL in GitLab CI,
    /// else git's `origin` remote when it is a GitHub or GitLab address).
    #[arg(long, value_name = "URL")]
    pub repo_url: Option<String>,
    /// HTML: chart at most this many series (default 100); past it, the series that changed
    /// are charted and every other is a row in a table at the end. 0 charts every series.
    #[arg(long, value_name = "N")]
    pub max_charts: Option<usize>,
}

/// Output formats of `kgate history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    Text,
    Json,
    Html,
}

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// Append results files to the history of their environment.
    Record {
        /// Results files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct BaselineSaveArgs {
    /// Results file to store; without it the benchmarks are run now.
    pub results: Option<PathBuf>,
    /// Baseline name.
    #[arg(long, default_value = crate::baseline::DEFAULT_NAME)]
    pub name: String,
    /// Replace an existing baseline.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub selection: RunSelection,
}

/// What fails `kgate ci`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A regression fails; inconclusive results follow the configuration.
    Regression,
    /// A regression or an inconclusive result fails.
    Inconclusive,
    /// Nothing fails on the verdict (errors still do).
    Nothing,
}

/// Flags for posting to GitHub, shared by `ci` and `comment`.
#[derive(Debug, Clone, Args)]
pub struct PostArgs {
    /// Token for the GitHub API (needs `pull-requests: write`; `checks: write` with --check-run).
    #[arg(
        long,
        env = "GITHUB_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// When to comment on the pull request.
    #[arg(long, value_enum, default_value_t = CommentPolicy::OnChange)]
    pub comment: CommentPolicy,
    /// Names this job's comment and check run, for matrix jobs (default: GITHUB_JOB).
    #[arg(long, env = "KGATE_JOB_ID", value_name = "ID")]
    pub job_id: Option<String>,
    /// The account whose comment is updated (default: the token's user, or
    /// `github-actions[bot]` for the workflow's token; an app's token needs `APP-SLUG[bot]`).
    #[arg(long, value_name = "LOGIN")]
    pub comment_author: Option<String>,
    /// Also report through a check run (needs `checks: write`).
    #[arg(long)]
    pub check_run: bool,
    /// Exit with status 2 when posting fails (by default a warning).
    #[arg(long)]
    pub fail_on_post_error: bool,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub selection: RunSelection,
    /// Baseline name in `.kgate/baselines/` or a results file.
    #[arg(long, value_name = "NAME|FILE", default_value = crate::baseline::DEFAULT_NAME)]
    pub baseline: String,
    /// Measure the merge-base of this git revision and HEAD interleaved with the work tree
    /// instead of a stored baseline (REF itself when HEAD contains it).
    #[arg(long, value_name = "REF", conflicts_with_all = ["baseline", "against_pr_base", "against_tip"])]
    pub against: Option<String>,
    /// Like --against, but measure REF's tip itself.
    #[arg(long, value_name = "REF", conflicts_with_all = ["baseline", "against_pr_base"])]
    pub against_tip: Option<String>,
    /// For pull requests, measure the merge-base of the head and the base branch interleaved
    /// (needs the history: `fetch-depth: 0`).
    #[arg(long, conflicts_with = "baseline")]
    pub against_pr_base: bool,
    /// What fails the job.
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// Where to write the JSON report.
    #[arg(long, value_name = "FILE", default_value = "kgate-report.json")]
    pub report: PathBuf,
    /// Also write the candidate's results here.
    #[arg(long, value_name = "FILE")]
    pub save_results: Option<PathBuf>,
    /// Annotate at most this many regressions (the rest are in the job summary).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub annotations: usize,
    /// Also append the candidate's results, with this job's verdicts, to the history under
    /// `.kgate/history/` (what `kgate history --format html` charts).
    #[arg(long)]
    pub record: bool,
    /// With an `--against` comparison: measure benchmarks whose `identity` digest is the same
    /// on both sides too, instead of reporting them `identical`.
    #[arg(long)]
    pub measure_identical: bool,
    /// Also write the JUnit report here (in GitLab CI by default `kgate-junit.xml`, for the
    /// merge-request widget: `artifacts: reports: junit:`).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    #[command(flatten)]
    pub post: PostArgs,
}

#[derive(Debug, Args)]
pub struct CommentArgs {
    /// JSON report to post.
    pub report: PathBuf,
    /// Pull request number (default: from the event payload; in GitLab CI the merge request's
    /// IID, default CI_MERGE_REQUEST_IID).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// Commit for the check run (default: from the event payload).
    #[arg(long, value_name = "SHA")]
    pub head_sha: Option<String>,
    /// Post even from a `pull_request_target` job that checked out a fork's head commit.
    #[arg(long)]
    pub allow_untrusted_checkout: bool,
    /// The gate's exit status from the `kgate ci` that wrote the report (its `exit-code`
    /// output): it can make the check run's conclusion worse than the report's rows say, never
    /// better (default: from the rows).
    #[arg(long, value_name = "CODE")]
    pub gate_status: Option<u8>,
    #[command(flatten)]
    pub post: PostArgs,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing configuration.
    #[arg(long)]
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A format registered in `import::IMPORTERS` is on the command line with its help, and
    /// the selection options name it when it takes a kernel selection: nothing else to edit.
    #[test]
    fn import_help_lists_every_registered_format() {
        let mut cli = Cli::command();
        let import = cli.find_subcommand_mut("import").unwrap();
        let help = import.render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for importer in IMPORTERS {
            let line = format!("- {}: {}", importer.name, importer.help);
            assert!(help.contains(&line), "{line}\n{help}");
            let parsed = Cli::try_parse_from(["kgate", "import", importer.name, "f"]).unwrap();
            match parsed.command {
                Commands::Import(args) => assert_eq!(args.format.name, importer.name),
                other => panic!("{other:?}"),
            }
        }
        for option in [
            "--kernel <REGEX> chrome-trace, xplane: take",
            "--pid <ID|NAME> chrome-trace: only this process (pid or process name); xplane: this plane (id or name)",
        ] {
            assert!(help.contains(option), "{option}\n{help}");
        }
        assert!(Cli::try_parse_from(["kgate", "import", "chrome_trace", "f"]).is_err());
    }
}
