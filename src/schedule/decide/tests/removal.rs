//! A schedule removed: the record given back only while the replicas are what the scale-down
//! set, a person's change left, the annotations cleaned up and said so; and, as a property, a
//! removal never gives back a stale record.

use chrono::TimeDelta;
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;

/// The reported bug, night by night: removing the schedule gives back what the latest
/// scale-down took, never the count of an older night.
#[test]
fn a_workload_woken_by_hand_is_given_back_what_the_latest_scale_down_took() {
    let mut object = annotations(&SCALE_DOWN_ONLY);
    let first_night = decide(&parse(&object, Tz::UTC), 3, at("2026-11-23T20:00:00Z")).unwrap();
    assert_eq!(first_night.replicas, Some(0));
    write_back(&mut object, &first_night);
    // Woken by hand to 6 the next morning; the next night takes those 6.
    let second_night = decide(&parse(&object, Tz::UTC), 6, at("2026-11-24T20:00:00Z")).unwrap();
    assert_eq!(second_night.replicas, Some(0));
    write_back(&mut object, &second_night);

    object.remove(SCALE_DOWN);
    assert_eq!(
        decide(&parse(&object, Tz::UTC), 0, at("2026-11-24T22:00:00Z")),
        Some(ScaleChange {
            replicas: Some(6),
            original_replicas: AnnotationChange::Remove,
            last_transition: AnnotationChange::Remove,
            applied: None,
            ended: None,
            cleanup: Some(Cleanup::Restore { original: 6 }),
        })
    );
}

const LEFTOVERS: [(&str, &str); 2] = [
    (ORIGINAL_REPLICAS, "3"),
    (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
];

/// The schedule's crons are gone; `extra` is what else is left.
fn remove_schedule(extra: &[(&str, &str)], replicas: i32) -> Option<ScaleChange> {
    let mut pairs = LEFTOVERS.to_vec();
    pairs.extend_from_slice(extra);
    decide(
        &parse(&annotations(&pairs), Tz::UTC),
        replicas,
        at("2026-11-24T10:00:00Z"),
    )
}

fn only_the_annotations(cleanup: Cleanup) -> Option<ScaleChange> {
    Some(ScaleChange {
        replicas: None,
        original_replicas: AnnotationChange::Remove,
        last_transition: AnnotationChange::Remove,
        applied: None,
        ended: None,
        cleanup: Some(cleanup),
    })
}

#[test]
fn removed_schedule_gives_back_the_original_while_replicas_are_what_the_scale_down_set() {
    let restored = Some(ScaleChange {
        replicas: Some(3),
        original_replicas: AnnotationChange::Remove,
        last_transition: AnnotationChange::Remove,
        applied: None,
        ended: None,
        cleanup: Some(Cleanup::Restore { original: 3 }),
    });
    assert_eq!(remove_schedule(&[], 0), restored);
    assert_eq!(remove_schedule(&[(DOWN_REPLICAS, "1")], 1), restored);
}

#[test]
fn removed_schedule_leaves_replicas_a_person_changed_and_only_removes_the_annotations() {
    // Woken to 6 by hand, or even to the original 3: a person has taken over.
    for replicas in [6, 3] {
        assert_eq!(
            remove_schedule(&[], replicas),
            only_the_annotations(Cleanup::TakenOver { set: 0 }),
            "replicas {replicas}"
        );
    }
    // Put to 0 by hand under a down-replicas of 1.
    assert_eq!(
        remove_schedule(&[(DOWN_REPLICAS, "1")], 0),
        only_the_annotations(Cleanup::TakenOver { set: 1 })
    );
}

#[test]
fn removed_down_replicas_count_as_their_default() {
    // `down-replicas: 2` went with the crons: nothing says the controller set 2, so the
    // default 0 counts and the 2 stay. Guessing wrong this way never resizes anything.
    assert_eq!(
        remove_schedule(&[], 2),
        only_the_annotations(Cleanup::TakenOver { set: 0 })
    );
}

#[test]
fn removed_schedule_gives_back_nothing_unless_a_scale_down_is_in_force() {
    let woken = annotations(&[
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-24T07:00:00Z up"),
    ]);
    assert_eq!(
        decide(&parse(&woken, Tz::UTC), 0, at("2026-11-24T10:00:00Z")),
        only_the_annotations(Cleanup::NotScaledDown)
    );
    let without_a_transition = annotations(&[(ORIGINAL_REPLICAS, "3")]);
    assert_eq!(
        decide(
            &parse(&without_a_transition, Tz::UTC),
            0,
            at("2026-11-24T10:00:00Z")
        ),
        Some(ScaleChange {
            last_transition: AnnotationChange::Keep,
            ..only_the_annotations(Cleanup::NotScaledDown).unwrap()
        })
    );
}

#[test]
fn removed_schedule_drops_a_stale_last_transition() {
    let parsed = parse(
        &annotations(&[(LAST_TRANSITION, "2026-11-24T07:00:00Z up")]),
        Tz::UTC,
    );
    assert_eq!(
        decide(&parsed, 4, at("2026-11-24T09:00:00Z")),
        Some(ScaleChange {
            replicas: None,
            original_replicas: AnnotationChange::Keep,
            last_transition: AnnotationChange::Remove,
            applied: None,
            ended: None,
            cleanup: Some(Cleanup::NotScaledDown),
        })
    );
    let clean = parse(&annotations(&[("app", "web")]), Tz::UTC);
    assert_eq!(decide(&clean, 4, at("2026-11-24T09:00:00Z")), None);
}

#[test]
fn a_cleanup_says_what_it_did_and_why() {
    assert_eq!(
        Cleanup::Restore { original: 3 }.describe(0),
        "replicas restored from 0 to 3; the controller's annotations removed"
    );
    assert_eq!(
        Cleanup::Restore { original: 3 }.describe(3),
        "replicas already at the original 3; the controller's annotations removed"
    );
    assert_eq!(
        Cleanup::TakenOver { set: 0 }.describe(6),
        "replicas left at 6 because they were changed after the scale-down to 0; \
             the controller's annotations removed"
    );
    assert_eq!(
        Cleanup::NotScaledDown.describe(4),
        "replicas left at 4 as no scale-down is in force; the controller's annotations removed"
    );
}

// ---- a removal never gives back a stale record ----

#[derive(Debug, Clone)]
enum Step {
    /// The next transition of the schedule, applied by the controller.
    Transition,
    /// Someone sets the replicas.
    ByHand(i32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![Just(Step::Transition), (0..7_i32).prop_map(Step::ByHand)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn a_removal_gives_back_only_the_record_and_only_to_what_the_controller_set(
        with_scale_up in any::<bool>(),
        down_replicas in proptest::option::of(0..3_i32),
        start in 0..7_i32,
        steps in proptest::collection::vec(step(), 0..14),
    ) {
        let mut object = annotations(&SCALE_DOWN_ONLY);
        if with_scale_up {
            object.insert(SCALE_UP.to_string(), "0 7 * * *".to_string());
        }
        if let Some(down_replicas) = down_replicas {
            object.insert(DOWN_REPLICAS.to_string(), down_replicas.to_string());
        }
        let mut replicas = start;
        let mut now = at("2026-11-23T12:00:00Z");
        // What the controller's latest change of replicas found and set.
        let mut latest_write: Option<(i32, i32)> = None;
        for step in steps {
            match step {
                Step::ByHand(to) => replicas = to,
                Step::Transition => {
                    let parsed = parse(&object, Tz::UTC);
                    let Annotations::Scheduled(schedule, _) = &parsed else {
                        panic!("not scheduled: {parsed:?}");
                    };
                    now = schedule.next_transition(now).unwrap().at;
                    if let Some(change) = decide(&parsed, replicas, now) {
                        if let Some(to) = change.replicas {
                            latest_write = Some((replicas, to));
                            replicas = to;
                        }
                        write_back(&mut object, &change);
                    }
                }
            }
        }
        let recorded = object.get(ORIGINAL_REPLICAS).map(|n| n.parse::<i32>().unwrap());
        object.remove(SCALE_DOWN);
        object.remove(SCALE_UP);
        let later = now + TimeDelta::hours(1);
        let removal = decide(&parse(&object, Tz::UTC), replicas, later);
        if let Some(to) = removal.as_ref().and_then(|change| change.replicas) {
            prop_assert_eq!(Some(to), recorded, "only the record is given back");
            let (found, set) = latest_write.unwrap();
            prop_assert_eq!(replicas, set, "only while replicas are what the controller set");
            if !with_scale_up {
                prop_assert_eq!(to, found, "what the latest scale-down found, not an older count");
            }
        }
        if let Some(removal) = &removal {
            write_back(&mut object, removal);
        }
        prop_assert!(!object.contains_key(ORIGINAL_REPLICAS));
        prop_assert!(!object.contains_key(LAST_TRANSITION));
        let replicas = removal.and_then(|change| change.replicas).unwrap_or(replicas);
        prop_assert_eq!(decide(&parse(&object, Tz::UTC), replicas, later), None);
    }
}
