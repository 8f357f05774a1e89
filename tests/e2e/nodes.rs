//! `cronscaler nodes` on a real API server, as a platform engineer who may read Nodes, Pods and
//! PodDisruptionBudgets: Nodes and Pods made by the test (no kubelet, no scheduler: each Pod is
//! bound by `nodeName`), DaemonSet Pods with their owner, and a PodDisruptionBudget whose status
//! the test writes as the disruption controller would. Each node is named with what keeps it.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use futures::StreamExt as _;
use k8s_openapi::api::{
    core::v1::{Node, Pod, ServiceAccount},
    policy::v1::PodDisruptionBudget,
    rbac::v1::{ClusterRole, ClusterRoleBinding},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::{Scenario, create_namespace, envtest};

async fn create<K>(api: &Api<K>, object: Value)
where
    K: kube::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("creating an object");
}

/// A Pod of `namespace` bound to `node`, owned by its controller `owner` (kind, name).
fn pod(
    namespace: &str,
    name: &str,
    node: &str,
    owner: Option<(&str, &str)>,
    labels: Value,
) -> Value {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "namespace": namespace, "labels": labels },
        "spec": { "nodeName": node, "containers": [{ "name": "c", "image": "nginx" }] },
    });
    if let Some((kind, owner)) = owner {
        pod["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": owner,
            "uid": "00000000-0000-0000-0000-000000000001", "controller": true,
        }]);
    }
    pod
}

/// `user` a platform engineer who may list Nodes, Pods and PodDisruptionBudgets, and no more.
async fn node_reader(client: &kube::Client, user: &str) {
    let roles: Api<ClusterRole> = Api::all(client.clone());
    create(
        &roles,
        json!({
            "metadata": { "name": "node-reader" },
            "rules": [
                { "apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["list"] },
                { "apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"] },
            ],
        }),
    )
    .await;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    create(
        &bindings,
        json!({
            "metadata": { "name": "node-reader" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader" },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
        }),
    )
    .await;
}

/// Makes `namespace` and its `default` ServiceAccount, which a Pod is admitted under: no
/// controller-manager here makes it.
async fn namespace_for_pods(client: &kube::Client, namespace: &str) {
    create_namespace(client, namespace).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    create(&accounts, json!({ "metadata": { "name": "default" } })).await;
}

#[tokio::test]
async fn each_node_is_named_with_what_keeps_it() {
    let Some(scenario) = Scenario::own("nodes", envtest::Options::api_server_only()).await else {
        return;
    };
    let client = scenario.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    for (name, pool) in [
        ("node-a", "general"),
        ("node-b", "general"),
        ("node-c", "gpu"),
    ] {
        create(
            &nodes,
            json!({ "metadata": { "name": name, "labels": { "karpenter.sh/nodepool": pool } } }),
        )
        .await;
    }
    for namespace in ["monitoring", "payments", "kube-system"] {
        namespace_for_pods(&client, namespace).await;
    }
    let pods = |namespace: &str| Api::<Pod>::namespaced(client.clone(), namespace);
    let mut prometheus = pod(
        "monitoring",
        "prometheus-0",
        "node-a",
        Some(("StatefulSet", "prometheus")),
        json!({ "app": "prometheus" }),
    );
    prometheus["spec"]["volumes"] = json!([{ "name": "data", "emptyDir": {} }]);
    create(&pods("monitoring"), prometheus).await;
    for (index, node) in ["node-a", "node-b"].into_iter().enumerate() {
        let name = format!("api-7d9f8-{index}");
        let labels = json!({ "app": "api", "pod-template-hash": "7d9f8" });
        let api = pod(
            "payments",
            &name,
            node,
            Some(("ReplicaSet", "api-7d9f8")),
            labels,
        );
        create(&pods("payments"), api).await;
    }
    for node in ["node-a", "node-b", "node-c"] {
        let proxy = pod(
            "kube-system",
            &format!("proxy-{node}"),
            node,
            Some(("DaemonSet", "proxy")),
            json!({ "app": "proxy" }),
        );
        create(&pods("kube-system"), proxy).await;
    }
    // The disruption controller's count: the budget allows no disruption now.
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "payments");
    create(
        &budgets,
        json!({
            "metadata": { "name": "api", "namespace": "payments" },
            "spec": { "minAvailable": 2, "selector": { "matchLabels": { "app": "api" } } },
        }),
    )
    .await;
    let status = json!({ "status": {
        "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 2,
        "observedGeneration": 1,
    } });
    budgets
        .patch_status("api", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the budget's status");

    node_reader(&client, "platform").await;

    let output = scenario.run_as_user("platform", &["nodes"]);
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    support::say(&format!("cronscaler nodes:\n{said}{stderr}"));
    assert!(output.status.success(), "{said}{stderr}");
    let line = |node: &str| {
        said.lines()
            .find(|line| line.starts_with(node))
            .unwrap_or_else(|| panic!("no {node} in {said}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        line("node-a"),
        "node-a general 2 monitoring/StatefulSet/prometheus: local storage data; \
         payments/Deployment/api: PodDisruptionBudget api allows no disruption"
    );
    assert_eq!(
        line("node-b"),
        "node-b general 1 payments/Deployment/api: PodDisruptionBudget api allows no disruption"
    );
    assert!(
        line("node-c").starts_with("node-c gpu 0 nothing but DaemonSets: it could go"),
        "{said}"
    );
    let summary = "3 nodes: 2 kept by Pods that cannot move (or marked to stay), 0 by Pods that \
                   run now and could move, 1 by nothing but DaemonSets";
    let stay = "2 nodes stay because of monitoring/StatefulSet/prometheus (local storage data), \
                payments/Deployment/api (PodDisruptionBudget api allows no disruption)";
    let at = |wanted: &str| said.lines().position(|line| line == wanted);
    assert!(
        at(summary).is_some() && at(stay) == at(summary).map(|at| at + 1),
        "{said}"
    );
    let output = scenario.run_as_user("platform", &["nodes", "-o", "json"]);
    let json: Value = serde_json::from_slice(&output.stdout).expect("nodes -o json is JSON");
    assert_eq!(
        json["summary"],
        json!({ "nodes": 3, "pinned": 2, "busy": 0, "couldGo": 1 })
    );

    // Someone who may not read Pods is told so in one line, without a backtrace.
    let refused = scenario.run_as_user("nobody", &["nodes"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.starts_with("Error: reading Nodes, Pods and PodDisruptionBudgets")
            && stderr.contains("forbidden")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    scenario.finish().await;
}

/// `cronscaler nodes` on 100 Nodes and 30,000 Pods (a tenth of them DaemonSets'): how long it
/// answers in, and the requests it makes, by the audit log. A benchmark, run by hand, as the
/// figures in the closing notes were:
///
/// ```sh
/// cargo build --release && CRONSCALER_E2E_BINARY=target/release/cronscaler \
///   KUBEBUILDER_ASSETS=... cargo test --test e2e nodes::thirty -- --ignored --nocapture
/// ```
#[tokio::test]
#[ignore = "a benchmark of minutes: run by hand with --ignored --nocapture"]
async fn thirty_thousand_pods() {
    const NODES: usize = 100;
    const NAMESPACES: usize = 50;
    const PODS: usize = 30_000;
    let Some(scenario) = Scenario::own("nodes-costs", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let client = scenario.client.clone();
    let started = std::time::Instant::now();
    let nodes: Api<Node> = Api::all(client.clone());
    for index in 0..NODES {
        let pool = if index % 10 == 0 { "gpu" } else { "general" };
        let node = json!({ "metadata": {
            "name": format!("node-{index:03}"), "labels": { "karpenter.sh/nodepool": pool },
        } });
        create(&nodes, node).await;
    }
    for index in 0..NAMESPACES {
        namespace_for_pods(&client, &format!("team-{index:02}")).await;
    }
    futures::stream::iter(0..PODS)
        .for_each_concurrent(32, |index| {
            let client = client.clone();
            async move {
                let namespace = format!("team-{:02}", index % NAMESPACES);
                let node = format!("node-{:03}", index % NODES);
                let owner = match index % 10 {
                    0 => ("DaemonSet", "agent".to_string()),
                    _ => ("ReplicaSet", format!("web-{}-5c4b", index % 7)),
                };
                let labels = json!({ "app": "web", "pod-template-hash": "5c4b" });
                let object = pod(
                    &namespace,
                    &format!("p-{index:05}"),
                    &node,
                    Some((owner.0, &owner.1)),
                    labels,
                );
                create(&Api::<Pod>::namespaced(client, &namespace), object).await;
            }
        })
        .await;
    support::say(&format!(
        "nodes costs: {NODES} Nodes and {PODS} Pods made in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    node_reader(&client, "platform").await;
    let from = chrono::Utc::now();
    let asked = std::time::Instant::now();
    let output = scenario.run_as_user("platform", &["nodes"]);
    let took = asked.elapsed();
    let to = chrono::Utc::now();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.lines().count() > 1 + NODES, "{said}");
    let mut lists = std::collections::BTreeMap::<String, usize>::new();
    for event in scenario.plane().audit_events() {
        let within = event.received.is_some_and(|at| (from..to).contains(&at));
        if within && event.verb == "list" {
            *lists.entry(event.resource).or_default() += 1;
        }
    }
    support::say(&format!(
        "nodes costs: `cronscaler nodes` on {PODS} Pods answered in {:.2} s, LISTs {lists:?}; {}",
        took.as_secs_f64(),
        said.lines().nth(1 + NODES).unwrap_or_default()
    ));
    scenario.finish().await;
}
