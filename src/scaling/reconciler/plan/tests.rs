//! Every rule of a look, as a function of what was observed: no API server, mocked or real.

use std::sync::Arc;

use chrono::TimeZone;
use chrono_tz::Tz;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::*;
use crate::{
    runtime::key::ObjectKey,
    scaling::{
        hpa::{Hpa, HpaChange, Originals},
        transitions::order::Peer,
    },
    schedule::test_support::annotations,
    schedule::{
        AWAKE_UNTIL, DOWN_REPLICAS, LAST_TRANSITION, ORIGINAL_REPLICAS, SCALE_DOWN, SCALE_UP,
        SLEPT, TIMEZONE, WARNED,
    },
    workloads::target::{ScaleTarget, TargetKind, TargetState},
};

pub(super) const NIGHTLY: [(&str, &str); 2] = [(SCALE_DOWN, "0 20 * * *"), (SCALE_UP, "0 7 * * *")];
/// Asleep since the scale-down at 20:00 on the 23rd, which took 3 replicas.
const ASLEEP: [(&str, &str); 4] = [
    NIGHTLY[0],
    NIGHTLY[1],
    (ORIGINAL_REPLICAS, "3"),
    (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
];

pub(super) fn at(day: u32, hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, minute, second)
        .unwrap()
}

pub(super) const SETTINGS: Settings = Settings {
    grace: None,
    step_timeout: TimeDelta::minutes(5),
    records_pods: false,
};

/// `shop/web`, a Deployment of `replicas` with these annotations, created well before.
fn deployment(replicas: i32, annotations: &[(&str, &str)]) -> DynamicObject {
    object(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "spec": { "replicas": replicas },
        }),
        annotations,
    )
}

pub(super) fn object(mut body: Value, pairs: &[(&str, &str)]) -> DynamicObject {
    body["metadata"] = json!({
        "name": "web", "namespace": "shop", "resourceVersion": "7", "uid": "u-1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "annotations": annotations(pairs),
        "managedFields": [{
            "manager": "kubectl", "operation": "Update", "subresource": "scale",
            "fieldsType": "FieldsV1", "fieldsV1": { "f:spec": { "f:replicas": {} } }
        }],
    });
    serde_json::from_value(body).unwrap()
}

/// `object` once the warning of `cause` was said about it.
fn said(mut object: DynamicObject, cause: &str) -> DynamicObject {
    object.metadata.labels = Some([(WARNED.to_string(), cause.to_string())].into());
    object
}

/// What a look at `object` of `kind` observes, following its own annotations.
pub(super) fn observed(kind: TargetKind, object: &DynamicObject, now: DateTime<Utc>) -> Observed {
    let state = TargetState::of_object(kind, object);
    let parsed = kind.parse(&state.annotations, Tz::UTC);
    let (annotations, out_of_reach) = schedule::in_reach(parsed, now, TimeDelta::hours(24));
    Observed {
        target: ScaleTarget {
            kind,
            key: ObjectKey::new("shop", "web"),
        },
        stale_overrides: schedule::expired_keys(&state.annotations, now)
            .into_iter()
            .map(|(key, _)| key.to_string())
            .collect(),
        object: state,
        inherited: false,
        lever: None,
        lever_object: None,
        sleeps_as: kind,
        held_at: None,
        from_watch: false,
        annotations,
        out_of_reach,
        hpas: Vec::new(),
        namespace_setter: None,
        governed_by: None,
        supersedes_kube_downscaler: false,
        namespace: NamespaceWake::Free,
        gitops: None,
        pods_on: None,
    }
}

fn web_hpa(min: i32, max: i32, originals: Originals) -> Hpa {
    Hpa {
        key: ObjectKey::new("shop", "web"),
        target: ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("shop", "web"),
        },
        min_replicas: min,
        max_replicas: max,
        originals,
        resource_version: Some("41".into()),
        lever: None,
    }
}

fn patch_body(plan: &Plan) -> Value {
    plan.patch.as_ref().expect("a patch").body.to_json()
}

#[test]
fn a_scale_down_is_one_guarded_patch_that_records_the_count_and_one_event() {
    let now = at(23, 20, 0, 2);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now),
        &SETTINGS,
        now,
    );
    assert_eq!(
        patch_body(&plan),
        json!({
            "metadata": {
                "resourceVersion": "7",
                "annotations": {
                    "cronscaler.dev/original-replicas": "3",
                    "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
                },
            },
            "spec": { "replicas": 0 },
        })
    );
    assert_eq!(
        plan.event,
        Some((
            "ScaledDown",
            "scaled down from 3 to 0 replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at 2026-11-23T20:00:00Z".into()
        ))
    );
    let counted = plan.patch.as_ref().and_then(|patch| patch.counted);
    assert_eq!(
        counted,
        Some((ScaleDirection::Down, Duration::from_secs(2)))
    );
    assert_eq!(plan.warning, None);
    assert!(plan.releases.is_empty() && plan.holds.is_empty());
}

#[test]
fn a_scale_up_gives_back_the_count_it_took_and_forgets_it() {
    let now = at(24, 7, 0, 0);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now),
        &SETTINGS,
        now,
    );
    let body = patch_body(&plan);
    assert_eq!(body["spec"]["replicas"], json!(3));
    assert_eq!(
        body["metadata"]["annotations"],
        json!({
            (ORIGINAL_REPLICAS): null,
            (LAST_TRANSITION): "2026-11-24T07:00:00Z up",
            // The night it ends, for the ledger of savings.
            (SLEPT): "3 2026-11-23T20:00:00Z/2026-11-24T07:00:00Z",
        })
    );
    let slept = plan.patch.as_ref().and_then(|patch| patch.slept);
    assert_eq!(slept.map(|slept| slept.replica_hours()), Some(33.0));
    assert_eq!(
        plan.event,
        Some((
            "ScaledUp",
            "scaled up from 0 to 3 replicas by cronscaler.dev/scale-up \"0 7 * * *\" (UTC) at \
             2026-11-24T07:00:00Z"
                .into()
        ))
    );
}

#[test]
fn nothing_due_plans_nothing() {
    let now = at(23, 23, 0, 0);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now),
        &SETTINGS,
        now,
    );
    assert_eq!(plan, Plan::default());
}

#[test]
fn a_suspend_kind_sleeps_by_its_field_and_reads_in_words() {
    let cron_job = object(
        json!({ "apiVersion": "batch/v1", "kind": "CronJob", "spec": { "suspend": false } }),
        &NIGHTLY,
    );
    let now = at(23, 20, 0, 0);
    let plan = plan(
        &observed(TargetKind::CronJob, &cron_job, now),
        &SETTINGS,
        now,
    );
    assert_eq!(patch_body(&plan)["spec"], json!({ "suspend": true }));
    let (reason, note) = plan.event.unwrap();
    assert_eq!(reason, "ScaledDown");
    assert!(
        note.starts_with("scaled down from running to suspended"),
        "{note}"
    );
}

#[test]
fn an_annotation_kind_sleeps_by_its_annotation_and_records_the_value_it_held() {
    let scaled_object = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {} }),
        &NIGHTLY,
    );
    let now = at(23, 20, 0, 0);
    let plan = plan(
        &observed(TargetKind::ScaledObject, &scaled_object, now),
        &SETTINGS,
        now,
    );
    let annotations = &patch_body(&plan)["metadata"]["annotations"];
    assert_eq!(
        annotations["autoscaling.keda.sh/paused-replicas"],
        json!("0")
    );
    assert_eq!(annotations["cronscaler.dev/original-value"], json!(""));
    assert_eq!(patch_body(&plan).get("spec"), None, "KEDA's spec untouched");
}

#[test]
fn a_schedule_on_a_foo_s_deployment_is_refused_once_naming_the_foo() {
    let now = at(23, 20, 0, 0);
    let mut levered = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    levered.lever = Some((TargetKind::Foo, "web".into()));
    let first = plan(&levered, &SETTINGS, now);
    assert_records_only_its_warning(&first, "never scaled: the Foo would undo it");
    let warning = first.warning.expect("warned");
    assert_eq!(warning.reason, "InvalidSchedule");
    assert!(
        warning
            .note
            .to_string()
            .contains("annotate Foo \"web\" instead"),
        "{}",
        warning.note
    );
    // Said: the cause written on the object keeps it from being said again.
    let told = said(deployment(3, &NIGHTLY), &warning.cause);
    let mut again = observed(TargetKind::Deployment, &told, now);
    again.lever = levered.lever.clone();
    assert_eq!(plan(&again, &SETTINGS, now), Plan::default());
    // Without a schedule of its own, nothing to say.
    let mut quiet = observed(TargetKind::Deployment, &deployment(3, &[]), now);
    quiet.lever = levered.lever;
    assert_eq!(plan(&quiet, &SETTINGS, now), Plan::default());
}

#[test]
fn invalid_annotations_are_warned_of_by_key_and_value_and_nothing_is_scaled() {
    let broken = [(SCALE_DOWN, "0 20 * * *"), (TIMEZONE, "Mars/Olympus")];
    let now = at(23, 20, 0, 0);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(3, &broken), now),
        &SETTINGS,
        now,
    );
    assert_records_only_its_warning(&plan, "nothing scaled");
    let warning = plan.warning.expect("warned");
    assert_eq!(
        warning.note.to_string(),
        "no scheduled scaling until the annotations are fixed: cronscaler.dev/timezone: \
         \"Mars/Olympus\" is not an IANA time zone name"
    );
    assert_eq!(warning.cause, refused_cause(&annotations(&broken)));
    // Said: the next look, the annotations unchanged, writes and says nothing.
    let told = said(deployment(3, &broken), &warning.cause);
    assert_eq!(
        super::plan(
            &observed(TargetKind::Deployment, &told, now),
            &SETTINGS,
            now
        ),
        Plan::default()
    );
}

#[test]
fn a_new_object_s_catch_up_waits_for_the_end_of_its_grace_period() {
    let mut new = deployment(3, &NIGHTLY);
    new.metadata.creation_timestamp =
        serde_json::from_value(json!("2026-11-23T21:59:00Z")).unwrap();
    let now = at(23, 22, 0, 0);
    let settings = Settings {
        grace: Some(TimeDelta::minutes(10)),
        ..SETTINGS
    };
    let plan = plan(&observed(TargetKind::Deployment, &new, now), &settings, now);
    assert_eq!(
        plan,
        Plan {
            recheck: Some(at(23, 22, 9, 0)),
            event: Some((
                "SleepHeldBack",
                "held awake until 2026-11-23T22:09:00Z: created less than 10m ago, it is not put \
                 to sleep by a catch-up before its grace period (--grace-period) ends"
                    .into()
            )),
            ..Plan::default()
        },
        "the one write is the Event that says why it is awake while its schedule says asleep"
    );
}

#[test]
fn a_wake_of_a_namespace_waiting_for_its_turn_writes_nothing_and_has_the_turn_looked_for() {
    let now = at(24, 7, 0, 0);
    let mut parked = observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now);
    parked.inherited = true;
    parked.namespace = NamespaceWake::Parked { first: true };
    assert_eq!(
        plan(&parked, &SETTINGS, now),
        Plan {
            look_for_turn: true,
            ..Plan::default()
        }
    );
    // Until every kind is listed, a step before it may not be known: looked at again soon.
    parked.namespace = NamespaceWake::Unknown;
    assert_eq!(
        plan(&parked, &SETTINGS, now).recheck,
        Some(now + order::LOOK_EVERY)
    );
    // The same wake of its own annotations is not the Namespace's to hold.
    parked.inherited = false;
    assert!(plan(&parked, &SETTINGS, now).patch.is_some());
}

#[test]
fn a_step_of_an_ordered_wake_waits_for_the_one_before_then_goes_on_anyway_saying_so() {
    let due = Transition {
        at: at(24, 7, 0, 0),
        direction: Direction::Up,
        until: None,
    };
    let database = Peer {
        name: "StatefulSet db".into(),
        order: 0,
        last_transition: Some(due),
        up_settled: false,
        down_settled: true,
    };
    let step = |held_since| NamespaceWake::Step {
        due,
        order: 1,
        peers: Arc::new(vec![database.clone()]),
        held_since,
    };
    let now = at(24, 7, 1, 0);
    let mut web = observed(TargetKind::Deployment, &deployment(0, &ASLEEP), now);
    web.inherited = true;
    web.namespace = step(due.at);
    let held = plan(&web, &SETTINGS, now);
    assert_eq!(held.patch, None);
    assert_eq!(held.recheck, Some(now + order::LOOK_EVERY));

    let late = at(24, 7, 6, 0);
    let web = Observed {
        namespace: step(due.at),
        ..web
    };
    let anyway = plan(&web, &SETTINGS, late);
    assert!(anyway.patch.is_some(), "goes on after the timeout");
    assert_eq!(
        anyway.step,
        Some(Step::GoesAnyway {
            due,
            order: 1,
            note: "StatefulSet db was not available after 6m; woke the rest anyway".into(),
        })
    );
    assert!(anyway.wakes_namespace);
    assert_eq!(
        anyway.tally.map(|tally| (tally.object, tally.changes)),
        Some(("Deployment web".into(), true))
    );
}

#[test]
fn a_person_s_change_after_a_scale_down_is_warned_of_once_and_gives_the_hpa_back() {
    let night = [
        (SCALE_DOWN, "0 20 * * *"),
        (SCALE_UP, "0 7 * * *"),
        (DOWN_REPLICAS, "1"),
        (ORIGINAL_REPLICAS, "4"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let now = at(23, 23, 0, 0);
    let mut web = observed(TargetKind::Deployment, &deployment(3, &night), now);
    web.hpas = vec![web_hpa(1, 1, Originals::Recorded { min: 2, max: 5 })];
    let plan = plan(&web, &SETTINGS, now);
    assert_records_only_its_warning(&plan, "left alone");
    let warning = plan.warning.expect("warned");
    assert_eq!(warning.reason, "ScaleReverted");
    assert_eq!(
        warning.note.to_string(),
        "replicas changed from 1 to 3 by kubectl (through /scale) after the scheduled \
         scale-down at 2026-11-23T20:00:00Z; left alone until the next transition"
    );
    assert!(
        matches!(
            plan.releases.as_slice(),
            [(HpaChange::Release { to: (2, 5), .. }, _)]
        ),
        "{:?}",
        plan.releases
    );
    // Said: the next look warns no more, however often it is made (a restart keeps nothing
    // but the object's label).
    let mut told = observed(
        TargetKind::Deployment,
        &said(deployment(3, &night), &warning.cause),
        now,
    );
    told.hpas = web.hpas.clone();
    assert_eq!(super::plan(&told, &SETTINGS, now).warning, None);
}

#[test]
fn a_scale_down_with_replicas_left_holds_the_hpa_after_the_patch_and_says_so() {
    let night = [NIGHTLY[0], NIGHTLY[1], (DOWN_REPLICAS, "1")];
    let now = at(23, 20, 0, 0);
    let mut web = observed(TargetKind::Deployment, &deployment(4, &night), now);
    web.hpas = vec![web_hpa(2, 5, Originals::None)];
    let plan = plan(&web, &SETTINGS, now);
    assert!(plan.releases.is_empty());
    assert!(
        matches!(plan.holds.as_slice(), [(HpaChange::Hold { to: 1, record: Some((2, 5)), .. }, Some(version))] if version == "41"),
        "{:?}",
        plan.holds
    );
    let (_, note) = plan.event.unwrap();
    assert!(
        note.ends_with("; HorizontalPodAutoscaler web held at 1 for the night (minReplicas 2 and maxReplicas 5 recorded)"),
        "{note}"
    );
}

#[test]
fn an_ended_override_is_removed_under_the_guard_it_was_read_with() {
    let ended = [
        NIGHTLY[0],
        NIGHTLY[1],
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (AWAKE_UNTIL, "2026-11-23T21:00:00Z"),
    ];
    let now = at(23, 22, 0, 0);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(0, &ended), now),
        &SETTINGS,
        now,
    );
    let patch = plan.patch.expect("a removal");
    assert_eq!(patch.doing, "remove an ended override from");
    assert_eq!(
        patch.body.to_json(),
        json!({ "metadata": { "resourceVersion": "7", "annotations": { (AWAKE_UNTIL): null } } })
    );
    assert_eq!(patch.counted, None, "not a scale");
}

/// A schedule taken off after a revert was warned of: the records go, the label of the warning
/// with them, so the same schedule put back later is warned about afresh.
#[test]
fn a_schedule_taken_off_forgets_its_warning_with_its_records() {
    let records = [
        (ORIGINAL_REPLICAS, "3"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let now = at(23, 22, 0, 0);
    let cause = schedule::reverted_cause(schedule::test_support::down("2026-11-23T20:00:00Z"));
    let taken_off = said(deployment(5, &records), &cause);
    let patch = plan(
        &observed(TargetKind::Deployment, &taken_off, now),
        &SETTINGS,
        now,
    )
    .patch
    .expect("a cleanup");
    assert_eq!(
        patch.body.to_json()["metadata"]["labels"],
        json!({ (WARNED): null })
    );
    assert_eq!(
        patch.body.to_json()["metadata"]["annotations"],
        json!({ (ORIGINAL_REPLICAS): null, (LAST_TRANSITION): null })
    );
    assert_eq!(
        patch.body.spec, None,
        "the replicas a person set are left alone"
    );
    // Never warned of: no label to take off, and none in the patch.
    let quiet = deployment(5, &records);
    let patch = plan(
        &observed(TargetKind::Deployment, &quiet, now),
        &SETTINGS,
        now,
    )
    .patch
    .expect("a cleanup");
    assert_eq!(patch.body.to_json()["metadata"].get("labels"), None);
}

#[test]
fn an_override_out_of_reach_is_warned_of_while_the_schedule_is_followed() {
    let annotations = [
        NIGHTLY[0],
        NIGHTLY[1],
        (AWAKE_UNTIL, "2026-11-25T06:00:00Z"),
    ];
    let now = at(23, 22, 0, 0);
    let plan = plan(
        &observed(TargetKind::Deployment, &deployment(2, &annotations), now),
        &SETTINGS,
        now,
    );
    assert_eq!(patch_body(&plan)["spec"]["replicas"], json!(0));
    assert_eq!(
        plan.warning.map(|warning| warning.note.to_string()),
        Some(
            "the override is not applied before it comes within reach at 2026-11-24T06:00:00Z: \
             cronscaler.dev/awake-until: \"2026-11-25T06:00:00Z\" reaches 32h ahead, more than \
             the 24h an override may (--max-override)"
                .into()
        )
    );
}

#[test]
fn a_namespace_s_transition_from_a_policy_is_reported_by_its_rule_and_source() {
    let now = at(23, 20, 0, 0);
    let mut web = observed(TargetKind::Deployment, &deployment(3, &NIGHTLY), now);
    web.inherited = true;
    web.governed_by = Some("SleepPolicy nights".into());
    let plan = plan(&web, &SETTINGS, now);
    let tally = plan.tally.expect("reported");
    assert_eq!(
        tally.by,
        "cronscaler.dev/scale-down \"0 20 * * *\" (UTC) from SleepPolicy nights"
    );
    assert!(!plan.wakes_namespace, "a sleep measures nothing");
}

/// `shop/web`'s ScaledObject, holding these annotations, at resourceVersion 90.
fn scaled_object(annotations: &[(&str, &str)]) -> TargetState {
    let mut object = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {} }),
        annotations,
    );
    object.metadata.resource_version = Some("90".into());
    TargetState::of_object(TargetKind::ScaledObject, &object)
}

/// A KEDA workload with these annotations of its own, sleeping through its ScaledObject.
fn levered(annotations: &[(&str, &str)], lever: TargetState, now: DateTime<Utc>) -> Observed {
    let mut web = observed(TargetKind::ScaledObject, &deployment(3, annotations), now);
    web.target.kind = TargetKind::Deployment;
    web.object.replicas = lever.replicas;
    web.object.held.clone_from(&lever.held);
    web.lever = Some((TargetKind::ScaledObject, "web".into()));
    web.lever_object = Some((
        ScaleTarget {
            kind: TargetKind::ScaledObject,
            key: ObjectKey::new("shop", "web"),
        },
        lever,
    ));
    web
}

#[test]
fn a_keda_workload_sleeps_by_its_own_schedule_through_its_scaled_object_after_its_records() {
    let now = at(23, 20, 0, 0);
    let plan = plan(&levered(&NIGHTLY, scaled_object(&[]), now), &SETTINGS, now);
    assert_eq!(
        patch_body(&plan),
        json!({
            "metadata": {
                "resourceVersion": "7",
                "annotations": {
                    "cronscaler.dev/original-value": "",
                    "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
                },
            },
        }),
        "the workload's records, never its replicas"
    );
    let lever = plan.lever.expect("the ScaledObject paused");
    assert_eq!(
        lever.body.to_json(),
        json!({ "metadata": {
            "resourceVersion": "90",
            "annotations": { "autoscaling.keda.sh/paused-replicas": "0" },
        } })
    );
    assert!(!lever.before_patch, "a sleep comes after its records");
    let (_, note) = plan.event.expect("told on the workload");
    assert!(note.ends_with(", through ScaledObject web"), "{note}");
}

#[test]
fn a_keda_workload_wakes_its_scaled_object_first_giving_back_what_it_held() {
    let asleep = [
        NIGHTLY[0],
        NIGHTLY[1],
        ("cronscaler.dev/original-value", "2"),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let lever = scaled_object(&[("autoscaling.keda.sh/paused-replicas", "0")]);
    let now = at(24, 7, 0, 0);
    let plan = plan(&levered(&asleep, lever, now), &SETTINGS, now);
    let lever = plan.lever.expect("the ScaledObject resumed");
    assert_eq!(
        lever.body.to_json()["metadata"]["annotations"]["autoscaling.keda.sh/paused-replicas"],
        json!("2"),
        "the count a person had paused it at"
    );
    assert!(lever.before_patch, "a wake comes before its records");
    let slept = plan.patch.and_then(|patch| patch.slept);
    assert_eq!(
        slept, None,
        "no minReplicaCount: KEDA's count, none that slept for certain"
    );
    // With minReplicaCount 2, the night freed 2 replicas of the workload's, as `plan` counts
    // it: the record goes on the workload, whose pods are what slept.
    let mut lever = scaled_object(&[("autoscaling.keda.sh/paused-replicas", "0")]);
    lever.floor = Some(2);
    let floored = super::plan(&levered(&asleep, lever, now), &SETTINGS, now);
    let patch = floored.patch.expect("the workload's records");
    assert_eq!(
        patch.body.to_json()["metadata"]["annotations"][SLEPT],
        json!("2 2026-11-23T20:00:00Z/2026-11-24T07:00:00Z")
    );
}

#[test]
fn a_keda_workload_s_scaled_object_awake_under_a_sleep_in_force_is_put_back_to_sleep() {
    let asleep = [
        NIGHTLY[0],
        NIGHTLY[1],
        ("cronscaler.dev/original-value", ""),
        (LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
    ];
    let now = at(23, 21, 0, 0);
    let put_back = plan(&levered(&asleep, scaled_object(&[]), now), &SETTINGS, now);
    assert_eq!((put_back.patch, put_back.event), (None, None));
    assert_eq!(put_back.warning, None, "KEDA's count is no revert");
    assert_eq!(
        put_back
            .lever
            .map(|lever| lever.body.to_json()["metadata"]["annotations"].clone()),
        Some(json!({ "autoscaling.keda.sh/paused-replicas": "0" }))
    );
    // Asleep as it should be: nothing.
    let paused = scaled_object(&[("autoscaling.keda.sh/paused-replicas", "0")]);
    assert_eq!(
        plan(&levered(&asleep, paused, now), &SETTINGS, now),
        Plan::default()
    );
}

#[test]
fn an_on_off_object_found_awake_at_a_scale_up_is_told_already_awake() {
    let now = at(24, 7, 0, 0);
    let awake = object(
        json!({ "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "spec": {} }),
        &NIGHTLY,
    );
    let plan = plan(
        &observed(TargetKind::ScaledObject, &awake, now),
        &SETTINGS,
        now,
    );
    let (reason, note) = plan.event.expect("told");
    assert_eq!(reason, "ScheduleFollowed");
    assert!(
        note.ends_with("already scaling, nothing to change"),
        "{note}"
    );
}

/// Asserts that `plan` writes nothing but its warning's cause, guarded by the resourceVersion it
/// was decided on, which the warning is said after.
pub(super) fn assert_records_only_its_warning(plan: &Plan, what: &str) {
    let cause = plan.warning.as_ref().map(|warning| warning.cause.as_str());
    let recorded = json!({ "metadata": { "resourceVersion": "7", "labels": { (WARNED): cause } } });
    assert_eq!(
        plan.patch.as_ref().map(|patch| patch.body.to_json()),
        Some(recorded),
        "{what}"
    );
}

mod gitops;
mod looks;

#[test]
fn the_scheduled_sleeps_and_wakes_made_are_told_to_the_nights_and_an_override_is_not() {
    let night = |annotations: &[(&str, &str)], replicas, now| {
        let plan = plan(
            &observed(
                TargetKind::Deployment,
                &deployment(replicas, annotations),
                now,
            ),
            &SETTINGS,
            now,
        );
        plan.patch.and_then(|patch| patch.night)
    };
    let asleep = |at, asleep| {
        Some(Applied {
            at,
            asleep,
            namespace: "shop".into(),
        })
    };
    assert_eq!(
        night(&NIGHTLY, 3, at(23, 20, 0, 2)),
        asleep(at(23, 20, 0, 0), true)
    );
    assert_eq!(
        night(&ASLEEP, 0, at(24, 7, 0, 0)),
        asleep(at(24, 7, 0, 0), false)
    );
    // Woken by a person's override at midnight: its Namespace counts as woken.
    let woken = [
        ASLEEP[0],
        ASLEEP[1],
        ASLEEP[2],
        ASLEEP[3],
        (AWAKE_UNTIL, "2026-11-24T02:00:00Z"),
    ];
    let plan = plan(
        &observed(
            TargetKind::Deployment,
            &deployment(0, &woken),
            at(24, 0, 0, 0),
        ),
        &SETTINGS,
        at(24, 0, 0, 0),
    );
    assert_eq!(patch_body(&plan)["spec"]["replicas"], json!(3));
    assert_eq!(
        plan.patch.and_then(|patch| patch.night),
        asleep(at(24, 0, 0, 0), false)
    );
}
