//! Wake and sleep on demand: `awake-until` and `asleep-until` hold an object (or a whole
//! Namespace's followers) awake or asleep now, whatever the schedule says, until an instant.
//! Then the schedule's state in force is applied again.
//!
//! An override is not a transition of the schedule: it acts once, when it is first seen, and
//! once more when it ends. The controller records the one it applied in `last-transition`
//! (`<applied at> up until <until>`), which is what makes both happen exactly once across
//! restarts, and lets a person's own change during the override stand.

pub mod asked;

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, SubsecRound, TimeDelta, Utc};

use crate::duration::spoken;

use super::keys::{ASLEEP_UNTIL, AWAKE_UNTIL, OVERRIDE_KEYS};
use super::{
    Annotations, Direction, Recorded, Schedule,
    invalid::{InvalidAnnotation, invalid},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OnDemand {
    /// `Up` for `awake-until`, `Down` for `asleep-until`.
    pub direction: Direction,
    pub until: DateTime<Utc>,
}

impl OnDemand {
    pub fn key(&self) -> &'static str {
        key_of(self.direction)
    }

    pub(super) fn parse(key: &str, value: &str) -> Result<Self, InvalidAnnotation> {
        let until = DateTime::parse_from_rfc3339(value.trim())
            .map_err(|_| {
                invalid(
                    key,
                    value,
                    "is not an RFC 3339 instant such as 2026-11-23T22:00:00Z",
                )
            })?
            .with_timezone(&Utc);
        // `last-transition` keeps whole seconds, and an override is seen as applied by its
        // instant there: read to the second, one written with fractions (`isoformat()`,
        // `toISOString()`) is applied once like any other.
        let until = until.trunc_subsecs(0);
        let direction = if key == AWAKE_UNTIL {
            Direction::Up
        } else {
            Direction::Down
        };
        Ok(OnDemand { direction, until })
    }

    /// The annotation value that says this override.
    pub fn value(&self) -> String {
        self.until.to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

pub fn key_of(direction: Direction) -> &'static str {
    match direction {
        Direction::Up => AWAKE_UNTIL,
        Direction::Down => ASLEEP_UNTIL,
    }
}

/// An override that may not act yet: not applied, and further than `max` from now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfReach {
    pub problem: InvalidAnnotation,
    /// When it comes within `max`: from then on it is applied like any other.
    pub within_reach: DateTime<Utc>,
}

/// Whether the override may not act at `now`: it reaches further than `max` and has not been
/// applied yet (once applied, time only brings its end closer).
pub fn out_of_reach(
    schedule: &Schedule,
    recorded: &Recorded,
    now: DateTime<Utc>,
    max: TimeDelta,
) -> Option<OutOfReach> {
    let on_demand = schedule.on_demand?;
    let applied = recorded
        .last_transition
        .is_some_and(|last| last.until == Some(on_demand.until));
    if applied || on_demand.until - now <= max {
        return None;
    }
    Some(OutOfReach {
        problem: invalid(
            on_demand.key(),
            &on_demand.value(),
            &format!(
                "reaches {} ahead, more than the {} an override may (--max-override)",
                spoken(on_demand.until - now),
                spoken(max)
            ),
        ),
        within_reach: on_demand.until.checked_sub_signed(max)?,
    })
}

/// What acts at `now`: an override out of reach is left out, so the schedule is followed as
/// without it until the override comes within reach; and why it is left out.
pub fn in_reach(
    annotations: Annotations,
    now: DateTime<Utc>,
    max: TimeDelta,
) -> (Annotations, Option<OutOfReach>) {
    match annotations {
        Annotations::Scheduled(schedule, recorded) => {
            match out_of_reach(&schedule, &recorded, now, max) {
                Some(refused) => (
                    Annotations::Scheduled(schedule.without_override(), recorded),
                    Some(refused),
                ),
                None => (Annotations::Scheduled(schedule, recorded), None),
            }
        }
        other => (other, None),
    }
}

/// The override keys of `own` annotations whose instant has passed: the controller removes them
/// once their end has been applied.
pub fn expired_keys(
    own: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) -> Vec<(&'static str, String)> {
    overrides(own)
        .filter(|(_, _, on_demand)| on_demand.until <= now)
        .map(|(key, value, _)| (key, value.clone()))
        .collect()
}

/// The overrides that `annotations` hold and that read as one, with their key and value.
pub fn overrides(
    annotations: &BTreeMap<String, String>,
) -> impl Iterator<Item = (&'static str, &String, OnDemand)> {
    OVERRIDE_KEYS.into_iter().filter_map(|key| {
        let value = annotations.get(key)?;
        Some((key, value, OnDemand::parse(key, value).ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{
        SCALE_DOWN, SCALE_UP,
        test_support::{annotations, at, problems, scheduled},
    };

    #[test]
    fn only_overrides_that_have_ended_are_expired() {
        let own = annotations(&[
            (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
            (ASLEEP_UNTIL, "2026-11-25T00:00:00+01:00"),
            (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
        ]);
        assert_eq!(expired_keys(&own, at("2026-11-23T23:59:59Z")), vec![]);
        assert_eq!(
            expired_keys(&own, at("2026-11-24T00:00:00Z")),
            vec![(AWAKE_UNTIL, "2026-11-24T00:00:00Z".to_string())]
        );
        assert_eq!(expired_keys(&own, at("2026-11-24T23:00:00Z")).len(), 2);
        let unreadable = annotations(&[(AWAKE_UNTIL, "tonight")]);
        assert_eq!(
            expired_keys(&unreadable, at("2030-01-01T00:00:00Z")),
            vec![]
        );
    }

    #[test]
    fn the_timer_looks_again_when_an_override_ends() {
        let (schedule, _) = scheduled(&[
            (SCALE_DOWN, "0 20 * * *"),
            (SCALE_UP, "0 7 * * *"),
            (AWAKE_UNTIL, "2026-11-24T00:30:00Z"),
        ]);
        assert_eq!(
            schedule.next_look(at("2026-11-23T22:00:00Z")),
            Some(at("2026-11-24T00:30:00Z"))
        );
        // Once it has passed, the schedule's next transition.
        assert_eq!(
            schedule.next_look(at("2026-11-24T00:30:00Z")),
            Some(at("2026-11-24T07:00:00Z"))
        );
    }

    #[test]
    fn both_overrides_at_once_are_refused() {
        assert_eq!(
            problems(&[
                (SCALE_DOWN, "0 20 * * *"),
                (AWAKE_UNTIL, "2026-11-24T00:30:00Z"),
                (ASLEEP_UNTIL, "2026-11-24T00:30:00Z"),
            ]),
            vec![
                r#"cronscaler.dev/asleep-until: "2026-11-24T00:30:00Z" cannot be set together with cronscaler.dev/awake-until "2026-11-24T00:30:00Z"; keep one"#
            ]
        );
        assert_eq!(
            problems(&[(SCALE_DOWN, "0 20 * * *"), (AWAKE_UNTIL, "tonight")]),
            vec![
                r#"cronscaler.dev/awake-until: "tonight" is not an RFC 3339 instant such as 2026-11-23T22:00:00Z"#
            ]
        );
    }
}
