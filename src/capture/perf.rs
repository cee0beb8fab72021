//! Linux `perf stat` output: CSV (`-x,`), JSON (`-j`) and the human-readable default.
//!
//! perf is the one tool that reads the CPU's own performance-counter registers on Linux, but it
//! encodes "could not measure" in-band (`<not supported>`, `<not counted>`), scales multiplexed
//! counts silently, and formats numbers by locale in its human output. This module turns all
//! three forms into counts that say which of those happened, so that an unavailable counter is
//! never mistaken for a zero. kgate runs perf itself with `LC_ALL=C -x,`; the other forms are
//! for `kgate import perf-stat`.
//!
//! `-x` takes any separator (`-x';'` is the usual choice under a decimal-comma locale, and
//! `-x$'\t'` is common too); the separator is found from the data lines, and with one other
//! than `,` the numbers may carry a decimal comma. With `-r N` perf prints the mean of the N
//! runs and its spread (`( +- 4.29% )`, `0.002961 +- 0.000127 seconds time elapsed`); both
//! are kept.

use std::path::Path;

pub use super::valgrind::ParseError;
use super::valgrind::err;
use crate::model::metric::Source;

/// One counter of one `perf stat` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    /// Event name as perf printed it (`instructions`, `cpu_core/cycles/`, `task-clock`).
    pub event: String,
    /// The (already scaled) value in `unit`; `None` when perf could not count it.
    pub value: Option<f64>,
    /// Unit after normalization: `ns` for clocks, empty for plain counts.
    pub unit: String,
    /// Percentage of the run the counter was scheduled on the PMU; below 100 the value was
    /// extrapolated by perf (multiplexing).
    pub running_pct: Option<f64>,
    /// `not supported` or `not counted` when `value` is `None`.
    pub unavailable: Option<String>,
    /// With `perf stat -r N`: the spread perf states for the mean, in percent of it
    /// (`( +- 4.18% )`, or the `4.18%` field of `-x` output).
    pub spread_pct: Option<f64>,
    /// With `perf stat -r N`: the spread in `unit`, where perf prints it
    /// (`0.002961 +- 0.000127 seconds time elapsed`).
    pub spread: Option<f64>,
}

impl Counter {
    /// A counter line's reading: its value, or why perf could not count it (then no spread).
    fn read(
        event: String,
        unit: String,
        value: Result<f64, String>,
        running_pct: Option<f64>,
        spread_pct: Option<f64>,
    ) -> Counter {
        let unavailable = value.as_ref().err().cloned();
        Counter {
            event,
            value: value.ok(),
            unit,
            running_pct,
            spread_pct: spread_pct.filter(|_| unavailable.is_none()),
            unavailable,
            spread: None,
        }
    }

    /// Whether perf extrapolated the value from part of the run.
    pub fn multiplexed(&self) -> bool {
        self.value.is_some() && self.running_pct.is_some_and(|p| p < 100.0)
    }
}

/// One `perf stat` block (one measured command).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// The command from `Performance counter stats for '…'`, in human output.
    pub command: Option<String>,
    /// `N` of `perf stat -r N`, when the human output's header says `(N runs)`.
    pub runs: Option<u32>,
    /// With `perf stat -I MS`: how many intervals the counters were summed over (one block
    /// for the whole run, not one per interval).
    pub intervals: Option<usize>,
    pub counters: Vec<Counter>,
    /// What the reader says about the file the block came from (lines that are not perf's,
    /// skipped).
    pub notes: Vec<String>,
}

impl Block {
    /// What interval output became, in words for the provenance.
    pub fn interval_note(&self) -> Option<String> {
        let n = self.intervals?;
        Some(format!(
            "perf stat -I output: each counter is the sum of its {n} intervals (an interval perf printed `<not counted>` for counts as 0, the counter idle then)"
        ))
    }

    /// What a counter's stated spread means, in words for the provenance: `task-clock` is
    /// the mean of 5 runs (`perf stat -r 5`), ± 4.18 %.
    pub fn spread_note(&self, counter: &Counter) -> Option<String> {
        let pct = counter.spread_pct?;
        let runs = match self.runs {
            Some(n) => format!("the mean of {n} runs (`perf stat -r {n}`)"),
            None => "the mean of repeated runs (`perf stat -r`)".to_string(),
        };
        let absolute = match counter.spread {
            Some(s) => format!(" ({s} {})", counter.unit),
            None => String::new(),
        };
        Some(format!(
            "perf counter `{}` is {runs}; perf states a spread of ± {pct} %{absolute}",
            counter.event
        ))
    }
}

/// Software events measured by the kernel's clocks and bookkeeping rather than PMU registers.
#[rustfmt::skip]
const SOFTWARE_EVENTS: &[&str] = &[
    "task-clock", "cpu-clock", "duration_time", "user_time", "system_time", "context-switches",
    "cs", "cpu-migrations", "migrations", "page-faults", "faults", "minor-faults", "major-faults",
    "alignment-faults", "emulation-faults", "elapsed_time",
];

/// The trust-ladder source of an event: PMU events are `hardware`; the kernel's software
/// clocks and counts are `timer`.
pub fn source_of(event: &str) -> Source {
    let base = event.split(':').next().unwrap_or(event);
    if SOFTWARE_EVENTS.contains(&base) {
        Source::Timer
    } else {
        Source::Hardware
    }
}

/// Converts a perf unit into kgate's: times to `ns` (with the factor), counts keep theirs.
fn unit_factor(unit: &str) -> (String, f64) {
    match unit {
        "msec" => ("ns".into(), 1e6),
        "usec" => ("ns".into(), 1e3),
        "nsec" | "ns" => ("ns".into(), 1.0),
        "sec" | "seconds" => ("ns".into(), 1e9),
        other => (other.to_string(), 1.0),
    }
}

/// Converts into the canonical unit; times are rounded to whole nanoseconds (perf never prints
/// finer), so `8.557783540 s` is exactly 8557783540 ns.
fn scale(v: f64, factor: f64) -> f64 {
    if factor > 1.0 {
        (v * factor).round()
    } else {
        v * factor
    }
}

/// The arguments that run `argv` under `perf stat`, writing CSV to `out`.
pub fn wrap(events: &[String], out: &Path, argv: &[String]) -> Vec<String> {
    let (out, events) = (out.display().to_string(), events.join(","));
    let perf = ["perf", "stat", "-x,", "-o", &out, "-e", &events, "--"];
    let perf = perf.iter().map(|s| s.to_string());
    perf.chain(argv.iter().cloned()).collect()
}

/// The most bytes of perf stat output read: a real file is a few kilobytes per block, so a
/// larger input is not perf stat output (a device, an endless stream).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a perf stat file in any of its forms; the error names the file.
pub fn read(path: &Path) -> Result<Vec<Block>, String> {
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| format!("cannot read perf stat output `{shown}`: {e}");
    let (file, _gzip) = crate::store::fsutil::open_maybe_gzip(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    let read = file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes);
    read.map_err(cannot)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        let mib = MAX_INPUT_BYTES >> 20;
        return Err(format!(
            "`{shown}`: more than {mib} MiB, which is not perf stat output (perf writes a few kilobytes per run); pass the file `perf stat -o FILE` wrote"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!("`{shown}`: not text (byte {at} is not UTF-8), so not perf stat output; pass the file `perf stat -o FILE` wrote")
    })?;
    parse(&text).map_err(|e| format!("`{shown}`: perf stat output, {e}"))
}

/// Parses perf stat output, detecting the form from its first data line.
pub fn parse(text: &str) -> Result<Vec<Block>, ParseError> {
    let mut lines = text.lines().map(str::trim);
    let first = lines.find(|l| !l.is_empty() && !l.starts_with('#'));
    let blocks = match first {
        None => return Err(err(0, "the file holds no perf stat output")),
        Some(l) if l.starts_with('{') => parse_json(text)?,
        Some(l) if l.starts_with("Performance counter stats") => parse_human(text)?,
        // Human output that a script wrapped in its own lines (a banner per run, comments).
        Some(_)
            if text
                .lines()
                .any(|l| l.trim().starts_with("Performance counter stats for")) =>
        {
            parse_human(text)?
        }
        Some(_) if is_human_interval(text) => {
            let (csv, intervals) = human_interval_lines(text)?;
            sum_intervals(parse_csv(&csv)?, intervals)
        }
        Some(_) => match interval_lines(text) {
            Some((stripped, intervals)) => sum_intervals(parse_csv(&stripped)?, intervals),
            None => parse_csv(text)?,
        },
    };
    if blocks.iter().all(|b| b.counters.is_empty()) {
        return Err(err(0, "no counter lines were found"));
    }
    Ok(blocks)
}

/// `perf stat -I MS -x SEP` output: every data line starts with the interval's end time in
/// seconds and a separator. Returns the text without that field, and how many intervals
/// (distinct times) it held; `None` when the lines are not of that form.
fn interval_lines(text: &str) -> Option<(String, usize)> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    SEPARATORS.into_iter().find_map(|sep| {
        let mut stripped = Vec::with_capacity(lines.len());
        let mut times: Vec<&str> = Vec::new();
        for line in &lines {
            let (time, rest) = line.trim_start().split_once(sep)?;
            let seconds = time.trim();
            // An interval time has a fraction (`0.100173849`); a count never does in `-x,`.
            if !(seconds.contains('.') && seconds.parse::<f64>().is_ok_and(|t| t >= 0.0)) {
                return None;
            }
            if times.last() != Some(&seconds) {
                times.push(seconds);
            }
            stripped.push(rest);
        }
        (!stripped.is_empty() && fits(&stripped, sep)).then(|| (stripped.join("\n"), times.len()))
    })
}

/// Whether this is the human-readable form of `perf stat -I`: its column header
/// (`#           time             counts unit events`) comes before the data lines.
fn is_human_interval(text: &str) -> bool {
    text.lines().any(|l| {
        let words: Vec<&str> = l.trim_start_matches('#').split_whitespace().collect();
        l.trim_start().starts_with('#')
            && words.first() == Some(&"time")
            && words.contains(&"counts")
    })
}

/// The human-readable `perf stat -I` lines (`TIME VALUE [UNIT] EVENT  # comment`) as `-x;`
/// lines without the time, and how many intervals they held. A line that is not of that form
/// is an error naming it.
fn human_interval_lines(text: &str) -> Result<(String, usize), ParseError> {
    let mut out = Vec::new();
    let mut times: Vec<String> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let bad = || {
            err!(
                idx + 1,
                "`{}` is not a line of `perf stat -I` output (TIME VALUE UNIT EVENT); `-x,` output reads more reliably",
                raw.trim()
            )
        };
        let (time, rest) = tokens.split_first().ok_or_else(bad)?;
        if !time.contains('.') || time.replace(',', ".").parse::<f64>().is_err() {
            return Err(bad());
        }
        let (value, rest) = match rest {
            [first, second, rest @ ..] if first.starts_with('<') && second.ends_with('>') => {
                (format!("{first} {second}"), rest)
            }
            [value, rest @ ..] => (value.to_string(), rest),
            [] => return Err(bad()),
        };
        let (unit, event) = match rest {
            [event] => ("", *event),
            [unit, event] => (*unit, *event),
            _ => return Err(bad()),
        };
        if times.last() != Some(&time.to_string()) {
            times.push(time.to_string());
        }
        out.push(format!("{value};{unit};{event}"));
    }
    if out.is_empty() {
        return Err(err(0, "the `perf stat -I` output holds no interval lines"));
    }
    Ok((out.join("\n"), times.len()))
}

/// The blocks of interval output (one per interval) as one block: each counter's values
/// summed; `<not counted>` in an interval is 0 there (perf prints it for an interval in which
/// the counter never ran), and a counter counted in no interval stays unavailable.
fn sum_intervals(blocks: Vec<Block>, intervals: usize) -> Vec<Block> {
    let mut total = Block {
        intervals: Some(intervals),
        ..Block::default()
    };
    for block in blocks {
        for c in block.counters {
            match total.counters.iter_mut().find(|t| t.event == c.event) {
                None => total.counters.push(c),
                Some(t) => {
                    if let Some(v) = c.value {
                        t.value = Some(t.value.unwrap_or(0.0) + v);
                        t.unavailable = None;
                        t.running_pct = match (t.running_pct, c.running_pct) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                }
            }
        }
    }
    vec![total]
}

/// Pushes a counter, starting a new block when the event repeats (perf output concatenated).
fn push(blocks: &mut Vec<Block>, counter: Counter) {
    let start_new = blocks
        .last()
        .is_none_or(|b| b.counters.iter().any(|c| c.event == counter.event));
    if start_new {
        blocks.push(Block::default());
    }
    let block = blocks.last_mut().expect("pushed above");
    block.counters.push(counter);
}

fn unavailable_marker(value: &str) -> Option<String> {
    let v = value.trim().strip_prefix('<')?;
    v.strip_suffix('>').map(str::to_string)
}

/// Separators `perf stat -x` is given in practice, in the order they are tried: perf takes
/// any string, but these are the ones that do not occur inside its fields.
const SEPARATORS: [&str; 6] = [",", ";", "\t", "|", ":", " "];

/// Whether `field` is a counter value as perf writes it with separator `sep`: a number (with
/// a decimal comma when the separator is not a comma), a `<not counted>` marker, or empty.
fn is_value(field: &str, sep: &str) -> bool {
    let f = field.trim();
    f.is_empty() || unavailable_marker(f).is_some() || csv_number(f, sep).is_some()
}

/// A number of `-x` output: with a separator other than `,` a comma is the decimal mark.
fn csv_number(field: &str, sep: &str) -> Option<f64> {
    let f = field.trim();
    if sep != "," && f.contains(',') {
        f.replace(',', ".").parse().ok()
    } else {
        f.parse().ok()
    }
}

/// Whether every data line reads as `VALUE<sep>UNIT<sep>EVENT…` with separator `sep`.
fn fits(lines: &[&str], sep: &str) -> bool {
    lines.iter().all(|line| {
        let fields: Vec<&str> = line.split(sep).collect();
        if fields.len() < 3 {
            return false;
        }
        if fields[0].trim().is_empty() && fields[2].trim().is_empty() {
            return true; // a metric-only continuation line
        }
        let unit_ok = fields[1]
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '/' || c == '%');
        let event = fields[2].trim();
        is_value(fields[0], sep)
            && unit_ok
            && event.chars().any(|c| c.is_ascii_alphabetic())
            && !event.contains(char::is_whitespace)
    })
}

/// The separator of `-x` output, found from its data lines.
fn separator(text: &str) -> Option<&'static str> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    SEPARATORS
        .into_iter()
        .find(|sep| fits(&lines, sep))
        .or_else(|| {
            // No separator reads every line: the one that reads most, so that the error
            // names the line that does not fit.
            SEPARATORS
                .into_iter()
                .map(|sep| (lines.iter().filter(|l| fits(&[l], sep)).count(), sep))
                .filter(|(count, _)| *count > 0)
                .max_by_key(|(count, _)| *count)
                .map(|(_, sep)| sep)
        })
}

fn parse_csv(text: &str) -> Result<Vec<Block>, ParseError> {
    let Some(sep) = separator(text) else {
        let (n, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| !l.trim().is_empty() && !l.trim().starts_with('#'))
            .map(|(i, l)| (i + 1, l.trim()))
            .unwrap_or((0, ""));
        let second = line.split(',').nth(1).map(str::trim);
        let hint = if second.is_some_and(|f| f.starts_with(|c: char| c.is_ascii_digit())) {
            "; a number with a decimal comma (`1,41,msec`) means `perf stat -x,` ran under a decimal-comma locale, which makes the fields ambiguous: run perf with LC_ALL=C, or give it another separator (`-x';'`)"
        } else {
            "; pass the file `perf stat -o FILE` wrote"
        };
        return Err(err!(
            n,
            "`{line}` is not a line of `perf stat -x` output (VALUE, UNIT, EVENT, … joined by one separator such as `,`, `;` or a tab), nor `-j` JSON or the human-readable output{hint}"
        ));
    };
    let shown = if sep == "\t" { "\\t" } else { sep };
    let mut blocks = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let n = idx + 1;
        let line = raw.trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(sep).collect();
        if fields.len() < 3 {
            return Err(err!(
                n,
                "`{line}` is not a `perf stat -x{shown}` line (value{shown}unit{shown}event{shown}…)"
            ));
        }
        // Metric-only continuation lines have empty value and event fields.
        if fields[0].trim().is_empty() && fields[2].trim().is_empty() {
            continue;
        }
        let event = fields[2].trim().to_string();
        let mut rest = &fields[3..];
        // `-r N` adds a variance field ending in `%` after the event.
        let mut spread_pct = None;
        if let Some(v) = rest.first().and_then(|f| f.trim().strip_suffix('%')) {
            spread_pct =
                Some(csv_number(v, sep).ok_or_else(|| {
                    err!(n, "the `-r` spread `{v}%` of `{event}` is not a number")
                })?);
            rest = &rest[1..];
        }
        // run time, percentage, metric value, metric unit: more fields means a decimal comma.
        if rest.len() > 4 {
            return Err(err!(
                n,
                "`{line}` has {} fields, more than `perf stat -x{shown}` writes; with `-x,` a decimal comma (`100,00`) splits numbers: run perf with LC_ALL=C, or give it another separator (`-x';'`)",
                fields.len()
            ));
        }
        let running_pct = match rest.get(1).map(|s| s.trim()).filter(|s| !s.is_empty()) {
            Some(p) => Some(csv_number(p, sep).ok_or_else(|| {
                err!(n, "running percentage `{p}` is not a number (with `-x,` a decimal comma means perf ran under a non-C locale: run it with LC_ALL=C, or use `-x';'`)")
            })?),
            None => None,
        };
        let (unit, factor) = unit_factor(fields[1].trim());
        let value = match unavailable_marker(fields[0]) {
            Some(why) => Err(why),
            None => Ok(scale(
                csv_number(fields[0], sep)
                    .ok_or_else(|| err!(n, "counter value `{}` is not a number", fields[0]))?,
                factor,
            )),
        };
        let counter = Counter::read(event, unit, value, running_pct, spread_pct);
        push(&mut blocks, counter);
    }
    Ok(blocks)
}

fn parse_json(text: &str) -> Result<Vec<Block>, ParseError> {
    let mut blocks = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let n = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // Released perf versions wrote `"pcnt-running" : 100.00, }`: drop the trailing comma.
        let cleaned = line.replace(", }", " }").replace(",}", "}");
        let v: serde_json::Value =
            serde_json::from_str(&cleaned).map_err(|e| err!(n, "not a JSON object: {e}"))?;
        let Some(event) = v.get("event").and_then(|e| e.as_str()) else {
            continue; // metric-only line
        };
        let number = |key: &str| -> Option<f64> {
            match v.get(key)? {
                serde_json::Value::Number(x) => x.as_f64(),
                serde_json::Value::String(s) => s.trim().parse().ok(),
                _ => None,
            }
        };
        let raw_value = v
            .get("counter-value")
            .ok_or_else(|| err!(n, "event `{event}` has no `counter-value`"))?;
        let unit_raw = v.get("unit").and_then(|u| u.as_str()).unwrap_or("");
        let (unit, factor) = unit_factor(unit_raw);
        let marker = raw_value.as_str().and_then(unavailable_marker);
        let value = match marker {
            Some(why) => Err(why),
            None => Ok(scale(
                number("counter-value")
                    .ok_or_else(|| err!(n, "`counter-value` of `{event}` is not a number"))?,
                factor,
            )),
        };
        // `-r N`: `"variance" : 4.18`, the same percentage as `( +- 4.18% )`.
        let (running_pct, spread_pct) = (number("pcnt-running"), number("variance"));
        let counter = Counter::read(event.to_string(), unit, value, running_pct, spread_pct);
        push(&mut blocks, counter);
    }
    Ok(blocks)
}

/// The decimal separator of human output, which follows perf's locale. The elapsed-time line
/// always has a fractional part (`1,101976138 seconds time elapsed` under de_DE), so it decides;
/// without one, a number holding both separators does (the later one is the decimal mark).
fn decimal_separator(text: &str) -> char {
    for line in text.lines() {
        if let Some((num, _)) = line.trim().split_once(" seconds time elapsed") {
            // `0,0125244 +- 0,0000604` with `-r`: the mean decides.
            let num = num.split_whitespace().next().unwrap_or("");
            return if num.contains(',') && !num.contains('.') {
                ','
            } else {
                '.'
            };
        }
    }
    for token in text.split_whitespace() {
        if let (Some(d), Some(c)) = (token.rfind('.'), token.rfind(','))
            && token.chars().next().is_some_and(|ch| ch.is_ascii_digit())
        {
            return if c > d { ',' } else { '.' };
        }
    }
    '.'
}

/// A locale-formatted number: grouping separators dropped, the decimal mark made a point.
fn parse_localized(token: &str, decimal: char) -> Option<f64> {
    let group = if decimal == ',' { '.' } else { ',' };
    let cleaned: String = token
        .chars()
        .filter(|&c| c != group && c != '\u{a0}' && c != '\u{202f}')
        .map(|c| if c == decimal { '.' } else { c })
        .collect();
    cleaned.parse().ok()
}

/// The command and the run count of `Performance counter stats for 'CMD' (5 runs):`.
fn header_command(rest: &str) -> (String, Option<u32>) {
    let rest = rest.trim().trim_end_matches(':').trim();
    let (command, runs) = match rest.rsplit_once(" (") {
        Some((command, tail)) if tail.ends_with(" runs)") => (
            command.trim(),
            tail.trim_end_matches(" runs)").trim().parse().ok(),
        ),
        _ => (rest, None),
    };
    (command.trim_matches('\'').to_string(), runs)
}

/// The parenthesized columns of a human-output line: the running percentage (`(54.00%)`) and,
/// with `-r N`, the spread of the mean (`( +- 4.18% )`).
fn parenthesized(
    line: &str,
    decimal: char,
    n: usize,
) -> Result<(Option<f64>, Option<f64>), ParseError> {
    let mut running = None;
    let mut spread = None;
    // Parentheses after the `#` comment or the counter: `(` never occurs in a value.
    let mut rest = line;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let inner = rest[open + 1..open + close].trim();
        rest = &rest[open + close + 1..];
        let Some(number) = inner.strip_suffix('%') else {
            continue; // `(5 runs)` and the like
        };
        let (slot, number) = match number.strip_prefix("+-") {
            Some(v) => (&mut spread, v.trim()),
            None => (&mut running, number.trim()),
        };
        let v = parse_localized(number, decimal);
        *slot =
            Some(v.ok_or_else(|| not_localized(n, &format!("`({inner})`: `{number}`"), decimal))?);
    }
    Ok((running, spread))
}

/// Human output: one block per `Performance counter stats for` header, each read in its own
/// locale (a file may append blocks from machines with different ones). A line that is not
/// perf's (a script's banner, a comment, perf's NMI-watchdog advice) is skipped, and the
/// blocks say how many were and which came first.
fn parse_human(text: &str) -> Result<Vec<Block>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim().starts_with("Performance counter stats for"))
        .map(|(i, _)| i)
        .collect();
    let mut foreign: Vec<(usize, &str)> = Vec::new();
    let skippable = |line: &str| line.is_empty() || line.starts_with('#') || line == "---";
    let first = starts.first().copied().unwrap_or(lines.len());
    for (idx, raw) in lines[..first].iter().enumerate() {
        if !skippable(raw.trim()) {
            foreign.push((idx + 1, raw.trim()));
        }
    }
    let mut blocks: Vec<Block> = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let decimal = decimal_separator(&lines[start..end].join("\n"));
        let header = lines[start].trim();
        let header = header.strip_prefix("Performance counter stats for");
        let (command, runs) = header_command(header.unwrap_or(""));
        let mut block = Block {
            command: Some(command),
            runs,
            ..Block::default()
        };
        for (idx, raw) in lines.iter().enumerate().take(end).skip(start + 1) {
            let line = raw.trim();
            if skippable(line) {
                continue;
            }
            match human_line(line, decimal, idx + 1) {
                Ok(counter) => block.counters.push(counter),
                Err(_) => foreign.push((idx + 1, line)),
            }
        }
        blocks.push(block);
    }
    if let Some((n, line)) = foreign.first() {
        let lines = crate::model::text::count(foreign.len(), "line", "lines");
        let are = if foreign.len() == 1 { "is" } else { "are" };
        let line: String = line.chars().take(60).collect();
        let note = format!(
            "skipped {lines} that {are} not perf stat output (the first, line {n}: `{line}`); each `Performance counter stats for` block was read in its own locale"
        );
        for b in &mut blocks {
            b.notes.push(note.clone());
        }
    }
    Ok(blocks)
}

/// One line of a human-output block: a counter, an unavailable counter or a time line; an
/// error for any other line.
fn human_line(line: &str, decimal: char, n: usize) -> Result<Counter, ParseError> {
    let (running_pct, spread_pct) = parenthesized(line, decimal, n)?;
    // `18.005087828 seconds time elapsed` / `… seconds user` / `… seconds sys`, and with
    // `-r N` `0.002961 +- 0.000127 seconds time elapsed  ( +- 4.29% )`.
    if let Some((num, what)) = line.split_once(" seconds ") {
        let what = what.split('(').next().unwrap_or(what);
        let event = match what.trim() {
            "time elapsed" => "elapsed_time",
            "user" => "user_time",
            "sys" => "system_time",
            other => {
                return Err(err!(
                    n,
                    "unknown time line `seconds {other}`; perf writes `seconds time elapsed`, `seconds user` and `seconds sys`"
                ));
            }
        };
        let (mean, spread) = match num.split_once("+-") {
            Some((mean, spread)) => (mean.trim(), Some(spread.trim())),
            None => (num.trim(), None),
        };
        let number = |text: &str| {
            parse_localized(text, decimal)
                .ok_or_else(|| not_localized(n, &format!("`{text}`"), decimal))
        };
        let v = number(mean)?;
        let spread = spread.map(number).transpose()?;
        return Ok(Counter {
            event: event.to_string(),
            value: Some(scale(v, 1e9)),
            unit: "ns".into(),
            running_pct: None,
            unavailable: None,
            spread_pct,
            spread: spread.map(|s| scale(s, 1e9)),
        });
    }
    let (body, _comment) = line.split_once('#').unwrap_or((line, ""));
    let body = body.split('(').next().unwrap_or(body).trim();
    if let Some(rest) = body.strip_prefix('<') {
        let split = rest.split_once('>');
        let (why, event) = split.ok_or_else(|| err!(n, "`{body}`: unclosed `<`"))?;
        let event = event.split_whitespace().next().unwrap_or("");
        if event.is_empty() {
            return Err(err!(n, "`{body}` names no event"));
        }
        let why = Err(why.to_string());
        let counter = Counter::read(event.into(), String::new(), why, running_pct, None);
        return Ok(counter);
    }
    let tokens: Vec<&str> = body.split_whitespace().collect();
    let (value, unit, event) = match tokens.as_slice() {
        [v, e] => (*v, "", *e),
        [v, u, e] => (*v, *u, *e),
        _ => {
            let message = format!("`{body}` is not a `VALUE [UNIT] EVENT` counter line");
            return Err(err(n, message));
        }
    };
    let v = parse_localized(value, decimal)
        .ok_or_else(|| not_localized(n, &format!("`{value}`"), decimal))?;
    let (unit, factor) = unit_factor(unit);
    let value = Ok(scale(v, factor));
    let counter = Counter::read(event.into(), unit, value, running_pct, spread_pct);
    Ok(counter)
}

/// The error of line `n`: `what` is not a number in the file's locale.
fn not_localized(n: usize, what: &str, decimal: char) -> ParseError {
    err!(
        n,
        "{what} is not a number in this file's locale (decimal mark `{decimal}`)"
    )
}

/// What to tell the user when perf could not count an event.
pub fn unavailable_hint(event: &str, why: &str) -> String {
    if why == "not supported" && source_of(event) == Source::Hardware {
        format!(
            "perf could not count `{event}` ({why}): this machine exposes no hardware performance counters to perf (usual on virtual machines and CI runners). Check `perf stat -e {event} true` and /proc/sys/kernel/perf_event_paranoid, or gate on the deterministic `cachegrind`/`callgrind` captures instead"
        )
    } else {
        format!(
            "perf could not count `{event}` ({why}); the event may not exist on this CPU or was never scheduled (see `perf list`)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_values_units_multiplexing_and_unavailable() {
        let text = "# started on Mon\n\n1.20,msec,task-clock:u,1204272,100.00,0.697,CPUs utilized\n,,,,,0.5,stalled\n256500230,,cpu_atom/cycles/,8695757391,54.00,0.008,GHz\n<not supported>,,instructions,0,100.00,,\n<not counted>,,cycles:u,0,0.00,,\n1.43,msec,cpu-clock,19.25%,1704923,100.00,0.674,CPUs utilized\n";
        let b = parse(text).unwrap();
        assert_eq!(b.len(), 1);
        let c = &b[0].counters;
        assert_eq!(c.len(), 5);
        assert_eq!(c[0].value, Some(1_200_000.0));
        assert_eq!(c[0].unit, "ns");
        assert!(!c[0].multiplexed());
        assert_eq!(c[1].value, Some(256_500_230.0));
        assert_eq!(c[1].running_pct, Some(54.0));
        assert!(c[1].multiplexed());
        assert_eq!(c[2].value, None);
        assert_eq!(c[2].unavailable.as_deref(), Some("not supported"));
        assert_eq!(c[3].unavailable.as_deref(), Some("not counted"));
        assert_eq!(c[4].value, Some(1_430_000.0));
        assert_eq!(c[4].running_pct, Some(100.0));
        assert_eq!(source_of("task-clock:u"), Source::Timer);
        assert_eq!(source_of("cpu_core/cycles/"), Source::Hardware);
    }

    #[test]
    fn json_lines_with_perf_quirks() {
        let text = "{\"counter-value\" : \"225904.823297\", \"unit\" : \"msec\", \"event\" : \"cpu-clock\", \"event-runtime\" : 225904323425, \"pcnt-running\" : 100.00, \"metric-value\" : \"224.456872\", \"metric-unit\" : \"CPUs utilized\"}\n{\"metric-value\" : 1.0, \"metric-unit\" : \"x\"}\n{\"counter-value\" : \"<not supported>\", \"unit\" : \"\", \"event\" : \"instructions\", \"event-runtime\" : 0, \"pcnt-running\" : 100.00, }\n";
        let b = parse(text).unwrap();
        let c = &b[0].counters;
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].value, Some(225_904_823_297.0));
        assert_eq!(c[1].value, None);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("abc,,instructions,1,100.00,,\n").unwrap_err();
        let not_perf =
            "line 1: `abc,,instructions,1,100.00,,` is not a line of `perf stat -x` output";
        assert!(e.to_string().starts_with(not_perf), "{e}");
        let e = parse("1,,instructions,1,100,00,,\n").unwrap_err();
        assert_contains!(e.message, "LC_ALL=C");
        let e = parse("\n# x\n").unwrap_err();
        assert_eq!(e.to_string(), "line 0: the file holds no perf stat output");
    }

    #[test]
    fn human_output_in_two_locales() {
        let de = " Performance counter stats for 'x':\n\n     3.642.649.330      cpu_atom/cycles/   #    3,308 GHz   (0,68%)\n          1.101,01 msec task-clock   #    0,999 CPUs utilized\n  <not counted>      cpu_atom/LLC-loads/   (0,00%)\n\n       1,101976138 seconds time elapsed\n";
        let b = parse(de).unwrap();
        let c = &b[0].counters;
        assert_eq!(c[0].value, Some(3_642_649_330.0));
        assert_eq!(c[0].running_pct, Some(0.68));
        assert_eq!(c[1].value, Some(1_101_010_000.0));
        assert_eq!(c[2].unavailable.as_deref(), Some("not counted"));
        assert_eq!(c[3].event, "elapsed_time");
        assert_eq!(c[3].value, Some(1_101_976_138.0));
    }
}
