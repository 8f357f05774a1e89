//! What a scheduled object is doing now, told from its annotations and replicas alone.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::{
    scaling::asleep::recorded_transition,
    schedule::{
        Annotations, Direction, EXCLUDE, ORIGINAL_REPLICAS, SCALE_DOWN, SCALE_UP, UP_REPLICAS,
        inherit,
    },
};

// On-demand overrides, being added to the annotation contract; these move to
// `schedule::annotations` with their parser. Until then `schedule::parse` calls them unknown,
// which is why an override is looked for before invalidity.
pub const AWAKE_UNTIL: &str = "cronscaler.dev/awake-until";
pub const ASLEEP_UNTIL: &str = "cronscaler.dev/asleep-until";

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
/// as the rules read them; `namespace` its Namespace's annotations, when it may follow them.
pub fn state(
    parsed: &Annotations,
    own: &BTreeMap<String, String>,
    namespace: Option<&BTreeMap<String, String>>,
    replicas: i32,
    now: DateTime<Utc>,
) -> Option<Standing> {
    let has_crons = |annotations: &BTreeMap<String, String>| {
        annotations.contains_key(SCALE_DOWN) || annotations.contains_key(SCALE_UP)
    };
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
        && !has_crons(own)
        && namespace.is_some_and(has_crons);
    if excluded {
        return Some(standing(State::Excluded, None, Vec::new()));
    }
    let scheduled = has_crons(own) || inherited;
    // The object's own override wins over its Namespace's.
    let overrides = [Some(own), namespace.filter(|_| inherited)];
    let held = overrides.into_iter().flatten().find_map(|annotations| {
        [(AWAKE_UNTIL, "awake"), (ASLEEP_UNTIL, "asleep")]
            .into_iter()
            .find_map(|(key, held)| {
                let until = instant(annotations.get(key)?)?;
                (until > now).then(|| (until, format!("{held} until {}", rfc3339(until))))
            })
    });
    if let (true, Some((until, reason))) = (scheduled, held) {
        let next = Some((NextAction::OverrideEnds, until));
        return Some(standing(State::Overridden, next, vec![reason]));
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
        Annotations::Scheduled(schedule, recorded) => {
            let asleep = recorded
                .last_transition
                .is_some_and(|transition| transition.direction == Direction::Down);
            let next = schedule.next_transition(now).map(|next| {
                let action = match next.direction {
                    Direction::Down => NextAction::Down,
                    Direction::Up => NextAction::Up,
                };
                (action, next.at)
            });
            let state = if asleep { State::Asleep } else { State::Awake };
            Some(standing(state, next, Vec::new()))
        }
    }
}

/// The instant `last-transition` records, also where the parser does not read it: an applied
/// override (`<instant> up until <instant>`, not read yet), or an invalid object's.
fn recorded_instant(own: &BTreeMap<String, String>) -> Option<DateTime<Utc>> {
    recorded_transition(own).map(|transition| transition.at)
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

fn instant(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
