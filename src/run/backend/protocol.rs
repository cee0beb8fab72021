//! The `protocol` backend: the JSON lines a benchmark writes to `$KGATE_PROTOCOL_FILE`.
//!
//! Each run gets a fresh, empty file of its own, so a line can only come from the run that
//! wrote it; a measured run that wrote no measurement fails instead of passing with no data.

use std::time::Duration;

use super::{Backend, Launch, Refusal, Repetition};
use crate::capture::Collector;
use crate::config::CaptureKind;
use crate::model::protocol;
use crate::model::results::FailureKind;

pub struct Protocol;

const EXT: &str = "jsonl";

impl Backend for Protocol {
    fn kind(&self) -> CaptureKind {
        CaptureKind::Protocol
    }

    fn prepare(&self, run: &Repetition<'_>, launch: &mut Launch) -> std::io::Result<()> {
        let path = run.scratch_file(EXT);
        std::fs::write(&path, b"")?;
        launch
            .env
            .push((protocol::FILE_ENV.into(), path.display().to_string()));
        Ok(())
    }

    fn collect(
        &self,
        run: &Repetition<'_>,
        _wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal> {
        let path = run.scratch_file(EXT);
        let refused = |message| Refusal {
            kind: FailureKind::Protocol,
            message,
        };
        // The scratch file is gone by the time anyone reads the message: name what the
        // benchmark wrote instead (its `$KGATE_PROTOCOL_FILE` in this run).
        let (number, repetition) = (run.runs_before + 1, run.index);
        let what =
            format!("its $KGATE_PROTOCOL_FILE output in run {number} (repetition {repetition})");
        // Measurements are recorded as they are read; counter and kernel lines wait for the
        // end of the file, whose earliest time may become their origin.
        let mut measured = 0;
        let mut timed = protocol::TimedLines::default();
        crate::store::protocol::for_each_line(&path, |_, line| {
            collector.check_benchmark(&line)?;
            match line {
                protocol::ProtocolLine::Measurement(m) => {
                    measured += 1;
                    collector.add_measurement(run.index, m)
                }
                protocol::ProtocolLine::Counter(c) => {
                    timed.push_counter(c);
                    Ok(())
                }
                protocol::ProtocolLine::Kernel(k) => {
                    timed.push_kernel(k);
                    Ok(())
                }
                protocol::ProtocolLine::Correctness(c) => {
                    collector.add_correctness(c);
                    Ok(())
                }
            }
        })
        .map_err(|e| {
            refused(
                e.to_string()
                    .replace(&format!("protocol file `{}`", path.display()), &what),
            )
        })?;
        collector.add_timed(run.index, timed);
        if measured == 0 {
            return Err(refused("wrote no measurement to $KGATE_PROTOCOL_FILE; a protocol benchmark reports at least one `{\"metric\": …}` line per run".into()));
        }
        let _ = std::fs::remove_file(&path);
        Ok(())
    }
}
