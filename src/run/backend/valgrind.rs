//! The `callgrind` and `cachegrind` backends: each run under a Valgrind tool with cache and
//! branch simulation, its counts read from the profile the tool wrote.
//!
//! Simulated counts are deterministic only if the simulation is the same everywhere: the cache
//! geometry is pinned (Valgrind otherwise copies the host's) and the environment is fixed. The
//! readings are the ones `kgate import callgrind|cachegrind` records.

use std::time::Duration;

use super::{Backend, Launch, Refusal, Repetition};
use crate::capture::Collector;
use crate::capture::cpu;
use crate::capture::valgrind::Tool;
use crate::config::CaptureKind;
use crate::machine::fingerprint::tool_version;
use crate::model::results::FailureKind;

/// The backend of one Valgrind tool.
pub struct Valgrind(pub Tool);

const EXT: &str = "counters";
/// Extension of the scratch file that receives valgrind's own messages.
const LOG_EXT: &str = "valgrind.log";

/// Cache geometry given to Valgrind, so that simulated misses do not depend on the machine
/// that ran the simulation: 32 KiB 8-way L1s and an 8 MiB 16-way last level, all with 64-byte
/// lines.
pub const CACHES: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

/// Where the pinned geometry is recorded: a benchmark's `provenance.details` and the
/// environment's `tools` (so that it is part of the baseline key: counts simulated with
/// another geometry are not comparable).
const CACHES_KEY: &str = "valgrind.caches";

/// The pinned geometry as recorded: `--I1=… --D1=… --LL=…`.
fn caches() -> String {
    CACHES.join(" ")
}

impl Backend for Valgrind {
    fn kind(&self) -> CaptureKind {
        match self.0 {
            Tool::Callgrind => CaptureKind::Callgrind,
            Tool::Cachegrind => CaptureKind::Cachegrind,
        }
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        let valgrind = tool_version("valgrind").map(|v| ("valgrind".to_string(), v));
        let cache_sizes = (CACHES_KEY.to_string(), caches());
        valgrind.into_iter().chain([cache_sizes]).collect()
    }

    fn prepare(&self, run: &Repetition<'_>, launch: &mut Launch) -> std::io::Result<()> {
        // Simulated counts depend on the memory layout, and the stack holds the environment:
        // a caller's longer PATH or work-tree path would shift every address. Valgrind runs
        // therefore get a fixed environment (as iai-callgrind does), so counts reproduce on
        // any machine and in any clone.
        launch.clear_env = true;
        let (out, toggle) = (run.scratch_file(EXT), run.plan.toggle_collect.as_deref());
        let mut argv = crate::capture::valgrind::wrap(self.0, &out, toggle, &launch.argv);
        let at = 4; // after `valgrind --tool=… --cache-sim=yes --branch-sim=yes`
        for (i, c) in CACHES.iter().enumerate() {
            argv.insert(at + i, c.to_string());
        }
        // Valgrind's own messages go to a file of their own, so that the stderr tail of a
        // failure is the benchmark's and not valgrind's summary.
        argv.insert(
            at + CACHES.len(),
            format!("--log-file={}", run.scratch_file(LOG_EXT).display()),
        );
        launch.argv = argv;
        Ok(())
    }

    fn explain(&self, run: &Repetition<'_>) -> Option<String> {
        let log = std::fs::read_to_string(run.scratch_file(LOG_EXT)).unwrap_or_default();
        let _ = std::fs::remove_file(run.scratch_file(LOG_EXT));
        // `==1234== message` lines; the last few that say something.
        let said: Vec<&str> = log
            .lines()
            .map(|l| {
                l.trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
                    .trim()
            })
            .filter(|l| !l.is_empty())
            .collect();
        let tail = said[said.len().saturating_sub(3)..].join(" / ");
        let (tool, path) = (self.kind().as_str(), crate::run::FIXED_PATH);
        let mut message = format!(
            "under {tool} the command runs in a reduced environment (PATH={path}, the benchmark's `env`, and what `pass_env` names; no HOME, virtualenv or LD_LIBRARY_PATH) so that counts reproduce: list the variables it needs under `pass_env`"
        );
        if !tail.is_empty() {
            message.push_str(&format!("; valgrind said: {tail}"));
        }
        Some(message)
    }

    fn collect(
        &self,
        run: &Repetition<'_>,
        _wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal> {
        // The simulated cache geometry is part of what the counts mean.
        collector
            .result_mut()
            .provenance
            .details
            .insert(CACHES_KEY.into(), caches());
        let path = run.scratch_file(EXT);
        let recorded = crate::capture::valgrind::read(&path, self.0).and_then(|profile| {
            let reading = cpu::valgrind_reading(&profile);
            cpu::record(collector, run.index, reading, &run.plan.derived)
        });
        let _ = std::fs::remove_file(&path);
        recorded.map_err(|message| Refusal {
            kind: FailureKind::Protocol,
            message: format!("{} capture: {message}", self.kind().as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Overrides, Plan};

    #[test]
    fn runs_get_the_pinned_caches_and_a_fixed_environment() {
        let config = crate::config::parse(
            "benchmarks:\n  - name: mm\n    command: [./mm, '64']\n    captures: [callgrind]\n    valgrind: {toggle_collect: 'mm::*'}\n",
            "kgate.yaml",
        )
        .unwrap();
        let plan = Plan::new(&config, &Overrides::default()).unwrap();
        let run = Repetition {
            plan: &plan.benchmarks[0],
            index: 0,
            scratch: std::path::Path::new("scratch"),
            runs_before: 2,
        };
        let mut launch = Launch {
            argv: run.plan.command.argv(),
            env: Vec::new(),
            clear_env: false,
        };
        Valgrind(Tool::Callgrind)
            .prepare(&run, &mut launch)
            .unwrap();
        assert_eq!(
            launch.argv.join(" "),
            "valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 --log-file=scratch/run-2.valgrind.log --callgrind-out-file=scratch/run-2.counters --toggle-collect=mm::* ./mm 64"
        );
        assert!(launch.clear_env);
    }
}
