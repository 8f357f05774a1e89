use serde_json::json;

use super::*;
use crate::schedule::{
    AWAKE_UNTIL, UPTIME,
    test_support::{annotations, at},
};

/// Monday 2026-11-23, 21:00 UTC: the night of a Monday-to-Friday 07:00-20:00 schedule.
const NIGHT: &str = "2026-11-23T21:00:00Z";
const LIMITS: (Tz, TimeDelta) = (Tz::UTC, TimeDelta::hours(24));
const OFFICE: [(&str, &str); 1] = [(UPTIME, "Mon-Fri 07:00-20:00")];

fn asked(state: Asked, span: Option<&str>) -> OverrideRequestSpec {
    OverrideRequestSpec {
        state,
        for_: span.map(String::from),
        by: Some("alice".into()),
        means: Some("kubectl".into()),
        ..OverrideRequestSpec::default()
    }
}

fn seen(spec: OverrideRequestSpec, pairs: &[(&str, &str)]) -> Seen {
    Seen {
        namespace: "team-a".into(),
        spec,
        status: None,
        created: Some(at(NIGHT)),
        annotations: Some(annotations(pairs)),
        superseded_by: None,
    }
}

fn answered(phase: Phase, message: &str, until: Option<&str>) -> OverrideRequestStatus {
    OverrideRequestStatus {
        phase: Some(phase),
        message: message.into(),
        until: until.map(String::from),
        answered: Some(NIGHT.into()),
    }
}

#[test]
fn a_wake_for_two_hours_is_written_signed_by_who_asked_and_told() {
    let carried = plan(
        &seen(asked(Asked::Awake, Some("2h")), &OFFICE),
        LIMITS,
        at(NIGHT),
    );
    assert_eq!(
        carried,
        Carried::Set {
            patch: json!({ "metadata": { "annotations": {
                "cronscaler.dev/awake-until": "2026-11-23T23:00:00Z",
                "cronscaler.dev/asleep-until": null,
                "cronscaler.dev/idle-since": null,
            } } }),
            manager: "alice (kubectl)".into(),
            status: answered(
                Phase::Done,
                "Namespace team-a is awake until 2026-11-23T23:00:00Z (2h from now)",
                Some("2026-11-23T23:00:00Z")
            ),
            event: (
                OVERRIDE_REQUESTED,
                "Namespace team-a woken until 2026-11-23T23:00:00Z (2h from now), asked by alice \
                 (kubectl)"
                    .into()
            ),
        }
    );
}

#[test]
fn a_snooze_lasts_until_the_next_wake_up() {
    let Carried::Set { status, event, .. } = plan(
        &seen(asked(Asked::Asleep, None), &OFFICE),
        LIMITS,
        at(NIGHT),
    ) else {
        panic!("a snooze is written");
    };
    assert_eq!(status.until.as_deref(), Some("2026-11-24T07:00:00Z"));
    assert!(
        event
            .1
            .starts_with("Namespace team-a put to sleep until 2026-11-24T07:00:00Z")
    );
}

#[test]
fn back_to_the_schedule_takes_the_overrides_away_even_where_the_cache_shows_none() {
    let woken = [
        (UPTIME, "Mon-Fri 07:00-20:00"),
        (AWAKE_UNTIL, "2026-11-23T23:00:00Z"),
    ];
    for pairs in [&woken[..], &OFFICE[..]] {
        let Carried::Set { patch, status, .. } = plan(
            &seen(asked(Asked::Schedule, None), pairs),
            LIMITS,
            at(NIGHT),
        ) else {
            panic!("the overrides are taken away");
        };
        assert_eq!(patch, schedule::asked::back_to_schedule_patch());
        assert_eq!(
            status.message,
            "Namespace team-a follows its schedule again"
        );
    }
}

#[test]
fn of_two_requests_not_answered_yet_the_later_one_is_carried_out() {
    let earlier = Seen {
        superseded_by: Some("sleep-2".into()),
        ..seen(asked(Asked::Awake, Some("2h")), &OFFICE)
    };
    assert_eq!(
        plan(&earlier, LIMITS, at(NIGHT)),
        Carried::Answered {
            status: answered(
                Phase::Refused,
                "superseded by OverrideRequest team-a/sleep-2, made after it: not carried out",
                None
            )
        }
    );
}

#[test]
fn a_refusal_names_the_field_its_value_and_why_and_writes_nothing() {
    let refusal = |spec: OverrideRequestSpec, pairs: &[(&str, &str)]| match plan(
        &seen(spec, pairs),
        LIMITS,
        at(NIGHT),
    ) {
        Carried::Answered { status } if status.phase == Some(Phase::Refused) => status.message,
        other => panic!("refused: {other:?}"),
    };
    assert_eq!(
        refusal(asked(Asked::Awake, Some("2 hours please")), &OFFICE),
        "spec.for: \"2 hours please\" is not a duration such as 2h or 90m"
    );
    assert!(
        refusal(asked(Asked::Awake, Some("300000y")), &OFFICE).contains("more than the 24h"),
        "ages ahead is too far, not an overflow"
    );
    assert_eq!(
        refusal(asked(Asked::Awake, Some("30h")), &OFFICE),
        "2026-11-25T03:00:00Z is 30h ahead, more than the 24h an override may reach; the \
         controller would refuse it (its --max-override)"
    );
    let both = OverrideRequestSpec {
        until: Some("2026-11-23T23:00:00Z".into()),
        ..asked(Asked::Awake, Some("2h"))
    };
    assert_eq!(
        refusal(both, &OFFICE),
        "spec.until and spec.for are both given: give one"
    );
    let bad_until = OverrideRequestSpec {
        until: Some("tonight".into()),
        ..asked(Asked::Awake, None)
    };
    assert_eq!(
        refusal(bad_until, &OFFICE),
        "spec.until: \"tonight\" is not an RFC 3339 instant such as 2026-11-23T22:00:00Z"
    );
    assert!(
        refusal(asked(Asked::Awake, Some("1h")), &[])
            .starts_with("Namespace team-a has no schedule"),
        "a Namespace nothing schedules has nothing to wake"
    );
}

#[test]
fn a_request_found_long_after_it_was_made_is_refused_not_carried_out_at_night() {
    let late = at(NIGHT) + TimeDelta::minutes(11);
    match plan(
        &seen(asked(Asked::Awake, Some("2h")), &OFFICE),
        LIMITS,
        late,
    ) {
        Carried::Answered { status } => {
            assert_eq!(status.phase, Some(Phase::Refused));
            assert!(
                status.message.starts_with("made 11m ago"),
                "{}",
                status.message
            );
        }
        other => panic!("refused: {other:?}"),
    }
}

#[test]
fn an_unknown_namespace_is_refused_and_an_answered_request_is_removed_an_hour_on() {
    let unknown = Seen {
        annotations: None,
        ..seen(asked(Asked::Awake, None), &OFFICE)
    };
    assert!(matches!(
        plan(&unknown, LIMITS, at(NIGHT)),
        Carried::Answered { status } if status.phase == Some(Phase::Refused)
    ));
    let done = Seen {
        status: Some(answered(Phase::Done, "woken", None)),
        ..seen(asked(Asked::Awake, None), &OFFICE)
    };
    assert_eq!(
        plan(&done, LIMITS, at(NIGHT)),
        Carried::Remove {
            at: at("2026-11-23T22:00:00Z")
        }
    );
}

#[test]
fn who_asked_is_kept_printable_and_short_for_the_field_manager() {
    let spec = OverrideRequestSpec {
        by: Some(format!("{}\u{1b}[31m", "m".repeat(100))),
        means: None,
        ..asked(Asked::Awake, Some("1h"))
    };
    let Carried::Set { manager, .. } = plan(&seen(spec, &OFFICE), LIMITS, at(NIGHT)) else {
        panic!("written");
    };
    assert_eq!(
        manager,
        format!("{} (an OverrideRequest)", "m".repeat(MAX_WORDS))
    );
    assert!(manager.len() <= 128);
}

#[test]
fn a_snooze_on_friday_night_is_the_weekend_s_already() {
    let friday_night = at("2026-11-27T21:00:00Z");
    let spec = seen(asked(Asked::Asleep, None), &OFFICE);
    let spec = Seen {
        created: Some(friday_night),
        ..spec
    };
    match plan(&spec, LIMITS, friday_night) {
        Carried::Answered { status } => {
            assert_eq!(status.phase, Some(Phase::Done));
            assert_eq!(status.until.as_deref(), Some("2026-11-30T07:00:00Z"));
        }
        other => panic!("nothing written: {other:?}"),
    }
}
