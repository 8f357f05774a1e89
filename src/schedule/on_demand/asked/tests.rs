use std::collections::BTreeMap;

use super::*;
use crate::schedule::{self, UPTIME, test_support::at};

fn staging() -> BTreeMap<String, String> {
    BTreeMap::from([(UPTIME.to_string(), "Mon-Fri 07:00-20:00".to_string())])
}

/// On Friday night a sleep reaches no further than the weekend's, which the schedule holds
/// itself: `sleep` says so and writes nothing, where a wake is still refused as too far.
#[test]
fn a_sleep_on_friday_night_is_the_schedule_s_already() {
    let parsed = schedule::parse(&staging(), chrono_tz::Tz::UTC);
    let friday_night = at("2026-11-27T21:00:00Z");
    let max = TimeDelta::hours(24);
    assert_eq!(
        held_by_schedule(Direction::Down, &parsed, friday_night, max),
        Some(at("2026-11-30T07:00:00Z"))
    );
    assert_eq!(
        held_by_schedule(Direction::Up, &parsed, friday_night, max),
        None,
        "awake it is not"
    );
    // On Monday night the wake-up is within reach: an override is written as usual.
    let monday_night = at("2026-11-23T21:00:00Z");
    assert_eq!(
        held_by_schedule(Direction::Down, &parsed, monday_night, max),
        None
    );
}

/// Until when an override on the staging Namespace lasts, or why it may not be.
fn staging_until(
    direction: Direction,
    requested: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, String> {
    let max = TimeDelta::hours(24);
    until_when(
        direction,
        "Namespace staging",
        &schedule::parse(&staging(), chrono_tz::Tz::UTC),
        requested,
        now,
        max,
    )
    .map_err(|error| error.to_string())
}

#[test]
fn an_override_lasts_as_asked_or_until_the_schedule_turns() {
    let now = at("2026-11-23T21:00:00Z");
    let two_hours = Some(now + TimeDelta::hours(2));
    assert_eq!(
        staging_until(Direction::Up, two_hours, now),
        Ok(at("2026-11-23T23:00:00Z"))
    );
    // Woken on Monday night: until Tuesday's scale-down at 20:00.
    assert_eq!(
        staging_until(Direction::Up, None, now),
        Ok(at("2026-11-24T20:00:00Z"))
    );
    // Put to sleep: until Tuesday's wake-up at 07:00.
    assert_eq!(
        staging_until(Direction::Down, None, now),
        Ok(at("2026-11-24T07:00:00Z"))
    );
    // On Friday morning the wake-up is Monday's: asleep until Friday's scale-down, from
    // which the schedule keeps it asleep.
    assert_eq!(
        staging_until(Direction::Down, None, at("2026-11-27T09:00:00Z")),
        Ok(at("2026-11-27T20:00:00Z"))
    );
    // On Friday night the next wake-up is more than a day away.
    assert_eq!(
        staging_until(Direction::Down, None, at("2026-11-27T21:00:00Z")),
        Err(
            "Namespace staging: no scheduled transition within 24h; say until when with --for \
                 or --until"
                .to_string()
        )
    );
}

#[test]
fn overrides_in_the_past_or_too_far_ahead_are_refused() {
    let now = at("2026-11-23T21:00:00Z");
    assert_eq!(
        staging_until(Direction::Up, Some(now - TimeDelta::hours(1)), now),
        Err(
            "--until 2026-11-23T20:00:00Z is not in the future (now is 2026-11-23T21:00:00Z)"
                .to_string()
        )
    );
    assert_eq!(
        staging_until(Direction::Up, Some(now + TimeDelta::hours(30)), now),
        Err(
            "2026-11-25T03:00:00Z is 30h ahead, more than the 24h an override may reach; the \
                 controller would refuse it (its --max-override)"
                .to_string()
        )
    );
}

#[test]
fn the_patch_sets_one_override_and_takes_the_other_away() {
    assert_eq!(
        override_patch(Direction::Down, at("2026-11-24T07:00:00Z")),
        json!({ "metadata": { "annotations": {
                "cronscaler.dev/asleep-until": "2026-11-24T07:00:00Z",
                "cronscaler.dev/awake-until": null,
                "cronscaler.dev/idle-since": null,
            } } })
    );
}

#[test]
fn back_to_the_schedule_takes_every_override_away() {
    assert_eq!(
        back_to_schedule_patch(),
        json!({ "metadata": { "annotations": {
                "cronscaler.dev/asleep-until": null,
                "cronscaler.dev/awake-until": null,
                "cronscaler.dev/idle-since": null,
            } } })
    );
}
