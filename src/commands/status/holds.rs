//! What holds an object other than its schedule, told from what was listed alone (the grace
//! period and overrides are [`state`](super::state)'s).
//!
//! A scheduled wake or sleep that is due and not applied yet: the steps before it in its
//! Namespace's ordered wake, by the controller's own rule and with when it gives up on them; a
//! wake's turn among the Namespaces waking at once (`--max-waking-namespaces`), which only the
//! controller knows; else the controller itself, which has not come to it. And a lever that
//! holds what it was woken to until it runs it (KEDA's `paused`).

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use super::state::{NextAction, rfc3339};
use crate::{
    scaling::transitions::order::{Peer, waits_for},
    schedule::{Annotations, Direction, PAUSED_AT, ScaleChange, decide},
    workloads::{kinds::Sleep, target::TargetKind},
};

/// Why a transition due is not applied yet, and the instant it comes at the latest where that
/// is known (`None`: not known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub reason: String,
    pub next: Option<(NextAction, DateTime<Utc>)>,
}

/// The transition of `parsed` due at `now` and not applied to an object with `replicas`, and
/// what holds it back. `step` is its place in its Namespace's wake and the other workloads
/// taking part (`None` where it does not follow its Namespace); each step before it waits at
/// most `timeout`, from the instant the transition was due.
pub fn pending(
    parsed: &Annotations,
    replicas: i32,
    step: Option<(i32, &[Peer])>,
    timeout: TimeDelta,
    now: DateTime<Utc>,
) -> Option<Pending> {
    let Annotations::Scheduled(schedule, _) = parsed else {
        return None;
    };
    let due = decide(parsed, replicas, now)
        .as_ref()
        .and_then(ScaleChange::scheduled)?;
    let since = schedule.applied_at(&due);
    let (what, settled, action) = match due.direction {
        Direction::Up => ("wake", "available", NextAction::Up),
        Direction::Down => ("sleep", "asleep", NextAction::Down),
    };
    let due_since = format!("its {what} due since {}", rfc3339(since));
    let waited = step.and_then(|(order, peers)| waits_for(order, &due, peers, since, timeout));
    if let Some((late, gives_up)) = waited.filter(|(_, gives_up)| now < *gives_up) {
        return Some(Pending {
            reason: format!(
                "{due_since} waits for {} to be {settled} first (its Namespace's ordered \
                 {what}), until {} at the latest (--wake-step-timeout)",
                late.join(", "),
                rfc3339(gives_up)
            ),
            next: Some((action, gives_up)),
        });
    }
    let reason = match (step, due.direction) {
        (Some(_), Direction::Up) => format!(
            "{due_since} waits for its Namespace's turn to wake (--max-waking-namespaces), or \
             for the controller"
        ),
        _ => format!("{due_since} waits for the controller"),
    };
    // When the controller comes to it is not known here: no instant is made up.
    Some(Pending { reason, next: None })
}

/// Why an awake object of `kind` with its own annotations `own` is held at a count: woken to
/// the count its lever held it at before the night (`paused-at`), which the controller gives
/// back to the lever's own hold once it runs it.
pub fn held_by_lever(kind: TargetKind, own: &BTreeMap<String, String>) -> Option<String> {
    let Sleep::Annotation {
        key,
        holds: Some(holds),
        ..
    } = kind.spec().sleep
    else {
        return None;
    };
    let count = own.get(PAUSED_AT)?;
    Some(format!(
        "woken to {count} by {key}, the count {holds} held it at before the night, until it \
         runs {count}; then {holds} holds it alone"
    ))
}
