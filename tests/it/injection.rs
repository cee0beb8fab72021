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
