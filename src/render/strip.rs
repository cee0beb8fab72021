//! The HTML report's strip plot, written as SVG directly: base and head samples of one metric
//! on one value axis, each side in its own row with a deterministic jitter, medians marked.
//!
//! A report of a large suite draws hundreds of these. `plotters`' SVG backend writes every
//! dot and grid line as an element with all its attributes (about 10 KB a chart of 60
//! samples); here the dots of a side share one group's style and a chart of 60 samples is
//! about 3 KB. The timelines and the history dashboard, a few charts a page, stay on
//! `plotters`.

use std::fmt::Write as _;

use plotters::style::RGBColor;

use crate::render::escape::escape_html;

/// A colour as CSS writes it, `#1f77b4`.
pub(crate) fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 200.0;
/// The plot area: left of it the row labels, below it the axis and its ticks.
const LEFT: f64 = 60.0;
const RIGHT: f64 = 630.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 162.0;

/// One side of a strip plot: its row (0 at the bottom), label, colour and values.
pub struct Row<'a> {
    pub label: &'static str,
    pub color: RGBColor,
    pub values: &'a [f64],
    pub median: Option<f64>,
}

/// The SVG of a strip plot over `range` (already padded), titled `caption`, with `unit` under
/// the axis. Values are finite; the caller scaled them to the unit shown.
pub fn strip_plot(caption: &str, unit: &str, range: (f64, f64), rows: &[Row<'_>]) -> String {
    let (lo, hi) = range;
    let x = |v: f64| LEFT + (v - lo) / (hi - lo) * (RIGHT - LEFT);
    // Rows sit at equal heights inside the plot area, the first at the bottom.
    let row_height = (BOTTOM - TOP) / rows.len().max(1) as f64;
    let y = |row: usize, offset: f64| BOTTOM - row_height * (row as f64 + 0.5 + offset);
    let mut s = String::with_capacity(3072);
    let _ = write!(
        s,
        "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"10\">\n\
         <rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#fff\"/>\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
        WIDTH / 2.0,
        escape_html(caption)
    );
    // The axis, its ticks and their labels, and a light line up from each tick.
    let _ = writeln!(
        s,
        "<path d=\"M{LEFT} {BOTTOM}H{RIGHT}M{LEFT} {TOP}V{BOTTOM}\" stroke=\"#000\" fill=\"none\"/>"
    );
    let mut grid = String::new();
    for tick in ticks(lo, hi) {
        let tx = round1(x(tick));
        let _ = write!(grid, "M{tx} {BOTTOM}V{TOP}");
        let (ty, label) = (BOTTOM + 16.0, tick_label(tick, hi - lo));
        let _ = writeln!(
            s,
            "<path d=\"M{tx} {BOTTOM}v5\" stroke=\"#000\"/><text x=\"{tx}\" y=\"{ty}\" text-anchor=\"middle\">{label}</text>"
        );
    }
    let (ux, uy, unit) = ((LEFT + RIGHT) / 2.0, HEIGHT - 6.0, escape_html(unit));
    let _ = writeln!(
        s,
        "<path d=\"{grid}\" stroke=\"#000\" stroke-opacity=\"0.15\"/>\n<text x=\"{ux}\" y=\"{uy}\" text-anchor=\"middle\">{unit}</text>"
    );
    for (row, r) in rows.iter().enumerate() {
        let color = css(r.color);
        let (lx, ly, label) = (LEFT - 6.0, round1(y(row, 0.0)), r.label);
        let _ = writeln!(
            s,
            "<text x=\"{lx}\" y=\"{ly}\" text-anchor=\"end\" dominant-baseline=\"middle\">{label}</text>"
        );
        let _ = writeln!(s, "<g fill=\"{color}\" fill-opacity=\"0.6\">");
        for (i, &v) in r.values.iter().enumerate() {
            let jitter = ((i * 37) % 17) as f64 / 17.0 * 0.5 - 0.25;
            let (cx, cy) = (round1(x(v)), round1(y(row, jitter)));
            let _ = writeln!(s, "<circle cx=\"{cx}\" cy=\"{cy}\" r=\"3\"/>");
        }
        s.push_str("</g>\n");
        if let Some(m) = r.median {
            let (mx, low, high) = (round1(x(m)), round1(y(row, -0.4)), round1(y(row, 0.4)));
            let path = format!("M{mx} {low}V{high}");
            let _ = writeln!(
                s,
                "<path d=\"{path}\" stroke=\"{color}\" stroke-width=\"2\"/>"
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// A coordinate to a tenth of a pixel: finer than any screen, and a fifth of the digits.
fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Tick positions at a "nice" step (1, 2 or 5 times a power of ten) giving about five ticks
/// over the range.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return Vec::new();
    }
    let step = nice_step(span);
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    let mut out = Vec::new();
    let mut k = first;
    while k <= last && out.len() < 20 {
        out.push(k * step);
        k += 1.0;
    }
    out
}

fn nice_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = [(1.5, 1.0), (3.5, 2.0), (7.5, 5.0)]
        .into_iter()
        .find(|&(below, _)| fraction < below);
    nice.map_or(10.0, |(_, nice)| nice) * magnitude
}

/// A tick's label with as many decimals as the step needs.
fn tick_label(v: f64, span: f64) -> String {
    let step = nice_step(span);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let text = format!("{v:.decimals$}");
    // `-0.0` and `-0` read as zero.
    let unsigned = text.trim_start_matches('-');
    if unsigned.chars().all(|c| c == '0' || c == '.') {
        unsigned.to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_on_nice_steps_inside_the_range() {
        let labels = |lo: f64, hi: f64| -> Vec<String> {
            let ticks = ticks(lo, hi).into_iter();
            ticks.map(|t| tick_label(t, hi - lo)).collect()
        };
        assert_eq!(labels(0.93, 1.11), ["0.95", "1.00", "1.05", "1.10"]);
        let t = ticks(-3.0, 97.0);
        assert_eq!(t, [0.0, 20.0, 40.0, 60.0, 80.0]);
        assert!(ticks(1.0, 1.0).is_empty());
        assert_eq!(tick_label(-0.0, 0.18), "0.00");
        assert_eq!(tick_label(40.0, 100.0), "40");
    }

    #[test]
    fn a_plot_has_a_dot_per_value_a_median_mark_per_side_and_escaped_text() {
        let svg = strip_plot(
            "a<b> & \"c\"",
            "µs",
            (0.0, 10.0),
            &[
                Row {
                    label: "base",
                    color: RGBColor(1, 2, 3),
                    values: &[1.0, 2.0, 3.0],
                    median: Some(2.0),
                },
                Row {
                    label: "head",
                    color: RGBColor(4, 5, 6),
                    values: &[4.0, 5.0],
                    median: Some(4.5),
                },
            ],
        );
        assert_eq!(svg.matches("<circle").count(), 5);
        assert_eq!(svg.matches("stroke-width=\"2\"").count(), 2);
        assert_contains!(svg, "a&lt;b&gt; &amp; &quot;c&quot;");
        assert!(!svg.contains("<b>"));
        // The head row above the base row, the dots inside the plot area.
        assert_contains!(svg, "<circle cx=\"117\"");
    }
}
