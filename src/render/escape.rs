//! Escaping of untrusted text (benchmark names, units, messages, IR) for the formats reports
//! are written in. One module, so that every renderer escapes the same way and none has to
//! reach into another for it.
//!
//! Control characters (a terminal escape that clears the screen, a newline that starts a
//! forged `::error` workflow command, a carriage return that overwrites a line) and the Unicode
//! bidirectional overrides are never passed on raw: every format shows them as visible escapes
//! such as `\u{1b}`, so the reader sees that they were there.

pub use crate::model::text::escape_terminal;
use crate::model::text::{is_invisible_control, push_visible};

/// The entity of a character that HTML (and Markdown, which passes HTML through) must not see
/// raw: markup, attribute quotes, and `@`, which would mention someone on GitHub.
fn entity(c: char) -> Option<&'static str> {
    Some(match c {
        '&' => "&amp;",
        '<' => "&lt;",
        '>' => "&gt;",
        '"' => "&quot;",
        '@' => "&#64;",
        _ => return None,
    })
}

/// Text inside a Markdown code fence: shown verbatim, newlines and tabs kept, other controls
/// made visible.
pub fn escape_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if is_invisible_control(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for HTML and XML content and attribute values; control characters (which XML
/// 1.0 forbids) are shown as visible escapes, and `@` cannot mention anyone when the text is
/// pasted on.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if let Some(e) = entity(c) {
            out.push_str(e);
            continue;
        }
        match c {
            '\'' => out.push_str("&#39;"),
            // A character reference, not a line break: the page reads the same, and text
            // printed to a CI log cannot start a line of its own there.
            '\n' => out.push_str("&#10;"),
            '\t' => out.push(c),
            c if is_invisible_control(c) => push_visible(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// Escapes multi-line text for an HTML `<pre>` block: each line as [`escape_html`], the line
/// breaks kept.
pub fn escape_html_lines(text: &str) -> String {
    text.split('\n')
        .map(escape_html)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Escapes text from the repository for Markdown table cells and prose: HTML-significant
/// characters become entities, Markdown punctuation is backslash-escaped, `@` cannot mention
/// anyone, and newlines cannot break a table row.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if let Some(e) = entity(c) {
            out.push_str(e);
            continue;
        }
        match c {
            '|' => out.push_str("&#124;"),
            '\n' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            // `\u{1b}` with its backslash escaped, so Markdown shows it as written.
            c if is_invisible_control(c) => {
                out.push('\\');
                push_visible(&mut out, c);
            }
            c => out.push(c),
        }
    }
    out
}
