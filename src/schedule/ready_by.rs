//! Ready by the hour: a schedule with `ready-by: "true"` starts each scale-up early by the
//! Namespace's measured warm-up (`last-warm-up`), so that what wakes at 07:00 is ready at 07:00.
//! The scale-up keeps its own instant: only the moment it is applied moves.

use chrono::TimeDelta;

use super::invalid::{InvalidAnnotation, invalid};

/// The warm-up assumed before one was measured (`cronscaler run --warm-up` sets another).
pub const DEFAULT_WARM_UP: TimeDelta = TimeDelta::minutes(5);
/// The most a scale-up is ever started early, whatever was measured.
pub const MAX_HEAD_START: TimeDelta = TimeDelta::hours(1);

/// How early a schedule's scale-ups start: by the warm-up measured, or else the one assumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyBy {
    /// The Namespace's last measured warm-up.
    Measured(TimeDelta),
    /// What is assumed until one is measured.
    Assumed(TimeDelta),
}

impl ReadyBy {
    /// How long before its instant a scale-up is applied.
    pub fn head_start(&self) -> TimeDelta {
        let (ReadyBy::Measured(warm_up) | ReadyBy::Assumed(warm_up)) = *self;
        warm_up.clamp(TimeDelta::zero(), MAX_HEAD_START)
    }
}

/// Reads `ready-by`: `true` or `false`.
pub fn parse_ready_by(key: &str, value: &str) -> Result<bool, InvalidAnnotation> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(
            key,
            value,
            "must be `true` (wake early by the measured warm-up) or `false`",
        )),
    }
}

/// Reads the controller's `last-warm-up` (`42s`); a value it did not write is no measurement.
pub fn parse_warm_up(value: &str) -> Option<TimeDelta> {
    humantime::parse_duration(value)
        .ok()
        .and_then(|duration| TimeDelta::from_std(duration).ok())
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use proptest::prelude::*;

    use super::*;
    use crate::schedule::{test_support::*, *};

    /// Awake on weekdays from 07:00 to 20:00 UTC, ready by 07:00 after a warm-up of 20 s.
    fn office(warm_up: Option<&str>) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            (UPTIME, "Mon-Fri 07:00-20:00 UTC".to_string()),
            (READY_BY, "true".to_string()),
        ];
        if let Some(warm_up) = warm_up {
            pairs.push((LAST_WARM_UP, warm_up.to_string()));
        }
        pairs
    }

    fn parsed(pairs: &[(&str, String)]) -> Annotations {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        parse(&annotations(&pairs), chrono_tz::Tz::UTC)
    }

    fn schedule_of(pairs: &[(&str, String)]) -> Schedule {
        match parsed(pairs) {
            Annotations::Scheduled(schedule, _) => schedule,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_wake_starts_its_warm_up_early_and_keeps_its_own_instant() {
        let schedule = schedule_of(&office(Some("20s")));
        // Tuesday 2026-11-24.
        assert_eq!(
            schedule.in_force(at("2026-11-24T06:59:39Z")),
            Some(down("2026-11-23T20:00:00Z")),
            "before the warm-up it is still night"
        );
        assert_eq!(
            schedule.in_force(at("2026-11-24T06:59:40Z")),
            Some(up("2026-11-24T07:00:00Z")),
            "20 s early, the morning's own transition"
        );
        assert_eq!(
            schedule.next_look(at("2026-11-23T21:00:00Z")),
            Some(at("2026-11-24T06:59:40Z")),
            "the timer fires at the early start"
        );
        assert_eq!(
            schedule.next_look(at("2026-11-24T06:59:40Z")),
            Some(at("2026-11-24T07:00:00Z"))
        );
        assert_eq!(
            schedule.in_force(at("2026-11-24T19:59:59Z")),
            Some(up("2026-11-24T07:00:00Z")),
            "a scale-down is never early"
        );
    }

    #[test]
    fn an_early_wake_is_applied_once_and_not_again_at_its_hour() {
        let mut object = office(Some("20s"));
        object.push((LAST_TRANSITION, "2026-11-23T20:00:00Z down".to_string()));
        object.push((ORIGINAL_REPLICAS, "3".to_string()));
        let early = decide(&parsed(&object), 0, at("2026-11-24T06:59:41Z")).unwrap();
        assert_eq!(early.replicas, Some(3));
        assert_eq!(early.applied, Some(up("2026-11-24T07:00:00Z")));
        let mut woken = object.clone();
        woken.retain(|(key, _)| ![LAST_TRANSITION, ORIGINAL_REPLICAS].contains(key));
        woken.push((LAST_TRANSITION, "2026-11-24T07:00:00Z up".to_string()));
        for now in [
            "2026-11-24T06:59:50Z",
            "2026-11-24T07:00:00Z",
            "2026-11-24T12:00:00Z",
        ] {
            assert_eq!(decide(&parsed(&woken), 3, at(now)), None, "{now}");
        }
    }

    #[test]
    fn without_a_measurement_the_assumed_warm_up_applies_and_without_ready_by_none() {
        let unmeasured = schedule_of(&office(None));
        assert_eq!(
            unmeasured.next_look(at("2026-11-23T21:00:00Z")),
            Some(at("2026-11-24T06:55:00Z"))
        );
        let assumed = unmeasured.assuming_warm_up(TimeDelta::seconds(30));
        assert_eq!(
            assumed.next_look(at("2026-11-23T21:00:00Z")),
            Some(at("2026-11-24T06:59:30Z"))
        );
        let mut off = office(Some("20s"));
        off[1].1 = "false".to_string();
        assert_eq!(
            schedule_of(&off).next_look(at("2026-11-23T21:00:00Z")),
            Some(at("2026-11-24T07:00:00Z"))
        );
    }

    #[test]
    fn a_wake_on_a_holiday_is_not_started_and_a_short_wake_is_started_in_full() {
        let mut holiday = office(Some("20s"));
        holiday.push((HOLIDAYS, "2026-11-24".to_string()));
        assert_eq!(
            schedule_of(&holiday).in_force(at("2026-11-24T06:59:50Z")),
            Some(down("2026-11-23T20:00:00Z"))
        );
        // Awake 07:00 to 07:01 only, with an hour's warm-up: ready at 07:00, asleep at 07:01.
        let brief = schedule_of(&[
            (UPTIME, "Mon-Fri 07:00-07:01 UTC".to_string()),
            (READY_BY, "true".to_string()),
            (LAST_WARM_UP, "1h".to_string()),
        ]);
        assert_eq!(
            brief.in_force(at("2026-11-24T06:30:00Z")),
            Some(up("2026-11-24T07:00:00Z"))
        );
        assert_eq!(
            brief.in_force(at("2026-11-24T07:01:00Z")),
            Some(down("2026-11-24T07:01:00Z"))
        );
    }

    fn instant(seconds: i64) -> DateTime<Utc> {
        at("2026-11-23T00:00:00Z") + TimeDelta::seconds(seconds)
    }

    proptest! {
        /// Between one look and the next, what is in force does not change: the timer never
        /// sleeps through an early wake.
        #[test]
        fn nothing_changes_between_looks(
            start in 0i64..7 * 86_400,
            warm_up in 1i64..3_600,
            probes in proptest::collection::vec(0.0f64..1.0, 8),
        ) {
            let schedule = schedule_of(&[
                (UPTIME, "Mon-Fri 07:00-07:30, Mon-Fri 08:00-20:00 UTC".to_string()),
                (READY_BY, "true".to_string()),
                (LAST_WARM_UP, format!("{warm_up}s")),
            ]);
            let now = instant(start);
            let next = schedule.next_look(now).unwrap();
            prop_assert!(next > now);
            let in_force = schedule.in_force(now);
            let span = (next - now).num_seconds();
            for probe in probes {
                let inside = now + TimeDelta::seconds((probe * span as f64) as i64);
                if inside < next {
                    prop_assert_eq!(schedule.in_force(inside), in_force, "at {}", inside);
                }
            }
        }
    }

    #[test]
    fn the_head_start_is_the_measurement_else_the_assumption_and_never_over_an_hour() {
        let head_start = |measured: Option<TimeDelta>| {
            measured
                .map_or(ReadyBy::Assumed(DEFAULT_WARM_UP), ReadyBy::Measured)
                .head_start()
        };
        assert_eq!(
            head_start(Some(TimeDelta::seconds(20))),
            TimeDelta::seconds(20)
        );
        assert_eq!(head_start(None), TimeDelta::minutes(5));
        assert_eq!(head_start(Some(TimeDelta::hours(3))), TimeDelta::hours(1));
    }

    #[test]
    fn ready_by_is_true_or_false_and_a_bad_value_is_named() {
        assert_eq!(parse_ready_by(READY_BY, "true"), Ok(true));
        assert_eq!(parse_ready_by(READY_BY, "false"), Ok(false));
        let error = parse_ready_by(READY_BY, "yes").unwrap_err().to_string();
        assert!(
            error.contains("cronscaler.dev/ready-by") && error.contains("\"yes\""),
            "{error}"
        );
        assert_eq!(parse_warm_up("42s"), Some(TimeDelta::seconds(42)));
        assert_eq!(parse_warm_up("soon"), None);
    }
}
