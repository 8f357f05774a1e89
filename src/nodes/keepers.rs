//! What keeps each node running: the Pods on it, by workload, and why each cannot simply move.
//! DaemonSet Pods (and the kubelet's mirror Pods) run on every node and go with it, so they
//! keep none. A node with nothing else on it is kept by nothing the cluster's workloads ask:
//! the autoscaler's minimum, or its scale-down delay.
//!
//! Why a Pod cannot move, as the cluster autoscaler decides it (and Karpenter, for its own
//! annotation): marked not to be evicted, local storage, a PodDisruptionBudget that allows no
//! disruption now, no controller to make it again elsewhere, a controller the autoscaler does
//! not know, or a `kube-system` Pod no budget covers. A Pod with none of these runs now and
//! could move, but needs room somewhere. A node itself may be marked not to be taken away.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::{
    core::v1::{Node, Pod},
    policy::v1::PodDisruptionBudget,
};
use serde::Serialize;

use super::pool_of;
use crate::{names::is_dns_subdomain, namespaces::policies::coverage::selects};

const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
const SAFE_TO_EVICT_LOCAL_VOLUMES: &str =
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";
const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
const MIRROR: &str = "kubernetes.io/config.mirror";
const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
const CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";

/// The annotations [`report`] reads of a Pod: a reader keeps these and drops the rest.
pub const POD_ANNOTATIONS: [&str; 4] = [
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    DO_NOT_DISRUPT,
    MIRROR,
];

/// The annotations [`report`] reads of a Node.
pub const NODE_ANNOTATIONS: [&str; 2] = [SCALE_DOWN_DISABLED, DO_NOT_DISRUPT];

/// The controllers the cluster autoscaler knows to make a Pod again elsewhere; a Pod of any
/// other (an operator's own kind) keeps its node (`--skip-nodes-with-custom-controller-pods`).
const KNOWN_CONTROLLERS: [&str; 4] = ["ReplicaSet", "ReplicationController", "StatefulSet", "Job"];

/// Why a Pod cannot simply move to another node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum Keeper {
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` or
    /// `karpenter.sh/do-not-disrupt: "true"`.
    NotToBeEvicted { annotation: String },
    /// `emptyDir` or `hostPath` volumes, which die with the node.
    LocalStorage { volumes: Vec<String> },
    /// A PodDisruptionBudget that allows no disruption now selects it.
    Budget { budget: String },
    /// No controller would make it again elsewhere.
    Bare,
    /// Made by a controller the cluster autoscaler does not know (an operator's kind).
    CustomController { kind: String },
    /// A `kube-system` Pod that no PodDisruptionBudget covers
    /// (`--skip-nodes-with-system-pods`).
    SystemPod,
}

impl std::fmt::Display for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keeper::NotToBeEvicted { annotation } => write!(f, "{annotation}"),
            Keeper::LocalStorage { volumes } => write!(f, "local storage {}", volumes.join(", ")),
            Keeper::Budget { budget } => {
                write!(f, "PodDisruptionBudget {budget} allows no disruption")
            }
            Keeper::Bare => write!(f, "a bare Pod, no controller makes it again"),
            Keeper::CustomController { kind } => {
                write!(
                    f,
                    "made by a {kind}, which the cluster autoscaler does not move"
                )
            }
            Keeper::SystemPod => write!(f, "a kube-system Pod with no PodDisruptionBudget"),
        }
    }
}

/// The Pods of one workload on a node, and why they cannot move (none: they can, but they do
/// not sleep).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptBy {
    pub namespace: String,
    /// `Deployment/api`, `StatefulSet/db`, `Pod/debug` for a bare Pod.
    pub workload: String,
    pub pods: usize,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub keepers: BTreeSet<Keeper>,
}

/// One node and what keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Pods on it that are not DaemonSets'.
    pub pods: usize,
    /// The node itself is marked not to be taken away: the annotation or label that says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marked: Option<String>,
    /// By workload: those whose Pods cannot move first, then those that do not sleep.
    pub kept_by: Vec<KeptBy>,
}

impl NodeReport {
    /// Nothing but DaemonSets runs on it and nothing marks it: the autoscaler could take it
    /// away.
    pub fn could_go(&self) -> bool {
        self.pods == 0 && self.marked.is_none()
    }

    /// Whether it is marked to stay, or a Pod on it cannot move.
    pub fn is_pinned(&self) -> bool {
        self.marked.is_some() || self.kept_by.iter().any(|kept| !kept.keepers.is_empty())
    }
}

/// What keeps each of `nodes`, from the `pods` bound to them and the `budgets` of the cluster.
pub fn report(nodes: &[Node], pods: &[Pod], budgets: &[PodDisruptionBudget]) -> Vec<NodeReport> {
    let mut by_namespace: BTreeMap<Option<&str>, Vec<&PodDisruptionBudget>> = BTreeMap::new();
    for budget in budgets {
        let namespace = budget.metadata.namespace.as_deref();
        by_namespace.entry(namespace).or_default().push(budget);
    }
    let mut on_node: BTreeMap<&str, BTreeMap<(String, String), KeptBy>> = BTreeMap::new();
    for pod in pods.iter().filter(|pod| keeps_a_node(pod)) {
        let Some(node) = pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) else {
            continue;
        };
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let workload = workload_of(pod);
        let kept = (on_node.entry(node).or_default())
            .entry((namespace.clone(), workload.clone()))
            .or_insert_with(|| KeptBy {
                namespace,
                workload,
                pods: 0,
                keepers: BTreeSet::new(),
            });
        kept.pods += 1;
        let budgets = by_namespace.get(&pod.metadata.namespace.as_deref());
        kept.keepers
            .extend(keepers_of(pod, budgets.map_or(&[], Vec::as_slice)));
    }
    let mut reports: Vec<NodeReport> = nodes
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let labels = node.metadata.labels.clone().unwrap_or_default();
            let mut kept_by: Vec<KeptBy> = on_node
                .remove(name.as_str())
                .map(|kept| kept.into_values().collect())
                .unwrap_or_default();
            kept_by.sort_by_key(|kept| (kept.keepers.is_empty(), kept.namespace.clone()));
            NodeReport {
                pool: pool_of(&labels).map(String::from),
                marked: marked(node),
                pods: kept_by.iter().map(|kept| kept.pods).sum(),
                node: name,
                kept_by,
            }
        })
        .collect();
    reports.sort_by(|a, b| (&a.pool, &a.node).cmp(&(&b.pool, &b.node)));
    reports
}

/// The annotation or label that marks `node` not to be taken away, if one does.
fn marked(node: &Node) -> Option<String> {
    let none = BTreeMap::new();
    let annotations = node.metadata.annotations.as_ref().unwrap_or(&none);
    let labels = node.metadata.labels.as_ref().unwrap_or(&none);
    if annotations.get(SCALE_DOWN_DISABLED).map(String::as_str) == Some("true") {
        return Some(format!("{SCALE_DOWN_DISABLED}: \"true\""));
    }
    if annotations.get(DO_NOT_DISRUPT).map(String::as_str) == Some("true") {
        return Some(format!("{DO_NOT_DISRUPT}: \"true\""));
    }
    labels
        .contains_key(CONTROL_PLANE)
        .then(|| format!("{CONTROL_PLANE} (the control plane's)"))
}

/// Whether a Pod keeps its node: running or about to, not being deleted, and neither a
/// DaemonSet's nor the kubelet's own.
fn keeps_a_node(pod: &Pod) -> bool {
    let finished = (pod.status.as_ref())
        .and_then(|status| status.phase.as_deref())
        .is_some_and(|phase| matches!(phase, "Succeeded" | "Failed"));
    let annotations = pod.metadata.annotations.as_ref();
    let mirror = annotations.is_some_and(|annotations| annotations.contains_key(MIRROR));
    let daemon = controller_of(pod).is_some_and(|(kind, _)| kind == "DaemonSet");
    let leaving = pod.metadata.deletion_timestamp.is_some();
    !(finished || mirror || daemon || leaving)
}

/// The kind and name of the Pod's controller, if it has one named as the API server names
/// objects (a kind of letters and digits, a DNS subdomain): the API server checks an owner
/// reference's name for nothing but being there, and one a tenant wrote otherwise
/// (`x (local storage data), payments/Deployment/api`) would read as another team's row. Such a
/// Pod is shown by its own name.
fn controller_of(pod: &Pod) -> Option<(&str, &str)> {
    let owner = (pod.metadata.owner_references.iter().flatten())
        .find(|owner| owner.controller == Some(true))?;
    let (kind, name) = (owner.kind.as_str(), owner.name.as_str());
    let is_kind = kind.len() <= 63
        && kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.bytes().all(|b| b.is_ascii_alphanumeric());
    (is_kind && is_dns_subdomain(name)).then_some((kind, name))
}

/// `Deployment/api` for a Pod of the ReplicaSet `api-7d9f8` with `pod-template-hash: 7d9f8`;
/// `StatefulSet/db`; `Pod/debug` for a bare Pod.
fn workload_of(pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let Some((kind, owner)) = controller_of(pod) else {
        return format!("Pod/{name}");
    };
    let hash = (pod.metadata.labels.as_ref()).and_then(|labels| labels.get("pod-template-hash"));
    match hash.and_then(|hash| owner.strip_suffix(&format!("-{hash}"))) {
        Some(deployment) if kind == "ReplicaSet" => format!("Deployment/{deployment}"),
        _ => format!("{kind}/{owner}"),
    }
}

/// Why the Pod cannot move, as the autoscalers decide it, `budgets` those of its Namespace.
fn keepers_of(pod: &Pod, budgets: &[&PodDisruptionBudget]) -> Vec<Keeper> {
    let none = BTreeMap::new();
    let annotations = pod.metadata.annotations.as_ref().unwrap_or(&none);
    let labels = pod.metadata.labels.as_ref().unwrap_or(&none);
    let mut keepers = Vec::new();
    let safe = annotations.get(SAFE_TO_EVICT).map(String::as_str);
    if safe == Some("false") {
        keepers.push(Keeper::NotToBeEvicted {
            annotation: format!("{SAFE_TO_EVICT}: \"false\""),
        });
    }
    if annotations.get(DO_NOT_DISRUPT).map(String::as_str) == Some("true") {
        keepers.push(Keeper::NotToBeEvicted {
            annotation: format!("{DO_NOT_DISRUPT}: \"true\""),
        });
    }
    // Marked safe to evict, local storage and a missing controller are no obstacle.
    let marked_safe = safe == Some("true");
    let allowed: Vec<&str> = (annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES))
        .map(|volumes| volumes.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let local: Vec<String> = (pod
        .spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten()))
    // A memory-backed emptyDir is no local storage to the autoscaler.
    .filter(|volume| {
        let on_disk =
            (volume.empty_dir.as_ref()).is_some_and(|dir| dir.medium.as_deref() != Some("Memory"));
        on_disk || volume.host_path.is_some()
    })
    .filter(|volume| !allowed.contains(&volume.name.as_str()))
    .map(|volume| volume.name.clone())
    .collect();
    if !local.is_empty() && !marked_safe {
        keepers.push(Keeper::LocalStorage { volumes: local });
    }
    let namespace = pod.metadata.namespace.as_deref();
    let mut covered = false;
    for budget in budgets {
        let selected = (budget.spec.as_ref())
            .and_then(|spec| spec.selector.as_ref())
            .is_some_and(|selector| selects(selector, labels));
        covered |= selected;
        // Without a status the disruption controller has not counted it yet: nothing is known.
        let allows_none =
            (budget.status.as_ref()).is_some_and(|status| status.disruptions_allowed <= 0);
        if selected && allows_none {
            let name = budget.metadata.name.clone().unwrap_or_default();
            keepers.push(Keeper::Budget { budget: name });
        }
    }
    match controller_of(pod) {
        None if !marked_safe => keepers.push(Keeper::Bare),
        Some((kind, _)) if !marked_safe && !KNOWN_CONTROLLERS.contains(&kind) => {
            keepers.push(Keeper::CustomController { kind: kind.into() });
        }
        _ => {}
    }
    if namespace == Some("kube-system") && !covered && !marked_safe {
        keepers.push(Keeper::SystemPod);
    }
    keepers
}

#[cfg(test)]
mod tests;
