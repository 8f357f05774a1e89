//! Waking a Namespace on the first request, against a real API server: the backend of
//! `run --wake-addr` gets what a proxy could not serve, wakes an opted-in Namespace once, and
//! answers with a page that follows it to ready. There is no kubelet: the test marks Pods ready.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Service, rbac::v1::ClusterRole};
use kube::{Api, ResourceExt as _, api::PostParams};
use serde_json::{Value, json};
use support::{
    Scenario, envtest, eventually, replicas_and_annotations, replicas_become,
    wake::{
        AWAKE_UNTIL, LAST_WARM_UP, PROMPTLY, create_service, create_service_with,
        namespace_annotations, opt_in, request, request_from, slices_gone_once_served,
        start_backend, start_backend_with_slices, wake_carried_out, wake_slices, web_asleep,
    },
};

/// The test's requests come from 127.0.0.1, which the controller trusts as its proxy: their
/// routing headers count.
const PROXY: &str = "127.0.0.1";

/// The headers ingress-nginx sends its default backend for a 503, from a browser.
fn ingress_nginx(namespace: &str) -> Vec<(&str, &str)> {
    vec![
        ("X-Namespace", namespace),
        ("X-Code", "503"),
        ("X-Service-Name", "web"),
        ("X-Original-URI", "/login"),
        ("X-Format", "text/html"),
        ("Accept", "text/html,application/xhtml+xml"),
        ("Host", "staging.example.com"),
    ]
}

#[tokio::test]
async fn a_request_wakes_an_asleep_namespace_once_and_its_status_follows_it_to_ready() {
    let Some(scenario) = Scenario::own("wake", envtest::Options::default()).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let (controller, addr) = start_backend(&scenario, "cronscaler", PROXY, &[]).await;
    let stateful_sets: Api<StatefulSet> = scenario.stateful_sets();
    stateful_sets
        .create(
            &PostParams::default(),
            &support::stateful_set("db", 1, json!({})),
        )
        .await
        .expect("a StatefulSet");
    let deployments = web_asleep(&scenario, json!({})).await;
    eventually("the StatefulSet asleep", PROMPTLY, || async {
        let db = stateful_sets.get("db").await.ok()?.spec?.replicas?;
        (db == 0).then_some(())
    })
    .await;

    // Nobody else is woken, and nothing is written, for what is not an opted-in Namespace.
    for headers in [
        ingress_nginx("kube-system"),
        vec![("Host", "unknown.example.com")],
        vec![],
    ] {
        let refused = request(addr, "/", &headers).await;
        assert_eq!(refused.status, 503, "{headers:?}");
        assert!(
            refused.body.is_empty(),
            "a refusal names nothing: {:?}",
            refused.body
        );
    }
    assert!(
        !namespace_annotations(&scenario, &namespace)
            .await
            .contains_key(AWAKE_UNTIL)
    );
    assert!(
        !namespace_annotations(&scenario, "kube-system")
            .await
            .contains_key(AWAKE_UNTIL)
    );

    let asked = Instant::now();
    let answered = request(addr, "/", &ingress_nginx(&namespace)).await;
    assert_eq!(answered.status, 503);
    assert!(
        answered
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/html"),
        "{}",
        answered.head
    );
    assert!(
        answered.body.contains(&format!("Waking up {namespace}")),
        "{}",
        answered.body
    );
    let again = request(addr, "/", &[("X-Namespace", namespace.as_str())]).await;
    assert!(
        again.head.to_ascii_lowercase().contains("retry-after: 10"),
        "{}",
        again.head
    );
    let progress: Value = serde_json::from_str(&again.body).expect("JSON for a program");
    assert_eq!(progress["namespace"], namespace.as_str());
    assert_eq!(progress["waking"], true);
    assert_eq!(progress["total"], 2);

    // The backend asked; the controller carried the request out and removed it.
    wake_carried_out(&scenario, &namespace, asked, "wake").await;

    eventually("both workloads woken", PROMPTLY, || async {
        let (web, _) = replicas_and_annotations(&deployments, "web").await?;
        let db = stateful_sets.get("db").await.ok()?.spec?.replicas?;
        (web == 2 && db == 1).then_some(())
    })
    .await;
    woken_on_demand_by(&scenario, "a request for staging.example.com/login").await;

    let status_path = format!("/.cronscaler/status?namespace={namespace}");
    let ready = eventually(
        "the status to say ready",
        Duration::from_secs(90),
        || async {
            support::mark_pods_ready(&scenario.client, &scenario.namespace).await;
            let answer = request(addr, &status_path, &[("X-Namespace", namespace.as_str())]).await;
            let progress: Value = serde_json::from_str(&answer.body).ok()?;
            (answer.status == 200 && progress["waking"] == false).then_some(progress)
        },
    )
    .await;
    assert_eq!(
        (ready["ready"].clone(), ready["total"].clone()),
        (json!(2), json!(2))
    );
    let warm_up = eventually("last-warm-up on the Namespace", PROMPTLY, || async {
        namespace_annotations(&scenario, &namespace)
            .await
            .get(LAST_WARM_UP)
            .cloned()
    })
    .await;
    assert!(warm_up.ends_with('s'), "{warm_up}");
    let metrics = controller.backend.metrics().await.expect("metrics");
    assert!(
        metrics.contains(&format!(
            "cronscaler_wake_requests_total{{namespace=\"{namespace}\",result=\"woken\"}} 1"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("cronscaler_wake_requests_total{namespace=\"\",result=\"refused\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "cronscaler_wake_requests_total{{namespace=\"{namespace}\",result=\"status\"}}"
        )),
        "status polls are counted: {metrics}"
    );
    // The warm-up of the wake is measured by the controller, which made it.
    let measured = controller.controller.metrics().await.expect("metrics");
    assert!(
        measured.contains("cronscaler_wake_seconds_count 1"),
        "{measured}"
    );
    scenario.finish().await;
}

#[tokio::test]
async fn a_host_routes_by_wake_hosts_or_a_service_s_in_cluster_name_and_a_standby_wakes_as_the_leader_does()
 {
    let Some(scenario) = Scenario::own("wake-hosts", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let elect = [
        "--leader-elect",
        "--leader-elect-namespace",
        envtest::SA_NAMESPACE,
    ];
    let mut addrs = Vec::new();
    let mut controllers = Vec::new();
    for name in ["first", "second"] {
        let (controller, addr) = start_backend(&scenario, name, PROXY, &elect).await;
        controllers.push(controller);
        addrs.push(addr);
    }
    let leader = eventually("a leader", PROMPTLY, || async {
        support::lease_holder(&scenario.client, envtest::SA_NAMESPACE, "cronscaler").await
    })
    .await;
    let standby = if leader == "first" {
        addrs[1]
    } else {
        addrs[0]
    };
    let deployments = web_asleep(
        &scenario,
        json!({ "cronscaler.dev/wake-hosts": "staging.example.com, *.preview.example.com" }),
    )
    .await;

    // A Service's in-cluster name is its Namespace's, with no `wake-hosts`: asked for the
    // progress, which wakes nothing.
    let in_cluster = format!("web.{namespace}.svc.cluster.local");
    let status = request(standby, "/.cronscaler/status", &[("Host", &in_cluster)]).await;
    assert_eq!(status.status, 200, "{}", status.body);
    let progress: Value = serde_json::from_str(&status.body).expect("JSON");
    assert_eq!(progress["namespace"], namespace.as_str());
    let elsewhere = request(
        standby,
        "/.cronscaler/status",
        &[("Host", "web.kube-system.svc")],
    )
    .await;
    assert_eq!(elsewhere.status, 503, "not opted in");
    let deeper = request(standby, "/", &[("Host", "a.b.preview.example.com")]).await;
    assert_eq!(
        (deeper.status, deeper.body.as_str()),
        (503, ""),
        "a wildcard is one label"
    );
    let answer = request(
        standby,
        "/pr/12",
        &[
            ("X-Forwarded-Host", "pr-12.preview.example.com"),
            ("Host", "traefik.internal"),
        ],
    )
    .await;
    let progress: Value = serde_json::from_str(&answer.body).expect("JSON");
    assert_eq!(progress["namespace"], namespace.as_str());
    replicas_become(
        &deployments,
        "web",
        2,
        "the standby's wake applied by the leader",
        PROMPTLY,
    )
    .await;
    woken_on_demand_by(&scenario, "a request for pr-12.preview.example.com/pr/12").await;
    scenario.finish().await;
}

#[tokio::test]
async fn the_hosts_of_a_namespace_s_ingresses_and_http_routes_are_its_own() {
    let test = "wake-routes";
    let Some(crd) = support::crds::shared_crd(test, "gateway.networking.k8s.io_httproutes.yaml")
    else {
        return;
    };
    let Some(scenario) = Scenario::own(test, envtest::Options::api_server_only()).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let gvk = kube::api::GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "HTTPRoute");
    support::crds::install_crd(&scenario.client, &crd, &gvk).await;
    let (_controller, addr) = start_backend(&scenario, "cronscaler", PROXY, &[]).await;
    // Opted in without wake-hosts: its routes name its hosts.
    let deployments = web_asleep(&scenario, json!({})).await;
    for route in [
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": { "name": "web", "namespace": namespace },
            "spec": { "rules": [{ "host": "ingress.example.com" }] },
        }),
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": { "name": "shop", "namespace": namespace },
            "spec": {
                "parentRefs": [{ "name": "gateway" }],
                "hostnames": ["gw.example.com"],
                "rules": [{ "backendRefs": [{ "name": "web", "port": 80 }] }],
            },
        }),
    ] {
        envtest::apply(&scenario.client, route)
            .await
            .expect("a route");
    }
    let ours = namespace.as_str();
    let routed = |host: &'static str| async move {
        let status = request(addr, "/.cronscaler/status", &[("Host", host)]).await;
        let progress: Value = serde_json::from_str(&status.body).ok()?;
        (progress["namespace"] == ours).then_some(())
    };
    eventually("the Ingress's host routed", PROMPTLY, || {
        routed("ingress.example.com")
    })
    .await;
    eventually("the HTTPRoute's host routed", PROMPTLY, || {
        routed("gw.example.com")
    })
    .await;
    let refused = request(
        addr,
        "/.cronscaler/status",
        &[("Host", "other.example.com")],
    )
    .await;
    assert_eq!(refused.status, 503, "a host no route names");

    // A request through the Gateway wakes it.
    let answer = request(addr, "/", &[("Host", "gw.example.com")]).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    replicas_become(&deployments, "web", 2, "web woken", PROMPTLY).await;
    scenario.finish().await;
}

#[tokio::test]
async fn asleep_each_service_reaches_the_backend_through_an_endpoint_slice_until_ready_again() {
    let Some(ip) = support::wake::machine_address() else {
        support::say(
            "skipped: this machine has no address but loopback, which no EndpointSlice may name",
        );
        return;
    };
    let Some(scenario) = Scenario::own("wake-slices", envtest::Options::default()).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let (mut controller, backend) = start_backend_with_slices(&scenario, ip, PROXY).await;
    let ports = json!([
        { "name": "http", "port": 80, "targetPort": 8080 },
        { "name": "metrics", "port": 9090, "protocol": "TCP" },
    ]);
    create_service(&scenario, &namespace, "web", ports).await;
    let deployments = web_asleep(&scenario, json!({})).await;

    let slice = eventually("web's wake-up slice", PROMPTLY, || async {
        wake_slices(&scenario, &namespace)
            .await
            .remove("web-cronscaler-wake")
    })
    .await;
    let addresses: Vec<&str> = (slice.endpoints.iter())
        .flat_map(|endpoint| endpoint.addresses.iter().map(String::as_str))
        .collect();
    assert_eq!(addresses, [ip.to_string()], "the backend's ready address");
    let ports: Vec<(Option<&str>, Option<i32>)> = (slice.ports.iter().flatten())
        .map(|port| (port.name.as_deref(), port.port))
        .collect();
    let port = Some(i32::from(backend.port()));
    assert_eq!(
        ports,
        [(Some("http"), port), (Some("metrics"), port)],
        "the Service's port names, the backend's port"
    );
    let labels = slice.labels();
    assert_eq!(
        labels.get("kubernetes.io/service-name").map(String::as_str),
        Some("web")
    );
    let services: Api<Service> = Api::namespaced(scenario.client.clone(), &namespace);
    let roles: Api<ClusterRole> = Api::all(scenario.client.clone());
    let install =
        (roles.get("cronscaler-wake-slices").await).expect("rbac/wake-slices.yaml's ClusterRole");
    let owners: Vec<(&str, &str, Option<&String>)> = (slice.owner_references().iter())
        .map(|owner| (owner.kind.as_str(), owner.name.as_str(), Some(&owner.uid)))
        .collect();
    assert_eq!(
        owners,
        [(
            "ClusterRole",
            "cronscaler-wake-slices",
            install.metadata.uid.as_ref()
        )],
        "owned by the install, so that uninstalling deletes it"
    );

    let admin = json!({ "selector": { "app": "web" }, "ports": [{ "port": 8000 }] });
    create_service_with(&scenario, &namespace, "web-admin", admin.clone()).await;
    eventually(
        "a slice for the Service added while asleep",
        PROMPTLY,
        || async {
            wake_slices(&scenario, &namespace)
                .await
                .contains_key("web-admin-cronscaler-wake")
                .then_some(())
        },
    )
    .await;
    // A Service deleted: its slice goes with it, though the Service does not own it.
    services
        .delete("web-admin", &Default::default())
        .await
        .expect("deleting web-admin");
    eventually("web-admin's slice gone with it", PROMPTLY, || async {
        (!wake_slices(&scenario, &namespace)
            .await
            .contains_key("web-admin-cronscaler-wake"))
        .then_some(())
    })
    .await;
    create_service_with(&scenario, &namespace, "web-admin", admin).await;
    eventually("web-admin's slice back", PROMPTLY, || async {
        wake_slices(&scenario, &namespace)
            .await
            .contains_key("web-admin-cronscaler-wake")
            .then_some(())
    })
    .await;

    // A call inside the cluster, sent where the slice says, wakes the Namespace.
    let routed = SocketAddr::new(addresses[0].parse().expect("an address"), backend.port());
    let host = format!("web.{namespace}.svc.cluster.local");
    let browser = [("Host", host.as_str()), ("Accept", "text/html")];
    let answer = request_from(ip, routed, "/", &browser).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(
        answer.body.contains(&format!("Waking up {namespace}")),
        "{}",
        answer.body
    );
    replicas_become(&deployments, "web", 2, "web woken", PROMPTLY).await;
    // Looked at every 2 s while it wakes: still the install's, as uninstalling then needs.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waking = wake_slices(&scenario, &namespace).await;
    assert_eq!(
        waking.len(),
        2,
        "woken, not ready: requests still get the page"
    );
    for slice in waking.values() {
        let owners: Vec<&str> = (slice.owner_references().iter())
            .map(|owner| owner.kind.as_str())
            .collect();
        assert_eq!(owners, ["ClusterRole"], "{:?}", slice.metadata.name);
    }
    slices_gone_once_served(&scenario, &namespace, "web").await;

    // Opting out takes them away; `restore` too.
    let other = format!("{namespace}-b");
    support::create_namespace(&scenario.client, &other).await;
    support::create_deployment(&scenario.client, &other, "web", 1).await;
    create_service(&scenario, &other, "web", json!([{ "port": 80 }])).await;
    opt_in(&scenario, &other, json!({})).await;
    let placed = || async { (!wake_slices(&scenario, &other).await.is_empty()).then_some(()) };
    eventually("a slice in the other Namespace", PROMPTLY, placed).await;
    support::annotate_namespace(
        &scenario.client,
        &other,
        json!({ "cronscaler.dev/wake-on-request": null }),
    )
    .await;
    eventually("no slice once opted out", PROMPTLY, || async {
        wake_slices(&scenario, &other)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    opt_in(&scenario, &other, json!({})).await;
    eventually("a slice again", PROMPTLY, placed).await;
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let said = scenario.said(&["restore", "-n", &other, "--all"]);
    assert!(
        said.contains(&format!(
            "cleaned up EndpointSlice {other}/web-cronscaler-wake"
        )),
        "{said}"
    );
    assert!(wake_slices(&scenario, &other).await.is_empty());
    scenario.finish().await;
}

/// Waits for `web`'s `WokenOnDemand`, and asserts it names the request `by`.
async fn woken_on_demand_by(scenario: &Scenario, by: &str) {
    let woken = scenario.event("web", "WokenOnDemand", PROMPTLY).await;
    let note = woken.note.unwrap_or_default();
    assert!(note.contains(by), "{note}");
}
