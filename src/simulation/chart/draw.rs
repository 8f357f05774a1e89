//! Lays a [`Chart`] out and writes it as plain SVG. Text is measured with a conservative width
//! per character of a monospace font, so no two labels overlap whatever font the browser picks
//! from the list; long names are cut with an ellipsis and given whole in a tooltip. The image is
//! as large as its content: wider for a longer window or longer names, taller for more rows.

use std::fmt::Write as _;

use chrono::{DateTime, NaiveTime, TimeZone, Utc};

use super::{Bar, Chart, Group, Mark, MarkKind, Row};
use crate::escape::markup;

pub(super) const FONT: f64 = 12.0;
pub(super) const TITLE_FONT: f64 = 16.0;
/// A character's advance as a share of the font size. Monospace fonts use 0.6; the rest is
/// room for a fallback font.
pub(super) const CHAR_WIDTH: f64 = 0.62;
const FONTS: &str = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace";
const MARGIN: f64 = 16.0;
const GAP: f64 = 12.0;
const INDENT: f64 = 12.0;
const ROW: f64 = 20.0;
const HEADING: f64 = 26.0;
const BAR: f64 = 12.0;
/// Longer names are cut, so one long name does not push the plot off the screen.
const MAX_LABEL_CHARS: usize = 40;
/// Pixels per day: a week is about a screen wide; a longer window keeps days wide enough for
/// their labels, a shorter one is not drawn smaller than a minimum.
const DAY_WIDTH: f64 = 144.0;
const MIN_DAY_WIDTH: f64 = 48.0;
const MIN_PLOT_WIDTH: f64 = 480.0;
const MAX_PLOT_WIDTH: f64 = 2016.0;

pub(super) const AWAKE: &str = "#7cb342";
pub(super) const ASLEEP: &str = "#283593";
const DAY_LINE: &str = "#9e9e9e";
const TEXT: &str = "#212121";
const MUTED: &str = "#616161";

pub(super) fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * CHAR_WIDTH
}

fn truncated(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// At most `width` pixels of `text` at `size`.
fn fitted(text: &str, size: f64, width: f64) -> String {
    let chars = (width / (size * CHAR_WIDTH)).floor().max(1.0);
    // Whole characters that fit a width of at most a few thousand pixels.
    truncated(text, chars as usize)
}

/// Horizontal positions.
struct Columns {
    label_x: f64,
    plot_x: f64,
    plot_width: f64,
    summary_x: f64,
    from: DateTime<Utc>,
    seconds: f64,
    /// Where each local midnight in the window is.
    midnights: Vec<f64>,
}

impl Columns {
    /// A line at each midnight from `top` to `bottom`: on top of the bars, so days read across
    /// them, and below the marks.
    fn draw_midnights(&self, svg: &mut Svg, top: f64, bottom: f64) {
        for x in &self.midnights {
            let _ = writeln!(
                svg.out,
                r#"<line x1="{x:.2}" y1="{top:.1}" x2="{x:.2}" y2="{bottom:.1}" stroke="{DAY_LINE}" stroke-width="1"/>"#
            );
        }
    }

    fn x(&self, at: DateTime<Utc>) -> f64 {
        let offset = (at - self.from).num_milliseconds() as f64 / 1000.0;
        self.plot_x + self.plot_width * (offset / self.seconds).clamp(0.0, 1.0)
    }
}

fn plot_width(seconds: f64) -> f64 {
    let days = seconds / 86_400.0;
    (days * DAY_WIDTH)
        .clamp(MIN_PLOT_WIDTH, MAX_PLOT_WIDTH)
        .max(days * MIN_DAY_WIDTH)
}

struct Svg {
    out: String,
}

impl Svg {
    /// `style`: further attributes, each with a space before it.
    fn text(&mut self, x: f64, y: f64, size: f64, style: &str, text: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}"{style}>{}</text>"#,
            markup(text)
        );
    }

    /// A text cut to `max_chars`, whole in a tooltip when cut.
    fn label(&mut self, x: f64, y: f64, style: &str, text: &str, max_chars: usize) {
        let shown = truncated(text, max_chars);
        if shown == text {
            self.text(x, y, FONT, style, text);
        } else {
            let _ = writeln!(self.out, "<g><title>{}</title>", markup(text));
            self.text(x, y, FONT, style, &shown);
            self.out.push_str("</g>\n");
        }
    }
}

/// The chart as an SVG document.
pub(super) fn svg(chart: &Chart) -> String {
    let seconds = ((chart.until - chart.from).num_milliseconds() as f64 / 1000.0).max(1.0);
    let plot_width = plot_width(seconds);
    let labels = chart.groups.iter().flat_map(|group| {
        std::iter::once(text_width(
            &truncated(&group.namespace, MAX_LABEL_CHARS),
            FONT,
        ))
        .chain(
            group
                .rows
                .iter()
                .map(|row| INDENT + text_width(&truncated(&row.label, MAX_LABEL_CHARS), FONT)),
        )
    });
    let label_width = labels.fold(0.0, f64::max);
    let summaries = chart.groups.iter().flat_map(|group| {
        std::iter::once(text_width(&group.summary, FONT))
            .chain(group.rows.iter().map(|row| text_width(&row.summary, FONT)))
    });
    let summary_width = summaries.fold(0.0, f64::max);
    let mut columns = Columns {
        label_x: MARGIN,
        plot_x: MARGIN + label_width + GAP,
        plot_width,
        summary_x: MARGIN + label_width + GAP + plot_width + GAP,
        from: chart.from,
        seconds,
        midnights: Vec::new(),
    };
    columns.midnights = day_starts(chart)
        .into_iter()
        .skip(1)
        .map(|start| columns.x(start))
        .collect();
    let legend = legend_items(chart);
    let width = [
        columns.summary_x + summary_width + MARGIN,
        2.0 * MARGIN + text_width(&chart.title, TITLE_FONT),
        2.0 * MARGIN + text_width(&chart.subtitle, FONT),
    ]
    .into_iter()
    .fold(0.0, f64::max)
    .ceil();
    let legend_rows = layout_legend(&legend, width - 2.0 * MARGIN);
    let legend_lines = legend_rows
        .iter()
        .map(|&(line, _)| line + 1)
        .max()
        .unwrap_or(0);
    let rows_top =
        MARGIN + TITLE_FONT + 8.0 + FONT + 12.0 + legend_lines as f64 * ROW + FONT + 10.0;
    let rows_height: f64 = chart
        .groups
        .iter()
        .map(|group| HEADING + group.rows.len() as f64 * ROW)
        .sum::<f64>()
        .max(ROW);
    let height = (rows_top + rows_height + MARGIN).ceil();

    let mut svg = Svg { out: String::new() };
    let _ = writeln!(
        svg.out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="{FONTS}" fill="{TEXT}">"#
    );
    let _ = writeln!(svg.out, "<title>{}</title>", markup(&chart.title));
    let _ = writeln!(
        svg.out,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    let mut y = MARGIN + TITLE_FONT;
    svg.text(
        MARGIN,
        y,
        TITLE_FONT,
        r#" font-weight="bold""#,
        &chart.title,
    );
    y += 8.0 + FONT;
    svg.text(
        MARGIN,
        y,
        FONT,
        &format!(r#" fill="{MUTED}""#),
        &chart.subtitle,
    );
    y += 12.0;
    draw_legend(&mut svg, &legend, &legend_rows, y);
    y += legend_lines as f64 * ROW + FONT;
    draw_days(&mut svg, chart, &columns, y, rows_top);
    y = rows_top;
    if chart.groups.is_empty() {
        svg.text(
            columns.plot_x,
            y + ROW - 6.0,
            FONT,
            &format!(r#" fill="{MUTED}""#),
            "no scheduled objects",
        );
    }
    // Repeated on each namespace's heading below the first, so a long chart keeps its dates
    // in view.
    let day_names = day_names(chart, &columns);
    for (index, group) in chart.groups.iter().enumerate() {
        let dates = if index > 0 { &day_names[..] } else { &[] };
        draw_heading(&mut svg, group, &columns, y, width, dates);
        y += HEADING;
        for row in &group.rows {
            draw_row(&mut svg, row, &columns, y);
            y += ROW;
        }
    }
    svg.out.push_str("</svg>\n");
    svg.out
}

/// A namespace's heading row from `y`: its name, its totals, and `dates` between them.
fn draw_heading(
    svg: &mut Svg,
    group: &Group,
    columns: &Columns,
    y: f64,
    width: f64,
    dates: &[(f64, String)],
) {
    let _ = writeln!(
        svg.out,
        r#"<g class="namespace"><line x1="{MARGIN}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{DAY_LINE}" stroke-width="0.5"/>"#,
        width - MARGIN
    );
    let baseline = y + HEADING - 8.0;
    svg.label(
        columns.label_x,
        baseline,
        r#" font-weight="bold""#,
        &group.namespace,
        MAX_LABEL_CHARS,
    );
    svg.text(
        columns.summary_x,
        baseline,
        FONT,
        r#" font-weight="bold""#,
        &group.summary,
    );
    columns.draw_midnights(svg, y, y + HEADING);
    for (x, name) in dates {
        svg.text(*x, baseline, FONT, &format!(r#" fill="{MUTED}""#), name);
    }
    svg.out.push_str("</g>\n");
}

fn draw_row(svg: &mut Svg, row: &Row, columns: &Columns, y: f64) {
    let _ = writeln!(
        svg.out,
        r#"<g class="row" data-object="{}">"#,
        markup(&row.object)
    );
    let baseline = y + ROW / 2.0 + FONT * 0.35;
    svg.label(
        columns.label_x + INDENT,
        baseline,
        "",
        &row.label,
        MAX_LABEL_CHARS,
    );
    for stretch in &row.bars {
        draw_bar(svg, stretch, columns, y + (ROW - BAR) / 2.0);
    }
    columns.draw_midnights(svg, y, y + ROW);
    if let Some(note) = &row.note {
        let note = fitted(note, FONT, columns.plot_width);
        svg.text(
            columns.plot_x,
            baseline,
            FONT,
            &format!(r#" fill="{MUTED}" font-style="italic""#),
            &note,
        );
    }
    for mark in &row.marks {
        draw_mark(svg, mark, columns.x(mark.at), y);
    }
    svg.text(columns.summary_x, baseline, FONT, "", &row.summary);
    svg.out.push_str("</g>\n");
}

fn draw_bar(svg: &mut Svg, stretch: &Bar, columns: &Columns, top: f64) {
    let x = columns.x(stretch.start);
    let width = columns.x(stretch.end) - x;
    let (class, fill) = if stretch.asleep {
        ("asleep", ASLEEP)
    } else {
        ("awake", AWAKE)
    };
    let _ = writeln!(
        svg.out,
        r#"<rect class="{class}" x="{x:.2}" y="{top:.1}" width="{width:.2}" height="{BAR}" fill="{fill}"><title>{}</title></rect>"#,
        markup(&stretch.tooltip)
    );
}

fn mark_style(kind: MarkKind) -> (&'static str, &'static str) {
    match kind {
        MarkKind::Transition => ("transition", "#212121"),
        MarkKind::EarlyWake => ("early-wake", "#6a1b9a"),
        MarkKind::CatchUp => ("catch-up", "#ff6f00"),
        MarkKind::Override => ("override", "#d81b60"),
        MarkKind::Holiday => ("holiday", "#00897b"),
    }
}

/// The shape of a mark of `kind` centred on `x`, in a row from `top` (or a legend swatch).
fn mark_shape(kind: MarkKind, x: f64, top: f64) -> String {
    let (class, fill) = mark_style(kind);
    let stroke = r#"stroke="white" stroke-width="1""#;
    match kind {
        // A pointer from above onto the bar's edge.
        MarkKind::Transition | MarkKind::EarlyWake => format!(
            r#"<path class="{class}" d="M{:.2} {:.1} L{:.2} {:.1} L{x:.2} {:.1} Z" fill="{fill}" {stroke}>"#,
            x - 4.5,
            top,
            x + 4.5,
            top,
            top + 8.0,
        ),
        MarkKind::CatchUp => format!(
            r#"<path class="{class}" d="M{x:.2} {:.1} L{:.2} {:.1} L{x:.2} {:.1} L{:.2} {:.1} Z" fill="{fill}" {stroke}>"#,
            top + 2.0,
            x + 6.0,
            top + 10.0,
            top + 18.0,
            x - 6.0,
            top + 10.0,
        ),
        MarkKind::Override => format!(
            r#"<circle class="{class}" cx="{x:.2}" cy="{:.1}" r="5" fill="{fill}" {stroke}>"#,
            top + 10.0
        ),
        MarkKind::Holiday => format!(
            r#"<rect class="{class}" x="{:.2}" y="{:.1}" width="10" height="10" fill="{fill}" {stroke}>"#,
            x - 5.0,
            top + 5.0
        ),
    }
}

fn closing(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::Transition | MarkKind::EarlyWake | MarkKind::CatchUp => "</path>",
        MarkKind::Override => "</circle>",
        MarkKind::Holiday => "</rect>",
    }
}

fn draw_mark(svg: &mut Svg, mark: &Mark, x: f64, top: f64) {
    let _ = writeln!(
        svg.out,
        "{}<title>{}</title>{}",
        mark_shape(mark.kind, x, top),
        markup(&mark.tooltip),
        closing(mark.kind)
    );
}

/// A legend entry: a bar colour, or a kind of mark.
enum Legend {
    Bar { asleep: bool },
    Mark(MarkKind),
}

impl Legend {
    fn text(&self) -> &'static str {
        match self {
            Legend::Bar { asleep: false } => "awake",
            Legend::Bar { asleep: true } => "asleep (scaled down or suspended)",
            Legend::Mark(MarkKind::Transition) => "transition",
            Legend::Mark(MarkKind::EarlyWake) => "early wake, ready by its hour (ready-by)",
            Legend::Mark(MarkKind::CatchUp) => "catch-up of a missed transition",
            Legend::Mark(MarkKind::Override) => "override on demand",
            Legend::Mark(MarkKind::Holiday) => "holiday: nothing wakes",
        }
    }

    fn width(&self) -> f64 {
        14.0 + 6.0 + text_width(self.text(), FONT)
    }
}

/// Only what the chart shows.
fn legend_items(chart: &Chart) -> Vec<Legend> {
    let rows = || chart.groups.iter().flat_map(|group| &group.rows);
    let mut items: Vec<Legend> = [false, true]
        .into_iter()
        .filter(|&asleep| {
            rows()
                .flat_map(|row| &row.bars)
                .any(|stretch| stretch.asleep == asleep)
        })
        .map(|asleep| Legend::Bar { asleep })
        .collect();
    let mut kinds: Vec<MarkKind> = rows()
        .flat_map(|row| &row.marks)
        .map(|mark| mark.kind)
        .collect();
    kinds.sort();
    kinds.dedup();
    items.extend(kinds.into_iter().map(Legend::Mark));
    items
}

/// Each item's line and its x from the left margin, wrapped at `width`.
fn layout_legend(items: &[Legend], width: f64) -> Vec<(usize, f64)> {
    let mut line = 0;
    let mut x = 0.0;
    items
        .iter()
        .map(|item| {
            if x > 0.0 && x + item.width() > width {
                line += 1;
                x = 0.0;
            }
            let placed = (line, x);
            x += item.width() + 2.0 * GAP;
            placed
        })
        .collect()
}

fn draw_legend(svg: &mut Svg, items: &[Legend], places: &[(usize, f64)], top: f64) {
    svg.out.push_str("<g class=\"legend\">\n");
    for (item, &(line, offset)) in items.iter().zip(places) {
        let x = MARGIN + offset;
        let y = top + line as f64 * ROW;
        match item {
            Legend::Bar { asleep } => {
                let fill = if *asleep { ASLEEP } else { AWAKE };
                let _ = writeln!(
                    svg.out,
                    r#"<rect x="{x:.1}" y="{:.1}" width="14" height="{BAR}" fill="{fill}"/>"#,
                    y + (ROW - BAR) / 2.0
                );
            }
            Legend::Mark(kind) => {
                // A transition's pointer sits on a bar's top edge; alone, it is centred.
                let top = match kind {
                    MarkKind::Transition | MarkKind::EarlyWake => y + 6.0,
                    _ => y,
                };
                let _ = writeln!(
                    svg.out,
                    "{}{}",
                    mark_shape(*kind, x + 7.0, top),
                    closing(*kind)
                );
            }
        }
        svg.text(x + 20.0, y + ROW / 2.0 + FONT * 0.35, FONT, "", item.text());
    }
    svg.out.push_str("</g>\n");
}

/// The start of each day in the window, in the chart's zone: the window's own start, then each
/// local midnight.
fn day_starts(chart: &Chart) -> Vec<DateTime<Utc>> {
    let timezone = chart.timezone;
    let first_day = chart.from.with_timezone(&timezone).date_naive();
    let last_day = chart.until.with_timezone(&timezone).date_naive();
    let midnights = first_day
        .iter_days()
        .skip(1)
        .take_while(|day| *day <= last_day)
        .filter_map(|day| {
            // Where a clock change skips midnight, the day starts an hour later.
            [
                NaiveTime::MIN,
                NaiveTime::from_hms_opt(1, 0, 0).unwrap_or(NaiveTime::MIN),
            ]
            .into_iter()
            .find_map(|time| timezone.from_local_datetime(&day.and_time(time)).earliest())
        })
        .map(|start| start.with_timezone(&Utc))
        .filter(|start| *start > chart.from && *start < chart.until);
    std::iter::once(chart.from).chain(midnights).collect()
}

/// The days' names and where they go: each beside its day's start, left out where it would
/// run into the one before or out of the plot.
fn day_names(chart: &Chart, columns: &Columns) -> Vec<(f64, String)> {
    let mut free_from = f64::MIN;
    let mut names = Vec::new();
    for start in day_starts(chart) {
        let x = columns.x(start) + 3.0;
        let name = start
            .with_timezone(&chart.timezone)
            .format("%a %-d %b")
            .to_string();
        let end = x + text_width(&name, FONT);
        if x >= free_from && end <= columns.plot_x + columns.plot_width {
            free_from = end + GAP;
            names.push((x, name));
        }
    }
    names
}

/// The days' names on the axis at `baseline`, and the midnights' lines from there down to the
/// rows at `bottom`.
fn draw_days(svg: &mut Svg, chart: &Chart, columns: &Columns, baseline: f64, bottom: f64) {
    svg.out.push_str("<g class=\"days\">\n");
    columns.draw_midnights(svg, baseline + 4.0, bottom);
    for (x, name) in day_names(chart, columns) {
        svg.text(x, baseline, FONT, "", &name);
    }
    svg.out.push_str("</g>\n");
}
