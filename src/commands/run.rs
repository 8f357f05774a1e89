//! `cronscaler run`, the wiring: watches feed caches, the tracker and the shared workqueue;
//! workers take keys from the queue while this replica leads.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use chrono::TimeDelta;
use kube::{Api, Client, Resource};
use tokio::{net::TcpListener, sync::watch};

mod clients;
mod election;
mod feeds;
mod foo_feeds;
mod gitops_feeds;
mod namespace_feeds;
mod policy_feeds;
mod route_feeds;
mod slice_feeds;
mod trackers;
mod wake_backend;
mod workload_feeds;

pub use clients::{Clients, clients_for};
use election::{Resync, elect, follow_leadership};
use feeds::Feeds;
use foo_feeds::{foo_feeds, ready_once_listed};
use gitops_feeds::owner_feed;
use policy_feeds::{FirstListings, Relist};
use route_feeds::route_feed;
use slice_feeds::SliceInputs;
use trackers::{TrackerSettings, Trackers};
use workload_feeds::{WorkloadWatches, hpa_feed, lock, relist_namespace};

use crate::{
    activity::prometheus::Prometheus,
    commands::cli::RunArgs,
    foo::FooContext,
    namespaces::NamespaceSchedules,
    ops::{
        descriptors,
        http::{self, Health},
        listener::Acceptor,
        memory,
        metrics::Metrics,
    },
    runtime::{
        events::Events,
        outage::Outage,
        worker::{Workers, worker},
        workqueue::{Enqueue, RateLimit, WorkQueue},
    },
    scaling::{
        ScalingContext,
        gitops::{Tool, owners::Owners},
        hpa::HpaIndex,
        idle::{Activity, Counter},
        key::ScalingKey,
        timer::{Timer, system_clock},
    },
    wake::{host_conflicts::HostConflicts, route_kinds::ROUTES},
    work::{Reconcilers, WorkKey},
    workloads::{last_seen::LastSeen, objects, target::TargetKind},
};

/// How long the workload watches wait for the Namespaces' first listing, and scaling for the
/// HPAs'.
const FIRST_LISTING_WAIT: Duration = Duration::from_secs(30);

/// Objects per list page of the watches of every workload and of Namespaces.
const LIST_PAGE_SIZE: u32 = 100;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("listening on {addr} for /healthz, /readyz and /metrics: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("listening on {addr} for the wake-up backend (--wake-addr): {source}")]
    ListenWake {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Runs the controllers until `shutdown` resolves, then stops handing out work, lets in-flight
/// reconciles finish, releases the lease if it holds it, and returns.
pub async fn run(
    clients: Clients,
    args: &RunArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    // Settings.
    let client = clients.controller;
    let (metrics, registry) = Metrics::new();
    let health = Arc::new(Health::default());
    let open_files = descriptors::raise_limit_and_say();
    let listener = TcpListener::bind(args.http_addr)
        .await
        .map_err(|source| RunError::Listen {
            addr: args.http_addr,
            source,
        })?;
    let listener = Acceptor::new(listener, "HTTP", metrics.accept_errors("http"));
    let namespace = args.namespace.as_deref();
    let [grace, max_override, warm_up, step_timeout] = [
        args.grace_period,
        args.max_override,
        args.warm_up,
        args.wake_step_timeout,
    ]
    .map(|duration| TimeDelta::from_std(duration).unwrap_or(TimeDelta::MAX));

    // What the watches fill and the workers read.
    let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
    let clock = system_clock();
    let scaling_queue = Enqueue::<ScalingKey>::new(queue.clone());
    let timer = Timer::spawn(scaling_queue.clone(), clock.clone());
    let outage = Outage::default();
    tokio::spawn(outage.clone().probe(client.clone(), queue.clone()));
    let counter = (args.prometheus_url.as_deref()).map(|url| Counter {
        prometheus: Prometheus::new(url),
        query: args.activity_query.clone(),
    });
    let activity = Activity::new(counter, clock());
    let namespaces = namespace_schedules(args, &client);
    let (hpas, last_seen, owners) = (HpaIndex::default(), LastSeen::default(), Owners::default());
    let events = Events::new(client.clone(), std::env::var("POD_NAME").ok());
    let settings = TrackerSettings {
        timer: timer.clone(),
        queue: scaling_queue.clone(),
        default_timezone: args.default_timezone.zone,
        namespaces: namespaces.clone(),
        grace,
        max_override,
        warm_up,
        metrics: metrics.clone(),
        hpas: hpas.clone(),
        last_seen: last_seen.clone(),
        activity: activity.clone(),
    };
    let (kinds, later) = objects::resolve(&client, &args.kinds).await;
    await_levers(&client, &kinds, &hpas).await;
    let tracked = Trackers::new(
        kinds
            .iter()
            .map(|kind| (*kind, settings.tracker(*kind)))
            .collect(),
    );

    // Feeds.
    let mut feeds = Feeds::new(health.clone());
    // A Foo's schedule is read from the Foo controller's own watch of Foos.
    let foo_schedules = (tracked.all().into_iter())
        .find(|(kind, _)| *kind == TargetKind::Foo)
        .map(|(_, tracker)| tracker);
    let (foo_store, owned_store) = foo_feeds(
        &client,
        namespace,
        foo_schedules,
        &queue,
        &clock,
        &outage,
        &mut feeds,
    );
    // In a namespaced install there are no Namespaces to wait for.
    let namespaces_gate = Arc::new(watch::Sender::new(namespace.is_some()));
    let first_listings = FirstListings::new(namespaces_gate.clone());
    let relist = Relist {
        client: client.clone(),
        workloads: tracked.clone(),
        clock: clock.clone(),
        queue: queue.clone(),
        namespaces: namespaces.clone(),
    };
    let slice_inputs = SliceInputs {
        namespaces: &namespaces,
        events: &events,
        levers: &hpas,
        queue: &queue,
        outage: &outage,
    };
    let wake_slices = slice_feeds::start(args, &client, slice_inputs, &mut feeds);
    let declarations = namespace_feeds::start(
        &relist,
        &outage,
        &first_listings,
        (wake_slices.is_some(), &activity),
        namespace.is_none(),
        &mut feeds,
    );
    let watches = Arc::new(WorkloadWatches {
        client: client.clone(),
        namespace: args.namespace.clone(),
        clock: clock.clone(),
        outage: outage.clone(),
        metrics: metrics.clone(),
        settings,
        trackers: tracked.clone(),
    });
    let workloads_listed = watches.start(namespaces_gate.subscribe(), &mut feeds);
    tokio::spawn(give_back_memory_once(workloads_listed.clone()));
    let hpa_feed = hpa_feed(&client, namespace, &hpas, tracked.clone(), &clock, &outage);
    feeds.start("HorizontalPodAutoscalers", hpa_feed);
    tokio::spawn(stop_waiting_in_time(namespaces_gate, hpas.clone()));
    // The GitOps owners, and what routes requests by host for the wake-up backend:
    // cluster-wide, as a namespaced install cannot read them.
    if namespace.is_none() {
        for tool in Tool::all() {
            let paused = (&scaling_queue, &metrics.gitops_paused_owners);
            let feed = owner_feed(&client, tool, &owners, &last_seen, paused, &outage);
            feeds.start(tool.spec().plural, feed);
        }
        for kind in ROUTES.iter().filter(|_| args.wake_addr.is_some()) {
            feeds.start(kind.plural, route_feed(&client, kind, &namespaces, &outage));
        }
    }
    watches.start_later(later, &workloads_listed, &mut feeds);

    // Leadership, what is served, and the workers.
    let (is_leader, election) = elect(&client, args);
    let resync = Resync {
        foos: foo_store.clone(),
        queue: queue.clone(),
        clock: clock.clone(),
        owners: owners.clone(),
        namespaces: namespaces.clone(),
        first_listings,
        trackers: tracked.clone(),
        wake_slices: wake_slices.clone(),
    };
    tokio::spawn(follow_leadership(
        is_leader.clone(),
        metrics.leader.clone(),
        resync,
    ));
    let refresh: Arc<dyn Fn() + Send + Sync> = {
        let (queue, timer, metrics) = (queue.clone(), timer.clone(), metrics.clone());
        Arc::new(move || {
            let depth = i64::try_from(queue.len()).unwrap_or(i64::MAX);
            metrics.workqueue_depth.set(depth);
            let held = i64::try_from(timer.held()).unwrap_or(i64::MAX);
            metrics.schedules.set(held);
        })
    };
    let listener = tokio::spawn(http::serve(
        listener,
        health.clone(),
        Arc::new(registry),
        refresh,
    ));
    let (wakes, wake_backend) =
        wake_backend::start(args, clients.wake, &namespaces, &metrics, open_files)?;
    let scale = ScalingContext::new(
        client.clone(),
        events.clone(),
        args.default_timezone.zone,
        args.dry_run,
        metrics.clone(),
    )
    .with_grace(grace, timer)
    .with_max_override(max_override)
    .with_warm_up(warm_up)
    .with_step_timeout(step_timeout)
    .with_namespaces(namespaces.clone())
    .with_wake_turns(args.max_waking_namespaces, scaling_queue.clone())
    .with_reports(scaling_queue.clone())
    .with_hpas(hpas)
    .with_last_seen(last_seen)
    .with_gitops(owners, args.gitops.mode, scaling_queue)
    .with_wakes(wakes)
    .with_declarations(declarations)
    .with_workloads_listed(workloads_listed)
    .with_kinds(tracked.kinds())
    .with_activity(activity);
    let reconcilers = Arc::new(Reconcilers {
        foo: FooContext {
            client,
            foos: foo_store,
            owned_deployments: owned_store.clone(),
            events: events.clone(),
        },
        slices: wake_slices,
        host_conflicts: HostConflicts::new(namespaces, events),
        scale,
        clock,
        metrics: metrics.clone(),
    });
    let workers = Arc::new(Workers {
        queue: queue.clone(),
        reconciler: reconcilers,
        outage,
        retries: metrics.workqueue_retries.clone(),
    });
    tracing::info!(
        workers = args.workers,
        dry_run = args.dry_run,
        leader_elect = args.leader_elect,
        "starting workers"
    );
    let worker_tasks: Vec<_> = (0..args.workers)
        .map(|_| {
            let alive = health.alive("worker");
            tokio::spawn(worker(workers.clone(), is_leader.clone(), alive))
        })
        .collect();
    let readiness = ready_once_listed(health, owned_store);

    // Shutdown.
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight work");
    queue.shutdown_and_drain().await;
    for worker in worker_tasks {
        let _ = worker.await;
    }
    // Only now that no reconcile runs may another replica take over.
    election.release().await;
    readiness.abort();
    listener.abort();
    if let Some(wake_backend) = wake_backend {
        wake_backend.abort();
    }
    feeds.stop();
    Ok(())
}

/// The Namespaces' schedules, read from the watch of Namespaces, or off in a namespaced install.
fn namespace_schedules(args: &RunArgs, client: &Client) -> NamespaceSchedules {
    let excluded = (args.excluded.exclude_namespaces.iter())
        .filter(|namespace| !namespace.is_empty())
        .cloned()
        .chain([client.default_namespace().to_string()]);
    let namespaces = if args.namespace.is_some() {
        tracing::info!(
            "namespace schedules are off: a namespaced install (--namespace) cannot read Namespaces"
        );
        NamespaceSchedules::off(excluded)
    } else {
        NamespaceSchedules::watched(excluded)
    };
    namespaces.reading_kube_downscaler(args.kube_downscaler.read)
}

/// A workload's lever is known from the lever's own spec: no look before the levers served now
/// are listed (one not served has nothing to list, and is taken in when it is).
async fn await_levers(client: &Client, kinds: &[TargetKind], hpas: &HpaIndex) {
    for kind in (kinds.iter().copied()).filter(|kind| kind.spec().levers.is_some()) {
        let spec = kind.spec();
        let gvk = kube::api::GroupVersionKind::gvk(spec.group, spec.version, spec.name);
        if kube::discovery::pinned_kind(client, &gvk).await.is_ok() {
            hpas.await_levers([kind]);
        }
    }
}

/// Gives back what the first list pages left behind, once every workload is listed.
async fn give_back_memory_once(mut listed: watch::Receiver<bool>) {
    if listed.wait_for(|done| *done).await.is_ok() {
        memory::give_back_free_memory();
    }
}

/// Namespaces or HPAs that cannot be listed (RBAC without them, an old ClusterRole) must not
/// stop scheduled scaling: after a while it goes on without them, and takes them in when they
/// are listed.
async fn stop_waiting_in_time(namespaces_gate: Arc<watch::Sender<bool>>, hpas: HpaIndex) {
    tokio::time::sleep(FIRST_LISTING_WAIT).await;
    if !namespaces_gate.send_replace(true) {
        tracing::warn!(
            "Namespaces not listed after {FIRST_LISTING_WAIT:?}: watching workloads without \
             Namespace schedules until they are"
        );
    }
    if hpas.stop_waiting() {
        tracing::warn!(
            "HorizontalPodAutoscalers or ScaledObjects not listed after \
             {FIRST_LISTING_WAIT:?}: scaling without them until they are"
        );
    }
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
