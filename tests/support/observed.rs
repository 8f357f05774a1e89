//! What a user would see, and waiting for it: polling until something holds, Events as
//! `kubectl describe` shows them, metrics, replicas and annotations, a Lease's holder.

use std::{collections::BTreeMap, future::Future, time::Duration};

use chrono::{DateTime, Utc};
use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease, events::v1::Event};
use kube::{Api, Client, ResourceExt as _, api::ListParams};

/// The value of a metric without labels in Prometheus text, e.g. `cronscaler_workqueue_depth`.
pub fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// Polls `check` every 250 ms until it yields a value, or panics after `timeout` naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match poll_until(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `check` every 250 ms until it yields a value, or `None` after `timeout`.
pub async fn poll_until<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Events with `reason`, counting a series (an Event the recorder repeated) as its count: what
/// "happened N times" means in `kubectl describe`.
pub fn occurrences(events: &[Event], reason: &str) -> i32 {
    events
        .iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .map(|event| event.series.as_ref().map_or(1, |series| series.count))
        .sum()
}

/// Asserts `reason` was said `count` times in `events`, as [`occurrences`] counts them, failing
/// with `what` and the Events as `kubectl describe` shows them.
pub fn assert_occurrences(events: &[Event], reason: &str, count: i32, what: &str) {
    assert_eq!(
        occurrences(events, reason),
        count,
        "{what}:\n{}",
        describe(events)
    );
}

/// When the Event was emitted (its `eventTime`, to the microsecond).
pub fn event_time(event: &Event) -> Option<DateTime<Utc>> {
    let at = &event.event_time.as_ref()?.0;
    DateTime::from_timestamp(at.as_second(), u32::try_from(at.subsec_nanosecond()).ok()?)
}

/// When the Event last happened: a series (the recorder repeating an Event of the same reason)
/// keeps the first `eventTime` and moves `series.lastObservedTime`.
pub fn last_seen(event: &Event) -> Option<DateTime<Utc>> {
    match &event.series {
        Some(series) => {
            let at = &series.last_observed_time.0;
            DateTime::from_timestamp(at.as_second(), u32::try_from(at.subsec_nanosecond()).ok()?)
        }
        None => event_time(event),
    }
}

/// Events as one line each, for failure messages.
pub fn describe(events: &[Event]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "  {} {} (x{}) by {}: {}",
                event.type_.as_deref().unwrap_or_default(),
                event.reason.as_deref().unwrap_or_default(),
                event.series.as_ref().map_or(1, |series| series.count),
                event.reporting_instance.as_deref().unwrap_or_default(),
                event.note.as_deref().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Events about the object `name` in `namespace`, as `kubectl describe` shows them.
pub async fn events_in(client: &Client, namespace: &str, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    found.sort_by_key(|event| event.metadata.creation_timestamp.clone());
    found
}

/// Replicas and annotations of a Deployment, as `kubectl get -o yaml` shows them.
pub async fn replicas_and_annotations(
    deployments: &Api<Deployment>,
    name: &str,
) -> Option<(i32, BTreeMap<String, String>)> {
    let deployment = deployments.get(name).await.ok()?;
    let replicas = deployment.spec.as_ref()?.replicas?;
    Some((replicas, deployment.annotations().clone()))
}

/// The replicas of the Deployment `name` now, as `kubectl get` shows them; the test fails
/// naming `what` should it be gone.
pub async fn replicas_now(deployments: &Api<Deployment>, name: &str, what: &str) -> i32 {
    let (replicas, _) = replicas_and_annotations(deployments, name)
        .await
        .expect(what);
    replicas
}

/// Waits until the Deployment `name` has `replicas`, as `kubectl get` shows it, or fails naming
/// `what` after `within`: its annotations then.
pub async fn replicas_become(
    deployments: &Api<Deployment>,
    name: &str,
    replicas: i32,
    what: &str,
    within: Duration,
) -> BTreeMap<String, String> {
    eventually(what, within, || async {
        let (now, annotations) = replicas_and_annotations(deployments, name).await?;
        (now == replicas).then_some(annotations)
    })
    .await
}

/// The holder of a Lease, if anyone holds it.
pub async fn lease_holder(client: &Client, namespace: &str, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases
        .get(name)
        .await
        .ok()?
        .spec?
        .holder_identity
        .filter(|holder| !holder.is_empty())
}
