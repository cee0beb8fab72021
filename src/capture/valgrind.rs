//! Valgrind profiles: reading callgrind and cachegrind output files into event totals.
//!
//! Valgrind's cache model counts instructions, data accesses and cache misses exactly and
//! identically on every run, which makes it the one counter source that works on every Linux
//! machine, virtualized CI runners included. Both tools write a line-based format (events line,
//! cost lines, `summary:`/`totals:`); this module reads both, names events the current way
//! (`I2mr` → `ILmr`) and picks the total the way the format specification intends.

use std::collections::BTreeMap;
use std::path::Path;

/// Which Valgrind tool wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Callgrind,
    Cachegrind,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Callgrind => "callgrind",
            Tool::Cachegrind => "cachegrind",
        }
    }
}

/// Where a profile's totals came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsFrom {
    /// The `totals:` line (callgrind; older cachegrind).
    Totals,
    /// The `summary:` line.
    Summary,
    /// Neither line was usable: the sum of all self-cost lines.
    CostLines,
}

/// One parsed profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// `creator:` (callgrind), when present.
    pub creator: Option<String>,
    /// `cmd:`, when present.
    pub command: Option<String>,
    /// Event names in file order, with old names mapped to current ones.
    pub events: Vec<String>,
    /// Total of each event, in `events` order (negative only in `cg_diff` output).
    pub totals: Vec<i64>,
    /// Which line the totals were taken from.
    pub totals_from: TotalsFrom,
    /// The `summary:` line, when present.
    pub summary: Option<Vec<i64>>,
    /// The sum of the self-cost lines (call lines excluded).
    pub cost_line_sum: Vec<i64>,
}

impl Profile {
    /// The total of an event, by current name.
    pub fn total(&self, event: &str) -> Option<i64> {
        let i = self.events.iter().position(|e| e == event)?;
        Some(self.totals[i])
    }

    /// Totals by event name.
    pub fn totals_by_event(&self) -> BTreeMap<String, i64> {
        let totals = self.totals.iter().copied();
        self.events.iter().cloned().zip(totals).collect()
    }
}

/// A line of perf or Valgrind output that could not be read; `line` is 1-based (0 when the
/// problem is the whole file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

pub(crate) fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Current name of an event (Valgrind before 3.6 called the last-level cache `I2`/`D2`).
fn current_event_name(name: &str) -> String {
    match name {
        "I2mr" => "ILmr",
        "D2mr" => "DLmr",
        "D2mw" => "DLmw",
        other => other,
    }
    .to_string()
}

/// A count or position of Valgrind's output: decimal, or hexadecimal with `0x`.
pub(crate) fn parse_number(token: &str) -> Option<i64> {
    match token
        .strip_prefix("0x")
        .or_else(|| token.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => token.parse().ok(),
    }
}

fn parse_costs(rest: &str, events: usize, line: usize, what: &str) -> Result<Vec<i64>, ParseError> {
    let mut out = vec![0i64; events];
    for (i, token) in rest.split_whitespace().enumerate() {
        if i >= events {
            return Err(err!(
                line,
                "`{what}` has more numbers than the {events} events of the `events:` line"
            ));
        }
        out[i] = parse_number(token)
            .ok_or_else(|| err!(line, "`{token}` in `{what}` is not a count"))?;
    }
    Ok(out)
}

/// Reads a profile file; the error names the file.
pub fn read(path: &Path, tool: Tool) -> Result<Profile, String> {
    let read = || -> std::io::Result<String> {
        use std::io::Read;
        let mut text = String::new();
        crate::store::fsutil::open_maybe_gzip(path)?
            .0
            .read_to_string(&mut text)?;
        Ok(text)
    };
    let (shown, tool_name) = (path.display(), tool.as_str());
    let text = read().map_err(|e| format!("cannot read {tool_name} output `{shown}`: {e}"))?;
    parse(&text, tool).map_err(|e| format!("`{shown}`: {tool_name} output, {e}"))
}

/// Parses callgrind or cachegrind text.
pub fn parse(text: &str, tool: Tool) -> Result<Profile, ParseError> {
    let mut creator = None;
    let mut command = None;
    let mut events: Option<Vec<String>> = None;
    let mut summary: Option<Vec<i64>> = None;
    let mut totals_line: Option<Vec<i64>> = None;
    let mut positions = 1usize;
    let mut sum: Vec<i64> = Vec::new();
    let mut after_calls = false;
    for (idx, raw) in text.lines().enumerate() {
        let n = idx + 1;
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = header(trimmed) {
            let value = value.trim();
            match key {
                "version" if tool == Tool::Callgrind && !matches!(value, "0" | "1") => {
                    return Err(err!(
                        n,
                        "unsupported format `version: {value}`; the callgrind format has versions 0 and 1 (is this file from a newer Valgrind, or corrupted?)"
                    ));
                }
                "version" => {}
                "creator" => creator = Some(value.to_string()),
                "cmd" => command = Some(value.to_string()),
                "positions" => {
                    positions = value.split_whitespace().count().max(1);
                }
                "events" => {
                    if events.is_some() && tool == Tool::Cachegrind {
                        return Err(err(n, "a second `events:` line; a cachegrind file has one"));
                    }
                    let names: Vec<String> =
                        value.split_whitespace().map(current_event_name).collect();
                    if names.is_empty() {
                        return Err(err(n, "the `events:` line names no events"));
                    }
                    if let Some(old) = &events
                        && *old != names
                    {
                        return Err(err(
                            n,
                            "a later part names different events; kgate reads files whose parts share one `events:` line",
                        ));
                    }
                    sum.resize(names.len(), 0);
                    events = Some(names);
                }
                "summary" | "totals" => {
                    let ev = events
                        .as_ref()
                        .ok_or_else(|| err!(n, "`{key}:` comes before the `events:` line"))?;
                    let costs = parse_costs(value, ev.len(), n, key)?;
                    let slot = if key == "summary" {
                        &mut summary
                    } else {
                        &mut totals_line
                    };
                    // Several parts: add them up.
                    match slot {
                        Some(acc) => acc.iter_mut().zip(&costs).for_each(|(a, c)| *a += c),
                        None => *slot = Some(costs),
                    }
                }
                "calls" => after_calls = true,
                // Position and name records (fl= fn= ob= cfn= …), descriptions, and the other
                // header lines carry no costs.
                _ => {}
            }
            continue;
        }
        let first = trimmed.as_bytes()[0];
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            let Some(ev) = &events else {
                return Err(err(n, "a cost line comes before the `events:` line"));
            };
            let tokens: Vec<&str> = trimmed.split_whitespace().collect();
            if after_calls {
                // The cost line after `calls=` is the call's inclusive cost, not self cost.
                after_calls = false;
                continue;
            }
            let costs = tokens.get(positions.min(tokens.len())..).unwrap_or(&[]);
            if costs.len() > ev.len() {
                let (numbers, events) = (costs.len(), ev.len());
                let message = format!("a cost line has {numbers} numbers for {events} events");
                return Err(err(n, message));
            }
            for (i, t) in costs.iter().enumerate() {
                let v = parse_number(t)
                    .ok_or_else(|| err!(n, "`{t}` in a cost line is not a count"))?;
                sum[i] += v;
            }
            continue;
        }
        let shown: String = trimmed.chars().take(60).collect();
        let message = format!("`{shown}` is neither a header, a name record nor a cost line");
        return Err(err(n, message));
    }
    let events = events.ok_or_else(|| {
        let tool = tool.as_str();
        err!(0, "no `events:` line; this is not {tool} output")
    })?;
    let usable = |v: &Option<Vec<i64>>| {
        v.as_ref()
            .filter(|v| v.iter().any(|&x| x != 0) || sum.iter().all(|&x| x == 0))
            .cloned()
    };
    let (totals, totals_from) = if let Some(t) = usable(&totals_line) {
        (t, TotalsFrom::Totals)
    } else if let Some(s) = usable(&summary) {
        (s, TotalsFrom::Summary)
    } else {
        (sum.clone(), TotalsFrom::CostLines)
    };
    Ok(Profile {
        creator,
        command,
        events,
        totals,
        totals_from,
        summary,
        cost_line_sum: sum,
    })
}

/// `key: value` headers and `key=value` records.
fn header(line: &str) -> Option<(&str, &str)> {
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    let end = end.unwrap_or(line.len());
    if end == 0 {
        return None;
    }
    let (key, rest) = line.split_at(end);
    if let Some(v) = rest.strip_prefix(':') {
        return Some((key, v));
    }
    rest.strip_prefix('=').map(|v| (key, v))
}

/// The metrics a profile yields: every event total, plus the sums readers want first.
/// Names are Valgrind's (`Ir`, `D1mr`, …); the sums are `D1_misses` (D1mr + D1mw),
/// `LL_misses` (ILmr + DLmr + DLmw), `L1_misses` (I1mr + D1mr + D1mw) and
/// `branch_mispredicts` (Bcm + Bim), each only when its events were collected.
pub fn metrics(profile: &Profile) -> Vec<(String, f64)> {
    let t = profile.totals_by_event();
    let mut out: Vec<(String, f64)> = profile
        .events
        .iter()
        .zip(&profile.totals)
        .map(|(e, v)| (e.clone(), *v as f64))
        .collect();
    let mut sum_of = |name: &str, parts: &[&str]| {
        if parts.iter().all(|p| t.contains_key(*p)) {
            out.push((name.to_string(), parts.iter().map(|p| t[*p] as f64).sum()));
        }
    };
    sum_of("D1_misses", &["D1mr", "D1mw"]);
    sum_of("L1_misses", &["I1mr", "D1mr", "D1mw"]);
    sum_of("LL_misses", &["ILmr", "DLmr", "DLmw"]);
    sum_of("branch_mispredicts", &["Bcm", "Bim"]);
    out
}

/// The arguments that run `argv` under a Valgrind tool with cache (and branch) simulation,
/// writing the profile to `out`.
pub fn wrap(tool: Tool, out: &Path, toggle_collect: Option<&str>, argv: &[String]) -> Vec<String> {
    let tool_option = format!("--tool={}", tool.as_str());
    let valgrind = [
        "valgrind",
        &tool_option,
        "--cache-sim=yes",
        "--branch-sim=yes",
    ];
    let mut v: Vec<String> = valgrind.map(String::from).to_vec();
    match tool {
        Tool::Callgrind => {
            v.push(format!("--callgrind-out-file={}", out.display()));
            if let Some(f) = toggle_collect {
                v.push(format!("--toggle-collect={f}"));
            }
        }
        Tool::Cachegrind => v.push(format!("--cachegrind-out-file={}", out.display())),
    }
    v.extend(argv.iter().cloned());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_lines_calls_and_compression() {
        let text = "# callgrind format\nversion: 1\npositions: instr line\nevents: Ir D1mr I2mr\nfl=(1) a.c\nfn=(2) main\n0x10 3 5 1\n+2 * 2\ncfn=(3) f\ncalls=1 0x20 9\n0x11 4 100 100 100\nfn=(3)\n0x20 9 7\ntotals: 14 1 0\n";
        let p = parse(text, Tool::Callgrind).unwrap();
        assert_eq!(p.events, vec!["Ir", "D1mr", "ILmr"]);
        assert_eq!(p.cost_line_sum, vec![14, 1, 0]);
        assert_eq!(p.totals, vec![14, 1, 0]);
        assert_eq!(p.totals_from, TotalsFrom::Totals);
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = parse("events: Ir\n1 2 3\n", Tool::Cachegrind).unwrap_err();
        let e = e.to_string();
        assert_eq!(e, "line 2: a cost line has 2 numbers for 1 events");
        let e = parse("fn=main\n1 2\n", Tool::Cachegrind).unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("hello world\n", Tool::Callgrind).unwrap_err();
        assert!(e.message.contains("neither a header"), "{e}");
        let e = parse("desc: x\n", Tool::Cachegrind).unwrap_err();
        assert!(e.message.contains("no `events:` line"), "{e}");
    }

    #[test]
    fn wrap_turns_on_cache_and_branch_simulation() {
        let argv = vec!["./mm".to_string(), "--n".to_string(), "64".to_string()];
        let out = Path::new("/t/cg.out");
        let v = wrap(Tool::Callgrind, out, Some("mm::*"), &argv);
        assert_eq!(
            v.join(" "),
            "valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes --callgrind-out-file=/t/cg.out --toggle-collect=mm::* ./mm --n 64"
        );
    }
}
