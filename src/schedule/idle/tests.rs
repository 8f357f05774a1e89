use super::*;
use crate::schedule::test_support::at;

use serde_json::json;

use crate::schedule::{UPTIME, test_support::annotations};

const WORKING_HOURS: (&str, &str) = (UPTIME, "Mon-Fri 07:00-20:00");
const IDLE: (&str, &str) = (IDLE_AFTER, "30m");
const OPT_IN: (&str, &str) = (WAKE_ON_REQUEST, "2h");

/// `requests` counted by a source Prometheus shows counting.
fn counted(requests: f64) -> Option<Result<Counted, String>> {
    Some(Ok(Counted {
        requests,
        counting: Ok(()),
    }))
}

const NOT_SCRAPED: &str = "Prometheus at http://p:9090 does not show test_requests_total \
    scraped now, 2m ago and twice in between, so no request counted proves nothing";

/// No request counted, by a source Prometheus does not show counting.
fn unproven() -> Option<Result<Counted, String>> {
    Some(Ok(Counted {
        requests: 0.0,
        counting: Err(NOT_SCRAPED.into()),
    }))
}

fn plan_at(
    pairs: &[(&str, &str)],
    used_at: &str,
    now: &str,
    count: Option<Result<Counted, String>>,
    warned: bool,
) -> IdlePlan {
    let annotations = annotations(pairs);
    let look = IdleLook::of(&annotations, Tz::UTC, at(used_at), at(now)).expect("a look");
    look.plan(
        &annotations,
        false,
        at(now),
        count,
        warned,
        TimeDelta::hours(24),
    )
}

#[test]
fn only_a_namespace_with_idle_after_and_awake_by_its_schedule_is_looked_at_as_in_use_since_its_wake()
 {
    let now = at("2026-11-25T09:00:00Z");
    let used = at("2026-11-24T08:00:00Z");
    assert_eq!(
        IdleLook::of(&annotations(&[WORKING_HOURS]), Tz::UTC, used, now),
        None
    );
    assert_eq!(
        IdleLook::of(
            &annotations(&[WORKING_HOURS, IDLE, ("cronscaler.dev/paused", "true")]),
            Tz::UTC,
            used,
            now
        ),
        None
    );
    assert_eq!(
        IdleLook::of(&annotations(&[WORKING_HOURS, IDLE]), Tz::UTC, used, now),
        Some(IdleLook {
            idle_after: TimeDelta::minutes(30),
            asleep: false,
            used_at: at("2026-11-25T07:00:00Z"),
            next_change: Some(at("2026-11-25T20:00:00Z")),
        }),
        "the schedule's wake at 07:00 is the last use"
    );
    let night = at("2026-11-25T22:00:00Z");
    assert!(
        IdleLook::of(&annotations(&[WORKING_HOURS, IDLE]), Tz::UTC, used, night)
            .expect("a look")
            .asleep
    );
}

#[test]
fn idle_for_idle_after_it_sleeps_for_max_override_ending_a_wake_and_says_why() {
    let plan = plan_at(
        &[
            WORKING_HOURS,
            IDLE,
            OPT_IN,
            (AWAKE_UNTIL, "2026-11-25T15:00:00Z"),
        ],
        "2026-11-25T13:00:00Z",
        "2026-11-25T14:32:00Z",
        counted(0.0),
        false,
    );
    assert_eq!(
        serde_json::to_value(plan.patch.expect("the idle sleep")).unwrap(),
        json!([
            { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": "2026-11-25T15:00:00Z" },
            { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1asleep-until", "value": null },
            { "op": "remove", "path": "/metadata/annotations/cronscaler.dev~1awake-until" },
            { "op": "add", "path": "/metadata/annotations/cronscaler.dev~1asleep-until", "value": "2026-11-26T14:32:00Z" },
            { "op": "add", "path": "/metadata/annotations/cronscaler.dev~1idle-since", "value": "2026-11-25T14:02:00Z" },
        ])
    );
    assert_eq!(
        plan.event,
        Some((
            IDLE_SLEEP,
            "no requests for 30m: asleep until the next request or `cronscaler wake`, at most until 2026-11-26T14:32:00Z".to_string(),
            false
        ))
    );
    assert_eq!(
        plan.look_again,
        Some(at("2026-11-25T14:33:00Z")),
        "once more, should a request have won the race"
    );
}

#[test]
fn a_namespace_with_no_annotations_at_all_gets_them_whole() {
    let schedule = annotations(&[WORKING_HOURS, IDLE]);
    let now = at("2026-11-25T14:32:00Z");
    let look = IdleLook::of(&schedule, Tz::UTC, at(WOKEN), now).expect("a look");
    let plan = look.plan(
        &schedule,
        true,
        now,
        counted(0.0),
        false,
        TimeDelta::hours(24),
    );
    assert_eq!(
        serde_json::to_value(plan.patch.expect("the idle sleep")).unwrap(),
        json!([
            { "op": "test", "path": "/metadata/annotations", "value": null },
            { "op": "add", "path": "/metadata/annotations", "value": {
                "cronscaler.dev/asleep-until": "2026-11-26T14:32:00Z",
                "cronscaler.dev/idle-since": "2026-11-25T14:02:00Z",
            } },
        ])
    );
}

#[test]
fn idle_after_without_a_schedule_is_told_once_and_looked_at_no_more() {
    let alone = annotations(&[IDLE]);
    let now = at("2026-11-25T14:32:00Z");
    assert_eq!(IdleLook::of(&alone, Tz::UTC, at(WOKEN), now), None);
    let first = IdleLook::leftover(&alone, Tz::UTC, now, false);
    assert_eq!(
        first.event,
        Some((
            "InvalidSchedule",
            "cronscaler.dev/idle-after: \"30m\" needs a schedule to wake back to: add \
             cronscaler.dev/uptime, cronscaler.dev/downtime, cronscaler.dev/scale-down or \
             cronscaler.dev/scale-up (`cronscaler.dev/uptime: Mon-Sun 00:00-24:00` keeps it \
             up but when idle)"
                .to_string(),
            true
        ))
    );
    assert!(first.warned);
    let again = IdleLook::leftover(&alone, Tz::UTC, now, true);
    assert_eq!(
        (again.event, again.warned, again.look_again),
        (None, true, None)
    );
    let scheduled = IdleLook::leftover(&annotations(&[WORKING_HOURS]), Tz::UTC, now, true);
    assert_eq!((scheduled.event, scheduled.warned), (None, false));
}

#[test]
fn requests_that_cannot_be_counted_sleep_nothing_and_are_told_once() {
    let pairs = [WORKING_HOURS, IDLE];
    let (used, now) = ("2026-11-25T07:00:00Z", "2026-11-25T14:32:00Z");
    let why = || {
        Some(Err(
            "Prometheus at http://p:9090 did not answer within 5s".into()
        ))
    };
    let first = plan_at(&pairs, used, now, why(), false);
    assert_eq!(first.patch, None);
    let (reason, note, warning) = first.event.expect("a Warning");
    assert_eq!((reason, warning), (IDLE_UNKNOWN, true));
    assert!(note.ends_with("did not answer within 5s"), "{note}");
    assert!(first.warned);
    assert_eq!(first.look_again, Some(at("2026-11-25T14:33:00Z")));
    let again = plan_at(&pairs, used, now, why(), true);
    assert_eq!((again.event, again.warned), (None, true));
    let answered = plan_at(&pairs, used, now, counted(3.0), true);
    assert_eq!((answered.event, answered.warned), (None, false));
    let proven_idle = plan_at(&pairs, used, now, counted(0.0), true);
    assert_eq!(
        (
            proven_idle.event.map(|(reason, ..)| reason),
            proven_idle.warned
        ),
        (Some(IDLE_SLEEP), false)
    );
}

#[test]
fn no_request_counted_by_a_source_not_shown_counting_sleeps_nothing_and_is_told_once() {
    let pairs = [WORKING_HOURS, IDLE];
    let (used, now) = ("2026-11-25T07:00:00Z", "2026-11-25T14:32:00Z");
    let first = plan_at(&pairs, used, now, unproven(), false);
    assert_eq!(first.patch, None);
    assert_eq!(
        first.event,
        Some((
            IDLE_UNKNOWN,
            format!(
                "requests could not be counted, so nothing sleeps for idleness until they \
                 can: {NOT_SCRAPED}"
            ),
            true
        ))
    );
    assert_eq!(first.look_again, Some(at("2026-11-25T14:33:00Z")));
    let again = plan_at(&pairs, used, now, unproven(), true);
    assert_eq!((again.patch, again.event, again.warned), (None, None, true));
    let busy = Some(Ok(Counted {
        requests: 2.0,
        counting: Ok(()),
    }));
    assert_eq!(
        look(false).decide(at(now), busy.as_ref()),
        Idle::InUse {
            look_again: at("2026-11-25T14:33:00Z")
        },
        "a request counted is proof that the source counts"
    );
}

#[test]
fn asleep_it_is_looked_at_again_when_it_may_wake_and_an_ended_idle_since_goes() {
    let night = plan_at(
        &[WORKING_HOURS, IDLE],
        "2026-11-25T07:00:00Z",
        "2026-11-25T22:00:00Z",
        None,
        false,
    );
    assert_eq!(night.look_again, Some(at("2026-11-26T07:00:00Z")));
    assert_eq!(night.patch, None);
    let woken_by_hand = plan_at(
        &[WORKING_HOURS, IDLE, (IDLE_SINCE, "2026-11-25T14:02:00Z")],
        "2026-11-25T15:00:00Z",
        "2026-11-25T15:10:00Z",
        None,
        false,
    );
    assert_eq!(
        serde_json::to_value(woken_by_hand.patch.expect("the tidy-up")).unwrap(),
        json!([
            { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1idle-since", "value": "2026-11-25T14:02:00Z" },
            { "op": "remove", "path": "/metadata/annotations/cronscaler.dev~1idle-since" },
        ])
    );
    let sleeping = [
        WORKING_HOURS,
        IDLE,
        (ASLEEP_UNTIL, "2026-11-26T14:32:00Z"),
        (IDLE_SINCE, "2026-11-25T14:02:00Z"),
    ];
    assert_eq!(
        idle_since(&annotations(&sleeping), at("2026-11-25T15:00:00Z")),
        Some(at("2026-11-25T14:02:00Z"))
    );
    assert_eq!(
        plan_at(
            &sleeping,
            "2026-11-25T07:00:00Z",
            "2026-11-25T15:00:00Z",
            None,
            false
        )
        .patch,
        None
    );
}

const WOKEN: &str = "2026-11-25T13:00:00Z";

fn look(asleep: bool) -> IdleLook {
    IdleLook {
        idle_after: TimeDelta::minutes(30),
        asleep,
        used_at: at(WOKEN),
        next_change: None,
    }
}

#[test]
fn within_the_grace_after_a_wake_nothing_is_counted_and_it_stays_up() {
    let now = at("2026-11-25T13:20:00Z");
    assert!(!look(false).needs_count(now));
    assert_eq!(
        look(false).decide(now, None),
        Idle::InUse {
            look_again: at("2026-11-25T13:30:00Z")
        }
    );
}

#[test]
fn no_requests_for_idle_after_sleeps_since_the_quiet_began() {
    let now = at("2026-11-25T14:32:00Z");
    assert!(look(false).needs_count(now));
    assert_eq!(
        look(false).decide(now, counted(0.0).as_ref()),
        Idle::Sleep {
            since: at("2026-11-25T14:02:00Z")
        }
    );
    let just_after_grace = at("2026-11-25T13:30:00Z");
    assert_eq!(
        look(false).decide(just_after_grace, counted(0.0).as_ref()),
        Idle::Sleep { since: at(WOKEN) },
        "never idle since before its last use"
    );
}

#[test]
fn a_request_counted_keeps_it_up_and_an_unanswered_count_sleeps_nothing() {
    let now = at("2026-11-25T14:32:00Z");
    assert_eq!(
        look(false).decide(now, counted(0.5).as_ref()),
        Idle::InUse {
            look_again: at("2026-11-25T14:33:00Z")
        },
        "increase() counts a request as a fraction at the window's edge"
    );
    let unanswered = Some(Err("Prometheus did not answer".to_string()));
    assert_eq!(look(false).decide(now, unanswered.as_ref()), Idle::Unknown);
}

#[test]
fn asleep_it_is_left_alone() {
    let now = at("2026-11-25T23:00:00Z");
    assert!(!look(true).needs_count(now));
    assert_eq!(look(true).decide(now, None), Idle::Asleep);
}

#[test]
fn idle_after_is_a_duration_of_two_minutes_or_more() {
    assert_eq!(
        parse_idle_after(IDLE_AFTER, "30m"),
        Ok(Duration::from_secs(1800))
    );
    assert_eq!(
        parse_idle_after(IDLE_AFTER, "2m"),
        Ok(Duration::from_secs(120))
    );
    for wrong in ["soon", "-5m", ""] {
        let error = parse_idle_after(IDLE_AFTER, wrong).unwrap_err();
        assert!(
            error.to_string().contains("such as `30m`"),
            "{wrong}: {error}"
        );
    }
    for short in ["0s", "10s", "119s"] {
        assert_eq!(
            parse_idle_after(IDLE_AFTER, short).unwrap_err().to_string(),
            format!(
                "cronscaler.dev/idle-after: {short:?} is shorter than the minimum, 2m: \
                 Prometheus needs two scrapes of a proxy's metrics in the window to count \
                 its requests"
            )
        );
    }
}
