//! GoKubeDownscaler's relative time spans: weekly windows with or without days and zone, over
//! midnight, and the malformed ones refused.

use super::*;

// 2026-02-02 is a Monday, 2026-02-05 a Thursday, 2026-02-07 a Saturday.

#[test]
fn working_hours_hold_on_their_days_from_their_start_up_to_their_end() {
    // TestParseRelativeTimeSpan "valid".
    let value = "Mon-Fri 07:00-16:00 UTC";
    assert!(awake(value, "2026-02-02T07:00:00Z"));
    assert!(awake(value, "2026-02-06T15:59:59Z"));
    assert!(!awake(value, "2026-02-02T16:00:00Z"));
    assert!(!awake(value, "2026-02-02T06:59:59Z"));
    assert!(!awake(value, "2026-02-07T10:00:00Z"));
    // TestRelativeTimeSpan_isTimeInSpan: "time in range", "before timeFrom", "after timeTo",
    // "outside weekday".
    let value = "Mon-Fri 08:00-17:00 UTC";
    for (t, expected) in [
        ("2026-02-05T12:30:00Z", true),
        ("2026-02-05T07:59:00Z", false),
        ("2026-02-05T17:01:00Z", false),
        ("2026-02-07T12:00:00Z", false),
    ] {
        assert_eq!(awake(value, t), expected, "{value} at {t}");
    }
    // TestParseRelativeTimeSpan "all day".
    let value = "Mon-Fri 00:00-24:00 UTC";
    assert!(awake(value, "2026-02-02T00:00:00Z"));
    assert!(awake(value, "2026-02-06T23:59:59Z"));
    assert!(!awake(value, "2026-02-07T00:00:00Z"));
}

#[test]
fn a_window_holds_at_its_start_but_not_at_its_end_also_over_midnight() {
    // TestRelativeTimeSpan_isTimeOfDayInRange, which leaves the days out: every day.
    for (value, t, expected) in [
        // "in range", "to out of range", "from in range"
        ("06:00-20:00", "2026-02-05T16:00:00Z", true),
        ("06:00-20:00", "2026-02-05T20:00:00Z", false),
        ("06:00-20:00", "2026-02-05T06:00:00Z", true),
        // "reverse in range", "reverse to out of range", "reverse from in range"
        ("18:00-04:00", "2026-02-05T03:00:00Z", true),
        ("18:00-04:00", "2026-02-05T04:00:00Z", false),
        ("18:00-04:00", "2026-02-05T18:00:00Z", true),
        // "all day", "all day overlap to next day", "all day start of day"
        ("00:00-24:00", "2026-02-05T18:00:00Z", true),
        ("00:00-24:00", "2026-02-05T23:59:00Z", true),
        ("00:00-24:00", "2026-02-05T00:00:00Z", true),
    ] {
        assert_eq!(awake(value, t), expected, "{value} at {t}");
    }
}

#[test]
fn a_window_go_kube_downscaler_reads_as_never_is_refused() {
    // TestRelativeTimeSpan_isTimeOfDayInRange "24 never", "24 never overlap to next day" and
    // "24 never start of day": GoKubeDownscaler never matches a window from 24:00. Here 24:00
    // only ends a window, so what looks like a window is not silently none.
    assert_eq!(
        refusal("24:00-00:00"),
        r#"cronscaler.dev/uptime: "24:00-00:00" has `24:00-00:00`: `24:00` may only end a window; a window from midnight starts at 00:00"#
    );
    // "0 never": an empty window, refused as any other (docs: Empty windows and ranges).
    assert_eq!(
        refusal("00:00-00:00"),
        r#"cronscaler.dev/uptime: "00:00-00:00" has `00:00-00:00`, an empty window: it starts and ends at 00:00 (kube-downscaler reads it as never; leave it out)"#
    );
}

#[test]
fn a_day_range_holds_on_its_first_and_last_day_and_may_run_over_the_weekend() {
    // TestRelativeTimeSpan_isWeekdayInRange, at noon of the day it asks about.
    for (value, t, expected) in [
        // "in range" (Wednesday), "from in range" (Monday), "to in range" (Friday)
        ("Mon-Fri 00:00-24:00", "2026-02-04T12:00:00Z", true),
        ("Mon-Fri 00:00-24:00", "2026-02-02T12:00:00Z", true),
        ("Mon-Fri 00:00-24:00", "2026-02-06T12:00:00Z", true),
        // "out of range" (Saturday)
        ("Mon-Fri 00:00-24:00", "2026-02-07T12:00:00Z", false),
        // "reverse in range" (Saturday), "reverse out of range" (Monday)
        ("Sat-Sun 00:00-24:00", "2026-02-07T12:00:00Z", true),
        ("Sat-Sun 00:00-24:00", "2026-02-02T12:00:00Z", false),
    ] {
        assert_eq!(awake(value, t), expected, "{value} at {t}");
    }
}

#[test]
fn a_weekend_night_window_ends_on_the_morning_after_each_day_it_names() {
    // TestParseRelativeTimeSpan "reverse". Saturday and Sunday evenings, and the mornings after
    // them, are awake as in GoKubeDownscaler.
    let value = "Sat-Sun 20:00-06:00 UTC";
    assert!(awake(value, "2026-02-07T21:00:00Z"));
    assert!(awake(value, "2026-02-08T05:00:00Z"));
    assert!(awake(value, "2026-02-08T21:00:00Z"));
    assert!(!awake(value, "2026-02-08T12:00:00Z"));
    // GoKubeDownscaler matches the weekday of each instant: Monday 05:00 is outside for it and
    // Saturday 05:00 inside. Here the window belongs to the day it starts (docs: Windows over
    // midnight), and `plan` says so in a NOTE.
    assert!(awake(value, "2026-02-09T05:00:00Z"));
    assert!(!awake(value, "2026-02-07T05:00:00Z"));
}

#[test]
fn a_window_without_days_holds_every_day() {
    // TestParseRelativeTimeSpan "no weekdays format".
    let value = "03:00-04:00 UTC";
    for day in 2..=8 {
        assert!(awake(value, &format!("2026-02-0{day}T03:00:00Z")), "{day}");
        assert!(awake(value, &format!("2026-02-0{day}T03:59:59Z")), "{day}");
        assert!(!awake(value, &format!("2026-02-0{day}T04:00:00Z")), "{day}");
        assert!(!awake(value, &format!("2026-02-0{day}T02:59:59Z")), "{day}");
    }
    assert_eq!(
        compiled(UPTIME, value),
        vec![
            (
                Direction::Down,
                "0 4 * * MON,TUE,WED,THU,FRI,SAT,SUN".to_string()
            ),
            (
                Direction::Up,
                "0 3 * * MON,TUE,WED,THU,FRI,SAT,SUN".to_string()
            ),
        ]
    );
    // Over midnight every day, GoKubeDownscaler reads it the same: `plan` has nothing to note.
    let over_midnight = |value| {
        crate::schedule::windows::compile(UPTIME, value, Direction::Up)
            .unwrap()
            .over_midnight
    };
    assert_eq!(over_midnight("22:00-06:00 UTC"), Vec::<String>::new());
    assert_eq!(
        over_midnight("Mon-Sun 22:00-06:00"),
        ["Mon-Sun 22:00-06:00"]
    );
    // TestRelativeTimeSpan_isTimeInSpan "outside weekday no timezone no weekdays": with
    // DEFAULT_WEEKFRAME Mon-Fri, GoKubeDownscaler is outside on Saturday. cronscaler has no week
    // frame, so a window without days holds every day, Saturday too.
    assert!(awake("08:00-17:00", "2026-02-07T12:00:00Z"));
    // Its "outside weekday no timezone no weekdays, nil defaults": without DEFAULT_WEEKFRAME
    // and DEFAULT_TIMEZONE, GoKubeDownscaler fails to check the window. Here it holds every day
    // in the schedule's zone.
    assert!(awake("08:00-17:00", "2026-02-07T08:00:00Z"));
    assert!(!awake("08:00-17:00", "2026-02-07T17:00:00Z"));
}

#[test]
fn a_window_without_a_zone_is_in_the_schedules_zone() {
    // TestParseRelativeTimeSpan "no timezone format" and "no timezone no weekdays format":
    // GoKubeDownscaler takes its DEFAULT_TIMEZONE; cronscaler the schedule's zone, that of
    // `cronscaler.dev/timezone` or else `--default-timezone`. 03:00 in Tokyo is 18:00 UTC the
    // day before.
    let tokyo = [(TIMEZONE, "Asia/Tokyo")];
    assert!(awake_with(
        "Mon-Fri 03:00-04:00",
        &tokyo,
        "2026-02-01T18:00:00Z"
    ));
    assert!(!awake_with(
        "Mon-Fri 03:00-04:00",
        &tokyo,
        "2026-02-02T03:00:00Z"
    ));
    assert!(awake_with("03:00-04:00", &tokyo, "2026-02-06T18:30:00Z"));
    let Annotations::Scheduled(schedule, _) = parse(
        &annotations(&[(UPTIME, "03:00-04:00")]),
        chrono_tz::Asia::Tokyo,
    ) else {
        panic!("03:00-04:00 is a schedule");
    };
    assert_eq!(
        schedule.next_transition(at("2026-02-07T00:00:00Z")),
        Some(up("2026-02-07T18:00:00Z"))
    );
    // TestRelativeTimeSpan_isTimeInSpan "outside weekday no timezone", and its "nil defaults"
    // twin (an error there, for want of a DEFAULT_TIMEZONE): outside on Saturday, in UTC, the
    // zone these tests' schedules default to.
    assert!(!awake("Mon-Fri 08:00-17:00", "2026-02-07T12:00:00Z"));
}

#[test]
fn malformed_windows_are_refused_naming_the_entry() {
    // TestParseRelativeTimeSpan "invalid TZ", "invalid Format", "negative Time" and "out of
    // range Time".
    for (value, reason) in [
        (
            "Mon-Fri 07:00-16:00 Invalid",
            "has `Mon-Fri 07:00-16:00 Invalid`, whose `Invalid` is not an IANA time zone name",
        ),
        (
            "Mon-Fri 03:00-04-00 UTC",
            "has `Mon-Fri 03:00-04-00 UTC`: `04-00` is not a time of day as HH:MM",
        ),
        (
            "Mon-Fri -03:00-04:00 UTC",
            "has `Mon-Fri -03:00-04:00 UTC`, whose `-03:00-04:00` is not `HH:MM-HH:MM`",
        ),
        (
            "Mon-Fri 00:00-26:00 UTC",
            "has `Mon-Fri 00:00-26:00 UTC`: `26:00` is not a time of day as HH:MM",
        ),
        (
            "-03:00-04:00 UTC",
            "has `-03:00-04:00 UTC`, whose `-03:00-04:00` is not `HH:MM-HH:MM`",
        ),
        (
            "1-5 03:00-04:00",
            "has `1-5 03:00-04:00`, whose `1` is not a day; days are Mon, Tue, Wed, Thu, Fri, Sat, Sun",
        ),
        (
            "03:00-04:00 UTC Mon-Fri",
            "has `03:00-04:00 UTC Mon-Fri`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`, or `HH:MM-HH:MM` for every day",
        ),
    ] {
        assert_eq!(
            refusal(value),
            format!("cronscaler.dev/uptime: {value:?} {reason}")
        );
    }
}
