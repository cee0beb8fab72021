//! Large uncompressed traces read by several threads from guessed event boundaries, merged
//! in file order so that the result is the one a single reader gets ([`read_parallel`] says
//! how a wrong guess is caught).

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

use super::aggregate::Aggregator;
use super::io::read_up_to;
use super::read_trace;
use super::walk::{Input, Start, Walked};
use crate::import::trace::{TraceSamples, TraceSelection};

/// Files at least this large are read by several threads.
pub(super) const PARALLEL_MIN_BYTES: u64 = 32 << 20;

/// Reads an uncompressed trace with `workers` threads. The file is cut at guessed event
/// boundaries, each worker walks from its cut, and the first worker walks from the start.
/// A guess is only trusted once the worker before it lands exactly on it (an event ends
/// right there): then the two aggregates are merged in order. A worker that does not land
/// on the next cut (it was inside a string, say) reads on past it, and a later worker
/// whose piece cannot stand alone (an end event whose begin came before its cut) is
/// redone in order; either way the result is the one a single reader gets.
pub(super) fn read_parallel(
    path: &Path,
    size: u64,
    workers: usize,
    selection: &TraceSelection,
) -> Result<TraceSamples, String> {
    let open = || File::open(path).map_err(|e| format!("cannot open: {e}"));
    let mut file = open()?;
    let object = match first_byte(&mut file)? {
        Some(b'{') => true,
        Some(b'[') => false,
        // Not a trace: let the plain reader say why.
        _ => return read_trace(open()?, selection),
    };
    let cuts = guess_cuts(&mut file, size, workers)?;
    if cuts.is_empty() {
        return read_trace(open()?, selection);
    }
    let walk_from = |index: usize| -> Result<(Aggregator<'_>, Walked), String> {
        let start = if index == 0 { 0 } else { cuts[index - 1] };
        let mut file = open()?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| format!("cannot seek to byte {start}: {e}"))?;
        let later_cuts = cuts[index..].to_vec();
        let mut agg = Aggregator::new(selection, index > 0);
        let from = if index == 0 {
            Start::Document
        } else {
            Start::InsideEvents { object }
        };
        let walked = Input::new(file, start, later_cuts).walk(&mut agg, from)?;
        Ok((agg, walked))
    };
    let results: Vec<Result<(Aggregator<'_>, Walked), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=cuts.len())
            .map(|i| scope.spawn(move || walk_from(i)))
            .collect();
        let mut results = vec![walk_from(0)];
        for handle in handles {
            results.push(
                handle
                    .join()
                    .unwrap_or_else(|_| Err("a reader thread failed".into())),
            );
        }
        results
    });
    let mut results = results.into_iter().map(Some).collect::<Vec<_>>();
    let (mut total, mut walked) = results[0].take().expect("the first walk")?;
    while let Walked::Cut(cut) = walked {
        let index = cuts.iter().position(|&c| c == cut).expect("a known cut") + 1;
        match results[index].take().expect("each walk is taken once") {
            Ok((piece, next)) if !piece.orphan_end => {
                total.absorb(piece);
                walked = next;
            }
            // The piece failed or needs what came before it: read it again in order.
            _ => {
                let mut file = open()?;
                file.seek(SeekFrom::Start(cut))
                    .map_err(|e| format!("cannot seek to byte {cut}: {e}"))?;
                let mut input = Input::new(file, cut, cuts[index..].to_vec());
                walked = input.walk(&mut total, Start::InsideEvents { object })?;
            }
        }
    }
    total.finish()
}

/// The first byte that is not whitespace.
fn first_byte(file: &mut File) -> Result<Option<u8>, String> {
    let mut head = [0u8; 4096];
    let n = read_up_to(file, &mut head).map_err(|e| format!("read failed: {e}"))?;
    Ok(head[..n]
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t')))
}

/// For each worker after the first, the start of an event near its share of the file: the
/// `{` of the first `}` `,` `{` (whitespace allowed) after the share's first byte. Only a
/// guess: the pattern may sit inside a string or a nested array, which the walk detects.
fn guess_cuts(file: &mut File, size: u64, workers: usize) -> Result<Vec<u64>, String> {
    const WINDOW: usize = 1 << 16;
    let mut window = vec![0u8; WINDOW];
    let mut cuts: Vec<u64> = Vec::new();
    for i in 1..workers as u64 {
        let from = size * i / workers as u64;
        file.seek(SeekFrom::Start(from))
            .map_err(|e| format!("cannot seek to byte {from}: {e}"))?;
        let n = read_up_to(file, &mut window).map_err(|e| format!("read failed: {e}"))?;
        let Some(at) = event_boundary(&window[..n]) else {
            continue;
        };
        let cut = from + at as u64;
        if cuts.last().is_none_or(|&last| cut > last) {
            cuts.push(cut);
        }
    }
    Ok(cuts)
}

/// The offset of the `{` in the first `}`, `,`, `{` sequence (whitespace between allowed).
fn event_boundary(bytes: &[u8]) -> Option<usize> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
    let mut from = 0;
    while let Some(k) = memchr::memchr(b'}', &bytes[from..]) {
        let close = from + k;
        let mut i = close + 1;
        while bytes.get(i).is_some_and(is_space) {
            i += 1;
        }
        if bytes.get(i) == Some(&b',') {
            i += 1;
            while bytes.get(i).is_some_and(is_space) {
                i += 1;
            }
            if bytes.get(i) == Some(&b'{') {
                return Some(i);
            }
        }
        from = close + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::tests::kernels_named;
    use super::*;

    /// A trace with what makes a cut hard: strings and nested arrays holding `},{`, begin
    /// and end events far apart, counters, metadata at the end, keys after the events.
    fn awkward_trace(events: usize, object: bool, seed: u64) -> String {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut parts = Vec::new();
        let mut open_begins = 0;
        for i in 0..events {
            let ts = i as f64 * 1.5;
            let event = match rng.u8(..10) {
                0 => format!(
                    r#"{{"ph": "X", "cat": "kernel", "name": "k}},{{{}", "pid": 1, "tid": 2, "ts": {ts}, "dur": {}}}"#,
                    i % 3,
                    rng.u32(1..50)
                ),
                1 => format!(
                    r#"{{"ph": "X", "cat": "cpu_op", "name": "op", "ts": {ts}, "dur": 2, "args": {{"list": [{{"a": 1}},{{"b": "}}, {{"}}]}}}}"#
                ),
                2 => {
                    open_begins += 1;
                    format!(
                        r#"{{"ph": "B", "cat": "kernel", "name": "span{}", "pid": 1, "tid": 3, "ts": {ts}}}"#,
                        i % 4
                    )
                }
                3 if open_begins > 0 => {
                    open_begins -= 1;
                    format!(r#"{{"ph": "E", "pid": 1, "tid": 3, "ts": {ts}}}"#)
                }
                4 => format!(
                    r#"{{"ph": "C", "name": "util", "pid": 1, "ts": {ts}, "args": {{"busy": {}, "note": "x"}}}}"#,
                    rng.u32(0..100)
                ),
                5 => format!(
                    r#"{{"ph": "X", "name": "xla", "pid": 2, "tid": 1, "ts": {ts}, "dur": 3, "args": {{"hlo_op": "fusion.{}"}}}}"#,
                    i % 5
                ),
                _ => format!(
                    r#"{{"ph":"X","cat":"kernel","name":"gemm","pid":1,"tid":{},"ts":{ts},"dur":{}.25}}"#,
                    rng.u8(1..3),
                    rng.u32(1..900)
                ),
            };
            parts.push(event);
        }
        parts.push(
            r#"{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "gpu"}}"#.into(),
        );
        let events = parts.join(",\n");
        if object {
            format!(
                r#"{{"schemaVersion": 1, "traceEvents": [{events}], "displayTimeUnit": "ns", "otherData": {{"list": [{{"a": 1}},{{"b": 2}}]}}}}"#
            )
        } else {
            format!("[{events}]")
        }
    }

    #[test]
    fn parallel_reading_gives_what_a_single_reader_gives() {
        let dir = tempfile::tempdir().unwrap();
        let selections = [
            TraceSelection::default(),
            kernels_named("."),
            TraceSelection::new(&[], &[], Some("gpu".into()), None).unwrap(),
        ];
        for (seed, object) in [(1, true), (2, false), (3, true)] {
            let text = awkward_trace(3000, object, seed);
            let path = dir.path().join(format!("trace{seed}.json"));
            std::fs::write(&path, &text).unwrap();
            for selection in &selections {
                let single = read_trace(text.as_bytes(), selection).unwrap();
                assert!(!single.is_empty());
                for workers in 2..=16 {
                    let parallel =
                        read_parallel(&path, text.len() as u64, workers, selection).unwrap();
                    assert_eq!(parallel, single, "seed {seed}, {workers} workers");
                }
            }
        }
    }

    #[test]
    fn parallel_reading_survives_cuts_inside_strings_and_reports_errors_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // The middle of the file is one long name full of `},{`: every guess there is wrong.
        let trap = "}, {".repeat(5000);
        let text = format!(
            r#"[{{"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 1}}, {{"ph": "X", "cat": "kernel", "name": "{trap}", "ts": 2, "dur": 2}}, {{"ph": "X", "cat": "kernel", "name": "a", "ts": 3, "dur": 3}}]"#
        );
        let path = dir.path().join("trap.json");
        std::fs::write(&path, &text).unwrap();
        let selection = TraceSelection::default();
        let single = read_trace(text.as_bytes(), &selection).unwrap();
        assert_eq!(single.kernel("a").unwrap(), [1000.0, 3000.0]);
        for workers in 2..=6 {
            let parallel = read_parallel(&path, text.len() as u64, workers, &selection);
            assert_eq!(parallel.unwrap(), single);
        }
        // An error in a later piece is found by the in-order reread, with its event count.
        let mut broken = awkward_trace(2000, true, 4);
        let at = broken.len() * 3 / 4;
        let at = at + broken[at..].find("\"ts\"").unwrap();
        broken.replace_range(at..at + 4, "\"ts\" 5");
        let path = dir.path().join("broken.json");
        std::fs::write(&path, &broken).unwrap();
        let single = read_trace(broken.as_bytes(), &selection).unwrap_err();
        assert!(single.contains("expected `:` after the key"), "{single}");
        for workers in 2..=6 {
            let parallel =
                read_parallel(&path, broken.len() as u64, workers, &selection).unwrap_err();
            assert_eq!(parallel, single);
        }
    }
}
