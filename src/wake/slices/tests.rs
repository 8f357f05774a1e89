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
    let plan = plan("shop", true, &[web()], &two_pods(), 8081, &[]);
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
    let first = plan("shop", true, &[web()], &two_pods(), 8081, &[]);
    let again = plan("shop", true, &[web()], &two_pods(), 8081, &first.apply);
    assert!(again.is_empty(), "{again:?}");
    let moved = plan(
        "shop",
        true,
        &[web()],
        &Backend::default(),
        8081,
        &first.apply,
    );
    assert_eq!(moved.apply.len(), 1, "the backend's pods went away");
    assert!(moved.apply[0].endpoints.is_empty());
    let other_port = plan("shop", true, &[web()], &two_pods(), 9090, &first.apply);
    assert_eq!(other_port.apply.len(), 1);
}

#[test]
fn slices_no_longer_wanted_and_those_of_services_gone_are_deleted() {
    let api = ServicePorts::of(&service("api", json!({ "ports": [{ "port": 80 }] }))).unwrap();
    let both = plan("shop", true, &[web(), api], &two_pods(), 8081, &[]).apply;
    let web_only = plan("shop", true, &[web()], &two_pods(), 8081, &both);
    assert_eq!(web_only.delete, ["api-cronscaler-wake"]);
    assert!(web_only.apply.is_empty());
    let awake = plan("shop", false, &[web()], &two_pods(), 8081, &both);
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
    let slice = &plan("shop", true, &[v6], &backend, 8081, &[]).apply[0];
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
    assert!(Stage::of(true, true, false).wants_slices(false));
    assert!(Stage::of(true, true, true).wants_slices(true), "asleep");
    let waking = Stage::of(true, false, true);
    assert_eq!(waking, Stage::Waking);
    assert!(waking.wants_slices(false), "woken, not ready yet");
    assert!(!waking.wants_slices(true), "woken and ready");
    assert!(
        !Stage::of(true, false, false).wants_slices(false),
        "awake by day: none made"
    );
    assert!(
        !Stage::of(false, true, true).wants_slices(false),
        "opted out: removed"
    );
}
