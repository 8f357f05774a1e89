//! The wake-up backend under a flood and under attack, against a fake API server on 127.0.0.1
//! inside this process (no cluster needed):
//!
//! ```sh
//! cargo run --release -p cronscaler-bench --bin wake -- \
//!     [--scenario all|flood|pinned|status] [--requests 10000 --connections 100]
//! ```
//!
//! The backend runs in-process, as `cronscaler wake-backend` serves it: its own client from
//! `controller::clients_for`, a `wake::cluster::Cluster` with the default `--wake-kube-qps`
//! (10), the connection cap `connection_cap` gives once the open-files limit is raised (as the
//! backend raises it at start), and 127.0.0.1 as its trusted proxy, so the flood and the
//! visitors may name their Namespace in `X-Namespace` as ingress-nginx does. The scenarios run
//! one after another (`--scenario all`, the default), or one alone:
//!
//! - `flood`: the measurement of old (13,300-15,600 requests/s, p99 9.2-11.5 ms before the
//!   backend was hardened). `--connections` send `--requests` in all, one after another on
//!   keep-alive HTTP/1.1, for `staging`, asleep all week and opted in, the first of them waking
//!   it. It prints requests per second, latency percentiles, resident memory before the backend
//!   starts and after the flood, and what reached the API server. Fails unless exactly one
//!   WakeRequest was made (the backend asks, the controller wakes), and nothing unexpected.
//! - `pinned`: 1,000 connections each write 50 pipelined requests for the page in one write and
//!   never read the answers, held open, with a 4 KiB receive buffer (so the backend's writes
//!   block instead of the kernel's buffers taking every answer); meanwhile a fresh visitor connects every 200 ms for
//!   10 s and asks once. It prints how many visitors were answered (whole answer read) and their
//!   p50/max latency (connect included), the process's open file descriptors (entries of
//!   /proc/self/fd; attackers and backend are both in this process, so each live attack holds
//!   two) and the connections the backend holds (its sockets in /proc/self/net/tcp): before
//!   the attack, during it (with how many of the backend's connections have answers not taken
//!   by the peer), at the end of the visitors (attackers still held: every
//!   `REQUEST_DEADLINE` has passed) and 7 s after the attackers are dropped; and resident
//!   memory during the attack. Fails when a visitor is not answered or waits 2 s or more, or
//!   when the descriptors are not back to the figure before the attack (give or take the two
//!   sockets of one more pooled client connection to the fake API server) or the backend still
//!   holds an attacker's connection.
//! - `status`: 300 opted-in Namespaces `ns-N`, each with its own `wake-hosts` host
//!   `ns-N.bench.example`, each polled once a second for 20 s with
//!   `GET /.cronscaler/status?namespace=ns-N` and `Host: ns-N.bench.example` (no `X-Namespace`:
//!   routed by host), over 30 keep-alive connections, evenly spread in time. It prints status
//!   answers per second, their p50/p99 latency, the LISTs per second the polls caused (mean,
//!   and the most in one second), the most readiness reads (Deployment LISTs) of one Namespace
//!   within one second, and how many answers had readiness "not known yet" (a `reason`),
//!   mostly because the backend's budget had no room. Fails when a poll is not answered 200,
//!   or a Namespace was read more than once in one second.
//!
//! Whatever the scenario, the run fails when any Namespace's Deployments were listed more than
//! once within one second, or listed without `resourceVersion=0` (from the watch cache).

use std::{
    collections::{BTreeMap, HashMap},
    convert::Infallible,
    process::ExitCode,
    sync::{
        Arc, Mutex, PoisonError,
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
    namespaces::NamespaceSchedules,
    ops::{descriptors, listener::Acceptor, metrics::Metrics},
    wake::{
        answer::Settings,
        backend::Backend,
        cluster::Cluster,
        route::{TrustedProxies, parse_trusted_proxy},
        server,
    },
};
use http_body_util::Full;
use hyper::{Method, Request, Response, body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    net::{TcpListener, TcpSocket, TcpStream, tcp::OwnedReadHalf},
};

const NAMESPACE: &str = "staging";
const WORKLOADS: usize = 5;

/// The pinned-connection attack.
const ATTACKERS: usize = 1_000;
const PIPELINED: usize = 50;
/// The attackers' receive buffer (`SO_RCVBUF`, which Linux doubles).
const ATTACKER_RECEIVE_BUFFER: u32 = 4096;
const VISITOR_EVERY: Duration = Duration::from_millis(200);
const VISITING: Duration = Duration::from_secs(10);
const VISITOR_BOUND: Duration = Duration::from_secs(2);
/// How long after the attackers are dropped the descriptors are counted again.
const SETTLE: Duration = Duration::from_secs(7);
/// Descriptors allowed above the figure before the attack: the client's pool to the fake API
/// server may hold one more connection (two sockets, both in this process).
const FD_SLACK: usize = 2;

/// The status flood.
const STATUS_NAMESPACES: usize = 300;
const STATUS_CONNECTIONS: usize = 30;
const STATUS_POLLING: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scenario {
    All,
    Flood,
    Pinned,
    Status,
}

#[derive(clap::Parser)]
struct Args {
    /// Which scenario to run; `all` runs them one after another.
    #[arg(long, value_enum, default_value_t = Scenario::All)]
    scenario: Scenario,
    /// The flood: requests in all.
    #[arg(long, default_value_t = 10_000)]
    requests: usize,
    /// The flood: connections sending them at once.
    #[arg(long, default_value_t = 100)]
    connections: usize,
}

/// What reached the fake API server.
struct Seen {
    started: Instant,
    lists: AtomicU64,
    /// LISTs without `resourceVersion=0`: not from the watch cache.
    lists_uncached: AtomicU64,
    asks: Mutex<BTreeMap<String, u64>>,
    other: AtomicU64,
    /// Deployment LISTs (one per readiness read) by Namespace and second since `started`.
    reads: Mutex<HashMap<(String, u64), u64>>,
    /// Every LIST by second since `started`.
    lists_by_second: Mutex<BTreeMap<u64, u64>>,
}

impl Seen {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            lists: AtomicU64::default(),
            lists_uncached: AtomicU64::default(),
            asks: Mutex::default(),
            other: AtomicU64::default(),
            reads: Mutex::default(),
            lists_by_second: Mutex::default(),
        }
    }

    fn second(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_secs()
    }

    fn list(&self, namespace: &str, deployments: bool, query: Option<&str>) {
        self.lists.fetch_add(1, Relaxed);
        let cached =
            query.is_some_and(|query| query.split('&').any(|pair| pair == "resourceVersion=0"));
        if !cached {
            self.lists_uncached.fetch_add(1, Relaxed);
        }
        let second = self.second(Instant::now());
        *lock(&self.lists_by_second).entry(second).or_default() += 1;
        if deployments {
            *lock(&self.reads)
                .entry((namespace.to_string(), second))
                .or_default() += 1;
        }
    }

    fn asks_of(&self, namespace: &str) -> u64 {
        lock(&self.asks).get(namespace).copied().unwrap_or_default()
    }

    fn asks(&self) -> u64 {
        lock(&self.asks).values().sum()
    }

    /// The most readiness reads of one Namespace within one second, and which.
    fn most_reads(&self, namespaces: impl Fn(&str) -> bool) -> (u64, Option<(String, u64)>) {
        lock(&self.reads)
            .iter()
            .filter(|((namespace, _), _)| namespaces(namespace))
            .max_by_key(|(_, count)| **count)
            .map_or((0, None), |(key, count)| (*count, Some(key.clone())))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A Namespace's Deployments, asleep with their counts recorded.
fn deployments(namespace: &str) -> serde_json::Value {
    let items: Vec<_> = (0..WORKLOADS)
        .map(|i| {
            json!({
                "metadata": {
                    "name": format!("app-{i}"),
                    "namespace": namespace,
                    "annotations": { "cronscaler.dev/original-replicas": "2" },
                },
                "spec": { "replicas": 0, "selector": {}, "template": {} },
                "status": {},
            })
        })
        .collect();
    json!({ "apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": items })
}

/// `/apis/apps/v1/namespaces/{namespace}/{kind}`: the namespace and kind.
fn namespaced_list(path: &str) -> Option<(&str, &str)> {
    let rest = (path.strip_prefix("/apis/apps/v1/namespaces/"))
        .or_else(|| path.strip_prefix("/apis/cronscaler.dev/v1alpha1/namespaces/"))?;
    let (namespace, kind) = rest.split_once('/')?;
    (!kind.contains('/')).then_some((namespace, kind))
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
                        let path = request.uri().path();
                        let query = request.uri().query();
                        let body = match (request.method(), namespaced_list(path)) {
                            (&Method::GET, Some((namespace, "deployments"))) => {
                                seen.list(namespace, true, query);
                                deployments(namespace)
                            }
                            (&Method::GET, Some((namespace, "statefulsets"))) => {
                                seen.list(namespace, false, query);
                                json!({ "apiVersion": "apps/v1", "kind": "StatefulSetList", "metadata": {}, "items": [] })
                            }
                            // The backend's one power: asking the controller for a wake.
                            (&Method::POST, Some((namespace, "wakerequests"))) => {
                                *lock(&seen.asks).entry(namespace.to_string()).or_default() += 1;
                                json!({ "apiVersion": "cronscaler.dev/v1alpha1", "kind": "WakeRequest", "metadata": { "name": "wake-on-request", "namespace": namespace }, "spec": { "by": "" } })
                            }
                            _ => {
                                eprintln!(
                                    "fake API server: unexpected {} {path}",
                                    request.method()
                                );
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

/// What a browser behind ingress-nginx sends, as the proxy forwards it.
fn page_request() -> String {
    format!(
        "GET /login HTTP/1.1\r\nHost: staging.example.com\r\nX-Namespace: {NAMESPACE}\r\nX-Code: 503\r\nX-Original-URI: /login\r\nAccept: text/html\r\n\r\n"
    )
}

/// Reads one answer whole: its status and body.
async fn read_answer(read: &mut BufReader<OwnedReadHalf>) -> anyhow::Result<(u16, Vec<u8>)> {
    let mut length = 0;
    let mut status = None;
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            bail!("the backend closed the connection");
        }
        if line == "\r\n" {
            break;
        }
        if status.is_none() {
            status = line
                .split_whitespace()
                .nth(1)
                .and_then(|code| code.parse().ok());
            continue;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse()?;
        }
    }
    let mut body = vec![0; length];
    read.read_exact(&mut body).await?;
    Ok((status.context("no status line")?, body))
}

/// Sends `count` requests one after another on one keep-alive connection; their latencies.
async fn one_connection(port: u16, count: usize) -> anyhow::Result<Vec<Duration>> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let request = page_request();
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        write.write_all(request.as_bytes()).await?;
        read_answer(&mut read).await?;
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

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// The `p`-th quantile of `sorted`, which must not be empty.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

/// `latency: p50 .., p99 .., max ..` of `sorted`, which must not be empty.
fn latency_line(sorted: &[Duration]) -> String {
    format!(
        "latency: p50 {}, p99 {}, max {}",
        ms(percentile(sorted, 0.50)),
        ms(percentile(sorted, 0.99)),
        ms(percentile(sorted, 1.0))
    )
}

/// The process's open file descriptors.
fn open_fds() -> anyhow::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")
        .context("reading /proc/self/fd (Linux only)")?
        .count())
}

/// The connections the backend listening on `port` holds (its sockets that have a descriptor,
/// the listener aside), how many of them have answers written but not yet taken by the peer,
/// and how many bytes those are. Every socket of the port is this process's, the port being its
/// own.
fn held_by_backend(port: u16) -> anyhow::Result<Held> {
    let table =
        std::fs::read_to_string("/proc/self/net/tcp").context("reading /proc/self/net/tcp")?;
    let mut held = Held::default();
    for row in table.lines().skip(1) {
        let fields: Vec<&str> = row.split_whitespace().collect();
        let local_port = fields
            .get(1)
            .and_then(|local| local.rsplit_once(':'))
            .and_then(|(_, port)| u16::from_str_radix(port, 16).ok());
        // 0A is LISTEN; a socket no descriptor holds (TIME_WAIT, orphans) has inode 0.
        if local_port != Some(port)
            || fields.get(3) == Some(&"0A")
            || fields.get(9).is_none_or(|inode| *inode == "0")
        {
            continue;
        }
        held.connections += 1;
        let unsent = fields
            .get(4)
            .and_then(|queues| queues.split_once(':'))
            .and_then(|(tx, _)| u64::from_str_radix(tx, 16).ok())
            .unwrap_or_default();
        if unsent > 0 {
            held.stuck += 1;
            held.unsent += unsent;
        }
    }
    Ok(held)
}

#[derive(Default)]
struct Held {
    connections: usize,
    /// Connections with answers the peer has not taken.
    stuck: usize,
    /// Bytes of those answers in the kernel's send buffers.
    unsent: u64,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.connections)?;
        if self.stuck > 0 {
            write!(
                f,
                " ({} with {} of answers not taken)",
                self.stuck,
                mib(self.unsent)
            )?;
        }
        Ok(())
    }
}

/// The flood of old, for comparison.
async fn flood(args: &Args, port: u16, seen: &Seen, before: u64) -> anyhow::Result<bool> {
    println!(
        "== flood: {} requests over {} keep-alive connections",
        args.requests, args.connections
    );
    let asks_before = seen.asks_of(NAMESPACE);
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
    println!(
        "{} requests over {} connections in {:.2} s: {:.0} requests/s",
        latencies.len(),
        args.connections,
        took.as_secs_f64(),
        latencies.len() as f64 / took.as_secs_f64()
    );
    println!("{}", latency_line(&latencies));
    println!(
        "resident memory: {} before the backend, {} after the flood",
        mib(before),
        mib(after)
    );
    let (lists, asks, other) = (
        seen.lists.load(Relaxed),
        seen.asks_of(NAMESPACE) - asks_before,
        seen.other.load(Relaxed),
    );
    println!("API server: {asks} WakeRequest asked, {lists} lists, {other} other requests");
    if !(asks == 1 && other == 0) {
        eprintln!("error: expected exactly one WakeRequest asked and nothing unexpected");
        return Ok(false);
    }
    Ok(true)
}

/// One visitor: a fresh connection, one request, its answer read whole; the time it all took.
async fn visit(port: u16) -> anyhow::Result<(Duration, usize)> {
    let started = Instant::now();
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    write.write_all(page_request().as_bytes()).await?;
    let (status, body) = read_answer(&mut read).await?;
    if status != 503 || body.is_empty() {
        bail!(
            "answered {status} with {} bytes instead of the page",
            body.len()
        );
    }
    Ok((started.elapsed(), body.len()))
}

/// One attacker: a connection, 50 requests in one write, never a read. Its receive buffer is
/// small, as an attacker would make it, so the backend cannot write its answers out whole
/// into the kernel's buffers and be done: its writes block.
async fn attack(port: u16, requests: Arc<Vec<u8>>) -> anyhow::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(ATTACKER_RECEIVE_BUFFER)?;
    let mut stream = socket.connect(([127, 0, 0, 1], port).into()).await?;
    stream.write_all(&requests).await?;
    Ok(stream)
}

/// The pinned-connection attack.
async fn pinned(port: u16) -> anyhow::Result<bool> {
    println!(
        "== pinned: {ATTACKERS} connections x {PIPELINED} pipelined requests never read; a visitor every {} ms for {} s",
        VISITOR_EVERY.as_millis(),
        VISITING.as_secs()
    );
    // Settle first: the readiness read and the client's connection to the API server exist
    // before the first count.
    let (_, page) = visit(port).await.context("the visitor before the attack")?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fds_before = open_fds()?;
    let held_before = held_by_backend(port)?;
    let memory_before = resident()?;

    let requests = Arc::new(page_request().repeat(PIPELINED).into_bytes());
    let started = Instant::now();
    let attacks = futures::future::join_all(
        (0..ATTACKERS).map(|_| tokio::spawn(attack(port, requests.clone()))),
    )
    .await;
    let mut attackers = Vec::with_capacity(ATTACKERS);
    let mut failed = 0;
    for attack in attacks {
        match attack? {
            Ok(stream) => attackers.push(stream),
            Err(_) => failed += 1,
        }
    }
    println!(
        "{} attackers connected and wrote {PIPELINED} requests each in {:.2} s ({failed} failed); each answer is a page of {page} bytes",
        attackers.len(),
        started.elapsed().as_secs_f64()
    );

    let visiting = tokio::spawn(async move {
        let mut visitors = Vec::new();
        let mut every = tokio::time::interval(VISITOR_EVERY);
        let until = Instant::now() + VISITING;
        while Instant::now() < until {
            every.tick().await;
            visitors.push(tokio::spawn(tokio::time::timeout(
                server::REQUEST_DEADLINE,
                visit(port),
            )));
        }
        let mut answered = Vec::new();
        let mut unanswered = Vec::new();
        for visitor in visitors {
            match visitor.await {
                Ok(Ok(Ok((took, _)))) => answered.push(took),
                Ok(Ok(Err(error))) => unanswered.push(format!("{error:#}")),
                Ok(Err(_)) => unanswered.push("no answer within 5 s".to_string()),
                Err(error) => unanswered.push(error.to_string()),
            }
        }
        (answered, unanswered)
    });

    tokio::time::sleep(Duration::from_secs(1)).await;
    let fds_during = open_fds()?;
    let held_during = held_by_backend(port)?;
    let memory_during = resident()?;
    let (mut answered, unanswered) = visiting.await?;
    let fds_end = open_fds()?;
    let held_end = held_by_backend(port)?;
    let memory_end = resident()?;
    drop(attackers);
    tokio::time::sleep(SETTLE).await;
    let fds_after = open_fds()?;
    let held_after = held_by_backend(port)?;
    let memory_after = resident()?;

    answered.sort();
    let visitors = answered.len() + unanswered.len();
    print!("visitors: {} of {visitors} answered", answered.len());
    if answered.is_empty() {
        println!();
    } else {
        println!(
            ", latency p50 {}, max {}",
            ms(percentile(&answered, 0.5)),
            ms(percentile(&answered, 1.0))
        );
    }
    for error in &unanswered {
        println!("  a visitor was not answered: {error}");
    }
    println!(
        "open descriptors: {fds_before} before the attack, {fds_during} during it, {fds_end} at the end of the visitors (attackers still held), {fds_after} {} s after the attackers were dropped",
        SETTLE.as_secs()
    );
    println!(
        "connections the backend holds: {held_before} before, {held_during} during, {held_end} at the end of the visitors, {held_after} after"
    );
    println!(
        "resident memory: {} before the attack, {} during it, {} at the end of the visitors, {} after",
        mib(memory_before),
        mib(memory_during),
        mib(memory_end),
        mib(memory_after)
    );

    let mut passed = true;
    if !unanswered.is_empty() || answered.last().is_some_and(|max| *max >= VISITOR_BOUND) {
        eprintln!(
            "error: every visitor must be answered within {} s",
            VISITOR_BOUND.as_secs()
        );
        passed = false;
    }
    if fds_after > fds_before + FD_SLACK || held_after.connections > held_before.connections {
        eprintln!(
            "error: the descriptors are not back to their figure before the attack ({fds_after} against {fds_before}, the backend holding {held_after} connections against {held_before})"
        );
        passed = false;
    }
    if failed > 0 {
        eprintln!("error: {failed} attackers could not connect or write");
        passed = false;
    }
    Ok(passed)
}

/// What one status poll came to.
struct Poll {
    latency: Duration,
    status: u16,
    /// Its readiness was "not known yet": the reason.
    reason: Option<String>,
}

/// Polls the status of `namespaces` over one keep-alive connection, one every `period` in
/// turn, from `start` until `until`.
async fn status_poller(
    port: u16,
    namespaces: Vec<usize>,
    period: Duration,
    start: tokio::time::Instant,
    until: tokio::time::Instant,
) -> anyhow::Result<Vec<Poll>> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut every = tokio::time::interval_at(start, period);
    // A poll that waited for the budget delays the next ones on the connection, which then
    // catch up: every Namespace is still asked once a second on average.
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut polls = Vec::new();
    for namespace in namespaces.iter().cycle() {
        if every.tick().await >= until {
            break;
        }
        let request = format!(
            "GET /.cronscaler/status?namespace=ns-{namespace} HTTP/1.1\r\nHost: ns-{namespace}.bench.example\r\nAccept: application/json\r\n\r\n"
        );
        let sent = Instant::now();
        write.write_all(request.as_bytes()).await?;
        let (status, body) = read_answer(&mut read).await?;
        let latency = sent.elapsed();
        let reason = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|progress| progress.get("reason")?.as_str().map(str::to_string));
        polls.push(Poll {
            latency,
            status,
            reason,
        });
    }
    Ok(polls)
}

/// The status flood.
async fn status_flood(port: u16, seen: &Seen) -> anyhow::Result<bool> {
    println!(
        "== status: {STATUS_NAMESPACES} Namespaces each polled once a second for {} s over {STATUS_CONNECTIONS} keep-alive connections",
        STATUS_POLLING.as_secs()
    );
    let per_connection = STATUS_NAMESPACES.div_ceil(STATUS_CONNECTIONS);
    let period = Duration::from_secs(1) / u32::try_from(per_connection)?;
    // The connections' polls interleave: one every second / 300 in all.
    let offset = period / u32::try_from(STATUS_CONNECTIONS)?;
    let lists_before = seen.lists.load(Relaxed);
    let asks_before = seen.asks();
    let begin = tokio::time::Instant::now() + Duration::from_millis(100);
    let until = begin + STATUS_POLLING;
    let pollers: Vec<_> = (0..STATUS_CONNECTIONS)
        .map(|connection| {
            let namespaces: Vec<usize> = (connection..STATUS_NAMESPACES)
                .step_by(STATUS_CONNECTIONS)
                .collect();
            let start = begin + offset * u32::try_from(connection).unwrap_or(0);
            tokio::spawn(status_poller(port, namespaces, period, start, until))
        })
        .collect();
    let mut polls = Vec::new();
    for poller in pollers {
        polls.extend(poller.await??);
    }
    let took = tokio::time::Instant::now().duration_since(begin);
    let (first, last) = (seen.second(begin.into_std()), seen.second(until.into_std()));
    let lists = seen.lists.load(Relaxed) - lists_before;
    let most_lists_in_a_second = lock(&seen.lists_by_second)
        .range(first..last)
        .map(|(_, count)| *count)
        .max()
        .unwrap_or_default();
    let (most_reads, where_most) = seen.most_reads(|namespace| namespace.starts_with("ns-"));

    let mut latencies: Vec<Duration> = polls.iter().map(|poll| poll.latency).collect();
    latencies.sort();
    let not_ok = polls.iter().filter(|poll| poll.status != 200).count();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in polls.iter().filter_map(|poll| poll.reason.as_deref()) {
        *reasons.entry(reason).or_default() += 1;
    }
    let not_known: usize = reasons.values().sum();
    println!(
        "{} status answers in {:.2} s: {:.0} answers/s ({not_ok} not 200)",
        polls.len(),
        took.as_secs_f64(),
        polls.len() as f64 / took.as_secs_f64()
    );
    if !latencies.is_empty() {
        println!("{}", latency_line(&latencies));
    }
    println!(
        "API server: {lists} LISTs, {:.1} per second (at most {most_lists_in_a_second} in one second), {} WakeRequests asked",
        lists as f64 / took.as_secs_f64(),
        seen.asks() - asks_before
    );
    println!(
        "readiness reads of one Namespace within one second: at most {most_reads}{}",
        where_most.map_or_else(String::new, |(namespace, second)| format!(
            " ({namespace}, second {second})"
        ))
    );
    println!(
        "readiness not known yet: {not_known} of {} answers ({:.1}%)",
        polls.len(),
        100.0 * not_known as f64 / polls.len().max(1) as f64
    );
    for (reason, count) in &reasons {
        println!("  {count}: {reason}");
    }

    let mut passed = true;
    if not_ok > 0 || polls.is_empty() {
        eprintln!("error: every status poll must be answered 200");
        passed = false;
    }
    if most_reads > 1 {
        eprintln!("error: a Namespace's readiness was read more than once in one second");
        passed = false;
    }
    Ok(passed)
}

/// An opted-in Namespace asleep all week, with `hosts` as its `wake-hosts`.
fn opted_in(hosts: Option<String>) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([
        (
            "cronscaler.dev/downtime".to_string(),
            "Mon-Sun 00:00-24:00".to_string(),
        ),
        (
            "cronscaler.dev/wake-on-request".to_string(),
            "2h".to_string(),
        ),
    ]);
    if let Some(hosts) = hosts {
        annotations.insert("cronscaler.dev/wake-hosts".to_string(), hosts);
    }
    annotations
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    // As the controller does at start: the connection cap comes from the limit raised.
    let open_files = descriptors::raise_limit().context("raising the open-files limit")?;
    let connections = descriptors::connection_cap(open_files.is);
    println!(
        "open-files limit {} (was {}): the backend holds at most {connections} connections",
        open_files.is, open_files.was
    );
    let seen = Arc::new(Seen::new());
    let api_port = fake_api_server(seen.clone()).await?;
    let before = resident()?;

    let Command::Run(run) = Cli::try_parse_from(["cronscaler", "run"])?.command else {
        bail!("`cronscaler run` did not parse as `run`");
    };
    let config = kube::Config::new(format!("http://127.0.0.1:{api_port}").parse()?);
    let clients = controller::clients_for(config, &run).context("building the clients")?;
    let schedules = NamespaceSchedules::watched([]);
    schedules.update(NAMESPACE, None, &opted_in(None));
    for namespace in 0..STATUS_NAMESPACES {
        schedules.update(
            &format!("ns-{namespace}"),
            None,
            &opted_in(Some(format!("ns-{namespace}.bench.example"))),
        );
    }
    let settings = Settings {
        default_timezone: chrono_tz::Tz::UTC,
        // Longer than a run: each Namespace is woken once.
        cooldown: TimeDelta::minutes(10),
    };
    let metrics = Metrics::new().0;
    let cluster = Cluster::new(
        clients.wake,
        run.wake_kube_qps(),
        schedules.clone(),
        metrics.clone(),
    );
    let backend = Backend::new(Arc::new(cluster), schedules, metrics.clone(), settings);
    let listener = server::bind(([127, 0, 0, 1], 0).into(), connections)?;
    let port = listener.local_addr()?.port();
    let limits = server::Limits {
        connections,
        trusted: TrustedProxies::new(vec![
            parse_trusted_proxy("127.0.0.1").map_err(anyhow::Error::msg)?,
        ]),
    };
    let acceptor = Acceptor::new(listener, "wake-up backend", metrics.accept_errors("wake"));
    tokio::spawn(server::serve(acceptor, Arc::new(backend), limits));
    println!(
        "the backend's API budget (--wake-kube-qps): {} requests/s",
        run.wake_kube_qps()
    );

    let mut passed = true;
    if matches!(args.scenario, Scenario::All | Scenario::Flood) {
        passed &= flood(&args, port, &seen, before).await?;
    }
    if matches!(args.scenario, Scenario::All | Scenario::Pinned) {
        passed &= pinned(port).await?;
    }
    if matches!(args.scenario, Scenario::All | Scenario::Status) {
        passed &= status_flood(port, &seen).await?;
    }

    let (most_reads, where_most) = seen.most_reads(|_| true);
    let uncached = seen.lists_uncached.load(Relaxed);
    let other = seen.other.load(Relaxed);
    println!(
        "== whole run: {} LISTs ({uncached} without resourceVersion=0), at most {most_reads} readiness reads of one Namespace in one second{}, {} WakeRequests asked, {other} other requests",
        seen.lists.load(Relaxed),
        where_most.map_or_else(String::new, |(namespace, second)| format!(
            " ({namespace}, second {second})"
        )),
        seen.asks()
    );
    if most_reads > 1 || uncached > 0 || other > 0 {
        eprintln!(
            "error: readiness must be read from the watch cache, at most once a second per Namespace, and nothing else sent"
        );
        passed = false;
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
