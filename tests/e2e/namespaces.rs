//! Whole environments on a real API server: a Namespace's schedule puts its Deployments,
//! StatefulSets and CronJobs to sleep and wakes them, an object with a schedule of its own
//! follows only its own, `exclude` leaves an object out, and removing the Namespace's schedule
//! wakes what it put to sleep. The controller runs over every namespace, as installed, so this
//! scenario has a control plane of its own.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::{core::v1::Namespace, rbac::v1::ClusterRole};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Scenario, deploy, envtest, eventually, metric, replicas_and_annotations, replicas_become,
    replicas_now, stop_cleanly_and_finish, whole_second_in,
};

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_namespace_schedule_puts_its_workloads_to_sleep_and_removing_it_wakes_them() {
    // With the controller manager: the StatefulSet sleeps once the Deployment's Pods are gone.
    let options = envtest::Options::default();
    let Some(scenario) = Scenario::own("namespace-schedule", options).await else {
        return;
    };
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    let deployments = scenario.deployments();
    // One that follows the namespace, one with its own schedule, one left out.
    for (name, annotations) in [
        ("web", json!({})),
        (
            "own-schedule",
            json!({ "cronscaler.dev/scale-down": "0 0 3 * * *", "cronscaler.dev/scale-up": "0 0 4 * * *" }),
        ),
        ("left-out", json!({ "cronscaler.dev/exclude": "true" })),
    ] {
        deploy(&deployments, name, 2, annotations, "a Deployment").await;
    }
    scenario
        .stateful_sets()
        .create(
            &PostParams::default(),
            &support::stateful_set("db", 3, json!({})),
        )
        .await
        .expect("a StatefulSet");
    scenario
        .cron_jobs()
        .create(
            &PostParams::default(),
            &support::cron_job("report", false, json!({})),
        )
        .await
        .expect("a CronJob");

    // The namespace goes to sleep a few seconds from now, and wakes a while later.
    let down = whole_second_in(6);
    let up = down + chrono::Duration::hours(1);
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let schedule = json!({ "metadata": { "annotations": {
        "cronscaler.dev/scale-down": support::cron_at(down),
        "cronscaler.dev/scale-up": support::cron_at(up),
    } } });
    namespaces
        .patch(
            &scenario.namespace,
            &PatchParams::default(),
            &Patch::Merge(&schedule),
        )
        .await
        .expect("the Namespace annotated");

    let web = replicas_become(
        &deployments,
        "web",
        0,
        "the namespace's Deployment asleep",
        LATENESS,
    )
    .await;
    assert_eq!(
        web.get("cronscaler.dev/original-replicas")
            .map(String::as_str),
        Some("2"),
        "state stays on each workload: {web:?}"
    );
    eventually("the namespace's StatefulSet asleep", LATENESS, || async {
        let stateful_set = scenario.stateful_sets().get("db").await.ok()?;
        (stateful_set.spec?.replicas == Some(0)).then_some(())
    })
    .await;
    eventually("the namespace's CronJob suspended", LATENESS, || async {
        let cron_job = scenario.cron_jobs().get("report").await.ok()?;
        (cron_job.spec?.suspend == Some(true)).then_some(())
    })
    .await;
    // On the Namespace, one Event that says what its transition did.
    let told = scenario
        .namespace_event("NamespaceScaledDown", LATENESS)
        .await;
    let note = told.note.unwrap_or_default();
    assert!(
        note.starts_with("slept 3 workloads (")
            && ["Deployment web", "StatefulSet db", "CronJob report"]
                .iter()
                .all(|object| note.contains(object)),
        "{note}"
    );
    for name in ["own-schedule", "left-out"] {
        assert_eq!(
            replicas_now(&deployments, name, "the Deployment").await,
            2,
            "{name} does not follow the namespace"
        );
    }
    // What the Namespace's night withholds, in the controller's gauges.
    let series = |name: &str, kind: &str| {
        format!(
            "{name}{{namespace=\"{}\",kind=\"{kind}\"}}",
            scenario.namespace
        )
    };
    let asleep = [
        ("Deployment", Some(1.0), Some(2.0)),
        ("StatefulSet", Some(1.0), Some(3.0)),
        ("CronJob", Some(1.0), None),
    ];
    let read_gauges = |text: &str| -> Vec<(&'static str, Option<f64>, Option<f64>)> {
        asleep
            .iter()
            .map(|(kind, ..)| {
                (
                    *kind,
                    metric(text, &series("cronscaler_objects_asleep", kind)),
                    metric(text, &series("cronscaler_replicas_asleep", kind)),
                )
            })
            .collect()
    };
    let controller_ref = &controller;
    eventually("the asleep gauges", LATENESS, || async {
        let text = controller_ref.metrics().await?;
        (read_gauges(&text) == asleep).then_some(())
    })
    .await;

    // Removing the namespace's schedule is, for each workload that followed it, the removal of
    // its schedule: what it put to sleep wakes.
    let removed = json!({ "metadata": { "annotations": {
        "cronscaler.dev/scale-down": null, "cronscaler.dev/scale-up": null,
    } } });
    namespaces
        .patch(
            &scenario.namespace,
            &PatchParams::default(),
            &Patch::Merge(&removed),
        )
        .await
        .expect("the Namespace's schedule removed");
    eventually(
        "the Deployment awake again, annotations gone",
        LATENESS,
        || async {
            let (replicas, annotations) = replicas_and_annotations(&deployments, "web").await?;
            (replicas == 2 && !annotations.contains_key("cronscaler.dev/original-replicas"))
                .then_some(())
        },
    )
    .await;
    eventually("the CronJob running again", LATENESS, || async {
        let cron_job = scenario.cron_jobs().get("report").await.ok()?;
        (cron_job.spec?.suspend == Some(false)).then_some(())
    })
    .await;
    let controller_ref = &controller;
    eventually("no series asleep left", LATENESS, || async {
        let text = controller_ref.metrics().await?;
        read_gauges(&text)
            .iter()
            .all(|(_, objects, replicas)| objects.is_none() && replicas.is_none())
            .then_some(())
    })
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

/// An install whose ClusterRole lacks the Namespaces and HPAs grants (an upgrade that kept an
/// old one) still scales workloads on their own schedules: the watches of Namespaces and HPAs
/// failing must not hold scheduled scaling back for good.
#[tokio::test]
async fn without_the_namespaces_grant_workloads_are_still_scaled() {
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("no-namespaces-grant", options).await else {
        return;
    };
    let roles: Api<ClusterRole> = Api::all(scenario.client.clone());
    let mut role = roles
        .get("cronscaler")
        .await
        .expect("the installed ClusterRole");
    role.rules.get_or_insert_default().retain(|rule| {
        !rule
            .resources
            .iter()
            .flatten()
            .any(|resource| resource == "namespaces")
    });
    roles
        .replace("cronscaler", &PostParams::default(), &role)
        .await
        .expect("the ClusterRole without namespaces and HPAs");
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    let deployments = scenario.deployments();
    let down = whole_second_in(3);
    let annotations = json!({
        "cronscaler.dev/scale-down": support::cron_at(down),
        "cronscaler.dev/scale-up": support::cron_at(down + chrono::Duration::hours(1)),
    });
    deploy(
        &deployments,
        "web",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;
    // The workloads' watches wait 30 s for the Namespaces, scaling as long for the HPAs, then
    // both go on without them.
    replicas_become(
        &deployments,
        "web",
        0,
        "the scale-down, once the workloads are watched",
        Duration::from_secs(50),
    )
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

/// A Namespace of 40 workloads told in one Event: in full its note would be over the 1,024
/// characters the API server takes, so it names the first workloads and counts the rest.
#[tokio::test]
async fn a_namespace_of_forty_workloads_gets_its_event() {
    let options = envtest::Options::api_server_only();
    let Some(scenario) = Scenario::own("namespace-of-forty", options).await else {
        return;
    };
    let mut controller = scenario.start_cluster_wide_controller("cronscaler", &[]);
    controller.wait_ready().await;
    let deployments = scenario.deployments();
    for n in 0..40 {
        deploy(
            &deployments,
            &format!("checkout-frontend-service-{n:02}"),
            1,
            json!({}),
            "a Deployment",
        )
        .await;
    }
    let down = whole_second_in(8);
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let schedule = json!({ "metadata": { "annotations": {
        "cronscaler.dev/scale-down": support::cron_at(down),
    } } });
    namespaces
        .patch(
            &scenario.namespace,
            &PatchParams::default(),
            &Patch::Merge(&schedule),
        )
        .await
        .expect("the Namespace annotated");

    let told = scenario
        .namespace_event("NamespaceScaledDown", LATENESS * 2)
        .await;
    let note = told.note.unwrap_or_default();
    support::say(&format!(
        "namespace-of-forty: {} characters: {note}",
        note.len()
    ));
    assert!(
        note.starts_with("slept 40 workloads (Deployment checkout-frontend-service-")
            && note.contains(" more) by cronscaler.dev/scale-down "),
        "{note}"
    );
    let asleep = deployments
        .list(&Default::default())
        .await
        .expect("the Deployments")
        .items
        .iter()
        .filter(|deployment| deployment.spec.as_ref().and_then(|spec| spec.replicas) == Some(0))
        .count();
    assert_eq!(asleep, 40, "every workload asleep");
    assert!(controller.is_running(), "the controller exited");
}
