//! The grace period of new objects: a catch-up never puts an object to sleep in its first
//! minutes, so a deploy at night is not killed as it starts. A catch-up is a transition the
//! object never lived through: one due from before it was created. Transitions at their own
//! instant, and wake-ups, are not held back.

use chrono::{DateTime, TimeDelta, Utc};

use super::{Direction, Recorded, Schedule};
use crate::duration::spoken;

/// The Event's reason when a new object's grace period holds its sleep back.
pub const HELD_FOR_GRACE: &str = "SleepHeldBack";

/// What holds a new object awake, and until when: said by `status` and in the Event the
/// controller tells when it first holds it.
pub fn held_reason(until: DateTime<Utc>, grace: TimeDelta) -> String {
    let grace = spoken(grace);
    format!(
        "held awake until {}: created less than {grace} ago, it is not put to sleep by a \
         catch-up before its grace period (--grace-period) ends",
        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// Until when the scale-down due at `now` waits, for an object created at `created`: `None`
/// when nothing is held back.
pub fn held_back_until(
    schedule: &Schedule,
    recorded: &Recorded,
    created: Option<DateTime<Utc>>,
    grace: TimeDelta,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let created = created?;
    let ends = created.checked_add_signed(grace)?;
    // An override in force is applied now: it is asked for, not caught up on.
    let overridden = schedule
        .on_demand
        .is_some_and(|on_demand| on_demand.until > now);
    if schedule.paused || overridden || now >= ends {
        return None;
    }
    let due = schedule.in_force(now)?;
    let unapplied = recorded
        .last_transition
        .is_none_or(|last| !due.is_applied(&last));
    (unapplied && due.direction == Direction::Down && due.at < created).then_some(ends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{test_support::*, *};

    const GRACE: TimeDelta = TimeDelta::minutes(15);
    const CREATED: &str = "2026-11-23T22:00:00Z";

    /// Until when an object created at `created` is held back from `schedule` at `now`.
    fn held(
        schedule: &Schedule,
        recorded: &Recorded,
        created: Option<&str>,
        now: &str,
    ) -> Option<DateTime<Utc>> {
        held_back_until(schedule, recorded, created.map(at), GRACE, at(now))
    }

    #[test]
    fn a_deploy_at_night_is_not_put_to_sleep_before_its_grace_period_ends() {
        let (nightly, nothing) = scheduled(&[(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")]);
        assert_eq!(
            held(&nightly, &nothing, Some(CREATED), "2026-11-23T22:00:01Z"),
            Some(at("2026-11-23T22:15:00Z")),
            "tonight's scale-down is a catch-up for it"
        );
        assert_eq!(
            held(&nightly, &nothing, Some(CREATED), "2026-11-23T22:15:00Z"),
            None,
            "after the grace period the governing state applies"
        );
    }

    #[test]
    fn live_transitions_wake_ups_and_applied_ones_are_not_held_back() {
        let (nightly, nothing) = scheduled(&[(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")]);
        assert_eq!(
            held(
                &nightly,
                &nothing,
                Some("2026-11-23T19:55:00Z"),
                "2026-11-23T20:00:00Z"
            ),
            None,
            "created before the scale-down, it lives through it"
        );
        assert_eq!(
            held(
                &nightly,
                &nothing,
                Some("2026-11-24T07:05:00Z"),
                "2026-11-24T07:06:00Z"
            ),
            None,
            "a wake-up is never held back"
        );
        let (nightly, applied) = scheduled(&[
            (SCALE_DOWN, "0 20 * * *"),
            (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ]);
        assert_eq!(
            held(
                &nightly,
                &applied,
                Some("2026-11-23T22:00:00Z"),
                "2026-11-23T22:01:00Z"
            ),
            None,
            "nothing is due"
        );
        assert_eq!(
            held(&nightly, &applied, None, "2026-11-23T22:01:00Z"),
            None,
            "no creation time, no grace"
        );
    }

    #[test]
    fn an_override_in_force_is_never_held_back() {
        let (woken, nothing) = scheduled(&[
            (SCALE_DOWN, "0 20 * * *"),
            (SCALE_UP, "0 7 * * *"),
            (ASLEEP_UNTIL, "2026-11-23T23:00:00Z"),
        ]);
        assert_eq!(
            held(&woken, &nothing, Some(CREATED), "2026-11-23T22:01:00Z"),
            None,
            "put to sleep on demand at once, young or not"
        );
    }
}
