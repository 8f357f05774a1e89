use super::*;
use crate::schedule::{test_support::*, *};

// ---- parsing ----

#[test]
fn parses_every_key_and_ignores_foreign_ones() {
    let parsed = parse(
        &annotations(&[
            (SCALE_DOWN, "0 20 * * MON-FRI"),
            (SCALE_UP, "0 7 * * MON-FRI"),
            (DOWN_REPLICAS, "1"),
            (UP_REPLICAS, "3"),
            (TIMEZONE, "Asia/Tokyo"),
            (PAUSED, "false"),
            (ORIGINAL_REPLICAS, "4"),
            (LAST_TRANSITION, "2026-11-23T11:00:00Z down"),
            (
                "kubectl.kubernetes.io/last-applied-configuration",
                "{\"not\": \"ours\"}",
            ),
            ("example.com/scale-down", "not a cron"),
        ]),
        Tz::UTC,
    );
    let Annotations::Scheduled(schedule, recorded) = parsed else {
        panic!("expected a schedule, got {parsed:?}");
    };
    assert_eq!(
        schedule.rule_of(Direction::Down),
        Some((SCALE_DOWN, "0 20 * * MON-FRI"))
    );
    assert_eq!(
        schedule.rule_of(Direction::Up),
        Some((SCALE_UP, "0 7 * * MON-FRI"))
    );
    assert_eq!(schedule.down_replicas, 1);
    assert_eq!(schedule.up_replicas, Some(3));
    assert_eq!(schedule.timezone, chrono_tz::Asia::Tokyo);
    assert!(!schedule.paused);
    assert_eq!(
        recorded,
        Recorded {
            original_replicas: Some(4),
            last_transition: Some(down("2026-11-23T11:00:00Z")),
        }
    );
    // 20:00 in Tokyo is 11:00 UTC.
    assert_eq!(
        schedule.next_transition(at("2026-11-23T00:00:00Z")),
        Some(down("2026-11-23T11:00:00Z"))
    );
}

#[test]
fn absent_keys_take_their_defaults() {
    let parsed = parse(
        &annotations(&[(SCALE_DOWN, "0 20 * * *")]),
        chrono_tz::Europe::Berlin,
    );
    let Annotations::Scheduled(schedule, recorded) = parsed else {
        panic!("expected a schedule, got {parsed:?}");
    };
    assert!(!schedule.has(Direction::Up));
    assert_eq!(schedule.down_replicas, 0);
    assert_eq!(schedule.up_replicas, None);
    assert_eq!(schedule.timezone, chrono_tz::Europe::Berlin);
    assert!(!schedule.paused);
    assert_eq!(recorded, Recorded::default());
}

#[test]
fn either_cron_alone_is_a_schedule() {
    let (schedule, _) = scheduled(&[(SCALE_UP, "0 7 * * *")]);
    assert!(!schedule.has(Direction::Down));
    assert_eq!(
        schedule.governing_transition(at("2026-11-23T12:00:00Z")),
        Some(up("2026-11-23T07:00:00Z"))
    );
}

#[test]
fn without_crons_the_object_is_unscheduled() {
    let foreign_only = parse(&annotations(&[("app", "web")]), Tz::UTC);
    assert!(
        matches!(foreign_only, Annotations::Unscheduled(ref l) if *l == Leftovers::default()),
        "{foreign_only:?}"
    );
    let leftovers = parse(
        &annotations(&[
            (DOWN_REPLICAS, "2"),
            (ORIGINAL_REPLICAS, "5"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]),
        Tz::UTC,
    );
    assert!(
        matches!(leftovers, Annotations::Unscheduled(ref l) if *l == Leftovers {
            recorded: Recorded {
                original_replicas: Some(5),
                last_transition: Some(down("2026-11-23T20:00:00Z")),
            },
            down_replicas: 2,
        }),
        "{leftovers:?}"
    );
    let without_down_replicas = parse(&annotations(&[(ORIGINAL_REPLICAS, "5")]), Tz::UTC);
    assert!(
        matches!(without_down_replicas, Annotations::Unscheduled(ref l) if l.down_replicas == 0),
        "{without_down_replicas:?}"
    );
    let paused = parse(
        &annotations(&[(PAUSED, "true"), (ORIGINAL_REPLICAS, "5")]),
        Tz::UTC,
    );
    assert!(
        matches!(paused, Annotations::Unscheduled(ref l) if *l == Leftovers::default()),
        "{paused:?}"
    );
}

#[test]
fn each_invalid_value_is_reported_with_key_value_and_reason() {
    let cases = [
        (
            TIMEZONE,
            "Mars/Olympus",
            r#"cronscaler.dev/timezone: "Mars/Olympus" is not an IANA time zone name"#,
        ),
        (
            DOWN_REPLICAS,
            "two",
            r#"cronscaler.dev/down-replicas: "two" is not a whole number"#,
        ),
        (
            DOWN_REPLICAS,
            "1.5",
            r#"cronscaler.dev/down-replicas: "1.5" is not a whole number"#,
        ),
        (
            DOWN_REPLICAS,
            "",
            r#"cronscaler.dev/down-replicas: "" is not a whole number"#,
        ),
        (
            DOWN_REPLICAS,
            "-1",
            r#"cronscaler.dev/down-replicas: "-1" must be 0 or more"#,
        ),
        (
            DOWN_REPLICAS,
            "99999999999",
            r#"cronscaler.dev/down-replicas: "99999999999" is larger than 2147483647, the largest replica count"#,
        ),
        (
            UP_REPLICAS,
            "0",
            r#"cronscaler.dev/up-replicas: "0" must be 1 or more"#,
        ),
        (
            UP_REPLICAS,
            "-99999999999",
            r#"cronscaler.dev/up-replicas: "-99999999999" must be 1 or more"#,
        ),
        (
            UP_REPLICAS,
            "+3",
            r#"cronscaler.dev/up-replicas: "+3" is not a whole number"#,
        ),
        (
            PAUSED,
            "yes",
            r#"cronscaler.dev/paused: "yes" must be `true` or `false`"#,
        ),
        (
            PAUSED,
            "True",
            r#"cronscaler.dev/paused: "True" must be `true` or `false`"#,
        ),
        (
            ORIGINAL_REPLICAS,
            "five",
            r#"cronscaler.dev/original-replicas: "five" is not a whole number"#,
        ),
        (
            ORIGINAL_REPLICAS,
            "-3",
            r#"cronscaler.dev/original-replicas: "-3" must be 0 or more"#,
        ),
        (
            LAST_TRANSITION,
            "yesterday",
            r#"cronscaler.dev/last-transition: "yesterday" is not an RFC 3339 instant followed by a space and `up` or `down`"#,
        ),
        (
            LAST_TRANSITION,
            "2026-13-01T00:00:00Z down",
            r#"cronscaler.dev/last-transition: "2026-13-01T00:00:00Z down" does not start with an RFC 3339 instant such as 2026-11-23T20:00:00Z"#,
        ),
        (
            LAST_TRANSITION,
            "2026-11-23T20:00:00Z sideways",
            r#"cronscaler.dev/last-transition: "2026-11-23T20:00:00Z sideways" does not go on with `up` or `down`"#,
        ),
        (
            "cronscaler.dev/scale-dwon",
            "0 20 * * *",
            r#"cronscaler.dev/scale-dwon: "0 20 * * *" is not a known annotation; the keys under cronscaler.dev/ are scale-down, scale-up, uptime, downtime, holidays, awake-until, asleep-until, down-replicas, up-replicas, timezone, paused, exclude, ready-by, wake-order, wake-on-request, wake-hosts, idle-after, gitops, original-replicas, original-suspend, original-value, paused-at, last-transition, slept, last-warm-up and idle-since"#,
        ),
    ];
    for (key, value, expected) in cases {
        // A valid cron beside the bad value shows the bad value alone spoils it.
        let found = problems(&[(SCALE_UP, "0 7 * * *"), (key, value)]);
        assert_eq!(found, vec![expected.to_string()], "{key}={value:?}");
    }
}

#[test]
fn invalid_annotation_keeps_its_parts() {
    let Annotations::Invalid(errors) = parse(&annotations(&[(TIMEZONE, "Mars/Olympus")]), Tz::UTC)
    else {
        panic!("a bad zone must be reported");
    };
    assert_eq!(
        errors,
        vec![InvalidAnnotation {
            key: TIMEZONE.to_string(),
            value: "Mars/Olympus".to_string(),
            reason: "is not an IANA time zone name".to_string(),
        }]
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let found = problems(&[
        (SCALE_DOWN, "0 25 * * *"),
        (SCALE_UP, "0 7 * * *"),
        (TIMEZONE, "Europe/Berlln"),
        (PAUSED, "maybe"),
    ]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].starts_with(r#"cronscaler.dev/paused: "maybe""#));
    assert!(
        found[1].starts_with(
            r#"cronscaler.dev/scale-down: "0 25 * * *" is not a valid cron expression ("#
        ),
        "{}",
        found[1]
    );
    assert!(found[2].starts_with(r#"cronscaler.dev/timezone: "Europe/Berlln""#));
}

#[test]
fn idle_since_is_an_instant() {
    assert_eq!(
        problems(&[(UPTIME, "Mon-Sun 00:00-24:00"), (IDLE_SINCE, "lunch")]),
        vec![
            "cronscaler.dev/idle-since: \"lunch\" is written by the controller as an RFC \
                 3339 instant; remove it"
        ]
    );
    scheduled(&[(UPTIME, "Mon-Sun 00:00-24:00"), (IDLE_AFTER, "30m")]);
    assert_eq!(problems(&[(IDLE_AFTER, "a while")]).len(), 1);
}
