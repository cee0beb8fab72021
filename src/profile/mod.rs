//! Profile on regression: after a regression verdict, each regressed benchmark runs once more
//! per side under a deeper capture, and what changed is attached to its report entry.
//!
//! A verdict says "slower"; a kernel author then asks "where". On the CPU the deeper capture is
//! callgrind with the suite's pinned cache geometry: per function self and inclusive `Ir` and
//! simulated cache misses, ranked by how much they changed. A benchmark that measures a GPU
//! kernel under `ncu` would get ncu's full section set, which this version does not capture (it
//! says so); one on another accelerator keeps its own protocol counters, already in its
//! metrics. The runs share one wall-clock budget; whatever is skipped (no tool, no budget, a
//! side that cannot be re-run) is a note in the profile.
//!
//! The stage sits above `run` (it starts processes as the runner does) and `compare` (it reads
//! the verdicts), and below `cli`.

pub mod callgrind;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::capture::valgrind::Tool;
use crate::config::CaptureKind;
use crate::model::function_diff::{BenchmarkProfile, FunctionChange, FunctionCost};
use crate::model::report::Report;
use crate::model::verdict::Verdict;
use crate::plan::{BenchmarkPlan, Plan};
use crate::run::process::{Exit, ProcessSpec, run_process};

/// How many functions a profile lists.
pub const TOP_FUNCTIONS: usize = 10;

/// The trees the two sides run in.
#[derive(Debug, Clone)]
pub struct Sides<'a> {
    /// The base revision's tree; `None` when the base is a stored baseline, which cannot be
    /// re-run: then only the head side is profiled, and the profile says so.
    pub base: Option<&'a Path>,
    pub head: &'a Path,
}

/// Profiles every regressed benchmark of `report` within `budget`; returns how many were
/// profiled on at least one side.
pub fn profile_regressions(
    report: &mut Report,
    plan: &Plan,
    sides: &Sides<'_>,
    budget: Duration,
) -> usize {
    let start = Instant::now();
    let mut profiled = 0;
    for b in report.benchmarks.iter_mut() {
        if b.verdict != Verdict::Regressed {
            continue;
        }
        let Some(bench) = plan.benchmarks.iter().find(|p| p.name == b.name) else {
            b.profile = Some(note_only(
                "callgrind",
                "not profiled: the benchmark is not in this run's plan".into(),
            ));
            continue;
        };
        let profile = profile_one(bench, sides, budget, start);
        if !profile.sides.is_empty() {
            profiled += 1;
        }
        b.profile = Some(profile);
    }
    profiled
}

/// A budget as written in the configuration: `5m`, `90s`.
fn budget_words(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{:.0}s", d.as_secs_f64())
    }
}

fn note_only(tool: &str, note: String) -> BenchmarkProfile {
    BenchmarkProfile {
        tool: tool.into(),
        sides: Vec::new(),
        events: Vec::new(),
        functions: Vec::new(),
        functions_left_out: 0,
        notes: vec![note],
        seconds: 0.0,
    }
}

/// Whether `program` is an executable file in a folder of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let p = dir.join(program);
            std::fs::metadata(&p).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    })
}

fn profile_one(
    bench: &BenchmarkPlan,
    sides: &Sides<'_>,
    budget: Duration,
    start: Instant,
) -> BenchmarkProfile {
    if bench.captures.contains(&CaptureKind::Ncu) {
        let planned = ncu_argv(bench).join(" ");
        let note = if on_path("ncu") {
            format!(
                "ncu's full section set (`{planned}`) is not captured by this version of kgate; the ncu metrics of this benchmark are what was measured"
            )
        } else {
            format!(
                "ncu not found on PATH: the full section set (`{planned}`) was not captured; the ncu metrics of this benchmark are what was measured"
            )
        };
        return note_only("ncu", note);
    }
    if bench.device.is_some() {
        return note_only(
            "protocol",
            "no deeper capture for an accelerator benchmark without ncu: its own protocol counters are in its metrics".into(),
        );
    }
    if !on_path("valgrind") {
        let why =
            "valgrind not found on PATH: not profiled (install valgrind to get per-function costs)";
        return note_only("callgrind", why.into());
    }
    let began = Instant::now();
    let mut notes = Vec::new();
    let mut runs: Vec<(&str, callgrind::Functions)> = Vec::new();
    let mut plan_sides: Vec<(&str, &Path)> = Vec::new();
    match sides.base {
        Some(base) => plan_sides.push(("base", base)),
        None => notes.push(
            "the base side is a stored baseline, which cannot be re-run: only the head side is profiled, so no function shows a change; `kgate check --against REF` profiles both"
                .to_string(),
        ),
    }
    plan_sides.push(("head", sides.head));
    for (side, root) in &plan_sides {
        let left = budget.saturating_sub(start.elapsed());
        if left.is_zero() {
            notes.push(format!(
                "{side} side not profiled: the profile budget ({}) is spent",
                budget_words(budget)
            ));
            continue;
        }
        match run_callgrind(bench, root, left) {
            Ok(functions) => runs.push((side, functions)),
            Err(why) => notes.push(format!("{side} side not profiled: {why}")),
        }
    }
    let mut profile = summarize(&runs);
    if plan_sides.len() == 2 && runs.len() == 1 {
        notes.push("one side only: no function shows a change".into());
    }
    profile.notes.splice(0..0, notes);
    profile.seconds = began.elapsed().as_secs_f64();
    profile
}

/// The ncu run a GPU benchmark's profile calls for: every section (`--set full`), on the
/// kernels and launches the benchmark's `ncu` settings select.
fn ncu_argv(bench: &BenchmarkPlan) -> Vec<String> {
    let mut argv: Vec<String> = ["ncu", "--set", "full", "--csv", "--page", "raw"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Some(k) = &bench.ncu.kernel_name {
        argv.extend(["--kernel-name".into(), k.clone()]);
    }
    if let Some(n) = bench.ncu.launch_skip {
        argv.extend(["--launch-skip".into(), n.to_string()]);
    }
    if let Some(n) = bench.ncu.launch_count {
        argv.extend(["--launch-count".into(), n.to_string()]);
    }
    argv.extend(bench.command.argv());
    argv
}

/// Runs the benchmark once under callgrind in `root` and reads its functions.
fn run_callgrind(
    bench: &BenchmarkPlan,
    root: &Path,
    timeout: Duration,
) -> Result<callgrind::Functions, String> {
    let scratch = tempfile::Builder::new()
        .prefix("kgate-profile-")
        .tempdir()
        .map_err(|e| format!("cannot create a scratch folder: {e}"))?;
    let out = scratch.path().join("callgrind.out");
    let log = scratch.path().join("valgrind.log");
    let (toggle, command) = (bench.toggle_collect.as_deref(), bench.command.argv());
    let mut argv = crate::capture::valgrind::wrap(Tool::Callgrind, &out, toggle, &command);
    // The same simulated caches as the gated counts, and valgrind's messages in a file.
    let at = 4;
    let mut extra: Vec<String> = crate::run::backend::VALGRIND_CACHES
        .iter()
        .map(|c| c.to_string())
        .collect();
    extra.push(format!("--log-file={}", log.display()));
    argv.splice(at..at, extra);
    let mut env: Vec<(String, String)> = bench.env.clone().into_iter().collect();
    env.extend([
        ("KGATE_BENCHMARK".into(), bench.name.clone()),
        ("KGATE_WARMUP".into(), "0".into()),
        ("KGATE_REPETITION".into(), "0".into()),
    ]);
    let cwd = root.join(&bench.cwd);
    let outcome = run_process(&ProcessSpec {
        argv: &argv,
        cwd: &cwd,
        env,
        // As the valgrind backends run: a fixed environment, so addresses (and counts) do not
        // depend on the caller's.
        clear_env: true,
        pass_env: &bench.pass_env,
        timeout,
    })
    .map_err(|e| format!("cannot start valgrind: {e}"))?;
    match outcome.exit {
        Exit::Code(0) => {}
        Exit::TimedOut => {
            return Err(format!(
                "the run under callgrind was stopped when the profile budget ran out (after {:.1} s)",
                outcome.wall.as_secs_f64()
            ));
        }
        Exit::Code(c) => {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            // `==1234== message`: the last line that says something.
            let last = said
                .lines()
                .rev()
                .map(|l| {
                    l.trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
                        .trim()
                })
                .find(|l| !l.is_empty());
            let stderr = outcome
                .stderr_tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty());
            let last = last
                .map(|l| format!(" (valgrind: {l})"))
                .unwrap_or_default();
            let stderr = stderr.map(|l| format!("; its stderr ends: {}", l.trim()));
            let stderr = stderr.unwrap_or_default();
            return Err(format!(
                "the run under callgrind exited with status {c}{last}{stderr}"
            ));
        }
        Exit::Signal(s) => return Err(format!("the run under callgrind was killed by signal {s}")),
    }
    let mut functions = callgrind::read(&out)?;
    relativize(&mut functions, root);
    Ok(functions)
}

/// Source paths inside the revision's tree, relative to it: the two sides' trees differ, their
/// functions must still meet.
fn relativize(functions: &mut callgrind::Functions, root: &Path) {
    // Only absolute paths under the tree: `./malloc/malloc.c` is glibc's, not the tree's.
    let mut roots: Vec<PathBuf> = Vec::new();
    if root.is_absolute() {
        roots.push(root.to_path_buf());
    }
    if let Ok(c) = root.canonicalize() {
        roots.push(c);
    }
    let old = std::mem::take(&mut functions.functions);
    for ((file, name), mut f) in old {
        let file = roots
            .iter()
            .filter(|_| Path::new(&file).is_absolute())
            .find_map(|r| Path::new(&file).strip_prefix(r).ok())
            .map(|p| p.display().to_string())
            .unwrap_or(file);
        if f.file.is_some() {
            f.file = Some(file.clone());
        }
        // Two files that became one key: add them up.
        match functions.functions.entry((file, name)) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(f);
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let e = o.get_mut();
                e.self_cost
                    .iter_mut()
                    .zip(&f.self_cost)
                    .for_each(|(a, b)| *a += b);
                e.inclusive
                    .iter_mut()
                    .zip(&f.inclusive)
                    .for_each(|(a, b)| *a += b);
            }
        }
    }
}

fn cost_of(f: &callgrind::Function, p: &callgrind::Functions) -> FunctionCost {
    let at = |name: &str| {
        p.event(name)
            .map(|i| f.self_cost.get(i).copied().unwrap_or(0))
    };
    let sum = |names: &[&str]| -> Option<i64> { names.iter().map(|n| at(n)).sum::<Option<i64>>() };
    let ir = p.event("Ir");
    FunctionCost {
        self_ir: ir.and_then(|i| f.self_cost.get(i).copied()).unwrap_or(0),
        inclusive_ir: ir.and_then(|i| f.inclusive.get(i).copied()).unwrap_or(0),
        self_d1_misses: sum(&["D1mr", "D1mw"]),
        self_ll_misses: sum(&["ILmr", "DLmr", "DLmw"]),
    }
}

/// The top functions by change (two sides) or by self `Ir` (one side).
fn summarize(runs: &[(&str, callgrind::Functions)]) -> BenchmarkProfile {
    let mut profile = BenchmarkProfile {
        tool: "callgrind".into(),
        sides: runs.iter().map(|(s, _)| s.to_string()).collect(),
        events: runs
            .first()
            .map(|(_, p)| p.events.clone())
            .unwrap_or_default(),
        functions: Vec::new(),
        functions_left_out: 0,
        notes: Vec::new(),
        seconds: 0.0,
    };
    let side = |name: &str| runs.iter().find(|(s, _)| *s == name).map(|(_, p)| p);
    let mut rows: Vec<FunctionChange> = Vec::new();
    match (side("base"), side("head")) {
        (Some(base), Some(head)) => {
            if base.event("Ir").is_none() || head.event("Ir").is_none() {
                profile
                    .notes
                    .push("the profiles have no `Ir` event: no change to rank by".into());
            }
            let mut keys: BTreeMap<&(String, String), ()> = BTreeMap::new();
            keys.extend(base.functions.keys().map(|k| (k, ())));
            keys.extend(head.functions.keys().map(|k| (k, ())));
            for key in keys.keys() {
                let b = base.functions.get(*key);
                let h = head.functions.get(*key);
                let bc = b.map(|f| cost_of(f, base));
                let hc = h.map(|f| cost_of(f, head));
                let self_of = |c: &Option<FunctionCost>| c.as_ref().map_or(0, |c| c.self_ir);
                let incl_of = |c: &Option<FunctionCost>| c.as_ref().map_or(0, |c| c.inclusive_ir);
                let ds = self_of(&hc) - self_of(&bc);
                let di = incl_of(&hc) - incl_of(&bc);
                if ds == 0 && di == 0 {
                    continue;
                }
                let f = h.or(b).expect("one side has it");
                rows.push(FunctionChange {
                    function: f.name.clone(),
                    file: f.file.clone(),
                    line: h.and_then(|f| f.line).or(b.and_then(|f| f.line)),
                    base: bc,
                    head: hc,
                    self_ir_change: Some(ds),
                    inclusive_ir_change: Some(di),
                });
            }
            rows.sort_by(|x, y| {
                let k = |r: &FunctionChange| {
                    (
                        r.self_ir_change.unwrap_or(0).unsigned_abs(),
                        r.inclusive_ir_change.unwrap_or(0).unsigned_abs(),
                    )
                };
                k(y).cmp(&k(x)).then_with(|| x.function.cmp(&y.function))
            });
            if rows.is_empty() {
                profile
                    .notes
                    .push("no function's instruction count changed between the sides".into());
            }
        }
        (base, head) => {
            if let Some((name, p)) = base.map(|p| ("base", p)).or(head.map(|p| ("head", p))) {
                for f in p.functions.values() {
                    let c = cost_of(f, p);
                    if c.self_ir == 0 && c.inclusive_ir == 0 {
                        continue;
                    }
                    rows.push(FunctionChange {
                        function: f.name.clone(),
                        file: f.file.clone(),
                        line: f.line,
                        base: (name == "base").then(|| c.clone()),
                        head: (name == "head").then_some(c),
                        self_ir_change: None,
                        inclusive_ir_change: None,
                    });
                }
                let ir = |r: &FunctionChange| {
                    r.base.as_ref().or(r.head.as_ref()).map_or(0, |c| c.self_ir)
                };
                rows.sort_by(|x, y| ir(y).cmp(&ir(x)).then_with(|| x.function.cmp(&y.function)));
            }
        }
    }
    profile.functions_left_out = rows.len().saturating_sub(TOP_FUNCTIONS);
    rows.truncate(TOP_FUNCTIONS);
    profile.functions = rows;
    profile
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Overrides, Plan};

    /// The plan of one benchmark `k` with these `fields` (a YAML flow mapping's entries).
    fn plan(fields: &str) -> Plan {
        let yaml = format!("benchmarks: [{{name: k, {fields}}}]\n");
        let config = crate::config::parse(&yaml, "kgate.yaml").unwrap();
        Plan::new(&config, &Overrides::default()).unwrap()
    }

    /// `bench`'s profile, in a folder of its own, after `budget` from now.
    fn profile(bench: &str, base: bool, budget: Duration) -> BenchmarkProfile {
        let dir = tempfile::tempdir().unwrap();
        let base = base.then_some(dir.path());
        let plan = plan(bench);
        profile_one(
            &plan.benchmarks[0],
            &Sides {
                base,
                head: dir.path(),
            },
            budget,
            Instant::now(),
        )
    }

    const CALLGRIND: &str = "command: [./k], captures: [callgrind]";

    fn functions(rows: &[(&str, i64, i64)]) -> callgrind::Functions {
        let mut text = String::from("events: Ir D1mr D1mw\n");
        for (name, self_ir, called) in rows {
            text.push_str(&format!("fl=src/k.rs\nfn={name}\n7 {self_ir} 1 0\n"));
            if *called > 0 {
                text.push_str(&format!("cfn=other\ncalls=1 9\n8 {called}\n"));
            }
        }
        callgrind::parse(&text).unwrap()
    }

    #[test]
    fn two_sides_rank_functions_by_change() {
        let base = functions(&[("same", 50, 0), ("blocked", 100, 0), ("main", 1, 100)]);
        let head = functions(&[("same", 50, 0), ("naive", 400, 0), ("main", 1, 400)]);
        let p = summarize(&[("base", base), ("head", head)]);
        let names: Vec<&str> = p.functions.iter().map(|f| f.function.as_str()).collect();
        // `same` did not change: left out; `main` changed inclusively only: last.
        assert_eq!(names, vec!["naive", "blocked", "main"]);
        assert_eq!(p.functions[0].self_ir_change, Some(400));
        assert_eq!(p.functions[0].base, None);
        assert_eq!(p.functions[0].line, Some(7));
        assert_eq!(p.functions[0].file.as_deref(), Some("src/k.rs"));
        assert_eq!(p.functions[1].self_ir_change, Some(-100));
        assert_eq!(p.functions[2].self_ir_change, Some(0));
        assert_eq!(p.functions[2].inclusive_ir_change, Some(300));
        let head = p.functions[0].head.as_ref().unwrap();
        assert_eq!(head.self_d1_misses, Some(1));
        assert_eq!(head.self_ll_misses, None, "not simulated: absent");
        assert!(p.notes.is_empty(), "{:?}", p.notes);
    }

    #[test]
    fn one_side_lists_the_costliest_and_many_are_cut() {
        let rows: Vec<(String, i64, i64)> = (1..=12).map(|i| (format!("f{i}"), i, 0)).collect();
        let rows: Vec<(&str, i64, i64)> =
            rows.iter().map(|(n, a, b)| (n.as_str(), *a, *b)).collect();
        let p = summarize(&[("head", functions(&rows))]);
        assert_eq!(p.functions.len(), TOP_FUNCTIONS);
        assert_eq!(p.functions_left_out, 2);
        assert_eq!(p.functions[0].function, "f12");
        assert_eq!(p.functions[0].self_ir_change, None);
        assert_eq!(p.sides, vec!["head"]);
    }

    #[test]
    fn skips_say_why() {
        // No budget left: neither side runs, and each says so (or valgrind is absent).
        let p = profile(CALLGRIND, true, Duration::ZERO);
        assert!(p.sides.is_empty());
        if on_path("valgrind") {
            assert_eq!(
                p.notes,
                vec![
                    "base side not profiled: the profile budget (0s) is spent",
                    "head side not profiled: the profile budget (0s) is spent"
                ]
            );
        } else {
            assert!(
                p.notes[0].starts_with("valgrind not found"),
                "{:?}",
                p.notes
            );
        }
        // A GPU benchmark under ncu: the plan step, and the note that it did not run.
        let ncu = "command: [./k], captures: [ncu]";
        let p = profile(ncu, true, Duration::from_secs(60));
        assert_eq!(p.tool, "ncu");
        assert!(p.sides.is_empty());
        let expected = if on_path("ncu") {
            "is not captured by this version"
        } else {
            "ncu not found on PATH"
        };
        assert_contains!(p.notes[0], expected);
        // A benchmark that fails under callgrind: the side's note carries the exit status.
        if on_path("valgrind") {
            let p = profile(CALLGRIND, false, Duration::from_secs(60));
            assert_contains!(p.notes[0], "stored baseline");
            let failed = "head side not profiled: the run under callgrind exited with status";
            assert!(p.notes[1].starts_with(failed), "{:?}", p.notes);
        }
    }

    #[test]
    fn the_ncu_plan_takes_every_section_of_the_selected_kernels() {
        let plan = plan(
            "command: [./k, '8'], captures: [ncu], ncu: {kernel_name: 'regex:gemm', launch_count: 1}",
        );
        assert_eq!(
            ncu_argv(&plan.benchmarks[0]).join(" "),
            "ncu --set full --csv --page raw --kernel-name regex:gemm --launch-count 1 ./k 8"
        );
    }

    #[test]
    #[cfg_attr(kgate_no_valgrind, ignore = "needs valgrind (Debian's valgrind)")]
    fn a_run_past_the_budget_is_stopped_and_said() {
        assert!(on_path("valgrind"), "install valgrind (`.ci/run` does)");
        let started = Instant::now();
        let sleeper = "command: [sh, -c, 'sleep 30'], captures: [callgrind]";
        let p = profile(sleeper, true, Duration::from_secs(1));
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
        assert!(p.sides.is_empty(), "{p:?}");
        let stopped = "base side not profiled: the run under callgrind was stopped when the profile budget ran out";
        assert!(p.notes[0].starts_with(stopped), "{:?}", p.notes);
        assert_eq!(
            p.notes[1],
            "head side not profiled: the profile budget (1s) is spent"
        );
    }

    #[test]
    fn budgets_read_as_written() {
        assert_eq!(budget_words(Duration::from_secs(300)), "5m");
        assert_eq!(budget_words(Duration::from_secs(90)), "90s");
    }
}
