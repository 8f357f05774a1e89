//! A workload beside its GitOps owner (Argo CD, Flux): the owner's repair paused for the night
//! or warned of, and nothing written to an owner that does not confirm the workload.

use super::{Plan, Warning, sleep_in_force, warning};
use crate::{
    ops::metrics::ScaleDirection,
    scaling::{
        gitops::{pause::pause, standing::GitOps},
        reconciler::observe::Observed,
    },
    schedule::{self, GITOPS, GitOpsMode, SCALE_REVERTED},
};

/// `GitOpsWillRevert`: said before a night its GitOps tool would undo.
pub(super) const GITOPS_WILL_REVERT: &str = "GitOpsWillRevert";
/// `GitOpsOwnerUnconfirmed`: its marks name an owner whose controller does not list it.
pub(super) const GITOPS_OWNER_UNCONFIRMED: &str = "GitOpsOwnerUnconfirmed";
/// `GitOpsOwnerShared`: its owner also deploys where no Namespace sleeps under `pause`.
pub(super) const GITOPS_OWNER_SHARED: &str = "GitOpsOwnerShared";

/// What its GitOps owner takes: with `pause`, its repair paused before a sleep (or found
/// unpaused under one), and a look at it after a wake; with `ignore`, a warning, once, where it
/// will undo the night. An owner that does not confirm the workload, or that also deploys where
/// no Namespace sleeps under `pause`, is written nothing, and said so once.
pub(super) fn beside_gitops(observed: &Observed, mut plan: Plan) -> Plan {
    let Some(gitops) = &observed.gitops else {
        return plan;
    };
    let namespace = &observed.target.key.namespace;
    let direction = plan
        .patch
        .as_ref()
        .and_then(|patch| patch.counted)
        .map(|(direction, _)| direction);
    let sleeping = match direction {
        Some(direction) => direction == ScaleDirection::Down,
        None => sleep_in_force(&observed.annotations),
    };
    let recorded = gitops.paused_for(namespace);
    let revert_said = observed
        .object
        .labels
        .get(schedule::WARNED)
        .is_some_and(|cause| cause.starts_with(SCALE_REVERTED));
    let reverted = revert_said
        || plan
            .warning
            .as_ref()
            .is_some_and(|warning| warning.reason == SCALE_REVERTED);
    // A pause recorded for this Namespace is given back whatever the owner is now.
    if matches!(
        direction,
        Some(ScaleDirection::Up | ScaleDirection::Restore)
    ) && (gitops.pauses() || recorded)
    {
        plan.owner_look = Some(gitops.owner.clone());
    }
    if let Some(doubt) = doubt(observed, gitops) {
        if plan.warning.is_none() && !revert_said {
            plan.warning = doubt;
        }
        return plan;
    }
    match gitops.mode {
        // A night its owner undid anyway is left alone until the next transition: no pause
        // then, nor a refusal said at every look.
        GitOpsMode::Pause if sleeping && (direction.is_some() || !reverted) => {
            plan.owner_pause = gitops
                .state
                .as_ref()
                .and_then(|state| pause(&gitops.owner, state, namespace));
        }
        GitOpsMode::Pause => {}
        GitOpsMode::Ignore => {
            let will_revert = gitops
                .state
                .as_ref()
                .zip(gitops.field)
                .and_then(|(state, field)| {
                    let kind = observed.target.kind.spec();
                    let key = &observed.target.key;
                    state.will_revert(
                        &gitops.owner,
                        (kind.group, kind.name),
                        (&key.namespace, &key.name),
                        field,
                    )
                });
            if let (None, false, Some(note)) = (&plan.warning, revert_said, will_revert) {
                let cause = schedule::cause(GITOPS_WILL_REVERT, &gitops.owner.to_string());
                plan.warning = warning(observed, GITOPS_WILL_REVERT, note.into(), cause);
            }
        }
    }
    plan
}

/// Why its owner is written nothing for it, as a warning said once: the owner watched does not
/// list it, or (under `pause`) also deploys to a Namespace that does not sleep so.
fn doubt(observed: &Observed, gitops: &GitOps) -> Option<Option<Warning>> {
    let owner = &gitops.owner;
    let target = &observed.target;
    let (reason, note) = match (&gitops.state, gitops.confirmed, &gitops.shared_with) {
        (None, _, _) => return None,
        (Some(_), false, _) => (
            GITOPS_OWNER_UNCONFIRMED,
            format!(
                "its marks name {owner}, but the owner's {} does not list {} {}: nothing is \
                 paused or written to the owner for it, and a revert is not put down to it",
                owner.tool.spec().proof.field(),
                target.kind,
                target.key.name
            ),
        ),
        (Some(_), true, Some(shared)) if gitops.mode == GitOpsMode::Pause => (
            GITOPS_OWNER_SHARED,
            format!(
                "{owner} also deploys to Namespace {shared}, which does not sleep under \
                 {GITOPS}: pause; its {} would stop its deploys there too, so it is never \
                 paused, and {} {} follows ignore",
                owner.tool.spec().repair_word,
                target.kind,
                target.key.name
            ),
        ),
        _ => return None,
    };
    let cause = schedule::cause(reason, &owner.to_string());
    Some(warning(observed, reason, note.into(), cause))
}
