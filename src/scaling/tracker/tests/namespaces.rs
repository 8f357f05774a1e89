//! Namespaces: workloads follow their Namespace's schedule from its first change, an excluded
//! Namespace is never touched, a Namespace's followers are counted, and what counts as a use of
//! it.

use super::*;
use crate::schedule::test_support::annotations;

#[tokio::test(start_paused = true)]
async fn workloads_follow_their_namespaces_schedule_from_its_first_change() {
    let namespaces = NamespaceSchedules::watched(["kube-system".to_string()]);
    let (queue, timer, mut tracker, _) = tracked_deployments_in(namespaces.clone());
    see(&mut tracker, watcher::Event::Apply(meta("web", &[], None)));
    assert_eq!(
        tracker.len(),
        0,
        "nothing kept of a workload without a schedule"
    );

    // The Namespace gets a schedule: its workloads are listed again.
    let nightly = annotations(&[(schedule::SCALE_DOWN, "0 20 * * *")]);
    assert!(namespaces.update("staging", None, &nightly));
    let mut excluded = meta("batch", &[(schedule::EXCLUDE, "true")], None);
    excluded.metadata.name = Some("batch".into());
    let listed = [meta("web", &[], None), excluded];
    tracker.relist_namespace("staging", &listed, base());
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "last night's scale-down, caught up; the excluded one is left out"
    );
    assert_eq!(timer.held(), 1);

    // Asleep by the namespace's schedule; then the schedule goes.
    let slept = [
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &slept, None)),
    );
    assert!(drain(&queue).await.is_empty(), "applied, nothing due");
    assert!(namespaces.update("staging", None, &annotations(&[])));
    tracker.relist_namespace("staging", &[meta("web", &slept, None)], base());
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "removing the namespace's schedule wakes what it put to sleep"
    );
    assert_eq!(timer.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_excluded_namespace_is_never_touched_annotated_or_not() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    let mut system = meta("dns", &[(schedule::SCALE_DOWN, "0 20 * * *")], None);
    system.metadata.namespace = Some("kube-system".into());
    see(&mut tracker, watcher::Event::Apply(system));
    settle().await;
    assert!(drain(&queue).await.is_empty());
    assert_eq!((timer.held(), tracker.len()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_namespace_s_followers_are_counted_and_its_sleep_schedules_told() {
    use crate::namespaces::policies::{crd::ScheduleFields, resolve::Candidate};
    let namespaces = NamespaceSchedules::watched([]);
    namespaces.set_labels("staging", &annotations(&[]));
    let fields = ScheduleFields {
        scale_down: Some("0 20 * * *".into()),
        ..ScheduleFields::default()
    };
    let meta_of = |name: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    };
    namespaces.set_sleep_schedule("staging", Candidate::of(&meta_of("nights"), &fields));
    let (queue, _timer, mut tracker, _) = tracked_deployments_in(namespaces.clone());
    let told = ScalingKey::SleepScheduleStatus(ObjectKey::new("staging", "nights"));

    see(&mut tracker, watcher::Event::Apply(meta("web", &[], None)));
    let own = [(schedule::SCALE_DOWN, "0 22 * * *")];
    see(&mut tracker, watcher::Event::Apply(meta("api", &own, None)));
    assert_eq!(
        namespaces.followers("staging"),
        1,
        "api has its own schedule"
    );
    settle().await;
    assert!(drain(&queue).await.contains(&told));

    see(&mut tracker, watcher::Event::Apply(meta("web", &[], None)));
    assert_eq!(namespaces.followers("staging"), 1, "counted once");
    see(&mut tracker, watcher::Event::Delete(meta("web", &[], None)));
    assert_eq!(namespaces.followers("staging"), 0);
    settle().await;
    assert!(drain(&queue).await.contains(&told));
}

#[tokio::test]
async fn the_making_of_a_scheduled_workload_and_a_change_of_its_spec_are_uses_of_its_namespace() {
    let (_queue, _timer, tracker, _) = tracked_deployments();
    let activity = crate::scaling::idle::Activity::default();
    let mut tracker = tracker.with_activity(activity.clone());
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
    ];
    let created = base() - TimeDelta::hours(1);
    let at_generation = |generation: i64, annotations: &[(&str, &str)]| {
        let mut object = meta("web", annotations, None);
        object.metadata.generation = Some(generation);
        object.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(created.timestamp()).unwrap(),
        ));
        watcher::Event::Apply(object)
    };
    tracker.handle(&at_generation(1, &nightly), base());
    assert_eq!(
        activity.used_at("staging"),
        created,
        "made an hour ago: a use then, not when first seen"
    );
    tracker.handle(&at_generation(1, &nightly), base() + TimeDelta::minutes(1));
    assert_eq!(activity.used_at("staging"), created, "a status update");
    let deployed = base() + TimeDelta::minutes(2);
    tracker.handle(&at_generation(2, &nightly), deployed);
    assert_eq!(
        activity.used_at("staging"),
        deployed,
        "a rollout, or a scale-up by anyone: its spec changed"
    );
    tracker.handle(
        &at_generation(2, &nightly),
        deployed + TimeDelta::minutes(1),
    );
    assert_eq!(activity.used_at("staging"), deployed, "the same spec again");
}
