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

// ---- GoKubeDownscaler's forms ----
//
// The cases of GoKubeDownscaler's own tests (internal/pkg/values/timespan_test.go), each named
// after the test and case it comes from, written as what an `uptime` list says at an instant:
// awake inside, asleep outside. Where GoKubeDownscaler deliberately reads a case otherwise
// (docs/migrating-from-kube-downscaler.md), the case asserts ours and says why.

/// Whether an `uptime` of `value` is awake at `t`, with the other annotations `pairs`.
fn awake_with(value: &str, pairs: &[(&str, &str)], t: &str) -> bool {
    let (schedule, _) = scheduled(&[&[(UPTIME, value)], pairs].concat());
    schedule
        .in_force(at(t))
        .is_some_and(|transition| transition.direction == Direction::Up)
}

fn awake(value: &str, t: &str) -> bool {
    awake_with(value, &[], t)
}

/// The one reason an `uptime` of `value` is refused for.
fn refusal(value: &str) -> String {
    match problems(&[(UPTIME, value)]).as_slice() {
        [problem] => problem.clone(),
        more => panic!("{value}: {more:?}"),
    }
}

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
        super::compile(UPTIME, value, Direction::Up)
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

#[test]
fn an_absolute_range_holds_from_its_first_instant_up_to_its_second() {
    // TestAbsoluteTimeSpan_isTimeInSpan.
    for (value, t, expected) in [
        // "in range"
        (
            "2024-06-03T20:00:00Z-2024-06-10T06:00:00Z",
            "2024-06-09T12:34:02.000000152Z",
            true,
        ),
        // "out of range"
        (
            "2024-11-01T22:00:00Z-2024-11-22T05:00:00Z",
            "2024-12-05T02:30:00Z",
            false,
        ),
        // "from in range"
        (
            "2024-11-01T22:00:00Z-2024-11-22T05:00:00Z",
            "2024-11-01T22:00:00Z",
            true,
        ),
        // "to out of range"
        (
            "2024-11-01T22:00:00Z-2024-11-22T05:00:00Z",
            "2024-11-22T05:00:00Z",
            false,
        ),
    ] {
        assert_eq!(awake(value, t), expected, "{value} at {t}");
    }
}

#[test]
fn an_absolute_range_may_have_spaces_around_its_dash() {
    // TestParseAbsoluteTimeSpan and TestIsAbsoluteTimestamp, "valid no spaces" and "valid with
    // spaces" (kube-downscaler's Go version since v1.0.0): the same range.
    for value in [
        "2024-02-27T00:00:00Z-2024-02-29T00:00:00Z",
        "2024-02-27T00:00:00Z - 2024-02-29T00:00:00Z",
        "2024-02-27T00:00:00Z  -2024-02-29T00:00:00Z",
        "2024-02-27T01:00:00+01:00 -  2024-02-28T23:00:00-01:00",
    ] {
        let (schedule, _) = scheduled(&[(UPTIME, value)]);
        assert_eq!(
            fired(&schedule, "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z"),
            ["2024-02-27T00:00:00Z up", "2024-02-29T00:00:00Z down"],
            "{value}"
        );
    }
    // Only spaces, as there: a tab is not read.
    assert_eq!(
        refusal("2024-02-27T00:00:00Z\t-\t2024-02-29T00:00:00Z"),
        "cronscaler.dev/uptime: \"2024-02-27T00:00:00Z\\t-\\t2024-02-29T00:00:00Z\" has `2024-02-27T00:00:00Z\t-\t2024-02-29T00:00:00Z`, which is not two RFC 3339 instants joined by `-`, e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00` or `2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`"
    );
    // TestIsAbsoluteTimestamp "relative timespan" and "not a timespan": weekly windows, the
    // second every day (TestParseRelativeTimeSpan "no timezone no weekdays format").
    assert_eq!(
        compiled(UPTIME, "Mon-Fri 07:30-20:30 Europe/Berlin"),
        vec![
            (Direction::Down, "30 20 * * MON,TUE,WED,THU,FRI".to_string()),
            (Direction::Up, "30 7 * * MON,TUE,WED,THU,FRI".to_string()),
        ]
    );
    assert_eq!(
        compiled(UPTIME, "09:00-16:00"),
        vec![
            (
                Direction::Down,
                "0 16 * * MON,TUE,WED,THU,FRI,SAT,SUN".to_string()
            ),
            (
                Direction::Up,
                "0 9 * * MON,TUE,WED,THU,FRI,SAT,SUN".to_string()
            ),
        ]
    );
}

#[test]
fn a_malformed_absolute_range_is_refused_naming_it() {
    // TestParseAbsoluteTimeSpan "invalid".
    assert_eq!(
        refusal("2024-07Z - 2024-07-29T16:00:00+02:00"),
        r#"cronscaler.dev/uptime: "2024-07Z - 2024-07-29T16:00:00+02:00" has `2024-07Z - 2024-07-29T16:00:00+02:00`, which is not two RFC 3339 instants joined by `-`, e.g. `2026-12-24T00:00:00+01:00-2027-01-02T00:00:00+01:00` or `2026-12-24T00:00:00Z - 2027-01-02T00:00:00Z`"#
    );
    // Go's RFC 3339 takes `T` and `Z` in capitals only; chrono's would also take these.
    for value in [
        "2024-02-27t00:00:00Z-2024-02-29T00:00:00Z",
        "2024-02-27T00:00:00z-2024-02-29T00:00:00Z",
        "2024-02-27 00:00:00Z-2024-02-29T00:00:00Z",
        "2024-02-27T00:00:00Z-2024-02-29T23:59:60Z",
    ] {
        assert!(
            refusal(value).contains("which is not two RFC 3339 instants joined by `-`"),
            "{value}"
        );
    }
}

#[test]
fn from_an_instant_holds_at_it_and_ever_after() {
    // TestParseDirectionalTimeSpan "from valid with space" (GoKubeDownscaler's main branch after
    // v1.3.4): the span holds at and after its instant.
    let value = "from 2024-07-01T12:00:00Z";
    assert!(!awake(value, "2024-07-01T11:59:59.999999999Z"));
    assert!(awake(value, "2024-07-01T12:00:00Z"));
    assert!(awake(value, "9999-12-31T23:59:59Z"));
    let (schedule, _) = scheduled(&[(UPTIME, value)]);
    assert_eq!(
        schedule.in_force(at("2024-06-01T00:00:00Z")),
        Some(Transition::scheduled(CONSTANT_SINCE, Direction::Down))
    );
    assert_eq!(
        schedule.next_transition(at("2024-06-01T00:00:00Z")),
        Some(up("2024-07-01T12:00:00Z"))
    );
    assert_eq!(schedule.next_transition(at("2024-07-01T12:00:00Z")), None);
    assert_eq!(schedule.next_look(at("2024-07-01T12:00:00Z")), None);
}

#[test]
fn until_an_instant_holds_before_it_and_never_again() {
    // TestParseDirectionalTimeSpan "until valid with space": the span holds strictly before its
    // instant. Having always held, it is in force as a constant state is: applied once.
    let value = "until 2024-07-01T12:00:00Z";
    assert!(awake(value, "2024-07-01T11:59:59.999999999Z"));
    assert!(!awake(value, "2024-07-01T12:00:00Z"));
    assert!(!awake(value, "9999-12-31T23:59:59Z"));
    let (schedule, _) = scheduled(&[(UPTIME, value)]);
    assert_eq!(
        schedule.in_force(at("2024-06-01T00:00:00Z")),
        Some(Transition::scheduled(CONSTANT_SINCE, Direction::Up))
    );
    assert_eq!(
        fired(&schedule, "2024-06-01T00:00:00Z", "9999-12-31T23:59:59Z"),
        ["2024-07-01T12:00:00Z down"]
    );
}

#[test]
fn from_and_until_take_a_space_a_dash_or_nothing_before_their_instant() {
    // TestParseDirectionalTimeSpan's valid cases, and TestIsDirectionalTimestamp's "from with
    // space", "until with space" and "from no space".
    for (word, direction) in [("from", Direction::Up), ("until", Direction::Down)] {
        for between in ["", " ", "-", " - ", "  -  "] {
            let value = format!("{word}{between}2024-07-01T12:00:00Z");
            let (schedule, _) = scheduled(&[(UPTIME, value.as_str())]);
            assert_eq!(
                fired(&schedule, "2024-06-01T00:00:00Z", "2025-01-01T00:00:00Z"),
                [Transition::scheduled(at("2024-07-01T12:00:00Z"), direction).to_string()],
                "{value}"
            );
        }
    }
}

#[test]
fn only_lower_case_from_and_until_start_a_span() {
    // TestIsDirectionalTimestamp "Until capitalized" and "From capitalized": GoKubeDownscaler
    // tries them as weekly windows, and refuses them.
    assert_eq!(
        refusal("Until 2024-07-01T12:00:00Z"),
        r#"cronscaler.dev/uptime: "Until 2024-07-01T12:00:00Z" has `Until 2024-07-01T12:00:00Z`, whose `Until` is not `until`: GoKubeDownscaler reads `from` and `until` in lower case only"#
    );
    assert_eq!(
        refusal("From2024-07-01T12:00:00Z"),
        r#"cronscaler.dev/uptime: "From2024-07-01T12:00:00Z" has `From2024-07-01T12:00:00Z`, whose `From` is not `from`: GoKubeDownscaler reads `from` and `until` in lower case only"#
    );
}

#[test]
fn a_span_without_its_word_or_instant_is_refused_naming_it() {
    // TestParseDirectionalTimeSpan "missing prefix" and TestIsDirectionalTimestamp "random
    // timestamp".
    assert_eq!(
        refusal("2024-07-01T12:00:00Z"),
        r#"cronscaler.dev/uptime: "2024-07-01T12:00:00Z" has `2024-07-01T12:00:00Z`, a single instant; a range is two joined by `-`, and a span from or until one is `from 2024-07-01T12:00:00Z` or `until 2024-07-01T12:00:00Z`"#
    );
    // "empty": no entry at all.
    assert_eq!(
        refusal(""),
        r#"cronscaler.dev/uptime: "" holds no window; expected e.g. `Mon-Fri 07:00-20:00`"#
    );
    // "invalid timestamp".
    assert_eq!(
        refusal("from not-a-time"),
        r#"cronscaler.dev/uptime: "from not-a-time" has `from not-a-time`, whose `not-a-time` is not an RFC 3339 instant, e.g. `from 2026-11-26T08:00:00Z`"#
    );
    assert_eq!(
        refusal("until -"),
        r#"cronscaler.dev/uptime: "until -" has `until -`, which names no instant, e.g. `until 2026-11-26T08:00:00Z`"#
    );
    // Two dashes are not read as one, as there.
    assert!(refusal("from -- 2024-07-01T12:00:00Z").contains("whose `- 2024-07-01T12:00:00Z`"));
}

#[test]
fn a_span_from_before_1970_holds_as_a_constant_state_and_one_until_then_never() {
    // A state since before 1970 is applied once, as `always` is, whatever was applied at an
    // earlier instant: a sleep of kube-downscaler's, read as ours, is `1970-01-01T00:00:00Z
    // down`.
    for value in [
        "from 0000-01-01T00:00:00Z",
        "from 1969-12-31T23:59:59Z",
        "1960-01-01T00:00:00Z-2030-01-01T00:00:00Z",
    ] {
        let (schedule, _) = scheduled(&[(UPTIME, value)]);
        assert_eq!(
            schedule.in_force(at("2026-02-02T00:00:00Z")),
            Some(Transition::scheduled(CONSTANT_SINCE, Direction::Up)),
            "{value}"
        );
    }
    // GoKubeDownscaler finds `until` an instant before now never holding; one at or before 1970
    // is left out, and what remains holds.
    for value in [
        "until 0001-01-01T00:00:00Z",
        "until 1970-01-01T00:00:00Z",
        "1960-01-01T00:00:00Z-1969-01-01T00:00:00Z",
    ] {
        let (schedule, _) = scheduled(&[(UPTIME, value)]);
        assert_eq!(
            schedule.in_force(at("1970-01-01T00:00:00Z")),
            Some(Transition::scheduled(CONSTANT_SINCE, Direction::Down)),
            "{value}"
        );
        assert_eq!(schedule.next_transition(CONSTANT_SINCE), None, "{value}");
    }
    let (schedule, _) = scheduled(&[(UPTIME, "until 1969-12-31T00:00:00Z, Sat 10:00-12:00")]);
    assert_eq!(
        fired(&schedule, "2026-02-06T00:00:00Z", "2026-02-08T00:00:00Z"),
        ["2026-02-07T10:00:00Z up", "2026-02-07T12:00:00Z down"]
    );
}

#[test]
fn from_outlasts_the_weekly_windows_and_until_gives_way_to_them() {
    // Asleep every weeknight until a shutdown on Friday noon, then for good.
    let (schedule, _) = scheduled(&[(DOWNTIME, "Mon-Fri 20:00-24:00, from 2026-11-27T12:00:00Z")]);
    assert_eq!(
        fired(&schedule, "2026-11-25T12:00:00Z", "2027-12-01T00:00:00Z"),
        [
            "2026-11-25T20:00:00Z down",
            "2026-11-26T00:00:00Z up",
            "2026-11-26T20:00:00Z down",
            "2026-11-27T00:00:00Z up",
            "2026-11-27T12:00:00Z down",
        ]
    );
    // Asleep until Wednesday noon, then on weekends only: the end is a transition of its own,
    // to the state of the week then.
    let (schedule, _) = scheduled(&[(DOWNTIME, "Sat-Sun 00:00-24:00, until 2026-11-25T12:00:00Z")]);
    assert_eq!(
        schedule.in_force(at("2026-11-24T12:00:00Z")),
        Some(Transition::scheduled(CONSTANT_SINCE, Direction::Down))
    );
    assert_eq!(
        fired(&schedule, "2026-11-24T12:00:00Z", "2026-12-01T00:00:00Z"),
        [
            "2026-11-25T12:00:00Z up",
            "2026-11-28T00:00:00Z down",
            "2026-11-30T00:00:00Z up",
        ]
    );
    // Spans that overlap or touch are one, also with one that never ends: awake all the time.
    let (schedule, _) = scheduled(&[(
        UPTIME,
        "until 2026-11-25T12:00:00Z, 2026-11-20T00:00:00Z - 2026-11-26T00:00:00Z, from 2026-11-26T00:00:00Z",
    )]);
    assert_eq!(
        schedule.in_force(at("2026-11-24T12:00:00Z")),
        Some(Transition::scheduled(CONSTANT_SINCE, Direction::Up))
    );
    assert_eq!(schedule.next_transition(CONSTANT_SINCE), None);
}

/// What an entry the property test below writes means, if it is read.
#[derive(Debug, Clone)]
enum Meant {
    /// A span's bounds: `None` on an open side.
    Span(Option<DateTime<Utc>>, Option<DateTime<Utc>>),
    /// A window in UTC as [`inside`] takes it.
    Window(u8, usize, usize),
    /// Text that may or may not be read.
    Unknown,
}

/// An instant RFC 3339 can name with a four-digit year: in this century, anywhere, or near the
/// ends, 1970 or the year 5000 (where crons stop firing).
fn far_instant() -> impl Strategy<Value = DateTime<Utc>> {
    let first = at("0000-01-01T00:00:00Z").timestamp();
    let last = at("9999-12-31T23:59:59Z").timestamp();
    let near = [first, 0, at("5000-01-01T00:00:00Z").timestamp(), last];
    let instant = move |seconds: i64| {
        DateTime::from_timestamp(seconds.clamp(first, last), 0).unwrap_or(DateTime::UNIX_EPOCH)
    };
    prop_oneof![
        (at("2000-01-01T00:00:00Z").timestamp()..at("2100-01-01T00:00:00Z").timestamp())
            .prop_map(instant),
        (first..=last).prop_map(instant),
        (0..near.len(), -3 * 86_400..3 * 86_400_i64)
            .prop_map(move |(index, shift)| instant(near[index] + shift)),
    ]
}

/// `at` in RFC 3339 at an offset of `minutes`, `Z` for none. Near the ends the local year may
/// leave four digits: such text is refused.
fn rfc3339_at(at: DateTime<Utc>, minutes: i32) -> String {
    match chrono::FixedOffset::east_opt(minutes * 60) {
        Some(offset) if minutes != 0 => at
            .with_timezone(&offset)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        _ => at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    }
}

/// One entry of a list, and what it means.
fn entry() -> impl Strategy<Value = (String, Meant)> {
    let after_word = prop::sample::select(vec!["", " ", "-", " - ", "  -  "]);
    let dash = prop::sample::select(vec!["-", " - ", "  -  ", " -", "- "]);
    let offset = || prop_oneof![2 => Just(0), 1 => -1439..1440_i32];
    let read = |text: &str, at: DateTime<Utc>| super::instant(text) == Some(at);
    prop_oneof![
        3 => (any::<bool>(), after_word, far_instant(), offset()).prop_map(
            move |(from, after_word, at, offset)| {
                let instant = rfc3339_at(at, offset);
                let (word, meant) = if from {
                    ("from", Meant::Span(Some(at), None))
                } else {
                    ("until", Meant::Span(None, Some(at)))
                };
                let meant = if read(&instant, at) { meant } else { Meant::Unknown };
                (format!("{word}{after_word}{instant}"), meant)
            }
        ),
        2 => (far_instant(), far_instant(), dash, offset(), offset()).prop_map(
            move |(one, other, dash, from_offset, until_offset)| {
                let (from, until) = (one.min(other), one.max(other));
                let (first, second) = (rfc3339_at(from, from_offset), rfc3339_at(until, until_offset));
                let meant = if read(&first, from) && read(&second, until) && from < until {
                    Meant::Span(Some(from), Some(until))
                } else {
                    Meant::Unknown
                };
                (format!("{first}{dash}{second}"), meant)
            }
        ),
        2 => (prop_oneof![Just(127_u8), 1..128_u8], 0..24 * 4_usize, 1..24 * 4_usize, any::<bool>())
            .prop_map(|(days, start, length, utc)| {
                let (start, end) = (start * 15, (start + length) * 15 % (24 * 60));
                let clock = |minute: usize| format!("{:02}:{:02}", minute / 60, minute % 60);
                let end_text = if end == 0 { "24:00".to_string() } else { clock(end) };
                let names: Vec<&str> = (0..7)
                    .filter(|day| days & (1 << day) != 0)
                    .map(|day| ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][day])
                    .collect();
                // Every day is also written without days, as GoKubeDownscaler may.
                let days_text = if days == 127 && start % 30 == 0 {
                    String::new()
                } else {
                    format!("{} ", names.join(","))
                };
                let zone = if utc { " UTC" } else { "" };
                (
                    format!("{days_text}{}-{end_text}{zone}", clock(start)),
                    Meant::Window(days, start, end),
                )
            }),
        1 => "[fromuntilFU0-9TZ:+\\- ]{0,30}".prop_map(|text| (text, Meant::Unknown)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Spans from and until any instant RFC 3339 can name, among windows: no text panics, and
    /// from 1970 on (the engine's time starts there) the state in force is what
    /// GoKubeDownscaler reads, and catching up agrees with firing.
    #[test]
    fn spans_to_the_ends_of_time_neither_panic_nor_disagree(
        entries in proptest::collection::vec(entry(), 1..4),
        uptime in any::<bool>(),
        (near, shift) in (0..6_usize, -2 * 86_400..2 * 86_400_i64),
        anywhere in far_instant(),
        lookback in 1..8 * 86_400_i64,
    ) {
        let (key, inside_direction) = if uptime {
            (UPTIME, Direction::Up)
        } else {
            (DOWNTIME, Direction::Down)
        };
        let value = entries.iter().map(|(text, _)| text.as_str()).collect::<Vec<_>>().join(", ");
        let instants: Vec<DateTime<Utc>> = entries
            .iter()
            .flat_map(|(_, meant)| match meant {
                Meant::Span(from, until) => vec![*from, *until],
                _ => Vec::new(),
            })
            .flatten()
            .collect();
        let t = instants
            .get(near)
            .and_then(|at| at.checked_add_signed(TimeDelta::seconds(shift)))
            .unwrap_or(anywhere);
        let Annotations::Scheduled(schedule, recorded) =
            parse(&annotations(&[(key, value.as_str())]), Tz::UTC)
        else {
            // Refused, with its reason: not a panic.
            return Ok(());
        };
        let _ = schedule.next_look(t);
        if t >= CONSTANT_SINCE {
            let governing = schedule.in_force(t);
            prop_assert_eq!(governing, schedule.governing_transition(t));
            prop_assert!(governing.is_some(), "{} at {}", value, t);
            let governing = governing.unwrap();
            prop_assert!(governing.at <= t, "{} at {}: {}", value, t, governing);
            if let Some(next) = schedule.next_transition(t) {
                prop_assert!(next.at > t, "{} at {}: {}", value, t, next);
            }
            // What GoKubeDownscaler reads: inside while an entry holds. Weekly windows stop at
            // the year 5000 (with the crons they compile to).
            let windows: Vec<(u8, usize, usize)> = entries
                .iter()
                .filter_map(|(_, meant)| match meant {
                    Meant::Window(days, start, end) => Some((*days, *start, *end)),
                    _ => None,
                })
                .collect();
            let known = entries.iter().all(|(_, meant)| !matches!(meant, Meant::Unknown));
            if known && (windows.is_empty() || t.year() < 4999) {
                let held = entries.iter().any(|(_, meant)| match meant {
                    Meant::Span(from, until) => {
                        from.is_none_or(|from| from <= t) && until.is_none_or(|until| t < until)
                    }
                    _ => false,
                }) || inside(&windows, None, Tz::UTC, t);
                prop_assert_eq!(
                    governing.direction == inside_direction,
                    held,
                    "{} {:?} at {}: {}", key, value, t, governing
                );
            }
            let start = t.checked_sub_signed(TimeDelta::seconds(lookback)).unwrap_or(t);
            let mut cursor = start;
            let mut last_fired = None;
            while let Some(next) = schedule.next_transition(cursor) {
                prop_assert!(next.at > cursor, "{} after {}: {}", value, cursor, next);
                if next.at > t {
                    break;
                }
                last_fired = Some(next);
                cursor = next.at;
            }
            match last_fired {
                Some(fired) => prop_assert_eq!(governing, fired, "{} at {}", value, t),
                None => prop_assert_eq!(
                    Some(governing),
                    schedule.governing_transition(start),
                    "{} at {}", value, t
                ),
            }
        }
        let _ = decide(&Annotations::Scheduled(schedule, recorded), 3, t);
    }
}
