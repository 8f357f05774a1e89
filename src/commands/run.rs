//! `cronscaler run`, the wiring: watches feed caches, the tracker and the shared workqueue;
//! workers take keys from the queue while this replica leads.

use std::{
    collections::BTreeMap,
    future::Future,
    net::SocketAddr,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use futures::{FutureExt as _, StreamExt};
use k8s_openapi::api::{
    apps::v1::Deployment, autoscaling::v2::HorizontalPodAutoscaler, core::v1::Namespace,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    client::ClientBuilder,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, reflector, watcher},
};

use prometheus_client::metrics::gauge::Gauge;
use tokio::{
    net::TcpListener,
    sync::{oneshot, watch},
    task::JoinHandle,
};

mod gitops_feeds;
mod policy_feeds;
mod route_feeds;
mod slice_feeds;
mod trackers;

use policy_feeds::{FirstListings, Relist};
use trackers::{Tracked, Trackers};

use crate::{
    activity::prometheus::Prometheus,
    commands::cli::RunArgs,
    foo::{FOO_LABEL, Foo, FooContext, controlling_foo},
    ops::{
        descriptors,
        http::{self, AliveGuard, Health},
        listener::Acceptor,
        memory,
        metrics::{KindLabels, Metrics},
    },
    runtime::{
        api_errors::is_status,
        budget::RequestBudget,
        events::Events,
        key::ObjectKey,
        leader::{self, LeaderConfig},
        outage::Outage,
        paging::all_pages,
        watch::{WatchBackoff, drive, touched},
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
        last_seen::LastSeen,
        namespaces::NamespaceSchedules,
        objects,
        policies::declarations::Declarations,
        routes::ROUTES,
        target::{TargetKind, creation_time},
        timer::{Clock, Timer, system_clock},
        tracker::Tracker,
        wake_hosts,
        watched_object::WatchedObject,
        writers,
    },
    schedule::{AWAKE_UNTIL, OVERRIDE_KEYS, overrides},
    wake::{
        self,
        backend::Backend,
        route::TrustedProxies,
        slices::{WakeSlices, Written},
    },
    work::{Reconcilers, WorkKey},
};

/// The process's API clients, for the cluster of the current kubeconfig or in-cluster.
#[derive(Clone)]
pub struct Clients {
    /// The controller's: every request goes through one `--kube-qps` / `--kube-burst` budget.
    pub controller: Client,
    /// The wake-up backend's own, whose requests never queue behind the controller's (lease
    /// renewals, scaling), nor the controller's behind its; its budget, `--wake-kube-qps`, is
    /// kept by the backend (`wake::cluster`), which would rather not read than wait.
    pub wake: Client,
}

pub fn clients_for(config: kube::Config, args: &RunArgs) -> Result<Clients, kube::Error> {
    Ok(Clients {
        controller: ClientBuilder::try_from(config.clone())?
            .with_layer(&RequestBudget::new(args.kube_qps, args.kube_burst))
            .build(),
        wake: Client::try_from(config)?,
    })
}

/// Raises the open-files limit to what the kernel allows, says so, and returns the limit in
/// force: the wake-up backend's connection cap comes from it.
fn raise_open_files_limit() -> u64 {
    match descriptors::raise_limit() {
        Ok(open_files) => {
            tracing::info!(
                was = open_files.was,
                is = open_files.is,
                wake_connections = descriptors::connection_cap(open_files.is),
                kept_for_the_controller = descriptors::KEPT_FOR_THE_CONTROLLER,
                "open-files limit raised to the hard limit; the wake-up backend holds at most wake_connections connections"
            );
            open_files.is
        }
        Err(error) => {
            let fallback = 1024;
            tracing::warn!(%error, fallback, "could not read or raise the open-files limit; assuming the usual soft limit");
            fallback
        }
    }
}

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
    let open_files = raise_open_files_limit();
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

    // Foos are watched whether or not the CRD is installed: without it the watch retries every
    // few seconds and the Foo controller starts the moment it appears. Scheduled scaling of
    // Deployments never waits for this cache.
    let (foo_store, foo_writer) = reflector::store();
    let foo_watch = watcher(
        scoped_api::<Foo>(&client, namespace),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default())
    .reflect(foo_writer);
    let foo_feed = {
        let (schedules, queue, clock) = (foo_schedules.clone(), queue.clone(), clock.clone());
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
        scoped_api::<Deployment>(&client, namespace),
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
            last_seen: last_seen.clone(),
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

/// Every object of a kind, its metadata and sleep value only, fed to its tracker. Small pages keep the start-up
/// peak low: a page is decoded whole, and objects can carry large annotations
/// (last-applied-configuration). The first list waits for `after` (the kinds listed before
/// this one, at most [`FIRST_LISTING_WAIT`], so one that cannot be listed holds back no other),
/// and says on `listed` when it is done, or cannot be (a kind not installed, or forbidden: it is
/// taken in when it can be, and `cronscaler_kind_ready` says which it is).
fn workload_feed(
    client: &Client,
    namespace: Option<&str>,
    (kind, schedules): (TargetKind, &Arc<Mutex<Tracker>>),
    clock: &Clock,
    outage: &Outage,
    (after, listed): (watch::Receiver<bool>, watch::Sender<bool>),
    metrics: &Metrics,
) -> impl Future<Output = ()> + use<> {
    let api: Api<WatchedObject> = objects::api(client, kind, namespace);
    let ready = metrics
        .kind_ready
        .get_or_create(&KindLabels {
            kind: kind.spec().qualified(),
        })
        .clone();
    let told = Arc::new(AtomicBool::new(false));
    let watch = watcher(api, watcher::Config::default().page_size(LIST_PAGE_SIZE))
        .backoff(WatchBackoff::default())
        .inspect({
            let listed = listed.clone();
            let (client, namespace) = (client.clone(), namespace.map(String::from));
            move |item| match item {
                // Listed: ready once it may be patched too, which a grant may change at any
                // time, so it is asked at every (re)list.
                Ok(watcher::Event::InitDone) => {
                    let (client, namespace) = (client.clone(), namespace.clone());
                    let (ready, told) = (ready.clone(), told.clone());
                    tokio::spawn(async move {
                        let patchable = objects::may_patch(&client, kind, namespace.as_deref())
                            .await
                            // Not known: the patch itself will say.
                            .unwrap_or(true);
                        ready.set(i64::from(patchable));
                        if patchable {
                            told.store(false, Ordering::Relaxed);
                        } else if !told.swap(true, Ordering::Relaxed) {
                            let spec = kind.spec();
                            tracing::warn!(
                                kind = %spec.qualified(),
                                "the controller may not patch {} in {}: they are watched but \
                                 none is put to sleep until it is granted (docs/reference.md, Kinds)",
                                spec.plural,
                                spec.group,
                            );
                        }
                    });
                }
                Ok(_) => {}
                Err(_) => {
                    ready.set(0);
                    listed.send_replace(true);
                }
            }
        });
    let (schedules, clock, outage) = (schedules.clone(), clock.clone(), outage.clone());
    let what = kind.spec().plural;
    let mut after = after;
    async move {
        // Listed before the Namespaces' schedules are known, a workload would be looked at
        // twice, or read for nothing: that wait has a deadline of its own.
        let gone = matches!(
            tokio::time::timeout(FIRST_LISTING_WAIT, after.wait_for(|done| *done)).await,
            Ok(Err(_))
        );
        if gone {
            return;
        }
        drive(watch, what, outage, move |event| {
            if matches!(event, watcher::Event::InitDone) {
                listed.send_replace(true);
            }
            lock(&schedules).handle(event, clock())
        })
        .await
    }
}

/// Feeds Namespaces' schedules to `namespaces`, says when they have been listed once, and when a
/// Namespace's schedule changes lists its workloads again, so the trackers take in those that
/// now follow it (they keep nothing of workloads without a schedule) and let go of the others.
fn namespace_feed(
    namespaces: NamespaceSchedules,
    relist: Relist,
    outage: &Outage,
    first: Arc<FirstListings>,
    queue: WorkQueue<WorkKey>,
    wake_slices: bool,
    activity: Activity,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(relist.client.clone()),
        watcher::Config::default().page_size(LIST_PAGE_SIZE),
    )
    .backoff(WatchBackoff::default());
    let mut listed_once = false;
    drive(watch, "Namespaces", outage.clone(), move |event| {
        let changed: Vec<String> = match event {
            watcher::Event::Apply(namespace) | watcher::Event::InitApply(namespace) => {
                let name = namespace.name_any();
                let woken = || {
                    (namespaces.annotations_of(&name))
                        .and_then(|annotations| annotations.get(AWAKE_UNTIL).cloned())
                };
                let woken_before = woken();
                let annotated = namespaces.update(&name, namespace.uid(), namespace.annotations());
                // A wake (by a request or a person) is a use, for sleep when idle.
                let woken_now = woken();
                if woken_now.is_some() && woken_now != woken_before {
                    activity.used(&name, (relist.clock)());
                }
                // So is its making: a Namespace made under a policy with `idle-after` is not
                // put to sleep the first time it is looked at.
                if let Some(created) = creation_time(&namespace.metadata) {
                    activity.used(&name, created);
                }
                let labelled = namespaces.set_labels(&name, namespace.labels());
                end_override_in_time(&queue, &name, namespace.annotations(), (relist.clock)());
                namespaces.note_setter(
                    &name,
                    OVERRIDE_KEYS.into_iter().find_map(|key| {
                        writers::annotation_setter(namespace.managed_fields(), key)
                    }),
                );
                let changed = annotated || labelled;
                if changed {
                    for contesting in wake_hosts::to_look_at(&namespaces, &name) {
                        queue.add(ScalingKey::WakeHosts(contesting).into());
                    }
                    if wake_slices {
                        queue.add(WorkKey::WakeSlices(name.clone()));
                    }
                }
                changed.then_some(name).into_iter().collect()
            }
            watcher::Event::Delete(namespace) => {
                namespaces.forget(&namespace.name_any());
                activity.forget(&namespace.name_any());
                Vec::new()
            }
            watcher::Event::InitDone => {
                let opened_already = first.open();
                first.arrived(policy_feeds::NAMESPACES);
                // Workloads the watches took in before the Namespaces' schedules were known
                // (the gate opened on its own) are looked at again in the scheduled ones.
                let late = !std::mem::replace(&mut listed_once, true) && opened_already;
                if late {
                    namespaces.scheduled()
                } else {
                    Vec::new()
                }
            }
            watcher::Event::Init => Vec::new(),
        };
        relist.namespaces(&first, changed);
        relist.statuses(&first, &namespaces);
    })
}

/// Has the Namespace's override on demand taken away when it runs out (at once if it has).
fn end_override_in_time(
    queue: &WorkQueue<WorkKey>,
    namespace: &str,
    annotations: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) {
    let until = overrides(annotations)
        .map(|(_, _, on_demand)| on_demand.until)
        .min();
    if let Some(until) = until {
        let key = WorkKey::from(ScalingKey::NamespaceOverride(namespace.to_string()));
        queue.add_after(key, (until - now).to_std().unwrap_or_default());
    }
}

/// Lists the workloads of a namespace whose schedule changed, for their trackers, retrying a
/// few times; a list that keeps failing leaves the workloads to their next watch event.
async fn relist_namespace(
    client: Client,
    namespace: String,
    workloads: Vec<Tracked>,
    clock: Clock,
) {
    for (kind, tracker) in workloads {
        let mut delays = WatchBackoff::default().take(5);
        loop {
            let listed = relist(&client, kind, &namespace, &tracker, &clock).await;
            match (listed, delays.next()) {
                (Ok(()), _) => break,
                // Not installed: nothing of it to follow the schedule.
                (Err(error), _) if is_status(&error, 404) => break,
                (Err(error), Some(delay)) => {
                    tracing::debug!(%error, namespace, %kind, "listing a namespace's workloads failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                (Err(error), None) => {
                    tracing::warn!(%error, namespace, %kind, "could not list a namespace's workloads after its schedule changed; they follow it from their next change");
                    break;
                }
            }
        }
    }
}

async fn relist(
    client: &Client,
    kind: TargetKind,
    namespace: &str,
    tracker: &Mutex<Tracker>,
    clock: &Clock,
) -> Result<(), kube::Error> {
    let api: &Api<WatchedObject> = &objects::api(client, kind, Some(namespace));
    let objects = all_pages(
        LIST_PAGE_SIZE,
        |params| async move { api.list(&params).await },
    )
    .await?;
    lock(tracker).relist_namespace(namespace, &objects, clock());
    Ok(())
}

/// Every HPA, whole (they are few and small), into the index the scaling workers and trackers
/// read; the index keeps of each only its target, bounds and record. Targets whose HPAs are new,
/// retargeted or (re)listed are checked by their tracker, from what it already knows.
fn hpa_feed(
    client: &Client,
    namespace: Option<&str>,
    hpas: &HpaIndex,
    workloads: Trackers,
    clock: &Clock,
    outage: &Outage,
) -> impl Future<Output = ()> + use<> {
    let watch = watcher(
        scoped_api::<HorizontalPodAutoscaler>(client, namespace),
        watcher::Config::default(),
    )
    .backoff(WatchBackoff::default());
    let (hpas, clock) = (hpas.clone(), clock.clone());
    drive(
        watch,
        "HorizontalPodAutoscalers",
        outage.clone(),
        move |event| {
            let now = clock();
            for target in hpas.handle(event) {
                for (kind, tracker) in workloads.of(|kind| kind.hpa_target) {
                    if kind == target.kind {
                        lock(&tracker).recheck(&target, now);
                    }
                }
            }
        },
    )
}

fn lock(tracker: &Mutex<Tracker>) -> MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Leadership: the elected one, or always this replica without `--leader-elect`.
enum Election {
    /// Holds the sender so the receivers keep seeing `true`.
    Off { _always: watch::Sender<bool> },
    On {
        release: oneshot::Sender<()>,
        elector: JoinHandle<()>,
    },
}

impl Election {
    async fn release(self) {
        match self {
            Election::Off { .. } => {}
            Election::On { release, elector } => {
                let _ = release.send(());
                if tokio::time::timeout(Duration::from_secs(10), elector)
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "the lease was not released in time; a standby takes over when it expires"
                    );
                }
            }
        }
    }
}

fn elect(client: &Client, args: &RunArgs) -> (watch::Receiver<bool>, Election) {
    if !args.leader_elect {
        let (always, is_leader) = watch::channel(true);
        return (is_leader, Election::Off { _always: always });
    }
    let namespace = args
        .lease
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let config = LeaderConfig::new(namespace, args.lease.name.clone(), identity);
    let (release, released) = oneshot::channel::<()>();
    let (is_leader, elector) = leader::spawn(client.clone(), config, async {
        let _ = released.await;
    });
    (is_leader, Election::On { release, elector })
}

async fn follow_leadership(mut is_leader: watch::Receiver<bool>, gauge: Gauge, resync: impl Fn()) {
    loop {
        let leading = *is_leader.borrow_and_update();
        gauge.set(i64::from(leading));
        if leading {
            tracing::info!(leader = true, "leading: resyncing, workers act");
            resync();
        } else {
            tracing::info!(leader = false, "standing by: workers let go of every key");
        }
        if is_leader.changed().await.is_err() {
            return;
        }
    }
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
