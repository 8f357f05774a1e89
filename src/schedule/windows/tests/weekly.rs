//! Weekly windows: the crons they compile to, days written as ranges, lists and names, a
//! trailing zone, windows over midnight or touching, the whole week, `always` and `never`; and,
//! as a property, that a window fires as the two crons a person would write for it.

use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::*;

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
