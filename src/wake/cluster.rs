//! What the wake-up backend and the warm-up measurement send the API server: a request for a
//! Namespace's wake, its workloads' readiness, the warm-up measured. Whatever reaches the backend from the
//! internet must never delay the controller's own requests (lease renewals, scaling), so all of
//! it goes through a client and a request budget of its own (`--wake-kube-qps`), each request
//! with a timeout; readiness is read from the API server's watch cache (`resourceVersion=0`),
//! at most once a second per Namespace, and only while the budget has room: a read that would
//! wait longer is not made, and the readiness is "not known yet".

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;

use super::{
    readiness::{NotKnown, READ_KINDS, Read, readiness, workloads},
    request::{self, WakeRequest, WakeRequestSpec},
};
use crate::{
    duration::spoken,
    namespaces::NamespaceSchedules,
    ops::metrics::{Metrics, ReadResult},
    runtime::{CONTROLLER_NAME, api_errors::is_status, budget::TokenBucket, fresh::ByKey},
    schedule::LAST_WARM_UP,
};

/// How long a Namespace's readiness, once read, answers every request.
pub const READ_EVERY: Duration = Duration::from_secs(1);
/// The longest a request waits for the API server.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest an ask for a wake waits: made apart from any answer, it may take longer than a
/// read, and an ask given up on is made again by the next request.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a read waits for room in the budget; beyond it, it is not made.
const BUDGET_WAIT: Duration = Duration::from_millis(500);
/// A read lists each of [`READ_KINDS`].
const LISTS_PER_READ: u32 = READ_KINDS.len() as u32;
/// A Namespace whose readiness nobody asked for in this long is forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// What asking for a wake came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// This request asked.
    Now,
    /// Another request or replica asked first, and the controller has not carried it out yet.
    Already,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("the API server did not answer within {}", spoken(*.0))]
    TimedOut(Duration),
}

pub struct Cluster {
    /// A client of the backend's own: its requests never queue behind the controller's.
    client: Client,
    budget: TokenBucket,
    schedules: NamespaceSchedules,
    metrics: Metrics,
    /// Each Namespace's last read: one read at a time, whatever the requests; the Namespaces
    /// nobody asked for within a minute (deleted, opted out, or just quiet) forgotten.
    reads: ByKey<Read>,
}

impl Cluster {
    /// `client` must be the backend's own (not the controller's); `qps` is `--wake-kube-qps`,
    /// with a second's worth as its burst, and at least one read's.
    pub fn new(client: Client, qps: f64, schedules: NamespaceSchedules, metrics: Metrics) -> Self {
        // A float's ceiling within u32: the cast saturates, as intended.
        let burst = (qps.ceil() as u32).max(LISTS_PER_READ);
        Self {
            client,
            budget: TokenBucket::new(qps, burst),
            schedules,
            metrics,
            reads: ByKey::new(FORGET_AFTER),
        }
    }

    /// The readiness of `namespace`'s workloads its schedule reaches, read at most once per
    /// [`READ_EVERY`] whatever the requests.
    pub async fn readiness(&self, namespace: &str) -> Read {
        let cached = self.reads.of(namespace);
        cached.get(|_| READ_EVERY, || self.read(namespace)).await
    }

    async fn read(&self, namespace: &str) -> Read {
        let Some(wait) = self.budget.try_reserve(LISTS_PER_READ, BUDGET_WAIT) else {
            self.metrics.wake_read(ReadResult::NotRead);
            return Err(NotKnown::BudgetSpent);
        };
        tokio::time::sleep(wait).await;
        let listed =
            tokio::time::timeout(REQUEST_TIMEOUT, workloads(&self.client, namespace)).await;
        let read = match listed {
            Ok(Ok(objects)) => Ok(readiness(namespace, &objects, &self.schedules)),
            Ok(Err(error)) => {
                tracing::warn!(namespace, %error, "could not read the Namespace's workloads");
                Err(NotKnown::Refused)
            }
            Err(_) => Err(NotKnown::TimedOut),
        };
        self.metrics.wake_read(match read {
            Ok(_) => ReadResult::Read,
            Err(_) => ReadResult::Failed,
        });
        read
    }

    /// Asks the controller to wake `namespace` for `by` (who the wake's Event names): creates
    /// its `WakeRequest`, the one power the backend holds. It waits for its turn in the budget:
    /// asks are few (one per Namespace per cooldown), and each must be made.
    pub async fn ask_wake(&self, namespace: &str, by: &str) -> Result<Asked, WriteError> {
        tokio::time::sleep(self.budget.reserve()).await;
        let api: Api<WakeRequest> = Api::namespaced(self.client.clone(), namespace);
        let mut request = WakeRequest::new(request::NAME, WakeRequestSpec { by: by.into() });
        request.metadata.namespace = Some(namespace.into());
        let params = PostParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PostParams::default()
        };
        match tokio::time::timeout(ASK_TIMEOUT, api.create(&params, &request)).await {
            Ok(Ok(_)) => Ok(Asked::Now),
            // Asked already, by another request or replica, and not yet carried out.
            Ok(Err(error)) if is_status(&error, 409) => Ok(Asked::Already),
            Ok(Err(error)) => Err(error.into()),
            Err(_) => Err(WriteError::TimedOut(ASK_TIMEOUT)),
        }
    }

    /// Writes the warm-up measured, `42s`, on the Namespace.
    pub async fn write_last_warm_up(
        &self,
        namespace: &str,
        seconds: u64,
    ) -> Result<(), WriteError> {
        tokio::time::sleep(self.budget.reserve()).await;
        let api: Api<Namespace> = Api::all(self.client.clone());
        let patch =
            json!({ "metadata": { "annotations": { LAST_WARM_UP: format!("{seconds}s") } } });
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        match tokio::time::timeout(
            REQUEST_TIMEOUT,
            api.patch_metadata(namespace, &params, &Patch::Merge(&patch)),
        )
        .await
        {
            Ok(written) => written.map(drop).map_err(WriteError::from),
            Err(_) => Err(WriteError::TimedOut(REQUEST_TIMEOUT)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_timed_out_says_how_long_it_was_given() {
        assert_eq!(
            WriteError::TimedOut(REQUEST_TIMEOUT).to_string(),
            "the API server did not answer within 2s"
        );
    }
}
