//! The first part of a look: everything the plan needs, read once. The object itself, the
//! schedule it follows (its own over its Namespace's), its HPAs, who set its Namespace's
//! override, and, for a scheduled wake or sleep of a Namespace, where the Namespace's turns and
//! ordered steps stand.

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, TimeDelta, Utc};

use crate::{
    error::Error,
    runtime::key::ObjectKey,
    scaling::{
        gitops::{self, Owner, owner::OwnerState, standing::GitOps},
        hpa::Hpa,
        transitions::order::{self, Peer},
        transitions::turns::Ask,
    },
    schedule::{
        self, Annotations, Direction, GitOpsMode, OutOfReach, ScaleChange, Transition, gitops_mode,
        held_back_until,
    },
    workloads::{
        kinds::Sleep,
        target::{ScaleTarget, ScheduleSource, TargetKind, TargetState, levered},
    },
};

use super::ScalingContext;
use crate::workloads::patch::read_target;

/// What one look found.
#[derive(Debug, Clone)]
pub struct Observed {
    pub target: ScaleTarget,
    /// The object as read, with the annotations the rules read: its own over its Namespace's.
    pub object: TargetState,
    /// Overrides of its own that have run out: they go with the next patch (a Namespace's go
    /// from the Namespace itself).
    pub stale_overrides: Vec<String>,
    /// It follows its Namespace's schedule.
    pub inherited: bool,
    /// Another object that drives its replicas: its Foo, or the KEDA ScaledObject that would
    /// undo any count written here.
    pub lever: Option<(TargetKind, String)>,
    /// The lever it sleeps through (a ScaledObject, by its row), as read: its sleep value is
    /// the object's (`object.replicas`, `object.held`), and the lever is what is written.
    pub lever_object: Option<(ScaleTarget, TargetState)>,
    /// The kind whose row says how it sleeps: its own, or its lever's.
    pub sleeps_as: TargetKind,
    /// The count of the workload its lever (itself, or the one it sleeps through) scales, read
    /// while the lever's controller holds it at whatever count it has (KEDA's `paused`).
    pub held_at: Option<i32>,
    /// Some of it came from what the watches delivered, which may be behind.
    pub from_watch: bool,
    /// The schedule, without an override reaching further than `--max-override`.
    pub annotations: Annotations,
    /// That override, refused until it comes within reach.
    pub out_of_reach: Option<OutOfReach>,
    pub hpas: Vec<Hpa>,
    /// Who set its Namespace's override, and where its Namespace's schedule comes from.
    pub namespace_setter: Option<String>,
    pub governed_by: Option<String>,
    /// Its kube-downscaler records count as ours, so a record of ours supersedes theirs.
    pub supersedes_kube_downscaler: bool,
    /// Where its Namespace's turns and steps stand for the transition due.
    pub namespace: NamespaceWake,
    /// The GitOps tool that deploys it, if one does.
    pub gitops: Option<GitOps>,
    /// How many of the Pods its sleep stops run on each node, read only where a plan asks
    /// (`Plan::reads_pods`); `None`: not read.
    pub pods_on: Option<BTreeMap<String, u32>>,
}

/// Where a Namespace's scheduled wake or sleep stands, as far as one of its workloads goes.
#[derive(Debug, Clone, PartialEq)]
pub enum NamespaceWake {
    /// Nothing holds it: no turns, no steps before it.
    Free,
    /// Its Namespace waits for its turn to wake; it is parked with it. `first`: the Namespace
    /// has just started waiting.
    Parked { first: bool },
    /// Not every kind was listed yet: a step before it may not be known.
    Unknown,
    /// Its step of an ordered wake or sleep, among its Namespace's workloads, held since then.
    Step {
        due: Transition,
        order: i32,
        peers: Arc<Vec<Peer>>,
        held_since: DateTime<Utc>,
    },
}

/// Where a look takes objects from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// As their watches last delivered them, where they are kept; else read.
    Watched,
    /// Read now.
    Read,
}

/// An object as `source` has it, and whether it came from the watch; `None` when it is gone.
async fn take(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    source: Source,
) -> Result<(Option<TargetState>, bool), Error> {
    if let (Source::Watched, Some(seen)) = (source, ctx.last_seen.get(target)) {
        return Ok((Some(seen), true));
    }
    let read = read_target(&ctx.client, target).await.map_err(Error::api(
        "get",
        target.kind.as_str(),
        &target.key,
    ))?;
    Ok((read, false))
}

/// Gathers what a look at `target` needs at `now`, from `source`; `None` when it is gone or
/// its Namespace is left out.
pub async fn observe(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    source: Source,
    now: DateTime<Utc>,
) -> Result<Option<Observed>, Error> {
    if ctx.namespaces.is_excluded(&target.key.namespace) {
        return Ok(None);
    }
    let (read, mut from_watch) = take(ctx, target, source).await?;
    let Some(mut object) = read else {
        return Ok(None);
    };
    let stale_overrides = schedule::expired_keys(&object.annotations, now)
        .into_iter()
        .map(|(key, _)| key.to_string())
        .collect();
    let driver = object.driver(ctx.hpas.lever_of(target));
    let lever = (driver.as_ref()).map(|driver| (driver.kind, driver.name.clone()));
    let lever_object = match &lever {
        Some((kind, name)) if kind.spec().levers.is_some() => {
            let lever = ScaleTarget {
                kind: *kind,
                key: ObjectKey::new(&target.key.namespace, name),
            };
            let (read, watched) = take(ctx, &lever, source).await?;
            from_watch |= watched;
            read.map(|state| (lever, state))
        }
        _ => None,
    };
    let held_at = match &lever_object {
        Some((lever, state)) => held_at(ctx, lever, state).await?,
        None => held_at(ctx, target, &object).await?,
    };
    let sleeps_as = match &lever_object {
        Some((lever, state)) => {
            object.replicas = state.replicas;
            object.held.clone_from(&state.held);
            lever.kind
        }
        None => target.kind,
    };
    // Read before the effective annotations replace its own: they keep only the schedule's.
    let claim = gitops::owner::claim(&object.annotations, &object.labels);
    let (effective, inherited) = ctx.namespaces.effective(
        target.kind,
        &target.key.namespace,
        &ScheduleSource::of(&object, driver),
    );
    object.annotations = effective;
    let parsed = sleeps_as
        .parse(&object.annotations, ctx.default_timezone)
        .assuming_warm_up(ctx.warm_up);
    let (annotations, out_of_reach) = schedule::in_reach(parsed, now, ctx.max_override);
    let namespace = &target.key.namespace;
    // A lever's HPA is its controller's, never written here.
    let hpas = match &lever {
        Some(_) => Vec::new(),
        None => ctx.hpas.of(target),
    };
    let super::GitOpsOwners {
        owners,
        default_mode,
        ..
    } = &ctx.gitops;
    let gitops = GitOps::of(
        owners,
        target,
        claim,
        &object.annotations,
        *default_mode,
        sleeps_as.spec().sleep.manifest_field(),
    )
    .map(|mut gitops| {
        if gitops.mode == GitOpsMode::Pause && gitops.confirmed {
            gitops.shared_with = (gitops.state.as_ref())
                .and_then(|state| shared_with(ctx, &gitops.owner, state, namespace));
        }
        gitops
    });
    let mut observed = Observed {
        target: target.clone(),
        object,
        stale_overrides,
        inherited,
        lever,
        lever_object,
        sleeps_as,
        held_at,
        from_watch,
        annotations,
        out_of_reach,
        hpas,
        namespace_setter: ctx.namespaces.setter_of(namespace),
        governed_by: ctx.namespaces.governed_by(namespace),
        supersedes_kube_downscaler: ctx.namespaces.supersedes_kube_downscaler(target.kind),
        namespace: NamespaceWake::Free,
        gitops,
        pods_on: None,
    };
    observed.namespace = namespace_wake(ctx, &observed, now).await?;
    Ok(Some(observed))
}

/// The count of the workload `lever` scales, while `lever`'s controller holds it at whatever
/// count it has (its row's `holds` annotation `"true"`): one read of it, only then.
async fn held_at(
    ctx: &ScalingContext,
    lever: &ScaleTarget,
    state: &TargetState,
) -> Result<Option<i32>, Error> {
    let Sleep::Annotation {
        holds: Some(holds), ..
    } = lever.kind.spec().sleep
    else {
        return Ok(None);
    };
    let held = state.annotations.get(holds).map(String::as_str) == Some("true");
    let Some(workload) = levered(lever, state).filter(|_| held) else {
        return Ok(None);
    };
    let read = read_target(&ctx.client, &workload)
        .await
        .map_err(Error::api(
            "reading",
            workload.kind.spec().name,
            &workload.key,
        ))?;
    Ok(read.map(|state| state.replicas))
}

/// The change the plan will make, as far as what to read for it goes: none while a new
/// object's grace period holds it.
fn due_change(
    ctx: &ScalingContext,
    observed: &Observed,
    now: DateTime<Utc>,
) -> Option<ScaleChange> {
    let grace = ctx.grace.as_ref().map(|(period, _)| *period);
    if held_back(observed, grace, now).is_some() {
        return None;
    }
    schedule::decide(&observed.annotations, observed.object.replicas, now)
}

/// Until when a new object's grace period (`grace`, if any) holds back the catch-up that would
/// put it to sleep.
pub fn held_back(
    observed: &Observed,
    grace: Option<TimeDelta>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let Annotations::Scheduled(schedule, recorded) = &observed.annotations else {
        return None;
    };
    held_back_until(schedule, recorded, observed.object.created, grace?, now)
}

/// Where the Namespace's wake or sleep that `observed` follows stands: its turn asked for (a
/// wake that must wait is parked, and the turn brings it back), or the steps before it read (at
/// most once a second per Namespace).
async fn namespace_wake(
    ctx: &ScalingContext,
    observed: &Observed,
    now: DateTime<Utc>,
) -> Result<NamespaceWake, Error> {
    if !observed.inherited
        || observed.lever.is_some()
        || matches!(observed.annotations, Annotations::Invalid(_))
    {
        return Ok(NamespaceWake::Free);
    }
    let Some(due) = due_change(ctx, observed, now)
        .as_ref()
        .and_then(ScaleChange::scheduled)
    else {
        return Ok(NamespaceWake::Free);
    };
    let target = &observed.target;
    let namespace = &target.key.namespace;
    if let (turns, Some(_)) = &ctx.transitions.turns
        && due.direction == Direction::Up
        && turns.limits()
        && let Ask::Parked { first } = turns.ask(namespace, due, target, now)
    {
        return Ok(NamespaceWake::Parked { first });
    }
    if ctx.grace.is_none() {
        return Ok(NamespaceWake::Free);
    }
    if !ctx.transitions.all_workloads_listed() {
        return Ok(NamespaceWake::Unknown);
    }
    let order = order::order_of(target.kind, &observed.object.annotations);
    if !order::has_step_before(&ctx.namespaces.wake_orders(namespace), order, due.direction) {
        return Ok(NamespaceWake::Free);
    }
    let peers = namespace_peers(ctx, namespace, now).await?;
    let held_since = ctx.transitions.steps.held_since(namespace, due, order, now);
    Ok(NamespaceWake::Step {
        due,
        order,
        peers,
        held_since,
    })
}

/// The workloads of `namespace`'s wake, read at most once a second.
pub async fn namespace_peers(
    ctx: &ScalingContext,
    namespace: &str,
    now: DateTime<Utc>,
) -> Result<Arc<Vec<Peer>>, Error> {
    if let Some(peers) = ctx.transitions.steps.fresh_peers(namespace, now) {
        return Ok(peers);
    }
    let read = order::peers::read(&ctx.client, &ctx.namespaces, &ctx.kinds.now(), namespace)
        .await
        .map_err(Error::api(
            "reading the workloads of",
            "Namespace",
            &ObjectKey::new(namespace, namespace),
        ))?;
    Ok(ctx.transitions.steps.keep_peers(namespace, read, now))
}

/// The first Namespace but `own` that `owner` deploys to, as its controller says, where no
/// workload it deploys sleeps under `pause`: a pause of the owner would stop its deploys there
/// too. `own` sleeps so by the workload looked at.
pub fn shared_with(
    ctx: &ScalingContext,
    owner: &Owner,
    state: &OwnerState,
    own: &str,
) -> Option<String> {
    (state.inventory.namespaces().into_iter())
        .filter(|namespace| *namespace != own)
        .find(|namespace| {
            !(ctx.last_seen.in_namespace(namespace).iter())
                .any(|(target, seen)| keeps_paused(ctx, owner, target, seen))
        })
        .map(String::from)
}

/// Whether a workload `seen` of `target` keeps `owner` paused through its nights: the owner's
/// controller lists it, and it sleeps under `pause`.
pub fn keeps_paused(
    ctx: &ScalingContext,
    owner: &Owner,
    target: &ScaleTarget,
    seen: &TargetState,
) -> bool {
    let deployer = ctx
        .gitops
        .owners
        .deployer_of(target, &seen.annotations, &seen.labels);
    deployer.as_ref() == Some(owner) && sleeps_under_pause(ctx, target, seen)
}

/// Whether a workload `seen` of `target` sleeps under `pause`: it has a schedule (its own, or
/// its Namespace's), and `pause` is its mode.
fn sleeps_under_pause(ctx: &ScalingContext, target: &ScaleTarget, seen: &TargetState) -> bool {
    let (effective, _) = ctx.effective(target, seen);
    matches!(
        target.kind.parse(&effective, ctx.default_timezone),
        Annotations::Scheduled(..)
    ) && gitops_mode(&effective, ctx.gitops.default_mode) == GitOpsMode::Pause
}
