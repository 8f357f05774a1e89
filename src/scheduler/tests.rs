use std::sync::atomic::AtomicI64;

use chrono::TimeZone;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, OwnerReference, Time,
};
use kube::core::PartialObjectMeta;

use super::*;
use crate::workqueue::RateLimit;

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, 11, 59, 0).unwrap()
}

/// A wall clock that follows tokio's (paused) clock from `base()`, at `permille` of its pace,
/// shifted by a settable number of milliseconds.
fn wall_clock(permille: u32, shift_ms: Arc<AtomicI64>) -> Clock {
    let start = tokio::time::Instant::now();
    Arc::new(move || {
        let elapsed = start.elapsed().as_millis() as i64 * i64::from(permille) / 1000;
        base() + chrono::Duration::milliseconds(elapsed + shift_ms.load(Ordering::SeqCst))
    })
}

fn schedule(annotations: &[(&str, &str)]) -> Arc<Schedule> {
    let map: BTreeMap<String, String> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    match schedule::parse(&map, Tz::UTC) {
        Annotations::Scheduled(schedule, _) => Arc::new(schedule),
        other => panic!("not a schedule: {other:?}"),
    }
}

fn target(name: &str) -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("staging", name),
    }
}

/// Lets the timer task and the queue catch up without moving the clock.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Waits without moving the clock until `condition` holds, or gives up after many rounds.
async fn settled(condition: impl Fn() -> bool) -> bool {
    for _ in 0..1_000 {
        if condition() {
            return true;
        }
        settle().await;
    }
    condition()
}

async fn drain(queue: &WorkQueue<WorkKey>) -> Vec<WorkKey> {
    let mut keys = Vec::new();
    while let Ok(Some(key)) = tokio::time::timeout(Duration::ZERO, queue.get()).await {
        queue.done(&key);
        keys.push(key);
    }
    keys
}

#[tokio::test(start_paused = true)]
async fn a_transition_reaches_the_queue_at_its_instant_and_not_before() {
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, Arc::default()));
    // 12:00:00 is 60 s after base().
    scheduler.arm(
        target("web"),
        schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    settle().await;
    assert_eq!(scheduler.held(), 1);
    tokio::time::advance(Duration::from_millis(59_999)).await;
    settle().await;
    assert!(drain(&queue).await.is_empty(), "fired early");
    tokio::time::advance(Duration::from_millis(1)).await;
    settle().await;
    assert_eq!(drain(&queue).await, vec![WorkKey::Scale(target("web"))]);
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_transitions_in_the_same_second_all_reach_the_queue() {
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, Arc::default()));
    let nightly = schedule(&[(schedule::SCALE_DOWN, "0 12 * * MON-FRI")]);
    for n in 0..10_000 {
        scheduler.arm(target(&format!("app-{n}")), nightly.clone());
    }
    assert!(settled(|| scheduler.held() == 10_000).await);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(!settled(|| !queue.is_empty()).await, "fired early");
    tokio::time::advance(Duration::from_secs(1)).await;
    // The clock stands still from here: whatever arrives, arrives at the transition instant.
    assert!(
        settled(|| queue.len() == 10_000).await,
        "only {} of 10000 enqueued",
        queue.len()
    );
}

#[tokio::test(start_paused = true)]
async fn the_next_transition_is_armed_after_each_firing() {
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, Arc::default()));
    scheduler.arm(
        target("web"),
        schedule(&[
            (schedule::SCALE_DOWN, "*/20 * * * * *"),
            (schedule::SCALE_UP, "10 * * * * *"),
        ]),
    );
    settle().await;
    let mut fired_at = Vec::new();
    for _ in 0..70 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
        if !drain(&queue).await.is_empty() {
            fired_at.push(tokio::time::Instant::now());
        }
    }
    // From 11:59:00: :10 up, :20 :40 down, 12:00:00 down, :10 up; 5 firings in 70 s.
    assert_eq!(fired_at.len(), 5);
}

#[tokio::test(start_paused = true)]
async fn disarmed_and_rearmed_schedules_fire_as_last_told() {
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, Arc::default()));
    scheduler.arm(
        target("gone"),
        schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    scheduler.arm(
        target("moved"),
        schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    scheduler.disarm(target("gone"));
    scheduler.arm(
        target("moved"),
        schedule(&[(schedule::SCALE_DOWN, "30 12 * * *")]),
    );
    settle().await;
    assert_eq!(scheduler.held(), 1);
    tokio::time::advance(Duration::from_secs(61)).await;
    settle().await;
    assert!(
        drain(&queue).await.is_empty(),
        "a disarmed or replaced timer fired"
    );
    tokio::time::advance(Duration::from_secs(30 * 60)).await;
    settle().await;
    assert_eq!(drain(&queue).await, vec![WorkKey::Scale(target("moved"))]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_wall_clock_delays_the_firing_until_it_reaches_the_transition() {
    let queue = WorkQueue::new(RateLimit::default());
    // The wall clock runs at half the pace of the timer clock.
    let clock = wall_clock(500, Arc::default());
    let scheduler = Scheduler::spawn(queue.clone(), clock.clone());
    scheduler.arm(
        target("web"),
        schedule(&[(schedule::SCALE_DOWN, "0 12 * * *")]),
    );
    settle().await;
    let mut fired = None;
    for _ in 0..130 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
        if !drain(&queue).await.is_empty() {
            fired = Some(clock());
            break;
        }
    }
    let fired = fired.expect("fired at all");
    let due = Utc.with_ymd_and_hms(2026, 11, 23, 12, 0, 0).unwrap();
    assert!(
        fired >= due,
        "fired at {fired}, before the wall clock reached {due}"
    );
    assert!(
        fired - due <= chrono::Duration::seconds(1),
        "fired at {fired}, late"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wall_clock_step_forward_is_caught_within_max_sleep() {
    let queue = WorkQueue::new(RateLimit::default());
    let shift = Arc::new(AtomicI64::new(0));
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, shift.clone()));
    // Due in 10 h of wall time; then the wall clock is stepped 9 h 59 min forward.
    scheduler.arm(
        target("web"),
        schedule(&[(schedule::SCALE_DOWN, "59 21 * * *")]),
    );
    settle().await;
    shift.store((9 * 3600 + 59 * 60) * 1000, Ordering::SeqCst);
    tokio::time::advance(MAX_SLEEP).await;
    settle().await;
    assert_eq!(
        drain(&queue).await.len(),
        1,
        "the transition passed during the step fires after one MAX_SLEEP at most"
    );
}

/// A tracker of Deployments feeding a scheduler and a queue, on a clock that keeps pace.
fn tracked_deployments() -> (WorkQueue<WorkKey>, Scheduler, Tracker, Gauge) {
    let invalid = Gauge::default();
    let queue = WorkQueue::new(RateLimit::default());
    let scheduler = Scheduler::spawn(queue.clone(), wall_clock(1000, Arc::default()));
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
    let mut own_entry = meta("web", &[], Some((crate::foo::FIELD_MANAGER, 200)))
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
