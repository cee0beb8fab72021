//! Hostile text through every output path. Any string a report holds may have come from a
//! benchmark, a results file or a report artifact that a fork made (the two-workflow pattern
//! posts a downloaded report with a write token), so the test puts a payload into every free-text
//! field the report format has, found by trying each string of the JSON report in turn and
//! keeping the change wherever the report still reads back; new fields are covered without
//! editing this file. Every format must then neutralise it.

use kgate::model::report::Report;
use kgate::render::{self, Exporter, Format};
use serde_json::Value;
use std::collections::BTreeSet;

/// A mention, an image, a closing `<details>`, a table cell break, a forged workflow command,
/// a terminal escape that clears the screen, and a live script; then what GitHub makes live
/// once it has rendered the Markdown: a team mention, issue references, links and an address,
/// and another job's hidden comment marker.
const PAYLOAD: &str = "@octocat <img src=x onerror=alert(1)> </details> | x\n::error title=forged::pwned \u{1b}[2J\u{7} <script>alert(1)</script> cc @org/team, see org/repo#1 and #123 (GH-45); https://evil.example/x www.evil.example ops@evil.example <!-- kgate:gpu -->";

/// Appends the payload to every string leaf where the report still deserializes.
fn poison(value: &mut Value, root: &Value, path: &mut Vec<PathStep>, hits: &mut usize) {
    match value {
        Value::String(_) => {
            let mut candidate = root.clone();
            let leaf = locate(&mut candidate, path);
            if let Value::String(s) = leaf {
                s.push_str(PAYLOAD);
            }
            if serde_json::from_value::<Report>(candidate).is_ok() {
                if let Value::String(s) = value {
                    s.push_str(PAYLOAD);
                }
                *hits += 1;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(PathStep::Index(i));
                poison(item, root, path, hits);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                path.push(PathStep::Key(k.clone()));
                poison(item, root, path, hits);
                path.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn locate<'a>(mut v: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    for step in path {
        v = match step {
            PathStep::Key(k) => &mut v[k.as_str()],
            PathStep::Index(i) => &mut v[*i],
        };
    }
    v
}

fn hostile_report() -> Report {
    let clean = serde_json::to_value(crate::reports::fixture()).unwrap();
    let mut poisoned = clean.clone();
    let mut hits = 0;
    poison(&mut poisoned, &clean, &mut Vec::new(), &mut hits);
    assert!(
        hits > 30,
        "only {hits} free-text fields were found to poison"
    );
    serde_json::from_value(poisoned).unwrap()
}

/// Markdown with its fenced code blocks removed: inside a fence, text is shown as text.
fn outside_fences(markdown: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in markdown.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            None if ticks.len() >= 3 => fence = Some(ticks),
            Some(open) if ticks.len() >= open.len() && line.trim_end() == ticks => fence = None,
            Some(_) => {}
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// No control character but newline (and tab) anywhere, and no line a CI runner would take as
/// a workflow command.
fn assert_no_control(format: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(bad.is_empty(), "{format}: raw control characters {bad:?}");
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with("::"),
            "{format}: a line reads as a workflow command: {line:?}"
        );
    }
}

/// Unescaped `|` characters of a table row.
fn cell_breaks(line: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
    }
    n
}

#[test]
fn markdown_neutralises_every_field() {
    let text = render::exporter(Format::Markdown, false).render(&hostile_report());
    assert_no_control("markdown", &text);
    let prose = outside_fences(&text);
    for raw in ["@octocat", "<img", "<script", "onerror=alert(1)>"] {
        assert!(
            !prose.contains(raw),
            "markdown: raw `{raw}` outside a code fence"
        );
    }
    assert_eq!(
        prose.matches("<details").count(),
        prose.matches("</details>").count(),
        "markdown: a <details> block was closed early"
    );
    let mut header = None;
    for line in prose.lines().filter(|l| l.starts_with('|')) {
        let n = cell_breaks(line);
        match header {
            None => header = Some(n),
            Some(h) if line.starts_with("| benchmark") || line.starts_with("|---") => {
                header = Some(h.max(n))
            }
            Some(h) => assert!(
                n <= h,
                "markdown: a row has {n} cell breaks, its header {h}: {line}"
            ),
        }
    }
}

#[test]
fn a_limited_report_and_the_pr_comment_neutralise_every_field() {
    let report = hostile_report();
    let limited = render::render_markdown_limited(&report, 20_000);
    // What `kgate comment` posts from a downloaded report artifact.
    let comment = kgate::github::body::comment_body(&report, "default", None);
    for (name, text) in [("limited markdown", limited), ("comment", comment)] {
        let prose = outside_fences(&text);
        assert_no_control(name, &text);
        for raw in ["@octocat", "<img", "<script"] {
            assert!(!prose.contains(raw), "{name}: raw `{raw}`");
        }
        assert_eq!(
            prose.matches("<details").count(),
            prose.matches("</details>").count(),
            "{name}: a <details> block was closed early"
        );
    }
}

/// The page with its inline SVG plots removed.
fn without_svg(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("</svg>")
            .map_or("", |end| &rest[start + end + 6..]);
    }
    out.push_str(rest);
    out
}

#[test]
fn html_and_junit_neutralise_every_field() {
    for format in [Format::Html, Format::Junit] {
        let text = render::exporter(format, false).render(&hostile_report());
        let name = format!("{format:?}");
        assert_no_control(&name, &text);
        for raw in ["<img", "<script"] {
            assert!(!text.contains(raw), "{name}: raw `{raw}`");
        }
        assert_eq!(
            text.matches("<details").count(),
            text.matches("</details>").count(),
            "{name}: a <details> block was closed early"
        );
        // A mention matters where text is pasted on as Markdown; a plot's picture is not.
        assert!(
            !without_svg(&text).contains("@octocat"),
            "{name}: raw mention outside a plot"
        );
    }
}

#[test]
fn the_terminal_table_shows_control_characters_escaped() {
    let text = render::exporter(Format::Table, false).render(&hostile_report());
    assert_no_control("table", &text);
    assert!(
        text.contains("\\u{1b}[2J") || text.contains("\\x1b[2J") || text.contains("\\e[2J"),
        "{text}"
    );
}

/// Every kgate Markdown text a pull request or a job summary shows of the hostile report: the
/// report, the report fitted to a limit, the sticky comment and the check run's summary.
fn posted_markdown() -> Vec<(&'static str, String)> {
    let report = hostile_report();
    vec![
        (
            "markdown",
            render::exporter(Format::Markdown, false).render(&report),
        ),
        (
            "limited markdown",
            render::render_markdown_limited(&report, 20_000),
        ),
        (
            "comment",
            kgate::github::body::comment_body(&report, "gpu-h100", None),
        ),
        (
            "check run summary",
            kgate::github::body::fit_markdown(
                &report,
                "",
                "",
                "the job summary",
                kgate::github::body::CHECK_SUMMARY_LIMIT_BYTES,
                kgate::github::body::Measure::Bytes,
            ),
        ),
    ]
}

/// `markdown` rendered by cmark-gfm, GitHub's renderer, with GitHub's extensions (raw HTML
/// kept, as GitHub keeps what its sanitizer allows).
fn render_gfm(markdown: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("cmark-gfm")
        .args([
            "--unsafe",
            "--extension",
            "table",
            "--extension",
            "autolink",
        ])
        .args(["--extension", "strikethrough", "--extension", "tagfilter"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let text = markdown.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The text of rendered HTML where GitHub looks for mentions and references: tags and comments
/// removed, character references decoded, and the contents of `<pre>`, `<code>` and `<a>`
/// left out (GitHub reads no mention inside them; links are checked on their own).
fn live_text(html: &str) -> String {
    let mut text = String::new();
    let mut rest = html;
    let mut skipped: Vec<String> = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |e| e + 1);
            let tag = &rest[1..end.saturating_sub(1)];
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if ["pre", "code", "a"].contains(&name.as_str()) {
                if tag.starts_with('/') {
                    skipped.pop();
                } else {
                    skipped.push(name);
                }
            }
            // A tag separates words.
            text.push(' ');
            rest = &rest[end..];
            continue;
        }
        let end = rest.find('<').unwrap_or(rest.len());
        if skipped.is_empty() {
            text.push_str(&decode_references(&rest[..end]));
        }
        rest = &rest[end..];
    }
    text
}

/// HTML text with its character references decoded (`&#64;`, `&#x40;`, `&amp;`).
fn decode_references(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';').filter(|e| *e < 12) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..end];
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            _ => name
                .strip_prefix("#x")
                .or_else(|| name.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A character of a GitHub user, organization, team or repository name.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.".contains(c)
}

#[test]
#[cfg_attr(
    kgate_no_cmark_gfm,
    ignore = "needs cmark-gfm, GitHub's Markdown renderer (Debian's cmark-gfm; .ci/run installs it)"
)]
fn rendered_comments_mention_nobody_reference_no_issue_and_link_nowhere() {
    crate::common::require_tool("cmark-gfm", "cmark-gfm");
    for (name, markdown) in posted_markdown() {
        let html = render_gfm(&markdown);
        // The autolink extension links URLs and addresses as it renders: no link at all, as
        // none of these texts links anywhere without a run URL.
        assert!(!html.contains("<a "), "{name}: a link in {html}");
        let text = live_text(&html);
        let chars: Vec<char> = text.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let around: String = chars[i.saturating_sub(20)..(i + 20).min(chars.len())]
                .iter()
                .collect();
            assert!(
                !(c == '@' && name_char(next)),
                "{name}: a live mention in the rendered text: {around:?}"
            );
            assert!(
                !(c == '#' && (next.is_ascii_digit() || name_char(prev))),
                "{name}: a live issue reference in the rendered text: {around:?}"
            );
        }
        let lower = text.to_ascii_lowercase();
        assert!(
            !lower
                .match_indices("gh-")
                .any(|(at, _)| lower[at + 3..].starts_with(|d: char| d.is_ascii_digit())),
            "{name}: a live GH- reference"
        );
        // What was poisoned is there, only inert.
        assert!(text.contains("org/repo"), "{name}: {text}");
        assert!(text.contains("evil.example"), "{name}");
    }
}

#[test]
fn no_untrusted_text_holds_a_comment_marker() {
    // Another job's marker in a name, an explanation or a diff would let that job's search
    // take this comment for its own: the only `<!--` is kgate's own marker, first.
    for (name, markdown) in posted_markdown() {
        let markers = markdown.matches("<!--").count();
        let own = usize::from(markdown.starts_with("<!-- kgate:"));
        assert_eq!(markers, own, "{name}: a `<!--` kgate did not write");
    }
}

/// What each string of a stored report is set to in turn: lines a CI runner takes as
/// commands from their first character (GitHub's `::…::`, its older `##[…]` form and Azure's
/// `##vso[…]`, one after a space, where wrapping may start a line), a carriage return, an OSC 8
/// hyperlink, a screen clear, a C1 CSI, DEL, the Unicode line and paragraph separators, a
/// byte-order mark, the two non-characters that XML forbids, and a bidirectional override.
const LINE_PAYLOAD: &str = "::add-mask::s ##[error]e\r\n::error::x \u{1b}]8;;https://evil.example\u{7}link\u{1b}]8;;\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{2028}::warning::y\u{2029}##vso[task.complete]z\u{feff}\u{fffe}\u{ffff}\u{202e} ::notice::w";

/// The snapshot fixture with a value in every optional string field as well: a profile with
/// its tool, sides, events, functions and notes, a waiver, and a metric's reason not to gate.
fn full_fixture() -> Report {
    use kgate::model::function_diff::{BenchmarkProfile, FunctionChange, FunctionCost};
    let mut report = crate::reports::fixture();
    let cost = FunctionCost {
        self_ir: 1_000,
        inclusive_ir: 2_000,
        self_d1_misses: Some(10),
        self_ll_misses: Some(1),
    };
    report.benchmarks[0].profile = Some(BenchmarkProfile {
        tool: "callgrind".into(),
        sides: vec!["base".into(), "head".into()],
        events: vec!["Ir".into(), "D1mr".into()],
        functions: vec![FunctionChange {
            function: "matmul::inner".into(),
            file: Some("src/matmul.rs".into()),
            line: Some(12),
            base: Some(cost.clone()),
            head: Some(cost),
            self_ir_change: Some(120),
            inclusive_ir_change: Some(240),
        }],
        functions_left_out: 1,
        notes: vec!["the base side was profiled from its stored binary".into()],
        seconds: 2.5,
    });
    let mut waived = report.benchmarks[0].metrics[0].clone();
    waived.name = "registers".into();
    waived.waived = true;
    waived.waiver = Some("accepted in #123 until the tile change lands".into());
    report.benchmarks[0].metrics.push(waived);
    for b in &mut report.benchmarks {
        for m in b.metrics.iter_mut().filter(|m| !m.gates) {
            m.not_gating = Some("source `reported` may not fail the build".into());
        }
    }
    report
}

/// The JSON paths (`benchmarks[].metrics[].name`) of every free-text field the report's
/// schema has: strings that are not one of a fixed set of words.
fn schema_string_fields(node: &Value, defs: &Value, path: &str, out: &mut BTreeSet<String>) {
    if let Some(name) = node["$ref"].as_str() {
        let def = &defs[name.trim_start_matches("#/$defs/")];
        schema_string_fields(def, defs, path, out);
    }
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        for alt in node[alternatives].as_array().into_iter().flatten() {
            schema_string_fields(alt, defs, path, out);
        }
    }
    let types: Vec<&str> = match &node["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"string") && node.get("enum").is_none() && node.get("const").is_none() {
        out.insert(path.to_string());
    }
    for (key, property) in node["properties"].as_object().into_iter().flatten() {
        schema_string_fields(property, defs, &format!("{path}.{key}"), out);
    }
    if let Some(items) = node.get("items") {
        schema_string_fields(items, defs, &format!("{path}[]"), out);
    }
}

/// The JSON paths of the string leaves of `value`, in the form of [`schema_string_fields`].
fn value_string_fields(value: &Value, path: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::String(_) => {
            out.insert(path.to_string());
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| value_string_fields(item, &format!("{path}[]"), out)),
        Value::Object(map) => map
            .iter()
            .for_each(|(k, item)| value_string_fields(item, &format!("{path}.{k}"), out)),
        _ => {}
    }
}

/// Every string leaf of `value` with its path, in document order.
fn string_leaves(value: &Value, path: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match value {
        Value::String(_) => out.push(path.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::Index(i));
                string_leaves(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push(PathStep::Key(k.clone()));
                string_leaves(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn show_path(path: &[PathStep]) -> String {
    path.iter()
        .map(|s| match s {
            PathStep::Key(k) => format!(".{k}"),
            PathStep::Index(i) => format!("[{i}]"),
        })
        .collect()
}

/// Characters that must never reach a terminal, a log or a page raw: controls but newline and
/// tab, the line and paragraph separators, the byte-order mark, XML's non-characters, and the
/// bidirectional controls.
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{feff}'
                | '\u{fffe}'
                | '\u{ffff}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// What is wrong with `text` as output shown in a CI log: a hidden character, or a line that
/// a runner takes as a command.
fn log_problems(text: &str) -> Vec<String> {
    let mut problems: Vec<String> = text
        .chars()
        .filter(|c| is_hidden(*c))
        .map(|c| format!("raw {c:?}"))
        .collect();
    problems.dedup();
    for line in text.lines() {
        let body = line.trim_start();
        if ["::", "##[", "##vso["].iter().any(|p| body.starts_with(p)) {
            problems.push(format!("a command line: {line:?}"));
        }
    }
    problems
}

/// XML 1.0's `Char` production.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

/// The length of the reference (`&amp;`, `&#10;`) at the start of `rest`, if it is one that
/// stands for an XML character.
fn xml_reference(rest: &str) -> Result<usize, String> {
    let end = rest.find(';').ok_or("`&` without `;`")?;
    let name = &rest[1..end];
    let ok = match name.strip_prefix('#') {
        Some(n) => n
            .strip_prefix('x')
            .map_or_else(
                || n.parse::<u32>().ok(),
                |h| u32::from_str_radix(h, 16).ok(),
            )
            .and_then(char::from_u32)
            .is_some_and(is_xml_char),
        None => ["amp", "lt", "gt", "quot", "apos"].contains(&name),
    };
    ok.then_some(end + 1)
        .ok_or(format!("bad reference `&{name};`"))
}

/// The length of the start tag at the start of `rest` (`<name a="v" …>` or `<name …/>`), its
/// name, and whether it closes itself.
fn xml_start_tag(rest: &str) -> Result<(usize, &str, bool), String> {
    let r = &rest[1..];
    let name_end = r
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .ok_or("open tag")?;
    let name = &r[..name_end];
    let mut j = name_end;
    let mut attrs = BTreeSet::new();
    loop {
        let a = &r[j..];
        let trimmed = a.trim_start();
        j += a.len() - trimmed.len();
        if trimmed.starts_with("/>") {
            return Ok((j + 3, name, true));
        }
        if trimmed.starts_with('>') {
            return Ok((j + 2, name, false));
        }
        let eq = trimmed
            .find('=')
            .ok_or(format!("attribute without value in <{name}>"))?;
        if !attrs.insert(trimmed[..eq].trim()) {
            return Err(format!("repeated attribute in <{name}>"));
        }
        let value = trimmed[eq + 1..].trim_start();
        let quote = value
            .chars()
            .next()
            .filter(|q| *q == '"' || *q == '\'')
            .ok_or(format!("unquoted attribute in <{name}>"))?;
        let close = value[1..]
            .find(quote)
            .ok_or(format!("open attribute in <{name}>"))?;
        let text = &value[1..1 + close];
        if text.contains('<') {
            return Err(format!("`<` in an attribute of <{name}>"));
        }
        for (k, _) in text.match_indices('&') {
            xml_reference(&text[k..])?;
        }
        j += (trimmed.len() - value.len()) + close + 2;
    }
}

/// Why `xml` is not a well-formed XML document (characters, references, quoted attributes,
/// nested tags and one root), if it is not. kgate's tree holds no XML parser; CI's do this.
fn xml_not_well_formed(xml: &str) -> Option<String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    let mut problem = xml
        .chars()
        .find(|c| !is_xml_char(*c))
        .map(|c| format!("{c:?} is not an XML character"));
    while problem.is_none() && i < xml.len() {
        let rest = &xml[i..];
        let step: Result<usize, String> = if let Some(r) = rest.strip_prefix("<?") {
            r.find("?>").map(|e| e + 4).ok_or("open `<?`".into())
        } else if let Some(r) = rest.strip_prefix("<!--") {
            r.find("-->").map(|e| e + 7).ok_or("open comment".into())
        } else if let Some(r) = rest.strip_prefix("<![CDATA[") {
            r.find("]]>").map(|e| e + 12).ok_or("open CDATA".into())
        } else if let Some(r) = rest.strip_prefix("</") {
            match (r.find('>'), stack.pop()) {
                (Some(end), Some(open)) if open == r[..end].trim_end() => Ok(end + 3),
                (end, open) => Err(format!("`</{}` closes {open:?}", &r[..end.unwrap_or(0)])),
            }
        } else if rest.starts_with('<') {
            xml_start_tag(rest).map(|(len, name, empty)| {
                roots += usize::from(stack.is_empty());
                if !empty {
                    stack.push(name);
                }
                len
            })
        } else if rest.starts_with('&') {
            xml_reference(rest)
        } else {
            let next = rest.find(['<', '&']).unwrap_or(rest.len());
            match stack.is_empty() && !rest[..next].trim().is_empty() {
                true => Err(format!("text outside the root: {:?}", &rest[..next])),
                false => Ok(next),
            }
        };
        match step {
            Ok(len) => i += len,
            Err(e) => problem = Some(format!("{e} at byte {i}")),
        }
    }
    problem.or(match (stack.is_empty(), roots) {
        (true, 1) => None,
        (false, _) => Some(format!("unclosed {stack:?}")),
        (true, n) => Some(format!("{n} root elements")),
    })
}

#[test]
fn the_xml_checker_refuses_what_ci_parsers_refuse() {
    assert_eq!(
        xml_not_well_formed("<?xml version=\"1.0\"?>\n<a x=\"1&amp;\"><b/>t&#10;</a>\n"),
        None
    );
    for bad in [
        "<a>\u{fffe}</a>",
        "<a>&#xffff;</a>",
        "<a>&#1;</a>",
        "<a x=\"<\"/>",
        "<a>&bogus;</a>",
        "<a><b></a>",
        "<a/><b/>",
        "<a x=1/>",
    ] {
        assert!(xml_not_well_formed(bad).is_some(), "accepted {bad:?}");
    }
}

/// Every output a stored report is rendered into, by name.
fn every_rendering(report: &Report) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for width in [None, Some(100), Some(30)] {
        for all_metrics in [false, true] {
            let text = render::TableExporter {
                color: false,
                width,
                all_metrics,
            }
            .render(report);
            out.push((format!("table at {width:?} all {all_metrics}"), text));
        }
    }
    for format in [Format::Markdown, Format::Html, Format::Junit, Format::Json] {
        let text = render::exporter(format, false).render(report);
        out.push((format!("{format:?}"), text));
    }
    out.push((
        "limited markdown".into(),
        render::render_markdown_limited(report, 20_000),
    ));
    out.push((
        "comment".into(),
        kgate::github::body::comment_body(report, "default", None),
    ));
    out
}

/// The fixture has a value in every free-text field of the report's schema, so the test below
/// reaches every field, and a field added later fails here until the fixture holds it.
#[test]
fn the_full_fixture_holds_every_string_field_of_the_report_schema() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/report.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut wanted = BTreeSet::new();
    schema_string_fields(&schema, &schema["$defs"], "", &mut wanted);
    let mut held = BTreeSet::new();
    value_string_fields(
        &serde_json::to_value(full_fixture()).unwrap(),
        "",
        &mut held,
    );
    let missing: Vec<&String> = wanted.difference(&held).collect();
    assert!(
        missing.is_empty(),
        "the full fixture has no value for {missing:?}"
    );
    assert!(wanted.len() > 20, "{wanted:?}");
}

/// Each string of a stored report (`kgate report crafted.json`), set in turn to text that
/// starts CI log commands, moves the cursor, links elsewhere or breaks XML, is shown inert in
/// every format: no hidden character raw, no line a runner takes as a command, and JUnit that
/// stays well-formed.
#[test]
fn every_string_field_alone_is_inert_in_every_format() {
    let clean = serde_json::to_value(full_fixture()).unwrap();
    let mut leaves = Vec::new();
    string_leaves(&clean, &mut Vec::new(), &mut leaves);
    let mut failures = Vec::new();
    let mut tried = 0;
    for path in &leaves {
        let mut candidate = clean.clone();
        *locate(&mut candidate, path) = Value::String(LINE_PAYLOAD.into());
        let Ok(report) = serde_json::from_value::<Report>(candidate) else {
            continue;
        };
        tried += 1;
        for (format, text) in every_rendering(&report) {
            let mut problems = log_problems(&text);
            if format == "Junit"
                && let Some(e) = xml_not_well_formed(&text)
            {
                problems.push(format!("not well-formed XML: {e}"));
            }
            if !problems.is_empty() {
                failures.push(format!("{} in {format}: {problems:?}", show_path(path)));
            }
        }
        // The annotations `kgate ci` prints are workflow commands by design: each one line,
        // with nothing hidden in it.
        for line in kgate::cli::commands::github::report_annotations(&report, 10) {
            let hidden: Vec<char> = line.chars().filter(|c| is_hidden(*c)).collect();
            if !hidden.is_empty() || line.contains('\n') {
                failures.push(format!("{} in an annotation: {line:?}", show_path(path)));
            }
        }
    }
    assert!(tried > 40, "only {tried} fields took the payload");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An artifact's diff keeps the lines both sides share as context lines, indented by a space:
/// one that holds a log command stays inert in the Markdown fence and the HTML `<pre>`.
#[test]
fn artifact_context_lines_never_start_a_log_command() {
    let mut report = full_fixture();
    let artifact = &mut report.evidence.as_mut().unwrap().benchmarks[0].artifacts[0];
    let shared = "::add-mask::secret\n##[error]forged\n  ::error::x\n";
    artifact.base = Some(format!("base\n{shared}"));
    artifact.head = Some(format!("head\n{shared}"));
    for (format, text) in every_rendering(&report) {
        let problems = log_problems(&text);
        assert!(problems.is_empty(), "{format}: {problems:?}");
    }
    let markdown = render::exporter(Format::Markdown, false).render(&report);
    assert!(markdown.contains(" \\u{3a}:add-mask::secret"), "{markdown}");
}
