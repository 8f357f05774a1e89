//! `cronscaler console`: the web console. Each person signed in (a Kubernetes token checked by a
//! TokenReview, or the user a trusted authenticating proxy names) sees the environments the API
//! server says they may `get`, and presses the buttons of those where it says they may create an
//! `OverrideRequest`; the console makes the request in their name, and the controller carries it
//! out as it carries out `cronscaler wake`.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use chrono::TimeDelta;
use http_body_util::Full;
use hyper::{body::Bytes, service::service_fn};
use kube::Client;
use prometheus_client::metrics::counter::Counter;

mod access;
mod act;
mod environments;
mod nodes;
mod page;
mod prices;
mod routes;
mod session;
mod snapshot;
#[cfg(test)]
mod tests;
mod visitor;
mod week;

use self::{
    access::Access,
    nodes::NodesReader,
    prices::Prices,
    session::{KeyError, Keys},
    snapshot::Reader,
    visitor::ProxyHeaders,
};
use crate::{
    commands::cli::ConsoleArgs,
    ops::listener::{self, Acceptor, Held},
    wake::route::TrustedProxies,
    workloads::objects,
};

/// How long one request may take, answer written included.
const REQUEST_DEADLINE: Duration = Duration::from_secs(20);

/// The most connections held at once; more are closed as they come.
const CONNECTIONS: usize = 1024;

/// The most TokenReviews asked at once.
const SIGNING_IN_AT_ONCE: usize = 4;

/// Why the console could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("reading the session key file {path}: {source}")]
    KeyFile {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// What every request of the console shares.
pub struct Console {
    client: Client,
    access: Access,
    reader: Reader,
    nodes: NodesReader,
    keys: Keys,
    proxy: ProxyHeaders,
    trusted: TrustedProxies,
    session: TimeDelta,
    secure_cookie: bool,
    /// TokenReviews under way: a few at once.
    signing_in: tokio::sync::Semaphore,
}

impl Console {
    /// The console of `args`, asking the API server as `client`.
    pub async fn new(client: Client, args: &ConsoleArgs) -> Result<Self, ConsoleError> {
        let keys = match &args.console_session_key_file {
            Some(path) => {
                let path = path.display().to_string();
                let secret = std::fs::read(&path).map_err(|source| ConsoleError::KeyFile {
                    path: path.clone(),
                    source,
                })?;
                Keys::of(&secret, &path)?
            }
            None => Keys::random()?,
        };
        let (kinds, _) = objects::resolve(&client, &args.reading.kinds.kinds).await;
        let table = args.reading.prices.table.clone();
        let cluster = (client.clone(), args.controller.namespace.clone());
        let prices = Arc::new(Prices::new(cluster, args.opencost.clone(), table));
        Ok(Self {
            access: Access::new(client.clone()),
            reader: Reader::new(client.clone(), args.clone(), kinds, prices.clone()),
            nodes: NodesReader::new(client.clone(), args.controller.namespace.clone(), prices),
            client,
            keys,
            proxy: ProxyHeaders {
                user: args.console_user_header.clone(),
                groups: args.console_groups_header.clone(),
            },
            trusted: TrustedProxies::new(args.console_trusted_proxies.clone()),
            session: TimeDelta::from_std(args.console_session).unwrap_or(TimeDelta::hours(8)),
            secure_cookie: args.console_secure_cookie,
            signing_in: tokio::sync::Semaphore::new(SIGNING_IN_AT_ONCE),
        })
    }
}

/// Listens on `--console-addr`.
pub async fn listen(args: &ConsoleArgs) -> Result<Acceptor, ConsoleError> {
    let addr = args.console_addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ConsoleError::Listen { addr, source })?;
    Ok(Acceptor::new(listener, "console", Counter::default()))
}

/// Serves until the process ends.
pub async fn serve(acceptor: Acceptor, console: Arc<Console>) {
    if let Ok(addr) = acceptor.local_addr() {
        tracing::info!(%addr, "serving the console");
    }
    let held = Held {
        most: CONNECTIONS,
        deadline: REQUEST_DEADLINE,
        buffer: 32 * 1024,
    };
    listener::serve(acceptor, held, |peer| {
        let from_proxy = console.trusted.trusts(peer.ip());
        let console = console.clone();
        service_fn(move |request| {
            let console = console.clone();
            async move {
                let response = console.respond(request, from_proxy).await;
                Ok::<_, Infallible>(response.map(Full::<Bytes>::new))
            }
        })
    })
    .await;
}
