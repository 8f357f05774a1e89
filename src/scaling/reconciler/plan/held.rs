//! A lever whose controller holds the workload at whatever count it has (KEDA's
//! `autoscaling.keda.sh/paused`): a person paused KEDA at the workload's count before the night.
//! The night's `paused-replicas: "0"` takes it to 0, and given back alone in the morning it would
//! leave it there, held at 0 all day. So the sleep remembers the count (`paused-at`), the wake
//! sets `paused-replicas` to it (which KEDA honours over `paused`), and once the workload is back
//! at it the annotation goes and `paused` holds it there, as the person left it.

use chrono::{DateTime, TimeDelta, Utc};

use super::{LeverWrite, Plan, TargetPatch, sleep_in_force};
use crate::{
    ops::metrics::ScaleDirection,
    scaling::reconciler::observe::Observed,
    schedule::PAUSED_AT,
    workloads::{kinds::Sleep, patch::WorkloadPatch},
};

/// How soon a woken workload's count is read again while the lever is being given back.
const READ_AGAIN: TimeDelta = TimeDelta::seconds(2);

/// `plan` with what a holding lever adds to it: `paused-at` recorded with a sleep, the lever set
/// to it at the wake, and given back once the workload is at it.
pub(super) fn held_by_lever(observed: &Observed, mut plan: Plan, now: DateTime<Utc>) -> Plan {
    let lever = match &observed.lever_object {
        Some((lever, _)) => lever.clone(),
        None => observed.target.clone(),
    };
    let Sleep::Annotation {
        key,
        holds: Some(_),
        ..
    } = lever.kind.spec().sleep
    else {
        return plan;
    };
    let records = &observed.object.annotations;
    let paused_at = (records.get(PAUSED_AT)).and_then(|count| count.parse::<i32>().ok());
    let direction = (plan.patch.as_ref())
        .and_then(|patch| patch.counted)
        .map(|(direction, _)| direction);
    match (direction, paused_at) {
        // Asleep from a count the lever held with no value of its own.
        (Some(ScaleDirection::Down), _) => {
            let held = observed.held_at.filter(|count| *count > 0);
            if let (Some(count), None, Some(patch)) =
                (held, &observed.object.held, plan.patch.as_mut())
            {
                (patch.body.annotations).insert(PAUSED_AT.into(), Some(count.to_string()));
            }
        }
        // Woken to the count it was held at (`Sleep::write`): read again until it is back at it.
        (Some(ScaleDirection::Up), Some(count))
            if lever.kind.spec().sleep.woken_to_held(records).is_some() =>
        {
            if let Some((_, note)) = plan.event.as_mut() {
                note.push_str(&format!(
                    "; held at {count}, as it was paused before the night, until it runs {count}"
                ));
            }
            plan.recheck = soonest(plan.recheck, now + READ_AGAIN);
        }
        (None, Some(count)) if !sleep_in_force(&observed.annotations) => {
            let ours = observed.object.held.as_deref() == Some(count.to_string().as_str());
            match observed.held_at {
                // KEDA has not brought it back yet.
                Some(at) if ours && at != count => {
                    plan.recheck = soonest(plan.recheck, now + READ_AGAIN);
                    return plan;
                }
                _ => {}
            }
            // Back at its count (or no longer held, or the value is no longer ours): the
            // record goes, and the lever's value with it if it is still the one written.
            give_back(observed, &mut plan, key, ours);
        }
        _ => {}
    }
    plan
}

/// Removes `paused-at`, and the lever's `key` when `ours`, in one patch where the lever is the
/// target itself.
fn give_back(observed: &Observed, plan: &mut Plan, key: &str, ours: bool) {
    let mut annotations = vec![(PAUSED_AT, None)];
    match &observed.lever_object {
        Some((lever, state)) if ours => {
            plan.lever = Some(LeverWrite {
                target: lever.clone(),
                body: WorkloadPatch::annotations([(key, None)], state.resource_version.as_ref()),
                before_patch: true,
            });
        }
        None if ours => annotations.push((key, None)),
        _ => {}
    }
    match plan.patch.as_mut() {
        // Another write of this look (a warning said): the record goes with it.
        Some(patch) => {
            let removed = annotations
                .into_iter()
                .map(|(key, _)| (key.to_string(), None));
            patch.body.annotations.extend(removed);
        }
        None => {
            plan.patch = Some(TargetPatch {
                body: WorkloadPatch::annotations(
                    annotations,
                    observed.object.resource_version.as_ref(),
                ),
                doing: "give back the count its lever holds",
                counted: None,
                slept: None,
                night: None,
            });
        }
    }
}

fn soonest(recheck: Option<DateTime<Utc>>, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    Some(recheck.map_or(at, |recheck| recheck.min(at)))
}

#[cfg(test)]
mod tests;
