//! API server outages: work that failed because the server could not answer is parked, and
//! while anything reports such a failure a probe asks the server every [`PROBE_INTERVAL`] whether
//! it answers again. The first answer brings the parked and failed work back at once, so a
//! transition missed during an outage is applied within seconds of the server's return, while a
//! long outage costs the server one cheap request every few seconds.

use std::{hash::Hash, sync::Arc, time::Duration};

use kube::Client;
use tokio::sync::Notify;

use crate::runtime::workqueue::WorkQueue;

pub const PROBE_INTERVAL: Duration = Duration::from_secs(2);

/// Where failures that mean "the API server did not answer" are reported. Cheap to clone.
#[derive(Clone, Default)]
pub struct Outage {
    suspected: Arc<Notify>,
}

impl Outage {
    /// The API server did not answer a request.
    pub fn report(&self) {
        // A stored permit: a report made while the probe is busy is not lost.
        self.suspected.notify_one();
    }

    /// Waits for reports and probes the server after each until it answers, then brings back
    /// the work that waited for it. Runs until dropped.
    pub async fn probe<K>(self, client: Client, queue: WorkQueue<K>)
    where
        K: Clone + Eq + Hash + Send + Sync + 'static,
    {
        probe(self.suspected, client, queue).await
    }
}

async fn probe<K>(suspected: Arc<Notify>, client: Client, queue: WorkQueue<K>)
where
    K: Clone + Eq + Hash + Send + Sync + 'static,
{
    loop {
        suspected.notified().await;
        loop {
            tokio::time::sleep(PROBE_INTERVAL).await;
            // `/version` is open to every authenticated user and costs the server nothing.
            match client.apiserver_version().await {
                Ok(_) => break,
                Err(error) => tracing::debug!(%error, "API server still not answering"),
            }
        }
        tracing::info!(
            parked = queue.parked(),
            "the API server answers again: retrying the work that waited for it"
        );
        queue.unpark_all();
        queue.retry_failed_now();
    }
}
