//! Rendering a comparison report: a terminal table, Markdown for pull requests (with its
//! details and GitHub's size limits in `markdown_details` and `markdown_limits`), JSON, an
//! offline HTML page (`html`) and JUnit XML (`junit`); `stored` reads a JSON report back.
//!
//! One exporter per format behind one trait, as hyperfine does. Everything that came from the
//! repository (benchmark and metric names, reasons quoting them) is escaped before it goes into
//! Markdown: a name may hold `|`, `<`, `@` or backticks.

use std::io::IsTerminal;

pub mod escape;
pub mod function_diff;
pub mod history_html;
pub mod html;
pub mod junit;
pub mod markdown_details;
pub mod markdown_limits;
pub mod stored;
pub mod strip;

pub use markdown_limits::{LimitedMarkdownExporter, render_markdown_limited};

use comfy_table::{Cell, Color, ColumnConstraint, ContentArrangement, Table, Width, presets};

use crate::compare::format_p;
use crate::model::report::{BenchmarkComparison, MetricComparison, Report};
use crate::model::units::{format_change, format_value};
use crate::model::verdict::{RunVerdict, Verdict};
use escape::{escape_markdown, escape_terminal};

/// Output formats of a report (`--format`: the command line's names are in `cli`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Json,
    /// A self-contained HTML page with SVG plots.
    Html,
    /// JUnit XML: a test case per benchmark and metric.
    Junit,
}

/// Renders a report in one format.
pub trait Exporter {
    fn render(&self, report: &Report) -> String;

    /// Writes the report into `out`; a format that can be produced piece by piece overrides
    /// this so that a large report is never held whole in memory.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(self.render(report).as_bytes())
    }
}

/// The exporter of a format; `color` applies to the table only, which then has no width limit
/// and shows the gating metrics.
pub fn exporter(format: Format, color: bool) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(TableExporter {
            color,
            ..TableExporter::default()
        }),
        Format::Markdown => Box::new(MarkdownExporter),
        Format::Json => Box::new(JsonExporter { pretty: false }),
        Format::Html => Box::new(html::HtmlExporter),
        Format::Junit => Box::new(junit::JunitExporter),
    }
}

/// Whether to colour output on stdout: a terminal, and `NO_COLOR` unset.
pub fn stdout_wants_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// "1 regression, 0 improvements, 3 unchanged, 0 inconclusive of 4 benchmarks".
pub fn summary_line(report: &Report) -> String {
    summary_line_naming(report, would_regress(report.benchmarks.iter()))
}

/// The benchmarks that are not gated but one of whose metrics would have regressed.
pub fn would_regress<'b>(benchmarks: impl Iterator<Item = &'b BenchmarkComparison>) -> Vec<String> {
    benchmarks
        .filter(|b| {
            b.verdict == Verdict::NotGated
                && b.metrics
                    .iter()
                    .any(|m| m.verdict == Verdict::Regressed && m.not_gating.is_some())
        })
        .map(|b| b.name.clone())
        .collect()
}

/// [`summary_line`] from the report's counts, naming `would` as the not-gated benchmarks that
/// would have regressed ([`would_regress`]).
pub fn summary_line_naming(report: &Report, would: Vec<String>) -> String {
    let s = &report.summary;
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    if s.incorrect > 0 {
        // First of all: wrong answers fail the gate whatever their speed.
        parts.push(format!("{} incorrect", s.incorrect));
    }
    if s.failed > 0 {
        // First: nothing was measured for these, and they make the run an error.
        parts.push(format!("{} failed", s.failed));
    }
    parts.extend([
        plural(s.regressed, "regression", "regressions"),
        plural(s.improved, "improvement", "improvements"),
        format!("{} unchanged", s.unchanged),
        format!("{} inconclusive", s.inconclusive),
    ]);
    if s.within_threshold > 0 {
        parts.push(format!("{} within threshold", s.within_threshold));
    }
    if s.not_gated > 0 {
        // A benchmark that cannot gate is never counted as unchanged, and one that would have
        // regressed is named here, not only in its row.
        let mut part = format!("{} not gated", s.not_gated);
        if !would.is_empty() {
            part.push_str(&format!(
                " ({} would regress: {})",
                would.len(),
                would.join(", ")
            ));
        }
        parts.push(part);
    }
    if s.new > 0 {
        parts.push(format!("{} new", s.new));
    }
    if s.missing > 0 {
        parts.push(format!("{} missing", s.missing));
    }
    if s.skipped > 0 {
        parts.push(format!("{} skipped", s.skipped));
    }
    if s.identical > 0 {
        parts.push(format!("{} identical (not measured)", s.identical));
    }
    if s.waived > 0 {
        parts.push(format!("{} waived", s.waived));
    }
    format!(
        "{} of {}",
        parts.join(", "),
        plural(s.total, "benchmark", "benchmarks")
    )
}

/// What an adaptive run's benchmarks cost against a fixed plan at `repetitions.max`:
/// "repetitions: 212 of the 640 a fixed plan at max would run; benchmark time 41.2 s (about
/// 118.0 s at max)". None where the report has no cost (no looks, or untimed runs).
pub fn cost_line(report: &Report) -> Option<String> {
    let c = report.cost?;
    let share = if c.fixed_repetitions > 0 {
        format!(
            " ({:.0} %)",
            100.0 * c.repetitions as f64 / c.fixed_repetitions as f64
        )
    } else {
        String::new()
    };
    Some(format!(
        "repetitions: {} of the {} a fixed plan at max would run{share}; benchmark time {:.1} s (about {:.1} s at max)",
        c.repetitions, c.fixed_repetitions, c.seconds, c.fixed_seconds
    ))
}

pub(crate) fn verdict_word(v: RunVerdict) -> &'static str {
    match v {
        RunVerdict::Pass => "PASS",
        RunVerdict::Regressed => "REGRESSED",
        RunVerdict::Inconclusive => "INCONCLUSIVE",
        RunVerdict::NoBaseline => "NO BASELINE",
        RunVerdict::Error => "ERROR",
    }
}

fn change_cell(m: &MetricComparison) -> String {
    m.change.map(format_change).unwrap_or_else(|| "–".into())
}

fn ci_cell(m: &MetricComparison) -> String {
    m.ci.map(|[lo, hi]| format!("{} … {}", format_change(lo), format_change(hi)))
        .unwrap_or_else(|| "–".into())
}

fn median_cell(s: &Option<crate::stats::Summary>, unit: &str) -> String {
    s.as_ref()
        .map(|s| format!("{} (n={})", format_value(s.median, unit), s.n))
        .unwrap_or_else(|| "–".into())
}

fn mde_cell(m: &MetricComparison) -> String {
    m.mde
        .map(|v| format_change(v).trim_start_matches('+').to_string())
        .unwrap_or_else(|| "–".into())
}

fn p_cell(m: &MetricComparison) -> String {
    m.p_value.map(format_p).unwrap_or_else(|| "–".into())
}

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
/// Cells never wrap: a number split over two lines reads as another number. When the table is
/// wider than the terminal, the least needed columns go first (MDE, then p, then CI), and the
/// output says which; an unknown width (not a terminal, or one that reports 0 columns) is no
/// limit. By default only the metrics that gate and the compiler's estimates are rows (and
/// every metric of a benchmark that has none that gates); `all_metrics` shows the informational ones too, and the output says how
/// many were left out. The verdict line opens and closes the output, so it is on screen when
/// the table scrolls.
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
const TABLE_COLUMNS: [&str; 9] = [
    "benchmark",
    "metric",
    "base",
    "head",
    "change",
    "CI",
    "p",
    "MDE",
    "verdict",
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
        rendered_width(
            &self
                .comfy(first, &layout.keep, layout.widths.as_deref())
                .to_string(),
        )
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
        let text = self
            .comfy(rows, &layout.keep, layout.widths.as_deref())
            .to_string();
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
            table.set_constraints(
                widths
                    .iter()
                    .map(|&w| ColumnConstraint::Absolute(Width::Fixed(w.saturating_add(2)))),
            );
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
                TableRow::Bare(b) => (b.verdict.as_str().to_string(), b.name.clone(), None),
                TableRow::Metric(b, m) => (
                    metric_verdict(m),
                    format!(
                        "{} · {}{}",
                        b.name,
                        m.name,
                        crate::compare::explain::marker(m)
                    ),
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
                let fields: Vec<String> = fields
                    .iter()
                    .map(|f| escape_terminal(f).into_owned())
                    .collect();
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
    Bare(&'r crate::model::report::BenchmarkComparison),
    Metric(
        &'r crate::model::report::BenchmarkComparison,
        &'r MetricComparison,
    ),
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
                texts[0] = text(&b.name);
                texts[VERDICT_COLUMN] = b.verdict.as_str().to_string();
                texts
            }
            TableRow::Metric(b, m) => {
                let mut metric = m.name.clone();
                metric.push_str(crate::compare::explain::marker(m));
                [
                    text(&b.name),
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
    columns
        .into_iter()
        .zip(keep)
        .filter_map(|(item, shown)| shown.then_some(item))
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
    fn render(&self, report: &Report) -> String {
        let mut out = Vec::new();
        self.write_to(report, &mut out)
            .expect("writing into memory does not fail");
        String::from_utf8(out).expect("the table is UTF-8")
    }

    /// Writes the report as it is laid out, the table a piece at a time: a table of 200,000
    /// rows was built as one string and copied into another, twice the memory of the
    /// comparison's JSON report.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let prose = |text: String| match self.width {
            Some(width) => wrap_words(&text, width, "  "),
            None => format!("{text}\n"),
        };
        let verdict_line = prose(format!(
            "{}: {}",
            verdict_word(report.verdict),
            escape_terminal(&summary_line(report))
        ));
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
            lines.push_str(&prose(format!(
                "({} not shown at {} columns; a wider terminal, `--format markdown` or `--format json` has them)",
                dropped.join(", "),
                self.width.unwrap_or_default()
            )));
        }
        if hidden > 0 {
            lines.push_str(&prose(format!(
                "({hidden} informational metric{} not shown; `--all-metrics` lists every metric)",
                if hidden == 1 { "" } else { "s" }
            )));
        }
        out.write_all(lines.as_bytes())?;
        // Third reading: the explanations.
        report
            .benchmarks
            .iter()
            .try_for_each(|b| -> std::io::Result<()> {
                let mut text = String::new();
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
                    text.push_str(&prose(format!(
                        "{} {}: {}",
                        b.verdict.as_str(),
                        escape_terminal(&b.name),
                        escape_terminal(&b.explanation)
                    )));
                    if let Some(p) = &b.profile {
                        text.push_str(&prose(function_diff::table_line(p)));
                    }
                } else if b.metrics.iter().any(|m| m.waived) {
                    text.push_str(&prose(format!(
                        "waived {}: {}",
                        escape_terminal(&b.name),
                        escape_terminal(&b.explanation)
                    )));
                }
                out.write_all(text.as_bytes())
            })?;
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

/// A metric's verdict as shown: `regressed (waived)` when a waiver accepts it, and for a metric
/// that may not fail the build a cell that says so rather than the word a gating verdict gets:
/// `would regress (not gated)`, `would improve (not gated)`, `unchanged (not gated)`.
pub(crate) fn metric_verdict(m: &MetricComparison) -> String {
    if m.waived {
        format!("{} (waived)", m.verdict.as_str())
    } else if m.gates {
        m.verdict.as_str().to_string()
    } else {
        match m.verdict {
            Verdict::Regressed => "would regress (not gated)".to_string(),
            Verdict::Improved => "would improve (not gated)".to_string(),
            Verdict::NotGated | Verdict::Skipped | Verdict::New | Verdict::Missing => {
                m.verdict.as_str().to_string()
            }
            other => format!("{} (not gated)", other.as_str()),
        }
    }
}

/// A figure cell that a narrow comment column cannot split between a value and its unit
/// (`+12.0` over `%`): a no-break space inside each figure; a line may still break on either
/// side of an interval's `…` and before a sample count, so the table stays narrow enough for
/// its last column, the verdict, to show.
fn unbreakable_figures(cell: &str) -> String {
    cell.split(" … ")
        .map(|figure| match figure.split_once(" (") {
            Some((value, count)) => format!("{} ({count}", value.replace(' ', "\u{a0}")),
            None => figure.replace(' ', "\u{a0}"),
        })
        .collect::<Vec<_>>()
        .join(" … ")
}

/// Markdown for a pull-request comment or job summary.
pub struct MarkdownExporter;

impl MarkdownExporter {
    fn table(rows: &[(&str, &MetricComparison)]) -> String {
        let mut s = String::from(
            "| benchmark | metric | base | head | change | CI | p | MDE | source | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|\n",
        );
        for (bench, m) in rows {
            // Every cell is escaped, numbers included: a unit is text from the benchmark.
            let cells = [
                bench.to_string(),
                format!("{}{}", m.name, crate::compare::explain::marker(m)),
                median_cell(&m.base, &m.unit),
                median_cell(&m.head, &m.unit),
                change_cell(m),
                ci_cell(m),
                p_cell(m),
                mde_cell(m),
                m.source.as_str().to_string(),
                metric_verdict(m),
            ];
            s.push('|');
            for (column, cell) in cells.iter().enumerate() {
                s.push(' ');
                let escaped = escape_markdown(cell);
                if (2..=7).contains(&column) {
                    s.push_str(&unbreakable_figures(&escaped));
                } else {
                    s.push_str(&escaped);
                }
                s.push_str(" |");
            }
            s.push('\n');
        }
        s
    }
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> String {
        let icon = match report.verdict {
            RunVerdict::Pass => "✅",
            RunVerdict::Regressed => "❌",
            RunVerdict::Inconclusive => "⚠️",
            RunVerdict::NoBaseline => "❔",
            RunVerdict::Error => "🛑",
        };
        let mut out = format!(
            "### {icon} kgate: {}: {}\n\n",
            verdict_word(report.verdict),
            escape_markdown(&summary_line(report))
        );
        if let Some(cost) = cost_line(report) {
            out.push_str(&format!("{}\n\n", escape_markdown(&cost)));
        }
        let notable: Vec<(&str, &MetricComparison)> = report
            .benchmarks
            .iter()
            .flat_map(|b| b.metrics.iter().map(move |m| (b.name.as_str(), m)))
            .filter(|(_, m)| {
                m.gates
                    && matches!(
                        m.verdict,
                        Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
                    )
            })
            .collect();
        if !notable.is_empty() {
            out.push_str(&Self::table(&notable));
            out.push('\n');
        }
        for b in &report.benchmarks {
            if matches!(
                b.verdict,
                Verdict::Regressed
                    | Verdict::Failed
                    | Verdict::Incorrect
                    | Verdict::Inconclusive
                    | Verdict::Missing
                    | Verdict::NotGated
                    | Verdict::Identical
            ) {
                out.push_str(&format!(
                    "- **{}** {}: {}\n",
                    escape_markdown(&b.name),
                    b.verdict.as_str(),
                    escape_markdown(&b.explanation)
                ));
            } else if b.metrics.iter().any(|m| m.waived) {
                out.push_str(&format!(
                    "- **{}** waived: {}\n",
                    escape_markdown(&b.name),
                    escape_markdown(&b.explanation)
                ));
            }
        }
        let all: Vec<(&str, &MetricComparison)> = report
            .benchmarks
            .iter()
            .flat_map(|b| b.metrics.iter().map(move |m| (b.name.as_str(), m)))
            .collect();
        if !all.is_empty() {
            out.push_str("\n<details><summary>All metrics</summary>\n\n");
            out.push_str(&Self::table(&all));
            out.push_str("\n</details>\n");
        }
        out.push_str(&markdown_details::benchmark_sections(report));
        out.push_str(&function_diff::markdown_sections(report));
        for w in &report.warnings {
            out.push_str(&format!("\n> [!NOTE]\n> {}\n", escape_markdown(w)));
        }
        let model = match report.model {
            crate::model::report::Model::RankTest => "Rank test",
            crate::model::report::Model::PredictionInterval => {
                "Prediction interval over stored jobs"
            }
        };
        out.push_str(&format!(
            "\n<sub>{model} at α = {} ({} correction, {} look{}), intervals at {} % confidence; changes are head against base; MDE is the smallest change this run would flag with 80 % power.</sub>\n",
            report.alpha,
            report.correction.as_str(),
            report.looks,
            if report.looks == 1 { "" } else { "s" },
            (1.0 - report.alpha) * 100.0
        ));
        out
    }
}

/// The JSON report of DESIGN.md's contract: compact (one line) unless `pretty`.
pub struct JsonExporter {
    pub pretty: bool,
}

/// Writes a report as JSON (indented with `pretty`) into `out`.
pub fn write_json(
    report: &Report,
    pretty: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = crate::store::fsutil::serializer_buffer(out);
    // The strings of a report are untrusted: those that would act on a terminal are escaped.
    escape::write_inert_json(&mut out, report, pretty).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> String {
        let mut out = Vec::new();
        self.write_to(report, &mut out)
            .expect("reports serialize to JSON");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        write_json(report, self.pretty, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row that may not fail the build says so in its verdict cell, in every format that
    /// shows the cell, rather than the word a gating verdict gets (before: `regressed` under a
    /// PASS headline).
    #[test]
    fn a_metric_that_does_not_gate_reads_as_such_in_its_verdict_cell() {
        use crate::model::metric::{Direction, GateRule, Source};
        use crate::model::results::MetricSamples;
        let samples = MetricSamples {
            name: "kernel_time".into(),
            unit: "us".into(),
            source: Source::Timer,
            direction: Direction::Lower,
            gate: GateRule::default(),
            values: Vec::new(),
            repetition: Default::default(),
        };
        let mut m = crate::compare::blank(&samples, &crate::compare::ComparePolicy::default());
        m.verdict = Verdict::Regressed;
        m.gates = true;
        assert_eq!(metric_verdict(&m), "regressed");
        m.gates = false;
        assert_eq!(metric_verdict(&m), "would regress (not gated)");
        m.verdict = Verdict::Improved;
        assert_eq!(metric_verdict(&m), "would improve (not gated)");
        m.verdict = Verdict::Unchanged;
        assert_eq!(metric_verdict(&m), "unchanged (not gated)");
        m.verdict = Verdict::Regressed;
        let markdown = MarkdownExporter::table(&[("b", &m)]);
        assert!(
            markdown.contains("| would regress (not gated) |"),
            "{markdown}"
        );
    }

    #[test]
    fn a_figure_in_a_comment_cell_breaks_only_between_the_ends_of_an_interval() {
        assert_eq!(
            unbreakable_figures("99.80 µs (n=12)"),
            "99.80\u{a0}µs (n=12)"
        );
        assert_eq!(
            unbreakable_figures("+10.1 % … +14.0 %"),
            "+10.1\u{a0}% … +14.0\u{a0}%"
        );
        assert_eq!(unbreakable_figures("–"), "–");
    }

    #[test]
    fn a_table_laid_out_in_pieces_is_the_table_of_every_row() {
        use crate::model::metric::{Direction, GateRule, Source};
        use crate::model::report::Design;
        use crate::model::results::{BenchmarkResult, MetricSamples, Provenance, RunResults};
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
                    r.metrics.push(MetricSamples {
                        name: if wide {
                            format!("a_much_longer_metric_name_表µ_{m}")
                        } else {
                            format!("m{m}")
                        },
                        unit: "ns".into(),
                        source: Source::Timer,
                        direction: Direction::Lower,
                        gate: GateRule::default(),
                        values: (0..8)
                            .map(|i| centre * change * (1.0 + 0.001 * f64::from(i)))
                            .collect(),
                        repetition: (0..8).collect(),
                    });
                }
                benchmarks.push(r);
            }
            if extra {
                benchmarks.push(BenchmarkResult::new("only_in_base", Provenance::default()));
            }
            RunResults::of(benchmarks)
        };
        let report = crate::compare::compare(
            &side(1.0, true),
            &side(1.5, false),
            &crate::compare::ComparePolicy::default(),
            Design::Files,
        );
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
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    whole,
                    "color {color}, {dropped:?}"
                );
                // The width measured on the first piece is the whole table's.
                assert_eq!(
                    exporter.layout_width(&rows, &layout),
                    rendered_width(&whole),
                    "color {color}, {dropped:?}"
                );
            }
        }
    }

    #[test]
    fn markdown_escaping_neutralizes_repository_text() {
        assert_eq!(
            escape_markdown("a|b <script>@team `x` *y*\nz"),
            "a&#124;b &lt;script&gt;&#64;&#8205;team \\`x\\` \\*y\\* z"
        );
    }
}
