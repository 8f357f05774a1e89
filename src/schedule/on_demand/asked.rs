//! What a person's override on demand comes to, wherever it is asked for (`cronscaler wake` and
//! `sleep`, an `OverrideRequest`): until when it holds, as asked or until the schedule turns, or
//! why it may not be; and the patch of annotations that sets it.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::json;

use crate::{
    duration::spoken,
    schedule::{Annotations, Direction, IDLE_SINCE, key_of},
};

/// Why an override may not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "{what} has no schedule (cronscaler.dev/scale-down, scale-up, uptime or downtime, its own or its Namespace's, nor a SleepSchedule or SleepPolicy): nothing to {verb}"
    )]
    Unscheduled { what: String, verb: &'static str },
    #[error("{what} has an invalid schedule: {problems}")]
    Invalid { what: String, problems: String },
    #[error("{what}: no scheduled transition within {max}; say until when with --for or --until")]
    NoNextTransition { what: String, max: String },
    #[error("--until {until} is not in the future (now is {now})")]
    Past { until: String, now: String },
    #[error(
        "{until} is {ahead} ahead, more than the {max} an override may reach; the controller \
         would refuse it (its --max-override)"
    )]
    TooFar {
        until: String,
        ahead: String,
        max: String,
    },
}

/// Until when an override holds: `--until`, `--for` from `now`, or else the schedule's next
/// transition the other way (a wake lasts until the next scale-down, a sleep until the next
/// scale-up), or where that is beyond `max`, the next one its own way, from which the schedule
/// holds its state until then. Refused beyond `max`, as the controller would refuse it.
pub fn until_when(
    direction: Direction,
    what: &str,
    parsed: &Annotations,
    requested: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    max: TimeDelta,
) -> Result<DateTime<Utc>, Refusal> {
    let stamp = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let until = match requested {
        Some(until) => until,
        None => {
            let schedule = match parsed {
                Annotations::Scheduled(schedule, _) => schedule,
                Annotations::Invalid(problems) => {
                    return Err(Refusal::Invalid {
                        what: what.to_string(),
                        problems: problems
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; "),
                    });
                }
                Annotations::Unscheduled(_) => {
                    return Err(unscheduled(what, direction));
                }
            };
            // The next transition the other way; or, where that is out of reach, the next one
            // the same way, from which the schedule holds the override's state itself until
            // then (a sleep on Friday morning ends at Friday's scale-down, and the weekend
            // stays asleep until Monday's scale-up).
            let ends = direction.opposite();
            let mut holds_from = None;
            let mut cursor = now;
            loop {
                match schedule.next_transition(cursor) {
                    Some(next) if next.at - now > max => break holds_from,
                    Some(next) if next.direction == ends => break Some(next.at),
                    Some(next) => {
                        holds_from = holds_from.or(Some(next.at));
                        cursor = next.at;
                    }
                    None => break holds_from,
                }
            }
            .ok_or_else(|| Refusal::NoNextTransition {
                what: what.to_string(),
                max: spoken(max).to_string(),
            })?
        }
    };
    if until <= now {
        return Err(Refusal::Past {
            until: stamp(until),
            now: stamp(now),
        });
    }
    if until - now > max {
        return Err(Refusal::TooFar {
            until: stamp(until),
            ahead: spoken(until - now).to_string(),
            max: spoken(max).to_string(),
        });
    }
    Ok(until)
}

/// Until when the schedule itself holds `direction`'s state (asleep for a sleep, awake for a
/// wake), where it holds it now and its next transition the other way is beyond `max`, so that
/// no override can reach it: on Friday night, a sleep is the weekend's already.
pub fn held_by_schedule(
    direction: Direction,
    parsed: &Annotations,
    now: DateTime<Utc>,
    max: TimeDelta,
) -> Option<DateTime<Utc>> {
    let Annotations::Scheduled(schedule, _) = parsed else {
        return None;
    };
    if schedule.paused || schedule.in_force(now)?.direction != direction {
        return None;
    }
    let mut cursor = now;
    // A week and a day covers every weekly schedule's next transition.
    while cursor - now <= TimeDelta::days(8) {
        let next = schedule.next_transition(cursor)?;
        if next.direction != direction {
            return (next.at - now > max).then_some(next.at);
        }
        cursor = next.at;
    }
    None
}

/// Nothing schedules `what`, so there is nothing to wake or put to sleep.
pub fn unscheduled(what: &str, direction: Direction) -> Refusal {
    Refusal::Unscheduled {
        what: what.to_string(),
        verb: match direction {
            Direction::Up => "wake",
            Direction::Down => "put to sleep",
        },
    }
}

/// The merge patch that sets the override, and takes away one the other way and an idle
/// sleep's `idle-since`: a person's override is no idle sleep.
pub fn override_patch(direction: Direction, until: DateTime<Utc>) -> serde_json::Value {
    let other = key_of(direction.opposite());
    json!({ "metadata": { "annotations": {
        key_of(direction): until.to_rfc3339_opts(SecondsFormat::Secs, true),
        other: null,
        IDLE_SINCE: null,
    } } })
}

/// The merge patch that hands `direction`'s state back to the schedule: both overrides taken
/// away, and an idle sleep's `idle-since`.
pub fn back_to_schedule_patch() -> serde_json::Value {
    json!({ "metadata": { "annotations": {
        key_of(Direction::Up): null,
        key_of(Direction::Down): null,
        IDLE_SINCE: null,
    } } })
}

#[cfg(test)]
mod tests;
