//! The Foo controller's two caches, Foos and the Deployments they own, and the feeds that fill
//! them and queue the Foo each change concerns.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::FutureExt as _;
use tokio::task::JoinHandle;

use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Client, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher,
    },
};

use super::{
    feeds::{Feeds, scoped_api},
    lock,
};
use crate::{
    foo::{FOO_LABEL, Foo, controlling_foo},
    ops::http::Health,
    runtime::{
        key::ObjectKey,
        outage::Outage,
        watch::{WatchBackoff, drive, touched},
        workqueue::WorkQueue,
    },
    scaling::{timer::Clock, tracker::Tracker},
    work::WorkKey,
};

/// How often readiness looks whether Deployments have been listed.
const READY_LOOK_EVERY: Duration = Duration::from_millis(100);

/// The Foos (whose schedules `schedules`, the Foos' tracker, takes in as well) and the
/// Deployments they own, their feeds started on `feeds`.
///
/// Foos are watched whether or not the CRD is installed: without it the watch retries every
/// few seconds and the Foo controller starts the moment it appears. Scheduled scaling of
/// Deployments never waits for this cache.
pub(super) fn foo_feeds(
    client: &Client,
    namespace: Option<&str>,
    schedules: Option<Arc<Mutex<Tracker>>>,
    queue: &WorkQueue<WorkKey>,
    clock: &Clock,
    outage: &Outage,
    feeds: &mut Feeds,
) -> (Store<Foo>, Store<Deployment>) {
    let (foo_store, foo_writer) = reflector::store();
    let foo_watch = watcher(
        scoped_api::<Foo>(client, namespace),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default())
    .reflect(foo_writer);
    let foo_feed = {
        let (queue, clock) = (queue.clone(), clock.clone());
        drive(foo_watch, "Foos", outage.clone(), move |event| {
            if let Some(schedules) = &schedules {
                lock(schedules).handle(event, clock());
            }
            if let Some(key) = touched(event).and_then(ObjectKey::of) {
                queue.add(WorkKey::Foo(key));
            }
        })
    };

    let (owned_store, owned_writer) = reflector::store();
    let owned_watch = watcher(
        scoped_api::<Deployment>(client, namespace),
        watcher::Config::default().labels(FOO_LABEL),
    )
    .backoff(WatchBackoff::default())
    // Field ownership is large and never read from this cache.
    .modify(|deployment| deployment.managed_fields_mut().clear())
    .reflect(owned_writer);
    let owned_feed = {
        let queue = queue.clone();
        drive(
            owned_watch,
            "Deployments owned by Foos",
            outage.clone(),
            move |event| {
                if let Some(key) = touched(event).and_then(owner_foo) {
                    queue.add(key);
                }
            },
        )
    };
    feeds.start("Foos", foo_feed);
    feeds.start("Deployments owned by Foos", owned_feed);
    (foo_store, owned_store)
}

/// Ready once Deployments could be listed: the API server answers and RBAC lets us watch.
/// Looked at every moment, not awaited: kube's readiness future wakes only the last task that
/// polled it, and a worker's look at the Foo caches (`now_or_never`) polls it too, so an await
/// that began before a Foo was reconciled slept forever, and the Pod never became Ready.
pub(super) fn ready_once_listed(health: Arc<Health>, owned: Store<Deployment>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(READY_LOOK_EVERY);
        loop {
            every.tick().await;
            match owned.wait_until_ready().now_or_never() {
                None => continue,
                Some(Ok(())) => {
                    health.set_ready(true);
                    tracing::info!("Deployments listed: ready");
                }
                Some(Err(_)) => {}
            }
            break;
        }
    })
}

/// The Foo that controls a Deployment, if one does.
fn owner_foo(deployment: &Deployment) -> Option<WorkKey> {
    let owner = controlling_foo(deployment.owner_references())?;
    Some(WorkKey::Foo(ObjectKey::new(
        deployment.namespace()?,
        &owner.name,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn deployment_with_owner(owner: Option<OwnerReference>) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("shop".into()),
                owner_references: owner.map(|owner| vec![owner]),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        }
    }

    fn reference(kind: &str, api_version: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "my-foo".into(),
            uid: "uid".into(),
            controller: Some(controller),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn a_deployment_change_wakes_its_controlling_foo_only() {
        let foo = reference("Foo", "samplecontroller.k8s.io/v1alpha1", true);
        assert_eq!(
            owner_foo(&deployment_with_owner(Some(foo))),
            Some(WorkKey::Foo(ObjectKey::new("shop", "my-foo")))
        );
        assert_eq!(owner_foo(&deployment_with_owner(None)), None);
        let not_controller = reference("Foo", "samplecontroller.k8s.io/v1alpha1", false);
        assert_eq!(
            owner_foo(&deployment_with_owner(Some(not_controller))),
            None
        );
        let other_kind = reference("Foo", "example.com/v1", true);
        assert_eq!(owner_foo(&deployment_with_owner(Some(other_kind))), None);
    }
}
