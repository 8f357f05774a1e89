//! The scheduled-scaling reconciler: reads one Deployment, StatefulSet, CronJob or Foo, evaluates its schedule at
//! `now` with the pure rules of [`crate::schedule`], and applies the outcome in one request.
//!
//! Replicas and the controller's annotations change together in one merge patch guarded by the
//! object's `resourceVersion`, so a decision made on a stale read fails with a conflict and is
//! retried on a fresh one instead of overwriting someone's change.

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
};
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc::UnboundedSender, watch},
    time::Instant,
};

use crate::{
    duration::spoken,
    error::Error,
    ops::metrics::{Metrics, Outcome, ScaleDirection},
    runtime::api_errors::is_status,
    runtime::workqueue::Enqueue,
    runtime::{
        CONTROLLER_NAME,
        events::{Events, Note},
        key::ObjectKey,
    },
    scaling::key::ScalingKey,
    scaling::{
        hpa::{self, HpaChange, HpaIndex},
        kinds::SleepWrite,
        namespaces::NamespaceSchedules,
        objects, on_demand,
        policies::declarations::Declarations,
        reports::{NamespaceReports, QUIET, Settled, WorkloadOutcome, describe},
        target::{ScaleTarget, TargetKind, TargetState},
        timer::Timer,
        wake_hosts,
        wake_order::{self, Gate, Peer, WakeSteps},
        wake_turns::{self, Ask, Turn, WakeTurns},
    },
    schedule::{
        self, Annotations, Direction, READY_BY, ScaleChange, Schedule, Transition, already_warned,
        held_back_until, refused_cause, reverted, reverted_cause,
    },
};

/// What the scaler reads and writes.
pub struct ScalingContext {
    pub client: Client,
    pub events: Events,
    pub default_timezone: Tz,
    /// Log and report what would be done, change nothing.
    pub dry_run: bool,
    pub metrics: Metrics,
    /// How long a new object is not put to sleep by a catch-up, and the timer that brings it
    /// back when that ends (and a step of an ordered wake when it looks again); without it
    /// nothing is held back.
    pub grace: Option<(TimeDelta, Timer)>,
    /// Namespaces' schedules, which workloads without one of their own follow.
    pub namespaces: NamespaceSchedules,
    /// What Namespaces' transitions did, and the queue that has each told once it settles.
    pub reports: Option<(NamespaceReports, Enqueue<ScalingKey>)>,
    /// The HPAs of the targets, held for the night and given back in the morning.
    pub hpas: HpaIndex,
    /// How far ahead an override on demand may reach when it is first applied.
    pub max_override: TimeDelta,
    /// The warm-up a `ready-by` schedule wakes early by until one is measured.
    pub warm_up: TimeDelta,
    /// How long each step of a Namespace's ordered wake may hold the next.
    pub step_timeout: TimeDelta,
    /// The steps held in Namespaces' transitions under way.
    pub wake_steps: WakeSteps,
    /// The Namespaces waking and waiting their turn, and the queue their turns go into.
    pub wake_turns: (WakeTurns, Option<Enqueue<ScalingKey>>),
    /// True once every workload kind was listed: before that, what follows a Namespace's
    /// schedule is not all known. `None` where nothing waits for it.
    pub workloads_listed: Option<watch::Receiver<bool>>,
    /// Told the Namespace each time a workload following its schedule is scaled up, so that
    /// whoever listens can measure how long the Namespace takes to be ready.
    pub wakes: Option<UnboundedSender<String>>,
    /// The `SleepPolicy`s and `SleepSchedule`s as watched, whose status the controller writes.
    pub declarations: Option<Declarations>,
    /// The hosts each Namespace was told it contests with others.
    pub wake_hosts_told: wake_hosts::Told,
    /// The kinds it sleeps (`--kinds`): an ordered wake waits for those of them that follow
    /// the Namespace.
    pub kinds: Vec<TargetKind>,
}

/// `--max-override`'s default.
pub const DEFAULT_MAX_OVERRIDE: TimeDelta = TimeDelta::hours(24);

impl ScalingContext {
    pub fn new(
        client: Client,
        events: Events,
        default_timezone: Tz,
        dry_run: bool,
        metrics: Metrics,
    ) -> Self {
        Self {
            client,
            events,
            default_timezone,
            dry_run,
            metrics,
            grace: None,
            namespaces: NamespaceSchedules::default(),
            reports: None,
            hpas: HpaIndex::listed([]),
            max_override: DEFAULT_MAX_OVERRIDE,
            warm_up: schedule::DEFAULT_WARM_UP,
            step_timeout: wake_order::DEFAULT_STEP_TIMEOUT,
            wake_steps: WakeSteps::default(),
            wake_turns: (WakeTurns::default(), None),
            workloads_listed: None,
            wakes: None,
            declarations: None,
            wake_hosts_told: wake_hosts::Told::default(),
            kinds: TargetKind::defaults().collect(),
        }
    }

    pub fn with_kinds(self, kinds: Vec<TargetKind>) -> Self {
        Self { kinds, ..self }
    }

    /// Writes the status of the `SleepPolicy`s and `SleepSchedule`s in `declarations`.
    pub fn with_declarations(self, declarations: Declarations) -> Self {
        Self {
            declarations: Some(declarations),
            ..self
        }
    }

    /// Tells `wakes` of every Namespace whose workloads are scaled up by its schedule or
    /// override.
    pub fn with_wakes(self, wakes: UnboundedSender<String>) -> Self {
        Self {
            wakes: Some(wakes),
            ..self
        }
    }

    pub fn with_warm_up(self, warm_up: TimeDelta) -> Self {
        Self { warm_up, ..self }
    }

    /// At most `max` Namespaces wake at once (0: any number); `queue` takes their turns.
    pub fn with_wake_turns(self, max: usize, queue: Enqueue<ScalingKey>) -> Self {
        Self {
            wake_turns: (WakeTurns::new(max), Some(queue)),
            ..self
        }
    }

    pub fn with_workloads_listed(self, listed: watch::Receiver<bool>) -> Self {
        Self {
            workloads_listed: Some(listed),
            ..self
        }
    }

    /// Whether every workload kind was listed, so what follows each Namespace's schedule is
    /// known.
    pub fn all_workloads_listed(&self) -> bool {
        self.workloads_listed
            .as_ref()
            .is_none_or(|listed| *listed.borrow())
    }

    pub fn with_step_timeout(self, step_timeout: TimeDelta) -> Self {
        Self {
            step_timeout,
            ..self
        }
    }

    pub fn with_max_override(self, max_override: TimeDelta) -> Self {
        Self {
            max_override,
            ..self
        }
    }

    /// Gathers what Namespaces' transitions did, and has `queue` bring each report back when it
    /// settles.
    pub fn with_reports(self, queue: Enqueue<ScalingKey>) -> Self {
        Self {
            reports: Some((NamespaceReports::default(), queue)),
            ..self
        }
    }

    pub fn with_namespaces(self, namespaces: NamespaceSchedules) -> Self {
        Self { namespaces, ..self }
    }

    /// Takes the targets' HPAs from `hpas` (by default there are none).
    pub fn with_hpas(self, hpas: HpaIndex) -> Self {
        Self { hpas, ..self }
    }

    /// Holds catch-ups that would put objects younger than `period` to sleep, and has `timer`
    /// bring them back when their grace period ends.
    pub fn with_grace(self, period: TimeDelta, timer: Timer) -> Self {
        Self {
            grace: Some((period, timer)),
            ..self
        }
    }
}

/// Applies the schedule of one target at `now`.
pub async fn reconcile(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    if ctx.namespaces.is_excluded(&target.key.namespace) {
        return Ok(());
    }
    let Some(mut observed) = fetch(ctx, target).await? else {
        return Ok(());
    };
    // Overrides of its own that have run out go with the next patch; a namespace's go from the
    // Namespace itself.
    let stale_overrides: Vec<&str> = schedule::expired_keys(&observed.annotations, now)
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    // Another object that drives this one's replicas is its lever: its Foo, or the KEDA
    // ScaledObject that would undo any count written here.
    let lever = observed
        .controlling_foo
        .clone()
        .map(|foo| (TargetKind::Foo, foo))
        .or_else(|| {
            ctx.hpas
                .lever_of(target)
                .map(|so| (TargetKind::ScaledObject, so))
        });
    let inherited;
    (observed.annotations, inherited) = ctx.namespaces.effective(
        target.kind,
        &target.key.namespace,
        &observed.annotations,
        &observed.labels,
        lever.is_some(),
    );
    let annotations = target
        .kind
        .parse(&observed.annotations, ctx.default_timezone)
        .assuming_warm_up(ctx.warm_up);

    if let Some((lever, name)) = &lever {
        if schedule::has_schedule(&observed.annotations) {
            let note = format!(
                "schedule annotations on a {} controlled by {lever} {name:?} are ignored: annotate {lever} {name:?} instead, \
                 so the two controllers never fight over replicas",
                target.kind
            );
            let cause = refused_cause(&observed.annotations);
            warn_once(ctx, target, &observed, "InvalidSchedule", cause, note).await?;
        }
        return Ok(());
    }
    if let Annotations::Invalid(problems) = &annotations {
        let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let note =
            Note::new("no scheduled scaling until the annotations are fixed: ").list(reasons, "; ");
        tracing::warn!(object = %target, %note, "invalid schedule");
        let cause = refused_cause(&observed.annotations);
        warn_once(ctx, target, &observed, "InvalidSchedule", cause, note).await?;
        return Ok(());
    }

    // An override further ahead than --max-override is refused until it comes within reach
    // (the tracker has the timer look then); meanwhile the schedule is followed without it.
    let (annotations, out_of_reach) = schedule::in_reach(annotations, now, ctx.max_override);
    let result = follow(
        ctx,
        target,
        &observed,
        &annotations,
        &stale_overrides,
        inherited,
        out_of_reach.is_none(),
        now,
    )
    .await;
    match (result, out_of_reach) {
        (Ok(()), Some(refused)) => {
            let note = format!(
                "the override is not applied before it comes within reach at {}: {}",
                refused
                    .within_reach
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                refused.problem
            );
            tracing::warn!(object = %target, %note, "invalid schedule");
            let cause = refused_cause(&observed.annotations);
            warn_once(ctx, target, &observed, "InvalidSchedule", cause, note).await?;
            Ok(())
        }
        (result, _) => result,
    }
}

/// The scheduled wake `change` applies, where one of a Namespace's wakes is: not an override,
/// nor the end of one, and something to scale.
fn scheduled_wake(change: &ScaleChange) -> Option<Transition> {
    change
        .applied
        .filter(|due| due.until.is_none() && change.ended.is_none() && change.replicas.is_some())
}

/// Whether the wake `change` applies waits for its Namespace's turn (then it is parked, and the
/// turn brings it back).
fn waits_its_turn(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    change: &ScaleChange,
    now: DateTime<Utc>,
) -> bool {
    let (turns, Some(queue)) = &ctx.wake_turns else {
        return false;
    };
    let Some(due) = scheduled_wake(change).filter(|due| due.direction == Direction::Up) else {
        return false;
    };
    if !turns.limits() {
        return false;
    }
    let namespace = &target.key.namespace;
    match turns.ask(namespace, due, target, now) {
        Ask::Go => false,
        Ask::Parked { first } => {
            if first {
                queue.add(ScalingKey::WakeTurn(namespace.clone()));
            }
            true
        }
    }
}

/// Looks for `namespace`'s turn to wake: lets go of the Namespaces whose wake is over, and when
/// its turn has come, brings back its parked workloads and says how long it waited. When to look
/// again, if its turn has not come.
pub async fn wake_turn(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Option<std::time::Duration>, Error> {
    let (turns, Some(queue)) = &ctx.wake_turns else {
        return Ok(None);
    };
    for (waking, due) in turns.waking() {
        let peers = namespace_peers(ctx, &waking, now).await?;
        if wake_order::is_over(&peers, &due) {
            turns.done(&waking);
        }
    }
    // Some of its workloads awake by this wake already: its turn came before a restart.
    let peers = namespace_peers(ctx, namespace, now).await?;
    let started = turns
        .due_of(namespace)
        .is_some_and(|due| peers.iter().any(|peer| peer.has_applied(&due)));
    let steps = i32::try_from(ctx.namespaces.wake_orders(namespace).len().max(1)).unwrap_or(1);
    match turns.look(namespace, started, ctx.step_timeout * steps, now) {
        Turn::Now { parked, waited } => {
            for target in parked {
                queue.add(ScalingKey::Scale(target));
            }
            if let (Some(waited), false) = (waited, ctx.dry_run) {
                let note = wake_turns::waited_note(waited, turns.max());
                ctx.events
                    .normal(&ctx.namespaces.reference(namespace), "WakeTurn", note)
                    .await;
            }
            Ok(None)
        }
        Turn::Later => Ok(Some(wake_order::LOOK_EVERY.to_std().unwrap_or_default())),
        Turn::Nothing => Ok(None),
    }
}

/// The workloads of `namespace`'s wake, read at most once a second.
async fn namespace_peers(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<std::sync::Arc<Vec<Peer>>, Error> {
    if let Some(peers) = ctx.wake_steps.fresh_peers(namespace, now) {
        return Ok(peers);
    }
    let read = wake_order::peers::read(&ctx.client, &ctx.namespaces, &ctx.kinds, namespace)
        .await
        .map_err(Error::api(
            "reading the workloads of",
            "Namespace",
            &ObjectKey::new(namespace, namespace),
        ))?;
    Ok(ctx.wake_steps.keep_peers(namespace, read, now))
}

/// Whether `change`, a step of its Namespace's ordered wake or sleep, waits for the steps
/// before it (then the timer looks again). A step that goes on after the timeout says so, once,
/// on the Namespace.
async fn held_in_order(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    change: &ScaleChange,
    now: DateTime<Utc>,
) -> Result<bool, Error> {
    let Some(due) = scheduled_wake(change) else {
        return Ok(false);
    };
    let Some((_, timer)) = &ctx.grace else {
        return Ok(false);
    };
    let namespace = &target.key.namespace;
    let recheck = |at| timer.recheck_at(target.clone(), at);
    // Until every kind is listed, a step before this one may not be known yet.
    if !ctx.all_workloads_listed() {
        recheck(now + wake_order::LOOK_EVERY);
        return Ok(true);
    }
    let order = wake_order::order_of(target.kind, &observed.annotations);
    if !wake_order::has_step_before(&ctx.namespaces.wake_orders(namespace), order, due.direction) {
        return Ok(false);
    }
    let peers = namespace_peers(ctx, namespace, now).await?;
    let held_since = ctx.wake_steps.held_since(namespace, due, order, now);
    let gate = wake_order::gate(order, &due, &peers, held_since, ctx.step_timeout, now);
    if !matches!(gate, Gate::Wait(_)) {
        ctx.wake_steps.let_go(namespace, due, order);
    }
    match gate {
        Gate::Go => Ok(false),
        Gate::Wait(at) => {
            tracing::debug!(object = %target, %at, "held by the steps before it");
            recheck(at);
            Ok(true)
        }
        Gate::GoAnyway { late } => {
            if ctx.wake_steps.first_told(namespace, due, order) && !ctx.dry_run {
                let note = wake_order::timed_out_note(&late, due.direction, now - held_since);
                tracing::warn!(namespace, %note, "wake step timed out");
                ctx.events
                    .warning(
                        &ctx.namespaces.reference(namespace),
                        "WakeStepTimedOut",
                        note,
                    )
                    .await;
            }
            Ok(false)
        }
    }
}

/// Applies what `annotations` say at `now` to a target that may be scaled. `warn_reverted`:
/// whether a change of replicas by someone else may be warned about (not while another
/// warning holds the object's one `warned`).
#[allow(clippy::too_many_arguments)]
async fn follow(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    annotations: &Annotations,
    stale_overrides: &[&str],
    inherited: bool,
    warn_reverted: bool,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    if let (Annotations::Scheduled(schedule, recorded), Some((period, timer))) =
        (annotations, &ctx.grace)
        && let Some(until) = held_back_until(schedule, recorded, observed.created, *period, now)
    {
        tracing::info!(object = %target, %until, "new: the catch-up scale-down waits for the end of its grace period");
        timer.recheck_at(target.clone(), until);
        return Ok(());
    }
    match schedule::decide(annotations, observed.replicas, now) {
        Some(change) => {
            if inherited
                && (waits_its_turn(ctx, target, &change, now)
                    || held_in_order(ctx, target, observed, &change, now).await?)
            {
                return Ok(());
            }
            let result = apply(
                ctx,
                target,
                observed,
                annotations,
                &change,
                stale_overrides,
                now,
            )
            .await;
            if inherited {
                tally(ctx, target, annotations, &change, &result);
                let woke = change.replicas.is_some()
                    && change
                        .applied
                        .is_some_and(|transition| transition.direction == Direction::Up);
                if let (Some(wakes), true, true) =
                    (&ctx.wakes, woke, result.is_ok() && !ctx.dry_run)
                {
                    // Nobody listening any more only means nobody measures.
                    let _ = wakes.send(target.key.namespace.clone());
                }
            }
            result
        }
        None => {
            remove_stale_overrides(ctx, target, observed, stale_overrides).await?;
            let reverted_now =
                warn_reverted && warn_if_reverted(ctx, target, observed, annotations).await?;
            let taken_over = reverted_now
                || matches!(annotations, Annotations::Scheduled(_, recorded)
                    if schedule::taken_over(&observed.annotations, recorded));
            hpa::bring_in_line(ctx, target, annotations, taken_over).await
        }
    }
}

/// Says a warning unless its cause is already written on the object, then writes the cause,
/// so each is said once per cause across restarts and failovers. A warning whose Event the
/// server refused is not written, so the next look says it again; should the write fail
/// after the Event, the retry says it twice, which is better than never. A dry run writes
/// nothing, so there a warning may be said again after a restart. True when the warning
/// stands said, now or before.
async fn warn_once(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    reason: &str,
    cause: String,
    note: impl Into<Note>,
) -> Result<bool, Error> {
    if already_warned(&observed.annotations, &cause) {
        return Ok(true);
    }
    if !ctx.events.warning(&observed.reference, reason, note).await {
        // Not said: not marked either, so the next look says it again.
        return Ok(false);
    }
    if !ctx.dry_run {
        let patch = json!({ "metadata": { "annotations": { schedule::WARNED: cause } } });
        match patch_target(&ctx.client, target, &patch).await {
            Ok(()) => {}
            // Deleted since the read: nobody left to tell.
            Err(error) if is_status(&error, 404) => return Ok(false),
            Err(error) => {
                return Err(Error::api(
                    "record a warning on",
                    target.kind.as_str(),
                    &target.key,
                )(error));
            }
        }
    }
    Ok(true)
}

async fn fetch(ctx: &ScalingContext, target: &ScaleTarget) -> Result<Option<TargetState>, Error> {
    read_target(&ctx.client, target).await.map_err(Error::api(
        "get",
        target.kind.as_str(),
        &target.key,
    ))
}

/// A target as the scaler sees it, whatever its kind; `None` when it is gone.
pub async fn read_target(
    client: &Client,
    target: &ScaleTarget,
) -> Result<Option<TargetState>, kube::Error> {
    let object = objects_of(client, target).get_opt(&target.key.name).await?;
    Ok(object.map(|object| TargetState::of_object(target.kind, &object)))
}

/// The API of a target's kind in its Namespace.
fn objects_of(client: &Client, target: &ScaleTarget) -> Api<DynamicObject> {
    objects::api(client, target.kind, Some(&target.key.namespace))
}

/// The merge patch that makes `change`, if any (replicas and the controller's annotations), and
/// removes the annotations `removed` (overrides that have ended), in one request guarded by the
/// resourceVersion of `observed`, the object the decision was made on.
pub fn patch_for(
    kind: TargetKind,
    change: Option<&ScaleChange>,
    removed: &[&str],
    observed: &TargetState,
) -> Value {
    let mut annotations: serde_json::Map<String, Value> = change
        .map(ScaleChange::annotation_updates)
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| kind.written(key, value, observed.held.as_deref()))
        .map(|(key, value)| (key.to_string(), value.map_or(Value::Null, Value::String)))
        .collect();
    annotations.extend(removed.iter().map(|key| (key.to_string(), Value::Null)));
    let mut spec = None;
    if let Some(replicas) = change.and_then(|change| change.replicas) {
        match kind.write(replicas, &observed.annotations) {
            SleepWrite::Spec(change) => spec = Some(change),
            SleepWrite::Annotation(key, value) => {
                annotations.insert(key.to_string(), value);
            }
        }
    }
    let mut patch = json!({ "metadata": { "annotations": annotations } });
    if let Some(resource_version) = &observed.resource_version {
        patch["metadata"]["resourceVersion"] = json!(resource_version);
    }
    if let Some(spec) = spec {
        patch["spec"] = spec;
    }
    patch
}

/// The Event that tells a user what a change did: reason and note.
pub fn describe_change(
    kind: TargetKind,
    change: &ScaleChange,
    from: i32,
    annotations: &Annotations,
    set_by: Option<&str>,
    now: DateTime<Utc>,
) -> (&'static str, String) {
    match (change.applied, change.ended) {
        (Some(applied), _) if applied.until.is_some() => {
            let (was, now) = amounts(kind, from, change.replicas.unwrap_or(from));
            let what = match (applied.direction, change.replicas) {
                (Direction::Up, Some(_)) => format!("scaled up from {was} to {now}"),
                (Direction::Down, Some(_)) => format!("scaled down from {was} to {now}"),
                (_, None) => format!("already at {}, nothing to change,", kind.amount(from)),
            };
            on_demand::describe_applied(&applied, set_by, what)
        }
        (applied, Some(ended)) => {
            let then = match applied {
                Some(_) => describe_scheduled(kind, change, from, annotations, now).1,
                None => format!(
                    "no transition of the schedule is in force, replicas left at {}",
                    kind.amount(from)
                ),
            };
            (
                "OverrideExpired",
                format!(
                    "the override {} has ended; the schedule applies again: {then}",
                    on_demand::describe(&ended, set_by)
                ),
            )
        }
        _ => describe_scheduled(kind, change, from, annotations, now),
    }
}

/// Replica counts read "from 3 to 0 replicas"; an on-off kind's "from running to suspended".
fn amounts(kind: TargetKind, from: i32, to: i32) -> (String, String) {
    if kind.is_on_off() {
        (kind.amount(from), kind.amount(to))
    } else {
        (from.to_string(), kind.amount(to))
    }
}

/// The reason of a transition applied to an object already where it puts it: recorded, and
/// told, but never as a scale that did not happen.
const SCHEDULE_FOLLOWED: &str = "ScheduleFollowed";

fn describe_scheduled(
    kind: TargetKind,
    change: &ScaleChange,
    from: i32,
    annotations: &Annotations,
    acting_at: DateTime<Utc>,
) -> (&'static str, String) {
    let (was, now) = amounts(kind, from, change.replicas.unwrap_or(from));
    let found = if kind.is_on_off() {
        kind.amount(from)
    } else {
        format!("at {}", kind.amount(from))
    };
    match change.applied {
        Some(transition) => {
            let cron = match annotations {
                Annotations::Scheduled(schedule, _) => describe_cron(schedule, transition),
                _ => String::new(),
            };
            let mut at = transition
                .at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            if transition.at > acting_at {
                let early = spoken(transition.at - acting_at);
                at = format!("{at} ({READY_BY}: {early} early, to be ready by then)");
            }
            match (transition.direction, change.replicas) {
                (Direction::Down, Some(_)) => (
                    "ScaledDown",
                    format!("scaled down from {was} to {now} by {cron} at {at}"),
                ),
                (Direction::Up, Some(_)) => (
                    "ScaledUp",
                    format!("scaled up from {was} to {now} by {cron} at {at}"),
                ),
                (Direction::Down, None) => (
                    SCHEDULE_FOLLOWED,
                    format!("scale-down by {cron} at {at}: already {found}, nothing to change"),
                ),
                (Direction::Up, None) if has_up_target(annotations) => (
                    SCHEDULE_FOLLOWED,
                    format!("scale-up by {cron} at {at}: already {found}, nothing to change"),
                ),
                (Direction::Up, None) if kind.is_on_off() => (
                    SCHEDULE_FOLLOWED,
                    format!(
                        "scale-up by {cron} at {at}: it was {asleep} before the scale-down, so it \
                         stays {asleep}",
                        asleep = kind.amount(0)
                    ),
                ),
                (Direction::Up, None) => (
                    SCHEDULE_FOLLOWED,
                    format!(
                        "scale-up by {cron} at {at}: no {} and no remembered {}, replicas left at {from}",
                        schedule::UP_REPLICAS,
                        schedule::ORIGINAL_REPLICAS
                    ),
                ),
            }
        }
        None => (
            "ScheduleRemoved",
            format!(
                "schedule annotations removed: {}",
                change
                    .cleanup
                    .map(|cleanup| cleanup.describe(from))
                    .unwrap_or_default()
            ),
        ),
    }
}

fn has_up_target(annotations: &Annotations) -> bool {
    matches!(annotations, Annotations::Scheduled(schedule, recorded)
        if schedule.up_replicas.is_some() || recorded.original_replicas.is_some())
}

fn describe_cron(schedule: &Schedule, transition: Transition) -> String {
    let (key, value) = schedule.rule_of(transition.direction).unwrap_or_default();
    format!("{key} {value:?} ({})", schedule.timezone)
}

/// Who set the override a change applies or ends: the object's own annotation's manager, or
/// the Namespace's.
fn override_setter(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    change: &ScaleChange,
) -> Option<String> {
    let transition = change
        .applied
        .filter(|applied| applied.until.is_some())
        .or(change.ended)?;
    let key = schedule::key_of(transition.direction);
    on_demand::setter(&observed.managed_fields, key)
        .or_else(|| ctx.namespaces.setter_of(&target.key.namespace))
}

/// Removes the object's own overrides that have run out, when nothing else is due: guarded by
/// the resourceVersion they were read at, so one set anew meanwhile stays.
async fn remove_stale_overrides(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    stale: &[&str],
) -> Result<(), Error> {
    if stale.is_empty() || ctx.dry_run {
        return Ok(());
    }
    let patch = patch_for(target.kind, None, stale, observed);
    match patch_target(&ctx.client, target, &patch).await {
        Ok(()) => Ok(()),
        // Deleted since the read: nothing left to clean. Changed since the read (409) fails,
        // so the key comes back with backoff: nothing else may look at it again, and an ended
        // override left behind shadows every later override of its Namespace.
        Err(error) if is_status(&error, 404) => Ok(()),
        Err(error) => Err(Error::api(
            "remove an ended override from",
            target.kind.as_str(),
            &target.key,
        )(error)),
    }
}

async fn apply(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    annotations: &Annotations,
    change: &ScaleChange,
    stale_overrides: &[&str],
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let set_by = override_setter(ctx, target, observed, change);
    let (reason, note) = describe_change(
        target.kind,
        change,
        observed.replicas,
        annotations,
        set_by.as_deref(),
        now,
    );
    let direction = match change.applied.map(|transition| transition.direction) {
        Some(Direction::Down) => ScaleDirection::Down,
        Some(Direction::Up) => ScaleDirection::Up,
        None => ScaleDirection::Restore,
    };
    let bounds = hpa::wanted(annotations, Some(change), false);
    // Holds go after the workload's patch, releases before it. An HPA held first could scale
    // the workload to down-replicas before that patch, which would then find nothing to take
    // and record no original-replicas. An HPA released first leaves, should the workload's
    // patch fail or the process stop, a scale-up still due, so it is retried; released after,
    // it could stay held all day with nothing due to look at it again.
    let (holds, releases): (Vec<_>, Vec<_>) =
        hpa::changes_for(&ctx.hpas.of(target), bounds, change.applied.is_some())
            .into_iter()
            .partition(|(change, _)| matches!(change, HpaChange::Hold { .. }));
    let note = [&releases, &holds]
        .into_iter()
        .flatten()
        .fold(note, |note, (change, _)| {
            format!("{note}; {}", change.describe())
        });
    if ctx.dry_run {
        tracing::info!(object = %target, reason, %note, "dry run: not applied");
        ctx.metrics
            .scale_action(target.kind.as_str(), direction, Outcome::DryRun);
        hpa::make_changes(ctx, &releases, direction).await?;
        hpa::make_changes(ctx, &holds, direction).await?;
        ctx.events
            .normal(
                &observed.reference,
                reason,
                format!("dry run, nothing changed: {note}"),
            )
            .await;
        return Ok(());
    }
    hpa::make_changes(ctx, &releases, direction).await?;
    let superseded = change
        .annotation_updates()
        .into_iter()
        .filter_map(|(key, _)| ctx.namespaces.superseded_by(target.kind, key));
    let removed: Vec<&str> = stale_overrides.iter().copied().chain(superseded).collect();
    let patch = patch_for(target.kind, Some(change), &removed, observed);
    let result = patch_target(&ctx.client, target, &patch).await;
    match result {
        Ok(()) => {
            tracing::info!(object = %target, reason, %note, "applied schedule");
            ctx.metrics
                .scale_action(target.kind.as_str(), direction, Outcome::Success);
            if let Some(transition) = change.applied {
                let late = (now - transition.at).to_std().unwrap_or_default();
                ctx.metrics.transition_lateness.observe(late.as_secs_f64());
            }
            // The workload is scaled whatever becomes of the holds: the Event says so, and a
            // hold that failed is retried (the next look brings the HPA in line).
            let held = hpa::make_changes(ctx, &holds, direction).await;
            let note = match &held {
                Ok(()) => note,
                // The error itself goes to the log, with the retry.
                Err(_) => format!("{note}: failed for now, retried"),
            };
            ctx.events.normal(&observed.reference, reason, note).await;
            held
        }
        // Deleted since the read: nothing left to scale.
        Err(error) if is_status(&error, 404) => Ok(()),
        Err(error) => {
            ctx.metrics
                .scale_action(target.kind.as_str(), direction, Outcome::Error);
            Err(Error::api("scale", target.kind.as_str(), &target.key)(
                error,
            ))
        }
    }
}

/// Records what a Namespace's transition did to one of its workloads, for the Namespace's
/// report: a change of replicas, or a failure.
fn tally(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    annotations: &Annotations,
    change: &ScaleChange,
    result: &Result<(), Error>,
) {
    let (Some((reports, queue)), Some(transition), Annotations::Scheduled(schedule, _)) =
        (&ctx.reports, change.applied, annotations)
    else {
        return;
    };
    if ctx.dry_run {
        return;
    }
    let namespace = &target.key.namespace;
    let object = format!("{} {}", target.kind, target.key.name);
    let outcome = match (result, change.replicas) {
        (Err(error), _) => WorkloadOutcome::Failed(error.to_string()),
        (Ok(()), Some(_)) => WorkloadOutcome::Changed,
        (Ok(()), None) => WorkloadOutcome::Unchanged,
    };
    // Each workload applies a namespace's override at its own instant: one report gathers
    // them all, by the override's end.
    let (transition, by) = match transition.until {
        Some(until) => (
            Transition {
                at: until,
                ..transition
            },
            on_demand::describe(&transition, ctx.namespaces.setter_of(namespace).as_deref()),
        ),
        None => {
            let cron = describe_cron(schedule, transition);
            // A schedule from a SleepPolicy or SleepSchedule says which.
            let by = match ctx.namespaces.governed_by(namespace) {
                Some(source) if source != "Namespace" => format!("{cron} from {source}"),
                _ => cron,
            };
            (transition, by)
        }
    };
    if reports.record(namespace, transition, &by, object, outcome, Instant::now()) {
        queue.add_after(
            ScalingKey::NamespaceReport(namespace.clone(), transition),
            QUIET,
        );
    }
}

/// Tells on a Namespace what its transition did, once the workloads' outcomes have settled;
/// until then the report is put back for later.
pub async fn report_namespace(
    ctx: &ScalingContext,
    namespace: &str,
    transition: Transition,
    now: DateTime<Utc>,
) -> Settled {
    let Some((reports, _)) = &ctx.reports else {
        return Settled::Gone;
    };
    // An ordered wake or sleep is told whole, once its held steps have gone on.
    if ctx.wake_steps.holds(namespace, transition, now) {
        return Settled::Wait;
    }
    let settled = reports.settle(namespace, transition, Instant::now());
    if let Settled::Report(tally) = &settled {
        let (reason, note) = describe(tally, transition);
        tracing::info!(namespace, reason, %note, "namespace transition");
        ctx.events
            .normal(&ctx.namespaces.reference(namespace), reason, note)
            .await;
    }
    settled
}

/// Sends a merge patch to a scale target, as field manager `cronscaler`.
pub async fn patch_target(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
) -> Result<(), kube::Error> {
    patch_target_as(client, target, patch, CONTROLLER_NAME).await
}

/// `patch_target` under another field manager: `cronscaler wake` and `sleep`, who asked.
pub async fn patch_target_as(
    client: &Client,
    target: &ScaleTarget,
    patch: &Value,
    field_manager: &str,
) -> Result<(), kube::Error> {
    let params = PatchParams {
        field_manager: Some(field_manager.into()),
        ..PatchParams::default()
    };
    objects_of(client, target)
        .patch(&target.key.name, &params, &Patch::Merge(patch))
        .await
        .map(drop)
}

/// Who last set `spec.replicas` (a CronJob's `spec.suspend`), other than this controller, from
/// `managedFields`.
pub fn replicas_changed_by(
    kind: TargetKind,
    managed_fields: &[ManagedFieldsEntry],
) -> Option<String> {
    other_replicas_writers(kind, managed_fields)
        .max_by_key(|entry| entry.time.as_ref().map(|time| time.0))
        .map(|entry| {
            let manager = entry
                .manager
                .clone()
                .unwrap_or_else(|| "an unnamed client".into());
            match entry.subresource.as_deref() {
                Some(subresource) if !subresource.is_empty() => {
                    format!("{manager} (through /{subresource})")
                }
                _ => manager,
            }
        })
}

/// The `managedFields` entries of those who set `spec.replicas` (a CronJob's `spec.suspend`),
/// other than this controller.
pub fn other_replicas_writers(
    kind: TargetKind,
    managed_fields: &[ManagedFieldsEntry],
) -> impl Iterator<Item = &ManagedFieldsEntry> {
    managed_fields
        .iter()
        .filter(|entry| entry.manager.as_deref() != Some(CONTROLLER_NAME))
        .filter(move |entry| {
            entry.fields_v1.as_ref().is_some_and(|fields| {
                kind.managed_field()
                    .iter()
                    .try_fold(&fields.0, |fields, step| fields.get(step))
                    .is_some()
            })
        })
}

/// Warns that someone else changed the replicas the transition in force set; true when that
/// warning stands said.
async fn warn_if_reverted(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    observed: &TargetState,
    annotations: &Annotations,
) -> Result<bool, Error> {
    let Some((transition, set)) = reverted(annotations, observed.replicas) else {
        return Ok(false);
    };
    if hpa::changed_by_its_hpa(&ctx.hpas.of(target), target.kind, &observed.managed_fields) {
        return Ok(false);
    }
    let who = replicas_changed_by(target.kind, &observed.managed_fields)
        .unwrap_or_else(|| "someone".into());
    let note = format!(
        "replicas changed from {set} to {} by {who} after the scheduled scale-{} at {}; left alone until the next transition",
        observed.replicas,
        transition.direction,
        transition
            .at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    tracing::info!(object = %target, %note, "scale reverted");
    let cause = reverted_cause(transition);
    warn_once(ctx, target, observed, "ScaleReverted", cause, note).await
}

#[cfg(test)]
mod tests;
