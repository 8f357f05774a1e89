//! The one HTTP listener: `/healthz` (liveness), `/readyz` (readiness), `/metrics` (Prometheus).
//!
//! Liveness means every long-running task of the process (watch feeds, timer, workers, leader
//! election) is still running; a task that ended or panicked makes the process unhealthy, so
//! the kubelet restarts it. An unreachable API server does not: watches back off and resume by
//! themselves, and a restart would not help. Readiness means the caches are synced: a replica is
//! ready as the leader or as a warm standby.

use std::{
    borrow::Cow,
    convert::Infallible,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use crate::ops::{
    listener::{Acceptor, Deadline},
    metrics,
};
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::{body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;

/// How long a request may take, answer written included; an idle connection is closed after as
/// long. A scrape of /metrics takes milliseconds.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
    ended: Mutex<Vec<Cow<'static, str>>>,
}

impl Health {
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Marks a long-running task as alive for as long as the returned guard lives: dropping it,
    /// which a task's end or panic does, makes the process unhealthy.
    pub fn alive(self: &Arc<Self>, task: impl Into<Cow<'static, str>>) -> AliveGuard {
        AliveGuard {
            health: self.clone(),
            task: task.into(),
        }
    }

    pub fn liveness(&self) -> Result<(), String> {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        if ended.is_empty() {
            Ok(())
        } else {
            Err(format!("stopped: {}", ended.join(", ")))
        }
    }

    pub fn readiness(&self) -> Result<(), String> {
        if self.ready.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err("caches not synced yet".into())
        }
    }
}

pub struct AliveGuard {
    health: Arc<Health>,
    task: Cow<'static, str>,
}

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.health
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.task.clone());
    }
}

/// What the listener serves at `path`: status, content type, body.
pub fn respond(
    path: &str,
    health: &Health,
    registry: &Registry,
) -> (StatusCode, &'static str, String) {
    let check = |result: Result<(), String>| match result {
        Ok(()) => (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "ok\n".to_string(),
        ),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain; charset=utf-8",
            format!("{reason}\n"),
        ),
    };
    match path {
        "/healthz" => check(health.liveness()),
        "/readyz" => check(health.readiness()),
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            metrics::render(registry),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /healthz, /readyz or /metrics\n".into(),
        ),
    }
}

/// Serves until the process ends. `refresh` runs before each scrape, to read gauges that are
/// cheaper to sample than to track (e.g. the workqueue depth).
pub async fn serve(
    mut acceptor: Acceptor,
    health: Arc<Health>,
    registry: Arc<Registry>,
    refresh: Arc<dyn Fn() + Send + Sync>,
) {
    if let Ok(addr) = acceptor.local_addr() {
        tracing::info!(%addr, "serving /healthz, /readyz and /metrics");
    }
    loop {
        let (stream, _) = acceptor.accept().await;
        let (health, registry, refresh) = (health.clone(), registry.clone(), refresh.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                if request.uri().path() == "/metrics" {
                    refresh();
                }
                let (status, content_type, body) =
                    respond(request.uri().path(), &health, &registry);
                let response = Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, content_type)
                    .body(Full::new(Bytes::from(body)))
                    .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())));
                async move { Ok::<_, Infallible>(response) }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(
                    TokioIo::new(Deadline::new(stream, REQUEST_DEADLINE)),
                    service,
                )
                .await
            {
                tracing::debug!(%error, "HTTP connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::metrics::Metrics;

    #[test]
    fn readiness_follows_the_caches_and_liveness_the_tasks() {
        let health = Arc::new(Health::default());
        let (_, registry) = Metrics::new();
        assert_eq!(
            respond("/readyz", &health, &registry).0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(respond("/healthz", &health, &registry).0, StatusCode::OK);

        health.set_ready(true);
        assert_eq!(respond("/readyz", &health, &registry).0, StatusCode::OK);

        let guard = health.alive("watch of Foos");
        assert_eq!(respond("/healthz", &health, &registry).0, StatusCode::OK);
        drop(guard);
        let (status, _, body) = respond("/healthz", &health, &registry);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "stopped: watch of Foos\n");
    }

    #[test]
    fn a_panicking_task_makes_the_process_unhealthy() {
        let health = Arc::new(Health::default());
        let task_health = health.clone();
        let panicked = std::thread::spawn(move || {
            let _alive = task_health.alive("worker");
            panic!("a bug");
        })
        .join();
        assert!(panicked.is_err());
        assert_eq!(health.liveness(), Err("stopped: worker".into()));
    }

    #[tokio::test]
    async fn the_listener_serves_metrics_over_http() {
        let health = Arc::new(Health::default());
        let (metrics, registry) = Metrics::new();
        let depth = metrics.workqueue_depth.clone();
        let refresh: Arc<dyn Fn() + Send + Sync> = Arc::new(move || {
            depth.set(42);
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = Acceptor::new(listener, "HTTP", Default::default());
        tokio::spawn(serve(acceptor, health, Arc::new(registry), refresh));
        let body = loop {
            if let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                stream
                    .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .await
                    .unwrap();
                let mut response = String::new();
                stream.read_to_string(&mut response).await.unwrap();
                break response;
            }
            tokio::task::yield_now().await;
        };
        assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
        assert!(
            body.contains("cronscaler_workqueue_depth 42"),
            "refreshed before the scrape: {body}"
        );
    }
}
