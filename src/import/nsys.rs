//! `kgate import nsys`: the SQLite export of an Nsight Systems report (`nsys export --type
//! sqlite`, or the `.sqlite` that `nsys stats` leaves beside the report).
//!
//! Every CUDA kernel launch of `CUPTI_ACTIVITY_KIND_KERNEL` is one `kernel_time` sample (ns,
//! `end − start`, the `timer` source) of its kernel's benchmark. A kernel is keyed by its
//! demangled name (`demangledName` in `StringIds`; `shortName`, then `mangledName`, where that
//! is missing): the short name would merge the instantiations of a template, whose times have
//! nothing to do with each other. The short name is the benchmark's `short_name` parameter,
//! the readable form of a long template name. When the kernels of the files imported together
//! ran on more than one GPU, every benchmark is one kernel on one GPU, named
//! `NAME [gpu N]` (N the CUDA device id) with the parameter `gpu`.
//!
//! Launch attributes constant over a benchmark's launches are its parameters: `grid` and
//! `block` (`XxYxZ`), `registers_per_thread`, `static_shared_memory_bytes`,
//! `dynamic_shared_memory_bytes`, `local_memory_per_thread_bytes` and `stream`. One that varies
//! is left out and a note names it. The number of launches is the parameter `launches`, so
//! that a comparison says where it changed beside the time.
//!
//! The device is the `TARGET_INFO_GPU` name of each GPU that ran a kernel (the table may list
//! GPUs that ran nothing, and older or trimmed exports lack it: then no device is named), the
//! driver `TARGET_INFO_SYSTEM_ENV`'s `NvDriverVersion`, and the Nsight Systems version that of
//! `META_DATA_EXPORT` (`EXPORT_META_DATA` in older exports).
//!
//! `--nvtx REGEX` takes only the launches made inside an NVTX range (`NVTX_EVENTS`, push/pop
//! and start/end ranges) whose name matches: a launch is placed by its CUDA runtime call
//! (`CUPTI_ACTIVITY_KIND_RUNTIME`, joined on `correlationId` within the process), whose start
//! lies in a push/pop range of the same thread or a start/end range of the same process, as
//! Nsight Systems' own NVTX projection places it (the kernel itself runs later, on the GPU).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::builder::{Benchmarks, KERNEL_TIME, Slot};
use super::{ImportError, Importer, Policies, content, read_error};
use crate::capture::device::Device;

use crate::model::results::{BenchmarkResult, RunResults};

pub static NSYS: Importer = Importer {
    name: "nsys",
    help: "Nsight Systems SQLite export (`nsys export --type sqlite`)",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies, ctx.nvtx.as_ref()),
};

/// The first bytes of every SQLite database.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Opens an SQLite database read-only, refusing a file that is not one with `hint` (how to get
/// the database the format reads).
pub(super) fn open_database(path: &Path, hint: &str) -> Result<Connection, ImportError> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(16).read_to_end(&mut head))
        .map_err(read_error(path))?;
    if head != SQLITE_MAGIC {
        return Err(content!(
            path,
            "is not an SQLite database (it does not begin with `SQLite format 3`); {hint}"
        ));
    }
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| content!(path, "cannot be opened as an SQLite database: {e}"))
}

/// The tables and views of a database.
pub(super) fn tables(db: &Connection, path: &Path) -> Result<BTreeSet<String>, ImportError> {
    let sql = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')";
    query_column(db, path, sql, [])
}

/// The columns of a table or view.
pub(super) fn columns(
    db: &Connection,
    path: &Path,
    table: &str,
) -> Result<BTreeSet<String>, ImportError> {
    query_column(db, path, "SELECT name FROM pragma_table_info(?1)", [table])
}

/// The values a query of one column gives.
pub(super) fn query_column<T: rusqlite::types::FromSql, C: FromIterator<T>>(
    db: &Connection,
    path: &Path,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<C, ImportError> {
    let read = || -> rusqlite::Result<C> {
        let mut statement = db.prepare(sql)?;
        let values = statement.query_map(params, |row| row.get::<_, T>(0))?;
        values.collect()
    };
    read().map_err(sql_error(path))
}

/// An SQLite error while reading `path`, for `map_err`.
pub(super) fn sql_error(path: &Path) -> impl Fn(rusqlite::Error) -> ImportError + Copy + '_ {
    move |e| {
        content!(
            path,
            "cannot be read as a profiler's SQLite database: {e}; pass the file as the profiler wrote it"
        )
    }
}

/// Launch attributes of one kernel: the first launch's values, and which differ on a later
/// launch (see [`LaunchAttributes::parameters`]).
#[derive(Debug, Clone)]
pub(super) struct LaunchAttributes<const N: usize> {
    first: Option<[Option<i64>; N]>,
    varies: [bool; N],
}

impl<const N: usize> Default for LaunchAttributes<N> {
    fn default() -> Self {
        LaunchAttributes {
            first: None,
            varies: [false; N],
        }
    }
}

impl<const N: usize> LaunchAttributes<N> {
    /// Takes in one launch's values.
    pub(super) fn see(&mut self, values: [Option<i64>; N]) {
        match &self.first {
            None => self.first = Some(values),
            Some(first) => {
                for i in 0..N {
                    self.varies[i] |= first[i] != values[i];
                }
            }
        }
    }

    /// Records on `result` the attributes of `groups` (a name and the places of its values,
    /// joined with `x`) whose values are the same on every launch as parameters, and a note
    /// naming those that vary. A group with no value (a column the file lacks) is neither.
    pub(super) fn record(&self, groups: &[(&str, &[usize])], result: &mut BenchmarkResult) {
        let Some(first) = &self.first else { return };
        let mut varying = Vec::new();
        for &(name, places) in groups {
            let values: Option<Vec<String>> = places
                .iter()
                .map(|&i| first[i].map(|v| v.to_string()))
                .collect();
            let Some(values) = values else { continue };
            if places.iter().any(|&i| self.varies[i]) {
                varying.push(name);
            } else {
                result.parameters.insert(name.into(), values.join("x"));
            }
        }
        if !varying.is_empty() {
            result.provenance.notes.push(format!(
                "launch attributes that differ between launches, so not parameters: {}",
                varying.join(", ")
            ));
        }
    }
}

/// Columns of `CUPTI_ACTIVITY_KIND_KERNEL` read as launch attributes, in [`ATTRIBUTE_GROUPS`]'
/// places.
#[rustfmt::skip]
const ATTRIBUTE_COLUMNS: [&str; 11] = [
    "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
    "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread", "streamId",
];

/// The parameters the attributes make.
#[rustfmt::skip]
const ATTRIBUTE_GROUPS: [(&str, &[usize]); 7] = [
    ("grid", &[0, 1, 2]), ("block", &[3, 4, 5]), ("registers_per_thread", &[6]),
    ("static_shared_memory_bytes", &[7]), ("dynamic_shared_memory_bytes", &[8]),
    ("local_memory_per_thread_bytes", &[9]), ("stream", &[10]),
];

const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const RUNTIME_TABLE: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// The place of the runtime call's start (then its thread) in a row of the kernel query.
const FIRST_RUNTIME: usize = 6 + ATTRIBUTE_COLUMNS.len();

const HINT: &str = "export the report with `nsys export --type sqlite REPORT.nsys-rep` and pass the `.sqlite` file";

/// One kernel on one GPU.
#[derive(Default)]
struct Kernel {
    /// The benchmark's name.
    name: String,
    slot: Slot,
    attributes: LaunchAttributes<11>,
    short: Option<String>,
    device: i64,
    launches: u32,
}

/// A file's name columns: text, or an id into `StringIds`.
fn name_cell(cell: ValueRef<'_>) -> Option<NameCell> {
    match cell {
        ValueRef::Integer(id) => Some(NameCell::Id(id)),
        ValueRef::Text(t) => Some(NameCell::Text(String::from_utf8_lossy(t).into_owned())),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum NameCell {
    Id(i64),
    Text(String),
}

fn import(
    files: &[PathBuf],
    policies: &Policies,
    nvtx: Option<&regex::Regex>,
) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "nsys");
    let mut databases = Vec::new();
    let mut gpus_used: BTreeSet<i64> = BTreeSet::new();
    for path in files {
        let db = open_database(path, HINT)?;
        let tables = tables(&db, path)?;
        if !tables.contains(KERNEL_TABLE) {
            let what = if tables.contains("rocpd_kernel_dispatch") {
                "is a rocprofv3 database; import it with `kgate import rocpd`".to_string()
            } else if tables.contains("StringIds") || tables.contains("TARGET_INFO_SYSTEM_ENV") {
                format!(
                    "is an Nsight Systems export without CUDA kernel activity (no `{KERNEL_TABLE}` table): profile with `nsys profile --trace=cuda` so that kernels are recorded"
                )
            } else {
                format!(
                    "is an SQLite database, but not an Nsight Systems export (no `{KERNEL_TABLE}` table); {HINT}"
                )
            };
            return Err(content(path, what));
        }
        let sql = format!("SELECT DISTINCT deviceId FROM {KERNEL_TABLE}");
        gpus_used.extend(query_column::<i64, Vec<_>>(&db, path, &sql, [])?);
        databases.push((path, db, tables));
    }
    let per_gpu = gpus_used.len() > 1;
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut details: BTreeMap<String, String> = BTreeMap::new();
    let mut gpu_names: BTreeMap<i64, String> = BTreeMap::new();
    for (path, db, tables) in &databases {
        let path: &Path = path;
        benchmarks.file(path);
        let mut device = Device::default();
        let version = export_version(db, tables);
        if let Some(v) = &version {
            device.tool("nsys", v);
            details.insert("nsys.version".into(), v.clone());
        }
        let present = columns(db, path, KERNEL_TABLE)?;
        for required in ["start", "end", "deviceId"] {
            if !present.contains(required) {
                return Err(content!(
                    path,
                    "`{KERNEL_TABLE}` has no `{required}` column, which every Nsight Systems export has; {HINT}"
                ));
            }
        }
        let column = |c: &str| {
            if present.contains(c) {
                format!("k.\"{c}\"")
            } else {
                "NULL".to_string()
            }
        };
        let names = ["demangledName", "shortName", "mangledName"];
        if !names.iter().any(|c| present.contains(*c)) {
            return Err(content!(
                path,
                "`{KERNEL_TABLE}` names no kernel (none of the columns `demangledName`, `shortName`, `mangledName`); {HINT}"
            ));
        }
        let select: Vec<String> = ["start", "end", "deviceId"]
            .iter()
            .chain(names.iter())
            .chain(ATTRIBUTE_COLUMNS.iter())
            .map(|c| column(c))
            .collect();
        let ranges = match nvtx {
            Some(pattern) => Some(nvtx_ranges(db, path, tables, pattern)?),
            None => None,
        };
        let (runtime, join) = if ranges.is_some() {
            if !(tables.contains(RUNTIME_TABLE) && present.contains("correlationId")) {
                return Err(content!(
                    path,
                    "has no CUDA runtime calls (`{RUNTIME_TABLE}`) to place the kernel launches in NVTX ranges with; profile with `nsys profile --trace=cuda,nvtx`, or import without --nvtx"
                ));
            }
            let process = if present.contains("globalPid") {
                " AND r.globalTid / 16777216 = k.globalPid / 16777216"
            } else {
                ""
            };
            (
                ", r.start, r.globalTid",
                format!(
                    " LEFT JOIN {RUNTIME_TABLE} r ON r.correlationId = k.correlationId{process}"
                ),
            )
        } else {
            ("", String::new())
        };
        let sql = format!(
            "SELECT {}{runtime} FROM {KERNEL_TABLE} k{join} ORDER BY k.start, k.deviceId",
            select.join(", ")
        );
        let strings = tables.contains("StringIds");
        let mut lookup = db
            .prepare(if strings {
                "SELECT value FROM StringIds WHERE id = ?1"
            } else {
                "SELECT NULL WHERE ?1 IS NULL"
            })
            .map_err(sql_error(path))?;
        let mut string = |cell: &Option<NameCell>| -> Result<Option<String>, ImportError> {
            match cell {
                None => Ok(None),
                Some(NameCell::Text(t)) => Ok(Some(t.clone())),
                Some(NameCell::Id(id)) => {
                    let mut rows = lookup.query([id]).map_err(sql_error(path))?;
                    match rows.next().map_err(sql_error(path))? {
                        Some(row) => Ok(row.get::<_, Option<String>>(0).ok().flatten()),
                        None => Ok(None),
                    }
                }
            }
        };
        // This file's (device, name ids) → kernel.
        let mut seen: HashMap<(i64, [Option<NameCell>; 3]), usize> = HashMap::new();
        let mut statement = db.prepare(&sql).map_err(sql_error(path))?;
        let mut rows = statement.query([]).map_err(sql_error(path))?;
        let mut in_file: BTreeMap<usize, u32> = BTreeMap::new();
        let mut launch = 0u64;
        while let Some(row) = rows.next().map_err(sql_error(path))? {
            launch += 1;
            let int = |i: usize| match row.get_ref(i) {
                Ok(ValueRef::Integer(v)) => Some(v),
                _ => None,
            };
            let (Some(start), Some(end), Some(gpu)) = (int(0), int(1), int(2)) else {
                return Err(content!(
                    path,
                    "launch {launch} of `{KERNEL_TABLE}` has no integer `start`, `end` or `deviceId`, which Nsight Systems always writes; {HINT}"
                ));
            };
            if let Some(ranges) = &ranges {
                let placed = int(FIRST_RUNTIME).zip(int(FIRST_RUNTIME + 1));
                if !placed.is_some_and(|(at, thread)| ranges.holds(thread, at)) {
                    continue;
                }
            }
            if end < start {
                return Err(content!(
                    path,
                    "launch {launch} of `{KERNEL_TABLE}` ends before it starts (`end` {end} < `start` {start}), which Nsight Systems never writes; pass the export unedited"
                ));
            }
            let cells = [3, 4, 5].map(|i| row.get_ref(i).ok().and_then(name_cell));
            let key = (gpu, cells);
            let at = match seen.get(&key) {
                Some(&at) => at,
                None => {
                    let [demangled, short, mangled] = &key.1;
                    let demangled = string(demangled)?;
                    let short = string(short)?;
                    let mangled = string(mangled)?;
                    let named = |n: &Option<String>| n.clone().filter(|n| !n.trim().is_empty());
                    let Some(base) = named(&demangled)
                        .or_else(|| named(&short))
                        .or_else(|| named(&mangled))
                    else {
                        return Err(content!(
                            path,
                            "launch {launch} of `{KERNEL_TABLE}` names its kernel by string ids that `StringIds` does not hold; {HINT}"
                        ));
                    };
                    let name = if per_gpu {
                        format!("{base} [gpu {gpu}]")
                    } else {
                        base.clone()
                    };
                    let at = *by_name.entry(name.clone()).or_insert_with(|| {
                        kernels.push(Kernel {
                            name: name.clone(),
                            device: gpu,
                            ..Kernel::default()
                        });
                        kernels.len() - 1
                    });
                    benchmarks.get(&name);
                    let kernel = &mut kernels[at];
                    if kernel.short.is_none() {
                        kernel.short = short.filter(|s| *s != base && !s.trim().is_empty());
                    }
                    seen.insert(key, at);
                    at
                }
            };
            let kernel = &mut kernels[at];
            let rep = kernel.launches;
            kernel.launches += 1;
            *in_file.entry(at).or_insert(0) += 1;
            kernel.attributes.see(std::array::from_fn(|i| int(6 + i)));
            let time = (end - start) as f64;
            benchmarks.add_at(&mut kernel.slot, &kernel.name, rep, KERNEL_TIME, time)?;
        }
        drop(rows);
        for (at, _) in in_file {
            let kernel = &kernels[at];
            benchmarks.imported(&kernel.name, path, kernel.launches);
        }
        if tables.contains("TARGET_INFO_GPU") {
            let gpu_columns = columns(db, path, "TARGET_INFO_GPU")?;
            if gpu_columns.contains("id") && gpu_columns.contains("name") {
                let mut statement = db
                    .prepare("SELECT id, name FROM TARGET_INFO_GPU")
                    .map_err(sql_error(path))?;
                let named = statement
                    .query_map([], |row| {
                        Ok((
                            row.get::<_, Option<i64>>(0)?,
                            row.get::<_, Option<String>>(1)?,
                        ))
                    })
                    .and_then(|r| r.collect::<rusqlite::Result<Vec<_>>>())
                    .map_err(sql_error(path))?;
                for (id, name) in named {
                    if let (Some(id), Some(name)) = (id, name)
                        && kernels.iter().any(|k| k.device == id)
                    {
                        device.accelerator(&name);
                        gpu_names.insert(id, name);
                    }
                }
            }
        }
        if let Some(driver) = system_env(db, tables, "NvDriverVersion") {
            device.driver(&driver);
        }
        benchmarks.device(path, device)?;
    }
    if let Some(pattern) = nvtx {
        if kernels.is_empty() {
            return Err(content(
                files.first().map(PathBuf::as_path).unwrap_or(Path::new("")),
                format!(
                    "no kernel was launched inside an NVTX range whose name matches `{pattern}`; check the range names (`nsys stats --report nvtx_sum`) or import without --nvtx"
                ),
            ));
        }
        details.insert("nsys.nvtx".into(), pattern.as_str().to_string());
    }
    for kernel in &kernels {
        let result = benchmarks.get(&kernel.name).result_mut();
        let parameters = &mut result.parameters;
        if let Some(short) = &kernel.short {
            parameters.insert("short_name".into(), short.clone());
        }
        if per_gpu {
            parameters.insert("gpu".into(), kernel.device.to_string());
        }
        parameters.insert("launches".into(), kernel.launches.to_string());
        kernel.attributes.record(&ATTRIBUTE_GROUPS, result);
        let provenance = &mut result.provenance;
        provenance.details.extend(details.clone());
        if let Some(gpu) = gpu_names.get(&kernel.device) {
            let gpu = format!("{}: {gpu}", kernel.device);
            provenance.details.insert("nsys.gpu".into(), gpu);
        }
    }
    benchmarks.finish(files)
}

/// The Nsight Systems version that wrote the export, from `META_DATA_EXPORT` (older exports:
/// `EXPORT_META_DATA`).
fn export_version(db: &Connection, tables: &BTreeSet<String>) -> Option<String> {
    ["META_DATA_EXPORT", "EXPORT_META_DATA"]
        .iter()
        .filter(|t| tables.contains(**t))
        .find_map(|t| {
            let sql = format!("SELECT value FROM {t} WHERE name = 'EXPORT_PRODUCT_VERSION'");
            one_text(db, &sql, [])
        })
}

/// The text a query of one value gives, trimmed; none when it is empty or the query fails.
fn one_text(db: &Connection, sql: &str, params: impl rusqlite::Params) -> Option<String> {
    db.query_row(sql, params, |row| row.get::<_, Option<String>>(0))
        .ok()
        .flatten()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A property of `TARGET_INFO_SYSTEM_ENV`.
fn system_env(db: &Connection, tables: &BTreeSet<String>, name: &str) -> Option<String> {
    if !tables.contains("TARGET_INFO_SYSTEM_ENV") {
        return None;
    }
    let sql = "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = ?1";
    one_text(db, sql, [name])
}

/// The NVTX ranges whose name matches `--nvtx`: push/pop ranges by thread, start/end ranges by
/// process (the serialized `globalTid` without its thread part), each as sorted, disjoint
/// intervals.
struct NvtxRanges {
    by_thread: HashMap<i64, Vec<(i64, i64)>>,
    by_process: HashMap<i64, Vec<(i64, i64)>>,
}

/// `NvtxPushPopRange` and `NvtxStartEndRange` in `ENUM_NSYS_EVENT_TYPE`.
const PUSH_POP: i64 = 59;
const START_END: i64 = 60;

/// A serialized `globalTid`'s process (as `globalPid` serializes it): the thread is its low 24
/// bits.
fn process_of(global_tid: i64) -> i64 {
    global_tid / 16_777_216
}

impl NvtxRanges {
    /// Whether a runtime call that started at `at` on `thread` lies in a range.
    fn holds(&self, thread: i64, at: i64) -> bool {
        let inside = |list: Option<&Vec<(i64, i64)>>| {
            list.is_some_and(|list| {
                let i = list.partition_point(|&(start, _)| start <= at);
                i > 0 && list[i - 1].1 >= at
            })
        };
        inside(self.by_thread.get(&thread)) || inside(self.by_process.get(&process_of(thread)))
    }
}

/// Sorts intervals and merges those that overlap.
fn merged(mut list: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    list.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(list.len());
    for (start, end) in list {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The ranges of `NVTX_EVENTS` whose name (`text`, or `textId` in `StringIds`) matches.
fn nvtx_ranges(
    db: &Connection,
    path: &Path,
    tables: &BTreeSet<String>,
    pattern: &regex::Regex,
) -> Result<NvtxRanges, ImportError> {
    if !tables.contains("NVTX_EVENTS") {
        return Err(content(
            path,
            "has no NVTX ranges (`NVTX_EVENTS`); profile with `nsys profile --trace=cuda,nvtx`, or import without --nvtx".into(),
        ));
    }
    let present = columns(db, path, "NVTX_EVENTS")?;
    let (name, join) = if present.contains("textId") && tables.contains("StringIds") {
        (
            "COALESCE(n.text, s.value)",
            " LEFT JOIN StringIds s ON s.id = n.textId",
        )
    } else {
        ("n.text", "")
    };
    let sql = format!(
        "SELECT n.start, n.\"end\", n.globalTid, n.eventType, {name} FROM NVTX_EVENTS n{join} WHERE n.\"end\" IS NOT NULL AND n.eventType IN ({PUSH_POP}, {START_END})"
    );
    let mut statement = db.prepare(&sql).map_err(sql_error(path))?;
    let mut rows = statement.query([]).map_err(sql_error(path))?;
    let mut by_thread: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    let mut by_process: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    while let Some(row) = rows.next().map_err(sql_error(path))? {
        let (Ok(Some(start)), Ok(Some(end)), Ok(Some(thread)), Ok(Some(kind)), Ok(Some(text))) = (
            row.get::<_, Option<i64>>(0),
            row.get::<_, Option<i64>>(1),
            row.get::<_, Option<i64>>(2),
            row.get::<_, Option<i64>>(3),
            row.get::<_, Option<String>>(4),
        ) else {
            continue;
        };
        if !pattern.is_match(&text) {
            continue;
        }
        let list = if kind == PUSH_POP {
            by_thread.entry(thread)
        } else {
            by_process.entry(process_of(thread))
        };
        list.or_default().push((start, end));
    }
    let all_merged = |by: HashMap<i64, _>| by.into_iter().map(|(k, v)| (k, merged(v))).collect();
    Ok(NvtxRanges {
        by_thread: all_merged(by_thread),
        by_process: all_merged(by_process),
    })
}
