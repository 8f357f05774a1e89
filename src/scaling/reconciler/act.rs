//! The last part of a look: makes the writes of its [`Plan`], in order, and nothing it does not
//! say. What a failure stops is returned, for the key to be retried; a dry run makes none of
//! the writes and tells what they would have been.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::{
    error::Error,
    ops::metrics::{Outcome, ScaleDirection},
    runtime::{api_errors::is_status, events::Note, key::ObjectKey},
    scaling::{
        gitops::pause::OwnerWrite,
        hpa::{self, GuardedChange, HpaChange},
        key::ScalingKey,
        transitions::{
            reports::{QUIET, WorkloadOutcome},
            turns,
        },
    },
    schedule,
    workloads::{
        patch::patch_target,
        target::{ScaleTarget, TargetState},
    },
};

use super::{
    ScalingContext,
    plan::{LeverWrite, Plan, Step, Tally, TargetPatch, Warning},
};

/// How long after a wake its paused owner is looked at: the watch delivers the workload's new
/// state well within it.
const OWNER_LOOK_DELAY: Duration = Duration::from_secs(3);

/// Makes the writes of `plan`, decided on `object`, the object of `target` as observed.
pub async fn act(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    object: &TargetState,
    plan: Plan,
) -> Result<(), Error> {
    if let (Some(at), Some((_, timer))) = (plan.recheck, &ctx.grace) {
        tracing::debug!(object = %target, %at, "looked at again then");
        timer.recheck_at(target.clone(), at);
    }
    if plan.look_for_turn
        && let (_, Some(queue)) = &ctx.transitions.turns
    {
        queue.add_after(
            ScalingKey::WakeTurn(target.key.namespace.clone()),
            turns::GATHER.to_std().unwrap_or_default(),
        );
    }
    if let Some(step) = &plan.step {
        tell_step(ctx, &target.key.namespace, step).await;
    }
    let written = write(ctx, target, object, &plan).await;
    if let (Some(owner), true, Some(queue)) =
        (&plan.owner_look, written.is_ok(), &ctx.gitops.releases)
    {
        // Once the watch has delivered this wake, which the look counts on.
        queue.add_after(ScalingKey::GitOpsOwner(owner.clone()), OWNER_LOOK_DELAY);
    }
    if written.as_ref().is_err_and(Error::is_conflict) {
        // Not done, nor failed: planned again on the object as it is now.
        return written;
    }
    if let Some(tally) = &plan.tally {
        record(ctx, &target.key.namespace, tally, &written);
    }
    if let (Some(wakes), true, true) = (
        &ctx.wakes,
        plan.wakes_namespace,
        written.is_ok() && !ctx.writes.dry_run(),
    ) {
        // Nobody listening any more only means nobody measures.
        let _ = wakes.send(target.key.namespace.clone());
    }
    written?;
    match &plan.warning {
        Some(warning) => warn_once(ctx, target, object, warning).await,
        None => Ok(()),
    }
}

/// A step of an ordered wake or sleep goes on; one that goes on anyway says so on the
/// Namespace, the first time only.
async fn tell_step(ctx: &ScalingContext, namespace: &str, step: &Step) {
    let (due, order) = match step {
        Step::Goes { due, order } | Step::GoesAnyway { due, order, .. } => (*due, *order),
    };
    ctx.transitions.steps.let_go(namespace, due, order);
    if let Step::GoesAnyway { note, .. } = step
        && ctx.transitions.steps.first_told(namespace, due, order)
    {
        tracing::warn!(namespace, %note, "wake step timed out");
        let regarding = ctx.namespaces.reference(namespace);
        (ctx.writes)
            .tell(&regarding, "WakeStepTimedOut", note.clone(), true)
            .await;
    }
}

/// The HPAs released, the object's patch, the HPAs held, and the Event that says so.
async fn write(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    object: &TargetState,
    plan: &Plan,
) -> Result<(), Error> {
    let release_direction = plan.release_direction.unwrap_or(ScaleDirection::Up);
    if ctx.writes.dry_run() {
        return dry_run(ctx, target, object, plan, release_direction).await;
    }
    make_hpa_changes(ctx, &plan.releases, release_direction).await?;
    // Paused before the sleep: after it, the tool could put the workload back first.
    if let Some(pause) = &plan.owner_pause {
        pause_owner(ctx, object, pause).await?;
    }
    if let Some(lever) = plan.lever.as_ref().filter(|lever| lever.before_patch) {
        write_lever(ctx, lever).await?;
    }
    if let Some(patch) = &plan.patch {
        match patch_target(&ctx.client, target, &patch.body.to_json()).await {
            Ok(answered) => {
                counted(ctx, target, patch, Outcome::Success);
                if let (Some(savings), Some(slept)) = (&ctx.savings, &patch.slept) {
                    savings.ended(target, slept, &answered);
                }
                if let (Some(nights), Some(night)) = (&ctx.nights, &patch.night) {
                    nights.applied(night.clone());
                }
            }
            // Deleted since the read: nothing left to change.
            Err(error) if is_status(&error, 404) => return Ok(()),
            // Changed since the read (409) fails too: the key comes back with backoff and is
            // planned again on what it is now.
            Err(error) => {
                counted(ctx, target, patch, Outcome::Error);
                return Err(Error::api(patch.doing, target.kind.as_str(), &target.key)(
                    error,
                ));
            }
        }
    }
    // The transition is recorded whatever becomes of what follows it (the lever paused, the
    // HPAs held): the Event says so, and what failed is retried, as the next look brings the
    // lever and the HPAs in line with the transition in force.
    let paused = match plan.lever.as_ref().filter(|lever| !lever.before_patch) {
        Some(lever) => write_lever(ctx, lever).await,
        None => Ok(()),
    };
    let held = match paused {
        Ok(()) => make_hpa_changes(ctx, &plan.holds, release_direction).await,
        failed => failed,
    };
    if let Some((reason, note)) = &plan.event {
        tracing::info!(object = %target, reason, %note, "applied schedule");
        let note = match &held {
            Ok(()) => note.clone(),
            // The error itself goes to the log, with the retry.
            Err(_) => format!("{note}: failed for now, retried"),
        };
        ctx.events.normal(&object.reference, reason, note).await;
    }
    held
}

/// Writes the lever's sleep annotation; one deleted since the read needs nothing.
async fn write_lever(ctx: &ScalingContext, lever: &LeverWrite) -> Result<(), Error> {
    let target = &lever.target;
    match patch_target(&ctx.client, target, &lever.body.to_json()).await {
        Ok(_) => {
            tracing::info!(object = %target, body = %lever.body, "lever written");
            Ok(())
        }
        Err(error) if is_status(&error, 404) => Ok(()),
        Err(error) => Err(Error::api(
            "write the sleep annotation of",
            target.kind.as_str(),
            &target.key,
        )(error)),
    }
}

/// Writes a GitOps owner's pause or its release, and tells it on the owner; one deleted since
/// needs nothing.
pub async fn write_owner(ctx: &ScalingContext, write: &OwnerWrite) -> Result<(), Error> {
    let owner = &write.owner;
    let what = format!("write {owner}: {}", write.body);
    match ctx
        .writes
        .make(what, owner.patch(&ctx.client, &write.body))
        .await
    {
        Ok(Some(())) => {}
        // A dry run: nothing to tell.
        Ok(None) => return Ok(()),
        Err(error) if is_status(&error, 404) => return Ok(()),
        Err(error) => {
            let key = ObjectKey::new(&owner.namespace, &owner.name);
            return Err(Error::api(
                "write the pause of",
                owner.tool.spec().kind,
                &key,
            )(error));
        }
    }
    tracing::info!(%owner, body = %write.body, "owner written");
    if let Some((reason, note)) = &write.event {
        let reference = owner.reference(write.uid.clone());
        (ctx.writes)
            .tell(&reference, reason, note.clone(), write.warns)
            .await;
    }
    Ok(())
}

/// The pause of a workload's GitOps owner before its sleep. One RBAC refuses is said on the
/// workload, and the sleep goes on: the tool may undo it, which the next look tells.
async fn pause_owner(
    ctx: &ScalingContext,
    object: &TargetState,
    write: &OwnerWrite,
) -> Result<(), Error> {
    match write_owner(ctx, write).await {
        Err(error) if error.is_forbidden() => {
            let spec = write.owner.tool.spec();
            // The API server's answer goes to the log; the Event says what to do about it.
            let note = format!(
                "may not pause {}: its {} stays on and may undo this sleep; grant the ClusterRole \
                 cronscaler-gitops (rbac/optional/gitops.yaml)",
                write.owner, spec.repair_word
            );
            tracing::warn!(owner = %write.owner, %note, %error, "pause refused");
            ctx.events
                .warning(&object.reference, "GitOpsPauseRefused", note)
                .await;
            Ok(())
        }
        written => written,
    }
}

/// What the writes of `plan` would have been, logged, counted and told.
async fn dry_run(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    object: &TargetState,
    plan: &Plan,
    release_direction: ScaleDirection,
) -> Result<(), Error> {
    for (change, _) in plan.releases.iter().chain(&plan.holds) {
        tracing::info!(object = %target, "dry run, not done: {}", change.describe());
        ctx.metrics.scale_action(
            HPA_KIND,
            direction_of(change, release_direction),
            Outcome::DryRun,
        );
    }
    if let Some(patch) = &plan.patch {
        counted(ctx, target, patch, Outcome::DryRun);
    }
    if let Some(lever) = &plan.lever {
        tracing::info!(object = %lever.target, body = %lever.body, "dry run, not done: lever");
    }
    if let Some(pause) = &plan.owner_pause {
        write_owner(ctx, pause).await?;
    }
    if let Some((reason, note)) = &plan.event {
        tracing::info!(object = %target, reason, %note, "dry run: not applied");
        ctx.events
            .normal(
                &object.reference,
                reason,
                format!("dry run, nothing changed: {note}"),
            )
            .await;
    }
    Ok(())
}

/// Counts a patch that scales, and how late after its transition it was made.
fn counted(ctx: &ScalingContext, target: &ScaleTarget, patch: &TargetPatch, outcome: Outcome) {
    let Some((direction, late)) = patch.counted else {
        return;
    };
    ctx.metrics
        .scale_action(target.kind.as_str(), direction, outcome);
    if outcome == Outcome::Success {
        ctx.metrics.transition_lateness.observe(late.as_secs_f64());
    }
}

/// The kind the HPA actions are counted under in `cronscaler_scale_actions_total`.
const HPA_KIND: &str = "HorizontalPodAutoscaler";

/// A hold is counted as a scale-down, a release in the direction of what it goes with.
fn direction_of(change: &HpaChange, release_direction: ScaleDirection) -> ScaleDirection {
    match change {
        HpaChange::Hold { .. } => ScaleDirection::Down,
        HpaChange::Release { .. } => release_direction,
    }
}

/// Makes `changes`, in order; a failure stops there and is returned, to be retried.
async fn make_hpa_changes(
    ctx: &ScalingContext,
    changes: &[GuardedChange],
    release_direction: ScaleDirection,
) -> Result<(), Error> {
    for (change, resource_version) in changes {
        let direction = direction_of(change, release_direction);
        let hpa = change.hpa();
        match hpa::patch_hpa(&ctx.client, hpa, &change.patch(resource_version.as_deref())).await {
            Ok(()) => {
                tracing::info!(object = %format_args!("{HPA_KIND} {hpa}"), change = %change.describe(), "bounds changed");
                ctx.metrics
                    .scale_action(HPA_KIND, direction, Outcome::Success);
            }
            // Deleted since the watch saw it: nothing left to hold or give back.
            Err(error) if is_status(&error, 404) => {}
            Err(error) => {
                ctx.metrics
                    .scale_action(HPA_KIND, direction, Outcome::Error);
                return Err(Error::api("change the bounds of", HPA_KIND, hpa)(error));
            }
        }
    }
    Ok(())
}

/// Says a warning whose cause the object's patch has written, or a dry run would have. Should
/// the server refuse the Event, the cause is taken back off the object, so the next look says
/// it again: a warning said twice is better than one never said.
async fn warn_once(
    ctx: &ScalingContext,
    target: &ScaleTarget,
    object: &TargetState,
    warning: &Warning,
) -> Result<(), Error> {
    tracing::warn!(object = %target, reason = warning.reason, note = %warning.note, "warned");
    let note: Note = warning.note.clone();
    if ctx
        .events
        .warning(&object.reference, warning.reason, note)
        .await
        || ctx.writes.dry_run()
    {
        return Ok(());
    }
    let before = object.labels.get(schedule::WARNED);
    let patch = json!({ "metadata": { "labels": { schedule::WARNED: before } } });
    match patch_target(&ctx.client, target, &patch).await {
        // Deleted since: nobody left to tell.
        Ok(_) => Ok(()),
        Err(error) if is_status(&error, 404) => Ok(()),
        Err(error) => Err(Error::api(
            "take back the warning recorded on",
            target.kind.as_str(),
            &target.key,
        )(error)),
    }
}

/// Records what a Namespace's transition did to one of its workloads, and has the report told
/// once the outcomes settle.
fn record(ctx: &ScalingContext, namespace: &str, tally: &Tally, written: &Result<(), Error>) {
    let (Some((reports, queue)), false) = (&ctx.transitions.reports, ctx.writes.dry_run()) else {
        return;
    };
    let outcome = match (written, tally.changes) {
        (Err(error), _) => WorkloadOutcome::Failed(error.to_string()),
        (Ok(()), true) => WorkloadOutcome::Changed,
        (Ok(()), false) => WorkloadOutcome::Unchanged,
    };
    let transition = tally.transition;
    if reports.record(
        namespace,
        transition,
        &tally.by,
        tally.object.clone(),
        outcome,
        Instant::now(),
    ) {
        queue.add_after(
            ScalingKey::NamespaceReport(namespace.to_string(), transition),
            QUIET,
        );
    }
}
