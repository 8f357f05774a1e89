//! Which Services get a wake-up EndpointSlice, and for how long, on a real API server with the
//! real EndpointSlice controller (kube-controller-manager) writing each Service's own slices
//! from its Pods' readiness; the test plays only the scheduler and the kubelet. A slice of ours
//! goes only where the backend can stand in for every Pod the Service selects, and never stays
//! beside a ready endpoint of the Service's own.

mod support;

use std::{net::SocketAddr, time::Duration};

use serde_json::json;
use support::{
    Scenario,
    envtest::{self, SA_NAMESPACE},
    eventually,
    wake::{
        PROMPTLY, backend_service, create_service, create_service_with, serve_pods, served,
        start_backend_at, wake_slices, web_asleep,
    },
};

/// The test's requests come from 127.0.0.1, which the controller trusts as its proxy.
const PROXY: &str = "127.0.0.1";
/// How long a slice of ours may stand beside a ready endpoint of its Service's own (issue 38).
const BESIDE_AT_MOST: Duration = Duration::from_secs(10);
/// `--wake-step-timeout` here: a wake that takes longer leaves no slice.
const STEP_TIMEOUT: &str = "25s";

#[tokio::test]
async fn only_services_whose_pods_all_sleep_get_a_slice_and_each_goes_once_served_or_timed_out() {
    let Some(ip) = support::wake::machine_address() else {
        support::say(
            "skipped: this machine has no address but loopback, which no EndpointSlice may name",
        );
        return;
    };
    let Some(scenario) = Scenario::own("wake-slices-which", envtest::Options::default()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let backend = SocketAddr::new(ip, envtest::free_port());
    backend_service(&scenario, backend).await;
    let ports = json!([{ "name": "http", "port": 80 }]);
    // `api` sleeps with `web`, and will never be ready; `db`, an excluded StatefulSet, never
    // sleeps; `external` has no selector (an external database's endpoints); `web-headless`
    // is headless.
    support::create_deployment(&scenario.client, &namespace, "api", 1).await;
    let db = support::stateful_set("db", 1, json!({ "cronscaler.dev/exclude": "true" }));
    scenario
        .stateful_sets()
        .create(&Default::default(), &db)
        .await
        .expect("db");
    for service in ["web", "api", "db"] {
        create_service(&scenario, &namespace, service, ports.clone()).await;
    }
    create_service_with(&scenario, &namespace, "external", json!({ "ports": ports })).await;
    let headless = json!({ "selector": { "app": "web" }, "clusterIP": "None", "ports": ports });
    create_service_with(&scenario, &namespace, "web-headless", headless).await;
    let listen = SocketAddr::new([0, 0, 0, 0].into(), backend.port());
    let wake_service = format!("{SA_NAMESPACE}/cronscaler-wake");
    let flags = [
        "--wake-service",
        &wake_service,
        "--wake-step-timeout",
        STEP_TIMEOUT,
    ];
    let mut controller = start_backend_at(&scenario, "cronscaler", listen, PROXY, &flags).await;
    // The always-on StatefulSet runs, and its Service is served by its own Pod.
    serve_pods(&scenario.client, &namespace, "db").await;
    web_asleep(&scenario, json!({})).await;

    let asleep = eventually("the slices of the sleeping Services", PROMPTLY, || async {
        let slices = wake_slices(&scenario, &namespace).await;
        (slices.len() >= 2).then_some(slices)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let names: Vec<String> = wake_slices(&scenario, &namespace)
        .await
        .into_keys()
        .collect();
    assert_eq!(
        names,
        ["api-cronscaler-wake", "web-cronscaler-wake"],
        "none for the excluded db, the selector-less external, the headless web-headless: {:?}",
        asleep.keys()
    );

    // Woken: web's Pods run and become ready, api's never do.
    let said = scenario.said(&["wake", "-n", &namespace, "--for", "2h"]);
    assert!(!said.is_empty(), "wake said nothing");
    let served_at = eventually("web served by its own Pods", PROMPTLY * 3, || async {
        serve_pods(&scenario.client, &namespace, "web").await;
        served(&scenario.client, &namespace, "web")
            .await
            .then(std::time::Instant::now)
    })
    .await;
    eventually("web's slice gone", BESIDE_AT_MOST, || async {
        (!wake_slices(&scenario, &namespace)
            .await
            .contains_key("web-cronscaler-wake"))
        .then_some(())
    })
    .await;
    support::say(&format!(
        "wake-slices-which: web's slice gone {:.1} s after its own endpoint was ready",
        served_at.elapsed().as_secs_f64()
    ));
    assert!(
        wake_slices(&scenario, &namespace)
            .await
            .contains_key("api-cronscaler-wake"),
        "api, not ready, still gets the page"
    );
    // Past the step timeout, none is left, and what was not ready is named.
    eventually(
        "api's slice gone past the step timeout",
        PROMPTLY * 2,
        || async {
            wake_slices(&scenario, &namespace)
                .await
                .is_empty()
                .then_some(())
        },
    )
    .await;
    let warned = scenario.namespace_event("WakeNotReady", PROMPTLY).await;
    let note = warned.note.unwrap_or_default();
    assert!(
        warned.type_.as_deref() == Some("Warning")
            && note.contains("Deployment api")
            && !note.contains("Deployment web"),
        "{note}"
    );
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}
