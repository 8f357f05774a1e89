//! KEDA-scaled workloads on a real API server, with KEDA played as its operator behaves
//! (`tests/support/keda.rs`): it deletes its HPA while a ScaledObject is paused, so the workload
//! a ScaledObject scales is known from the ScaledObject's own `scaleTargetRef`; and a
//! ScaledObject a person paused (`autoscaling.keda.sh/paused`) before the night has its workload
//! back at its count in the morning, still paused, even when the controller restarted between
//! the wake and the give-back, and after a `restore` at night.
//!
//! Without `../shared/crds/` (KEDA's real CRD) these tests say they are skipped.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use serde_json::json;
use support::{
    Scenario, annotate_namespace, create, create_deployment, envtest, eventually,
    keda::{self, PAUSED, PAUSED_REPLICAS},
    metric, nightly, replicas_and_annotations, replicas_become, replicas_now, set_requests,
    sleep_until, stop_cleanly_and_finish, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, KEDA's poll, a busy 2-core
/// machine.
const LATENESS: Duration = Duration::from_secs(15);

/// What of `name`'s own is cronscaler's: its `cronscaler.dev/` annotations, and the fields
/// cronscaler manages.
async fn cronscaler_on(deployments: &Api<Deployment>, name: &str) -> Vec<String> {
    let object = deployments.get(name).await.expect("the workload");
    let annotations = (object.metadata.annotations.iter().flatten())
        .filter(|(key, _)| key.starts_with("cronscaler.dev/"))
        .map(|(key, value)| format!("{key}={value}"));
    let managed = (object.metadata.managed_fields.iter().flatten())
        .filter(|entry| entry.manager.as_deref() == Some("cronscaler"))
        .map(|entry| format!("managedFields: {:?}", entry.fields_v1));
    annotations.chain(managed).collect()
}

/// A ScaledObject `name` scaling `workload`, paused by a person before the night, with
/// `annotations` of a schedule and our records.
fn held_scaler(name: &str, workload: &str, annotations: serde_json::Value) -> serde_json::Value {
    let mut annotations = annotations;
    annotations[PAUSED] = json!("true");
    json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "scaleTargetRef": { "name": workload },
            "minReplicaCount": keda::MIN_REPLICAS, "maxReplicaCount": 5,
            "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
        },
    })
}

/// `name`'s annotations once they have neither `paused-replicas` nor `paused-at`.
async fn given_back(scaled_objects: &Api<kube::api::DynamicObject>, name: &str) {
    let what = format!("{name} given back to KEDA's paused");
    eventually(&what, LATENESS, || async {
        let annotations = scaled_objects.get(name).await.ok()?.metadata.annotations?;
        let ours = [PAUSED_REPLICAS, "cronscaler.dev/paused-at"];
        (ours.iter().all(|key| !annotations.contains_key(*key))
            && annotations.get(PAUSED).map(String::as_str) == Some("true"))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_restart_before_the_give_back_and_a_restore_at_night_leave_keda_holding_each_count() {
    let test = "keda-held";
    let Some(scenario) = Scenario::own(test, envtest::Options::api_server_only()).await else {
        return;
    };
    let Some(scaled_objects) = keda::scaled_objects(test, &scenario).await else {
        return;
    };
    let namespace = scenario.namespace.clone();
    // Woken this morning at 3, the count it was paused at, by a controller that was killed
    // before it gave the ScaledObject back: paused-replicas and paused-at still stand.
    let woke = whole_second_in(-60);
    let deployments = create_deployment(&scenario.client, &namespace, "web", 3).await;
    let mut woken = nightly(woke + chrono::Duration::hours(12), woke);
    for (key, value) in [
        (PAUSED_REPLICAS, "3".to_string()),
        ("cronscaler.dev/paused-at", "3".to_string()),
        (
            "cronscaler.dev/last-transition",
            format!("{} up", woke.format("%Y-%m-%dT%H:%M:%SZ")),
        ),
    ] {
        woken[key] = json!(value);
    }
    create(&scaled_objects, held_scaler("web-scaler", "web", woken)).await;
    let web = keda::play(
        &scenario.client,
        &namespace,
        &scaled_objects,
        "web",
        "web-scaler",
    );

    // `status` names the hold, and what ends it.
    let held = "woken to 3 by autoscaling.keda.sh/paused-replicas, the count \
                autoscaling.keda.sh/paused held it at before the night, until it runs 3";
    let status = scenario.said(&["status", "-n", &namespace]);
    assert!(status.contains(held), "{status}");

    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    given_back(&scaled_objects, "web-scaler").await;
    assert_eq!(
        replicas_now(&deployments, "web", "web").await,
        3,
        "KEDA's paused holds it at its count"
    );
    let status = scenario.said(&["status", "-n", &namespace]);
    assert!(!status.contains("woken to 3"), "{status}");

    // Asleep at night, paused at 2 before it, when the controller is uninstalled: `restore`.
    create_deployment(&scenario.client, &namespace, "api", 0).await;
    let mut asleep = nightly(
        woke - chrono::Duration::hours(1),
        woke + chrono::Duration::hours(8),
    );
    for (key, value) in [
        (PAUSED_REPLICAS, "0".to_string()),
        ("cronscaler.dev/original-value", String::new()),
        ("cronscaler.dev/paused-at", "2".to_string()),
        (
            "cronscaler.dev/last-transition",
            format!(
                "{} down",
                (woke - chrono::Duration::hours(1)).format("%Y-%m-%dT%H:%M:%SZ")
            ),
        ),
    ] {
        asleep[key] = json!(value);
    }
    create(&scaled_objects, held_scaler("api-scaler", "api", asleep)).await;
    let api = keda::play(
        &scenario.client,
        &namespace,
        &scaled_objects,
        "api",
        "api-scaler",
    );
    // Asleep, it withholds the fewest replicas KEDA would run api at awake, of api's pods:
    // 2 × 500m, as `plan` counts it.
    set_requests(&deployments, "api", json!({ "cpu": "500m" })).await;
    let status = scenario.said(&["status", "-n", &namespace]);
    assert!(status.contains("; withholding 1.00 CPU\n"), "{status}");
    controller
        .assert_stops_cleanly(Duration::from_secs(10))
        .await;
    let said = scenario.said(&["restore", "-n", &namespace, "api-scaler"]);
    assert!(
        said.contains(&format!(
            "restored ScaledObject {namespace}/api-scaler: paused at 0 -> paused at 2"
        )),
        "{said}"
    );
    let scaler = scaled_objects.get("api-scaler").await.expect("api-scaler");
    let annotations = scaler.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get(PAUSED_REPLICAS).map(String::as_str),
        Some("2")
    );
    assert!(
        !annotations
            .keys()
            .any(|key| key.starts_with("cronscaler.dev/paused-at")),
        "{annotations:?}"
    );
    replicas_become(&scenario.deployments(), "api", 2, "api back at 2", LATENESS).await;
    web.abort();
    api.abort();
    scenario.finish().await;
}

#[tokio::test]
async fn a_scaled_object_paused_before_the_night_wakes_its_workload_to_its_count_with_no_hpa() {
    let test = "keda-paused";
    // A plane of its own: the controller reads Namespaces' schedules, cluster-wide.
    let Some(scenario) = Scenario::own(test, envtest::Options::api_server_only()).await else {
        return;
    };
    let Some(scaled_objects) = keda::scaled_objects(test, &scenario).await else {
        return;
    };
    // In its own namespace, where it keeps the ledger of savings.
    let flags = [
        "--leader-elect-namespace",
        envtest::SA_NAMESPACE,
        "--prices=cpu=1,currency=USD",
    ];
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &flags);
    controller.wait_ready().await;
    let deployments = create_deployment(&scenario.client, &scenario.namespace, "web", 3).await;
    set_requests(&deployments, "web", json!({ "cpu": "500m" })).await;
    // A person paused KEDA at web's 3 replicas: KEDA deleted its HPA, and holds whatever
    // count web has. Nothing but the ScaledObject's own spec says it scales web.
    create(
        &scaled_objects,
        json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": { "name": "web-scaler", "annotations": { PAUSED: "true" } },
            "spec": {
                "scaleTargetRef": { "name": "web" },
                "minReplicaCount": keda::MIN_REPLICAS, "maxReplicaCount": 5,
                "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
            },
        }),
    )
    .await;
    let keda = keda::play(
        &scenario.client,
        &scenario.namespace,
        &scaled_objects,
        "web",
        "web-scaler",
    );
    // The whole Namespace sleeps at night.
    let down = whole_second_in(10);
    let up = down + chrono::Duration::seconds(15);
    annotate_namespace(&scenario.client, &scenario.namespace, nightly(down, up)).await;

    eventually(
        "web asleep through web-scaler",
        LATENESS + LATENESS,
        || async {
            let scaler = scaled_objects.get("web-scaler").await.ok()?;
            let pinned = scaler.metadata.annotations?.get(PAUSED_REPLICAS).cloned();
            let (replicas, _) = replicas_and_annotations(&deployments, "web").await?;
            (pinned.as_deref() == Some("0") && replicas == 0).then_some(())
        },
    )
    .await;
    sleep_until(up - chrono::Duration::seconds(1)).await;
    assert_eq!(
        replicas_now(&deployments, "web", "web").await,
        0,
        "asleep all night"
    );
    assert_eq!(
        cronscaler_on(&deployments, "web").await,
        Vec::<String>::new(),
        "web's replicas are KEDA's, whose HPA is gone: nothing of ours is on web"
    );

    // Morning: web is back at the 3 it was paused at, and KEDA still holds it there.
    replicas_become(&deployments, "web", 3, "web back at 3", LATENESS).await;
    let scaler = eventually("web-scaler as it was", LATENESS, || async {
        let scaler = scaled_objects.get("web-scaler").await.ok()?;
        let annotations = scaler.metadata.annotations.clone().unwrap_or_default();
        let ours = annotations
            .keys()
            .any(|key| key.starts_with("cronscaler.dev/original"));
        (!annotations.contains_key(PAUSED_REPLICAS) && !ours).then_some(annotations)
    })
    .await;
    assert_eq!(scaler.get(PAUSED).map(String::as_str), Some("true"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        replicas_now(&deployments, "web", "web").await,
        3,
        "paused at its count, as before the night"
    );
    assert_eq!(
        cronscaler_on(&deployments, "web").await,
        Vec::<String>::new()
    );
    // The night is filed as `plan` counts it: KEDA's minReplicaCount of web's pods, for the
    // hours the ScaledObject's record says.
    let slept = scaler
        .get("cronscaler.dev/slept")
        .cloned()
        .expect("the sleep recorded");
    let (replicas, span) = slept.split_once(' ').expect("REPLICAS SINCE/UNTIL");
    assert_eq!(replicas, keda::MIN_REPLICAS.to_string(), "{slept}");
    let (since, until) = span.split_once('/').expect("SINCE/UNTIL");
    let instant = |text: &str| {
        text.parse::<chrono::DateTime<chrono::Utc>>()
            .expect("an instant")
    };
    let hours = (instant(until) - instant(since)).num_milliseconds() as f64 / 3_600_000.0;
    let cpu = 0.5 * f64::from(keda::MIN_REPLICAS) * hours;
    let name = format!(
        "cronscaler_saved_resource_hours_total{{namespace=\"{}\",resource=\"cpu\"}}",
        scenario.namespace
    );
    eventually("the night filed", Duration::from_secs(45), || async {
        let counted = metric(&controller.metrics().await?, &name)?;
        ((counted - cpu).abs() < 1e-9).then_some(())
    })
    .await;
    keda::no_revert_told(&scenario).await;
    keda.abort();
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
