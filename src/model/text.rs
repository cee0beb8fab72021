//! Showing untrusted text on a terminal or in a log.
//!
//! Names, units, messages and stderr tails come from benchmarks and results files. Printed raw,
//! a control character could clear the screen, overwrite a line, or start a line that a CI
//! runner takes as a workflow command (`::error …`). Here such characters become visible
//! escapes; the format-specific escaping (Markdown, HTML) is in `render::escape` and builds on
//! the same character classes.

/// Characters that change how a line displays without being seen: C0/C1 controls, DEL, and the
/// bidirectional embeddings, overrides and isolates ("Trojan Source").
pub(crate) fn is_invisible_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Pushes the visible escape of an invisible control (`\n`, `\u{1b}`) onto `out`.
pub(crate) fn push_visible(out: &mut String, c: char) {
    out.extend(c.escape_debug());
}

/// Text for a terminal or a log line: every control character, newlines included, and every
/// bidirectional override is shown as its escape (`\n`, `\u{1b}`), so untrusted text cannot
/// move the cursor, recolour the screen, or start a line that a CI runner reads as a command.
pub fn escape_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_invisible_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_invisible_control(c) {
            push_visible(&mut out, c);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text of several lines for a terminal or a CI log, such as an error with its causes: line
/// breaks are kept, every other control character is escaped as in [`escape_terminal`], and a
/// line that would begin with `::` (a GitHub Actions workflow command) shows its first colon as
/// `\u{3a}`, so a name holding `\n::error …` cannot forge an annotation.
pub fn escape_log(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let line = escape_terminal(line);
            let body = line.trim_start();
            if body.starts_with("::") {
                let indent = &line[..line.len() - body.len()];
                format!("{indent}\\u{{3a}}{}", &body[1..])
            } else {
                line.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `1 benchmark`, `2 benchmarks`: a count with its noun in the right number.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The candidate closest to `name`, if it is close: at most two edits, or a prefix.
pub fn did_you_mean<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(name, c), *c))
        .filter(|(d, c)| *d <= 2 || c.starts_with(name) || name.starts_with(c))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_become_visible() {
        assert_eq!(
            escape_terminal("a\n::error::x\u{1b}[2J\u{7}\r\u{202e}b\tc"),
            "a\\n::error::x\\u{1b}[2J\\u{7}\\r\\u{202e}b\\tc"
        );
        assert!(matches!(
            escape_terminal("plain µs ✓"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn log_text_keeps_its_lines_but_no_line_is_a_workflow_command() {
        assert_eq!(
            escape_log("benchmark `k\n  ::error title=x::y` failed\n\u{1b}[31mred"),
            "benchmark `k\n  \\u{3a}:error title=x::y` failed\n\\u{1b}[31mred"
        );
    }
}
