use chrono::TimeZone;

use super::*;
use crate::{
    mock_api::{Exchange, mock_client},
    runtime::key::ObjectKey,
    schedule::{Cleanup, test_support::annotations},
    workloads::target::{ScaleTarget, TargetKind, TargetState},
};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 23, 0, 0).unwrap()
}

#[test]
fn a_sleeping_object_gets_its_replicas_back_whatever_its_schedule_says() {
    let night = annotations(&[
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::PAUSED, "true"),
        (schedule::ORIGINAL_REPLICAS, "4"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ]);
    let change = restore_change(TargetKind::Deployment, &night, 0, now())
        .unwrap()
        .unwrap();
    assert_eq!(change.replicas, Some(4));
    assert_eq!(
        change.annotation_updates(),
        vec![
            (schedule::ORIGINAL_REPLICAS, None),
            (schedule::LAST_TRANSITION, None),
        ]
    );
    assert!(change.forgets_warning());
}

#[test]
fn an_awake_object_only_loses_the_controllers_annotations_and_a_clean_one_nothing() {
    let day = annotations(&[
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
    ]);
    let change = restore_change(TargetKind::Deployment, &day, 3, now())
        .unwrap()
        .unwrap();
    assert_eq!(change.replicas, None);
    assert_eq!(
        change.annotation_updates(),
        vec![(schedule::LAST_TRANSITION, None)]
    );
    assert!(change.forgets_warning());
    assert_eq!(
        restore_change(
            TargetKind::Deployment,
            &annotations(&[(schedule::SCALE_DOWN, "0 20 * * *")]),
            3,
            now()
        ),
        Ok(None)
    );
}

#[test]
fn replicas_changed_after_the_scale_down_stay_and_only_the_annotations_go() {
    let night = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let woken = restore_change(TargetKind::Deployment, &annotations(&night), 6, now())
        .unwrap()
        .unwrap();
    assert_eq!(woken.replicas, None);
    assert_eq!(woken.cleanup, Some(Cleanup::TakenOver { set: 0 }));
    assert_eq!(
        woken.annotation_updates(),
        vec![
            (schedule::ORIGINAL_REPLICAS, None),
            (schedule::LAST_TRANSITION, None),
        ]
    );
    assert!(woken.forgets_warning());

    // The schedule's own down-replicas say what the scale-down set.
    let mut one_left = night.to_vec();
    one_left.push((schedule::DOWN_REPLICAS, "1"));
    let one_left = annotations(&one_left);
    let put_to_sleep_by_hand = restore_change(TargetKind::Deployment, &one_left, 0, now())
        .unwrap()
        .unwrap();
    assert_eq!(put_to_sleep_by_hand.replicas, None);
    assert_eq!(
        put_to_sleep_by_hand.cleanup,
        Some(Cleanup::TakenOver { set: 1 })
    );
    let untouched = restore_change(TargetKind::Deployment, &one_left, 1, now())
        .unwrap()
        .unwrap();
    assert_eq!(untouched.replicas, Some(3));
}

#[test]
fn a_mangled_original_is_reported_not_guessed() {
    let mangled = annotations(&[(schedule::ORIGINAL_REPLICAS, "three")]);
    let problems = restore_change(TargetKind::Deployment, &mangled, 0, now()).unwrap_err();
    assert!(
        problems[0]
            .to_string()
            .starts_with("cronscaler.dev/original-replicas: \"three\""),
        "{problems:?}"
    );
}

/// A Deployment scaled down from 3 at 20:00 by a scale-down cron alone, found with `replicas`.
fn scaled_down(name: &str, replicas: i32) -> (PlanObject, Value) {
    let annotations = json!({
        "cronscaler.dev/scale-down": "0 20 * * *",
        "cronscaler.dev/original-replicas": "3",
        "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
    });
    listed(
        name,
        replicas,
        annotations,
        &NamespaceSchedules::watched([]),
    )
}

/// The Deployment `name` of staging at resourceVersion 77, as `plan::read_cluster` lists it
/// with `namespaces`, and as the API server has it.
fn listed(
    name: &str,
    replicas: i32,
    annotations: Value,
    namespaces: &NamespaceSchedules,
) -> (PlanObject, Value) {
    let deployment: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": "staging", "resourceVersion": "77",
            "annotations": annotations,
        },
        "spec": { "replicas": replicas, "selector": {}, "template": {} },
    }))
    .unwrap();
    let mut observed = TargetState::of_object(TargetKind::Deployment, &deployment);
    let source = ScheduleSource::of(&observed, None);
    (observed.annotations, _) = namespaces.effective(TargetKind::Deployment, "staging", &source);
    let object = PlanObject {
        target: ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("staging", name),
        },
        observed,
        hpas: Vec::new(),
        workload: Default::default(),
        driven_by: None,
        claim: None,
        gitops: None,
    };
    (object, serde_json::to_value(&deployment).unwrap())
}

/// The API server's side of a restore of `name` whose first patch meets a write: 409, the
/// object read again (at resourceVersion 78), and the second patch. `patch` gives the
/// patch's body guarded by a resourceVersion.
fn meets_a_write(name: &str, raw: Value, patch: impl Fn(&str) -> Value) -> Vec<Exchange> {
    let mut fresh = raw;
    fresh["metadata"]["resourceVersion"] = json!("78");
    let conflict = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("Operation cannot be fulfilled on deployments.apps \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
        "reason": "Conflict", "details": { "name": name, "group": "apps", "kind": "deployments" }, "code": 409,
    });
    vec![
        merge_patch(name, patch("77"), json!({})).reply(409, conflict),
        Exchange::new(
            "GET",
            format!("/apis/apps/v1/namespaces/staging/deployments/{name}"),
        )
        .reply(200, fresh.clone()),
        merge_patch(name, patch("78"), fresh),
    ]
}

/// Restores `objects` against an API server answering `script`, and what it said, once all went
/// well.
async fn restored(
    objects: &[PlanObject],
    hpas: &HpaIndex,
    namespaces: &NamespaceSchedules,
    script: Vec<Exchange>,
) -> Vec<String> {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(script));
    let (lines, ok) = restore(&client, objects, hpas, namespaces, now()).await;
    drop(client);
    server.await.unwrap();
    assert!(ok, "{lines:?}");
    lines
}

/// Restores `object` (`name`, as the API server has it, `raw`) whose first patch meets a write
/// (see [`meets_a_write`]); the line said of it, once all went well.
async fn restored_meeting_a_write(
    object: PlanObject,
    (name, raw): (&str, Value),
    patch: impl Fn(&str) -> Value,
    namespaces: &NamespaceSchedules,
) -> String {
    let script = meets_a_write(name, raw, patch);
    let mut lines = restored(&[object], &HpaIndex::listed([]), namespaces, script).await;
    assert!(lines.len() == 1, "{lines:?}");
    lines.remove(0)
}

fn merge_patch(name: &str, body: Value, reply: Value) -> Exchange {
    Exchange::new(
        "PATCH",
        format!("/apis/apps/v1/namespaces/staging/deployments/{name}?&fieldManager=cronscaler"),
    )
    .content_type("application/merge-patch+json")
    .body(body)
    .reply(200, reply)
}

const LEASE_IN_INSTALL: &str =
    "/apis/coordination.k8s.io/v1/namespaces/cronscaler/leases/cronscaler";
const LEASE_IN_DEFAULT: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/cronscaler";

fn lease(holder: &str, renewed: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": { "name": "cronscaler", "namespace": "cronscaler", "resourceVersion": "812" },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-11-23T20:00:00.000000Z",
            "renewTime": renewed,
            "leaseTransitions": 0
        }
    })
}

fn default_lease() -> LeaseArgs {
    LeaseArgs {
        namespace: None,
        name: "cronscaler".into(),
    }
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

#[tokio::test]
async fn restore_refuses_while_a_controller_renews_its_lease_and_names_it() {
    let (client, server) = mock_client();
    let server = tokio::spawn(
        server.serve(vec![Exchange::new("GET", LEASE_IN_INSTALL).reply(
            200,
            lease("cronscaler-6d9f8c7b5-x2k4q", "2026-11-23T22:59:56.250000Z"),
        )]),
    );
    let refusal =
        refuse_while_a_controller_leads(&client, &default_lease(), at("2026-11-23T23:00:00Z"))
            .await;
    drop(client);
    server.await.unwrap();
    let said = refusal.unwrap_err().to_string();
    for part in [
        "cronscaler-6d9f8c7b5-x2k4q holds Lease cronscaler/cronscaler, renewed 3s ago",
        "kubectl scale deployment cronscaler -n cronscaler --replicas=0",
        "--force",
    ] {
        assert!(said.contains(part), "{part:?} not in {said:?}");
    }
}

#[tokio::test]
async fn restore_goes_on_when_the_lease_is_released_expired_or_absent() {
    for lease in [
        lease("", "2026-11-23T22:59:59.000000Z"),
        lease("cronscaler-6d9f8c7b5-x2k4q", "2026-11-23T22:59:44.000000Z"),
    ] {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", LEASE_IN_INSTALL).reply(200, lease),
            Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(crate::mock_api::NOT_FOUND),
        ]));
        let checked =
            refuse_while_a_controller_leads(&client, &default_lease(), at("2026-11-23T23:00:00Z"))
                .await;
        drop(client);
        server.await.unwrap();
        assert_eq!(checked.unwrap(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn a_lease_restore_may_not_read_is_said_or_refused_when_named() {
    let forbidden = include_str!("../../../tests/fixtures/apiserver/list-deployments-403.json");
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
        Exchange::new("GET", LEASE_IN_INSTALL).reply_captured(crate::mock_api::NOT_FOUND),
        Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(forbidden),
    ]));
    let checked =
        refuse_while_a_controller_leads(&client, &default_lease(), at("2026-11-23T23:00:00Z"))
            .await;
    drop(client);
    server.await.unwrap();
    let unchecked = checked.unwrap();
    assert_eq!(unchecked.len(), 1, "{unchecked:?}");
    assert!(
        unchecked[0]
            .starts_with("not checked whether a controller leads on Lease default/cronscaler")
    );

    let named = LeaseArgs {
        namespace: Some("default".into()),
        ..default_lease()
    };
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
        Exchange::new("GET", LEASE_IN_DEFAULT).reply_captured(forbidden),
    ]));
    let refusal =
        refuse_while_a_controller_leads(&client, &named, at("2026-11-23T23:00:00Z")).await;
    drop(client);
    server.await.unwrap();
    assert!(
        matches!(refusal, Err(Refusal::LeaseUnreadable { .. })),
        "{refusal:?}"
    );
}

#[tokio::test]
async fn restore_patches_each_sleeping_object_and_says_what_it_did() {
    let (web, web_json) = scaled_down("web", 0);
    // Woken by hand to 6 after the scale-down: a person has taken over.
    let (api, api_json) = scaled_down("api", 6);
    let removed =
        json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
    let script = vec![
        merge_patch(
            "web",
            json!({
                "metadata": { "resourceVersion": "77", "annotations": removed },
                "spec": { "replicas": 3 },
            }),
            web_json,
        ),
        merge_patch(
            "api",
            json!({ "metadata": { "resourceVersion": "77", "annotations": removed } }),
            api_json,
        ),
    ];
    let namespaces = NamespaceSchedules::watched([]);
    let lines = restored(&[web, api], &HpaIndex::listed([]), &namespaces, script).await;
    assert_eq!(
        lines,
        vec![
            "restored Deployment staging/web: replicas 0 -> 3",
            "cleaned up Deployment staging/api: replicas left at 6 because they were changed \
             after the scale-down to 0; the controller's annotations removed",
        ]
    );
}

#[tokio::test]
async fn a_restore_that_meets_a_write_reads_again_and_goes_on() {
    let (web, raw) = scaled_down("web", 0);
    let removed =
        json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
    let patch = |version: &str| {
        json!({
            "metadata": { "resourceVersion": version, "annotations": removed },
            "spec": { "replicas": 3 },
        })
    };
    let line =
        restored_meeting_a_write(web, ("web", raw), patch, &NamespaceSchedules::watched([])).await;
    assert_eq!(line, "restored Deployment staging/web: replicas 0 -> 3");
}

#[tokio::test]
async fn a_restore_of_kube_downscalers_sleep_that_meets_a_write_still_wakes_to_its_count() {
    // Listed with `--kube-downscaler-annotations`: its record read as ours.
    let namespaces = NamespaceSchedules::watched([]).reading_kube_downscaler(true);
    let their_record = json!({ "downscaler/original-replicas": "4" });
    let (left, raw) = listed("left", 0, their_record, &namespaces);
    let patch = |version: &str| {
        json!({
            "metadata": {
                "resourceVersion": version,
                "annotations": { "downscaler/original-replicas": null },
            },
            "spec": { "replicas": 4 },
        })
    };
    let line = restored_meeting_a_write(left, ("left", raw), patch, &namespaces).await;
    assert_eq!(line, "restored Deployment staging/left: replicas 0 -> 4");
}

#[tokio::test]
async fn a_restore_of_a_workload_on_its_namespaces_counts_that_meets_a_write_still_restores() {
    // Put to sleep at 1 by its Namespace's schedule: at 1, it was not changed since.
    let namespaces = NamespaceSchedules::watched([]);
    namespaces.update(
        "staging",
        None,
        &BTreeMap::from([
            (schedule::SCALE_DOWN.to_string(), "0 20 * * *".to_string()),
            (schedule::DOWN_REPLICAS.to_string(), "1".to_string()),
        ]),
    );
    let record = json!({
        "cronscaler.dev/original-replicas": "3",
        "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
    });
    let (web, raw) = listed("web", 1, record, &namespaces);
    let removed =
        json!({ "cronscaler.dev/original-replicas": null, "cronscaler.dev/last-transition": null });
    let patch = |version: &str| {
        json!({
            "metadata": { "resourceVersion": version, "annotations": removed },
            "spec": { "replicas": 3 },
        })
    };
    let line = restored_meeting_a_write(web, ("web", raw), patch, &namespaces).await;
    assert_eq!(line, "restored Deployment staging/web: replicas 1 -> 3");
}

#[tokio::test]
async fn restore_gives_the_hpa_its_bounds_back_before_the_replicas() {
    let (web, web_json) = scaled_down("web", 0);
    let held = crate::scaling::hpa::Hpa {
        key: ObjectKey::new("staging", "web-hpa"),
        target: web.target.clone(),
        min_replicas: 1,
        max_replicas: 1,
        originals: crate::scaling::hpa::Originals::Recorded { min: 2, max: 5 },
        resource_version: Some("9".into()),
        lever: None,
    };
    let script = vec![
        Exchange::new(
            "PATCH",
            "/apis/autoscaling/v2/namespaces/staging/horizontalpodautoscalers/web-hpa?&fieldManager=cronscaler",
        )
        .content_type("application/merge-patch+json")
        .body(json!({
            "metadata": {
                "resourceVersion": "9",
                "annotations": {
                    "cronscaler.dev/original-min-replicas": null,
                    "cronscaler.dev/original-max-replicas": null,
                },
            },
            "spec": { "minReplicas": 2, "maxReplicas": 5 },
        }))
        .reply(200, json!({})),
        merge_patch("web", json!({ "spec": { "replicas": 3 } }), web_json),
    ];
    let namespaces = NamespaceSchedules::watched([]);
    let lines = restored(&[web], &HpaIndex::listed([held]), &namespaces, script).await;
    assert_eq!(
        lines,
        vec![
            "restored HorizontalPodAutoscaler staging/web-hpa: minReplicas 1 -> 2, maxReplicas 1 -> 5",
            "restored Deployment staging/web: replicas 0 -> 3",
        ]
    );
}

#[tokio::test]
async fn restore_gives_a_paused_application_back_its_self_heal_reading_it_again_after_a_write() {
    let application = |version: &str| {
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {
                "name": "shop", "namespace": "argocd", "resourceVersion": version,
                "annotations": {
                    "cronscaler.dev/gitops-paused": "{\"previous\":true,\"namespaces\":[\"staging\"]}",
                },
            },
            "spec": { "syncPolicy": { "automated": { "selfHeal": false } } },
        })
    };
    let list = |items: Vec<Value>| json!({ "apiVersion": "v1", "kind": "List", "metadata": {}, "items": items });
    let given_back = |version: &str| {
        json!({
            "metadata": {
                "resourceVersion": version,
                "annotations": { "cronscaler.dev/gitops-paused": null },
            },
            "spec": { "syncPolicy": { "automated": { "selfHeal": true } } },
        })
    };
    let patch = |version: &str| {
        Exchange::new(
            "PATCH",
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/shop?&fieldManager=cronscaler",
        )
        .content_type("application/merge-patch+json")
        .body(given_back(version))
    };
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", "/apis/argoproj.io/v1alpha1/applications?&limit=500")
                .reply(200, list(vec![application("5")])),
            Exchange::new(
                "GET",
                "/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations?&limit=500",
            )
            .reply_captured(crate::mock_api::NOT_FOUND),
            Exchange::new(
                "GET",
                "/apis/helm.toolkit.fluxcd.io/v2/helmreleases?&limit=500",
            )
            .reply_captured(include_str!(
                "../../../tests/fixtures/apiserver/list-deployments-403.json"
            )),
            // Argo CD wrote its status meanwhile.
            patch("5").reply_captured(include_str!(
                "../../../tests/fixtures/apiserver/patch-deployment-409.json"
            )),
            Exchange::new(
                "GET",
                "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications?&fieldSelector=metadata.name%3Dshop",
            )
            .reply(200, list(vec![application("6")])),
            patch("6").reply(200, application("7")),
        ]));
    let read = crate::commands::cluster::read_owners(&client)
        .await
        .unwrap();
    let (lines, ok) = give_back_owners(&client, None, read, |_| true).await;
    drop(client);
    server.await.unwrap();
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines,
        vec![
            "skipped helmreleases.helm.toolkit.fluxcd.io: may not be listed (403); a pause recorded on one stays",
            "restored Argo CD Application argocd/shop: self-heal given back (true): Namespace staging awake",
        ]
    );
}

/// A ScaledObject paused by a person at 3 before the night, restored asleep: its
/// `paused-replicas` goes to 3, as the wake would set it, and the line says when to take it off,
/// as no controller is left to.
#[tokio::test]
async fn a_scaled_object_held_before_the_night_is_restored_to_the_count_it_was_held_at() {
    let scaler: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {
            "name": "web", "namespace": "staging", "resourceVersion": "77",
            "annotations": {
                "cronscaler.dev/scale-down": "0 20 * * *",
                "autoscaling.keda.sh/paused": "true",
                "autoscaling.keda.sh/paused-replicas": "0",
                "cronscaler.dev/original-value": "",
                "cronscaler.dev/paused-at": "3",
                "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
            },
        },
        "spec": { "scaleTargetRef": { "name": "web" } },
    }))
    .unwrap();
    let target = ScaleTarget {
        kind: TargetKind::ScaledObject,
        key: ObjectKey::new("staging", "web"),
    };
    let observed = TargetState::of_object(TargetKind::ScaledObject, &scaler);
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
        Exchange::new(
            "PATCH",
            "/apis/keda.sh/v1alpha1/namespaces/staging/scaledobjects/web?&fieldManager=cronscaler",
        )
        .body(json!({ "metadata": { "resourceVersion": "77", "annotations": {
            "autoscaling.keda.sh/paused-replicas": "3",
            "cronscaler.dev/paused-at": null,
            "cronscaler.dev/last-transition": null,
        } } }))
        .reply(200, json!({})),
    ]));
    let line = restore_object(
        &client,
        &target,
        &observed,
        &NamespaceSchedules::watched([]),
        now(),
    )
    .await;
    drop(client);
    server.await.unwrap();
    assert_eq!(
        line.ok().flatten().as_deref(),
        Some(
            "restored ScaledObject staging/web: paused at 0 -> paused at 3; \
             autoscaling.keda.sh/paused-replicas set to 3, the count it was held at before the \
             night: once it runs 3, remove autoscaling.keda.sh/paused-replicas, and its hold \
             keeps it there"
        )
    );
}
