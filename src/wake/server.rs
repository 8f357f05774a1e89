//! The wake-up backend's listener (`wake-backend --wake-addr`): anyone on the network can reach
//! it, so it reads no request body, holds at most its connection cap (from the open-files
//! limit), gives every request [`REQUEST_DEADLINE`] for its whole life, answer written included,
//! and believes routing headers only from `--wake-trusted-proxies`.

use std::{convert::Infallible, sync::Arc, time::Duration};

use chrono::Utc;
use http_body_util::Full;
use hyper::{body::Bytes, service::service_fn};
use tokio::net::{TcpListener, TcpSocket};

use super::{
    backend::{Answer, Backend},
    route::{Request, TrustedProxies},
};
use crate::ops::listener::{self, Acceptor, Held};

/// How long a request may take, from the end of the answer before it on its connection (or the
/// connection's start) to the last byte of its own answer written. An idle connection is closed
/// after as long.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How long the backend may take to decide an answer (its reads and wake have timeouts of their
/// own), leaving the rest of the deadline to write it.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// What the listener is told by `run`'s flags and the process's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The most connections held at once; more are closed as they come.
    pub connections: usize,
    pub trusted: TrustedProxies,
}

/// Binds `addr`, with room for `pending` connections not yet accepted (the kernel caps it at
/// `net.core.somaxconn`); serving starts with [`serve`]. The default backlog of 128 would drop
/// the connections of a burst beyond it whenever accepting lags a moment, and each dropped one
/// waits a second for its retry: a flood of first requests is what this listener is for.
pub fn bind(addr: std::net::SocketAddr, pending: usize) -> std::io::Result<TcpListener> {
    let socket = match addr {
        std::net::SocketAddr::V4(_) => TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(u32::try_from(pending).unwrap_or(u32::MAX))
}

/// Serves until the process ends.
pub async fn serve(acceptor: Acceptor, backend: Arc<Backend>, limits: Limits) {
    if let Ok(addr) = acceptor.local_addr() {
        tracing::info!(%addr, connections = limits.connections, "serving the wake-up backend");
    }
    let trusted = limits.trusted;
    let held = Held {
        most: limits.connections,
        deadline: REQUEST_DEADLINE,
        buffer: 16 * 1024,
    };
    listener::serve(acceptor, held, |peer| {
        let from_proxy = trusted.trusts(peer.ip());
        let backend = backend.clone();
        service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let backend = backend.clone();
            async move {
                let read = Request::read(request.headers(), request.uri(), from_proxy);
                let answer = tokio::time::timeout(ANSWER_WITHIN, backend.answer(&read, Utc::now()))
                    .await
                    .unwrap_or_else(|_| Answer::refused());
                Ok::<_, Infallible>(answer.into_response::<Full<Bytes>>())
            }
        })
    })
    .await;
}
