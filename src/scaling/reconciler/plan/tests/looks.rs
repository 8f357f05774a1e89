//! Rules of a look at one workload, as its Events say them.

use super::*;
use std::collections::BTreeMap;

use crate::schedule::{ASLEEP_UNTIL, RAN_ON};

fn planned(replicas: i32, pairs: &[(&str, &str)], now: DateTime<Utc>) -> Plan {
    let web = observed(TargetKind::Deployment, &deployment(replicas, pairs), now);
    super::super::plan(&web, &SETTINGS, now)
}

fn said(plan: &Plan) -> (&'static str, &str) {
    let (reason, note) = plan.event.as_ref().expect("an Event");
    (reason, note.as_str())
}

#[test]
fn a_missed_transition_is_applied_on_return_and_counted_as_late_as_it_is() {
    // Down since Friday; the controller was away over the scale-up at 07:00 Monday.
    let weekend = [
        (SCALE_DOWN, "0 20 * * FRI"),
        (SCALE_UP, "0 7 * * MON"),
        (ORIGINAL_REPLICAS, "4"),
        (LAST_TRANSITION, "2026-11-20T20:00:00Z down"),
    ];
    let plan = planned(0, &weekend, at(23, 9, 30, 0));
    let body = patch_body(&plan);
    assert_eq!(body["spec"]["replicas"], json!(4));
    assert_eq!(
        body["metadata"]["annotations"][LAST_TRANSITION],
        json!("2026-11-23T07:00:00Z up")
    );
    assert_eq!(
        said(&plan),
        (
            "ScaledUp",
            "scaled up from 0 to 4 replicas by cronscaler.dev/scale-up \"0 7 * * MON\" (UTC) \
             at 2026-11-23T07:00:00Z"
        )
    );
    let counted = plan.patch.and_then(|patch| patch.counted);
    assert_eq!(
        counted,
        Some((ScaleDirection::Up, Duration::from_secs(2 * 3600 + 30 * 60)))
    );
}

#[test]
fn a_schedule_removed_at_night_gives_back_the_count_and_its_records_go() {
    let leftovers = [
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
    ];
    let plan = planned(0, &leftovers, at(23, 23, 0, 0));
    let body = patch_body(&plan);
    assert_eq!(body["spec"]["replicas"], json!(3));
    assert_eq!(
        body["metadata"]["annotations"],
        json!({
            (ORIGINAL_REPLICAS): null,
            (LAST_TRANSITION): null,
            (SLEPT): "3 2026-11-22T20:00:00Z/2026-11-23T23:00:00Z",
        })
    );
    assert_eq!(
        said(&plan),
        (
            "ScheduleRemoved",
            "schedule annotations removed: replicas restored from 0 to 3; the controller's \
             annotations removed"
        )
    );
}

#[test]
fn a_scale_down_cron_alone_records_the_count_each_night_finds() {
    // Scaled down from 3 last night, woken to 6 by hand today.
    let last_night = [
        (SCALE_DOWN, "0 20 * * *"),
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-22T20:00:00Z down"),
    ];
    let plan = planned(6, &last_night, at(23, 20, 0, 0));
    let body = patch_body(&plan);
    assert_eq!(body["spec"]["replicas"], json!(0));
    assert_eq!(
        body["metadata"]["annotations"],
        json!({
            (ORIGINAL_REPLICAS): "6",
            (LAST_TRANSITION): "2026-11-23T20:00:00Z down",
        })
    );
    assert_eq!(said(&plan).0, "ScaledDown");
}

#[test]
fn a_paused_schedule_plans_nothing_at_all() {
    let paused = [NIGHTLY[0], NIGHTLY[1], (crate::schedule::PAUSED, "true")];
    assert_eq!(planned(2, &paused, at(23, 21, 0, 0)), Plan::default());
}

/// `object` with `kubectl annotate` recorded as the manager of annotation `key`.
fn annotated_by_kubectl(mut object: DynamicObject, key: &str) -> DynamicObject {
    let entry = serde_json::from_value(json!({
        "manager": "kubectl-annotate",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "time": "2026-11-23T21:59:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": { "f:metadata": { "f:annotations": { (format!("f:{key}")): {} } } },
    }))
    .unwrap();
    (object.metadata.managed_fields.get_or_insert_with(Vec::new)).push(entry);
    object
}

/// Asserts that `plan` is one patch of these `annotations` (and `spec`, if any), guarded by the
/// resourceVersion it was read at, told as `told`.
fn assert_planned(plan: &Plan, annotations: Value, spec: Option<Value>, told: (&str, &str)) {
    let mut body = json!({ "metadata": { "resourceVersion": "7", "annotations": annotations } });
    if let Some(spec) = spec {
        body["spec"] = spec;
    }
    assert_eq!(patch_body(plan), body);
    assert_eq!(said(plan), told);
}

fn planned_object(kind: TargetKind, object: &DynamicObject, now: DateTime<Utc>) -> Plan {
    super::super::plan(&observed(kind, object, now), &SETTINGS, now)
}

#[test]
fn a_wake_on_demand_scales_up_at_once_and_names_who_asked() {
    let night = [
        NIGHTLY[0],
        NIGHTLY[1],
        (ORIGINAL_REPLICAS, "2"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let web = annotated_by_kubectl(deployment(0, &night), AWAKE_UNTIL);
    let plan = planned_object(TargetKind::Deployment, &web, at(23, 22, 0, 0));
    assert_planned(
        &plan,
        json!({
            (ORIGINAL_REPLICAS): null,
            (LAST_TRANSITION): "2026-11-23T22:00:00Z up until 2026-11-24T00:00:00Z",
            (SLEPT): "2 2026-11-23T20:00:00Z/2026-11-23T22:00:00Z",
        }),
        Some(json!({ "replicas": 2 })),
        (
            "WokenOnDemand",
            "scaled up from 0 to 2 replicas on demand by cronscaler.dev/awake-until \
             \"2026-11-24T00:00:00Z\" (set by kubectl-annotate)",
        ),
    );
}

#[test]
fn at_its_end_an_override_gives_way_to_the_schedule_and_is_removed() {
    let woken = [
        NIGHTLY[0],
        NIGHTLY[1],
        (
            LAST_TRANSITION,
            "2026-11-23T22:00:00Z up until 2026-11-24T00:00:00Z",
        ),
        (AWAKE_UNTIL, "2026-11-24T00:00:00Z"),
    ];
    let web = annotated_by_kubectl(deployment(2, &woken), AWAKE_UNTIL);
    let plan = planned_object(TargetKind::Deployment, &web, at(24, 0, 0, 0));
    assert_planned(
        &plan,
        json!({
            (ORIGINAL_REPLICAS): "2",
            (LAST_TRANSITION): "2026-11-23T20:00:00Z down",
            (AWAKE_UNTIL): null,
        }),
        Some(json!({ "replicas": 0 })),
        (
            "OverrideExpired",
            "the override cronscaler.dev/awake-until \"2026-11-24T00:00:00Z\" (set by \
             kubectl-annotate) has ended; the schedule applies again: scaled down from 2 to 0 \
             replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at 2026-11-23T20:00:00Z",
        ),
    );
}

/// A scale-down cron alone, woken by hand to 5, then put to sleep on demand: the sleep's end
/// applies the night's scale-down again, which finds the sleep's 0 and keeps the 5 it took.
#[test]
fn a_sleep_ending_into_a_scale_down_keeps_the_count_it_took() {
    let slept = [
        (SCALE_DOWN, "0 20 * * *"),
        (ORIGINAL_REPLICAS, "5"),
        (
            LAST_TRANSITION,
            "2026-11-23T10:00:00Z down until 2026-11-23T12:00:00Z",
        ),
        (ASLEEP_UNTIL, "2026-11-23T12:00:00Z"),
    ];
    let web = annotated_by_kubectl(deployment(0, &slept), ASLEEP_UNTIL);
    let plan = planned_object(TargetKind::Deployment, &web, at(23, 12, 0, 0));
    // The 5 it took kept (no original-replicas written), the replicas left at 0 (no spec).
    assert_planned(
        &plan,
        json!({
            (LAST_TRANSITION): "2026-11-22T20:00:00Z down",
            (ASLEEP_UNTIL): null,
        }),
        None,
        (
            "OverrideExpired",
            "the override cronscaler.dev/asleep-until \"2026-11-23T12:00:00Z\" (set by \
             kubectl-annotate) has ended; the schedule applies again: scale-down by \
             cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at 2026-11-22T20:00:00Z: already at 0 \
             replicas, nothing to change",
        ),
    );
}

/// `shop/report`, a CronJob suspended or not, with these annotations.
fn cron_job(suspend: bool, pairs: &[(&str, &str)]) -> DynamicObject {
    let body =
        json!({ "apiVersion": "batch/v1", "kind": "CronJob", "spec": { "suspend": suspend } });
    object(body, pairs)
}

#[test]
fn a_cron_job_is_suspended_for_the_night_and_given_back_its_suspend_in_the_morning() {
    let night = planned_object(
        TargetKind::CronJob,
        &cron_job(false, &NIGHTLY),
        at(23, 20, 0, 0),
    );
    assert_planned(
        &night,
        json!({
            "cronscaler.dev/original-suspend": "false",
            (LAST_TRANSITION): "2026-11-23T20:00:00Z down",
        }),
        Some(json!({ "suspend": true })),
        (
            "ScaledDown",
            "scaled down from running to suspended by cronscaler.dev/scale-down \"0 20 * * *\" \
             (UTC) at 2026-11-23T20:00:00Z",
        ),
    );
    let asleep = [
        NIGHTLY[0],
        NIGHTLY[1],
        ("cronscaler.dev/original-suspend", "false"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let morning = planned_object(
        TargetKind::CronJob,
        &cron_job(true, &asleep),
        at(24, 7, 0, 0),
    );
    assert_planned(
        &morning,
        json!({
            "cronscaler.dev/original-suspend": null,
            (LAST_TRANSITION): "2026-11-24T07:00:00Z up",
        }),
        Some(json!({ "suspend": false })),
        (
            "ScaledUp",
            "scaled up from suspended to running by cronscaler.dev/scale-up \"0 7 * * *\" (UTC) \
             at 2026-11-24T07:00:00Z",
        ),
    );
}

#[test]
fn a_cron_job_suspended_before_the_night_stays_suspended() {
    let night = planned_object(
        TargetKind::CronJob,
        &cron_job(true, &NIGHTLY),
        at(23, 20, 0, 0),
    );
    assert_eq!(
        patch_body(&night),
        json!({ "metadata": { "resourceVersion": "7", "annotations": {
            (LAST_TRANSITION): "2026-11-23T20:00:00Z down",
        } } }),
        "nothing recorded to give back"
    );
    assert_eq!(
        said(&night),
        (
            "ScheduleFollowed",
            "scale-down by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at \
             2026-11-23T20:00:00Z: already suspended, nothing to change"
        )
    );
    let slept = [
        NIGHTLY[0],
        NIGHTLY[1],
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let morning = planned_object(
        TargetKind::CronJob,
        &cron_job(true, &slept),
        at(24, 7, 0, 0),
    );
    assert_eq!(
        patch_body(&morning),
        json!({ "metadata": { "resourceVersion": "7", "annotations": {
            (LAST_TRANSITION): "2026-11-24T07:00:00Z up",
        } } }),
        "still suspended"
    );
    assert_eq!(
        said(&morning),
        (
            "ScheduleFollowed",
            "scale-up by cronscaler.dev/scale-up \"0 7 * * *\" (UTC) at 2026-11-24T07:00:00Z: it \
             was suspended before the scale-down, so it stays suspended"
        )
    );
}

/// `--kube-downscaler-annotations`: what kube-downscaler put to sleep wakes to the count it
/// recorded, and its record goes with ours.
#[test]
fn a_count_kube_downscaler_recorded_is_given_back_and_its_record_removed() {
    use crate::{
        namespaces::NamespaceSchedules, schedule::kube_downscaler::THEIR_ORIGINAL_REPLICAS,
        workloads::target::ScheduleSource,
    };
    let left = [NIGHTLY[0], NIGHTLY[1], (THEIR_ORIGINAL_REPLICAS, "2")];
    let now = at(23, 7, 0, 1);
    let mut web = observed(TargetKind::Deployment, &deployment(0, &left), now);
    let namespaces = NamespaceSchedules::watched([]).reading_kube_downscaler(true);
    let source = ScheduleSource::of(&web.object, None);
    let (effective, _) = namespaces.effective(TargetKind::Deployment, "shop", &source);
    web.annotations = TargetKind::Deployment.parse(&effective, Tz::UTC);
    web.object.annotations = effective;
    web.supersedes_kube_downscaler = namespaces.supersedes_kube_downscaler(TargetKind::Deployment);
    let plan = super::super::plan(&web, &SETTINGS, now);
    assert_planned(
        &plan,
        json!({
            (ORIGINAL_REPLICAS): null,
            (LAST_TRANSITION): "2026-11-23T07:00:00Z up",
            (THEIR_ORIGINAL_REPLICAS): null,
        }),
        Some(json!({ "replicas": 2 })),
        (
            "ScaledUp",
            "scaled up from 0 to 2 replicas by cronscaler.dev/scale-up \"0 7 * * *\" (UTC) at \
             2026-11-23T07:00:00Z",
        ),
    );
}

#[test]
fn a_kind_that_sleeps_on_or_off_records_no_replicas_slept_at_its_wake() {
    let asleep = [
        NIGHTLY[0],
        NIGHTLY[1],
        ("cronscaler.dev/original-value", ""),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        ("autoscaling.keda.sh/paused-replicas", "0"),
    ];
    let scaled_object = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {} }),
        &asleep,
    );
    let plan = planned_object(TargetKind::ScaledObject, &scaled_object, at(24, 7, 0, 0));
    let patch = plan.patch.expect("woken");
    assert_eq!(
        patch.counted.map(|(direction, _)| direction),
        Some(ScaleDirection::Up)
    );
    assert_eq!(patch.slept, None);
    assert!(!patch.body.annotations.contains_key(SLEPT));
}

#[test]
fn where_opencost_prices_nodes_a_sleep_records_where_the_pods_it_stops_ran_and_a_wake_none() {
    let recording = Settings {
        records_pods: true,
        ..SETTINGS
    };
    let now = at(23, 20, 0, 2);
    let mut web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    let first = super::super::plan(&web, &recording, now);
    assert_eq!(
        first.reads_pods,
        Some(web.target.clone()),
        "its Pods read first"
    );
    assert_eq!(super::super::plan(&web, &SETTINGS, now).reads_pods, None);
    let ran_on = |plan: &Plan| patch_body(plan)["metadata"]["annotations"][RAN_ON].clone();
    // Read, they are recorded with the sleep.
    web.pods_on = Some([("node-a".to_string(), 2), ("node-b".to_string(), 1)].into());
    let read = super::super::plan(&web, &recording, now);
    assert_eq!(read.reads_pods, None);
    assert_eq!(
        ran_on(&read),
        json!("2026-11-23T20:00:02Z node-a=2,node-b=1")
    );
    // None found (asleep already, put to sleep again till tomorrow evening; or not read): the
    // record of the sleep before stands.
    let till_monday = [
        NIGHTLY[0],
        NIGHTLY[1],
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (RAN_ON, "2026-11-23T20:00:02Z node-a=2"),
        (ASLEEP_UNTIL, "2026-11-24T18:00:00Z"),
    ];
    let later = at(23, 21, 0, 0);
    let mut asleep = observed(TargetKind::Deployment, &deployment(0, &till_monday), later);
    let asks = super::super::plan(&asleep, &recording, later);
    assert!(
        asks.reads_pods.is_some(),
        "a sleep: its Pods are asked for: {asks:?}"
    );
    asleep.pods_on = Some(BTreeMap::new());
    let again = super::super::plan(&asleep, &recording, later);
    let again = again.patch.expect("the override recorded");
    assert!(
        !again.body.annotations.contains_key(RAN_ON),
        "{:?}",
        again.body
    );
    // The morning's wake reads no Pods, and leaves the record for the ledger.
    let morning = at(24, 7, 0, 0);
    let night = [
        NIGHTLY[0],
        NIGHTLY[1],
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (RAN_ON, "2026-11-23T20:00:02Z node-a=2"),
    ];
    let woken = observed(TargetKind::Deployment, &deployment(0, &night), morning);
    let wake = super::super::plan(&woken, &recording, morning);
    assert_eq!(wake.reads_pods, None);
    assert!(!wake.patch.unwrap().body.annotations.contains_key(RAN_ON));
    // A KEDA workload asleep through its ScaledObject: the Deployment's own Pods; and a
    // ScaledObject with a schedule of its own: those of the Deployment it scales.
    let keda = levered(&NIGHTLY, scaled_object(&[]), now);
    let pods = super::super::plan(&keda, &recording, now).reads_pods;
    assert_eq!(pods.map(|pods| pods.kind), Some(TargetKind::Deployment));
    let scaler = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                "spec": { "scaleTargetRef": { "name": "api" } } }),
        &NIGHTLY,
    );
    let scaler = observed(TargetKind::ScaledObject, &scaler, now);
    let pods = super::super::plan(&scaler, &recording, now).reads_pods;
    assert_eq!(
        pods.map(|pods| (pods.kind, pods.key.name)),
        Some((TargetKind::Deployment, "api".to_string()))
    );
    // A CronJob names no Pods after it: nothing to read.
    let mut cron = observed(TargetKind::CronJob, &deployment(3, &NIGHTLY), now);
    cron.target.kind = TargetKind::CronJob;
    let suspended = super::super::plan(&cron, &recording, now);
    assert!(suspended.patch.is_some());
    assert_eq!(suspended.reads_pods, None);
}
