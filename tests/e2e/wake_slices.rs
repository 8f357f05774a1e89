//! Which Services get a wake-up EndpointSlice, and for how long, on a real API server with the
//! real EndpointSlice controller (kube-controller-manager) writing each Service's own slices
//! from its Pods' readiness; the test plays only the scheduler and the kubelet. A slice of ours
//! goes only where the backend can stand in for every Pod the Service selects, and never stays
//! beside a ready endpoint of the Service's own.

use crate::support;

use std::{net::SocketAddr, time::Duration};

use kube::api::PostParams;
use serde_json::json;
use support::{
    Scenario,
    envtest::{self, SA_NAMESPACE, SA_USER},
    eventually, keda,
    wake::{
        PROMPTLY, backend_service, create_service, create_service_with, serve_pods, served,
        start_backend_at, start_backend_with_slices, wake_slices, web_asleep,
    },
};

/// The test's requests come from 127.0.0.1, which the controller trusts as its proxy.
const PROXY: &str = "127.0.0.1";
/// How long a slice of ours may stand beside a ready endpoint of its Service's own (issue 38).
const BESIDE_AT_MOST: Duration = Duration::from_secs(10);
/// `--wake-step-timeout` here: a wake that takes longer leaves no slice. Long enough that web's
/// Pods run and are ready well within it on a loaded machine (four control planes on two
/// cores have taken over 25 s), so that api's slice is still there when web's goes.
const STEP_TIMEOUT: &str = "45s";

/// The scenario of `test`, and this machine's address, which an EndpointSlice may name; `None`,
/// after saying why, where the machine has none but loopback.
async fn on_a_machine_address(
    test: &str,
    options: envtest::Options,
) -> Option<(std::net::IpAddr, Scenario)> {
    let Some(ip) = support::wake::machine_address() else {
        support::say(&format!(
            "{test}: skipped: this machine has no address but loopback, which no EndpointSlice \
             may name"
        ));
        return None;
    };
    Some((ip, Scenario::own(test, options).await?))
}

#[tokio::test]
async fn only_services_whose_pods_all_sleep_get_a_slice_and_each_goes_once_served_or_timed_out() {
    let Some((ip, scenario)) = on_a_machine_address("wake-slices-which", Default::default()).await
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
    let woken_at = std::time::Instant::now();
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
    let since_wake = served_at.duration_since(woken_at).as_secs_f64();
    support::say(&format!(
        "wake-slices-which: web served {since_wake:.1} s after the wake; its slice gone {:.1} s \
         after its own endpoint was ready",
        served_at.elapsed().as_secs_f64()
    ));
    assert!(
        wake_slices(&scenario, &namespace)
            .await
            .contains_key("api-cronscaler-wake"),
        "api, not ready, still gets the page (web was served {since_wake:.1} s after the wake, \
         the step timeout is {STEP_TIMEOUT})"
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

/// A workload that sleeps through another object (a Foo's Deployment through its Foo, a KEDA
/// workload through its ScaledObject) is asleep by cronscaler once that object's controller has
/// followed the record: its Service gets a slice like any other, and the Namespace is not read
/// again and again meanwhile (seen failing: no slice for either, and the Namespace's Services
/// listed every 2 s all night).
#[tokio::test]
async fn the_services_of_workloads_sleeping_through_a_foo_or_keda_get_a_slice() {
    let test = "wake-slices-through";
    let Some((ip, scenario)) = on_a_machine_address(test, Default::default()).await else {
        return;
    };
    let Some(scaled_objects) = keda::scaled_objects(test, &scenario).await else {
        scenario.finish().await;
        return;
    };
    let namespace = scenario.namespace.clone();
    let ports = json!([{ "name": "http", "port": 80 }]);
    // `api` is KEDA's, played as its operator behaves; `shop` is a Foo's, whose own schedule
    // (a Foo follows only its own) has it asleep all day.
    support::create_deployment(&scenario.client, &namespace, "api", keda::MIN_REPLICAS).await;
    let scaler = json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": "api-scaler" },
        "spec": {
            "scaleTargetRef": { "name": "api" },
            "minReplicaCount": keda::MIN_REPLICAS, "maxReplicaCount": 5,
            "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
        },
    });
    scaled_objects
        .create(
            &PostParams::default(),
            &serde_json::from_value(scaler).expect("a ScaledObject"),
        )
        .await
        .expect("api-scaler");
    let played = keda::play(
        &scenario.client,
        &namespace,
        &scaled_objects,
        "api",
        "api-scaler",
    );
    let asleep_all_day = json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00" });
    scenario
        .foos()
        .create(
            &PostParams::default(),
            &support::foo("shop", "shop", 1, asleep_all_day),
        )
        .await
        .expect("the Foo shop");
    create_service(&scenario, &namespace, "api", ports.clone()).await;
    let shop = json!({ "selector": { "controller": "shop" }, "ports": ports });
    create_service_with(&scenario, &namespace, "shop", shop).await;
    let (mut controller, _) = start_backend_with_slices(&scenario, ip, PROXY).await;
    web_asleep(&scenario, json!({})).await;

    let wanted = ["api-cronscaler-wake", "shop-cronscaler-wake"];
    eventually("the slices of api and shop", PROMPTLY, || async {
        let slices = wake_slices(&scenario, &namespace).await;
        wanted
            .iter()
            .all(|name| slices.contains_key(*name))
            .then_some(())
    })
    .await;
    // Settled: nothing due, so the Namespace's Services are not listed again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listed = || {
        scenario
            .plane()
            .count_requests(SA_USER, "list", "services", Some(&namespace))
    };
    let before = listed();
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(listed() - before, 0, "Services listed while nothing is due");
    assert_eq!(
        wake_slices(&scenario, &namespace)
            .await
            .into_keys()
            .collect::<Vec<_>>(),
        wanted,
        "web has no Service"
    );
    played.abort();
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    // Uninstalled without a restore, as `kubectl delete -k .` does: the ClusterRole of the
    // slices' grants goes, and the garbage collector takes every slice of ours with it.
    let roles: kube::Api<k8s_openapi::api::rbac::v1::ClusterRole> =
        kube::Api::all(scenario.client.clone());
    roles
        .delete("cronscaler-wake-slices", &Default::default())
        .await
        .expect("the install's ClusterRole deleted");
    eventually("no slice of ours left", PROMPTLY * 2, || async {
        wake_slices(&scenario, &namespace)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    scenario.finish().await;
}

/// At night too, a slice of ours goes within seconds of its Service having a ready endpoint of
/// its own, whatever made it ready: a bare Pod the Service also selects, or the workload scaled
/// up by hand (as a GitOps tool's self-heal would). Seen failing: both slices stayed all night,
/// because nothing looked at the Namespace again before its morning.
#[tokio::test]
async fn at_night_a_slice_goes_once_its_service_has_a_ready_endpoint_of_its_own() {
    let test = "wake-slices-night";
    let Some((ip, scenario)) = on_a_machine_address(test, Default::default()).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let ports = json!([{ "name": "http", "port": 80 }]);
    support::create_deployment(&scenario.client, &namespace, "api", 1).await;
    for service in ["web", "api"] {
        create_service(&scenario, &namespace, service, ports.clone()).await;
    }
    let (mut controller, _) = start_backend_with_slices(&scenario, ip, PROXY).await;
    let deployments = web_asleep(&scenario, json!({})).await;
    let both = ["api-cronscaler-wake", "web-cronscaler-wake"];
    eventually("the slices of web and api", PROMPTLY, || async {
        let slices = wake_slices(&scenario, &namespace).await;
        both.iter()
            .all(|name| slices.contains_key(*name))
            .then_some(())
    })
    .await;

    // A bare Pod that web's Service selects runs and becomes ready.
    let bare = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "web-bare", "labels": { "app": "web" } },
        "spec": { "containers": [{ "name": "web", "image": "nginx" }] },
    });
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(scenario.client.clone(), &namespace);
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(bare).expect("a Pod"),
    )
    .await
    .expect("web-bare");
    gone_once_served(&scenario, "web", "web-bare").await;

    // api is scaled up by hand in the night, and its Pod becomes ready.
    deployments
        .patch(
            "api",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "spec": { "replicas": 1 } })),
        )
        .await
        .expect("api scaled up");
    gone_once_served(&scenario, "api", "api").await;
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}

/// Serves the Pods of `prefix` until `service` is served by its own, then waits for its slice
/// of ours to go within [`BESIDE_AT_MOST`].
async fn gone_once_served(scenario: &Scenario, service: &str, prefix: &str) {
    let namespace = &scenario.namespace;
    eventually(
        &format!("{service} served by its own Pods"),
        PROMPTLY * 3,
        || async {
            serve_pods(&scenario.client, namespace, prefix).await;
            served(&scenario.client, namespace, service)
                .await
                .then_some(())
        },
    )
    .await;
    let slice = format!("{service}-cronscaler-wake");
    eventually(&format!("{slice} gone"), BESIDE_AT_MOST, || async {
        (!wake_slices(scenario, namespace).await.contains_key(&slice)).then_some(())
    })
    .await;
}

/// A dual-stack Service (on an API server that hands out both families) gets a slice for each of
/// its families, each naming the backend's addresses of that family.
#[tokio::test]
async fn a_dual_stack_service_gets_a_slice_for_each_family() {
    let test = "wake-slices-dual";
    let options = envtest::Options {
        controller_manager: false,
        apiserver_flags: vec!["--service-cluster-ip-range=10.0.0.0/24,fd00:10::/108".into()],
        ..envtest::Options::default()
    };
    let Some((ip, scenario)) = on_a_machine_address(test, options).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let dual = json!({
        "selector": { "app": "web" },
        "ipFamilyPolicy": "RequireDualStack",
        "ports": [{ "name": "http", "port": 80 }],
    });
    create_service_with(&scenario, &namespace, "web", dual).await;
    let (mut controller, backend) = start_backend_with_slices(&scenario, ip, PROXY).await;
    // The backend's own Service has a Pod of each family, as a dual-stack cluster gives it.
    let ipv6 = support::wake::backend_slice(
        "cronscaler-wake-ipv6-x7k2p",
        "IPv6",
        "fd00:20::7",
        backend.port(),
    );
    support::envtest::apply(&scenario.client, ipv6)
        .await
        .expect("the backend's IPv6 slice");
    web_asleep(&scenario, json!({})).await;
    let slices = eventually("a slice of each family", PROMPTLY, || async {
        let slices = wake_slices(&scenario, &namespace).await;
        (slices.len() == 2).then_some(slices)
    })
    .await;
    let addresses = |name: &str| {
        let slice = &slices[name];
        let addresses: Vec<String> = (slice.endpoints.iter())
            .flat_map(|endpoint| endpoint.addresses.clone())
            .collect();
        (slice.address_type.clone(), addresses)
    };
    assert_eq!(
        addresses("web-cronscaler-wake"),
        ("IPv4".to_string(), vec![ip.to_string()])
    );
    assert_eq!(
        addresses("web-cronscaler-wake-ipv6"),
        ("IPv6".to_string(), vec!["fd00:20::7".to_string()])
    );
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    scenario.finish().await;
}
