//! Feeding watch events to handlers, and noticing when a failing watch recovers.

use std::time::Duration;

use futures::TryStreamExt;
use kube::runtime::{utils::Backoff, watcher};
use tokio::time::Instant;

use crate::{
    runtime::api_errors::{is_status, server_unavailable, status_unavailable},
    runtime::outage::Outage,
};

/// Watch retry delays: 0.5 s doubling to at most [`MAX_WATCH_BACKOFF`], starting over once the
/// watch has answered for [`ANSWERING_FOR`]. kube's default grows to 30 s, which left a
/// transition waiting half a minute after an API server came back; this resumes a watch within
/// seconds and still costs a down server one request every few seconds.
pub struct WatchBackoff {
    next: Duration,
    /// When the watch last started to answer again, since its last failure.
    answering_since: Option<Instant>,
}

pub const MIN_WATCH_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_WATCH_BACKOFF: Duration = Duration::from_secs(4);
/// How long a watch must answer before its next failure is retried quickly again. The watcher
/// answers every retry with an `Init` event before its list fails (a CRD not installed, a
/// resource RBAC does not grant), so starting over at each answer would retry every 0.5 s
/// forever.
pub const ANSWERING_FOR: Duration = Duration::from_secs(30);

impl Default for WatchBackoff {
    fn default() -> Self {
        Self {
            next: MIN_WATCH_BACKOFF,
            answering_since: None,
        }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self
            .answering_since
            .take()
            .is_some_and(|since| since.elapsed() >= ANSWERING_FOR)
        {
            self.next = MIN_WATCH_BACKOFF;
        }
        let delay = self.next;
        self.next = (delay * 2).min(MAX_WATCH_BACKOFF);
        Some(delay)
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.answering_since.get_or_insert_with(Instant::now);
    }
}

/// Hands every event of a watch to `on_event`. A failing watch (the watcher backs off and
/// resumes by itself) is reported as a possible outage, so the work that waits for the API
/// server is retried the moment it answers; the failure is logged once, not at every retry.
pub async fn drive<K, S>(
    stream: S,
    what: &'static str,
    outage: Outage,
    mut on_event: impl FnMut(&watcher::Event<K>),
) where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    futures::pin_mut!(stream);
    let mut failing = false;
    loop {
        match stream.try_next().await {
            Ok(Some(event)) => {
                // Every retry starts with `Init`, before the list that may fail again.
                if !matches!(event, watcher::Event::Init) && std::mem::take(&mut failing) {
                    tracing::info!("watch of {what} recovered");
                }
                on_event(&event);
            }
            Ok(None) => return,
            Err(error) => {
                let cause = watch_failure_cause(&error);
                if cause.is_none() {
                    outage.report();
                }
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!(%error, "watch of {what} failed{}; retrying every few seconds", cause.unwrap_or_default());
                } else {
                    tracing::debug!(%error, "watch of {what} still failing");
                }
            }
        }
    }
}

/// What a watch failure means, when the API server answered: the watch fails for a reason of
/// its own, not an outage. `None` when the server did not answer or cannot serve now.
fn watch_failure_cause(error: &watcher::Error) -> Option<&'static str> {
    let answer = match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => error,
        watcher::Error::WatchError(status) => {
            return (!status_unavailable(status)).then_some("");
        }
        watcher::Error::NoResourceVersion => return Some(""),
    };
    if server_unavailable(answer) {
        None
    } else if is_status(answer, 404) {
        Some(
            " (the API server does not serve them: is the CRD installed? They are taken up as soon as it is)",
        )
    } else if is_status(answer, 403) {
        Some(" (forbidden: check the controller's RBAC)")
    } else {
        Some("")
    }
}

/// Whether a watch failed because the controller may not list or watch what it watches.
pub fn is_forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(error)
        | watcher::Error::WatchStartFailed(error)
        | watcher::Error::WatchFailed(error) => is_status(error, 403),
        watcher::Error::WatchError(status) => status.code == 403,
        watcher::Error::NoResourceVersion => false,
    }
}

/// The objects an event reports as added, changed or deleted.
pub fn touched<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(object)
        | watcher::Event::InitApply(object)
        | watcher::Event::Delete(object) => Some(object),
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    use super::*;
    use crate::{
        mock_api::{Exchange, mock_client},
        runtime::{
            key::ObjectKey,
            outage::PROBE_INTERVAL,
            workqueue::{RateLimit, WorkQueue},
        },
    };

    fn version() -> serde_json::Value {
        // As a v1.26 API server answers GET /version.
        json!({
            "major": "1", "minor": "26", "gitVersion": "v1.26.0",
            "gitCommit": "b46a3f887ca979b1a5d14fd39cb1af43e7e5d12d", "gitTreeState": "clean",
            "buildDate": "2022-12-08T19:51:43Z", "goVersion": "go1.19.4", "compiler": "gc",
            "platform": "linux/amd64",
        })
    }

    async fn ready_now(queue: &WorkQueue<ObjectKey>) -> Option<ObjectKey> {
        tokio::time::timeout(Duration::ZERO, queue.get())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_that_answers_only_to_fail_again_backs_off_and_one_that_recovered_retries_soon()
    {
        let mut backoff = WatchBackoff::default();
        let mut delays = Vec::new();
        for _ in 0..5 {
            // The watcher's `Init` resets the backoff, then its list fails again.
            backoff.reset();
            delays.push(backoff.next().unwrap());
        }
        assert_eq!(
            delays.iter().map(Duration::as_millis).collect::<Vec<_>>(),
            [500, 1000, 2000, 4000, 4000],
            "a CRD not installed is asked for every 4 s, not every 0.5 s"
        );
        backoff.reset();
        tokio::time::advance(ANSWERING_FOR).await;
        assert_eq!(
            backoff.next(),
            Some(MIN_WATCH_BACKOFF),
            "answered long enough: quick again"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_has_waiting_work_retried_as_soon_as_the_server_answers() {
        // Failures back off 30 s here, longer than the two probes the outage lasts.
        let queue = WorkQueue::<ObjectKey>::new(RateLimit {
            base_delay: Duration::from_secs(30),
            ..RateLimit::default()
        });
        let failed = ObjectKey::new("shop", "web");
        let parked = ObjectKey::new("shop", "api");
        queue.add_rate_limited(failed.clone());
        queue.park(parked.clone());
        let (client, server) = mock_client();
        let unavailable = json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "the server is shutting down", "reason": "ServiceUnavailable", "code": 503 });
        let server = tokio::spawn(server.serve(vec![
            Exchange::new("GET", "/version").reply(503, unavailable),
            Exchange::new("GET", "/version").reply(200, version()),
        ]));
        let outage = Outage::default();
        let probe = tokio::spawn(outage.clone().probe(client, queue.clone()));

        let refused = Box::new(tower::BoxError::from("connection refused"));
        let failure = futures::stream::iter(vec![Err::<watcher::Event<Deployment>, _>(
            watcher::Error::WatchFailed(kube::Error::Service(*refused)),
        )]);
        drive(failure, "Deployments", outage, |_| {}).await;
        tokio::time::sleep(PROBE_INTERVAL - Duration::from_millis(500)).await;
        assert_eq!(
            ready_now(&queue).await,
            None,
            "the server did not answer yet"
        );
        // The second probe, and the moment it takes the mock server to answer.
        tokio::time::sleep(PROBE_INTERVAL + Duration::from_secs(1)).await;
        let mut back = vec![ready_now(&queue).await, ready_now(&queue).await];
        back.sort_by_key(|key| key.as_ref().map(ToString::to_string));
        assert_eq!(
            back,
            vec![Some(parked), Some(failed)],
            "both retried two probes after the outage began, not in 30 s"
        );
        probe.abort();
        let _ = probe.await;
        server.await.unwrap();
    }

    #[test]
    fn watch_retries_grow_to_a_few_seconds() {
        let delays: Vec<Duration> = WatchBackoff::default().take(6).collect();
        assert_eq!(
            delays,
            [500, 1000, 2000, 4000, 4000, 4000].map(Duration::from_millis)
        );
    }

    #[test]
    fn a_watch_refused_by_rbac_is_told_from_one_that_failed_otherwise() {
        let answer = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                message: "nodes is forbidden".into(),
                ..kube::core::Status::default()
            }))
        };
        assert!(is_forbidden(&watcher::Error::InitialListFailed(answer(
            403
        ))));
        assert!(is_forbidden(&watcher::Error::WatchStartFailed(answer(403))));
        assert!(!is_forbidden(&watcher::Error::InitialListFailed(answer(
            500
        ))));
        assert!(!is_forbidden(&watcher::Error::NoResourceVersion));
    }
}
