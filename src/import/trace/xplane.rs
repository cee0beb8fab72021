//! `kgate import xplane`: device time and performance counters from XProf / TensorFlow
//! profiler XSpace files (`*.xplane.pb`, written by `jax.profiler` and XProf).
//!
//! The XSpace is the profiler's own record, before any viewer samples or caps it, so it is the
//! most faithful source of device time on TPUs and GPUs. Events are read from each line:
//! start = line `timestamp_ns` + event `offset_ps`, duration = `duration_ps`.

use std::collections::HashMap;
use std::path::Path;

use prost::Message;

use super::hlo_proto::HloProto;
use super::xplane_proto::{XEvent, XPlane, XSpace, x_event, x_stat};
use super::{TraceSamples, TraceSelection, import_files};
use crate::capture::device::{Device, SM_MAX_MHZ};
use crate::import::{ImportError, Importer, SelectionScope, content, read_error};
use crate::model::results::Artifact;
use crate::model::series::Sampling;
use std::collections::BTreeMap;

/// What the default selection takes, in words.
const DEFAULT_SELECTION: &str = "events on the `XLA Ops` and `Stream #…` lines of `/device:` \
                                 planes, and events with an `hlo_op` stat on those planes (on \
                                 the host's when the profile has no `/device:` plane)";

pub static XPLANE: Importer = Importer {
    name: "xplane",
    help: "XProf / TensorFlow profiler XSpace protobuf (`*.xplane.pb`)",
    selection: Some(SelectionScope {
        pid: "this plane (id or name)",
        tid: "this line (id or name)",
    }),
    // XSpace files, each one repetition.
    import: |files, ctx| {
        let words = ("counter events", "--pid PLANE and --tid LINE");
        import_files("xplane", files, ctx, read_file, DEFAULT_SELECTION, words)
    },
};

/// The most bytes read from one XSpace file: the protobuf is decoded whole, so this bounds
/// what a file (or an endless stream) may cost.
const MAX_XPLANE_BYTES: u64 = 1 << 30;

/// Reads and decodes one XSpace file, within `MAX_XPLANE_BYTES`.
pub fn read_file(path: &Path, selection: &TraceSelection) -> Result<TraceSamples, ImportError> {
    use std::io::Read;
    let read_error = read_error(path);
    let refuse = |message| content(path, message);
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    let first = (&mut file).take(1).read_to_end(&mut bytes);
    first.map_err(read_error)?;
    // No protobuf message starts with a zero byte (field number 0 does not exist): a device
    // such as /dev/zero is refused before anything is read.
    if bytes.first() == Some(&0) {
        return Err(refuse(
            "starts with a zero byte, so it is not an XSpace protobuf (`*.xplane.pb` as written by jax.profiler or XProf)".into(),
        ));
    }
    let rest = file.take(MAX_XPLANE_BYTES).read_to_end(&mut bytes);
    rest.map_err(read_error)?;
    if bytes.len() as u64 > MAX_XPLANE_BYTES {
        let mib = MAX_XPLANE_BYTES >> 20;
        return Err(refuse(format!(
            "is larger than {mib} MiB, more than kgate reads from one XSpace file (or an endless stream); profile a shorter window"
        )));
    }
    let not_xspace = "not an XSpace protobuf (`*.xplane.pb` as written by jax.profiler or XProf)";
    let space =
        XSpace::decode(bytes.as_slice()).map_err(|e| content!(path, "{not_xspace}: {e}"))?;
    Ok(samples(&space, selection))
}

/// Kernel durations and counter readings of a decoded XSpace. Times count from the earliest
/// line start in the space (epoch nanoseconds do not fit an f64 exactly).
///
/// By default, kernels come from `/device:` planes: their stream and `XLA Ops` lines, and
/// their events with an `hlo_op` stat. On the host's planes an event with an `hlo_op` stat is
/// a launch call (`cudaLaunchKernel`, `hipModuleLaunchKernel`) naming the op it launches, not
/// the kernel, so it is left out (and counted in a note) unless the selection asks for host
/// lines. A profile without any `/device:` plane (JAX on the CPU) runs its XLA ops on the
/// host: there the host events with an `hlo_op` stat are the kernels, and a note says so.
pub fn samples(space: &XSpace, selection: &TraceSelection) -> TraceSamples {
    let origin_ns = space
        .planes
        .iter()
        .flat_map(|p| &p.lines)
        .map(|l| l.timestamp_ns)
        .min()
        .unwrap_or(0);
    let mut out = TraceSamples::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let has_device_plane = space.planes.iter().any(|p| p.name.starts_with("/device:"));
    let (mut host_launches, mut host_ops) = (0usize, 0usize);
    let mut periodic = Periodic::default();
    let mut end_of_profile = EndOfProfile::default();
    for plane in &space.planes {
        if !selection.pid_matches(&plane.id.to_string(), Some(&plane.name)) {
            continue;
        }
        let stats = StatIds::of(plane);
        let device_plane = plane.name.starts_with("/device:");
        let chip = chip_of(plane);
        for line in &plane.lines {
            let line_name = if line.display_name.is_empty() {
                &line.name
            } else {
                &line.display_name
            };
            let line_selected = selection.tid_matches(&line.id.to_string(), Some(&line.name))
                || selection.tid_matches(&line.id.to_string(), Some(line_name));
            if !line_selected {
                continue;
            }
            let kernel_line =
                device_plane && (line.name == "XLA Ops" || line.name.starts_with("Stream #"));
            for event in &line.events {
                let Some(x_event::Data::OffsetPs(offset_ps)) = event.data else {
                    continue; // aggregated events carry no time of their own
                };
                let name = plane
                    .event_metadata
                    .get(&event.metadata_id)
                    .map(|m| m.name.as_str())
                    .unwrap_or("");
                let t_ns = (line.timestamp_ns - origin_ns) as f64 + offset_ps as f64 / 1000.0;
                if line.name == COUNTERS_LINE {
                    periodic.take(plane, &stats, event, chip, t_ns);
                    continue;
                }
                if let Some(value) = stats.counter_value(event) {
                    end_of_profile.take(&stats, event, chip, name, t_ns, value);
                    continue;
                }
                let hlo_op = !kernel_line && stats.has_hlo_op(event);
                let host_op = hlo_op && !device_plane;
                let default_kernel = kernel_line || (hlo_op && !(host_op && has_device_plane));
                if !(default_kernel || selection.is_explicit()) || !selection.name_matches(name) {
                    if host_op && has_device_plane && selection.name_matches(name) {
                        host_launches += 1;
                    }
                    continue;
                }
                if host_op && !has_device_plane && !selection.is_explicit() {
                    host_ops += 1;
                }
                let nanos = event.duration_ps as f64 / 1000.0;
                match index.get(name) {
                    Some(&i) => {
                        out.kernels[i].1.push(nanos);
                        out.starts[i].push(t_ns);
                    }
                    None => {
                        index.insert(name.to_string(), out.kernels.len());
                        out.kernels.push((name.to_string(), vec![nanos]));
                        out.starts.push(vec![t_ns]);
                    }
                }
            }
        }
    }
    if host_launches > 0 {
        out.notes.push(format!(
            "left out {host_launches} host-side events with an `hlo_op` stat on `/host:` planes (launch calls such as `cudaLaunchKernel` or `hipModuleLaunchKernel`): kernels come from the `/device:` planes; select host lines with --pid and --tid"
        ));
    }
    if host_ops > 0 {
        out.notes.push(format!(
            "the profile has no `/device:` plane (JAX on the CPU?): the default selection took the {host_ops} host events with an `hlo_op` stat (XLA ops run on the host) as kernels"
        ));
    }
    let window = profile_window(space, origin_ns);
    counters(&mut out, periodic, end_of_profile, window);
    custom_calls(space, &mut out);
    out.device = device(space);
    out
}

/// The device-plane line whose events are XProf's periodic counter samples.
pub const COUNTERS_LINE: &str = "_counters_";

/// The chip a device plane is: its `global_chip_id` stat, else its `device_id` (as XProf's
/// Perf Counters tool reads it).
fn chip_of(plane: &XPlane) -> Option<i64> {
    let ids = ["global_chip_id", "device_id"];
    ids.iter().find_map(|wanted| int_stat(plane, wanted))
}

/// The id a plane gave the stat named `wanted`.
fn stat_id(plane: &XPlane, wanted: &str) -> Option<i64> {
    Some(plane.stat_metadata.values().find(|m| m.name == wanted)?.id)
}

/// The value of a plane's own stat named `wanted`.
fn plane_stat<'p>(plane: &'p XPlane, wanted: &str) -> Option<&'p x_stat::Value> {
    let id = stat_id(plane, wanted)?;
    let stat = plane.stats.iter().find(|s| s.metadata_id == id)?;
    stat.value.as_ref()
}

/// A stat's value as a number, where it is one.
fn number_of(value: &x_stat::Value) -> Option<f64> {
    match value {
        x_stat::Value::DoubleValue(v) => Some(*v),
        x_stat::Value::Uint64Value(v) => Some(*v as f64),
        x_stat::Value::Int64Value(v) => Some(*v as f64),
        _ => None,
    }
}

/// The integer a plane's stat named `wanted` holds.
fn int_stat(plane: &XPlane, wanted: &str) -> Option<i64> {
    match plane_stat(plane, wanted)? {
        x_stat::Value::Int64Value(v) => Some(*v),
        x_stat::Value::Uint64Value(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// One counter reading and the chip it was read on.
type ChipReading = (Option<i64>, String, f64, f64);

/// Periodic samples: events on `_counters_` lines, each an increment over the interval that
/// ends at the event's time.
#[derive(Default)]
struct Periodic {
    readings: Vec<ChipReading>,
    /// Events with no numeric stat (nothing to read), and events with several (each read
    /// under `name.stat`).
    no_value: usize,
    several: usize,
}

impl Periodic {
    /// Reads one `_counters_` event as XProf's trace viewer does: named by its metadata's
    /// display name, else its name; its values the numeric stats of its metadata, then its
    /// own, internal stats left out.
    fn take(&mut self, plane: &XPlane, stats: &StatIds, event: &XEvent, chip: Option<i64>, t: f64) {
        let Some(meta) = plane.event_metadata.get(&event.metadata_id) else {
            self.no_value += 1;
            return;
        };
        let name = if meta.display_name.is_empty() {
            &meta.name
        } else {
            &meta.display_name
        };
        let values: Vec<(&str, f64)> = meta
            .stats
            .iter()
            .chain(&event.stats)
            .filter_map(|stat| {
                let stat_name = plane
                    .stat_metadata
                    .get(&stat.metadata_id)
                    .map(|m| m.name.as_str())
                    .unwrap_or("");
                if is_internal_stat(stat_name) || Some(stat.metadata_id) == stats.hlo_op {
                    return None;
                }
                Some((stat_name, number_of(stat.value.as_ref()?)?))
            })
            .collect();
        match values.as_slice() {
            [] => self.no_value += 1,
            [(_, v)] => self.readings.push((chip, name.clone(), t, *v)),
            several => {
                self.several += 1;
                for (stat, v) in several {
                    self.readings.push((chip, format!("{name}.{stat}"), t, *v));
                }
            }
        }
    }
}

/// XProf's internal stats, left out of a counter event's values (`IsInternalStat`).
fn is_internal_stat(name: &str) -> bool {
    matches!(
        name,
        "_pt" | "_ct" | "_p" | "_c" | "_r" | "flops" | "program_id" | "symbol_id"
    )
}

/// End-of-profile samples: events with a `counter_value` stat on other lines (a line is a
/// sample, its events the counters), running totals since the counters were cleared.
#[derive(Default)]
struct EndOfProfile {
    readings: Vec<ChipReading>,
    /// Readings that carry a `performance_counter_description` or `_sets` stat.
    described: usize,
}

impl EndOfProfile {
    fn take(
        &mut self,
        stats: &StatIds,
        event: &XEvent,
        chip: Option<i64>,
        name: &str,
        t: f64,
        value: f64,
    ) {
        if stats.describes(event) {
            self.described += 1;
        }
        self.readings.push((chip, name.to_string(), t, value));
    }
}

/// The profile's window in nanoseconds from `origin_ns`: the `Task Environment` plane's
/// `profile_start_time` and `profile_stop_time` (epoch nanoseconds) where it has them, else
/// the earliest line start and the latest event end.
fn profile_window(space: &XSpace, origin_ns: i64) -> (f64, f64, bool) {
    let mut recorded = (None, None);
    if let Some(env) = space.planes.iter().find(|p| p.name == "Task Environment") {
        let start = int_stat(env, "profile_start_time");
        recorded = (start, int_stat(env, "profile_stop_time"));
    }
    let mut end = 0.0f64;
    for line in space.planes.iter().flat_map(|p| &p.lines) {
        for event in &line.events {
            if let Some(x_event::Data::OffsetPs(offset)) = event.data {
                let t = (line.timestamp_ns - origin_ns) as f64
                    + (offset as f64 + event.duration_ps.max(0) as f64) / 1000.0;
                end = end.max(t);
            }
        }
    }
    match recorded {
        (Some(start), Some(stop)) if stop > start => {
            ((start - origin_ns) as f64, (stop - origin_ns) as f64, true)
        }
        _ => (0.0, end, false),
    }
}

/// Puts both kinds of counter sample into `out`, with how each is sampled and what was read
/// into it, in notes. A counter with a single end-of-profile reading is a total since the
/// profile started (XProf's docs: the counters are cleared at the start): it gets a zero
/// reading at the window's start, and its reading moves to the window's end when it carries
/// no later time. Counters of one chip are kept; those of others are counted in a note.
fn counters(
    out: &mut TraceSamples,
    periodic: Periodic,
    eop: EndOfProfile,
    window: (f64, f64, bool),
) {
    let chips: std::collections::BTreeSet<Option<i64>> = periodic
        .readings
        .iter()
        .chain(&eop.readings)
        .map(|r| r.0)
        .collect();
    let kept_chip = chips.iter().next().copied().flatten();
    let mut other_chips = 0usize;
    let keep = |r: &ChipReading, other: &mut usize| {
        if chips.len() > 1 && r.0 != kept_chip {
            *other += 1;
            false
        } else {
            true
        }
    };
    let periodic_count = periodic.readings.len();
    for r in periodic.readings {
        if keep(&r, &mut other_chips) {
            out.sampling.insert(r.1.clone(), Sampling::Interval);
            out.counters.push(&r.1, r.2, r.3);
        }
    }
    let mut per_counter: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &eop.readings {
        if keep(r, &mut other_chips) {
            per_counter.entry(r.1.clone()).or_default().push((r.2, r.3));
        }
    }
    let (start, end, recorded) = window;
    let mut single = 0usize;
    for (name, mut readings) in per_counter {
        if out.sampling.contains_key(&name) {
            out.notes.push(format!(
                "counter `{name}` has periodic samples and end-of-profile readings: the end-of-profile readings are left out"
            ));
            continue;
        }
        if let [(t, _)] = readings.as_mut_slice() {
            single += 1;
            if *t <= start {
                *t = end;
            }
            readings.insert(0, (start, 0.0));
        }
        out.sampling.insert(name.clone(), Sampling::Cumulative);
        for (t, v) in readings {
            out.counters.push(&name, t, v);
        }
    }
    if periodic_count > 0 {
        out.notes.push(format!(
            "{periodic_count} periodic counter samples from `{COUNTERS_LINE}` lines, each read as the increase over the interval that ends at its time (set `counters: {{mode: cumulative}}` on the benchmark to read them as running totals)"
        ));
    }
    let (no_value, several, described) = (periodic.no_value, periodic.several, eop.described);
    if no_value > 0 {
        out.notes.push(format!(
            "left out {no_value} events on `{COUNTERS_LINE}` lines that carry no numeric value"
        ));
    }
    if several > 0 {
        out.notes.push(format!(
            "{several} events on `{COUNTERS_LINE}` lines carry several values: each value is read as its own counter, `NAME.STAT`"
        ));
    }
    if single > 0 {
        let from = match recorded {
            true => "the profile's start (`profile_start_time`)",
            false => "the profile's earliest timestamp",
        };
        out.notes.push(format!(
            "{single} counters with one end-of-profile reading (`counter_value`), read as totals from {from} at {start} ns (counters are cleared when profiling starts) to the reading, at {end} ns when it carries no later time"
        ));
    }
    if described > 0 {
        out.notes.push(format!(
            "the description and counter sets (`performance_counter_description`, `performance_counter_sets`) of {described} counter readings are not kept in the results"
        ));
    }
    if other_chips > 0 {
        let kept = kept_chip.map_or("(unnamed)".into(), |c| c.to_string());
        let n = chips.len();
        out.notes.push(format!(
            "the profile has counters of {n} chips: those of chip {kept} are kept, {other_chips} readings of the others left out; select a chip's plane with --pid"
        ));
    }
}

/// A custom call's static cost estimate and lowered body, from the HLO modules the
/// `/host:metadata` plane holds (stat "Hlo Proto" of each event metadata): the estimate as
/// `flops_estimate` and `bytes_estimate` beside the measured values, the body as an artifact,
/// for the kernel of the same name.
fn custom_calls(space: &XSpace, out: &mut TraceSamples) {
    let Some(plane) = space.planes.iter().find(|p| p.name == "/host:metadata") else {
        return;
    };
    let Some(hlo_stat) = stat_id(plane, "Hlo Proto") else {
        return;
    };
    let mut metas: Vec<_> = plane.event_metadata.values().collect();
    metas.sort_by_key(|m| m.id);
    for meta in metas {
        let Some(x_stat::Value::BytesValue(bytes)) = meta
            .stats
            .iter()
            .find(|s| s.metadata_id == hlo_stat)
            .and_then(|s| s.value.as_ref())
        else {
            continue;
        };
        let module = match HloProto::decode(bytes.as_slice()) {
            Ok(proto) => proto.hlo_module.unwrap_or_default(),
            Err(e) => {
                out.notes.push(format!(
                    "the HLO module `{}` on `/host:metadata` is not an HloProto ({e}); its custom calls' estimates and bodies are not read",
                    meta.name
                ));
                continue;
            }
        };
        for instr in module.computations.iter().flat_map(|c| &c.instructions) {
            if instr.opcode != "custom-call" || instr.backend_config.is_empty() {
                continue;
            }
            let Some(config) = custom_call_config(&instr.backend_config) else {
                continue;
            };
            let kernel = instr.name.clone();
            if !out.kernels.iter().any(|(k, _)| *k == kernel) {
                out.notes.push(format!(
                    "custom call `{kernel}` of module `{}` has a backend_config but no selected kernel event of that name: its estimate and body are not kept",
                    module.name
                ));
                continue;
            }
            if let Some(cost) = config.get("cost_estimate") {
                for (field, metric, unit) in [
                    ("flops", "flops_estimate", "FLOP"),
                    ("bytes_accessed", "bytes_estimate", "B"),
                    ("transcendentals", "transcendentals_estimate", ""),
                ] {
                    if let Some(v) = cost.get(field).and_then(serde_json::Value::as_f64) {
                        out.estimates
                            .push((kernel.clone(), metric.into(), v, unit.into()));
                    }
                }
            }
            if let Some(body) = config.get("body").and_then(serde_json::Value::as_str) {
                let base64 = base64::engine::general_purpose::STANDARD;
                let text = match base64::Engine::decode(&base64, body.trim()) {
                    Ok(bytes) => {
                        body_text(&kernel, &module.name, &instr.custom_call_target, &bytes)
                    }
                    Err(e) => {
                        out.notes.push(format!(
                            "custom call `{kernel}`: its backend_config `body` is not base64 ({e}); the body is not kept"
                        ));
                        continue;
                    }
                };
                out.artifacts.push((
                    kernel.clone(),
                    CUSTOM_CALL_BODY.into(),
                    Artifact {
                        path: format!("/host:metadata/{}/{kernel}", module.name),
                        text,
                        truncated: false,
                    },
                ));
            }
        }
    }
}

/// The artifact name of a custom call's lowered body.
pub const CUSTOM_CALL_BODY: &str = "custom_call_body";

/// `custom_call_config` of a custom call's JSON backend_config, when it is one.
fn custom_call_config(config: &[u8]) -> Option<serde_json::Value> {
    let value: serde_json::Value = serde_json::from_slice(config).ok()?;
    value.get("custom_call_config").cloned()
}

/// A lowered body as artifact text: MLIR text as it is; MLIR bytecode (which kgate does not
/// decode) as its size, a digest and its printable strings (op and attribute names), so that
/// an IR diff shows that, and roughly where, the kernel changed.
fn body_text(kernel: &str, module: &str, target: &str, bytes: &[u8]) -> String {
    let head = format!(
        "lowered body of custom call `{kernel}` (module `{module}`, target `{}`)
",
        if target.is_empty() { "?" } else { target }
    );
    if !bytes.starts_with(b"ML\xefR")
        && let Ok(text) = std::str::from_utf8(bytes)
    {
        let mut text = format!("{head}{text}");
        if text.len() > crate::model::results::ARTIFACT_MAX_BYTES {
            let mut cut = crate::model::results::ARTIFACT_MAX_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        return text;
    }
    let digest = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut text = format!(
        "{head}format: MLIR bytecode; kgate has no bytecode decoder, so the body is shown by its size, digest and printable strings
size: {} bytes
fnv1a-64: {digest:016x}
strings:
",
        bytes.len()
    );
    for run in bytes
        .split(|b| !(b.is_ascii_graphic() || *b == b' '))
        .filter(|r| r.len() >= 4)
    {
        if text.len() + run.len() + 3 > crate::model::results::ARTIFACT_MAX_BYTES {
            text.push_str("  …\n");
            break;
        }
        text.push_str("  ");
        text.push_str(&String::from_utf8_lossy(run));
        text.push('\n');
    }
    text
}

/// The device an XSpace names, whatever is selected: for each `/device:GPU:…` or
/// `/device:TPU:…` plane its `device_type_string` (TPUs), else its vendor, kind and compute
/// capability with its core count (`Nvidia GPU (compute capability 7.0, 80 cores)`), and its
/// `clock_rate` (kHz) as the SM clock; the JAX versions that `/host:metadata` records as tools.
pub fn device(space: &XSpace) -> Device {
    let mut device = Device::default();
    for plane in &space.planes {
        let text = |wanted: &str| match plane_stat(plane, wanted)? {
            x_stat::Value::StrValue(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            x_stat::Value::RefValue(id) => plane
                .stat_metadata
                .get(&(*id as i64))
                .map(|m| m.name.clone()),
            _ => None,
        };
        let number = |wanted: &str| number_of(plane_stat(plane, wanted)?);
        if plane.name == "/host:metadata" {
            for tool in ["jax", "jaxlib"] {
                if let Some(v) = text(&format!("{tool}_version")) {
                    device.tool(tool, &v);
                }
            }
            continue;
        }
        let Some(kind) = plane
            .name
            .strip_prefix("/device:")
            .and_then(|rest| rest.split(':').next())
            .filter(|k| *k == "GPU" || *k == "TPU")
        else {
            continue;
        };
        let name = text("device_type_string").unwrap_or_else(|| {
            let mut name = match text("device_vendor") {
                Some(vendor) => format!("{vendor} {kind}"),
                None => kind.to_string(),
            };
            if let Some(major) = number("compute_cap_major") {
                let minor = number("compute_cap_minor").unwrap_or(0.0);
                name.push_str(&format!(" (compute capability {major}.{minor}"));
                if let Some(cores) = number("core_count") {
                    name.push_str(&format!(", {cores} cores"));
                }
                name.push(')');
            }
            name
        });
        device.accelerator(&name);
        if let Some(khz) = number("clock_rate") {
            device.clock_khz(SM_MAX_MHZ, khz);
        }
    }
    device
}

/// The ids a plane gave the stats kgate reads.
struct StatIds {
    counter_value: Option<i64>,
    hlo_op: Option<i64>,
    description: Option<i64>,
    sets: Option<i64>,
}

impl StatIds {
    fn of(plane: &XPlane) -> StatIds {
        let find = |wanted: &str| stat_id(plane, wanted);
        StatIds {
            counter_value: find("counter_value"),
            hlo_op: find("hlo_op"),
            description: find("performance_counter_description"),
            sets: find("performance_counter_sets"),
        }
    }

    fn counter_value(&self, event: &XEvent) -> Option<f64> {
        let id = self.counter_value?;
        let stat = event.stats.iter().find(|s| s.metadata_id == id)?;
        number_of(stat.value.as_ref()?)
    }

    /// Whether an event carries a counter description or counter sets.
    fn describes(&self, event: &XEvent) -> bool {
        event
            .stats
            .iter()
            .any(|s| Some(s.metadata_id) == self.description || Some(s.metadata_id) == self.sets)
    }

    fn has_hlo_op(&self, event: &XEvent) -> bool {
        self.hlo_op
            .is_some_and(|id| event.stats.iter().any(|s| s.metadata_id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::trace::xplane_proto::{XEventMetadata, XLine, XStat, XStatMetadata};

    fn event(metadata_id: i64, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
        XEvent {
            metadata_id,
            data: Some(x_event::Data::OffsetPs(offset_ps)),
            duration_ps,
            stats,
        }
    }

    fn tpu_space() -> XSpace {
        let mut plane = XPlane {
            id: 3,
            name: "/device:TPU:0".into(),
            ..Default::default()
        };
        for (id, name) in [(1, "fusion.1"), (2, "CYCLES"), (3, "copy.2")] {
            plane.event_metadata.insert(
                id,
                XEventMetadata {
                    id,
                    name: name.into(),
                    ..Default::default()
                },
            );
        }
        plane.stat_metadata.insert(
            7,
            XStatMetadata {
                id: 7,
                name: "counter_value".into(),
                ..Default::default()
            },
        );
        let counter = |v| XStat {
            metadata_id: 7,
            value: Some(x_stat::Value::Uint64Value(v)),
        };
        plane.lines.push(XLine {
            id: 1,
            name: "XLA Ops".into(),
            timestamp_ns: 1_000,
            events: vec![
                event(1, 0, 2_500_000, vec![]),
                event(3, 3_000_000, 1_000, vec![]),
                event(1, 5_000_000, 2_000_000, vec![]),
            ],
            ..Default::default()
        });
        plane.lines.push(XLine {
            id: 2,
            name: "Steps".into(),
            timestamp_ns: 1_000,
            events: vec![event(1, 0, 9_000_000, vec![])],
            ..Default::default()
        });
        plane.lines.push(XLine {
            id: 3,
            name: "TC counters".into(),
            timestamp_ns: 2_000,
            events: vec![event(2, 4_500, 0, vec![counter(123)])],
            ..Default::default()
        });
        XSpace {
            planes: vec![plane],
            ..Default::default()
        }
    }

    #[test]
    fn xla_op_events_and_counter_values() {
        let s = samples(&tpu_space(), &TraceSelection::default());
        assert_eq!(s.kernel("fusion.1").unwrap(), [2_500.0, 2_000.0]);
        assert_eq!(s.kernel("copy.2").unwrap(), [1.0]);
        // One end-of-profile reading: a total since the profile's start (its earliest time).
        let readings: Vec<_> = s.counters.readings().collect();
        assert_eq!(readings, [("CYCLES", 0.0, 0.0), ("CYCLES", 1_004.5, 123.0)]);
        assert_eq!(s.sampling["CYCLES"], Sampling::Cumulative);
        let single = "1 counters with one end-of-profile reading";
        let notes = &s.notes;
        assert!(notes.iter().any(|n| n.starts_with(single)), "{notes:?}");
    }

    #[test]
    fn explicit_selection_by_line_and_name() {
        let steps =
            TraceSelection::new(&[], &[], Some("/device:TPU:0".into()), Some("Steps".into()))
                .unwrap();
        let s = samples(&tpu_space(), &steps);
        assert_eq!(s.kernel("fusion.1").unwrap(), [9_000.0]);
        let copies = TraceSelection::new(&[], &["copy*".into()], None, Some("1".into())).unwrap();
        let s = samples(&tpu_space(), &copies);
        assert_eq!(s.kernels.len(), 1);
        assert_eq!(s.kernel("copy.2").unwrap(), [1.0]);
    }

    #[test]
    fn custom_call_bodies_as_artifact_text() {
        let mlir = b"module {\n  func.func @k() {}\n}\n";
        let text = body_text("k", "m", "tpu_custom_call", mlir);
        let head =
            "lowered body of custom call `k` (module `m`, target `tpu_custom_call`)\nmodule {";
        assert!(text.starts_with(head), "{text}");
        let mlirbc = b"ML\xefR\x00\x01tpu.matmul\x02ab\x00dimension_semantics";
        let bytecode = body_text("k", "m", "", mlirbc);
        assert_contains!(bytecode, "target `?`");
        assert_contains!(bytecode, "size: 39 bytes\n");
        assert_contains!(bytecode, "\n  tpu.matmul\n  dimension_semantics\n");
        // Short runs (`ab`) and the magic's bytes are not strings.
        assert!(!bytecode.contains("  ab\n"), "{bytecode}");
    }

    #[test]
    fn round_trips_through_the_wire_format() {
        let bytes = tpu_space().encode_to_vec();
        let decoded = XSpace::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded, tpu_space());
    }
}
