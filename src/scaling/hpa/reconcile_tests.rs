//! The reconciler with HPAs, against the mocked API server (which refuses what `rbac/` does not
//! allow): the requests of each transition, in order.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Value, json};

use super::tests::{hpa as web_hpa, web as web_target};
use super::*;
use crate::error::Error;
use crate::runtime::worker::Next;
use crate::workloads::writers::HPA_CONTROLLER_MANAGER;
use crate::{
    mock_api::{Exchange, event},
    scaling::test_support::reconcile_scripted,
    schedule,
};

const WEB: &str = "/apis/apps/v1/namespaces/shop/deployments/web";
const WEB_HPA: &str = "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web";

fn at(hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, hour, minute, 0).unwrap()
}

/// Deployment `shop/web` with these replicas and annotations, its replicas last written by
/// `manager` through /scale at 04:00; `cronscaler.dev/warned` among them is the label the
/// controller records a warning in.
fn web(replicas: i32, annotations: &[(&str, &str)], manager: &str) -> Value {
    let (labels, annotations): (Vec<_>, Vec<_>) = annotations
        .iter()
        .partition(|(key, _)| *key == schedule::WARNED);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "shop", "resourceVersion": "100", "uid": "u-web",
            "annotations": crate::schedule::test_support::annotations(&annotations),
            "labels": crate::schedule::test_support::annotations(&labels),
            "managedFields": [{
                "manager": manager, "operation": "Update", "apiVersion": "apps/v1",
                "time": "2026-11-23T04:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": { "f:spec": { "f:replicas": {} } }, "subresource": "scale",
            }],
        },
        "spec": { "replicas": replicas, "selector": {}, "template": {} },
    })
}

fn merge_patch(path: &str, body: Value) -> Exchange {
    Exchange::new("PATCH", format!("{path}?&fieldManager=cronscaler"))
        .content_type("application/merge-patch+json")
        .body(body)
        .reply(200, json!({}))
}

/// Reconciles `web` at each instant with these HPAs, against `script`; the results in order.
async fn reconcile_with(
    hpas: Vec<Hpa>,
    instants: &[DateTime<Utc>],
    dry_run: bool,
    script: Vec<Exchange>,
) -> Vec<Result<Next, Error>> {
    reconcile_scripted(&web_target(), instants, dry_run, script, |ctx| {
        ctx.with_hpas(HpaIndex::listed(hpas))
    })
    .await
}

const ONE_LEFT: [(&str, &str); 3] = [
    (schedule::SCALE_DOWN, "0 20 * * *"),
    (schedule::SCALE_UP, "0 7 * * *"),
    (schedule::DOWN_REPLICAS, "1"),
];

fn night(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut night = ONE_LEFT.to_vec();
    night.extend_from_slice(&[
        (schedule::ORIGINAL_REPLICAS, "4"),
        (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
    ]);
    night.extend_from_slice(extra);
    night
}

#[tokio::test]
async fn the_scale_down_holds_the_hpa_after_scaling_the_workload() {
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(4, &ONE_LEFT, "kubectl")),
        merge_patch(
            WEB,
            json!({
                "metadata": { "annotations": { "cronscaler.dev/original-replicas": "4" } },
                "spec": { "replicas": 1 },
            }),
        ),
        merge_patch(
            WEB_HPA,
            json!({
                "metadata": {
                    "resourceVersion": "41",
                    "annotations": {
                        "cronscaler.dev/original-min-replicas": "2",
                        "cronscaler.dev/original-max-replicas": "5",
                    },
                },
                "spec": { "minReplicas": 1, "maxReplicas": 1 },
            }),
        ),
        event(
            "shop",
            "Normal",
            "ScaledDown",
            "scaled down from 4 to 1 replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at \
             2026-11-23T20:00:00Z; HorizontalPodAutoscaler web held at 1 for the night \
             (minReplicas 2 and maxReplicas 5 recorded)",
            "web",
        ),
    ];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(20, 0)],
        false,
        script,
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn the_scale_up_gives_the_hpa_its_bounds_back_before_waking_the_workload() {
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(1, &night(&[]), "kubectl")),
        merge_patch(
            WEB_HPA,
            json!({
                "metadata": {
                    "resourceVersion": "41",
                    "annotations": {
                        "cronscaler.dev/original-min-replicas": null,
                        "cronscaler.dev/original-max-replicas": null,
                    },
                },
                "spec": { "minReplicas": 2, "maxReplicas": 5 },
            }),
        ),
        merge_patch(WEB, json!({ "spec": { "replicas": 4 } })),
        event(
            "shop",
            "Normal",
            "ScaledUp",
            "scaled up from 1 to 4 replicas by cronscaler.dev/scale-up \"0 7 * * *\" (UTC) at \
             2026-11-23T07:00:00Z; HorizontalPodAutoscaler web given back minReplicas 2 and \
             maxReplicas 5",
            "web",
        ),
    ];
    let held = web_hpa(1, 1, Originals::Recorded { min: 2, max: 5 });
    let results = reconcile_with(vec![held], &[at(7, 0)], false, script).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn with_down_replicas_zero_the_hpa_is_not_touched() {
    let to_zero = [ONE_LEFT[0], ONE_LEFT[1]];
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(3, &to_zero, "kubectl")),
        merge_patch(WEB, json!({ "spec": { "replicas": 0 } })),
        event(
            "shop",
            "Normal",
            "ScaledDown",
            "scaled down from 3 to 0 replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at \
             2026-11-23T20:00:00Z",
            "web",
        ),
    ];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(20, 0)],
        false,
        script,
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn a_hold_left_undone_by_a_restart_is_made_at_the_next_look_and_the_hpas_change_is_no_revert()
{
    // Scaled down to 1 last night; the process stopped before the HPA was held, and the HPA
    // scaled the workload back to its minimum of 2: the tracker sees a write by someone else.
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(2, &night(&[]), HPA_CONTROLLER_MANAGER)),
        merge_patch(
            WEB_HPA,
            json!({
                "metadata": {
                    "resourceVersion": "41",
                    "annotations": {
                        "cronscaler.dev/original-min-replicas": "2",
                        "cronscaler.dev/original-max-replicas": "5",
                    },
                },
                "spec": { "minReplicas": 1, "maxReplicas": 1 },
            }),
        ),
    ];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(5, 0)],
        false,
        script,
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

fn release_of_web_hpa() -> Exchange {
    merge_patch(
        WEB_HPA,
        json!({
            "metadata": {
                "resourceVersion": "41",
                "annotations": {
                    "cronscaler.dev/original-min-replicas": null,
                    "cronscaler.dev/original-max-replicas": null,
                },
            },
            "spec": { "minReplicas": 2, "maxReplicas": 5 },
        }),
    )
}

/// A person's `kubectl scale` at night stands (rule 3), so the HPA held for the night gets its
/// bounds back at once: held at 1, it would scale the workload back, and a schedule with no
/// scale-up would never release it.
#[tokio::test]
async fn a_person_s_change_on_a_target_with_an_hpa_is_a_revert_and_gives_the_hpa_back() {
    let cause = schedule::reverted_cause("2026-11-22T20:00:00Z down".parse().unwrap());
    let cause = cause.as_str();
    for schedule in [&ONE_LEFT[..], &[ONE_LEFT[0], ONE_LEFT[2]][..]] {
        let night = |said: bool| {
            let mut night: Vec<(&str, &str)> = schedule.to_vec();
            night.extend_from_slice(&[
                (schedule::ORIGINAL_REPLICAS, "4"),
                (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
            ]);
            if said {
                night.push((schedule::WARNED, cause));
            }
            night
        };
        let script = vec![
            Exchange::new("GET", WEB).reply(200, web(3, &night(false), "kubectl")),
            // The HPA is given back first: the warning comes last in every look.
            release_of_web_hpa(),
            merge_patch(
                WEB,
                json!({ "metadata": { "labels": { "cronscaler.dev/warned": cause } } }),
            ),
            event(
                "shop",
                "Warning",
                "ScaleReverted",
                "replicas changed from 1 to 3 by kubectl (through /scale) after the scheduled \
                 scale-down at 2026-11-22T20:00:00Z; left alone until the next transition",
                "web",
            ),
        ];
        let held = web_hpa(1, 1, Originals::Recorded { min: 2, max: 5 });
        let results = reconcile_with(vec![held], &[at(5, 0)], false, script).await;
        assert!(
            results.iter().all(Result::is_ok),
            "{schedule:?}: {results:?}"
        );

        // The warning said at an earlier look (a release that failed, or a restart): the
        // release alone, no second warning.
        let script = vec![
            Exchange::new("GET", WEB).reply(200, web(3, &night(true), "kubectl")),
            release_of_web_hpa(),
        ];
        let held = web_hpa(1, 1, Originals::Recorded { min: 2, max: 5 });
        let results = reconcile_with(vec![held], &[at(5, 0)], false, script).await;
        assert!(
            results.iter().all(Result::is_ok),
            "{schedule:?}: {results:?}"
        );
    }
}

#[tokio::test]
async fn during_the_day_the_hpa_owns_the_replicas_even_with_up_replicas() {
    let day = [
        ONE_LEFT[0],
        ONE_LEFT[1],
        ONE_LEFT[2],
        (schedule::UP_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
    ];
    // Only the read: no warning, and an HPA with its own bounds needs nothing.
    let script = vec![Exchange::new("GET", WEB).reply(200, web(5, &day, HPA_CONTROLLER_MANAGER))];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(12, 0)],
        false,
        script,
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn removing_the_schedule_at_night_gives_the_hpa_back_too() {
    let leftovers = [
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::ORIGINAL_REPLICAS, "4"),
        (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
    ];
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(1, &leftovers, "kubectl")),
        merge_patch(
            WEB_HPA,
            json!({ "spec": { "minReplicas": 2, "maxReplicas": 5 } }),
        ),
        merge_patch(WEB, json!({ "spec": { "replicas": 4 } })),
        event(
            "shop",
            "Normal",
            "ScheduleRemoved",
            "schedule annotations removed: replicas restored from 1 to 4; the controller's \
             annotations removed; HorizontalPodAutoscaler web given back minReplicas 2 and \
             maxReplicas 5",
            "web",
        ),
    ];
    let held = web_hpa(1, 1, Originals::Recorded { min: 2, max: 5 });
    let results = reconcile_with(vec![held], &[at(23, 0)], false, script).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn a_dry_run_says_what_it_would_do_to_the_hpa_and_changes_nothing() {
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(4, &ONE_LEFT, "kubectl")),
        event(
            "shop",
            "Normal",
            "ScaledDown",
            "dry run, nothing changed: scaled down from 4 to 1 replicas by cronscaler.dev/scale-down \
             \"0 20 * * *\" (UTC) at 2026-11-23T20:00:00Z; HorizontalPodAutoscaler web held at 1 \
             for the night (minReplicas 2 and maxReplicas 5 recorded)",
            "web",
        ),
    ];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(20, 0)],
        true,
        script,
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[tokio::test]
async fn a_hold_that_fails_is_said_in_the_event_and_retried() {
    let conflict = json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict",
        "message": "the object has been modified", "code": 409,
    });
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(4, &ONE_LEFT, "kubectl")),
        merge_patch(WEB, json!({ "spec": { "replicas": 1 } })),
        Exchange::new("PATCH", format!("{WEB_HPA}?&fieldManager=cronscaler")).reply(409, conflict),
        event(
            "shop",
            "Normal",
            "ScaledDown",
            "scaled down from 4 to 1 replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at \
             2026-11-23T20:00:00Z; HorizontalPodAutoscaler web held at 1 for the night \
             (minReplicas 2 and maxReplicas 5 recorded): failed for now, retried",
            "web",
        ),
    ];
    let results = reconcile_with(
        vec![web_hpa(2, 5, Originals::None)],
        &[at(20, 0)],
        false,
        script,
    )
    .await;
    assert!(
        matches!(
            results.as_slice(),
            [Err(Error::Api {
                kind: "HorizontalPodAutoscaler",
                ..
            })]
        ),
        "{results:?}"
    );
}

const WEB_SCALER: &str = "/apis/keda.sh/v1alpha1/namespaces/shop/scaledobjects/web-scaler";

/// The ScaledObject `shop/web-scaler`, with these annotations.
fn web_scaler(annotations: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {
            "name": "web-scaler", "namespace": "shop", "resourceVersion": "300",
            "annotations": crate::schedule::test_support::annotations(annotations),
        },
        "spec": { "scaleTargetRef": { "name": "web" } },
    })
}

/// The pause of a KEDA workload's ScaledObject fails after its records were written: the Event
/// says so, and the next look pauses it, with nothing else to write.
#[tokio::test]
async fn a_scaled_object_whose_pause_failed_is_paused_at_the_next_look() {
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
    ];
    let recorded: Vec<_> = nightly
        .into_iter()
        .chain([
            (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
            ("cronscaler.dev/original-value", ""),
        ])
        .collect();
    let pause = json!({ "metadata": {
        "resourceVersion": "300",
        "annotations": { "autoscaling.keda.sh/paused-replicas": "0" },
    } });
    let unavailable = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "etcdserver: request timed out", "reason": "InternalError", "code": 500,
    });
    let script = vec![
        Exchange::new("GET", WEB).reply(200, web(2, &nightly, "keda-operator")),
        Exchange::new("GET", WEB_SCALER).reply(200, web_scaler(&[])),
        merge_patch(
            WEB,
            json!({ "metadata": { "resourceVersion": "100", "annotations": {
                "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
                "cronscaler.dev/original-value": "",
            } } }),
        ),
        Exchange::new("PATCH", format!("{WEB_SCALER}?&fieldManager=cronscaler"))
            .body(pause.clone())
            .reply(500, unavailable),
        event(
            "shop",
            "Normal",
            "ScaledDown",
            "scaled down from scaling to paused at 0 by cronscaler.dev/scale-down \"0 20 * * *\" \
             (UTC) at 2026-11-23T20:00:00Z, through ScaledObject web-scaler: failed for now, retried",
            "web",
        ),
        Exchange::new("GET", WEB).reply(200, web(2, &recorded, "keda-operator")),
        Exchange::new("GET", WEB_SCALER).reply(200, web_scaler(&[])),
        merge_patch(WEB_SCALER, pause),
    ];
    let keda_hpa = Hpa {
        lever: Some((TargetKind::ScaledObject, "web-scaler".into())),
        ..web_hpa(2, 5, Originals::None)
    };
    let results = reconcile_with(vec![keda_hpa], &[at(20, 0), at(20, 1)], false, script).await;
    assert!(results[0].is_err(), "retried: {results:?}");
    assert!(results[1].is_ok(), "{results:?}");
}
