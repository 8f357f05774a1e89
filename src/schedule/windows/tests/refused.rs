//! What a window list is refused for, naming key, value and reason: malformed or overlapping
//! windows, mixing with crons or another zone, what kube-downscaler reads otherwise; and, as a
//! property, that no text panics.

use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::*;

#[test]
fn bad_windows_are_reported_with_key_value_and_reason() {
    let cases = [
        (
            (UPTIME, "Mon-Fri 07:00-07:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-07:00" has `Mon-Fri 07:00-07:00`, an empty window: it starts and ends at 07:00 (kube-downscaler reads it as never; leave it out)"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-20:00, Mon 19:00-21:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00, Mon 19:00-21:00" has overlapping windows: `Mon-Fri 07:00-20:00` and `Mon 19:00-21:00` both hold Mon 19:00 (kube-downscaler takes them together; write them as one)"#,
        ),
        (
            (UPTIME, "Mon-Fri 22:00-08:00, Tue 07:00-09:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 22:00-08:00, Tue 07:00-09:00" has overlapping windows: `Mon-Fri 22:00-08:00` and `Tue 07:00-09:00` both hold Tue 07:00 (kube-downscaler takes them together; write them as one)"#,
        ),
        (
            (DOWNTIME, "Sa-Su 00:00-24:00"),
            r#"cronscaler.dev/downtime: "Sa-Su 00:00-24:00" has `Sa-Su 00:00-24:00`, whose `Sa` is not a day; days are Mon, Tue, Wed, Thu, Fri, Sat, Sun"#,
        ),
        (
            (UPTIME, "Mon-Fri 7-20"),
            r#"cronscaler.dev/uptime: "Mon-Fri 7-20" has `Mon-Fri 7-20`: `7` is not a time of day as HH:MM"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-25:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-25:00" has `Mon-Fri 07:00-25:00`: `25:00` is not a time of day as HH:MM"#,
        ),
        (
            (UPTIME, "Mon 24:00-06:00"),
            r#"cronscaler.dev/uptime: "Mon 24:00-06:00" has `Mon 24:00-06:00`: `24:00` may only end a window; a window from midnight starts at 00:00"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-20:00 UTC daily"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00 UTC daily" has `Mon-Fri 07:00-20:00 UTC daily`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`, or `HH:MM-HH:MM` for every day"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-20:00 Mars/Base"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00 Mars/Base" has `Mon-Fri 07:00-20:00 Mars/Base`, whose `Mars/Base` is not an IANA time zone name"#,
        ),
        (
            (UPTIME, "Mon 07:00-08:00 UTC, Tue 07:00-08:00 Asia/Tokyo"),
            r#"cronscaler.dev/uptime: "Mon 07:00-08:00 UTC, Tue 07:00-08:00 Asia/Tokyo" names two time zones, UTC and Asia/Tokyo; one schedule has one zone (kube-downscaler reads each window in its own)"#,
        ),
        (
            (UPTIME, " , "),
            r#"cronscaler.dev/uptime: " , " holds no window; expected e.g. `Mon-Fri 07:00-20:00`"#,
        ),
    ];
    for ((key, value), expected) in cases {
        assert_eq!(
            problems(&[(key, value)]),
            vec![expected.to_string()],
            "{value}"
        );
    }
}

#[test]
fn windows_do_not_mix_with_crons_the_other_window_kind_or_another_zone() {
    assert_eq!(
        problems(&[(UPTIME, "Mon-Fri 07:00-20:00"), (SCALE_DOWN, "0 22 * * *"),]),
        vec![
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00" cannot be combined with cronscaler.dev/scale-down "0 22 * * *": a schedule is windows or crons, not both"#
        ]
    );
    assert_eq!(
        problems(&[
            (UPTIME, "Mon-Fri 07:00-20:00"),
            (DOWNTIME, "Sat-Sun 00:00-24:00"),
        ]),
        vec![
            r#"cronscaler.dev/downtime: "Sat-Sun 00:00-24:00" cannot be combined with cronscaler.dev/uptime "Mon-Fri 07:00-20:00": one says when to be awake, the other when to be asleep; keep one"#
        ]
    );
    assert_eq!(
        problems(&[
            (UPTIME, "Mon-Fri 07:00-20:00 Europe/Berlin"),
            (TIMEZONE, "Asia/Tokyo"),
        ]),
        vec![
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00 Europe/Berlin" names the time zone Europe/Berlin, but cronscaler.dev/timezone is Asia/Tokyo"#
        ]
    );
}

#[test]
fn what_kube_downscaler_reads_otherwise_is_refused_naming_the_difference() {
    let cases = [
        (
            (UPTIME, "Mon-Fri 00:00-00:00 Europe/Berlin"),
            r#"cronscaler.dev/uptime: "Mon-Fri 00:00-00:00 Europe/Berlin" has `Mon-Fri 00:00-00:00 Europe/Berlin`, an empty window: it starts and ends at 00:00 (kube-downscaler reads it as never; leave it out)"#,
        ),
        (
            (
                DOWNTIME,
                "2027-01-02T00:00:00+01:00-2026-12-24T00:00:00+01:00",
            ),
            r#"cronscaler.dev/downtime: "2027-01-02T00:00:00+01:00-2026-12-24T00:00:00+01:00" has `2027-01-02T00:00:00+01:00-2026-12-24T00:00:00+01:00`, an empty range: it does not end after it starts (kube-downscaler reads it as never, or as that one instant if both are the same)"#,
        ),
        (
            (DOWNTIME, "2026-12-24-2027-01-02"),
            r#"cronscaler.dev/downtime: "2026-12-24-2027-01-02" has `2026-12-24-2027-01-02`, which is not two RFC 3339 instants joined by `-`, e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00` or `2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`"#,
        ),
        (
            (DOWNTIME, "2026-12-24T00:00-2027-01-02T00:00"),
            r#"cronscaler.dev/downtime: "2026-12-24T00:00-2027-01-02T00:00" has `2026-12-24T00:00-2027-01-02T00:00`, which is not two RFC 3339 instants joined by `-`, e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00` or `2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`"#,
        ),
        (
            (UPTIME, "always, Sat 10:00-12:00"),
            r#"cronscaler.dev/uptime: "always, Sat 10:00-12:00" has `always` as one of several entries; `always` and `never` are the whole value (as in kube-downscaler)"#,
        ),
    ];
    for ((key, value), expected) in cases {
        assert_eq!(
            problems(&[(key, value)]),
            vec![expected.to_string()],
            "{value}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Whatever is written, parsing says what is wrong or yields a schedule whose searches
    /// answer: no input panics.
    #[test]
    fn no_window_or_holiday_text_panics(
        window in prop_oneof![
            "[MoTuWeFrSaSun,\\- 0-9:]{0,40}( Europe/Berlin| UTC)?",
            "((Mon|Tue|Fri|Sat|Sun)(-(Mon|Thu|Sun))? [0-2][0-9]:[0-5][0-9]-[0-2][0-9]:[0-6][0-9](, )?){1,3}( America/Santiago| Australia/Lord_Howe)?",
        ],
        holidays in prop_oneof![
            "([0-9+\\-]{1,12}(\\.\\.[0-9+\\-]{1,12})?,? ?){0,3}",
            "(20[2-3][0-9]-[01][0-9]-[0-3][0-9](\\.\\.20[2-3][0-9]-[01][0-9]-[0-3][0-9])?, ){0,3}2026-12-2[0-9]",
        ],
        until in prop_oneof![
            "[0-9T:Z+\\-]{0,30}",
            "2026-1[12]-[0-2][0-9]T[01][0-9]:[0-5][0-9]:00(Z|\\+05:45)",
        ],
        seconds in at("2024-01-01T00:00:00Z").timestamp()..at("2031-01-01T00:00:00Z").timestamp(),
    ) {
        let t = DateTime::<Utc>::from_timestamp(seconds, 0).unwrap();
        let parsed = parse(
            &annotations(&[
                (UPTIME, window.as_str()),
                (HOLIDAYS, holidays.as_str()),
                (AWAKE_UNTIL, until.as_str()),
            ]),
            chrono_tz::Tz::UTC,
        );
        if let Annotations::Scheduled(schedule, recorded) = parsed {
            let _ = schedule.governing_transition(t);
            let _ = schedule.next_look(t);
            let _ = decide(&Annotations::Scheduled(schedule, recorded), 3, t);
        }
    }
}
