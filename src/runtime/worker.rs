//! Workers: each takes keys from the shared queue while this replica leads and hands each to the
//! reconciler of its kind. Errors are retried with per-key backoff; success forgets the key's
//! failures.

use std::sync::Arc;

use tokio::{sync::watch, time::Instant};

use crate::{
    error::Error,
    foo::{self, FooContext},
    ops::{
        http::AliveGuard,
        metrics::{Metrics, Outcome, ResultLabels},
    },
    runtime::{key::WorkKey, workqueue::WorkQueue},
    scaling::{self, ScalingContext, timer::Clock},
};

/// Everything a worker may need, whatever key it takes.
pub struct Reconcilers {
    pub foo: FooContext,
    pub scale: ScalingContext,
    pub clock: Clock,
    pub metrics: Metrics,
}

/// Takes keys while this replica leads, and drops an in-flight reconcile the moment it stops
/// leading, so two replicas never act at once.
pub async fn worker(
    queue: WorkQueue<WorkKey>,
    reconcilers: Arc<Reconcilers>,
    mut is_leader: watch::Receiver<bool>,
    _alive: AliveGuard,
) {
    loop {
        if is_leader.wait_for(|leading| *leading).await.is_err() {
            return;
        }
        let key = tokio::select! {
            key = queue.get() => match key {
                Some(key) => key,
                None => return,
            },
            _ = is_leader.wait_for(|leading| !*leading) => continue,
        };
        let outcome = tokio::select! {
            result = reconcile(&reconcilers, &key) => Some(result),
            _ = is_leader.wait_for(|leading| !*leading) => None,
        };
        match outcome {
            Some(Ok(())) => queue.forget(&key),
            Some(Err(error)) => {
                tracing::warn!(object = %key, retries = queue.retries(&key), %error, "reconcile failed; retrying with backoff");
                reconcilers.metrics.workqueue_retries.inc();
                queue.add_rate_limited(key.clone());
            }
            None => {
                tracing::warn!(object = %key, "lost the lease: reconcile abandoned, retried when leading again");
                queue.done(&key);
                queue.add(key);
                continue;
            }
        }
        queue.done(&key);
    }
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
    }
}
