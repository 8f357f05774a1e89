//! What a scheduled object is doing now, told from its annotations and replicas alone.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

use crate::{
    scaling::asleep::recorded_transition,
    schedule::{
        ASLEEP_UNTIL, Annotations, CONSTANT_SINCE, Direction, EXCLUDE, ORIGINAL_REPLICAS,
        UP_REPLICAS, has_schedule, held_reason, idle_since, inherit,
    },
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Awake,
    Asleep,
    /// Held awake or asleep by `awake-until` / `asleep-until` until an instant to come.
    Overridden,
    Invalid,
    Paused,
    /// Left out of its Namespace's schedule by `exclude: "true"`.
    Excluded,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Awake => "awake",
            State::Asleep => "asleep",
            State::Overridden => "overridden",
            State::Invalid => "invalid",
            State::Paused => "paused",
            State::Excluded => "excluded",
        }
    }
}

/// What happens to the object next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NextAction {
    Down,
    Up,
    /// The override ends and the schedule takes over again.
    OverrideEnds,
}

impl NextAction {
    pub fn as_str(self) -> &'static str {
        match self {
            NextAction::Down => "down",
            NextAction::Up => "up",
            NextAction::OverrideEnds => "override ends",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub state: State,
    /// The instant of the transition recorded in `last-transition`.
    pub since: Option<DateTime<Utc>>,
    pub next: Option<(NextAction, DateTime<Utc>)>,
    pub replicas: i32,
    /// What the object has awake: what the next scale-up gives (`up-replicas`, else the
    /// recorded `original-replicas`), else what it has now.
    pub awake_replicas: i32,
    /// Why it is invalid (key, value, reason each), or which override holds it.
    pub reasons: Vec<String>,
}

/// The standing of an object at `now`, or `None` when nothing schedules it.
///
/// `parsed` is what the controller parses for it (its own annotations, or its Namespace's
/// schedule with its own, as the kind reads them); `own` its own `cronscaler.dev/` annotations
/// as the rules read them; `namespace` its Namespace's annotations, when it may follow them;
/// `replicas` what it has, and `held` until when its grace period holds it awake (and how long
/// that period is), if it does.
pub fn state(
    parsed: &Annotations,
    own: &BTreeMap<String, String>,
    namespace: Option<&BTreeMap<String, String>>,
    (replicas, held): (i32, Option<(DateTime<Utc>, TimeDelta)>),
    now: DateTime<Utc>,
) -> Option<Standing> {
    let (_, inherited) = inherit(own, namespace);
    let standing = |state, next, reasons| Standing {
        state,
        since: recorded_instant(own),
        next,
        replicas,
        awake_replicas: awake_replicas(parsed, own, replicas),
        reasons,
    };
    let excluded = own.get(EXCLUDE).is_some_and(|value| value == "true")
        && !has_schedule(own)
        && namespace.is_some_and(has_schedule);
    if excluded {
        return Some(standing(State::Excluded, None, Vec::new()));
    }
    if !(has_schedule(own) || inherited) {
        return None;
    }
    match parsed {
        Annotations::Invalid(problems) => Some(standing(
            State::Invalid,
            None,
            problems.iter().map(ToString::to_string).collect(),
        )),
        Annotations::Unscheduled(_) => None,
        Annotations::Scheduled(schedule, _) if schedule.paused => {
            Some(standing(State::Paused, None, Vec::new()))
        }
        // Its Namespace's idle sleep: asleep, as at night.
        Annotations::Scheduled(schedule, _)
            if let Some(since) = schedule
                .on_demand
                .filter(|o| o.direction == Direction::Down && !own.contains_key(ASLEEP_UNTIL))
                .and_then(|_| idle_since(namespace?, now)) =>
        {
            let local = since.with_timezone(&schedule.timezone);
            let at = if local.date_naive() == now.with_timezone(&schedule.timezone).date_naive() {
                local.format("%H:%M")
            } else {
                local.format("%a %H:%M")
            };
            let next = schedule
                .on_demand
                .map(|o| (NextAction::OverrideEnds, o.until));
            let mut asleep = standing(State::Asleep, next, vec![format!("idle since {at}")]);
            asleep.since = Some(since);
            Some(asleep)
        }
        // An override in force, its own or its Namespace's (the controller's precedence).
        Annotations::Scheduled(schedule, _)
            if let Some(on_demand) = schedule.on_demand.filter(|o| o.until > now) =>
        {
            let held = match on_demand.direction {
                Direction::Up => "awake",
                Direction::Down => "asleep",
            };
            let reason = format!("{held} until {}", rfc3339(on_demand.until));
            let next = Some((NextAction::OverrideEnds, on_demand.until));
            Some(standing(State::Overridden, next, vec![reason]))
        }
        Annotations::Scheduled(schedule, recorded) => {
            let asleep = recorded
                .last_transition
                .is_some_and(|transition| transition.direction == Direction::Down);
            // A `ready-by` wake comes its warm-up early; one already started is behind.
            let next = schedule.next_transition(now).and_then(|next| {
                if schedule.applied_at(&next) <= now {
                    schedule.next_transition(next.at)
                } else {
                    Some(next)
                }
            });
            let ready_by = next
                .filter(|next| schedule.applied_at(next) < next.at)
                .map(|next| format!("wakes early to be ready by {}", rfc3339(next.at)));
            let next = next.map(|next| {
                let action = match next.direction {
                    Direction::Down => NextAction::Down,
                    Direction::Up => NextAction::Up,
                };
                (action, schedule.applied_at(&next))
            });
            let state = if asleep { State::Asleep } else { State::Awake };
            // New and awake while its schedule says asleep: its grace period holds it.
            if let Some((until, grace)) = held.filter(|_| !asleep) {
                let next = Some((NextAction::Down, until));
                return Some(standing(state, next, vec![held_reason(until, grace)]));
            }
            // A constant state has no instant of its own: say what holds it instead.
            let constant = schedule
                .governing_transition(now)
                .filter(|governing| governing.at == CONSTANT_SINCE && next.is_none());
            let reasons = constant
                .and_then(|governing| {
                    let (key, value) = schedule.rule_of(governing.direction)?;
                    let held = match governing.direction {
                        Direction::Up => "awake",
                        Direction::Down => "asleep",
                    };
                    Some(format!("{held} all the time by {key} {value:?}"))
                })
                .into_iter()
                .chain(ready_by)
                .collect();
            Some(standing(state, next, reasons))
        }
    }
}

/// The instant `last-transition` records, also where the rest does not parse: an invalid
/// object's.
fn recorded_instant(own: &BTreeMap<String, String>) -> Option<DateTime<Utc>> {
    recorded_transition(own)
        .map(|transition| transition.at)
        .filter(|at| *at != CONSTANT_SINCE)
}

fn awake_replicas(parsed: &Annotations, own: &BTreeMap<String, String>, replicas: i32) -> i32 {
    match parsed {
        Annotations::Scheduled(schedule, recorded) => schedule
            .up_replicas
            .or(recorded.original_replicas)
            .unwrap_or(replicas),
        // Whatever of it still reads as a count.
        _ => [UP_REPLICAS, ORIGINAL_REPLICAS]
            .into_iter()
            .find_map(|key| own.get(key)?.parse::<i32>().ok().filter(|n| *n >= 0))
            .unwrap_or(replicas),
    }
}

pub(super) fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
