//! Holidays: dates in the schedule's zone, asleep through them while scale-downs still fire.

use super::*;

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
