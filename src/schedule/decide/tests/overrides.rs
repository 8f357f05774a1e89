//! Overrides on demand (`awake-until`, `asleep-until`): applied once, a person's change during
//! one stands, the schedule takes over at its end, one reaching too far waits until in reach.

use chrono_tz::Tz;

use super::*;

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
