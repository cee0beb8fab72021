//! `kgate import protocol`: kgate protocol files written by benchmarks run elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::builder::Benchmarks;
use super::{ImportContext, ImportError, Importer, Policies};
use crate::model::protocol;
use crate::model::results::RunResults;

/// `kgate import protocol`.
pub struct Protocol;

impl Importer for Protocol {
    fn name(&self) -> &'static str {
        "protocol"
    }

    fn help(&self) -> &'static str {
        "kgate protocol JSON lines"
    }

    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import(files, &ctx.policies)
    }
}

/// Builds results from protocol files. Lines with a `benchmark` key go to that benchmark;
/// lines without it go to a benchmark named after the file (its stem). Each file counts as one
/// repetition of the benchmarks it holds. `policies` gives per-benchmark metric settings (from
/// a configuration); others get `fallback`.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "protocol");
    let mut reps: BTreeMap<String, u32> = BTreeMap::new();
    for path in files {
        let lines = protocol::read_file(path)?;
        let stem = file_benchmark_name(path);
        let mut by_benchmark: BTreeMap<String, Vec<protocol::ProtocolLine>> = BTreeMap::new();
        for line in lines {
            let name = line
                .benchmark()
                .map(str::to_string)
                .unwrap_or_else(|| stem.clone());
            by_benchmark.entry(name).or_default().push(line);
        }
        if by_benchmark.is_empty() {
            return Err(ImportError::Content {
                path: path.clone(),
                message: "holds no protocol lines".into(),
            });
        }
        for (name, lines) in by_benchmark {
            let collector = benchmarks.get(&name);
            let rep = reps.entry(name.clone()).or_insert(0);
            let recorded = collector
                .add_protocol(*rep, lines, false)
                .map_err(|message| ImportError::Content {
                    path: path.clone(),
                    message,
                })?;
            let result = collector.result_mut();
            result
                .provenance
                .imported_from
                .push(path.display().to_string());
            if recorded > 0 {
                result.repetitions += 1;
                *rep += 1;
            }
        }
    }
    Ok(benchmarks.into_results())
}

/// `out/matmul.jsonl` → `matmul`.
pub(crate) fn file_benchmark_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    name.split('.')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(&name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MetricPolicy;

    #[test]
    fn files_and_benchmark_keys_group_samples() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("matmul.jsonl");
        let b = dir.path().join("run2.jsonl");
        std::fs::write(&a, "{\"metric\": \"kernel_time\", \"value\": 88, \"unit\": \"us\"}\n{\"metric\": \"kernel_time\", \"value\": 90, \"unit\": \"us\"}\n").unwrap();
        std::fs::write(&b, "{\"metric\": \"kernel_time\", \"value\": 1, \"unit\": \"ms\", \"benchmark\": \"matmul\"}\n{\"metric\": \"t\", \"value\": 5, \"benchmark\": \"reduce\"}\n{\"kernel\": \"k\", \"start_ns\": 0, \"end_ns\": 5, \"benchmark\": \"reduce\"}\n").unwrap();
        let policies = Policies::new(BTreeMap::new(), MetricPolicy::permissive(0.05));
        let r = import(&[a, b], &policies).unwrap();
        assert_eq!(r.benchmarks.len(), 2);
        let mm = r.benchmark("matmul").unwrap();
        assert_eq!(mm.repetitions, 2);
        assert_eq!(mm.metrics[0].values, vec![88_000.0, 90_000.0, 1_000_000.0]);
        assert_eq!(mm.metrics[0].repetition, vec![0, 0, 1]);
        let red = r.benchmark("reduce").unwrap();
        assert_eq!(red.kernel_windows.len(), 1);
        assert_eq!(red.provenance.imported_from.len(), 1);
    }
}
