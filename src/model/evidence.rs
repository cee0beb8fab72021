//! Evidence: the numbers behind a report's verdicts, carried inside the report for charts,
//! counter tables and artifact diffs.
//!
//! A verdict row says *what* changed; people believe it once they see the samples of both
//! sides, the counter timeline and the diff of the lowered code. Those live in the two result
//! files, which a stored report (`kgate report FILE`) no longer has at hand, so the report
//! carries a compact copy: per benchmark, each metric's samples in repetition order, each
//! counter's readings, and the artifacts of both sides.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::results::{BenchmarkResult, RunResults};

/// The evidence of a whole comparison, one entry per benchmark present on either side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    pub benchmarks: Vec<BenchmarkEvidence>,
}

/// One benchmark's samples, counters and artifacts, baseline and candidate side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkEvidence {
    pub name: String,
    /// Samples per metric, in the order they were measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<SamplePair>,
    /// Counter readings per counter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CounterPair>,
    /// Artifacts per declared name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<ArtifactPair>,
}

/// A metric's samples on both sides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SamplePair {
    pub name: String,
    pub unit: String,
    #[serde(default)]
    pub base: Vec<f64>,
    #[serde(default)]
    pub head: Vec<f64>,
    /// Medians of the jobs recorded in the history store for this environment, oldest first
    /// (`kgate check --record`), for a trend chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<f64>,
}

/// A counter's readings on both sides: `[t_ns, value]` pairs of the first repetition that
/// reported it (a timeline), and the per-repetition means (for a table).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterPair {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    #[serde(default)]
    pub base: CounterSide,
    #[serde(default)]
    pub head: CounterSide,
}

/// One side of a counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterSide {
    /// `[t_ns, value]` readings of the first repetition that reported the counter.
    #[serde(default)]
    pub timeline: Vec<[f64; 2]>,
    /// The mean reading of each repetition.
    #[serde(default)]
    pub repetition_means: Vec<f64>,
}

/// An artifact's text on both sides; `None` where that side did not write it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactPair {
    pub name: String,
    pub path: String,
    pub base: Option<String>,
    pub head: Option<String>,
    /// Whether either side was cut at the size cap.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl ArtifactPair {
    /// Whether the two sides differ (an artifact on one side only counts as a change).
    pub fn changed(&self) -> bool {
        self.base != self.head
    }
}

impl Evidence {
    /// Collects the evidence of two runs; benchmarks in the candidate's order, then those only
    /// in the baseline.
    pub fn from_runs(base: Option<&RunResults>, head: &RunResults) -> Evidence {
        let mut benchmarks: Vec<BenchmarkEvidence> = head
            .benchmarks
            .iter()
            .map(|h| {
                let b = base.and_then(|b| b.benchmark(&h.name));
                BenchmarkEvidence::from_results(&h.name, b, Some(h))
            })
            .collect();
        if let Some(base) = base {
            for b in &base.benchmarks {
                if head.benchmark(&b.name).is_none() {
                    benchmarks.push(BenchmarkEvidence::from_results(&b.name, Some(b), None));
                }
            }
        }
        Evidence { benchmarks }
    }

    /// The evidence of a benchmark, by name.
    pub fn benchmark(&self, name: &str) -> Option<&BenchmarkEvidence> {
        self.benchmarks.iter().find(|b| b.name == name)
    }
}

impl BenchmarkEvidence {
    fn from_results(
        name: &str,
        base: Option<&BenchmarkResult>,
        head: Option<&BenchmarkResult>,
    ) -> BenchmarkEvidence {
        let mut metrics: Vec<SamplePair> = Vec::new();
        for (is_head, side) in [(false, base), (true, head)] {
            for m in side.iter().flat_map(|r| &r.metrics) {
                let idx = match metrics.iter().position(|p| p.name == m.name) {
                    Some(i) => i,
                    None => {
                        metrics.push(SamplePair {
                            name: m.name.clone(),
                            unit: m.unit.clone(),
                            ..SamplePair::default()
                        });
                        metrics.len() - 1
                    }
                };
                let values = m.values.clone();
                if is_head {
                    metrics[idx].head = values;
                } else {
                    metrics[idx].base = values;
                }
            }
        }
        let mut counters: BTreeMap<String, CounterPair> = BTreeMap::new();
        for (is_head, side) in [(false, base), (true, head)] {
            let Some(r) = side else { continue };
            let mut by_counter: BTreeMap<
                &str,
                BTreeMap<u32, Vec<&crate::model::results::CounterReading>>,
            > = BTreeMap::new();
            for c in &r.counters {
                by_counter
                    .entry(c.counter.as_str())
                    .or_default()
                    .entry(c.repetition)
                    .or_default()
                    .push(c);
            }
            for (counter, reps) in by_counter {
                let pair = counters
                    .entry(counter.to_string())
                    .or_insert_with(|| CounterPair {
                        name: counter.to_string(),
                        ..CounterPair::default()
                    });
                let first = reps.values().next().cloned().unwrap_or_default();
                if pair.unit.is_empty() {
                    pair.unit = first.first().map(|c| c.unit.clone()).unwrap_or_default();
                }
                let mut timeline: Vec<[f64; 2]> = first.iter().map(|c| [c.t_ns, c.value]).collect();
                timeline.sort_by(|a, b| a[0].total_cmp(&b[0]));
                let side = CounterSide {
                    timeline,
                    repetition_means: reps
                        .values()
                        .map(|rs| rs.iter().map(|c| c.value).sum::<f64>() / rs.len() as f64)
                        .collect(),
                };
                if is_head {
                    pair.head = side;
                } else {
                    pair.base = side;
                }
            }
        }
        let mut artifacts: BTreeMap<String, ArtifactPair> = BTreeMap::new();
        for (is_head, side) in [(false, base), (true, head)] {
            for (name, a) in side.iter().flat_map(|r| &r.artifacts) {
                let pair = artifacts
                    .entry(name.clone())
                    .or_insert_with(|| ArtifactPair {
                        name: name.clone(),
                        path: a.path.clone(),
                        ..ArtifactPair::default()
                    });
                pair.truncated |= a.truncated;
                if is_head {
                    pair.head = Some(a.text.clone());
                } else {
                    pair.base = Some(a.text.clone());
                }
            }
        }
        BenchmarkEvidence {
            name: name.to_string(),
            metrics,
            counters: counters.into_values().collect(),
            artifacts: artifacts.into_values().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{Direction, GateRule, Source};
    use crate::model::results::{Artifact, CounterReading, MetricSamples, Provenance};

    fn result(name: &str, times: &[f64], util: &[(u32, f64, f64)], ir: &str) -> BenchmarkResult {
        let mut r = BenchmarkResult::new(name, Provenance::default());
        r.metrics.push(MetricSamples {
            name: "kernel_time".into(),
            unit: "ns".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule::default(),
            values: times.to_vec(),
            repetition: (0..times.len() as u32).collect(),
        });
        for &(repetition, t_ns, value) in util {
            r.counters.push(CounterReading {
                repetition,
                counter: "sm_util".into(),
                t_ns,
                value,
                unit: "%".into(),
                bits: None,
                core: None,
                sampling: None,
            });
        }
        r.artifacts.insert(
            "ptx".into(),
            Artifact {
                path: "out.ptx".into(),
                text: ir.into(),
                truncated: false,
            },
        );
        r
    }

    #[test]
    fn pairs_samples_counters_and_artifacts_by_name() {
        let base = result(
            "mm",
            &[3.0, 1.0],
            &[(0, 20.0, 50.0), (0, 10.0, 40.0), (1, 5.0, 70.0)],
            "a\n",
        );
        let head = result("mm", &[2.0], &[(0, 10.0, 90.0)], "b\n");
        let pair = BenchmarkEvidence::from_results("mm", Some(&base), Some(&head));
        assert_eq!(pair.metrics[0].base, vec![3.0, 1.0]);
        assert_eq!(pair.metrics[0].head, vec![2.0]);
        let util = &pair.counters[0];
        assert_eq!(util.unit, "%");
        assert_eq!(util.base.timeline, vec![[10.0, 40.0], [20.0, 50.0]]);
        assert_eq!(util.base.repetition_means, vec![45.0, 70.0]);
        assert_eq!(util.head.repetition_means, vec![90.0]);
        assert!(pair.artifacts[0].changed());
        assert_eq!(pair.artifacts[0].base.as_deref(), Some("a\n"));
    }
}
