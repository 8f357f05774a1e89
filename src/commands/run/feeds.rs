//! The feed layer: every watch the controller runs is started here, under the name its liveness
//! says (`watch of Namespaces` in `/healthz`), and stopped here at shutdown. A feed that ends or
//! panics makes the process unhealthy, so the kubelet restarts it.

use std::{borrow::Cow, future::Future, sync::Arc, time::Duration};

use kube::{Api, Client, Resource};
use tokio::task::JoinHandle;

use crate::ops::http::{AliveGuard, Health};

/// How long the workload watches wait for the Namespaces' first listing, and scaling for the
/// HPAs'.
pub const FIRST_LISTING_WAIT: Duration = Duration::from_secs(30);

/// Objects per list page of the watches of every workload and of Namespaces.
pub const LIST_PAGE_SIZE: u32 = 100;

pub struct Feeds {
    health: Arc<Health>,
    running: Vec<JoinHandle<()>>,
}

impl Feeds {
    pub fn new(health: Arc<Health>) -> Self {
        Feeds {
            health,
            running: Vec::new(),
        }
    }

    /// Starts the watch of `what` (`Namespaces`), alive while `feed` runs.
    pub fn start(
        &mut self,
        what: impl Into<Cow<'static, str>>,
        feed: impl Future<Output = ()> + Send + 'static,
    ) {
        let alive = alive(&self.health, what);
        self.running.push(tokio::spawn(while_alive(alive, feed)));
    }

    /// Starts a task that starts its watch once it knows what it watches (a kind whose CRD is
    /// not served yet), and names it then with [`alive`].
    pub fn start_later(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.running.push(tokio::spawn(task));
    }

    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// Stops every watch.
    pub fn stop(self) {
        for feed in self.running {
            feed.abort();
        }
    }
}

/// The liveness of the watch of `what`, for as long as the guard lives.
pub fn alive(health: &Arc<Health>, what: impl Into<Cow<'static, str>>) -> AliveGuard {
    health.alive(format!("watch of {}", what.into()))
}

/// Runs `task`, keeping `_alive` until it ends.
pub async fn while_alive(_alive: AliveGuard, task: impl Future<Output = ()>) {
    task.await;
}

/// The API of a namespaced kind, in `namespace` or across the cluster.
pub fn scoped_api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}
