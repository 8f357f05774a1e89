//! Ready when people arrive, against a real API server: a `ready-by` Namespace wakes early by
//! its measured warm-up (or `--warm-up` before one was measured), so its workloads are available
//! at the hour its schedule names. There is no kubelet: the test marks Pods ready.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Namespace};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use support::{
    Scenario, cron_at, envtest, eventually, last_transition, mark_pods_ready,
    replicas_and_annotations, sleep_until, stop_cleanly_and_finish, whole_second_in,
};

const LAST_WARM_UP: &str = "cronscaler.dev/last-warm-up";
const LAST_TRANSITION: &str = "cronscaler.dev/last-transition";
const PROMPTLY: Duration = Duration::from_secs(30);

/// A Namespace's annotations: asleep since an hour before `morning`, awake at `morning`,
/// ready by then, with `more`.
fn ready_by(morning: DateTime<Utc>, more: Value) -> Value {
    let mut annotations = json!({
        "cronscaler.dev/scale-down": cron_at(morning - TimeDelta::hours(1)),
        "cronscaler.dev/scale-up": cron_at(morning),
        "cronscaler.dev/ready-by": "true",
    });
    if let (Some(annotations), Some(more)) = (annotations.as_object_mut(), more.as_object()) {
        annotations.extend(more.clone());
    }
    annotations
}

/// When `web` is first seen scaled back up to 2, looking every 100 ms until `deadline`.
async fn woken_at(deployments: &Api<Deployment>, deadline: DateTime<Utc>) -> DateTime<Utc> {
    while Utc::now() < deadline {
        if let Some((2, _)) = replicas_and_annotations(deployments, "web").await {
            return Utc::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("web was not woken by {deadline}");
}

/// Plays the kubelet for `namespace` until `web` is available, or panics at `deadline`.
async fn ready(client: &Client, namespace: &str, deadline: DateTime<Utc>) -> DateTime<Utc> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    while Utc::now() < deadline {
        mark_pods_ready(client, namespace).await;
        let available = deployments
            .get("web")
            .await
            .ok()
            .and_then(|web| web.status?.available_replicas);
        if available == Some(2) {
            return Utc::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("web in {namespace} was not available by {deadline}");
}

#[tokio::test]
async fn a_ready_by_namespace_wakes_its_warm_up_early_and_is_available_at_the_hour() {
    let Some(scenario) = Scenario::own("ready-by", envtest::Options::default()).await else {
        return;
    };
    let client = scenario.client.clone();
    let measured = scenario.namespace.clone();
    let unmeasured = format!("{measured}-new");
    support::create_namespace(&client, &unmeasured).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let measured_web = support::create_deployment(&client, &measured, "web", 2).await;
    let unmeasured_web = support::create_deployment(&client, &unmeasured, "web", 2).await;
    let morning = whole_second_in(55);
    support::annotate_namespace(
        &client,
        &measured,
        ready_by(morning, json!({ LAST_WARM_UP: "15s" })),
    )
    .await;
    support::annotate_namespace(&client, &unmeasured, ready_by(morning, json!({}))).await;
    let mut controller = scenario.start_cluster_wide_controller(
        "cronscaler-ready-by",
        &["--grace-period", "0s", "--warm-up", "30s"],
    );
    controller.wait_ready().await;
    eventually("both Namespaces asleep", PROMPTLY, || async {
        let (measured, _) = replicas_and_annotations(&measured_web, "web").await?;
        let (unmeasured, _) = replicas_and_annotations(&unmeasured_web, "web").await?;
        (measured == 0 && unmeasured == 0).then_some(())
    })
    .await;

    let deadline = morning + TimeDelta::seconds(10);
    let (unmeasured_woken, measured_woken) = tokio::join!(
        woken_at(&unmeasured_web, deadline),
        woken_at(&measured_web, deadline)
    );
    let early = |woken: DateTime<Utc>| (morning - woken).num_milliseconds() as f64 / 1000.0;
    assert!(
        (27.0..=31.0).contains(&early(unmeasured_woken)),
        "without a measurement, --warm-up 30s early: woke {} s before {morning}",
        early(unmeasured_woken)
    );
    assert!(
        (12.0..=16.0).contains(&early(measured_woken)),
        "15 s measured, 15 s early: woke {} s before {morning}",
        early(measured_woken)
    );
    let available = ready(&client, &measured, morning).await;
    assert!(available <= morning, "available at {available}");
    sleep_until(morning).await;
    let available = measured_web
        .get("web")
        .await
        .ok()
        .and_then(|web| web.status?.available_replicas);
    assert_eq!(available, Some(2), "at {morning}, the hour it names");
    for deployments in [&measured_web, &unmeasured_web] {
        let (_, annotations) = replicas_and_annotations(deployments, "web").await.unwrap();
        assert_eq!(
            annotations.get(LAST_TRANSITION),
            Some(&last_transition(morning, "up")),
            "the wake keeps its own instant"
        );
    }

    // Each wake is measured again: the next morning starts by what this one took.
    ready(&client, &unmeasured, morning + TimeDelta::seconds(30)).await;
    for namespace in [&measured, &unmeasured] {
        let warm_up = eventually("a new last-warm-up", PROMPTLY, || async {
            let annotations = namespaces.get(namespace).await.ok()?.annotations().clone();
            annotations
                .get(LAST_WARM_UP)
                .filter(|warm_up| *warm_up != "15s")
                .cloned()
        })
        .await;
        assert!(warm_up.ends_with('s'), "{namespace}: {warm_up}");
    }
    let events = scenario.events("web").await;
    assert_eq!(
        support::occurrences(&events, "ScaledUp"),
        1,
        "one wake, not a second at the hour: {}",
        support::describe(&events)
    );
    assert!(
        events.iter().any(|event| event
            .note
            .as_deref()
            .is_some_and(|note| note.contains("cronscaler.dev/ready-by: ")
                && note.contains("s early, to be ready by then"))),
        "the Event says why it woke before its hour: {}",
        support::describe(&events)
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
