//! The status of a `SleepPolicy` or `SleepSchedule`, computed purely from what it says, what it
//! reaches and the time: its conditions, its state and next transition, the Warning Events it
//! is owed, and when to look at it again.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;

use super::{
    crd::{ScheduleFields, SleepPolicy, SleepSchedule, SleepStatus, describe_problem},
    resolve::Reach,
};
use crate::{
    runtime::conditions::condition,
    schedule::{self, Annotations, Direction, Schedule},
};

pub const READY: &str = "Ready";
pub const INVALID: &str = "Invalid";
pub const CONFLICTING: &str = "Conflicting";

/// The Warning Event of a schedule the controller cannot act on.
pub const INVALID_SCHEDULE: &str = "InvalidSchedule";
/// The Warning Event of two covering the same Namespace.
pub const SCHEDULE_CONFLICT: &str = "ScheduleConflict";

/// Most Namespaces a message names before it says how many more.
const NAMED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SleepPolicy,
    SleepSchedule,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::SleepPolicy => "SleepPolicy",
            Kind::SleepSchedule => "SleepSchedule",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `SleepPolicy` or `SleepSchedule` as its watch last saw it.
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    pub kind: Kind,
    pub generation: Option<i64>,
    pub fields: &'a ScheduleFields,
    pub status: Option<&'a SleepStatus>,
}

impl<'a> Declared<'a> {
    pub fn of_policy(policy: &'a SleepPolicy) -> Self {
        Declared {
            kind: Kind::SleepPolicy,
            generation: policy.metadata.generation,
            fields: &policy.spec.schedule,
            status: policy.status.as_ref(),
        }
    }

    pub fn of_schedule(schedule: &'a SleepSchedule) -> Self {
        Declared {
            kind: Kind::SleepSchedule,
            generation: schedule.metadata.generation,
            fields: &schedule.spec.schedule,
            status: schedule.status.as_ref(),
        }
    }
}

/// Everything a look at a `SleepPolicy` or `SleepSchedule` writes.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusWrite {
    /// The status to write; `None` when the object has it already.
    pub status: Option<SleepStatus>,
    /// Warning Events owed, as (reason, note): said when a condition first holds.
    pub warnings: Vec<(&'static str, String)>,
    /// When its state changes next, and it is to be looked at again.
    pub look_again: Option<DateTime<Utc>>,
}

/// What `declared` is to show at `now`, given what it `reach`es.
pub fn status_write(
    declared: Declared,
    reach: &Reach,
    default_timezone: Tz,
    now: DateTime<Utc>,
) -> StatusWrite {
    let previous = declared
        .status
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    let at = |type_, holds, reason, message| {
        condition(
            previous,
            type_,
            holds,
            reason,
            message,
            declared.generation,
            now,
        )
    };
    let problems = problems(declared.fields, default_timezone);
    let (state, next) = match &problems {
        Ok(schedule) => standing(declared.kind, schedule, reach, default_timezone, now),
        Err(_) => (None, None),
    };
    let ready = match &problems {
        Err(_) => at(
            READY,
            false,
            INVALID_SCHEDULE,
            "the schedule is invalid and touches nothing; see the Invalid condition".into(),
        ),
        Ok(_) if reach.governs.is_empty() => at(READY, false, "NotFollowed", not_followed(reach)),
        Ok(_) => at(READY, true, "Followed", followed(declared.kind, reach)),
    };
    // A `kinds` entry that names no kind is left out while the schedule applies, so it is
    // said here, with the schedule's problems, but makes nothing else of the status invalid.
    let invalid_fields: Vec<String> = problems
        .as_ref()
        .err()
        .into_iter()
        .flatten()
        .cloned()
        .chain(declared.fields.kinds_problems())
        .collect();
    let invalid = if invalid_fields.is_empty() {
        at(INVALID, false, "Valid", "every field is valid".into())
    } else {
        at(INVALID, true, INVALID_SCHEDULE, invalid_fields.join("; "))
    };
    let conflicting = match conflict(declared.kind, reach) {
        Some((reason, message)) => at(CONFLICTING, true, reason, message),
        None => at(
            CONFLICTING,
            false,
            "NoConflict",
            format!("no other {} covers its Namespaces", declared.kind),
        ),
    };

    let warnings = [
        (&invalid, INVALID_SCHEDULE),
        (&conflicting, SCHEDULE_CONFLICT),
    ]
    .into_iter()
    .filter(|(condition, _)| condition.status == "True")
    .filter(|(condition, _)| {
        !previous.iter().any(|said| {
            said.type_ == condition.type_
                && said.status == condition.status
                && said.message == condition.message
        })
    })
    .map(|(condition, reason)| (reason, condition.message.clone()))
    .collect();
    let status = SleepStatus {
        observed_generation: declared.generation,
        schedule: Some(declared.fields.summary()),
        state: state.map(str::to_string),
        next_transition: next.map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true)),
        namespaces: (declared.kind == Kind::SleepPolicy)
            .then(|| u32::try_from(reach.selected.len()).unwrap_or(u32::MAX)),
        workloads: (declared.kind == Kind::SleepSchedule).then_some(reach.workloads),
        conditions: vec![ready, invalid, conflicting],
    };
    StatusWrite {
        status: (declared.status != Some(&status)).then_some(status),
        warnings,
        look_again: next,
    }
}

/// The schedule the fields make, or each problem, named by its field.
fn problems(fields: &ScheduleFields, default_timezone: Tz) -> Result<Schedule, Vec<String>> {
    match schedule::parse(&fields.annotations(), default_timezone) {
        Annotations::Scheduled(schedule, _) => Ok(schedule),
        Annotations::Invalid(problems) => Err(problems.iter().map(describe_problem).collect()),
        Annotations::Unscheduled(_) => Err(vec![
            "a schedule needs uptime, downtime, scaleDown or scaleUp".into(),
        ]),
    }
}

/// Its state at `now` and when that changes: its own schedule's, or, for a `SleepSchedule`
/// whose Namespace an override on demand holds, the override's.
fn standing(
    kind: Kind,
    schedule: &Schedule,
    reach: &Reach,
    default_timezone: Tz,
    now: DateTime<Utc>,
) -> (Option<&'static str>, Option<DateTime<Utc>>) {
    let override_in_force = (kind == Kind::SleepSchedule)
        .then_some(reach.followed.as_ref())
        .flatten()
        .and_then(
            |followed| match schedule::parse(followed, default_timezone) {
                Annotations::Scheduled(followed, _) => followed.on_demand,
                _ => None,
            },
        )
        .filter(|on_demand| on_demand.until > now);
    if let Some(on_demand) = override_in_force {
        return (Some("overridden"), Some(on_demand.until));
    }
    let state = match schedule.governing_transition(now).map(|t| t.direction) {
        Some(Direction::Down) => "asleep",
        Some(Direction::Up) | None => "awake",
    };
    let next = schedule
        .next_transition(now)
        .map(|transition| transition.at);
    (Some(state), next)
}

fn named(namespaces: &[String]) -> String {
    let mut text = namespaces
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if namespaces.len() > NAMED {
        text.push_str(&format!(" and {} more", namespaces.len() - NAMED));
    }
    text
}

fn followed(kind: Kind, reach: &Reach) -> String {
    match kind {
        Kind::SleepSchedule => format!("Namespace {} follows it", named(&reach.governs)),
        Kind::SleepPolicy => format!(
            "{} of the {} Namespaces it selects follow it: {}",
            reach.governs.len(),
            reach.selected.len(),
            named(&reach.governs)
        ),
    }
}

fn not_followed(reach: &Reach) -> String {
    if reach.selected.is_empty() {
        return "its namespaceSelector selects no Namespace".into();
    }
    let shown: Vec<String> = reach
        .preceded
        .iter()
        .take(NAMED)
        .map(|(namespace, source)| format!("{namespace} follows {source}"))
        .collect();
    let mut message = format!("no Namespace follows it: {}", shown.join("; "));
    if reach.preceded.len() > NAMED {
        message.push_str(&format!(" and {} more", reach.preceded.len() - NAMED));
    }
    message
}

/// The `Conflicting` condition's reason and message, when another of its kind covers the same
/// Namespaces.
fn conflict(kind: Kind, reach: &Reach) -> Option<(&'static str, String)> {
    let (older, younger): (Vec<_>, Vec<_>) = reach.rivals.iter().partition(|rival| rival.older);
    let verb = match kind {
        Kind::SleepPolicy => "also selects",
        Kind::SleepSchedule => "is also in",
    };
    let describe = |rivals: &[&super::resolve::Rival]| {
        rivals
            .iter()
            .map(|rival| {
                format!(
                    "{kind} {} {verb} Namespace {}",
                    rival.name,
                    named(&rival.namespaces)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !older.is_empty() {
        return Some((
            "OlderApplies",
            format!(
                "{}: the older applies, so this one does not there; delete one of them",
                describe(&older)
            ),
        ));
    }
    (!younger.is_empty()).then(|| {
        (
            "ThisApplies",
            format!(
                "{}: this one applies there, being older; delete one of them",
                describe(&younger)
            ),
        )
    })
}

#[cfg(test)]
mod tests;
