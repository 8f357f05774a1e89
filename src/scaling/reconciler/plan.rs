//! The middle of a look, pure: from what was observed and the instant, every write the look
//! makes, as plain data. Nothing here reads the cluster or the clock, so every rule of the
//! reconciler is tested as a function (see `plan/tests.rs`).

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

use crate::{
    cost::where_ran::Ran,
    nodes::nights::Applied,
    ops::metrics::ScaleDirection,
    runtime::events::Note,
    scaling::{
        gitops::{Owner, Tool, pause::OwnerWrite},
        hpa::{self, GuardedChange},
        on_demand,
        savings::pods_object,
        transitions::order::{self, Gate},
    },
    schedule::{
        self, Annotations, Direction, SCALE_REVERTED, ScaleChange, Slept, Transition,
        already_warned, refused_cause, reverted, reverted_cause,
    },
    workloads::{
        kinds::Sleep,
        target::{ScaleTarget, TargetState},
    },
};

use super::{
    describe::{describe_change, describe_cron},
    observe::{NamespaceWake, Observed, held_back},
};
use crate::workloads::patch::{WorkloadPatch, patch_for};

/// What the rules are given besides the observation: the controller's settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How long a new object is not put to sleep by a catch-up; `None`: nothing is held back.
    pub grace: Option<TimeDelta>,
    /// How long each step of a Namespace's ordered wake may hold the next.
    pub step_timeout: TimeDelta,
    /// OpenCost's prices are read: where the Pods of a workload put to sleep run is recorded,
    /// for its wake to be priced at those nodes.
    pub records_pods: bool,
}

/// Every write of one look, in the order they are made: HPA bounds given back, the object's one
/// patch, HPAs held, the Event that says what the patch did, then a warning said once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Given back before the patch: should the patch fail, a scale-up is still due and retried.
    pub releases: Vec<GuardedChange>,
    pub patch: Option<TargetPatch>,
    /// Held after the patch: held first, an HPA could scale the workload down before the patch
    /// recorded its count.
    pub holds: Vec<GuardedChange>,
    /// How a release is counted in `cronscaler_scale_actions_total` (a hold is a scale-down).
    pub release_direction: Option<ScaleDirection>,
    /// The lever a workload sleeps through (a KEDA ScaledObject): its sleep annotation.
    pub lever: Option<LeverWrite>,
    /// Said on the object once its patch is made: reason and note.
    pub event: Option<(&'static str, String)>,
    /// Said on the object unless said before for the same cause, which is then written on it.
    pub warning: Option<Warning>,
    /// When the timer should look again.
    pub recheck: Option<DateTime<Utc>>,
    /// What becomes of its step in its Namespace's ordered wake or sleep.
    pub step: Option<Step>,
    /// Its Namespace has just started waiting for a turn to wake, to be looked for once the
    /// others due at the same instant have asked.
    pub look_for_turn: bool,
    /// What it adds to its Namespace's report of the transition.
    pub tally: Option<Tally>,
    /// It wakes by its Namespace's schedule: the Namespace's readiness is measured.
    pub wakes_namespace: bool,
    /// Its GitOps owner's repair paused for its Namespace, before the patch.
    pub owner_pause: Option<OwnerWrite>,
    /// Its GitOps owner, paused, looked at after its wake, to be given back what it had.
    pub owner_look: Option<Owner>,
    /// What must be read before the look is planned: the Pods its sleep stops (its own, or those
    /// of the object its lever scales), whose nodes the sleep's patch records. The look reads
    /// them and plans again; nothing else of this plan is made.
    pub reads_pods: Option<ScaleTarget>,
}

/// The object's merge patch: replicas (or its kind's sleep value) and the controller's
/// annotations, guarded by the resourceVersion it was decided on.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetPatch {
    pub body: WorkloadPatch,
    /// What it does, for an error: "scale Deployment shop/web: ...".
    pub doing: &'static str,
    /// Counted as a scale action of this direction, this late after its transition.
    pub counted: Option<(ScaleDirection, Duration)>,
    /// The sleep a wake ends, recorded with it (`slept`), filed once the patch is made.
    pub slept: Option<Slept>,
    /// The scheduled sleep or the wake it applies, which the record of the nights takes in once
    /// the patch is made (an override's sleep begins no night).
    pub night: Option<Applied>,
}

/// A write of the lever a workload sleeps through: its sleep annotation, guarded by the
/// lever's own resourceVersion. The workload's records go with the workload's patch.
#[derive(Debug, Clone, PartialEq)]
pub struct LeverWrite {
    pub target: ScaleTarget,
    pub body: WorkloadPatch,
    /// Made before the workload's patch, as a wake is: should the records fail, the wake is
    /// still due and retried. A sleep comes after its records (with the value the lever held):
    /// should the lever's write fail, the next look finds the sleep in force and the lever
    /// awake, and brings it in line.
    pub before_patch: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub reason: &'static str,
    pub note: Note,
    /// Written in the label `cronscaler.dev/warned` once said.
    pub cause: String,
}

/// What a step of an ordered wake or sleep does.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// It goes on, and holds nothing back any more.
    Goes { due: Transition, order: i32 },
    /// It goes on though the steps before it were late: said once on the Namespace.
    GoesAnyway {
        due: Transition,
        order: i32,
        note: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub transition: Transition,
    /// The rule or override that made it, as the report names it.
    pub by: String,
    pub object: String,
    /// Whether the patch changes replicas (or only records that it found them so).
    pub changes: bool,
}

/// `InvalidSchedule`: what a warning for refused annotations is called.
const INVALID_SCHEDULE: &str = "InvalidSchedule";

/// Every write a look at `observed` makes at `now`.
pub fn plan(observed: &Observed, settings: &Settings, now: DateTime<Utc>) -> Plan {
    let plan = warned_in_patch(
        observed,
        held::held_by_lever(observed, by_schedule(observed, settings, now), now),
    );
    pods_asleep(observed, settings, plan, now)
}

/// A sleep, where OpenCost's prices are read, records in its patch where the Pods it stops run
/// (`ran-on`), once they are read: those of a kind that names its Pods. Where none are found (it
/// is asleep already, or they could not be read), the record stands: the nodes they last ran on
/// are the best known.
fn pods_asleep(
    observed: &Observed,
    settings: &Settings,
    mut plan: Plan,
    now: DateTime<Utc>,
) -> Plan {
    let sleep = (plan.patch.as_mut())
        .filter(|patch| matches!(patch.counted, Some((ScaleDirection::Down, _))));
    let (Some(patch), true) = (sleep, settings.records_pods) else {
        return plan;
    };
    let pods = pods_object(&observed.target, &observed.object);
    if pods.kind.spec().pod_names.is_none() {
        return plan;
    }
    match &observed.pods_on {
        None => plan.reads_pods = Some(pods),
        Some(on) => {
            if let Some(ran) = Ran::of(now, on.clone()) {
                (patch.body.annotations).insert(schedule::RAN_ON.into(), Some(ran.to_string()));
            }
        }
    }
    plan
}

/// A warning's cause goes in the object's one patch, guarded like it, and the warning is said
/// once that is written: a look on a state the watch has not yet brought up to date cannot say
/// it twice, as its write fails and the look is made again on the object as it is.
fn warned_in_patch(observed: &Observed, mut plan: Plan) -> Plan {
    let Some(warning) = &plan.warning else {
        return plan;
    };
    let patch = plan.patch.get_or_insert_with(|| TargetPatch {
        body: WorkloadPatch::guarded(observed.object.resource_version.as_ref()),
        doing: "record a warning on",
        counted: None,
        slept: None,
        night: None,
    });
    (patch.body.labels).insert(schedule::WARNED.into(), Some(warning.cause.clone()));
    plan
}

/// Every write its schedule, or its lever's, asks of a look.
fn by_schedule(observed: &Observed, settings: &Settings, now: DateTime<Utc>) -> Plan {
    let object = &observed.object;
    let target = &observed.target;
    match (&observed.lever, &observed.lever_object) {
        // A lever with a schedule of its own follows that one.
        (_, Some((lever, lever_object))) if !schedule::has_schedule(&lever_object.annotations) => {
            return through_lever(
                observed,
                schedule_plan(observed, settings, now),
                lever,
                lever_object,
            );
        }
        // A lever that is gone, or may not be read: nothing to write.
        (Some((lever, _)), None) if lever.spec().levers.is_some() => return Plan::default(),
        (Some(_), _) if !schedule::has_schedule(&object.annotations) => return Plan::default(),
        _ => {}
    }
    if let Some((lever, name)) = &observed.lever {
        let note = match observed.lever_object {
            Some(_) => format!(
                "schedule annotations on a {} that sleeps through {lever} {name:?} are ignored: \
                 {lever} {name:?} has a schedule of its own, which it follows",
                target.kind
            ),
            None => format!(
                "schedule annotations on a {} controlled by {lever} {name:?} are ignored: annotate {lever} {name:?} instead, \
                 so the two controllers never fight over replicas",
                target.kind
            ),
        };
        return refused(observed, note.into());
    }
    schedule_plan(observed, settings, now)
}

/// What its schedule says, whatever it sleeps through.
fn schedule_plan(observed: &Observed, settings: &Settings, now: DateTime<Utc>) -> Plan {
    let object = &observed.object;
    if let Annotations::Invalid(problems) = &observed.annotations {
        let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let note =
            Note::new("no scheduled scaling until the annotations are fixed: ").list(reasons, "; ");
        return refused(observed, note);
    }
    let mut plan = gitops::beside_gitops(observed, follow(observed, settings, now));
    // An override further ahead than --max-override is refused until it comes within reach
    // (the tracker has the timer look then); meanwhile the schedule is followed without it.
    if let Some(refusal) = &observed.out_of_reach {
        let note = format!(
            "the override is not applied before it comes within reach at {}: {}",
            refusal
                .within_reach
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            refusal.problem
        );
        plan.warning = warning(
            observed,
            INVALID_SCHEDULE,
            note.into(),
            refused_cause(&object.annotations),
        );
    }
    plan
}

/// A workload's plan, made on its lever's sleep value, with the write of that value moved to
/// the lever; between transitions, a lever awake under a sleep in force is put back to sleep.
fn through_lever(
    observed: &Observed,
    mut plan: Plan,
    lever: &ScaleTarget,
    lever_object: &TargetState,
) -> Plan {
    let Sleep::Annotation { key, asleep, .. } = lever.kind.spec().sleep else {
        return plan;
    };
    let guarded = |value: Option<String>| {
        WorkloadPatch::annotations([(key, value)], lever_object.resource_version.as_ref())
    };
    let moved = plan.patch.as_mut().and_then(|patch| {
        let value = patch.body.annotations.remove(key)?;
        let sleeps = matches!(patch.counted, Some((ScaleDirection::Down, _)));
        Some((value, sleeps))
    });
    match moved {
        Some((value, sleeps)) => {
            plan.lever = Some(LeverWrite {
                target: lever.clone(),
                body: guarded(value),
                before_patch: !sleeps,
            });
            if let Some((_, note)) = &mut plan.event {
                note.push_str(&format!(", through {} {}", lever.kind, lever.key.name));
            }
        }
        None if plan.event.is_none()
            && sleep_in_force(&observed.annotations)
            && observed.object.replicas != 0 =>
        {
            plan.lever = Some(LeverWrite {
                target: lever.clone(),
                body: guarded(Some(asleep.to_string())),
                before_patch: false,
            });
        }
        None => {}
    }
    plan
}

/// Whether the transition in force puts it to sleep, and the schedule is not paused.
fn sleep_in_force(annotations: &Annotations) -> bool {
    matches!(annotations, Annotations::Scheduled(schedule, recorded)
        if !schedule.paused
            && recorded
                .last_transition
                .is_some_and(|transition| transition.direction == Direction::Down))
}

/// A warning of `cause`, unless it was said for that very cause already.
fn warning(
    observed: &Observed,
    reason: &'static str,
    note: Note,
    cause: String,
) -> Option<Warning> {
    (!already_warned(&observed.object.labels, &cause)).then_some(Warning {
        reason,
        note,
        cause,
    })
}

/// Refused annotations: said once, nothing else done.
fn refused(observed: &Observed, note: Note) -> Plan {
    let cause = refused_cause(&observed.object.annotations);
    Plan {
        warning: warning(observed, INVALID_SCHEDULE, note, cause),
        ..Plan::default()
    }
}

/// What the schedule says at `now`: a transition to apply, or between transitions, overrides
/// to clean up, a warning owed and HPAs to bring in line.
fn follow(observed: &Observed, settings: &Settings, now: DateTime<Utc>) -> Plan {
    let object = &observed.object;
    if let (Some(until), Some(grace)) = (held_back(observed, settings.grace, now), settings.grace) {
        // New: the catch-up that would put it to sleep waits for the end of its grace period,
        // and the object says why it is awake while its schedule says asleep.
        return Plan {
            recheck: Some(until),
            event: Some((
                schedule::HELD_FOR_GRACE,
                schedule::held_reason(until, grace),
            )),
            ..Plan::default()
        };
    }
    match schedule::decide(&observed.annotations, object.replicas, now) {
        Some(change) => {
            let mut plan = Plan::default();
            if observed.inherited
                && let Some(due) = change.scheduled()
                && held_by_namespace(&mut plan, &observed.namespace, due, settings, now)
            {
                return plan;
            }
            apply(observed, &change, plan, now)
        }
        None => between_transitions(observed),
    }
}

/// Whether the Namespace's wake or sleep `due` holds this workload back now; what that takes
/// goes into `plan`.
fn held_by_namespace(
    plan: &mut Plan,
    namespace: &NamespaceWake,
    due: Transition,
    settings: &Settings,
    now: DateTime<Utc>,
) -> bool {
    match namespace {
        NamespaceWake::Free => false,
        NamespaceWake::Parked { first } => {
            plan.look_for_turn = *first;
            true
        }
        NamespaceWake::Unknown => {
            plan.recheck = Some(now + order::LOOK_EVERY);
            true
        }
        NamespaceWake::Step {
            due: step_due,
            order,
            peers,
            held_since,
        } if *step_due == due => {
            match order::gate(*order, &due, peers, *held_since, settings.step_timeout, now) {
                Gate::Go => {
                    plan.step = Some(Step::Goes { due, order: *order });
                    false
                }
                Gate::Wait(at) => {
                    plan.recheck = Some(at);
                    true
                }
                Gate::GoAnyway { late } => {
                    let note = order::timed_out_note(&late, due.direction, now - *held_since);
                    plan.step = Some(Step::GoesAnyway {
                        due,
                        order: *order,
                        note,
                    });
                    false
                }
            }
        }
        NamespaceWake::Step { .. } => false,
    }
}

/// Applies `change`: the patch, the HPAs' bounds around it, the Event, and for a workload that
/// follows its Namespace, its part of the Namespace's report.
fn apply(observed: &Observed, change: &ScaleChange, mut plan: Plan, now: DateTime<Utc>) -> Plan {
    let object = &observed.object;
    let kind = observed.sleeps_as;
    let set_by = override_setter(observed, change);
    let (reason, note) = describe_change(
        kind,
        change,
        object.replicas,
        &observed.annotations,
        set_by.as_deref(),
        now,
    );
    let direction = match change.applied.map(|transition| transition.direction) {
        Some(Direction::Down) => ScaleDirection::Down,
        Some(Direction::Up) => ScaleDirection::Up,
        None => ScaleDirection::Restore,
    };
    let bounds = hpa::wanted(&observed.annotations, Some(change), false);
    let (holds, releases) =
        hpa::holds_and_releases(&observed.hpas, bounds, change.applied.is_some());
    let note = [&releases, &holds]
        .into_iter()
        .flatten()
        .fold(note, |note, (change, _)| {
            format!("{note}; {}", change.describe())
        });
    let superseded = change
        .annotation_updates()
        .into_iter()
        .filter(|_| observed.supersedes_kube_downscaler)
        .filter_map(|(key, _)| schedule::kube_downscaler::superseded_by(key));
    let removed: Vec<&str> = observed
        .stale_overrides
        .iter()
        .map(String::as_str)
        .chain(superseded)
        .collect();
    let late = change
        .applied
        .map(|transition| (now - transition.at).to_std().unwrap_or_default())
        .unwrap_or_default();
    let mut body = patch_for(kind, Some(change), &removed, object);
    // What it frees as `plan` and `status` count it: none where it sleeps on or off, but a
    // lever's floor (a ScaledObject's, or that of the workload sleeping through it).
    let floor = (observed.lever_object.as_ref()).map_or(object.floor, |(_, lever)| lever.floor);
    let slept = Slept::ended_by(&observed.annotations, object.replicas, change, now)
        .and_then(|slept| slept.of(kind.spec().frees(slept.replicas.into(), 0, floor)?));
    if let Some(slept) = slept {
        (body.annotations).insert(schedule::SLEPT.into(), Some(slept.to_string()));
    }
    // A scheduled sleep begins a night or counts in it; a wake, whatever made it, counts as its
    // Namespace's.
    let night = (change.applied)
        .filter(|transition| transition.direction == Direction::Up || change.scheduled().is_some())
        .map(|transition| Applied {
            at: transition.at,
            asleep: transition.direction == Direction::Down,
            namespace: observed.target.key.namespace.clone(),
        });
    plan.patch = Some(TargetPatch {
        body,
        doing: "scale",
        counted: Some((direction, late)),
        slept,
        night,
    });
    plan.release_direction = (!releases.is_empty()).then_some(direction);
    plan.releases = releases;
    plan.holds = holds;
    plan.event = Some((reason, note));
    if observed.inherited {
        plan.tally = tally(observed, change);
        plan.wakes_namespace = change.replicas.is_some()
            && change
                .applied
                .is_some_and(|transition| transition.direction == Direction::Up);
    }
    plan
}

/// Between transitions: ended overrides of its own removed, a change of replicas by someone
/// else warned about, and its HPAs brought in line with the transition in force, which
/// finishes what a failed request or a restart between two requests left undone.
fn between_transitions(observed: &Observed) -> Plan {
    let object = &observed.object;
    let stale: Vec<&str> = observed
        .stale_overrides
        .iter()
        .map(String::as_str)
        .collect();
    // The object has one `warned`: while an out-of-reach override holds it, a revert waits. A
    // lever found awake under a sleep is brought in line instead (`through_lever`).
    let revert = (observed.out_of_reach.is_none() && observed.lever_object.is_none())
        .then(|| reverted_warning(observed))
        .flatten();
    let taken_over = revert.is_some()
        || matches!(&observed.annotations, Annotations::Scheduled(_, recorded)
            if schedule::taken_over(&object.labels, recorded));
    let bounds = hpa::wanted(&observed.annotations, None, taken_over);
    let (holds, releases) = hpa::holds_and_releases(&observed.hpas, bounds, false);
    Plan {
        release_direction: (!releases.is_empty()).then_some(ScaleDirection::Up),
        releases,
        holds,
        patch: (!stale.is_empty()).then(|| TargetPatch {
            body: patch_for(observed.sleeps_as, None, &stale, object),
            doing: "remove an ended override from",
            counted: None,
            slept: None,
            night: None,
        }),
        warning: revert
            .and_then(|(note, cause)| warning(observed, SCALE_REVERTED, note.into(), cause)),
        ..Plan::default()
    }
}

/// The `ScaleReverted` warning, note and cause, when someone other than its HPA changed the
/// replicas the transition in force set. Said or not, that someone has taken over until the
/// next transition.
fn reverted_warning(observed: &Observed) -> Option<(String, String)> {
    let object = &observed.object;
    let (transition, set) = reverted(&observed.annotations, object.replicas)?;
    if hpa::changed_by_its_hpa(&observed.hpas, &object.writers) {
        return None;
    }
    let writer = object.writers.sleep_field.as_deref().unwrap_or("someone");
    // A GitOps tool is named with the owner that deploys the object, and what would have
    // prevented it.
    let (who, advice) = match (Tool::writing_as(writer), &observed.gitops) {
        (Some(tool), Some(gitops)) if gitops.confirmed && tool.same_tool(gitops.owner.tool) => {
            let (who, advice) = gitops.owner.revert_advice();
            (who, format!("; {advice}"))
        }
        (Some(tool), _) => (format!("{} ({writer})", tool.spec().tool), String::new()),
        (None, _) => (writer.to_string(), String::new()),
    };
    let note = format!(
        "replicas changed from {set} to {} by {who} after the scheduled scale-{} at {}; left alone until the next transition{advice}",
        object.replicas,
        transition.direction,
        transition
            .at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    Some((note, reverted_cause(transition)))
}

/// Who set the override a change applies or ends: the object's own annotation's manager, or
/// the Namespace's.
fn override_setter(observed: &Observed, change: &ScaleChange) -> Option<String> {
    let transition = change
        .applied
        .filter(|applied| applied.until.is_some())
        .or(change.ended)?;
    let key = schedule::key_of(transition.direction);
    (observed.object.writers.of_override(key).map(str::to_string))
        .or_else(|| observed.namespace_setter.clone())
}

/// What a Namespace's transition did to this workload, for the Namespace's report.
fn tally(observed: &Observed, change: &ScaleChange) -> Option<Tally> {
    let (Some(transition), Annotations::Scheduled(schedule, _)) =
        (change.applied, &observed.annotations)
    else {
        return None;
    };
    // Each workload applies a namespace's override at its own instant: one report gathers
    // them all, by the override's end.
    let (transition, by) = match transition.until {
        Some(until) => (
            Transition {
                at: until,
                ..transition
            },
            on_demand::describe(&transition, observed.namespace_setter.as_deref()),
        ),
        None => {
            let cron = describe_cron(schedule, transition);
            // A schedule from a SleepPolicy or SleepSchedule says which.
            let by = match observed.governed_by.as_deref() {
                Some(source) if source != "Namespace" => format!("{cron} from {source}"),
                _ => cron,
            };
            (transition, by)
        }
    };
    Some(Tally {
        transition,
        by,
        object: format!("{} {}", observed.target.kind, observed.target.key.name),
        changes: change.replicas.is_some(),
    })
}

mod gitops;
mod held;
#[cfg(test)]
mod tests;
