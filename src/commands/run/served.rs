//! What the controller serves to the cluster: `/healthz`, `/readyz` and `/metrics`, with the
//! gauges that are read only when scraped.

use std::{net::SocketAddr, sync::Arc};

use prometheus_client::registry::Registry;
use tokio::{net::TcpListener, task::JoinHandle};

use crate::{
    ops::{
        http::{self, Health},
        listener::Acceptor,
        metrics::Metrics,
    },
    runtime::workqueue::WorkQueue,
    scaling::timer::Timer,
    work::WorkKey,
};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("listening on {addr} for /healthz, /readyz and /metrics: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "cronscaler wake-backend needs --wake-addr (CRONSCALER_WAKE_ADDR), the address it listens on"
    )]
    NoWakeAddr,
    #[error("listening on {addr} for the wake-up backend (--wake-addr): {source}")]
    ListenWake {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The listener of `/healthz`, `/readyz` and `/metrics`, bound at start so that a port taken
/// fails the start, not a scrape.
pub(super) async fn bind(addr: SocketAddr, metrics: &Metrics) -> Result<Acceptor, RunError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| RunError::Listen { addr, source })?;
    Ok(Acceptor::new(
        listener,
        "HTTP",
        metrics.accept_errors("http"),
    ))
}

/// Says that `run` serves nothing else, where its flags once asked it to serve the wake-up
/// backend (`--wake-addr`), which now runs apart.
pub(super) fn say_what_is_not_served(args: &crate::commands::cli::RunArgs) {
    if args.wake_addr.is_some() {
        tracing::warn!(
            "run listens for nobody: --wake-addr only turns on --wake-on-request; the wake-up \
             backend runs apart, as `cronscaler wake-backend --wake-addr ADDR` (docs/wake-on-request.md)"
        );
    }
}

/// Serves them; the workqueue's depth and the schedules the timer holds are read at each scrape.
pub(super) fn serve(
    listener: Acceptor,
    (health, registry, metrics): (Arc<Health>, Registry, &Metrics),
    queue: &WorkQueue<WorkKey>,
    timer: &Timer,
) -> JoinHandle<()> {
    let refresh: Arc<dyn Fn() + Send + Sync> = {
        let (queue, timer, metrics) = (queue.clone(), timer.clone(), metrics.clone());
        Arc::new(move || {
            let depth = i64::try_from(queue.len()).unwrap_or(i64::MAX);
            metrics.workqueue_depth.set(depth);
            let held = i64::try_from(timer.held()).unwrap_or(i64::MAX);
            metrics.schedules.set(held);
        })
    };
    tokio::spawn(http::serve(listener, health, Arc::new(registry), refresh))
}
