//! `cronscaler nodes`: for each node, what keeps it running. Reads the Nodes, the Pods bound to
//! them and the PodDisruptionBudgets when asked (paged lists, as `kubectl get` reads them), and
//! keeps of each Pod only what the answer needs, so that 30,000 Pods fit in little memory.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use k8s_openapi::api::{
    core::v1::{Node, Pod, PodSpec, PodStatus, Volume},
    policy::v1::PodDisruptionBudget,
};
use kube::{Api, Client, api::ObjectMeta};
use serde::Serialize;

use crate::{
    commands::table,
    nodes::{
        NodeReport, ON_A_NODE,
        keepers::{NODE_ANNOTATIONS, POD_ANNOTATIONS},
        report,
    },
    runtime::paging::all_pages,
};

/// The label that names a Deployment's Pods after their ReplicaSet's hash.
const TEMPLATE_HASH: &str = "pod-template-hash";

/// What was read of the cluster, and how many requests it took.
pub struct Read {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub budgets: Vec<PodDisruptionBudget>,
}

/// Lists the Nodes, the PodDisruptionBudgets and the Pods on a node and not finished of the
/// cluster.
pub async fn read(client: &Client) -> Result<Read, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let budgets: Api<PodDisruptionBudget> = Api::all(client.clone());
    let (nodes, pods, budgets) = (&nodes, &pods, &budgets);
    let nodes = all_pages(500, |params| async move {
        let mut page = nodes.list(&params).await?;
        page.items = page.items.into_iter().map(slim_node).collect();
        Ok(page)
    })
    .await?;
    let budgets = all_pages(500, |params| async move { budgets.list(&params).await }).await?;
    let selected = &selected_by(&budgets);
    let pods = all_pages(500, |params| async move {
        let mut page = pods.list(&params.fields(ON_A_NODE)).await?;
        page.items = (page.items.into_iter())
            .map(|pod| slim(pod, selected))
            .collect();
        Ok(page)
    })
    .await?;
    Ok(Read {
        nodes,
        pods,
        budgets,
    })
}

/// The labels of Pods anything here reads: those `budgets` select by, and the one that names a
/// Deployment's Pods. A Pod's other labels are most of what it keeps.
fn selected_by(budgets: &[PodDisruptionBudget]) -> BTreeSet<String> {
    let selectors = (budgets.iter()).filter_map(|budget| budget.spec.as_ref()?.selector.as_ref());
    let keys = selectors.flat_map(|selector| {
        let matched = selector.match_labels.iter().flatten().map(|(key, _)| key);
        let expressed =
            (selector.match_expressions.iter().flatten()).map(|expression| &expression.key);
        matched.chain(expressed).cloned().collect::<Vec<_>>()
    });
    keys.chain([TEMPLATE_HASH.to_string()]).collect()
}

/// Of `annotations`, those named in `kept`.
fn only(
    annotations: Option<BTreeMap<String, String>>,
    kept: &[&str],
) -> Option<BTreeMap<String, String>> {
    annotations.map(|annotations| {
        (annotations.into_iter())
            .filter(|(key, _)| kept.contains(&key.as_str()))
            .collect()
    })
}

/// What [`report`] reads of a Node, and nothing else: its images and conditions are most of it.
fn slim_node(node: Node) -> Node {
    Node {
        metadata: ObjectMeta {
            name: node.metadata.name,
            labels: node.metadata.labels,
            annotations: only(node.metadata.annotations, &NODE_ANNOTATIONS),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// What [`report`] reads of a Pod, and nothing else: of its labels, those `selected`.
fn slim(pod: Pod, selected: &BTreeSet<String>) -> Pod {
    let labels = (pod.metadata.labels).map(|labels| {
        (labels.into_iter())
            .filter(|(key, _)| selected.contains(key))
            .collect()
    });
    let metadata = ObjectMeta {
        name: pod.metadata.name,
        namespace: pod.metadata.namespace,
        deletion_timestamp: pod.metadata.deletion_timestamp,
        labels,
        annotations: only(pod.metadata.annotations, &POD_ANNOTATIONS),
        owner_references: pod.metadata.owner_references,
        ..ObjectMeta::default()
    };
    let spec = pod.spec.map(|spec| PodSpec {
        node_name: spec.node_name,
        volumes: spec.volumes.map(|volumes| {
            (volumes.into_iter())
                .map(|volume| Volume {
                    name: volume.name,
                    empty_dir: volume.empty_dir,
                    host_path: volume.host_path,
                    ..Volume::default()
                })
                .collect()
        }),
        ..PodSpec::default()
    });
    let status = pod.status.map(|status| PodStatus {
        phase: status.phase,
        ..PodStatus::default()
    });
    Pod {
        metadata,
        spec,
        status,
    }
}

/// Every node and what keeps it, and the count of each.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Nodes {
    pub nodes: Vec<NodeReport>,
    pub summary: Summary,
}

#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub nodes: usize,
    /// Kept by a Pod that cannot move.
    pub pinned: usize,
    /// Kept by Pods that run now and could move.
    pub busy: usize,
    /// Nothing but DaemonSets on them: no workload keeps them.
    pub could_go: usize,
}

/// What keeps each node of `read`.
pub fn nodes(read: &Read) -> Nodes {
    let nodes = report(&read.nodes, &read.pods, &read.budgets);
    let summary = Summary {
        nodes: nodes.len(),
        pinned: nodes.iter().filter(|node| node.is_pinned()).count(),
        busy: (nodes.iter())
            .filter(|node| !node.is_pinned() && !node.could_go())
            .count(),
        could_go: nodes.iter().filter(|node| node.could_go()).count(),
    };
    Nodes { nodes, summary }
}

/// A row a node, then the summary.
pub fn render_table(nodes: &Nodes) -> String {
    let header = ["NODE", "POOL", "PODS", "KEPT BY"]
        .map(String::from)
        .to_vec();
    let rows: Vec<Vec<String>> = std::iter::once(header)
        .chain(nodes.nodes.iter().map(row))
        .collect();
    let mut out = match nodes.nodes.is_empty() {
        true => "no nodes\n".to_string(),
        false => table::aligned(&rows),
    };
    for line in summary(nodes) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A node's row: its name, its pool, its Pods, and what keeps it.
pub fn row(node: &NodeReport) -> Vec<String> {
    let marked = (node.marked.iter()).map(|mark| format!("the node is marked {mark}"));
    let pods = node.kept_by.iter().map(|kept| {
        let pods = match kept.pods {
            1 => String::new(),
            n => format!(" ({n} Pods)"),
        };
        let why: Vec<String> = kept.keepers.iter().map(ToString::to_string).collect();
        let why = match why.is_empty() {
            true => "runs now, could move".to_string(),
            false => why.join(", "),
        };
        format!("{}/{}{pods}: {why}", kept.namespace, kept.workload)
    });
    let kept = match node.could_go() {
        true => "nothing but DaemonSets: it could go (if it stays, the autoscaler's minimum \
                 or its scale-down delay keeps it)"
            .to_string(),
        false => marked.chain(pods).collect::<Vec<_>>().join("; "),
    };
    vec![
        node.node.clone(),
        node.pool.clone().unwrap_or_else(|| "-".into()),
        node.pods.to_string(),
        kept,
    ]
}

/// What the rows come to: how many nodes each reason keeps, and the few things that pin them.
pub fn summary(nodes: &Nodes) -> Vec<String> {
    let summary = &nodes.summary;
    let counts = format!(
        "{} nodes: {} kept by Pods that cannot move (or marked to stay), {} by Pods that run now \
         and could move, {} by nothing but DaemonSets",
        summary.nodes, summary.pinned, summary.busy, summary.could_go
    );
    std::iter::once(counts)
        .chain(why_they_stay(nodes))
        .collect()
}

/// How many cannot go at night and the few things that pin them: `2 nodes stay because of
/// monitoring/StatefulSet/prometheus (local storage data), payments/Deployment/api
/// (PodDisruptionBudget payments/api allows no disruption)`.
fn why_they_stay(nodes: &Nodes) -> Option<String> {
    const NAMED: usize = 5;
    let mut reasons: Vec<String> = Vec::new();
    let mut said: HashSet<String> = HashSet::new();
    for node in nodes.nodes.iter().filter(|node| node.is_pinned()) {
        let marked = (node.marked.iter()).map(|mark| format!("node {} marked {mark}", node.node));
        let pinned = (node.kept_by.iter()).filter_map(|kept| {
            let keeper = kept.keepers.iter().next()?;
            Some(format!("{}/{} ({keeper})", kept.namespace, kept.workload))
        });
        for reason in marked.chain(pinned) {
            if said.insert(reason.clone()) {
                reasons.push(reason);
            }
        }
    }
    let more = reasons.len().saturating_sub(NAMED);
    reasons.truncate(NAMED);
    let more = match more {
        0 => String::new(),
        more => format!(", and {more} more"),
    };
    (nodes.summary.pinned > 0).then(|| {
        format!(
            "{} nodes stay because of {}{more}",
            nodes.summary.pinned,
            reasons.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pod_keeps_only_the_labels_budgets_select_by_and_is_read_the_same() {
        let budget: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": { "name": "api", "namespace": "payments" },
            "spec": { "selector": {
                "matchLabels": { "app": "api" },
                "matchExpressions": [{ "key": "tier", "operator": "In", "values": ["web"] }],
            } },
            "status": {
                "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2,
                "expectedPods": 2, "observedGeneration": 1,
            },
        }))
        .unwrap();
        let selected = selected_by(std::slice::from_ref(&budget));
        assert_eq!(
            selected.iter().map(String::as_str).collect::<Vec<_>>(),
            ["app", "pod-template-hash", "tier"]
        );
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "api-7d9f8c6b5-x2kqz", "namespace": "payments",
                "labels": {
                    "app": "api", "tier": "web", "pod-template-hash": "7d9f8c6b5",
                    "team": "payments", "version": "1.2.3", "helm.sh/chart": "api-0.1.0",
                },
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-7d9f8c6b5",
                    "uid": "u", "controller": true,
                }],
            },
            "spec": { "nodeName": "node-a", "containers": [{ "name": "c", "image": "x" }] },
        }))
        .unwrap();
        let slimmed = slim(pod.clone(), &selected);
        let labels = slimmed.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.keys().map(String::as_str).collect::<Vec<_>>(),
            ["app", "pod-template-hash", "tier"]
        );
        let node: Node =
            serde_json::from_value(json!({ "metadata": { "name": "node-a" } })).unwrap();
        let whole = report(
            std::slice::from_ref(&node),
            &[pod],
            std::slice::from_ref(&budget),
        );
        let slim = report(&[node], &[slimmed], &[budget]);
        assert_eq!(format!("{slim:?}"), format!("{whole:?}"));
        let kept = &slim[0].kept_by[0];
        assert_eq!(kept.workload, "Deployment/api");
        assert_eq!(
            kept.keepers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["PodDisruptionBudget api allows no disruption"]
        );
    }
}
