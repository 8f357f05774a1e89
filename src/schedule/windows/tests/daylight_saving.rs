//! Windows across clock changes: over midnight in a daylight-saving week, wholly inside a
//! spring-forward gap, and, as a property, short windows near a clock change hold what the wall
//! clock says.

use chrono::{DateTime, Offset, TimeDelta, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;

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
