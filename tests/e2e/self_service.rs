//! Self-service by namespaced RBAC (issue 41): someone holding only the built-in `edit` role in
//! their Namespace (with `rbac/aggregated-roles.yaml` applied) wakes it with `cronscaler wake`,
//! through an `OverrideRequest`, sees it with `cronscaler status`, and is refused for another
//! team's Namespace with nothing written; someone holding `view` may ask nothing, and plan.

use crate::support;

use std::{path::Path, time::Duration};

use k8s_openapi::api::{core::v1::Namespace, rbac::v1::RoleBinding};
use kube::{
    Api,
    api::{DynamicObject, GroupVersionKind, ListParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, annotate_namespace, crds::install_crd, create_deployment, create_namespace, envtest,
    eventually, replicas_become, stop_cleanly_and_finish,
};

/// Lateness we accept: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

/// Binds `user` to the built-in ClusterRole `role` in `namespace`.
async fn bind(scenario: &Scenario, user: &str, role: &str, namespace: &str) {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": format!("{user}-{role}"), "namespace": namespace },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .expect("a RoleBinding");
    Api::<RoleBinding>::namespaced(scenario.client.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap_or_else(|error| panic!("binding {user} to {role} in {namespace}: {error}"));
}

/// The `OverrideRequest`s of `namespace`, as an admin lists them.
async fn requests_in(scenario: &Scenario, namespace: &str) -> Vec<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "OverrideRequest");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "overriderequests");
    Api::<DynamicObject>::namespaced_with(scenario.client.clone(), namespace, &resource)
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
}

/// The annotations of the Namespace `name`, as an admin reads them.
async fn annotations_of(
    scenario: &Scenario,
    name: &str,
) -> std::collections::BTreeMap<String, String> {
    Api::<Namespace>::all(scenario.client.clone())
        .get(name)
        .await
        .expect("the Namespace")
        .metadata
        .annotations
        .unwrap_or_default()
}

#[tokio::test]
async fn a_namespace_s_editor_wakes_it_and_no_other_and_its_viewer_asks_nothing() {
    let Some(scenario) = Scenario::own("self-service", envtest::Options::default()).await else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gvk = GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "OverrideRequest");
    install_crd(
        &scenario.client,
        &repo.join("manifests/09-override-request-crd.yaml"),
        &gvk,
    )
    .await;
    envtest::apply_file(&scenario.client, &repo.join("rbac/aggregated-roles.yaml"))
        .await
        .expect("the aggregated roles");
    // Two teams' Namespaces, asleep all the time.
    for team in ["team-a", "team-b"] {
        create_namespace(&scenario.client, team).await;
        let asleep = json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00" });
        annotate_namespace(&scenario.client, team, asleep).await;
        create_deployment(&scenario.client, team, "web", 2).await;
    }
    bind(&scenario, "dev", "edit", "team-a").await;
    bind(&scenario, "reader", "view", "team-a").await;
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;
    let web_a = Api::namespaced(scenario.client.clone(), "team-a");
    replicas_become(&web_a, "web", 0, "team-a asleep", LATENESS).await;
    // The aggregation controller gives `edit` and `view` our rules within moments.
    let dev = scenario.client_as("dev").await;
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "overriderequests");
    let dev_requests: Api<DynamicObject> = Api::namespaced_with(dev, "team-a", &resource);
    eventually("dev may list OverrideRequests", LATENESS, || async {
        dev_requests
            .list(&ListParams::default())
            .await
            .ok()
            .map(drop)
    })
    .await;

    let woken = scenario.run_as_user("dev", &["wake", "-n", "team-a", "--for", "1h"]);
    let said = String::from_utf8_lossy(&woken.stdout).to_string();
    assert!(
        woken.status.success() && said.starts_with("Namespace team-a is awake until "),
        "{said}{}",
        String::from_utf8_lossy(&woken.stderr)
    );
    replicas_become(&web_a, "web", 2, "team-a woken by its editor", LATENESS).await;
    assert!(
        annotations_of(&scenario, "team-a")
            .await
            .contains_key("cronscaler.dev/awake-until"),
        "the override is the Namespace's, as `cronscaler wake` writes it"
    );
    let requests = requests_in(&scenario, "team-a").await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].data["status"]["phase"], "Done");
    assert_eq!(requests[0].data["spec"]["means"], "kubectl");

    // `status` for the editor, with no cluster-scoped grant: its Namespace is read as itself.
    let shown = scenario.run_as_user("dev", &["status", "-n", "team-a", "-o", "json"]);
    let status: serde_json::Value = serde_json::from_slice(&shown.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&shown.stderr)));
    assert_eq!(status["namespaceSchedulesKnown"], true, "{status}");
    let web = &status["objects"][0];
    assert_eq!(
        (
            web["name"].as_str(),
            web["state"].as_str(),
            web["scheduleFrom"].as_str()
        ),
        (Some("web"), Some("overridden"), Some("Namespace")),
        "{status}"
    );
    let reason = web["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("awake until ") && reason.ends_with(" (kubectl))"),
        "says until when, and who asked by which means: {reason}"
    );

    // Another team's Namespace: refused, saying what to ask for, and nothing written.
    let refused = scenario.run_as_user("dev", &["sleep", "-n", "team-b"]);
    let complaint = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(
        !refused.status.success() && complaint.contains("ask for the edit role in team-b"),
        "{complaint}"
    );
    assert!(
        !complaint.to_lowercase().contains("backtrace"),
        "a refusal, not a crash: {complaint}"
    );
    assert!(requests_in(&scenario, "team-b").await.is_empty());
    assert!(
        !annotations_of(&scenario, "team-b")
            .await
            .contains_key("cronscaler.dev/asleep-until")
    );

    // Who may only read may not ask.
    let reader = scenario.run_as_user("reader", &["wake", "-n", "team-a", "--for", "2h"]);
    let complaint = String::from_utf8_lossy(&reader.stderr).to_string();
    assert!(
        !reader.status.success() && complaint.contains("ask for the edit role in team-a"),
        "{complaint}"
    );
    assert_eq!(
        requests_in(&scenario, "team-a").await.len(),
        1,
        "no new request"
    );
    // But it may read what its Namespace will do, with no cluster-scoped grant.
    let planned = scenario.run_as_user("reader", &["plan", "-n", "team-a", "--for", "1d"]);
    assert!(
        planned.status.success(),
        "{}{}",
        String::from_utf8_lossy(&planned.stdout),
        String::from_utf8_lossy(&planned.stderr)
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
