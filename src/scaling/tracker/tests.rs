use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, OwnerReference, Time,
};
use kube::core::PartialObjectMeta;

use super::*;
use crate::{
    runtime::workqueue::RateLimit,
    scaling::{test_support::*, timer::Timer},
};

/// A tracker of Deployments feeding a scheduler and a queue, on a clock that keeps pace.
fn tracked_deployments() -> (WorkQueue<WorkKey>, Timer, Tracker, Gauge) {
    let invalid = Gauge::default();
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Timer::spawn(queue.clone(), wall_clock(1000, Arc::default()));
    let tracker = Tracker::new(
        scheduler.clone(),
        queue.clone(),
        Tz::UTC,
        TargetKind::Deployment,
        invalid.clone(),
    );
    (queue, scheduler, tracker, invalid)
}

/// A Deployment's metadata as the watch reports it; `replicas_set_by` adds the managedFields
/// entry of a manager that set spec.replicas, at a second of time.
fn meta(
    name: &str,
    annotations: &[(&str, &str)],
    replicas_set_by: Option<(&str, i64)>,
) -> PartialObjectMeta<Deployment> {
    let mut object = PartialObjectMeta::<Deployment>::default();
    object.metadata.name = Some(name.into());
    object.metadata.namespace = Some("staging".into());
    object.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    object.metadata.managed_fields = replicas_set_by.map(|(manager, second)| {
        vec![ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            time: Some(Time(
                k8s_openapi::jiff::Timestamp::from_second(second).unwrap(),
            )),
            fields_v1: Some(FieldsV1(
                serde_json::json!({ "f:spec": { "f:replicas": {} } }),
            )),
            ..ManagedFieldsEntry::default()
        }]
    });
    object
}

#[tokio::test(start_paused = true)]
async fn the_tracker_evaluates_an_object_when_its_annotations_change_and_only_then() {
    let (queue, scheduler, mut tracker, invalid) = tracked_deployments();
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
    ];

    tracker.handle(&watcher::Event::Apply(meta("web", &nightly, None)));
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![WorkKey::Scale(target("web"))],
        "evaluated on first sight (catch-up)"
    );
    assert_eq!(scheduler.held(), 1);

    tracker.handle(&watcher::Event::Apply(meta("web", &nightly, None)));
    assert!(drain(&queue).await.is_empty(), "nothing of ours changed");

    tracker.handle(&watcher::Event::Apply(meta(
        "web",
        &nightly,
        Some(("kubectl", 100)),
    )));
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "replicas may have changed: look for ScaleReverted"
    );

    tracker.handle(&watcher::Event::Apply(meta(
        "web",
        &[(schedule::SCALE_DOWN, "not a cron")],
        None,
    )));
    settle().await;
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "an invalid schedule is evaluated, to be reported"
    );
    assert_eq!(scheduler.held(), 0, "and never armed");
    assert_eq!(invalid.get(), 1, "counted as invalid");
    tracker.handle(&watcher::Event::Delete(meta("web", &[], None)));
    assert_eq!(invalid.get(), 0, "no longer counted once deleted");

    tracker.handle(&watcher::Event::Apply(meta(
        "plain",
        &[("team", "shop")],
        None,
    )));
    settle().await;
    assert!(
        drain(&queue).await.is_empty(),
        "objects without our annotations cost nothing"
    );
    assert_eq!(scheduler.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_relist_forgets_objects_deleted_while_the_watch_was_down() {
    let (queue, scheduler, mut tracker, _) = tracked_deployments();
    let nightly = [(schedule::SCALE_DOWN, "0 20 * * *")];
    tracker.handle(&watcher::Event::Apply(meta("kept", &nightly, None)));
    tracker.handle(&watcher::Event::Apply(meta(
        "deleted-meanwhile",
        &nightly,
        None,
    )));
    settle().await;
    assert_eq!(scheduler.held(), 2);
    drain(&queue).await;

    tracker.handle(&watcher::Event::<PartialObjectMeta<Deployment>>::Init);
    tracker.handle(&watcher::Event::InitApply(meta("kept", &nightly, None)));
    tracker.handle(&watcher::Event::<PartialObjectMeta<Deployment>>::InitDone);
    settle().await;
    assert_eq!(scheduler.held(), 1);
    assert!(
        drain(&queue).await.is_empty(),
        "an unchanged object is not evaluated again after a relist"
    );

    tracker.handle(&watcher::Event::Delete(meta("kept", &nightly, None)));
    settle().await;
    assert_eq!(scheduler.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_deployment_controlled_by_a_foo_is_evaluated_but_never_armed() {
    let (queue, scheduler, mut tracker, _) = tracked_deployments();
    let mut object = meta("example-foo", &[(schedule::SCALE_DOWN, "0 20 * * *")], None);
    object.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "samplecontroller.k8s.io/v1alpha1".into(),
        kind: "Foo".into(),
        name: "example-foo".into(),
        uid: "uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    tracker.handle(&watcher::Event::Apply(object));
    settle().await;
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "evaluated, so the refusal is reported"
    );
    assert_eq!(scheduler.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_controllers_own_write_causes_no_second_look() {
    let (queue, _scheduler, mut tracker, _) = tracked_deployments();
    let nightly = [(schedule::SCALE_DOWN, "0 20 * * *")];
    tracker.handle(&watcher::Event::Apply(meta(
        "web",
        &nightly,
        Some(("kubectl", 100)),
    )));
    drain(&queue).await;
    let after_scale_down = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let mut ours = meta("web", &after_scale_down, Some(("kubectl", 100)));
    let mut own_entry = meta("web", &[], Some((crate::runtime::CONTROLLER_NAME, 200)))
        .metadata
        .managed_fields
        .unwrap();
    ours.metadata
        .managed_fields
        .get_or_insert_default()
        .append(&mut own_entry);
    tracker.handle(&watcher::Event::Apply(ours));
    assert!(
        drain(&queue).await.is_empty(),
        "a GET after every patch would spend the request budget twice"
    );
}

#[tokio::test(start_paused = true)]
async fn objects_with_the_same_schedule_share_one_parsed_schedule() {
    let (_queue, scheduler, mut tracker, _) = tracked_deployments();
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * MON-FRI"),
        (schedule::TIMEZONE, "Europe/Berlin"),
    ];
    for n in 0..100 {
        tracker.handle(&watcher::Event::Apply(meta(
            &format!("app-{n}"),
            &nightly,
            None,
        )));
    }
    tracker.handle(&watcher::Event::Apply(meta(
        "other",
        &[(schedule::SCALE_DOWN, "0 21 * * *")],
        None,
    )));
    assert!(settled(|| scheduler.held() == 101).await);
    assert_eq!(
        tracker.schedules.len(),
        2,
        "one parsed schedule per distinct schedule, not per object"
    );
}
