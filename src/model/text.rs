//! Showing untrusted text on a terminal or in a log.
//!
//! Names, units, messages and stderr tails come from benchmarks and results files. Printed raw,
//! a control character could clear the screen, overwrite a line, or start a line that a CI
//! runner takes as a workflow command (`::error …`). Here such characters become visible
//! escapes; the format-specific escaping (Markdown, HTML) is in `render::escape` and builds on
//! the same character classes.

/// Characters that change how a line displays without being seen: C0/C1 controls, DEL, the
/// bidirectional embeddings, overrides, isolates and marks ("Trojan Source"), the line and
/// paragraph separators (a line break to some readers, none to others), the byte-order mark,
/// and the non-characters (U+FFFE and U+FFFF are not XML characters at all: one in a JUnit
/// report makes CI drop the whole file).
pub(crate) fn is_invisible_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{feff}'
                | '\u{fdd0}'..='\u{fdef}'
        )
        || u32::from(c) & 0xfffe == 0xfffe
}

/// Pushes the visible escape of an invisible control (`\n`, `\u{1b}`, `\u{fffe}`) onto `out`.
pub(crate) fn push_visible(out: &mut String, c: char) {
    match c {
        '\n' | '\r' | '\t' | '\0' => out.extend(c.escape_debug()),
        c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
    }
}

/// Whether `text` begins as a line that a CI runner reads as a command: GitHub's workflow
/// commands (`::error::…`, `::add-mask::…`), its older form and Azure's (`##[error]…`,
/// `##vso[…]`).
pub(crate) fn starts_log_command(text: &str) -> bool {
    text.starts_with("::") || text.starts_with("##[") || text.starts_with("##vso[")
}

/// Each character of `text` with whether a CI log command begins there at the start of a
/// word (after whitespace, or at the start): escaping that character keeps the word inert
/// wherever a line break puts it.
pub(crate) fn chars_marking_commands(text: &str) -> impl Iterator<Item = (char, bool)> + '_ {
    let mut word_start = true;
    text.char_indices().map(move |(i, c)| {
        let starts = std::mem::replace(&mut word_start, c.is_whitespace());
        (c, starts && starts_log_command(&text[i..]))
    })
}

/// The visible escape of the first character of a log command (`\u{3a}` for `:`, `\u{23}` for
/// `#`).
fn command_escape(c: char) -> &'static str {
    match c {
        ':' => "\\u{3a}",
        _ => "\\u{23}",
    }
}

/// Text for a terminal or a log line: every control character, newlines included, and every
/// bidirectional override is shown as its escape (`\n`, `\u{1b}`), so untrusted text cannot
/// move the cursor, recolour the screen, or start a line that a CI runner reads as a command.
/// A word that begins as a log command (`::error`, `##[error]`) shows its first character
/// escaped too (`\u{3a}:error`): a table wrapped at spaces may start a line with any word.
pub fn escape_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    if chars_marking_commands(text).all(|(c, command)| !command && !is_invisible_control(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (c, command) in chars_marking_commands(text) {
        if is_invisible_control(c) {
            push_visible(&mut out, c);
        } else if command {
            out.push_str(command_escape(c));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Text of several lines for a terminal or a CI log, such as an error with its causes: line
/// breaks are kept, every other control character is escaped as in [`escape_terminal`], and a
/// line (a word) that would begin as a CI log command (`::`, `##[`) shows its first character
/// escaped (`\u{3a}`), so a name holding `\n::error …` cannot forge an annotation.
pub fn escape_log(text: &str) -> String {
    text.split('\n')
        .map(|line| escape_terminal(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without a trailing `/` when it is an http(s) address that can go into a link as it
/// is (an HTML `href`, a Markdown `[…](…)`): its scheme is `https://` or `http://`, it has a
/// host, and it holds no space, control, quote, angle bracket, parenthesis or backslash that
/// could end the link or start another. `javascript:…`, `data:…` and the like are not.
pub fn web_address(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))?;
    let inert = |c: char| {
        !c.is_whitespace()
            && !is_invisible_control(c)
            && !matches!(
                c,
                '"' | '\'' | '<' | '>' | '`' | '\\' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^'
            )
    };
    let host = rest.split('/').next().unwrap_or_default();
    (!host.is_empty() && text.chars().all(inert)).then(|| text.trim_end_matches('/'))
}

/// The field a deserialization of `text` as `T` failed at (`benchmarks[0].metrics[1].unit`),
/// for [`plain_serde`]: read again only once the reading failed, so that it costs nothing
/// when the text reads.
pub fn failing_field<T: serde::de::DeserializeOwned>(text: &str) -> Option<String> {
    let mut reader = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, T>(&mut reader)
        .err()
        .map(|e| e.path().to_string())
        .filter(|p| !p.is_empty() && p != "." && p != "?")
}

/// A serde error message (`invalid type: null, expected f64`) in the words of the file it is
/// about: `must be a number, got null`. `field` names where it was (`value`,
/// `benchmarks[0].metrics[1].values[2]`), when known: `` `value` must be a number, got null``.
/// serde_json's position (` at line 1 column 9`) is kept at the end; a message that is not one
/// of serde's type errors is returned as it is, after the field.
pub fn plain_serde(field: Option<&str>, message: &str) -> String {
    let (head, position) = match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => message.split_at(at),
        _ => (message, ""),
    };
    let named = |rest: String| match field.filter(|f| !f.is_empty() && *f != ".") {
        Some(f) => format!("`{f}` {rest}"),
        None => rest,
    };
    let body = if let Some(rest) = head
        .strip_prefix("invalid type: ")
        .or_else(|| head.strip_prefix("invalid value: "))
        && let Some((got, expected)) = rest.split_once(", expected ")
    {
        named(format!(
            "must be {}, got {}",
            expected_words(expected),
            unexpected_words(got)
        ))
    } else if let Some(rest) = head.strip_prefix("invalid length ")
        && let Some((n, expected)) = rest.split_once(", expected ")
    {
        named(format!(
            "must be {}, got {n} item{}",
            expected_words(expected),
            if n == "1" { "" } else { "s" }
        ))
    } else if let Some(rest) = head.strip_prefix("unknown variant ")
        && let Some((got, expected)) = rest.split_once(", expected ").or_else(|| {
            rest.split_once(", there are no variants")
                .map(|(g, _)| (g, "nothing"))
        })
    {
        let expected = expected.strip_prefix("one of ").unwrap_or(expected);
        match field.filter(|f| !f.is_empty() && *f != ".") {
            Some(f) => format!("`{f}` is {got}, not one of {expected}"),
            None => format!("{got} is not one of {expected}"),
        }
    } else if let Some(ty) = head.strip_prefix("invalid ")
        && expected_words(ty) != ty
    {
        // serde-saphyr's scalar errors: `invalid u32`, `invalid f64`.
        named(format!("must be {}", expected_words(ty)))
    } else if ["missing field ", "unknown field ", "duplicate field "]
        .iter()
        .any(|p| head.starts_with(p))
    {
        // serde names the field itself.
        head.to_string()
    } else {
        match field.filter(|f| !f.is_empty() && *f != ".") {
            Some(f) => format!("`{f}`: {head}"),
            None => head.to_string(),
        }
    };
    format!("{body}{position}")
}

/// What a serde visitor expected (`f64`, `u32`, `a sequence`, `struct Gate`), in plain words.
fn expected_words(expected: &str) -> String {
    let words = match expected {
        "f32" | "f64" | "a number" => "a number",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "a boolean" | "bool" => "`true` or `false`",
        "a string" | "a borrowed string" | "string" | "path string" => "text (a string)",
        "a character" | "char" => "one character",
        "a sequence" | "a tuple" => "a list",
        "a map" | "struct variant" => "an object",
        "option" => "a value or null",
        "unit" => "null",
        "variant identifier" | "field identifier" => "a name",
        other => {
            // The type's name is the program's word, not the file's.
            if other.starts_with("struct ") {
                return "an object".into();
            }
            if other.starts_with("tuple struct ") {
                return "a list".into();
            }
            if let Some(n) = other.strip_prefix("an array of length ") {
                return format!("a list of {n}");
            }
            if let Some(n) = other.strip_prefix("a tuple of size ") {
                return format!("a list of {n}");
            }
            if other.starts_with("enum ") {
                return "one of the names this key takes".into();
            }
            other
        }
    };
    words.to_string()
}

/// What serde found instead (`string "fast"`, `integer `5``, `sequence`), in plain words.
fn unexpected_words(got: &str) -> String {
    let quoted = |s: &str| {
        s.strip_prefix('`')
            .and_then(|s| s.strip_suffix('`'))
            .map(str::to_string)
    };
    if let Some(v) = got
        .strip_prefix("boolean ")
        .or_else(|| got.strip_prefix("integer "))
        .or_else(|| got.strip_prefix("floating point "))
        .and_then(quoted)
    {
        return v;
    }
    if let Some(v) = got.strip_prefix("character ").and_then(quoted) {
        return format!("`{v}`");
    }
    if let Some(text) = got.strip_prefix("string ") {
        return format!("the text {text}");
    }
    match got {
        "null" | "unit value" => "null",
        "sequence" => "a list",
        "map" => "an object",
        "byte array" => "bytes",
        "Option value" | "newtype struct" | "newtype variant" | "enum" | "unit variant"
        | "tuple variant" | "struct variant" => "another kind of value",
        other => other,
    }
    .to_string()
}

/// `text` cut after `chars` characters, with `…` where it was cut.
pub fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
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

/// A kernel's name and its ` [gpu N]` suffix (the nsys and rocpd imports name a kernel that
/// ran on several GPUs so), the suffix empty where there is none.
pub fn split_gpu_suffix(name: &str) -> (&str, &str) {
    match name.rfind(" [gpu ") {
        Some(at) if name.ends_with(']') => name.split_at(at),
        _ => (name, ""),
    }
}

/// Names longer than this that read as a C++ signature are shortened in tables.
const LONG_KERNEL_NAME: usize = 60;

/// A readable form of a long demangled C++ kernel name, for a table's name column: the
/// return type dropped, every template argument list and parameter list at the outer level
/// written `<…>` and `(…)`, a ` [gpu N]` suffix kept, and `#` with six hex digits of the
/// name's FNV-1a hash (the suffix aside), so that instantiations of one template stay distinct
/// rows and one kernel has one digest on every GPU. None where
/// the name is short or not a signature; reports keep the whole name everywhere else.
pub fn short_kernel_name(name: &str) -> Option<String> {
    if name.chars().count() <= LONG_KERNEL_NAME || !name.contains(['<', '(']) {
        return None;
    }
    let (body, gpu) = split_gpu_suffix(name);
    let mut short = String::new();
    let mut depth = 0usize;
    for c in body.chars() {
        match c {
            '<' | '(' => {
                if depth == 0 {
                    short.push(c);
                    short.push('…');
                }
                depth += 1;
            }
            '>' | ')' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    short.push(c);
                }
            }
            // The return type (`void `) and qualifiers before the name.
            ' ' if depth == 0 => short.clear(),
            _ if depth == 0 => short.push(c),
            _ => {}
        }
    }
    if short.is_empty() {
        return None;
    }
    // The same kernel on another GPU keeps its digest.
    let hash = body.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    Some(format!("{short} #{:06x}{gpu}", hash & 0xff_ffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` escaped, checked against `want`, and plain `unchanged` left borrowed.
    #[track_caller]
    fn escapes(text: &str, want: &str, unchanged: &str) {
        assert_eq!(escape_terminal(text), want);
        assert!(matches!(
            escape_terminal(unchanged),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn controls_and_bidi_overrides_become_visible() {
        escapes(
            "a\n::error::x\u{1b}[2J\u{7}\r\u{202e}b\tc",
            "a\\n\\u{3a}:error::x\\u{1b}[2J\\u{7}\\r\\u{202e}b\\tc",
            "plain µs ✓",
        );
    }

    #[test]
    fn separators_marks_and_non_characters_become_visible() {
        escapes(
            "a\u{2028}b\u{2029}c\u{feff}d\u{fffe}e\u{ffff}f\u{200f}g\u{9b}h\u{10ffff}",
            "a\\u{2028}b\\u{2029}c\\u{feff}d\\u{fffe}e\\u{ffff}f\\u{200f}g\\u{9b}h\\u{10ffff}",
            "a\u{200d}b ✓ 日本",
        );
    }

    #[test]
    fn a_word_that_starts_a_log_command_shows_its_first_character_escaped() {
        escapes(
            "::add-mask::x y ##[error]e ##vso[task] std::vec a##[b",
            "\\u{3a}:add-mask::x y \\u{23}#[error]e \\u{23}#vso[task] std::vec a##[b",
            "std::vector<int> #1 ##",
        );
    }

    #[test]
    fn only_plain_http_addresses_are_web_addresses() {
        let github = "https://github.com/o/r";
        assert_eq!(web_address(&format!("{github}/")), Some(github));
        let ci = "http://ci.example:8080/x";
        assert_eq!(web_address(ci), Some(ci));
        #[rustfmt::skip]
        let bad = ["javascript:alert(1)", "JAVASCRIPT:alert(1)//https://x", "data:text/html,x",
            "https://", "https:///path", "https://h/x\" onclick=\"x", "https://h/x) [y](javascript:z",
            "https://h/a b", "https://h/a\nb", "ftp://h/x"];
        for bad in bad {
            assert_eq!(web_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn serde_type_errors_read_in_the_files_words() {
        #[rustfmt::skip]
        let cases = [
            (Some("value"), "invalid type: null, expected f64", "`value` must be a number, got null"),
            (Some("value"), "invalid type: string \"fast\", expected f64",
                "`value` must be a number, got the text \"fast\""),
            (Some("benchmarks[0].repetitions"),
                "invalid type: floating point `1.5`, expected u32 at line 1 column 80",
                "`benchmarks[0].repetitions` must be a whole number, 0 or more, got 1.5 at line 1 column 80"),
            (None, "invalid type: map, expected a sequence", "must be a list, got an object"),
            (Some("gate"), "invalid type: boolean `true`, expected struct Gate",
                "`gate` must be an object, got true"),
            (None, "invalid length 1, expected struct RunResults with 5 elements at line 1 column 3",
                "must be an object, got 1 item at line 1 column 3"),
            (Some("ci"), "invalid length 3, expected an array of length 2",
                "`ci` must be a list of 2, got 3 items"),
            (Some("source"), "unknown variant `guess`, expected one of `timer`, `reported`",
                "`source` is `guess`, not one of `timer`, `reported`"),
            (Some("metric"), "missing field `value`", "missing field `value`"),
            (Some("x"), "trailing characters", "`x`: trailing characters"),
            (None, "EOF while parsing a value at line 1 column 5",
                "EOF while parsing a value at line 1 column 5"),
        ];
        for (field, serde, plain) in cases {
            assert_eq!(plain_serde(field, serde), plain, "{serde}");
        }
    }

    #[test]
    fn log_text_keeps_its_lines_but_no_line_is_a_workflow_command() {
        let log = escape_log("benchmark `k\n  ::error title=x::y` failed\n\u{1b}[31mred");
        assert_eq!(
            log,
            "benchmark `k\n  \\u{3a}:error title=x::y` failed\n\\u{1b}[31mred"
        );
    }

    #[test]
    fn long_kernel_signatures_are_shortened_and_stay_distinct() {
        let flash = |b: u8| {
            format!(
                "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, cutlass::bfloat16_t>, (bool){b}, (bool)0>(Flash_fwd_params) [gpu 1]"
            )
        };
        let a = short_kernel_name(&flash(0)).unwrap();
        let b = short_kernel_name(&flash(1)).unwrap();
        assert!(a.starts_with("flash::flash_fwd_kernel<…>(…) #"), "{a}");
        assert!(a.ends_with(" [gpu 1]"), "{a}");
        assert_ne!(a, b);
        let other_gpu = short_kernel_name(&flash(0).replace("[gpu 1]", "[gpu 0]")).unwrap();
        assert_eq!(other_gpu.replace("[gpu 0]", "[gpu 1]"), a);
        let like = "flash::flash_fwd_kernel<…>(…) #123456 [gpu 1]";
        assert_eq!(a.len(), like.len());
        // Short names, and long names that are not signatures, stay as they are.
        assert_eq!(short_kernel_name("matmul_tiled<32>"), None);
        assert_eq!(short_kernel_name(&"x".repeat(100)), None);
        // Unbalanced brackets never panic and keep what is outside them.
        let open = format!("kernel<{}", "a".repeat(80));
        assert!(short_kernel_name(&open).unwrap().starts_with("kernel<…"));
        let close = format!("k{}>)) end(x)", "b".repeat(80));
        assert!(short_kernel_name(&close).unwrap().starts_with("end(…)"));
    }
}
