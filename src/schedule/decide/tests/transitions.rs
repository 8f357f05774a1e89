//! Scheduled transitions: a scale-down takes the replicas and remembers them, a scale-up gives
//! them back, manual changes between stand, catch-up applies only the latest missed one, and a
//! paused or invalid schedule does nothing.

use chrono_tz::Tz;

use super::*;

#[test]
fn scale_down_remembers_the_replicas_it_takes() {
    assert_eq!(
        decide_with(&[], 5, "2026-11-23T20:00:05Z"),
        Some(ScaleChange {
            replicas: Some(0),
            original_replicas: AnnotationChange::Set(5),
            last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
            applied: Some(down("2026-11-23T20:00:00Z")),
            ended: None,
            cleanup: None,
        })
    );
    assert_eq!(
        decide_with(&[(DOWN_REPLICAS, "1")], 5, "2026-11-23T20:00:05Z")
            .and_then(|change| change.replicas),
        Some(1)
    );
}

#[test]
fn scale_down_at_or_below_down_replicas_only_records_the_transition() {
    for (down_replicas, replicas) in [("0", 0), ("2", 1), ("2", 2)] {
        assert_eq!(
            decide_with(
                &[(DOWN_REPLICAS, down_replicas)],
                replicas,
                "2026-11-23T21:00:00Z"
            ),
            Some(ScaleChange {
                replicas: None,
                original_replicas: AnnotationChange::Keep,
                last_transition: AnnotationChange::Set(down("2026-11-23T20:00:00Z")),
                applied: Some(down("2026-11-23T20:00:00Z")),
                ended: None,
                cleanup: None,
            }),
            "down-replicas {down_replicas}, replicas {replicas}"
        );
    }
}

#[test]
fn scale_up_restores_the_remembered_replicas_and_forgets_them() {
    let night = [
        (ORIGINAL_REPLICAS, "5"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    assert_eq!(
        decide_with(&night, 0, "2026-11-24T07:00:00Z"),
        Some(ScaleChange {
            replicas: Some(5),
            original_replicas: AnnotationChange::Remove,
            last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
            applied: Some(up("2026-11-24T07:00:00Z")),
            ended: None,
            cleanup: None,
        })
    );
    let mut with_target = night.to_vec();
    with_target.push((UP_REPLICAS, "3"));
    assert_eq!(
        decide_with(&with_target, 0, "2026-11-24T07:00:00Z")
            .map(|c| (c.replicas, c.original_replicas)),
        Some((Some(3), AnnotationChange::Remove))
    );
}

#[test]
fn scale_up_without_a_target_changes_no_replicas() {
    assert_eq!(
        decide_with(&[], 2, "2026-11-24T08:00:00Z"),
        Some(ScaleChange {
            replicas: None,
            original_replicas: AnnotationChange::Keep,
            last_transition: AnnotationChange::Set(up("2026-11-24T07:00:00Z")),
            applied: Some(up("2026-11-24T07:00:00Z")),
            ended: None,
            cleanup: None,
        })
    );
}

#[test]
fn between_transitions_manual_changes_stand() {
    let night = [
        (ORIGINAL_REPLICAS, "5"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    // Someone scales to 3 at 22:00: the controller does not fight it.
    assert_eq!(decide_with(&night, 3, "2026-11-23T22:00:00Z"), None);
    // In the morning the remembered 5 comes back, not the manual 3.
    assert_eq!(
        decide_with(&night, 3, "2026-11-24T07:00:00Z").and_then(|c| c.replicas),
        Some(5)
    );
}

#[test]
fn catch_up_applies_only_the_latest_missed_transition_once() {
    // The controller was away from Saturday night to Monday morning.
    let mut object = annotations(&[
        NIGHTLY[0],
        NIGHTLY[1],
        (ORIGINAL_REPLICAS, "5"),
        (LAST_TRANSITION, "2026-11-21T20:00:00Z down"),
    ]);
    let now = at("2026-11-23T08:00:00Z");
    let change = decide(&parse(&object, Tz::UTC), 0, now).unwrap();
    assert_eq!(
        change,
        ScaleChange {
            replicas: Some(5),
            original_replicas: AnnotationChange::Remove,
            last_transition: AnnotationChange::Set(up("2026-11-23T07:00:00Z")),
            applied: Some(up("2026-11-23T07:00:00Z")),
            ended: None,
            cleanup: None,
        }
    );
    write_back(&mut object, &change);
    assert_eq!(decide(&parse(&object, Tz::UTC), 5, now), None);
    assert_eq!(
        decide(&parse(&object, Tz::UTC), 5, at("2026-11-23T19:59:59Z")),
        None
    );
}

#[test]
fn paused_does_nothing_at_all() {
    assert_eq!(
        decide_with(&[(PAUSED, "true")], 5, "2026-11-23T20:00:05Z"),
        None
    );
    assert!(decide_with(&[(PAUSED, "false")], 5, "2026-11-23T20:00:05Z").is_some());
    let paused_leftovers = parse(
        &annotations(&[
            (PAUSED, "true"),
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]),
        Tz::UTC,
    );
    assert_eq!(
        decide(&paused_leftovers, 0, at("2026-11-23T22:00:00Z")),
        None
    );
}

#[test]
fn invalid_annotations_do_nothing() {
    assert_eq!(
        decide_with(
            &[(TIMEZONE, "Mars/Olympus"), (ORIGINAL_REPLICAS, "5")],
            0,
            "2026-11-24T07:00:05Z"
        ),
        None
    );
    let no_crons_but_bad = parse(
        &annotations(&[(ORIGINAL_REPLICAS, "5"), (PAUSED, "yes")]),
        Tz::UTC,
    );
    assert_eq!(
        decide(&no_crons_but_bad, 0, at("2026-11-24T07:00:05Z")),
        None
    );
}
