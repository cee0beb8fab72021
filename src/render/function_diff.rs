//! The profile of a regressed benchmark (`gate.on_regression: profile`) in the table and in
//! Markdown: one short line in the table, a folded section per benchmark in Markdown. Names and
//! paths come from the profiled binary and are escaped for each format.

use crate::model::function_diff::{BenchmarkProfile, FunctionChange, FunctionCost};
use crate::model::report::Report;
use crate::render::escape::{escape_markdown, escape_markdown_html, escape_terminal};

/// `12,345,678`, with a sign when `signed`.
fn grouped(v: i64, signed: bool) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    match (v < 0, signed) {
        (true, _) => format!("−{out}"),
        (false, true) if v > 0 => format!("+{out}"),
        _ => out,
    }
}

fn sides_words(p: &BenchmarkProfile) -> String {
    match p.sides.len() {
        0 => "not run".into(),
        _ => p.sides.join(" and "),
    }
}

fn place(f: &FunctionChange) -> Option<String> {
    f.file.as_ref().map(|file| match f.line {
        Some(l) => format!("{file}:{l}"),
        None => file.clone(),
    })
}

/// The table's line under a profiled benchmark's verdict line.
pub fn table_line(p: &BenchmarkProfile) -> String {
    // The tool and the sides are a stored report's text like any other (`kgate report`).
    let sides = sides_words(p);
    let (tool, sides) = (escape_terminal(&p.tool), escape_terminal(&sides));
    let mut line = format!("  profile ({tool}, {sides}):");
    match p.functions.first() {
        Some(f) => {
            let (lead, ir) = match f.self_ir_change {
                Some(d) => ("top change", grouped(d, true)),
                None => {
                    let cost = f.head.as_ref().or(f.base.as_ref()).map_or(0, |c| c.self_ir);
                    ("costliest", grouped(cost, false))
                }
            };
            let function = escape_terminal(&f.function);
            line.push_str(&format!(" {lead} {function} self Ir {ir}"));
            if let Some(at) = place(f) {
                line.push_str(&format!(" ({})", escape_terminal(&at)));
            }
            let more = p.functions.len() - 1 + p.functions_left_out;
            if more > 0 {
                line.push_str(&format!("; {more} more in the JSON and Markdown reports"));
            }
        }
        None if p.notes.is_empty() => line.push_str(" nothing to show"),
        None => {}
    }
    for n in &p.notes {
        line.push_str(&format!(" [{}]", escape_terminal(n)));
    }
    line
}

fn cost_cell(c: Option<&FunctionCost>, pick: fn(&FunctionCost) -> Option<i64>) -> String {
    c.and_then(pick).map_or("—".into(), |v| grouped(v, false))
}

/// The folded profile sections of every profiled benchmark, for the Markdown report.
pub fn markdown_sections(report: &Report) -> String {
    report
        .benchmarks
        .iter()
        .filter_map(|b| b.profile.as_ref().map(|p| section(&b.name, p)))
        .collect()
}

/// One benchmark's folded profile section.
fn section(name: &str, p: &BenchmarkProfile) -> String {
    let mut body = String::new();
    if !p.functions.is_empty() {
        let changes = p.functions.iter().any(|f| f.self_ir_change.is_some());
        if changes {
            body.push_str("| Function | Where | Self Ir base | Self Ir head | Δ self Ir | Δ inclusive Ir | D1 misses base → head |\n|---|---|--:|--:|--:|--:|--:|\n");
        } else {
            body.push_str("| Function | Where | Self Ir | Inclusive Ir | D1 misses |\n|---|---|--:|--:|--:|\n");
        }
        for f in &p.functions {
            let name = escape_markdown(&f.function);
            let at = place(f).map_or("—".into(), |s| escape_markdown(&s));
            if changes {
                body.push_str(&format!(
                    "| {name} | {at} | {} | {} | {} | {} | {} → {} |\n",
                    cost_cell(f.base.as_ref(), |c| Some(c.self_ir)),
                    cost_cell(f.head.as_ref(), |c| Some(c.self_ir)),
                    f.self_ir_change.map_or("—".into(), |d| grouped(d, true)),
                    f.inclusive_ir_change
                        .map_or("—".into(), |d| grouped(d, true)),
                    cost_cell(f.base.as_ref(), |c| c.self_d1_misses),
                    cost_cell(f.head.as_ref(), |c| c.self_d1_misses),
                ));
            } else {
                let c = f.head.as_ref().or(f.base.as_ref());
                let ir = cost_cell(c, |c| Some(c.self_ir));
                let inclusive = cost_cell(c, |c| Some(c.inclusive_ir));
                let d1 = cost_cell(c, |c| c.self_d1_misses);
                body.push_str(&format!("| {name} | {at} | {ir} | {inclusive} | {d1} |\n"));
            }
        }
        if p.functions_left_out > 0 {
            let n = p.functions_left_out;
            let more = format!("{n} more function{}", if n == 1 { "" } else { "s" });
            body.push_str(&format!("\n{more} with a change not shown.\n"));
        }
        body.push('\n');
    }
    for n in &p.notes {
        body.push_str(&format!("- {}\n", escape_markdown(n)));
    }
    let sides = sides_words(p);
    let [name, tool, sides] = [name, &p.tool, &sides].map(escape_markdown_html);
    let seconds = p.seconds;
    format!(
        "\n<details><summary><b>{name}</b>: profile ({tool}, {sides}, {seconds:.1} s)</summary>\n\n{body}</details>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_and_signed() {
        assert_eq!(grouped(12_345_678, true), "+12,345,678");
        assert_eq!(grouped(-1_000, true), "−1,000");
        assert_eq!(grouped(999, false), "999");
        assert_eq!(grouped(0, true), "0");
    }

    #[test]
    fn names_from_the_binary_are_escaped() {
        let p = BenchmarkProfile {
            tool: "callgrind".into(),
            sides: vec!["base".into(), "head".into()],
            events: vec!["Ir".into()],
            functions: vec![FunctionChange {
                function: "evil|<b>@x\u{1b}[2J".into(),
                file: Some("src/a.rs".into()),
                line: Some(3),
                base: None,
                head: Some(FunctionCost {
                    self_ir: 10,
                    inclusive_ir: 10,
                    self_d1_misses: None,
                    self_ll_misses: None,
                }),
                self_ir_change: Some(10),
                inclusive_ir_change: Some(10),
            }],
            functions_left_out: 0,
            notes: vec![],
            seconds: 1.0,
        };
        let line = table_line(&p);
        assert!(!line.contains('\u{1b}'), "{line}");
        assert_contains!(line, "top change");
        assert_contains!(line, "+10 (src/a.rs:3)");
        let md = section("b", &p);
        assert_contains!(md, "evil&#124;&lt;b&gt;&#64;&#8205;x");
        assert!(!md.contains("<b>@") && !md.contains('\u{1b}'), "{md}");
    }
}
