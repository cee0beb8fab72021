//! Hostile text through every output path. Any string a report holds may have come from a
//! benchmark, a results file or a report artifact that a fork made (the two-workflow pattern
//! posts a downloaded report with a write token), so the test puts a payload into every free-text
//! field the report format has, found by trying each string of the JSON report in turn and
//! keeping the change wherever the report still reads back; new fields are covered without
//! editing this file. Every format must then neutralise it.

use kgate::model::report::Report;
use kgate::render::{self, Format};
use serde_json::Value;

/// A mention, an image, a closing `<details>`, a table cell break, a forged workflow command,
/// a terminal escape that clears the screen, and a live script.
const PAYLOAD: &str = "@octocat <img src=x onerror=alert(1)> </details> | x\n::error title=forged::pwned \u{1b}[2J\u{7} <script>alert(1)</script>";

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
