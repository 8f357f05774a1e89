use serde_json::{Value, json};

use super::*;

fn node(name: &str, pool: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "karpenter.sh/nodepool": pool } },
    }))
    .unwrap()
}

/// A Pod of `namespace` on `node`, its controller `owner` (kind, name), with `more` merged into
/// it.
fn pod(namespace: &str, name: &str, node: &str, owner: Option<(&str, &str)>, more: Value) -> Pod {
    let mut pod = json!({
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "nodeName": node, "containers": [{ "name": "c", "image": "x" }] },
    });
    if let Some((kind, owner)) = owner {
        pod["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": owner, "uid": "u", "controller": true,
        }]);
    }
    merge(&mut pod, more);
    serde_json::from_value(pod).unwrap()
}

fn merge(into: &mut Value, more: Value) {
    match (into, more) {
        (Value::Object(into), Value::Object(more)) => {
            for (key, value) in more {
                merge(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, more) => *into = more,
    }
}

fn budget(namespace: &str, name: &str, app: &str, allowed: i32) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "selector": { "matchLabels": { "app": app } }, "minAvailable": 2 },
        "status": {
            "disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 2,
            "expectedPods": 2, "observedGeneration": 1,
        },
    }))
    .unwrap()
}

fn of<'a>(reports: &'a [NodeReport], node: &str) -> &'a NodeReport {
    reports.iter().find(|report| report.node == node).unwrap()
}

fn keepers(report: &NodeReport) -> Vec<(String, usize, Vec<String>)> {
    (report.kept_by.iter())
        .map(|kept| {
            let why = kept.keepers.iter().map(ToString::to_string).collect();
            (
                format!("{}/{}", kept.namespace, kept.workload),
                kept.pods,
                why,
            )
        })
        .collect()
}

#[test]
fn each_node_names_the_pods_that_keep_it_and_why_they_cannot_move() {
    let nodes = ["a", "b", "c", "d"].map(|name| node(name, "general"));
    let api = json!({ "metadata": { "labels": { "app": "api", "pod-template-hash": "7d9f8" } } });
    let pods = [
        // a: Prometheus's data on an emptyDir, beside a DaemonSet's Pod.
        pod(
            "monitoring",
            "prometheus-0",
            "a",
            Some(("StatefulSet", "prometheus")),
            json!({ "spec": { "volumes": [{ "name": "data", "emptyDir": {} }] } }),
        ),
        pod(
            "kube-system",
            "proxy-x",
            "a",
            Some(("DaemonSet", "proxy")),
            json!({}),
        ),
        // b: two Pods of a Deployment whose budget allows no disruption, and one that moves.
        pod(
            "payments",
            "api-7d9f8-1",
            "b",
            Some(("ReplicaSet", "api-7d9f8")),
            api.clone(),
        ),
        pod(
            "payments",
            "api-7d9f8-2",
            "b",
            Some(("ReplicaSet", "api-7d9f8")),
            api,
        ),
        pod(
            "tools",
            "web-5c4b-1",
            "b",
            Some(("ReplicaSet", "web-5c4b")),
            json!({ "metadata": { "labels": { "pod-template-hash": "5c4b" } } }),
        ),
        // c: a DaemonSet's Pod, a finished Job's and a mirror Pod: nothing keeps it.
        pod(
            "kube-system",
            "proxy-y",
            "c",
            Some(("DaemonSet", "proxy")),
            json!({}),
        ),
        pod(
            "batch",
            "done-1",
            "c",
            Some(("Job", "done")),
            json!({ "status": { "phase": "Succeeded" } }),
        ),
        pod(
            "kube-system",
            "etcd-c",
            "c",
            None,
            json!({ "metadata": { "annotations": { "kubernetes.io/config.mirror": "x" } } }),
        ),
        // d: a bare Pod, one marked not to be evicted, one Karpenter may not disrupt, and a
        // bare one with local storage that is marked safe to evict.
        pod("dev", "debug", "d", None, json!({})),
        pod(
            "dev",
            "pinned-1",
            "d",
            Some(("ReplicaSet", "pinned")),
            json!({ "metadata": { "annotations": { SAFE_TO_EVICT: "false" } } }),
        ),
        pod(
            "dev",
            "model-0",
            "d",
            Some(("StatefulSet", "model")),
            json!({
                "metadata": { "annotations": {
                    DO_NOT_DISRUPT: "true", SAFE_TO_EVICT_LOCAL_VOLUMES: "cache",
                } },
                "spec": { "volumes": [{ "name": "cache", "emptyDir": {} }] },
            }),
        ),
        pod(
            "dev",
            "scratch",
            "d",
            None,
            json!({
                "metadata": { "annotations": { SAFE_TO_EVICT: "true" } },
                "spec": { "volumes": [{ "name": "tmp", "hostPath": { "path": "/tmp" } }] },
            }),
        ),
    ];
    let budgets = [
        budget("payments", "api", "api", 0),
        budget("tools", "web", "web", 0),
        budget("monitoring", "loose", "prometheus", 1),
    ];
    let reports = report(&nodes, &pods, &budgets);
    assert_eq!(
        keepers(of(&reports, "a")),
        [(
            "monitoring/StatefulSet/prometheus".into(),
            1,
            vec!["local storage data".into()]
        )]
    );
    assert_eq!(
        keepers(of(&reports, "b")),
        [
            (
                "payments/Deployment/api".into(),
                2,
                vec!["PodDisruptionBudget api allows no disruption".into()]
            ),
            ("tools/Deployment/web".into(), 1, vec![]),
        ],
        "a budget selects by its labels, in its own Namespace"
    );
    let c = of(&reports, "c");
    assert!(c.could_go() && !c.is_pinned(), "{c:?}");
    assert_eq!(c.pool.as_deref(), Some("general"));
    assert_eq!(
        keepers(of(&reports, "d")),
        [
            (
                "dev/Pod/debug".into(),
                1,
                vec!["a bare Pod, no controller makes it again".into()]
            ),
            (
                "dev/ReplicaSet/pinned".into(),
                1,
                vec!["cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"".into()]
            ),
            (
                "dev/StatefulSet/model".into(),
                1,
                vec!["karpenter.sh/do-not-disrupt: \"true\"".into()]
            ),
            ("dev/Pod/scratch".into(), 1, vec![]),
        ]
    );
}

#[test]
fn a_budget_not_yet_counted_or_allowing_disruptions_keeps_nothing() {
    let nodes = [node("a", "general")];
    let labels = json!({ "metadata": { "labels": { "app": "api" } } });
    let pods = [pod(
        "payments",
        "api-1",
        "a",
        Some(("StatefulSet", "api")),
        labels,
    )];
    let mut uncounted = budget("payments", "api", "api", 0);
    uncounted.status = None;
    for budgets in [vec![uncounted], vec![budget("payments", "api", "api", 1)]] {
        let reports = report(&nodes, &pods, &budgets);
        assert!(!reports[0].is_pinned(), "{reports:?}");
        assert_eq!(reports[0].pods, 1);
    }
}

proptest::proptest! {
    /// Whatever the Pods say, every node is reported once, and no Pod is counted on a node it is
    /// not bound to.
    #[test]
    fn every_node_once_and_every_pod_where_it_runs(
        placed in proptest::collection::vec((0_usize..4, proptest::bool::ANY), 0..40),
    ) {
        let nodes: Vec<Node> = (0..3).map(|index| node(&format!("n{index}"), "p")).collect();
        let pods: Vec<Pod> = placed
            .iter()
            .enumerate()
            .map(|(index, (on, daemon))| {
                let owner = daemon.then_some(("DaemonSet", "d"));
                pod("ns", &format!("p{index}"), &format!("n{on}"), owner, json!({}))
            })
            .collect();
        let reports = report(&nodes, &pods, &[]);
        proptest::prop_assert_eq!(reports.len(), 3);
        for report in &reports {
            let expected = placed
                .iter()
                .filter(|(on, daemon)| format!("n{on}") == report.node && !daemon)
                .count();
            proptest::prop_assert_eq!(report.pods, expected);
        }
    }
}

#[test]
fn the_autoscalers_other_rules_and_a_node_marked_to_stay_are_named() {
    let mut nodes = vec![
        node("a", "general"),
        node("b", "general"),
        node("c", "general"),
    ];
    nodes[1].metadata.annotations =
        Some([(SCALE_DOWN_DISABLED.to_string(), "true".to_string())].into());
    nodes[2].metadata.labels = Some([(CONTROL_PLANE.to_string(), String::new())].into());
    let pods = [
        // A database an operator's kind owns, a kube-system Pod no budget covers, a memory-backed
        // emptyDir (no local storage), and a Pod being deleted (gone with the sleep).
        pod("shop", "db-1", "a", Some(("Cluster", "db")), json!({})),
        pod(
            "kube-system",
            "coredns-1",
            "a",
            Some(("ReplicaSet", "coredns")),
            json!({}),
        ),
        pod(
            "shop",
            "cache-1",
            "a",
            Some(("StatefulSet", "cache")),
            json!({ "spec": { "volumes": [{ "name": "shm", "emptyDir": { "medium": "Memory" } }] } }),
        ),
        pod(
            "shop",
            "web-1",
            "a",
            Some(("ReplicaSet", "web")),
            json!({ "metadata": { "deletionTimestamp": "2026-11-28T20:00:00Z" } }),
        ),
    ];
    let reports = report(&nodes, &pods, &[]);
    assert_eq!(
        keepers(of(&reports, "a")),
        [
            (
                "kube-system/ReplicaSet/coredns".into(),
                1,
                vec!["a kube-system Pod with no PodDisruptionBudget".into()]
            ),
            (
                "shop/Cluster/db".into(),
                1,
                vec!["made by a Cluster, which the cluster autoscaler does not move".into()]
            ),
            ("shop/StatefulSet/cache".into(), 1, vec![]),
        ]
    );
    for marked in ["b", "c"] {
        let report = of(&reports, marked);
        assert!(report.is_pinned() && !report.could_go(), "{report:?}");
    }
    assert_eq!(
        of(&reports, "b").marked.as_deref(),
        Some("cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"")
    );
}

#[test]
fn an_owner_not_named_as_the_api_server_names_objects_is_not_shown_and_the_pod_is_by_its_own_name()
{
    let forged = "x (local storage data), payments/Deployment/api";
    let pods = [
        pod(
            "team-x",
            "web-0",
            "node-a",
            Some(("StatefulSet", forged)),
            json!({}),
        ),
        pod(
            "team-x",
            "job-1",
            "node-a",
            Some(("Job; payments", "j")),
            json!({}),
        ),
        pod(
            "team-x",
            "db-0",
            "node-a",
            Some(("StatefulSet", "db")),
            json!({}),
        ),
    ];
    let reports = report(&[node("node-a", "general")], &pods, &[]);
    let said = format!("{:?}", keepers(of(&reports, "node-a")));
    assert!(!said.contains("payments"), "{said}");
    let shown: Vec<String> = keepers(of(&reports, "node-a"))
        .into_iter()
        .map(|(workload, _, why)| format!("{workload}: {}", why.join(", ")))
        .collect();
    assert_eq!(
        shown,
        [
            "team-x/Pod/job-1: a bare Pod, no controller makes it again",
            "team-x/Pod/web-0: a bare Pod, no controller makes it again",
            "team-x/StatefulSet/db: ",
        ]
    );
}
