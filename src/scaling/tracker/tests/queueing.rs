//! When an object is queued for a look: only when a transition is due, after a replicas change
//! or a write through scale until warned about, invalid annotations, a relist, a Deployment a
//! Foo controls, a woken workload still giving its lever back, a new leader, a new object's
//! grace period.

use super::*;
use crate::schedule::test_support::annotations;

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
    see(
        &mut tracker,
        watcher::Event::Apply(deployed_tonight.clone()),
    );
    settle().await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "looked at once when first seen, for the look to say what holds it awake"
    );
    see(&mut tracker, watcher::Event::Apply(deployed_tonight));
    settle().await;
    assert!(
        drain(&queue).await.is_empty(),
        "not again for every event in its first minutes"
    );
    tokio::time::sleep(std::time::Duration::from_secs(9 * 60 + 50)).await;
    assert!(drain(&queue).await.is_empty(), "nor just before they end");
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    assert_eq!(
        drain(&queue).await,
        vec![ScalingKey::Scale(target("web"))],
        "the timer brings it back when its grace period ends: nothing polls"
    );
}
