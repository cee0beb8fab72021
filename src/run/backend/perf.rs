//! The `perf` backend: each run under `perf stat`, its counters read from the CSV perf wrote.
//!
//! perf's own output goes to a scratch file (not stderr, which keeps the benchmark's words for
//! failure reports), in the C locale because the parser reads C-locale numbers. The readings
//! are the ones `kgate import perf-stat` records, so live and imported counters agree.

use std::time::Duration;

use super::{Backend, Launch, Refusal, Repetition};
use crate::capture::Collector;
use crate::capture::cpu::{self, Reading};
use crate::config::CaptureKind;
use crate::machine::fingerprint::tool_version;
use crate::model::results::FailureKind;

pub struct Perf;

const EXT: &str = "counters";

impl Backend for Perf {
    fn kind(&self) -> CaptureKind {
        CaptureKind::Perf
    }

    fn tool_versions(&self) -> Vec<(String, String)> {
        Vec::from_iter(tool_version("perf").map(|v| ("perf".to_string(), v)))
    }

    fn prepare(&self, run: &Repetition<'_>, launch: &mut Launch) -> std::io::Result<()> {
        launch.argv =
            crate::capture::perf::wrap(&run.plan.perf_events, &run.scratch_file(EXT), &launch.argv);
        // perf's number format follows the locale; the parser reads the C locale.
        launch.env.push(("LC_ALL".into(), "C".into()));
        Ok(())
    }

    fn collect(
        &self,
        run: &Repetition<'_>,
        _wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal> {
        let path = run.scratch_file(EXT);
        let recorded = crate::capture::perf::read(&path).and_then(|blocks| {
            let mut reading = Reading::default();
            for block in &blocks {
                let r = cpu::perf_reading(block);
                reading.values.extend(r.values);
                reading.unavailable.extend(r.unavailable);
                reading.notes.extend(r.notes);
            }
            cpu::record(collector, run.index, reading, &run.plan.derived)
        });
        let _ = std::fs::remove_file(&path);
        recorded.map_err(|message| Refusal {
            kind: FailureKind::Protocol,
            message: format!("{} capture: {message}", self.kind().as_str()),
        })
    }
}
