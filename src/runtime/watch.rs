//! Feeding watch events to handlers, and noticing when a failing watch recovers.

use futures::TryStreamExt;
use kube::runtime::watcher;

use crate::runtime::{key::WorkKey, workqueue::WorkQueue};

/// Hands every event of a watch to `on_event`, logging watch failures (the watcher backs off
/// and resumes by itself). When a failing watch recovers, the API server is back: keys that
/// failed meanwhile are retried at once instead of at the end of their backoff, so a transition
/// missed during an outage is applied as soon as it can be.
pub async fn drive<K, S>(
    stream: S,
    what: &'static str,
    queue: WorkQueue<WorkKey>,
    mut on_event: impl FnMut(&watcher::Event<K>),
) where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    futures::pin_mut!(stream);
    let mut failing = false;
    loop {
        match stream.try_next().await {
            Ok(Some(event)) => {
                if std::mem::take(&mut failing) {
                    tracing::info!("watch of {what} recovered; retrying failed work now");
                    queue.retry_failed_now();
                }
                on_event(&event);
            }
            Ok(None) => return,
            Err(error) => {
                failing = true;
                tracing::warn!(%error, "watch of {what} failed; retrying");
            }
        }
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

    use super::*;
    use crate::runtime::{key::ObjectKey, workqueue::RateLimit};

    #[tokio::test(start_paused = true)]
    async fn a_watch_that_recovers_has_failed_work_retried_at_once() {
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        let failed = WorkKey::Foo(ObjectKey::new("shop", "web"));
        // Ten failures during an outage: the next try is 5 s away.
        for _ in 0..10 {
            queue.add_rate_limited(failed.clone());
        }
        let outage_then_recovery = futures::stream::iter(vec![
            Err(watcher::Error::NoResourceVersion),
            Ok(watcher::Event::<Deployment>::Init),
        ]);
        let mut seen = 0;
        drive(outage_then_recovery, "Deployments", queue.clone(), |_| {
            seen += 1
        })
        .await;
        assert_eq!(seen, 1, "every event still reaches its handler");
        let ready = tokio::time::timeout(std::time::Duration::ZERO, queue.get()).await;
        assert_eq!(
            ready.ok().flatten(),
            Some(failed),
            "retried at once, not in 5 s"
        );
    }
}
