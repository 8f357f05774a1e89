//! Where a workload a GitOps tool deploys stands beside it: its owner, the mode chosen for it,
//! and what that means tonight. The reconciler acts on it; `status` and `plan` say it.

use std::{collections::BTreeMap, fmt};

use serde::Serialize;

use super::{
    Owner,
    owner::{Claim, Deployed, OwnerState, Revert, ignore_yaml},
    owners::Owners,
};
use crate::{
    schedule::{GITOPS, GitOpsMode, gitops_mode},
    workloads::target::ScaleTarget,
};

/// A workload a GitOps tool deploys: its owner, as watched (`None` where it is not), the mode
/// chosen for it, and the field of it a manifest sets, which the tool would put back.
#[derive(Debug, Clone)]
pub struct GitOps {
    pub owner: Owner,
    pub state: Option<OwnerState>,
    pub mode: GitOpsMode,
    pub field: Option<&'static str>,
    /// Whether the owner's own controller lists the workload ([`super::Proof`]). Until it
    /// does, the marks are only a claim: nothing is written to the owner for the workload, and
    /// a revert is not put down to it.
    pub confirmed: bool,
    /// A Namespace the owner also deploys to that does not sleep under `pause`: its pause
    /// would stop the deploys there too, so it is never paused, and the workload follows
    /// `ignore`. Known to the controller alone, which sees every Namespace.
    pub shared_with: Option<String>,
}

impl GitOps {
    /// Of `target`, whose marks make `claim` ([`owner::claim`] of its own annotations and
    /// labels), among `owners`, whose schedule's annotations (its own over its Namespace's)
    /// choose the mode, else `default`.
    pub fn of(
        owners: &Owners,
        target: &ScaleTarget,
        claim: Option<Claim>,
        schedule: &BTreeMap<String, String>,
        default: GitOpsMode,
        field: Option<&'static str>,
    ) -> Option<Self> {
        let claim = claim?;
        let (owner, state) = owners.resolve(&claim)?;
        let confirmed = (state.as_ref())
            .is_some_and(|state| state.inventory.lists(&Deployed::of(target, &claim)));
        Some(Self {
            owner,
            state,
            mode: gitops_mode(schedule, default),
            field,
            confirmed,
            shared_with: None,
        })
    }

    /// Whether its owner's repair is paused for its nights: `pause` chosen, the owner
    /// confirmed, and deploying only where Namespaces sleep so.
    pub fn pauses(&self) -> bool {
        self.mode == GitOpsMode::Pause && self.confirmed && self.shared_with.is_none()
    }

    /// Whether its owner's record says `namespace` paused it.
    pub fn paused_for(&self, namespace: &str) -> bool {
        self.state.as_ref().is_some_and(
            |state| matches!(&state.record, Some(Ok(record)) if record.namespaces.contains(namespace)),
        )
    }

    /// What the owner does to `target`'s nights, as `status` and `plan` say it.
    pub fn standing(&self, target: &ScaleTarget) -> Standing {
        let Some(state) = &self.state else {
            return Standing::NotFound;
        };
        if !self.confirmed {
            return Standing::Unconfirmed;
        }
        let namespace = &target.key.namespace;
        match (self.mode, &state.record) {
            (_, Some(Err(_))) => Standing::RecordUnreadable,
            (_, Some(Ok(_))) if self.paused_for(namespace) => Standing::Paused,
            (GitOpsMode::Pause, _) if let Some(shared) = &self.shared_with => {
                Standing::SharedWith(shared.clone())
            }
            (GitOpsMode::Pause, _) => Standing::PausedAtSleep,
            (GitOpsMode::Ignore, _) => {
                let kind = target.kind.spec();
                let revert = self.field.and_then(|field| {
                    state.revert(
                        &self.owner,
                        (kind.group, kind.name),
                        (namespace, &target.key.name),
                        field,
                    )
                });
                match revert {
                    Some(revert) => Standing::WillRevert(revert),
                    None => Standing::LeavesAlone,
                }
            }
        }
    }

    /// It, as `status` and `plan` show it.
    pub fn shown(&self, target: &ScaleTarget) -> Shown {
        let standing = self.standing(target);
        let kind = target.kind.spec();
        let fix = match &standing {
            Standing::WillRevert(Revert::EveryInterval) => Some(format!("set {GITOPS}: pause")),
            Standing::WillRevert(_) => Some(format!(
                "add to the Application (or set {GITOPS}: pause):\n{}",
                ignore_yaml(kind.group, kind.name)
            )),
            _ => None,
        };
        Shown {
            owner: self.owner.to_string(),
            mode: self.mode.to_string(),
            standing: standing.said(&self.owner),
            fix,
        }
    }
}

/// What an owner does to a workload's nights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Not among the owners read: its kind is not installed, or it may not be read.
    NotFound,
    /// Its controller does not list the workload: the marks are only a claim.
    Unconfirmed,
    /// `pause`, but it also deploys to this Namespace, which does not sleep so: never paused.
    SharedWith(String),
    /// Its record of a pause cannot be read.
    RecordUnreadable,
    /// Its repair is paused for this workload's Namespace now.
    Paused,
    /// `pause`: its repair will be paused at the next sleep.
    PausedAtSleep,
    /// `ignore`, and it will undo each night, for this reason.
    WillRevert(Revert),
    /// `ignore`, and it leaves the night alone.
    LeavesAlone,
}

impl Standing {
    fn said(&self, owner: &Owner) -> String {
        let repair = owner.tool.spec().repair_named;
        match self {
            Standing::NotFound => "owner not found".into(),
            Standing::Unconfirmed => format!(
                "not confirmed: its {} does not list it, so nothing is paused for it",
                owner.tool.spec().proof.field()
            ),
            Standing::SharedWith(namespace) => format!(
                "never paused: it also deploys to Namespace {namespace}, which does not sleep \
                 under pause; follows ignore"
            ),
            Standing::RecordUnreadable => "its cronscaler.dev/gitops-paused cannot be read".into(),
            Standing::Paused => format!("{repair} paused for the night"),
            Standing::PausedAtSleep => format!("{repair} paused at each sleep"),
            Standing::WillRevert(why) => format!("will undo each night: {}", why.short(owner)),
            Standing::LeavesAlone => "leaves the night alone".into(),
        }
    }
}

/// A workload's owner, mode and standing, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// `Argo CD Application argocd/shop`.
    pub owner: String,
    /// `ignore` or `pause`.
    pub mode: String,
    /// `self-heal paused for the night`, `will undo each night: ...`.
    pub standing: String,
    /// What to change where it will undo each night.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.owner, self.mode, self.standing)
    }
}
