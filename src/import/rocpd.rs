//! `kgate import rocpd`: the SQLite database rocprofv3 writes by default since ROCm 7.0
//! (`rocprofv3 --kernel-trace`, `<pid>_results.db`), the rocpd schema.
//!
//! The unsuffixed views are read, so a database that merges several processes (each with its
//! own `guid`) reads as one: `rocpd_kernel_dispatch` (`start`, `end`, `agent_id`, `kernel_id`,
//! `guid`) joined to `rocpd_info_kernel_symbol` on `id` and `guid`. Every dispatch is one
//! `kernel_time` sample (ns, `end − start`, the `timer` source) of its kernel, named by the
//! symbol's `display_name` (its `kernel_name` without the `.kd` suffix where that is missing).
//! Counters of `rocpd_pmc_event` (named in `rocpd_info_pmc`) are metrics of their dispatch
//! (the `hardware` source), summed over the rows of one dispatch.
//!
//! `agent_id` counts CPUs too: a GPU is named by its place among the GPUs (`type_index` of
//! `rocpd_info_agent`). When the dispatches of the files imported together ran on more than
//! one GPU, every benchmark is one kernel on one GPU, `NAME [gpu N]`, with the parameter `gpu`.
//! The device is the `product_name` of each GPU that ran a dispatch.
//!
//! The HIP runtime's own kernels (`__amd_rocclr_fillBufferAligned`, `…copyBuffer…`: the copies
//! and fills behind `hipMemcpy` and `hipMemset`) are benchmarks of their own, with the
//! parameter `runtime_kernel: true` and a note saying so.
//!
//! Launch attributes constant over a benchmark's dispatches are its parameters: `grid` and
//! `workgroup` (`XxYxZ`), `lds_bytes` (group segment), `scratch_bytes` (private segment),
//! `sgpr_count`, `arch_vgpr_count` and `accum_vgpr_count`; one that varies is left out and a
//! note names it. The number of dispatches is the parameter `dispatches`, so that a
//! comparison says where it changed beside the time.
//!
//! rocprof v1's `results.db` and rocm Profile Data's `.rpd` are other schemas, refused with
//! what they are.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;

use super::builder::{Benchmarks, KERNEL_TIME, Slot};
use super::nsys::{LaunchAttributes, columns, open_database, query_column, sql_error, tables};
use super::{ImportError, Importer, Policies, content};
use crate::capture::device::Device;
use crate::model::metric::Source;
use crate::model::results::RunResults;

pub static ROCPD: Importer = Importer {
    name: "rocpd",
    help: "rocprofv3 SQLite database (rocpd, `<pid>_results.db`)",
    selection: None,
    import: |files, ctx| import(files, &ctx.policies),
};

const HINT: &str = "pass the database `rocprofv3 --kernel-trace` writes (`<pid>_results.db`, rocpd output, the default since ROCm 7.0)";

/// The prefix of the HIP runtime's blit kernels.
const RUNTIME_PREFIX: &str = "__amd_rocclr_";

/// Dispatch columns read as launch attributes, in [`ATTRIBUTE_GROUPS`]' places (the last three
/// are the symbol's).
#[rustfmt::skip]
const ATTRIBUTE_COLUMNS: [&str; 11] = [
    "d.grid_size_x", "d.grid_size_y", "d.grid_size_z", "d.workgroup_size_x", "d.workgroup_size_y",
    "d.workgroup_size_z", "d.group_segment_size", "d.private_segment_size", "s.sgpr_count",
    "s.arch_vgpr_count", "s.accum_vgpr_count",
];

#[rustfmt::skip]
const ATTRIBUTE_GROUPS: [(&str, &[usize]); 7] = [
    ("grid", &[0, 1, 2]), ("workgroup", &[3, 4, 5]), ("lds_bytes", &[6]), ("scratch_bytes", &[7]),
    ("sgpr_count", &[8]), ("arch_vgpr_count", &[9]), ("accum_vgpr_count", &[10]),
];

/// One kernel on one GPU.
struct Kernel {
    name: String,
    slot: Slot,
    attributes: LaunchAttributes<11>,
    gpu: Option<i64>,
    dispatches: u32,
}

/// A GPU agent: its place among the GPUs and its product name.
#[derive(Clone)]
struct Gpu {
    index: i64,
    product: Option<String>,
}

/// What a database that is not rocpd's is, for the refusal.
fn not_rocpd(tables: &BTreeSet<String>) -> String {
    if tables.contains("CUPTI_ACTIVITY_KIND_KERNEL") {
        return "is an Nsight Systems export, not a rocprofv3 database; import it with `kgate import nsys`".into();
    }
    if tables.contains("rocpd_op") || tables.contains("rocpd_api") {
        return format!(
            "is a rocm Profile Data (RPD, rocpd v1 `rocpd_op`/`rocpd_api` tables) trace, not the rocpd schema of rocprofv3; {HINT}"
        );
    }
    let legacy = ["A", "HIP", "HSA", "KFD", "COPY", "OPS"];
    if legacy.iter().any(|t| tables.contains(*t)) {
        return format!(
            "is a legacy rocprof v1 `results.db` (tables {}), not a rocprofv3 database: import the `results.csv` rocprof v1 wrote beside it with `kgate import rocprof`, or {HINT}",
            legacy
                .iter()
                .filter(|t| tables.contains(**t))
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    format!(
        "is an SQLite database without rocprofv3's kernel dispatches (no `rocpd_kernel_dispatch`); {HINT}"
    )
}

fn import(files: &[PathBuf], policies: &Policies) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, "rocpd");
    let mut databases = Vec::new();
    let mut gpus_used: BTreeSet<Option<i64>> = BTreeSet::new();
    for path in files {
        let db = open_database(path, HINT)?;
        let tables = tables(&db, path)?;
        if !tables.contains("rocpd_kernel_dispatch") {
            return Err(content(path, not_rocpd(&tables)));
        }
        let agents = gpu_agents(&db, path, &tables)?;
        let sql = "SELECT DISTINCT agent_id FROM rocpd_kernel_dispatch";
        let ids: Vec<Option<i64>> = query_column(&db, path, sql, [])?;
        gpus_used.extend(
            ids.iter()
                .map(|id| id.and_then(|id| agents.get(&id).map(|g| g.index))),
        );
        databases.push((path, db, tables, agents));
    }
    let per_gpu = gpus_used.len() > 1;
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut details: BTreeMap<String, String> = BTreeMap::new();
    for (path, db, tables, agents) in &databases {
        let path: &Path = path;
        benchmarks.file(path);
        let dispatch = columns(db, path, "rocpd_kernel_dispatch")?;
        for required in ["start", "end", "kernel_id"] {
            if !dispatch.contains(required) {
                return Err(content!(
                    path,
                    "`rocpd_kernel_dispatch` has no `{required}` column, which rocprofv3 always writes; {HINT}"
                ));
            }
        }
        let symbol = if tables.contains("rocpd_info_kernel_symbol") {
            columns(db, path, "rocpd_info_kernel_symbol")?
        } else {
            BTreeSet::new()
        };
        if !(symbol.contains("id")
            && (symbol.contains("display_name") || symbol.contains("kernel_name")))
        {
            return Err(content!(
                path,
                "has no `rocpd_info_kernel_symbol` naming the kernels (`id`, `display_name`, `kernel_name`); {HINT}"
            ));
        }
        let guid = dispatch.contains("guid") && symbol.contains("guid");
        let column = |c: &str| {
            let (table, name) = c.split_once('.').expect("qualified");
            let present = if table == "d" { &dispatch } else { &symbol };
            if present.contains(name) {
                format!("{table}.\"{name}\"")
            } else {
                "NULL".to_string()
            }
        };
        #[rustfmt::skip]
        let select: Vec<String> = [
            "d.start", "d.end", "d.agent_id", "s.display_name", "s.kernel_name", "d.event_id",
            "d.guid",
        ]
        .iter()
        .chain(ATTRIBUTE_COLUMNS.iter())
        .map(|c| column(c))
        .collect();
        let select = select.join(", ");
        let same_guid = if guid { " AND s.guid = d.guid" } else { "" };
        let sql = format!(
            "SELECT {select} FROM rocpd_kernel_dispatch d LEFT JOIN rocpd_info_kernel_symbol s ON s.id = d.kernel_id{same_guid} ORDER BY d.start, d.agent_id"
        );
        let counters = counters(db, path, tables)?;
        if let Ok(v) = db.query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'",
            [],
            |row| row.get::<_, String>(0),
        ) {
            details.insert("rocpd.schema_version".into(), v);
        }
        let mut device = Device::default();
        let mut statement = db.prepare(&sql).map_err(sql_error(path))?;
        let mut rows = statement.query([]).map_err(sql_error(path))?;
        // This file's (agent, kernel symbol name) → kernel.
        let mut seen: HashMap<(Option<i64>, String), usize> = HashMap::new();
        let mut in_file: BTreeSet<usize> = BTreeSet::new();
        let mut number = 0u64;
        while let Some(row) = rows.next().map_err(sql_error(path))? {
            number += 1;
            let int = |i: usize| match row.get_ref(i) {
                Ok(ValueRef::Integer(v)) => Some(v),
                _ => None,
            };
            let text = |i: usize| match row.get_ref(i) {
                Ok(ValueRef::Text(t)) => {
                    std::str::from_utf8(t).ok().filter(|t| !t.trim().is_empty())
                }
                _ => None,
            };
            let (Some(start), Some(end)) = (int(0), int(1)) else {
                return Err(content!(
                    path,
                    "dispatch {number} has no integer `start` and `end`, which rocprofv3 always writes; {HINT}"
                ));
            };
            if end < start {
                return Err(content!(
                    path,
                    "dispatch {number} ends before it starts (`end` {end} < `start` {start}), which rocprofv3 never writes; pass the database unedited"
                ));
            }
            let gpu = int(2).and_then(|id| agents.get(&id));
            let Some(raw) = text(3).or_else(|| text(4)) else {
                return Err(content!(
                    path,
                    "dispatch {number} names a kernel that `rocpd_info_kernel_symbol` does not hold; {HINT}"
                ));
            };
            let at = match seen.get(&(gpu.map(|g| g.index), raw.to_string())) {
                Some(&at) => at,
                None => {
                    let base = super::rocprof::kernel_name(raw);
                    let index = gpu.map(|g| g.index);
                    let name = match index {
                        Some(i) if per_gpu => format!("{base} [gpu {i}]"),
                        None if per_gpu => format!(
                            "{base} [agent {}]",
                            int(2).map_or_else(|| "unknown".to_string(), |a| a.to_string())
                        ),
                        _ => base.clone(),
                    };
                    let at = *by_name.entry(name.clone()).or_insert_with(|| {
                        kernels.push(Kernel {
                            name: name.clone(),
                            slot: Slot::default(),
                            attributes: LaunchAttributes::default(),
                            gpu: index,
                            dispatches: 0,
                        });
                        kernels.len() - 1
                    });
                    benchmarks.get(&name);
                    if let Some(product) = gpu.and_then(|g| g.product.as_deref()) {
                        device.accelerator(product);
                    }
                    seen.insert((index, raw.to_string()), at);
                    at
                }
            };
            let kernel = &mut kernels[at];
            let rep = kernel.dispatches;
            kernel.dispatches += 1;
            in_file.insert(at);
            kernel.attributes.see(std::array::from_fn(|i| int(7 + i)));
            let time = (end - start) as f64;
            benchmarks.add_at(&mut kernel.slot, &kernel.name, rep, KERNEL_TIME, time)?;
            if !counters.is_empty()
                && let Some(event) = int(5)
                && let Some(values) = counters.get(&(text(6).unwrap_or("").to_string(), event))
            {
                for (counter, value) in values {
                    benchmarks.add(&kernel.name, rep, counter, "", Source::Hardware, *value)?;
                }
            }
        }
        drop(rows);
        for at in in_file {
            let kernel = &kernels[at];
            benchmarks.imported(&kernel.name, path, kernel.dispatches);
        }
        benchmarks.device(path, device)?;
    }
    for kernel in &kernels {
        let runtime = kernel.name.starts_with(RUNTIME_PREFIX);
        let result = benchmarks.get(&kernel.name).result_mut();
        let parameters = &mut result.parameters;
        if per_gpu && let Some(gpu) = kernel.gpu {
            parameters.insert("gpu".into(), gpu.to_string());
        }
        parameters.insert("dispatches".into(), kernel.dispatches.to_string());
        if runtime {
            parameters.insert("runtime_kernel".into(), "true".into());
            result.provenance.notes.push(
                "a HIP runtime kernel (`__amd_rocclr_*`: a copy or fill the runtime issues for hipMemcpy, hipMemset and the like), not the application's own code".into(),
            );
        }
        kernel.attributes.record(&ATTRIBUTE_GROUPS, result);
        result.provenance.details.extend(details.clone());
    }
    benchmarks.finish(files)
}

/// The GPU agents of `rocpd_info_agent` by id: their place among the GPUs (`type_index`, else
/// their order by id) and product name.
fn gpu_agents(
    db: &rusqlite::Connection,
    path: &Path,
    tables: &BTreeSet<String>,
) -> Result<HashMap<i64, Gpu>, ImportError> {
    let mut gpus = HashMap::new();
    if !tables.contains("rocpd_info_agent") {
        return Ok(gpus);
    }
    let present = columns(db, path, "rocpd_info_agent")?;
    let column = |c: &str| {
        if present.contains(c) {
            format!("\"{c}\"")
        } else {
            "NULL".to_string()
        }
    };
    let [kind, index, product, name] = ["type", "type_index", "product_name", "name"].map(column);
    let sql =
        format!("SELECT id, {kind}, {index}, {product}, {name} FROM rocpd_info_agent ORDER BY id");
    let mut statement = db.prepare(&sql).map_err(sql_error(path))?;
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, Option<i64>>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, Option<i64>>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
            ))
        })
        .and_then(|r| r.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(sql_error(path))?;
    let mut order = 0;
    for (id, kind, type_index, product, name) in rows {
        let Some(id) = id else { continue };
        let gpu = kind
            .as_deref()
            .is_none_or(|k| k.eq_ignore_ascii_case("GPU"));
        if !gpu {
            continue;
        }
        let product = product.or(name).map(|p| p.trim().to_string());
        let product = product.filter(|p| !p.is_empty());
        gpus.insert(
            id,
            Gpu {
                index: type_index.unwrap_or(order),
                product,
            },
        );
        order += 1;
    }
    Ok(gpus)
}

/// Counter values by (guid, dispatch `event_id`): each counter's name and its sum over the
/// dispatch's rows. Empty when the database holds none.
type Counters = HashMap<(String, i64), Vec<(String, f64)>>;

fn counters(
    db: &rusqlite::Connection,
    path: &Path,
    tables: &BTreeSet<String>,
) -> Result<Counters, ImportError> {
    let mut found = Counters::new();
    if !(tables.contains("rocpd_pmc_event") && tables.contains("rocpd_info_pmc")) {
        return Ok(found);
    }
    let event = columns(db, path, "rocpd_pmc_event")?;
    let info = columns(db, path, "rocpd_info_pmc")?;
    if !(["event_id", "pmc_id", "value"]
        .iter()
        .all(|c| event.contains(*c))
        && info.contains("id")
        && info.contains("name"))
    {
        return Ok(found);
    }
    let guid = if event.contains("guid") {
        "e.guid"
    } else {
        "''"
    };
    let same_guid = event.contains("guid") && info.contains("guid");
    let join = if same_guid {
        " AND p.guid = e.guid"
    } else {
        ""
    };
    let sql = format!(
        "SELECT {guid}, e.event_id, p.name, SUM(e.value) FROM rocpd_pmc_event e JOIN rocpd_info_pmc p ON p.id = e.pmc_id{join} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    );
    let mut statement = db.prepare(&sql).map_err(sql_error(path))?;
    let mut rows = statement.query([]).map_err(sql_error(path))?;
    while let Some(row) = rows.next().map_err(sql_error(path))? {
        let guid = row.get::<_, Option<String>>(0).ok().flatten();
        let guid = guid.unwrap_or_default();
        let (Ok(Some(event)), Ok(Some(name)), Ok(Some(value))) = (
            row.get::<_, Option<i64>>(1),
            row.get::<_, Option<String>>(2),
            row.get::<_, Option<f64>>(3),
        ) else {
            continue;
        };
        found.entry((guid, event)).or_default().push((name, value));
    }
    Ok(found)
}
