//! `kgate import chrome-trace`: kernel durations and counter tracks from Chrome Trace Event
//! Format JSON (PyTorch/Kineto, XProf trace viewer, Perfetto JSON, chrome://tracing).
//!
//! Traces run to gigabytes, so the file is never held in memory: it is read in chunks, and a
//! scanner (`json_scan`) walks each event once, noting where its fields stand.
//! Only what the event's phase and category call for is then decoded (most events are CPU
//! ops that need no number parsed) and folded into per-kernel aggregates. Memory is
//! proportional to the distinct kernel names and threads, plus the samples kept, not to the
//! events read. Large uncompressed files are read by one thread per core from guessed event
//! boundaries, merged in file order so that the result is the one a single reader gets
//! (`parallel::read_parallel` says how a wrong guess is caught).
//!
//! One file per job: `io` reads gzip on a thread of its own, ahead of the scanner; `parallel`
//! cuts large uncompressed files between threads and merges their pieces; `walk` walks the
//! document and its events through the scanner; `event` is one event's fields as scanned;
//! `aggregate` folds events into per-kernel aggregates and, at the end, the samples.

mod aggregate;
mod event;
mod io;
mod parallel;
mod walk;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use self::aggregate::Aggregator;
use self::io::{ReadAhead, read_up_to};
use self::parallel::{PARALLEL_MIN_BYTES, read_parallel};
use self::walk::{Input, Start};
use super::{TraceSamples, TraceSelection, import_files};
use crate::import::{ImportError, Importer, SelectionScope, content, read_error};

/// What the default selection takes, in words.
const DEFAULT_SELECTION: &str =
    "complete and begin/end events of category `kernel`, or with an `hlo_op` argument (XLA ops)";

pub static CHROME_TRACE: Importer = Importer {
    name: "chrome-trace",
    help: "Chrome Trace Event Format JSON (`.json`, `.json.gz`): Kineto, XProf, Perfetto JSON",
    selection: Some(SelectionScope {
        pid: "only this process (pid or process name)",
        tid: "only this thread (tid or thread name)",
    }),
    // Chrome trace files (`.json` or gzip-compressed `.json.gz`), each one repetition.
    import: |files, ctx| {
        let (format, words) = ("chrome-trace", ("counter tracks", "--pid and --tid"));
        import_files(format, files, ctx, read_file, DEFAULT_SELECTION, words)
    },
};

/// Reads one trace file (plain or gzip, told apart by the gzip magic bytes).
pub fn read_file(path: &Path, selection: &TraceSelection) -> Result<TraceSamples, ImportError> {
    let read_err = read_error(path);
    let mut file = File::open(path).map_err(read_err)?;
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut file, &mut magic).map_err(read_err)?;
    let head = std::io::Cursor::new(magic[..n].to_vec());
    let content_err = |message| content(path, message);
    if n == 2 && magic == [0x1f, 0x8b] {
        let gz =
            flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, head.chain(file)));
        return read_trace(ReadAhead::spawn(gz), selection).map_err(content_err);
    }
    let size = file.metadata().map_err(read_err)?.len();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if workers > 1 && size >= PARALLEL_MIN_BYTES {
        read_parallel(path, size, workers, selection).map_err(content_err)
    } else {
        read_trace(head.chain(file), selection).map_err(content_err)
    }
}

/// Parses a trace from any reader. Errors are messages that say where and what.
pub fn read_trace<R: Read>(reader: R, selection: &TraceSelection) -> Result<TraceSamples, String> {
    let mut aggregator = Aggregator::new(selection, false);
    Input::new(reader, 0, Vec::new()).walk(&mut aggregator, Start::Document)?;
    aggregator.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, selection: &TraceSelection) -> Result<TraceSamples, String> {
        read_trace(text.as_bytes(), selection)
    }

    pub(super) fn kernels_named(regex: &str) -> TraceSelection {
        TraceSelection::new(&[regex.to_string()], &[], None, None).unwrap()
    }

    #[test]
    fn complete_and_begin_end_events_of_kernel_category() {
        let text = r#"{"displayTimeUnit": "ns", "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2.25, "args": {"grid": [1, 2, 3]}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": 10, "dur": 5},
            {"ph": "B", "cat": "Kernel", "name": "relu", "pid": 0, "tid": 2, "ts": 20},
            {"ph": "E", "pid": 0, "tid": 2, "ts": 20.125},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 30, "dur": "3"}
        ]}"#;
        let s = parse(text, &TraceSelection::default()).unwrap();
        assert_eq!(s.kernels.len(), 2);
        assert_eq!(s.kernel("gemm").unwrap(), [2250.0, 3000.0]);
        assert_eq!(s.kernel("relu").unwrap(), [125.0]);
        assert!(s.kernel("aten::mm").is_none());
    }

    #[test]
    fn durations_are_exact_nanoseconds_of_their_decimal_text() {
        // Kineto writes `dur` in microseconds with three decimals; scaled as floating point,
        // 2.026 µs would be kept as 2025.9999999999998 ns.
        let text = r#"[
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 2.026},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 5, "dur": 4.012},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 9, "dur": 1e40}
        ]"#;
        let s = parse(text, &TraceSelection::default()).unwrap();
        assert_eq!(s.kernel("k").unwrap(), [2026.0, 4012.0, 1e43]);
    }

    #[test]
    fn bare_array_may_lack_its_closing_bracket() {
        let text = "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n{\"ph\": \"X\", \"name\": \"a\", \"ts\": 2, \"dur\": 2},\n";
        let s = parse(text, &kernels_named("a")).unwrap();
        assert_eq!(s.kernel("a").unwrap(), [1000.0, 2000.0]);
        let cut = "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n{\"ph\": \"X\", \"na";
        let err = parse(cut, &kernels_named("a")).unwrap_err();
        assert_contains!(err, "ends inside a trace event");
        assert_contains!(err, "after 1 events");
    }

    #[test]
    fn counters_plain_with_id_and_grouped() {
        let text = r#"[
            {"ph": "C", "name": "mem", "pid": 1, "ts": 5, "args": {"used": 10, "free": "20", "note": "x"}},
            {"ph": "C", "name": "ctr", "id": "0x1", "pid": 1, "ts": 6, "args": {"value": 3}},
            {"pid": 2, "name": "HBM", "ph": "C", "event_stats": "bandwidth", "entries": [[1.5, 7, 8], [2.5, "9", "NaN"]]}
        ]"#;
        let s = parse(text, &TraceSelection::default()).unwrap();
        // Track by track, each in arrival order.
        let c: Vec<(&str, f64, f64)> = s.counters.readings().collect();
        // Times count from the earliest, 1.5 µs.
        assert_eq!(c[0], ("mem.used", 3500.0, 10.0));
        assert_eq!(c[1], ("mem.free", 3500.0, 20.0));
        assert_eq!(c[2], ("ctr[0x1].value", 4500.0, 3.0));
        assert_eq!(c[3], ("HBM.bandwidth", 0.0, 7.0));
        assert_eq!(c[4], ("HBM.bandwidth", 1000.0, 9.0));
        assert_eq!(c[5], ("HBM.1", 0.0, 8.0));
        assert!(c[6].2.is_nan());
        assert_eq!(c.len(), 7);
    }

    #[test]
    fn a_counter_written_like_the_last_one_goes_where_a_full_lookup_puts_it() {
        // Each trial's events are read twice: as they are, and with an event of another
        // counter after each one, so that none follows an event written like it and every
        // reading takes the full lookup. The readings must be the same.
        let mut rng = fastrand::Rng::with_seed(17);
        let names = ["mem", "m\\u0065m", "ctr"];
        let ids = ["", r#", "id": "0x1""#, r#", "id": 7"#];
        let pids = ["1", "2", r#""1""#];
        #[rustfmt::skip]
        let members = [
            r#""used": 1.5"#, r#""free": 2"#, r#""u\u0073ed": 3"#, r#""note": "x""#,
            r#""free": "20""#, r#""used": -4e2"#,
        ];
        let (mut fast, mut repeats) = (0, 0);
        for trial in 0..300 {
            let mut plain = Vec::new();
            let mut broken = Vec::new();
            let mut last = String::new();
            for i in 0..rng.usize(1..40) {
                // Runs of the same counter, as traces write them.
                if i == 0 || rng.u8(..3) == 0 {
                    let args: Vec<&str> = (0..rng.usize(0..6))
                        .map(|_| members[rng.usize(..members.len())])
                        .collect();
                    last = format!(
                        r#""name": "{}"{}, "pid": {}, "args": {{{}}}"#,
                        names[rng.usize(..names.len())],
                        ids[rng.usize(..ids.len())],
                        pids[rng.usize(..pids.len())],
                        args.join(", ")
                    );
                } else {
                    repeats += 1;
                }
                let ts = 10 + i;
                let event = format!(r#"{{"ph": "C", "ts": {ts}, {last}}}"#);
                broken.push(event.clone());
                // A counter event without readings: it moves no time, and leaves no last track.
                broken.push(format!(
                    r#"{{"ph": "C", "name": "zz", "pid": 9, "ts": {ts}, "args": {{"v": "x"}}}}"#
                ));
                plain.push(event);
            }
            let readings = |events: &[String]| {
                let text = format!("[{}]", events.join(",\n"));
                let samples = parse(&text, &TraceSelection::default()).unwrap();
                samples
                    .counters
                    .readings()
                    .map(|(name, t, v)| (name.to_string(), t.to_bits(), v.to_bits()))
                    .collect::<Vec<_>>()
            };
            let (plain, broken) = (readings(&plain), readings(&broken));
            assert_eq!(plain, broken, "trial {trial}");
            fast += usize::from(!plain.is_empty());
        }
        let enough = fast > 200 && repeats > 1000;
        assert!(enough, "{fast} trials, {repeats} repeats");
    }

    #[test]
    fn process_and_thread_names_select_even_when_metadata_comes_last() {
        let text = r#"[
            {"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
            {"ph": "X", "name": "k", "pid": 1, "tid": 2, "ts": 0, "dur": 2},
            {"ph": "X", "name": "k", "pid": 2, "tid": 1, "ts": 0, "dur": 4},
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "gpu"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "stream 2"}}
        ]"#;
        let selected = |pid: &str, tid: Option<&str>| {
            let selection = TraceSelection::new(&[], &[], Some(pid.into()), tid.map(Into::into));
            let samples = parse(text, &selection.unwrap()).unwrap();
            samples.kernel("k").unwrap()
        };
        assert_eq!(selected("gpu", None), [1000.0, 2000.0]);
        assert_eq!(selected("1", Some("stream 2")), [2000.0]);
    }

    /// Hands out one byte per read, so every value straddles buffer refills.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !out.is_empty() => {
                    out[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn events_split_across_reads_with_tricky_strings() {
        let text = r#"{"otherData": {"a": [1, {"b": "}]"}]}, "traceEvents": [
            {"ph": "X", "name": "k \"q\" {[", "ts": 1, "dur": 1.5, "args": {"s": "\\"}},
            {"ph": "X", "name": "k \"q\" {[", "ts": 2, "dur": 2}
        ], "displayTimeUnit": "ns", "tail": 12}"#;
        let all = kernels_named(".");
        let whole = parse(text, &all).unwrap();
        let trickled = read_trace(Trickle(text.as_bytes()), &all).unwrap();
        assert_eq!(whole, trickled);
        assert_eq!(whole.kernel("k \"q\" {[").unwrap(), [1500.0, 2000.0]);
    }

    #[test]
    fn bad_documents_get_clear_errors() {
        let err = |text: &str| parse(text, &TraceSelection::default()).unwrap_err();
        let e = err(",{\"ph\":\"M\"}");
        assert!(e.starts_with("not a Chrome trace"), "{e}");
        let e = err("[{\"ph\": \"X\" \"name\": 1}]");
        let invalid = "invalid trace event at byte 1 (after 0 events)";
        assert!(e.starts_with(invalid), "{e}");
        let e = err("{\"displayTimeUnit\": \"s\", \"traceEvents\": []}");
        assert_contains!(e, "`displayTimeUnit` is `s`");
        let e = err("{\"traceEvents\": 5}");
        assert_contains!(e, "`traceEvents` at byte 16 is not an array");
        assert_contains!(err("[] x"), "unexpected `x` at byte 3");
    }
}
