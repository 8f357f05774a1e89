//! Absolute ranges of instants: a stretch in a constant state alone, or held over the weekly
//! windows they cover.

use super::*;

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
