//! Sleep when idle: `idle-after` on a Namespace says how long nothing may use it before it
//! sleeps until the next request (with `wake-on-request`) or `cronscaler wake`. What counts as
//! use is requests (counted by Prometheus), a deploy, and a wake; each starts the quiet time
//! over. This file decides, from what was counted, whether a Namespace sleeps now; it never
//! wakes one, so it never wakes what a schedule keeps asleep.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use super::invalid::{InvalidAnnotation, invalid};

/// How long nothing may use the Namespace before it sleeps (`30m`).
pub const IDLE_AFTER: &str = "cronscaler.dev/idle-after";
/// Written by the controller with an idle sleep's `asleep-until`: since when nothing used it.
pub const IDLE_SINCE: &str = "cronscaler.dev/idle-since";
/// The shortest `idle-after`. Requests are counted at most once a minute, so a Namespace
/// quiet for less than that still sleeps only at the next count.
pub const MIN_IDLE_AFTER: Duration = Duration::from_secs(1);

/// Reads `idle-after`: a duration of at least [`MIN_IDLE_AFTER`].
pub fn parse_idle_after(key: &str, value: &str) -> Result<Duration, InvalidAnnotation> {
    match humantime::parse_duration(value) {
        Ok(duration) if duration >= MIN_IDLE_AFTER => Ok(duration),
        _ => Err(invalid(
            key,
            value,
            "must be how long nothing may use the Namespace before it sleeps, such as `30m` or `2h`",
        )),
    }
}

/// What is known of a Namespace with `idle-after` at one look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleLook {
    pub idle_after: TimeDelta,
    /// Asleep now, by its schedule or an override: nothing to decide.
    pub asleep: bool,
    /// The last use seen other than requests: its last wake (by the schedule, a request or a
    /// person), the last deploy in it, or the controller's start, whichever is latest. Nothing
    /// sleeps for idleness within `idle_after` of it: the grace after a wake.
    pub used_at: DateTime<Utc>,
}

/// What a look at an idle Namespace comes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Idle {
    /// Asleep already.
    Asleep,
    /// Used within `idle_after`: look again at this instant.
    InUse { look_again: DateTime<Utc> },
    /// The requests could not be counted (Prometheus did not answer): nothing sleeps for
    /// idleness.
    Unknown,
    /// Nothing used it since `since`, `idle_after` ago or more: it sleeps now.
    Sleep { since: DateTime<Utc> },
}

/// How often requests are counted, at most, per Namespace.
pub const COUNT_EVERY: TimeDelta = TimeDelta::minutes(1);

impl IdleLook {
    /// Whether the requests must be counted to decide: awake, and its grace over.
    pub fn needs_count(&self, now: DateTime<Utc>) -> bool {
        !self.asleep && now >= self.grace_ends()
    }

    fn grace_ends(&self) -> DateTime<Utc> {
        self.used_at
            .checked_add_signed(self.idle_after)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// What the look comes to at `now`, with the requests counted over the last `idle_after`
    /// (`None` where [`IdleLook::needs_count`] said no count was needed, `Some(Err)` where
    /// Prometheus did not answer).
    pub fn decide(&self, now: DateTime<Utc>, requests: Option<Result<f64, ()>>) -> Idle {
        if self.asleep {
            return Idle::Asleep;
        }
        if now < self.grace_ends() {
            return Idle::InUse {
                look_again: self.grace_ends(),
            };
        }
        match requests {
            None | Some(Err(())) => Idle::Unknown,
            Some(Ok(count)) if count > 0.0 => Idle::InUse {
                look_again: now + COUNT_EVERY,
            },
            Some(Ok(_)) => Idle::Sleep {
                since: now
                    .checked_sub_signed(self.idle_after)
                    .unwrap_or(self.used_at)
                    .max(self.used_at),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::test_support::at;

    const WOKEN: &str = "2026-11-25T13:00:00Z";

    fn look(asleep: bool) -> IdleLook {
        IdleLook {
            idle_after: TimeDelta::minutes(30),
            asleep,
            used_at: at(WOKEN),
        }
    }

    #[test]
    fn within_the_grace_after_a_wake_nothing_is_counted_and_it_stays_up() {
        let now = at("2026-11-25T13:20:00Z");
        assert!(!look(false).needs_count(now));
        assert_eq!(
            look(false).decide(now, None),
            Idle::InUse {
                look_again: at("2026-11-25T13:30:00Z")
            }
        );
    }

    #[test]
    fn no_requests_for_idle_after_sleeps_since_the_quiet_began() {
        let now = at("2026-11-25T14:32:00Z");
        assert!(look(false).needs_count(now));
        assert_eq!(
            look(false).decide(now, Some(Ok(0.0))),
            Idle::Sleep {
                since: at("2026-11-25T14:02:00Z")
            }
        );
        let just_after_grace = at("2026-11-25T13:30:00Z");
        assert_eq!(
            look(false).decide(just_after_grace, Some(Ok(0.0))),
            Idle::Sleep { since: at(WOKEN) },
            "never idle since before its last use"
        );
    }

    #[test]
    fn a_request_counted_keeps_it_up_and_an_unanswered_count_sleeps_nothing() {
        let now = at("2026-11-25T14:32:00Z");
        assert_eq!(
            look(false).decide(now, Some(Ok(0.5))),
            Idle::InUse {
                look_again: at("2026-11-25T14:33:00Z")
            },
            "increase() counts a request as a fraction at the window's edge"
        );
        assert_eq!(look(false).decide(now, Some(Err(()))), Idle::Unknown);
    }

    #[test]
    fn asleep_it_is_left_alone() {
        let now = at("2026-11-25T23:00:00Z");
        assert!(!look(true).needs_count(now));
        assert_eq!(look(true).decide(now, None), Idle::Asleep);
    }

    #[test]
    fn idle_after_is_a_positive_duration() {
        assert_eq!(
            parse_idle_after(IDLE_AFTER, "30m"),
            Ok(Duration::from_secs(1800))
        );
        for wrong in ["0s", "soon", "-5m", ""] {
            let error = parse_idle_after(IDLE_AFTER, wrong).unwrap_err();
            assert!(
                error.to_string().contains("such as `30m`"),
                "{wrong}: {error}"
            );
        }
    }
}
