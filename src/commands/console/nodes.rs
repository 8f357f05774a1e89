//! The console's page of nodes: what `cronscaler nodes` says (each node and what keeps it, and
//! the last night the controller recorded), read when someone asks and shared for [`FRESH`], so
//! that a page reloaded by many reads the Pods of the cluster once.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use kube::Client;

use super::prices::Prices;
use crate::{
    commands::{
        nodes::{self, Nodes},
        status::nights,
    },
    runtime::fresh::Fresh,
};

/// How long a read of the nodes is shown: the Pods of a large cluster take seconds to read, and
/// what keeps a node changes slowly.
pub const FRESH: Duration = Duration::from_secs(30);

/// How long a read that failed is said again before the next page reads again.
const FAILED_FOR: Duration = Duration::from_secs(10);

/// How long a read may take: within a request's deadline, so a page that waited still answers.
const READ_WITHIN: Duration = Duration::from_secs(15);

/// Why the nodes could not be read for a page.
#[derive(Debug, thiserror::Error)]
pub enum NodesError {
    #[error("reading Nodes, Pods and PodDisruptionBudgets: {0}")]
    Read(#[from] kube::Error),
    #[error(
        "the API server did not answer within {}",
        crate::duration::spoken(READ_WITHIN)
    )]
    TimedOut,
    #[error("what keeps the nodes could not be worked out: {0}")]
    Built(#[from] tokio::task::JoinError),
}

/// What one read of the nodes shows.
pub struct NodesView {
    pub nodes: Nodes,
    /// The last night, as `cronscaler nodes` says it below its table; or why it is not said.
    pub night: Result<Vec<String>, String>,
    /// Where the prices the night is worth by come from, where OpenCost was asked.
    pub prices_from: Option<String>,
    pub at: DateTime<Utc>,
}

/// One read of the nodes, or why it failed.
type Read = Result<Arc<NodesView>, String>;

/// Reads the nodes for every page, sharing one read while it is fresh.
pub struct NodesReader {
    client: Client,
    /// `--controller-namespace`, where the record of the nights is read.
    controller: Option<String>,
    /// What the nodes that went are worth by.
    prices: Arc<Prices>,
    last: Fresh<Read>,
}

impl NodesReader {
    pub fn new(client: Client, controller: Option<String>, prices: Arc<Prices>) -> Self {
        Self {
            client,
            controller,
            prices,
            last: Fresh::default(),
        }
    }

    /// The nodes now: the last read while it is fresh, else a new one. Pages asking while a
    /// read is under way wait for it.
    /// A read that failed is said again for [`FAILED_FOR`]: a page reloaded while the API
    /// server struggles does not list every Pod again.
    pub async fn now(&self) -> Read {
        let shown_for = |read: &Read| if read.is_ok() { FRESH } else { FAILED_FOR };
        self.last.get(shown_for, || self.timed_read()).await
    }

    async fn timed_read(&self) -> Read {
        let read = tokio::time::timeout(READ_WITHIN, self.read(Utc::now())).await;
        match read.map_err(|_| NodesError::TimedOut) {
            Ok(Ok(view)) => Ok(Arc::new(view)),
            Ok(Err(error)) | Err(error) => Err(error.to_string()),
        }
    }

    async fn read(&self, now: DateTime<Utc>) -> Result<NodesView, NodesError> {
        let read = nodes::read(&self.client).await?;
        // Seconds of work on 30,000 Pods: off the threads that answer pages.
        let built = tokio::task::spawn_blocking(move || nodes::nodes(&read)).await?;
        let night = nights::read(&self.client, self.controller.as_deref()).await;
        let priced = self.prices.now().await;
        Ok(NodesView {
            nodes: built,
            night: nights::said(&night, &priced, now),
            prices_from: priced.from.clone(),
            at: now,
        })
    }
}
