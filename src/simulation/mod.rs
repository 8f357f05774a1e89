//! Every transition a time window holds for a set of objects, simulated with the very rules the
//! controller applies ([`crate::schedule::decide`]), so what `plan` and the console print is what
//! the controller would do, catch-up on start included; each object's timeline, what its sleep
//! withholds ([`savings`]) and the week's chart. Pure: the objects are read by the caller.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::{
    scaling::{
        DEFAULT_MAX_OVERRIDE,
        gitops::{
            owner::Claim,
            standing::{GitOps, Shown},
        },
        hpa::{self, Hpa},
    },
    schedule::{self, Annotations, Direction, Rule, ScaleChange, Schedule, Tally, tally},
    workloads::target::{Driver, ScaleTarget, TargetKind, TargetState},
};

/// One object the plan simulates.
#[derive(Debug, Clone)]
pub struct PlanObject {
    pub target: ScaleTarget,
    pub observed: TargetState,
    /// Its HPAs, held for the night and given back with its transitions (rule 11 of docs/scheduling.md).
    pub hpas: Vec<Hpa>,
    /// What its pods request and, for a CronJob, its own schedule: what sleeping saves.
    pub workload: Workload,
    /// What drives its replicas in its place (its Foo, a ScaledObject): it never sleeps itself.
    pub driven_by: Option<Driver>,
    /// The GitOps owner its marks name, read before its schedule's annotations replace its own.
    pub claim: Option<Claim>,
    /// That owner, as read beside it, and the mode its schedule chooses.
    pub gitops: Option<GitOps>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTransition {
    /// When the controller acts: the transition instant, or the window's start for a missed
    /// transition it catches up on.
    pub at: DateTime<Utc>,
    pub local_time: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `down`, `up`, or `restore` (schedule removed while scaled down).
    pub action: String,
    pub from: i32,
    pub to: i32,
    pub catch_up: bool,
    /// The annotation and value that made it: a cron, a window list, or an override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// What kind of transition it is, when not a cron's: `uptime`, `downtime`, `on demand
    /// until ...`, `override ended`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the transition does to the object's HPAs, if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hpas: Vec<String>,
}

/// Holidays of an object's schedule in the window: local dates on which nothing wakes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedHoliday {
    /// The first instant of the holidays, or the window's start if they began before it.
    pub at: DateTime<Utc>,
    pub local_time: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub first: NaiveDate,
    pub last: NaiveDate,
}

/// Something about an object's schedule that a person copying it from elsewhere should know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedNote {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvalidObject {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub problems: Vec<String>,
}

/// The GitOps tool that deploys an object, and what it does to its nights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedGitOps {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    #[serde(flatten)]
    pub shown: Shown,
}

/// The transitions of one object in one direction, too many to list one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSummary {
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// `down` or `up`.
    pub action: String,
    /// The cron of that direction, or the windows, as annotated.
    pub cron: String,
    /// Transitions in the window. A firing at the same instant as one of the scale-up cron is
    /// not a scale-down: the scale-up wins.
    pub count: u64,
    pub first: DateTime<Utc>,
    pub first_local_time: String,
    pub last: DateTime<Utc>,
    pub last_local_time: String,
    /// The shortest time between two of them; none for a single one.
    pub shortest_interval_seconds: Option<i64>,
    /// Whether all of them are that shortest interval apart.
    pub evenly_spaced: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    pub transitions: Vec<PlannedTransition>,
    /// For an object with too many transitions to list ([`SUMMARY_THRESHOLD`]), one entry per
    /// direction in place of its transitions; a catch-up stays in `transitions`.
    pub summaries: Vec<PlannedSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub holidays: Vec<PlannedHoliday>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<PlannedNote>,
    /// The scheduled objects a GitOps tool deploys.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gitops: Vec<PlannedGitOps>,
    pub invalid: Vec<InvalidObject>,
    /// The replicas of every scheduled object through the window, by namespace, kind and name:
    /// what savings and the chart are made of.
    #[serde(skip)]
    pub timelines: Vec<Timeline>,
}

/// The plan as `-o json` prints it: its own fields, and what sleeping saves.
#[derive(Debug, Serialize)]
pub struct WithSavings<'a> {
    #[serde(flatten)]
    pub plan: &'a Plan,
    pub savings: &'a Savings,
}

/// An object is summarised when it has more transitions in the window than this and more than
/// one an hour on average. Ordinary schedules (a few a day) stay listed however long the
/// window; a cron that fires every minute or second would make the table and the JSON
/// unreadable, tens of thousands of rows a week that say the same thing.
pub const SUMMARY_THRESHOLD: u64 = 100;

fn summarised(transitions: u64, from: DateTime<Utc>, until: DateTime<Utc>) -> bool {
    let hours = u64::try_from((until - from).num_hours()).unwrap_or(0);
    transitions > SUMMARY_THRESHOLD.max(hours)
}

/// Simulates `objects` from `from` to `until` (inclusive).
pub fn simulate(
    objects: &[PlanObject],
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    default_timezone: Tz,
) -> Plan {
    let mut plan = Plan::default();
    for object in objects {
        let target = &object.target;
        let observed = &object.observed;
        let parsed = target.kind.parse(&observed.annotations, default_timezone);
        if let Some(driver) = &object.driven_by {
            if matches!(parsed, Annotations::Scheduled(..) | Annotations::Invalid(_)) {
                plan.invalid.push(invalid(target, vec![driver.refusal()]));
            }
            continue;
        }
        let timezone = match &parsed {
            Annotations::Invalid(problems) => {
                plan.invalid.push(invalid(
                    target,
                    problems.iter().map(ToString::to_string).collect(),
                ));
                continue;
            }
            Annotations::Scheduled(schedule, recorded) => {
                if let Some(refused) =
                    schedule::out_of_reach(schedule, recorded, from, DEFAULT_MAX_OVERRIDE)
                {
                    plan.notes.push(note_out_of_reach(target, &refused));
                }
                plan.holidays
                    .extend(holidays_in(target, schedule, from, until));
                plan.notes.extend(notes_on(target, schedule));
                plan.gitops
                    .extend(object.gitops.as_ref().map(|gitops| PlannedGitOps {
                        namespace: target.key.namespace.clone(),
                        kind: target.kind.to_string(),
                        name: target.key.name.clone(),
                        shown: gitops.shown(target),
                    }));
                schedule.timezone
            }
            Annotations::Unscheduled(_) => default_timezone,
        };
        simulate_object(object, timezone, from, until, default_timezone, &mut plan);
    }
    plan.timelines
        .sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    plan.transitions.sort_by(|a, b| {
        (a.at, &a.namespace, &a.kind, &a.name).cmp(&(b.at, &b.namespace, &b.kind, &b.name))
    });
    plan.summaries.sort_by(|a, b| {
        (a.first, &a.namespace, &a.kind, &a.name, &a.action).cmp(&(
            b.first,
            &b.namespace,
            &b.kind,
            &b.name,
            &b.action,
        ))
    });
    plan
}

/// Steps through one object's transitions with `decide`, as the controller would meet them.
fn simulate_object(
    object: &PlanObject,
    timezone: Tz,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    default_timezone: Tz,
    plan: &mut Plan,
) {
    let target = &object.target;
    let mut annotations = object.observed.annotations.clone();
    let mut replicas = object.observed.replicas;
    let mut hpas = object.hpas.clone();
    let mut transitions = Vec::new();
    let initially = target.kind.parse(&annotations, default_timezone);
    let start = ReplicaState::found(&initially, replicas);
    let mut timeline = Timeline {
        namespace: target.key.namespace.clone(),
        kind: target.kind,
        name: target.key.name.clone(),
        timezone,
        from,
        until,
        start,
        steps: Vec::new(),
        summarised: false,
        workload: object.workload.clone(),
    };
    let scheduled = matches!(initially, Annotations::Scheduled(..));
    let mut state = start;
    let mut in_window = 0_u64;
    let mut counted = false;
    let mut now = from;
    loop {
        // As the controller does: an override out of reach is left out until it comes within.
        let (parsed, out_of_reach) = schedule::in_reach(
            target.kind.parse(&annotations, default_timezone),
            now,
            DEFAULT_MAX_OVERRIDE,
        );
        if let Some(change) = schedule::decide(&parsed, replicas, now) {
            let to = change.replicas.unwrap_or(replicas);
            let action = change.applied.map_or("restore".to_string(), |transition| {
                transition.direction.to_string()
            });
            let (by, note) = describe_cause(&parsed, &change, timezone, now);
            let catch_up = change.applied.is_none_or(|transition| transition.at < from);
            let bounds = hpa::wanted(&parsed, Some(&change), false);
            let hpa_changes: Vec<String> = hpa::changes_for(&hpas, bounds, true)
                .into_iter()
                .map(|(hpa_change, _)| {
                    hpa_change.apply_to(&mut hpas);
                    hpa_change.describe()
                })
                .collect();
            transitions.push(PlannedTransition {
                at: now,
                local_time: local_time(now, timezone),
                namespace: target.key.namespace.clone(),
                kind: target.kind.to_string(),
                name: target.key.name.clone(),
                action,
                from: replicas,
                to,
                catch_up,
                by,
                note: note.clone(),
                hpas: hpa_changes,
            });
            let up_replicas = match &parsed {
                Annotations::Scheduled(schedule, _) => schedule.up_replicas,
                _ => None,
            };
            let direction = change.applied.map(|transition| transition.direction);
            state = state.after(direction, to, up_replicas);
            let on_demand = change
                .applied
                .is_some_and(|transition| transition.until.is_some())
                || change.ended.is_some();
            timeline.steps.push(Step {
                at: now,
                direction,
                catch_up,
                on_demand: on_demand.then(|| note.clone().unwrap_or_default()),
                ready_by: change
                    .applied
                    .map(|transition| transition.at)
                    .filter(|at| *at > now),
                from: replicas,
                state,
            });
            in_window += u64::from(!catch_up);
            replicas = to;
            apply_annotations(
                target.kind,
                &mut annotations,
                &change,
                object.observed.held.as_deref(),
            );
        }
        let Annotations::Scheduled(schedule, _) = &parsed else {
            break;
        };
        // Paused, it does nothing at any of its transitions; stepping through them all would
        // only take time.
        if schedule.paused {
            break;
        }
        // Stepping costs a reparse and two cron searches a transition, far too slow for a
        // cron that fires every second; counting them is not.
        if in_window > SUMMARY_THRESHOLD && !counted {
            counted = true;
            let tally = tally(schedule, from, until);
            if summarised(tally.down.count + tally.up.count, from, until) {
                transitions.retain(|transition| transition.catch_up);
                timeline.steps.retain(|step| step.catch_up);
                timeline.summarised = true;
                plan.summaries.extend(summaries(target, schedule, &tally));
                break;
            }
        }
        let within_reach = out_of_reach.map(|refused| refused.within_reach);
        let next = match (schedule.next_look(now), within_reach) {
            (Some(look), Some(reach)) => Some(look.min(reach)),
            (look, reach) => look.or(reach),
        };
        match next {
            Some(next) if next <= until => now = next,
            _ => break,
        }
    }
    if scheduled || !timeline.steps.is_empty() {
        plan.timelines.push(timeline);
    }
    plan.transitions.extend(transitions);
}

/// Which annotation made a change, and what kind of transition it is when not a cron's.
fn describe_cause(
    parsed: &Annotations,
    change: &ScaleChange,
    timezone: Tz,
    now: DateTime<Utc>,
) -> (Option<String>, Option<String>) {
    let Annotations::Scheduled(schedule, _) = parsed else {
        return (None, None);
    };
    let Some(applied) = change.applied else {
        return (None, change.ended.map(|_| "override ended".to_string()));
    };
    if let Some(until) = applied.until {
        let key = schedule::key_of(applied.direction);
        let value = until.to_rfc3339_opts(SecondsFormat::Secs, true);
        return (
            Some(format!("{key} {value:?}")),
            Some(format!("on demand until {}", local_time(until, timezone))),
        );
    }
    let by = schedule
        .rule_of(applied.direction)
        .map(|(key, value)| format!("{key} {value:?}"));
    let note = match (&schedule.rule, change.ended) {
        (_, Some(_)) => Some("override ended".to_string()),
        (Rule::Windows { key, .. }, None) => key.strip_prefix(schedule::PREFIX).map(str::to_string),
        (Rule::Crons, None) => None,
    };
    // A `ready-by` wake, started its warm-up ahead of its own instant.
    let early = (applied.at > now).then(|| {
        let ready_by = applied.at.with_timezone(&timezone).format("%H:%M");
        format!("early, ready by {ready_by}")
    });
    let note = [note, early].into_iter().flatten().collect::<Vec<_>>();
    (by, (!note.is_empty()).then(|| note.join(", ")))
}

/// What differs from kube-downscaler in windows copied from it: those over midnight.
fn notes_on(target: &ScaleTarget, schedule: &Schedule) -> Vec<PlannedNote> {
    let Rule::Windows {
        key, over_midnight, ..
    } = &schedule.rule
    else {
        return Vec::new();
    };
    over_midnight
        .iter()
        .map(|window| PlannedNote {
            namespace: target.key.namespace.clone(),
            kind: target.kind.to_string(),
            name: target.key.name.clone(),
            note: format!(
                "{key} `{window}` runs over midnight: each window ends on the morning after a day \
                 it names; kube-downscaler's Go version matches the weekday of each instant \
                 instead, and its Python version never matches such a window"
            ),
        })
        .collect()
}

/// An override the controller leaves out until it comes within `--max-override` of its end.
fn note_out_of_reach(target: &ScaleTarget, refused: &schedule::OutOfReach) -> PlannedNote {
    PlannedNote {
        namespace: target.key.namespace.clone(),
        kind: target.kind.to_string(),
        name: target.key.name.clone(),
        note: format!(
            "{}; it is applied from {}, when within reach, and the schedule is followed until \
             then (the controller says InvalidSchedule meanwhile)",
            refused.problem,
            refused
                .within_reach
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
    }
}

/// The holidays of `schedule` that fall in the window, as local dates.
fn holidays_in(
    target: &ScaleTarget,
    schedule: &Schedule,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<PlannedHoliday> {
    let tz = schedule.timezone;
    let (first_day, last_day) = (
        from.with_timezone(&tz).date_naive(),
        until.with_timezone(&tz).date_naive(),
    );
    schedule
        .holidays
        .ranges()
        .iter()
        .filter(|(first, last)| *first <= last_day && *last >= first_day)
        .map(|&(first, last)| {
            let at = tz
                .from_local_datetime(&first.and_time(NaiveTime::MIN))
                .earliest()
                .map_or(from, |at| at.with_timezone(&Utc))
                .max(from);
            PlannedHoliday {
                at,
                local_time: local_time(at, tz),
                namespace: target.key.namespace.clone(),
                kind: target.kind.to_string(),
                name: target.key.name.clone(),
                first,
                last,
            }
        })
        .collect()
}

fn local_time(at: DateTime<Utc>, timezone: Tz) -> String {
    at.with_timezone(&timezone)
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

fn summaries(target: &ScaleTarget, schedule: &Schedule, tally: &Tally) -> Vec<PlannedSummary> {
    [Direction::Down, Direction::Up]
        .into_iter()
        .filter_map(|direction| {
            let firings = tally.of(direction);
            let (first, last) = (firings.first?, firings.last?);
            Some(PlannedSummary {
                namespace: target.key.namespace.clone(),
                kind: target.kind.to_string(),
                name: target.key.name.clone(),
                action: direction.to_string(),
                cron: schedule.rule_of(direction)?.1.to_string(),
                count: firings.count,
                first,
                first_local_time: local_time(first, schedule.timezone),
                last,
                last_local_time: local_time(last, schedule.timezone),
                shortest_interval_seconds: firings.shortest.map(|gap| gap.num_seconds()),
                evenly_spaced: firings.evenly_spaced(),
            })
        })
        .collect()
}

fn invalid(target: &ScaleTarget, problems: Vec<String>) -> InvalidObject {
    InvalidObject {
        namespace: target.key.namespace.clone(),
        kind: target.kind.to_string(),
        name: target.key.name.clone(),
        problems,
    }
}

/// What the controller's patch does to the annotations, for the next step of the simulation.
fn apply_annotations(
    kind: TargetKind,
    annotations: &mut BTreeMap<String, String>,
    change: &ScaleChange,
    held: Option<&str>,
) {
    for (key, value) in change.annotation_updates() {
        let (key, value) = kind.spec().sleep.written(key, value, held);
        match value {
            Some(value) => annotations.insert(key.to_string(), value),
            None => annotations.remove(key),
        };
    }
}

mod chart;
mod savings;
mod timeline;

pub use chart::{Mark, MarkKind, render_svg};
pub use savings::{Savings, Totals, Workload, savings};
pub use timeline::{ReplicaState, Segment, Step, Timeline};
