use chrono::TimeDelta;
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;
use crate::schedule::{test_support::*, *};

// ---- decide ----

const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];

fn decide_with(extra: &[(&str, &str)], replicas: i32, now: &str) -> Option<ScaleChange> {
    let mut pairs = NIGHTLY.to_vec();
    pairs.extend_from_slice(extra);
    decide(&parse(&annotations(&pairs), Tz::UTC), replicas, at(now))
}

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

/// A scale-down cron alone, as docs/scheduling.md recommends: people bring the workload back by hand.
const SCALE_DOWN_ONLY: [(&str, &str); 1] = [(SCALE_DOWN, "0 20 * * *")];

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

// ---- overrides on demand ----

fn applied_at(change: &Option<ScaleChange>) -> Option<String> {
    change
        .as_ref()
        .and_then(|change| change.applied)
        .map(|transition| transition.to_string())
}

#[test]
fn waking_on_demand_acts_once_and_the_schedule_takes_over_at_its_end() {
    let night = [
        (ORIGINAL_REPLICAS, "5"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let woken = decide_with(&night, 0, "2026-11-23T22:03:10Z").unwrap();
    assert_eq!(woken.replicas, Some(5));
    assert_eq!(woken.original_replicas, AnnotationChange::Remove);
    assert_eq!(
        applied_at(&Some(woken.clone())).as_deref(),
        Some("2026-11-23T22:03:10Z up until 2026-11-24T00:00:00Z")
    );
    assert_eq!(woken.ended, None);

    let awake = [
        (
            LAST_TRANSITION,
            "2026-11-23T22:03:10Z up until 2026-11-24T00:00:00Z",
        ),
        (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    // Applied: a person's own change during the override stands, and the override is not
    // applied again.
    assert_eq!(decide_with(&awake, 2, "2026-11-23T23:00:00Z"), None);
    // At its end the scale-down in force applies again, taking what runs then.
    let ended = decide_with(&awake, 2, "2026-11-24T00:00:00Z").unwrap();
    assert_eq!(ended.replicas, Some(0));
    assert_eq!(ended.original_replicas, AnnotationChange::Set(2));
    assert_eq!(
        ended.last_transition,
        AnnotationChange::Set(down("2026-11-23T20:00:00Z"))
    );
    assert_eq!(
        ended.ended.map(|t| t.to_string()).as_deref(),
        Some("2026-11-23T22:03:10Z up until 2026-11-24T00:00:00Z")
    );
    // Whether or not the annotation is still there once it has run out.
    assert_eq!(
        decide_with(&awake[..1], 2, "2026-11-24T00:00:00Z"),
        Some(ended)
    );
}

#[test]
fn an_override_that_ends_while_nobody_looks_is_made_good_once_at_the_next_look() {
    let awake = [(
        LAST_TRANSITION,
        "2026-11-23T22:03:10Z up until 2026-11-24T00:00:00Z",
    )];
    // Found in the morning: the scale-up in force is applied, and the replicas stay.
    let change = decide_with(&awake, 5, "2026-11-24T09:00:00Z").unwrap();
    assert_eq!(change.replicas, None);
    assert_eq!(
        change.last_transition,
        AnnotationChange::Set(up("2026-11-24T07:00:00Z"))
    );
    assert!(change.ended.is_some());
    let mut after = awake.to_vec();
    after[0].1 = "2026-11-24T07:00:00Z up";
    assert_eq!(decide_with(&after, 5, "2026-11-24T09:00:00Z"), None);
}

#[test]
fn sleeping_on_demand_takes_the_replicas_and_the_morning_gives_them_back() {
    let day = [
        (LAST_TRANSITION, "2026-11-24T07:00:00Z up"),
        (ASLEEP_UNTIL, "2026-11-24T18:00:00Z"),
    ];
    let slept = decide_with(&day, 3, "2026-11-24T14:00:00Z").unwrap();
    assert_eq!(slept.replicas, Some(0));
    assert_eq!(slept.original_replicas, AnnotationChange::Set(3));
    assert_eq!(
        applied_at(&Some(slept)).as_deref(),
        Some("2026-11-24T14:00:00Z down until 2026-11-24T18:00:00Z")
    );
    let asleep = [
        (ORIGINAL_REPLICAS, "3"),
        (
            LAST_TRANSITION,
            "2026-11-24T14:00:00Z down until 2026-11-24T18:00:00Z",
        ),
        (ASLEEP_UNTIL, "2026-11-24T18:00:00Z"),
    ];
    let woken = decide_with(&asleep, 0, "2026-11-24T18:00:01Z").unwrap();
    assert_eq!(woken.replicas, Some(3));
    assert_eq!(woken.applied, Some(up("2026-11-24T07:00:00Z")));
}

#[test]
fn a_paused_schedule_ignores_overrides_too() {
    assert_eq!(
        decide_with(
            &[(PAUSED, "true"), (AWAKE_UNTIL, "2026-11-24T00:00:00Z")],
            0,
            "2026-11-23T22:00:00Z"
        ),
        None
    );
}

#[test]
fn an_override_reaching_too_far_is_left_out_until_within_reach_and_the_schedule_followed() {
    let pairs = [
        NIGHTLY[0],
        NIGHTLY[1],
        (AWAKE_UNTIL, "2026-11-25T06:00:00Z"),
    ];
    let max = chrono::TimeDelta::hours(24);
    let night = at("2026-11-23T22:00:00Z");
    let (acting, out_of_reach) = in_reach(parse(&annotations(&pairs), Tz::UTC), night, max);
    let out_of_reach = out_of_reach.unwrap();
    assert_eq!(
        out_of_reach.problem.to_string(),
        r#"cronscaler.dev/awake-until: "2026-11-25T06:00:00Z" reaches 32h ahead, more than the 24h an override may (--max-override)"#
    );
    assert_eq!(out_of_reach.within_reach, at("2026-11-24T06:00:00Z"));
    // Meanwhile the schedule is followed as without the override.
    assert_eq!(
        decide(&acting, 3, night).and_then(|change| change.applied),
        Some(down("2026-11-23T20:00:00Z"))
    );
    // Within reach, it is applied.
    let (acting, out_of_reach) = in_reach(
        parse(&annotations(&pairs), Tz::UTC),
        out_of_reach.within_reach,
        max,
    );
    assert_eq!(out_of_reach, None);
    assert_eq!(
        applied_at(&decide(&acting, 0, at("2026-11-24T06:00:00Z"))).as_deref(),
        Some("2026-11-24T06:00:00Z up until 2026-11-25T06:00:00Z")
    );
    // Once applied, it is never out of reach again.
    let mut applied = pairs.to_vec();
    applied.push((
        LAST_TRANSITION,
        "2026-11-23T22:00:00Z up until 2026-11-25T06:00:00Z",
    ));
    let (_, out_of_reach) = in_reach(parse(&annotations(&applied), Tz::UTC), night, max);
    assert_eq!(out_of_reach, None);
}

// ---- constant states ----

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

#[test]
fn an_override_with_fractions_of_a_second_acts_once() {
    let mut object = annotations(&[NIGHTLY[0], NIGHTLY[1]]);
    object.insert(
        ASLEEP_UNTIL.to_string(),
        "2026-11-24T18:00:00.123456+00:00".to_string(),
    );
    let slept = decide(&parse(&object, Tz::UTC), 3, at("2026-11-24T14:00:00Z")).unwrap();
    assert_eq!(slept.replicas, Some(0));
    write_back(&mut object, &slept);
    // Someone scales to 1 during the override: it stands, nothing is applied again.
    assert_eq!(
        decide(&parse(&object, Tz::UTC), 1, at("2026-11-24T14:01:00Z")),
        None
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

mod due {
    use proptest::prelude::*;

    use super::*;

    fn some_annotations() -> impl Strategy<Value = Vec<(&'static str, String)>> {
        let crons = prop_oneof![
            Just("0 20 * * *"),
            Just("30 7 * * MON-FRI"),
            Just("*/10 * * * *")
        ];
        (
            proptest::option::of(crons.clone()),
            proptest::option::of(crons),
            proptest::option::of(0..4_i32),
            proptest::option::of(1..6_i32),
            proptest::option::of(0..8_i32),
            proptest::option::of((0..72_i64, any::<bool>())),
            any::<bool>(),
        )
            .prop_map(|(down, up, low, high, original, last, paused)| {
                let mut pairs = Vec::new();
                pairs.extend(down.map(|cron| (SCALE_DOWN, cron.to_string())));
                pairs.extend(up.map(|cron| (SCALE_UP, cron.to_string())));
                pairs.extend(low.map(|n| (DOWN_REPLICAS, n.to_string())));
                pairs.extend(high.map(|n| (UP_REPLICAS, n.to_string())));
                pairs.extend(original.map(|n| (ORIGINAL_REPLICAS, n.to_string())));
                pairs.extend(last.map(|(hours, down)| {
                    let transition = Transition::scheduled(
                        at("2026-11-20T00:00:00Z") + chrono::TimeDelta::hours(hours),
                        if down { Direction::Down } else { Direction::Up },
                    );
                    (LAST_TRANSITION, transition.to_string())
                }));
                if paused {
                    pairs.push((PAUSED, "true".to_string()));
                }
                pairs
            })
    }

    proptest! {
        /// The tracker reads an object only when `is_due` says so: it must hold exactly when
        /// some reconcile would change something, and that must not depend on the replicas,
        /// which the watched metadata does not carry.
        #[test]
        fn is_due_is_exactly_whether_a_reconcile_changes_something(
            pairs in some_annotations(),
            replicas in 0..10_i32,
            hours in 0..96_i64,
        ) {
            let now = at("2026-11-20T00:00:00Z") + chrono::TimeDelta::hours(hours);
            let pairs: Vec<(&str, &str)> =
                pairs.iter().map(|(key, value)| (*key, value.as_str())).collect();
            let parsed = parse(&annotations(&pairs), Tz::UTC);
            let due = match &parsed {
                Annotations::Scheduled(schedule, recorded) => {
                    let leftovers = Leftovers { recorded: recorded.clone(), ..Leftovers::default() };
                    is_due(Some(schedule), &leftovers, now)
                }
                Annotations::Unscheduled(leftovers) => is_due(None, leftovers, now),
                Annotations::Invalid(_) => false,
            };
            prop_assert_eq!(decide(&parsed, replicas, now).is_some(), due);
        }
    }
}
