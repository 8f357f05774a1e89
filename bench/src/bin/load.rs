//! Load program for two claims of the scheduled scaler, run against a fake Kubernetes API server
//! on 127.0.0.1 inside this process (no cluster needed):
//!
//! ```sh
//! cargo run --release -p cronscaler-bench --bin load -- memory --deployments 10000   # RSS holding 10,000 schedules
//! cargo run --release -p cronscaler-bench --bin load -- qps --deployments 200 --qps 50  # a same-second burst
//! ```
//!
//! The controller runs in-process through `controller::run` with a client from
//! `controller::client_for`, so every request goes through the same `--kube-qps` budget as in
//! production. The fake server stores no JSON: it renders every object from its index on the fly
//! (`load/app-{i}`) and keeps only counters, so its own memory stays out of the measurement.
//! It runs on its own thread and single-threaded runtime, apart from the controller's runtime.
//! Like a real API server it reports each PATCH on the open metadata watch (a MODIFIED event),
//! and later reads see the patched object, so the requests counted per transition are the ones
//! a cluster would see. Unknown requests are logged to stderr, answered 404, and fail the run.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    process::ExitCode,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU32, AtomicU64, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use chrono::{DateTime, Datelike as _, SecondsFormat, TimeDelta, Timelike as _, Utc};
use clap::Parser as _;
use cronscaler::{
    commands::{
        cli::{Cli, Command},
        run as controller,
    },
    foo::FOO_LABEL,
    schedule::{self, Annotations, Direction, Transition},
};
use http_body_util::{BodyExt as _, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Bytes, Frame, Incoming},
    header::ACCEPT,
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

const NAMESPACE: &str = "load";
/// Quiet time after which the controller is taken to have nothing left to send.
const SETTLED: Duration = Duration::from_secs(2);

#[derive(clap::Parser)]
#[command(about = "Memory and request-rate figures of the scheduled scaler, on a fake API server")]
enum Load {
    /// Resident memory of the controller holding N annotated Deployments.
    Memory {
        #[arg(long, default_value_t = 10_000)]
        deployments: usize,
        /// High so that the N start-up reads take seconds; memory does not depend on it.
        #[arg(long, default_value_t = 2000.0)]
        qps: f64,
        #[arg(long, default_value_t = 2000)]
        burst: u32,
        #[command(flatten)]
        common: Common,
    },
    /// N Deployments whose scale-down is due in the same second: how fast they all go out.
    Qps {
        #[arg(long, default_value_t = 200)]
        deployments: usize,
        #[arg(long, default_value_t = 50.0)]
        qps: f64,
        #[arg(long, default_value_t = 100)]
        burst: u32,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args)]
struct Common {
    #[arg(long, default_value_t = 4)]
    workers: u16,
    /// Give up (exit 1) when the scenario has not completed after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
}

/// What the annotations of every Deployment say, the same for all of them.
struct Plan {
    scale_down: String,
    scale_up: Option<String>,
    /// `last-transition` before any PATCH: the governing transition, so catch-up decides nothing.
    last_transition: Option<String>,
    /// `last-transition` the expected PATCH records; `None` when no PATCH is expected.
    patched_transition: Option<String>,
    last_applied: bool,
}

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    lists: AtomicU64,
    watches: AtomicU64,
    gets: AtomicU64,
    /// GETs of a Deployment after it was patched: re-reads, not decisions.
    rereads: AtomicU64,
    patches: AtomicU64,
    unexpected_patches: AtomicU64,
    events: AtomicU64,
    unknown: AtomicU64,
}

#[derive(Default)]
struct PatchTimes {
    first: Option<Instant>,
    /// When the last PATCH arrived, and how many requests had arrived by then.
    last: Option<(Instant, u64)>,
}

struct Fake {
    n: usize,
    plan: Plan,
    counts: Counts,
    patches_per_object: Vec<AtomicU32>,
    patch_times: Mutex<PatchTimes>,
    started: Instant,
    last_request_ms: AtomicU64,
    next_version: AtomicU64,
    /// A real API server reports every PATCH on the open watches; indices of patched objects
    /// go to the metadata watch of all Deployments through this channel.
    patched: mpsc::UnboundedSender<usize>,
    patched_feed: tokio::sync::Mutex<mpsc::UnboundedReceiver<usize>>,
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

impl Fake {
    fn new(n: usize, plan: Plan) -> Arc<Self> {
        let (patched, feed) = mpsc::unbounded_channel();
        Arc::new(Self {
            n,
            plan,
            counts: Counts::default(),
            patches_per_object: (0..n).map(|_| AtomicU32::new(0)).collect(),
            patch_times: Mutex::default(),
            started: Instant::now(),
            last_request_ms: AtomicU64::new(0),
            next_version: AtomicU64::new(10),
            patched,
            patched_feed: tokio::sync::Mutex::new(feed),
        })
    }

    fn is_patched(&self, i: usize) -> bool {
        self.patches_per_object[i].load(Relaxed) > 0
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_request_ms.load(Relaxed));
        self.started.elapsed().saturating_sub(last)
    }

    fn metadata(&self, i: usize) -> Value {
        let name = format!("app-{i}");
        let patched = self.is_patched(i);
        let plan = &self.plan;
        let mut annotations = BTreeMap::from([(schedule::SCALE_DOWN, plan.scale_down.clone())]);
        let last_transition = match patched {
            true => plan.patched_transition.clone(),
            false => plan.last_transition.clone(),
        };
        annotations.extend(last_transition.map(|value| (schedule::LAST_TRANSITION, value)));
        annotations.extend(plan.scale_up.clone().map(|cron| (schedule::SCALE_UP, cron)));
        if patched {
            annotations.insert(schedule::ORIGINAL_REPLICAS, "3".into());
        }
        if plan.last_applied {
            annotations.insert(
                "kubectl.kubernetes.io/last-applied-configuration",
                last_applied(i),
            );
        }
        json!({
            "name": name, "namespace": NAMESPACE, "uid": format!("6c0ad0e5-0000-4000-8000-{i:012}"),
            "resourceVersion": if patched { "3" } else { "2" }, "generation": if patched { 2 } else { 1 },
            "creationTimestamp": "2026-11-21T17:14:19Z", "labels": { "app": name },
            "annotations": annotations,
            "managedFields": [{
                "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                "time": "2026-11-21T17:14:19Z", "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": { "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {} },
                                    "f:labels": { ".": {}, "f:app": {} } },
                    "f:spec": { "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                                "f:selector": {}, "f:strategy": { "f:type": {} },
                                "f:template": { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
                                                "f:spec": { "f:containers": { "k:{\"name\":\"nginx\"}": {
                                                    ".": {}, "f:image": {}, "f:name": {} } } } } }
                }
            }]
        })
    }

    fn deployment(&self, i: usize) -> Value {
        let replicas = if self.is_patched(i) { 0 } else { 3 };
        let labels = json!({ "app": format!("app-{i}") });
        json!({
            "kind": "Deployment", "apiVersion": "apps/v1", "metadata": self.metadata(i),
            "spec": {
                "replicas": replicas, "selector": { "matchLabels": labels },
                "template": { "metadata": { "labels": labels },
                              "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] } },
                "strategy": { "type": "RollingUpdate" }, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600
            },
            "status": { "observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3 }
        })
    }

    /// One page of the metadata-only list, streamed item by item so the server never holds a
    /// whole page (500 items of 4 KiB annotations) in memory.
    fn metadata_page(self: &Arc<Self>, start: usize, limit: usize) -> Body {
        let end = start.saturating_add(limit).min(self.n);
        let more = match end < self.n {
            true => format!(
                r#","continue":"{end}","remainingItemCount":{}"#,
                self.n - end
            ),
            false => String::new(),
        };
        let head = format!(
            r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"1"{more}}},"items":["#
        );
        let fake = self.clone();
        let items = (start..end).map(move |i| {
            let item = json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": fake.metadata(i) });
            Bytes::from(if i > start { format!(",{item}") } else { item.to_string() })
        });
        let chunks = std::iter::once(Bytes::from(head))
            .chain(items)
            .chain([Bytes::from("]}")]);
        StreamBody::new(futures::stream::iter(
            chunks.map(|chunk| Ok(Frame::data(chunk))),
        ))
        .boxed_unsync()
    }

    /// The metadata watch of all Deployments: a MODIFIED event for each patched Deployment,
    /// and otherwise open and silent until the program ends.
    fn metadata_watch(self: &Arc<Self>) -> Body {
        let events = futures::stream::unfold(self.clone(), |fake| async move {
            let i = fake.patched_feed.lock().await.recv().await?;
            let mut object = json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": fake.metadata(i) });
            object["metadata"]["resourceVersion"] =
                json!(fake.next_version.fetch_add(1, Relaxed).to_string());
            let line = format!("{}\n", json!({ "type": "MODIFIED", "object": object }));
            Some((Ok(Frame::data(Bytes::from(line))), fake))
        });
        StreamBody::new(events).boxed_unsync()
    }

    fn patch(&self, i: usize, body: &[u8]) -> Response<Body> {
        let patch: Value = serde_json::from_slice(body).unwrap_or_default();
        let expected = self
            .plan
            .patched_transition
            .as_deref()
            .is_some_and(|transition| {
                patch["spec"]["replicas"] == 0
                    && patch["metadata"]["annotations"][schedule::LAST_TRANSITION] == transition
            });
        if !expected {
            self.counts.unexpected_patches.fetch_add(1, Relaxed);
            eprintln!("fake API server: unexpected PATCH of {NAMESPACE}/app-{i}: {patch}");
        }
        self.patches_per_object[i].fetch_add(1, Relaxed);
        let now = Instant::now();
        let mut times = self
            .patch_times
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        times.first.get_or_insert(now);
        times.last = Some((now, self.counts.requests.load(Relaxed)));
        drop(times);
        // The receiver lives as long as `self`, so sending cannot fail.
        let _ = self.patched.send(i);
        self.counts.patches.fetch_add(1, Relaxed);
        json_response(StatusCode::OK, &self.deployment(i))
    }
}

/// A 4 KiB `last-applied-configuration`, as `kubectl apply` leaves on real objects.
fn last_applied(i: usize) -> String {
    let head = format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"app-{i}","namespace":"{NAMESPACE}"}},"spec":{{"replicas":3,"note":""#
    );
    let tail = "\"}}\n";
    let padding = 4096_usize.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", "x".repeat(padding))
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    bytes_response(status, Bytes::from(body.to_string()))
}

fn bytes_response(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed_unsync());
    *response.status_mut() = status;
    response
}

/// An empty, never-ending watch stream: the watcher waits on it instead of re-watching.
fn silent_watch() -> Body {
    StreamBody::new(futures::stream::pending::<Result<Frame<Bytes>, Infallible>>()).boxed_unsync()
}

fn empty_list(api_version: &str, kind: &str) -> Response<Body> {
    let list = json!({ "apiVersion": api_version, "kind": kind, "metadata": { "resourceVersion": "1" }, "items": [] });
    json_response(StatusCode::OK, &list)
}

async fn handle(fake: Arc<Fake>, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let counts = &fake.counts;
    counts.requests.fetch_add(1, Relaxed);
    let elapsed = u64::try_from(fake.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    fake.last_request_ms.store(elapsed, Relaxed);
    let (parts, body) = request.into_parts();
    let (method, path) = (&parts.method, parts.uri.path());
    // kube writes queries as `?&watch=true&...`: empty pairs are skipped.
    let query: Vec<(&str, &str)> = (parts.uri.query().unwrap_or("").split('&'))
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    };
    let watch = matches!(param("watch"), Some("true" | "1"));
    let accept = parts
        .headers
        .get(ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let owned_selector =
        param("labelSelector").map(|s| s.replace("%2F", "/")) == Some(FOO_LABEL.into());
    let deployment = path
        .strip_prefix("/apis/apps/v1/namespaces/load/deployments/app-")
        .and_then(|index| index.parse::<usize>().ok())
        .filter(|&i| i < fake.n);
    let count = |counter: &AtomicU64| counter.fetch_add(1, Relaxed);

    let response = match (method, path, deployment) {
        (&Method::GET, "/apis/apps/v1/deployments", _)
            if watch && accept.contains("as=PartialObjectMetadata") =>
        {
            count(&counts.watches);
            Response::new(fake.metadata_watch())
        }
        (
            &Method::GET,
            "/apis/apps/v1/deployments" | "/apis/samplecontroller.k8s.io/v1alpha1/foos",
            _,
        ) if watch => {
            count(&counts.watches);
            Response::new(silent_watch())
        }
        (&Method::GET, "/apis/apps/v1/deployments", _) if owned_selector => {
            count(&counts.lists);
            empty_list("apps/v1", "DeploymentList")
        }
        (&Method::GET, "/apis/apps/v1/deployments", _)
            if accept.contains("as=PartialObjectMetadataList") =>
        {
            count(&counts.lists);
            let start = param("continue")
                .and_then(|token| token.parse().ok())
                .unwrap_or(0);
            let limit = param("limit")
                .and_then(|limit| limit.parse().ok())
                .unwrap_or(usize::MAX);
            Response::new(fake.metadata_page(start, limit))
        }
        (&Method::GET, "/apis/samplecontroller.k8s.io/v1alpha1/foos", _) => {
            count(&counts.lists);
            empty_list("samplecontroller.k8s.io/v1alpha1", "FooList")
        }
        // Discovery: the controller checks the Foo CRD is installed before watching Foos.
        (&Method::GET, "/apis/samplecontroller.k8s.io/v1alpha1", _) => json_response(
            StatusCode::OK,
            &json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "samplecontroller.k8s.io/v1alpha1",
                "resources": [{ "name": "foos", "singularName": "foo", "namespaced": true, "kind": "Foo",
                                "verbs": ["get", "list", "watch", "patch"] }],
            }),
        ),
        (&Method::GET, _, Some(i)) => {
            count(&counts.gets);
            if fake.is_patched(i) {
                count(&counts.rereads);
            }
            json_response(StatusCode::OK, &fake.deployment(i))
        }
        (&Method::PATCH, _, Some(i)) => match body.collect().await {
            Ok(body) => fake.patch(i, &body.to_bytes()),
            Err(_) => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
        },
        // Events are echoed back: the recorder reads the created Event from the answer.
        (&Method::POST, "/apis/events.k8s.io/v1/namespaces/load/events", _)
        | (&Method::PATCH, _, _)
            if path.starts_with("/apis/events.k8s.io/v1/namespaces/load/events") =>
        {
            count(&counts.events);
            let status = if method == Method::POST {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            match body.collect().await {
                Ok(body) => bytes_response(status, body.to_bytes()),
                Err(_) => bytes_response(StatusCode::BAD_REQUEST, Bytes::new()),
            }
        }
        _ => {
            count(&counts.unknown);
            eprintln!(
                "fake API server: no answer for {method} {} (Accept: {accept})",
                parts.uri
            );
            let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": format!("{method} {path} is not served by the fake API server"),
                                 "reason": "NotFound", "code": 404 });
            json_response(StatusCode::NOT_FOUND, &status)
        }
    };
    Ok(response)
}

/// Starts the fake API server on its own thread and runtime; returns its port.
fn start_server(fake: Arc<Fake>) -> anyhow::Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("binding the fake API server")?;
    listener
        .set_nonblocking(true)
        .context("making the listener non-blocking")?;
    let port = listener
        .local_addr()
        .context("reading the fake API server's port")?
        .port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("fake-apiserver".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(error) => return eprintln!("fake API server: {error}"),
                };
                loop {
                    let stream = match listener.accept().await {
                        Ok((stream, _)) => stream,
                        Err(error) => {
                            eprintln!("fake API server: accept failed: {error}");
                            continue;
                        }
                    };
                    let fake = fake.clone();
                    let service = service_fn(move |request| handle(fake.clone(), request));
                    // A connection error is the client going away; nothing to report.
                    tokio::spawn(
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                    );
                }
            })
        })
        .context("starting the fake API server's thread")?;
    Ok(port)
}

/// The controller running in this process against the fake server, as `cronscaler run` would.
struct Controller {
    stop: oneshot::Sender<()>,
    running: tokio::task::JoinHandle<()>,
    /// Its `/healthz`, `/readyz` and `/metrics` listener, on 127.0.0.1.
    http_port: u16,
}

impl Controller {
    fn start(api_port: u16, workers: u16, qps: f64, burst: u32) -> anyhow::Result<Self> {
        // A free port for the controller's own listener (its default is 0.0.0.0:8080).
        let http_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("finding a free port on 127.0.0.1")?
            .port();
        let (workers, qps, burst) = (workers.to_string(), qps.to_string(), burst.to_string());
        let http_addr = format!("127.0.0.1:{http_port}");
        let argv = [
            "cronscaler",
            "run",
            "--workers",
            &workers,
            "--kube-qps",
            &qps,
            "--kube-burst",
            &burst,
            "--http-addr",
            &http_addr,
        ];
        let Command::Run(args) = Cli::try_parse_from(argv)
            .context("controller arguments")?
            .command
        else {
            bail!("`cronscaler run ...` did not parse as `run`");
        };
        let config = kube::Config::new(format!("http://127.0.0.1:{api_port}").parse()?);
        let client = controller::client_for(config, &args).context("building the client")?;
        let (stop, stopped) = oneshot::channel::<()>();
        let running = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            // Without the controller there is nothing to measure: stop at once, saying why.
            if let Err(error) = controller::run(client, &args, shutdown).await {
                eprintln!("error: the controller stopped: {error}");
                std::process::exit(1);
            }
        });
        Ok(Self {
            stop,
            running,
            http_port,
        })
    }

    /// The schedules the controller holds, from its `cronscaler_schedules` gauge.
    async fn schedules(&self) -> anyhow::Result<u64> {
        let port = self.http_port;
        let metrics = tokio::task::spawn_blocking(move || {
            use std::io::{Read as _, Write as _};
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
            stream.write_all(
                b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok::<_, std::io::Error>(text)
        })
        .await?
        .context("reading the controller's /metrics")?;
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix("cronscaler_schedules ")?
                    .trim()
                    .parse()
                    .ok()
            })
            .context("no cronscaler_schedules in the controller's /metrics")
    }

    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.running)
            .await
            .context("the controller did not stop within 30 s")?
            .context("the controller panicked")
    }
}

async fn wait_until(
    deadline: Instant,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    while !done() {
        if Instant::now() >= deadline {
            bail!("timed out waiting for {what}; the scenario did not complete");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// A `/proc/self/status` figure in bytes, e.g. `VmRSS`.
fn proc_status(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")
        .context("reading /proc/self/status (Linux only)")?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().strip_suffix(" kB")?.parse::<u64>().ok())
        .with_context(|| format!("no {field} in /proc/self/status"))?;
    Ok(kib * 1024)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The governing transition at `now` of a UTC schedule: what catch-up would apply.
fn governing(
    scale_down: &str,
    scale_up: Option<&str>,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Transition>> {
    let mut annotations =
        BTreeMap::from([(schedule::SCALE_DOWN.to_string(), scale_down.to_string())]);
    annotations.extend(scale_up.map(|cron| (schedule::SCALE_UP.to_string(), cron.to_string())));
    match schedule::parse(&annotations, chrono_tz::UTC) {
        Annotations::Scheduled(schedule, _) => Ok(schedule.governing_transition(now)),
        other => bail!("the load schedule does not parse: {other:?}"),
    }
}

async fn memory(n: usize, qps: f64, burst: u32, common: Common) -> anyhow::Result<()> {
    // 03:00 and 04:00 UTC on January 1: no transition during a run; the previous one is
    // recorded as applied, so the start-up catch-up reads each Deployment and changes nothing.
    let (down, up) = ("0 0 3 1 1 *", "0 0 4 1 1 *");
    let last_transition =
        governing(down, Some(up), Utc::now())?.map(|transition| transition.to_string());
    let fake = Fake::new(
        n,
        Plan {
            scale_down: down.into(),
            scale_up: Some(up.into()),
            last_transition,
            patched_transition: None,
            last_applied: true,
        },
    );
    let port = start_server(fake.clone())?;
    let (baseline, baseline_heap) = (proc_status("VmRSS")?, LIVE_HEAP.load(Relaxed));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(common.timeout_secs);
    let controller = Controller::start(port, common.workers, qps, burst)?;
    let read_all = || fake.counts.gets.load(Relaxed) >= n as u64;
    wait_until(
        deadline,
        &format!("the controller to read all {n} Deployments"),
        read_all,
    )
    .await?;
    let startup = started.elapsed();
    wait_until(deadline, "the controller to settle", || {
        fake.idle_for() >= SETTLED
    })
    .await?;
    let (after, peak) = (proc_status("VmRSS")?, proc_status("VmHWM")?);
    let after_heap = LIVE_HEAP.load(Relaxed);
    let held = controller.schedules().await?;
    controller.stop().await?;

    let c = &fake.counts;
    let gets = c.gets.load(Relaxed);
    println!("memory: {n} annotated Deployments (4 KiB last-applied-configuration each)");
    println!(
        "  baseline RSS (runtime + fake API server): {}",
        mib(baseline)
    );
    println!(
        "  RSS after start-up (every Deployment watched, {held} schedules held, {gets} evaluated): {}",
        mib(after)
    );
    println!(
        "  controller's share: {}",
        mib(after.saturating_sub(baseline))
    );
    println!(
        "  live heap (allocated, not freed): {} before, {} after: the controller holds {}, {:.1} KiB per Deployment",
        mib(baseline_heap),
        mib(after_heap),
        mib(after_heap.saturating_sub(baseline_heap)),
        after_heap.saturating_sub(baseline_heap) as f64 / 1024.0 / n as f64
    );
    let verdict = if after < 25_000_000 {
        "within"
    } else {
        "ABOVE"
    };
    println!("  target: whole process under 25 MB (23.8 MiB): {verdict} it, fake server included");
    println!(
        "  peak during start-up (a list page being decoded, reads in flight): RSS {}, live heap {}",
        mib(peak),
        mib(PEAK_HEAP.load(Relaxed))
    );
    println!(
        "  start-up: {:.1} s at --kube-qps {qps} --kube-burst {burst} (high so that the {n} catch-up reads take seconds); \
         {} lists (pages of the all-Deployments watch, and the Foo controller's two), {} watches, {gets} GETs of one Deployment, \
         {} PATCHes, {} Events",
        startup.as_secs_f64(),
        c.lists.load(Relaxed),
        c.watches.load(Relaxed),
        c.patches.load(Relaxed),
        c.events.load(Relaxed)
    );
    check_clean(&fake)?;
    if gets != n as u64 || c.patches.load(Relaxed) != 0 {
        bail!("expected exactly {n} GETs and no PATCH at start-up");
    }
    Ok(())
}

async fn qps(n: usize, qps: f64, burst: u32, common: Common) -> anyhow::Result<()> {
    // Far enough ahead for start-up (one GET per Deployment, one list page per 500, a few more
    // through the same budget), then for the bucket to fill to the full burst again.
    let startup_requests = n + n / 500 + 10;
    let lead = (startup_requests as f64 + f64::from(burst)) / qps + 3.0;
    let now = Utc::now();
    let at = (now + TimeDelta::milliseconds((lead * 1000.0) as i64 + 1000))
        .with_nanosecond(0)
        .context("time")?;
    // Yearly at that second: it fires once during the run. Its previous firing is recorded as
    // applied, as the controller would have left it; otherwise start-up catch-up would already
    // scale everything down.
    let cron = format!(
        "{} {} {} {} {} *",
        at.second(),
        at.minute(),
        at.hour(),
        at.day(),
        at.month()
    );
    let previous = governing(&cron, None, now)?;
    let due = Transition {
        at,
        direction: Direction::Down,
    };
    if governing(&cron, None, at)? != Some(due) {
        bail!("bug: cron {cron:?} does not fire at {at}");
    }
    let fake = Fake::new(
        n,
        Plan {
            scale_down: cron.clone(),
            scale_up: None,
            last_transition: previous.map(|transition| transition.to_string()),
            patched_transition: Some(due.to_string()),
            last_applied: false,
        },
    );
    let port = start_server(fake.clone())?;
    let controller = Controller::start(port, common.workers, qps, burst)?;
    let refilled = (at - Utc::now())
        .to_std()
        .unwrap_or_default()
        .saturating_sub(Duration::from_secs_f64(f64::from(burst) / qps));
    let read_all = || fake.counts.gets.load(Relaxed) >= n as u64;
    wait_until(
        Instant::now() + refilled,
        "start-up to end in time for the burst to refill",
        read_all,
    )
    .await?;
    let instant = Instant::now() + (at - Utc::now()).to_std().unwrap_or_default();
    // Counted from a little before the instant: the controller's timer may beat this task's
    // wake-up by a millisecond, and start-up sent its last request long before.
    tokio::time::sleep_until((instant - Duration::from_millis(200)).into()).await;
    let c = &fake.counts;
    let before = [&c.requests, &c.gets, &c.rereads, &c.patches, &c.events]
        .map(|counter| counter.load(Relaxed));
    tokio::time::sleep_until(instant.into()).await;
    let deadline = instant + Duration::from_secs(common.timeout_secs);
    let patched_all = || {
        fake.patches_per_object
            .iter()
            .all(|patches| patches.load(Relaxed) > 0)
    };
    wait_until(
        deadline,
        &format!("all {n} Deployments to be patched"),
        patched_all,
    )
    .await?;
    wait_until(deadline, "the controller to settle", || {
        fake.idle_for() >= SETTLED
    })
    .await?;
    controller.stop().await?;

    let times = fake
        .patch_times
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let (Some(first), Some((last, requests_by_last))) = (times.first, times.last) else {
        bail!("bug: every Deployment was patched but no PATCH time was recorded");
    };
    let [requests, gets, rereads, patches, events] =
        [&c.requests, &c.gets, &c.rereads, &c.patches, &c.events]
            .map(|counter| counter.load(Relaxed));
    let [gets, rereads, patches, events] = [
        gets - before[1],
        rereads - before[2],
        patches - before[3],
        events - before[4],
    ];
    let per = |count: u64| count as f64 / n as f64;
    let sent = requests_by_last - before[0];
    println!(
        "qps: {n} Deployments due to scale down in the same second ({}, cron {cron:?}), 3 -> 0 replicas",
        at.to_rfc3339_opts(SecondsFormat::Secs, true)
    );
    println!(
        "  controller: --kube-qps {qps} --kube-burst {burst} --workers {}",
        common.workers
    );
    println!(
        "  requests per transition: {:.2} GET + {:.2} PATCH + {:.2} Event = {:.2} ({} of the {gets} GETs re-read a Deployment after the watch reported the controller's own PATCH)",
        per(gets),
        per(patches),
        per(events),
        per(gets + patches + events),
        rereads
    );
    println!(
        "  first PATCH {:.3} s after the instant; last PATCH {:.2} s after it",
        (first - instant).as_secs_f64(),
        (last - instant).as_secs_f64()
    );
    println!(
        "  expected ≈ ({sent} requests up to the last PATCH - {burst} burst) / {qps} qps = {:.2} s",
        sent.saturating_sub(u64::from(burst)) as f64 / qps
    );
    let once = fake
        .patches_per_object
        .iter()
        .filter(|patches| patches.load(Relaxed) == 1)
        .count();
    println!(
        "  dropped: {}: {patches} PATCHes received, {once} of {n} Deployments patched exactly once; {} requests in all",
        if once == n { "none" } else { "SOME" },
        requests
    );
    drop(times);
    check_clean(&fake)?;
    if once != n || patches != n as u64 {
        bail!("expected each of the {n} Deployments to be patched exactly once");
    }
    Ok(())
}

/// Fails on requests the fake server could not answer or PATCHes it did not expect.
fn check_clean(fake: &Fake) -> anyhow::Result<()> {
    let unknown = fake.counts.unknown.load(Relaxed);
    let unexpected = fake.counts.unexpected_patches.load(Relaxed);
    if unknown + unexpected > 0 {
        bail!(
            "{unknown} requests the fake server did not serve and {unexpected} unexpected PATCHes (see stderr)"
        );
    }
    Ok(())
}

/// The system allocator, counting the bytes allocated and not yet freed: RSS also holds what
/// the allocator keeps after a free, and this tells the two apart.
struct CountingAllocator;

static LIVE_HEAP: AtomicU64 = AtomicU64::new(0);
static PEAK_HEAP: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let size = layout.size() as u64;
        PEAK_HEAP.fetch_max(LIVE_HEAP.fetch_add(size, Relaxed) + size, Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_HEAP.fetch_sub(layout.size() as u64, Relaxed);
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[tokio::main]
async fn main() -> ExitCode {
    // Warnings only unless RUST_LOG says otherwise: per-transition info lines would cost time.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let result = match Load::parse() {
        Load::Memory {
            deployments,
            qps,
            burst,
            common,
        } => memory(deployments, qps, burst, common).await,
        Load::Qps {
            deployments,
            qps: rate,
            burst,
            common,
        } => qps(deployments, rate, burst, common).await,
    };
    // The message alone, whatever RUST_BACKTRACE says: a failed run is a finding, not a crash.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
