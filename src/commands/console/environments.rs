//! What the console shows: each environment (a scheduled Namespace) as one, from the rows
//! `status` gives of its workloads and the readiness the wake-up backend waits for. Pure.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::{
    commands::status::{Next, Row, State, Status, summary_of},
    cost::Money,
    namespaces::NamespaceSchedules,
    schedule::{SCHEDULE_KEYS, TIMEZONE},
    simulation::Totals,
    wake::readiness::Readiness,
};

/// How an environment is, as a person would say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    Awake,
    Asleep,
    /// Asleep because nobody used it (sleep when idle).
    Idle,
    /// Awake by its schedule or on demand, its workloads not all ready yet: those that are not.
    Waking {
        readiness: Readiness,
        unready: Vec<String>,
    },
    /// Some workloads asleep, others awake.
    Partly,
}

impl Look {
    pub fn as_str(&self) -> &'static str {
        match self {
            Look::Awake => "awake",
            Look::Asleep => "asleep",
            Look::Idle => "idle",
            Look::Waking { .. } => "waking",
            Look::Partly => "partly asleep",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    pub namespace: String,
    pub look: Look,
    /// The last transition, and its local time.
    pub since: Option<(DateTime<Utc>, String)>,
    /// The next transition of any of its workloads.
    pub next: Option<Next>,
    /// Its schedule in words: the rules it follows and where from.
    pub schedule: String,
    pub timezone: Tz,
    /// Why it is as it is against its schedule, and until when: an override and who set it, a
    /// grace period, sleep when idle.
    pub why: Option<String>,
    pub workloads: Vec<Row>,
    /// What its workloads asleep withhold now.
    pub replicas_asleep: i64,
    /// What sleeping saves over the coming week, as `plan --for 7d` counts it.
    pub week: Option<Week>,
}

/// What each Namespace of `status` has its workloads read as readiness.
pub type Readinesses = BTreeMap<String, (Readiness, Vec<String>)>;

/// What sleeping saves one Namespace over the coming week, and in money where prices were
/// given.
#[derive(Debug, Clone, PartialEq)]
pub struct Week {
    /// Its workloads' together.
    pub totals: Totals,
    /// The longest any of its workloads is asleep: the Namespace's own hours asleep, at most the
    /// week's (the totals add every workload's).
    pub hours_asleep: f64,
    pub cost: Option<Money>,
}

/// What sleeping saves each Namespace over the coming week.
pub type Weeks = BTreeMap<String, Week>;

/// Every environment of `status`, by Namespace, with the workloads that are neither invalid nor
/// left out deciding its look.
pub fn environments(
    status: &Status,
    (readinesses, weeks): (&Readinesses, &Weeks),
    schedules: &NamespaceSchedules,
    default_timezone: Tz,
) -> Vec<Environment> {
    let mut by_namespace: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for row in &status.objects {
        by_namespace.entry(&row.namespace).or_default().push(row);
    }
    (by_namespace.into_iter())
        .map(|(namespace, rows)| {
            let annotations = schedules.annotations_of(namespace).unwrap_or_default();
            let timezone = (annotations.get(TIMEZONE))
                .and_then(|zone| zone.parse().ok())
                .unwrap_or(default_timezone);
            let readiness = readinesses.get(namespace);
            Environment {
                namespace: namespace.to_string(),
                look: look(&rows, readiness),
                since: (rows.iter())
                    .filter_map(|row| Some((row.since?, row.since_local_time.clone()?)))
                    .max(),
                next: (rows.iter())
                    .filter_map(|row| row.next.clone())
                    .min_by_key(|next| next.at),
                schedule: words(&annotations, schedules.governed_by(namespace), timezone),
                timezone,
                why: why(&rows),
                replicas_asleep: summary_of(rows.iter().copied()).replicas_asleep,
                week: weeks.get(namespace).cloned(),
                workloads: rows.into_iter().cloned().collect(),
            }
        })
        .collect()
}

fn look(rows: &[&Row], readiness: Option<&(Readiness, Vec<String>)>) -> Look {
    let counted: Vec<&&Row> = (rows.iter())
        .filter(|row| matches!(row.state, State::Awake | State::Asleep | State::Overridden))
        .collect();
    let asleep = counted.iter().filter(|row| row.is_asleep()).count();
    match (asleep, readiness) {
        (0, Some((readiness, unready))) if !readiness.all_ready() => Look::Waking {
            readiness: *readiness,
            unready: unready.clone(),
        },
        (0, _) => Look::Awake,
        (asleep, _) if asleep < counted.len() => Look::Partly,
        _ if (counted.iter())
            .all(|row| row.reasons.iter().any(|r| r.starts_with("idle since"))) =>
        {
            Look::Idle
        }
        _ => Look::Asleep,
    }
}

/// Why the environment is as it is: an override (and who set it) first, else what its rows say.
fn why(rows: &[&Row]) -> Option<String> {
    let overridden = rows.iter().find(|row| row.state == State::Overridden);
    overridden
        .into_iter()
        .chain(rows.iter().filter(|row| row.state != State::Invalid))
        .find_map(|row| row.reasons.first().cloned())
}

/// E.g. `uptime Mon-Fri 07:00-20:00, Europe/Berlin, from SleepPolicy/office-hours`.
fn words(annotations: &BTreeMap<String, String>, from: Option<String>, timezone: Tz) -> String {
    let rules: Vec<String> = (SCHEDULE_KEYS.iter())
        .filter_map(|key| {
            let value = annotations.get(*key)?;
            Some(format!(
                "{} {value}",
                key.trim_start_matches("cronscaler.dev/")
            ))
        })
        .collect();
    let rules = match rules.is_empty() {
        true => "each workload's own schedule".to_string(),
        false => rules.join(", "),
    };
    match from.as_deref() {
        Some("Namespace") => format!("{rules}, {timezone}, on the Namespace"),
        Some(from) => format!("{rules}, {timezone}, from {from}"),
        None => format!("{rules}, {timezone}"),
    }
}

#[cfg(test)]
mod tests;
