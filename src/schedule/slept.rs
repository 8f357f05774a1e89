//! `slept`: what a wake records on the object of the sleep it ends (how many replicas slept,
//! from when to when), in the same patch as the wake. The controller files it in its ledger of
//! savings; written with the wake, it outlives a crash before the ledger is written, and a new
//! leader files what the last one did not.

use std::{fmt, str::FromStr};

use chrono::{DateTime, TimeDelta, Timelike, Utc};

use super::{Annotations, CONSTANT_SINCE, Direction, ScaleChange};

/// The longest sleep a record counts: one dated further back (written by hand, or a sleep
/// nobody woke for a season) counts its last 31 days only.
pub const LONGEST_SLEEP: TimeDelta = TimeDelta::days(31);

/// One sleep, ended: `3 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slept {
    /// The replicas the wake brings back: those that did not run.
    pub replicas: i32,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

impl Slept {
    /// The sleep `change` ends at `now`, on an object found with `current` replicas: the
    /// replicas it brings back, since the scale-down recorded. `None` where it brings nothing
    /// back, or no scale-down is recorded with an instant of its own (a constant schedule's has
    /// none: when it fell asleep is not known).
    pub fn ended_by(
        annotations: &Annotations,
        current: i32,
        change: &ScaleChange,
        now: DateTime<Utc>,
    ) -> Option<Self> {
        let recorded = match annotations {
            Annotations::Scheduled(_, recorded) => recorded,
            Annotations::Unscheduled(leftovers) => &leftovers.recorded,
            Annotations::Invalid(_) => return None,
        };
        let asleep = recorded
            .last_transition
            .filter(|last| last.direction == Direction::Down && last.at != CONSTANT_SINCE)?;
        let woken = change.replicas.filter(|replicas| *replicas > current)?;
        let waking = change
            .applied
            .is_none_or(|transition| transition.direction == Direction::Up);
        // To the second, as the record is written: what is filed from the record and what is
        // filed from the wake are the same sleep.
        let until = now.with_nanosecond(0).unwrap_or(now);
        let replicas = woken.checked_sub(current)?;
        (waking && asleep.at < until).then_some(Slept {
            replicas,
            since: asleep.at.max(until - LONGEST_SLEEP),
            until,
        })
    }

    /// The same sleep, of `replicas` instead (what a lever frees); `None` where that is none.
    pub fn of(self, replicas: i64) -> Option<Self> {
        let replicas = i32::try_from(replicas)
            .ok()
            .filter(|replicas| *replicas > 0)?;
        Some(Self { replicas, ..self })
    }

    /// Replica-hours: the replicas times the hours they slept.
    pub fn replica_hours(&self) -> f64 {
        f64::from(self.replicas) * self.hours()
    }

    pub fn hours(&self) -> f64 {
        // Milliseconds of at most 31 days are exact in an f64.
        (self.until - self.since).num_milliseconds() as f64 / 3_600_000.0
    }
}

impl fmt::Display for Slept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let instant = |at: DateTime<Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        write!(
            f,
            "{} {}/{}",
            self.replicas,
            instant(self.since),
            instant(self.until)
        )
    }
}

/// Why a `slept` record does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not `REPLICAS SINCE/UNTIL` (e.g. `3 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z`) with SINCE before UNTIL, at most 31 days apart"
)]
pub struct UnreadableSlept(String);

impl FromStr for Slept {
    type Err = UnreadableSlept;

    /// A record as the controller writes it; anything else (a hand's) does not read.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unreadable = || UnreadableSlept(text.to_string());
        let (replicas, span) = text.split_once(' ').ok_or_else(unreadable)?;
        let (since, until) = span.split_once('/').ok_or_else(unreadable)?;
        let instant = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&Utc))
                .map_err(|_| unreadable())
        };
        let slept = Slept {
            replicas: replicas.parse().map_err(|_| unreadable())?,
            since: instant(since)?,
            until: instant(until)?,
        };
        let span = slept.until - slept.since;
        (slept.replicas > 0 && span > TimeDelta::zero() && span <= LONGEST_SLEEP)
            .then_some(slept)
            .ok_or_else(unreadable)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{self, decide, test_support::at};

    fn annotations(pairs: &[(&str, &str)]) -> Annotations {
        let map: BTreeMap<String, String> = (pairs.iter())
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        schedule::parse(&map, chrono_tz::UTC)
    }

    const NIGHTLY: [(&str, &str); 2] = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
    ];

    fn asleep(original: &str, since: &str) -> Annotations {
        let transition = format!("{since} down");
        let mut pairs = NIGHTLY.to_vec();
        pairs.extend([
            (schedule::ORIGINAL_REPLICAS, original),
            (schedule::LAST_TRANSITION, transition.as_str()),
        ]);
        annotations(&pairs)
    }

    /// The sleep the change `parsed` comes to at `now` ends, on an object found with `current`.
    fn ended(parsed: &Annotations, current: i32, now: DateTime<Utc>) -> Option<Slept> {
        let change = decide(parsed, current, now)?;
        Slept::ended_by(parsed, current, &change, now)
    }

    #[test]
    fn the_morning_wake_records_the_replicas_it_brings_back_since_the_sleep() {
        let parsed = asleep("5", "2026-11-27T20:00:00Z");
        let slept = ended(&parsed, 1, at("2026-11-28T07:00:02Z")).unwrap();
        assert_eq!(
            slept.to_string(),
            "4 2026-11-27T20:00:00Z/2026-11-28T07:00:02Z"
        );
        assert!((slept.replica_hours() - 4.0 * (11.0 + 2.0 / 3600.0)).abs() < 1e-9);
        assert_eq!(slept.to_string().parse(), Ok(slept));
    }

    #[test]
    fn the_sleep_ended_is_the_one_its_record_reads_back() {
        let parsed = asleep("5", "2026-11-27T20:00:00Z");
        let now = at("2026-11-28T07:00:02Z") + TimeDelta::milliseconds(640);
        let slept = ended(&parsed, 1, now).unwrap();
        assert_eq!(slept.to_string().parse(), Ok(slept));
    }

    #[test]
    fn no_record_where_nothing_slept_or_when_it_fell_asleep_is_not_known() {
        let now = at("2026-11-28T07:00:02Z");
        // Awake: the sleep at 20:00 records nothing.
        let awake = annotations(&NIGHTLY);
        let evening = at("2026-11-27T20:00:01Z");
        let sleep = decide(&awake, 3, evening).unwrap();
        assert_eq!(Slept::ended_by(&awake, 3, &sleep, evening), None);
        // Already at its count: nothing brought back.
        let parsed = asleep("5", "2026-11-27T20:00:00Z");
        let change = decide(&parsed, 0, now).unwrap();
        assert_eq!(Slept::ended_by(&parsed, 5, &change, now), None);
        // A constant sleep has no instant of its own.
        let constant = asleep(
            "5",
            &CONSTANT_SINCE.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
        assert_eq!(Slept::ended_by(&constant, 0, &change, now), None);
    }

    #[test]
    fn removing_the_schedule_records_the_sleep_it_gives_back() {
        let parsed = annotations(&[
            (schedule::ORIGINAL_REPLICAS, "2"),
            (schedule::LAST_TRANSITION, "2026-11-27T20:00:00Z down"),
        ]);
        let slept = ended(&parsed, 0, at("2026-11-27T22:00:00Z")).unwrap();
        assert_eq!((slept.replicas, slept.hours()), (2, 2.0));
    }

    #[test]
    fn a_sleep_dated_a_season_back_counts_its_last_31_days() {
        let parsed = asleep("1", "2026-01-01T00:00:00Z");
        let slept = ended(&parsed, 0, at("2026-11-28T07:00:00Z")).unwrap();
        assert_eq!(slept.hours(), 31.0 * 24.0);
    }

    #[test]
    fn a_record_that_is_not_the_controllers_does_not_read() {
        for text in [
            "",
            "3",
            "3 2026-11-27T20:00:00Z",
            "x 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z",
            "0 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z",
            "-2 2026-11-27T20:00:00Z/2026-11-28T07:00:00Z",
            "3 2026-11-28T07:00:00Z/2026-11-27T20:00:00Z",
            "3 2025-01-01T00:00:00Z/2026-11-28T07:00:00Z",
        ] {
            let error = text.parse::<Slept>().unwrap_err();
            assert!(error.to_string().contains("REPLICAS SINCE/UNTIL"), "{text}");
        }
    }

    proptest! {
        #[test]
        fn every_record_written_reads_back(replicas in 1..10_000i32, seconds in 1..31 * 86_400i64) {
            let until = at("2026-11-28T07:00:00Z");
            let slept = Slept { replicas, since: until - TimeDelta::seconds(seconds), until };
            prop_assert_eq!(slept.to_string().parse::<Slept>(), Ok(slept));
        }

        #[test]
        fn no_text_panics(text in ".{0,80}") {
            let _ = text.parse::<Slept>();
        }
    }
}
