use chrono::{DateTime, Datelike, Offset, TimeDelta, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
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
        .triggers
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
    // A window round the clock every day is a constant state, not a cron.
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
            (UPTIME, "07:00-20:00"),
            r#"cronscaler.dev/uptime: "07:00-20:00" has `07:00-20:00`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`"#,
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
    // At least 75 minutes in and out: no window, and no stretch between two, fits in a
    // clock change's gap, where a window list's edges cancel out and the user's crons do not.
    (1..128_u8, 0..24 * 4_usize, 5..24 * 4 - 4_usize).prop_map(|(days, start, length)| {
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

#[test]
fn a_window_list_covering_the_whole_week_is_a_constant_state() {
    for (key, value, state) in [
        (DOWNTIME, "Mon-Sun 00:00-24:00", Direction::Down),
        (
            DOWNTIME,
            "Mon-Fri 00:00-24:00, Sat-Sun 00:00-24:00",
            Direction::Down,
        ),
        (UPTIME, "Mon-Sun 00:00-24:00", Direction::Up),
        (
            UPTIME,
            "Mon-Sun 12:00-24:00, Mon-Sun 00:00-12:00",
            Direction::Up,
        ),
    ] {
        let (schedule, _) = scheduled(&[(key, value)]);
        for t in ["2026-11-23T12:00:00Z", "2031-06-01T00:00:00Z"] {
            let governing = schedule.governing_transition(at(t));
            assert_eq!(
                governing.map(|transition| transition.direction),
                Some(state),
                "{key} {value} at {t}"
            );
            // The same one whenever it is asked: applied once, never again.
            assert_eq!(
                governing,
                schedule.governing_transition(at("2026-01-01T00:00:00Z"))
            );
            assert_eq!(schedule.next_transition(at(t)), None, "{key} {value}");
            assert_eq!(schedule.next_look(at(t)), None, "{key} {value}");
        }
    }
}

#[test]
fn a_window_wholly_inside_a_spring_forward_gap_is_absent_that_day() {
    // 2026-03-29, the last Sunday of March: Berlin's clocks go from 02:00 to 03:00.
    let (schedule, _) = scheduled(&[(UPTIME, "Sun 02:00-02:30"), (TIMEZONE, "Europe/Berlin")]);
    // Neither edge fires that night: the next is the window of the Sunday after.
    assert_eq!(
        schedule.next_transition(at("2026-03-28T12:00:00Z")),
        Some(up("2026-04-05T00:00:00Z"))
    );
    // Catch-up agrees: after the gap the window of the Sunday before is what is in force.
    assert_eq!(
        schedule.governing_transition(at("2026-03-29T02:00:00Z")),
        Some(down("2026-03-22T01:30:00Z"))
    );
    // A stretch between windows inside the gap is absent too: awake throughout.
    let (schedule, _) = scheduled(&[
        (UPTIME, "Sat 12:00-02:00, Sun 02:30-12:00"),
        (TIMEZONE, "Europe/Berlin"),
    ]);
    assert_eq!(
        schedule.next_transition(at("2026-03-28T12:00:00Z")),
        Some(down("2026-03-29T10:00:00Z"))
    );
    assert_eq!(
        schedule.governing_transition(at("2026-03-29T09:00:00Z")),
        Some(up("2026-03-28T11:00:00Z"))
    );
}

/// The first instant after `from` at which `zone`'s offset changes, or `from` in a zone whose
/// offset does not change within a year.
fn offset_change_after(zone: Tz, from: DateTime<Utc>) -> DateTime<Utc> {
    let offset = |t: DateTime<Utc>| t.with_timezone(&zone).offset().fix();
    let (mut before, mut after) = (from, from + TimeDelta::days(1));
    while offset(before) == offset(after) {
        if after - from > TimeDelta::days(366) {
            return from;
        }
        (before, after) = (after, after + TimeDelta::days(1));
    }
    while after - before > TimeDelta::seconds(1) {
        let middle = before + (after - before) / 2;
        if offset(middle) == offset(before) {
            before = middle;
        } else {
            after = middle;
        }
    }
    after
}

/// Whether the local wall-clock time `t` lies in one of `windows` (days, start and end minute,
/// an end before the start running over midnight) or `range`: what the windows say, read
/// directly.
fn inside(
    windows: &[(u8, usize, usize)],
    range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    zone: Tz,
    t: DateTime<Utc>,
) -> bool {
    let local = t.with_timezone(&zone);
    let day = local.weekday().num_days_from_monday() as usize;
    let minute = (local.hour() * 60 + local.minute()) as usize;
    let on = |days: u8, day: usize| days & (1 << day) != 0;
    range.is_some_and(|(from, until)| from <= t && t < until)
        || windows.iter().any(|&(days, start, end)| {
            if start < end {
                on(days, day) && start <= minute && minute < end
            } else {
                (on(days, day) && minute >= start) || (on(days, (day + 6) % 7) && minute < end)
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Short windows near clock changes, with or without an absolute range: the state in force
    /// is the one the wall clock says (but in a repeated hour, whose second pass the first
    /// firing has already decided), and catching up agrees with firing.
    #[test]
    fn the_state_in_force_is_what_the_windows_say_at_that_wall_clock_time(
        windows in proptest::collection::vec(
            (prop_oneof![Just(127_u8), 1..128_u8], any::<bool>(), 0..24 * 4_usize, 1..12_usize),
            1..3,
        ),
        zone in 0..ZONES.len(),
        year in 2025..2030_i32,
        half in any::<bool>(),
        shift in -36 * 3600..36 * 3600_i64,
        range in proptest::option::of((-48..48_i64, 1..72_i64)),
        lookback in 1..8 * 86_400_i64,
    ) {
        let zone_name = ZONES[zone];
        let tz: Tz = zone_name.parse().unwrap();
        let year_start = at(&format!("{year}-{}-01T00:00:00Z", if half { "07" } else { "01" }));
        let change = offset_change_after(tz, year_start);
        // Half the windows start near the wall-clock time of the change, around its gap.
        let just_before = (change - TimeDelta::seconds(1)).with_timezone(&tz);
        let near = (just_before.hour() * 4 + just_before.minute() / 15) as usize + 24 * 4 - 2;
        let windows: Vec<(u8, usize, usize)> = windows
            .into_iter()
            .map(|(days, is_near, start, length)| {
                let start = if is_near { (near + start % 8) % (24 * 4) } else { start };
                (days, start * 15, (start + length) * 15 % (24 * 60))
            })
            .collect();
        let t = change + TimeDelta::seconds(shift);
        let range = range.map(|(from, length)| {
            let from = change + TimeDelta::hours(from);
            (from, from + TimeDelta::hours(length))
        });
        let clock = |minute: usize| format!("{:02}:{:02}", minute / 60, minute % 60);
        let mut entries: Vec<String> = windows
            .iter()
            .map(|&(days, start, end)| {
                let days: Vec<&str> = (0..7)
                    .filter(|day| days & (1 << day) != 0)
                    .map(|day| ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][day])
                    .collect();
                let end = if end == 0 { "24:00".to_string() } else { clock(end) };
                format!("{} {}-{end}", days.join(","), clock(start))
            })
            .collect();
        if let Some((from, until)) = range {
            entries.push(format!("{}-{}", from.to_rfc3339(), until.to_rfc3339()));
        }
        let value = entries.join(", ");
        let Annotations::Scheduled(schedule, _) =
            parse(&annotations(&[(UPTIME, value.as_str()), (TIMEZONE, zone_name)]), Tz::UTC)
        else {
            // Overlapping windows are refused.
            return Ok(());
        };
        let governing = schedule.governing_transition(t).unwrap();
        let repeated = tz.from_local_datetime(&t.with_timezone(&tz).naive_local()).single().is_none();
        if !repeated {
            prop_assert_eq!(
                governing.direction == Direction::Up,
                inside(&windows, range, tz, t),
                "{} at {} ({})", value, t, t.with_timezone(&tz)
            );
        }
        let start = t - TimeDelta::seconds(lookback);
        let mut cursor = start;
        let mut last_fired = None;
        while let Some(next) = schedule.next_transition(cursor) {
            prop_assert!(next.at > cursor);
            if next.at > t {
                break;
            }
            last_fired = Some(next);
            cursor = next.at;
        }
        match last_fired {
            Some(fired) => prop_assert_eq!(governing, fired),
            None => prop_assert_eq!(Some(governing), schedule.governing_transition(start)),
        }
    }
}

#[test]
fn always_and_never_are_constant_states_as_in_kube_downscaler() {
    for (key, value, state) in [
        (UPTIME, "always", Direction::Up),
        (UPTIME, "Never", Direction::Down),
        (DOWNTIME, "ALWAYS", Direction::Down),
        (DOWNTIME, "never", Direction::Up),
    ] {
        let (schedule, _) = scheduled(&[(key, value)]);
        assert_eq!(
            schedule.governing_transition(at("2026-11-23T12:00:00Z")),
            Some(Transition::scheduled(CONSTANT_SINCE, state)),
            "{key} {value}"
        );
        assert_eq!(schedule.next_transition(at("2026-11-23T12:00:00Z")), None);
    }
}

/// The transitions from `after` to `until`.
fn fired(schedule: &Schedule, after: &str, until: &str) -> Vec<String> {
    let mut fired = Vec::new();
    let mut cursor = at(after);
    while let Some(next) = schedule.next_transition(cursor) {
        if next.at > at(until) {
            break;
        }
        fired.push(next.to_string());
        cursor = next.at;
    }
    fired
}

#[test]
fn an_absolute_range_alone_is_a_stretch_in_a_constant_state() {
    let (schedule, _) = scheduled(&[(
        UPTIME,
        "2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00",
    )]);
    assert_eq!(
        schedule.governing_transition(at("2026-12-20T12:00:00Z")),
        Some(Transition::scheduled(CONSTANT_SINCE, Direction::Down))
    );
    assert_eq!(
        fired(&schedule, "2026-12-20T12:00:00Z", "2030-01-01T00:00:00Z"),
        ["2026-12-23T23:00:00Z up", "2027-01-01T23:00:00Z down"]
    );
    assert_eq!(
        schedule.governing_transition(at("2026-12-30T12:00:00Z")),
        Some(up("2026-12-23T23:00:00Z"))
    );
    assert_eq!(
        schedule.governing_transition(at("2027-03-01T12:00:00Z")),
        Some(down("2027-01-01T23:00:00Z"))
    );
}

#[test]
fn an_absolute_range_holds_its_state_over_the_weekly_windows_it_covers() {
    let (schedule, _) = scheduled(&[
        (
            UPTIME,
            "Mon-Fri 07:00-20:00, 2026-12-26T00:00:00+01:00-2026-12-27T18:00:00+01:00",
        ),
        (TIMEZONE, "Europe/Berlin"),
    ]);
    // Awake through the weekend of the 26th and 27th, asleep again at its end, and the week's
    // windows as before.
    assert_eq!(
        fired(&schedule, "2026-12-25T12:00:00Z", "2026-12-28T12:00:00Z"),
        [
            "2026-12-25T19:00:00Z down",
            "2026-12-25T23:00:00Z up",
            "2026-12-27T17:00:00Z down",
            "2026-12-28T06:00:00Z up",
        ]
    );
    // Ranges that overlap or touch are one.
    let (merged, _) = scheduled(&[(
        DOWNTIME,
        "2026-12-24T00:00:00Z-2026-12-25T00:00:00Z, 2026-12-24T12:00:00Z-2026-12-26T00:00:00Z, 2026-12-26T00:00:00Z-2026-12-27T00:00:00Z",
    )]);
    assert_eq!(
        fired(&merged, "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"),
        ["2026-12-24T00:00:00Z down", "2026-12-27T00:00:00Z up"]
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
            r#"cronscaler.dev/downtime: "2026-12-24-2027-01-02" has `2026-12-24-2027-01-02`, which is not `DAYS HH:MM-HH:MM` with an optional time zone, e.g. `Mon-Fri 07:00-20:00 Europe/Berlin`"#,
        ),
        (
            (DOWNTIME, "2026-12-24T00:00-2027-01-02T00:00"),
            r#"cronscaler.dev/downtime: "2026-12-24T00:00-2027-01-02T00:00" has `2026-12-24T00:00-2027-01-02T00:00`, which is not two RFC 3339 instants joined by `-`, e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00`"#,
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

#[test]
fn day_names_are_three_letters_or_longer_prefixes() {
    for value in [
        "Thu 09:00-10:00",
        "Thur 09:00-10:00",
        "thursday 09:00-10:00",
    ] {
        assert_eq!(
            compiled(UPTIME, value),
            vec![
                (Direction::Down, "0 10 * * THU".to_string()),
                (Direction::Up, "0 9 * * THU".to_string()),
            ],
            "{value}"
        );
    }
    assert_eq!(
        problems(&[(UPTIME, "Th 09:00-10:00")]),
        vec![
            r#"cronscaler.dev/uptime: "Th 09:00-10:00" has `Th 09:00-10:00`, whose `Th` is not a day; days are Mon, Tue, Wed, Thu, Fri, Sat, Sun"#
        ]
    );
}
