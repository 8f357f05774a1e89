//! The wake-up backend apart (`cronscaler wake-backend`), against a real API server: it runs as
//! its own ServiceAccount, granted by the install's RBAC alone (`rbac/wake-backend.yaml`), which
//! may read and ask, nothing else; a request still wakes the Namespace, through the controller;
//! and what a compromised backend could do with its grants, ask for a Namespace that did not opt
//! in, wakes nothing.

use crate::support;

use std::{net::SocketAddr, time::Duration, time::Instant};

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::{
    Api, Client,
    api::{DynamicObject, PostParams},
};
use serde_json::json;
use support::{
    Scenario, envtest, eventually, replicas_become, stop_cleanly_and_finish,
    wake::{
        AWAKE_UNTIL, PROMPTLY, asked_no_more, install_wake_requests, namespace_annotations,
        request, wake_carried_out, wake_requests, web_asleep, woken_within,
    },
};

/// Whether `client` may `verb` `resource` of `group` in `namespace`, as the API server says
/// (`kubectl auth can-i`).
async fn can_i(client: &Client, verb: &str, group: &str, resource: &str, namespace: &str) -> bool {
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": { "resourceAttributes": {
            "verb": verb, "group": group, "resource": resource, "namespace": namespace,
        } },
    }))
    .expect("a SelfSubjectAccessReview");
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("the API server reviews the access");
    answer.status.is_some_and(|status| status.allowed)
}

/// A `WakeRequest` for `namespace`, made with `client`.
async fn ask(client: &Client, namespace: &str) -> Result<DynamicObject, kube::Error> {
    ask_with(client, namespace, json!({ "name": "wake-on-request" })).await
}

/// A `WakeRequest` for `namespace` with the metadata `metadata`, made with `client`.
async fn ask_with(
    client: &Client,
    namespace: &str,
    mut metadata: serde_json::Value,
) -> Result<DynamicObject, kube::Error> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "WakeRequest"),
        "wakerequests",
    );
    metadata["namespace"] = json!(namespace);
    let request: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1", "kind": "WakeRequest",
        "metadata": metadata,
        "spec": { "by": "a request for compromised.example/" },
    }))
    .expect("a WakeRequest");
    Api::namespaced_with(client.clone(), namespace, &resource)
        .create(&PostParams::default(), &request)
        .await
}

/// A client signed in as the backend's ServiceAccount, from the install's RBAC.
async fn backend_client(scenario: &Scenario) -> Client {
    let kubeconfig = (scenario.plane())
        .sign_in_as("cronscaler-wake")
        .await
        .expect("the backend's ServiceAccount");
    envtest::client_from(&kubeconfig).await
}

/// The controller over the whole cluster, carrying out WakeRequests, listening for nobody.
async fn start_controller(scenario: &Scenario) -> support::Controller {
    install_wake_requests(&scenario.client).await;
    let mut controller =
        scenario.start_cluster_wide_controller("cronscaler", &["--grace-period", "0s"]);
    controller.wait_ready().await;
    controller
}

#[tokio::test]
async fn the_backend_apart_may_only_ask_and_a_request_still_wakes_through_the_controller() {
    let Some(scenario) = Scenario::own("wake-apart", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let controller = start_controller(&scenario).await;
    let kubeconfig = (scenario.plane())
        .sign_in_as("cronscaler-wake")
        .await
        .expect("the backend's ServiceAccount, from the install's RBAC");
    let as_backend = envtest::client_from(&kubeconfig).await;

    // What the install lets it do, as the API server says.
    for (verb, group, resource) in [
        ("patch", "", "namespaces"),
        ("update", "", "namespaces"),
        ("create", "apps", "deployments"),
        ("patch", "apps", "deployments"),
        ("create", "discovery.k8s.io", "endpointslices"),
        ("patch", "discovery.k8s.io", "endpointslices"),
        ("delete", "discovery.k8s.io", "endpointslices"),
        ("create", "", "services"),
        ("patch", "", "services"),
        ("create", "events.k8s.io", "events"),
        ("create", "", "events"),
        ("get", "", "secrets"),
        ("delete", "cronscaler.dev", "wakerequests"),
    ] {
        assert!(
            !can_i(&as_backend, verb, group, resource, &namespace).await,
            "the wake-up backend may {verb} {resource} ({group:?})"
        );
    }
    assert!(
        can_i(
            &as_backend,
            "create",
            "cronscaler.dev",
            "wakerequests",
            &namespace
        )
        .await
    );

    let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let wake_addr = addr.to_string();
    let flags = [
        "--wake-addr",
        &wake_addr,
        "--wake-trusted-proxies",
        "127.0.0.1",
    ];
    let mut backend = scenario.spawn_as(&kubeconfig, "cronscaler-wake", &["wake-backend"], &flags);
    backend.wait_ready().await;
    let deployments = web_asleep(&scenario, json!({})).await;

    let asked = Instant::now();
    let answered = request(addr, "/", &[("X-Namespace", namespace.as_str())]).await;
    assert_eq!(answered.status, 503);
    assert!(answered.body.contains(&namespace), "{}", answered.body);
    wake_carried_out(&scenario, &namespace, asked, "wake-apart").await;
    replicas_become(&deployments, "web", 2, "web woken", PROMPTLY).await;
    let woken = scenario.event("web", "WokenOnDemand", PROMPTLY).await;
    let note = woken.note.unwrap_or_default();
    assert!(note.contains("(set by a request for "), "who asked: {note}");

    // A compromised backend asks, with its own grants, for a Namespace that is asleep by its
    // schedule but did not opt in: nothing is woken, and the request goes.
    let closed = "closed";
    support::create_namespace(&scenario.client, closed).await;
    support::annotate_namespace(
        &scenario.client,
        closed,
        json!({ "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00" }),
    )
    .await;
    ask(&as_backend, closed)
        .await
        .expect("the backend may ask, for any Namespace");
    eventually("the request for closed removed", PROMPTLY, || async {
        wake_requests(&scenario, closed)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    assert!(
        !namespace_annotations(&scenario, closed)
            .await
            .contains_key(AWAKE_UNTIL),
        "a Namespace that did not opt in is woken by nobody"
    );
    backend.assert_stops_cleanly(Duration::from_secs(10)).await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// A request made while no controller led (the leader gone without giving its lease back, the
/// standby not leading yet) is carried out by the standby once it leads: the standby's watch saw
/// it while its workers let go of every key, so only the resync on taking the lease queues it.
/// Otherwise it stays, and every later ask of its Namespace is refused as already made.
#[tokio::test]
async fn a_request_made_while_no_one_led_is_carried_out_by_the_next_leader() {
    let Some(scenario) =
        Scenario::own("wake-leaderless", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    install_wake_requests(&scenario.client).await;
    let elect = [
        "--grace-period",
        "0s",
        "--leader-elect",
        "--leader-elect-namespace",
        envtest::SA_NAMESPACE,
    ];
    let mut first = scenario.start_cluster_wide_controller("first", &elect);
    first.wait_ready().await;
    eventually("first leads", PROMPTLY, || async {
        let holder =
            support::lease_holder(&scenario.client, envtest::SA_NAMESPACE, "cronscaler").await;
        (holder.as_deref() == Some("first")).then_some(())
    })
    .await;
    let mut second = scenario.start_cluster_wide_controller("second", &elect);
    second.wait_ready().await;
    web_asleep(&scenario, json!({})).await;
    // Gone without a word: its lease stands until it runs out.
    first.kill();

    let as_backend = backend_client(&scenario).await;
    ask(&as_backend, &namespace)
        .await
        .expect("asked while no one leads");
    woken_within(&scenario, &namespace, PROMPTLY).await;
    asked_no_more(&scenario, &namespace).await;
    stop_cleanly_and_finish(scenario, second, Duration::from_secs(10)).await;
}

/// What else a compromised backend could try with its one grant: a request under another name
/// (to make many in one Namespace) is refused by the API server; one holding a finalizer is
/// carried out and removed all the same, so that it cannot hold the name and have every later
/// ask of its Namespace refused as made.
#[tokio::test]
async fn a_compromised_backend_can_neither_name_a_request_otherwise_nor_hold_one_with_a_finalizer()
{
    let Some(scenario) = Scenario::own("wake-held", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let controller = start_controller(&scenario).await;
    let as_backend = backend_client(&scenario).await;
    web_asleep(&scenario, json!({})).await;

    let refused = ask_with(&as_backend, &namespace, json!({ "name": "another" }))
        .await
        .expect_err("a request of another name");
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 422
            && status.message.contains("named wake-on-request")),
        "{refused:?}"
    );

    let held = json!({ "name": "wake-on-request", "finalizers": ["compromised.example/hold"] });
    ask_with(&as_backend, &namespace, held)
        .await
        .expect("a request holding a finalizer");
    woken_within(&scenario, &namespace, PROMPTLY).await;
    asked_no_more(&scenario, &namespace).await;
    ask(&as_backend, &namespace)
        .await
        .expect("the name is free for the next ask");
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// The EndpointSlice wake's grants go with the wake-up backend (`rbac/wake-slices.yaml`): a
/// controller asked to wake on requests says at start that it has them, as installed, and
/// without them which it lacks, instead of failing at night.
#[tokio::test]
async fn waking_on_requests_says_at_start_whether_it_has_the_slice_grants() {
    let Some(scenario) = Scenario::own("wake-ungranted", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let flags = ["--grace-period", "0s", "--wake-on-request"];
    let said = |controller: &support::Controller, what: &'static str| {
        let log = controller.log();
        log.lines()
            .find(|line| line.contains(what))
            .map(str::to_string)
    };
    let mut granted = scenario.start_cluster_wide_controller("granted", &flags);
    granted.wait_ready().await;
    eventually("the grants said", PROMPTLY, || async {
        said(&granted, "has every grant it needs")
    })
    .await;
    assert_eq!(said(&granted, "lacks grants"), None, "as installed");
    granted.assert_stops_cleanly(Duration::from_secs(10)).await;

    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> =
        Api::all(scenario.client.clone());
    bindings
        .delete("cronscaler-wake-slices", &Default::default())
        .await
        .expect("the slice grants taken away");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &flags);
    controller.wait_ready().await;
    let lack = eventually("the lack said", PROMPTLY, || async {
        said(&controller, "lacks grants")
    })
    .await;
    for lacking in [
        "create endpointslices.discovery.k8s.io",
        "patch endpointslices.discovery.k8s.io",
        "list services",
        "get clusterroles.rbac.authorization.k8s.io/cronscaler-wake-slices",
        "rbac/wake-slices.yaml",
    ] {
        assert!(lack.contains(lacking), "{lacking}: {lack}");
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
