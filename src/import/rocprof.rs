//! `kgate import rocprof`: AMD rocprof CSV in its three generations.
//!
//! - rocprof v1: one row per dispatch (`Index,KernelName,…`), counters as columns, timestamps
//!   `BeginNs`/`EndNs` (and `DurationNs` in ROCm 5.x `results.csv`); `--stats` writes a
//!   per-kernel summary (`Name,Calls,TotalDurationNs,AverageNs,Percentage`).
//! - rocprofv2 as Omniperf 2 normalizes it: `Dispatch_ID,…,Kernel_Name,Start_Timestamp,
//!   End_Timestamp,Correlation_ID,<counters>`.
//! - rocprofv3 `counter_collection.csv`: long format, one row per (dispatch, counter).
//!
//! Every dispatch is one sample of its kernel: `kernel_time` (ns, End − Begin, computed in
//! integers because the timestamps exceed f64's exact range) and one metric per counter. Kernel
//! names lose the code-object suffixes (`.kd`, ` [clone .kd]`, ` (.kd)`) that differ between
//! versions, so one kernel keeps one name. Companion files are provenance, not results: an
//! input file (`pmc: …`), Omniperf's `sysinfo.csv` (which also names the device and host of
//! the results' environment), and a command file (`cmd`: free text, commas and all).
//!
//! Omniperf's merged `pmc_perf.csv` joins one file per counter pass: identity columns it does
//! not fold back come with a pass suffix (`wave_size_1` … `wave_size_13`), and the timestamps
//! are means over the passes, with a fraction. Both are read as what they are; a header row
//! repeated inside a file (files concatenated) starts a new table instead of being data.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::builder::{Benchmarks, KERNEL_TIME, Slot};
use super::input::{TextReader, refusal_of};
use super::{ImportError, Importer, Policies, content};
use crate::capture::device::{Device, HostField, MEM_MAX_MHZ, SM_MAX_MHZ};
use crate::model::metric::Source;
use crate::model::results::RunResults;

/// Columns that describe a dispatch rather than measure it, in all generations.
#[rustfmt::skip]
const IDENTITY: [&str; 45] = [
    "Index", "KernelName", "gpu-id", "queue-id", "queue-index", "pid", "tid", "grd", "wgr", "lds",
    "scr", "vgpr", "sgpr", "fbar", "sig", "obj", "arch_vgpr", "accum_vgpr", "wave_size",
    "DispatchNs", "BeginNs", "EndNs", "CompleteNs", "DurationNs", "Dispatch_ID", "GPU_ID",
    "Queue_ID", "PID", "TID", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup",
    "Scratch_Per_Workitem", "Arch_VGPR", "Accum_VGPR", "SGPR", "Wave_Size", "Kernel_Name",
    "Start_Timestamp", "End_Timestamp", "Correlation_ID", "Correlation_Id", "Dispatch_Id",
    "Agent_Id", "Kernel_Id",
];

/// Further rocprofv3 identity columns.
#[rustfmt::skip]
const IDENTITY_V3: [&str; 9] = [
    "Queue_Id", "Process_Id", "Thread_Id", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
    "Accum_VGPR_Count", "SGPR_Count", "Kernel-Name",
];

/// Further identity columns of rocprofv3's `kernel_trace.csv` (and of `rocpd`'s export of
/// it, which spells some in another case: `Vgpr_Count`) and of rocprof-compute's CSVs: a
/// dispatch's launch attributes and where it ran, not measures of it.
#[rustfmt::skip]
const IDENTITY_TRACE: [&str; 16] = [
    "Kind", "Guid", "Stream_Id", "Private_Segment_Size", "Group_Segment_Size", "Workgroup_Size_X",
    "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
    "XCC_Index", "XCD_Index", "Node_Id", "Kernel_Rename", "Agent_Name",
];

/// Omniperf `sysinfo.csv` columns kept as provenance.
#[rustfmt::skip]
const SYSINFO_KEYS: [&str; 7] = [
    "gpu_model", "gpu_arch", "cu_per_gpu", "max_sclk", "cur_sclk", "rocm_version", "wave_size",
];

/// The machine that Omniperf's `sysinfo.csv` describes: the GPU model (its architecture where
/// the model is missing), the amdgpu driver, the maximum shader and memory clocks (MHz), the
/// ROCm version, and the host's CPU, distribution and kernel release.
fn sysinfo_device<'a>(named: &dyn Fn(&str) -> Option<&'a str>) -> Device {
    let mut device = Device::default();
    if let Some(model) = named("gpu_model").or_else(|| named("gpu_arch")) {
        device.accelerator(model);
    }
    if let Some(driver) = named("amd_gpu_kernel_version") {
        device.driver(driver);
    }
    for (key, clock) in [("max_sclk", SM_MAX_MHZ), ("max_mclk", MEM_MAX_MHZ)] {
        if let Some(mhz) = named(key).and_then(number) {
            device.clock_mhz(clock, mhz);
        }
    }
    if let Some(v) = named("rocm_version") {
        device.tool("rocm", v);
    }
    #[rustfmt::skip]
    let fields = [("cpu_model", HostField::CpuModel), ("linux_distro", HostField::Os),
                  ("linux_kernel_version", HostField::Kernel)];
    for (key, field) in fields {
        if let Some(v) = named(key) {
            device.host(field, v);
        }
    }
    device
}

/// `vecCopy(double*) (.kd)`, `f(short) [clone .kd]`, `__amd_rocclr_fillBuffer.kd` → without
/// the suffix.
pub fn kernel_name(raw: &str) -> String {
    let s = raw.trim();
    let s = s
        .strip_suffix(" [clone .kd]")
        .or_else(|| s.strip_suffix(" (.kd)"))
        .or_else(|| s.strip_suffix(".kd"))
        .unwrap_or(s);
    s.trim().to_string()
}

/// Whether a column describes the dispatch: one of the identity columns, or one that
/// Omniperf's merge left with a pass suffix (`wave_size_1`, `Queue_ID_3`).
fn is_identity(column: &str) -> bool {
    let known = |c: &str| {
        let same = |k: &&str| k.eq_ignore_ascii_case(c);
        IDENTITY.iter().any(same)
            || IDENTITY_V3.iter().any(same)
            || IDENTITY_TRACE.iter().any(same)
            || c == "key"
            // Launch attributes, however a version names them (`Grid_Size_X`,
            // `Workgroup_Size_Z`, `Private_Segment_Size`, `Group_Segment_Size`).
            || c.ends_with("_Segment_Size")
            || c.starts_with("Grid_Size")
            || c.starts_with("Workgroup_Size")
    };
    known(column)
        || column.rsplit_once('_').is_some_and(|(base, n)| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && known(base)
        })
}

/// A dispatch's duration from its begin and end cells: integers (exact), or, where a tool
/// averaged timestamps (Omniperf's merge), numbers with a fraction. `Err` when it ends
/// before it begins; `None` when a cell is not a time.
fn duration_of(begin: &str, end: &str, fractional: &mut bool) -> Result<Option<f64>, ()> {
    if let (Ok(b), Ok(e)) = (begin.parse::<u64>(), end.parse::<u64>()) {
        return if e >= b {
            Ok(Some((e - b) as f64))
        } else {
            Err(())
        };
    }
    match (number(begin), number(end)) {
        (Some(b), Some(e)) if e >= b => {
            *fractional = true;
            Ok(Some((e - b).round()))
        }
        (Some(_), Some(_)) => Err(()),
        _ => Ok(None),
    }
}

/// Whether `path` is named like rocprof's command companion (`cmd`, `…cmd.txt`).
fn command_file_name(path: &Path) -> bool {
    path.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s == "cmd" || s.ends_with("_cmd") || s.ends_with("-cmd"))
}

/// How much of a file is read to tell what it is (see [`import`]).
const HEAD_BYTES: usize = 1 << 20;

/// Names only a header row holds, one of which each kind of header needs (see [`classify`]).
#[rustfmt::skip]
const HEADER_KEYS: [&str; 6] = [
    "Counter_Name", "KernelName", "Kernel_Name", "AverageNs", "gpu_model", "max_sclk",
];

/// Whether a cell is one of [`HEADER_KEYS`] (a data cell, a number as a rule, is told apart
/// by its first byte).
fn is_header_key(cell: &str) -> bool {
    let cell = cell.trim();
    cell.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) && HEADER_KEYS.contains(&cell)
}

/// A reader of rocprof's CSV, whose rows may be ragged.
fn csv_reader<R: Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new().flexible(true).from_reader(input)
}

/// Whether the head of a file begins with a table this importer reads (a header it knows).
fn starts_a_table(head: &str) -> bool {
    let mut reader = csv_reader(head.as_bytes());
    reader.headers().is_ok_and(|h| {
        let header: Vec<String> = h.iter().map(|c| c.trim().to_string()).collect();
        classify(&header).is_some()
    })
}

/// The columns of a wide table that measure the dispatch: not identity, not unnamed.
fn measured_columns(header: &[String]) -> Vec<usize> {
    (0..header.len())
        .filter(|&i| !(header[i].is_empty() || is_identity(&header[i])))
        .collect()
}

/// Where a kernel's samples of wide rows go, found on its first dispatch.
#[derive(Default)]
struct WideSlots {
    kernel_time: Slot,
    /// By position among the measured columns of the current header.
    counters: Vec<Slot>,
}

/// A value in rocprof's notations (`496419.0`, `6.8125000000`, `4.34259040e-02`).
fn number(cell: &str) -> Option<f64> {
    let v: f64 = cell.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

/// Whether a name is that of an API call or a copy, as rocprof's `--stats` of them name rows
/// (`hipMalloc`, `hsa_queue_create`, `roctxRangePushA`, `MEMORY_COPY_HOST_TO_DEVICE`), not a
/// kernel.
fn is_api_name(name: &str) -> bool {
    let hip = name
        .strip_prefix("hip")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase());
    hip || name.starts_with("hsa_")
        || name.starts_with("roctx")
        || name.starts_with("MEMORY_COPY_")
        || name.starts_with("__hipRegister")
}

/// What a `--stats` file summarizes when it is not kernels: told by the names rocprof gives
/// those files (rocprofv3 `hip_api_stats.csv`, `hsa_api_stats.csv`, `memory_copy_stats.csv`;
/// rocprof v1 `results.hip_stats.csv`, `results.copy_stats.csv`), or by rows that all name
/// API calls.
fn api_stats(path: &Path, text: &str) -> Option<&'static str> {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    #[rustfmt::skip]
    let summarized = [
        ("hip_api_stats", "HIP API calls"), ("hip_stats", "HIP API calls"),
        ("hsa_api_stats", "HSA API calls"), ("hsa_stats", "HSA API calls"),
        ("marker_api_stats", "ROCTx marker calls"), ("copy_stats", "memory copies"),
        ("memory_allocation_stats", "memory allocations"),
    ];
    for (part, what) in summarized {
        if file.contains(part) {
            return Some(what);
        }
    }
    let mut reader = csv_reader(text.as_bytes());
    let header = reader.headers().ok()?;
    let at = header.iter().position(|h| h.trim() == "Name")?;
    let mut rows = 0usize;
    for record in reader.records() {
        let record = record.ok()?;
        let name = record.get(at).unwrap_or("").trim();
        if !is_api_name(name) {
            return None;
        }
        rows += 1;
    }
    (rows > 0).then_some("HIP API calls")
}

/// Provenance found in companion files, applied to every benchmark at the end.
#[derive(Default)]
struct Companions {
    details: BTreeMap<String, String>,
    /// Remarks on how the results were read, for every benchmark.
    notes: Vec<String>,
    results_seen: bool,
}

/// One rocprofv3 dispatch: its counters summed over rows, and its duration.
struct Dispatch {
    /// In [`Names`] of kernels.
    kernel: u32,
    /// (counter in [`Names`] of counters, sum).
    counters: Vec<(u32, f64)>,
    time: Option<f64>,
}

/// Names a file repeats on every row (kernels; a rocprofv3 file's counters), held once each.
#[derive(Default)]
struct Names {
    /// By number: the name kept (a kernel's without its code-object suffix).
    kept: Vec<String>,
    /// By the cell as written.
    numbers: HashMap<String, u32>,
}

impl Names {
    /// The number of the name a cell gives, `keep` making the name from the cell once.
    fn number(&mut self, cell: &str, keep: impl FnOnce(&str) -> String) -> u32 {
        if let Some(&n) = self.numbers.get(cell) {
            return n;
        }
        let n = self.kept.len() as u32;
        self.kept.push(keep(cell));
        self.numbers.insert(cell.to_string(), n);
        n
    }
}

/// What one file turned out to be.
enum Kind {
    /// Per-dispatch rows (v1, v2), with the column indexes that matter.
    Wide {
        kernel: usize,
        begin: Option<usize>,
        end: Option<usize>,
        duration: Option<usize>,
    },
    /// rocprofv3 long format.
    Long {
        dispatch: usize,
        kernel: usize,
        counter: usize,
        value: usize,
        begin: Option<usize>,
        end: Option<usize>,
    },
    /// `--stats` summary.
    Stats,
    Sysinfo,
}

fn classify(header: &[String]) -> Option<Kind> {
    // Every kind needs one of these names, and the reader tests a row for them before it
    // copies it out to classify it: a kind added below must add its name there.
    if !header.iter().any(|h| is_header_key(h)) {
        return None;
    }
    let col = |name: &str| header.iter().position(|h| h == name);
    if col("Counter_Name").is_some() && col("Counter_Value").is_some() {
        return Some(Kind::Long {
            dispatch: col("Dispatch_Id").or_else(|| col("Correlation_Id"))?,
            kernel: col("Kernel_Name")?,
            counter: col("Counter_Name")?,
            value: col("Counter_Value")?,
            begin: col("Start_Timestamp"),
            end: col("End_Timestamp"),
        });
    }
    if let Some(kernel) = col("KernelName").or_else(|| col("Kernel_Name")) {
        return Some(Kind::Wide {
            kernel,
            begin: col("BeginNs").or_else(|| col("Start_Timestamp")),
            end: col("EndNs").or_else(|| col("End_Timestamp")),
            duration: col("DurationNs"),
        });
    }
    if col("Name").is_some() && col("AverageNs").is_some() {
        return Some(Kind::Stats);
    }
    if col("gpu_model").is_some() || col("max_sclk").is_some() {
        return Some(Kind::Sysinfo);
    }
    None
}

pub static ROCPROF: Importer = Importer {
    name: "rocprof",
    help: "rocprof v1 results and counter CSV, rocprofv2 (Omniperf) and rocprofv3 counter CSV",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "rocprof");
    let mut companions = Companions::default();
    let mut offsets: HashMap<String, u32> = HashMap::new();
    // `--stats` files of API calls or memory copies, skipped.
    let mut api_files: Vec<String> = Vec::new();
    for path in files {
        benchmarks.file(path);
        // The first MiB says what the file is. A table goes on from there, read as it is
        // parsed (a long run's dispatches are hundreds of MB); anything else (a companion, or
        // a file to refuse) is read whole. A `pmc:` line after the first MiB of a table is
        // a row of the table.
        let mut input = TextReader::open(path, "rocprof", super::input::MAX_FILE_BYTES)?;
        let mut text = input.head(HEAD_BYTES)?;
        let pmc = |text: &str| text.lines().any(|l| l.trim_start().starts_with("pmc:"));
        if !input.finished() && (pmc(&text) || !starts_a_table(&text)) {
            let read = input.read_to_string(&mut text);
            read.map_err(|e| input.refusal(e))?;
        }
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if pmc(&text) {
            for line in text.lines().filter_map(|l| l.trim().strip_prefix("pmc:")) {
                let counters = line.split_whitespace().collect::<Vec<_>>().join(" ");
                let pmc = companions.details.entry("rocprof.pmc".into());
                pmc.and_modify(|v| v.push_str(&format!("; {counters}")))
                    .or_insert(counters);
            }
            continue;
        }
        let mut reader = csv_reader(text.as_bytes().chain(&mut input));
        let header: Option<Vec<String>> = reader
            .headers()
            .ok()
            .map(|h| h.iter().map(|h| h.trim().to_string()).collect());
        let kind = header.as_deref().and_then(classify);
        let one_line = text.trim().lines().count() == 1;
        if kind.is_none() && (one_line || command_file_name(path)) && !text.trim().is_empty() {
            // rocprof's `cmd` companion: the command line, free text (commas included).
            let command = text.trim().to_string();
            companions.details.insert("rocprof.command".into(), command);
            continue;
        }
        let (Some(mut header), Some(mut kind)) = (header, kind) else {
            let shown: String = first.chars().take(80).collect();
            return Err(content!(
                path,
                "is not a rocprof file kgate reads: its first line `{shown}` is none of the headers of rocprof v1 (`Index,KernelName,…`), rocprofv2 or Omniperf (`Dispatch_ID,…,Kernel_Name,…`), rocprofv3 counter collection (`Counter_Name`, `Counter_Value`), `--stats` (`\"Name\",\"Calls\",…`) or Omniperf's `sysinfo.csv`; pass the CSV rocprof wrote (`results.csv`, `<pid>_counter_collection.csv`, `pmc_perf.csv`)"
            ));
        };
        if matches!(kind, Kind::Stats)
            && let Some(what) = api_stats(path, &text)
        {
            let shown = path.display().to_string();
            companions.notes.push(format!(
                "`{shown}`: rocprof `--stats` of {what}, not of kernels: skipped (the kernels' are in `<pid>_kernel_stats.csv`, or rocprof v1's `results.stats.csv`)"
            ));
            api_files.push(shown);
            continue;
        }
        let mut repeated_headers = 0usize;
        let mut fractional = false;
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut long: Vec<Dispatch> = Vec::new();
        let mut long_index: HashMap<String, usize> = HashMap::new();
        let (mut kernels, mut long_counters) = (Names::default(), Names::default());
        let mut metric_columns = measured_columns(&header);
        // By kernel number (in `kernels`), for wide rows.
        let mut wide_slots: Vec<WideSlots> = Vec::new();
        let mut record = csv::StringRecord::new();
        for row in 0.. {
            let line = row + 2;
            match reader.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    let shown = e.to_string();
                    return Err(match e.into_kind() {
                        // The text reader's refusal: a NUL byte, not UTF-8, too large.
                        csv::ErrorKind::Io(io) => refusal_of(path, io),
                        _ => content!(
                            path,
                            "line {line}: not CSV as rocprof writes it ({shown}); pass the file rocprof wrote, unedited"
                        ),
                    });
                }
            }
            // A header row inside the table (files concatenated, a tool's merge): the same
            // header is skipped; another one starts a table of its own. Only a row holding
            // one of the names a header needs can be one (no allocation for the others).
            if record.iter().any(is_header_key) {
                let cells: Vec<String> = record.iter().map(|c| c.trim().to_string()).collect();
                if cells == header {
                    repeated_headers += 1;
                    continue;
                }
                if let Some(next) = classify(&cells) {
                    metric_columns = measured_columns(&cells);
                    // Counter slots go by column, and the columns are the new header's.
                    for k in &mut wide_slots {
                        k.counters.clear();
                    }
                    header = cells;
                    kind = next;
                    repeated_headers += 1;
                    continue;
                }
            }
            let cell = |i: usize| record.get(i).unwrap_or("").trim();
            // A row no rocprof writes, as `what` says.
            let unedited = |what: String| {
                let message = format!("line {line}: {what}; pass the file rocprof wrote, unedited");
                content(path, message)
            };
            match kind {
                Kind::Sysinfo => {
                    let col = |key: &str| header.iter().position(|h| h == key);
                    let named = |key: &str| col(key).map(cell).filter(|v| !v.is_empty());
                    for key in SYSINFO_KEYS {
                        if let Some(v) = named(key) {
                            let details = &mut companions.details;
                            details.insert(format!("rocprof.{key}"), v.to_string());
                        }
                    }
                    benchmarks.device(path, sysinfo_device(&named))?;
                }
                Kind::Stats => {
                    let col = |n: &str| header.iter().position(|h| h == n);
                    let name = kernel_name(cell(col("Name").expect("classified")));
                    let avg = cell(col("AverageNs").expect("classified"));
                    let avg = number(avg).ok_or_else(|| {
                        unedited(format!("`AverageNs` `{avg}` is not a number, which `rocprof --stats` never writes"))
                    })?;
                    let rep = offsets.entry(name.clone()).or_insert(0);
                    benchmarks.add(&name, *rep, "kernel_time", "ns", Source::Timer, avg)?;
                    *rep += 1;
                    benchmarks.imported(&name, path, *rep);
                    if let Some(c) = col("Calls") {
                        let mean = format!("mean of {} calls (--stats)", cell(c));
                        benchmarks.detail(&name, "rocprof.summary", &mean);
                    }
                }
                Kind::Wide {
                    kernel,
                    begin,
                    end,
                    duration,
                } => {
                    let at = kernels.number(cell(kernel), kernel_name) as usize;
                    let name = &kernels.kept[at];
                    if wide_slots.len() <= at {
                        wide_slots.resize_with(at + 1, WideSlots::default);
                    }
                    let k = &mut wide_slots[at];
                    let base = *offsets.get(name).unwrap_or(&0);
                    let n = match counts.get_mut(name) {
                        Some(n) => n,
                        None => counts.entry(name.clone()).or_insert(0),
                    };
                    let rep = base + *n;
                    *n += 1;
                    let time = match (duration, begin, end) {
                        (Some(d), _, _) => cell(d).parse::<u64>().ok().map(|t| t as f64),
                        (None, Some(b), Some(e)) => duration_of(cell(b), cell(e), &mut fractional)
                            .map_err(|()| {
                                unedited(format!("the dispatch ends before it begins (`{}` < `{}`), which rocprof never writes", cell(e), cell(b)))
                            })?,
                        _ => None,
                    };
                    if let Some(t) = time {
                        benchmarks.add_at(&mut k.kernel_time, name, rep, KERNEL_TIME, t)?;
                    }
                    k.counters.resize(metric_columns.len(), Slot::default());
                    for (&i, slot) in metric_columns.iter().zip(&mut k.counters) {
                        if let Some(v) = number(cell(i)) {
                            let metric = (header[i].as_str(), "", Source::Hardware);
                            benchmarks.add_at(slot, name, rep, metric, v)?;
                        }
                    }
                }
                Kind::Long {
                    dispatch,
                    kernel,
                    counter,
                    value,
                    begin,
                    end,
                } => {
                    let index = match long_index.get(cell(dispatch)) {
                        Some(&index) => index,
                        None => {
                            let time = match (begin, end) {
                                (Some(b), Some(e)) => {
                                    duration_of(cell(b), cell(e), &mut fractional).unwrap_or(None)
                                }
                                _ => None,
                            };
                            long.push(Dispatch {
                                kernel: kernels.number(cell(kernel), kernel_name),
                                counters: Vec::new(),
                                time,
                            });
                            long_index.insert(cell(dispatch).to_string(), long.len() - 1);
                            long.len() - 1
                        }
                    };
                    let v = number(cell(value)).ok_or_else(|| {
                        unedited(format!(
                            "`Counter_Value` `{}` is not a number, which rocprofv3 never writes",
                            cell(value)
                        ))
                    })?;
                    let c = long_counters.number(cell(counter), str::to_string);
                    let counters = &mut long[index].counters;
                    match counters.iter_mut().find(|(k, _)| *k == c) {
                        Some((_, sum)) => *sum += v,
                        None => counters.push((c, v)),
                    }
                }
            }
        }
        for Dispatch {
            kernel,
            counters,
            time,
        } in &mut long
        {
            let name = &kernels.kept[*kernel as usize];
            // Each dispatch's counters in the order of their names.
            let counter_name = |c: u32| long_counters.kept[c as usize].as_str();
            counters.sort_by(|a, b| counter_name(a.0).cmp(counter_name(b.0)));
            let base = *offsets.get(name).unwrap_or(&0);
            let n = counts.entry(name.clone()).or_insert(0);
            let rep = base + *n;
            *n += 1;
            if let Some(t) = time {
                benchmarks.add(name, rep, "kernel_time", "ns", Source::Timer, *t)?;
            }
            for &(c, v) in counters.iter() {
                let c = counter_name(c);
                if !IDENTITY_V3.contains(&c) {
                    benchmarks.add(name, rep, c, "", Source::Hardware, v)?;
                }
            }
        }
        for (name, n) in counts {
            let total = offsets.entry(name.clone()).or_insert(0);
            *total += n;
            benchmarks.imported(&name, path, *total);
        }
        if !matches!(kind, Kind::Sysinfo) {
            companions.results_seen = true;
        }
        let shown = path.display();
        if repeated_headers > 0 {
            let rows = if repeated_headers == 1 { "row" } else { "rows" };
            companions.notes.push(format!(
                "`{shown}`: {repeated_headers} header {rows} inside the table (files joined one after another) read as headers, not as data"
            ));
        }
        if fractional {
            companions.notes.push(format!(
                "`{shown}`: timestamps with a fraction (averaged over counter passes, as Omniperf's merged `pmc_perf.csv` has them); `kernel_time` is their difference, rounded to whole nanoseconds and exact to the precision of those numbers"
            ));
        }
    }
    let first = files.first().map(PathBuf::as_path).unwrap_or(Path::new(""));
    if !companions.results_seen && !api_files.is_empty() {
        let api_files = api_files.join(", ");
        return Err(content!(
            first,
            "holds rocprof `--stats` of API calls or memory copies only ({api_files}), not of kernels, so there is nothing to import; pass the kernels' statistics (rocprofv3 `<pid>_kernel_stats.csv`, rocprof v1 `results.stats.csv`) or the dispatches' CSV"
        ));
    }
    if !companions.results_seen {
        return Err(content(
            first,
            "holds no rocprof results, only companion information (input file, sysinfo or command), so there is nothing to import; pass it together with the results CSV".into(),
        ));
    }
    for name in benchmarks.names().to_vec() {
        for (k, v) in &companions.details {
            benchmarks.detail(&name, k, v);
        }
        for note in &companions.notes {
            benchmarks.note(&name, note.clone());
        }
    }
    benchmarks.finish(files)
}
