//! Sleep when idle on a real API server, with a real Prometheus: a Namespace with `idle-after`
//! that had no requests for that long sleeps with `IdleSleep`; one whose requests Prometheus
//! counts stays up; a rollout is a use that starts the quiet time over; a request after an idle
//! sleep wakes it; and with Prometheus stopped nothing sleeps for idleness, one Warning says
//! why, and the schedule still applies.
//!
//! See `tests/support/mod.rs` for where the API server comes from, and
//! `tests/support/prometheus.rs` for Prometheus and the exporter it scrapes.

mod support;

use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use support::{
    Scenario, annotate_namespace, create_deployment, create_namespace, down_at, envtest,
    event_time, events_in, eventually, occurrences, prometheus, replicas_and_annotations,
    wake::{request, start_backend},
    whole_second_in,
};

const IDLE_SINCE: &str = "cronscaler.dev/idle-since";
const ASLEEP_UNTIL: &str = "cronscaler.dev/asleep-until";
/// How long the test's Namespaces may be idle.
const IDLE_AFTER: Duration = Duration::from_secs(10);
/// A transition's lateness we accept on a busy 2-core machine.
const PROMPTLY: Duration = Duration::from_secs(30);

/// Always up by its schedule, asleep when idle, woken by a request.
fn idle_after(more: Value) -> Value {
    let mut annotations = json!({
        "cronscaler.dev/uptime": "Mon-Sun 00:00-24:00",
        "cronscaler.dev/idle-after": format!("{}s", IDLE_AFTER.as_secs()),
        "cronscaler.dev/wake-on-request": "2h",
    });
    if let (Some(annotations), Some(more)) = (annotations.as_object_mut(), more.as_object()) {
        annotations.extend(more.clone());
    }
    annotations
}

async fn namespace_annotations(scenario: &Scenario, name: &str) -> Option<Value> {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let namespace = namespaces.get(name).await.ok()?;
    Some(json!(namespace.metadata.annotations.unwrap_or_default()))
}

async fn web_replicas(scenario: &Scenario, namespace: &str) -> Option<i32> {
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), namespace);
    replicas_and_annotations(&deployments, "web")
        .await
        .map(|(replicas, _)| replicas)
}

#[tokio::test]
async fn idle_namespaces_sleep_until_a_request_used_ones_stay_up_and_without_prometheus_nothing_sleeps_for_idleness()
 {
    let Some(mut prometheus) = prometheus::start("idle").await else {
        return;
    };
    let Some(scenario) = Scenario::own("idle", envtest::Options::api_server_only()).await else {
        return;
    };
    let [quiet, busy, deployed] = ["quiet", "busy", "deployed"].map(|name| format!("{name}-idle"));
    for namespace in [&quiet, &busy, &deployed] {
        create_namespace(&scenario.client, namespace).await;
        annotate_namespace(&scenario.client, namespace, idle_after(json!({}))).await;
        create_deployment(&scenario.client, namespace, "web", 2).await;
    }
    prometheus.requests.busy(&busy);
    let query = prometheus::QUERY;
    let started = Utc::now();
    let (_controller, addr) = start_backend(
        &scenario,
        "cronscaler",
        "127.0.0.1",
        &[
            "--prometheus-url",
            &prometheus.url,
            "--activity-query",
            query,
        ],
    )
    .await;

    // A rollout a few seconds in: the quiet time of `deployed` starts again from it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let deployments: Api<Deployment> = Api::namespaced(scenario.client.clone(), &deployed);
    let rollout =
        json!({ "spec": { "template": { "metadata": { "annotations": { "rolled": "1" } } } } });
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&rollout))
        .await
        .expect("a rollout");
    let rolled_out = Utc::now();

    let slept = scenario
        .event_about_namespace(&quiet, "IdleSleep", PROMPTLY)
        .await;
    let note = slept.note.clone().unwrap_or_default();
    assert!(
        note.starts_with(
            "no requests for 10s: asleep until the next request or `cronscaler wake`, at most until "
        ),
        "{note}"
    );
    let slept_at = event_time(&slept).expect("the IdleSleep's time");
    assert!(
        slept_at >= started + IDLE_AFTER,
        "not before idle-after since the controller's start: {slept_at} vs {started}"
    );
    eventually("quiet's web asleep", PROMPTLY, || async {
        (web_replicas(&scenario, &quiet).await? == 0).then_some(())
    })
    .await;
    let annotations = namespace_annotations(&scenario, &quiet)
        .await
        .expect("the Namespace");
    assert!(annotations[IDLE_SINCE].is_string(), "{annotations}");
    assert!(annotations[ASLEEP_UNTIL].is_string(), "{annotations}");
    let status = scenario.said(&["status", "-n", &quiet]);
    assert!(
        status.contains("asleep") && status.contains("idle since"),
        "{status}"
    );

    // `deployed` sleeps only idle-after past its rollout; `busy`, with requests, never.
    let deployed_slept = scenario
        .event_about_namespace(&deployed, "IdleSleep", PROMPTLY)
        .await;
    let deployed_slept_at = event_time(&deployed_slept).expect("the IdleSleep's time");
    assert!(
        deployed_slept_at >= rolled_out + IDLE_AFTER - chrono::Duration::seconds(1),
        "the rollout at {rolled_out} is a use: slept at {deployed_slept_at}"
    );
    assert_eq!(web_replicas(&scenario, &busy).await, Some(2));
    assert_eq!(
        occurrences(
            &events_in(&scenario.client, "default", &busy).await,
            "IdleSleep"
        ),
        0
    );

    // A request after the idle sleep wakes it, and the sleep's `idle-since` goes with it.
    let answer = request(addr, "/", &[("X-Namespace", quiet.as_str())]).await;
    assert_eq!(answer.status, 503, "the wake-up page");
    eventually("quiet woken by the request", PROMPTLY, || async {
        (web_replicas(&scenario, &quiet).await? == 2).then_some(())
    })
    .await;
    let annotations = namespace_annotations(&scenario, &quiet)
        .await
        .expect("the Namespace");
    assert!(annotations.get(IDLE_SINCE).is_none(), "{annotations}");

    // Prometheus stopped: a Namespace idle for long enough is told once that its requests
    // cannot be counted, stays up, and its schedule still puts it to sleep.
    prometheus.stop();
    let unknown = "unknown-idle".to_string();
    let down = whole_second_in(20);
    create_namespace(&scenario.client, &unknown).await;
    create_deployment(&scenario.client, &unknown, "web", 2).await;
    let mut schedule = down_at(down);
    if let Some(object) = schedule.as_object_mut() {
        object.insert("cronscaler.dev/idle-after".into(), json!("1s"));
    }
    annotate_namespace(&scenario.client, &unknown, schedule).await;
    let warned = scenario
        .event_about_namespace(&unknown, "IdleUnknown", PROMPTLY)
        .await;
    assert_eq!(warned.type_.as_deref(), Some("Warning"));
    let note = warned.note.clone().unwrap_or_default();
    assert!(
        note.contains("nothing sleeps for idleness") && note.contains(&prometheus.url),
        "{note}"
    );
    // Another look (a change of the Namespace's labels brings one) says nothing more.
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    namespaces
        .patch(
            &unknown,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "team": "web" } } })),
        )
        .await
        .expect("a label");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(web_replicas(&scenario, &unknown).await, Some(2));
    eventually("unknown asleep by its schedule", PROMPTLY, || async {
        (web_replicas(&scenario, &unknown).await? == 0).then_some(())
    })
    .await;
    let told = events_in(&scenario.client, "default", &unknown).await;
    assert_eq!(occurrences(&told, "IdleUnknown"), 1, "{told:?}");
    assert_eq!(occurrences(&told, "IdleSleep"), 0, "{told:?}");
    scenario.finish().await;
}
