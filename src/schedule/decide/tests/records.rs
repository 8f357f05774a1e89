//! What the original-replicas record holds across nights: with a scale-down cron alone, two
//! scale-downs in one night, a sleep on demand ending into a scale-down.

use chrono_tz::Tz;

use super::*;

fn decide_down_only(extra: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
    let mut pairs = SCALE_DOWN_ONLY.to_vec();
    pairs.extend_from_slice(extra);
    decide(&parse(&annotations(&pairs), Tz::UTC), replicas, at(now))
}

#[test]
fn without_a_scale_up_cron_each_scale_down_records_the_replicas_it_finds() {
    // Scaled down from 3 last night; woken by hand to 6 today.
    let last_night = [
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    assert_eq!(
        decide_down_only(&last_night, 6, "2026-11-24T20:00:00Z"),
        Some(ScaleChange {
            replicas: Some(0),
            original_replicas: AnnotationChange::Set(6),
            last_transition: AnnotationChange::Set(down("2026-11-24T20:00:00Z")),
            applied: Some(down("2026-11-24T20:00:00Z")),
            ended: None,
            cleanup: None,
        })
    );
}

#[test]
fn without_a_scale_up_cron_a_scale_down_with_nothing_to_take_keeps_a_record_only_at_its_count() {
    // Still at the 1 of last night: tonight takes nothing, and last night's 3 is still what
    // a removal gives back. Put below it by someone: they have taken over, so there is
    // nothing to give back, and last night's 3 must not linger.
    let last_night = [
        (DOWN_REPLICAS, "1"),
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    for (replicas, record) in [(1, AnnotationChange::Keep), (0, AnnotationChange::Remove)] {
        assert_eq!(
            decide_down_only(&last_night, replicas, "2026-11-24T20:00:00Z"),
            Some(ScaleChange {
                replicas: None,
                original_replicas: record,
                last_transition: AnnotationChange::Set(down("2026-11-24T20:00:00Z")),
                applied: Some(down("2026-11-24T20:00:00Z")),
                ended: None,
                cleanup: None,
            }),
            "replicas {replicas}"
        );
    }
}

#[test]
fn with_a_scale_up_cron_two_scale_downs_in_one_night_keep_the_first_count() {
    let pairs = [
        (SCALE_DOWN, "0 20,23 * * *"),
        (SCALE_UP, "0 7 * * *"),
        (ORIGINAL_REPLICAS, "5"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let parsed = parse(&annotations(&pairs), Tz::UTC);
    // Someone raised the replicas to 3 at 22:00: the 23:00 scale-down takes them, but the
    // morning still brings back the 5 the night started from.
    for replicas in [3, 0] {
        assert_eq!(
            decide(&parsed, replicas, at("2026-11-23T23:00:00Z")),
            Some(ScaleChange {
                replicas: (replicas != 0).then_some(0),
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(down("2026-11-23T23:00:00Z")),
                applied: Some(down("2026-11-23T23:00:00Z")),
                ended: None,
                cleanup: None,
            }),
            "replicas {replicas}"
        );
    }
}

/// Woken by hand to 5, then put to sleep on demand: the end of the sleep applies the night's
/// scale-down again, which finds the 0 the sleep set; the 5 the sleep took must survive it,
/// for `wake` and `restore` to bring back.
#[test]
fn a_sleep_on_demand_ending_into_a_scale_down_keeps_what_the_sleep_took() {
    let mut object = annotations(&SCALE_DOWN_ONLY);
    object.insert(LAST_TRANSITION.into(), "2026-11-23T20:00:00Z down".into());
    object.insert(ASLEEP_UNTIL.into(), "2026-11-24T12:00:00Z".into());
    let slept = decide(&parse(&object, Tz::UTC), 5, at("2026-11-24T10:00:00Z")).unwrap();
    assert_eq!(slept.replicas, Some(0));
    assert_eq!(slept.original_replicas, AnnotationChange::Set(5));
    write_back(&mut object, &slept);

    let ended = decide(&parse(&object, Tz::UTC), 0, at("2026-11-24T12:00:00Z")).unwrap();
    assert_eq!(ended.applied, Some(down("2026-11-23T20:00:00Z")));
    assert_eq!(ended.replicas, None);
    assert_eq!(ended.original_replicas, AnnotationChange::Keep);
    write_back(&mut object, &ended);
    object.remove(ASLEEP_UNTIL);

    let mut woken = object.clone();
    woken.insert(AWAKE_UNTIL.into(), "2026-11-24T18:00:00Z".into());
    assert_eq!(
        decide(&parse(&woken, Tz::UTC), 0, at("2026-11-24T13:00:00Z"))
            .and_then(|change| change.replicas),
        Some(5),
        "wake brings back the 5"
    );
    object.remove(SCALE_DOWN);
    assert_eq!(
        decide(&parse(&object, Tz::UTC), 0, at("2026-11-24T13:00:00Z"))
            .and_then(|change| change.cleanup),
        Some(Cleanup::Restore { original: 5 }),
        "restore brings back the 5"
    );
}
