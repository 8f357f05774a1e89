//! Leader election on a coordination.k8s.io/v1 Lease (being written: this placeholder always
//! leads, so the rest of the crate builds meanwhile).

use std::{future::Future, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

pub struct LeaderConfig {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl LeaderConfig {
    pub fn new(
        namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: lease_name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

pub fn spawn(
    _client: kube::Client,
    _config: LeaderConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (watch::Receiver<bool>, JoinHandle<()>) {
    let (leading, is_leader) = watch::channel(true);
    let task = tokio::spawn(async move {
        shutdown.await;
        let _ = leading.send(false);
    });
    (is_leader, task)
}
