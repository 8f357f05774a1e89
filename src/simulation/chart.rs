//! The plan's window as a chart (`plan -o svg`): one row per object, grouped by namespace,
//! awake and asleep as bars, the controller's transitions marked. This file is the chart's
//! model, made from the plan; `chart/draw.rs` lays it out and writes the SVG.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{
    Plan, PlannedHoliday, Step, Timeline,
    savings::{Savings, Totals},
};
use crate::figures::{amount, thousands};
use crate::{cost::Currency, schedule::Direction, workloads::target::TargetKind};

/// The plan of the window from `from` to `until` drawn as an SVG image.
pub fn render_svg(
    plan: &Plan,
    savings: &Savings,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> String {
    draw::svg(&chart(plan, savings, from, until))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// With the totals of the whole window.
    pub title: String,
    /// The window and the zone its days are drawn in.
    pub subtitle: String,
    pub timezone: Tz,
    pub from: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub groups: Vec<Group>,
}

/// The objects of one namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub namespace: String,
    pub summary: String,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `Kind/name`, under its namespace's heading.
    pub label: String,
    /// `namespace/Kind/name`, for the tooltip.
    pub object: String,
    pub bars: Vec<Bar>,
    pub marks: Vec<Mark>,
    pub summary: String,
    /// Said in place of bars that cannot be drawn.
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub asleep: bool,
    pub tooltip: String,
}

/// Something that happens to an object at an instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at: DateTime<Utc>,
    pub kind: MarkKind,
    pub tooltip: String,
}

/// What a mark stands for; each kind has its own shape and colour, and a legend entry when
/// present: transitions, catch-ups, what an override on demand (`awake-until`, `asleep-until`)
/// did, and the first day of holidays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkKind {
    Transition,
    /// A `ready-by` wake, its warm-up ahead of its hour.
    EarlyWake,
    CatchUp,
    Override,
    Holiday,
}

/// The chart of `plan`: days in the zone of its first object, or UTC without one.
pub fn chart(plan: &Plan, savings: &Savings, from: DateTime<Utc>, until: DateTime<Utc>) -> Chart {
    let first = plan.timelines.first();
    let timezone = first.map_or(Tz::UTC, |timeline| timeline.timezone);
    let zone_source = match first {
        Some(timeline) => format!(
            "the zone of {}/{}/{}",
            timeline.namespace, timeline.kind, timeline.name
        ),
        None => "no scheduled object".to_string(),
    };
    let mut groups: Vec<Group> = Vec::new();
    for timeline in &plan.timelines {
        let row = row(timeline, &plan.holidays, savings, timezone);
        match groups.last_mut() {
            Some(group) if group.namespace == timeline.namespace => group.rows.push(row),
            _ => groups.push(Group {
                namespace: timeline.namespace.clone(),
                summary: savings
                    .namespaces
                    .iter()
                    .find(|namespace| namespace.namespace == timeline.namespace)
                    .map(|namespace| describe_briefly(&namespace.totals, savings.currency.as_ref()))
                    .unwrap_or_default(),
                rows: vec![row],
            }),
        }
    }
    Chart {
        title: format!(
            "cronscaler plan: {}",
            describe(&savings.total, savings.currency.as_ref())
        ),
        subtitle: format!(
            "{} to {}, times in {timezone} ({zone_source})",
            local(from, timezone),
            local(until, timezone)
        ),
        timezone,
        from,
        until,
        groups,
    }
}

fn row(timeline: &Timeline, holidays: &[PlannedHoliday], savings: &Savings, timezone: Tz) -> Row {
    let object = format!("{}/{}/{}", timeline.namespace, timeline.kind, timeline.name);
    let amount_of = |replicas| timeline.kind.amount(replicas);
    let bars = timeline
        .segments()
        .map(|segment| {
            let state = segment.state;
            let (word, what) = if state.asleep() && timeline.kind.is_on_off() {
                ("asleep", timeline.kind.amount(0))
            } else if state.asleep() {
                (
                    "asleep",
                    format!("{} of {}", state.replicas, amount_of(state.awake)),
                )
            } else {
                ("awake", amount_of(state.replicas))
            };
            Bar {
                start: segment.start,
                end: segment.end,
                asleep: state.asleep(),
                tooltip: format!(
                    "{object}: {word}, {what}, {} to {}",
                    local(segment.start, timezone),
                    local(segment.end, timezone)
                ),
            }
        })
        .collect();
    let holidays = holidays.iter().filter(|holiday| {
        holiday.namespace == timeline.namespace
            && holiday.kind == timeline.kind.as_str()
            && holiday.name == timeline.name
    });
    let marks = timeline
        .steps
        .iter()
        .map(|step| mark(timeline.kind, step, timezone))
        .chain(holidays.map(|holiday| Mark {
            at: holiday.at,
            kind: MarkKind::Holiday,
            tooltip: format!("holiday {}..{}: nothing wakes", holiday.first, holiday.last),
        }))
        .collect();
    let summary = savings
        .objects
        .iter()
        .find(|saved| {
            saved.namespace == timeline.namespace
                && saved.kind == timeline.kind.as_str()
                && saved.name == timeline.name
        })
        .map(|saved| describe_briefly(&saved.totals, savings.currency.as_ref()))
        .unwrap_or_default();
    Row {
        label: format!("{}/{}", timeline.kind, timeline.name),
        object,
        bars,
        marks,
        summary,
        note: timeline
            .summarised
            .then(|| "too many transitions to draw: see the table".to_string()),
    }
}

fn mark(kind: TargetKind, step: &Step, timezone: Tz) -> Mark {
    let action = match step.direction {
        Some(Direction::Down) => "down",
        Some(Direction::Up) => "up",
        None => "restore",
    };
    let (mark_kind, how) = match (&step.on_demand, step.catch_up, step.ready_by) {
        (Some(note), ..) => (MarkKind::Override, format!(" ({note})")),
        (None, true, _) => (MarkKind::CatchUp, " (catch-up)".to_string()),
        (None, false, Some(ready_by)) => (
            MarkKind::EarlyWake,
            format!(" (early, ready by {})", local(ready_by, timezone)),
        ),
        (None, false, None) => (MarkKind::Transition, String::new()),
    };
    Mark {
        at: step.at,
        kind: mark_kind,
        tooltip: format!(
            "{action}{how} at {}: {} -> {}",
            local(step.at, timezone),
            kind.amount(step.from),
            kind.amount(step.state.replicas)
        ),
    }
}

/// E.g. `113.00 h asleep, 226.00 replica-hours withheld, 12.00 GPU-hours, 226 runs skipped,
/// worth $5.09`: money where prices were given in `currency`.
fn describe(totals: &Totals, currency: Option<&Currency>) -> String {
    let mut parts = vec![format!("{} h asleep", amount(Some(totals.hours_asleep)))];
    if let Some(replica_hours) = totals.replica_hours_withheld {
        parts.push(format!(
            "{} replica-hours withheld",
            amount(Some(replica_hours))
        ));
    }
    if let Some(gpu_hours) = totals.gpu_hours_withheld {
        parts.push(format!("{} GPU-hours", amount(Some(gpu_hours))));
    }
    if let Some(runs) = totals.skipped_runs {
        parts.push(format!("{} runs skipped", thousands(runs)));
    }
    if let Some(currency) = currency {
        // What the freed requests are worth: saved only once the nodes go (docs/savings.md).
        let worth = totals
            .money(currency)
            .map_or("-".into(), |money| money.to_string());
        parts.push(format!("worth {worth}"));
    }
    parts.join(", ")
}

/// Beside a row, where a long text would widen the chart: `113.00 h asleep, 226.00
/// replica-h, worth $5.09`.
fn describe_briefly(totals: &Totals, currency: Option<&Currency>) -> String {
    describe(totals, currency)
        .replace(" replica-hours withheld", " replica-h")
        .replace(" GPU-hours", " GPU-h")
}

fn local(at: DateTime<Utc>, timezone: Tz) -> String {
    at.with_timezone(&timezone)
        .format("%a %Y-%m-%d %H:%M %Z")
        .to_string()
}

mod draw;

#[cfg(test)]
mod tests;
