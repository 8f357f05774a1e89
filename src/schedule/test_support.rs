//! Helpers shared by the schedule rules' tests.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;

use super::*;

pub fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
}

pub fn down(rfc3339: &str) -> Transition {
    Transition::scheduled(at(rfc3339), Direction::Down)
}

pub fn up(rfc3339: &str) -> Transition {
    Transition::scheduled(at(rfc3339), Direction::Up)
}

pub fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

pub fn scheduled(pairs: &[(&str, &str)]) -> (Schedule, Recorded) {
    match parse(&annotations(pairs), Tz::UTC) {
        Annotations::Scheduled(schedule, recorded) => (schedule, recorded),
        other => panic!("expected a schedule, got {other:?}"),
    }
}

pub fn problems(pairs: &[(&str, &str)]) -> Vec<String> {
    match parse(&annotations(pairs), Tz::UTC) {
        Annotations::Invalid(errors) => errors.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

/// The first `count` firings of `expression` in `zone` after `after`.
pub fn firings(expression: &str, zone: &str, after: &str, count: usize) -> Vec<String> {
    let (schedule, _) = scheduled(&[(SCALE_DOWN, expression), (TIMEZONE, zone)]);
    let mut cursor = at(after);
    (0..count)
        .map(|_| {
            cursor = schedule.next_transition(cursor).unwrap().at;
            cursor.to_rfc3339_opts(SecondsFormat::Secs, true)
        })
        .collect()
}

/// The latest firing of `expression` in `zone` at or before `t`.
pub fn governing(expression: &str, zone: &str, t: &str) -> String {
    let (schedule, _) = scheduled(&[(SCALE_DOWN, expression), (TIMEZONE, zone)]);
    schedule
        .governing_transition(at(t))
        .unwrap()
        .at
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Writes a change back the way the controller would.
pub fn write_back(annotations: &mut BTreeMap<String, String>, change: &ScaleChange) {
    match change.original_replicas {
        AnnotationChange::Keep => {}
        AnnotationChange::Set(n) => {
            annotations.insert(ORIGINAL_REPLICAS.to_string(), n.to_string());
        }
        AnnotationChange::Remove => {
            annotations.remove(ORIGINAL_REPLICAS);
        }
    }
    match change.last_transition {
        AnnotationChange::Keep => {}
        AnnotationChange::Set(transition) => {
            annotations.insert(LAST_TRANSITION.to_string(), transition.to_string());
        }
        AnnotationChange::Remove => {
            annotations.remove(LAST_TRANSITION);
        }
    }
}

/// A schedule of `down` (and `up`) crons in `zone`.
pub fn every(down: &str, up: Option<&str>, zone: &str) -> Schedule {
    let mut annotations = BTreeMap::from([
        (SCALE_DOWN.to_string(), down.to_string()),
        (TIMEZONE.to_string(), zone.to_string()),
    ]);
    if let Some(up) = up {
        annotations.insert(SCALE_UP.to_string(), up.to_string());
    }
    match parse(&annotations, Tz::UTC) {
        Annotations::Scheduled(schedule, _) => schedule,
        other => panic!("{other:?}"),
    }
}
