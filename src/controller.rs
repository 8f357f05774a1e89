//! Wiring: watches feed caches and the shared workqueue; workers take keys from the queue and
//! hand each to the reconciler of its kind. Errors are retried with per-key backoff, success
//! forgets the key's failures.

use std::{future::Future, sync::Arc};

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api, Client, Resource, ResourceExt,
    client::ClientBuilder,
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher,
    },
};

use crate::{
    cli::RunArgs,
    events::Events,
    foo::{self, FOO_LABEL, Foo},
    key::{ObjectKey, TargetKind, WorkKey},
    ratelimit::RateLimitLayer,
    scaler,
    scheduler::{Clock, Scheduler, Tracker, system_clock},
    workqueue::{RateLimit, WorkQueue},
};

/// A client for the cluster of the current kubeconfig (or in-cluster), every request of which
/// goes through one `--kube-qps` / `--kube-burst` budget.
pub async fn connect(args: &RunArgs) -> Result<Client, kube::Error> {
    let config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    client_for(config, args)
}

/// A client for `config` behind the `--kube-qps` / `--kube-burst` budget.
pub fn client_for(config: kube::Config, args: &RunArgs) -> Result<Client, kube::Error> {
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&RateLimitLayer::new(args.kube_qps, args.kube_burst))
        .build())
}

/// Runs the controllers until `shutdown` resolves, then stops handing out work, lets in-flight
/// reconciles finish, and returns.
pub async fn run(client: Client, args: &RunArgs, shutdown: impl Future<Output = ()>) {
    let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
    let clock = system_clock();
    let scheduler = Scheduler::spawn(queue.clone(), clock.clone());
    let namespace = args.namespace.as_deref();

    let (foo_store, foo_writer) = reflector::store();
    let foo_watch = watcher(
        scoped_api::<Foo>(&client, namespace),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(foo_writer);
    let mut foo_schedules = Tracker::new(
        scheduler.clone(),
        queue.clone(),
        args.default_timezone,
        TargetKind::Foo,
    );
    let foo_queue = queue.clone();
    let foo_feed = drive(foo_watch, "Foos", move |event| {
        foo_schedules.handle(event);
        if let Some(key) = touched(event).and_then(ObjectKey::of) {
            foo_queue.add(WorkKey::Foo(key));
        }
    });

    let (owned_store, owned_writer) = reflector::store();
    let owned_watch = watcher(
        scoped_api::<Deployment>(&client, namespace),
        watcher::Config::default().labels(FOO_LABEL),
    )
    .default_backoff()
    // Field ownership is large and never read from this cache.
    .modify(|deployment| deployment.managed_fields_mut().clear())
    .reflect(owned_writer);
    let owned_queue = queue.clone();
    let owned_feed = drive(owned_watch, "Deployments owned by Foos", move |event| {
        if let Some(key) = touched(event).and_then(owner_foo) {
            owned_queue.add(key);
        }
    });

    // Every Deployment, as metadata only and kept nowhere: the tracker keeps what it needs of
    // the annotated ones.
    let all_watch = watcher(
        scoped_api::<PartialObjectMeta<Deployment>>(&client, namespace),
        watcher::Config::default(),
    )
    .default_backoff();
    let mut deployment_schedules = Tracker::new(
        scheduler.clone(),
        queue.clone(),
        args.default_timezone,
        TargetKind::Deployment,
    );
    let all_feed = drive(all_watch, "Deployments", move |event| {
        deployment_schedules.handle(event)
    });

    let feeds = [
        tokio::spawn(foo_feed),
        tokio::spawn(owned_feed),
        tokio::spawn(all_feed),
    ];

    let events = Events::new(client.clone(), std::env::var("POD_NAME").ok());
    let reconcilers = Arc::new(Reconcilers {
        foo: foo::Context {
            client: client.clone(),
            foos: foo_store.clone(),
            owned_deployments: owned_store.clone(),
            events: events.clone(),
        },
        scale: scaler::Context::new(client, events, args.default_timezone, args.dry_run),
        clock,
    });

    tokio::pin!(shutdown);
    tokio::select! {
        () = &mut shutdown => {}
        () = caches_ready(&foo_store, &owned_store) => {
            tracing::info!(workers = args.workers, dry_run = args.dry_run, "caches synced; starting workers");
            let workers: Vec<_> =
                (0..args.workers).map(|_| tokio::spawn(worker(queue.clone(), reconcilers.clone()))).collect();
            shutdown.await;
            tracing::info!("shutting down: finishing in-flight work");
            queue.shutdown_and_drain().await;
            for worker in workers {
                let _ = worker.await;
            }
        }
    }
    queue.shutdown();
    for feed in feeds {
        feed.abort();
    }
}

/// Everything a worker may need, whatever key it takes.
struct Reconcilers {
    foo: foo::Context,
    scale: scaler::Context,
    clock: Clock,
}

fn scoped_api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

async fn caches_ready(foos: &Store<Foo>, owned: &Store<Deployment>) {
    // A dropped writer means its watch task ended, which only happens at shutdown.
    let _ = tokio::join!(foos.wait_until_ready(), owned.wait_until_ready());
}

/// Hands every event of a watch to `on_event`, logging watch failures (the watcher backs off
/// and resumes by itself).
async fn drive<K, S>(stream: S, what: &'static str, mut on_event: impl FnMut(&watcher::Event<K>))
where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    futures::pin_mut!(stream);
    loop {
        match stream.try_next().await {
            Ok(Some(event)) => on_event(&event),
            Ok(None) => return,
            Err(error) => tracing::warn!(%error, "watch of {what} failed; retrying"),
        }
    }
}

/// The objects an event reports as added, changed or deleted.
fn touched<K>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(object)
        | watcher::Event::InitApply(object)
        | watcher::Event::Delete(object) => Some(object),
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// The Foo that controls a Deployment, if one does.
fn owner_foo(deployment: &Deployment) -> Option<WorkKey> {
    let owner = deployment.owner_references().iter().find(|owner| {
        owner.controller == Some(true)
            && owner.kind == Foo::kind(&())
            && owner.api_version == Foo::api_version(&())
    })?;
    Some(WorkKey::Foo(ObjectKey::new(
        deployment.namespace()?,
        &owner.name,
    )))
}

async fn worker(queue: WorkQueue<WorkKey>, reconcilers: Arc<Reconcilers>) {
    while let Some(key) = queue.get().await {
        let now = (reconcilers.clock)();
        let result = match &key {
            WorkKey::Foo(foo) => foo::reconcile(&reconcilers.foo, foo, now).await,
            WorkKey::Scale(target) => scaler::reconcile(&reconcilers.scale, target, now).await,
        };
        match result {
            Ok(()) => queue.forget(&key),
            Err(error) => {
                tracing::warn!(%key, retries = queue.retries(&key), %error, "reconcile failed; retrying with backoff");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
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
