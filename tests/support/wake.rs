//! What the wake-up backend's tests share: requests as a proxy (or anyone) sends them, from a
//! chosen source address, and the controller with the backend apart.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Namespace, Node, Pod},
    discovery::v1::EndpointSlice,
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{
    Controller, Scenario,
    envtest::{self, SA_NAMESPACE},
    eventually, replicas_become,
};

pub const AWAKE_UNTIL: &str = "cronscaler.dev/awake-until";
pub const LAST_WARM_UP: &str = "cronscaler.dev/last-warm-up";
pub const PROMPTLY: Duration = Duration::from_secs(30);
/// Where the tests' requests come from unless they say otherwise.
pub const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// An answer of the backend: status, head and body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// One request to the backend at `addr` from 127.0.0.1, as a proxy sends it.
pub async fn request(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Answer {
    request_from(LOOPBACK, addr, path, headers).await
}

/// One request to the backend at `addr` from the source address `from` (any of 127.0.0.0/8
/// reaches a loopback listener), or `None` if it got no whole answer within 10 s.
pub async fn try_request_from(
    from: IpAddr,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Option<Answer> {
    exchange(from, addr, ("GET", path), headers, "").await
}

/// One request `method path` with `headers` and `body` to `addr` from the source address `from`
/// (any of 127.0.0.0/8 reaches a loopback listener), or `None` if it got no whole answer within
/// 10 s.
pub async fn exchange(
    from: IpAddr,
    addr: SocketAddr,
    (method, path): (&str, &str),
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Answer> {
    let exchange = async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(SocketAddr::new(from, 0)).ok()?;
        let mut stream = socket.connect(addr).await.ok()?;
        let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            text.push_str("Host: cronscaler-wake\r\n");
        }
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            text.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        text.push_str("\r\n");
        text.push_str(body);
        stream.write_all(text.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let response = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = response.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some(Answer {
            status,
            head: head.to_string(),
            body: body.to_string(),
        })
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}

/// As [`try_request_from`], failing the test without an answer.
pub async fn request_from(
    from: IpAddr,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> Answer {
    try_request_from(from, addr, path, headers)
        .await
        .unwrap_or_else(|| panic!("no answer from the wake-up backend at {addr}{path}"))
}

/// Asleep all week, woken by requests for two hours, with `more` annotations.
pub async fn opt_in(scenario: &Scenario, namespace: &str, more: Value) {
    let mut annotations = json!({
        "cronscaler.dev/downtime": "Mon-Sun 00:00-24:00",
        "cronscaler.dev/wake-on-request": "2h",
    });
    if let (Some(annotations), Some(more)) = (annotations.as_object_mut(), more.as_object()) {
        annotations.extend(more.clone());
    }
    super::annotate_namespace(&scenario.client, namespace, annotations).await;
}

pub async fn namespace_annotations(
    scenario: &Scenario,
    namespace: &str,
) -> BTreeMap<String, String> {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .get(namespace)
        .await
        .expect("the Namespace")
        .annotations()
        .clone()
}

/// The two processes of waking on a request, as the installs run them: the controller over the
/// whole cluster (`run --wake-on-request`), and the wake-up backend apart (`wake-backend`), as
/// the install's `cronscaler-wake` ServiceAccount, which may only read and ask.
pub struct WakeUp {
    pub controller: Controller,
    pub backend: Controller,
}

impl WakeUp {
    /// Stops both, each within `within` of SIGTERM, exiting 0.
    pub async fn assert_stops_cleanly(&mut self, within: Duration) {
        self.backend.assert_stops_cleanly(within).await;
        self.controller.assert_stops_cleanly(within).await;
    }
}

/// Starts the controller and the backend, which trusts the proxies `trusted` (an address or
/// CIDR), each with the flags `more` (both take `run`'s); the two, and the backend's address.
pub async fn start_backend(
    scenario: &Scenario,
    name: &str,
    trusted: &str,
    more: &[&str],
) -> (WakeUp, SocketAddr) {
    let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let wake_up = start_backend_at(scenario, name, addr, trusted, more).await;
    (wake_up, addr)
}

/// As [`start_backend`], the backend listening on `addr`; the controller is `name`, the
/// backend `name-wake`.
pub async fn start_backend_at(
    scenario: &Scenario,
    name: &str,
    addr: SocketAddr,
    trusted: &str,
    more: &[&str],
) -> WakeUp {
    install_wake_requests(&scenario.client).await;
    let mut flags = vec!["--grace-period", "0s", "--wake-on-request"];
    flags.extend_from_slice(more);
    let mut controller = scenario.start_cluster_wide_controller(name, &flags);
    let kubeconfig = (scenario.plane())
        .sign_in_as("cronscaler-wake")
        .await
        .expect("the backend's ServiceAccount, from the install's RBAC");
    let wake_addr = addr.to_string();
    let mut flags = vec!["--wake-addr", &wake_addr, "--wake-trusted-proxies", trusted];
    flags.extend_from_slice(more);
    let name = format!("{name}-wake");
    let mut backend = scenario.spawn_as(&kubeconfig, &name, &["wake-backend"], &flags);
    controller.wait_ready().await;
    backend.wait_ready().await;
    WakeUp {
        controller,
        backend,
    }
}

/// Installs the `WakeRequest` CRD (`manifests/06-wake-request-crd.yaml`), through which the
/// backend asks the controller for a wake, and waits until it is served.
pub async fn install_wake_requests(admin: &Client) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/06-wake-request-crd.yaml");
    let gvk = kube::api::GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "WakeRequest");
    super::crds::install_crd(admin, &path, &gvk).await;
}

/// Waits until the controller carried out the backend's ask for `namespace`'s wake, made at
/// `asked`: `awake-until` written (the wake bench measures how soon; on a loaded machine this
/// allows 5 s), said as `what` with how long it took, and the `WakeRequest` removed.
pub async fn wake_carried_out(scenario: &Scenario, namespace: &str, asked: Instant, what: &str) {
    woken_within(scenario, namespace, Duration::from_secs(5)).await;
    super::say(&format!(
        "{what}: awake-until written {} ms after the first request",
        asked.elapsed().as_millis()
    ));
    asked_no_more(scenario, namespace).await;
}

/// Waits, `within`, until `namespace` has its `awake-until`.
pub async fn woken_within(scenario: &Scenario, namespace: &str, within: Duration) {
    eventually("awake-until written", within, || async {
        (namespace_annotations(scenario, namespace).await)
            .contains_key(AWAKE_UNTIL)
            .then_some(())
    })
    .await;
}

/// Waits until `namespace` has no `WakeRequest` left: the controller removed what it was asked.
pub async fn asked_no_more(scenario: &Scenario, namespace: &str) {
    eventually("the WakeRequest removed", PROMPTLY, || async {
        wake_requests(scenario, namespace)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
}

/// The names of the `WakeRequest`s in `namespace`.
pub async fn wake_requests(scenario: &Scenario, namespace: &str) -> Vec<String> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("cronscaler.dev", "v1alpha1", "WakeRequest"),
        "wakerequests",
    );
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(scenario.client.clone(), namespace, &resource);
    let listed = api
        .list(&ListParams::default())
        .await
        .expect("WakeRequests");
    listed
        .items
        .iter()
        .map(|request| request.name_any())
        .collect()
}

/// This machine's address on its network, which an EndpointSlice may name (the API server
/// refuses loopback addresses): the source a datagram socket would use, no packet sent.
pub fn machine_address() -> Option<IpAddr> {
    ["192.0.2.1:9", "10.255.255.255:9", "8.8.8.8:9"]
        .into_iter()
        .find_map(|outside| {
            let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            socket.connect(outside).ok()?;
            let ip = socket.local_addr().ok()?.ip();
            let usable = match ip {
                IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_unspecified() && !v4.is_link_local(),
                IpAddr::V6(_) => false,
            };
            usable.then_some(ip)
        })
}

/// A Deployment `web` of 2 in the scenario's Namespace, opted in with `more` annotations, and
/// put to sleep by its schedule.
pub async fn web_asleep(scenario: &Scenario, more: Value) -> Api<Deployment> {
    let deployments =
        super::create_deployment(&scenario.client, &scenario.namespace, "web", 2).await;
    opt_in(scenario, &scenario.namespace, more).await;
    replicas_become(&deployments, "web", 0, "the Namespace asleep", PROMPTLY).await;
    deployments
}

/// Starts the controller and the backend at this machine's `ip`, on all addresses, with the
/// backend's own Service and slice (which the wake slices copy) in place; the two, and the
/// backend's address.
pub async fn start_backend_with_slices(
    scenario: &Scenario,
    ip: IpAddr,
    trusted: &str,
) -> (WakeUp, SocketAddr) {
    let backend = SocketAddr::new(ip, envtest::free_port());
    backend_service(scenario, backend).await;
    let listen = SocketAddr::new([0, 0, 0, 0].into(), backend.port());
    let wake_service = format!("{SA_NAMESPACE}/cronscaler-wake");
    let flags = ["--wake-service", wake_service.as_str()];
    let wake_up = start_backend_at(scenario, "cronscaler", listen, trusted, &flags).await;
    (wake_up, backend)
}

/// Plays kube-controller-manager for the backend's own Service (no Pod runs here): its slice
/// names the backend's address and port.
pub async fn backend_service(scenario: &Scenario, addr: SocketAddr) {
    for object in [
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": { "name": "cronscaler-wake", "namespace": SA_NAMESPACE },
            "spec": { "ports": [{ "name": "http", "port": 80, "targetPort": addr.port() }] },
        }),
        backend_slice(
            "cronscaler-wake-x7k2p",
            "IPv4",
            &addr.ip().to_string(),
            addr.port(),
        ),
    ] {
        envtest::apply(&scenario.client, object)
            .await
            .expect("the backend's Service and its slice");
    }
}

/// A slice of the backend's own Service, as kube-controller-manager writes it: one ready
/// endpoint at `address` of `family`, on `port`.
pub fn backend_slice(name: &str, family: &str, address: &str, port: u16) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": name, "namespace": SA_NAMESPACE,
            "labels": { "kubernetes.io/service-name": "cronscaler-wake" },
        },
        "addressType": family,
        "endpoints": [{ "addresses": [address], "conditions": { "ready": true } }],
        "ports": [{ "name": "http", "port": port, "protocol": "TCP" }],
    })
}

/// The Service `name` of `namespace`, sending to the Pods `app: name` on `ports`.
pub async fn create_service(scenario: &Scenario, namespace: &str, name: &str, ports: Value) {
    create_service_with(
        scenario,
        namespace,
        name,
        json!({ "selector": { "app": name }, "ports": ports }),
    )
    .await;
}

/// The Service `name` of `namespace` with `spec`.
pub async fn create_service_with(scenario: &Scenario, namespace: &str, name: &str, spec: Value) {
    envtest::apply(
        &scenario.client,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": { "name": name, "namespace": namespace },
            "spec": spec,
        }),
    )
    .await
    .expect("a Service");
}

/// Serves the Pods of `namespace` starting with `prefix` (see [`serve_pods`]) until no wake
/// slice of ours is left there.
pub async fn slices_gone_once_served(scenario: &Scenario, namespace: &str, prefix: &str) {
    eventually(
        "the slices gone once served",
        Duration::from_secs(90),
        || async {
            serve_pods(&scenario.client, namespace, prefix).await;
            wake_slices(scenario, namespace)
                .await
                .is_empty()
                .then_some(())
        },
    )
    .await;
}

/// The Node the tests' Pods are bound to: no kubelet runs it.
const NODE: &str = "envtest-node";

/// Plays the scheduler and the kubelet for the Pods of `namespace` whose name starts with
/// `prefix`: each is bound to a Node and reported running and ready with an address of its own
/// (in 192.0.2.0/24, which routes nowhere), so that the real ReplicaSet and Deployment
/// controllers count it available, and the real EndpointSlice controller lists it, ready, in
/// the EndpointSlices of the Services that select it.
pub async fn serve_pods(client: &Client, namespace: &str, prefix: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    if nodes.get_opt(NODE).await.ok().flatten().is_none() {
        let node: Node =
            serde_json::from_value(json!({ "metadata": { "name": NODE } })).expect("a Node");
        let _ = nodes.create(&PostParams::default(), &node).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let listed = pods
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for pod in listed
        .iter()
        .filter(|pod| pod.name_any().starts_with(prefix))
    {
        let name = pod.name_any();
        if pod
            .spec
            .as_ref()
            .and_then(|spec| spec.node_name.as_ref())
            .is_none()
        {
            let binding = json!({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": { "name": name },
                "target": { "apiVersion": "v1", "kind": "Node", "name": NODE },
            });
            let _ = pods
                .create_subresource::<Value, Value>(
                    "binding",
                    &name,
                    &PostParams::default(),
                    &binding,
                )
                .await;
        }
        let octet = 1 + name.bytes().map(usize::from).sum::<usize>() % 250;
        let address = format!("192.0.2.{octet}");
        let running = json!({ "status": {
            "phase": "Running",
            "hostIP": "192.0.2.254",
            "podIP": address,
            "podIPs": [{ "ip": address }],
            "conditions": [
                { "type": "Ready", "status": "True", "lastTransitionTime": now },
                { "type": "ContainersReady", "status": "True", "lastTransitionTime": now },
            ],
        }});
        let _ = pods
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&running))
            .await;
    }
}

/// Whether the cluster's own EndpointSlices of the Service `service` list a ready endpoint.
pub async fn served(client: &Client, namespace: &str, service: &str) -> bool {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let own = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    (slices
        .list(&own)
        .await
        .map(|list| list.items)
        .unwrap_or_default())
    .iter()
    .filter(|slice| {
        slice
            .labels()
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str)
            != Some("cronscaler.dev")
    })
    .flat_map(|slice| slice.endpoints.iter())
    .any(|endpoint| {
        endpoint
            .conditions
            .as_ref()
            .and_then(|conditions| conditions.ready)
            == Some(true)
    })
}

/// The slices of ours in `namespace`, by name.
pub async fn wake_slices(scenario: &Scenario, namespace: &str) -> BTreeMap<String, EndpointSlice> {
    let slices: Api<EndpointSlice> = Api::namespaced(scenario.client.clone(), namespace);
    let ours =
        ListParams::default().labels("endpointslice.kubernetes.io/managed-by=cronscaler.dev");
    slices
        .list(&ours)
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .map(|slice| (slice.name_any(), slice))
        .collect()
}
