//! Constant states (a window list covering the whole week): applied once, then a person's
//! change stands.

use chrono_tz::Tz;

use super::*;

fn decide_at(pairs: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
    decide(&parse(&annotations(pairs), Tz::UTC), replicas, at(now))
}

#[test]
fn downtime_all_week_puts_to_sleep_once_and_a_persons_change_then_stands() {
    let mut object = annotations(&[(DOWNTIME, "Mon-Sun 00:00-24:00")]);
    let slept = decide(&parse(&object, Tz::UTC), 5, at("2026-11-23T12:00:00Z")).unwrap();
    assert_eq!(slept.replicas, Some(0));
    assert_eq!(slept.original_replicas, AnnotationChange::Set(5));
    assert_eq!(
        slept.applied.map(|applied| applied.direction),
        Some(Direction::Down)
    );
    write_back(&mut object, &slept);
    for (replicas, now) in [(0, "2026-11-23T12:05:00Z"), (2, "2027-03-01T00:00:00Z")] {
        assert_eq!(decide(&parse(&object, Tz::UTC), replicas, at(now)), None);
    }
}

#[test]
fn uptime_all_week_wakes_an_object_asleep_by_an_earlier_schedule() {
    let woken = decide_at(
        &[
            (UPTIME, "Mon-Fri 00:00-24:00, Sat-Sun 00:00-24:00"),
            (ORIGINAL_REPLICAS, "3"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ],
        0,
        "2026-11-24T12:00:00Z",
    )
    .unwrap();
    assert_eq!(woken.replicas, Some(3));
    assert_eq!(woken.original_replicas, AnnotationChange::Remove);
    assert_eq!(
        woken.applied.map(|applied| applied.direction),
        Some(Direction::Up)
    );
}

#[test]
fn the_end_of_a_sleep_on_demand_wakes_an_object_awake_all_week() {
    let change = decide_at(
        &[
            (UPTIME, "Mon-Sun 00:00-24:00"),
            (ORIGINAL_REPLICAS, "3"),
            (
                LAST_TRANSITION,
                "2026-11-24T14:00:00Z down until 2026-11-24T18:00:00Z",
            ),
        ],
        0,
        "2026-11-24T18:00:01Z",
    )
    .unwrap();
    assert_eq!(change.replicas, Some(3));
    assert_eq!(change.original_replicas, AnnotationChange::Remove);
    assert!(change.ended.is_some());
}
