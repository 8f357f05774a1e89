//! What a Namespace's annotations say of now: asleep or not, its override included, and when
//! that may change. The wake-up backend, its EndpointSlices and the idle look all ask.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{Annotations, Direction, Schedule, parse};

/// Whether the Namespace is asleep now, by its schedule or by `asleep-until`. An `awake-until`
/// in force means it is woken already, whatever its readiness.
pub fn asleep(
    annotations: &BTreeMap<String, String>,
    default_timezone: Tz,
    now: DateTime<Utc>,
) -> bool {
    match parse(annotations, default_timezone) {
        Annotations::Scheduled(schedule, _) => schedule.asleep_at(now),
        _ => false,
    }
}

impl Schedule {
    /// [`asleep`], of a schedule parsed already.
    pub fn asleep_at(&self, now: DateTime<Utc>) -> bool {
        if self.paused {
            return false;
        }
        if let Some(on_demand) = self.on_demand.filter(|on_demand| on_demand.until > now) {
            return on_demand.direction == Direction::Down;
        }
        self.governing_transition(now)
            .is_some_and(|transition| transition.direction == Direction::Down)
    }
}

/// When [`asleep`] may next change its answer: the Namespace's next transition, or the end of
/// its override in force.
pub fn next_change(
    annotations: &BTreeMap<String, String>,
    default_timezone: Tz,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    match parse(annotations, default_timezone) {
        Annotations::Scheduled(schedule, _) => schedule.next_look(now),
        _ => None,
    }
}
