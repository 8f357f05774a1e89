use chrono::TimeZone;
use serde_json::json;

use kube::ResourceExt;

use super::*;
use crate::mock_api::{Exchange, FOO, event, mock_client};
use crate::runtime::key::ObjectKey;
use crate::{
    error::Error,
    runtime::CONTROLLER_NAME,
    scaling::transitions::reports::{QUIET, WorkloadOutcome},
    schedule::{Direction, refused_cause},
    workloads::{last_seen::LastSeen, writers::sleep_field_changed_by},
};
use serde_json::Value;

const DEPLOYMENT_PAGE: &str =
    include_str!("../../../tests/fixtures/apiserver/list-deployments-page.json");
const APP_0: &str = "/apis/apps/v1/namespaces/load-0/deployments/app-0";
const FOO_PATH: &str = "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos/example-foo";
const CONFLICT: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on deployments.apps \"app-0\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"app-0","group":"apps","kind":"deployments"},"code":409}"#;

fn at(hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 23, hour, minute, second)
        .unwrap()
}

/// `load-0/app-0` as the real server listed it (2 replicas, last scaled by `curl` through
/// `/scale`), with these annotations and replicas; `cronscaler.dev/warned` among them is the
/// label the controller records a warning in.
fn app_0(replicas: i32, annotations: &[(&str, &str)]) -> Value {
    let page: Value = serde_json::from_str(DEPLOYMENT_PAGE).unwrap();
    let mut deployment = page["items"][0].clone();
    deployment["spec"]["replicas"] = json!(replicas);
    let (labels, annotations): (Vec<_>, Vec<_>) = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .partition(|(key, _)| key == schedule::WARNED);
    deployment["metadata"]["annotations"] = annotations
        .into_iter()
        .collect::<serde_json::Map<_, _>>()
        .into();
    if !labels.is_empty() {
        deployment["metadata"]["labels"] =
            labels.into_iter().collect::<serde_json::Map<_, _>>().into();
    }
    deployment
}

fn deployment_target() -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Deployment,
        key: ObjectKey::new("load-0", "app-0"),
    }
}

fn foo_target() -> ScaleTarget {
    ScaleTarget {
        kind: TargetKind::Foo,
        key: ObjectKey::new("default", "example-foo"),
    }
}

fn get(path: &str, object: Value) -> Exchange {
    Exchange::new("GET", path).reply(200, object)
}

/// The patch that writes a warning's cause on the object, guarded by the resourceVersion it
/// was decided on, before the warning is said.
fn warned_patch(cause: &str, reply: Value) -> Exchange {
    scale_patch(
        APP_0,
        json!({ "metadata": { "resourceVersion": "10464", "labels": { (schedule::WARNED): cause } } }),
        reply,
    )
}

/// A patch of `app_0` with `body`, refused: the object changed since it was read.
fn refused_patch(body: Value) -> Exchange {
    Exchange::new("PATCH", format!("{APP_0}?&fieldManager=cronscaler"))
        .body(body)
        .reply_captured(CONFLICT)
}

fn scale_patch(path: &str, body: Value, reply: Value) -> Exchange {
    Exchange::new("PATCH", format!("{path}?&fieldManager=cronscaler"))
        .content_type("application/merge-patch+json")
        .body(body)
        .reply(200, reply)
}

/// Runs reconciles of `target` at each instant against one scripted API server and one context.
async fn reconcile_against(
    target: ScaleTarget,
    instants: &[DateTime<Utc>],
    dry_run: bool,
    script: Vec<Exchange>,
) -> Vec<Result<Next, Error>> {
    crate::scaling::test_support::reconcile_scripted(&target, instants, dry_run, script, |ctx| ctx)
        .await
}

/// Runs the reconciles and requires every one to succeed.
async fn reconcile_ok(
    target: ScaleTarget,
    instants: &[DateTime<Utc>],
    dry_run: bool,
    script: Vec<Exchange>,
) {
    for result in reconcile_against(target, instants, dry_run, script).await {
        if let Err(error) = result {
            panic!("reconcile failed: {error}");
        }
    }
}

const NIGHTLY: [(&str, &str); 2] = [
    (schedule::SCALE_DOWN, "0 20 * * *"),
    (schedule::SCALE_UP, "0 7 * * *"),
];

#[tokio::test]
async fn scale_down_records_the_original_and_sets_replicas_in_one_request() {
    let before = app_0(2, &NIGHTLY);
    let script = vec![
        get(APP_0, before.clone()),
        scale_patch(APP_0, scale_down_from_2("10464"), before),
        scaled_down_from_2(),
    ];
    reconcile_ok(deployment_target(), &[at(20, 0, 0)], false, script).await;
}

#[tokio::test]
async fn a_foo_is_scaled_through_its_spec() {
    let mut foo: Value = serde_json::from_str(FOO).unwrap();
    foo["metadata"]["annotations"] = json!({ (schedule::SCALE_DOWN): "0 0 20 * * *" });
    let script = vec![
        get(FOO_PATH, foo.clone()),
        scale_patch(
            FOO_PATH,
            json!({
                "metadata": {
                    "resourceVersion": "262",
                    "annotations": {
                        "cronscaler.dev/original-replicas": "1",
                        "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
                    },
                },
                "spec": { "replicas": 0 },
            }),
            foo,
        ),
        event(
            "default",
            "Normal",
            "ScaledDown",
            "scaled down from 1 to 0 replicas by cronscaler.dev/scale-down \"0 0 20 * * *\" (UTC) at 2026-11-23T20:00:00Z",
            "example-foo",
        ),
    ];
    reconcile_ok(foo_target(), &[at(20, 0, 0)], false, script).await;
}

#[tokio::test]
async fn a_write_on_a_stale_read_fails_to_be_retried_on_a_fresh_one() {
    let before = app_0(2, &NIGHTLY);
    let script = vec![
        get(APP_0, before),
        Exchange::new("PATCH", format!("{APP_0}?&fieldManager=cronscaler"))
            .reply_captured(CONFLICT),
    ];
    let results = reconcile_against(deployment_target(), &[at(20, 0, 0)], false, script).await;
    let error = results[0].as_ref().unwrap_err().to_string();
    assert!(
        error.starts_with("scale Deployment load-0/app-0: "),
        "{error}"
    );
    assert!(error.contains("the object has been modified"), "{error}");
}

#[tokio::test]
async fn a_deleted_target_needs_nothing() {
    let script = vec![Exchange::new("GET", APP_0).reply_captured(crate::mock_api::NOT_FOUND)];
    reconcile_ok(deployment_target(), &[at(20, 0, 0)], false, script).await;
}

#[tokio::test]
async fn dry_run_reports_and_changes_nothing() {
    let script = vec![
        get(APP_0, app_0(2, &NIGHTLY)),
        event(
            "load-0",
            "Normal",
            "ScaledDown",
            "dry run, nothing changed: scaled down from 2 to 0 replicas by cronscaler.dev/scale-down \"0 20 * * *\" \
             (UTC) at 2026-11-23T20:00:00Z",
            "app-0",
        ),
    ];
    reconcile_ok(deployment_target(), &[at(20, 0, 0)], true, script).await;
}

#[test]
fn who_changed_replicas_comes_from_the_latest_other_manager() {
    let page: Value = serde_json::from_str(DEPLOYMENT_PAGE).unwrap();
    let deployment: kube::api::DynamicObject =
        serde_json::from_value(page["items"][0].clone()).unwrap();
    assert_eq!(
        sleep_field_changed_by(
            &TargetKind::Deployment.managed_field(),
            deployment.managed_fields()
        )
        .as_deref(),
        Some("curl (through /scale)")
    );

    let mut ours = deployment.managed_fields().to_vec();
    for entry in &mut ours {
        entry.manager = Some(CONTROLLER_NAME.into());
    }
    assert_eq!(
        sleep_field_changed_by(&TargetKind::Deployment.managed_field(), &ours),
        None,
        "the controller's own writes name nobody"
    );
}

#[tokio::test]
async fn an_override_reaching_too_far_is_refused_with_the_reason_and_the_schedule_followed() {
    let annotations = [
        NIGHTLY[0],
        NIGHTLY[1],
        (schedule::AWAKE_UNTIL, "2026-11-25T06:00:00Z"),
    ];
    let before = app_0(2, &annotations);
    let cause = refused_cause(
        &annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let script = vec![
        get(APP_0, before.clone()),
        scale_patch(
            APP_0,
            json!({
                "metadata": {
                    "resourceVersion": "10464",
                    "annotations": {
                        "cronscaler.dev/original-replicas": "2",
                        "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
                    },
                    "labels": { (schedule::WARNED): cause },
                },
                "spec": { "replicas": 0 },
            }),
            before.clone(),
        )
        .without("/metadata/annotations/cronscaler.dev~1awake-until"),
        scaled_down_from_2(),
        event(
            "load-0",
            "Warning",
            "InvalidSchedule",
            "the override is not applied before it comes within reach at 2026-11-24T06:00:00Z: cronscaler.dev/awake-until: \"2026-11-25T06:00:00Z\" reaches 32h ahead, more than the 24h an override may (--max-override)",
            "app-0",
        ),
    ];
    reconcile_ok(deployment_target(), &[at(22, 0, 0)], false, script).await;
}

/// An ended override left on the object would shadow every later override of its Namespace:
/// a removal refused on a stale read fails, so the key comes back with backoff and removes it.
#[tokio::test]
async fn an_ended_override_whose_removal_conflicts_is_removed_on_a_retry() {
    let asleep = [
        NIGHTLY[0],
        NIGHTLY[1],
        (schedule::ORIGINAL_REPLICAS, "2"),
        (schedule::LAST_TRANSITION, "2026-11-23T20:00:00Z down"),
        (schedule::ASLEEP_UNTIL, "2026-11-23T21:00:00Z"),
    ];
    let before = app_0(0, &asleep);
    let removal = json!({
        "metadata": {
            "resourceVersion": "10464",
            "annotations": { (schedule::ASLEEP_UNTIL): null },
        },
    });
    let script = vec![
        get(APP_0, before.clone()),
        refused_patch(removal.clone()),
        get(APP_0, before.clone()),
        scale_patch(APP_0, removal, before),
    ];
    let results = reconcile_against(
        deployment_target(),
        &[at(22, 0, 0), at(22, 0, 1)],
        false,
        script,
    )
    .await;
    let error = results[0]
        .as_ref()
        .expect_err("a conflict fails the look, to be retried");
    assert!(
        error
            .to_string()
            .starts_with("remove an ended override from Deployment load-0/app-0: "),
        "{error}"
    );
    assert!(results[1].is_ok(), "{:?}", results[1]);
}

/// The warning's Event is refused (here: a note the server finds invalid): its cause, written
/// first, is taken back, so the next look says it again, and keeps it then.
#[tokio::test]
async fn a_warning_whose_event_failed_is_said_again_at_the_next_look() {
    let broken = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::TIMEZONE, "Mars/Olympus"),
    ];
    let cause = schedule::refused_cause(&crate::schedule::test_support::annotations(&broken));
    let told = [broken[0], broken[1], (schedule::WARNED, cause.as_str())];
    let note = "no scheduled scaling until the annotations are fixed: cronscaler.dev/timezone: \
                \"Mars/Olympus\" is not an IANA time zone name";
    let script = vec![
        get(APP_0, app_0(2, &broken)),
        warned_patch(&cause, app_0(2, &told)),
        event("load-0", "Warning", "InvalidSchedule", note, "app-0")
            .reply_captured(crate::mock_api::EVENT_INVALID),
        scale_patch(
            APP_0,
            json!({ "metadata": { "labels": { (schedule::WARNED): null } } }),
            app_0(2, &broken),
        ),
        get(APP_0, app_0(2, &broken)),
        warned_patch(&cause, app_0(2, &told)),
        event("load-0", "Warning", "InvalidSchedule", note, "app-0"),
    ];
    reconcile_ok(
        deployment_target(),
        &[at(21, 0, 0), at(21, 5, 0)],
        false,
        script,
    )
    .await;
}

/// Several long problems make a note the API server would refuse: it names the first ones
/// and counts the rest.
#[tokio::test]
async fn an_invalid_schedule_with_many_problems_is_told_in_an_event_that_fits() {
    let junk = |c: char| format!("{} 20 * * *", c.to_string().repeat(300));
    let (down, up, window) = (junk('a'), junk('b'), junk('c'));
    let broken = [
        (schedule::SCALE_DOWN, down.as_str()),
        (schedule::SCALE_UP, up.as_str()),
        (schedule::UPTIME, window.as_str()),
        (schedule::TIMEZONE, "Mars/Olympus"),
    ];
    let cause = schedule::refused_cause(&crate::schedule::test_support::annotations(&broken));
    let told: Vec<(&str, &str)> = broken
        .iter()
        .copied()
        .chain([(schedule::WARNED, cause.as_str())])
        .collect();
    let script = vec![
        get(APP_0, app_0(2, &broken)),
        warned_patch(&cause, app_0(2, &told)),
        Exchange::new("POST", crate::mock_api::events_path("load-0"))
            .body(json!({ "type": "Warning", "reason": "InvalidSchedule" }))
            .reply(201, json!({})),
    ];
    reconcile_ok(deployment_target(), &[at(21, 0, 0)], false, script).await;
}

/// A Namespace of 40 workloads slept at once: its Event names the first and counts the rest,
/// within the 1,024 bytes the API server takes.
#[tokio::test]
async fn a_namespace_report_of_forty_workloads_fits_in_an_event() {
    let (client, server) = mock_client();
    let named: Vec<String> = (0..27)
        .map(|n| format!("Deployment checkout-frontend-{n:02}"))
        .collect();
    let note = format!(
        "slept 40 workloads ({}, and 13 more) by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) \
         at 2026-11-23T20:00:00Z",
        named.join(", ")
    );
    let server = tokio::spawn(server.serve(vec![
        Exchange::new("POST", crate::mock_api::events_path("default"))
            .body(json!({
                "type": "Normal",
                "reason": "NamespaceScaledDown",
                "note": note,
                "regarding": { "kind": "Namespace", "name": "staging" },
            }))
            .reply(201, json!({})),
    ]));
    let queue = crate::runtime::workqueue::WorkQueue::<ScalingKey>::new(Default::default());
    let ctx =
        crate::scaling::test_support::context(client, false).with_reports(Enqueue::new(queue));
    let night = Transition {
        at: at(20, 0, 0),
        direction: Direction::Down,
        until: None,
    };
    let Some((reports, _)) = &ctx.transitions.reports else {
        panic!("reports gathered");
    };
    let quiet_since = Instant::now()
        .checked_sub(QUIET)
        .expect("a clock running for 5 s");
    for n in 0..40 {
        let object = format!("Deployment checkout-frontend-{n:02}");
        reports.record(
            "staging",
            night,
            "cronscaler.dev/scale-down \"0 20 * * *\" (UTC)",
            object,
            WorkloadOutcome::Changed,
            quiet_since,
        );
    }
    report_namespace(&ctx, "staging", night, night.at).await;
    drop(ctx);
    server.await.unwrap();
}

/// Reconciles `app_0` at 20:00, its watch having last delivered `before`; every look succeeds.
async fn reconcile_watched(before: &Value, script: Vec<Exchange>) {
    let seen = watched(before);
    let results = crate::scaling::test_support::reconcile_scripted(
        &deployment_target(),
        &[at(20, 0, 0)],
        false,
        script,
        |ctx| ctx.with_last_seen(seen),
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// What the watch of `load-0/app-0` last delivered: the object as `object` has it.
fn watched(object: &Value) -> LastSeen {
    let seen = LastSeen::default();
    let watched: crate::workloads::watched_object::WatchedObject =
        serde_json::from_value(object.clone()).unwrap();
    seen.keep(deployment_target(), &watched.state(TargetKind::Deployment));
    seen
}

/// The scale-down of `app_0` at 20:00 from 2 replicas, guarded by `resource_version`.
fn scale_down_from_2(resource_version: &str) -> Value {
    json!({
        "metadata": {
            "resourceVersion": resource_version,
            "annotations": {
                "cronscaler.dev/original-replicas": "2",
                "cronscaler.dev/last-transition": "2026-11-23T20:00:00Z down",
            },
        },
        "spec": { "replicas": 0 },
    })
}

/// The `ScaledDown` Event of that scale-down.
fn scaled_down_from_2() -> Exchange {
    event(
        "load-0",
        "Normal",
        "ScaledDown",
        "scaled down from 2 to 0 replicas by cronscaler.dev/scale-down \"0 20 * * *\" (UTC) at 2026-11-23T20:00:00Z",
        "app-0",
    )
}

#[tokio::test]
async fn a_transition_planned_on_what_the_watch_delivered_is_one_patch_and_one_event() {
    let before = app_0(2, &NIGHTLY);
    let script = vec![
        scale_patch(APP_0, scale_down_from_2("10464"), before.clone()),
        scaled_down_from_2(),
    ];
    reconcile_watched(&before, script).await;
}

/// Where OpenCost prices nodes, a sleep reads where its Pods run (its Namespace's Pods on a
/// node, once) before the patch that stops them, which records it; refused, the plan made again
/// on the object as read reads them no more.
#[tokio::test]
async fn a_sleep_where_opencost_prices_nodes_reads_its_pods_before_its_patch_once() {
    let before = app_0(2, &NIGHTLY);
    let mut now = before.clone();
    now["metadata"]["resourceVersion"] = json!("10470");
    let recorded = |version: &str| {
        let mut body = scale_down_from_2(version);
        body["metadata"]["annotations"][schedule::RAN_ON] = json!("2026-11-23T20:00:00Z node-a=1");
        body
    };
    let script = vec![
        crate::mock_api::pods_table("load-0", &[("app-0-7d9f8c6b5-x2kqz", "node-a")]),
        refused_patch(recorded("10464")),
        get(APP_0, now.clone()),
        scale_patch(APP_0, recorded("10470"), now),
        scaled_down_from_2(),
    ];
    let seen = watched(&before);
    let results = crate::scaling::test_support::reconcile_scripted(
        &deployment_target(),
        &[at(20, 0, 0)],
        false,
        script,
        |ctx| {
            let queue = crate::runtime::workqueue::WorkQueue::<ScalingKey>::new(Default::default());
            let savings =
                Savings::new(None, Enqueue::new(queue)).recording_pods(ctx.client.clone());
            ctx.with_last_seen(seen).with_savings(savings)
        },
    )
    .await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// The watch had not yet delivered the object's latest change (here a status update): the
/// guarded patch is refused, the object read once, and the plan made again on it.
#[tokio::test]
async fn a_conflict_on_what_the_watch_delivered_reads_the_object_once_and_plans_again() {
    let before = app_0(2, &NIGHTLY);
    let mut now = before.clone();
    now["metadata"]["resourceVersion"] = json!("10470");
    let script = vec![
        refused_patch(scale_down_from_2("10464")),
        get(APP_0, now.clone()),
        scale_patch(APP_0, scale_down_from_2("10470"), now),
        scaled_down_from_2(),
    ];
    reconcile_watched(&before, script).await;
}

/// A warning planned on what the watch delivered before its cause was written by the last look
/// (a worker's look right after it): the guarded record is refused, the object read, and the
/// warning is not said a second time.
#[tokio::test]
async fn a_warning_planned_on_a_state_the_watch_had_not_yet_updated_is_not_said_twice() {
    let broken = [
        (schedule::SCALE_DOWN, "0 20 * * *"),
        (schedule::TIMEZONE, "Mars/Olympus"),
    ];
    let cause = schedule::refused_cause(&crate::schedule::test_support::annotations(&broken));
    let told = [broken[0], broken[1], (schedule::WARNED, cause.as_str())];
    let mut now = app_0(2, &told);
    now["metadata"]["resourceVersion"] = json!("10470");
    let script = vec![
        refused_patch(json!({
            "metadata": { "resourceVersion": "10464", "labels": { (schedule::WARNED): cause } },
        })),
        get(APP_0, now),
    ];
    reconcile_watched(&app_0(2, &broken), script).await;
}

mod owner_release;
