//! The wake-up backend's listener (`run --wake-addr`): anyone on the network can reach it, so it
//! reads no request body, holds at most [`MAX_CONNECTIONS`] connections, and closes one that
//! sends no request headers for [`IDLE`].

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use chrono::Utc;
use http_body_util::Full;
use hyper::{body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{net::TcpListener, sync::Semaphore};

use super::{backend::Backend, route::Request};

pub const MAX_CONNECTIONS: usize = 1000;
pub const IDLE: Duration = Duration::from_secs(10);

/// Binds `addr`; serving starts with [`serve`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves until the process ends.
pub async fn serve(listener: TcpListener, backend: Arc<Backend>) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving the wake-up backend");
    }
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accepting a wake-up connection failed");
                continue;
            }
        };
        // Over the limit the connection is closed at once: it waits for nothing.
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            continue;
        };
        let backend = backend.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let backend = backend.clone();
                async move {
                    let read = Request::read(request.headers(), request.uri());
                    let answer = backend.answer(&read, Utc::now()).await;
                    Ok::<_, Infallible>(answer.into_response::<Full<Bytes>>())
                }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(IDLE)
                .max_buf_size(16 * 1024)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "wake-up connection ended");
            }
            drop(permit);
        });
    }
}
