//! The `ncu` backend: runs each repetition under Nsight Compute and turns its CSV into
//! samples.
//!
//! kgate wraps the benchmark's own command as
//! `ncu --csv --page raw --print-units base --log-file FILE --metrics … [--clock-control …]
//! [--cache-control …] [--kernel-name …] [--launch-skip N] [--launch-count N] PROGRAM ARGS…`,
//! with `LC_ALL=C` so numbers are not grouped by locale, and reads FILE with the same parser as
//! `kgate import ncu`. The log file (not stdout) keeps ncu's output apart from the program's.
//! Every profiled launch is one sample of the repetition that ran it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Backend, Launch, Refusal, Repetition};
use crate::capture::Collector;
use crate::capture::ncu::{self, NcuReport};
use crate::config::{CaptureKind, NcuConfig};
use crate::model::results::FailureKind;

pub struct Ncu;

/// The log file's extension.
const EXT: &str = "ncu.csv";

impl Backend for Ncu {
    fn kind(&self) -> CaptureKind {
        CaptureKind::Ncu
    }

    /// ncu's first line of `--version` is its name, not its version: the parsed version, as
    /// the import records it from the same output.
    fn tool_versions(&self) -> Vec<(String, String)> {
        Vec::from_iter(version().map(|v| ("ncu".to_string(), v)))
    }

    fn prepare(&self, run: &Repetition<'_>, launch: &mut Launch) -> std::io::Result<()> {
        launch.argv = wrap(&run.plan.ncu, &launch.argv, &run.scratch_file(EXT));
        launch
            .env
            .extend(ENV.map(|(k, v)| (k.to_string(), v.to_string())));
        Ok(())
    }

    fn explain(&self, run: &Repetition<'_>) -> Option<String> {
        messages(&run.scratch_file(EXT)).map(|said| format!("ncu said: {said}"))
    }

    fn collect(
        &self,
        run: &Repetition<'_>,
        _wall: Duration,
        collector: &mut Collector<'_>,
    ) -> Result<(), Refusal> {
        collect(&run.scratch_file(EXT), &run.plan.ncu, run.index, collector).map_err(|message| {
            Refusal {
                kind: FailureKind::Profiler,
                message,
            }
        })
    }
}

/// The program run as `ncu`: `$KGATE_NCU` when set, else `ncu` from `PATH`.
fn program() -> String {
    std::env::var("KGATE_NCU").unwrap_or_else(|_| "ncu".to_string())
}

/// Metrics collected when the configuration lists none: kernel time, SM and memory
/// throughput, the cycles and measured clock needed for utilization, and DRAM traffic.
const DEFAULT_METRICS: [&str; 8] = [
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "gpc__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
];

/// The argument vector that runs `argv` under ncu, writing its CSV to `log`.
fn wrap(settings: &NcuConfig, argv: &[String], log: &Path) -> Vec<String> {
    let metrics = match &settings.metrics {
        Some(m) if !m.is_empty() => m.join(","),
        _ => DEFAULT_METRICS.join(","),
    };
    #[rustfmt::skip]
    let mut out: Vec<String> = vec![
        program(), "--csv".into(), "--page".into(), "raw".into(), "--print-units".into(), "base".into(),
        "--log-file".into(), log.display().to_string(), "--metrics".into(), metrics,
    ];
    if let Some(c) = settings.clock_control {
        out.extend(["--clock-control".into(), c.as_str().into()]);
    }
    if let Some(c) = settings.cache_control {
        out.extend(["--cache-control".into(), c.as_str().into()]);
    }
    if let Some(k) = &settings.kernel_name {
        out.extend(["--kernel-name".into(), k.clone()]);
    }
    if let Some(n) = settings.launch_skip {
        out.extend(["--launch-skip".into(), n.to_string()]);
    }
    if let Some(n) = settings.launch_count {
        out.extend(["--launch-count".into(), n.to_string()]);
    }
    out.extend(argv.iter().cloned());
    out
}

/// Environment the wrapped run needs: numbers without locale grouping.
const ENV: [(&str, &str); 1] = [("LC_ALL", "C")];

/// Reads the CSV of one measured repetition into `collector`; the message says what went
/// wrong (ncu's own words when it wrote no CSV).
fn collect(
    log: &Path,
    settings: &NcuConfig,
    repetition: u32,
    collector: &mut Collector<'_>,
) -> Result<(), String> {
    let report =
        ncu::parse_file(log).map_err(|e| format!("ncu output `{}`: {e}", log.display()))?;
    record(&report, repetition, collector)?;
    let details = &mut collector.result_mut().provenance.details;
    ncu::annotate_details(&report, details);
    if let Some(c) = settings.clock_control {
        details.insert("ncu.clock_control".into(), c.as_str().into());
    }
    if let Some(c) = settings.cache_control {
        details.insert("ncu.cache_control".into(), c.as_str().into());
    }
    if !details.contains_key("ncu.version")
        && let Some(v) = version()
    {
        details.insert("ncu.version".into(), v);
    }
    Ok(())
}

/// Records every launch as a sample at `repetition`. When several kernels ran, a metric is
/// named `kernel/metric`, so one kernel's numbers never mix with another's.
fn record(
    report: &NcuReport,
    repetition: u32,
    collector: &mut Collector<'_>,
) -> Result<(), String> {
    let kernels: std::collections::BTreeSet<&str> =
        report.launches.iter().map(|l| l.kernel.as_str()).collect();
    for launch in &report.launches {
        for (position, value) in launch.values.iter() {
            let m = &report.metrics[position];
            let name = if kernels.len() > 1 {
                format!("{}/{}", launch.kernel, m.name)
            } else {
                m.name.clone()
            };
            collector.add_value(repetition, &name, &m.unit, m.source, m.direction, value)?;
        }
    }
    Ok(())
}

/// ncu's error and warning lines from a log, for the failure message of a run that failed.
fn messages(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("==ERROR==") || l.starts_with("==WARNING=="))
        .collect();
    (!lines.is_empty()).then(|| lines.join(" "))
}

/// `ncu --version`, parsed; `None` when it cannot be run.
fn version() -> Option<String> {
    let out = Command::new(program()).arg("--version").output().ok()?;
    ncu::parse_version(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CacheControl, ClockControl};

    #[test]
    fn the_command_is_wrapped_with_every_setting() {
        let settings = NcuConfig {
            metrics: Some(vec![
                "gpu__time_duration.sum".into(),
                "sm__cycles_active.avg".into(),
            ]),
            clock_control: Some(ClockControl::None),
            cache_control: Some(CacheControl::All),
            kernel_name: Some("regex:matmul_.*".into()),
            launch_skip: Some(2),
            launch_count: Some(5),
        };
        let argv = wrap(
            &settings,
            &["./matmul".to_string(), "--n".into(), "512".into()],
            Path::new("/tmp/x/ncu-0.csv"),
        );
        let ncu = program();
        #[rustfmt::skip]
        let expected = [
            ncu.as_str(), "--csv", "--page", "raw", "--print-units", "base",
            "--log-file", "/tmp/x/ncu-0.csv",
            "--metrics", "gpu__time_duration.sum,sm__cycles_active.avg",
            "--clock-control", "none", "--cache-control", "all",
            "--kernel-name", "regex:matmul_.*", "--launch-skip", "2", "--launch-count", "5",
            "./matmul", "--n", "512",
        ];
        assert_eq!(argv, expected);
        let plain = wrap(
            &NcuConfig::default(),
            &["./b".to_string()],
            Path::new("l.csv"),
        );
        assert_eq!(plain[9], DEFAULT_METRICS.join(","));
        assert_eq!(plain.len(), 11, "no optional flag without its setting");
    }

    #[test]
    fn settings_parse_from_yaml_and_reject_unknown_values() {
        let s: NcuConfig = serde_saphyr::from_str(
            "metrics: [gpu__time_duration.sum]\nclock_control: base\ncache_control: none\nkernel_name: mm\nlaunch_skip: 1\nlaunch_count: 3\n",
        )
        .unwrap();
        assert_eq!(s.clock_control, Some(ClockControl::Base));
        assert_eq!(s.cache_control, Some(CacheControl::None));
        assert_eq!(s.launch_count, Some(3));
        assert!(serde_saphyr::from_str::<NcuConfig>("clock_control: turbo\n").is_err());
        assert!(serde_saphyr::from_str::<NcuConfig>("launches: 3\n").is_err());
    }
}
