//! What carrying out an `OverrideRequest` does: the override a person asked for, decided by the
//! same rules as `cronscaler wake` and `sleep` (`schedule::asked`), from the controller's own
//! view of the Namespace. Whoever may create the request in the Namespace may ask; what it asks
//! for is checked here, and a refusal says which field and value, and why.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;

use super::{Asked, OverrideRequestSpec, OverrideRequestStatus, Phase};
use crate::{
    duration::spoken,
    schedule::{
        self, Direction,
        asked::{Refusal, back_to_schedule_patch, held_by_schedule, override_patch, until_when},
        has_schedule,
    },
};

/// The longest a request waits to be carried out: one made while no controller led is refused
/// when it is found later, rather than waking a Namespace hours after it was asked.
pub const MAX_AGE: TimeDelta = TimeDelta::minutes(10);

/// How long a request carried out (or refused) is kept, for `kubectl get` and `status` to show
/// who asked what; then it is removed.
pub const KEPT_FOR: TimeDelta = TimeDelta::hours(1);

/// The longest `by` and `means` are kept, each: together they sign the Namespace's patch as its
/// field manager, which the API server takes up to 128 characters.
pub const MAX_WORDS: usize = 60;

/// What the controller sees of a request and its Namespace.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub namespace: String,
    pub spec: OverrideRequestSpec,
    /// Its status: carried out already when it has a phase.
    pub status: Option<OverrideRequestStatus>,
    /// When the API server stored it.
    pub created: Option<DateTime<Utc>>,
    /// The Namespace's annotations, with what its policies give it (none: not known, or gone).
    pub annotations: Option<BTreeMap<String, String>>,
    /// A request of the same Namespace made after it and not answered yet: the one carried out.
    pub superseded_by: Option<String>,
}

/// What the request comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Carried {
    /// The Namespace's merge patch, signed `manager`, then the request's status and the Event
    /// (reason, note) that tells of it.
    Set {
        patch: serde_json::Value,
        manager: String,
        status: OverrideRequestStatus,
        event: (&'static str, String),
    },
    /// Nothing written to the Namespace: the status says why (refused, or nothing to do).
    Answered { status: OverrideRequestStatus },
    /// Carried out before: removed at `at`, once it has been kept long enough.
    Remove { at: DateTime<Utc> },
}

/// The Event's reason when a person's override is carried out.
pub const OVERRIDE_REQUESTED: &str = "OverrideRequested";

/// What the request `seen` comes to at `now`, under `--default-timezone` and `--max-override`.
pub fn plan(seen: &Seen, (timezone, max): (Tz, TimeDelta), now: DateTime<Utc>) -> Carried {
    let created = seen.created.unwrap_or(now);
    if seen
        .status
        .as_ref()
        .is_some_and(|status| status.phase.is_some())
    {
        return Carried::Remove {
            at: created + KEPT_FOR,
        };
    }
    let refused = |message: String| Carried::Answered {
        status: status(Phase::Refused, message, None, now),
    };
    if now - created > MAX_AGE {
        return refused(format!(
            "made {} ago and not carried out within {} (was the controller running?): ask again",
            spoken(now - created),
            spoken(MAX_AGE)
        ));
    }
    if let Some(newer) = &seen.superseded_by {
        return refused(format!(
            "superseded by OverrideRequest {}/{newer}, made after it: not carried out",
            seen.namespace
        ));
    }
    let what = format!("Namespace {}", seen.namespace);
    let Some(annotations) = &seen.annotations else {
        return refused(format!(
            "{what} is not known to the controller (it never touches it, or it is gone)"
        ));
    };
    let requested = match requested(&seen.spec, now) {
        Ok(requested) => requested,
        Err(message) => return refused(message),
    };
    let asker = Asker::of(&seen.spec);
    let direction = match seen.spec.state {
        Asked::Awake => Direction::Up,
        Asked::Asleep => Direction::Down,
        Asked::Schedule => return back_to_schedule(&what, &asker, now),
    };
    if !has_schedule(annotations) {
        return refused(schedule::asked::unscheduled(&what, direction).to_string());
    }
    let parsed = schedule::parse(annotations, timezone);
    let (state, note) = match direction {
        Direction::Up => ("awake", "woken"),
        Direction::Down => ("asleep", "put to sleep"),
    };
    let until = match until_when(direction, &what, &parsed, requested, now, max) {
        Ok(until) => until,
        Err(Refusal::NoNextTransition { .. })
            if let Some(held) = held_by_schedule(direction, &parsed, now, max) =>
        {
            let message = format!(
                "{what} is {state} by its schedule until {} ({} from now), beyond the {} an \
                 override may reach: nothing written",
                stamp(held),
                spoken(held - now),
                spoken(max)
            );
            return Carried::Answered {
                status: status(Phase::Done, message, Some(held), now),
            };
        }
        Err(refusal) => return refused(refusal.to_string()),
    };
    let message = format!(
        "{what} is {state} until {} ({} from now)",
        stamp(until),
        spoken(until - now)
    );
    Carried::Set {
        patch: override_patch(direction, until),
        manager: asker.manager(),
        event: (
            OVERRIDE_REQUESTED,
            format!(
                "{what} {note} until {} ({} from now), asked by {}",
                stamp(until),
                spoken(until - now),
                asker
            ),
        ),
        status: status(Phase::Done, message, Some(until), now),
    }
}

/// Until when the request asks, from `until` or `for`; `None`: until the schedule turns.
fn requested(
    spec: &OverrideRequestSpec,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, String> {
    match (spec.until.as_deref(), spec.for_.as_deref()) {
        (Some(_), Some(_)) => Err("spec.until and spec.for are both given: give one".into()),
        (Some(until), None) => DateTime::parse_from_rfc3339(until.trim())
            .map(|until| Some(until.with_timezone(&Utc)))
            .map_err(|_| {
                format!(
                    "spec.until: {until:?} is not an RFC 3339 instant such as 2026-11-23T22:00:00Z"
                )
            }),
        // Added without overflow: a span of ages is refused as too far ahead, not a panic.
        (None, Some(span)) => humantime::parse_duration(span.trim())
            .ok()
            .and_then(|span| TimeDelta::from_std(span).ok())
            .filter(|span| *span > TimeDelta::zero())
            .map(|span| {
                Some(
                    now.checked_add_signed(span)
                        .unwrap_or(DateTime::<Utc>::MAX_UTC),
                )
            })
            .ok_or_else(|| format!("spec.for: {span:?} is not a duration such as 2h or 90m")),
        (None, None) => Ok(None),
    }
}

/// The Namespace handed back to its schedule: its overrides taken away, whatever the cache shows
/// of them (it may not show a request's write of a moment ago yet; taking away what is not there
/// changes nothing).
fn back_to_schedule(what: &str, asker: &Asker, now: DateTime<Utc>) -> Carried {
    Carried::Set {
        patch: back_to_schedule_patch(),
        manager: asker.manager(),
        event: (
            OVERRIDE_REQUESTED,
            format!("{what} handed back to its schedule, asked by {asker}"),
        ),
        status: status(
            Phase::Done,
            format!("{what} follows its schedule again"),
            None,
            now,
        ),
    }
}

fn status(
    phase: Phase,
    message: String,
    until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> OverrideRequestStatus {
    OverrideRequestStatus {
        phase: Some(phase),
        message,
        until: until.map(stamp),
        answered: Some(stamp(now)),
    }
}

fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Who asked, and by which means, as the request names them: the Namespace's patch is signed
/// with them, so the workloads' `WokenOnDemand` Events name them too.
struct Asker {
    by: String,
    means: String,
}

impl Asker {
    fn of(spec: &OverrideRequestSpec) -> Self {
        // Printable words only, and short: they become a field manager.
        let kept = |text: Option<&str>, otherwise: &str| {
            let kept: String = (text.unwrap_or_default().chars())
                .filter(|c| c.is_ascii_graphic() || *c == ' ')
                .take(MAX_WORDS)
                .collect();
            match kept.trim() {
                "" => otherwise.to_string(),
                kept => kept.to_string(),
            }
        };
        Asker {
            by: kept(spec.by.as_deref(), "someone"),
            means: kept(spec.means.as_deref(), "an OverrideRequest"),
        }
    }

    /// The field manager of the Namespace's patch.
    fn manager(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.by, self.means)
    }
}

#[cfg(test)]
mod tests;
