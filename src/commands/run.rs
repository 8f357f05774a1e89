//! `cronscaler run`, the wiring, in the order it is read: the settings; what the watches fill and
//! the workers read; the feeds, each family started from a file beside this one (`foo_feeds.rs`,
//! `namespace_feeds.rs` with `policy_feeds.rs`, `slice_feeds.rs`, `workload_feeds.rs`,
//! `gitops_feeds.rs`, `route_feeds.rs`, `request_feeds.rs`, `node_feeds.rs`) through the one
//! feed layer (`feeds.rs`); leadership (`election.rs`, with the workers while this replica
//! leads), what is served (`served.rs`); shutdown. `wake_backend.rs` is `cronscaler wake-backend`, the other process.

use std::{future::Future, sync::Arc};

use chrono::TimeDelta;
use tokio::sync::watch;

mod clients;
mod election;
mod feeds;
mod foo_feeds;
mod gitops_feeds;
mod namespace_feeds;
mod node_feeds;
mod policy_feeds;
mod request_feeds;
mod route_feeds;
mod served;
mod slice_feeds;
mod trackers;
mod wake_backend;
mod workload_feeds;

pub use clients::{Clients, clients_for};
use election::{Resync, elect, follow_leadership, start_workers};
use feeds::Feeds;
use foo_feeds::{foo_feeds, ready_once_listed};
use gitops_feeds::owner_feed;
use policy_feeds::{FirstListings, Relist};
pub use served::RunError;
use slice_feeds::SliceInputs;
use trackers::{TrackerSettings, Trackers};
pub use wake_backend::apart as wake_backend;
use workload_feeds::{
    WorkloadWatches, await_levers, give_back_memory_once, hpa_feed, lock, relist_namespace,
    stop_waiting_in_time,
};

use crate::{
    activity::prometheus::Prometheus,
    commands::cli::RunArgs,
    foo::FooContext,
    ops::{http::Health, metrics::Metrics},
    runtime::{
        events::Events,
        outage::Outage,
        worker::Workers,
        workqueue::{Enqueue, RateLimit, WorkQueue},
        writes::Writes,
    },
    scaling::{
        ScalingContext,
        gitops::{Tool, owners::Owners},
        hpa::HpaIndex,
        idle::{Activity, Counter},
        key::ScalingKey,
        on_demand::request::Carrying,
        savings::{Savings, SavingsContext},
        timer::{Timer, system_clock},
    },
    wake::{self, host_conflicts::HostConflicts},
    work::{Reconcilers, WorkKey},
    workloads::{last_seen::LastSeen, objects, target::TargetKind},
};

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
    let listener = served::bind(args.http_addr, &metrics).await?;
    served::say_what_is_not_served(args);
    let namespace = args.namespace.as_deref();
    let [grace, max_override, warm_up, step_timeout] = [
        args.grace.period,
        args.max_override,
        args.warm_up,
        args.wake_step.timeout,
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
    let namespaces = namespace_feeds::namespace_schedules(args, &client);
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
    let trackers = kinds.iter().map(|kind| (*kind, settings.tracker(*kind)));
    let tracked = Trackers::new(trackers.collect());

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
        step_timeout,
    };
    let wake_slices = slice_feeds::start(args, &client, slice_inputs, &mut feeds);
    let nights = node_feeds::start(
        args,
        &client,
        (&scaling_queue, &events, &outage, &metrics),
        &mut feeds,
    );
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
    let namespaces_listed = namespaces_gate.subscribe();
    tokio::spawn(stop_waiting_in_time(namespaces_gate, hpas.clone()));
    // The GitOps owners, and what routes requests by host for the wake-up backend:
    // cluster-wide, as a namespaced install cannot read them.
    if namespace.is_none() {
        for tool in Tool::all() {
            let paused = (&scaling_queue, &metrics.gitops_paused_owners);
            let feed = owner_feed(&client, tool, &owners, &last_seen, paused, &outage);
            feeds.start(tool.spec().plural, feed);
        }
        if args.wakes_on_request() {
            route_feeds::start_all(&client, &namespaces, &outage, &mut feeds);
        }
    }
    watches.start_later(later, &workloads_listed, &mut feeds);
    let requests = request_feeds::start(&client, namespace, (&queue, &outage), &mut feeds);

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
        requests: requests.clone(),
    };
    tokio::spawn(follow_leadership(
        is_leader.clone(),
        metrics.clone(),
        resync,
    ));
    let served = (health.clone(), registry, &metrics);
    let listener = served::serve(listener, served, &queue, &timer);
    let wakes = wake::warm_up::start(clients.wake, args.wake_kube_qps(), &namespaces, &metrics);
    let opencost = (args.prometheus_url.as_deref()).map(|url| args.opencost.source(url));
    let mut savings = Savings::new(args.prices.table.clone(), scaling_queue.clone());
    // OpenCost prices nodes, and the nodes are read (not a namespaced install): each sleep's
    // saving is priced at the nodes its Pods ran on.
    if opencost.is_some() && nights.is_some() {
        savings = savings.recording_pods(client.clone());
    }
    let ledger = SavingsContext {
        client: client.clone(),
        namespace: args.lease.controller_namespace(&client),
        savings: savings.clone(),
        last_seen: last_seen.clone(),
        namespaces: namespaces.clone(),
        metrics: metrics.clone(),
        writes: Writes::new(events.clone(), args.dry_run),
        opencost,
        nodes: nights.as_ref().map(|nights| nights.nodes.clone()),
    };
    // The nodes an autoscaler takes away at night are priced as OpenCost last showed them.
    if let Some(own) = (ledger.opencost.as_ref()).and_then(|opencost| opencost.own.clone()) {
        tokio::spawn(own.keep_reading());
    }
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
    .with_workloads_listed(workloads_listed)
    .with_kinds(tracked.kinds())
    .with_savings(savings.clone())
    .with_nights(nights.as_ref().map(|nights| nights.signals.clone()));
    let carrying = Carrying {
        client: clients.asked.clone(),
        namespaces: namespaces.clone(),
        default_timezone: args.default_timezone.zone,
        max_override,
        writes: Writes::new(events.clone(), args.dry_run),
        listed: namespaces_listed,
        budget: clients.asked_budget,
    };
    let reconcilers = Arc::new(Reconcilers {
        foo: FooContext {
            client,
            foos: foo_store,
            owned_deployments: owned_store.clone(),
            events: events.clone(),
        },
        slices: wake_slices,
        requests: carrying.requests(requests.wakes),
        overrides: carrying.requests(requests.overrides),
        host_conflicts: HostConflicts::new(namespaces, events),
        activity,
        declarations: Some(declarations),
        nights,
        savings: Some(ledger),
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
    let worker_tasks = start_workers(args, workers, &is_leader, &health);
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
    feeds.stop();
    Ok(())
}
