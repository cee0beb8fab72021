//! Traces as people really have them: XPlane and trace-viewer profiles of JAX on a GPU (host
//! launch calls are not kernels), epoch-scale timestamps (counter times keep their
//! nanoseconds), and counter tracks tied to the trace's own kernel events (utilization per
//! kernel window, counter names mapped through the profile's aliases). The hand-written
//! fixtures are in `tests/fixtures/trace_windows/` (see the README there); XSpaces are built
//! here with kgate's own XPlane message types.

use crate::common::{self, kgate, stderr_of};

use std::path::{Path, PathBuf};

use kgate::import::trace::xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, x_event, x_stat,
};
use kgate::import::trace::{self, TraceSelection, xplane};
use prost::Message;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace_windows")
        .join(name)
}

fn jax_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/jax")
        .join(name)
}

/// 2025-12-01 14:40:00.123456789 UTC in nanoseconds since the epoch.
const T0_NS: i64 = 1_764_600_000_123_456_789;

/// A plane with its event and stat names registered; `event` and `stat` give their ids.
struct PlaneBuilder {
    plane: XPlane,
}

impl PlaneBuilder {
    fn new(id: i64, name: &str) -> PlaneBuilder {
        PlaneBuilder {
            plane: XPlane {
                id,
                name: name.into(),
                ..Default::default()
            },
        }
    }

    fn metadata_id(&mut self, name: &str) -> i64 {
        if let Some(m) = self.plane.event_metadata.values().find(|m| m.name == name) {
            return m.id;
        }
        let id = self.plane.event_metadata.len() as i64 + 1;
        self.plane.event_metadata.insert(
            id,
            XEventMetadata {
                id,
                name: name.into(),
                ..Default::default()
            },
        );
        id
    }

    fn stat_id(&mut self, name: &str) -> i64 {
        if let Some(m) = self.plane.stat_metadata.values().find(|m| m.name == name) {
            return m.id;
        }
        let id = self.plane.stat_metadata.len() as i64 + 100;
        self.plane.stat_metadata.insert(
            id,
            XStatMetadata {
                id,
                name: name.into(),
                ..Default::default()
            },
        );
        id
    }

    /// An event at `offset_ps` from its line's start, lasting `duration_ps`, with an `hlo_op`
    /// stat when given.
    fn event(
        &mut self,
        name: &str,
        offset_ps: i64,
        duration_ps: i64,
        hlo_op: Option<&str>,
    ) -> XEvent {
        let metadata_id = self.metadata_id(name);
        let stats = match hlo_op {
            Some(op) => vec![XStat {
                metadata_id: self.stat_id("hlo_op"),
                value: Some(x_stat::Value::StrValue(op.into())),
            }],
            None => Vec::new(),
        };
        XEvent {
            metadata_id,
            data: Some(x_event::Data::OffsetPs(offset_ps)),
            duration_ps,
            stats,
        }
    }

    fn counter(&mut self, name: &str, offset_ps: i64, value: u64) -> XEvent {
        let metadata_id = self.metadata_id(name);
        XEvent {
            metadata_id,
            data: Some(x_event::Data::OffsetPs(offset_ps)),
            duration_ps: 0,
            stats: vec![XStat {
                metadata_id: self.stat_id("counter_value"),
                value: Some(x_stat::Value::Uint64Value(value)),
            }],
        }
    }

    fn line(&mut self, id: i64, name: &str, timestamp_ns: i64, events: Vec<XEvent>) {
        self.plane.lines.push(XLine {
            id,
            name: name.into(),
            timestamp_ns,
            events,
            ..Default::default()
        });
    }
}

/// A JAX-on-GPU XSpace as jax.profiler writes it, reduced: the host plane's launch calls carry
/// the `hlo_op` they launch (`cudaLaunchKernel` for CUDA, `hipModuleLaunchKernel` for ROCm),
/// and the device plane's stream holds the kernels.
fn jax_gpu_space(launch_call: &str) -> XSpace {
    let mut host = PlaneBuilder::new(1, "/host:CPU");
    let launches = vec![
        host.event(launch_call, 1_000_000, 4_000_000, Some("fusion.1")),
        host.event(launch_call, 9_000_000, 3_000_000, Some("dot.2")),
        host.event(launch_call, 20_000_000, 5_000_000, Some("fusion.1")),
        host.event("PjitFunction(step)", 0, 30_000_000, None),
    ];
    host.line(7, "python3", T0_NS, launches);
    let mut gpu = PlaneBuilder::new(2, "/device:GPU:0");
    let kernels = vec![
        gpu.event("fusion_1", 2_000_000, 15_000_000, Some("fusion.1")),
        gpu.event("dot_2", 18_000_000, 40_000_000, Some("dot.2")),
        gpu.event("fusion_1", 60_000_000, 16_000_000, Some("fusion.1")),
    ];
    gpu.line(1, "Stream #13(Compute)", T0_NS + 3_000, kernels);
    XSpace {
        planes: vec![host.plane, gpu.plane],
        ..Default::default()
    }
}

#[test]
fn jax_gpu_xplane_takes_kernels_from_the_device_plane_not_host_launch_calls() {
    for call in ["cudaLaunchKernel", "hipModuleLaunchKernel"] {
        let s = xplane::samples(&jax_gpu_space(call), &TraceSelection::default());
        let names: Vec<&str> = s.kernels.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fusion_1", "dot_2"], "{call}");
        assert_eq!(s.kernel("fusion_1").unwrap(), [15_000.0, 16_000.0]);
        assert_eq!(s.kernel("dot_2").unwrap(), [40_000.0]);
        // Launch starts, from the earliest line start (the host's).
        assert_eq!(s.starts, [vec![5_000.0, 63_000.0], vec![21_000.0]]);
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(
            s.notes[0].starts_with("left out 3 host-side events with an `hlo_op` stat"),
            "{}",
            s.notes[0]
        );
        // Host lines by explicit selection.
        let host = TraceSelection::new(&[], &[], Some("/host:CPU".into()), None).unwrap();
        let s = xplane::samples(&jax_gpu_space(call), &host);
        assert_eq!(s.kernel(call).unwrap(), [4_000.0, 3_000.0, 5_000.0]);
        assert!(s.kernel("fusion_1").is_none());
    }
}

#[test]
fn jax_gpu_xplane_import_names_device_kernels_and_notes_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rocm.xplane.pb");
    std::fs::write(
        &path,
        jax_gpu_space("hipModuleLaunchKernel").encode_to_vec(),
    )
    .unwrap();
    let out = kgate(dir.path())
        .args(["-c", "absent.yaml", "import", "xplane", "rocm.xplane.pb"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = results["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fusion_1", "dot_2"]);
    let note = results["benchmarks"][0]["provenance"]["notes"][0]
        .as_str()
        .unwrap();
    assert!(note.contains("left out 3 host-side events"), "{note}");
    assert_eq!(
        results["benchmarks"][1]["provenance"]["notes"][0].as_str(),
        Some(note)
    );
}

#[test]
fn jax_cpu_profiles_keep_host_ops_and_say_what_was_selected() {
    let mut host = PlaneBuilder::new(1, "/host:CPU");
    let ops = vec![
        host.event("ynn_fusion", 0, 31_916_000, Some("ynn_fusion")),
        host.event("PjitFunction(step)", 0, 90_000_000, None),
    ];
    host.line(3, "tf_XLAPjRtCpuClient", T0_NS, ops);
    let space = XSpace {
        planes: vec![host.plane],
        ..Default::default()
    };
    let s = xplane::samples(&space, &TraceSelection::default());
    assert_eq!(
        crate::common::kernels(&s),
        [("ynn_fusion".to_string(), vec![31_916.0])]
    );
    assert_eq!(
        s.notes,
        [
            "the profile has no `/device:` plane (JAX on the CPU?): the default selection took the 1 host events with an `hlo_op` stat (XLA ops run on the host) as kernels"
        ]
    );
    // The committed JAX CPU profile, in both of its formats: ten XLA ops on the host.
    let from_xplane = xplane::read_file(
        &jax_fixture("jax_cpu.xplane.pb"),
        &TraceSelection::default(),
    )
    .unwrap();
    assert!(
        from_xplane.notes[0].contains("took the 10 host events"),
        "{:?}",
        from_xplane.notes
    );
    let from_json = trace::chrome::read_file(
        &jax_fixture("jax_cpu.trace.json.gz"),
        &TraceSelection::default(),
    )
    .unwrap();
    assert_eq!(
        from_json.notes,
        [
            "the trace has no `/device:` process (JAX on the CPU?): the default selection took the 10 host events that carry an `hlo_op` argument (XLA ops run on the host) as kernels"
        ]
    );
}

#[test]
fn trace_viewer_json_of_jax_on_gpu_leaves_host_launch_calls_out() {
    let text = r#"{"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 701, "args": {"name": "/host:CPU"}},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {"ph": "X", "pid": 701, "tid": 5, "name": "cudaLaunchKernel", "ts": 10.5, "dur": 4, "args": {"hlo_op": "fusion.1"}},
        {"ph": "X", "pid": 701, "tid": 5, "name": "hipModuleLaunchKernel", "ts": 20.5, "dur": 3, "args": {"hlo_op": "dot.2"}},
        {"ph": "X", "pid": 1, "tid": 13, "name": "fusion_1", "ts": 11, "dur": 15, "args": {"hlo_op": "fusion.1"}},
        {"ph": "X", "pid": 1, "tid": 13, "name": "dot_2", "ts": 27.25, "dur": 40, "args": {"hlo_op": "dot.2"}}
    ]}"#;
    let s = trace::chrome::read_trace(text.as_bytes(), &TraceSelection::default()).unwrap();
    assert_eq!(
        crate::common::kernels(&s),
        [
            ("fusion_1".to_string(), vec![15_000.0]),
            ("dot_2".to_string(), vec![40_000.0])
        ]
    );
    assert_eq!(s.starts, [vec![0.0], vec![16_250.0]]);
    assert_eq!(s.notes.len(), 1);
    assert!(
        s.notes[0].starts_with("left out 2 host-side events that carry an `hlo_op` argument"),
        "{}",
        s.notes[0]
    );
    let host = TraceSelection::new(&[], &[], Some("/host:CPU".into()), None).unwrap();
    let s = trace::chrome::read_trace(text.as_bytes(), &host).unwrap();
    assert_eq!(s.kernel("cudaLaunchKernel").unwrap(), [4_000.0]);
}

#[test]
fn kineto_epoch_microseconds_keep_their_nanoseconds() {
    let s = trace::chrome::read_file(
        &fixture("kineto_epoch_counters.json"),
        &TraceSelection::default(),
    )
    .unwrap();
    let times: Vec<f64> = s
        .counters
        .readings()
        .filter(|(n, ..)| *n == "mxu_busy_1.value")
        .map(|c| c.1)
        .collect();
    // Readings every microsecond from 1 µs before the kernel; the earliest kept time is the
    // first reading (the CPU op before it is not kept).
    let want: Vec<f64> = (0..13).map(|k| 1000.0 * k as f64).collect();
    assert_eq!(times, want);
    assert_eq!(s.kernel("gemm").unwrap(), [10_000.0]);
    assert_eq!(s.starts, [vec![1_000.0]]);
}

/// `kgate import FORMAT FILE` in `dir` with `config` as `kgate.yaml`; the results and stderr.
fn import(dir: &Path, config: &str, format: &str, file: &Path) -> (Value, String) {
    common::write(dir, "kgate.yaml", config);
    let out = kgate(dir)
        .args(["import", format])
        .arg(file)
        .args(["-o", "r.json"])
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(dir.join("r.json")).unwrap();
    (serde_json::from_str(&text).unwrap(), stderr)
}

fn benchmark<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("benchmark {name} in {results}"))
}

fn values(b: &Value, metric: &str) -> Vec<f64> {
    let m = b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("metric {metric} in {}", b["metrics"]));
    m["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn notes(b: &Value) -> Vec<String> {
    b["provenance"]["notes"]
        .as_array()
        .map(|n| n.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

const V7X: &str = "device: tpu-v7x\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n";

#[test]
fn kineto_counter_tracks_give_utilization_over_the_kernel_window() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = import(
        dir.path(),
        V7X,
        "chrome-trace",
        &fixture("kineto_epoch_counters.json"),
    );
    let gemm = benchmark(&r, "gemm");
    // 950 and 1710 busy cycles in every microsecond at 1.9 GHz: 50 % and 90 %.
    assert_eq!(values(gemm, "util.mxu_busy_1"), [50.0]);
    assert_eq!(values(gemm, "util.mxu_busy_1.peak_window"), [50.0]);
    assert_eq!(values(gemm, "util.mxu_busy_2"), [90.0]);
    assert_eq!(values(gemm, "counter.mxu_busy_1"), [9_500.0]);
    // One kernel in one repetition: one entry, holding its one launch.
    let windows = gemm["kernel_windows"].as_array().unwrap();
    assert_eq!(windows.len(), 1);
    assert_eq!(windows[0]["kernel"], "gemm");
    assert_eq!(
        (
            crate::common::numbers(&windows[0]["start_ns"]),
            crate::common::numbers(&windows[0]["end_ns"])
        ),
        (vec![1_000.0], vec![11_000.0])
    );
    let details = &gemm["provenance"]["details"];
    assert_eq!(details["counter_alias.mxu_busy_1.value"], "mxu_busy_1");
    // The unmapped track is kept raw and said so, not dropped silently.
    let unmapped = "counter `GPU 0 Utilization.GPU Utilization` is none of profile `tpu-v7x`'s counters nor an alias of one, and has no unit";
    assert!(
        notes(gemm).iter().any(|n| n.starts_with(unmapped)),
        "{:?}",
        notes(gemm)
    );
    assert!(!notes(gemm).iter().any(|n| n.contains("exceeds 100 %")));
    assert_eq!(
        values(gemm, "counter.GPU 0 Utilization.GPU Utilization"),
        [0.0]
    );
}

#[test]
fn xprof_track_names_map_through_the_profile_aliases() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{V7X}  - name: fusion.1\n    command: [\"true\"]\n    counters: {{mode: interval}}\n"
    );
    let (r, _) = import(
        dir.path(),
        &config,
        "chrome-trace",
        &fixture("xprof_tpu_counter_tracks.json"),
    );
    let fusion = benchmark(&r, "fusion.1");
    // 1425 busy cycles per microsecond at 1.9 GHz over the 5 µs op: 75 %.
    assert_eq!(values(fusion, "util.mxu_busy_1"), [75.0]);
    assert_eq!(values(fusion, "counter.mxu_busy_1"), [7_125.0]);
    assert_eq!(
        fusion["provenance"]["details"]["counter_alias.COUNT_MXU_BUSY_1.TC Stats"],
        "mxu_busy_1"
    );
    let unmapped = "counter `COUNT_UNKNOWN_THING.TC Stats` is none of profile `tpu-v7x`'s counters";
    assert!(
        notes(fusion).iter().any(|n| n.starts_with(unmapped)),
        "{:?}",
        notes(fusion)
    );
}

#[test]
fn xplane_counter_events_give_utilization_over_the_kernel_at_epoch_timestamps() {
    let mut tpu = PlaneBuilder::new(3, "/device:TPU:0");
    let op = vec![tpu.event("fusion.7", 1_000_000, 8_000_000, Some("fusion.7"))];
    tpu.line(1, "XLA Ops", T0_NS, op);
    // Cumulative busy cycles every microsecond, 950 per microsecond: 50 % at 1.9 GHz.
    let samples: Vec<XEvent> = (0..11)
        .map(|k| tpu.counter("COUNT_MXU_BUSY_2", k * 1_000_000, 950 * k as u64))
        .collect();
    tpu.line(2, "TC counters", T0_NS, samples);
    let space = XSpace {
        planes: vec![tpu.plane],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tpu.xplane.pb");
    std::fs::write(&path, space.encode_to_vec()).unwrap();
    let (r, _) = import(dir.path(), V7X, "xplane", &path);
    let fusion = benchmark(&r, "fusion.7");
    assert_eq!(values(fusion, "util.mxu_busy_2"), [50.0]);
    assert_eq!(values(fusion, "counter.mxu_busy_2"), [7_600.0]);
}

#[test]
fn protocol_time_ns_integers_keep_their_nanoseconds() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = import(
        dir.path(),
        V7X,
        "protocol",
        &fixture("protocol_epoch_ns.jsonl"),
    );
    let b = benchmark(&r, "protocol_epoch_ns");
    assert_eq!(values(b, "util.mxu_busy_1"), [50.0]);
    assert_eq!(values(b, "util.mxu_busy_1.peak_window"), [50.0]);
    assert_eq!(values(b, "util.mxu_busy_2"), [90.0]);
    // The counter's name once, then its times: one series per counter and repetition.
    let series: Vec<&serde_json::Value> = b["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["counter"] == "mxu_busy_1")
        .collect();
    assert_eq!(series.len(), 1);
    let want: Vec<f64> = (0..13).map(|k| 1000.0 * k as f64).collect();
    assert_eq!(crate::common::numbers(&series[0]["t_ns"]), want);
    let w = &b["kernel_windows"][0];
    assert_eq!(
        (
            crate::common::numbers(&w["start_ns"]),
            crate::common::numbers(&w["end_ns"])
        ),
        (vec![1_000.0], vec![11_000.0])
    );
    assert_eq!(
        b["provenance"]["details"]["time_origin_ns.0"],
        "1764600000123455789 (counter and kernel times of repetition 0 count from its earliest timestamp)"
    );
}
