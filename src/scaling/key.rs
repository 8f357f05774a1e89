//! The scaling controller's work in the shared queue.

use std::fmt;

use crate::{
    runtime::key::ObjectKey, scaling::gitops::Owner, schedule::Transition,
    workloads::target::ScaleTarget,
};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScalingKey {
    /// Apply the schedule of a Deployment, StatefulSet, CronJob or Foo at the current time.
    Scale(ScaleTarget),
    /// Tell on a Namespace what its transition did to its workloads.
    NamespaceReport(String, Transition),
    /// Take a Namespace's override on demand away once it has run out.
    NamespaceOverride(String),
    /// Show in a `SleepPolicy`'s status what it does now.
    SleepPolicyStatus(String),
    /// Show in a `SleepSchedule`'s status what it does now.
    SleepScheduleStatus(ObjectKey),
    /// Look for a Namespace's turn to wake (`--max-waking-namespaces`).
    WakeTurn(String),
    /// Tell a Namespace of the hosts of its `wake-hosts` that others claim too.
    WakeHosts(String),
    /// Give a paused GitOps owner back its repair once every Namespace that paused it is awake.
    GitOpsOwner(Owner),
    /// Put a Namespace with `idle-after` to sleep once nothing has used it for that long.
    Idle(String),
    /// Record the nodes around the night: its beginning, its quietest point, its end.
    Nights,
    /// File the savings of the sleeps ended in the ledger.
    Savings,
}

impl fmt::Display for ScalingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalingKey::Scale(target) => write!(f, "schedule of {target}"),
            ScalingKey::NamespaceReport(namespace, transition) => {
                write!(f, "report of Namespace {namespace} at {transition}")
            }
            ScalingKey::NamespaceOverride(namespace) => {
                write!(f, "override of Namespace {namespace}")
            }
            ScalingKey::SleepPolicyStatus(name) => write!(f, "status of SleepPolicy {name}"),
            ScalingKey::SleepScheduleStatus(key) => write!(f, "status of SleepSchedule {key}"),
            ScalingKey::WakeTurn(namespace) => write!(f, "turn of Namespace {namespace} to wake"),
            ScalingKey::WakeHosts(namespace) => write!(f, "wake-hosts of Namespace {namespace}"),
            ScalingKey::GitOpsOwner(owner) => write!(f, "pause of {owner}"),
            ScalingKey::Idle(namespace) => write!(f, "idleness of Namespace {namespace}"),
            ScalingKey::Nights => write!(f, "the nodes around the night"),
            ScalingKey::Savings => write!(f, "the ledger of savings"),
        }
    }
}
