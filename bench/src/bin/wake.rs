//! The wake-up backend under a flood, against a fake API server on 127.0.0.1 inside this process
//! (no cluster needed):
//!
//! ```sh
//! cargo run --release -p cronscaler-bench --bin wake -- --requests 10000 --connections 100
//! ```
//!
//! The backend runs in-process, as `run --wake-addr` serves it, over a client from
//! `controller::client_for` (the same `--kube-qps` budget as in production), for a Namespace
//! asleep all week and opted in. The connections send their requests one after another on
//! keep-alive HTTP/1.1, as ingress-nginx does, the first of them waking the Namespace. It prints
//! requests per second, latency percentiles, the process's resident memory before the backend
//! starts and after the flood, and what reached the API server: it fails unless exactly one
//! patch of the Namespace did.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use chrono::TimeDelta;
use clap::Parser as _;
use cronscaler::{
    commands::{
        cli::{Cli, Command},
        run as controller,
    },
    ops::metrics::Metrics,
    scaling::namespaces::NamespaceSchedules,
    wake::{answer::Settings, backend::Backend, server},
};
use http_body_util::Full;
use hyper::{Method, Request, Response, body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    net::{TcpListener, TcpStream},
};

const NAMESPACE: &str = "staging";
const WORKLOADS: usize = 5;

#[derive(clap::Parser)]
struct Args {
    /// Requests in all.
    #[arg(long, default_value_t = 10_000)]
    requests: usize,
    /// Connections sending them at once.
    #[arg(long, default_value_t = 100)]
    connections: usize,
}

/// What reached the fake API server.
#[derive(Default)]
struct Seen {
    lists: AtomicU64,
    patches: AtomicU64,
    other: AtomicU64,
}

/// The Namespace's Deployments, asleep with their counts recorded.
fn deployments() -> serde_json::Value {
    let items: Vec<_> = (0..WORKLOADS)
        .map(|i| {
            json!({
                "metadata": {
                    "name": format!("app-{i}"),
                    "namespace": NAMESPACE,
                    "annotations": { "cronscaler.dev/original-replicas": "2" },
                },
                "spec": { "replicas": 0, "selector": {}, "template": {} },
                "status": {},
            })
        })
        .collect();
    json!({ "apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": items })
}

async fn fake_api_server(seen: Arc<Seen>) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let path = request.uri().path().to_string();
                        let body = match (request.method(), path.as_str()) {
                            (&Method::GET, path) if path.ends_with("/deployments") => {
                                seen.lists.fetch_add(1, Relaxed);
                                deployments()
                            }
                            (&Method::GET, path) if path.ends_with("/statefulsets") => {
                                seen.lists.fetch_add(1, Relaxed);
                                json!({ "apiVersion": "apps/v1", "kind": "StatefulSetList", "metadata": {}, "items": [] })
                            }
                            (&Method::PATCH, path)
                                if path == format!("/api/v1/namespaces/{NAMESPACE}") =>
                            {
                                seen.patches.fetch_add(1, Relaxed);
                                json!({ "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": { "name": NAMESPACE } })
                            }
                            _ => {
                                seen.other.fetch_add(1, Relaxed);
                                json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404 })
                            }
                        };
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body.to_string()))))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(port)
}

/// Sends `count` requests one after another on one keep-alive connection; their latencies.
async fn one_connection(port: u16, count: usize) -> anyhow::Result<Vec<Duration>> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let request = format!(
        "GET /login HTTP/1.1\r\nHost: staging.example.com\r\nX-Namespace: {NAMESPACE}\r\nX-Code: 503\r\nX-Original-URI: /login\r\nAccept: text/html\r\n\r\n"
    );
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        write.write_all(request.as_bytes()).await?;
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                bail!("the backend closed the connection");
            }
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;
        latencies.push(sent.elapsed());
    }
    Ok(latencies)
}

fn resident() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")
        .context("reading /proc/self/status (Linux only)")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().strip_suffix(" kB")?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .context("no VmRSS in /proc/self/status")
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let seen = Arc::new(Seen::default());
    let api_port = fake_api_server(seen.clone()).await?;
    let before = resident()?;

    let Command::Run(run) = Cli::try_parse_from(["cronscaler", "run"])?.command else {
        bail!("`cronscaler run` did not parse as `run`");
    };
    let config = kube::Config::new(format!("http://127.0.0.1:{api_port}").parse()?);
    let client = controller::client_for(config, &run).context("building the client")?;
    let schedules = NamespaceSchedules::watched([]);
    schedules.update(
        NAMESPACE,
        None,
        &BTreeMap::from([
            (
                "cronscaler.dev/downtime".to_string(),
                "Mon-Sun 00:00-24:00".to_string(),
            ),
            (
                "cronscaler.dev/wake-on-request".to_string(),
                "2h".to_string(),
            ),
        ]),
    );
    let settings = Settings {
        default_timezone: chrono_tz::Tz::UTC,
        max_override: TimeDelta::hours(24),
        cooldown: TimeDelta::minutes(1),
    };
    let backend = Backend::new(client, schedules, Metrics::new().0, settings);
    let listener = server::bind(([127, 0, 0, 1], 0).into()).await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(server::serve(listener, Arc::new(backend)));

    let per_connection = args.requests / args.connections.max(1);
    let started = Instant::now();
    let connections: Vec<_> = (0..args.connections)
        .map(|_| tokio::spawn(one_connection(port, per_connection)))
        .collect();
    let mut latencies = Vec::with_capacity(args.requests);
    for connection in connections {
        latencies.extend(connection.await??);
    }
    let took = started.elapsed();
    let after = resident()?;
    latencies.sort();
    let percentile = |p: f64| {
        let index = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[index]
    };
    println!(
        "{} requests over {} connections in {:.2} s: {:.0} requests/s",
        latencies.len(),
        args.connections,
        took.as_secs_f64(),
        latencies.len() as f64 / took.as_secs_f64()
    );
    println!(
        "latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(0.50).as_secs_f64() * 1e3,
        percentile(0.99).as_secs_f64() * 1e3,
        percentile(1.0).as_secs_f64() * 1e3
    );
    println!(
        "resident memory: {} before the backend, {} after the flood",
        mib(before),
        mib(after)
    );
    let (lists, patches, other) = (
        seen.lists.load(Relaxed),
        seen.patches.load(Relaxed),
        seen.other.load(Relaxed),
    );
    println!("API server: {patches} patch of the Namespace, {lists} lists, {other} other requests");
    Ok(if patches == 1 && other == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: expected exactly one patch of the Namespace and nothing unexpected");
        ExitCode::FAILURE
    })
}
