use chrono::{DateTime, Utc};
use proptest::prelude::*;

use crate::schedule::{test_support::*, *};

fn compiled(key: &str, value: &str) -> Vec<(Direction, String)> {
    let inside = if key == UPTIME {
        Direction::Up
    } else {
        Direction::Down
    };
    super::compile(key, value, inside)
        .unwrap()
        .crons
        .iter()
        .map(|(direction, cron)| (*direction, cron.expression().to_string()))
        .collect()
}

#[test]
fn working_hours_are_a_scale_up_at_their_start_and_a_scale_down_at_their_end() {
    assert_eq!(
        compiled(UPTIME, "Mon-Fri 07:00-20:00"),
        vec![
            (Direction::Down, "0 20 * * MON,TUE,WED,THU,FRI".to_string()),
            (Direction::Up, "0 7 * * MON,TUE,WED,THU,FRI".to_string()),
        ]
    );
    let (schedule, _) = scheduled(&[(UPTIME, "Mon-Fri 07:00-20:00")]);
    // Sunday noon: asleep since Friday evening, awake on Monday morning.
    assert_eq!(
        schedule.governing_transition(at("2026-11-22T12:00:00Z")),
        Some(down("2026-11-20T20:00:00Z"))
    );
    assert_eq!(
        schedule.next_transition(at("2026-11-22T12:00:00Z")),
        Some(up("2026-11-23T07:00:00Z"))
    );
}

#[test]
fn a_window_over_midnight_ends_on_the_next_day() {
    assert_eq!(
        compiled(UPTIME, "Mon-Fri 22:00-06:00"),
        vec![
            (Direction::Down, "0 6 * * TUE,WED,THU,FRI,SAT".to_string()),
            (Direction::Up, "0 22 * * MON,TUE,WED,THU,FRI".to_string()),
        ]
    );
}

#[test]
fn touching_windows_are_one_stretch_without_a_transition_between() {
    // The weekend asleep from Saturday 00:00 to Monday 00:00, not woken at Sunday's midnight.
    assert_eq!(
        compiled(DOWNTIME, "Sat-Sun 00:00-24:00"),
        vec![
            (Direction::Down, "0 0 * * SAT".to_string()),
            (Direction::Up, "0 0 * * MON".to_string()),
        ]
    );
    assert_eq!(
        compiled(
            UPTIME,
            "Mon 08:00-12:00, Mon 12:00-18:00, Sat,Sun 10:00-11:30"
        ),
        vec![
            (Direction::Down, "30 11 * * SAT,SUN".to_string()),
            (Direction::Down, "0 18 * * MON".to_string()),
            (Direction::Up, "0 8 * * MON".to_string()),
            (Direction::Up, "0 10 * * SAT,SUN".to_string()),
        ]
    );
    // A window round the clock every day never changes anything.
    assert_eq!(compiled(UPTIME, "Mon-Sun 00:00-24:00"), vec![]);
}

#[test]
fn days_are_written_as_ranges_lists_and_names() {
    for (value, expected) in [
        ("Fri-Mon 09:00-10:00", "0 9 * * MON,FRI,SAT,SUN"),
        ("mon,Wednesday 09:00-10:00", "0 9 * * MON,WED"),
        ("Sat,Sun 09:00-10:00", "0 9 * * SAT,SUN"),
    ] {
        assert_eq!(
            compiled(UPTIME, value)
                .into_iter()
                .find(|(direction, _)| *direction == Direction::Up),
            Some((Direction::Up, expected.to_string())),
            "{value}"
        );
    }
}

#[test]
fn a_trailing_zone_is_the_schedules_zone() {
    let (schedule, _) = scheduled(&[(UPTIME, "Mon-Fri 07:30-20:30 Europe/Berlin")]);
    assert_eq!(schedule.timezone, chrono_tz::Europe::Berlin);
    // 07:30 in Berlin in November is 06:30 UTC.
    assert_eq!(
        schedule.next_transition(at("2026-11-23T00:00:00Z")),
        Some(up("2026-11-23T06:30:00Z"))
    );
    let (same, _) = scheduled(&[
        (UPTIME, "Mon-Fri 07:30-20:30 Europe/Berlin"),
        (TIMEZONE, "Europe/Berlin"),
    ]);
    assert_eq!(same.timezone, chrono_tz::Europe::Berlin);
}

#[test]
fn a_window_over_midnight_in_a_daylight_saving_week_follows_the_wall_clock() {
    let (schedule, _) = scheduled(&[(UPTIME, "Sat 22:00-02:30"), (TIMEZONE, "Europe/Berlin")]);
    // 2026-03-29: Berlin's clocks go from 02:00 to 03:00, so 02:30 never happens and the
    // window ends when the clock change does, 03:00 CEST.
    assert_eq!(
        schedule.next_transition(at("2026-03-28T21:00:00Z")),
        Some(down("2026-03-29T01:00:00Z"))
    );
    // 2026-10-25: 02:30 happens twice; the window ends at the first, 02:30 CEST.
    assert_eq!(
        schedule.next_transition(at("2026-10-24T20:00:00Z")),
        Some(down("2026-10-25T00:30:00Z"))
    );
    // And it began at 22:00 CEST on Saturday.
    assert_eq!(
        schedule.governing_transition(at("2026-10-24T23:00:00Z")),
        Some(up("2026-10-24T20:00:00Z"))
    );
}

#[test]
fn bad_windows_are_reported_with_key_value_and_reason() {
    let cases = [
        (
            (UPTIME, "Mon-Fri 07:00-07:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-07:00" has `Mon-Fri 07:00-07:00`, an empty window: it starts and ends at 07:00"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-20:00, Mon 19:00-21:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00, Mon 19:00-21:00" has overlapping windows: `Mon-Fri 07:00-20:00` and `Mon 19:00-21:00` both hold Mon 19:00"#,
        ),
        (
            (UPTIME, "Mon-Fri 22:00-08:00, Tue 07:00-09:00"),
            r#"cronscaler.dev/uptime: "Mon-Fri 22:00-08:00, Tue 07:00-09:00" has overlapping windows: `Mon-Fri 22:00-08:00` and `Tue 07:00-09:00` both hold Tue 07:00"#,
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
            (UPTIME, "07:00-20:00"),
            r#"cronscaler.dev/uptime: "07:00-20:00" has `07:00-20:00`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`"#,
        ),
        (
            (UPTIME, "Mon-Fri 07:00-20:00 Mars/Base"),
            r#"cronscaler.dev/uptime: "Mon-Fri 07:00-20:00 Mars/Base" has `Mon-Fri 07:00-20:00 Mars/Base`, whose `Mars/Base` is not an IANA time zone name"#,
        ),
        (
            (UPTIME, "Mon 07:00-08:00 UTC, Tue 07:00-08:00 Asia/Tokyo"),
            r#"cronscaler.dev/uptime: "Mon 07:00-08:00 UTC, Tue 07:00-08:00 Asia/Tokyo" names two time zones, UTC and Asia/Tokyo; one schedule has one zone"#,
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
fn holidays_over_new_year_keep_everything_asleep_but_let_scale_downs_fire() {
    let (schedule, _) = scheduled(&[
        (UPTIME, "Mon-Fri 07:00-20:00"),
        (HOLIDAYS, "2026-12-24..2027-01-01"),
    ]);
    let mut fired = Vec::new();
    let mut cursor = at("2026-12-23T12:00:00Z");
    while cursor < at("2027-01-04T20:00:00Z") {
        let next = schedule.next_transition(cursor).unwrap();
        fired.push(next.to_string());
        cursor = next.at;
    }
    assert_eq!(
        fired,
        [
            "2026-12-23T20:00:00Z down",
            "2026-12-24T20:00:00Z down",
            "2026-12-25T20:00:00Z down",
            "2026-12-28T20:00:00Z down",
            "2026-12-29T20:00:00Z down",
            "2026-12-30T20:00:00Z down",
            "2026-12-31T20:00:00Z down",
            "2027-01-01T20:00:00Z down",
            "2027-01-04T07:00:00Z up",
            "2027-01-04T20:00:00Z down",
        ]
    );
    // Catch-up agrees: on New Year's Day at noon the last scale-down is in force.
    assert_eq!(
        schedule.governing_transition(at("2027-01-01T12:00:00Z")),
        Some(down("2026-12-31T20:00:00Z"))
    );
    assert_eq!(
        schedule.governing_transition(at("2027-01-04T08:00:00Z")),
        Some(up("2027-01-04T07:00:00Z"))
    );
}

#[test]
fn holidays_are_dates_in_the_schedules_zone() {
    let (schedule, _) = scheduled(&[
        (SCALE_UP, "0 7 * * *"),
        (SCALE_DOWN, "0 20 * * *"),
        (TIMEZONE, "Pacific/Auckland"),
        (HOLIDAYS, "2026-12-25"),
    ]);
    // 07:00 on the 25th in Auckland is 18:00 UTC on the 24th: skipped.
    assert_eq!(
        schedule.next_transition(at("2026-12-24T07:00:00Z")),
        Some(down("2026-12-25T07:00:00Z"))
    );
    assert_eq!(
        schedule.next_transition(at("2026-12-25T07:00:00Z")),
        Some(up("2026-12-25T18:00:00Z"))
    );
}

const ZONES: [&str; 6] = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kathmandu",
    "UTC",
];
const DAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

/// A window of one entry and the two crons a person would write for it.
fn window_and_crons() -> impl Strategy<Value = (String, String, String)> {
    (1..128_u8, 0..24 * 4_usize, 1..24 * 4_usize).prop_map(|(days, start, length)| {
        let days: Vec<usize> = (0..7).filter(|day| days & (1 << day) != 0).collect();
        let (start, end) = (start * 15, start * 15 + length * 15);
        let clock = |minute: usize| format!("{:02}:{:02}", (minute / 60) % 24, minute % 60);
        let names = |shift: usize| {
            let mut names: Vec<usize> = days.iter().map(|day| (day + shift) % 7).collect();
            names.sort();
            names
                .iter()
                .map(|day| DAYS[*day])
                .collect::<Vec<_>>()
                .join(",")
        };
        let window = format!(
            "{} {}-{}",
            days.iter()
                .map(|day| format!("{}{}", &DAYS[*day][..1], DAYS[*day][1..].to_lowercase()))
                .collect::<Vec<_>>()
                .join(","),
            clock(start),
            if end == 24 * 60 {
                "24:00".to_string()
            } else {
                clock(end)
            }
        );
        let up = format!("{} {} * * {}", start % 60, start / 60, names(0));
        let down = format!(
            "{} {} * * {}",
            end % 60,
            (end / 60) % 24,
            names(usize::from(end >= 24 * 60))
        );
        (window, up, down)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_windows_transitions_are_those_of_its_crons(
        (window, up_cron, down_cron) in window_and_crons(),
        zone in 0..ZONES.len(),
        seconds in at("2024-01-01T00:00:00Z").timestamp()..at("2031-01-01T00:00:00Z").timestamp(),
    ) {
        let t = DateTime::<Utc>::from_timestamp(seconds, 0).unwrap();
        let (windowed, _) = scheduled(&[(UPTIME, window.as_str()), (TIMEZONE, ZONES[zone])]);
        let (crons, _) = scheduled(&[
            (SCALE_UP, up_cron.as_str()),
            (SCALE_DOWN, down_cron.as_str()),
            (TIMEZONE, ZONES[zone]),
        ]);
        prop_assert_eq!(windowed.governing_transition(t), crons.governing_transition(t));
        let mut cursor = t;
        for _ in 0..4 {
            let next = windowed.next_transition(cursor);
            prop_assert_eq!(next, crons.next_transition(cursor), "{} after {}", window, cursor);
            cursor = next.unwrap().at;
        }
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
