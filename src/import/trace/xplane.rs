//! `kgate import xplane`: device time and performance counters from XProf / TensorFlow
//! profiler XSpace files (`*.xplane.pb`, written by `jax.profiler` and XProf).
//!
//! The XSpace is the profiler's own record, before any viewer samples or caps it, so it is the
//! most faithful source of device time on TPUs and GPUs. Events are read from each line:
//! start = line `timestamp_ns` + event `offset_ps`, duration = `duration_ps`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost::Message;

use super::xplane_proto::{XEvent, XPlane, XSpace, x_event, x_stat};
use super::{TraceSamples, TraceSelection, import_files};
use crate::import::device::{Device, SM_MAX_MHZ};
use crate::import::{ImportContext, ImportError, Importer, SelectionScope};
use crate::model::results::RunResults;

/// What the default selection takes, in words.
const DEFAULT_SELECTION: &str = "events on the `XLA Ops` and `Stream #…` lines of `/device:` \
                                 planes, and events with an `hlo_op` stat on those planes (on \
                                 the host's when the profile has no `/device:` plane)";

/// `kgate import xplane`.
pub struct Xplane;

impl Importer for Xplane {
    fn name(&self) -> &'static str {
        "xplane"
    }

    fn help(&self) -> &'static str {
        "XProf / TensorFlow profiler XSpace protobuf (`*.xplane.pb`)"
    }

    fn kernel_selection(&self) -> Option<SelectionScope> {
        Some(SelectionScope {
            pid: "this plane (id or name)",
            tid: "this line (id or name)",
        })
    }

    /// Imports XSpace files, each one repetition.
    fn import(&self, files: &[PathBuf], ctx: &ImportContext) -> Result<RunResults, ImportError> {
        import_files(
            self.name(),
            files,
            &ctx.policies,
            |path| read_file(path, &ctx.selection),
            || {
                format!(
                    "no kernel events or counter events matched {}; choose kernels with \
                     --kernel REGEX, --kernel-glob GLOB, --pid PLANE and --tid LINE",
                    ctx.selection.describe(DEFAULT_SELECTION)
                )
            },
        )
    }
}

/// The most bytes read from one XSpace file: the protobuf is decoded whole, so this bounds
/// what a file (or an endless stream) may cost.
const MAX_XPLANE_BYTES: u64 = 1 << 30;

/// Reads and decodes one XSpace file, within [`MAX_XPLANE_BYTES`].
pub fn read_file(path: &Path, selection: &TraceSelection) -> Result<TraceSamples, ImportError> {
    use std::io::Read;
    let read_error = |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |message: String| ImportError::Content {
        path: path.to_path_buf(),
        message,
    };
    let mut file = std::fs::File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    // No protobuf message starts with a zero byte (field number 0 does not exist): a device
    // such as /dev/zero is refused before anything is read.
    if bytes.first() == Some(&0) {
        return Err(refuse(
            "starts with a zero byte, so it is not an XSpace protobuf (`*.xplane.pb` as written by jax.profiler or XProf)".into(),
        ));
    }
    file.take(MAX_XPLANE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_XPLANE_BYTES {
        return Err(refuse(format!(
            "is larger than {} MiB, more than kgate reads from one XSpace file (or an endless stream); profile a shorter window",
            MAX_XPLANE_BYTES >> 20
        )));
    }
    let space = XSpace::decode(bytes.as_slice()).map_err(|e| ImportError::Content {
        path: path.to_path_buf(),
        message: format!(
            "not an XSpace protobuf (`*.xplane.pb` as written by jax.profiler or XProf): {e}"
        ),
    })?;
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
    for plane in &space.planes {
        if !selection.pid_matches(&plane.id.to_string(), Some(&plane.name)) {
            continue;
        }
        let stats = StatIds::of(plane);
        let device_plane = plane.name.starts_with("/device:");
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
                if let Some(value) = stats.counter_value(event) {
                    let t_ns = (line.timestamp_ns - origin_ns) as f64 + offset_ps as f64 / 1000.0;
                    out.counters.push((name.to_string(), t_ns, value));
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
                let start = (line.timestamp_ns - origin_ns) as f64 + offset_ps as f64 / 1000.0;
                let nanos = event.duration_ps as f64 / 1000.0;
                match index.get(name) {
                    Some(&i) => {
                        out.kernels[i].1.push(nanos);
                        out.starts[i].push(start);
                    }
                    None => {
                        index.insert(name.to_string(), out.kernels.len());
                        out.kernels.push((name.to_string(), vec![nanos]));
                        out.starts.push(vec![start]);
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
    out.device = device(space);
    out
}

/// The device an XSpace names, whatever is selected: for each `/device:GPU:…` or
/// `/device:TPU:…` plane its `device_type_string` (TPUs), else its vendor, kind and compute
/// capability with its core count (`Nvidia GPU (compute capability 7.0, 80 cores)`), and its
/// `clock_rate` (kHz) as the SM clock; the JAX versions that `/host:metadata` records as tools.
pub fn device(space: &XSpace) -> Device {
    let mut device = Device::default();
    for plane in &space.planes {
        let stat = |wanted: &str| {
            let id = plane.stat_metadata.values().find(|m| m.name == wanted)?.id;
            plane
                .stats
                .iter()
                .find(|s| s.metadata_id == id)?
                .value
                .as_ref()
        };
        let text = |wanted: &str| match stat(wanted)? {
            x_stat::Value::StrValue(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            x_stat::Value::RefValue(id) => plane
                .stat_metadata
                .get(&(*id as i64))
                .map(|m| m.name.clone()),
            _ => None,
        };
        let number = |wanted: &str| match stat(wanted)? {
            x_stat::Value::Int64Value(v) => Some(*v as f64),
            x_stat::Value::Uint64Value(v) => Some(*v as f64),
            x_stat::Value::DoubleValue(v) => Some(*v),
            _ => None,
        };
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
}

impl StatIds {
    fn of(plane: &XPlane) -> StatIds {
        let find = |wanted: &str| {
            plane
                .stat_metadata
                .values()
                .find(|m| m.name == wanted)
                .map(|m| m.id)
        };
        StatIds {
            counter_value: find("counter_value"),
            hlo_op: find("hlo_op"),
        }
    }

    fn counter_value(&self, event: &XEvent) -> Option<f64> {
        let id = self.counter_value?;
        let stat = event.stats.iter().find(|s| s.metadata_id == id)?;
        match stat.value.as_ref()? {
            x_stat::Value::DoubleValue(v) => Some(*v),
            x_stat::Value::Uint64Value(v) => Some(*v as f64),
            x_stat::Value::Int64Value(v) => Some(*v as f64),
            _ => None,
        }
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
        assert_eq!(s.counters, vec![("CYCLES".to_string(), 1_004.5, 123.0)]);
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
    fn round_trips_through_the_wire_format() {
        let bytes = tpu_space().encode_to_vec();
        let decoded = XSpace::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded, tpu_space());
    }
}
