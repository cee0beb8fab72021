//! Two results files read side by side, one benchmark of each held at a time.
//!
//! A comparison pairs each benchmark of the candidate with the baseline's of that name. Read
//! whole, two files of 10,000 benchmarks hold every sample of both runs while only one pair is
//! ever looked at. Here each file is first read for its outline (its keys, and of each
//! benchmark its name, status and looks, the samples skipped), then both are read again
//! together: the baseline on a thread, handing its benchmarks over in file order, the
//! candidate on the caller's, each benchmark paired as it is read. Files written by one suite
//! list their benchmarks in one order, and then no more than one pair is held; a baseline
//! benchmark that comes before its turn is kept until the candidate reaches it, so another
//! order costs memory, never a wrong pair (as do benchmarks only in the baseline, handed over
//! last).
//!
//! What this reading declines ([`Outline::read`] or [`for_each_pair`] returning `None`) is
//! left to [`RunResults::load`] of the whole file, whose errors name what is wrong: a pipe, a
//! file of another version or not as kgate writes it, names written twice, damaged series,
//! and kernel windows read against another benchmark's counters (a trace import), whose
//! readings are lent across benchmarks.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::model::json_array::{self, Split};
use crate::model::results::{BenchmarkResult, Failure, Provenance, RunResults, Status};

/// What a results file holds besides its samples.
#[derive(Debug)]
pub struct Outline {
    /// The file's keys, its benchmarks left out.
    pub header: RunResults,
    /// The benchmarks' names, in file order.
    pub names: Vec<String>,
    /// The benchmarks that failed, with their failure and nothing else.
    pub failed: Vec<BenchmarkResult>,
    /// The look plans of its benchmarks.
    pub looks: crate::stats::inference::RunLooks,
}

/// A benchmark read for the outline: what it does not name is skipped unparsed.
#[derive(Deserialize)]
struct BenchmarkOutline {
    name: String,
    status: Status,
    #[serde(default)]
    failure: Option<Failure>,
    #[serde(default)]
    kernel_windows: Vec<WindowsOutline>,
    #[serde(default)]
    looks: Vec<LookOutline>,
}

#[derive(Deserialize)]
struct WindowsOutline {
    #[serde(default)]
    counters_of: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct LookOutline {
    of: u32,
    #[serde(default)]
    schedule: Option<crate::stats::inference::Schedule>,
}

impl Outline {
    /// The outline of a results file, or `None` where the file is to be read whole (see the
    /// module's documentation).
    pub fn read(path: &Path) -> Option<Outline> {
        if !json_array::rereadable(path) {
            return None;
        }
        let file = std::fs::File::open(path).ok()?;
        let (mut names, mut failed) = (Vec::new(), Vec::new());
        let mut looks = crate::stats::inference::RunLooks::default();
        let mut lends = false;
        let split = json_array::split(
            std::io::BufReader::new(file),
            "benchmarks",
            json_array::as_written,
            |_, b: BenchmarkOutline| {
                lends |= b.kernel_windows.iter().any(|k| k.counters_of.is_some());
                if let Some(l) = b.looks.first() {
                    looks.add(l.schedule, l.of);
                }
                if b.status == Status::Failed {
                    let mut result = BenchmarkResult::new(&b.name, Provenance::default());
                    result.status = b.status;
                    result.failure = b.failure;
                    failed.push(result);
                }
                names.push(b.name);
                Ok::<(), std::convert::Infallible>(())
            },
        );
        let Split::Done(document) = split else {
            return None;
        };
        let header = RunResults::header(document)?;
        let distinct: HashSet<&str> = names.iter().map(String::as_str).collect();
        (!lends && distinct.len() == names.len()).then_some(Outline {
            header,
            names,
            failed,
            looks,
        })
    }

    /// The file's keys with only its failed benchmarks: what is said of failures.
    pub fn failures(&self) -> RunResults {
        RunResults {
            benchmarks: self.failed.clone(),
            ..self.header.clone()
        }
    }
}

/// Hands `each` every benchmark of two files with their outlines: the candidate's in its order
/// with the baseline's of that name (`None` where the baseline has none), then the baseline's
/// that the candidate lacks, in the baseline's order (held until then). A benchmark whose name
/// `whole` refuses comes with its name alone (as its place in the outline gives it), its text
/// not parsed. `None` when either file could not be read this way to its end; `each` may have
/// seen some pairs then.
pub fn for_each_pair(
    (base_path, base): (&Path, &Outline),
    (head_path, head): (&Path, &Outline),
    whole: impl Fn(&str) -> bool + Sync,
    mut each: impl FnMut(&str, Option<BenchmarkResult>, Option<BenchmarkResult>),
) -> Option<()> {
    let in_base: HashSet<&str> = base.names.iter().map(String::as_str).collect();
    let in_head: HashSet<&str> = head.names.iter().map(String::as_str).collect();
    let (base_file, head_file) = (
        std::fs::File::open(base_path).ok()?,
        std::fs::File::open(head_path).ok()?,
    );
    // Enough to keep the baseline's reading ahead of the comparison without holding much.
    const AHEAD: usize = 4;
    let (sender, receiver) = std::sync::mpsc::sync_channel::<BenchmarkResult>(AHEAD);
    std::thread::scope(|scope| {
        let whole = &whole;
        let reader = scope.spawn(move || {
            let split = json_array::split_parsed(
                std::io::BufReader::new(base_file),
                "benchmarks",
                |index, text| parse(text, base.names.get(index)?, whole),
                |_, b: BenchmarkResult| sender.send(b).map_err(|_| ()),
            );
            matches!(split, Split::Done(_))
        });
        let paired = {
            let receiver = receiver;
            // Baseline benchmarks read before the candidate reached them, and those only in
            // the baseline (handed over last, in its order).
            let mut early: HashMap<String, BenchmarkResult> = HashMap::new();
            let mut only_base: Vec<BenchmarkResult> = Vec::new();
            let mut take_base = |name: &str| -> Option<BenchmarkResult> {
                if let Some(b) = early.remove(name) {
                    return Some(b);
                }
                loop {
                    let b = settled(receiver.recv().ok()?, &in_base)?;
                    if b.name == name {
                        return Some(b);
                    } else if in_head.contains(b.name.as_str()) {
                        early.insert(b.name.clone(), b);
                    } else {
                        only_base.push(b);
                    }
                }
            };
            let split = json_array::split_parsed(
                std::io::BufReader::new(head_file),
                "benchmarks",
                |index, text| parse(text, head.names.get(index)?, whole),
                |_, h: BenchmarkResult| {
                    let h = settled(h, &in_head).ok_or(())?;
                    let b = match in_base.contains(h.name.as_str()) {
                        true => Some(take_base(&h.name).ok_or(())?),
                        false => None,
                    };
                    each(&h.name.clone(), b, Some(h));
                    Ok::<(), ()>(())
                },
            );
            if !matches!(split, Split::Done(_)) || !early.is_empty() {
                // The receiver goes, which stops the baseline's reading.
                return None;
            }
            for b in receiver.iter() {
                only_base.push(settled(b, &in_base)?);
            }
            only_base
        };
        let base_done = reader.join().unwrap_or(false);
        if !base_done {
            return None;
        }
        for b in paired {
            each(&b.name.clone(), Some(b), None);
        }
        Some(())
    })
}

/// The benchmark whose text is `text` and whose name the outline read as `name`: read whole,
/// or where `whole` refuses the name, only named, its text left unparsed.
fn parse(text: &[u8], name: &str, whole: impl Fn(&str) -> bool) -> Option<BenchmarkResult> {
    if whole(name) {
        return json_array::parse_value(text, json_array::as_written);
    }
    Some(BenchmarkResult::new(name, Provenance::default()))
}

/// A benchmark as [`RunResults::load`] leaves it, or `None` where its series are damaged (the
/// whole reading names the damage).
fn settled(mut b: BenchmarkResult, names: &HashSet<&str>) -> Option<BenchmarkResult> {
    b.settle();
    b.check_series(|name| names.contains(name)).ok()?;
    Some(b)
}
