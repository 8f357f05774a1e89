//! Levers: a target whose HPA is out of line, a ScaledObject pointed elsewhere while the watch
//! was down.

use super::*;
use crate::workloads::watched_object::WatchedObject;

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
