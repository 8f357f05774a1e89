use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, OwnerReference, Time,
};
use kube::core::PartialObjectMeta;

use chrono::TimeDelta;

use super::*;
use crate::{
    namespaces::NamespaceSchedules,
    runtime::workqueue::{Enqueue, RateLimit, WorkQueue},
    scaling::{key::ScalingKey, test_support::*, timer::Timer},
    schedule::test_support::annotations,
    workloads::{last_seen::LastSeen, watched_object::WatchedObject},
};

/// A tracker of Deployments feeding a scheduler and a queue, on a clock that keeps pace.
fn tracked_deployments() -> (WorkQueue<ScalingKey>, Timer, Tracker, Gauge) {
    tracked_deployments_in(NamespaceSchedules::watched(["kube-system".to_string()]))
}

fn tracked_deployments_in(
    namespaces: NamespaceSchedules,
) -> (WorkQueue<ScalingKey>, Timer, Tracker, Gauge) {
    let invalid = Gauge::default();
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    let tracker = Tracker::new(
        timer.clone(),
        Enqueue::new(queue.clone()),
        Tz::UTC,
        TargetKind::Deployment,
        namespaces,
        TimeDelta::minutes(15),
        invalid.clone(),
    );
    (queue, timer, tracker, invalid)
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

/// `object` once the warning of `cause` was said about it.
fn said(mut object: PartialObjectMeta<Deployment>, cause: &str) -> PartialObjectMeta<Deployment> {
    object.metadata.labels = Some([(schedule::WARNED.to_string(), cause.to_string())].into());
    object
}

/// Shows the tracker one watch event at `base()`.
fn see(tracker: &mut Tracker, event: watcher::Event<PartialObjectMeta<Deployment>>) {
    tracker.handle(&event, base());
}

/// The scale-down in force at `base()` of a nightly "0 20 * * *" schedule.
const LAST_NIGHT: &str = "2026-11-22T20:00:00Z down";

/// A Foo's controller reference, as the Foo controller sets it on its Deployment.
fn owned_by_foo(mut object: PartialObjectMeta<Deployment>) -> PartialObjectMeta<Deployment> {
    object.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "samplecontroller.k8s.io/v1alpha1".into(),
        kind: "Foo".into(),
        name: "example-foo".into(),
        uid: "uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    object
}

#[tokio::test(start_paused = true)]
async fn an_object_is_queued_only_when_a_transition_is_due() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &nightly, None)),
    );
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "last night's scale-down was never applied: catch-up is due"
    );
    assert_eq!(timer.held(), 1, "and the next transition is armed");

    let applied = [
        nightly[0],
        nightly[1],
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    let mut after_patch = meta("web", &applied, Some(("kubectl", 100)));
    let mut own_entry = meta("web", &[], Some((crate::runtime::CONTROLLER_NAME, 200)))
        .metadata
        .managed_fields
        .unwrap_or_default();
    after_patch
        .metadata
        .managed_fields
        .get_or_insert_default()
        .append(&mut own_entry);
    see(&mut tracker, watcher::Event::Apply(after_patch));
    assert!(
        drain(&queue).await.is_empty(),
        "the controller's own patch records the transition: nothing is due, no second read"
    );
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &applied, None)),
    );
    assert!(
        drain(&queue).await.is_empty(),
        "a status change or anything else outside our annotations and the replicas' writers"
    );
}

#[tokio::test(start_paused = true)]
async fn a_start_with_nothing_due_queues_no_object() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    let applied = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
        (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
    ];
    see(&mut tracker, watcher::Event::Init);
    for n in 0..1_000 {
        let name = format!("app-{n}");
        // Written by people long before the transition: not a revert.
        see(
            &mut tracker,
            watcher::Event::InitApply(meta(&name, &applied, Some(("kubectl", 1_000)))),
        );
    }
    see(&mut tracker, watcher::Event::InitDone);
    assert!(settled(|| timer.held() == 1_000).await);
    assert_eq!(drain(&queue).await.len(), 0, "no object read at start-up");
    assert_eq!(tracker.len(), 1_000);
}

#[tokio::test(start_paused = true)]
async fn a_replicas_change_after_a_transition_is_looked_at_until_it_was_warned_about() {
    let (queue, _timer, mut tracker, _) = tracked_deployments();
    let slept = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    let transition_second = DateTime::parse_from_rfc3339("2026-11-22T20:00:00Z")
        .unwrap()
        .timestamp();
    see(
        &mut tracker,
        watcher::Event::Apply(meta(
            "web",
            &slept,
            Some(("kubectl", transition_second - 60)),
        )),
    );
    assert!(
        drain(&queue).await.is_empty(),
        "changed before the transition"
    );

    let woken_by_hand = meta("web", &slept, Some(("kubectl", transition_second + 600)));
    see(&mut tracker, watcher::Event::Apply(woken_by_hand));
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "changed after it: read, to warn ScaleReverted"
    );

    let cause = schedule::reverted_cause("2026-11-22T20:00:00Z down".parse().unwrap());
    let (queue_after_restart, _timer_after_restart, mut tracker_after_restart, _) =
        tracked_deployments();
    let warned = said(
        meta("web", &slept, Some(("kubectl", transition_second + 600))),
        &cause,
    );
    see(
        &mut tracker_after_restart,
        watcher::Event::InitApply(warned),
    );
    assert!(
        drain(&queue_after_restart).await.is_empty(),
        "already warned about this transition: a restart reads nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn a_write_through_scale_is_looked_at_though_it_leaves_no_time() {
    let (queue, _timer, mut tracker, _) = tracked_deployments();
    let slept = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    see(
        &mut tracker,
        watcher::Event::InitApply(meta("web", &slept, None)),
    );
    assert!(drain(&queue).await.is_empty());
    // `kubectl scale` at night, as a v1.26 API server records it: through /scale, no time.
    let mut scaled = meta("web", &slept, None);
    scaled.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl".into()),
        operation: Some("Update".into()),
        subresource: Some("scale".into()),
        fields_v1: Some(FieldsV1(
            serde_json::json!({ "f:spec": { "f:replicas": {} } }),
        )),
        ..ManagedFieldsEntry::default()
    }]);
    see(&mut tracker, watcher::Event::Apply(scaled.clone()));
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "a new writer appeared: read, to warn ScaleReverted"
    );
    let (queue_after_restart, _timer_after_restart, mut after_restart, _) = tracked_deployments();
    see(&mut after_restart, watcher::Event::InitApply(scaled));
    assert!(
        drain(&queue_after_restart).await.is_empty(),
        "seen at start, a writer without a time is no reason to read"
    );
}

#[tokio::test(start_paused = true)]
async fn invalid_annotations_are_looked_at_until_warned_about_and_never_armed() {
    let (queue, timer, mut tracker, invalid) = tracked_deployments();
    let broken = [(schedule::SCALE_DOWN, "not a cron")];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &broken, None)),
    );
    settle().await;
    assert_eq!(drain(&queue).await.len(), 1, "read, to be reported");
    assert_eq!(timer.held(), 0, "never armed");
    assert_eq!(invalid.get(), 1, "counted as invalid");

    let cause = schedule::refused_cause(&annotations(&broken));
    see(
        &mut tracker,
        watcher::Event::Apply(said(meta("web", &broken, None), &cause)),
    );
    see(
        &mut tracker,
        watcher::Event::Apply(said(meta("web", &broken, Some(("hpa", 5_000))), &cause)),
    );
    assert!(
        drain(&queue).await.is_empty(),
        "said once for these annotations, whoever writes the replicas"
    );
    let still_broken = [(schedule::SCALE_DOWN, "still not")];
    see(
        &mut tracker,
        watcher::Event::Apply(said(meta("web", &still_broken, None), &cause)),
    );
    assert_eq!(drain(&queue).await.len(), 1, "new values, new warning");

    see(&mut tracker, watcher::Event::Delete(meta("web", &[], None)));
    assert_eq!(invalid.get(), 0, "no longer counted once deleted");
    assert_eq!(tracker.len(), 0, "nothing kept of a deleted object");

    see(
        &mut tracker,
        watcher::Event::Apply(meta("plain", &[("team", "shop")], None)),
    );
    settle().await;
    assert!(
        drain(&queue).await.is_empty(),
        "objects without our annotations cost nothing"
    );
    assert_eq!((timer.held(), tracker.len()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_relist_forgets_objects_deleted_while_the_watch_was_down() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    let nightly = [(schedule::SCALE_DOWN, "0 20 * * *")];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("kept", &nightly, None)),
    );
    see(
        &mut tracker,
        watcher::Event::Apply(meta("deleted-meanwhile", &nightly, None)),
    );
    settle().await;
    assert_eq!(timer.held(), 2);
    drain(&queue).await;

    see(&mut tracker, watcher::Event::Init);
    see(
        &mut tracker,
        watcher::Event::InitApply(meta("kept", &nightly, None)),
    );
    see(&mut tracker, watcher::Event::InitDone);
    settle().await;
    assert_eq!(timer.held(), 1);
    assert!(
        drain(&queue).await.is_empty(),
        "an unchanged object is not looked at again after a relist"
    );

    see(
        &mut tracker,
        watcher::Event::Delete(meta("kept", &nightly, None)),
    );
    settle().await;
    assert_eq!(timer.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_deployment_controlled_by_a_foo_is_told_once_and_never_armed() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    let scheduled = [(schedule::SCALE_DOWN, "0 20 * * *")];
    see(
        &mut tracker,
        watcher::Event::Apply(owned_by_foo(meta("example-foo", &scheduled, None))),
    );
    settle().await;
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "read, so the refusal is reported"
    );
    assert_eq!(timer.held(), 0);

    let cause = schedule::refused_cause(&annotations(&scheduled));
    see(
        &mut tracker,
        watcher::Event::Apply(owned_by_foo(said(
            meta("example-foo", &scheduled, None),
            &cause,
        ))),
    );
    assert!(drain(&queue).await.is_empty());
}

/// A crash between a wake and the lever's give-back (`plan/held.rs`) left `paused-at` on a
/// woken workload: the start looks at it, where nothing else is due, so the lever is given back
/// that morning rather than the next.
#[tokio::test]
async fn a_woken_workload_still_giving_its_lever_back_is_looked_at_from_the_start() {
    let (queue, _timer, mut tracker, _) = tracked_deployments();
    let woken = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
        (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
    ];
    let giving_back = [woken[0], woken[1], woken[2], (schedule::PAUSED_AT, "3")];
    see(&mut tracker, watcher::Event::Init);
    for (name, annotations) in [
        ("given-back", &woken[..]),
        ("giving-back", &giving_back[..]),
    ] {
        see(
            &mut tracker,
            watcher::Event::InitApply(meta(name, annotations, None)),
        );
    }
    see(&mut tracker, watcher::Event::InitDone);
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("giving-back"))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_new_leader_queues_only_what_needs_a_look_now() {
    let (queue, _timer, mut tracker, _) = tracked_deployments();
    let applied = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("asleep", &applied, None)),
    );
    see(
        &mut tracker,
        watcher::Event::Apply(meta("missed", &[applied[0]], None)),
    );
    // A standby's workers let these go.
    drain(&queue).await;
    tracker.resync(base());
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("missed"))]
    );
    let tonight = base() + chrono::Duration::hours(9);
    tracker.resync(tonight);
    assert_eq!(
        drain(&queue).await.len(),
        2,
        "after tonight's transition, both are due"
    );
}

#[tokio::test(start_paused = true)]
async fn a_new_object_is_put_to_sleep_by_a_catch_up_only_when_its_grace_period_ends() {
    let (queue, _timer, mut tracker, _) = tracked_deployments();
    let mut deployed_tonight = meta("web", &[(schedule::SCALE_DOWN, "0 20 * * *")], None);
    // Five minutes old at `base()`: last night's scale-down is a catch-up for it.
    let created = base() - TimeDelta::minutes(5);
    deployed_tonight.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_second(created.timestamp()).unwrap(),
    ));
    see(&mut tracker, watcher::Event::Apply(deployed_tonight));
    settle().await;
    assert!(drain(&queue).await.is_empty(), "not in its first minutes");
    tokio::time::sleep(std::time::Duration::from_secs(9 * 60 + 50)).await;
    assert!(drain(&queue).await.is_empty(), "nor just before they end");
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "the timer brings it back when its grace period ends: nothing polls"
    );
}

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
async fn a_target_whose_hpa_is_out_of_line_is_looked_at_without_a_read_of_the_others() {
    use crate::scaling::hpa::{Hpa, HpaIndex, Originals};
    let hpa = |min, max, originals| Hpa {
        key: ObjectKey::new("staging", "web"),
        target: target("web"),
        min_replicas: min,
        max_replicas: max,
        originals,
        resource_version: Some("41".into()),
        lever: None,
    };
    let asleep = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    let held = HpaIndex::listed([hpa(1, 1, Originals::Recorded { min: 2, max: 5 })]);
    let (queue, _timer, tracker, _) = tracked_deployments();
    let mut tracker = tracker.with_hpas(held);
    see(
        &mut tracker,
        watcher::Event::InitApply(meta("web", &asleep, None)),
    );
    assert!(
        drain(&queue).await.is_empty(),
        "held as the night wants: no read"
    );

    // A stop came between the workload's patch and its HPA's: the HPA still has its own bounds.
    let unheld = HpaIndex::listed([hpa(2, 5, Originals::None)]);
    let (queue, _timer, tracker, _) = tracked_deployments();
    let mut tracker = tracker.with_hpas(unheld);
    see(
        &mut tracker,
        watcher::Event::InitApply(meta("web", &asleep, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "out of line: a worker brings it in line"
    );
}

#[tokio::test(start_paused = true)]
async fn objects_with_the_same_schedule_share_one_parsed_schedule() {
    let (_queue, timer, mut tracker, _) = tracked_deployments();
    let nightly = [
        (schedule::SCALE_DOWN, "0 20 * * MON-FRI"),
        (schedule::TIMEZONE, "Europe/Berlin"),
    ];
    for n in 0..100 {
        see(
            &mut tracker,
            watcher::Event::Apply(meta(&format!("app-{n}"), &nightly, None)),
        );
    }
    see(
        &mut tracker,
        watcher::Event::Apply(meta("other", &[(schedule::SCALE_DOWN, "0 21 * * *")], None)),
    );
    assert!(settled(|| timer.held() == 101).await);
    assert_eq!(
        tracker.schedules.len(),
        2,
        "one parsed schedule per distinct schedule, not per object"
    );
}

#[tokio::test(start_paused = true)]
async fn overrides_are_looked_at_when_new_when_run_out_and_refused_when_too_far() {
    let (queue, _timer, mut tracker, invalid) = tracked_deployments();
    let applied = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &applied, None)),
    );
    assert!(drain(&queue).await.is_empty(), "nothing due");

    let until = (base() + TimeDelta::hours(2)).to_rfc3339();
    let woken = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, until.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &woken, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "a new override is applied at once"
    );

    let past = (base() - TimeDelta::hours(1)).to_rfc3339();
    let ran_out = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, past.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &ran_out, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "an override of its own that ran out is there to be removed"
    );

    let far = (base() + TimeDelta::hours(30)).to_rfc3339();
    let too_far = [
        applied[0],
        applied[1],
        (schedule::AWAKE_UNTIL, far.as_str()),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &too_far, None)),
    );
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "refused: the worker says so once"
    );
    assert_eq!(invalid.get(), 1, "counted as invalid");
}

#[tokio::test(start_paused = true)]
async fn an_override_too_far_ahead_leaves_the_schedule_armed_and_is_looked_at_within_reach() {
    let (queue, timer, mut tracker, _) = tracked_deployments();
    // 30 hours ahead, 6 beyond the default 24h: within reach at base() + 6h.
    let far = (base() + TimeDelta::hours(30)).to_rfc3339();
    let too_far = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
        (schedule::AWAKE_UNTIL, far.as_str()),
    ];
    let cause = schedule::refused_cause(&annotations(&too_far));
    see(
        &mut tracker,
        watcher::Event::Apply(said(meta("web", &too_far, None), &cause)),
    );
    settle().await;
    assert!(drain(&queue).await.is_empty(), "said, and nothing else due");
    assert_eq!(timer.held(), 1, "the schedule is still followed");
    tokio::time::advance(std::time::Duration::from_secs(6 * 3600 - 1)).await;
    settle().await;
    assert!(drain(&queue).await.is_empty(), "looked at before in reach");
    tokio::time::advance(std::time::Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "looked at when it comes within reach"
    );
}

#[tokio::test(start_paused = true)]
async fn the_asleep_gauges_follow_each_objects_recorded_transition() {
    use crate::{ops::metrics::AsleepLabels, scaling::asleep::AsleepGauges};
    use prometheus_client::metrics::family::Family;

    let (_queue, _timer, tracker, _) = tracked_deployments();
    let gauges = AsleepGauges::default();
    let mut tracker = tracker.with_asleep(gauges.clone());
    let staging = AsleepLabels {
        namespace: "staging".into(),
        kind: "Deployment",
    };
    let value =
        |family: &Family<AsleepLabels, Gauge>| family.get(&staging).map(|gauge| gauge.get());
    let now = || (value(&gauges.objects), value(&gauges.replicas));
    let crons = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::SCALE_UP, "0 7 * * *"),
    ];
    let web_asleep = [
        crons[0],
        crons[1],
        (schedule::ORIGINAL_REPLICAS, "3"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    let api_asleep = [
        crons[0],
        crons[1],
        (schedule::ORIGINAL_REPLICAS, "5"),
        (schedule::DOWN_REPLICAS, "1"),
        (schedule::LAST_TRANSITION, LAST_NIGHT),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &web_asleep, None)),
    );
    see(
        &mut tracker,
        watcher::Event::Apply(meta("api", &api_asleep, None)),
    );
    assert_eq!(now(), (Some(2), Some(3 + 4)), "3 of web, 5 - 1 of api");
    see(
        &mut tracker,
        watcher::Event::Apply(owned_by_foo(meta("foo-web", &web_asleep, None))),
    );
    see(
        &mut tracker,
        watcher::Event::Apply(meta("api", &api_asleep, None)),
    );
    assert_eq!(
        now(),
        (Some(2), Some(7)),
        "a Foo's Deployment sleeps through its Foo; seeing an object again counts it once"
    );

    let web_awake = [
        crons[0],
        crons[1],
        (schedule::LAST_TRANSITION, "2026-11-23T07:00:00Z up"),
    ];
    see(
        &mut tracker,
        watcher::Event::Apply(meta("web", &web_awake, None)),
    );
    assert_eq!(now(), (Some(1), Some(4)), "web woke");
    see(
        &mut tracker,
        watcher::Event::Delete(meta("api", &api_asleep, None)),
    );
    assert_eq!(
        now(),
        (None, None),
        "nothing asleep in staging: no series left"
    );
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

/// `staging/name`, a whole Deployment of `replicas` as its watch delivers it.
fn watched(
    name: &str,
    replicas: i32,
    resource_version: &str,
    pairs: &[(&str, &str)],
) -> WatchedObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": "staging", "resourceVersion": resource_version,
            "annotations": annotations(pairs),
        },
        "spec": { "replicas": replicas, "template": { "spec": { "containers": [] } } },
        "status": { "replicas": replicas },
    }))
    .unwrap()
}

#[tokio::test]
async fn the_state_of_every_scheduled_object_and_only_theirs_is_kept_for_the_workers() {
    let (_queue, _timer, tracker, _) = tracked_deployments();
    let last_seen = LastSeen::default();
    let mut tracker = tracker.with_last_seen(last_seen.clone());
    let nightly = [(schedule::SCALE_DOWN, "0 20 * * *")];
    let web = ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("staging", "web"),
    };
    tracker.handle(
        &watcher::Event::Apply(watched("web", 3, "1", &nightly)),
        base(),
    );
    tracker.handle(
        &watcher::Event::Apply(watched("quiet", 3, "1", &[])),
        base(),
    );
    assert_eq!(
        last_seen.len(),
        1,
        "an object without a schedule is not kept"
    );
    // A status update changes nothing the tracker looks at, but moves the resourceVersion the
    // next patch is guarded by.
    tracker.handle(
        &watcher::Event::Apply(watched("web", 2, "2", &nightly)),
        base(),
    );
    let state = last_seen.get(&web).expect("kept");
    assert_eq!(
        (state.replicas, state.resource_version.as_deref()),
        (2, Some("2"))
    );
    // Its schedule removed, it is let go of.
    tracker.handle(&watcher::Event::Apply(watched("web", 2, "3", &[])), base());
    assert!(last_seen.is_empty());
    tracker.handle(
        &watcher::Event::Apply(watched("web", 2, "4", &nightly)),
        base(),
    );
    tracker.handle(
        &watcher::Event::Delete(watched("web", 2, "5", &nightly)),
        base(),
    );
    assert!(last_seen.is_empty(), "deleted");
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

#[tokio::test(start_paused = true)]
async fn a_scaled_object_pointed_elsewhere_while_the_watch_was_down_has_both_workloads_looked_at() {
    let queue = WorkQueue::<ScalingKey>::new(RateLimit::default());
    let timer = Timer::spawn(
        Enqueue::new(queue.clone()),
        wall_clock(1000, Arc::default()),
    );
    let hpas = HpaIndex::default();
    hpas.await_levers([TargetKind::ScaledObject]);
    let mut tracker = Tracker::new(
        timer,
        Enqueue::new(queue.clone()),
        Tz::UTC,
        TargetKind::ScaledObject,
        NamespaceSchedules::watched([]),
        TimeDelta::minutes(15),
        Gauge::default(),
    )
    .with_hpas(hpas.clone());
    let scaler = |workload: &str| -> WatchedObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": { "name": "web-scaler", "namespace": "staging" },
            "spec": { "scaleTargetRef": { "name": workload } },
        }))
        .unwrap()
    };
    let deployment = |name: &str| ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("staging", name),
    };
    let lever = Some((TargetKind::ScaledObject, "web-scaler".to_string()));
    let relist = |tracker: &mut Tracker, workload: &str| {
        tracker.handle(&watcher::Event::<WatchedObject>::Init, base());
        tracker.handle(&watcher::Event::InitApply(scaler(workload)), base());
        tracker.handle(&watcher::Event::<WatchedObject>::InitDone, base());
    };
    relist(&mut tracker, "web");
    assert_eq!(hpas.lever_of(&deployment("web")), lever);
    assert!(
        drain(&queue).await.is_empty(),
        "listed at start: its workload's own tracker looks"
    );
    hpas.stop_waiting();
    relist(&mut tracker, "api");
    assert_eq!(hpas.lever_of(&deployment("api")), lever);
    let mut looked = drain(&queue).await;
    looked.sort_by_key(|key| format!("{key:?}"));
    assert_eq!(
        looked,
        [
            ScalingKey::Scale(deployment("api")),
            ScalingKey::Scale(deployment("web")),
        ]
    );
}
