use chrono::TimeZone as _;
use serde_json::json;

use super::*;
use crate::{
    mock_api::{Exchange, events_path, mock_client},
    namespaces::NamespaceSchedules,
    runtime::worker::Next,
    scaling::test_support::context,
    schedule::{ASLEEP_UNTIL, IDLE_SINCE, UPTIME, WAKE_ON_REQUEST, test_support::annotations},
};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 14, 32, 0).unwrap()
}

fn shop() -> NamespaceSchedules {
    let namespaces = NamespaceSchedules::default();
    namespaces.update(
        "shop",
        None,
        &annotations(&[
            (UPTIME, "Mon-Sun 00:00-24:00"),
            (IDLE_AFTER, "30m"),
            (WAKE_ON_REQUEST, "2h"),
        ]),
    );
    namespaces
}

const NONE: &str = "[]";
const SOME: &str = r#"[{"metric":{},"value":[1764081120,"1"]}]"#;

/// A Prometheus that answers a count with `count` and a proof that the source counts with
/// `proof`, and counts the queries.
async fn prometheus(count: &'static str, proof: &'static str) -> (Prometheus, Arc<Mutex<u32>>) {
    let asked = Arc::new(Mutex::new(0));
    let counted = asked.clone();
    let prometheus = crate::activity::fake::prometheus(move |query| {
        *counted.lock().unwrap() += 1;
        Ok(match query.contains("count_over_time") {
            true => proof,
            false => count,
        }
        .to_string())
    })
    .await;
    (prometheus, asked)
}

fn counter(prometheus: &Prometheus) -> Option<Counter> {
    Some(Counter {
        prometheus: prometheus.clone(),
        query: "ingress-nginx".parse().unwrap(),
    })
}

#[tokio::test]
async fn idle_past_its_grace_it_is_put_to_sleep_and_then_left_alone() {
    let (prometheus, asked) = prometheus(NONE, SOME).await;
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
            Exchange::new(
                "PATCH",
                "/api/v1/namespaces/shop?&fieldManager=cronscaler",
            )
            .content_type("application/json-patch+json")
            .body(json!([
                { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1awake-until", "value": null },
                { "op": "test", "path": "/metadata/annotations/cronscaler.dev~1asleep-until", "value": null },
                { "op": "add", "path": "/metadata/annotations/cronscaler.dev~1asleep-until", "value": "2026-11-26T14:32:00Z" },
                { "op": "add", "path": "/metadata/annotations/cronscaler.dev~1idle-since", "value": "2026-11-25T14:02:00Z" },
            ]))
            .reply(200, json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "shop" } })),
            Exchange::new("POST", events_path("default"))
                .body(json!({
                    "type": "Normal",
                    "reason": "IdleSleep",
                    "note": "no requests for 30m: asleep until the next request or `cronscaler wake`, at most until 2026-11-26T14:32:00Z",
                    "regarding": { "kind": "Namespace", "name": "shop" },
                }))
                .reply(201, json!({})),
        ]));
    let started = now() - TimeDelta::hours(2);
    let mut ctx = context(client, false).with_namespaces(shop());
    let activity = Activity::new(counter(&prometheus), started);
    ctx.max_override = TimeDelta::hours(24);
    // A deploy an hour ago is long past the grace: nothing used it for 30 minutes.
    activity.used("shop", now() - TimeDelta::hours(1));
    let again = look(&ctx, &activity, "shop", now()).await.expect("slept");
    assert_eq!(
        again,
        Next::At(now() + TimeDelta::seconds(60)),
        "once more, to be sure"
    );
    // The write's echo: asleep, nothing is counted or written.
    let mut slept = ctx.namespaces.annotations_of("shop").unwrap();
    slept.insert(ASLEEP_UNTIL.into(), "2026-11-26T14:32:00Z".into());
    slept.insert(IDLE_SINCE.into(), "2026-11-25T14:02:00Z".into());
    ctx.namespaces.update("shop", None, &slept);
    let again = look(&ctx, &activity, "shop", now() + TimeDelta::seconds(5)).await;
    assert_eq!(
        again.expect("looked"),
        Next::At(now() + TimeDelta::hours(24)),
        "looked at again when the idle sleep ends"
    );
    assert_eq!(*asked.lock().unwrap(), 2, "the count and its proof");
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn requests_keep_it_up_and_are_counted_at_most_once_a_minute() {
    let (prometheus, asked) = prometheus(r#"[{"metric":{},"value":[1764081120,"4"]}]"#, NONE).await;
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![]));
    let ctx = context(client, false).with_namespaces(shop());
    let activity = Activity::new(counter(&prometheus), now() - TimeDelta::hours(2));
    for (seconds, again, queries) in [(0, 60, 1), (5, 60, 1), (61, 60, 2)] {
        let looked = look(&ctx, &activity, "shop", now() + TimeDelta::seconds(seconds)).await;
        assert_eq!(
            looked.expect("looked"),
            Next::At(now() + TimeDelta::seconds(seconds + again))
        );
        assert_eq!(*asked.lock().unwrap(), queries, "{seconds}s in");
    }
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn no_request_from_a_source_not_counting_sleeps_nothing_and_its_proof_is_asked_once_for_all()
{
    let (prometheus, asked) = prometheus(NONE, NONE).await;
    let (client, server) = mock_client();
    let url = prometheus.url().to_string();
    let warning = |namespace: &str| {
        Exchange::new("POST", events_path("default"))
            .body(json!({
                "type": "Warning",
                "reason": "IdleUnknown",
                "note": format!(
                    "requests could not be counted, so nothing sleeps for idleness until \
                     they can: Prometheus at {url} does not show \
                     nginx_ingress_controller_requests scraped now, 30m ago and twice in \
                     between, so no request counted proves nothing"
                ),
                "regarding": { "kind": "Namespace", "name": namespace },
            }))
            .reply(201, json!({}))
    };
    let server = tokio::spawn(server.serve(vec![warning("shop"), warning("shoe")]));
    let namespaces = shop();
    let idle = namespaces.annotations_of("shop").unwrap();
    namespaces.update("shoe", None, &idle);
    let ctx = context(client, false).with_namespaces(namespaces);
    let activity = Activity::new(counter(&prometheus), now() - TimeDelta::hours(2));
    for namespace in ["shop", "shoe"] {
        let again = look(&ctx, &activity, namespace, now())
            .await
            .expect("looked");
        assert_eq!(
            again,
            Next::At(now() + TimeDelta::seconds(60)),
            "{namespace}"
        );
    }
    assert_eq!(
        *asked.lock().unwrap(),
        3,
        "a count each, one proof for both"
    );
    drop(ctx);
    server.await.unwrap();
}

#[test]
fn only_uses_since_the_start_are_kept_and_a_namespace_s_go_with_it() {
    let started = now() - TimeDelta::hours(2);
    let activity = Activity::new(None, started);
    activity.used("shop", started - TimeDelta::days(30));
    assert_eq!(activity.used_at("shop"), started);
    assert!(
        activity.seen().used.is_empty(),
        "nothing kept of a Namespace made before the start"
    );
    let created = started + TimeDelta::minutes(5);
    activity.used("shop", created);
    assert_eq!(activity.used_at("shop"), created, "made since");
    activity.forget("shop");
    assert!(activity.seen().used.is_empty(), "deleted");
}

#[tokio::test]
async fn a_deploy_within_the_grace_asks_nothing_and_looks_again_when_it_ends() {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![]));
    let ctx = context(client, false).with_namespaces(shop());
    let activity = Activity::new(None, now() - TimeDelta::hours(2));
    activity.used("shop", now() - TimeDelta::minutes(10));
    let again = look(&ctx, &activity, "shop", now()).await.expect("looked");
    assert_eq!(again, Next::At(now() + TimeDelta::minutes(20)));
    drop(ctx);
    server.await.unwrap();
}

#[tokio::test]
async fn without_prometheus_the_namespace_is_told_once_and_nothing_sleeps() {
    let (client, server) = mock_client();
    let server = tokio::spawn(server.serve(vec![
            Exchange::new("POST", events_path("default"))
                .body(json!({
                    "type": "Warning",
                    "reason": "IdleUnknown",
                    "note": "requests could not be counted, so nothing sleeps for idleness until they can: no Prometheus to count them is set (--prometheus-url)",
                    "regarding": { "kind": "Namespace", "name": "shop" },
                }))
                .reply(201, json!({})),
        ]));
    let ctx = context(client, false).with_namespaces(shop());
    let activity = Activity::new(None, now() - TimeDelta::hours(2));
    for minutes in [0, 1, 2] {
        let again = look(&ctx, &activity, "shop", now() + TimeDelta::minutes(minutes))
            .await
            .expect("looked");
        assert_eq!(
            again,
            Next::At(now() + TimeDelta::minutes(minutes) + TimeDelta::seconds(60))
        );
    }
    drop(ctx);
    server.await.unwrap();
}
