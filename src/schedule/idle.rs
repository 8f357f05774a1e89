//! Sleep when idle: `idle-after` on a Namespace says how long nothing may use it before it
//! sleeps until the next request (with `wake-on-request`) or `cronscaler wake`. What counts as
//! use is requests (counted by Prometheus), a deploy, and a wake; each starts the quiet time
//! over. This file decides, from what was counted, whether a Namespace sleeps now, and plans
//! what that writes; it never wakes one, so it never wakes what a schedule keeps asleep.
//!
//! An idle sleep is an `asleep-until` of `--max-override` with `idle-since` beside it, so that
//! everything that ends an override (a request, `cronscaler wake`, its end) ends it, and
//! `status` can tell it from a sleep a person asked for.

use std::{collections::BTreeMap, time::Duration};

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;
use json_patch::Patch;

use super::keys::{
    ASLEEP_UNTIL, AWAKE_UNTIL, DOWNTIME, IDLE_AFTER, IDLE_SINCE, SCALE_DOWN, SCALE_UP, UPTIME,
    WAKE_ON_REQUEST,
};
use super::{
    Annotations, Direction,
    invalid::{InvalidAnnotation, invalid},
    parse,
    patches::{add, add_annotations, annotations_absent, remove, remove_if_still, still},
};
use crate::duration::spoken;

/// The shortest `idle-after`. A proxy's metrics are scraped every 30 s to a minute, and
/// Prometheus needs two samples in the window to count anything: over a shorter window an
/// answer of no requests would say nothing of the Namespace.
pub const MIN_IDLE_AFTER: Duration = Duration::from_secs(120);
/// The Event of an idle sleep.
pub const IDLE_SLEEP: &str = "IdleSleep";
/// The Warning of requests that could not be counted.
pub const IDLE_UNKNOWN: &str = "IdleUnknown";
/// The Warning of an `idle-after` that cannot act, as of any schedule that cannot.
const INVALID_SCHEDULE: &str = "InvalidSchedule";

/// Reads `idle-after`: a duration of at least [`MIN_IDLE_AFTER`].
pub fn parse_idle_after(key: &str, value: &str) -> Result<Duration, InvalidAnnotation> {
    match humantime::parse_duration(value) {
        Ok(duration) if duration >= MIN_IDLE_AFTER => Ok(duration),
        Ok(_) => Err(invalid(
            key,
            value,
            &format!(
                "is shorter than the minimum, {}: Prometheus needs two scrapes of a proxy's \
                 metrics in the window to count its requests",
                spoken(MIN_IDLE_AFTER)
            ),
        )),
        Err(_) => Err(invalid(
            key,
            value,
            "must be how long nothing may use the Namespace before it sleeps, such as `30m` or `2h`",
        )),
    }
}

/// Reads `idle-since`: an RFC 3339 instant.
pub fn parse_idle_since(key: &str, value: &str) -> Result<DateTime<Utc>, InvalidAnnotation> {
    DateTime::parse_from_rfc3339(value.trim())
        .map(|since| since.with_timezone(&Utc))
        .map_err(|_| {
            invalid(
                key,
                value,
                "is written by the controller as an RFC 3339 instant; remove it",
            )
        })
}

/// Since when an idle sleep in force has found the Namespace idle: `idle-since` beside an
/// `asleep-until` that has not ended.
pub fn idle_since(
    annotations: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let until = DateTime::parse_from_rfc3339(annotations.get(ASLEEP_UNTIL)?.trim()).ok()?;
    let since = parse_idle_since(IDLE_SINCE, annotations.get(IDLE_SINCE)?).ok()?;
    (until > now).then_some(since)
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
    /// When being asleep may change: its schedule's next transition, or its override's end.
    pub next_change: Option<DateTime<Utc>>,
}

/// What Prometheus said of a Namespace's requests over the last `idle-after`.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// The requests it counted.
    pub requests: f64,
    /// Whether it shows the requests' source counting over the window, or why not. A request
    /// counted is proof enough; where none was, the proof is asked of Prometheus.
    pub counting: Result<(), String>,
}

impl Counted {
    /// Whether it says anything of the Namespace: a request counted, or none by a source that
    /// was counting.
    fn proves(&self) -> bool {
        self.requests > 0.0 || self.counting.is_ok()
    }
}

/// What a look at an idle Namespace comes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Idle {
    /// Asleep already.
    Asleep,
    /// Used within `idle_after`: look again at this instant.
    InUse { look_again: DateTime<Utc> },
    /// The requests could not be counted (Prometheus did not answer), or none were by a
    /// source that Prometheus does not show counting: nothing sleeps for idleness.
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
    pub fn decide(&self, now: DateTime<Utc>, count: Option<&Result<Counted, String>>) -> Idle {
        if self.asleep {
            return Idle::Asleep;
        }
        if now < self.grace_ends() {
            return Idle::InUse {
                look_again: self.grace_ends(),
            };
        }
        match count {
            Some(Ok(counted)) if counted.requests > 0.0 => Idle::InUse {
                look_again: now + COUNT_EVERY,
            },
            // No request counted is idleness only where the source was counting.
            Some(Ok(counted)) if !counted.proves() => Idle::Unknown,
            None | Some(Err(_)) => Idle::Unknown,
            Some(Ok(_)) => Idle::Sleep {
                since: now
                    .checked_sub_signed(self.idle_after)
                    .unwrap_or(self.used_at)
                    .max(self.used_at),
            },
        }
    }
}

/// What one look at a Namespace with `idle-after` writes, as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct IdlePlan {
    /// The JSON patch of the Namespace: the idle sleep, or an `idle-since` that outlived its
    /// sleep taken away.
    pub patch: Option<Patch>,
    /// An Event on the Namespace: reason, note, and whether it is a Warning.
    pub event: Option<(&'static str, String, bool)>,
    /// Whether the Namespace stands told that its requests cannot be counted: a Warning is
    /// said once until a count succeeds again.
    pub warned: bool,
    /// When to look again, if nothing about the Namespace changes before.
    pub look_again: Option<DateTime<Utc>>,
}

impl IdleLook {
    /// What is written for a Namespace [`IdleLook::of`] does not look at: an `idle-since` that
    /// outlived its sleep taken away, and, once (`warned`), a Warning for an `idle-after`
    /// without a schedule, which an idle sleep could never end back into.
    pub fn leftover(
        annotations: &BTreeMap<String, String>,
        default_timezone: Tz,
        now: DateTime<Utc>,
        warned: bool,
    ) -> IdlePlan {
        let unscheduled = annotations.get(IDLE_AFTER).filter(|_| {
            matches!(
                parse(annotations, default_timezone),
                Annotations::Unscheduled(_)
            )
        });
        let event = unscheduled.filter(|_| !warned).map(|value| {
            let problem = invalid(
                IDLE_AFTER,
                value,
                &format!(
                    "needs a schedule to wake back to: add {UPTIME}, {DOWNTIME}, {SCALE_DOWN} or \
                     {SCALE_UP} (`{UPTIME}: Mon-Sun 00:00-24:00` keeps it up but when idle)"
                ),
            );
            (INVALID_SCHEDULE, problem.to_string(), true)
        });
        IdlePlan {
            patch: tidy(annotations, now),
            event,
            warned: unscheduled.is_some(),
            look_again: None,
        }
    }

    /// The look at a Namespace with `annotations`, last used (but for requests) at `used_at`;
    /// `None` where it has no valid `idle-after`, or is paused.
    pub fn of(
        annotations: &BTreeMap<String, String>,
        default_timezone: Tz,
        used_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Option<Self> {
        let idle_after = parse_idle_after(IDLE_AFTER, annotations.get(IDLE_AFTER)?).ok()?;
        let Annotations::Scheduled(schedule, _) = parse(annotations, default_timezone) else {
            return None;
        };
        if schedule.paused {
            return None;
        }
        // Its schedule's last wake is a wake like any other.
        let woken = schedule
            .governing_transition(now)
            .filter(|transition| transition.direction == Direction::Up)
            .map(|transition| transition.at);
        Some(IdleLook {
            idle_after: TimeDelta::from_std(idle_after).ok()?,
            asleep: schedule.asleep_at(now),
            used_at: woken.map_or(used_at, |woken| woken.max(used_at)),
            next_change: schedule.next_look(now),
        })
    }

    /// What the look writes at `now`: `count` is the requests counted over the last
    /// `idle_after` (`None` where none was needed, `Err` saying why it could not be made);
    /// `warned`, whether the Namespace was told already that counting fails; an idle sleep
    /// lasts `max_override` at most. `bare`: the Namespace has no annotations at all.
    pub fn plan(
        &self,
        annotations: &BTreeMap<String, String>,
        bare: bool,
        now: DateTime<Utc>,
        count: Option<Result<Counted, String>>,
        warned: bool,
        max_override: TimeDelta,
    ) -> IdlePlan {
        // Told once, until a count proves something again.
        let proven = matches!(&count, Some(Ok(counted)) if counted.proves());
        let nothing = IdlePlan {
            patch: tidy(annotations, now),
            event: None,
            warned: warned && !proven,
            look_again: None,
        };
        match self.decide(now, count.as_ref()) {
            Idle::Asleep => IdlePlan {
                look_again: self.next_change,
                ..nothing
            },
            Idle::InUse { look_again } => IdlePlan {
                look_again: Some(look_again),
                ..nothing
            },
            Idle::Unknown => {
                let why = match count {
                    Some(Err(why)) => why,
                    Some(Ok(counted)) => counted.counting.err().unwrap_or_default(),
                    None => String::new(),
                };
                IdlePlan {
                    event: (!warned).then(|| {
                        let note = format!(
                            "requests could not be counted, so nothing sleeps for idleness until they can: {why}"
                        );
                        (IDLE_UNKNOWN, note, true)
                    }),
                    warned: true,
                    look_again: Some(now + COUNT_EVERY),
                    ..nothing
                }
            }
            Idle::Sleep { since } => {
                let until = now + max_override;
                let woken_by = if annotations.contains_key(WAKE_ON_REQUEST) {
                    "the next request or `cronscaler wake`"
                } else {
                    "`cronscaler wake`"
                };
                let note = format!(
                    "no requests for {}: asleep until {woken_by}, at most until {}",
                    spoken(self.idle_after),
                    instant(until)
                );
                IdlePlan {
                    patch: Some(sleep_patch(annotations, bare, since, until)),
                    event: Some((IDLE_SLEEP, note, false)),
                    warned: false,
                    // A write that lost a race is tried again; one that won is seen asleep.
                    look_again: Some(now + COUNT_EVERY),
                }
            }
        }
    }
}

/// An `idle-since` whose sleep has ended (woken by hand, its `asleep-until` run out) taken away.
fn tidy(annotations: &BTreeMap<String, String>, now: DateTime<Utc>) -> Option<Patch> {
    let since = annotations.get(IDLE_SINCE)?;
    idle_since(annotations, now)
        .is_none()
        .then(|| remove_if_still(IDLE_SINCE, since))
}

fn instant(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The idle sleep: `asleep-until` and `idle-since` written, and a wake that has not ended taken
/// away, each only while the Namespace's overrides are what was read, so that a request that
/// woke it meanwhile wins. A `bare` Namespace (scheduled by a policy, with no annotations at
/// all) gets the whole map, while it still has none: a JSON patch adds a key only to a map
/// that is there.
fn sleep_patch(
    annotations: &BTreeMap<String, String>,
    bare: bool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Patch {
    if bare {
        let map = serde_json::json!({ ASLEEP_UNTIL: instant(until), IDLE_SINCE: instant(since) });
        return Patch(vec![annotations_absent(), add_annotations(map)]);
    }
    let mut operations = vec![
        still(annotations, AWAKE_UNTIL),
        still(annotations, ASLEEP_UNTIL),
    ];
    if annotations.contains_key(AWAKE_UNTIL) {
        operations.push(remove(AWAKE_UNTIL));
    }
    for (key, at) in [(ASLEEP_UNTIL, until), (IDLE_SINCE, since)] {
        operations.push(add(key, instant(at)));
    }
    Patch(operations)
}

#[cfg(test)]
mod tests;
