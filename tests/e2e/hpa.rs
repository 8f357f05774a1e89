//! HorizontalPodAutoscalers against a real API server and kube-controller-manager, whose HPA
//! controller keeps a workload within its HPA's bounds (there is no metrics-server, so the
//! bounds are all it enforces): an HPA held at `down-replicas` for the night and given its
//! bounds back in the morning, an HPA left alone with `down-replicas` 0, and the HPA
//! controller's own change of replicas, which is no `ScaleReverted`, a person's change at night
//! giving a held HPA its bounds back, and `cronscaler restore` giving a held HPA its bounds back.
//!
//! See `tests/support/mod.rs` for where the API server comes from.

use crate::support;

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::{apps::v1::Deployment, autoscaling::v2::HorizontalPodAutoscaler};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{
    Controller, Scenario, deploy, describe, eventually, last_transition, replicas_and_annotations,
    replicas_become, replicas_now, sleep_until, stop_cleanly_and_finish, whole_second_in,
};

const ORIGINAL_MIN: &str = "cronscaler.dev/original-min-replicas";
const ORIGINAL_MAX: &str = "cronscaler.dev/original-max-replicas";
const LAST: &str = "cronscaler.dev/last-transition";

/// Lateness we accept from a transition: the timer, one reconcile, a busy 2-core machine.
const LATENESS: Duration = Duration::from_secs(15);

/// How long the HPA controller may take to act on an HPA: it syncs each every 15 s.
const HPA_SYNC: Duration = Duration::from_secs(40);

/// An HPA of Deployment `target` with these bounds, on CPU as users mostly write it.
fn hpa(target: &str, min: i32, max: i32) -> HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": { "name": target },
        "spec": {
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": target },
            "minReplicas": min,
            "maxReplicas": max,
            "metrics": [{
                "type": "Resource",
                "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } },
            }],
        },
    }))
    .expect("an HPA")
}

/// A controller, and a Deployment `name` of `replicas` with an HPA of 2 to 5 that its schedule,
/// which only scales down (in a few seconds, to `down-replicas` 1), holds at 1.
async fn held_for_the_night(
    scenario: &Scenario,
    name: &str,
    replicas: i32,
) -> (Controller, Api<Deployment>, Api<HorizontalPodAutoscaler>) {
    let (controller, deployments, hpas) = controller_over(scenario).await;
    create_hpa(&hpas, name, 2, 5).await;
    let annotations = json!({
        "cronscaler.dev/scale-down": support::cron_at(whole_second_in(5)),
        "cronscaler.dev/down-replicas": "1",
    });
    deploy(
        &deployments,
        name,
        replicas,
        annotations,
        "an annotated Deployment",
    )
    .await;
    eventually("the HPA held at 1", LATENESS, || async {
        let (min, max, _) = bounds(&hpas, name).await?;
        (min, max).eq(&(1, 1)).then_some(())
    })
    .await;
    (controller, deployments, hpas)
}

/// The HPAs of the scenario's namespace.
fn hpas(scenario: &Scenario) -> Api<HorizontalPodAutoscaler> {
    Api::namespaced(scenario.client.clone(), &scenario.namespace)
}

/// Creates [`hpa`]`(target, min, max)`: the HPA the API server made.
async fn create_hpa(
    hpas: &Api<HorizontalPodAutoscaler>,
    target: &str,
    min: i32,
    max: i32,
) -> HorizontalPodAutoscaler {
    hpas.create(&PostParams::default(), &hpa(target, min, max))
        .await
        .expect("an HPA")
}

/// A controller over the scenario's namespace, ready, and the Deployments and HPAs there.
async fn controller_over(
    scenario: &Scenario,
) -> (Controller, Api<Deployment>, Api<HorizontalPodAutoscaler>) {
    let controller = scenario.ready_controller("cronscaler", &[]).await;
    (controller, scenario.deployments(), hpas(scenario))
}

/// Waits until the Deployment `name` has `replicas` and records `last` as its last transition,
/// failing with `what` after [`LATENESS`].
async fn scaled_and_recorded(
    deployments: &Api<Deployment>,
    name: &str,
    replicas: i32,
    last: String,
    what: &str,
) {
    eventually(what, LATENESS, || async {
        let (now, annotations) = replicas_and_annotations(deployments, name).await?;
        (now == replicas && annotations.get(LAST) == Some(&last)).then_some(())
    })
    .await;
}

/// minReplicas, maxReplicas and annotations of an HPA, as `kubectl get hpa -o yaml` shows them.
async fn bounds(
    hpas: &Api<HorizontalPodAutoscaler>,
    name: &str,
) -> Option<(i32, i32, BTreeMap<String, String>)> {
    let hpa = hpas.get(name).await.ok()?;
    let spec = hpa.spec.as_ref()?;
    Some((
        spec.min_replicas.unwrap_or(1),
        spec.max_replicas,
        hpa.annotations().clone(),
    ))
}

#[tokio::test]
async fn an_hpa_is_held_at_down_replicas_for_the_night_and_given_its_bounds_back() {
    let Some(scenario) = Scenario::shared("hpa-night").await else {
        return;
    };
    let (controller, deployments, hpas) = controller_over(&scenario).await;
    create_hpa(&hpas, "web", 2, 5).await;
    // A night longer than the HPA controller's sync period, so an HPA left with its own bounds
    // would have scaled the workload back to 2 before the morning.
    let down = whole_second_in(8);
    let up = down + chrono::Duration::seconds(35);
    let annotations = json!({
        "cronscaler.dev/scale-down": support::cron_at(down),
        "cronscaler.dev/scale-up": support::cron_at(up),
        "cronscaler.dev/down-replicas": "1",
    });
    deploy(
        &deployments,
        "web",
        2,
        annotations,
        "an annotated Deployment",
    )
    .await;

    scaled_and_recorded(
        &deployments,
        "web",
        1,
        last_transition(down, "down"),
        "the scale-down to 1",
    )
    .await;
    let (min, max, annotations) = eventually("the HPA held at 1", LATENESS, || async {
        let held = bounds(&hpas, "web").await?;
        (held.0 == 1).then_some(held)
    })
    .await;
    assert_eq!((min, max), (1, 1), "held for the night");
    assert_eq!(annotations.get(ORIGINAL_MIN).map(String::as_str), Some("2"));
    assert_eq!(annotations.get(ORIGINAL_MAX).map(String::as_str), Some("5"));
    let scaled_down = scenario.event("web", "ScaledDown", LATENESS).await;
    let note = scaled_down.note.unwrap_or_default();
    assert!(
        note.contains("HorizontalPodAutoscaler web held at 1 for the night"),
        "{note}"
    );

    sleep_until(up - chrono::Duration::seconds(2)).await;
    assert_eq!(
        replicas_now(&deployments, "web", "the Deployment").await,
        1,
        "the held HPA left the night alone:\n{}",
        describe(&scenario.events("web").await)
    );

    let (min, max, annotations) = eventually("the HPA's bounds back", LATENESS, || async {
        let back = bounds(&hpas, "web").await?;
        (back.0 == 2).then_some(back)
    })
    .await;
    assert_eq!((min, max), (2, 5));
    for key in [ORIGINAL_MIN, ORIGINAL_MAX] {
        assert!(
            !annotations.contains_key(key),
            "{key} is removed: {annotations:?}"
        );
    }
    scaled_and_recorded(
        &deployments,
        "web",
        2,
        last_transition(up, "up"),
        "the Deployment back at 2",
    )
    .await;
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn with_down_replicas_zero_the_hpa_is_left_alone_and_stops_by_itself() {
    let Some(scenario) = Scenario::shared("hpa-zero").await else {
        return;
    };
    let (controller, deployments, hpas) = controller_over(&scenario).await;
    let created = create_hpa(&hpas, "api", 2, 5).await;
    let down = whole_second_in(6);
    deploy(
        &deployments,
        "api",
        3,
        support::down_at(down),
        "an annotated Deployment",
    )
    .await;
    replicas_become(&deployments, "api", 0, "the scale-down to 0", LATENESS).await;
    // Longer than the HPA controller's sync period: at 0 replicas it does not act.
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(
        replicas_now(&deployments, "api", "the Deployment").await,
        0,
        "the HPA stops acting on a target at 0 replicas"
    );
    let hpa = hpas.get("api").await.expect("the HPA");
    let spec = hpa.spec.as_ref().expect("a spec");
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 5));
    assert!(
        !hpa.annotations().contains_key(ORIGINAL_MIN),
        "{:?}",
        hpa.annotations()
    );
    assert!(
        hpa.managed_fields()
            .iter()
            .all(|entry| entry.manager.as_deref() != Some("cronscaler")),
        "the controller never wrote the HPA: {:?}",
        hpa.managed_fields()
    );
    assert_eq!(
        hpa.spec, created.spec,
        "the HPA's spec is as its user created it"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

/// The HPA controller brings a workload that `up-replicas` set below the HPA's minimum up to it:
/// a change of replicas after the scale-up, but the HPA owns replicas during the day, so no
/// `ScaleReverted`, also when a restarted controller looks at it. Prints what `managedFields`
/// record of the HPA controller's write.
/// A person's `kubectl scale` at night stands (docs/scheduling.md, rule 3): the HPA held at
/// `down-replicas` gets its bounds back at once, or it would scale the workload back to 1. With
/// a schedule that only scales down, no morning would ever give them back.
#[tokio::test]
async fn a_person_s_scale_at_night_gives_a_held_hpa_its_bounds_back() {
    let Some(scenario) = Scenario::shared("hpa-taken-over").await else {
        return;
    };
    let (controller, deployments, hpas) = held_for_the_night(&scenario, "nightly", 2).await;
    replicas_become(&deployments, "nightly", 1, "the scale-down to 1", LATENESS).await;

    // As `kubectl scale deployment nightly --replicas=4` does it: through /scale.
    deployments
        .patch_scale(
            "nightly",
            &PatchParams {
                field_manager: Some("kubectl".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({ "spec": { "replicas": 4 } })),
        )
        .await
        .expect("scaled by hand");
    let reverted = scenario.event("nightly", "ScaleReverted", LATENESS).await;
    assert!(
        reverted
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("from 1 to 4 by kubectl"),
        "{reverted:?}"
    );
    let (min, max, annotations) = eventually("the HPA's bounds back", LATENESS, || async {
        let back = bounds(&hpas, "nightly").await?;
        (back.0 == 2).then_some(back)
    })
    .await;
    assert_eq!((min, max), (2, 5));
    assert!(!annotations.contains_key(ORIGINAL_MIN), "{annotations:?}");

    // Longer than the HPA controller's sync period: a held HPA would have scaled it back to 1.
    tokio::time::sleep(HPA_SYNC).await;
    assert_eq!(
        replicas_now(&deployments, "nightly", "the Deployment").await,
        4,
        "the person's 4 stands:\n{}",
        describe(&scenario.events("nightly").await)
    );
    let (min, max, _) = bounds(&hpas, "nightly").await.expect("the HPA");
    assert_eq!((min, max), (2, 5), "not held again");
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_hpa_s_own_change_of_replicas_is_no_scale_reverted() {
    let Some(scenario) = Scenario::shared("hpa-owns").await else {
        return;
    };
    let (mut controller, deployments, hpas) = controller_over(&scenario).await;
    let up = whole_second_in(5);
    let annotations = json!({
        "cronscaler.dev/scale-down": support::cron_at(up + chrono::Duration::hours(1)),
        "cronscaler.dev/scale-up": support::cron_at(up),
        "cronscaler.dev/up-replicas": "1",
    });
    deploy(
        &deployments,
        "shop",
        3,
        annotations,
        "an annotated Deployment",
    )
    .await;
    scaled_and_recorded(
        &deployments,
        "shop",
        1,
        last_transition(up, "up"),
        "the scale-up to 1",
    )
    .await;
    create_hpa(&hpas, "shop", 2, 5).await;
    replicas_become(
        &deployments,
        "shop",
        2,
        "the HPA controller scaling to its minimum",
        HPA_SYNC,
    )
    .await;
    let deployment = deployments.get("shop").await.expect("the Deployment");
    let writers: Vec<String> = deployment
        .managed_fields()
        .iter()
        .map(|entry| {
            format!(
                "manager {:?} operation {:?} subresource {:?} fields {}",
                entry.manager.as_deref().unwrap_or_default(),
                entry.operation.as_deref().unwrap_or_default(),
                entry.subresource.as_deref().unwrap_or_default(),
                entry
                    .fields_v1
                    .as_ref()
                    .map(|fields| fields.0.to_string())
                    .unwrap_or_default()
            )
        })
        .collect();
    support::say(&format!(
        "managedFields after the HPA's write:\n  {}",
        writers.join("\n  ")
    ));
    assert!(
        deployment.managed_fields().iter().any(|entry| {
            entry.manager.as_deref() == Some("kube-controller-manager")
                && entry.subresource.as_deref() == Some("scale")
                && entry
                    .fields_v1
                    .as_ref()
                    .is_some_and(|fields| fields.0["f:spec"].get("f:replicas").is_some())
        }),
        "the HPA controller writes replicas as kube-controller-manager through /scale:\n  {}",
        writers.join("\n  ")
    );
    // The API server records no time for a write through /scale, so the tracker cannot tell it
    // came after the scale-up; a restart looks at every target with an HPA.
    controller
        .assert_stops_cleanly(Duration::from_secs(5))
        .await;
    let controller = scenario.ready_controller("cronscaler-restarted", &[]).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let events = scenario.events("shop").await;
    assert!(
        events
            .iter()
            .all(|event| event.reason.as_deref() != Some("ScaleReverted")),
        "the HPA's change is no ScaleReverted:\n{}",
        describe(&events)
    );
    let labels = deployments
        .get("shop")
        .await
        .expect("the Deployment")
        .labels()
        .clone();
    assert!(!labels.contains_key("cronscaler.dev/warned"), "{labels:?}");
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}

#[tokio::test]
async fn restore_gives_a_held_hpa_its_bounds_back() {
    let Some(scenario) = Scenario::shared("hpa-restore").await else {
        return;
    };
    let (mut controller, deployments, hpas) = held_for_the_night(&scenario, "batch", 3).await;

    // As docs/operations.md's uninstall says: stop the controller, then restore.
    controller
        .assert_stops_cleanly(Duration::from_secs(5))
        .await;
    let output = scenario.run(&["restore", "-n", &scenario.namespace, "batch"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cronscaler restore exited {}:\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let namespace = &scenario.namespace;
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            format!(
                "restored HorizontalPodAutoscaler {namespace}/batch: minReplicas 1 -> 2, maxReplicas 1 -> 5"
            ),
            format!("restored Deployment {namespace}/batch: replicas 1 -> 3"),
        ]
    );
    let (min, max, annotations) = bounds(&hpas, "batch").await.expect("the HPA");
    assert_eq!((min, max), (2, 5));
    assert!(
        !annotations.contains_key(ORIGINAL_MIN) && !annotations.contains_key(ORIGINAL_MAX),
        "{annotations:?}"
    );
    assert_eq!(
        replicas_now(&deployments, "batch", "the Deployment").await,
        3
    );
    scenario.finish().await;
}

/// A stop between a workload's scale-down and its HPA's hold: at the next start the watched
/// metadata and HPAs tell the HPA is out of line, and it is held, with no other object read.
#[tokio::test]
async fn a_hold_a_stop_left_undone_is_made_at_the_next_start() {
    let Some(scenario) = Scenario::shared("hpa-heal").await else {
        return;
    };
    let deployments = scenario.deployments();
    let hpas = hpas(&scenario);
    create_hpa(&hpas, "night", 2, 5).await;
    // Asleep at 1 since last night's scale-down, as the controller left it before it stopped.
    let down = whole_second_in(-60);
    let mut annotations = support::down_at(down);
    annotations["cronscaler.dev/down-replicas"] = json!("1");
    annotations["cronscaler.dev/original-replicas"] = json!("3");
    annotations[LAST] = json!(last_transition(down, "down"));
    deploy(
        &deployments,
        "night",
        1,
        annotations,
        "a sleeping Deployment",
    )
    .await;

    let controller = scenario.ready_controller("cronscaler", &[]).await;
    let (_, _, record) = eventually("the HPA held at 1 at start", LATENESS, || async {
        let (min, max, annotations) = bounds(&hpas, "night").await?;
        (min, max).eq(&(1, 1)).then_some((min, max, annotations))
    })
    .await;
    assert_eq!(record.get(ORIGINAL_MIN).map(String::as_str), Some("2"));
    assert_eq!(record.get(ORIGINAL_MAX).map(String::as_str), Some("5"));
    assert_eq!(
        replicas_now(&deployments, "night", "the Deployment").await,
        1,
        "the workload is left as it is"
    );
    stop_cleanly_and_finish(scenario, controller, Duration::from_secs(5)).await;
}
