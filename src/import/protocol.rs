//! `kgate import protocol`: kgate protocol files written by benchmarks run elsewhere.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::builder::Benchmarks;
use super::{ImportError, Importer, Policies, content};
use crate::model::protocol;
use crate::model::results::RunResults;

pub static PROTOCOL: Importer = Importer {
    name: "protocol",
    help: "kgate protocol JSON lines",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Builds results from protocol files. Lines with a `benchmark` key go to that benchmark;
/// lines without it go to a benchmark named after the file (its stem). Each file counts as one
/// repetition of the benchmarks it holds. `policies` gives per-benchmark metric settings (from
/// a configuration); others get `fallback`.
///
/// A file is read as it is parsed: measurements go to their benchmark as they are read, so a
/// file of millions of them is held as its samples, not as its lines. Counter and kernel lines
/// wait for the end of the file, since their times may be moved onto the repetition's
/// earliest ([`protocol::TimedLines::rebase_times`]). Benchmarks are listed in the order of
/// the file that first names them, by name within a file.
fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "protocol");
    // Looked up per line, by hash: a tree of a thousand names compared a line's name with
    // ten of them, twice, and those comparisons were a seventh of the import.
    let mut reps: FxHashMap<String, u32> = FxHashMap::default();
    // The file that first named each benchmark, for the order of the results.
    let mut first_file: HashMap<String, usize> = HashMap::new();
    for (file_index, path) in files.iter().enumerate() {
        let stem = file_benchmark_name(path);
        let mut in_file: FxHashMap<String, Held> = FxHashMap::default();
        crate::store::protocol::for_each_line(path, |_, line| {
            let name = line.benchmark().unwrap_or(&stem);
            if !in_file.contains_key(name) {
                first_file.entry(name.to_string()).or_insert(file_index);
                in_file.insert(name.to_string(), Held::default());
            }
            let held = in_file.get_mut(name).expect("inserted above");
            match line {
                protocol::ProtocolLine::Measurement(m) => {
                    let name = m.benchmark.as_deref().unwrap_or(&stem);
                    let rep = reps.get(name).copied().unwrap_or(0);
                    benchmarks.get(name).add_measurement(rep, m)?;
                    held.measurements += 1;
                }
                protocol::ProtocolLine::Counter(c) => held.timed.push_counter(c),
                protocol::ProtocolLine::Kernel(k) => held.timed.push_kernel(k),
                protocol::ProtocolLine::Correctness(c) => {
                    let name = c.benchmark.as_deref().unwrap_or(&stem);
                    benchmarks.get(name).add_correctness(c);
                }
            }
            Ok(())
        })?;
        if in_file.is_empty() {
            return Err(content(path, "holds no protocol lines".into()));
        }
        let mut in_file: Vec<(String, Held)> = in_file.into_iter().collect();
        in_file.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, held) in in_file {
            let collector = benchmarks.get(&name);
            let rep = reps.entry(name.clone()).or_insert(0);
            collector.add_timed(*rep, held.timed);
            let result = collector.result_mut();
            let shown = path.display().to_string();
            result.provenance.imported_from.push(shown);
            if held.measurements > 0 {
                result.repetitions += 1;
                *rep += 1;
            }
        }
    }
    benchmarks.sort_by_key(|name| (first_file.get(name).copied(), name.to_string()));
    Ok(benchmarks.into_results())
}

/// What a file holds for one benchmark while it is read: how many measurements went to the
/// benchmark, and its counter and kernel lines.
#[derive(Default)]
struct Held {
    measurements: usize,
    timed: protocol::TimedLines,
}

/// `out/matmul.jsonl` → `matmul`.
pub(crate) fn file_benchmark_name(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string());
    let name = name.unwrap_or_default();
    let stem = name.split('.').next().filter(|s| !s.is_empty());
    stem.unwrap_or(&name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_benchmark_keys_group_samples() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("matmul.jsonl");
        let b = dir.path().join("run2.jsonl");
        std::fs::write(&a, "{\"metric\": \"kernel_time\", \"value\": 88, \"unit\": \"us\"}\n{\"metric\": \"kernel_time\", \"value\": 90, \"unit\": \"us\"}\n").unwrap();
        std::fs::write(&b, "{\"metric\": \"kernel_time\", \"value\": 1, \"unit\": \"ms\", \"benchmark\": \"matmul\"}\n{\"metric\": \"t\", \"value\": 5, \"benchmark\": \"reduce\"}\n{\"kernel\": \"k\", \"start_ns\": 0, \"end_ns\": 5, \"benchmark\": \"reduce\"}\n").unwrap();
        let policies = Policies::permissive();
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

    #[test]
    fn streamed_files_keep_the_order_the_times_and_the_line_of_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first.jsonl");
        let second = dir.path().join("second.jsonl");
        // Epoch-nanosecond times, which an f64 holds only to 256 ns, interleaved with
        // measurements of three benchmarks; one line without a benchmark key.
        let t0: u64 = 1_700_000_000_000_000_123;
        std::fs::write(
            &first,
            format!(
                "{{\"metric\": \"t\", \"value\": 3, \"unit\": \"us\", \"benchmark\": \"zeta\"}}\n\
                 {{\"counter\": \"busy\", \"t_ns\": {t0}, \"value\": 1, \"benchmark\": \"zeta\"}}\n\
                 {{\"metric\": \"t\", \"value\": 1, \"unit\": \"us\", \"benchmark\": \"alpha\"}}\n\
                 {{\"counter\": \"busy\", \"t_ns\": {}, \"value\": 5, \"benchmark\": \"zeta\"}}\n\
                 {{\"metric\": \"t\", \"value\": 2, \"unit\": \"us\"}}\n",
                t0 + 1_001
            ),
        )
        .unwrap();
        std::fs::write(
            &second,
            "{\"metric\": \"t\", \"value\": 4, \"unit\": \"us\", \"benchmark\": \"beta\"}\n\
             {\"metric\": \"t\", \"value\": 5, \"unit\": \"us\", \"benchmark\": \"zeta\"}\n",
        )
        .unwrap();
        let policies = Policies::permissive();
        let r = import(&[first.clone(), second.clone()], &policies).unwrap();
        let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
        // The first file's benchmarks by name, then the second's new one.
        assert_eq!(names, ["alpha", "first", "zeta", "beta"]);
        let zeta = r.benchmark("zeta").unwrap();
        assert_eq!(zeta.metrics[0].values, vec![3_000.0, 5_000.0]);
        assert_eq!(zeta.metrics[0].repetition, vec![0, 1]);
        assert_eq!(zeta.repetitions, 2);
        // The counter's times count exactly from the repetition's earliest.
        assert_eq!(zeta.counters[0].t_ns, vec![0.0, 1_001.0]);
        assert!(zeta.provenance.details.contains_key("time_origin_ns.0"));

        // A unit clash in a measurement names its line.
        std::fs::write(
            &second,
            "{\"metric\": \"t\", \"value\": 4, \"unit\": \"us\", \"benchmark\": \"beta\"}\n\
             {\"metric\": \"t\", \"value\": 5, \"unit\": \"bytes\", \"benchmark\": \"zeta\"}\n",
        )
        .unwrap();
        let e = import(&[first, second], &policies).unwrap_err().to_string();
        assert!(e.contains("second.jsonl` line 2"), "{e}");
    }
}
