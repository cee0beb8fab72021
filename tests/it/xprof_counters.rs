//! XProf's own counters, read from XSpaces built here with kgate's XPlane message types (the
//! field numbers of `xplane.proto`) the way XProf writes and reads them: end-of-profile
//! samples (a line per sample, an event per counter with a uint64 `counter_value`), periodic
//! samples on the `_counters_` line (one value stat per event, an increment per interval),
//! register names mapped to profile keys for TPU v7x and v6e, utilization as XProf's
//! utilization viewer computes it inside the kernel windows of the XLA Ops line, a custom
//! call's cost estimate and lowered body from the `/host:metadata` plane, and the tiled-matmul
//! case end to end.

use crate::common::{self, kgate, stderr_of};

use std::path::Path;

use kgate::import::trace::hlo_proto::{
    HloComputationProto, HloInstructionProto, HloModuleProto, HloProto,
};
use kgate::import::trace::xplane_proto::{
    XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, x_event, x_stat,
};
use kgate::import::trace::{TraceSelection, xplane};
use kgate::model::series::Sampling;
use prost::Message;
use serde_json::Value;

/// 2026-12-01 12:00:00 UTC in nanoseconds since the epoch.
const T0_NS: i64 = 1_796_126_400_000_000_000;

const US: i64 = 1_000_000; // picoseconds

/// The v7x TensorCore register prefix of die `d` (XProf's `tpu_counter_ids_v7x.h`).
fn v7x_tc(die: u32, counter: &str) -> String {
    format!("VF_CHIP_DIE{die}_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_{counter}")
}

/// A plane with its event and stat names registered.
struct Plane {
    plane: XPlane,
}

impl Plane {
    fn new(id: i64, name: &str) -> Plane {
        Plane {
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
        let id = self.plane.stat_metadata.len() as i64 + 1000;
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

    fn stat(&mut self, name: &str, value: x_stat::Value) -> XStat {
        XStat {
            metadata_id: self.stat_id(name),
            value: Some(value),
        }
    }

    fn plane_stat(&mut self, name: &str, value: x_stat::Value) {
        let stat = self.stat(name, value);
        self.plane.stats.push(stat);
    }

    fn event(&mut self, name: &str, offset_ps: i64, duration_ps: i64, stats: Vec<XStat>) -> XEvent {
        XEvent {
            metadata_id: self.metadata_id(name),
            data: Some(x_event::Data::OffsetPs(offset_ps)),
            duration_ps,
            stats,
        }
    }

    /// A periodic sample as libtpu writes it: the short register name, one "TC Stats" value.
    fn periodic(&mut self, name: &str, at_ps: i64, increment: u64) -> XEvent {
        let stat = self.stat("TC Stats", x_stat::Value::Uint64Value(increment));
        self.event(name, at_ps, 0, vec![stat])
    }

    /// An end-of-profile reading as XProf's Perf Counters tool reads it.
    fn total(&mut self, register: &str, id: u64, value: u64) -> XEvent {
        let stats = vec![
            self.stat("counter_value", x_stat::Value::Uint64Value(value)),
            self.stat("performance_counter_id", x_stat::Value::Uint64Value(id)),
            self.stat(
                "performance_counter_description",
                x_stat::Value::StrValue(format!("{register} (test)")),
            ),
            self.stat(
                "performance_counter_sets",
                x_stat::Value::StrValue("TC_COMPUTATION".into()),
            ),
        ];
        self.event(register, 0, 0, stats)
    }

    fn line(&mut self, id: i64, name: &str, events: Vec<XEvent>) {
        self.plane.lines.push(XLine {
            id,
            name: name.into(),
            timestamp_ns: T0_NS,
            events,
            ..Default::default()
        });
    }
}

/// A TPU plane as XProf's utilization viewer needs it: `device_type_string` and `device_id`.
fn tpu_plane(device_type: &str, chip: i64) -> Plane {
    let mut tpu = Plane::new(chip + 1, &format!("/device:TPU:{chip}"));
    tpu.plane_stat(
        "device_type_string",
        x_stat::Value::StrValue(device_type.into()),
    );
    tpu.plane_stat("device_id", x_stat::Value::Int64Value(chip));
    tpu.plane_stat("global_chip_id", x_stat::Value::Int64Value(chip));
    tpu
}

/// The profiling window: `Task Environment`'s start and stop times.
fn task_environment(start_ns: i64, stop_ns: i64) -> XPlane {
    let mut env = Plane::new(100, "Task Environment");
    env.plane_stat(
        "profile_start_time",
        x_stat::Value::Uint64Value(start_ns as u64),
    );
    env.plane_stat(
        "profile_stop_time",
        x_stat::Value::Uint64Value(stop_ns as u64),
    );
    env.plane
}

/// The `/host:metadata` plane with one module holding custom call `kernel`.
fn host_metadata(kernel: &str, body: &[u8], flops: f64, bytes: f64) -> XPlane {
    let config = serde_json::json!({
        "custom_call_config": {
            "body": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, body),
            "cost_estimate": {"flops": flops, "bytes_accessed": bytes, "transcendentals": 0},
            "serialization_format": 1,
        }
    });
    let hlo = HloProto {
        hlo_module: Some(HloModuleProto {
            name: "jit_matmul".into(),
            entry_computation_name: "main".into(),
            computations: vec![HloComputationProto {
                name: "main".into(),
                instructions: vec![
                    HloInstructionProto {
                        name: "p0".into(),
                        opcode: "parameter".into(),
                        ..Default::default()
                    },
                    HloInstructionProto {
                        name: kernel.into(),
                        opcode: "custom-call".into(),
                        custom_call_target: "tpu_custom_call".into(),
                        backend_config: config.to_string().into_bytes(),
                    },
                ],
            }],
        }),
    };
    let mut meta = Plane::new(200, "/host:metadata");
    let id = meta.metadata_id("jit_matmul");
    let stat = meta.stat("Hlo Proto", x_stat::Value::BytesValue(hlo.encode_to_vec()));
    meta.plane
        .event_metadata
        .get_mut(&id)
        .unwrap()
        .stats
        .push(stat);
    meta.plane
}

/// Per microsecond of the tiled matmul on one v7x TensorCore (1900 cycles at 1.9 GHz):
/// (COUNT_MXU_BUSY_0, _1, _2, COUNT_SYNC_WAIT). Single-buffered: 60 % no MXU busy, 10 % one,
/// 30 % two (35 % average), 31 % waiting on sync flags (HBM); triple-buffered: 20 / 10 / 70
/// (75 % average), 2 % waiting.
fn mxu_profile(buffers: u32) -> [u64; 4] {
    if buffers == 1 {
        [1140, 190, 570, 589]
    } else {
        [380, 190, 1330, 38]
    }
}

/// The kernel's length: 125.5 µs single-buffered (memory-bound), 88 µs triple-buffered; the
/// repetition adds 0.1 µs each.
fn kernel_ps(buffers: u32, rep: u32) -> i64 {
    let base = if buffers == 1 {
        125_500_000
    } else {
        88_000_000
    };
    base + i64::from(rep) * 100_000
}

/// The tiled-matmul XSpace of one repetition: the kernel on `XLA Ops` from 10 µs, periodic
/// TC samples every microsecond from 5 µs to 3 µs after it, end-of-profile totals of both
/// dies (PWRMGR cycles, TC busy, HBM beats of two channels), the profile's window (200 µs)
/// and the custom call's estimate and body.
fn tiled_matmul_space(buffers: u32, rep: u32) -> XSpace {
    let mut tpu = tpu_plane("TPU v7x", 0);
    let start = 10 * US;
    let duration = kernel_ps(buffers, rep);
    let op = vec![tpu.event("tiled_matmul", start, duration, vec![])];
    tpu.line(1, "XLA Ops", op);
    let [idle, one, two, wait] = mxu_profile(buffers);
    let mut samples = Vec::new();
    let last = (start + duration) / US + 3;
    for k in 5..=last {
        let t = k * US;
        let running = t > start && t - US < start + duration;
        let row: [(&str, u64); 12] = if running {
            [
                ("COUNT_CYCLES", 1900),
                ("COUNT_MXU_BUSY_0", idle),
                ("COUNT_MXU_BUSY_1", one),
                ("COUNT_MXU_BUSY_2", two),
                ("COUNT_SYNC_WAIT", wait),
                ("COUNT_SCALAR_ALU_INSTRUCTION_0", 380),
                ("COUNT_SCALAR_ALU_INSTRUCTION_1", 190),
                ("COUNT_VECTOR_ALU_INSTRUCTION_0", 760),
                ("COUNT_VECTOR_ALU_INSTRUCTION_1", 760),
                ("COUNT_VECTOR_ALU_INSTRUCTION_2", 760),
                ("COUNT_VECTOR_ALU_INSTRUCTION_3", 760),
                ("COUNT_VST_INSTRUCTION", 190),
            ]
        } else {
            [
                ("COUNT_CYCLES", 1900),
                ("COUNT_MXU_BUSY_0", 1900),
                ("COUNT_MXU_BUSY_1", 0),
                ("COUNT_MXU_BUSY_2", 0),
                ("COUNT_SYNC_WAIT", 0),
                ("COUNT_SCALAR_ALU_INSTRUCTION_0", 0),
                ("COUNT_SCALAR_ALU_INSTRUCTION_1", 0),
                ("COUNT_VECTOR_ALU_INSTRUCTION_0", 0),
                ("COUNT_VECTOR_ALU_INSTRUCTION_1", 0),
                ("COUNT_VECTOR_ALU_INSTRUCTION_2", 0),
                ("COUNT_VECTOR_ALU_INSTRUCTION_3", 0),
                ("COUNT_VST_INSTRUCTION", 0),
            ]
        };
        for (name, v) in row {
            samples.push(tpu.periodic(name, t, v));
        }
    }
    tpu.line(2, "_counters_", samples);
    let hbm = |die: u32, h: u32, c: u32, counter: &str| {
        format!(
            "VF_CHIP_DIE{die}_HBM_{h}_SS_HBMC_{c}_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_{counter}"
        )
    };
    let totals = vec![
        tpu.total(
            "VF_CHIP_DIE0_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CYCLE_COUNT",
            2_847_490_056,
            361_000,
        ),
        tpu.total(&v7x_tc(0, "COUNT_CYCLES"), 2_791_874_568, 380_000),
        tpu.total(&v7x_tc(0, "COUNT_MXU_BUSY_2"), 2_791_875_032, 71_250),
        tpu.total(&v7x_tc(1, "COUNT_MXU_BUSY_2"), 3_328_745_944, 38_000),
        tpu.total(&v7x_tc(0, "COUNT_SCALAR_FENCE_WAIT"), 2_791_874_720, 12),
        tpu.total(&hbm(0, 0, 0, "RD_RESP_PS0"), 2_705_724_472, 1_000_000),
        tpu.total(
            &hbm(0, 0, 1, "RD_RESP_PS0"),
            2_705_724_472 + 131_072,
            1_000_000,
        ),
        tpu.total(&hbm(0, 0, 0, "WR_REQ_PS0"), 2_705_724_440, 250_000),
        tpu.total(
            &hbm(0, 0, 1, "WR_REQ_PS0"),
            2_705_724_440 + 131_072,
            250_000,
        ),
    ];
    tpu.line(146, "counters_0", totals);
    let mut body = b"ML\xefR\x00\x01\x05".to_vec();
    body.extend_from_slice(b"\x00tiled_matmul\x00tpu.matmul\x00");
    for _ in 0..buffers {
        body.extend_from_slice(b"\x03tpu.enqueue_dma\x00tpu.wait_dma2\x00");
    }
    body.extend_from_slice(b"\x07dimension_semantics\x00");
    XSpace {
        planes: vec![
            tpu.plane,
            task_environment(T0_NS, T0_NS + 200_000),
            // 2·4096³ FLOP and three 4096² bf16 matrices: the same estimate for both versions.
            host_metadata("tiled_matmul", &body, 137_438_953_472.0, 100_663_296.0),
        ],
        ..Default::default()
    }
}

fn write_space(dir: &Path, name: &str, space: &XSpace) -> String {
    std::fs::write(dir.join(name), space.encode_to_vec()).unwrap();
    name.to_string()
}

const V7X: &str = "device: tpu-v7x\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n";
const V6E: &str = "device: tpu-v6e\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n";

/// `kgate import xplane FILES -o out` in `dir` under `config`; the results.
fn import(dir: &Path, config: &str, files: &[String], out: &str) -> Value {
    common::write(dir, "kgate.yaml", config);
    let output = kgate(dir)
        .args(["import", "xplane"])
        .args(files)
        .args(["-o", out])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    serde_json::from_str(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap()
}

fn benchmark<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("benchmark {name} in {results}"))
}

fn metric<'a>(b: &'a Value, name: &str) -> &'a Value {
    b["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| {
            let names: Vec<&Value> = b["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| &m["name"])
                .collect();
            panic!("metric {name} in {names:?}")
        })
}

fn value(b: &Value, name: &str) -> f64 {
    metric(b, name)["values"][0].as_f64().unwrap()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs().max(1.0)
}

fn notes(b: &Value) -> Vec<String> {
    b["provenance"]["notes"]
        .as_array()
        .map(|n| n.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn both_sample_kinds_are_read_as_xprof_writes_them() {
    let space = tiled_matmul_space(1, 0);
    let s = xplane::samples(&space, &TraceSelection::default());
    // The kernel from XLA Ops; nothing of `_counters_` taken as a kernel.
    assert_eq!(s.kernels.len(), 1);
    assert_eq!(s.kernel("tiled_matmul").unwrap(), [125_500.0]);
    // Periodic: increments at their own times, sampled as intervals.
    let busy: Vec<(f64, f64)> = s
        .counters
        .readings()
        .filter(|c| c.0 == "COUNT_MXU_BUSY_2")
        .map(|c| (c.1, c.2))
        .collect();
    assert_eq!(busy.first(), Some(&(5_000.0, 0.0)));
    assert_eq!(busy[6], (11_000.0, 570.0));
    assert_eq!(busy.len(), 134);
    assert_eq!(s.sampling["COUNT_MXU_BUSY_2"], Sampling::Interval);
    // End of profile: one total per register, from the profile's start (0) to its stop
    // (200 µs), since the event carries no later time.
    let cycles: Vec<(f64, f64)> = s
        .counters
        .readings()
        .filter(|c| c.0 == v7x_tc(0, "COUNT_CYCLES"))
        .map(|c| (c.1, c.2))
        .collect();
    assert_eq!(cycles, [(0.0, 0.0), (200_000.0, 380_000.0)]);
    assert_eq!(s.sampling[&v7x_tc(0, "COUNT_CYCLES")], Sampling::Cumulative);
    let notes = s.notes.join("\n");
    assert!(
        notes.contains("1608 periodic counter samples from `_counters_` lines, each read as the increase over the interval that ends at its time"),
        "{notes}"
    );
    assert!(
        notes.contains("9 counters with one end-of-profile reading (`counter_value`), read as totals from the profile's start (`profile_start_time`) at 0 ns"),
        "{notes}"
    );
    assert!(
        notes.contains("of 9 counter readings are not kept"),
        "{notes}"
    );
    // The custom call's estimate and body, for the kernel of its name.
    assert!(s.estimates.contains(&(
        "tiled_matmul".into(),
        "flops_estimate".into(),
        137_438_953_472.0,
        "FLOP".into()
    )));
    let (kernel, name, artifact) = &s.artifacts[0];
    assert_eq!(
        (kernel.as_str(), name.as_str()),
        ("tiled_matmul", "custom_call_body")
    );
    assert!(
        artifact.text.contains("format: MLIR bytecode"),
        "{}",
        artifact.text
    );
    assert!(
        artifact.text.contains("\n  tpu.enqueue_dma\n"),
        "{}",
        artifact.text
    );
}

#[test]
fn counter_events_without_a_value_and_with_several_are_said() {
    let mut tpu = tpu_plane("TPU v7x", 0);
    let op = vec![tpu.event("k", 0, 5 * US, vec![])];
    tpu.line(1, "XLA Ops", op);
    let empty = tpu.event("P state", US, 0, vec![]);
    let two = vec![
        tpu.stat("TC Stats", x_stat::Value::Uint64Value(7)),
        tpu.stat("SC Stats", x_stat::Value::DoubleValue(2.5)),
    ];
    let both = tpu.event("COUNT_MXU_BUSY_1", 2 * US, 0, two);
    tpu.line(2, "_counters_", vec![empty, both]);
    let space = XSpace {
        planes: vec![tpu.plane],
        ..Default::default()
    };
    let s = xplane::samples(&space, &TraceSelection::default());
    assert_eq!(
        s.counters.readings().collect::<Vec<_>>(),
        [
            ("COUNT_MXU_BUSY_1.TC Stats", 2_000.0, 7.0),
            ("COUNT_MXU_BUSY_1.SC Stats", 2_000.0, 2.5)
        ]
    );
    let notes = s.notes.join("\n");
    assert!(
        notes.contains("left out 1 events on `_counters_` lines that carry no numeric value"),
        "{notes}"
    );
    assert!(
        notes.contains("1 events on `_counters_` lines carry several values"),
        "{notes}"
    );
}

#[test]
fn register_names_map_to_profile_keys_on_v7x_and_v6e() {
    let v7x = kgate::config::device::builtin("tpu-v7x").unwrap();
    let v6e = kgate::config::device::builtin("tpu-v6e").unwrap();
    for (name, key) in [
        ("COUNT_MXU_BUSY_2", "mxu_busy_2"),
        ("COUNT_MXU_BUSY_2.TC Stats", "mxu_busy_2"),
        ("count_sync_wait", "sync_wait"),
        (&v7x_tc(0, "COUNT_MXU_BUSY_2"), "mxu_busy_2"),
        (&v7x_tc(1, "COUNT_SYNC_WAIT").to_lowercase(), "sync_wait"),
        (&v7x_tc(1, "COUNT_CYCLES"), "cycles"),
        (&v7x_tc(0, "COUNT_VECTOR_ALU_INSTRUCTION_3"), "valu_3"),
        (
            "VF_CHIP_DIE1_PWRMGR_PWRMGR_TC_THROTTLE_CORE_DEBUG_STATS_UNPRIVILEGED_CYCLE_COUNT",
            "cycle_count",
        ),
        (
            "VF_CHIP_DIE0_HBM_3_SS_HBMC_15_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_PARTIAL_WRITE_REQ_PS1",
            "hbm_wr_beats",
        ),
    ] {
        assert_eq!(v7x.counter_key(name), Some(key), "v7x {name}");
    }
    assert_eq!(v7x.register_core(&v7x_tc(1, "COUNT_CYCLES")), Some(1));
    assert_eq!(v7x.register_core("COUNT_CYCLES"), None);
    let v6e_tc =
        |c: &str| format!("VF_CHIP_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_{c}");
    for (name, key) in [
        (v6e_tc("COUNT_MXU_BUSY_2"), "mxu_busy_2"),
        (v6e_tc("COUNT_CYCLES"), "cycles"),
        (v6e_tc("COUNT_SYNC_WAIT"), "sync_wait"),
        (
            "VF_CHIP_HBM_1_HBMC_9_CMN_HI_FREQ_STATS_COUNTERS_UNPRIVILEGED_RD_RESP_PS0".into(),
            "hbm_rd_beats",
        ),
    ] {
        assert_eq!(v6e.counter_key(&name), Some(key), "v6e {name}");
    }
    assert_eq!(v6e.register_core(&v6e_tc("COUNT_CYCLES")), None);
    assert_eq!(v7x.counter_key(&v7x_tc(0, "COUNT_MXU_BUSY_9")), None);
}

#[test]
fn tiled_matmul_utilization_inside_the_kernel_window_as_the_utilization_viewer_computes_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_space(dir.path(), "slow.xplane.pb", &tiled_matmul_space(1, 0));
    let r = import(dir.path(), V7X, &[file], "slow.json");
    let k = benchmark(&r, "tiled_matmul");
    assert_eq!(value(k, "kernel_time"), 125_500.0);
    // 125 whole sampling windows inside the 125.5 µs kernel.
    assert_eq!(value(k, "counter.cycles"), 125.0 * 1900.0);
    assert_eq!(value(k, "counter.mxu_busy_2"), 125.0 * 570.0);
    for (name, want) in [
        ("no_mxu_busy", 60.0),
        ("one_mxu_busy", 10.0),
        ("two_mxu_busy", 30.0),
        ("avg_mxu_busy", 35.0),
        ("util.mxu_busy_2", 30.0),
        ("util.sync_wait", 31.0),
        ("scalar_unit", 15.0),
        ("vector_alu", 40.0),
        ("vmem_stores", 10.0),
    ] {
        assert!(
            close(value(k, name), want),
            "{name}: {} ≠ {want}",
            value(k, name)
        );
    }
    assert_eq!(metric(k, "avg_mxu_busy")["source"], "derived");
    assert_eq!(metric(k, "no_mxu_busy")["direction"], "lower");
    assert_eq!(metric(k, "util.sync_wait")["direction"], "lower");
    let details = &k["provenance"]["details"];
    assert_eq!(details["counters.denominator"], "measured `cycles`");
    assert_eq!(details["counter_alias.COUNT_MXU_BUSY_2"], "mxu_busy_2");
    assert!(
        details["counters.config"]
            .as_str()
            .unwrap()
            .contains("cumulative+interval samples"),
        "{details}"
    );
    // The estimate beside the measured values, on the estimate rung of the trust ladder.
    let flops = metric(k, "flops_estimate");
    assert_eq!(flops["source"], "estimate");
    assert_eq!(flops["values"][0], 137_438_953_472.0);
    assert_eq!(metric(k, "bytes_estimate")["unit"], "B");
    assert!(
        k["artifacts"]["custom_call_body"]["text"]
            .as_str()
            .unwrap()
            .contains("size: ")
    );
    // The end-of-profile totals span the whole 200 µs profile: no window of theirs lies inside
    // the kernel, so the kernel gets no figure from them, and says why.
    let unavailable = k["provenance"]["unavailable"].as_array().unwrap();
    let mxu0 = unavailable
        .iter()
        .find(|u| u["counter"] == "util.mxu_busy_2.core0")
        .unwrap_or_else(|| panic!("{unavailable:?}"));
    assert!(
        mxu0["reason"]
            .as_str()
            .unwrap()
            .starts_with("unresolved: kernel `tiled_matmul` ran 125500 ns, shorter than the sampling interval of 200000 ns"),
        "{mxu0}"
    );

    // A cycle counter has no utilization of its own: its increase is what is unresolved.
    let names: Vec<&str> = unavailable
        .iter()
        .map(|u| u["counter"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"counter.cycle_count.core0"), "{names:?}");
    assert!(names.contains(&"counter.hbm_rd_beats.core0"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("util.cycle")),
        "{names:?}"
    );
    // The whole profile, per die, from the end-of-profile sample: XProf's denominator is the
    // power manager's measured cycle count (throttled to 361 000 of 380 000 cycles) on die 0;
    // die 1 has no cycle counter, so its figure divides by the window's time × 1.9 GHz.
    let c = benchmark(&r, "counters");
    assert!(close(
        value(c, "util.mxu_busy_2.core0"),
        100.0 * 71_250.0 / 361_000.0
    ));
    assert!(close(value(c, "util.mxu_busy_2.core1"), 10.0));
    assert!(close(
        value(c, "two_mxu_busy.core0"),
        100.0 * 71_250.0 / 361_000.0
    ));
    let denominator = c["provenance"]["details"]["counters.denominator"]
        .as_str()
        .unwrap();
    assert!(
        denominator.contains("core 0: measured `cycle_count`"),
        "{denominator}"
    );
    assert!(
        denominator.contains(
            "core 1: window time × clock_hz 1900000000 Hz (no cycle counter in the window)"
        ),
        "{denominator}"
    );
    // HBM: two channels of die 0 summed, 32 B a beat, over 200 µs.
    assert!(close(
        value(c, "bandwidth.hbm_rd_beats.core0"),
        2e6 * 32.0 / 200e-6
    ));
    assert!(close(
        value(c, "bandwidth.hbm_wr_beats.core0"),
        5e5 * 32.0 / 200e-6
    ));
    assert!(close(value(c, "hbm_read_ratio.core0"), 80.0));
    assert!(close(value(c, "hbm_bytes.core0"), 2.5e6 * 32.0));
    assert!(close(
        value(c, "util.memory"),
        100.0 * 2.5e6 * 32.0 / (200e-6 * 3433.0 * 1073741824.0)
    ));
    // A register the profile has no key for is counted, not kept or dropped silently.
    assert!(
        notes(c).iter().any(|n| n.starts_with("left out 1 register counters that profile `tpu-v7x` has no key for (`VF_CHIP_DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_SCALAR_FENCE_WAIT`)")),
        "{:?}",
        notes(c)
    );
}

#[test]
fn the_reading_rule_is_overridable_in_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_space(dir.path(), "slow.xplane.pb", &tiled_matmul_space(1, 0));
    // Read as running totals, the per-microsecond increments are differenced: inside the
    // kernel they telescope to the last increment less the one before the kernel (570 − 0).
    let config = format!(
        "{V7X}  - name: tiled_matmul\n    command: [\"true\"]\n    counters: {{mode: cumulative}}\n"
    );
    let r = import(dir.path(), &config, &[file], "r.json");
    let k = benchmark(&r, "tiled_matmul");
    assert_eq!(value(k, "counter.mxu_busy_2"), 570.0);
    assert!(
        k["provenance"]["details"]["counters.config"]
            .as_str()
            .unwrap()
            .contains("cumulative samples"),
    );
    // XProf has already restored the right shift: `scaling` is not applied again.
    let config = format!(
        "{V7X}  - name: tiled_matmul\n    command: [\"true\"]\n    counters: {{scaling: 2}}\n"
    );
    let file = write_space(dir.path(), "slow.xplane.pb", &tiled_matmul_space(1, 0));
    let r = import(dir.path(), &config, &[file], "scaled.json");
    let k = benchmark(&r, "tiled_matmul");
    assert_eq!(value(k, "counter.mxu_busy_2"), 125.0 * 570.0);
    assert!(
        notes(k).iter().any(|n| n
            .starts_with("counters.scaling 2 is not applied to the readings of XProf profiles")),
        "{:?}",
        notes(k)
    );
}

#[test]
fn v6e_periodic_samples_without_a_cycle_counter_divide_by_the_clock_and_say_so() {
    let mut tpu = tpu_plane("TPU v6 Lite", 0);
    let op = vec![tpu.event("fusion.3", 2 * US, 10 * US, vec![])];
    tpu.line(1, "XLA Ops", op);
    // 875 of 1750 cycles per microsecond both MXUs busy: 50 % at 1.75 GHz.
    let samples: Vec<XEvent> = (0..15)
        .map(|k| {
            tpu.periodic(
                "COUNT_MXU_BUSY_2",
                k * US,
                if (3..=12).contains(&k) { 875 } else { 0 },
            )
        })
        .collect();
    tpu.line(2, "_counters_", samples);
    let v6e_tc =
        |c: &str| format!("VF_CHIP_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_{c}");
    let totals = vec![
        tpu.total(&v6e_tc("COUNT_CYCLES"), 3_257_466_888, 26_250),
        tpu.total(&v6e_tc("COUNT_MXU_BUSY_1"), 3_257_467_408, 2_625),
    ];
    tpu.line(7, "counters_0", totals);
    let space = XSpace {
        planes: vec![tpu.plane],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let file = write_space(dir.path(), "v6e.xplane.pb", &space);
    let r = import(dir.path(), V6E, &[file], "r.json");
    let k = benchmark(&r, "fusion.3");
    assert!(close(value(k, "util.mxu_busy_2"), 50.0));
    assert_eq!(
        k["provenance"]["details"]["counters.denominator"],
        "window time × clock_hz 1750000000 Hz (no cycle counter in the window)"
    );
    // The end-of-profile sample (no die on v6e: no core) divides by the measured cycles.
    let c = benchmark(&r, "counters");
    assert!(close(value(c, "util.mxu_busy_1"), 10.0));
    assert!(close(value(c, "one_mxu_busy"), 10.0));
    assert_eq!(
        c["provenance"]["details"]["counters.denominator"],
        "measured `cycles`"
    );
}

#[test]
fn xprof_trace_json_counters_are_read_as_periodic_increments() {
    // XProf's trace viewer JSON of the `_counters_` line: one grouped object per track.
    let rows: Vec<String> = (0..14)
        .map(|k| {
            format!(
                "[{}, {}]",
                1000 + k,
                if (2..=11).contains(&k) { 950 } else { 0 }
            )
        })
        .collect();
    let text = format!(
        r#"{{"displayTimeUnit": "ns", "traceEvents": [
  {{"ph": "M", "name": "process_name", "pid": 1, "args": {{"name": "/device:TPU:0"}}}},
  {{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {{"name": "XLA Ops"}}}},
  {{"ph": "X", "pid": 1, "tid": 2, "name": "fusion.9", "ts": 1001, "dur": 10, "args": {{"hlo_op": "fusion.9"}}}},
  {{"pid": 1, "name": "COUNT_MXU_BUSY_2", "ph": "C", "event_stats": "TC Stats", "entries": [{}]}}
]}}"#,
        rows.join(", ")
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace.json"), text).unwrap();
    common::write(dir.path(), "kgate.yaml", V7X);
    let out = kgate(dir.path())
        .args(["import", "chrome-trace", "trace.json", "-o", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let k = benchmark(&r, "fusion.9");
    // 950 of 1900 cycles per microsecond: 50 %, with no configuration of the sampling mode.
    assert!(close(value(k, "util.mxu_busy_2"), 50.0));
    assert_eq!(value(k, "counter.mxu_busy_2"), 9_500.0);
    assert!(
        notes(k)
            .iter()
            .any(|n| n.contains("XProf's grouped form (`entries` rows)")),
        "{:?}",
        notes(k)
    );
}

#[test]
fn tiled_matmul_regresses_end_to_end_and_the_explanation_names_the_sync_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (mut base, mut head) = (Vec::new(), Vec::new());
    for rep in 0..5 {
        base.push(write_space(
            dir.path(),
            &format!("fast{rep}.xplane.pb"),
            &tiled_matmul_space(3, rep),
        ));
        head.push(write_space(
            dir.path(),
            &format!("slow{rep}.xplane.pb"),
            &tiled_matmul_space(1, rep),
        ));
    }
    let b = import(dir.path(), V7X, &base, "base.json");
    let fast = benchmark(&b, "tiled_matmul");
    assert_eq!(
        metric(fast, "kernel_time")["values"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert!(close(value(fast, "avg_mxu_busy"), 75.0));
    assert!(close(value(fast, "util.sync_wait"), 2.0));
    import(dir.path(), V7X, &head, "head.json");
    let out = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "regressed");
    let k = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "tiled_matmul")
        .unwrap();
    assert_eq!(k["verdict"], "regressed");
    let explanation = k["explanation"].as_str().unwrap();
    assert!(explanation.contains("kernel_time"), "{explanation}");
    assert!(explanation.contains("sync_wait +"), "{explanation}");
    assert!(
        explanation
            .contains("memory stall: the compute units wait on memory (HBM); check buffering"),
        "{explanation}"
    );
    // The trust ladder: what the cost model believed beside what the registers measured.
    assert!(
        explanation.contains(
            "estimate: roofline.intensity 1365.3 FLOP/B (cost model); measured: avg_mxu_busy 35.0 %, util.sync_wait 31.0 %, vector_alu 40.0 %"
        ),
        "{explanation}"
    );
    // The lowered body changed (one DMA stage instead of three): the IR diff says so.
    let out = kgate(dir.path())
        .args(["compare", "base.json", "head.json", "--format", "markdown"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("artifact <code>custom_call_body</code>"),
        "{text}"
    );
    assert!(text.contains("-size: "), "{text}");
}

/// An XSpace whose TPU plane holds counters and no op (a profile taken for its Perf Counters
/// view): the counters benchmark gets utilization over the profile's span (`profile-span`,
/// said in a note), from both sample kinds; without a device profile the import is refused
/// naming the counters, the profile and `--kernel`.
#[test]
fn a_counters_only_xspace_gives_utilization_over_the_profile_span() {
    let dir = tempfile::tempdir().unwrap();
    let mut tpu = tpu_plane("TPU v7x", 0);
    // Periodic: 570 of 1900 cycles with both MXUs busy in each microsecond, 5 µs to 15 µs.
    let samples: Vec<XEvent> = (5..=15)
        .map(|k| tpu.periodic("COUNT_MXU_BUSY_2", k * US, 570))
        .collect();
    tpu.line(2, "_counters_", samples);
    // End of profile: the TensorCore's cycles over the profile's 200 µs.
    let totals = vec![tpu.total(&v7x_tc(0, "COUNT_CYCLES"), 2_791_874_568, 380_000)];
    tpu.line(146, "counters_0", totals);
    let space = XSpace {
        planes: vec![tpu.plane, task_environment(T0_NS, T0_NS + 200_000)],
        ..Default::default()
    };
    let file = write_space(dir.path(), "counters.xplane.pb", &space);
    let refused = kgate(dir.path())
        .args(["import", "xplane", &file])
        .output()
        .unwrap();
    let err = stderr_of(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds 2 counter tracks (on benchmark `counters`: `COUNT_MXU_BUSY_2`, `VF_CHIP_DIE0_TC_TCS_TC_MISC_TCS_STATS_TCS_STATS_COUNTERS_UNPRIVILEGED_COUNT_CYCLES`) but no measurement")
            && err.contains("`device: NAME`")
            && err.contains("with --kernel REGEX"),
        "{err}"
    );
    let r = import(dir.path(), V7X, std::slice::from_ref(&file), "r.json");
    let c = benchmark(&r, "counters");
    assert!(close(value(c, "util.mxu_busy_2"), 30.0));
    assert_eq!(value(c, "counter.cycles.core0"), 380_000.0);
    assert!(
        notes(c)
            .iter()
            .any(|n| n.contains("no kernel event was selected") && n.contains("`profile-span`")),
        "{:?}",
        notes(c)
    );
}
