//! `cronscaler run`, the wiring: watches feed caches, the tracker and the shared workqueue;
//! workers take keys from the queue while this replica leads.

use std::{
    future::Future,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use chrono::TimeDelta;
use futures::FutureExt as _;
use kube::{Api, Client, Resource, runtime::reflector};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};

mod clients;
mod election;
mod foo_feeds;
mod gitops_feeds;
mod namespace_feeds;
mod policy_feeds;
mod route_feeds;
mod slice_feeds;
mod trackers;
mod workload_feeds;

pub use clients::{Clients, clients_for};
use election::{elect, follow_leadership};
use foo_feeds::foo_feeds;
use namespace_feeds::{end_override_in_time, namespace_feed};
use workload_feeds::{hpa_feed, lock, relist_namespace, workload_feed};

use policy_feeds::{FirstListings, Relist};
use trackers::Trackers;

use crate::{
    activity::prometheus::Prometheus,
    commands::cli::RunArgs,
    foo::FooContext,
    namespaces::{NamespaceSchedules, policies::declarations::Declarations},
    ops::{
        descriptors,
        http::{self, AliveGuard, Health},
        listener::Acceptor,
        memory,
        metrics::{KindLabels, Metrics},
    },
    runtime::{
        events::Events,
        key::ObjectKey,
        outage::Outage,
        worker::{Workers, worker},
        workqueue::{Enqueue, RateLimit, WorkQueue},
    },
    scaling::{
        ScalingContext,
        asleep::AsleepGauges,
        gitops::{Tool, owners::Owners},
        hpa::HpaIndex,
        idle::{Activity, Counter},
        key::ScalingKey,
        timer::{Timer, system_clock},
        tracker::Tracker,
    },
    wake::{
        self,
        backend::Backend,
        host_conflicts::HostConflicts,
        route::TrustedProxies,
        route_kinds::ROUTES,
        slices::{WakeSlices, Written},
    },
    work::{Reconcilers, WorkKey},
    workloads::{last_seen::LastSeen, objects, target::TargetKind},
};

/// How long the workload watches wait for the Namespaces' first listing, and scaling for the
/// HPAs'.
const FIRST_LISTING_WAIT: Duration = Duration::from_secs(30);
/// How often readiness looks whether Deployments have been listed.
const READY_LOOK_EVERY: Duration = Duration::from_millis(100);

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

    let queue = WorkQueue::<WorkKey>::new(RateLimit::default());
    let clock = system_clock();
    let scaling_queue = Enqueue::<ScalingKey>::new(queue.clone());
    let timer = Timer::spawn(scaling_queue.clone(), clock.clone());
    let outage = Outage::default();
    tokio::spawn(outage.clone().probe(client.clone(), queue.clone()));
    let namespace = args.namespace.as_deref();
    let grace = TimeDelta::from_std(args.grace_period).unwrap_or(TimeDelta::MAX);
    let max_override = TimeDelta::from_std(args.max_override).unwrap_or(TimeDelta::MAX);
    let counter = (args.prometheus_url.as_deref()).map(|url| Counter {
        prometheus: Prometheus::new(url),
        query: args.activity_query.clone(),
    });
    let activity = Activity::new(counter, clock());
    let warm_up = TimeDelta::from_std(args.warm_up).unwrap_or(TimeDelta::MAX);
    let excluded = args
        .excluded
        .exclude_namespaces
        .iter()
        .filter(|namespace| !namespace.is_empty())
        .cloned()
        .chain([client.default_namespace().to_string()]);
    let namespaces = if namespace.is_some() {
        tracing::info!(
            "namespace schedules are off: a namespaced install (--namespace) cannot read Namespaces"
        );
        NamespaceSchedules::off(excluded)
    } else {
        NamespaceSchedules::watched(excluded)
    }
    .reading_kube_downscaler(args.kube_downscaler.read);
    let hpas = HpaIndex::default();
    let last_seen = LastSeen::default();
    let tracker = {
        let (timer, scaling_queue, namespaces) =
            (timer.clone(), scaling_queue.clone(), namespaces.clone());
        let (zone, metrics, hpas, last_seen, activity) = (
            args.default_timezone.zone,
            metrics.clone(),
            hpas.clone(),
            last_seen.clone(),
            activity.clone(),
        );
        move |kind| {
            let tracker = Tracker::new(
                timer.clone(),
                scaling_queue.clone(),
                zone,
                kind,
                namespaces.clone(),
                grace,
                metrics.invalid_schedules.clone(),
            );
            let asleep = AsleepGauges {
                objects: metrics.objects_asleep.clone(),
                replicas: metrics.replicas_asleep.clone(),
            };
            Arc::new(Mutex::new(
                tracker
                    .with_hpas(hpas.clone())
                    .with_last_seen(last_seen.clone())
                    .with_max_override(max_override)
                    .with_warm_up(warm_up)
                    .with_asleep(asleep)
                    .with_activity(activity.clone()),
            ))
        }
    };
    let (kinds, later) = objects::resolve(&client, &args.kinds).await;
    // A workload's lever is known from the lever's own spec: no look before the levers served
    // now are listed (one not served has nothing to list, and is taken in when it is).
    for kind in (kinds.iter().copied()).filter(|kind| kind.spec().levers.is_some()) {
        let spec = kind.spec();
        let gvk = kube::api::GroupVersionKind::gvk(spec.group, spec.version, spec.name);
        if kube::discovery::pinned_kind(&client, &gvk).await.is_ok() {
            hpas.await_levers([kind]);
        }
    }
    let tracked = Trackers::new(kinds.iter().map(|kind| (*kind, tracker(*kind))).collect());
    // A Foo's schedule is read from the Foo controller's own watch of Foos.
    let foo_schedules = tracked
        .all()
        .into_iter()
        .find(|(kind, _)| *kind == TargetKind::Foo)
        .map(|(_, tracker)| tracker.clone());

    let ((foo_store, foo_feed), (owned_store, owned_feed)) = foo_feeds(
        &client,
        namespace,
        foo_schedules.clone(),
        &queue,
        &clock,
        &outage,
    );

    // In a namespaced install there are no Namespaces to wait for.
    let namespaces_gate = Arc::new(watch::Sender::new(namespace.is_some()));
    let namespaces_listed = namespaces_gate.subscribe();
    let first_listings = FirstListings::new(namespaces_gate.clone());
    let relist = Relist {
        client: client.clone(),
        workloads: tracked.clone(),
        clock: clock.clone(),
        queue: queue.clone(),
        namespaces: namespaces.clone(),
    };
    let events = Events::new(client.clone(), std::env::var("POD_NAME").ok());
    // The EndpointSlice wake: with the backend, over the whole cluster.
    let ((ours, ours_writer), (backend, backend_writer)) = (reflector::store(), reflector::store());
    let wake_slices = match (namespace, args.wake_addr) {
        (None, Some(addr)) => Some(WakeSlices {
            client: client.clone(),
            namespaces: namespaces.clone(),
            ours,
            backend,
            backend_service: ObjectKey::new(
                (args.wake_service.namespace.as_deref()).unwrap_or(client.default_namespace()),
                args.wake_service.name.clone(),
            ),
            port: addr.port(),
            default_timezone: args.default_timezone.zone,
            dry_run: args.dry_run,
            step_timeout: TimeDelta::from_std(args.wake_step_timeout).unwrap_or(TimeDelta::MAX),
            events: events.clone(),
            owner: Some(args.wake_slices_owner.clone()).filter(|name| !name.is_empty()),
            written: Written::default(),
            levers: hpas.clone(),
        }),
        _ => None,
    };
    let (policy_store, policy_cache) = reflector::store();
    let (sleep_schedule_store, sleep_schedule_cache) = reflector::store();
    let namespace_feeds = namespace.is_none().then(|| {
        (
            namespace_feed(
                namespaces.clone(),
                relist.clone(),
                &outage,
                first_listings.clone(),
                queue.clone(),
                wake_slices.is_some(),
                activity.clone(),
            ),
            policy_feeds::sleep_policy_feed(
                &client,
                namespaces.clone(),
                &outage,
                first_listings.clone(),
                relist.clone(),
                policy_cache,
            ),
            policy_feeds::sleep_schedule_feed(
                &client,
                namespaces.clone(),
                &outage,
                first_listings.clone(),
                relist,
                sleep_schedule_cache,
            ),
        )
    });

    // Every object of every kind but the Foo, decoded only as far as the trackers read it: they
    // keep what they need of the scheduled ones. Their first lists go one after another, so
    // the start-up peak holds one page being decoded, not one per kind.
    let mut after = namespaces_listed.clone();
    let mut kind_feeds = Vec::new();
    for (kind, tracker) in tracked
        .all()
        .into_iter()
        .filter(|(kind, _)| *kind != TargetKind::Foo)
    {
        let listed = watch::Sender::new(false);
        let feed = workload_feed(
            &client,
            namespace,
            (kind, &tracker),
            &clock,
            &outage,
            (after, listed.clone()),
            &metrics,
        );
        after = listed.subscribe();
        kind_feeds.push((kind, feed));
    }
    let workloads_listed = after;
    tokio::spawn({
        let mut listed = workloads_listed.clone();
        async move {
            if listed.wait_for(|done| *done).await.is_ok() {
                memory::give_back_free_memory();
            }
        }
    });

    let hpa_feed = hpa_feed(&client, namespace, &hpas, tracked.clone(), &clock, &outage);
    // Namespaces or HPAs that cannot be listed (RBAC without them, an old ClusterRole) must not
    // stop scheduled scaling: after a while it goes on without them, and takes them in when
    // they are listed.
    tokio::spawn({
        let (gate, hpas) = (namespaces_gate.clone(), hpas.clone());
        async move {
            tokio::time::sleep(FIRST_LISTING_WAIT).await;
            if !gate.send_replace(true) {
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
    });

    let mut feeds: Vec<JoinHandle<()>> = kind_feeds
        .into_iter()
        .map(|(kind, feed)| {
            let alive = health.alive(format!("watch of {}", kind.spec().plural));
            tokio::spawn(while_alive(alive, feed))
        })
        .collect();
    feeds.extend([
        tokio::spawn(while_alive(health.alive("watch of Foos"), foo_feed)),
        tokio::spawn(while_alive(
            health.alive("watch of HorizontalPodAutoscalers"),
            hpa_feed,
        )),
        tokio::spawn(while_alive(
            health.alive("watch of Deployments owned by Foos"),
            owned_feed,
        )),
    ]);
    // The GitOps owners, cluster-wide: a namespaced install cannot read them.
    let owners = Owners::default();
    if namespace.is_none() {
        feeds.extend(Tool::all().map(|tool| {
            let feed = gitops_feeds::owner_feed(
                &client,
                tool,
                &owners,
                &last_seen,
                (&scaling_queue, &metrics.gitops_paused_owners),
                &outage,
            );
            tokio::spawn(while_alive(
                health.alive(format!("watch of {}", tool.spec().plural)),
                feed,
            ))
        }));
    }
    // What routes requests by host, for the wake-up backend: cluster-wide, as it reads
    // Namespaces.
    if namespace.is_none() && args.wake_addr.is_some() {
        feeds.extend(ROUTES.iter().map(|kind| {
            let feed = route_feeds::route_feed(&client, kind, &namespaces, &outage);
            tokio::spawn(while_alive(
                health.alive(format!("watch of {}", kind.plural)),
                feed,
            ))
        }));
    }
    if let Some(slices) = &wake_slices {
        feeds.extend([
            tokio::spawn(while_alive(
                health.alive("watch of wake-up EndpointSlices"),
                slice_feeds::ours_feed(&client, ours_writer, &queue, &outage),
            )),
            tokio::spawn(while_alive(
                health.alive("watch of the wake-up backend's EndpointSlices"),
                slice_feeds::backend_feed(slices, backend_writer, &queue, &outage),
            )),
            tokio::spawn(while_alive(
                health.alive("watch of Services"),
                slice_feeds::service_feed(slices, &queue, &outage),
            )),
        ]);
    }
    // Kinds `--kinds` named whose CRD is not served yet, each taken in once it is: its tracker
    // joins the others, and its watch starts, after the kinds listed at start.
    feeds.extend(later.into_iter().map(|(name, group)| {
        let ready = metrics.kind_ready.get_or_create(&KindLabels {
            kind: format!("{name}.{group}"),
        });
        ready.set(0);
        let (client, namespace) = (client.clone(), namespace.map(String::from));
        let (tracker, tracked) = (tracker.clone(), tracked.clone());
        let (clock, outage, metrics) = (clock.clone(), outage.clone(), metrics.clone());
        let (health, after) = (health.clone(), workloads_listed.clone());
        tokio::spawn(async move {
            let Some(kind) = objects::watch_for(&client, &name, &group).await else {
                return;
            };
            let schedules = tracker(kind);
            tracked.add(kind, schedules.clone());
            let feed = workload_feed(
                &client,
                namespace.as_deref(),
                (kind, &schedules),
                &clock,
                &outage,
                (after, watch::Sender::new(false)),
                &metrics,
            );
            while_alive(
                health.alive(format!("watch of {}", kind.spec().plural)),
                feed,
            )
            .await;
        })
    }));
    if let Some((namespace_feed, policy_feed, sleep_schedule_feed)) = namespace_feeds {
        feeds.push(tokio::spawn(while_alive(
            health.alive("watch of Namespaces"),
            namespace_feed,
        )));
        feeds.push(tokio::spawn(while_alive(
            health.alive("watch of SleepPolicies"),
            policy_feed,
        )));
        feeds.push(tokio::spawn(while_alive(
            health.alive("watch of SleepSchedules"),
            sleep_schedule_feed,
        )));
    }

    let (is_leader, election) = elect(&client, args);
    // A replica that comes to lead finds no backlog (standby workers let go of every key), so
    // it queues what is due now: every Foo, the scheduled objects that need a look, the
    // Namespaces' overrides to take away when they run out, and every GitOps owner paused (the
    // night that paused it may have ended while no one led).
    let resync = {
        let (foos, queue, clock) = (foo_store.clone(), queue.clone(), clock.clone());
        let owners = owners.clone();
        let namespaces = namespaces.clone();
        let first_listings = first_listings.clone();
        let trackers = tracked.clone();
        let wake_slices = wake_slices.clone();
        move || {
            let now = clock();
            for (_, tracker) in trackers.all() {
                lock(&tracker).resync(now);
            }
            for namespace in namespaces.scheduled() {
                if let Some(annotations) = namespaces.annotations_of(&namespace) {
                    end_override_in_time(&queue, &namespace, &annotations, now);
                }
            }
            policy_feeds::queue_idle_looks(&queue, &namespaces, namespaces.scheduled());
            for owner in owners.paused() {
                queue.add(WorkKey::Scaling(ScalingKey::GitOpsOwner(owner)));
            }
            for foo in foos.state() {
                if let Some(key) = ObjectKey::of(foo.as_ref()) {
                    queue.add(WorkKey::Foo(key));
                }
            }
            if first_listings.open() {
                policy_feeds::queue_statuses(&queue, &namespaces);
            }
            if let Some(slices) = &wake_slices {
                slice_feeds::look_at_all(slices, &queue);
            }
        }
    };
    tokio::spawn(follow_leadership(
        is_leader.clone(),
        metrics.leader.clone(),
        resync,
    ));

    let refresh: Arc<dyn Fn() + Send + Sync> = {
        let (queue, timer, metrics) = (queue.clone(), timer.clone(), metrics.clone());
        Arc::new(move || {
            metrics
                .workqueue_depth
                .set(i64::try_from(queue.len()).unwrap_or(i64::MAX));
            metrics
                .schedules
                .set(i64::try_from(timer.held()).unwrap_or(i64::MAX));
        })
    };
    let listener = tokio::spawn(http::serve(
        listener,
        health.clone(),
        Arc::new(registry),
        refresh,
    ));

    let wake_cluster = Arc::new(wake::cluster::Cluster::new(
        clients.wake,
        args.wake_kube_qps(),
        namespaces.clone(),
        metrics.clone(),
    ));
    let (wakes, woken) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(wake::warm_up::measure(
        woken,
        wake_cluster.clone(),
        namespaces.clone(),
        metrics.clone(),
    ));
    let wake_backend = match args.wake_addr {
        Some(addr) => {
            let connections = descriptors::connection_cap(open_files);
            let listener = wake::server::bind(addr, connections)
                .map_err(|source| RunError::ListenWake { addr, source })?;
            if namespace.is_some() {
                tracing::warn!(
                    "the wake-up backend wakes nothing in a namespaced install (--namespace): it cannot read Namespaces"
                );
            }
            let settings = wake::answer::Settings {
                default_timezone: args.default_timezone.zone,
                max_override,
                cooldown: TimeDelta::from_std(args.wake_cooldown).unwrap_or(TimeDelta::MAX),
            };
            let backend = Backend::new(wake_cluster, namespaces.clone(), metrics.clone(), settings);
            let limits = wake::server::Limits {
                connections,
                trusted: TrustedProxies::new(args.wake_trusted_proxies.clone()),
            };
            tracing::info!(
                trusted_proxies = ?args.wake_trusted_proxies,
                wake_kube_qps = args.wake_kube_qps(),
                "the wake-up backend believes X-Namespace, X-Forwarded-Host and X-Original-URI only from its trusted proxies"
            );
            let acceptor =
                Acceptor::new(listener, "wake-up backend", metrics.accept_errors("wake"));
            Some(tokio::spawn(wake::server::serve(
                acceptor,
                Arc::new(backend),
                limits,
            )))
        }
        None => None,
    };

    let gitops_queue = scaling_queue.clone();
    let reconcilers = Arc::new(Reconcilers {
        foo: FooContext {
            client: client.clone(),
            foos: foo_store,
            owned_deployments: owned_store.clone(),
            events: events.clone(),
        },
        slices: wake_slices,
        host_conflicts: HostConflicts::new(namespaces.clone(), events.clone()),
        scale: ScalingContext::new(
            client,
            events,
            args.default_timezone.zone,
            args.dry_run,
            metrics.clone(),
        )
        .with_grace(grace, timer.clone())
        .with_max_override(max_override)
        .with_warm_up(warm_up)
        .with_step_timeout(TimeDelta::from_std(args.wake_step_timeout).unwrap_or(TimeDelta::MAX))
        .with_namespaces(namespaces)
        .with_wake_turns(args.max_waking_namespaces, scaling_queue.clone())
        .with_reports(scaling_queue)
        .with_hpas(hpas)
        .with_last_seen(last_seen)
        .with_gitops(owners, args.gitops.mode, gitops_queue)
        .with_wakes(wakes)
        .with_declarations(Declarations {
            policies: policy_store,
            schedules: sleep_schedule_store,
        })
        .with_workloads_listed(workloads_listed)
        .with_kinds(tracked.kinds())
        .with_activity(activity),
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
    // Ready once Deployments could be listed: the API server answers and RBAC lets us watch.
    // Looked at every moment, not awaited: kube's readiness future wakes only the last task
    // that polled it, and a worker's look at the Foo caches (`now_or_never`) polls it too, so
    // an await that began before a Foo was reconciled slept forever, and the Pod never became
    // Ready.
    let readiness = {
        let health = health.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(READY_LOOK_EVERY);
            loop {
                every.tick().await;
                match owned_store.wait_until_ready().now_or_never() {
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
    };

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
    for feed in feeds {
        feed.abort();
    }
    Ok(())
}

async fn while_alive(_alive: AliveGuard, task: impl Future<Output = ()>) {
    task.await;
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
