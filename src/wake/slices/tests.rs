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
        json!({ "ports": [
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
}

#[test]
fn an_asleep_namespace_gets_a_slice_per_service_with_its_port_names_and_the_backend_s_port() {
    let plan = plan("shop", &[web()], &two_pods(), 8081, &[]);
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
fn a_slice_already_as_it_should_be_is_not_written_and_one_that_differs_is() {
    let first = plan("shop", &[web()], &two_pods(), 8081, &[]);
    let again = plan("shop", &[web()], &two_pods(), 8081, &first.apply);
    assert!(again.is_empty(), "{again:?}");
    let moved = plan("shop", &[web()], &Backend::default(), 8081, &first.apply);
    assert_eq!(moved.apply.len(), 1, "the backend's pods went away");
    assert!(moved.apply[0].endpoints.is_empty());
    let other_port = plan("shop", &[web()], &two_pods(), 9090, &first.apply);
    assert_eq!(other_port.apply.len(), 1);
}

#[test]
fn slices_no_longer_wanted_and_those_of_services_gone_are_deleted() {
    let api = ServicePorts::of(&service("api", json!({ "ports": [{ "port": 80 }] }))).unwrap();
    let both = plan("shop", &[web(), api], &two_pods(), 8081, &[]).apply;
    let web_only = plan("shop", &[web()], &two_pods(), 8081, &both);
    assert_eq!(web_only.delete, ["api-cronscaler-wake"]);
    assert!(web_only.apply.is_empty());
    let awake = plan("shop", &[], &two_pods(), 8081, &both);
    assert_eq!(awake.delete, ["api-cronscaler-wake", "web-cronscaler-wake"]);
    assert!(awake.apply.is_empty());
}

#[test]
fn a_service_s_family_picks_the_backend_s_addresses_and_an_external_name_gets_no_slice() {
    let v6 = ServicePorts::of(&service(
        "web6",
        json!({ "ipFamilies": ["IPv6"], "ports": [{ "port": 80 }] }),
    ))
    .unwrap();
    let backend = Backend::of(&[
        backend_slice("IPv4", json!([{ "addresses": ["10.0.0.7"] }])),
        backend_slice("IPv6", json!([{ "addresses": ["fd00::7"] }])),
    ]);
    let slice = &plan("shop", &[v6], &backend, 8081, &[]).apply[0];
    assert_eq!(slice.address_type, "IPv6");
    assert_eq!(slice.endpoints[0].addresses, ["fd00::7"]);
    let external = service(
        "db",
        json!({ "type": "ExternalName", "externalName": "db.example.com" }),
    );
    assert_eq!(ServicePorts::of(&external), None);
}

#[test]
fn slices_stay_from_the_sleep_until_the_woken_namespace_is_ready() {
    assert_eq!(Stage::of(true, true, false).slices(false), Slices::Place);
    assert_eq!(
        Stage::of(true, true, true).slices(true),
        Slices::Place,
        "asleep"
    );
    let waking = Stage::of(true, false, true);
    assert_eq!(waking, Stage::Waking);
    assert_eq!(waking.slices(false), Slices::Keep, "woken, not ready yet");
    assert_eq!(waking.slices(true), Slices::Remove, "woken and ready");
    assert_eq!(
        Stage::of(true, false, false).slices(false),
        Slices::Remove,
        "awake by day: none made"
    );
    assert_eq!(
        Stage::of(false, true, true).slices(false),
        Slices::Remove,
        "opted out: removed"
    );
}

mod against_the_api_server {
    use chrono::TimeZone as _;
    use chrono_tz::Tz;
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        runtime::key::ObjectKey,
        scaling::namespaces::NamespaceSchedules,
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
        backend_writer.apply_watcher_event(&watcher::Event::Apply(backend_slice(
            "IPv4",
            json!([{ "addresses": ["10.0.0.7"] }]),
        )));
        let ctx = WakeSlices {
            client,
            namespaces,
            ours,
            backend,
            backend_service: ObjectKey::new("cronscaler", "cronscaler-wake"),
            port: 8082,
            default_timezone: Tz::UTC,
            dry_run: false,
        };
        (ctx, Box::new((ours_writer, backend_writer)))
    }

    #[tokio::test]
    async fn falling_asleep_lists_the_services_once_and_applies_a_slice_each_until_the_morning() {
        let (client, server) = mock_client();
        let services = json!({ "apiVersion": "v1", "kind": "ServiceList", "metadata": {}, "items": [
            service("web", json!({ "ports": [{ "name": "http", "port": 80 }] })),
        ]});
        let server = tokio::spawn(server.serve(vec![
            Exchange::new(
                "GET",
                "/api/v1/namespaces/shop/services?&resourceVersion=0&resourceVersionMatch=NotOlderThan",
            )
            .reply(200, services),
            Exchange::new("PATCH", format!("{SLICE}?&force=true&fieldManager=cronscaler"))
                .content_type("application/apply-patch+yaml")
                .body(json!({
                    "metadata": { "labels": { "endpointslice.kubernetes.io/managed-by": "cronscaler.dev" } },
                    "endpoints": [{ "addresses": ["10.0.0.7"] }],
                    "ports": [{ "name": "http", "port": 8082 }],
                }))
                .reply(200, json!({})),
        ]));
        let (ctx, _writers) = context(client, shop(true), &[]);
        let again = reconcile(&ctx, "shop", now()).await.expect("written");
        assert_eq!(
            again,
            Some(std::time::Duration::from_secs(9 * 3600)),
            "looked at again at 07:00"
        );
        drop(ctx);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn woken_the_slices_stay_until_the_workloads_are_ready_then_go() {
        let placed = plan("shop", &[web()], &two_pods(), 8082, &[]).apply;
        let deployments = |available: i32| {
            json!({ "apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": [{
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "web", "namespace": "shop" },
                "spec": { "replicas": 2 },
                "status": { "availableReplicas": available },
            }]})
        };
        let none = json!({ "apiVersion": "apps/v1", "kind": "StatefulSetList", "metadata": {}, "items": [] });
        let list = |plural: &str| {
            format!(
                "/apis/apps/v1/namespaces/shop/{plural}?&resourceVersion=0&resourceVersionMatch=NotOlderThan"
            )
        };
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", list("deployments")).reply(200, deployments(1)),
            Exchange::new("GET", list("statefulsets")).reply(200, none.clone()),
            Exchange::new("GET", list("deployments")).reply(200, deployments(2)),
            Exchange::new("GET", list("statefulsets")).reply(200, none),
            Exchange::new("DELETE", format!("{SLICE}?")).reply(200, json!({})),
        ]));
        // Awake by its schedule on a weekday: woken.
        let (ctx, _writers) = context(client, shop(false), &placed);
        let again = reconcile(&ctx, "shop", now()).await.expect("read");
        assert_eq!(again, Some(READ_EVERY), "not ready: the slice stays");
        let again = reconcile(&ctx, "shop", now()).await.expect("deleted");
        assert!(
            again.is_some_and(|again| again > READ_EVERY),
            "ready: looked at again at the weekend's sleep, {again:?}"
        );
        drop(ctx);
        server.await.unwrap();
    }
}
