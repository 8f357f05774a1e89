//! The plan as a table a person reads.

use std::fmt::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};

pub(super) use crate::figures::{amount, thousands};
use crate::{
    commands::table,
    simulation::{Plan, PlannedSummary, Savings, Totals},
    workloads::target::TargetKind,
};

/// The plan as a table a person reads: local time, UTC, object, action, replicas. A summary
/// is a row at its first transition whose text spans the last two columns, so its length does
/// not widen them. What sleeping saves follows, in a table of its own.
pub fn render_table(plan: &Plan, savings: &Savings) -> String {
    let header = vec![
        "LOCAL TIME".to_string(),
        "UTC".into(),
        "OBJECT".into(),
        "ACTION".into(),
        "REPLICAS".into(),
    ];
    let transitions = plan.transitions.iter().map(|transition| {
        let labels: Vec<&str> = transition
            .note
            .as_deref()
            .into_iter()
            .chain(transition.catch_up.then_some("catch-up"))
            .collect();
        let action = if labels.is_empty() {
            transition.action.clone()
        } else {
            format!("{} ({})", transition.action, labels.join(", "))
        };
        let said = vec![
            action,
            // A CronJob has no replicas: it runs or is suspended. What happens to the HPAs
            // follows, in the last column, which widens nothing.
            std::iter::once(match TargetKind::named(&transition.kind) {
                Some(kind) if kind.is_on_off() => format!(
                    "{} -> {}",
                    kind.amount(transition.from),
                    kind.amount(transition.to)
                ),
                _ => format!("{} -> {}", transition.from, transition.to),
            })
            .chain(transition.hpas.iter().cloned())
            .collect::<Vec<_>>()
            .join("; "),
        ];
        let object = (&transition.namespace, &transition.kind, &transition.name);
        row((transition.at, &transition.local_time), object, false, said)
    });
    let summaries = plan.summaries.iter().map(|summary| {
        let object = (&summary.namespace, &summary.kind, &summary.name);
        let said = vec![describe_summary(summary)];
        row(
            (summary.first, &summary.first_local_time),
            object,
            true,
            said,
        )
    });
    let holidays = plan.holidays.iter().map(|holiday| {
        let said = vec![
            "holiday".to_string(),
            if holiday.first == holiday.last {
                format!("{}: nothing wakes", holiday.first)
            } else {
                format!("{}..{}: nothing wakes", holiday.first, holiday.last)
            },
        ];
        let object = (&holiday.namespace, &holiday.kind, &holiday.name);
        row((holiday.at, &holiday.local_time), object, true, said)
    });
    // Stable, so an object's summaries stay in the order of the plan's.
    let mut rows: Vec<_> = transitions.chain(summaries).chain(holidays).collect();
    rows.sort_by_key(|(key, _)| *key);
    let rows: Vec<Vec<String>> = std::iter::once(header)
        .chain(rows.into_iter().map(|(_, row)| row))
        .collect();
    let mut out = table::aligned(&rows);
    if plan.transitions.is_empty() && plan.summaries.is_empty() {
        let _ = writeln!(out, "(no transitions in the window)");
    }
    for note in &plan.notes {
        let _ = writeln!(
            out,
            "NOTE {}/{}/{}: {}",
            note.namespace, note.kind, note.name, note.note
        );
    }
    for owned in &plan.gitops {
        let _ = writeln!(
            out,
            "GITOPS {}/{}/{}: {}",
            owned.namespace, owned.kind, owned.name, owned.shown
        );
        for line in owned.shown.fix.iter().flat_map(|fix| fix.lines()) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for object in &plan.invalid {
        let _ = writeln!(
            out,
            "INVALID {}/{}/{}:",
            object.namespace, object.kind, object.name
        );
        for problem in &object.problems {
            let _ = writeln!(out, "  {problem}");
        }
    }
    out.push_str(&render_savings(savings));
    out
}

/// What the table's rows are sorted by: when, the object, and whether the row follows the
/// transitions of that instant (a summary, a holiday).
type RowKey<'a> = (DateTime<Utc>, &'a String, &'a String, &'a String, bool);

/// A row of the table: its times and its object, then what is `said` of it.
fn row<'a>(
    (at, local_time): (DateTime<Utc>, &str),
    (namespace, kind, name): (&'a String, &'a String, &'a String),
    after_transitions: bool,
    said: Vec<String>,
) -> (RowKey<'a>, Vec<String>) {
    let placed = [
        local_time.to_string(),
        at.to_rfc3339_opts(SecondsFormat::Secs, true),
        format!("{namespace}/{kind}/{name}"),
    ];
    let key = (at, namespace, kind, name, after_transitions);
    (key, placed.into_iter().chain(said).collect())
}

/// Hours asleep and what they withhold, per object, a subtotal per namespace and the total;
/// numbers right-aligned, `-` where unknown or not applicable.
fn render_savings(savings: &Savings) -> String {
    if savings.objects.is_empty() && savings.not_computed.is_empty() {
        return String::new();
    }
    // The GPU column only where a GPU sleeps: most plans have none.
    let gpus = savings.total.gpu_hours_withheld.is_some();
    let mut header = vec![
        "SAVINGS".to_string(),
        "HOURS ASLEEP".into(),
        "REPLICA-HOURS".into(),
        "CPU CORE-HOURS".into(),
        "MEMORY GIB-HOURS".into(),
    ];
    if gpus {
        header.push("GPU-HOURS".into());
    }
    header.push("SKIPPED RUNS".into());
    if savings.currency.is_some() {
        header.push("COST".into());
    }
    let row = |label: String, totals: &Totals| {
        let mut cells = vec![
            label,
            amount(Some(totals.hours_asleep)),
            amount(totals.replica_hours_withheld),
            amount(totals.cpu_core_hours_withheld),
            amount(totals.memory_gib_hours_withheld),
        ];
        if gpus {
            cells.push(amount(totals.gpu_hours_withheld));
        }
        cells.push(
            totals
                .skipped_runs
                .map_or_else(|| "-".to_string(), thousands),
        );
        if let Some(currency) = &savings.currency {
            let cost = totals.money(currency);
            cells.push(cost.map_or_else(|| "-".to_string(), |money| money.to_string()));
        }
        cells
    };
    let mut rows = vec![header];
    for namespace in &savings.namespaces {
        rows.extend(
            savings
                .objects
                .iter()
                .filter(|object| object.namespace == namespace.namespace)
                .map(|object| {
                    let label = format!("{}/{}/{}", object.namespace, object.kind, object.name);
                    row(label, &object.totals)
                }),
        );
        rows.push(row(
            format!("{} (subtotal)", namespace.namespace),
            &namespace.totals,
        ));
    }
    rows.push(row("TOTAL".into(), &savings.total));
    let mut widths = vec![0usize; rows[0].len()];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::from("\n");
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(column, (cell, &width))| match column {
                0 => format!("{cell:<width$}"),
                _ => format!("{cell:>width$}"),
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    if !savings.not_computed.is_empty() {
        let _ = writeln!(
            out,
            "not in the savings, too many transitions to step through: {}",
            savings.not_computed.join(", ")
        );
    }
    for line in savings.notes() {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// E.g. `down every second (604,801 times), first 2026-11-20T00:00:00Z, last ...`.
pub(super) fn describe_summary(summary: &PlannedSummary) -> String {
    let first = summary.first.to_rfc3339_opts(SecondsFormat::Secs, true);
    let last = summary.last.to_rfc3339_opts(SecondsFormat::Secs, true);
    let Some(shortest) = summary.shortest_interval_seconds else {
        return format!("{} once, at {first}", summary.action);
    };
    let often = if summary.evenly_spaced {
        "every"
    } else {
        "as often as every"
    };
    format!(
        "{} {often} {} ({} times), first {first}, last {last}",
        summary.action,
        interval(shortest),
        thousands(summary.count)
    )
}

/// `second`, `5 minutes`, `90 seconds`: in the largest unit that divides it.
pub(super) fn interval(seconds: i64) -> String {
    let units = [
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    let (size, unit) = units
        .into_iter()
        .find(|(size, _)| seconds % size == 0)
        .unwrap_or((1, "second"));
    match seconds / size {
        1 => unit.to_string(),
        n => format!("{n} {unit}s"),
    }
}
