//! Transitions: one firing of the scale-down or scale-up cron, and the schedule that finds the
//! one in force at an instant and the next one after it.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;

use super::CronSpec;
use super::annotations::{InvalidAnnotation, LAST_TRANSITION, invalid};

/// Which way a scheduled transition scales.
///
/// `Up` sorts after `Down` so that taking the maximum of equal instants lets
/// the scale-up win, as the contract requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Down,
    Up,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Down => "down",
            Direction::Up => "up",
        })
    }
}

/// One firing of the scale-down or scale-up cron.
///
/// Its `Display` is the `last-transition` annotation value, e.g.
/// `2026-11-23T20:00:00Z down`, and `FromStr` reads that value back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    pub at: DateTime<Utc>,
    pub direction: Direction,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}",
            self.at.to_rfc3339_opts(SecondsFormat::Secs, true),
            self.direction
        )
    }
}

impl FromStr for Transition {
    /// The only text a transition is read from is the `last-transition`
    /// annotation, so its error is already the report for that key.
    type Err = InvalidAnnotation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| invalid(LAST_TRANSITION, s, reason);
        let Some((instant, direction)) = s.split_once(' ') else {
            return Err(invalid(
                "is not an RFC 3339 instant followed by a space and `up` or `down`",
            ));
        };
        let at = DateTime::parse_from_rfc3339(instant)
            .map_err(|_| {
                invalid("does not start with an RFC 3339 instant such as 2026-11-23T20:00:00Z")
            })?
            .with_timezone(&Utc);
        let direction = match direction {
            "down" => Direction::Down,
            "up" => Direction::Up,
            _ => return Err(invalid("does not end with `up` or `down`")),
        };
        Ok(Transition { at, direction })
    }
}

/// What the user asked for, once every annotation has been checked.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub scale_down: Option<CronSpec>,
    pub scale_up: Option<CronSpec>,
    pub down_replicas: i32,
    pub up_replicas: Option<i32>,
    pub timezone: Tz,
    pub paused: bool,
}

impl Schedule {
    /// The latest transition at or before `t`; at the same instant `up` wins.
    pub fn governing_transition(&self, t: DateTime<Utc>) -> Option<Transition> {
        self.crons()
            .filter_map(|(direction, cron)| {
                Some(Transition {
                    at: cron.latest_at_or_before(self.timezone, t)?,
                    direction,
                })
            })
            .max_by_key(|transition| (transition.at, transition.direction))
    }

    /// The earliest transition strictly after `after`; at the same instant
    /// `up` wins.
    pub fn next_transition(&self, after: DateTime<Utc>) -> Option<Transition> {
        self.crons()
            .filter_map(|(direction, cron)| {
                Some(Transition {
                    at: cron.earliest_after(self.timezone, after)?,
                    direction,
                })
            })
            .min_by_key(|transition| (transition.at, std::cmp::Reverse(transition.direction)))
    }

    pub fn cron(&self, direction: Direction) -> Option<&CronSpec> {
        match direction {
            Direction::Down => self.scale_down.as_ref(),
            Direction::Up => self.scale_up.as_ref(),
        }
    }

    fn crons(&self) -> impl Iterator<Item = (Direction, &CronSpec)> {
        [Direction::Down, Direction::Up]
            .into_iter()
            .filter_map(|direction| Some((direction, self.cron(direction)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{test_support::*, *};
    use std::sync::LazyLock;

    use chrono::{Offset, TimeDelta};
    use proptest::prelude::*;

    #[test]
    fn transition_reads_back_what_it_writes() {
        let transition = down("2026-11-23T20:00:00Z");
        assert_eq!(transition.to_string(), "2026-11-23T20:00:00Z down");
        assert_eq!("2026-11-23T20:00:00Z down".parse(), Ok(transition));
        assert_eq!(
            "2026-11-24T16:00:00+09:00 up".parse(),
            Ok(up("2026-11-24T07:00:00Z"))
        );
        assert_eq!(
            up("2026-11-24T07:00:00Z").to_string(),
            "2026-11-24T07:00:00Z up"
        );
    }

    #[test]
    fn weekday_schedule_holds_the_weekend_down() {
        let (schedule, _) = scheduled(&[
            (SCALE_DOWN, "0 20 * * MON-FRI"),
            (SCALE_UP, "0 7 * * MON-FRI"),
        ]);
        let sunday_noon = at("2026-11-22T12:00:00Z");
        assert_eq!(
            schedule.governing_transition(sunday_noon),
            Some(down("2026-11-20T20:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(sunday_noon),
            Some(up("2026-11-23T07:00:00Z"))
        );
    }

    #[test]
    fn up_wins_at_the_same_instant() {
        let (schedule, _) = scheduled(&[(SCALE_DOWN, "0 8 * * *"), (SCALE_UP, "0 8 * * MON")]);
        // Monday 2026-11-23: both fire at 08:00.
        assert_eq!(
            schedule.governing_transition(at("2026-11-23T09:00:00Z")),
            Some(up("2026-11-23T08:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(at("2026-11-23T07:00:00Z")),
            Some(up("2026-11-23T08:00:00Z"))
        );
        // Tuesday only the scale-down fires.
        assert_eq!(
            schedule.governing_transition(at("2026-11-24T09:00:00Z")),
            Some(down("2026-11-24T08:00:00Z"))
        );
        assert_eq!(
            schedule.next_transition(at("2026-11-23T08:00:00Z")),
            Some(down("2026-11-24T08:00:00Z"))
        );
    }

    // ---- catch-up agrees with firing ----

    const ZONES: [&str; 8] = [
        "America/New_York",
        "Europe/Berlin",
        "Australia/Lord_Howe",
        "Australia/Sydney",
        "Asia/Kathmandu",
        "UTC",
        "America/Santiago",
        "Pacific/Chatham",
    ];

    const PATTERNS: [&str; 10] = [
        "30 2 * * *",
        "30 1 * * *",
        "45 2 * * *",
        "0 0 * * *",
        "*/15 * * * *",
        "0 */2 * * *",
        "15 3 * * SUN",
        "0 0 * * SUN",
        "*/20 30 1 * * *",
        "0 0 L * *",
    ];

    /// Every offset change of the test zones in 2024-2030, so that instants
    /// can be drawn close to them, where mistakes hide.
    static OFFSET_CHANGES: LazyLock<Vec<(usize, DateTime<Utc>)>> = LazyLock::new(|| {
        let mut changes = Vec::new();
        for (index, name) in ZONES.iter().enumerate() {
            let tz: Tz = name.parse().unwrap();
            let offset = |t: DateTime<Utc>| t.with_timezone(&tz).offset().fix();
            let mut t = at("2024-01-01T00:00:00Z");
            while t < at("2031-01-01T00:00:00Z") {
                let week_later = t + TimeDelta::days(7);
                if offset(t) != offset(week_later) {
                    let (mut before, mut after) = (t, week_later);
                    while after - before > TimeDelta::seconds(1) {
                        let middle = before + (after - before) / 2;
                        if offset(middle) == offset(before) {
                            before = middle;
                        } else {
                            after = middle;
                        }
                    }
                    changes.push((index, after));
                }
                t = week_later;
            }
        }
        changes
    });

    fn zone_and_instant() -> impl Strategy<Value = (usize, DateTime<Utc>)> {
        let first = at("2024-01-01T00:00:00Z").timestamp();
        let last = at("2031-01-01T00:00:00Z").timestamp();
        prop_oneof![
            (0..ZONES.len(), first..last, 0..1_000_000_000_u32).prop_map(
                |(zone, seconds, nanos)| (zone, DateTime::from_timestamp(seconds, nanos).unwrap())
            ),
            (0..OFFSET_CHANGES.len(), -6 * 3600..6 * 3600_i64).prop_map(|(index, shift)| {
                let (zone, change) = OFFSET_CHANGES[index];
                (zone, change + TimeDelta::seconds(shift))
            }),
        ]
    }

    #[test]
    fn offset_changes_are_found_for_the_property_test() {
        // Every zone but Kathmandu and UTC changes twice a year.
        assert!(
            OFFSET_CHANGES.len() >= 6 * 2 * 7,
            "{}",
            OFFSET_CHANGES.len()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn catch_up_agrees_with_firing(
            (zone, t) in zone_and_instant(),
            down_pattern in 0..PATTERNS.len(),
            up_pattern in 0..PATTERNS.len(),
            lookback in 0..8 * 86_400_i64,
        ) {
            let (schedule, _) = scheduled(&[
                (SCALE_DOWN, PATTERNS[down_pattern]),
                (SCALE_UP, PATTERNS[up_pattern]),
                (TIMEZONE, ZONES[zone]),
            ]);
            let governing = schedule.governing_transition(t);
            let start = t - TimeDelta::seconds(lookback);
            let mut cursor = start;
            let mut last_fired = None;
            loop {
                let next = schedule.next_transition(cursor).unwrap();
                prop_assert!(next.at > cursor, "{next} does not follow {cursor}");
                if next.at > t {
                    break;
                }
                last_fired = Some(next);
                cursor = next.at;
            }
            match last_fired {
                Some(fired) => prop_assert_eq!(governing, Some(fired)),
                None => prop_assert_eq!(governing, schedule.governing_transition(start)),
            }
            let governing = governing.unwrap();
            prop_assert!(governing.at <= t);
            let after_governing = schedule.next_transition(governing.at).unwrap();
            prop_assert!(after_governing.at > t, "{after_governing} fires before {t} but after {governing}");
        }
    }
}
