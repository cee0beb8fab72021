//! Per-function costs from a callgrind output file (`callgrind.out`), self and inclusive.
//!
//! `capture::valgrind` reads a profile's totals; a profiled regression needs them per function.
//! The file is read directly (no `callgrind_annotate`, which needs Perl and prints a layout made
//! for people): `fl=`/`fn=` name the current file and function (with name compression, `(id)
//! name` once and `(id)` after), cost lines add to the current function's self cost, and the
//! cost line after each `calls=` line is the inclusive cost of that call, added to the caller's
//! inclusive cost on top of its self cost (as `callgrind_annotate --inclusive=yes` does, so a
//! recursive call counts again). Positions may be relative (`+3`, `-2`, `*`).

use std::collections::BTreeMap;
use std::path::Path;

/// A line that is not callgrind output: the same error as the totals reader's.
pub use crate::capture::valgrind::ParseError;
use crate::capture::valgrind::{err, parse_number as number};

/// One function's costs, in the order of the file's `events:` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Function {
    pub name: String,
    /// The file of its `fl=` record (`???` when the binary has no debug information: none).
    pub file: Option<String>,
    /// The first source line with a cost in its own file (none without line tables).
    pub line: Option<u64>,
    pub self_cost: Vec<i64>,
    pub inclusive: Vec<i64>,
}

/// A callgrind file read per function.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Functions {
    pub events: Vec<String>,
    /// Keyed by (file, name): two static functions of one name in two files stay apart.
    pub functions: BTreeMap<(String, String), Function>,
}

impl Functions {
    /// Index of an event by name.
    pub fn event(&self, name: &str) -> Option<usize> {
        self.events.iter().position(|e| e == name)
    }
}

/// Reads a callgrind file; the error names the file and the line.
pub fn read(path: &Path) -> Result<Functions, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read callgrind output `{}`: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("`{}`: callgrind output, {e}", path.display()))
}

/// Name tables of the compressed records: files (`fl fi fe cfi cfl`), functions (`fn cfn`).
#[derive(Default)]
struct Names {
    files: BTreeMap<String, String>,
    functions: BTreeMap<String, String>,
}

/// `(id) name` defines, `(id)` refers, a plain `name` is itself.
fn resolve(
    table: &mut BTreeMap<String, String>,
    value: &str,
    n: usize,
) -> Result<String, ParseError> {
    let value = value.trim();
    let Some(rest) = value.strip_prefix('(') else {
        return Ok(value.to_string());
    };
    let close = rest.find(')').ok_or_else(|| {
        err(
            n,
            format!("`({}` opens a name id but does not close it", rest),
        )
    })?;
    let id = &rest[..close];
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        // Uncompressed (`--compress-strings=no`): a name that starts with a parenthesis.
        return Ok(value.to_string());
    }
    let name = rest[close + 1..].trim();
    if name.is_empty() {
        table
            .get(id)
            .cloned()
            .ok_or_else(|| err(n, format!("name id ({id}) is used before it is defined")))
    } else {
        table.insert(id.to_string(), name.to_string());
        Ok(name.to_string())
    }
}

/// Parses callgrind text per function.
pub fn parse(text: &str) -> Result<Functions, ParseError> {
    let mut names = Names::default();
    let mut events: Option<Vec<String>> = None;
    let mut positions: Vec<String> = vec!["line".to_string()];
    let mut previous: Vec<i64> = vec![0];
    let mut file = String::from("???");
    let mut current_file = String::from("???");
    let mut current: Option<(String, String)> = None;
    let mut functions: BTreeMap<(String, String), Function> = BTreeMap::new();
    // After `calls=`: the next cost line is that call's inclusive cost.
    let mut call_pending = false;
    // After `jump=`/`jcnd=`: the next line is a position without costs.
    let mut jump_pending = false;
    for (idx, raw) in text.lines().enumerate() {
        let n = idx + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.as_bytes()[0];
        if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
            let Some(ev) = &events else {
                return Err(err(n, "a cost line comes before the `events:` line"));
            };
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let npos = positions.len().min(tokens.len());
            for (i, t) in tokens[..npos].iter().enumerate() {
                let value = match t.as_bytes()[0] {
                    b'*' => previous[i],
                    b'+' => {
                        previous[i]
                            + number(&t[1..])
                                .ok_or_else(|| err(n, format!("`{t}` is not a position")))?
                    }
                    b'-' => {
                        previous[i]
                            - number(&t[1..])
                                .ok_or_else(|| err(n, format!("`{t}` is not a position")))?
                    }
                    _ => number(t).ok_or_else(|| err(n, format!("`{t}` is not a position")))?,
                };
                previous[i] = value;
            }
            if jump_pending {
                jump_pending = false;
                continue;
            }
            let costs = &tokens[npos..];
            if costs.len() > ev.len() {
                let (numbers, events) = (costs.len(), ev.len());
                let why = format!("a cost line has {numbers} numbers for {events} events");
                return Err(err(n, why));
            }
            let mut values = vec![0i64; ev.len()];
            for (i, t) in costs.iter().enumerate() {
                values[i] = number(t)
                    .ok_or_else(|| err(n, format!("`{t}` in a cost line is not a count")))?;
            }
            let key = current
                .clone()
                .ok_or_else(|| err(n, "a cost line comes before any `fn=` record"))?;
            let f = functions
                .get_mut(&key)
                .expect("the current function is entered");
            let add = |acc: &mut Vec<i64>| acc.iter_mut().zip(&values).for_each(|(a, v)| *a += v);
            add(&mut f.inclusive);
            if call_pending {
                call_pending = false;
            } else {
                add(&mut f.self_cost);
                let line_at = positions
                    .iter()
                    .position(|p| p == "line")
                    .map(|i| previous[i]);
                if f.line.is_none()
                    && current_file == file
                    && let Some(l) = line_at
                    && l > 0
                {
                    f.line = Some(l as u64);
                }
            }
            continue;
        }
        let Some(end) = line.find([':', '=']) else {
            let start: String = line.chars().take(60).collect();
            let why = format!("`{start}` is neither a header, a name record nor a cost line");
            return Err(err(n, why));
        };
        let (key, value) = (&line[..end], &line[end + 1..]);
        match key {
            "events" => {
                let names: Vec<String> = value.split_whitespace().map(str::to_string).collect();
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
                for f in functions.values_mut() {
                    f.self_cost.resize(names.len(), 0);
                    f.inclusive.resize(names.len(), 0);
                }
                events = Some(names);
            }
            "positions" => {
                positions = value.split_whitespace().map(str::to_string).collect();
                if positions.is_empty() {
                    positions.push("line".into());
                }
                previous = vec![0; positions.len()];
            }
            "fl" => {
                file = resolve(&mut names.files, value, n)?;
                current_file = file.clone();
            }
            "fi" | "fe" => current_file = resolve(&mut names.files, value, n)?,
            "cfi" | "cfl" => {
                resolve(&mut names.files, value, n)?;
            }
            "fn" => {
                let name = resolve(&mut names.functions, value, n)?;
                // A new function starts in its own file.
                current_file = file.clone();
                let k = (file.clone(), name.clone());
                let width = events.as_ref().map_or(0, Vec::len);
                functions.entry(k.clone()).or_insert_with(|| Function {
                    name,
                    file: (file != "???").then(|| file.clone()),
                    line: None,
                    self_cost: vec![0; width],
                    inclusive: vec![0; width],
                });
                current = Some(k);
            }
            "cfn" => {
                resolve(&mut names.functions, value, n)?;
            }
            "calls" => call_pending = true,
            "jump" | "jcnd" => jump_pending = true,
            // ob/cob (objects), headers (version, creator, cmd, desc, summary, totals, part…).
            _ => {}
        }
    }
    let events = events.ok_or_else(|| err(0, "no `events:` line; this is not callgrind output"))?;
    Ok(Functions { events, functions })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in callgrind's own layout: compressed names, relative positions, a call.
    const FILE: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npositions: line\nevents: Ir D1mr D1mw\nsummary: 130 7 1\n\nob=(1) /bin/mm\nfl=(1) src/mm.rs\nfn=(1) mm::main\n10 5\n+1 5\ncfn=(2) mm::naive\ncalls=1 40\n12 100 6 1\nfl=(2) ???\nfn=(3) memcpy\n0 3\nfl=(1)\nfn=(2)\n40 20 2\nfi=(3) src/inline.rs\n7 70 4 1\nfe=(1)\n-1 7\n+2 3 1\n";

    #[test]
    fn self_and_inclusive_costs_per_function() {
        let p = parse(FILE).unwrap();
        assert_eq!(p.events, vec!["Ir", "D1mr", "D1mw"]);
        let f = |file: &str, name: &str| p.functions[&(file.to_string(), name.to_string())].clone();
        let main = f("src/mm.rs", "mm::main");
        assert_eq!(main.self_cost, vec![10, 0, 0]);
        assert_eq!(main.inclusive, vec![110, 6, 1]);
        assert_eq!(main.line, Some(10));
        let naive = f("src/mm.rs", "mm::naive");
        // 20 + 70 (inlined from src/inline.rs) + 7 + 3.
        assert_eq!(naive.self_cost, vec![100, 7, 1]);
        assert_eq!(naive.inclusive, naive.self_cost);
        let not_inlined = "the inlined file's line 7 is not the function's";
        assert_eq!(naive.line, Some(40), "{not_inlined}");
        let memcpy = f("???", "memcpy");
        assert_eq!(memcpy.file, None);
        assert_eq!(memcpy.line, None);
        assert_eq!(memcpy.self_cost, vec![3, 0, 0]);
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = parse("events: Ir\nfn=(4)\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: name id (4) is used before it is defined"
        );
        let e = parse("events: Ir\n1 2\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_contains!(e.message, "before any `fn=`");
        let e = parse("events: Ir\nfn=f\n1 2 3\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 3: a cost line has 2 numbers for 1 events"
        );
        let e = parse("hello world\n").unwrap_err();
        assert_contains!(e.message, "neither a header");
        assert_contains!(parse("fn=f\n").unwrap_err().message, "no `events:`");
        let p = parse("events: Ir\nfn=(below main)\n1 4\n").unwrap();
        let below_main = ("???".to_string(), "(below main)".to_string());
        assert!(p.functions.contains_key(&below_main));
    }
}
