//! `decide`: the change one reconcile makes, from the parsed annotations, the replicas found and
//! the time.

use chrono::{DateTime, Utc};

use super::{
    Annotations, Direction, Leftovers, Recorded, Schedule, Transition,
    keys::{LAST_TRANSITION, ORIGINAL_REPLICAS},
};

/// The change one reconcile should make, computed purely.
/// `replicas: None` = leave replicas alone (also when they already have the
/// wanted count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleChange {
    pub replicas: Option<i32>,
    pub original_replicas: AnnotationChange<i32>,
    pub last_transition: AnnotationChange<Transition>,
    /// The transition being applied, for events; `None` for cleanup after the
    /// schedule was removed, and at the end of an override with no transition in force.
    pub applied: Option<Transition>,
    /// The override whose end this change applies: the schedule governs again.
    pub ended: Option<Transition>,
    /// For cleanup after the schedule was removed: whether the replicas were given back, and
    /// why; `None` when a transition is applied.
    pub cleanup: Option<Cleanup>,
}

impl ScaleChange {
    /// The scheduled wake or sleep it applies, where one of a Namespace's is: not an override,
    /// nor the end of one, and something to scale.
    pub fn scheduled(&self) -> Option<Transition> {
        self.applied
            .filter(|due| due.until.is_none() && self.ended.is_none() && self.replicas.is_some())
    }
}

/// What removing a schedule (or `cronscaler restore`) does with the replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanup {
    /// Replicas are still what the scale-down in force set: `original-replicas` comes back.
    Restore { original: i32 },
    /// Replicas are no longer the `set` of the scale-down in force: a person has taken over, and
    /// what they chose stays.
    TakenOver { set: i32 },
    /// No scale-down is in force, so there is nothing to give back.
    NotScaledDown,
}

impl Cleanup {
    /// What the cleanup did to an object found with `replicas`, worded for its user.
    pub fn describe(&self, replicas: i32) -> String {
        let done = match self {
            Cleanup::Restore { original } if *original == replicas => {
                format!("replicas already at the original {original}")
            }
            Cleanup::Restore { original } => {
                format!("replicas restored from {replicas} to {original}")
            }
            Cleanup::TakenOver { set } => format!(
                "replicas left at {replicas} because they were changed after the scale-down to {set}"
            ),
            Cleanup::NotScaledDown => {
                format!("replicas left at {replicas} as no scale-down is in force")
            }
        };
        format!("{done}; the controller's annotations removed")
    }
}

impl Leftovers {
    /// Whether removing the schedule gives the replicas back. Only the replicas the scale-down in
    /// force set prove that nobody has taken over since; anything else is someone's choice.
    pub fn cleanup(&self, replicas: i32) -> Cleanup {
        let recorded = &self.recorded;
        match (recorded.original_replicas, recorded.last_transition) {
            (Some(original), Some(last)) if last.direction == Direction::Down => {
                if replicas == self.down_replicas {
                    Cleanup::Restore { original }
                } else {
                    Cleanup::TakenOver {
                        set: self.down_replicas,
                    }
                }
            }
            _ => Cleanup::NotScaledDown,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationChange<T> {
    Keep,
    Set(T),
    Remove,
}

impl<T: ToString> AnnotationChange<T> {
    /// `None` to keep the annotation, `Some(None)` to remove it, `Some(Some(value))` to set it.
    fn update(&self) -> Option<Option<String>> {
        match self {
            AnnotationChange::Keep => None,
            AnnotationChange::Set(value) => Some(Some(value.to_string())),
            AnnotationChange::Remove => Some(None),
        }
    }
}

impl ScaleChange {
    /// Whether it forgets the last warning's cause (`WARNED`): a cleanup does, so the same
    /// schedule put back later is warned about afresh.
    pub fn forgets_warning(&self) -> bool {
        self.cleanup.is_some()
    }

    /// The controller's annotations this change writes: the key and its new value, or `None`
    /// where the key is removed. Keys it keeps are not listed.
    pub fn annotation_updates(&self) -> Vec<(&'static str, Option<String>)> {
        [
            (ORIGINAL_REPLICAS, self.original_replicas.update()),
            (LAST_TRANSITION, self.last_transition.update()),
        ]
        .into_iter()
        .filter_map(|(key, update)| Some((key, update?)))
        .collect()
    }
}

/// The change to make at `now`, or `None` when there is nothing to do:
/// invalid or paused annotations, no transition newer than the one already
/// applied, or a change that would change nothing.
pub fn decide(
    annotations: &Annotations,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    let change = match annotations {
        Annotations::Invalid(_) => return None,
        Annotations::Unscheduled(leftovers) => clean_up(leftovers, current_replicas),
        Annotations::Scheduled(schedule, recorded) => {
            apply(schedule, recorded, current_replicas, now)?
        }
    };
    let changes_nothing = change.replicas.is_none()
        && change.original_replicas == AnnotationChange::Keep
        && change.last_transition == AnnotationChange::Keep;
    (!changes_nothing).then_some(change)
}

/// The schedule is gone: give back what a scale-down took, unless someone has taken over since,
/// and drop the controller's bookkeeping either way.
fn clean_up(leftovers: &Leftovers, current_replicas: i32) -> ScaleChange {
    let cleanup = leftovers.cleanup(current_replicas);
    let recorded = &leftovers.recorded;
    ScaleChange {
        replicas: match cleanup {
            Cleanup::Restore { original } => Some(original).filter(|&o| o != current_replicas),
            Cleanup::TakenOver { .. } | Cleanup::NotScaledDown => None,
        },
        original_replicas: remove_if_some(recorded.original_replicas),
        last_transition: remove_if_some(recorded.last_transition),
        applied: None,
        ended: None,
        cleanup: Some(cleanup),
    }
}

fn remove_if_some<T>(recorded: Option<T>) -> AnnotationChange<T> {
    match recorded {
        Some(_) => AnnotationChange::Remove,
        None => AnnotationChange::Keep,
    }
}

fn apply(
    schedule: &Schedule,
    recorded: &Recorded,
    current_replicas: i32,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    if schedule.paused {
        return None;
    }
    let last = recorded.last_transition;
    // An override in force wins over the schedule; it acts once, when first seen.
    if let Some(on_demand) = schedule.on_demand.filter(|on_demand| on_demand.until > now) {
        if last.is_some_and(|last| {
            last.until == Some(on_demand.until) && last.direction == on_demand.direction
        }) {
            return None;
        }
        let due = Transition {
            at: now,
            direction: on_demand.direction,
            until: Some(on_demand.until),
        };
        return Some(scale(schedule, recorded, current_replicas, due, None));
    }
    // An override that was applied has ended (run out, or taken back): whatever the schedule
    // has in force now is applied again, even a transition applied before the override.
    let ended = last.filter(|last| last.until.is_some());
    let Some(due) = schedule.in_force(now) else {
        return ended.map(|ended| ScaleChange {
            replicas: None,
            original_replicas: AnnotationChange::Keep,
            last_transition: AnnotationChange::Remove,
            applied: None,
            ended: Some(ended),
            cleanup: None,
        });
    };
    // Between transitions the user's manual changes stand: only a transition
    // newer than the one already applied acts.
    if ended.is_none() && last.is_some_and(|last| due.is_applied(&last)) {
        return None;
    }
    Some(scale(schedule, recorded, current_replicas, due, ended))
}

/// What applying `due` does to an object with `current_replicas`.
fn scale(
    schedule: &Schedule,
    recorded: &Recorded,
    current_replicas: i32,
    due: Transition,
    ended: Option<Transition>,
) -> ScaleChange {
    // With scale-ups, a record still there was made by the first scale-down since the last
    // scale-up (each one removes it): the count the morning brings back. Without them, only a
    // person brings a count back: what they left is what a scale-down takes, and an older record
    // would later resize a workload they have taken over. One still at the down count was not
    // taken over (nor was it by a sleep on demand whose end applies the scale-down again): the
    // record is what to give back.
    let keep_record = recorded.original_replicas.is_some()
        && (schedule.has(Direction::Up) || current_replicas == schedule.down_replicas);
    let (replicas, original_replicas) = match due.direction {
        Direction::Down if current_replicas > schedule.down_replicas => (
            Some(schedule.down_replicas),
            if keep_record {
                AnnotationChange::Keep
            } else {
                AnnotationChange::Set(current_replicas)
            },
        ),
        // This scale-down takes nothing; below the down count without scale-ups, someone has
        // taken over, so there is nothing for a removal to give back.
        Direction::Down if keep_record => (None, AnnotationChange::Keep),
        Direction::Down => (None, remove_if_some(recorded.original_replicas)),
        Direction::Up => (
            // With neither an explicit nor a remembered count there is no
            // number to scale to, and none is made up.
            schedule
                .up_replicas
                .or(recorded.original_replicas)
                .filter(|&target| target != current_replicas),
            remove_if_some(recorded.original_replicas),
        ),
    };
    ScaleChange {
        replicas,
        original_replicas,
        last_transition: AnnotationChange::Set(due),
        applied: Some(due),
        ended,
        cleanup: None,
    }
}

/// Whether a reconcile at `now` would change anything, whatever the replicas turn out to be:
/// the tracker decides this from watched metadata alone and reads an object only when it holds.
pub fn is_due(schedule: Option<&Schedule>, leftovers: &Leftovers, now: DateTime<Utc>) -> bool {
    match schedule {
        Some(schedule) => apply(schedule, &leftovers.recorded, 0, now).is_some(),
        None => decide(&Annotations::Unscheduled(leftovers.clone()), 0, now).is_some(),
    }
}

#[cfg(test)]
mod tests;
