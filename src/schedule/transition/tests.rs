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
        (0..ZONES.len(), first..last, 0..1_000_000_000_u32).prop_map(|(zone, seconds, nanos)| (
            zone,
            DateTime::from_timestamp(seconds, nanos).unwrap()
        )),
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
