//! What the wake-up backend's tests share: requests as a proxy (or anyone) sends them, from a
//! chosen source address, and a controller serving the backend.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    time::Duration,
};

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{Api, ResourceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::{Controller, Scenario, envtest, eventually, replicas_and_annotations};

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
    let exchange = async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(SocketAddr::new(from, 0)).ok()?;
        let mut stream = socket.connect(addr).await.ok()?;
        let mut text = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            text.push_str("Host: cronscaler-wake\r\n");
        }
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
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

/// Starts a controller over the whole cluster serving the backend, trusting the proxies
/// `trusted` (an address or CIDR); its address.
pub async fn start_backend(
    scenario: &Scenario,
    name: &str,
    trusted: &str,
    more: &[&str],
) -> (Controller, SocketAddr) {
    let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
    let controller = start_backend_at(scenario, name, addr, trusted, more).await;
    (controller, addr)
}

/// As [`start_backend`], the backend listening on `addr`.
pub async fn start_backend_at(
    scenario: &Scenario,
    name: &str,
    addr: SocketAddr,
    trusted: &str,
    more: &[&str],
) -> Controller {
    let wake_addr = addr.to_string();
    let mut flags = vec![
        "--grace-period",
        "0s",
        "--wake-addr",
        &wake_addr,
        "--wake-trusted-proxies",
        trusted,
    ];
    flags.extend_from_slice(more);
    let mut controller = scenario.start_cluster_wide_controller(name, &flags);
    controller.wait_ready().await;
    controller
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
    eventually("the Namespace asleep", PROMPTLY, || async {
        let (web, _) = replicas_and_annotations(&deployments, "web").await?;
        (web == 0).then_some(())
    })
    .await;
    deployments
}
