//! Chrome trace and XPlane imports on real files: every file of the corpus folders
//! `chrome_trace` and `xplane`, and the JAX CPU profile committed under `tests/fixtures/jax`.
//! Expected numbers were read from the files themselves.

use crate::common::{self, corpus, path_with_fake_nvidia_smi, stderr_of};

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use kgate::import::trace::{
    self, COUNTERS_BENCHMARK, KERNEL_TIME, TraceSamples, TraceSelection, xplane,
};
use kgate::machine::fingerprint::{Fingerprint, UNKNOWN};

fn select(kernel: &[&str], pid: Option<&str>, tid: Option<&str>) -> TraceSelection {
    let kernel: Vec<String> = kernel.iter().map(|s| s.to_string()).collect();
    TraceSelection::new(
        &kernel,
        &[],
        pid.map(str::to_string),
        tid.map(str::to_string),
    )
    .unwrap()
}

fn chrome(dir: &Path, file: &str, selection: &TraceSelection) -> TraceSamples {
    trace::chrome::read_file(&dir.join("chrome_trace").join(file), selection).unwrap()
}

fn total_samples(s: &TraceSamples) -> usize {
    s.kernels.iter().map(|(_, v)| v.len()).sum()
}

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/jax")
        .join(file)
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn kineto_resnet50_gzip_trace() {
    let dir = corpus();
    let s = chrome(
        &dir,
        "kineto_v100_resnet50_worker0.pt.trace.json.gz",
        &TraceSelection::default(),
    );
    assert_eq!(s.kernels.len(), 67);
    assert_eq!(total_samples(&s), 8772);
    assert_eq!(
        s.kernels[0].0,
        "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)"
    );
    assert_eq!(s.kernels[0].1.len(), 138);
    assert_eq!(s.kernels[0].1.clone().iter().sum::<f64>(), 342_000.0);
    let add = s
        .kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)")
        .unwrap();
    assert_eq!(add.len(), 3090);
    assert_eq!(add[..3], [376_000.0, 377_000.0, 376_000.0]);
    assert_eq!(add.iter().sum::<f64>(), 39_814_000.0);
    assert!(s.counters.is_empty());
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn kineto_h100_traces_new_schema() {
    let dir = corpus();
    for file in [
        "kineto_h100_before_fix_trace.json",
        "kineto_h100_after_fix_trace.json",
    ] {
        let s = chrome(&dir, file, &TraceSelection::default());
        assert_eq!(s.kernels.len(), 1, "{file}");
        assert_eq!(s.kernel("Kernel").unwrap(), [20.0], "{file}: dur 0.02 us");
    }
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn kineto_v100_2021_and_its_counter_tracks() {
    let dir = corpus();
    let plain = chrome(
        &dir,
        "kineto_v100_2021_gpu_metrics_input.json",
        &TraceSelection::default(),
    );
    assert_eq!(plain.kernels.len(), 13);
    assert_eq!(total_samples(&plain), 30);
    assert!(
        plain.kernels[0]
            .0
            .starts_with("void gemmSN_TN_kernel_64addr<float, 128, 16, 2, 4,")
    );
    assert_eq!(plain.kernels[0].1, [3000.0, 2000.0]);
    assert!(plain.counters.is_empty());

    let with_counters = chrome(
        &dir,
        "tb_plugin_v100_gpu_metrics_expected_with_C_events.json",
        &TraceSelection::default(),
    );
    assert_eq!(with_counters.kernels, plain.kernels);
    assert_eq!(with_counters.counters.len(), 78);
    let utilization: Vec<_> = with_counters
        .counters
        .readings()
        .filter(|(n, ..)| *n == "GPU 0 Utilization.GPU Utilization")
        .collect();
    assert_eq!(utilization.len(), 16);
    // Times count from the earliest kept, the first reading at 1621401187223005 µs.
    assert_eq!(
        with_counters.counters.readings().next().unwrap(),
        ("GPU 0 Utilization.GPU Utilization", 0.0, 1.0)
    );
    let last = with_counters.counters.readings().last().unwrap();
    assert_eq!(last.0, "GPU 0 Est. SM Efficiency.Est. SM Efficiency");
    assert_eq!((last.1, last.2), (13_497_000.0, 0.0));
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn catapult_begin_end_traces_in_both_forms() {
    let dir = corpus();
    let all = select(&["."], None, None);
    let trivial = chrome(&dir, "catapult_trivial_trace.json", &all);
    assert_eq!(
        crate::common::kernels(&trivial),
        vec![
            ("a".to_string(), vec![36_000.0]),
            ("b".to_string(), vec![2_000.0])
        ]
    );
    let ns = chrome(&dir, "catapult_nanoseconds.json", &all);
    assert_eq!(ns.kernels.len(), 8);
    let us1 = ns.kernel("us1").unwrap();
    assert!((us1[0] - 1100.0).abs() < 1e-9, "{us1:?}");
    let us2 = ns.kernel("us2").unwrap();
    assert!((us2[0] - 200.0).abs() < 1e-9, "{us2:?}");

    let simple = chrome(&dir, "catapult_simple_trace.json", &all);
    assert_eq!(simple.kernels.len(), 12);
    assert_eq!(total_samples(&simple), 12);
    assert_eq!(simple.kernel("Long X type").unwrap(), [15_000.0]);
    // An end closes the innermost begin whatever its name.
    assert_eq!(
        simple.kernel("Asub with a name that wont fit").unwrap(),
        [1_000.0]
    );
    assert_eq!(simple.kernel("Asub").unwrap(), [3_000.0]);
    assert_eq!(simple.counters.len(), 5);
    // 826 µs, counted from the earliest kept event at 818 µs.
    assert_eq!(
        simple.counters.readings().next().unwrap(),
        ("counter.value", 8_000.0, 10.0)
    );

    let asynchronous = chrome(&dir, "catapult_async_begin_end.json", &all);
    assert_eq!(asynchronous.kernel("BE1").unwrap(), [50_000.0, 130_000.0]);
    assert_eq!(asynchronous.kernel("BE2").unwrap(), [40_000.0]);
    assert_eq!(
        asynchronous.kernels.len(),
        2,
        "async S/T/F/b events are not durations"
    );
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn catapult_counters_with_ids() {
    let dir = corpus();
    let s = chrome(
        &dir,
        "catapult_instance_counters.json",
        &TraceSelection::default(),
    );
    assert!(s.kernels.is_empty(), "no kernel-category events");
    let got: Vec<(&str, f64, f64)> = s.counters.readings().collect();
    assert_eq!(got.len(), 8);
    // 9524 µs and 9631 µs, counted from the earliest, 9524 µs.
    assert_eq!(got[0], ("counter[123].value", 0.0, 2.0));
    assert_eq!(got[5], ("counter[123].value", 107_000.0, 10.0));
    assert_eq!(got[6], ("counter[b].value", 0.0, 10.0));
    assert_eq!(got[7], ("counter[b].value", 107_000.0, 0.0));
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn real_chrome_browser_trace_by_process_and_thread_name() {
    let dir = corpus();
    let s = chrome(
        &dir,
        "catapult_x_event_trace.json",
        &select(&["."], None, None),
    );
    assert_eq!(s.kernels.len(), 74);
    assert_eq!(
        total_samples(&s),
        3241,
        "2799 complete + 442 begin/end pairs"
    );
    assert_eq!(s.counters.len(), 42);
    // 172187584989 µs, counted from the earliest kept event 640 µs before it.
    assert_eq!(
        s.counters.readings().next().unwrap(),
        (
            "unused_memory_bytes[0xaf5adc4cfdc05dcc].value",
            640_000.0,
            34_570_240.0
        )
    );
    let tiles = chrome(
        &dir,
        "catapult_x_event_trace.json",
        &select(
            &["^TileManager::ManageTiles$"],
            Some("Renderer"),
            Some("Compositor"),
        ),
    );
    let d = tiles.kernel("TileManager::ManageTiles").unwrap();
    assert_eq!(d.len(), 42);
    assert_eq!(d[..3], [610_000.0, 488_000.0, 977_000.0]);
    assert_eq!(d.iter().sum::<f64>(), 34_273_000.0);
    let elsewhere = chrome(
        &dir,
        "catapult_x_event_trace.json",
        &select(
            &["^TileManager::ManageTiles$"],
            None,
            Some("CrRendererMain"),
        ),
    );
    assert!(elsewhere.kernels.is_empty());
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn broken_rocprof_fragment_is_refused_clearly() {
    let dir = corpus();
    let path = dir.join("chrome_trace/rocprof_v1_results_json_BROKEN_fragment.json");
    let err = trace::chrome::read_file(&path, &TraceSelection::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("rocprof_v1_results_json_BROKEN_fragment.json"),
        "{text}"
    );
    assert!(text.contains("not a Chrome trace"), "{text}");
    assert!(text.contains("found `,` at byte 0"), "{text}");
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn tensorflow_gpu_xplane_stream_kernels() {
    let dir = corpus();
    let path =
        dir.join("xplane/tf_gpu_multi_worker_34.83.195.179_6003.device_planes_only.xplane.pb");
    let s = xplane::read_file(&path, &TraceSelection::default()).unwrap();
    assert_eq!(s.kernels.len(), 13);
    assert_eq!(s.kernels[0].0, "MemcpyH2D");
    assert_eq!(s.kernels[0].1.len(), 202);
    assert_eq!(s.kernels[0].1.clone().iter().sum::<f64>(), 394_397.0);
    let philox = &s.kernels[1];
    assert!(
        philox
            .0
            .starts_with("void tensorflow::functor::FillPhiloxRandomKernelLaunch<")
    );
    assert_eq!(philox.1.len(), 194);
    assert_eq!(philox.1.clone()[..3], [57_343.0, 52_224.0, 52_224.0]);
    assert_eq!(philox.1.clone().iter().sum::<f64>(), 7_908_309.0);
    let d2h = s.kernel("MemcpyD2H").unwrap();
    assert_eq!((d2h.len(), d2h.iter().sum::<f64>()), (24, 76_960.0));
    assert!(s.counters.is_empty(), "a GPU profile without PM sampling");

    let gpu4 = select(&["^Memcpy"], Some("/device:GPU:4"), None);
    let s4 = xplane::read_file(&path, &gpu4).unwrap();
    let h2d = s4.kernel("MemcpyH2D").unwrap();
    assert_eq!((h2d.len(), h2d.iter().sum::<f64>()), (82, 158_973.0));
    assert_eq!(s4.kernel("MemcpyD2H").unwrap().len(), 12);
    let one_stream = select(&[], Some("/device:GPU:4"), Some("Stream #63(MemcpyH2D)"));
    let s63 = xplane::read_file(&path, &one_stream).unwrap();
    assert_eq!(s63.kernels.len(), 1);
    assert_eq!(s63.kernel("MemcpyH2D").unwrap().len(), 2);
}

#[test]
fn jax_cpu_profile_both_formats_agree() {
    let from_xplane =
        xplane::read_file(&data("jax_cpu.xplane.pb"), &TraceSelection::default()).unwrap();
    let from_json =
        trace::chrome::read_file(&data("jax_cpu.trace.json.gz"), &TraceSelection::default())
            .unwrap();
    let fusion = [31_916.0, 18_136.0, 14_414.0, 31_475.0, 23_836.0];
    let add = [3_317.0, 2_130.0, 2_019.0, 2_490.0, 2_218.0];
    for s in [&from_xplane, &from_json] {
        assert_eq!(s.kernels.len(), 2);
        let mut f = s.kernel("ynn_fusion").unwrap().to_vec();
        let mut a = s.kernel("broadcast_add_fusion").unwrap().to_vec();
        f.sort_by(f64::total_cmp);
        a.sort_by(f64::total_cmp);
        let (mut ef, mut ea) = (fusion.to_vec(), add.to_vec());
        ef.sort_by(f64::total_cmp);
        ea.sort_by(f64::total_cmp);
        for (got, want) in f.iter().zip(&ef).chain(a.iter().zip(&ea)) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
        assert_eq!((f.len(), a.len()), (5, 5));
    }
}

#[test]
fn cli_imports_traces_into_results() {
    let out = Command::cargo_bin("kgate")
        .unwrap()
        .args(["-c", "absent.yaml", "import", "xplane"])
        .arg(data("jax_cpu.xplane.pb"))
        .arg(data("jax_cpu.xplane.pb"))
        .args(["--kernel", "^ynn_"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let results: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let benchmarks = results["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 1);
    assert_eq!(benchmarks[0]["name"], "ynn_fusion");
    assert_eq!(benchmarks[0]["repetitions"], 2);
    let metric = &benchmarks[0]["metrics"][0];
    assert_eq!(metric["name"], KERNEL_TIME);
    assert_eq!(metric["source"], "timer");
    assert_eq!(metric["unit"], "ns");
    assert_eq!(metric["values"].as_array().unwrap().len(), 10);
    assert_eq!(metric["repetition"][9], 1);
    assert_ne!(benchmarks[0]["name"], COUNTERS_BENCHMARK);
}

#[test]
fn cli_reports_an_empty_selection_and_misplaced_options() {
    Command::cargo_bin("kgate")
        .unwrap()
        .args(["-c", "absent.yaml", "import", "chrome-trace"])
        .arg(data("jax_cpu.trace.json.gz"))
        .args(["--kernel", "^no_such_kernel$"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no kernel events or counter tracks matched --kernel ^no_such_kernel$",
        ));
    Command::cargo_bin("kgate")
        .unwrap()
        .args([
            "-c",
            "absent.yaml",
            "import",
            "protocol",
            "x.jsonl",
            "--pid",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "apply to chrome-trace and xplane imports only",
        ));
}

#[test]
fn accelerator_example_configurations_are_valid() {
    for config in ["examples/triton/kgate.yaml", "examples/pallas/kgate.yaml"] {
        Command::cargo_bin("kgate")
            .unwrap()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-c", config, "validate"])
            .assert()
            .success();
    }
}

/// The example scripts need a GPU or TPU to run, but their syntax is checked everywhere
/// (parsed, not imported: jax and triton need not be installed).
#[test]
fn accelerator_example_scripts_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for script in [
        "examples/triton/bench_softmax.py",
        "examples/pallas/bench_matmul.py",
        "scripts/gen_jax_trace.py",
        "scripts/bench_trace_import.py",
    ] {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])",
            ])
            .arg(root.join(script))
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The environment that results imported from a file of these samples get.
fn environment(s: &TraceSamples) -> Fingerprint {
    s.device
        .environment(Fingerprint::capture_host(Path::new(".")))
}

#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn traces_name_their_device_driver_and_tools() {
    let dir = corpus();
    for file in [
        "kineto_h100_before_fix_trace.json",
        "kineto_h100_after_fix_trace.json",
    ] {
        let env = environment(&chrome(&dir, file, &TraceSelection::default()));
        assert!(env.imported, "{file}");
        assert_eq!(env.accelerator.as_deref(), Some("NVIDIA H100"), "{file}");
        assert_eq!(
            env.driver.as_deref(),
            Some("CUDA 13.0"),
            "{file}: cuda_driver_version 13000"
        );
        assert_eq!(env.tools["cuda_runtime"], "12.9", "{file}: 12090");
        assert_eq!(env.tools["cupti"], "28", "{file}");
        assert_eq!(env.tools.len(), 2, "{file}");
        // The trace names its GPU, so this machine's CPU and OS say nothing about it.
        assert_eq!((env.cpu_model.as_str(), env.cores), (UNKNOWN, 0), "{file}");
        assert_eq!((env.arch.as_str(), env.os.as_str()), (UNKNOWN, UNKNOWN));
    }
    // Eight identical GPUs are one device; the 2021 schema says `computeProperties`.
    for file in [
        "kineto_v100_resnet50_worker0.pt.trace.json.gz",
        "kineto_v100_2021_gpu_metrics_input.json",
    ] {
        let env = environment(&chrome(&dir, file, &TraceSelection::default()));
        assert_eq!(
            env.accelerator.as_deref(),
            Some("Tesla V100-DGXS-32GB"),
            "{file}"
        );
        assert_eq!(env.driver, None, "{file}");
        assert!(env.tools.is_empty(), "{file}");
    }
    // A browser trace names no device: the importing host stays, with no accelerator.
    let all = select(&["."], None, None);
    let env = environment(&chrome(&dir, "catapult_x_event_trace.json", &all));
    assert_eq!(env.accelerator, None);
    assert_eq!(env.arch, std::env::consts::ARCH);
    assert_ne!(env.cpu_model, UNKNOWN);

    let path =
        dir.join("xplane/tf_gpu_multi_worker_34.83.195.179_6003.device_planes_only.xplane.pb");
    let env = environment(&xplane::read_file(&path, &TraceSelection::default()).unwrap());
    assert_eq!(
        env.accelerator.as_deref(),
        Some("GPU (compute capability 7.0, 80 cores)"),
        "eight `/device:GPU:n` planes of V100s, which name no model"
    );
    assert_eq!(env.clocks["sm_max_mhz"], "1530", "clock_rate 1530000 kHz");
    assert_eq!(env.cpu_model, UNKNOWN);

    // The JAX CPU profile names no device, but the JAX version that wrote it.
    let s = xplane::read_file(&data("jax_cpu.xplane.pb"), &TraceSelection::default()).unwrap();
    let env = environment(&s);
    assert_eq!(env.accelerator, None);
    assert_eq!(env.tools["jax"], "0.10.2");
    assert_eq!(env.tools["jaxlib"], "0.10.2");
    assert_eq!(env.arch, std::env::consts::ARCH);
}

/// A trace as libkineto writes it, reduced to what the import reads: `deviceProperties` of
/// one GPU, optionally the CUDA versions, and one `kernel` event per launch (durations in µs).
fn kineto_trace(gpu: &str, cuda: bool, durations_us: &[f64]) -> String {
    let mut ts = 1_000.0;
    let events: Vec<serde_json::Value> = durations_us
        .iter()
        .map(|dur| {
            let event = serde_json::json!({
                "ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
                "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7}
            });
            ts += dur + 5.0;
            event
        })
        .collect();
    let mut doc = serde_json::json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": gpu, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "displayTimeUnit": "ms",
        "traceEvents": events,
    });
    if cuda {
        doc["cuda_driver_version"] = 13000.into();
        doc["cuda_runtime_version"] = 12090.into();
        doc["cupti_version"] = 28.into();
    }
    doc.to_string()
}

/// `kgate import chrome-trace FILE -o OUT` in `dir`, on a machine whose own GPU is an H200.
fn import_trace(dir: &Path, file: &str, out: &str) -> serde_json::Value {
    Command::cargo_bin("kgate")
        .unwrap()
        .current_dir(dir)
        .env("PATH", path_with_fake_nvidia_smi(dir))
        .args([
            "-c",
            "absent.yaml",
            "import",
            "chrome-trace",
            file,
            "-o",
            out,
        ])
        .assert()
        .success();
    serde_json::from_str(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap()
}

#[test]
fn compare_refuses_imports_from_different_devices_and_compares_the_same_device() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let h100_us = [100.0, 101.0, 99.0, 100.5, 100.2, 99.8, 100.1, 100.3];
    let slower: Vec<f64> = h100_us.iter().map(|t| t * 1.27).collect();
    common::write(
        dir,
        "h100.json",
        &kineto_trace("NVIDIA H100", true, &h100_us),
    );
    common::write(
        dir,
        "h100_slower.json",
        &kineto_trace("NVIDIA H100", true, &slower),
    );
    common::write(
        dir,
        "mi300x.json",
        &kineto_trace("AMD Instinct MI300X", false, &slower),
    );
    let h100 = import_trace(dir, "h100.json", "h100.results.json");
    assert_eq!(
        h100["environment"]["accelerator"], "NVIDIA H100",
        "not this machine's H200"
    );
    assert_eq!(h100["environment"]["driver"], "CUDA 13.0");
    assert_eq!(h100["environment"]["imported"], true);
    assert_eq!(h100["environment"]["cpu_model"], UNKNOWN);
    let mi300x = import_trace(dir, "mi300x.json", "mi300x.results.json");
    assert_eq!(mi300x["environment"]["accelerator"], "AMD Instinct MI300X");
    assert!(
        mi300x["environment"].get("driver").is_none(),
        "the trace names no driver, and this machine's is not the trace's"
    );
    import_trace(dir, "h100_slower.json", "h100_slower.results.json");

    let refused = Command::cargo_bin("kgate")
        .unwrap()
        .current_dir(dir)
        .args([
            "-c",
            "absent.yaml",
            "compare",
            "h100.results.json",
            "mi300x.results.json",
        ])
        .output()
        .unwrap();
    let stderr = stderr_of(&refused);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("accelerator: `NVIDIA H100` vs `AMD Instinct MI300X`"),
        "{stderr}"
    );

    // Two imports naming the same GPU compare (here: a regression), whichever machine imported
    // them.
    let compared = Command::cargo_bin("kgate")
        .unwrap()
        .current_dir(dir)
        .args([
            "-c",
            "absent.yaml",
            "compare",
            "h100.results.json",
            "h100_slower.results.json",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(compared.status.code(), Some(1), "{}", stderr_of(&compared));
    let report: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    assert_eq!(report["verdict"], "regressed");
    assert_eq!(report["benchmarks"][0]["name"], "gemm_kernel");
}

/// Python's `json.dumps` writes non-finite floats as the bare tokens `NaN`, `Infinity` and
/// `-Infinity` unless told not to (`allow_nan=True` is its default), so traces written from
/// Python carry them. Such a reading is left out with a note; the kernels and the finite
/// readings of the same counter stand. (This text is what `json.dumps` gives for these events.)
#[test]
fn a_trace_with_python_s_nan_and_infinity_keeps_its_kernels_and_notes_the_readings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("t.json"),
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k1", "pid": 1, "tid": 1, "ts": 10, "dur": 5}, {"ph": "C", "name": "util", "pid": 1, "tid": 1, "ts": 11, "args": {"v": NaN}}, {"ph": "C", "name": "util", "pid": 1, "tid": 1, "ts": 12, "args": {"v": 50.0}}, {"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 13, "args": {"v": -Infinity}}, {"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 14, "args": {"v": Infinity}}, {"ph": "X", "cat": "kernel", "name": "k1", "pid": 1, "tid": 1, "ts": 20, "dur": 6}]}"#,
    )
    .unwrap();
    let out = Command::cargo_bin("kgate")
        .unwrap()
        .current_dir(d)
        .args(["import", "chrome-trace", "t.json", "-o", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let bench = |name: &str| {
        r["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        crate::common::numbers(&bench("k1")["metrics"][0]["values"]),
        [5000.0, 6000.0]
    );
    let counters = bench("counters");
    // One series, `util.v`, holding its one finite reading (`mem.v` had none).
    let series = counters["counters"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    assert_eq!(series[0]["counter"], "util.v");
    assert_eq!(crate::common::numbers(&series[0]["value"]), [50.0]);
    let notes = counters["provenance"]["notes"].to_string();
    assert!(
        notes.contains(
            "counter `util.v`: 1 reading not a finite number (NaN or an infinity) left out"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("counter `mem.v`: 2 readings not a finite number"),
        "{notes}"
    );
    assert!(
        stderr_of(&out).contains("not a finite number"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_kernel_named_like_the_counters_benchmark_keeps_its_own_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("t.json"),
        r#"{"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "counters", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
            {"ph": "X", "cat": "kernel", "name": "counters#2", "pid": 1, "tid": 1, "ts": 16, "dur": 2},
            {"ph": "X", "cat": "kernel", "name": "counters", "pid": 1, "tid": 1, "ts": 20, "dur": 6},
            {"ph": "C", "name": "sm_busy", "pid": 1, "tid": 1, "ts": 9, "args": {"value": 3}},
            {"ph": "C", "name": "sm_busy", "pid": 1, "tid": 1, "ts": 27, "args": {"value": 4}}]}"#,
    )
    .unwrap();
    let out = Command::cargo_bin("kgate")
        .unwrap()
        .current_dir(d)
        .args(["import", "chrome-trace", "t.json", "t.json", "-o", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let r = kgate::model::results::RunResults::load(&d.join("r.json")).unwrap();
    let names: Vec<&str> = r.benchmarks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["counters", "counters#2", "counters#3"]);
    // The kernel: its two launches per file, one repetition per file, no readings of its own.
    let kernel = r.benchmark("counters").unwrap();
    assert_eq!(kernel.repetitions, 2);
    let time = kernel.metric(KERNEL_TIME).unwrap();
    assert_eq!(time.values, [5000.0, 6000.0, 5000.0, 6000.0]);
    assert_eq!(time.repetition, [0, 0, 1, 1]);
    assert!(kernel.counters.is_empty());
    // Its windows point at the readings of the same file, on the benchmark that holds them.
    let windows: Vec<_> = kernel
        .kernel_windows
        .iter()
        .map(|w| w.counters_of.clone().unwrap())
        .collect();
    assert_eq!(
        windows
            .iter()
            .map(|c| (c.benchmark.as_str(), c.repetition))
            .collect::<Vec<_>>(),
        [("counters#3", 0), ("counters#3", 1)]
    );
    let readings = r.benchmark("counters#3").unwrap();
    assert_eq!(readings.repetitions, 2);
    assert!(readings.metrics.is_empty());
    assert_eq!(
        readings
            .counters
            .iter()
            .map(|c| c.repetition)
            .collect::<Vec<_>>(),
        [0, 1]
    );
    let notes = readings.provenance.notes.join("\n");
    assert_eq!(
        notes
            .matches("are on benchmark `counters#3`, not `counters`")
            .count(),
        1,
        "{notes}"
    );
    // Each window lends its own file's readings around the launches: both of them.
    let from_others = r.series_from_others(kernel);
    assert_eq!(
        from_others
            .iter()
            .map(|c| (c.repetition, c.len()))
            .collect::<Vec<_>>(),
        [(0, 2), (1, 2)]
    );
}

/// A trace of 12,000 launches and readings, one counter track out of time order, and a
/// reading that is not a number.
fn large_trace(dir: &Path) -> PathBuf {
    let mut events = Vec::new();
    for i in 0..12_000u32 {
        let ts = 1_700_000_000_000.0 + f64::from(i) * 4.0;
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": {ts:.3}, "dur": {:.3}}}"#,
            1.0 + f64::from(i % 13) * 0.125
        ));
        events.push(format!(
            r#"{{"ph": "C", "name": "GPU 0 Utilization", "pid": 0, "ts": {:.3}, "args": {{"value": {}}}}}"#,
            ts + 1.5,
            if i == 77 { "NaN".to_string() } else { format!("{:.4}", f64::from(i % 100) / 100.0) }
        ));
        if i % 3 == 0 {
            // Written newest first: the import puts it in time order.
            events.push(format!(
                r#"{{"ph": "C", "name": "late", "pid": 0, "ts": {:.3}, "args": {{"value": {i}}}}}"#,
                1_700_000_048_000.0 - f64::from(i)
            ));
        }
    }
    common::write(
        dir,
        "large.json",
        &format!("{{\"traceEvents\": [\n{}\n]}}\n", events.join(",\n")),
    )
}

#[test]
fn a_large_trace_is_written_in_either_layout_as_it_is_read() {
    use kgate::import::{ImportContext, Policies};
    use kgate::model::results::RunResults;
    use kgate::plan::MetricPolicy;
    let dir = tempfile::tempdir().unwrap();
    let trace = large_trace(dir.path());
    let mut outputs = Vec::new();
    for pretty in [false, true] {
        let out = dir.path().join(format!("written-{pretty}.json"));
        let mut cmd = common::kgate(dir.path());
        cmd.args(["import", "chrome-trace"])
            .arg(&trace)
            .arg("-o")
            .arg(&out);
        if pretty {
            cmd.arg("--pretty");
        }
        let assert = cmd.assert().success();
        let stderr = stderr_of(assert.get_output());
        assert!(stderr.contains("1 reading not a finite number"), "{stderr}");
        outputs.push(std::fs::read_to_string(&out).unwrap());
    }
    // The command writes what the import gives, in either layout.
    let ctx = ImportContext::new(Policies::new(
        Default::default(),
        MetricPolicy::permissive(0.05),
    ));
    let whole = trace::chrome::CHROME_TRACE
        .import(std::slice::from_ref(&trace), &ctx)
        .unwrap();
    let r = RunResults::parse(&outputs[0], Path::new("compact.json")).unwrap();
    let pretty = RunResults::parse(&outputs[1], Path::new("pretty.json")).unwrap();
    assert_eq!(r.benchmarks, whole.benchmarks);
    assert_eq!(pretty.benchmarks, whole.benchmarks);
    let gemm = r.benchmark("gemm").unwrap();
    assert_eq!(gemm.metric(KERNEL_TIME).unwrap().values.len(), 12_000);
    assert_eq!(gemm.metric(KERNEL_TIME).unwrap().values[5], 1625.0);
    // The first launch ends before the first reading: no window.
    assert_eq!(gemm.kernel_windows[0].start_ns.len(), 11_999);
    let counters = r.benchmark(COUNTERS_BENCHMARK).unwrap();
    assert_eq!(counters.counters[0].len(), 11_999);
    let late = counters
        .counters
        .iter()
        .find(|c| c.counter == "late.value")
        .unwrap();
    assert_eq!(late.len(), 4_000);
    assert!(late.t_ns.is_sorted());
    assert_eq!(late.value[0], 11_997.0);
}

/// A trace with counter tracks and no kernel selected beside them reads the tracks over the
/// profile's span (`profile-span`, said in a note); without a device profile that gives no
/// measurement, and the refusal names the tracks, the profile and `--kernel`, not the
/// harness. Catapult's examples hold `B`/`E`/`X` events of other categories: `--kernel .`
/// takes them.
#[test]
#[cfg_attr(
    kgate_no_corpus,
    ignore = "needs the conformance corpus: set KGATE_CORPUS to its folder"
)]
fn catapult_counter_traces_without_kernels_are_refused_naming_their_tracks_and_kernel() {
    let dir = corpus();
    let work = tempfile::tempdir().unwrap();
    for (file, track) in [
        (
            "catapult_instance_counters.json",
            "2 counter tracks (on benchmark `counters`: `counter[123].value`, `counter[b].value`)",
        ),
        (
            "catapult_simple_trace.json",
            "1 counter track (on benchmark `counters`: `counter.value`)",
        ),
        (
            "catapult_x_event_trace.json",
            "1 counter track (on benchmark `counters`: `unused_memory_bytes[0xaf5adc4cfdc05dcc].value`)",
        ),
    ] {
        let path = dir.join("chrome_trace").join(file);
        let out = common::kgate(work.path())
            .args(["-c", "absent.yaml", "import", "chrome-trace"])
            .arg(&path)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        for said in [
            track,
            "but no measurement, and counter readings alone are nothing to gate",
            "utilization over their span needs a device profile: `device: NAME` in the configuration (`absent.yaml` does not exist",
            "with --kernel REGEX",
            "no kernel event was selected by the default selection",
            "as one window, `profile-span`",
        ] {
            assert!(err.contains(said), "{file}: {said}\n{err}");
        }
        assert!(!err.contains("check that the harness ran"), "{file}: {err}");
        common::kgate(work.path())
            .args(["-c", "absent.yaml", "import", "chrome-trace"])
            .arg(&path)
            .args(["--kernel", ".", "-o", "r.json"])
            .assert()
            .success();
    }
}

/// XProf's trace-viewer JSON of a profile whose only data is its counter tracks (the Perf
/// Counters view's: periodic samples on epoch-microsecond timestamps, no events): with a
/// device profile, utilization over the profile's span; without, a refusal that says so.
#[test]
fn an_xprof_counters_only_export_gives_utilization_over_the_profile_span() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace_windows/xprof_counters_only.json");
    let refused = common::kgate(d)
        .args(["import", "chrome-trace"])
        .arg(&fixture)
        .output()
        .unwrap();
    let err = stderr_of(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds 2 counter tracks (on benchmark `counters`: `COUNT_MXU_BUSY_1.TC Stats`, `COUNT_MXU_BUSY_2.TC Stats`) but no measurement"),
        "{err}"
    );
    assert!(err.contains("`device: NAME`"), "{err}");
    common::write(
        d,
        "kgate.yaml",
        "device: tpu-v7x\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n",
    );
    let out = common::kgate(d)
        .args(["import", "chrome-trace"])
        .arg(&fixture)
        .args(["-o", "r.json"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("no kernel event was selected by the default selection")
            && err.contains("from the first counter reading to the last (10000 ns), as one window, `profile-span`"),
        "{err}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let counters = r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == COUNTERS_BENCHMARK)
        .unwrap();
    let value = |name: &str| {
        counters["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {counters}"))["values"][0]
            .as_f64()
            .unwrap()
    };
    // 1425 and 570 of 1900 cycles in each of the 10 µs between the first reading and the
    // last, at the TPU v7x's 1.9 GHz.
    assert!((value("util.mxu_busy_1") - 75.0).abs() < 1e-9);
    assert!((value("util.mxu_busy_2") - 30.0).abs() < 1e-9);
    assert_eq!(value("counter.mxu_busy_1"), 14_250.0);
    assert!(
        counters["provenance"]["details"]["counters.windows"]
            .as_str()
            .unwrap()
            .starts_with("`profile-span`"),
        "{counters}"
    );
}

/// The same class in the protocol: counter lines and nothing else are measured over their
/// span with a device profile, and refused naming the counters without one (no `--kernel`
/// there: the protocol takes no kernel selection).
#[test]
fn protocol_counter_readings_alone_are_measured_over_their_span_with_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines: Vec<String> = (0..11)
        .map(|i| {
            format!(
                r#"{{"counter": "mxu_busy_1", "t_ns": {}, "value": {}, "unit": "cycles"}}"#,
                1_000 + i * 1_000,
                i * 950
            )
        })
        .collect();
    common::write(d, "p.jsonl", &(lines.join("\n") + "\n"));
    let refused = common::kgate(d)
        .args(["import", "protocol", "p.jsonl"])
        .output()
        .unwrap();
    let err = stderr_of(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds 1 counter track (on benchmark `p`: `mxu_busy_1`) but no measurement")
            && err.contains("`device: NAME`")
            && !err.contains("--kernel"),
        "{err}"
    );
    common::write(
        d,
        "kgate.yaml",
        "device: tpu-v7x\nbenchmarks:\n  - name: suite\n    command: [\"true\"]\n",
    );
    let out = common::kgate(d)
        .args(["import", "protocol", "p.jsonl", "-o", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("r.json")).unwrap()).unwrap();
    let util = r["benchmarks"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "util.mxu_busy_1")
        .unwrap()["values"][0]
        .as_f64()
        .unwrap();
    // 950 of 1900 cycles per microsecond.
    assert!((util - 50.0).abs() < 1e-9, "{util}");
}
