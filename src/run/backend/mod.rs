//! Capture backends: what the runner asks of each way of measuring a repetition.
//!
//! A backend is a unit struct in its own file, registered in `BACKENDS` (as ripgrep registers
//! its flags in a static list and hyperfine its exporters behind one trait). The runner only
//! loops: each backend of the benchmark prepares the repetition (wraps the argument vector,
//! adds environment variables, creates its scratch files), the process runs, then each backend
//! adds its tool's words to a failure, or collects its samples from a repetition that went
//! well. The fingerprint takes the tool versions from the backends a plan uses.
//!
//! Adding a backend is one file here and one line in `BACKENDS`, besides its word in
//! [`CaptureKind`]: the `captures:` vocabulary, and what the configuration's checks and the
//! plan read of a capture (whether it wraps the command, whether it is deterministic), stay
//! there, below this stage, because a backend reads the plan and the collector, which sit
//! above the configuration.

mod ncu;
mod perf;
mod protocol;
mod timer;
mod valgrind;

/// The cache geometry every valgrind run is given, for other stages that run valgrind.
pub use valgrind::CACHES as VALGRIND_CACHES;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::capture::Collector;
use crate::config::CaptureKind;
use crate::model::results::FailureKind;
use crate::plan::BenchmarkPlan;

/// Every backend, in the order the runner prepares and collects them: the counter tools wrap
/// the command before ncu wraps the result, and a failed collection reports the first backend
/// that refused.
static BACKENDS: [&dyn Backend; 6] = [
    &timer::Timer,
    &perf::Perf,
    &valgrind::Valgrind(crate::capture::valgrind::Tool::Callgrind),
    &valgrind::Valgrind(crate::capture::valgrind::Tool::Cachegrind),
    &protocol::Protocol,
    &ncu::Ncu,
];

/// One way of measuring a repetition.
pub trait Backend: Sync {
    /// The capture this backend implements; its `as_str` is the word in `captures:`.
    fn kind(&self) -> CaptureKind;

    /// Versions of the tools this backend runs, as entries of the environment's `tools`
    /// (so that they are part of the baseline key).
    fn tool_versions(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Sets up one run (warm-up or measured) before it starts.
    fn prepare(&self, _run: &Repetition<'_>, _launch: &mut Launch) -> std::io::Result<()> {
        Ok(())
    }

    /// What the backend's tool said about a run that failed, for the failure message.
    fn explain(&self, _run: &Repetition<'_>) -> Option<String> {
        None
    }

    /// Records the samples of a measured run that exited cleanly.
    fn collect(
        &self,
        run: &Repetition<'_>,
        wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal>;
}

/// The backends of a capture list, each once, in registry order.
pub fn of(captures: &[CaptureKind]) -> Vec<&'static dyn Backend> {
    BACKENDS
        .iter()
        .copied()
        .filter(|b| captures.contains(&b.kind()))
        .collect()
}

/// One run of a benchmark as the backends see it.
#[derive(Debug, Clone, Copy)]
pub struct Repetition<'a> {
    pub plan: &'a BenchmarkPlan,
    /// The repetition's index (`KGATE_REPETITION`): where its samples go.
    pub index: u32,
    /// The benchmark's scratch folder, removed with it.
    pub scratch: &'a Path,
    /// How many runs of the benchmark (warm-ups included) came before this one.
    pub runs_before: u32,
}

impl Repetition<'_> {
    /// This run's scratch file with extension `ext`, such as `run-3.jsonl`.
    pub fn scratch_file(&self, ext: &str) -> PathBuf {
        self.scratch.join(format!("run-{}.{ext}", self.runs_before))
    }
}

/// What the process of a run is started with; backends prepare it in registry order.
#[derive(Debug, Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Start from an empty environment instead of inheriting kgate's.
    pub clear_env: bool,
}

/// Why a backend could not record a run's samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub kind: FailureKind,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of `captures:` (as the configuration's schema lists them) has one backend.
    #[test]
    fn every_capture_has_exactly_one_backend() {
        let schema = serde_json::to_value(schemars::schema_for!(CaptureKind)).unwrap();
        let words: Vec<&str> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["const"].as_str().unwrap())
            .collect();
        assert_eq!(words.len(), BACKENDS.len());
        for word in words {
            let found: Vec<_> = BACKENDS
                .iter()
                .filter(|b| b.kind().as_str() == word)
                .collect();
            assert_eq!(found.len(), 1, "`{word}`");
        }
    }

    #[test]
    fn a_capture_list_gets_each_backend_once_in_registry_order() {
        use CaptureKind::*;
        let kinds: Vec<CaptureKind> = of(&[Ncu, Protocol, Timer, Perf, Timer])
            .iter()
            .map(|b| b.kind())
            .collect();
        assert_eq!(kinds, vec![Timer, Perf, Protocol, Ncu]);
    }
}
