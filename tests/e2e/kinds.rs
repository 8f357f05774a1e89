//! Every kind of a staging Namespace sleeps, on a real API server with the real CRDs of the
//! projects whose objects live there (`../shared/crds/`): an Argo Rollout and a CRD of our own
//! through their replicas, a KEDA-scaled Deployment through its ScaledObject while the test plays
//! KEDA, CloudNativePG Clusters through their hibernation annotation, a running Job suspended.
//! Kinds named by `--kinds` outside the catalogue are `own_kinds`'.
//!
//! No operator runs: the test plays the one that matters. Without `../shared/crds/` these tests
//! say they are skipped.

use crate::support;

use k8s_openapi::api::apps::v1::Deployment;
use std::time::Duration;

use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, assert_occurrences,
    crds::{grant_optional, install_crd, shared_crd},
    create, deploy, describe, envtest, eventually,
    kinds::{
        LATENESS, annotations, api, asleep_remembering, gvk, install_own_crd, night, replicas,
        rollout, scalable,
    },
    nightly, occurrences, replicas_and_annotations, replicas_become, replicas_now, sleep_until,
    stop_cleanly_and_finish,
};

const ORIGINAL_VALUE: &str = "cronscaler.dev/original-value";
const PAUSED_REPLICAS: &str = "autoscaling.keda.sh/paused-replicas";
const HIBERNATION: &str = "cnpg.io/hibernation";

/// A scenario with KEDA's ScaledObjects installed and the controller started with the default
/// kinds; `None` where it cannot run.
async fn keda(test: &str) -> Option<(Scenario, support::Controller, Api<DynamicObject>)> {
    let scenario = Scenario::shared(test).await?;
    let scaled_objects = support::keda::scaled_objects(test, &scenario).await?;
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    Some((scenario, controller, scaled_objects))
}

/// The test plays KEDA for `scaler`: every 2 s its target `workload` is held at
/// paused-replicas while the ScaledObject is paused, and at minReplicaCount (2) or more
/// otherwise.
fn play_keda(
    deployments: &Api<Deployment>,
    scaled_objects: &Api<DynamicObject>,
    workload: &'static str,
    scaler: &'static str,
) -> tokio::task::JoinHandle<()> {
    let (deployments, scaled_objects) = (deployments.clone(), scaled_objects.clone());
    tokio::spawn(async move {
        loop {
            if let Ok(scaler) = scaled_objects.get(scaler).await {
                let paused = annotations(&scaler)
                    .get(PAUSED_REPLICAS)
                    .and_then(|value| value.parse::<i32>().ok());
                let current = replicas_and_annotations(&deployments, workload)
                    .await
                    .map(|(replicas, _)| replicas);
                let wanted = match (paused, current) {
                    (Some(paused), _) => Some(paused),
                    (None, Some(current)) if current < 2 => Some(2),
                    _ => None,
                };
                if let Some(wanted) = wanted.filter(|wanted| Some(*wanted) != current) {
                    let scale = json!({ "spec": { "replicas": wanted } });
                    let as_keda = PatchParams {
                        field_manager: Some("keda-operator".into()),
                        ..PatchParams::default()
                    };
                    let _ = deployments
                        .patch_scale(workload, &as_keda, &Patch::Merge(&scale))
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
}

/// The HPA KEDA makes for `scaler`, controlled by it, scaling `workload`.
async fn keda_hpa(
    scenario: &Scenario,
    scaler: &DynamicObject,
    workload: &str,
) -> k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler {
    let name = scaler.metadata.name.clone().unwrap_or_default();
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let hpa = serde_json::from_value(json!({
        "metadata": {
            "name": format!("keda-hpa-{name}"),
            "ownerReferences": [{
                "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": name,
                "uid": scaler.metadata.uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": workload },
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [{ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 60 } } }],
        },
    }))
    .expect("an HPA");
    hpas.create(&PostParams::default(), &hpa)
        .await
        .expect("KEDA's HPA")
}

#[tokio::test]
async fn a_rollout_and_a_crd_of_our_own_sleep_and_wake_to_their_counts_through_replicas() {
    let test = "rollout";
    let Some(rollouts_crd) = shared_crd(test, "argoproj.io_rollouts.yaml") else {
        return;
    };
    let Some(scenario) = Scenario::shared(test).await else {
        return;
    };
    let rollout_kind = gvk("argoproj.io", "v1alpha1", "Rollout");
    install_crd(&scenario.client, &rollouts_crd, &rollout_kind).await;
    grant_optional(&scenario.client, "argo-rollouts.yaml").await;
    // A kind of our own with a scale subresource, as any operator's, and the grant a user adds.
    let widget_kind = install_own_crd(
        &scenario.client,
        ("test.cronscaler.dev", "Widget", "widgets"),
        "replicas",
    )
    .await;
    envtest::wait_allowed(
        &scenario.client,
        "test.cronscaler.dev",
        "widgets",
        "patch",
        None,
    )
    .await
    .expect("the Widget grant in force");
    envtest::wait_allowed(&scenario.client, "argoproj.io", "rollouts", "patch", None)
        .await
        .expect("the Rollout grant in force");

    let controller = scenario
        .ready_controller(
            "cronscaler",
            &[
                "--kinds",
                "Deployment.apps,Rollout.argoproj.io,Widget.test.cronscaler.dev",
            ],
        )
        .await;
    let (down, up) = night(8, 8);
    let rollouts = api(&scenario, &rollout_kind, "rollouts");
    let widgets = api(&scenario, &widget_kind, "widgets");
    create(&rollouts, rollout("shop", 3, nightly(down, up))).await;
    create(
        &widgets,
        scalable(&widget_kind, "gadget", 4, nightly(down, up)),
    )
    .await;

    for (api, name, count) in [(&rollouts, "shop", 3), (&widgets, "gadget", 4)] {
        asleep_remembering(api, name, count).await;
    }
    sleep_until(up).await;
    for (api, name, count) in [(&rollouts, "shop", 3), (&widgets, "gadget", 4)] {
        eventually(&format!("{name} awake at {count}"), LATENESS, || async {
            (replicas(&api.get(name).await.ok()?) == Some(count)).then_some(())
        })
        .await;
        let events = scenario.events(name).await;
        assert_occurrences(&events, "ScaledDown", 1, name);
        assert_occurrences(&events, "ScaledUp", 1, name);
    }
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_keda_scaled_deployment_sleeps_through_its_scaled_object_with_no_fight() {
    let test = "keda";
    let Some((scenario, controller, scaled_objects)) = keda(test).await else {
        return;
    };

    let deployments = scenario.deployments();
    deploy(
        &deployments,
        "web",
        2,
        json!({}),
        "the Deployment KEDA scales",
    )
    .await;
    let (down, up) = night(10, 12);
    // One ScaledObject had paused-replicas of its own before the night: it gets it back.
    let scaler = create(&scaled_objects, json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": "web-scaler", "annotations": nightly(down, up) },
        "spec": {
            "scaleTargetRef": { "name": "web" },
            "minReplicaCount": 2, "maxReplicaCount": 5,
            "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
        },
    }))
    .await;
    create(&scaled_objects, json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": "held", "annotations": json!({
            PAUSED_REPLICAS: "1",
            "cronscaler.dev/scale-down": support::cron_at(down),
            "cronscaler.dev/scale-up": support::cron_at(up),
        }) },
        "spec": {
            "scaleTargetRef": { "name": "other" },
            "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
        },
    }))
    .await;
    let hpa = keda_hpa(&scenario, &scaler, "web").await;
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let keda = play_keda(&deployments, &scaled_objects, "web", "web-scaler");

    let asleep = eventually("web-scaler paused at 0", LATENESS * 2, || async {
        let scaler = scaled_objects.get("web-scaler").await.ok()?;
        (annotations(&scaler)
            .get(PAUSED_REPLICAS)
            .map(String::as_str)
            == Some("0"))
        .then_some(scaler)
    })
    .await;
    assert_eq!(
        annotations(&asleep).get(ORIGINAL_VALUE).map(String::as_str),
        Some(""),
        "it had no paused-replicas"
    );
    replicas_become(&deployments, "web", 0, "KEDA holding web at 0", LATENESS).await;
    let held = scaled_objects.get("held").await.expect("held");
    assert_eq!(
        annotations(&held).get(PAUSED_REPLICAS).map(String::as_str),
        Some("0")
    );
    assert_eq!(
        annotations(&held).get(ORIGINAL_VALUE).map(String::as_str),
        Some("1")
    );

    // The whole night: web stays at 0, nobody fights, nothing is said to be reverted.
    sleep_until(up - chrono::Duration::seconds(1)).await;
    let (replicas, web_annotations) = replicas_and_annotations(&deployments, "web")
        .await
        .expect("web");
    assert_eq!(replicas, 0, "asleep all night");
    assert!(
        !web_annotations
            .keys()
            .any(|key| key.starts_with("cronscaler.dev/")),
        "its replicas are KEDA's: nothing of ours is written on web: {web_annotations:?}"
    );
    support::keda::no_revert_told(&scenario).await;

    // Morning: each ScaledObject has what it had; KEDA scales web back up by itself.
    let woken = eventually("web-scaler unpaused", LATENESS, || async {
        let scaler = scaled_objects.get("web-scaler").await.ok()?;
        (!annotations(&scaler).contains_key(PAUSED_REPLICAS)).then_some(scaler)
    })
    .await;
    assert!(!annotations(&woken).contains_key(ORIGINAL_VALUE));
    eventually("held paused at 1 again", LATENESS, || async {
        let held = scaled_objects.get("held").await.ok()?;
        (annotations(&held).get(PAUSED_REPLICAS).map(String::as_str) == Some("1")).then_some(())
    })
    .await;
    eventually("KEDA scaling web again", LATENESS, || async {
        let (replicas, _) = replicas_and_annotations(&deployments, "web").await?;
        (replicas >= 2).then_some(())
    })
    .await;
    let after = hpas.get("keda-hpa-web-scaler").await.expect("KEDA's HPA");
    assert_eq!(after.spec, hpa.spec, "KEDA's HPA keeps its bounds");
    assert!(
        after
            .metadata
            .managed_fields
            .unwrap_or_default()
            .iter()
            .all(|entry| entry.manager.as_deref() != Some("cronscaler")),
        "KEDA's HPA is never written by cronscaler"
    );
    keda.abort();
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

/// The schedule on the workload itself, its ScaledObject carrying none: the workload's own
/// schedule decides, and the ScaledObject is the lever.
#[tokio::test]
async fn a_keda_workload_s_own_schedule_sleeps_it_through_its_scaled_object() {
    let test = "keda-own";
    let Some((scenario, controller, scaled_objects)) = keda(test).await else {
        return;
    };
    let deployments = scenario.deployments();
    let scaler = create(&scaled_objects, json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": { "name": "api-scaler" },
        "spec": {
            "scaleTargetRef": { "name": "api" },
            "minReplicaCount": 2, "maxReplicaCount": 5,
            "triggers": [{ "type": "cpu", "metricType": "Utilization", "metadata": { "value": "60" } }],
        },
    }))
    .await;
    let hpa = keda_hpa(&scenario, &scaler, "api").await;
    let (down, up) = night(10, 12);
    deploy(
        &deployments,
        "api",
        2,
        nightly(down, up),
        "the Deployment KEDA scales, with a schedule of its own",
    )
    .await;
    let keda = play_keda(&deployments, &scaled_objects, "api", "api-scaler");

    eventually("api-scaler paused at 0", LATENESS * 2, || async {
        let scaler = scaled_objects.get("api-scaler").await.ok()?;
        (annotations(&scaler)
            .get(PAUSED_REPLICAS)
            .map(String::as_str)
            == Some("0"))
        .then_some(())
    })
    .await;
    let (_, records) = eventually("KEDA holding api at 0", LATENESS, || async {
        let (replicas, annotations) = replicas_and_annotations(&deployments, "api").await?;
        (replicas == 0).then_some((replicas, annotations))
    })
    .await;
    assert_eq!(
        records.get(ORIGINAL_VALUE).map(String::as_str),
        Some(""),
        "the workload records what its ScaledObject held: {records:?}"
    );
    let slept = scenario.event("api", "ScaledDown", LATENESS).await;
    assert!(
        slept
            .note
            .as_deref()
            .is_some_and(|note| note.ends_with("through ScaledObject api-scaler")),
        "{slept:?}"
    );

    sleep_until(up - chrono::Duration::seconds(1)).await;
    assert_eq!(
        replicas_now(&deployments, "api", "api").await,
        0,
        "asleep all night, no fight with KEDA"
    );
    eventually("api-scaler unpaused", LATENESS, || async {
        let scaler = scaled_objects.get("api-scaler").await.ok()?;
        (!annotations(&scaler).contains_key(PAUSED_REPLICAS)).then_some(())
    })
    .await;
    eventually(
        "KEDA scaling api again, its records gone",
        LATENESS,
        || async {
            let (replicas, annotations) = replicas_and_annotations(&deployments, "api").await?;
            (replicas >= 2 && !annotations.contains_key(ORIGINAL_VALUE)).then_some(())
        },
    )
    .await;
    let events = scenario.events("api").await;
    assert_eq!(
        occurrences(&events, "ScaleReverted"),
        0,
        "{}",
        describe(&events)
    );
    assert_eq!(
        occurrences(&events, "InvalidSchedule"),
        0,
        "{}",
        describe(&events)
    );
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let after = hpas.get("keda-hpa-api-scaler").await.expect("KEDA's HPA");
    assert_eq!(after.spec, hpa.spec, "KEDA's HPA keeps its bounds");
    keda.abort();
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_cnpg_cluster_hibernates_at_night_and_one_hibernated_before_stays_so() {
    let test = "cnpg";
    let Some(crd) = shared_crd(test, "postgresql.cnpg.io_clusters.yaml") else {
        return;
    };
    let Some(scenario) = Scenario::shared(test).await else {
        return;
    };
    let cluster_kind = gvk("postgresql.cnpg.io", "v1", "Cluster");
    install_crd(&scenario.client, &crd, &cluster_kind).await;
    grant_optional(&scenario.client, "cloudnative-pg.yaml").await;
    envtest::wait_allowed(
        &scenario.client,
        "postgresql.cnpg.io",
        "clusters",
        "patch",
        None,
    )
    .await
    .expect("the CloudNativePG grant in force");
    let controller = scenario
        .ready_controller(
            "cronscaler",
            &["--kinds", "Deployment.apps,Cluster.postgresql.cnpg.io"],
        )
        .await;
    let clusters = api(&scenario, &cluster_kind, "clusters");
    let (down, up) = night(8, 8);
    for (name, hibernation) in [("db", None), ("cold", Some("on"))] {
        let mut annotations = nightly(down, up);
        if let Some(value) = hibernation {
            annotations[HIBERNATION] = json!(value);
        }
        create(
            &clusters,
            json!({
                "apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
                "metadata": { "name": name, "annotations": annotations },
                "spec": { "instances": 2, "storage": { "size": "1Gi" } },
            }),
        )
        .await;
    }
    let db = eventually("db hibernated", LATENESS * 2, || async {
        let annotations = annotations(&clusters.get("db").await.ok()?);
        (annotations.get(HIBERNATION).map(String::as_str) == Some("on")).then_some(annotations)
    })
    .await;
    assert_eq!(
        db.get(ORIGINAL_VALUE).map(String::as_str),
        Some(""),
        "it had none"
    );
    // Already hibernated at night: told so, and nothing written.
    eventually("cold told it stays hibernated", LATENESS, || async {
        scenario.events("cold").await.into_iter().find(|event| {
            event.reason.as_deref() == Some("ScheduleFollowed")
                && event
                    .note
                    .as_deref()
                    .is_some_and(|note| note.contains("already hibernated"))
        })
    })
    .await;

    sleep_until(up).await;
    eventually("db running again", LATENESS, || async {
        let db = clusters.get("db").await.ok()?;
        (annotations(&db).get(HIBERNATION).map(String::as_str) == Some("off")).then_some(())
    })
    .await;
    let events = scenario.events("db").await;
    assert_occurrences(&events, "ScaledUp", 1, "db");
    let cold = clusters.get("cold").await.expect("cold");
    assert_eq!(
        annotations(&cold).get(HIBERNATION).map(String::as_str),
        Some("on"),
        "hibernated before the night, hibernated after"
    );
    let events = scenario.events("cold").await;
    assert_eq!(
        occurrences(&events, "ScaledUp") + occurrences(&events, "ScaledDown"),
        0,
        "nothing was done to cold:\n{}",
        describe(&events)
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_running_job_is_suspended_for_the_night_and_resumed() {
    let Some(scenario) = Scenario::shared("job").await else {
        return;
    };
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(scenario.client.clone(), &scenario.namespace);
    let (down, up) = night(8, 8);
    let job = serde_json::from_value(json!({
        "metadata": { "name": "import", "annotations": nightly(down, up) },
        "spec": {
            "template": {
                "spec": {
                    "containers": [{ "name": "import", "image": "busybox", "command": ["sleep", "3600"] }],
                    "restartPolicy": "Never",
                },
            },
        },
    }))
    .expect("a Job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("the Job");
    let suspended = |wanted: bool| {
        let jobs = jobs.clone();
        async move {
            let job = jobs.get("import").await.ok()?;
            let suspend = job.spec.as_ref()?.suspend.unwrap_or(false);
            (suspend == wanted).then_some(job)
        }
    };
    let asleep = eventually("the Job suspended", LATENESS * 2, || suspended(true)).await;
    assert_eq!(
        asleep
            .metadata
            .annotations
            .unwrap_or_default()
            .get("cronscaler.dev/original-suspend")
            .map(String::as_str),
        Some("false"),
        "it was running"
    );
    sleep_until(up).await;
    eventually("the Job resumed", LATENESS, || suspended(false)).await;
    let events = scenario.events("import").await;
    assert_eq!(
        occurrences(&events, "ScaledDown"),
        1,
        "{}",
        describe(&events)
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(10)).await;
}
