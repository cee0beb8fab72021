//! `kgate import cutlass`: the CSV report of the CUTLASS profiler (`cutlass_profiler
//! --output=FILE.csv`).
//!
//! Columns are found by name, since the set changes between CUTLASS versions and operation
//! kinds: `Operation` (the kernel), `Runtime` (milliseconds), and where present
//! `OperationKind`, `Provider`, `Disposition`, `Status`, `GB/s` and `GFLOPs`. Every other
//! column describes the problem (`m`, `n`, `k`, `conv_kind`, `n`, `h`, `w`, `c`, the data
//! types, `alpha`, `beta`, …), except `Problem` (an index, always 1 when runs are appended),
//! the derived `Bytes`, `Flops` and `Flops/Byte`, and the kernel's own description (`op_class`,
//! `accum`, `cta_*`, `cluster_*`, `stages`, `warps_*`, `inst_*`, `min_cc`, `max_cc`).
//!
//! One benchmark per (operation, problem), named `OPERATION/col=value,…` over the problem
//! columns; a pair that repeats (runs appended to one file, or several files) gives more
//! repetitions. `Runtime` is a timer metric `runtime`; `GB/s` and `GFLOPs` are `reported`
//! (`bandwidth`, `gflops`: they follow from the runtime, so they annotate). A `Disposition`
//! other than `passed` marks the benchmark's correctness as failed (rows with `incorrect`
//! still say `success` and give a runtime), except `not_verified` and `not_run`, which say no
//! check was made; a `Status` other than `success` marks the benchmark failed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::builder::{Benchmarks, Slot};
use super::input::{self, TextReader};
use super::{ImportError, Importer, Policies, content};
use crate::model::metric::Source;
use crate::model::results::{Correctness, FailureKind, RunResults, Status};
use crate::model::text::cut;

pub static CUTLASS: Importer = Importer {
    name: "cutlass",
    help: "CUTLASS profiler CSV (`cutlass_profiler --output=FILE.csv`)",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

/// Columns that are neither the problem nor a measurement: the profiler's own bookkeeping and
/// what follows from the problem.
#[rustfmt::skip]
const NOT_PROBLEM: &[&str] = &[
    "Problem", "Provider", "OperationKind", "Operation", "Disposition", "Status", "Bytes", "Flops",
    "Flops/Byte", "Runtime", "GB/s", "GFLOPs",
];

/// Columns that describe the kernel (its tile, its pipeline, its instruction), not the problem.
const KERNEL_DESCRIPTION: &[&str] = &["op_class", "accum", "stages", "min_cc", "max_cc"];

/// Prefixes of the kernel's description columns.
const KERNEL_DESCRIPTION_PREFIXES: &[&str] = &["cta_", "cluster_", "warps_", "inst_"];

fn is_problem_column(name: &str) -> bool {
    !(name.is_empty()
        || NOT_PROBLEM.contains(&name)
        || KERNEL_DESCRIPTION.contains(&name)
        || KERNEL_DESCRIPTION_PREFIXES
            .iter()
            .any(|p| name.starts_with(p)))
}

/// Where the columns kgate reads are in a file's header.
struct Columns {
    operation: usize,
    runtime: usize,
    operation_kind: Option<usize>,
    provider: Option<usize>,
    disposition: Option<usize>,
    status: Option<usize>,
    bandwidth: Option<usize>,
    gflops: Option<usize>,
    /// The problem's columns, by name, in the file's order.
    problem: Vec<(String, usize)>,
}

impl Columns {
    fn of(path: &Path, header: &csv::StringRecord) -> Result<Columns, ImportError> {
        let names: Vec<&str> = header.iter().map(str::trim).collect();
        let find = |name: &str| names.iter().position(|n| *n == name);
        let required = |name: &str| {
            find(name).ok_or_else(|| {
                let header = cut(&names.join(","), 200);
                content!(path, "has no `{name}` column, so it is not a CUTLASS profiler report; write one with `cutlass_profiler --output=FILE.csv` (the header it has: {header})")
            })
        };
        Ok(Columns {
            operation: required("Operation")?,
            runtime: required("Runtime")?,
            operation_kind: find("OperationKind"),
            provider: find("Provider"),
            disposition: find("Disposition"),
            status: find("Status"),
            bandwidth: find("GB/s"),
            gflops: find("GFLOPs"),
            problem: names
                .iter()
                .enumerate()
                .filter(|(_, n)| is_problem_column(n))
                .map(|(i, n)| (n.to_string(), i))
                .collect(),
        })
    }
}

/// Where each metric's samples go, per benchmark.
#[derive(Default)]
struct Slots {
    runtime: Slot,
    bandwidth: Slot,
    gflops: Slot,
}

const RUNTIME: (&str, &str, Source) = ("runtime", "ms", Source::Timer);
const BANDWIDTH: (&str, &str, Source) = ("bandwidth", "GB/s", Source::Reported);
const GFLOPS: (&str, &str, Source) = ("gflops", "GFLOP/s", Source::Reported);

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "cutlass");
    let mut slots: BTreeMap<String, Slots> = BTreeMap::new();
    for path in files {
        benchmarks.file(path);
        let text = TextReader::open(path, "CUTLASS profiler", input::MAX_FILE_BYTES)?;
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text);
        let csv_error = |e: csv::Error| match e.into_kind() {
            csv::ErrorKind::Io(io) => input::refusal_of(path, io),
            other => content!(path, "is not CSV: {other:?}"),
        };
        let header = reader.headers().map_err(csv_error)?.clone();
        let columns = Columns::of(path, &header)?;
        let mut rows = 0usize;
        let mut record = csv::StringRecord::new();
        while reader.read_record(&mut record).map_err(csv_error)? {
            rows += 1;
            // Line 1 is the header.
            let line = rows + 1;
            let cell = |i: usize| record.get(i).map(str::trim).unwrap_or("");
            let operation = cell(columns.operation);
            if operation.is_empty() {
                return Err(content!(
                    path,
                    "line {line} has no `Operation`; every row of a CUTLASS profiler report names its kernel"
                ));
            }
            let problem: Vec<(String, String)> = columns
                .problem
                .iter()
                .map(|(name, i)| (name.clone(), cell(*i).to_string()))
                .collect();
            let shown: Vec<String> = problem.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let name = format!("{operation}/{}", shown.join(","));
            let rep = benchmarks.get(&name).result_mut().repetitions;
            let slot = slots.entry(name.clone()).or_default();
            let number = |i: Option<usize>, what: &str| -> Result<Option<f64>, ImportError> {
                let Some(i) = i else { return Ok(None) };
                let text = cell(i);
                if text.is_empty() {
                    return Ok(None);
                }
                text.parse::<f64>().map(Some).map_err(|_| {
                    let shown = cut(text, 200);
                    content!(path, "line {line}: `{what}` is `{shown}`, not a number")
                })
            };
            let status = columns.status.map(cell).unwrap_or("success");
            let runtime = number(Some(columns.runtime), "Runtime")?;
            if let Some(v) = runtime {
                benchmarks.add_at(&mut slot.runtime, &name, rep, RUNTIME, v)?;
            }
            if let Some(v) = number(columns.bandwidth, "GB/s")? {
                benchmarks.add_at(&mut slot.bandwidth, &name, rep, BANDWIDTH, v)?;
            }
            if let Some(v) = number(columns.gflops, "GFLOPs")? {
                benchmarks.add_at(&mut slot.gflops, &name, rep, GFLOPS, v)?;
            }
            benchmarks.imported(&name, path, rep + u32::from(runtime.is_some()));
            let result = benchmarks.get(&name).result_mut();
            if result.parameters.is_empty() {
                result.parameters.extend(problem);
                for (key, column) in [
                    ("operation_kind", columns.operation_kind),
                    ("provider", columns.provider),
                ] {
                    if let Some(i) = column.filter(|&i| !cell(i).is_empty()) {
                        let details = &mut result.provenance.details;
                        details.insert(format!("cutlass.{key}"), cell(i).to_string());
                    }
                }
            }
            if let Some(disposition) = columns.disposition.map(cell) {
                match disposition {
                    "passed" => Correctness::record(&mut result.correctness, true, None),
                    // No check was made: nothing to say about the answers.
                    "" | "not_verified" | "not_run" => {}
                    other => {
                        let shown = path.display();
                        let why = format!("CUTLASS disposition `{other}` (line {line} of {shown})");
                        Correctness::record(&mut result.correctness, false, Some(why));
                    }
                }
            }
            if status != "success" && result.status != Status::Failed {
                let shown = path.display();
                let message =
                    format!("the CUTLASS profiler's status is `{status}` (line {line} of {shown})");
                result.fail(FailureKind::Profiler, message);
            }
        }
        if rows == 0 {
            return Err(content(
                path,
                "holds a header but no rows: the profiler ran no operation (check its --operation and --kernels filters)".into(),
            ));
        }
    }
    benchmarks.finish(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problem_columns_are_what_is_not_bookkeeping_or_the_kernel() {
        let problem = "m n k conv_kind Activation alpha split_k_slices";
        for c in problem.split(' ') {
            assert!(is_problem_column(c), "{c}");
        }
        let other = "Problem Runtime GFLOPs cta_m cluster_n warps_k inst_m min_cc stages op_class accum Flops/Byte";
        for c in other.split(' ').chain([""]) {
            assert!(!is_problem_column(c), "{c}");
        }
    }

    #[test]
    fn rows_group_by_operation_and_problem_and_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gemm.csv");
        std::fs::write(
            &path,
            "Problem,Provider,OperationKind,Operation,Disposition,Status,m,n,k,cta_m,Bytes,Runtime,GB/s,GFLOPs\n\
             1,CUTLASS,gemm,k_a,passed,success,64,64,64,128,100,0.5,10,20\n\
             1,CUTLASS,gemm,k_a,incorrect,success,128,64,64,128,100,0.25,10,20\n\
             1,CUTLASS,gemm,k_a,passed,success,64,64,64,128,100,0.75,10,20\n\
             1,CUTLASS,gemm,k_b,not_verified,error,64,64,64,256,100,,,\n",
        )
        .unwrap();
        let policies = Policies::permissive();
        let r = import(&[path], &policies).unwrap();
        let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
        let expected = [
            "k_a/m=64,n=64,k=64",
            "k_a/m=128,n=64,k=64",
            "k_b/m=64,n=64,k=64",
        ];
        assert_eq!(names, expected);
        let a = &r.benchmarks[0];
        assert_eq!(a.repetitions, 2);
        assert_eq!(a.metric("runtime").unwrap().values, [500_000.0, 750_000.0]);
        assert_eq!(a.metric("runtime").unwrap().source, Source::Timer);
        assert_eq!(a.metric("gflops").unwrap().source, Source::Reported);
        assert_eq!(a.parameters["m"], "64");
        assert_eq!(a.correctness.as_ref().map(|c| c.passed), Some(true));
        assert_eq!(a.provenance.details["cutlass.operation_kind"], "gemm");
        let wrong = r.benchmarks[1].correctness.as_ref().unwrap();
        assert!(!wrong.passed);
        let detail = wrong.detail.as_deref().unwrap();
        let incorrect = "CUTLASS disposition `incorrect` (line 3";
        assert!(detail.starts_with(incorrect), "{wrong:?}");
        let b = &r.benchmarks[2];
        assert_eq!(b.status, Status::Failed);
        assert_eq!(b.correctness, None);
        assert_eq!(b.repetitions, 0);
        assert!(b.failure.as_ref().unwrap().message.contains("`error`"));
    }

    #[test]
    fn files_without_the_columns_or_rows_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let policies = Policies::permissive();
        for (text, expected) in [
            ("name,time\nk,1\n", "no `Operation` column"),
            ("Operation,Runtime\n", "no rows"),
            ("Operation,Runtime\nk,fast\n", "line 2: `Runtime` is `fast`"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = import(std::slice::from_ref(&path), &policies).unwrap_err();
            assert_contains!(e.to_string(), expected);
        }
    }
}
