//! The wake-up backend under attack, against a real API server, served by the controller
//! process as its ServiceAccount: connections pinned by clients that never read, routing
//! headers from whoever sends them, and hosts two Namespaces claim. In a binary of its own, as
//! the status flood (`tests/e2e_wake_flood.rs`) is: 50,000 pinned connections would take the
//! open files of every test beside it.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

mod support;

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use serde_json::{Value, json};
use support::{
    Scenario, deploy, envtest, eventually,
    wake::{
        AWAKE_UNTIL, LOOPBACK, PROMPTLY, namespace_annotations, opt_in, request_from,
        start_backend, try_request_from, web_asleep,
    },
};
use tokio::io::AsyncWriteExt as _;

/// A second loopback address: the tests' trusted proxy, where one is.
const PROXY: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// One attacker: connects, pipelines `requests` requests and never reads the answers, holds
/// the connection until the server drops it (or 6 s), and does it again until `stop`.
async fn pin(addr: SocketAddr, requests: usize, stop: Arc<AtomicBool>) {
    let pipelined = "GET / HTTP/1.1\r\nHost: pinned.example\r\n\r\n".repeat(requests);
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await {
            let _ = stream.write_all(pipelined.as_bytes()).await;
            let held = Instant::now();
            while held.elapsed() < Duration::from_secs(6) && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        } else {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test]
async fn pinned_connections_turn_no_visitor_away_and_delay_no_transition() {
    let Some(scenario) = Scenario::own("wake-pinned", envtest::Options::api_server_only()).await
    else {
        return;
    };
    // The test itself holds a thousand connections.
    cronscaler::ops::descriptors::raise_limit().expect("the open-files limit raised");
    let (controller, addr) = start_backend(&scenario, "cronscaler", "127.0.0.2", &[]).await;
    web_asleep(
        &scenario,
        json!({ "cronscaler.dev/wake-hosts": "pinned.example" }),
    )
    .await;
    let log = controller.backend.log();
    assert!(
        log.contains("open-files limit raised") && log.contains("wake_connections"),
        "the start-up log says the limit and the cap:\n{log}"
    );
    // A transition due while the attack goes on, in a Namespace of its own.
    let due = support::whole_second_in(20);
    support::create_namespace(&scenario.client, "pinned-due").await;
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), "pinned-due");
    deploy(
        &deployments,
        "due",
        2,
        support::down_at(due),
        "a Deployment due to sleep",
    )
    .await;
    let before = (controller.backend)
        .open_descriptors()
        .expect("the backend's descriptors");

    let stop = Arc::new(AtomicBool::new(false));
    let attackers: Vec<_> = (0..1000)
        .map(|_| tokio::spawn(pin(addr, 50, stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut slowest = Duration::ZERO;
    let mut applied = None;
    let attack = Instant::now();
    while attack.elapsed() < Duration::from_secs(25) {
        let asked = Instant::now();
        let answer = try_request_from(LOOPBACK, addr, "/", &[("Host", "pinned.example")]).await;
        let took = asked.elapsed();
        let answer = answer.unwrap_or_else(|| panic!("a visitor got no answer in {took:?}"));
        assert_eq!(answer.status, 503, "{}", answer.head);
        let progress: Value = serde_json::from_str(&answer.body).expect("JSON");
        assert_eq!(progress["namespace"], scenario.namespace.as_str());
        slowest = slowest.max(took);
        if applied.is_none()
            && let Ok(due_now) = deployments.get("due").await
            && due_now.spec.and_then(|spec| spec.replicas) == Some(0)
        {
            applied = Some(chrono::Utc::now());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let during = controller.backend.open_descriptors().unwrap_or_default();
    stop.store(true, Ordering::Relaxed);
    for attacker in attackers {
        let _ = attacker.await;
    }
    support::say(&format!(
        "pinned: slowest visitor {slowest:?}; descriptors {before} before, {during} during"
    ));
    assert!(
        slowest < Duration::from_secs(2),
        "slowest visitor {slowest:?}"
    );
    let applied = applied.expect("the transition applied during the attack");
    assert!(
        applied - due < chrono::TimeDelta::seconds(2),
        "due at {due}, applied by {applied}"
    );
    eventually(
        "the descriptors back to where they were",
        Duration::from_secs(15),
        || async {
            let now = controller.backend.open_descriptors()?;
            (now <= before + 2).then_some(())
        },
    )
    .await;
    scenario.finish().await;
}

#[tokio::test]
async fn routing_headers_count_only_from_a_trusted_proxy_and_status_only_for_its_own_host() {
    let Some(scenario) = Scenario::own("wake-trust", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let (controller, addr) = start_backend(&scenario, "cronscaler", "127.0.0.2/32", &[]).await;
    opt_in(
        &scenario,
        &namespace,
        json!({ "cronscaler.dev/wake-hosts": "trust.example" }),
    )
    .await;
    support::create_namespace(&scenario.client, "other").await;
    opt_in(
        &scenario,
        "other",
        json!({ "cronscaler.dev/wake-hosts": "other.example" }),
    )
    .await;

    // From anyone: X-Namespace and X-Forwarded-Host name nothing.
    let named = [
        ("Host", "nothing.invalid"),
        ("X-Namespace", namespace.as_str()),
    ];
    let forwarded = [
        ("Host", "nothing.invalid"),
        ("X-Forwarded-Host", "trust.example"),
    ];
    for headers in [&named[..], &forwarded[..]] {
        let refused = request_from(LOOPBACK, addr, "/", headers).await;
        assert_eq!(
            (refused.status, refused.body.as_str()),
            (503, ""),
            "{headers:?}"
        );
    }
    // Status for a host that belongs to another Namespace, or to none: the bare 503.
    let status = format!("/.cronscaler/status?namespace={namespace}");
    for host in ["other.example", "nothing.invalid"] {
        let refused = request_from(LOOPBACK, addr, &status, &[("Host", host)]).await;
        assert_eq!((refused.status, refused.body.as_str()), (503, ""), "{host}");
    }
    let own = request_from(LOOPBACK, addr, &status, &[("Host", "trust.example")]).await;
    assert_eq!(own.status, 200, "{}", own.body);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !namespace_annotations(&scenario, &namespace)
            .await
            .contains_key(AWAKE_UNTIL),
        "woken by headers from anyone"
    );

    // From the trusted proxy, X-Namespace names it.
    let woken = request_from(PROXY, addr, "/", &named).await;
    let progress: Value = serde_json::from_str(&woken.body).expect("JSON");
    assert_eq!(progress["namespace"], namespace.as_str());
    eventually("woken through the trusted proxy", PROMPTLY, || async {
        namespace_annotations(&scenario, &namespace)
            .await
            .contains_key(AWAKE_UNTIL)
            .then_some(())
    })
    .await;
    assert!(
        !namespace_annotations(&scenario, "other")
            .await
            .contains_key(AWAKE_UNTIL)
    );
    let metrics = controller.backend.metrics().await.expect("metrics");
    assert!(
        metrics.contains("cronscaler_wake_requests_total{namespace=\"\",result=\"refused\"} 4"),
        "{metrics}"
    );
    scenario.finish().await;
}

#[tokio::test]
async fn a_host_claimed_twice_wakes_the_exact_claimant_and_a_tie_wakes_nobody() {
    let Some(scenario) = Scenario::own("wake-claims", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let (_controller, addr) = start_backend(&scenario, "cronscaler", "127.0.0.2", &[]).await;
    for (namespace, hosts) in [
        ("a-wild", "*.acc.test"),
        ("b-exact", "b.acc.test"),
        ("c-tie", "tie.acc.test"),
        ("d-tie", "tie.acc.test, d.acc.test"),
    ] {
        support::create_namespace(&scenario.client, namespace).await;
        opt_in(
            &scenario,
            namespace,
            json!({ "cronscaler.dev/wake-hosts": hosts }),
        )
        .await;
    }
    let woken_of = |namespace: &'static str| {
        let scenario = &scenario;
        async move {
            namespace_annotations(scenario, namespace)
                .await
                .contains_key(AWAKE_UNTIL)
        }
    };

    let answer = request_from(LOOPBACK, addr, "/", &[("Host", "b.acc.test.")]).await;
    let progress: Value = serde_json::from_str(&answer.body).expect("JSON");
    assert_eq!(progress["namespace"], "b-exact", "the exact name wins");
    let tie = request_from(LOOPBACK, addr, "/", &[("Host", "tie.acc.test")]).await;
    assert_eq!((tie.status, tie.body.as_str()), (503, ""));
    eventually("b-exact woken", PROMPTLY, || async {
        woken_of("b-exact").await.then_some(())
    })
    .await;
    for namespace in ["a-wild", "c-tie", "d-tie"] {
        assert!(!woken_of(namespace).await, "{namespace} woken");
    }

    for (namespace, other) in [("c-tie", "d-tie"), ("d-tie", "c-tie")] {
        let warning = scenario
            .event_about_namespace(namespace, "WakeHostConflict", PROMPTLY)
            .await;
        let note = warning.note.unwrap_or_default();
        assert_eq!(warning.type_.as_deref(), Some("Warning"));
        assert!(
            note.contains(&format!("Namespace {other} claims the host tie.acc.test")),
            "{note}"
        );
    }
    scenario.finish().await;
}
