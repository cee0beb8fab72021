//! The terminal table: one row per gating metric (or per benchmark without metrics), its
//! columns given up in a fixed order when the terminal is too narrow, laid out a piece at a time.

use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, Width, presets};

use super::escape::escape_terminal;
use super::{
    Exporter, change_cell, ci_cell, cost_line, function_diff, mde_cell, median_cell,
    metric_verdict, p_cell, summary_line, verdict_word,
};
use crate::compare::explain::marker;
use crate::model::report::{BenchmarkComparison, MetricComparison, Report};
use crate::model::text::short_kernel_name;
use crate::model::units::format_change;
use crate::model::verdict::Verdict;

fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::Regressed | Verdict::Failed | Verdict::Incorrect => Color::Red,
        Verdict::Improved => Color::Green,
        Verdict::Inconclusive => Color::Yellow,
        Verdict::Unchanged | Verdict::WithinThreshold | Verdict::Identical => Color::Reset,
        Verdict::NotGated | Verdict::New | Verdict::Missing | Verdict::Skipped => Color::Cyan,
    }
}

/// Columns the table gives up, in this order, when it does not fit the terminal.
const DROPPABLE_COLUMNS: [&str; 3] = ["MDE", "p", "CI"];

/// The terminal table.
///
/// Cells never wrap: a number split over two lines reads as another number. When the table is wider
/// than the terminal, the least needed columns go first (MDE, then p, then CI), and the output says
/// which; an unknown width (not a terminal, or one that reports 0 columns) is no limit. By default
/// only the metrics that gate and the compiler's estimates are rows (and every metric of a
/// benchmark that has none that gates); `all_metrics` shows the informational ones too, and the
/// output says how many were left out. The verdict line opens and closes the output, so it is on
/// screen when the table scrolls.
#[derive(Debug, Clone, Default)]
pub struct TableExporter {
    pub color: bool,
    /// The terminal's width in columns, when known.
    pub width: Option<usize>,
    /// Show informational (non-gating) metrics too.
    pub all_metrics: bool,
}

/// The width of the terminal on stdout: `COLUMNS` when set, else what the terminal reports;
/// `None` when stdout is not a terminal or reports no size (a pseudo-terminal at 0×0).
pub fn stdout_width() -> Option<usize> {
    if let Some(cols) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(cols);
    }
    // The `terminal_size` crate (clap's, for its help): `None` off a terminal and for a size
    // of 0 columns or 0 rows.
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
}

/// The columns of the terminal table, in order.
#[rustfmt::skip]
const TABLE_COLUMNS: [&str; 9] = [
    "benchmark", "metric", "base", "head", "change", "CI", "p", "MDE", "verdict",
];

/// The verdict's column, the last of [`TABLE_COLUMNS`].
const VERDICT_COLUMN: usize = TABLE_COLUMNS.len() - 1;

/// How many rows of the terminal table are laid out at once (see [`TableExporter::layout`]).
const TABLE_CHUNK_ROWS: usize = 512;

/// The columns a table shows and, for a table of more than one piece, the width of each.
struct TableLayout {
    keep: Vec<bool>,
    widths: Option<Vec<u16>>,
}

impl TableExporter {
    /// The table rows of a benchmark, appended to `rows`; gives how many of its
    /// informational metrics were left out.
    fn rows_of<'r>(&self, b: &'r BenchmarkComparison, rows: &mut Vec<TableRow<'r>>) -> usize {
        if b.metrics.is_empty() {
            rows.push(TableRow::Bare(b));
            return 0;
        }
        let mut hidden = 0;
        let any_gates = b.metrics.iter().any(|m| m.gates);
        for m in &b.metrics {
            // Estimates stay beside the measurements they are checked against: which
            // number is a compiler's belief and which the hardware's is the point.
            let estimate = m.source == crate::model::metric::Source::Estimate;
            if self.all_metrics || m.gates || estimate || !any_gates {
                rows.push(TableRow::Metric(b, m));
            } else {
                hidden += 1;
            }
        }
        hidden
    }

    /// The table rows of benchmarks.
    fn rows<'r>(&self, benchmarks: &'r [BenchmarkComparison]) -> Vec<TableRow<'r>> {
        let mut rows = Vec::new();
        for b in benchmarks {
            self.rows_of(b, &mut rows);
        }
        rows
    }

    /// How the table without the `dropped` columns is laid out. A suite of thousands of
    /// benchmarks gives hundreds of thousands of rows, and a table of cells held whole took
    /// twice the memory of the comparison itself: a table of more than [`TABLE_CHUNK_ROWS`]
    /// rows is laid out that many rows at a time, every piece at the widths of the whole
    /// (`widths`: every column's, found in a first pass), and the pieces joined where their
    /// borders meet.
    fn layout(&self, widths: Option<&[u16]>, dropped: &[&str]) -> TableLayout {
        let keep: Vec<bool> = TABLE_COLUMNS.iter().map(|c| !dropped.contains(c)).collect();
        let widths = widths.map(|w| kept(w.iter().copied(), &keep).collect());
        TableLayout { keep, widths }
    }

    /// The width of the table laid out by `layout`, measured on its first piece: the widths
    /// are the whole table's, so every line of every piece is as wide.
    fn layout_width(&self, rows: &[TableRow<'_>], layout: &TableLayout) -> usize {
        let first = &rows[..rows.len().min(TABLE_CHUNK_ROWS)];
        let table = self.comfy(first, &layout.keep, layout.widths.as_deref());
        rendered_width(&table.to_string())
    }

    /// Writes the table of `rows` laid out by `layout` when they are all of it (one piece).
    fn write_whole_table(
        &self,
        rows: &[TableRow<'_>],
        layout: &TableLayout,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let table = self.comfy(rows, &layout.keep, layout.widths.as_deref());
        out.write_all(table.to_string().as_bytes())
    }

    /// Writes one piece of a table laid out by `layout` at the widths of the whole: the first
    /// piece keeps the top border and the header, the last the bottom border, so that the
    /// pieces written one after another are the text one table of every row gives.
    fn write_piece(
        &self,
        rows: &[TableRow<'_>],
        layout: &TableLayout,
        (first, last): (bool, bool),
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let table = self.comfy(rows, &layout.keep, layout.widths.as_deref());
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        let from = if first { 0 } else { 3 };
        let to = if last { lines.len() } else { lines.len() - 1 };
        for (k, line) in lines[from..to].iter().enumerate() {
            if !first || k > 0 {
                out.write_all(b"\n")?;
            }
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// One comfy table of `rows` (with the header), at `widths` of content when given.
    fn comfy(&self, rows: &[TableRow<'_>], keep: &[bool], widths: Option<&[u16]>) -> Table {
        let mut table = Table::new();
        table
            .load_style(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        if !self.color {
            table.force_no_tty();
        } else {
            table.enforce_styling();
        }
        table.set_header(kept(TABLE_COLUMNS.iter().map(Cell::new), keep).collect::<Vec<_>>());
        for row in rows {
            // The verdict, the last column, in its colour where it may fail the build (and is
            // not waived).
            let coloured = match row {
                TableRow::Bare(b) => Some(b.verdict),
                TableRow::Metric(_, m) => (m.gates && !m.waived).then_some(m.verdict),
            }
            .filter(|_| self.color);
            let cells = row.texts().into_iter().enumerate().map(|(i, text)| {
                let cell = Cell::new_owned(text);
                match coloured {
                    Some(verdict) if i == VERDICT_COLUMN => cell.fg(verdict_color(verdict)),
                    _ => cell,
                }
            });
            table.add_row(kept(cells, keep).collect::<Vec<_>>());
        }
        if let Some(widths) = widths {
            // Content width plus the padding of one space a side, as an absolute width.
            let fixed = |&w: &u16| ColumnConstraint::Absolute(Width::Fixed(w.saturating_add(2)));
            table.set_constraints(widths.iter().map(fixed));
        }
        table
    }
}

impl TableExporter {
    /// Writes the rows as entries of a list for a narrow terminal: the verdict and the names on
    /// one line, the numbers on the next, each wrapped at spaces to `width` (without colour),
    /// an entry at a time; the last entry is left in `pending`, for the caller to write
    /// without its newline once no entry follows.
    fn write_list(
        &self,
        rows: &[TableRow<'_>],
        width: usize,
        pending: &mut String,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        for row in rows {
            out.write_all(pending.as_bytes())?;
            pending.clear();
            let (verdict, head, numbers) = match row {
                TableRow::Bare(b) => (b.verdict.as_str().to_string(), table_name(&b.name), None),
                TableRow::Metric(b, m) => (
                    metric_verdict(m),
                    format!("{} · {}{}", table_name(&b.name), m.name, marker(m)),
                    Some(vec![
                        format!("base {}", median_cell(&m.base, &m.unit)),
                        format!("head {}", median_cell(&m.head, &m.unit)),
                        format!("change {}", change_with_medians(m)),
                        format!("CI {}", ci_cell(m)),
                        format!("p {}", p_cell(m)),
                        format!("MDE {}", mde_cell(m)),
                    ]),
                ),
            };
            let first = format!("{verdict}: {}", escape_terminal(&head));
            pending.push_str(&wrap_words(&first, width, "  "));
            if let Some(fields) = numbers {
                let fields = fields.iter().map(|f| escape_terminal(f).into_owned());
                let fields: Vec<String> = fields.collect();
                pending.push_str(&wrap_fields(&fields, width, "  "));
            }
        }
        Ok(())
    }
}

/// Words that are a number's unit, kept on the number's line.
const UNIT_WORDS: &[&str] = &[
    "%", "ns", "µs", "us", "ms", "s", "B", "KiB", "MiB", "GiB", "GB/s",
];

/// `text` broken into lines of at most `width` characters at spaces only (a word longer than
/// the line stays whole), continuation lines starting with `indent`; ends with a newline.
fn wrap_words(text: &str, width: usize, indent: &str) -> String {
    let leading: String = text.chars().take_while(|c| *c == ' ').collect();
    // A number keeps its unit: `+12.0 %` and `99.80 µs` are one word for wrapping.
    let mut words: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let is_unit = UNIT_WORDS.contains(&word.trim_end_matches([',', ')', ';', ':']));
        match words.last_mut() {
            Some(last) if is_unit && last.ends_with(|c: char| c.is_ascii_digit()) => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
    }
    fill(&words, width, &leading, indent)
}

/// Fields joined by `, `, broken into lines of at most `width` characters between fields only
/// (a number and its unit stay together), every line starting with `indent`.
fn wrap_fields(fields: &[String], width: usize, indent: &str) -> String {
    let last = fields.len().saturating_sub(1);
    let pieces: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| if i < last { format!("{f},") } else { f.clone() })
        .collect();
    fill(&pieces, width, indent, indent)
}

/// Pieces joined by spaces into lines of at most `width` characters, breaking only between
/// pieces; the first line starts with `lead`, the others with `indent`. Ends with a newline.
fn fill(pieces: &[String], width: usize, lead: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for piece in pieces {
        let len = line.chars().count();
        if len == 0 {
            line = format!("{}{piece}", if out.is_empty() { lead } else { indent });
        } else if len + 1 + piece.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = format!("{indent}{piece}");
        } else {
            line.push(' ');
            line.push_str(piece);
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// One row of the terminal table.
enum TableRow<'r> {
    /// A benchmark without metrics (new, missing, failed).
    Bare(&'r BenchmarkComparison),
    Metric(&'r BenchmarkComparison, &'r MetricComparison),
}

impl TableRow<'_> {
    /// The text of each of the [`TABLE_COLUMNS`], what came from a benchmark or a results file
    /// escaped for the terminal.
    fn texts(&self) -> [String; TABLE_COLUMNS.len()] {
        let text = |t: &str| escape_terminal(t).into_owned();
        match self {
            TableRow::Bare(b) => {
                // Only the name and the verdict: a dash in every column between.
                let mut texts: [String; TABLE_COLUMNS.len()] =
                    std::array::from_fn(|_| "–".to_string());
                texts[0] = text(&table_name(&b.name));
                texts[VERDICT_COLUMN] = b.verdict.as_str().to_string();
                texts
            }
            TableRow::Metric(b, m) => {
                let mut metric = m.name.clone();
                metric.push_str(marker(m));
                [
                    text(&table_name(&b.name)),
                    text(&metric),
                    text(&median_cell(&m.base, &m.unit)),
                    text(&median_cell(&m.head, &m.unit)),
                    change_with_medians(m),
                    ci_cell(m),
                    p_cell(m),
                    mde_cell(m),
                    text(&metric_verdict(m)),
                ]
            }
        }
    }
}

/// The width of the content of each kept column over the header and `rows`, as comfy-table
/// measures it (`Table::column_max_content_widths`: each line's Unicode width, at least 1)
/// but from the cells' text alone: the first pass of a long table used to build every cell
/// of it as a comfy table once more, a third of the time of the table at 200,000 rows.
fn content_widths(rows: &[TableRow<'_>], keep: &[bool]) -> Vec<u16> {
    let mut widths: Vec<u16> = kept(TABLE_COLUMNS, keep).map(text_width).collect();
    widen(&mut widths, rows, keep);
    widths
}

/// Widens `widths` (of the kept columns) to the cells of `rows`.
fn widen(widths: &mut [u16], rows: &[TableRow<'_>], keep: &[bool]) {
    for row in rows {
        for (w, text) in widths.iter_mut().zip(kept(row.texts(), keep)) {
            *w = (*w).max(text_width(&text));
        }
    }
}

/// A cell's width as comfy-table measures it: its widest line's Unicode width, at least 1.
fn text_width(text: &str) -> u16 {
    use unicode_width::UnicodeWidthStr;
    let widest = text.split('\n').map(|line| line.width()).max().unwrap_or(0);
    u16::try_from(widest).unwrap_or(u16::MAX).max(1)
}

/// The items of the columns `keep` says are shown, in order.
fn kept<T>(columns: impl IntoIterator<Item = T>, keep: &[bool]) -> impl Iterator<Item = T> {
    let shown = columns.into_iter().zip(keep);
    shown.filter_map(|(item, shown)| shown.then_some(item))
}

/// The widest line of a rendered table, in characters.
fn rendered_width(table: &str) -> usize {
    table.lines().map(console_width).max().unwrap_or(0)
}

/// Characters of a line as the terminal shows them: colour sequences take no room.
fn console_width(line: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in line.chars() {
        match (in_escape, c) {
            (false, '\u{1b}') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// A benchmark's name as the table's first column shows it: a long C++ signature shortened
/// ([`short_kernel_name`]), its whole name given under the table.
fn table_name(name: &str) -> String {
    short_kernel_name(name).unwrap_or_else(|| name.to_string())
}

/// The change column: the Hodges–Lehmann shift, and the change between the medians beside it
/// when the two disagree in sign (the shift is the median of all pairwise differences, which
/// can differ from the difference of the medians when the samples are skewed or bimodal).
fn change_with_medians(m: &MetricComparison) -> String {
    let shift = change_cell(m);
    let (Some(change), Some(base), Some(head)) = (m.change, &m.base, &m.head) else {
        return shift;
    };
    if base.median == 0.0 {
        return shift;
    }
    let medians = head.median / base.median - 1.0;
    if (change > 0.0 && medians < 0.0) || (change < 0.0 && medians > 0.0) {
        format!("{shift} (medians {})", format_change(medians))
    } else {
        shift
    }
}

impl Exporter for TableExporter {
    /// Writes the report as it is laid out, the table a piece at a time: a table of 200,000
    /// rows was built as one string and copied into another, twice the memory of the
    /// comparison's JSON report.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let prose = |text: String| match self.width {
            Some(width) => wrap_words(&text, width, "  "),
            None => format!("{text}\n"),
        };
        let summary = escape_terminal(&summary_line(report)).into_owned();
        let verdict_line = prose(format!("{}: {summary}", verdict_word(report.verdict)));
        out.write_all(verdict_line.as_bytes())?;
        if let Some(cost) = cost_line(report) {
            out.write_all(prose(cost).as_bytes())?;
        }
        // First reading: how many rows, how many left out, every column's width, and the
        // benchmarks of the first piece.
        let every_column = [true; TABLE_COLUMNS.len()];
        let mut widths = content_widths(&[], &every_column);
        let (mut count, mut hidden) = (0, 0);
        let mut first = Vec::new();
        report.benchmarks.iter().for_each(|b| {
            let mut rows = Vec::new();
            hidden += self.rows_of(b, &mut rows);
            widen(&mut widths, &rows, &every_column);
            if count <= TABLE_CHUNK_ROWS {
                first.push(b.clone());
            }
            count += rows.len();
        });
        let first_rows = self.rows(&first);
        let whole = count <= TABLE_CHUNK_ROWS;
        let widths = (!whole).then_some(widths);
        let mut dropped: Vec<&str> = Vec::new();
        let mut layout = self.layout(widths.as_deref(), &dropped);
        let mut list_width = None;
        if let Some(width) = self.width {
            let mut table_width = self.layout_width(&first_rows, &layout);
            for column in DROPPABLE_COLUMNS {
                if table_width <= width {
                    break;
                }
                dropped.push(column);
                layout = self.layout(widths.as_deref(), &dropped);
                table_width = self.layout_width(&first_rows, &layout);
            }
            if table_width > width {
                // Even the narrow table is too wide (long names): one entry per row
                // instead, wrapped at spaces, every field kept.
                dropped.clear();
                list_width = Some(width);
            }
        }
        // Second reading, unless the first piece is the whole: the table or the list.
        match list_width {
            Some(width) => {
                let mut pending = String::new();
                if whole {
                    self.write_list(&first_rows, width, &mut pending, out)?;
                } else {
                    pieces(&report.benchmarks, &mut |piece, _| {
                        self.write_list(&self.rows(piece), width, &mut pending, out)
                    })?;
                }
                // Each entry ends with a newline; the one after the last is left out.
                out.write_all(pending.trim_end().as_bytes())?;
            }
            None if whole => self.write_whole_table(&first_rows, &layout, out)?,
            None => {
                let mut at_first = true;
                pieces(&report.benchmarks, &mut |piece, last| {
                    let ends = (std::mem::take(&mut at_first), last);
                    self.write_piece(&self.rows(piece), &layout, ends, out)
                })?;
            }
        }
        out.write_all(b"\n")?;
        let mut lines = String::new();
        if !dropped.is_empty() {
            let (dropped, width) = (dropped.join(", "), self.width.unwrap_or_default());
            lines.push_str(&prose(format!(
                "({dropped} not shown at {width} columns; a wider terminal, `--format markdown` or `--format json` has them)"
            )));
        }
        if hidden > 0 {
            lines.push_str(&prose(format!(
                "({hidden} informational metric{} not shown; `--all-metrics` lists every metric)",
                if hidden == 1 { "" } else { "s" }
            )));
        }
        for (short, name) in super::shortened_names(report) {
            let (short, name) = (escape_terminal(&short), escape_terminal(name));
            lines.push_str(&prose(format!("{short}: {name}")));
        }
        out.write_all(lines.as_bytes())?;
        // Third reading: the explanations.
        for b in &report.benchmarks {
            let mut text = String::new();
            let (verdict, name) = (b.verdict.as_str(), escape_terminal(&b.name));
            let why = escape_terminal(&b.explanation);
            if matches!(
                b.verdict,
                Verdict::Regressed
                    | Verdict::Failed
                    | Verdict::Incorrect
                    | Verdict::Inconclusive
                    | Verdict::Improved
                    | Verdict::Missing
                    | Verdict::NotGated
                    | Verdict::Identical
            ) {
                text.push_str(&prose(format!("{verdict} {name}: {why}")));
                if let Some(p) = &b.profile {
                    text.push_str(&prose(function_diff::table_line(p)));
                }
            } else if b.metrics.iter().any(|m| m.waived) {
                text.push_str(&prose(format!("waived {name}: {why}")));
            } else if let Some(note) = b.changed_parameters() {
                let note = escape_terminal(note);
                text.push_str(&prose(format!("{verdict} {name}: {note}")));
            }
            out.write_all(text.as_bytes())?;
        }
        for w in &report.warnings {
            out.write_all(prose(format!("warning: {}", escape_terminal(w))).as_bytes())?;
        }
        // Again at the end, where the eye is when the command returns.
        out.write_all(verdict_line.as_bytes())
    }
}

/// Hands the benchmarks to `each` in pieces of at least [`TABLE_CHUNK_ROWS`] metric rows (the
/// last may have fewer), saying which is the last.
fn pieces(
    held: &[BenchmarkComparison],
    each: &mut dyn FnMut(&[BenchmarkComparison], bool) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (mut start, mut count) = (0, 0);
    for (i, b) in held.iter().enumerate() {
        count += b.metrics.len().max(1);
        if count >= TABLE_CHUNK_ROWS && i + 1 < held.len() {
            each(&held[start..=i], false)?;
            (start, count) = (i + 1, 0);
        }
    }
    each(&held[start..], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_laid_out_in_pieces_is_the_table_of_every_row() {
        use crate::model::report::Design;
        use crate::model::results::{BenchmarkResult, Provenance, RunResults};
        // More rows than a piece holds, of every width: a metric with a long name (with a
        // character two columns wide and one of two bytes) and wide numbers only in the last
        // piece, so that the widths come from the whole, a benchmark on one side only (a bare
        // row), and changes that regress, improve and hold.
        let side = |shift: f64, extra: bool| {
            let mut benchmarks = Vec::new();
            // Five benchmarks: three pieces or more, so that a piece comes between the first
            // and the last.
            for b in 0..5 {
                let mut r = BenchmarkResult::new(&format!("bench_{b}"), Provenance::default());
                r.repetitions = 8;
                for m in 0..(TABLE_CHUNK_ROWS / 2 + 7) {
                    let wide = b == 4 && m + 1 == TABLE_CHUNK_ROWS / 2 + 7;
                    let centre = if wide { 1.0e12 } else { 100.0 + m as f64 };
                    let change = match m % 3 {
                        0 => shift,
                        1 => 1.0 / shift,
                        _ => 1.0,
                    };
                    let name = if wide {
                        format!("a_much_longer_metric_name_表µ_{m}")
                    } else {
                        format!("m{m}")
                    };
                    let values: Vec<f64> = (0..8)
                        .map(|i| centre * change * (1.0 + 0.001 * f64::from(i)))
                        .collect();
                    r.metrics
                        .push(crate::model::results::MetricSamples::timer(&name, &values));
                }
                benchmarks.push(r);
            }
            if extra {
                benchmarks.push(BenchmarkResult::new("only_in_base", Provenance::default()));
            }
            RunResults::of(benchmarks)
        };
        let (base, head) = (side(1.0, true), side(1.5, false));
        let policy = crate::compare::ComparePolicy::default();
        let report = crate::compare::compare(&base, &head, &policy, Design::Files);
        let every_column = [true; TABLE_COLUMNS.len()];
        for color in [false, true] {
            let exporter = TableExporter {
                color,
                all_metrics: true,
                ..TableExporter::default()
            };
            let rows = exporter.rows(&report.benchmarks);
            assert!(rows.len() > 5 * TABLE_CHUNK_ROWS / 2);
            assert!(rows.iter().any(|r| matches!(r, TableRow::Bare(_))));
            let widths = content_widths(&rows, &every_column);
            for dropped in [&[][..], &["MDE", "p"][..]] {
                let keep: Vec<bool> = TABLE_COLUMNS.iter().map(|c| !dropped.contains(c)).collect();
                let whole = exporter.comfy(&rows, &keep, None).to_string();
                let layout = exporter.layout(Some(&widths), dropped);
                // The kept columns' widths are those measured on them alone.
                assert_eq!(layout.widths, Some(content_widths(&rows, &keep)));
                let mut written = Vec::new();
                let mut at_first = true;
                let mut write = |piece: &[BenchmarkComparison], last: bool| {
                    let ends = (std::mem::take(&mut at_first), last);
                    exporter.write_piece(&exporter.rows(piece), &layout, ends, &mut written)
                };
                pieces(&report.benchmarks, &mut write).unwrap();
                let case = format!("color {color}, {dropped:?}");
                assert_eq!(String::from_utf8(written).unwrap(), whole, "{case}");
                // The width measured on the first piece is the whole table's.
                let width = exporter.layout_width(&rows, &layout);
                assert_eq!(width, rendered_width(&whole), "{case}");
            }
        }
    }
}
