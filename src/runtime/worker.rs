//! Workers: each takes keys from the shared queue while this replica leads and hands each to the
//! reconciler of its kind. Errors are retried with per-key backoff, except those of an
//! unavailable API server, whose work waits for the server; success forgets the key's failures.

use std::{sync::Arc, time::Duration};

use futures::FutureExt as _;
use kube::runtime::reflector::store::WriterDropped;
use tokio::{sync::watch, time::Instant};

use crate::{
    error::Error,
    foo::{self, FooContext},
    ops::{
        http::AliveGuard,
        metrics::{Metrics, Outcome, ResultLabels},
    },
    runtime::{key::WorkKey, outage::Outage, workqueue::WorkQueue},
    scaling::{
        self, ScalingContext,
        reports::{QUIET, Settled},
        timer::Clock,
    },
};

/// Everything a worker may need, whatever key it takes.
pub struct Reconcilers {
    pub foo: FooContext,
    pub scale: ScalingContext,
    pub clock: Clock,
    pub metrics: Metrics,
    pub outage: Outage,
}

/// How long a Foo key waits while the Foo caches have not synced (the CRD may not be installed
/// yet); scheduled scaling never waits for them.
pub const FOO_CACHE_WAIT: Duration = Duration::from_secs(1);

/// How long a scale key waits while HPAs have not been listed: a scale-up before that would
/// leave a held HPA held all day. The list takes milliseconds, and transitions are to the second.
pub const HPA_INDEX_WAIT: Duration = Duration::from_millis(100);

/// Takes keys until the queue shuts down. While this replica leads it hands each to its
/// reconciler, and drops an in-flight reconcile the moment leadership is lost, so two replicas
/// never act at once. A standby keeps no backlog: it lets go of every key at once, because the
/// leader acts on it, and when this replica comes to lead a resync queues whatever is due then.
pub async fn worker(
    queue: WorkQueue<WorkKey>,
    reconcilers: Arc<Reconcilers>,
    mut is_leader: watch::Receiver<bool>,
    _alive: AliveGuard,
) {
    while let Some(key) = queue.get().await {
        if !*is_leader.borrow_and_update() {
            queue.forget(&key);
            queue.done(&key);
            continue;
        }
        if let WorkKey::NamespaceReport(namespace, transition) = &key {
            let settled =
                scaling::report_namespace(&reconcilers.scale, namespace, *transition).await;
            queue.done(&key);
            if settled == Settled::Wait {
                queue.add_after(key, QUIET);
            }
            continue;
        }
        if matches!(key, WorkKey::Foo(_)) && !foo_caches_synced(&reconcilers.foo) {
            queue.done(&key);
            queue.add_after(key, FOO_CACHE_WAIT);
            continue;
        }
        if matches!(key, WorkKey::Scale(_)) && !reconcilers.scale.hpas.synced() {
            queue.done(&key);
            queue.add_after(key, HPA_INDEX_WAIT);
            continue;
        }
        let outcome = tokio::select! {
            result = reconcile(&reconcilers, &key) => Some(result),
            _ = is_leader.wait_for(|leading| !*leading) => None,
        };
        match outcome {
            Some(Ok(())) => queue.forget(&key),
            Some(Err(error)) if error.is_server_unavailable() => {
                tracing::warn!(object = %key, %error, "the API server is unavailable; retried as soon as it answers");
                reconcilers.outage.report();
                queue.park(key.clone());
            }
            Some(Err(error)) => {
                tracing::warn!(object = %key, retries = queue.retries(&key), %error, "reconcile failed; retrying with backoff");
                reconcilers.metrics.workqueue_retries.inc();
                queue.add_rate_limited(key.clone());
            }
            None => {
                tracing::warn!(object = %key, "lost the lease: reconcile abandoned; the next leader resyncs");
                queue.forget(&key);
            }
        }
        queue.done(&key);
    }
}

/// Whether the Foo and owned-Deployment caches have listed once: before that, a Foo missing
/// from the cache may just not have arrived yet.
fn foo_caches_synced(foo: &FooContext) -> bool {
    let synced = |ready: Option<Result<(), WriterDropped>>| matches!(ready, Some(Ok(())));
    synced(foo.foos.wait_until_ready().now_or_never())
        && synced(foo.owned_deployments.wait_until_ready().now_or_never())
}

async fn reconcile(reconcilers: &Reconcilers, key: &WorkKey) -> Result<(), Error> {
    let now = (reconcilers.clock)();
    match key {
        WorkKey::Foo(foo) => {
            let started = Instant::now();
            let result = foo::reconcile(&reconcilers.foo, foo, now).await;
            let metrics = &reconcilers.metrics;
            metrics
                .foo_reconcile_duration
                .observe(started.elapsed().as_secs_f64());
            let outcome = if result.is_ok() {
                Outcome::Success
            } else {
                Outcome::Error
            };
            metrics
                .foo_reconciles
                .get_or_create(&ResultLabels { result: outcome })
                .inc();
            result
        }
        WorkKey::Scale(target) => scaling::reconcile(&reconcilers.scale, target, now).await,
        WorkKey::NamespaceOverride(namespace) => {
            scaling::on_demand::end_namespace_override(&reconcilers.scale, namespace, now).await
        }
        // Handled by the worker itself: it is put back, not retried.
        WorkKey::NamespaceReport(..) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use chrono_tz::Tz;
    use kube::runtime::reflector;

    use super::*;
    use crate::{
        mock_api::{Exchange, NOT_FOUND, mock_client},
        ops::http::Health,
        runtime::{events::Events, key::ObjectKey, workqueue::RateLimit},
        scaling::{
            target::{ScaleTarget, TargetKind},
            timer::system_clock,
        },
    };

    /// Workers over a scripted API server; the Foo caches never sync (their writers are kept).
    fn reconcilers(client: kube::Client) -> (Arc<Reconcilers>, impl Drop) {
        let (foos, foo_writer) = reflector::store();
        let (owned_deployments, owned_writer) = reflector::store();
        let events = Events::new(client.clone(), None);
        let reconcilers = Reconcilers {
            foo: FooContext {
                client: client.clone(),
                foos,
                owned_deployments,
                events: events.clone(),
            },
            scale: ScalingContext::new(client, events, Tz::UTC, false, Metrics::new().0),
            clock: system_clock(),
            metrics: Metrics::new().0,
            outage: Outage::default(),
        };
        (Arc::new(reconcilers), Box::new((foo_writer, owned_writer)))
    }

    fn deployment(name: &str) -> WorkKey {
        WorkKey::Scale(ScaleTarget {
            kind: TargetKind::Deployment,
            key: ObjectKey::new("shop", name),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_standby_keeps_no_backlog_and_stops_at_the_first_signal() {
        let (client, server) = mock_client();
        let server = tokio::spawn(server.serve(vec![]));
        let (reconcilers, _writers) = reconcilers(client);
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        for name in ["a", "b", "c"] {
            queue.add(deployment(name));
        }
        let (_leadership, standby) = watch::channel(false);
        let health = Arc::new(Health::default());
        let worker = tokio::spawn(worker(
            queue.clone(),
            reconcilers,
            standby,
            health.alive("worker"),
        ));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.len(), 0, "the leader acts on these, not this replica");

        queue.shutdown_and_drain().await;
        tokio::time::timeout(Duration::from_secs(1), worker)
            .await
            .expect("a standby's worker ends at shutdown, as a leader's does")
            .unwrap();
        server.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn scheduled_scaling_never_waits_for_the_foo_caches() {
        let (client, server) = mock_client();
        let gone = "/apis/apps/v1/namespaces/shop/deployments/web";
        let server =
            tokio::spawn(server.serve(vec![Exchange::new("GET", gone).reply_captured(NOT_FOUND)]));
        let (reconcilers, writers) = reconcilers(client);
        let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
        let foo = WorkKey::Foo(ObjectKey::new("shop", "example-foo"));
        queue.add(foo.clone());
        queue.add(deployment("web"));
        let (_leadership, leading) = watch::channel(true);
        let health = Arc::new(Health::default());
        let worker = tokio::spawn(worker(
            queue.clone(),
            reconcilers,
            leading,
            health.alive("worker"),
        ));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.len(), 0, "the Deployment's schedule was applied");
        tokio::time::sleep(FOO_CACHE_WAIT).await;
        assert_eq!(
            queue.len(),
            0,
            "the Foo key came back after a second and waits again; the mock server fails the test on any Foo request"
        );
        queue.shutdown_and_drain().await;
        worker.await.unwrap();
        drop(writers);
        server.await.unwrap();
    }
}
