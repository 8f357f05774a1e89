//! How a look's Events word what it did: the transition applied, from what to what, by which
//! rule, and who changed the replicas when someone else did.

use chrono::{DateTime, Utc};

use crate::{
    duration::spoken,
    scaling::on_demand,
    schedule::{self, Annotations, Direction, READY_BY, ScaleChange, Schedule, Transition},
    workloads::target::TargetKind,
};

/// The Event that tells a user what a change did: reason and note.
pub fn describe_change(
    kind: TargetKind,
    change: &ScaleChange,
    from: i32,
    annotations: &Annotations,
    set_by: Option<&str>,
    now: DateTime<Utc>,
) -> (&'static str, String) {
    match (change.applied, change.ended) {
        (Some(applied), _) if applied.until.is_some() => {
            let (was, now) = amounts(kind, from, change.replicas.unwrap_or(from));
            let what = match (applied.direction, change.replicas) {
                (Direction::Up, Some(_)) => format!("scaled up from {was} to {now}"),
                (Direction::Down, Some(_)) => format!("scaled down from {was} to {now}"),
                (_, None) => format!("already at {}, nothing to change,", kind.amount(from)),
            };
            on_demand::describe_applied(&applied, set_by, what)
        }
        (applied, Some(ended)) => {
            let then = match applied {
                Some(_) => describe_scheduled(kind, change, from, annotations, now).1,
                None => format!(
                    "no transition of the schedule is in force, replicas left at {}",
                    kind.amount(from)
                ),
            };
            (
                "OverrideExpired",
                format!(
                    "the override {} has ended; the schedule applies again: {then}",
                    on_demand::describe(&ended, set_by)
                ),
            )
        }
        _ => describe_scheduled(kind, change, from, annotations, now),
    }
}

/// Replica counts read "from 3 to 0 replicas"; an on-off kind's "from running to suspended".
fn amounts(kind: TargetKind, from: i32, to: i32) -> (String, String) {
    if kind.is_on_off() {
        (kind.amount(from), kind.amount(to))
    } else {
        (from.to_string(), kind.amount(to))
    }
}

/// The reason of a transition applied to an object already where it puts it: recorded, and
/// told, but never as a scale that did not happen.
const SCHEDULE_FOLLOWED: &str = "ScheduleFollowed";

fn describe_scheduled(
    kind: TargetKind,
    change: &ScaleChange,
    from: i32,
    annotations: &Annotations,
    acting_at: DateTime<Utc>,
) -> (&'static str, String) {
    let (was, now) = amounts(kind, from, change.replicas.unwrap_or(from));
    let found = if kind.is_on_off() {
        kind.amount(from)
    } else {
        format!("at {}", kind.amount(from))
    };
    match change.applied {
        Some(transition) => {
            let cron = match annotations {
                Annotations::Scheduled(schedule, _) => describe_cron(schedule, transition),
                _ => String::new(),
            };
            let mut at = transition
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            if transition.at > acting_at {
                let early = spoken(transition.at - acting_at);
                at = format!("{at} ({READY_BY}: {early} early, to be ready by then)");
            }
            match (transition.direction, change.replicas) {
                (Direction::Down, Some(_)) => (
                    "ScaledDown",
                    format!("scaled down from {was} to {now} by {cron} at {at}"),
                ),
                (Direction::Up, Some(_)) => (
                    "ScaledUp",
                    format!("scaled up from {was} to {now} by {cron} at {at}"),
                ),
                (Direction::Down, None) => (
                    SCHEDULE_FOLLOWED,
                    format!("scale-down by {cron} at {at}: already {found}, nothing to change"),
                ),
                // An on/off object found awake has nothing to wake, whatever it remembers.
                (Direction::Up, None)
                    if has_up_target(annotations) || (kind.is_on_off() && from != 0) =>
                {
                    (
                        SCHEDULE_FOLLOWED,
                        format!("scale-up by {cron} at {at}: already {found}, nothing to change"),
                    )
                }
                (Direction::Up, None) if kind.is_on_off() => (
                    SCHEDULE_FOLLOWED,
                    format!(
                        "scale-up by {cron} at {at}: it was {asleep} before the scale-down, so it \
                         stays {asleep}",
                        asleep = kind.amount(0)
                    ),
                ),
                (Direction::Up, None) => (
                    SCHEDULE_FOLLOWED,
                    format!(
                        "scale-up by {cron} at {at}: no {} and no remembered {}, replicas left at {from}",
                        schedule::UP_REPLICAS,
                        schedule::ORIGINAL_REPLICAS
                    ),
                ),
            }
        }
        None => (
            "ScheduleRemoved",
            format!(
                "schedule annotations removed: {}",
                change
                    .cleanup
                    .map(|cleanup| cleanup.describe(from))
                    .unwrap_or_default()
            ),
        ),
    }
}

fn has_up_target(annotations: &Annotations) -> bool {
    matches!(annotations, Annotations::Scheduled(schedule, recorded)
        if schedule.up_replicas.is_some() || recorded.original_replicas.is_some())
}

pub(super) fn describe_cron(schedule: &Schedule, transition: Transition) -> String {
    let (key, value) = schedule.rule_of(transition.direction).unwrap_or_default();
    format!("{key} {value:?} ({})", schedule.timezone)
}
