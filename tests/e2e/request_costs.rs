//! What the controller asks of a real API server, read from its audit log: for a night of a
//! workload whose Argo CD Application is paused and confirmed (the owner read from the watch,
//! its pause and its give-back), and for a wake by request of a Namespace whose Services get
//! wake slices (placed while asleep, each removed once its Service is served again). A
//! benchmark, run by hand, as the figures in the closing notes were:
//!
//! ```sh
//! KUBEBUILDER_ASSETS=... cargo test --test e2e request_costs:: -- --ignored --nocapture
//! ```

use crate::support;

use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use support::{
    Scenario,
    crds::shared_crd,
    envtest, eventually,
    gitops::{PausedNight, argo_cd_in, end, given_back, paused_night_of},
    replicas_become, say, sleep_until,
    wake::{
        create_service_with, machine_address, request_from, slices_gone_once_served,
        start_backend_with_slices, wake_slices, web_asleep,
    },
};

#[tokio::test]
#[ignore = "a benchmark: run by hand with --ignored --nocapture"]
async fn requests_of_a_night_whose_argo_cd_owner_is_paused_and_given_back() {
    let test = "costs-owner";
    let Some(crd) = shared_crd(test, "argoproj.io_applications.yaml") else {
        return;
    };
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own(test, options).await else {
        return;
    };
    let argo_cd = argo_cd_in(&scenario, &crd, json!({}), true).await;
    let PausedNight {
        played,
        controller,
        ready,
        down,
        up,
    } = paused_night_of(&scenario, &argo_cd, 40).await;
    let second = chrono::Duration::seconds(1);
    sleep_until(up - second).await;
    given_back(&argo_cd, Some(true)).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let done = Utc::now();
    let night_settled = down + chrono::Duration::seconds(10);
    for (what, from, to) in [
        ("ready until the night, nothing due", ready, down - second),
        ("the night's transition", down - second, night_settled),
        ("the rest of the night", night_settled, up - second),
        ("the wake and the owner's give-back", up - second, done),
    ] {
        say(&format!(
            "{what} ({}s): {}",
            (to - from).num_seconds(),
            (scenario.plane()).requests_between(envtest::SA_USER, from, to)
        ));
    }
    end(played, controller, scenario).await;
}

#[tokio::test]
#[ignore = "a benchmark: run by hand with --ignored --nocapture"]
async fn requests_of_a_wake_by_request_of_a_namespace_of_three_services() {
    let Some(ip) = machine_address() else {
        say("skipped: this machine has no address but loopback, which no EndpointSlice may name");
        return;
    };
    let options = envtest::Options::default();
    let Some(scenario) = Scenario::own("costs-slices", options).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let start = Utc::now();
    let (mut controller, backend) = start_backend_with_slices(&scenario, ip, "127.0.0.1").await;
    let services = ["web", "web-admin", "web-metrics"];
    for (port, name) in (8000..).zip(services) {
        let spec = json!({ "selector": { "app": "web" }, "ports": [{ "port": port }] });
        create_service_with(&scenario, &namespace, name, spec).await;
    }
    let deployments = web_asleep(&scenario, json!({})).await;
    eventually("three wake slices", Duration::from_secs(30), || async {
        (wake_slices(&scenario, &namespace).await.len() == 3).then_some(())
    })
    .await;
    let placed = Utc::now();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let asked = Utc::now();
    let host = format!("web.{namespace}.svc.cluster.local");
    request_from(ip, backend, "/", &[("Host", host.as_str())]).await;
    replicas_become(&deployments, "web", 2, "web woken", Duration::from_secs(30)).await;
    slices_gone_once_served(&scenario, &namespace, "web").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let done = Utc::now();
    for (what, from, to) in [
        ("start, the sleep and three slices placed", start, placed),
        ("asleep, nothing asked", placed, asked),
        ("the request, the wake and the slices removed", asked, done),
    ] {
        say(&format!(
            "{what} ({}s): {}",
            (to - from).num_seconds(),
            (scenario.plane()).requests_between(envtest::SA_USER, from, to)
        ));
    }
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}
