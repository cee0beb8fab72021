//! Escaping of untrusted text (benchmark names, units, messages, IR) for the formats reports
//! are written in. One module, so that every renderer escapes the same way and none has to
//! reach into another for it.
//!
//! Control characters (a terminal escape that clears the screen, a newline that starts a
//! forged `::error` workflow command, a carriage return that overwrites a line) and the Unicode
//! bidirectional overrides are never passed on raw: every format shows them as visible escapes
//! such as `\u{1b}`, so the reader sees that they were there. A word that begins as a CI log
//! command (`::error::…`, `##[error]`) has its first character escaped in every format, so
//! that no line of the output, however it is wrapped or printed to a log, is one.

pub use crate::model::text::escape_terminal;
use crate::model::text::{chars_marking_commands, is_invisible_control, push_visible};

/// The zero-width joiner, as a character reference: invisible where the text is shown, but it
/// stands between `@` and a name, `#` and a number, `://` and its scheme, so that GitHub reads
/// no mention, reference or link there.
const JOINER: &str = "&#8205;";

/// Whether `text` ends with `suffix`, ASCII letters in either case.
fn ends_with_ignoring_case(text: &str, suffix: &str) -> bool {
    text.len() >= suffix.len()
        && text.is_char_boundary(text.len() - suffix.len())
        && text[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Where the character `c` at byte `at` of `text` needs a [`JOINER`] (before it, after it) so
/// that GitHub's rendered text keeps it inert. GitHub makes text live after rendering the
/// Markdown: `@octocat` and `@org/team` mention (and notify) someone, `#1`, `org/repo#1` and
/// `GH-1` reference an issue (and leave a link in it), and the renderer's autolink extension
/// links `https://…`, `www.…` and `user@host` addresses. An HTML entity or a backslash escape
/// does not stop any of them: they are read after entities are decoded.
fn joiners(text: &str, at: usize, c: char) -> (bool, bool) {
    let before = &text[..at];
    let after = &text[at + c.len_utf8()..];
    match c {
        '@' => (false, true),
        '#' => (true, true),
        ':' if after.starts_with("//") => (false, true),
        '.' if ends_with_ignoring_case(before, "www") => (true, false),
        '-' if ends_with_ignoring_case(before, "gh")
            && after.starts_with(|d: char| d.is_ascii_digit()) =>
        {
            (false, true)
        }
        _ => (false, false),
    }
}

/// Escapes `text` one character at a time with `each`, putting [`JOINER`]s where GitHub would
/// otherwise make the rendered text live ([`joiners`]).
fn escape_inert(text: &str, mut each: impl FnMut(&mut String, char)) -> String {
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        let (before, after) = joiners(text, at, c);
        if before {
            out.push_str(JOINER);
        }
        each(&mut out, c);
        if after {
            out.push_str(JOINER);
        }
    }
    out
}

/// Breaks every `<!--` in text that is shown verbatim (a code block or span) with a zero-width
/// joiner, so that untrusted text never holds the opening of kgate's hidden marker.
fn break_comment_openings(text: &str) -> String {
    text.replace("<!--", "<\u{200d}!--")
}

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
/// made visible, and `<!--` broken by a zero-width joiner (kgate's hidden marker opens so).
/// GitHub reads no mention, reference or link inside a code block.
pub fn escape_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (c, command) in chars_marking_commands(text) {
        match c {
            '\n' | '\t' => out.push(c),
            c if is_invisible_control(c) => push_visible(&mut out, c),
            // A code block shows text as written: the visible escape, as for controls.
            c if command => push_visible_char(&mut out, c),
            c => out.push(c),
        }
    }
    break_comment_openings(&out)
}

/// Text as an inline Markdown code span: shown verbatim (nothing inside one is read as
/// markup, a mention, a reference or a link), fenced by a run of backticks longer than any in
/// the text, on one line, controls made visible and `<!--` broken as in [`escape_code`].
pub fn code_span(text: &str) -> String {
    let mut body = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if is_invisible_control(c) => push_visible(&mut body, c),
            c => body.push(c),
        }
    }
    let body = break_comment_openings(&body);
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    // A space on each side keeps a backtick at either end out of the fence; Markdown strips
    // one such space from each side.
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// `\u{3a}` for `:`: the visible escape of a printable character.
fn push_visible_char(out: &mut String, c: char) {
    out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
}

/// The character reference of the first character of a log command: the page reads the same.
fn command_reference(c: char) -> &'static str {
    match c {
        ':' => "&#58;",
        _ => "&#35;",
    }
}

/// Escapes text for HTML and XML content and attribute values; control characters (which XML
/// 1.0 forbids) are shown as visible escapes, and `@` cannot mention anyone when the text is
/// pasted on.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (c, command) in chars_marking_commands(text) {
        if command {
            out.push_str(command_reference(c));
            continue;
        }
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

/// Escapes text for HTML inside a Markdown document that GitHub shows (a `<summary>`, a
/// `<code>` element): as [`escape_html`], and inert once GitHub has rendered it (no mention,
/// issue reference or link; see `joiners`).
pub fn escape_markdown_html(text: &str) -> String {
    escape_inert_marking(text, |out, c, command| {
        if command {
            out.push_str(command_reference(c));
        } else {
            out.push_str(&escape_html(c.encode_utf8(&mut [0; 4])));
        }
    })
}

/// [`escape_inert`], telling `each` also whether the character begins a word that a CI log
/// reads as a command (`::error`, `##[error]`).
fn escape_inert_marking(text: &str, mut each: impl FnMut(&mut String, char, bool)) -> String {
    let commands: Vec<bool> = chars_marking_commands(text).map(|(_, c)| c).collect();
    let mut at = 0;
    escape_inert(text, |out, c| {
        let command = commands.get(at).copied().unwrap_or(false);
        at += 1;
        each(out, c, command)
    })
}

/// Escapes multi-line text for an HTML `<pre>` block: each line as [`escape_html`] (a line
/// that begins as a log command, indented or not, included), the line breaks kept.
pub fn escape_html_lines(text: &str) -> String {
    let lines: Vec<String> = text.split('\n').map(escape_html).collect();
    lines.join("\n")
}

/// Escapes text from the repository for Markdown table cells and prose: HTML-significant
/// characters become entities, Markdown punctuation is backslash-escaped, newlines cannot
/// break a table row, and once GitHub has rendered it the text mentions nobody, references no
/// issue and links nowhere (see `joiners`).
pub fn escape_markdown(text: &str) -> String {
    escape_inert_marking(text, |out, c, command| {
        if command {
            out.push_str(command_reference(c));
            return;
        }
        if let Some(e) = entity(c) {
            out.push_str(e);
            return;
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
                push_visible(out, c);
            }
            c => out.push(c),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_references_and_links_get_a_joiner_where_github_reads_them() {
        for (text, escaped) in [
            ("@octocat", "&#64;&#8205;octocat"),
            (
                "org/repo#1 #2",
                "org/repo&#8205;\\#&#8205;1 &#8205;\\#&#8205;2",
            ),
            ("GH-45 gh-x", "GH-&#8205;45 gh-x"),
            (
                "https://x.example www.x.example a:b",
                "https:&#8205;//x.example www&#8205;.x.example a:b",
            ),
        ] {
            assert_eq!(escape_markdown(text), escaped);
        }
        let html = "&lt;b&gt;&#64;&#8205;team&lt;/b&gt; org/repo&#8205;#&#8205;1";
        assert_eq!(escape_markdown_html("<b>@team</b> org/repo#1"), html);
        // Plain names pass as they were.
        assert_eq!(escape_markdown_html("matmul-fp16.v2"), "matmul-fp16.v2");
    }

    #[test]
    fn verbatim_text_never_opens_a_comment() {
        let code = escape_code("+<!-- kgate:gpu -->");
        assert_eq!(code, "+<\u{200d}!-- kgate:gpu -->");
        for (text, span) in [
            ("bench-gpu", "`bench-gpu`"),
            ("a`b", "``a`b``"),
            ("`x", "`` `x ``"),
            ("a\nb <!--", "`a\\nb <\u{200d}!--`"),
        ] {
            assert_eq!(code_span(text), span);
        }
    }
}

/// A JSON formatter that writes, besides what JSON must escape, every character
/// [`escape_terminal`] would show escaped (DEL, C1 controls, the line and paragraph separators,
/// the byte-order mark, bidirectional controls, non-characters) as a `\uXXXX` escape: the
/// document holds the same strings, and printed to a terminal or a log it stays inert.
pub struct InertJson<F>(pub F);

impl<F: serde_json::ser::Formatter> InertJson<F> {
    fn write_escaped<W: ?Sized + std::io::Write>(writer: &mut W, c: char) -> std::io::Result<()> {
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            write!(writer, "\\u{unit:04x}")?;
        }
        Ok(())
    }
}

/// The [`serde_json::ser::Formatter`] methods that write no string, passed on to the wrapped
/// formatter as they are.
macro_rules! forward_to_inner {
    ($($name:ident($($arg:ident: $ty:ty)?);)*) => {$(
        fn $name<W: ?Sized + std::io::Write>(
            &mut self, w: &mut W $(, $arg: $ty)?
        ) -> std::io::Result<()> {
            self.0.$name(w $(, $arg)?)
        }
    )*};
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for InertJson<F> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if fragment.bytes().all(|b| b < 0x7f) {
            return self.0.write_string_fragment(writer, fragment);
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_invisible_control(c) {
                self.0.write_string_fragment(writer, &fragment[start..i])?;
                Self::write_escaped(writer, c)?;
                start = i + c.len_utf8();
            }
        }
        self.0.write_string_fragment(writer, &fragment[start..])
    }
    forward_to_inner! {
        begin_array(); end_array(); begin_array_value(first: bool); end_array_value();
        begin_object(); end_object(); begin_object_key(first: bool); end_object_key();
        begin_object_value(); end_object_value();
    }
}

/// Writes `value` as JSON (indented with `pretty`) with [`InertJson`]'s escapes.
pub fn write_inert_json<W: std::io::Write, T: serde::Serialize + ?Sized>(
    writer: W,
    value: &T,
    pretty: bool,
) -> serde_json::Result<()> {
    use serde_json::ser::{CompactFormatter, PrettyFormatter, Serializer};
    match pretty {
        true => value.serialize(&mut Serializer::with_formatter(
            writer,
            InertJson(PrettyFormatter::new()),
        )),
        false => value.serialize(&mut Serializer::with_formatter(
            writer,
            InertJson(CompactFormatter),
        )),
    }
}

#[cfg(test)]
mod log_command_tests {
    use super::*;

    #[test]
    fn every_escaper_keeps_a_word_that_starts_a_log_command_inert() {
        let text = "x ::error::a\n  ##[error]b std::vec";
        // (`#` also between zero-width joiners: no issue reference once rendered)
        let markdown =
            "x &#58;:error::a   &#8205;&#35;&#8205;&#8205;\\#&#8205;\\[error\\]b std::vec";
        assert_eq!(escape_markdown(text), markdown);
        let html = escape_html(text);
        assert_eq!(html, "x &#58;:error::a&#10;  &#35;#[error]b std::vec");
        let lines = escape_html_lines(text);
        assert_eq!(lines, "x &#58;:error::a\n  &#35;#[error]b std::vec");
        let code = escape_code(text);
        assert_eq!(code, "x \\u{3a}:error::a\n  \\u{23}#[error]b std::vec");
    }

    #[test]
    fn xml_non_characters_and_separators_are_shown_escaped_in_html() {
        let text = "a\u{fffe}b\u{ffff}c\u{2028}d\u{feff}";
        let html = escape_html(text);
        assert_eq!(html, "a\\u{fffe}b\\u{ffff}c\\u{2028}d\\u{feff}");
    }

    #[test]
    fn inert_json_holds_the_same_strings_escaped() {
        let value =
            serde_json::json!({"k\u{2028}": ["a\u{7f}\u{9b}b\u{feff}\u{fffe}\u{1fffe}é\n"]});
        for pretty in [false, true] {
            let mut out = Vec::new();
            write_inert_json(&mut out, &value, pretty).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_contains!(text, "a\\u007f\\u009bb\\ufeff\\ufffe\\ud83f\\udffeé\\n");
            assert_contains!(text, "k\\u2028");
            let read: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(read, value);
        }
    }
}
