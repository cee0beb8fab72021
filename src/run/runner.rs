//! The runner: executes build steps and benchmark repetitions.
//!
//! Each repetition is its own process ([`crate::run::process`]: its own process group, a
//! timeout that kills the group, its stderr's tail). A benchmark that fails is recorded with
//! the tail of its stderr and the other benchmarks still run. What a repetition measures is up
//! to the benchmark's capture backends ([`crate::run::backend`]): they prepare the process,
//! then explain its failure or collect its samples. Interleaved runs alternate the two sides'
//! repetitions and may add repetitions at planned looks while a verdict is undecided.
//! Nothing is written here: results leave the runner only when the whole run is complete, so an
//! interrupted run leaves no partial file behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::capture::Collector;
use crate::machine::fingerprint::Fingerprint;
use crate::model::results::{
    Artifact, BenchmarkResult, Failure, FailureKind, Look, Provenance, RESULTS_SCHEMA_VERSION,
    RunResults, Status,
};
use crate::model::verdict::Verdict;
use crate::plan::{BUILD_TIMEOUT, BenchmarkPlan, Plan};
use crate::run::backend::{self, Backend, Launch, Repetition};
use crate::run::process::{self, ProcessSpec, failure_of, run_process};
use crate::run::progress::{Event, Progress};
use crate::run::secrets;
use crate::stats::inference::LookPlan;

/// Errors that stop a whole run (as opposed to one benchmark failing).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("interrupted; no results were written")]
    Interrupted,
    #[error("cannot create a temporary folder for protocol files: {0}")]
    TempDir(std::io::Error),
}

/// One revision's tree: where commands run.
#[derive(Debug, Clone)]
pub struct Revision {
    /// Root folder (the configuration's folder in this tree).
    pub root: PathBuf,
    /// `base` or `head` in interleaved runs, for messages.
    pub label: Option<&'static str>,
}

/// Runs the build steps of a plan in one revision. Returns the failure of each step that failed,
/// by build index.
pub fn run_builds(
    plan: &Plan,
    revision: &Revision,
    progress: &mut dyn Progress,
) -> Result<BTreeMap<usize, Failure>, RunError> {
    let mut failures = BTreeMap::new();
    for (i, step) in plan.builds.iter().enumerate() {
        progress.event(Event::BuildStarted {
            command: &step.command.display(),
            revision: revision.label,
        });
        let argv = step.command.argv();
        let cwd = revision.root.join(&step.cwd);
        let outcome = run_process(&ProcessSpec {
            argv: &argv,
            cwd: &cwd,
            env: Vec::new(),
            clear_env: false,
            pass_env: &[],
            timeout: BUILD_TIMEOUT,
        });
        if process::interrupted() {
            return Err(RunError::Interrupted);
        }
        let failure = match outcome {
            Ok(o) => failure_of(&o, BUILD_TIMEOUT),
            Err(e) => Some(Failure {
                kind: FailureKind::Spawn,
                message: format!("cannot start `{}`: {e}", argv[0]),
                stderr_tail: String::new(),
            }),
        };
        if let Some(mut f) = failure {
            f.kind = FailureKind::Build;
            f.message = format!("build step `{}` {}", step.command.display(), f.message);
            failures.insert(i, f);
        }
    }
    Ok(failures)
}

/// The state of one benchmark being measured in one revision.
struct BenchmarkRun<'p> {
    plan: &'p BenchmarkPlan,
    backends: Vec<&'static dyn Backend>,
    cwd: PathBuf,
    scratch: tempfile::TempDir,
    collector: Collector<'p>,
    runs: u32,
    failed: bool,
}

impl<'p> BenchmarkRun<'p> {
    fn new(plan: &'p BenchmarkPlan, revision: &Revision) -> Result<BenchmarkRun<'p>, RunError> {
        let mut provenance = Provenance {
            command: plan.command.display(),
            captures: plan
                .captures
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            ..Provenance::default()
        };
        // The TPU sampling options each counter pass was given, and what they left out.
        for (k, options) in plan.sampling.options.iter().enumerate() {
            if let Some(options) = options {
                provenance
                    .details
                    .insert(format!("tpu_sampling_options.pass{k}"), options.clone());
            }
        }
        provenance.notes.extend(plan.sampling.notes.iter().cloned());
        let mut collector = Collector::new(&plan.name, &plan.metrics, provenance);
        collector.result_mut().parameters = plan.parameters.clone();
        Ok(BenchmarkRun {
            plan,
            backends: backend::of(&plan.captures),
            cwd: revision.root.join(&plan.cwd),
            scratch: tempfile::Builder::new()
                .prefix("kgate-protocol-")
                .tempdir()
                .map_err(RunError::TempDir)?,
            collector,
            runs: 0,
            failed: false,
        })
    }

    fn fail(&mut self, failure: Failure) {
        self.failed = true;
        let r = self.collector.result_mut();
        r.status = Status::Failed;
        r.failure = Some(failure);
    }

    /// The benchmark's command and environment, before any backend prepared them.
    fn launch(&self, measured: bool, repetition: u32) -> Launch {
        let mut env: Vec<(String, String)> = self.plan.env.clone().into_iter().collect();
        let warmup = if measured { "0" } else { "1" };
        env.extend([
            ("KGATE_BENCHMARK".into(), self.plan.name.clone()),
            ("KGATE_WARMUP".into(), warmup.into()),
            ("KGATE_REPETITION".into(), repetition.to_string()),
        ]);
        env.extend(self.plan.counter_env(repetition));
        Launch {
            argv: self.plan.command.argv(),
            env,
            clear_env: false,
        }
    }

    /// One run: a warm-up (`measured == false`) or a measured repetition. Each backend of the
    /// benchmark prepares it, the process runs, then each backend explains a failure or
    /// collects its samples.
    fn step(&mut self, measured: bool) -> Result<(), RunError> {
        if self.failed {
            return Ok(());
        }
        let started = Instant::now();
        let result = self.step_untimed(measured);
        let spent = started.elapsed().as_secs_f64();
        let seconds = self
            .collector
            .result_mut()
            .seconds
            .get_or_insert_with(Default::default);
        if measured {
            seconds.repetitions += spent;
        } else {
            seconds.warmup += spent;
        }
        result
    }

    fn step_untimed(&mut self, measured: bool) -> Result<(), RunError> {
        let run = Repetition {
            plan: self.plan,
            index: self.collector.result_mut().repetitions,
            scratch: self.scratch.path(),
            runs_before: self.runs,
        };
        self.runs += 1;
        let mut launch = self.launch(measured, run.index);
        for b in &self.backends {
            b.prepare(&run, &mut launch).map_err(RunError::TempDir)?;
        }
        let outcome = run_process(&ProcessSpec {
            argv: &launch.argv,
            cwd: &self.cwd,
            env: launch.env,
            clear_env: launch.clear_env,
            pass_env: &self.plan.pass_env,
            timeout: self.plan.timeout,
        });
        if process::interrupted() {
            return Err(RunError::Interrupted);
        }
        let failure = match outcome {
            Err(e) => Some(Failure {
                kind: FailureKind::Spawn,
                message: format!(
                    "cannot start `{}` in `{}`: {e}",
                    launch.argv[0],
                    self.cwd.display()
                ),
                stderr_tail: String::new(),
            }),
            Ok(outcome) => match failure_of(&outcome, self.plan.timeout) {
                Some(mut failure) => {
                    for said in self.backends.iter().filter_map(|b| b.explain(&run)) {
                        failure.message = format!("{}; {said}", failure.message);
                    }
                    Some(failure)
                }
                None if !measured => {
                    self.collector.result_mut().warmup += 1;
                    None
                }
                None => self
                    .backends
                    .iter()
                    .find_map(|b| b.collect(&run, outcome.wall, &mut self.collector).err())
                    .map(|refusal| Failure {
                        kind: refusal.kind,
                        message: refusal.message,
                        stderr_tail: outcome.stderr_tail.clone(),
                    }),
            },
        };
        match failure {
            Some(failure) => self.fail(failure),
            None if measured => self.collector.result_mut().repetitions += 1,
            None => {}
        }
        Ok(())
    }

    /// The result of a benchmark that is not measured (its identity is the same on both
    /// sides): no repetition, no artifact, the digest recorded.
    fn unmeasured(self, digest: String) -> BenchmarkResult {
        let mut result = self.collector.finish();
        result.identity = Some(digest);
        result
    }

    fn finish(mut self) -> BenchmarkResult {
        if !self.failed {
            self.read_artifacts();
        }
        let mut result = self.collector.finish();
        if let Some(opts) = crate::derive::utilization::options(self.plan) {
            crate::derive::utilization::apply(&mut result, &[], opts);
        }
        result
    }

    /// Keeps the declared artifact files; one that is missing is a warning, not a failure.
    fn read_artifacts(&mut self) {
        for (name, path) in &self.plan.artifacts {
            let full = self.cwd.join(path);
            match Artifact::read(&full, &path.display().to_string()) {
                Ok(artifact) => {
                    self.collector
                        .result_mut()
                        .artifacts
                        .insert(name.clone(), artifact);
                }
                Err(e) => eprintln!(
                    "warning: benchmark `{}` declares artifact `{name}` at `{}`, which cannot be read: {e}",
                    self.plan.name,
                    full.display()
                ),
            }
        }
    }
}

/// How long one `identity:` command may run.
const IDENTITY_COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// The standard output of `sh -c command` in `dir` (an `identity:` command), run as a build
/// step is (kgate's environment, which holds no credential), with a time limit.
fn identity_command_output(command: &str, dir: &Path) -> Result<Vec<u8>, String> {
    let out = tempfile::NamedTempFile::new()
        .map_err(|e| format!("identity command `{command}`: no temporary file: {e}"))?;
    let script = format!("{command} > \"$KGATE_IDENTITY_OUTPUT\"");
    let argv = vec!["sh".to_string(), "-c".to_string(), script];
    let output = out.path().to_string_lossy().into_owned();
    let outcome = run_process(&ProcessSpec {
        argv: &argv,
        cwd: dir,
        env: vec![("KGATE_IDENTITY_OUTPUT".to_string(), output)],
        clear_env: false,
        pass_env: &[],
        timeout: IDENTITY_COMMAND_TIMEOUT,
    })
    .map_err(|e| format!("identity command `{command}` cannot start: {e}"))?;
    if let Some(f) = failure_of(&outcome, IDENTITY_COMMAND_TIMEOUT) {
        let mut why = format!("identity command `{command}` {}", f.message);
        if let Some(last) = f.stderr_tail.lines().last() {
            why.push_str(&format!(": {last}"));
        }
        return Err(why);
    }
    std::fs::read(out.path()).map_err(|e| format!("identity command `{command}`: {e}"))
}

/// Runs every benchmark of a plan in one revision: builds, then warm-up and repetitions.
pub fn run_plan(
    plan: &Plan,
    revision: &Revision,
    progress: &mut dyn Progress,
) -> Result<RunResults, RunError> {
    let created = crate::model::results::now_rfc3339();
    warn_refused_pass_env(plan);
    let build_failures = run_builds(plan, revision, progress)?;
    let mut benchmarks = Vec::new();
    for b in &plan.benchmarks {
        benchmarks.push(run_one(b, revision, &build_failures, progress)?);
    }
    Ok(results_for(plan, revision, benchmarks, created))
}

/// Says which benchmarks name a credential in `pass_env`: it is withheld all the same, since the
/// configuration comes with the change under test.
fn warn_refused_pass_env(plan: &Plan) {
    for b in &plan.benchmarks {
        let refused = secrets::refused(&b.pass_env);
        if !refused.is_empty() {
            eprintln!(
                "warning: benchmark `{}`: `pass_env` names {}, the runner's credentials; kgate never passes credentials to build steps or benchmarks, so it gets none of them",
                crate::model::text::escape_log(&b.name),
                crate::model::text::escape_log(&refused.join(", "))
            );
        }
    }
}

/// One benchmark in one revision: warm-up, then its `min` repetitions (or the failure of its
/// build step).
fn run_one(
    b: &BenchmarkPlan,
    revision: &Revision,
    build_failures: &BTreeMap<usize, Failure>,
    progress: &mut dyn Progress,
) -> Result<BenchmarkResult, RunError> {
    let mut run = BenchmarkRun::new(b, revision)?;
    if let Some(f) = b.build.and_then(|i| build_failures.get(&i)) {
        run.fail(f.clone());
    } else {
        progress.event(Event::BenchmarkStarted {
            name: &b.name,
            runs: u64::from(b.warmup + b.repetitions.min),
        });
        for _ in 0..b.warmup {
            run.step(false)?;
            progress.event(Event::RunFinished);
        }
        for _ in 0..b.repetitions.min {
            run.step(true)?;
            progress.event(Event::RunFinished);
        }
    }
    let result = run.finish();
    progress.event(Event::BenchmarkFinished {
        result: &result,
        revision: revision.label,
    });
    Ok(result)
}

/// Runs two revisions interleaved in one job: for each benchmark, warm-ups and repetitions
/// alternate between base and head, in A B B A order so that a linear drift (thermal, clock)
/// affects both sides alike. Returns (base, head). Repetitions are fixed at `min`; see
/// [`run_interleaved_adaptive`] for more repetitions while undecided.
pub fn run_interleaved(
    plan: &Plan,
    base: &Revision,
    head: &Revision,
    progress: &mut dyn Progress,
) -> Result<(RunResults, RunResults), RunError> {
    run_interleaved_adaptive(plan, base, head, progress, None)
}

/// How an interleaved run may add repetitions to undecided benchmarks.
#[derive(Debug, Clone)]
pub struct Adaptive {
    /// The gate's decision rule, applied at each look.
    pub policy: crate::compare::ComparePolicy,
    /// No look starts after this much time since the run began.
    pub time_budget: Option<Duration>,
}

/// Like [`run_interleaved`], but with `adaptive` a benchmark whose `repetitions.max` exceeds
/// its `min` is analysed at fixed looks (min, min + step, … max repetitions per side, see
/// `inference::LookPlan`) against a boundary that holds alpha over the whole plan
/// ([`interim_look`]), and only a benchmark still inconclusive gets the next look's
/// repetitions. The looks taken are recorded with both results.
pub fn run_interleaved_adaptive(
    plan: &Plan,
    base: &Revision,
    head: &Revision,
    progress: &mut dyn Progress,
    adaptive: Option<&Adaptive>,
) -> Result<(RunResults, RunResults), RunError> {
    let started = Instant::now();
    let created = crate::model::results::now_rfc3339();
    warn_refused_pass_env(plan);
    let base_failures = run_builds(plan, base, progress)?;
    let head_failures = run_builds(plan, head, progress)?;
    // The runner class, part of every identity digest; taken once, where one is asked for.
    let mut class: Option<String> = None;
    let mut base_results = Vec::new();
    let mut head_results = Vec::new();
    for b in &plan.benchmarks {
        if b.head_only {
            // The base revision does not declare it: measured here, compared with nothing.
            head_results.push(run_one(b, head, &head_failures, progress)?);
            continue;
        }
        let mut runs = [BenchmarkRun::new(b, base)?, BenchmarkRun::new(b, head)?];
        let mut built = true;
        for (run, failures) in runs.iter_mut().zip([&base_failures, &head_failures]) {
            if let Some(f) = b.build.and_then(|i| failures.get(&i)) {
                run.fail(f.clone());
                built = false;
            }
        }
        // What the benchmark depends on, hashed in each side's tree after its own build: the
        // same digest on both sides is code that did not change, and is not measured.
        let digests = match (&b.identity, &b.base_description) {
            (Some(identity), Some(base_description)) if built => {
                let class = class.get_or_insert_with(|| {
                    crate::machine::envkey::class_key(&Fingerprint::capture(&head.root))
                });
                let of = |description: &str, revision: &Revision| {
                    let (cwd, output) = (revision.root.join(&b.cwd), &identity_command_output);
                    crate::run::identity::digest(identity, description, class, &cwd, output)
                };
                let sides = [of(base_description, base), of(&b.description(), head)];
                for (side, digest) in ["base", "head"].iter().zip(&sides) {
                    if let Err(why) = digest {
                        eprintln!(
                            "warning: benchmark `{}`: {why} [{side}]; it is measured",
                            crate::model::text::escape_log(&b.name)
                        );
                    }
                }
                match sides {
                    [Ok(x), Ok(y)] => Some((x, y)),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((x, y)) = &digests
            && x == y
        {
            let [base_run, head_run] = runs;
            for (run, out, label) in [
                (base_run, &mut base_results, base.label),
                (head_run, &mut head_results, head.label),
            ] {
                let result = run.unmeasured(x.clone());
                progress.event(Event::BenchmarkFinished {
                    result: &result,
                    revision: label,
                });
                out.push(result);
            }
            continue;
        }
        progress.event(Event::BenchmarkStarted {
            name: &b.name,
            runs: 2 * u64::from(b.warmup + b.repetitions.min),
        });
        let mut pair = |runs: &mut [BenchmarkRun<'_>; 2], i: u32, measured: bool| {
            let order = if i.is_multiple_of(2) { [0, 1] } else { [1, 0] };
            for side in order {
                runs[side].step(measured)?;
                progress.event(Event::RunFinished);
            }
            Ok::<(), RunError>(())
        };
        for i in 0..b.warmup {
            pair(&mut runs, i, false)?;
        }
        let (r, default_step) = (b.repetitions, crate::stats::inference::DEFAULT_LOOK_STEP);
        let looks = LookPlan::new(r.min, r.max, r.step.unwrap_or(default_step));
        let adaptive = adaptive.filter(|_| looks.count() > 1);
        let mut done = 0;
        let mut taken = Vec::new();
        for (k, &n) in looks.looks.iter().enumerate() {
            let over_budget = adaptive
                .and_then(|a| a.time_budget)
                .is_some_and(|budget| started.elapsed() >= budget);
            if k > 0 && over_budget {
                break;
            }
            while done < n {
                pair(&mut runs, done, true)?;
                done += 1;
            }
            let Some(adaptive) = adaptive else { break };
            if runs.iter().any(|r| r.failed) {
                break;
            }
            let [base_run, head_run] = &mut runs;
            let (base_result, head_result) = (
                base_run.collector.result_mut(),
                head_run.collector.result_mut(),
            );
            let (policy, benchmarks) = (&adaptive.policy, plan.benchmarks.len());
            let look = interim_look(base_result, head_result, n, &looks, policy, benchmarks);
            let decided = look.verdict != Verdict::Inconclusive;
            taken.push(look);
            if decided {
                break;
            }
        }
        let [base_run, head_run] = runs;
        let digests = digests.map(|(x, y)| [Some(x), Some(y)]).unwrap_or_default();
        for ((run, out, label), digest) in [
            (base_run, &mut base_results, base.label),
            (head_run, &mut head_results, head.label),
        ]
        .into_iter()
        .zip(digests)
        {
            let mut result = run.finish();
            result.identity = digest;
            result.looks = taken.clone();
            progress.event(Event::BenchmarkFinished {
                result: &result,
                revision: label,
            });
            out.push(result);
        }
    }
    Ok((
        results_for(plan, base, base_results, created.clone()),
        results_for(plan, head, head_results, created),
    ))
}

/// One interim analysis of an adaptive run: the gate's rule on the repetitions so far of one
/// benchmark (`base` and `head`, their looks ignored), tested against the plan's boundary, with
/// the family taken as this benchmark's gated metrics times `benchmarks` so that it is as
/// strict as the run-wide comparison. Its verdict is what the runner stops on: anything but
/// `inconclusive` (a regression, an improvement, `unchanged` or `within-threshold`) ends the
/// benchmark's repetitions. Public so that the simulations (tests/it/simulation.rs) drive the
/// runner's own rule.
pub fn interim_look(
    base: &BenchmarkResult,
    head: &BenchmarkResult,
    n: u32,
    looks: &LookPlan,
    policy: &crate::compare::ComparePolicy,
    benchmarks: usize,
) -> Look {
    let record = |verdict| Look {
        n,
        of: looks.count(),
        alpha: looks.alpha_per_look(policy.alpha),
        verdict,
        schedule: looks.schedule(),
    };
    let snapshot = |r: &BenchmarkResult| {
        let mut r = r.clone();
        // Marks the plan so that the comparison tests against its boundary.
        r.looks = vec![record(Verdict::Inconclusive)];
        RunResults {
            schema_version: RESULTS_SCHEMA_VERSION,
            kgate_version: env!("CARGO_PKG_VERSION").to_string(),
            created: String::new(),
            environment: Fingerprint::default(),
            benchmarks: vec![r],
        }
    };
    let (base, head) = (snapshot(base), snapshot(head));
    // As strict as the run-wide comparison: this benchmark's gated metrics times the number
    // of benchmarks stands in for the whole family.
    let gated = head.benchmarks[0]
        .metrics
        .iter()
        .filter(|m| m.gate.gates && m.gate.tolerance.is_none())
        .filter(|m| policy.gating_sources.contains(&m.source))
        .count()
        .max(1);
    let policy = crate::compare::ComparePolicy {
        family_hint: gated * benchmarks.max(1),
        ..policy.clone()
    };
    let design = crate::model::report::Design::Interleaved;
    let report = crate::compare::compare(&base, &head, &policy, design);
    let first = report.benchmarks.first();
    record(first.map_or(Verdict::Inconclusive, |b| b.verdict))
}

fn results_for(
    plan: &Plan,
    revision: &Revision,
    benchmarks: Vec<BenchmarkResult>,
    created: String,
) -> RunResults {
    let mut environment = Fingerprint::capture(&revision.root);
    // Versions of the tools kgate itself ran: git, and each build step's program (`cargo`,
    // `make`, `cmake`...). Benchmark programs are never asked: `--version` may run them.
    let mut programs = vec!["git".to_string()];
    programs.extend(plan.builds.iter().filter_map(|b| build_program(&b.command)));
    for program in programs {
        if !environment.tools.contains_key(&program)
            && let Some(v) = crate::machine::fingerprint::tool_version(&program)
        {
            environment.tools.insert(program, v);
        }
    }
    // And the tools the capture backends ran, in their own words.
    let captures: Vec<_> = plan
        .benchmarks
        .iter()
        .flat_map(|b| b.captures.iter().copied())
        .collect();
    for b in backend::of(&captures) {
        environment.tools.extend(b.tool_versions());
    }
    RunResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kgate_version: env!("CARGO_PKG_VERSION").to_string(),
        created,
        environment,
        benchmarks,
    }
}

/// The program a build step runs (the first word of a shell string), when it is a plain name.
fn build_program(command: &crate::config::CommandSpec) -> Option<String> {
    let first = match command {
        crate::config::CommandSpec::Shell(s) => s.split_whitespace().next()?.to_string(),
        crate::config::CommandSpec::Argv(v) => v.first()?.clone(),
    };
    let plain = first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    plain.then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_looks_add_repetitions_only_while_undecided() {
        let dir = tempfile::tempdir().unwrap();
        // Both sides report the same value per repetition: undecidable at 2 and 4 per side
        // (no interval of the needed confidence exists), "unchanged" at 8.
        let yaml = r#"
defaults: {warmup: 0, repetitions: {min: 2, max: 8}, captures: [protocol]}
benchmarks:
  - name: same
    command: 'echo "{\"metric\": \"kernel_time\", \"value\": $((1000 + KGATE_REPETITION)), \"unit\": \"ns\", \"source\": \"timer\"}" >> "$KGATE_PROTOCOL_FILE"'
"#;
        let config = crate::config::parse(yaml, "kgate.yaml").unwrap();
        let plan = Plan::new(&config, &crate::plan::Overrides::default()).unwrap();
        let rev = |label| Revision {
            root: dir.path().to_path_buf(),
            label: Some(label),
        };
        let adaptive = Adaptive {
            policy: crate::compare::ComparePolicy::default(),
            time_budget: None,
        };
        let (base_side, head_side, silent) =
            (rev("base"), rev("head"), &mut crate::run::progress::Silent);
        let (base, head) =
            run_interleaved_adaptive(&plan, &base_side, &head_side, silent, Some(&adaptive))
                .unwrap();
        let h = &head.benchmarks[0];
        // Looks every 2 repetitions per side (the default step): undecidable at 2 and 4, and
        // "unchanged" at the first look whose interval exists.
        let planned = LookPlan::new(2, 8, 2);
        assert_eq!(planned.looks, vec![2, 4, 6, 8]);
        let looks: Vec<(u32, Verdict)> = h.looks.iter().map(|l| (l.n, l.verdict)).collect();
        assert!(looks.len() >= 3, "{looks:?}");
        assert_eq!(h.repetitions, looks.last().unwrap().0, "{h:?}");
        let (ns, verdicts): (Vec<u32>, Vec<Verdict>) = looks.iter().copied().unzip();
        assert_eq!(ns, planned.looks[..looks.len()]);
        let (last, earlier) = verdicts.split_last().unwrap();
        assert_eq!(*last, Verdict::Unchanged, "{looks:?}");
        assert!(
            earlier.iter().all(|v| *v == Verdict::Inconclusive),
            "{looks:?}"
        );
        let nominal = planned.alpha_per_look(0.01);
        assert!(nominal < 0.01 && nominal > 0.01 / 4.0, "{nominal}");
        assert!(h.looks.iter().all(|l| l.of == 4
            && (l.alpha - nominal).abs() < 1e-15
            && l.schedule == planned.schedule()));
        // Each side's time is recorded for the report's cost.
        let seconds = h.seconds.unwrap();
        let (repetitions, warmup) = (seconds.repetitions, seconds.warmup);
        assert!(repetitions > 0.0 && warmup == 0.0, "{seconds:?}");
        assert_eq!(base.benchmarks[0].looks, h.looks);
        // Without the adaptive policy, `min` repetitions and no looks.
        let (_, head) = run_interleaved(&plan, &base_side, &head_side, silent).unwrap();
        assert_eq!(head.benchmarks[0].repetitions, 2);
        assert!(head.benchmarks[0].looks.is_empty());
    }
}
