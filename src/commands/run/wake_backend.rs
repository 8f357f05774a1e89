//! `cronscaler wake-backend`: the wake-up backend as the process of its own that faces the
//! internet and holds no power but asking: its listener, its own client and request budget,
//! and what it believes of the proxies in front of it. The controller (`run`) listens for
//! nobody.

use std::{future::Future, sync::Arc};

use chrono::TimeDelta;
use tokio::task::JoinHandle;

use super::{
    Clients, RunError, feeds::Feeds, namespace_feeds, policy_feeds::FirstListings, route_feeds,
    served,
};
use crate::{
    commands::cli::RunArgs,
    namespaces::NamespaceSchedules,
    ops::{
        descriptors,
        http::{self, Health},
        listener::Acceptor,
        metrics::Metrics,
    },
    runtime::outage::Outage,
    wake::{self, backend::Backend, route::TrustedProxies},
};

/// `cronscaler wake-backend`: the backend as a process of its own, taking `run`'s flags and
/// using its own (`--wake-addr`, `--wake-trusted-proxies`, `--wake-cooldown`,
/// `--wake-kube-qps`, `--http-addr`) and those that say what a Namespace follows
/// (`--default-timezone`, `--exclude-namespaces`, `--kube-downscaler-annotations`). It watches
/// what Namespaces follow and what routes a request to one, reads readiness, and asks the
/// controller for a wake with a `WakeRequest`; it writes nothing else, and holds no lease:
/// every replica answers. Ready once what Namespaces follow is listed.
pub async fn apart(
    clients: Clients,
    args: &RunArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let Some(addr) = args.wake_addr else {
        return Err(RunError::NoWakeAddr);
    };
    let client = clients.wake;
    let (metrics, registry) = Metrics::new();
    let health = Arc::new(Health::default());
    let open_files = descriptors::raise_limit_and_say();
    let listener = served::bind(args.http_addr, &metrics).await?;
    let namespaces = namespace_feeds::namespace_schedules(args, &client);
    let (outage, mut feeds) = (Outage::default(), Feeds::new(health.clone()));
    let gate = Arc::new(tokio::sync::watch::Sender::new(false));
    let mut listed = gate.subscribe();
    let first = FirstListings::new(gate);
    namespace_feeds::start_for_backend(&client, &namespaces, &outage, &first, &mut feeds);
    route_feeds::start_all(&client, &namespaces, &outage, &mut feeds);
    let cluster = Arc::new(wake::cluster::Cluster::new(
        client,
        args.wake_kube_qps(),
        namespaces.clone(),
        metrics.clone(),
    ));
    let served = serve(args, addr, (cluster, &namespaces, &metrics), open_files)?;
    let nothing_to_refresh: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
    let probes = tokio::spawn(http::serve(
        listener,
        health.clone(),
        Arc::new(registry),
        nothing_to_refresh,
    ));
    let ready = tokio::spawn(async move {
        if listed.wait_for(|listed| *listed).await.is_ok() {
            health.set_ready(true);
            tracing::info!("what Namespaces follow is listed: ready");
        }
    });
    shutdown.await;
    tracing::info!("shutting down");
    for task in [served, probes, ready] {
        task.abort();
    }
    feeds.stop();
    Ok(())
}

/// Serves the backend on `addr`.
fn serve(
    args: &RunArgs,
    addr: std::net::SocketAddr,
    (cluster, namespaces, metrics): (Arc<wake::cluster::Cluster>, &NamespaceSchedules, &Metrics),
    open_files: u64,
) -> Result<JoinHandle<()>, RunError> {
    let connections = descriptors::connection_cap(open_files);
    let listener = wake::server::bind(addr, connections)
        .map_err(|source| RunError::ListenWake { addr, source })?;
    let settings = wake::answer::Settings {
        default_timezone: args.default_timezone.zone,
        cooldown: TimeDelta::from_std(args.wake_cooldown).unwrap_or(TimeDelta::MAX),
    };
    let backend = Backend::new(cluster, namespaces.clone(), metrics.clone(), settings);
    let limits = wake::server::Limits {
        connections,
        trusted: TrustedProxies::new(args.wake_trusted_proxies.clone()),
    };
    tracing::info!(
        trusted_proxies = ?args.wake_trusted_proxies,
        wake_kube_qps = args.wake_kube_qps(),
        "the wake-up backend believes X-Namespace, X-Forwarded-Host and X-Original-URI only from its trusted proxies"
    );
    let acceptor = Acceptor::new(listener, "wake-up backend", metrics.accept_errors("wake"));
    Ok(tokio::spawn(wake::server::serve(
        acceptor,
        Arc::new(backend),
        limits,
    )))
}
