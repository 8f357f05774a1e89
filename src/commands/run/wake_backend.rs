//! The wake-up backend, where `--wake-addr` asks for it: its listener, its own client and
//! request budget, and what it believes of the proxies in front of it. Also without it, the
//! warm-up of every wake is measured.

use std::sync::Arc;

use chrono::TimeDelta;
use kube::Client;
use tokio::{sync::mpsc::UnboundedSender, task::JoinHandle};

use super::RunError;
use crate::{
    commands::cli::RunArgs,
    namespaces::NamespaceSchedules,
    ops::{descriptors, listener::Acceptor, metrics::Metrics},
    wake::{self, backend::Backend, route::TrustedProxies},
};

/// The warm-up measure, and the backend when `--wake-addr` is given: the sender tells the
/// measure of each wake the scaler makes.
pub(super) fn start(
    args: &RunArgs,
    client: Client,
    namespaces: &NamespaceSchedules,
    metrics: &Metrics,
    open_files: u64,
) -> Result<(UnboundedSender<String>, Option<JoinHandle<()>>), RunError> {
    let cluster = Arc::new(wake::cluster::Cluster::new(
        client,
        args.wake_kube_qps(),
        namespaces.clone(),
        metrics.clone(),
    ));
    let (wakes, woken) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(wake::warm_up::measure(
        woken,
        cluster.clone(),
        namespaces.clone(),
        metrics.clone(),
    ));
    let Some(addr) = args.wake_addr else {
        return Ok((wakes, None));
    };
    let connections = descriptors::connection_cap(open_files);
    let listener = wake::server::bind(addr, connections)
        .map_err(|source| RunError::ListenWake { addr, source })?;
    if args.namespace.is_some() {
        tracing::warn!(
            "the wake-up backend wakes nothing in a namespaced install (--namespace): it cannot read Namespaces"
        );
    }
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
    let served = tokio::spawn(wake::server::serve(acceptor, Arc::new(backend), limits));
    Ok((wakes, Some(served)))
}
