use serde_json::json;

use super::*;

fn backend_slice(family: &str, endpoints: serde_json::Value) -> EndpointSlice {
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": { "name": "cronscaler-wake-x1", "namespace": "cronscaler" },
        "addressType": family,
        "endpoints": endpoints,
        "ports": [{ "name": "http", "port": 8081, "protocol": "TCP" }],
    }))
    .unwrap()
}

fn service(name: &str, spec: serde_json::Value) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name, "namespace": "shop", "uid": format!("uid-{name}") },
        "spec": spec,
    }))
    .unwrap()
}

fn web() -> ServicePorts {
    ServicePorts::of(&service(
        "web",
        json!({ "selector": { "app": "web" }, "ports": [
            { "name": "http", "port": 80, "targetPort": 8080 },
            { "name": "grpc", "port": 9000, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c" },
        ]}),
    ))
    .unwrap()
}

fn two_pods() -> Backend {
    Backend::of(&[backend_slice(
        "IPv4",
        json!([
            { "addresses": ["10.0.0.7"], "conditions": { "ready": true }, "nodeName": "node-a", "zone": "z1" },
            { "addresses": ["10.0.0.8"] },
            { "addresses": ["10.0.0.9"], "conditions": { "ready": false } },
            { "addresses": ["10.0.0.10"], "conditions": { "ready": true, "terminating": true } },
        ]),
    )])
}

#[test]
fn the_backend_is_its_ready_addresses_an_endpoint_without_conditions_counting_as_ready() {
    let backend = two_pods();
    let addresses: Vec<&str> = (backend.endpoints.iter())
        .map(|endpoint| endpoint.address.as_str())
        .collect();
    assert_eq!(addresses, ["10.0.0.7", "10.0.0.8"]);
    assert_eq!(backend.port, Some(8081), "the port of its slices");
}

#[test]
fn an_asleep_namespace_gets_a_slice_per_service_with_its_port_names_and_the_backend_s_port() {
    let plan = plan("shop", &[web()], &two_pods(), &[], None);
    assert!(plan.delete.is_empty());
    assert_eq!(
        serde_json::to_value(&plan.apply).unwrap(),
        json!([{
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "name": "web-cronscaler-wake", "namespace": "shop",
                "labels": {
                    "endpointslice.kubernetes.io/managed-by": "cronscaler.dev",
                    "kubernetes.io/service-name": "web",
                },
                "ownerReferences": [{ "apiVersion": "v1", "kind": "Service", "name": "web", "uid": "uid-web" }],
            },
            "addressType": "IPv4",
            "endpoints": [
                { "addresses": ["10.0.0.7"], "conditions": { "ready": true, "serving": true, "terminating": false }, "nodeName": "node-a", "zone": "z1" },
                { "addresses": ["10.0.0.8"], "conditions": { "ready": true, "serving": true, "terminating": false } },
            ],
            "ports": [
                { "name": "http", "port": 8081, "protocol": "TCP" },
                { "name": "grpc", "port": 8081, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c" },
            ],
        }])
    );
}

#[test]
fn the_install_s_cluster_role_owns_the_slices_so_that_uninstalling_deletes_them() {
    let install: OwnerReference = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "name": "cronscaler", "uid": "uid-install",
    }))
    .unwrap();
    let owned = plan("shop", &[web()], &two_pods(), &[], Some(&install));
    assert_eq!(
        owned.apply[0].metadata.owner_references,
        Some(vec![install.clone()]),
        "the install alone: the Service as a second owner would keep the slice past uninstall"
    );
    // Slices the Service owned (made before the owner was given) are given to the install.
    let by_service = plan("shop", &[web()], &two_pods(), &[], None);
    let moved = plan(
        "shop",
        &[web()],
        &two_pods(),
        &by_service.apply,
        Some(&install),
    );
    assert_eq!(moved.apply, owned.apply);
}

#[test]
fn a_slice_already_as_it_should_be_is_not_written_and_one_that_differs_is() {
    let first = plan("shop", &[web()], &two_pods(), &[], None);
    let again = plan("shop", &[web()], &two_pods(), &first.apply, None);
    assert!(again.is_empty(), "{again:?}");
    let moved = plan("shop", &[web()], &Backend::default(), &first.apply, None);
    assert_eq!(moved.apply.len(), 1, "the backend's pods went away");
    assert!(moved.apply[0].endpoints.is_empty());
    let elsewhere = Backend {
        port: Some(9090),
        ..two_pods()
    };
    let other_port = plan("shop", &[web()], &elsewhere, &first.apply, None);
    assert_eq!(other_port.apply.len(), 1, "the backend listens elsewhere");
}

/// The API server names an unnamed port `""`: read back so, the slice is as written.
#[test]
fn a_slice_of_an_unnamed_port_read_back_as_the_api_server_names_it_is_not_written_again() {
    let spec = json!({ "selector": { "app": "web" }, "ports": [{ "port": 80 }] });
    let unnamed = ServicePorts::of(&service("web", spec)).expect("a Service");
    let first = plan(
        "shop",
        std::slice::from_ref(&unnamed),
        &two_pods(),
        &[],
        None,
    );
    let mut stored = first.apply.clone();
    for port in stored
        .iter_mut()
        .flat_map(|slice| slice.ports.iter_mut().flatten())
    {
        assert_eq!(port.name, None, "written with no name");
        port.name = Some(String::new());
    }
    let again = plan("shop", &[unnamed], &two_pods(), &stored, None);
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn slices_no_longer_wanted_and_those_of_services_gone_are_deleted() {
    let api = ServicePorts::of(&service(
        "api",
        json!({ "selector": { "app": "api" }, "ports": [{ "port": 80 }] }),
    ))
    .unwrap();
    let both = plan("shop", &[web(), api], &two_pods(), &[], None).apply;
    let web_only = plan("shop", &[web()], &two_pods(), &both, None);
    assert_eq!(web_only.delete, ["api-cronscaler-wake"]);
    assert!(web_only.apply.is_empty());
    let awake = plan("shop", &[], &two_pods(), &both, None);
    assert_eq!(awake.delete, ["api-cronscaler-wake", "web-cronscaler-wake"]);
    assert!(awake.apply.is_empty());
}

#[test]
fn a_service_s_family_picks_the_backend_s_addresses_and_an_external_name_gets_no_slice() {
    let v6 = ServicePorts::of(&service(
        "web6",
        json!({ "selector": { "app": "web" }, "ipFamilies": ["IPv6"], "ports": [{ "port": 80 }] }),
    ))
    .unwrap();
    let backend = Backend::of(&[
        backend_slice("IPv4", json!([{ "addresses": ["10.0.0.7"] }])),
        backend_slice("IPv6", json!([{ "addresses": ["fd00::7"] }])),
    ]);
    let slice = &plan("shop", &[v6], &backend, &[], None).apply[0];
    assert_eq!(slice.address_type, "IPv6");
    assert_eq!(slice.endpoints[0].addresses, ["fd00::7"]);
    let external = service(
        "db",
        json!({ "type": "ExternalName", "externalName": "db.example.com" }),
    );
    assert_eq!(ServicePorts::of(&external), None);
}

#[test]
fn a_dual_stack_service_gets_a_slice_for_each_of_its_families() {
    let both = ServicePorts::of(&service(
        "web",
        json!({ "selector": { "app": "web" }, "ipFamilies": ["IPv4", "IPv6"], "ports": [{ "port": 80 }] }),
    ))
    .unwrap();
    let backend = Backend::of(&[
        backend_slice("IPv4", json!([{ "addresses": ["10.0.0.7"] }])),
        backend_slice("IPv6", json!([{ "addresses": ["fd00::7"] }])),
    ]);
    let slices: Vec<(String, String, Vec<String>)> = plan("shop", &[both], &backend, &[], None)
        .apply
        .into_iter()
        .map(|slice| {
            let addresses = slice
                .endpoints
                .iter()
                .flat_map(|e| e.addresses.clone())
                .collect();
            (
                slice.metadata.name.unwrap_or_default(),
                slice.address_type,
                addresses,
            )
        })
        .collect();
    assert_eq!(
        slices,
        [
            (
                "web-cronscaler-wake".into(),
                "IPv4".into(),
                vec!["10.0.0.7".into()]
            ),
            (
                "web-cronscaler-wake-ipv6".into(),
                "IPv6".into(),
                vec!["fd00::7".into()]
            ),
        ]
    );
}

fn selecting(name: &str, spec: serde_json::Value) -> Option<ServicePorts> {
    ServicePorts::of(&service(name, spec))
}

fn pods(app: &str, asleep: bool) -> Workload {
    Workload {
        pod_labels: BTreeMap::from([("app".to_string(), app.to_string())]),
        asleep,
        sleep_due: asleep,
    }
}

fn names(services: &[ServicePorts]) -> Vec<&str> {
    services
        .iter()
        .map(|service| service.name.as_str())
        .collect()
}

#[test]
fn a_service_gets_a_slice_only_where_the_backend_can_stand_in_for_every_pod_it_selects() {
    let ports = json!([{ "port": 80 }]);
    assert_eq!(
        selecting("db", json!({ "ports": ports })),
        None,
        "no selector: an external database"
    );
    assert_eq!(
        selecting(
            "web-headless",
            json!({ "selector": { "app": "web" }, "clusterIP": "None", "ports": ports })
        ),
        None,
        "headless: its DNS would hand out the backend's address"
    );
    let services = ["web", "api", "tools", "nobody"]
        .map(|app| selecting(app, json!({ "selector": { "app": app }, "ports": ports })).unwrap())
        .to_vec();
    // api: one Deployment asleep, one awake (excluded, unscheduled or woken by hand); tools: an
    // always-on StatefulSet; nobody: selects nothing.
    let workloads = vec![
        pods("web", true),
        pods("api", true),
        pods("api", false),
        pods("tools", false),
    ];
    let seen = Seen {
        services,
        workloads,
        ..Seen::default()
    };
    assert_eq!(names(&wanted(Stage::Asleep, seen.clone())), ["web"]);
    assert!(
        wanted(Stage::Awake, seen).is_empty(),
        "awake or opted out: none"
    );
}

#[test]
fn woken_each_slice_stays_until_its_own_service_is_served_and_none_past_the_step_timeout() {
    let ports = json!([{ "port": 80 }]);
    let services: Vec<ServicePorts> = ["web", "api", "admin"]
        .map(|app| selecting(app, json!({ "selector": { "app": app }, "ports": ports })).unwrap())
        .to_vec();
    let woken = Seen {
        services,
        workloads: vec![pods("web", false), pods("api", false), pods("admin", false)],
        placed: BTreeSet::from(["web".to_string(), "api".to_string()]),
        served: BTreeSet::from(["web".to_string()]),
        timed_out: false,
    };
    assert_eq!(
        names(&wanted(Stage::Waking, woken.clone())),
        ["api"],
        "web is served by its own Pods; admin had none: none made while waking"
    );
    let gone = Seen {
        workloads: vec![pods("web", false)],
        ..woken.clone()
    };
    assert!(
        wanted(Stage::Waking, gone).is_empty(),
        "api's workload was deleted: nothing to wait for"
    );
    let late = Seen {
        timed_out: true,
        ..woken
    };
    assert!(wanted(Stage::Waking, late).is_empty());
}

mod against_the_api_server {
    use chrono::TimeZone as _;
    use chrono_tz::Tz;
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        namespaces::NamespaceSchedules,
        runtime::key::ObjectKey,
        schedule::{DOWNTIME, WAKE_ON_REQUEST, test_support::annotations},
    };

    const SLICE: &str =
        "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices/web-cronscaler-wake";

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 25, 22, 0, 0)
            .unwrap()
    }

    /// `shop` opted in, asleep every night from 20:00 to 07:00 (UTC), or awake all week.
    fn shop(asleep_tonight: bool) -> NamespaceSchedules {
        let namespaces = NamespaceSchedules::watched([]);
        let downtime = if asleep_tonight {
            "Mon-Sun 20:00-07:00"
        } else {
            "Sat-Sun 00:00-24:00"
        };
        namespaces.update(
            "shop",
            None,
            &annotations(&[(DOWNTIME, downtime), (WAKE_ON_REQUEST, "2h")]),
        );
        namespaces
    }

    fn context(
        client: kube::Client,
        namespaces: NamespaceSchedules,
        placed: &[EndpointSlice],
    ) -> (WakeSlices, impl Drop) {
        let (ours, mut ours_writer) = reflector::store();
        for slice in placed {
            ours_writer.apply_watcher_event(&watcher::Event::Apply(slice.clone()));
        }
        let (backend, mut backend_writer) = reflector::store();
        backend_writer.apply_watcher_event(&watcher::Event::Apply(one_pod_slice()));
        let ctx = WakeSlices {
            client: client.clone(),
            namespaces,
            ours,
            backend,
            backend_service: ObjectKey::new("cronscaler", "cronscaler-wake"),
            default_timezone: Tz::UTC,
            writes: crate::runtime::writes::Writes::new(
                crate::runtime::events::Events::new(client, None),
                false,
            ),
            step_timeout: chrono::TimeDelta::minutes(5),
            owner: None,
            written: Written::default(),
            levers: Default::default(),
        };
        (ctx, Box::new((ours_writer, backend_writer)))
    }

    fn one_pod_slice() -> EndpointSlice {
        backend_slice("IPv4", json!([{ "addresses": ["10.0.0.7"] }]))
    }

    /// The backend of [`context`].
    fn one_pod() -> Backend {
        Backend::of(&[one_pod_slice()])
    }

    fn list(path: &str) -> String {
        format!("{path}?&resourceVersion=0&resourceVersionMatch=NotOlderThan")
    }

    fn workloads_list(plural: &str) -> String {
        list(&format!("/apis/apps/v1/namespaces/shop/{plural}"))
    }

    /// The Deployment `web`, whose Pods are `app: web`, with `replicas` and its last transition.
    fn deployments(replicas: i32, last: &str) -> serde_json::Value {
        json!({ "apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": [{
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "shop",
                "annotations": { "cronscaler.dev/last-transition": last },
            },
            "spec": { "replicas": replicas, "template": { "metadata": { "labels": { "app": "web" } } } },
        }]})
    }

    fn no_stateful_sets() -> serde_json::Value {
        json!({ "apiVersion": "apps/v1", "kind": "StatefulSetList", "metadata": {}, "items": [] })
    }

    fn listed_web() -> Service {
        service(
            "web",
            json!({ "selector": { "app": "web" }, "ports": [{ "name": "http", "port": 80 }] }),
        )
    }

    fn services() -> serde_json::Value {
        json!({ "apiVersion": "v1", "kind": "ServiceList", "metadata": {}, "items": [listed_web()] })
    }

    /// The slice of ours that `shop` has once asleep.
    fn placed() -> Vec<EndpointSlice> {
        let web = ServicePorts::of(&listed_web()).unwrap();
        plan("shop", &[web], &one_pod(), &[], None).apply
    }

    /// The reads of a look at `shop` asleep or waking: its Services, then its workloads.
    fn reads(replicas: i32, last: &str) -> Vec<Exchange> {
        vec![
            Exchange::new("GET", list("/api/v1/namespaces/shop/services")).reply(200, services()),
            Exchange::new("GET", workloads_list("deployments"))
                .reply(200, deployments(replicas, last)),
            Exchange::new("GET", workloads_list("statefulsets")).reply(200, no_stateful_sets()),
        ]
    }

    /// The EndpointSlices the cluster wrote for `web` (ours left out), ready or not.
    fn own_slices(ready: bool) -> Exchange {
        Exchange::new(
            "GET",
            "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?&labelSelector=endpointslice.kubernetes.io%2Fmanaged-by%21%3Dcronscaler.dev&resourceVersion=0&resourceVersionMatch=NotOlderThan",
        )
        .reply(200, json!({ "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSliceList", "metadata": {}, "items": [{
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": { "name": "web-x7k2p", "namespace": "shop", "labels": { "kubernetes.io/service-name": "web" } },
            "addressType": "IPv4",
            "endpoints": [{ "addresses": ["10.1.0.5"], "conditions": { "ready": ready } }],
        }]}))
    }

    #[tokio::test]
    async fn falling_asleep_reads_the_services_and_workloads_once_and_applies_a_slice_until_the_morning()
     {
        let (client, server) = mock_client();
        let mut script = reads(0, "2026-11-25T20:00:00Z down");
        script.push(own_slices(false));
        script.push(
            Exchange::new("PATCH", format!("{SLICE}?&force=true&fieldManager=cronscaler"))
                .content_type("application/apply-patch+yaml")
                .body(json!({
                    "metadata": { "labels": { "endpointslice.kubernetes.io/managed-by": "cronscaler.dev" } },
                    "endpoints": [{ "addresses": ["10.0.0.7"] }],
                    "ports": [{ "name": "http", "port": 8081 }], // the port of the backend's own slices
                }))
                .reply(200, json!({})),
        );
        let server = tokio::spawn(server.serve(script));
        let (ctx, _writers) = context(client, shop(true), &[]);
        let again = reconcile(&ctx, "shop", now()).await.expect("written");
        assert_eq!(
            again,
            crate::runtime::worker::Next::At(now() + chrono::TimeDelta::hours(9)),
            "looked at again at 07:00"
        );
        drop(ctx);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn asleep_a_service_whose_workload_is_awake_gets_no_slice() {
        let (client, server) = mock_client();
        // Scaled up by hand in the night: no record of ours says it sleeps.
        let mut script = reads(2, "2026-11-25T20:00:00Z down");
        script.push(own_slices(false));
        let server = tokio::spawn(server.serve(script));
        let (ctx, _writers) = context(client, shop(true), &[]);
        reconcile(&ctx, "shop", now()).await.expect("read");
        drop(ctx);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn asleep_a_slice_beside_a_ready_endpoint_of_the_service_s_own_goes() {
        let placed = placed();
        let (client, server) = mock_client();
        // Its workload sleeps, but the Service sends to a Pod that runs (a bare Pod, a
        // DaemonSet's) too.
        let mut script = reads(0, "2026-11-25T20:00:00Z down");
        script.push(own_slices(true));
        script.push(Exchange::new("DELETE", format!("{SLICE}?")).reply(200, json!({})));
        let server = tokio::spawn(server.serve(script));
        let (ctx, _writers) = context(client, shop(true), &placed);
        reconcile(&ctx, "shop", now()).await.expect("deleted");
        drop(ctx);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn woken_a_slice_stays_until_its_service_has_a_ready_endpoint_of_its_own_then_goes() {
        let placed = placed();
        let woken = "2026-11-25T21:58:00Z up";
        let (client, server) = mock_client();
        let mut script = reads(2, woken);
        script.push(own_slices(false));
        script.extend(reads(2, woken));
        script.push(own_slices(true));
        script.push(Exchange::new("DELETE", format!("{SLICE}?")).reply(200, json!({})));
        let server = tokio::spawn(server.serve(script));
        // Awake by its schedule on a weekday: woken.
        let (ctx, _writers) = context(client, shop(false), &placed);
        let again = reconcile(&ctx, "shop", now()).await.expect("read");
        assert_eq!(
            again,
            crate::runtime::worker::Next::After(READ_EVERY),
            "not served yet: the slice stays"
        );
        reconcile(&ctx, "shop", now()).await.expect("deleted");
        drop(ctx);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn woken_past_the_step_timeout_no_slice_is_left_and_the_workload_not_ready_is_named() {
        let placed = placed();
        let (client, server) = mock_client();
        let mut script = reads(2, "2026-11-25T21:50:00Z up");
        script.push(own_slices(false));
        script.push(Exchange::new("DELETE", format!("{SLICE}?")).reply(200, json!({})));
        script.push(
            // A Namespace's Events live in `default`.
            Exchange::new("POST", crate::mock_api::events_path("default"))
                .body(json!({ "type": "Warning", "reason": "WakeNotReady" }))
                .reply(201, json!({})),
        );
        let server = tokio::spawn(server.serve(script));
        let (ctx, _writers) = context(client, shop(false), &placed);
        reconcile(&ctx, "shop", now()).await.expect("removed");
        drop(ctx);
        server.await.unwrap();
    }
}

/// A workload whose scale-down someone reverted is not waited for: waited for, its Namespace
/// would be read every 2 s all night. One whose scale-down is due and not yet made is, and so is
/// one that sleeps through another object (its Foo, its ScaledObject) whose record is made and
/// whose controller has not followed yet, for `--wake-step-timeout`.
#[test]
fn a_namespace_waits_only_for_a_scale_down_not_made_yet() {
    let web = selecting(
        "web",
        json!({ "selector": { "app": "web" }, "ports": [{ "port": 80 }] }),
    )
    .expect("a Service");
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let seen = |replicas, record| Seen {
        services: vec![web.clone()],
        workloads: vec![Workload::of(labels.clone(), replicas, record)],
        ..Seen::default()
    };
    let due = SleepRecord {
        scheduled_asleep: true,
        ..SleepRecord::default()
    };
    assert!(
        pending(Stage::Asleep, &seen(2, due)),
        "its scale-down comes"
    );
    let recorded = SleepRecord { slept: true, ..due };
    assert!(
        !pending(Stage::Asleep, &seen(2, recorded)),
        "reverted: nothing comes"
    );
    assert!(!pending(Stage::Asleep, &seen(0, recorded)), "asleep");
    let following = SleepRecord {
        following: true,
        ..recorded
    };
    assert!(
        pending(Stage::Asleep, &seen(2, following)),
        "its Foo or its ScaledObject is asleep, and their controller follows"
    );
    assert!(!pending(Stage::Asleep, &seen(0, following)), "followed");
    let asleep = Workload::of(labels.clone(), 0, following);
    assert!(asleep.asleep, "asleep through what it sleeps through");
}
