//! GoKubeDownscaler's absolute and directional time spans: ranges, `from` and `until` an
//! instant, among weekly windows; and, as a property, spans to the ends of time neither panic
//! nor disagree with what GoKubeDownscaler reads.

use chrono::{DateTime, Datelike, TimeDelta, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;

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
    let read = |text: &str, at: DateTime<Utc>| crate::schedule::windows::instant(text) == Some(at);
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
