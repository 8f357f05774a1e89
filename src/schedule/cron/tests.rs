use std::time::{Duration, Instant};

use crate::schedule::{test_support::*, *};

#[test]
fn malformed_cron_expressions_are_rejected_with_a_reason() {
    let cases = [
        (
            "0 0 20 * * * 2026",
            "has 7 fields, but a year field is not supported; use 5 fields \
                 (minute hour day-of-month month day-of-week) or 6 with seconds first",
        ),
        (
            "0 20 * *",
            "has 4 fields; a cron expression has 5 fields \
                 (minute hour day-of-month month day-of-week) or 6 with seconds first",
        ),
        (
            "  ",
            "is empty; expected a cron expression such as `0 20 * * MON-FRI`",
        ),
        (
            "0 0 13 * +FRI",
            "uses the `+` day-of-week modifier, which is not supported: \
                 day-of-month and day-of-week always combine with OR, as in ordinary cron",
        ),
    ];
    for (expression, reason) in cases {
        assert_eq!(
            problems(&[(SCALE_DOWN, expression)]),
            vec![format!("{SCALE_DOWN}: {expression:?} {reason}")]
        );
    }
    for expression in ["0 60 * * *", "0 20 * * MONDAY", "@reboot", "0 20 32 * *"] {
        let found = problems(&[(SCALE_UP, expression)]);
        assert_eq!(found.len(), 1, "{expression}: {found:?}");
        assert!(
            found[0].starts_with(&format!(
                "{SCALE_UP}: {expression:?} is not a valid cron expression ("
            )),
            "{}",
            found[0]
        );
    }
}

#[test]
fn never_firing_crons_are_rejected_quickly() {
    for expression in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 , * * *"] {
        let started = Instant::now();
        let found = problems(&[(SCALE_DOWN, expression)]);
        let took = started.elapsed();
        assert_eq!(
            found,
            vec![format!(
                "{SCALE_DOWN}: {expression:?} never fires: no date in the calendar matches it"
            )]
        );
        // This takes under 3 ms unoptimised; croner's own search, which runs
        // on to the year 5000, takes over 100 ms. The bound leaves room for
        // a busy machine.
        assert!(took < Duration::from_millis(50), "{expression}: {took:?}");
    }
    // A fifth Friday in February needs a leap year starting on a Friday.
    assert_eq!(
        firings("0 0 * 2 FRI#5", "UTC", "2026-01-01T00:00:00Z", 1),
        ["2036-02-29T00:00:00Z"]
    );
}

#[test]
fn cron_syntax_features_fire_when_expected() {
    let cases: &[(&str, &str, &[&str])] = &[
        // Names of weekdays and months, in any case.
        (
            "0 20 * * MON-FRI",
            "2026-11-20T21:00:00Z",
            &["2026-11-23T20:00:00Z", "2026-11-24T20:00:00Z"],
        ),
        (
            "0 20 * * mon-fri",
            "2026-11-20T21:00:00Z",
            &["2026-11-23T20:00:00Z"],
        ),
        (
            "0 6 1 JAN,JUL *",
            "2026-06-01T00:00:00Z",
            &["2026-07-01T06:00:00Z", "2027-01-01T06:00:00Z"],
        ),
        // Ranges, steps and lists.
        (
            "0 9-11 * * *",
            "2026-11-23T09:30:00Z",
            &[
                "2026-11-23T10:00:00Z",
                "2026-11-23T11:00:00Z",
                "2026-11-24T09:00:00Z",
            ],
        ),
        (
            "*/20 * * * *",
            "2026-11-23T10:05:00Z",
            &[
                "2026-11-23T10:20:00Z",
                "2026-11-23T10:40:00Z",
                "2026-11-23T11:00:00Z",
            ],
        ),
        (
            "0 8-20/6 * * *",
            "2026-11-23T00:00:00Z",
            &[
                "2026-11-23T08:00:00Z",
                "2026-11-23T14:00:00Z",
                "2026-11-23T20:00:00Z",
                "2026-11-24T08:00:00Z",
            ],
        ),
        (
            "0,30 8 * * *",
            "2026-11-23T00:00:00Z",
            &[
                "2026-11-23T08:00:00Z",
                "2026-11-23T08:30:00Z",
                "2026-11-24T08:00:00Z",
            ],
        ),
        // Last day of the month, including a leap February.
        (
            "0 0 L * *",
            "2026-01-15T00:00:00Z",
            &[
                "2026-01-31T00:00:00Z",
                "2026-02-28T00:00:00Z",
                "2026-03-31T00:00:00Z",
            ],
        ),
        (
            "0 0 L 2 *",
            "2027-03-01T00:00:00Z",
            &["2028-02-29T00:00:00Z"],
        ),
        // The weekday nearest the 15th: Thursday, then Sunday moves to Monday.
        (
            "0 9 15W * *",
            "2026-10-01T00:00:00Z",
            &[
                "2026-10-15T09:00:00Z",
                "2026-11-16T09:00:00Z",
                "2026-12-15T09:00:00Z",
            ],
        ),
        // Saturday the 15th moves back to Friday.
        (
            "0 9 15W * *",
            "2026-08-01T00:00:00Z",
            &["2026-08-14T09:00:00Z"],
        ),
        // The second Friday, and the last Friday.
        (
            "0 9 * * 5#2",
            "2026-11-01T00:00:00Z",
            &["2026-11-13T09:00:00Z", "2026-12-11T09:00:00Z"],
        ),
        (
            "0 9 * * 5L",
            "2026-11-01T00:00:00Z",
            &["2026-11-27T09:00:00Z"],
        ),
        // Day-of-month OR day-of-week: Friday the 6th, Tuesday the 10th, Friday the 13th.
        (
            "0 0 10 * FRI",
            "2026-11-01T00:00:00Z",
            &[
                "2026-11-06T00:00:00Z",
                "2026-11-10T00:00:00Z",
                "2026-11-13T00:00:00Z",
            ],
        ),
        // Nicknames.
        ("@daily", "2026-11-23T12:00:00Z", &["2026-11-24T00:00:00Z"]),
        ("@hourly", "2026-11-23T12:00:00Z", &["2026-11-23T13:00:00Z"]),
        ("@weekly", "2026-11-23T12:00:00Z", &["2026-11-29T00:00:00Z"]),
        (
            "@monthly",
            "2026-11-23T12:00:00Z",
            &["2026-12-01T00:00:00Z"],
        ),
        ("@yearly", "2026-11-23T12:00:00Z", &["2027-01-01T00:00:00Z"]),
        (
            "@annually",
            "2026-11-23T12:00:00Z",
            &["2027-01-01T00:00:00Z"],
        ),
        // Six fields: seconds first.
        (
            "30 0 20 * * *",
            "2026-11-23T12:00:00Z",
            &["2026-11-23T20:00:30Z", "2026-11-24T20:00:30Z"],
        ),
        (
            "*/20 30 1 * * *",
            "2026-11-23T00:00:00Z",
            &[
                "2026-11-23T01:30:00Z",
                "2026-11-23T01:30:20Z",
                "2026-11-23T01:30:40Z",
                "2026-11-24T01:30:00Z",
            ],
        ),
    ];
    for (expression, after, expected) in cases {
        assert_eq!(
            firings(expression, "UTC", after, expected.len()),
            *expected,
            "{expression} after {after}"
        );
    }
}

// ---- evaluation ----

#[test]
fn new_york_spring_forward_fires_at_the_end_of_the_gap() {
    // 02:30 does not exist on 2026-03-08; 03:00 EDT is 07:00Z.
    assert_eq!(
        firings("30 2 * * *", "America/New_York", "2026-03-06T12:00:00Z", 3),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    let zone = "America/New_York";
    assert_eq!(
        governing("30 2 * * *", zone, "2026-03-08T07:00:00Z"),
        "2026-03-08T07:00:00Z"
    );
    assert_eq!(
        governing("30 2 * * *", zone, "2026-03-08T06:59:59Z"),
        "2026-03-07T07:30:00Z"
    );
    // Every quarter hour inside the gap collapses onto one firing.
    assert_eq!(
        firings("*/15 * * * *", zone, "2026-03-08T06:40:00Z", 3),
        [
            "2026-03-08T06:45:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T07:15:00Z"
        ]
    );
}

#[test]
fn new_york_fall_back_fires_once_at_the_first_occurrence() {
    let zone = "America/New_York";
    // 01:30 happens twice on 2026-11-01: first at 05:30Z (EDT).
    assert_eq!(
        firings("30 1 * * *", zone, "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    );
    assert_eq!(
        governing("30 1 * * *", zone, "2026-11-01T06:45:00Z"),
        "2026-11-01T05:30:00Z"
    );
    // The repeated hour is not walked again.
    assert_eq!(
        firings("*/30 * * * *", zone, "2026-11-01T04:15:00Z", 5),
        [
            "2026-11-01T04:30:00Z",
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T07:00:00Z",
            "2026-11-01T07:30:00Z"
        ]
    );
    assert_eq!(
        governing("*/30 * * * *", zone, "2026-11-01T06:40:00Z"),
        "2026-11-01T05:30:00Z"
    );
}

#[test]
fn berlin_follows_central_european_time_changes() {
    let zone = "Europe/Berlin";
    assert_eq!(
        firings("30 2 * * *", zone, "2026-03-27T12:00:00Z", 3),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
    assert_eq!(
        firings("30 2 * * *", zone, "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    );
    assert_eq!(
        governing("0 20 * * *", zone, "2026-07-01T19:00:00Z"),
        "2026-07-01T18:00:00Z"
    );
}

#[test]
fn lord_howe_half_hour_shifts() {
    let zone = "Australia/Lord_Howe";
    // 02:00-02:30 is skipped on 2026-10-04, when +10:30 becomes +11.
    assert_eq!(
        firings("15 2 * * *", zone, "2026-10-02T12:00:00Z", 3),
        [
            "2026-10-02T15:45:00Z",
            "2026-10-03T15:30:00Z",
            "2026-10-04T15:15:00Z"
        ]
    );
    // 01:30-02:00 happens twice on 2026-04-05.
    assert_eq!(
        firings("45 1 * * *", zone, "2026-04-03T12:00:00Z", 3),
        [
            "2026-04-03T14:45:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-05T15:15:00Z"
        ]
    );
    assert_eq!(
        governing("45 1 * * *", zone, "2026-04-04T15:20:00Z"),
        "2026-04-04T14:45:00Z"
    );
}

#[test]
fn kathmandu_quarter_hour_offset() {
    let zone = "Asia/Kathmandu";
    assert_eq!(
        firings("0 9 * * *", zone, "2026-11-23T00:00:00Z", 1),
        ["2026-11-23T03:15:00Z"]
    );
    assert_eq!(
        governing("0 9 * * *", zone, "2026-11-23T03:14:59Z"),
        "2026-11-22T03:15:00Z"
    );
}

#[test]
fn santiago_midnight_gap() {
    // Chile skips 00:00-01:00 on 2026-09-06.
    assert_eq!(
        firings("0 0 * * *", "America/Santiago", "2026-09-04T12:00:00Z", 3),
        [
            "2026-09-05T04:00:00Z",
            "2026-09-06T04:00:00Z",
            "2026-09-07T03:00:00Z"
        ]
    );
}

#[test]
fn leap_day_is_found_four_years_back_and_ahead() {
    assert_eq!(
        governing("0 0 29 2 *", "UTC", "2027-06-01T00:00:00Z"),
        "2024-02-29T00:00:00Z"
    );
    assert_eq!(
        firings("0 0 29 2 *", "UTC", "2027-06-01T00:00:00Z", 1),
        ["2028-02-29T00:00:00Z"]
    );
    assert_eq!(
        governing("0 0 29 2 *", "Asia/Tokyo", "2027-06-01T00:00:00Z"),
        "2024-02-28T15:00:00Z"
    );
}

#[test]
fn the_last_firing_is_in_the_year_4999_looking_forward_or_back() {
    // `from 9999-12-31T23:59:59Z` and the like ask about such years.
    let (schedule, _) = scheduled(&[(SCALE_DOWN, "0 20 * * *"), (TIMEZONE, "Asia/Tokyo")]);
    assert_eq!(
        governing("0 20 * * *", "Asia/Tokyo", "9999-12-31T23:59:59Z"),
        "4999-12-31T11:00:00Z"
    );
    assert_eq!(
        schedule.next_transition(at("4999-12-31T10:59:59Z")),
        Some(down("4999-12-31T11:00:00Z"))
    );
    assert_eq!(schedule.next_transition(at("4999-12-31T11:00:00Z")), None);
}
