//! Workers: each takes keys from the shared queue while this replica leads and hands each to the
//! binary's [`Reconcile`], which knows the controller of every kind of key. Errors are retried
//! with per-key backoff, except those of an unavailable API server, whose work waits for the
//! server; success forgets the key's failures.

use std::{fmt::Display, future::Future, hash::Hash, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::watch;

use crate::{
    ops::http::AliveGuard,
    runtime::{outage::Outage, workqueue::WorkQueue},
};

/// What workers hand their keys to.
pub trait Reconcile: Send + Sync + 'static {
    type Key: Clone + Eq + Hash + Display + Send + Sync + 'static;
    type Error: Display + Send;

    /// Does the key's work at the current time.
    fn reconcile(&self, key: &Self::Key) -> impl Future<Output = Handled<Self::Error>> + Send;

    /// The API server did not answer, or answered that it cannot serve now: no fault of the
    /// key's, so its work waits for the server instead of backing off.
    fn is_server_unavailable(error: &Self::Error) -> bool;
}

/// When a key's work is to be looked at again: what every kind of work answers when it did not
/// fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Not until something it watches changes.
    Done,
    /// After this long, with no backoff: a cache still filling, outcomes still coming, a look
    /// every few seconds.
    After(Duration),
    /// At this instant: when its state changes next.
    At(DateTime<Utc>),
}

impl Next {
    /// How a key's work went, at `now`.
    pub fn handled<E>(result: Result<Next, E>, now: DateTime<Utc>) -> Handled<E> {
        match result {
            Ok(Next::Done) => Handled::Done,
            Ok(Next::After(delay)) => Handled::Later(delay),
            Ok(Next::At(instant)) => Handled::Later((instant - now).to_std().unwrap_or_default()),
            Err(error) => Handled::Failed(error),
        }
    }
}

/// How a key's work went.
pub enum Handled<E> {
    Done,
    /// Nothing failed, but the work cannot be done yet (a cache still filling, a report waiting
    /// for its workloads to settle): the key comes back after this long, with no backoff.
    Later(Duration),
    Failed(E),
}

/// What every worker shares.
pub struct Workers<R: Reconcile> {
    pub queue: WorkQueue<R::Key>,
    pub reconciler: Arc<R>,
    pub outage: Outage,
    /// Counts keys retried after a failure.
    pub retries: Counter,
}

/// Takes keys until the queue shuts down. While this replica leads it hands each to its
/// reconciler, and drops an in-flight reconcile the moment leadership is lost, so two replicas
/// never act at once. A standby keeps no backlog: it lets go of every key at once, because the
/// leader acts on it, and when this replica comes to lead a resync queues whatever is due then.
pub async fn worker<R: Reconcile>(
    workers: Arc<Workers<R>>,
    mut is_leader: watch::Receiver<bool>,
    _alive: AliveGuard,
) {
    let queue = &workers.queue;
    while let Some(key) = queue.get().await {
        if !*is_leader.borrow_and_update() {
            queue.forget(&key);
            queue.done(&key);
            continue;
        }
        let handled = tokio::select! {
            handled = workers.reconciler.reconcile(&key) => Some(handled),
            _ = is_leader.wait_for(|leading| !*leading) => None,
        };
        match handled {
            Some(Handled::Done) => queue.forget(&key),
            Some(Handled::Later(delay)) => {
                queue.done(&key);
                queue.add_after(key, delay);
                continue;
            }
            Some(Handled::Failed(error)) if R::is_server_unavailable(&error) => {
                tracing::warn!(object = %key, %error, "the API server is unavailable; retried as soon as it answers");
                workers.outage.report();
                queue.park(key.clone());
            }
            Some(Handled::Failed(error)) => {
                tracing::warn!(object = %key, retries = queue.retries(&key), %error, "reconcile failed; retrying with backoff");
                workers.retries.inc();
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
