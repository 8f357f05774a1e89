//! Self-service by namespaced RBAC (issue 41): someone holding only the built-in `edit` role in
//! their Namespace (with `rbac/aggregated-roles.yaml` applied) wakes it with `cronscaler wake`,
//! through an `OverrideRequest`, sees it with `cronscaler status`, and is refused for another
//! team's Namespace with nothing written; someone holding `view` may ask nothing, and plan.

use crate::support;

use std::time::Duration;

use kube::{Api, api::ListParams};
use support::{
    Scenario,
    console::{
        annotations_of, bind, install_self_service, requests_api, requests_in, teams_asleep, user,
    },
    envtest, eventually, replicas_become, stop_cleanly_and_finish,
};

/// Lateness we accept: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_namespace_s_editor_wakes_it_and_no_other_and_its_viewer_asks_nothing() {
    let Some(scenario) = Scenario::own("self-service", envtest::Options::default()).await else {
        return;
    };
    install_self_service(&scenario).await;
    teams_asleep(&scenario, &["team-a", "team-b"]).await;
    bind(&scenario, user("dev"), "edit", "team-a").await;
    bind(&scenario, user("reader"), "view", "team-a").await;
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;
    let web_a = Api::namespaced(scenario.client.clone(), "team-a");
    replicas_become(&web_a, "web", 0, "team-a asleep", LATENESS).await;
    // The aggregation controller gives `edit` and `view` our rules within moments.
    let dev = scenario.client_as("dev").await;
    let dev_requests = requests_api(dev, "team-a");
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
