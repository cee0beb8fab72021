//! The `timer` backend: the process wall time of each repetition, as metric `wall_time`.
//!
//! It needs nothing from the benchmark: the runner measures around spawn and wait anyway, so
//! this backend only records what was measured.

use std::time::Duration;

use super::{Backend, Refusal, Repetition};
use crate::capture::Collector;
use crate::config::CaptureKind;

pub struct Timer;

impl Backend for Timer {
    fn kind(&self) -> CaptureKind {
        CaptureKind::Timer
    }

    fn collect(
        &self,
        run: &Repetition<'_>,
        wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal> {
        collector.add_wall_time(run.index, wall.as_nanos() as f64);
        Ok(())
    }
}
