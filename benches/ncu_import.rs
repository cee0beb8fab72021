//! Speed and peak memory of `kgate import ncu` on large raw-page CSVs, beside Python's csv
//! module and pandas.read_csv doing the same extraction. Run with `cargo bench --bench
//! ncu_import`: two shapes, "wide" (16,000 counters x 1,000 launches) and "tall" (100 counters x
//! 90,000 launches); `-- wide` or `-- tall` runs one, `-- COUNTERS LAUNCHES` another shape;
//! `--runs N` changes the 5 runs each figure is the median of, and `--parse-only` stops after the
//! first figure (the CSV reading thread on its own). Every import runs in a process of
//! its own, so that each has its own peak RSS. The CLI import of each file is run once more to
//! compare the size of the results file it writes with the input. Generated files are removed
//! afterwards.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kgate::import::{ImportContext, Policies, ncu::NCU};
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

/// Runs `command` to its end: wall seconds and the peak RSS (MiB) of that process alone, or
/// why it failed (its stderr went to `log`).
fn measure(command: &mut Command, log: &Path) -> Result<(f64, f64), String> {
    let stderr = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: wait4 fills the status and the struct we pass; no other memory is touched.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let secs = t.elapsed().as_secs_f64();
    if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        return Err(format!("exit status {status}: {}", said.trim()));
    }
    Ok((secs, usage.ru_maxrss as f64 / 1024.0))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One contender: how to run it, and its times and peaks so far.
struct Contender {
    name: &'static str,
    command: Box<dyn Fn() -> Command>,
    secs: Vec<f64>,
    peaks: Vec<f64>,
    failed: Option<String>,
}

impl Contender {
    fn new(name: &'static str, command: Box<dyn Fn() -> Command>) -> Contender {
        Contender {
            name,
            command,
            secs: Vec::new(),
            peaks: Vec::new(),
            failed: None,
        }
    }

    /// A Python script of `scripts/` run on the file.
    fn python(name: &'static str, script: PathBuf, path: PathBuf) -> Contender {
        Contender::new(
            name,
            Box::new(move || {
                let mut c = Command::new("python3");
                c.arg(&script).arg(&path);
                c
            }),
        )
    }
}

fn bench_shape(counters: usize, launches: usize, runs: usize, parse_only: bool) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("large.ncu.csv");
    let t = Instant::now();
    generate(&path, counters, launches).expect("write the CSV");
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mb = bytes as f64 / 1e6;
    println!(
        "\n{counters} counters x {launches} launches: {mb:.1} MB generated in {:.1} s; medians of {runs} runs",
        t.elapsed().as_secs_f64()
    );

    let mut parse = Vec::new();
    let mut values = 0usize;
    for _ in 0..runs {
        let t = Instant::now();
        let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        values = 0;
        kgate::capture::ncu::parse_each(file, &mut |_, launch| {
            values += launch.values.len();
            Ok(())
        })
        .expect("parse");
        parse.push(t.elapsed().as_secs_f64());
    }
    let secs = median(&mut parse);
    println!(
        "  parse  : {secs:6.2} s  {:7.1} MB/s  ({values} values, CSV reading only, in this process)",
        mb / secs
    );
    if parse_only {
        return;
    }

    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let me = std::env::current_exe().expect("the bench's own path");
    let mut contenders = vec![
        Contender::new(
            "kgate",
            Box::new({
                let path = path.clone();
                move || {
                    let mut c = Command::new(&me);
                    c.arg("--child-import").arg(&path);
                    c
                }
            }),
        ),
        Contender::python(
            "python csv",
            scripts.join("ncu_csv_extract.py"),
            path.clone(),
        ),
    ];
    let has_pandas = Command::new("python3")
        .args(["-c", "import pandas"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_pandas {
        contenders.push(Contender::python(
            "pandas",
            scripts.join("ncu_pandas_extract.py"),
            path.clone(),
        ));
    }
    let log = dir.path().join("stderr.txt");
    // Interleaved, so that the machine's noise falls on all alike.
    for _ in 0..runs {
        for c in contenders.iter_mut().filter(|c| c.failed.is_none()) {
            match measure(&mut (c.command)(), &log) {
                Ok((secs, peak)) => {
                    c.secs.push(secs);
                    c.peaks.push(peak);
                }
                Err(e) => c.failed = Some(e),
            }
        }
    }
    let mut kgate_secs = None;
    let mut table = Vec::new();
    for c in &mut contenders {
        if let Some(e) = &c.failed {
            println!("  {:<11}: not measured ({e})", c.name);
            continue;
        }
        let secs = median(&mut c.secs);
        let peak = median(&mut c.peaks);
        kgate_secs.get_or_insert(secs);
        table.push((c.name, secs, peak));
    }
    for (name, secs, peak) in &table {
        let vs = match kgate_secs {
            Some(k) if *name != "kgate" => format!("  (kgate {:.1}x faster)", secs / k),
            _ => String::new(),
        };
        println!(
            "  {name:<11}: {secs:6.2} s  {:7.1} MB/s  peak RSS {peak:7.1} MiB{vs}",
            mb / secs
        );
    }
    if !has_pandas {
        println!("  pandas     : pandas not installed, skipped");
    }

    // The results file the CLI writes, beside its input.
    let results = dir.path().join("results.json");
    let mut cli = Command::new(env!("CARGO_BIN_EXE_kgate"));
    cli.args(["import", "ncu"])
        .arg(&path)
        .arg("-o")
        .arg(&results);
    match measure(&mut cli, &log) {
        Ok((secs, peak)) => {
            let out = std::fs::metadata(&results).map(|m| m.len()).unwrap_or(0);
            println!(
                "  kgate import ncu -o results.json: {secs:.2} s, peak RSS {peak:.1} MiB; results {:.1} MB for {mb:.1} MB of CSV ({:.2}x the input)",
                out as f64 / 1e6,
                out as f64 / bytes as f64
            );
        }
        Err(e) => println!("  kgate import ncu: failed ({e})"),
    }
}

/// The child process of a kgate run: the import of one file, as `kgate import ncu` does it.
fn child_import(path: &Path) {
    let ctx = ImportContext::new(Policies::new(
        BTreeMap::new(),
        MetricPolicy::permissive(0.05),
    ));
    let results = NCU.import(&[path.to_path_buf()], &ctx).expect("import");
    let samples: usize = results
        .benchmarks
        .iter()
        .flat_map(|b| &b.metrics)
        .map(|m| m.values.len())
        .sum();
    eprintln!("kgate: {samples} samples");
}

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--child-import") {
        child_import(Path::new(&args[1]));
        return;
    }
    let mut runs = 5;
    if let Some(i) = args.iter().position(|a| a == "--runs") {
        runs = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(5)
            .max(1);
        args.drain(i..(i + 2).min(args.len()));
    }
    let parse_only = args.iter().any(|a| a == "--parse-only");
    args.retain(|a| a != "--parse-only");
    let shapes: Vec<(usize, usize)> = match args.first().map(String::as_str) {
        Some("wide") => vec![(16_000, 1_000)],
        Some("tall") => vec![(100, 90_000)],
        Some(counters) => vec![(
            counters.parse().expect("COUNTERS: a number"),
            args.get(1)
                .and_then(|a| a.parse().ok())
                .expect("LAUNCHES: a number"),
        )],
        None => vec![(16_000, 1_000), (100, 90_000)],
    };
    for (counters, launches) in shapes {
        bench_shape(counters, launches, runs, parse_only);
    }
}
