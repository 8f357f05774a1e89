//! What acting on a request sends: the Namespace's patch signed with who asked, the Event, the
//! answer; the removal an hour on; a request gone meanwhile. The rules are `plan`'s, in its tests.

use kube::{
    CustomResourceExt,
    runtime::{reflector, watcher},
};
use serde_json::json;

use super::*;
use crate::{
    mock_api::{Exchange, events_path, mock_client},
    schedule::{UPTIME, test_support::at},
};

const NIGHT: &str = "2026-11-23T21:00:00Z";
const REQUEST: &str = "/apis/cronscaler.dev/v1alpha1/namespaces/team-a/overriderequests/wake-1";

fn request(status: Option<OverrideRequestStatus>) -> OverrideRequest {
    serde_json::from_value(json!({
        "apiVersion": "cronscaler.dev/v1alpha1", "kind": "OverrideRequest",
        "metadata": {
            "name": "wake-1", "namespace": "team-a", "uid": "uid-1",
            "creationTimestamp": NIGHT,
        },
        "spec": { "state": "awake", "for": "2h", "by": "alice", "means": "kubectl" },
        "status": status,
    }))
    .unwrap()
}

/// Carries out `request` at `now` against a server answering `script`.
async fn carried_out(request: OverrideRequest, now: &str, script: Vec<Exchange>) -> Next {
    carried_out_in(NamespaceSchedules::watched([]), vec![request], now, script).await
}

/// [`carried_out`] of the first of `requests` (all of them watched), by a controller that
/// follows `namespaces` (team-a among them, scheduled).
async fn carried_out_in(
    namespaces: NamespaceSchedules,
    requests: Vec<OverrideRequest>,
    now: &str,
    script: Vec<Exchange>,
) -> Next {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(script));
    let (store, mut writer) = reflector::store();
    for request in requests {
        writer.apply_watcher_event(&watcher::Event::Apply(request));
    }
    namespaces.update(
        "team-a",
        None,
        &[(UPTIME.to_string(), "Mon-Fri 07:00-20:00".to_string())].into(),
    );
    namespaces.set_labels("team-a", &Default::default());
    let carrying = Carrying {
        client: client.clone(),
        namespaces,
        default_timezone: Tz::UTC,
        max_override: TimeDelta::hours(24),
        writes: Writes::new(crate::runtime::events::Events::new(client, None), false),
        listed: watch::channel(true).1,
        budget: std::sync::Arc::new(crate::runtime::budget::TokenBucket::new(100.0, 100)),
    };
    let requests = carrying.requests(store);
    let next = reconcile(&requests, &ObjectKey::new("team-a", "wake-1"), at(now))
        .await
        .unwrap();
    drop((requests, carrying));
    server.await.unwrap();
    next
}

#[tokio::test]
async fn a_wake_is_written_signed_by_who_asked_told_and_answered() {
    let next = carried_out(
        request(None),
        NIGHT,
        vec![
            Exchange::new(
                "PATCH",
                "/api/v1/namespaces/team-a?&fieldManager=alice+%28kubectl%29",
            )
            .content_type("application/merge-patch+json")
            .body(json!({ "metadata": { "annotations": {
                    "cronscaler.dev/awake-until": "2026-11-23T23:00:00Z",
                } } }))
            .reply(200, json!({})),
            Exchange::new("POST", events_path("team-a"))
                .body(json!({
                    "reason": "OverrideRequested",
                    "regarding": { "kind": "OverrideRequest", "name": "wake-1" },
                    "note": "Namespace team-a woken until 2026-11-23T23:00:00Z (2h from now), \
                             asked by alice (kubectl)",
                }))
                .reply(201, json!({})),
            Exchange::new(
                "PATCH",
                format!("{REQUEST}/status?&fieldManager=cronscaler"),
            )
            .body(json!({ "status": {
                    "phase": "Done",
                    "message": "Namespace team-a is awake until 2026-11-23T23:00:00Z (2h from now)",
                    "until": "2026-11-23T23:00:00Z",
                } }))
            .reply(200, serde_json::to_value(request(None)).unwrap()),
        ],
    )
    .await;
    assert_eq!(next, Next::Done, "the answer's watch event brings it back");
}

#[tokio::test]
async fn an_answered_request_waits_an_hour_then_is_removed_if_still_the_same() {
    let done = Some(OverrideRequestStatus {
        phase: Some(Phase::Done),
        ..OverrideRequestStatus::default()
    });
    let later = carried_out(request(done.clone()), "2026-11-23T21:30:00Z", vec![]).await;
    assert_eq!(later, Next::At(at("2026-11-23T22:00:00Z")));
    let removed = carried_out(
        request(done),
        "2026-11-23T22:00:00Z",
        vec![
            Exchange::new("DELETE", format!("{REQUEST}?"))
                .body(json!({ "preconditions": { "uid": "uid-1" } }))
                .reply(
                    409,
                    json!({ "kind": "Status", "code": 409, "reason": "Conflict" }),
                ),
        ],
    )
    .await;
    assert_eq!(
        removed,
        Next::Done,
        "a newer request of that name is its own"
    );
}

#[tokio::test]
async fn a_request_removed_before_its_answer_is_done_with() {
    let refused = OverrideRequest {
        spec: OverrideRequestSpec {
            for_: Some("2 hours please".into()),
            ..request(None).spec
        },
        ..request(None)
    };
    let next = carried_out(
        refused,
        NIGHT,
        vec![
            Exchange::new(
                "PATCH",
                format!("{REQUEST}/status?&fieldManager=cronscaler"),
            )
            .body(json!({ "status": { "phase": "Refused" } }))
            .reply(
                404,
                json!({ "kind": "Status", "code": 404, "reason": "NotFound" }),
            ),
        ],
    )
    .await;
    assert_eq!(next, Next::Done);
}

#[test]
fn the_committed_crd_manifest_matches_the_rust_type() {
    let generated = serde_norway::to_string(&OverrideRequest::crd()).unwrap();
    crate::committed::assert_committed("manifests/09-override-request-crd.yaml", &generated);
}

/// The answer of a request refused with `message`, written as its status.
fn refused_answer(message: &str) -> Exchange {
    Exchange::new(
        "PATCH",
        format!("{REQUEST}/status?&fieldManager=cronscaler"),
    )
    .body(json!({ "status": { "phase": "Refused", "message": message } }))
    .reply(200, serde_json::to_value(request(None)).unwrap())
}

#[tokio::test]
async fn a_namespace_the_controller_never_touches_is_refused_and_not_written() {
    let never = NamespaceSchedules::watched(["team-a".to_string()]);
    let next = carried_out_in(
        never,
        vec![request(None)],
        NIGHT,
        vec![refused_answer(
            "Namespace team-a is not known to the controller (it never touches \
                                it, or it is gone)",
        )],
    )
    .await;
    assert_eq!(next, Next::Done);
}

#[tokio::test]
async fn of_a_burst_only_the_last_request_is_carried_out() {
    let mut later = request(None);
    later.metadata.name = Some("wake-2".into());
    later.metadata.uid = Some("uid-2".into());
    later.metadata.creation_timestamp =
        serde_json::from_value(json!("2026-11-23T21:00:01Z")).unwrap();
    let next = carried_out_in(
        NamespaceSchedules::watched([]),
        vec![request(None), later],
        "2026-11-23T21:00:02Z",
        vec![refused_answer(
            "superseded by OverrideRequest team-a/wake-2, made after it: not \
                                carried out",
        )],
    )
    .await;
    assert_eq!(next, Next::Done, "and no write to the Namespace for it");
}

#[tokio::test(start_paused = true)]
async fn under_a_flood_a_request_waits_for_the_budget_in_the_queue_not_in_a_worker() {
    let (client, server) = mock_client();
    // The scripted server fails the test on any request.
    let server = tokio::spawn(server.serve(vec![]));
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Apply(request(None)));
    let spent = std::sync::Arc::new(crate::runtime::budget::TokenBucket::new(2.0, 1));
    spent.reserve();
    let carrying = Carrying {
        client: client.clone(),
        namespaces: NamespaceSchedules::watched([]),
        default_timezone: Tz::UTC,
        max_override: TimeDelta::hours(24),
        writes: Writes::new(crate::runtime::events::Events::new(client, None), false),
        listed: watch::channel(true).1,
        budget: spent,
    };
    let requests = carrying.requests(store);
    let next = reconcile(&requests, &ObjectKey::new("team-a", "wake-1"), at(NIGHT)).await;
    assert_eq!(
        next.unwrap(),
        Next::After(std::time::Duration::from_millis(500))
    );
    drop((requests, carrying));
    server.await.unwrap();
}
