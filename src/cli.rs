//! Command-line flags, parsed into plain data (clap derive) and nothing else.
//!
//! Turning flags into a plan and running it is `commands`' job; keeping the two apart (as
//! ripgrep and bencher do) lets the library be used and tested without a command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::import::ImportFormat;
use crate::render::Format;

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
    Import(ImportArgs),
    /// Manage stored baselines.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Write a commented starter configuration.
    Init(InitArgs),
    /// Check a configuration file and report the first problem.
    Validate,
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
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub selection: RunSelection,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Baseline name in `.kgate/baselines/` or a results file.
    #[arg(long, value_name = "NAME|FILE", default_value = crate::baseline::DEFAULT_NAME, conflicts_with = "against")]
    pub baseline: String,
    /// Measure this git revision (branch, tag, commit) interleaved with the work tree instead
    /// of using a stored baseline.
    #[arg(long, value_name = "REF")]
    pub against: Option<String>,
    /// Also write the candidate's results here.
    #[arg(long, value_name = "FILE")]
    pub save_results: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline results file.
    pub base: PathBuf,
    /// Candidate results file.
    pub head: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Significance level (default: the configuration's when -c is given, else 0.01).
    #[arg(long)]
    pub alpha: Option<f64>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Input format.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// Input files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the results here instead of to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// chrome-trace, xplane: take kernels whose name matches this regex (repeatable).
    #[arg(long = "kernel", value_name = "REGEX")]
    pub kernel: Vec<String>,
    /// chrome-trace, xplane: take kernels whose whole name matches this glob (repeatable).
    #[arg(long = "kernel-glob", value_name = "GLOB")]
    pub kernel_glob: Vec<String>,
    /// chrome-trace: only this process (pid or process name); xplane: this plane (id or name).
    #[arg(long, value_name = "ID|NAME")]
    pub pid: Option<String>,
    /// chrome-trace: only this thread (tid or thread name); xplane: this line (id or name).
    #[arg(long, value_name = "ID|NAME")]
    pub tid: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Store results as a baseline (runs the suite when no results file is given).
    Save(BaselineSaveArgs),
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
}
