//! `kgate compare` of two results files, read a benchmark at a time.
//!
//! Loaded whole, two runs of 10,000 benchmarks × 20 metrics × 30 samples held every sample and
//! metric of both (150 MB) while one pair was compared at a time. Here the files are read side
//! by side ([`results_pairs`](crate::model::results_pairs)): each pair is gathered as it is
//! read and let go, the samples of its tested metrics parked in a temporary file
//! (`compare/spill.rs`) until the run-wide correction sets the level of their intervals, and
//! read back one metric at a time then. Past [`HELD_ROWS`] metric rows, the rows wait in a
//! second temporary file (`compare/rows.rs`), are read back a benchmark at a time to be
//! decided, and the decided rows go to a third, which the report streams from. What stays in
//! memory is that many rows at most, each tested metric's p-values and where its samples lie,
//! and the report's head. The report is the same as [`compare`](super::compare)'s of the loaded
//! files with the waivers applied; what this reading declines is compared that way.

use std::collections::HashMap;
use std::path::Path;

use super::rows::{DecidedRows, Rows};
use super::spill::{Parked, SampleSpill};
use super::waivers::Active;
use super::{ComparePolicy, Context, Gathered};
use crate::model::evidence::{BenchmarkEvidence, Evidence, Omitted, metric_names};
use crate::model::report::{BenchmarkComparison, ChartedPicker, Design, Report};
use crate::model::results_pairs::{Outline, for_each_pair};
use crate::model::verdict::Verdict;
use crate::stats::inference::JobMedians;

/// A comparison of two files read a benchmark at a time.
pub struct FileComparison {
    /// The report, its rows held or parked in a temporary file (serialized, it streams them).
    pub report: Report<DecidedRows>,
    /// What the two files hold besides their samples.
    pub base: Outline,
    pub head: Outline,
    /// The metrics whose samples the bounded evidence charts, per benchmark
    /// ([`ChartedPicker`]).
    pub charted: HashMap<String, Vec<String>>,
    /// What each benchmark's evidence keeps when none of its metrics is charted, in the
    /// files' pair order ([`BenchmarkEvidence::unshown`]): the bounded evidence reads only
    /// the charted benchmarks again.
    pub unshown: Vec<(BenchmarkEvidence, Omitted)>,
}

impl FileComparison {
    /// Sets the report's evidence, bounded as [`Report::bound_evidence`] bounds it, from the
    /// two files (`base`, `head`) read a benchmark at a time again. False, with nothing
    /// attached, where the files could not be read that way.
    pub fn attach_bounded_evidence(&mut self, base: &Path, head: &Path) -> bool {
        let charted = &self.charted;
        self.report.evidence = Evidence::from_files_bounded(
            (base, &self.base),
            (head, &self.head),
            |name| charted.get(name).map(Vec::as_slice),
            std::mem::take(&mut self.unshown),
        );
        self.report.evidence.is_some()
    }
}

/// Why two files were not compared a benchmark at a time.
#[derive(Debug)]
pub enum NotRead {
    /// The files are to be loaded whole (see [`results_pairs`](crate::model::results_pairs)'s documentation).
    Declined,
    /// A temporary file for the samples or the rows could not be written or read back.
    Spill(std::io::Error),
}

/// How many metric rows a comparison read a benchmark at a time holds, as a rule, before it
/// parks them in temporary files (about 650 bytes each, 16 MB): a suite of 1,000 × 20 metrics
/// is held and pays nothing for the files, one of 10,000 × 20 holds no more than this.
pub const HELD_ROWS: usize = 25_000;

/// Compares two results files (no history: `Design::Files`) reading one benchmark of each at a
/// time; `waivers` apply as the rows are decided. Past `held_rows` metric rows, the rows wait
/// in temporary files and the report streams them from there ([`HELD_ROWS`] as a rule;
/// `usize::MAX` for a report that holds them anyway).
pub fn compare_files(
    base: &Path,
    head: &Path,
    policy: &ComparePolicy,
    waivers: Option<&Active<'_>>,
    held_rows: usize,
) -> Result<FileComparison, NotRead> {
    // The two outlines are read at once, one on a thread of its own.
    let (base_outline, head_outline) = std::thread::scope(|scope| {
        let base_outline = scope.spawn(|| Outline::read(base));
        let head_outline = Outline::read(head);
        (base_outline.join().ok().flatten(), head_outline)
    });
    let (Some(base_outline), Some(head_outline)) = (base_outline, head_outline) else {
        return Err(NotRead::Declined);
    };
    let medians = JobMedians::new();
    let ctx = Context::new(
        policy,
        head_outline.looks.clone(),
        &medians,
        Design::Files,
        &base_outline.header,
        &head_outline.header,
    );
    let mut spill = SampleSpill::new().map_err(NotRead::Spill)?;
    let mut gathered: Gathered<Parked> = Gathered::holding(held_rows);
    let mut one_sided = HashMap::new();
    let mut unshown = Vec::new();
    let mut spill_failure = None;
    let read = for_each_pair(
        (base, &base_outline),
        (head, &head_outline),
        |_| true,
        |name, b, h| {
            if spill_failure.is_some() {
                return;
            }
            unshown.push(BenchmarkEvidence::unshown(name, b.as_ref(), h.as_ref()));
            let Some(h) = h else {
                gathered.missing.push(name.to_string());
                one_sided.insert(name.to_string(), owned(metric_names(b.as_ref(), None)));
                return;
            };
            match gathered.add(b.as_ref(), &h, &ctx, |p| p.park(&mut spill)) {
                Err(e) => spill_failure = Some(e),
                Ok(Verdict::New | Verdict::Missing | Verdict::Failed) => {
                    one_sided.insert(name.to_string(), owned(metric_names(b.as_ref(), Some(&h))));
                }
                Ok(_) => {}
            }
        },
    );
    if let Some(e) = spill_failure {
        return Err(NotRead::Spill(e));
    }
    read.ok_or(NotRead::Declined)?;
    let mut picker = ChartedPicker::default();
    let watch = |b: &BenchmarkComparison| {
        picker.offer(b, |name| {
            let names = one_sided.get(name).into_iter().flatten();
            names.map(String::as_str).collect()
        })
    };
    let rows = Rows::new(held_rows);
    let report = gathered
        .conclude(
            (&base_outline.header, &head_outline.header),
            &ctx,
            Some(&mut spill),
            waivers,
            (rows, watch),
        )
        .map_err(NotRead::Spill)?;
    Ok(FileComparison {
        report,
        base: base_outline,
        head: head_outline,
        charted: picker.finish(),
        unshown,
    })
}

fn owned(names: Vec<&str>) -> Vec<String> {
    names.into_iter().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fsutil::Overwrite;
    use crate::model::metric::{Direction, GateRule, Source, Tolerance};
    use crate::model::report::ReportRows;
    use crate::model::results::{
        Artifact, BenchmarkResult, CounterSeries, Failure, FailureKind, JsonLayout, Look,
        MetricSamples, Provenance, RunResults, Status,
    };
    use crate::stats::inference::Xorshift;

    /// A benchmark of random metrics: shifted or not, few or many samples, some non-positive,
    /// deterministic, informational, of another unit; failed now and then.
    fn benchmark(rng: &mut Xorshift, name: &str, shift: f64) -> BenchmarkResult {
        let mut b = BenchmarkResult::new(name, Provenance::default());
        let pick = |rng: &mut Xorshift, n: u64| rng.next_u64() % n;
        if pick(rng, 25) == 0 {
            b.status = Status::Failed;
            b.failure = Some(Failure {
                kind: FailureKind::ExitStatus,
                message: "exit status 1".into(),
                stderr_tail: String::new(),
            });
        }
        if pick(rng, 12) == 0 {
            b.provenance.details.insert(
                crate::derive::utilization::CONFIG_DETAIL.into(),
                format!("profile {}", pick(rng, 2)),
            );
            b.provenance.details.insert(
                crate::derive::utilization::METRICS_DETAIL.into(),
                "m0,m2".into(),
            );
        }
        for m in 0..1 + pick(rng, 5) {
            if pick(rng, 10) == 0 {
                continue; // a metric on this side only
            }
            let n = match pick(rng, 6) {
                0 => 1 + pick(rng, 3),
                1 => 40 + pick(rng, 40),
                _ => 6 + pick(rng, 14),
            } as usize;
            let level = if pick(rng, 15) == 0 { 0.0 } else { 100.0 };
            let values = (0..n)
                .map(|_| level * (1.0 + shift) + rng.uniform() * 4.0 - 1.0)
                .collect::<Vec<f64>>();
            let mut gate = GateRule {
                gates: pick(rng, 6) != 0,
                threshold: [0.01, 0.05, 0.5][pick(rng, 3) as usize],
                tolerance: None,
            };
            if pick(rng, 8) == 0 {
                gate.tolerance = Some(Tolerance::Relative(0.02));
            }
            b.metrics.push(MetricSamples {
                name: format!("m{m}"),
                unit: if pick(rng, 30) == 0 { "us" } else { "ns" }.into(),
                source: [Source::Timer, Source::Simulated, Source::Reported][pick(rng, 3) as usize],
                direction: if pick(rng, 4) == 0 {
                    Direction::Higher
                } else {
                    Direction::Lower
                },
                gate,
                repetition: (0..n as u32).collect(),
                values,
            });
        }
        if pick(rng, 5) == 0 {
            let text = format!("ir version {}", pick(rng, 2));
            b.artifacts.insert(
                "ir".into(),
                Artifact {
                    path: "kernel.ll".into(),
                    text,
                    truncated: false,
                },
            );
        }
        if pick(rng, 6) == 0 {
            let mut series = CounterSeries::new("sm__cycles_active", 0);
            for k in 0..pick(rng, 1500) {
                series.t_ns.push(k as f64 * 10.0);
                series.value.push((k * k % 97) as f64);
            }
            b.counters.push(series);
        }
        if pick(rng, 10) == 0 {
            // An adaptive run's looks recorded without a schedule: alpha / looks at each.
            b.looks.push(Look {
                n: 10,
                of: 2 + pick(rng, 3) as u32,
                alpha: 0.005,
                verdict: Verdict::Inconclusive,
                schedule: None,
            });
        }
        b.repetitions = b.metrics.first().map_or(0, |m| m.values.len() as u32);
        b
    }

    /// Two runs: the candidate's benchmarks mostly in the baseline's order, some moved, new or
    /// gone.
    fn runs(rng: &mut Xorshift) -> (RunResults, RunResults) {
        let count = 1 + rng.next_u64() % 40;
        let mut base = Vec::new();
        let mut head = Vec::new();
        for i in 0..count {
            let name = format!("bench {i}");
            let shift = [0.0, 0.0, 0.03, -0.2][(rng.next_u64() % 4) as usize];
            match rng.next_u64() % 10 {
                0 => base.push(benchmark(rng, &name, 0.0)),
                1 => head.push(benchmark(rng, &name, shift)),
                _ => {
                    base.push(benchmark(rng, &name, 0.0));
                    head.push(benchmark(rng, &name, shift));
                }
            }
        }
        if rng.next_u64().is_multiple_of(3) && head.len() > 2 {
            let (a, b) = (
                (rng.next_u64() % head.len() as u64) as usize,
                (rng.next_u64() % head.len() as u64) as usize,
            );
            head.swap(a, b);
        }
        (RunResults::of(base), RunResults::of(head))
    }

    /// Waivers of some of the regressions `runs` makes, one expired.
    const WAIVERS: &str = "waivers:\n  - benchmark: \"bench 1*\"\n    metric: \"*\"\n    reason: a fix costs this\n    expires: 2027-01-01\n  - benchmark: \"bench 2*\"\n    metric: m1\n    reason: known\n    expires: 2026-01-01\n  - benchmark: \"bench [3-9]\"\n    metric: m0\n    reason: accepted\n    expires: 2027-01-01\n";

    fn json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn a_benchmark_at_a_time_gives_the_report_and_evidence_of_the_loaded_files() {
        let dir = tempfile::tempdir().unwrap();
        let (base_path, head_path) = (dir.path().join("base.json"), dir.path().join("head.json"));
        let mut rng = Xorshift::new(20_261_205);
        let (mut moved, mut missing, mut decided, mut left_out, mut looks) = (0, 0, 0, 0, 0);
        let (mut waived, mut parked) = (0, 0);
        for trial in 0..80 {
            let (base, head) = runs(&mut rng);
            for (run, path) in [(&base, &base_path), (&head, &head_path)] {
                let layout = [JsonLayout::Compact, JsonLayout::Pretty][trial % 2];
                run.save_as(path, Overwrite::Allow, layout).unwrap();
            }
            let policy = ComparePolicy::default();
            let (base, head) = (
                RunResults::load(&base_path).unwrap(),
                RunResults::load(&head_path).unwrap(),
            );
            // Half the trials waive some regressions, one waiver expired.
            let waivers = match trial % 2 {
                0 => Vec::new(),
                _ => super::super::waivers::parse(WAIVERS, "waivers.yaml").unwrap(),
            };
            let clock = super::super::waivers::Clock {
                today: "2026-12-05".into(),
                repo: None,
            };
            let mut loaded = super::super::compare(&base, &head, &policy, Design::Files);
            super::super::waivers::apply(&mut loaded, &waivers, &clock);
            loaded.attach_bounded_evidence(Some(&base), &head);
            let active = Active::new(&waivers, &clock);
            let active = (!waivers.is_empty()).then_some(&active);
            // Rows held, parked from the start, or parked part way.
            let held_rows = [usize::MAX, 0, 40][trial % 3];
            let mut read =
                compare_files(&base_path, &head_path, &policy, active, held_rows).unwrap();
            parked += usize::from(matches!(read.report.benchmarks, DecidedRows::Parked(_)));
            assert!(read.attach_bounded_evidence(&base_path, &head_path));
            // Row by row and benchmark by benchmark first, for a message that shows where.
            let mut rows = Vec::new();
            let mut keep = |r: &BenchmarkComparison| {
                rows.push(r.clone());
                Ok(())
            };
            read.report.benchmarks.each_row(&mut keep).unwrap();
            let evidence = &loaded.benchmarks;
            assert_eq!(rows.len(), evidence.len(), "trial {trial}");
            for (a, b) in rows.iter().zip(evidence) {
                assert_eq!(json(a), json(b), "trial {trial}");
                assert_eq!(a, b, "trial {trial}");
            }
            waived += loaded.summary.waived;
            assert_eq!(read.report.summary, loaded.summary, "trial {trial}");
            let (a, b) = (read.report.evidence.as_ref(), loaded.evidence.as_ref());
            let (a, b) = (a.unwrap(), b.unwrap());
            assert_eq!(a.benchmarks.len(), b.benchmarks.len(), "trial {trial}");
            for (a, b) in a.benchmarks.iter().zip(&b.benchmarks) {
                assert_eq!(json(a), json(b), "trial {trial}");
            }
            assert_eq!(a.omitted, b.omitted, "trial {trial}");
            assert_eq!(json(&read.report), json(&loaded), "trial {trial}");
            assert_eq!(
                serde_json::to_string_pretty(&read.report).unwrap(),
                serde_json::to_string_pretty(&loaded).unwrap(),
                "trial {trial}"
            );
            let failed = |r: &RunResults| {
                let names: Vec<&str> = r
                    .benchmarks
                    .iter()
                    .filter(|b| b.status == Status::Failed)
                    .map(|b| b.name.as_str())
                    .collect();
                names.join(",")
            };
            assert_eq!(failed(&read.base.failures()), failed(&base));
            assert_eq!(read.head.looks, super::super::run_looks(&head));
            looks += usize::from(read.head.looks.count() > 1);
            // The names both runs hold, in the order of `run`.
            let shared = |run: &RunResults, other: &RunResults| -> Vec<String> {
                let names = run.benchmarks.iter().map(|b| b.name.clone());
                names.filter(|n| other.benchmark(n).is_some()).collect()
            };
            moved += usize::from(shared(&base, &head) != shared(&head, &base));
            missing += loaded.summary.missing;
            left_out += loaded
                .evidence
                .as_ref()
                .and_then(|e| e.omitted.as_ref())
                .map_or(0, |o| o.benchmarks);
            decided += loaded
                .benchmarks
                .iter()
                .flat_map(|b| &b.metrics)
                .filter(|m| m.ci.is_some())
                .count();
        }
        // The trials reached what they are for.
        assert!(
            moved > 5 && missing > 25 && decided > 500 && left_out > 100 && looks > 10,
            "{moved} {missing} {decided} {left_out} {looks}"
        );
        assert!(waived > 5 && parked > 40, "{waived} {parked}");
    }

    #[test]
    fn files_it_cannot_read_a_benchmark_at_a_time_are_declined() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        let mut rng = Xorshift::new(7);
        let (base, _) = runs(&mut rng);
        base.save_as(&path("base.json"), Overwrite::Allow, JsonLayout::Compact)
            .unwrap();
        let mut twice = RunResults::of(vec![BenchmarkResult::new("a", Provenance::default())]);
        twice.benchmarks.push(twice.benchmarks[0].clone());
        twice
            .save_as(&path("twice.json"), Overwrite::Allow, JsonLayout::Compact)
            .unwrap();
        std::fs::write(
            path("other.json"),
            r#"{"schema_version": 1, "benchmarks": []}"#,
        )
        .unwrap();
        std::fs::write(path("broken.json"), r#"{"schema_version": 2, "benchm"#).unwrap();
        let policy = ComparePolicy::default();
        for other in ["twice.json", "other.json", "broken.json", "absent.json"] {
            assert!(
                matches!(
                    compare_files(&path("base.json"), &path(other), &policy, None, 0),
                    Err(NotRead::Declined)
                ),
                "{other}"
            );
        }
        // A metric whose repetition numbers do not pair with its values is damage the whole
        // reading names.
        let mut text = std::fs::read_to_string(path("base.json")).unwrap();
        text = text.replacen("\"values\":[", "\"repetition\":[0],\"values\":[", 1);
        std::fs::write(path("damaged.json"), text).unwrap();
        assert!(RunResults::load(&path("damaged.json")).is_err());
        assert!(matches!(
            compare_files(&path("base.json"), &path("damaged.json"), &policy, None, 0),
            Err(NotRead::Declined)
        ));
    }
}
