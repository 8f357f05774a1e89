//! Floods of requests against the wake-up backend, on a real API server, timed: a flood of
//! status polls never starves the scheduler (300 opted-in Namespaces, each polled once a second
//! for a minute, what 300 open waiting pages do, while 100 scheduled transitions come due),
//! a burst of requests to a sleeping Namespace makes one wake with every request answered
//! within a second, and the wake bench: the first request to each of 100 sleeping Namespaces has
//! its `awake-until` written within a second (p99), through the backend apart and the controller. In a binary of its own, the tests one at a time, so that nothing else runs
//! beside what is timed (in the suite's binary, four control planes on two cores once answered
//! in 1.02 s).
//!
//! See `tests/support/mod.rs` for where the API server comes from.

mod support;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chrono::{DateTime, TimeDelta, Utc};
use futures::{StreamExt as _, stream};
use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease};
use kube::{Api, ResourceExt as _, api::ListParams};
use serde_json::json;
use support::{
    Scenario, deploy, envtest, eventually, replicas_become,
    wake::{LOOPBACK, PROMPTLY, opt_in, request, start_backend, try_request_from, web_asleep},
};

const NAMESPACES: usize = 300;

/// Held by each test for its whole run: what is timed runs alone.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const FLOOD: Duration = Duration::from_secs(60);

/// When each Deployment was first seen scaled to 0, polling every 100 ms.
type Seen = Arc<Mutex<HashMap<String, DateTime<Utc>>>>;

fn watch_scale_downs(deployments: Api<Deployment>) -> (Seen, tokio::task::JoinHandle<()>) {
    let seen = Seen::default();
    let recorded = seen.clone();
    let watching = tokio::spawn(async move {
        loop {
            if let Ok(listed) = deployments.list(&ListParams::default()).await {
                let now = Utc::now();
                let mut recorded = recorded.lock().unwrap_or_else(|e| e.into_inner());
                for deployment in listed.items {
                    if deployment.spec.as_ref().and_then(|spec| spec.replicas) == Some(0) {
                        recorded.entry(deployment.name_any()).or_insert(now);
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    (seen, watching)
}

/// The latest of the lateness of the Deployments `due` names (name, due).
fn latest(seen: &Seen, due: &[(String, DateTime<Utc>)]) -> TimeDelta {
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    due.iter()
        .map(|(name, due)| {
            let applied = seen
                .get(name)
                .unwrap_or_else(|| panic!("{name}, due at {due}, never scaled down"));
            *applied - *due
        })
        .max()
        .unwrap_or_default()
}

async fn lease(scenario: &Scenario) -> (String, i32) {
    let leases: Api<Lease> = Api::namespaced(scenario.client.clone(), envtest::SA_NAMESPACE);
    let spec = leases
        .get("cronscaler")
        .await
        .expect("the Lease")
        .spec
        .unwrap_or_default();
    (
        spec.holder_identity.unwrap_or_default(),
        spec.lease_transitions.unwrap_or_default(),
    )
}

/// `count` Namespaces `{prefix}-{n}` made and opted in to waking with the annotations `more`
/// gives each, twenty at a time: their names.
async fn opted_in_namespaces(
    scenario: &Scenario,
    prefix: &str,
    count: usize,
    more: impl Fn(&str) -> serde_json::Value,
) -> Vec<String> {
    let names: Vec<String> = (0..count).map(|n| format!("{prefix}-{n}")).collect();
    stream::iter(&names)
        .for_each_concurrent(20, |namespace| {
            let more = more(namespace);
            async move {
                support::create_namespace(&scenario.client, namespace).await;
                opt_in(scenario, namespace, more).await;
            }
        })
        .await;
    names
}

#[tokio::test]
async fn a_status_flood_neither_delays_the_schedule_nor_costs_the_leader_its_lease() {
    let _alone = ALONE.lock().await;
    let Some(scenario) = Scenario::own("wake-flood", envtest::Options::api_server_only()).await
    else {
        return;
    };
    let elect = [
        "--leader-elect",
        "--leader-elect-namespace",
        envtest::SA_NAMESPACE,
    ];
    let (controller, addr) = start_backend(&scenario, "cronscaler", "127.0.0.2", &elect).await;
    let names = opted_in_namespaces(
        &scenario,
        "flood",
        NAMESPACES,
        |namespace| json!({ "cronscaler.dev/wake-hosts": format!("{namespace}.flood.test") }),
    )
    .await;
    eventually("a leader", Duration::from_secs(30), || async {
        support::lease_holder(&scenario.client, envtest::SA_NAMESPACE, "cronscaler").await
    })
    .await;
    let lease_before = lease(&scenario).await;

    // 20 transitions before the flood, for the lateness without it; 100 during it, from 20 s
    // into it, ten every 4 s. They start
    // once the controller has listed the new Namespaces' workloads (3 lists each, at
    // --kube-qps 50: 18 s), which would make the lateness without the flood its own.
    let start = support::whole_second_in(30);
    let flood_from = start + TimeDelta::seconds(5);
    let mut before = Vec::new();
    let mut during = Vec::new();
    for n in 0..120 {
        let (batch, due) = if n < 20 {
            (&mut before, start + TimeDelta::seconds(n / 10))
        } else {
            (
                &mut during,
                flood_from + TimeDelta::seconds(20 + 4 * ((n - 20) / 10)),
            )
        };
        batch.push((format!("due-{n}"), due));
    }
    let deployments = scenario.deployments();
    stream::iter(before.iter().chain(&during))
        .for_each_concurrent(10, |(name, due)| {
            let deployments = &deployments;
            async move {
                deploy(deployments, name, 1, support::down_at(*due), "a Deployment").await;
            }
        })
        .await;
    let (seen, watching) = watch_scale_downs(deployments.clone());
    support::sleep_until(flood_from).await;

    let answered = Arc::new(Mutex::new(BTreeMap::<u16, usize>::new()));
    let pollers: Vec<_> = names
        .iter()
        .map(|namespace| {
            let (namespace, answered) = (namespace.clone(), answered.clone());
            tokio::spawn(async move {
                let path = format!("/.cronscaler/status?namespace={namespace}");
                let host = format!("{namespace}.flood.test");
                let until = tokio::time::Instant::now() + FLOOD;
                while tokio::time::Instant::now() < until {
                    let next = tokio::time::Instant::now() + Duration::from_secs(1);
                    let status = try_request_from(LOOPBACK, addr, &path, &[("Host", &host)])
                        .await
                        .map_or(0, |answer| answer.status);
                    *answered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(status)
                        .or_default() += 1;
                    tokio::time::sleep_until(next).await;
                }
            })
        })
        .collect();
    for poller in pollers {
        poller.await.expect("a poller");
    }
    let last_due = during
        .iter()
        .map(|(_, due)| *due)
        .max()
        .unwrap_or(flood_from);
    support::sleep_until(last_due + TimeDelta::seconds(5)).await;
    watching.abort();

    let without = latest(&seen, &before);
    let with = latest(&seen, &during);
    let answered = answered.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let metrics = controller.backend.metrics().await.unwrap_or_default();
    let reads: Vec<&str> = metrics
        .lines()
        .filter(|line| line.starts_with("cronscaler_wake_readiness_reads_total"))
        .collect();
    support::say(&format!(
        "flood: answers by status {answered:?}; latest transition {without} without the flood, \
         {with} with it; {reads:?}"
    ));
    assert_eq!(
        answered.keys().copied().collect::<Vec<_>>(),
        vec![200],
        "every poll answered with its Namespace's status: {answered:?}"
    );
    assert!(
        with <= without + TimeDelta::seconds(1) && with < TimeDelta::seconds(2),
        "transitions {with} late in the flood, {without} without it"
    );
    assert_eq!(
        lease(&scenario).await,
        lease_before,
        "the leader kept its Lease"
    );

    let mut reads_per_second: HashMap<(String, i64), usize> = HashMap::new();
    for event in scenario.plane().audit_events() {
        if event.user == envtest::SA_USER
            && event.verb == "list"
            && event.resource == "deployments"
            && event.namespace.starts_with("flood-")
            && let Some(received) = event.received
        {
            *reads_per_second
                .entry((event.namespace.clone(), received.timestamp()))
                .or_default() += 1;
        }
    }
    let most = reads_per_second.values().copied().max().unwrap_or_default();
    assert!(!reads_per_second.is_empty(), "the readiness reads audited");
    assert_eq!(most, 1, "at most one readiness read per Namespace a second");
    scenario.finish().await;
}

#[tokio::test]
async fn two_hundred_requests_at_once_make_one_wake_each_answered_within_a_second() {
    let _alone = ALONE.lock().await;
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("wake-burst", options).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    let (_controller, addr) = start_backend(&scenario, "cronscaler", "127.0.0.1", &[]).await;
    let deployments = web_asleep(&scenario, json!({})).await;

    let flood = (0..200).map(|_| {
        let namespace = namespace.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = request(addr, "/", &[("X-Namespace", namespace.as_str())]).await;
            (answer.status, started.elapsed())
        })
    });
    let answers = futures::future::join_all(flood).await;
    for answer in answers {
        let (status, took) = answer.expect("a request task");
        assert_eq!(status, 503);
        assert!(took < Duration::from_secs(1), "answered in {took:?}");
    }
    replicas_become(&deployments, "web", 2, "the wake applied", PROMPTLY).await;
    let patches = (scenario.plane().audit_events().into_iter())
        .filter(|event| {
            event.user == envtest::SA_USER
                && event.verb == "patch"
                && event.resource == "namespaces"
                && event.name == namespace
        })
        .count();
    assert_eq!(patches, 1, "one patch of the Namespace for 200 requests");
    scenario.finish().await;
}

/// The wake bench on a real API server, the two processes as the installs run them: 100
/// Namespaces asleep and opted in, each sent its first request in turn, 320 ms apart; how long from each
/// request to its Namespace's `awake-until`, as a watch of the Namespaces sees it (the backend
/// asks with a `WakeRequest`; the controller carries it out). p99 within a second.
#[tokio::test]
async fn the_first_request_to_each_of_a_hundred_namespaces_wakes_it_within_a_second_p99() {
    const WAKES: usize = 100;
    let _alone = ALONE.lock().await;
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("wake-bench", options).await else {
        return;
    };
    let (wake_up, addr) = start_backend(&scenario, "cronscaler", "127.0.0.1", &[]).await;
    let names = opted_in_namespaces(&scenario, "bench", WAKES, |_| json!({})).await;
    // Every wake alone: the controller done with the Namespaces just made (their wake slices),
    // so that what is measured is the wake, not the making of 100 Namespaces at once.
    eventually("the controller idle", PROMPTLY, || async {
        let metrics = wake_up.controller.metrics().await?;
        metrics
            .lines()
            .any(|line| line == "cronscaler_workqueue_depth 0")
            .then_some(())
    })
    .await;
    let woken: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watching = {
        let (namespaces, woken) = (
            Api::<k8s_openapi::api::core::v1::Namespace>::all(scenario.client.clone()),
            woken.clone(),
        );
        tokio::spawn(async move {
            let events = kube::runtime::watcher(namespaces, Default::default());
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let Ok(kube::runtime::watcher::Event::Apply(namespace)) = event else {
                    continue;
                };
                if namespace
                    .annotations()
                    .contains_key(support::wake::AWAKE_UNTIL)
                {
                    let mut woken = woken.lock().unwrap_or_else(|e| e.into_inner());
                    woken
                        .entry(namespace.name_any())
                        .or_insert_with(Instant::now);
                }
            }
        })
    };

    let mut asked = HashMap::new();
    let mut answered = Vec::new();
    for namespace in &names {
        let started = Instant::now();
        let answer = request(addr, "/", &[("X-Namespace", namespace.as_str())]).await;
        answered.push(started.elapsed());
        assert_eq!(answer.status, 503, "{namespace}: {}", answer.head);
        asked.insert(namespace.clone(), started);
        // Wakes are rare, and each costs the backend three requests of its budget
        // (--wake-kube-qps, 10 a second): paced so, none waits for another's.
        tokio::time::sleep(Duration::from_millis(320)).await;
    }
    eventually("every Namespace woken", PROMPTLY, || async {
        let woken = woken.lock().unwrap_or_else(|e| e.into_inner());
        (woken.len() == WAKES).then_some(())
    })
    .await;
    watching.abort();
    let woken = woken.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut delays: Vec<Duration> = (asked.iter())
        .map(|(namespace, asked)| woken[namespace].saturating_duration_since(*asked))
        .collect();
    delays.sort();
    answered.sort();
    let at = |sorted: &[Duration], percentile: usize| {
        sorted[(sorted.len() * percentile / 100).min(sorted.len() - 1)]
    };
    let (p50, p99, max) = (at(&delays, 50), at(&delays, 99), delays[WAKES - 1]);
    support::say(&format!(
        "wake bench: first request to awake-until over {WAKES} wakes: p50 {p50:.0?}, p99 {p99:.0?}, \
         max {max:.0?}; the page answered in p50 {:.1?}, p99 {:.1?}",
        at(&answered, 50),
        at(&answered, 99),
    ));
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}: {delays:?}");
    scenario.finish().await;
}
