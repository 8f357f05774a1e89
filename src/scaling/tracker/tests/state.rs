//! What the tracker keeps: one parsed schedule shared by the objects that have it, the asleep
//! gauges, the state of every scheduled object for the workers.

use super::*;
use crate::schedule::test_support::annotations;
use crate::workloads::{last_seen::LastSeen, watched_object::WatchedObject};

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
