//! Speed of `kgate import ncu` on a large raw-page CSV, beside Python's csv module doing the
//! same extraction. Run with `cargo bench --bench ncu_import` (add `-- COUNTERS LAUNCHES` to
//! change the default 16,000 counters × 1,000 launches). Prints throughput and peak memory of
//! both; the generated file is removed afterwards.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kgate::import::{ImportContext, Importer, Policies, ncu::Ncu};
use kgate::plan::MetricPolicy;

const IDENTITY: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\"";

/// Writes a raw-page CSV as ncu does: log lines, header, units row, one row per launch over two
/// kernels, with numbers of the shapes ncu prints (integers, two decimals).
fn generate(path: &Path, counters: usize, launches: usize) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(
        w,
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)"
    )?;
    writeln!(w, "==PROF== Disconnected from process 4242")?;
    write!(w, "{IDENTITY}")?;
    for c in 0..counters {
        write!(w, ",\"unit{}__counter_{c:05}.sum\"", c % 97)?;
    }
    writeln!(w)?;
    write!(w, "{}", ",\"\"".repeat(11).trim_start_matches(','))?;
    let units = ["ns", "byte", "%", "cycle", "", "inst"];
    for c in 0..counters {
        write!(w, ",\"{}\"", units[c % units.len()])?;
    }
    writeln!(w)?;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for l in 0..launches {
        let kernel = if l % 2 == 0 {
            "void matmul_tiled<32>(const float *, const float *, float *, int)"
        } else {
            "void reduce(float const*, float*, int)"
        };
        write!(
            w,
            "\"{l}\",\"4242\",\"python3.12\",\"127.0.0.1\",\"{kernel}\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 1, 1)\",\"0\",\"9.0\""
        )?;
        for c in 0..counters {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if c % 3 == 0 {
                write!(w, ",\"{}.{:02}\"", x % 100_000, x % 100)?;
            } else {
                write!(w, ",\"{}\"", x % 10_000_000)?;
            }
        }
        writeln!(w)?;
    }
    w.flush()
}

/// Peak resident memory in MiB of this process (`RUSAGE_SELF`) or its finished children.
fn peak_mib(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills the struct we pass; no other memory is touched.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let counters: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(16_000);
    let launches: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("large.ncu.csv");
    let t = Instant::now();
    generate(&path, counters, launches).expect("write the CSV");
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    println!(
        "generated {counters} counters x {launches} launches: {mb:.1} MB in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    let mut values = 0usize;
    kgate::import::ncu::parse_each(file, &mut |_, launch| {
        values += launch.values.len();
        Ok(())
    })
    .expect("parse");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "parse : {secs:6.2} s  {:7.1} MB/s  ({values} values, CSV reading only)",
        mb / secs
    );

    let before = peak_mib(libc::RUSAGE_SELF);
    let ctx = ImportContext::new(Policies::new(
        BTreeMap::new(),
        MetricPolicy::permissive(0.05),
    ));
    let t = Instant::now();
    let results = Ncu
        .import(std::slice::from_ref(&path), &ctx)
        .expect("import");
    let secs = t.elapsed().as_secs_f64();
    let samples: usize = results
        .benchmarks
        .iter()
        .flat_map(|b| &b.metrics)
        .map(|m| m.values.len())
        .sum();
    println!(
        "kgate : {secs:6.2} s  {:7.1} MB/s  peak RSS {:7.1} MiB (before import {before:.1})  {samples} samples",
        mb / secs,
        peak_mib(libc::RUSAGE_SELF)
    );
    drop(results);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ncu_csv_extract.py");
    let t = Instant::now();
    let status = Command::new("python3").arg(&script).arg(&path).status();
    let secs = t.elapsed().as_secs_f64();
    match status {
        Ok(s) if s.success() => println!(
            "python: {secs:6.2} s  {:7.1} MB/s  peak RSS {:7.1} MiB",
            mb / secs,
            peak_mib(libc::RUSAGE_CHILDREN)
        ),
        other => println!("python: not measured ({other:?})"),
    }
}
