//! Escaping of untrusted text (benchmark names, units, messages, IR) for the formats reports
//! are written in. One module, so that every renderer escapes the same way and none has to
//! reach into another for it.

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

/// Escapes text for HTML and XML content and attribute values; control characters that XML
/// 1.0 forbids are dropped, and `@` cannot mention anyone when the text is pasted on.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if let Some(e) = entity(c) {
            out.push_str(e);
            continue;
        }
        match c {
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
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
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}
