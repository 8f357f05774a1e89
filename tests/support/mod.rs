//! What the end-to-end test files share (each binary includes it with `mod support;`): where
//! the API server comes from, one namespace per scenario, the controller binary run as a
//! process, and helpers to wait for what a user would see with `kubectl get` and `kubectl
//! describe`.
//!
//! The API server is, in this order:
//! - with `CRONSCALER_E2E=1`, the cluster of the current kubeconfig (as before this harness);
//! - with `KUBEBUILDER_ASSETS`, a control plane of our own ([`envtest`]): one per test file,
//!   shared by its tests, or one per test for scenarios that restart or reconfigure it;
//! - otherwise none: every scenario says on stderr that it is skipped, and returns.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

pub mod crds;
pub mod envtest;
pub mod gitops;
pub mod helm;
pub mod keda;
pub mod kinds;
pub mod prometheus;
pub mod wake;

use std::{
    collections::BTreeMap,
    future::Future,
    io::Write as _,
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, ExitStatus, Output, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chrono::{DateTime, Timelike as _, Utc};
use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    batch::v1::CronJob,
    coordination::v1::Lease,
    core::v1::{Namespace, Pod},
    events::v1::Event,
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams},
    config::Kubeconfig,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use envtest::{ControlPlane, Options};

/// How to get assets, for skip messages.
const HOW_TO_GET_ASSETS: &str = "set KUBEBUILDER_ASSETS to a directory holding etcd, \
    kube-apiserver and kube-controller-manager: `export KUBEBUILDER_ASSETS=$(setup-envtest use \
    1.26.x -p path)`, or in this project's workspace `export \
    KUBEBUILDER_ASSETS=$(../shared/envtest/setup)`";

/// Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must be seen.
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Where a scenario's API server comes from.
#[derive(Clone)]
enum Backend {
    Envtest(Arc<ControlPlane>),
    /// The cluster of the current kubeconfig (`CRONSCALER_E2E=1`), with the ServiceAccount's
    /// kubeconfig written to `sa_kubeconfig`.
    Kubeconfig {
        sa_kubeconfig: PathBuf,
    },
}

fn current_kubeconfig_requested() -> bool {
    std::env::var("CRONSCALER_E2E").as_deref() == Ok("1")
}

/// A backend shared, made on first use.
type SharedBackend = Arc<tokio::sync::OnceCell<Result<Backend, String>>>;

/// The backends the tests share, by the file of the test: each file has a control plane of its
/// own, as when each was a binary of its own, so that a file's tests may count what is on it.
/// The current kubeconfig's cluster is one for all.
static SHARED: Mutex<BTreeMap<&'static str, SharedBackend>> = Mutex::new(BTreeMap::new());

/// Stops the shared control planes when the test binary exits: statics are never dropped.
/// (Should the binary die by a signal instead, pdeathsig kills the processes.)
extern "C" fn stop_shared_at_exit() {
    let shared = SHARED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for backend in shared.values() {
        match backend.get() {
            Some(Ok(Backend::Envtest(plane))) => plane.stop(),
            Some(Ok(Backend::Kubeconfig { sa_kubeconfig })) => {
                let _ = std::fs::remove_file(sa_kubeconfig);
            }
            _ => {}
        }
    }
}

async fn shared_backend(file: &str) -> Result<Backend, String> {
    if current_kubeconfig_requested() {
        return current_cluster().await;
    }
    let Some(assets) = envtest::assets() else {
        return Err("no assets".into());
    };
    let started = Instant::now();
    let plane = ControlPlane::start(&assets, &Options::default()).await?;
    at_exit();
    say(&format!(
        "envtest: {file}'s shared control plane at {} ready in {:.1} s (admin kubeconfig: {})",
        plane.server(),
        started.elapsed().as_secs_f64(),
        plane.admin_kubeconfig().display()
    ));
    Ok(Backend::Envtest(Arc::new(plane)))
}

fn at_exit() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain function, once; it never unwinds.
    REGISTERED.call_once(|| unsafe {
        libc::atexit(stop_shared_at_exit);
    });
}

/// `CRONSCALER_E2E=1`: installs the namespace, CRD and `rbac/` into the current kubeconfig's
/// cluster and writes a kubeconfig of the ServiceAccount for the same cluster.
async fn current_cluster() -> Result<Backend, String> {
    let admin = Client::try_default()
        .await
        .map_err(|error| format!("CRONSCALER_E2E=1 needs a kubeconfig: {error}"))?;
    envtest::install_crd(&admin).await?;
    envtest::install(&admin).await?;
    let token = envtest::sign_in(&admin, None).await?;
    let kubeconfig = Kubeconfig::read().map_err(|error| format!("reading kubeconfig: {error}"))?;
    let context_name = kubeconfig
        .current_context
        .clone()
        .ok_or("the kubeconfig has no current-context")?;
    let cluster_name = kubeconfig
        .contexts
        .iter()
        .find(|context| context.name == context_name)
        .and_then(|context| context.context.as_ref())
        .map(|context| context.cluster.clone())
        .ok_or_else(|| format!("no context {context_name:?} in the kubeconfig"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|cluster| cluster.name == cluster_name)
        .ok_or_else(|| format!("no cluster {cluster_name:?} in the kubeconfig"))?;
    let sa = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{ "name": envtest::SA_NAME, "user": { "token": token } }],
        "contexts": [{
            "name": "cronscaler-e2e",
            "context": { "cluster": cluster.name, "user": envtest::SA_NAME },
        }],
        "current-context": "cronscaler-e2e",
    });
    let sa_kubeconfig =
        std::env::temp_dir().join(format!("cronscaler-e2e-{}.kubeconfig", std::process::id()));
    std::fs::write(&sa_kubeconfig, sa.to_string())
        .map_err(|error| format!("writing {}: {error}", sa_kubeconfig.display()))?;
    at_exit();
    Ok(Backend::Kubeconfig { sa_kubeconfig })
}

/// One test's world: its namespace, an admin client, the controllers it started and their logs,
/// which are printed if the test fails.
pub struct Scenario {
    pub name: String,
    pub namespace: String,
    /// A cluster admin, standing in for the user with kubectl.
    pub client: Client,
    backend: Backend,
    /// Started by [`Scenario::own`]: nobody else's tests run on its API server.
    own_plane: bool,
    logs_dir: tempfile::TempDir,
    logs: Mutex<Vec<PathBuf>>,
}

impl Scenario {
    /// A scenario on the control plane the tests of the calling file share (or the current
    /// kubeconfig's cluster). `None`, after saying so, when there is no API server to run
    /// against.
    #[track_caller]
    pub fn shared(name: &str) -> impl Future<Output = Option<Self>> + '_ {
        let file = match current_kubeconfig_requested() {
            true => "",
            false => std::panic::Location::caller().file(),
        };
        async move {
            if !current_kubeconfig_requested() && envtest::assets().is_none() {
                say(&format!(
                    "{name}: skipped: needs a Kubernetes API server; {HOW_TO_GET_ASSETS}; or set \
                     CRONSCALER_E2E=1 to use the cluster of the current kubeconfig"
                ));
                return None;
            }
            let shared = (SHARED
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()))
            .entry(file)
            .or_default()
            .clone();
            let backend = match shared.get_or_init(|| shared_backend(file)).await {
                Ok(backend) => backend.clone(),
                Err(error) => panic!("{name}: no API server: {error}"),
            };
            Some(Self::new(name, backend, false).await)
        }
    }

    /// A scenario on a control plane of its own, for what would disturb other tests: stopping
    /// the API server, admission plugins, a cluster without the CRD, counting requests. These
    /// need `KUBEBUILDER_ASSETS` even with `CRONSCALER_E2E=1`.
    pub async fn own(name: &str, options: Options) -> Option<Self> {
        let Some(assets) = envtest::assets() else {
            say(&format!(
                "{name}: skipped: needs a control plane of its own; {HOW_TO_GET_ASSETS}"
            ));
            return None;
        };
        let started = Instant::now();
        let plane = ControlPlane::start(&assets, &options)
            .await
            .unwrap_or_else(|error| panic!("{name}: starting a control plane: {error}"));
        say(&format!(
            "{name}: own control plane at {} ready in {:.1} s",
            plane.server(),
            started.elapsed().as_secs_f64()
        ));
        Some(Self::new(name, Backend::Envtest(Arc::new(plane)), true).await)
    }

    async fn new(name: &str, backend: Backend, own_plane: bool) -> Self {
        let client = match &backend {
            Backend::Envtest(plane) => plane.admin_client().await,
            Backend::Kubeconfig { .. } => Client::try_default().await.expect("a kubeconfig"),
        };
        let namespace = format!("{}-{}", name.replace('_', "-"), std::process::id());
        assert!(namespace.len() <= 63, "namespace {namespace} too long");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let object: Namespace =
            serde_json::from_value(json!({ "metadata": { "name": namespace } }))
                .expect("a Namespace");
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating namespace {namespace}: {error}"));
        let logs_dir =
            envtest::temp_dir("cronscaler-e2e-logs-").expect("a temporary directory for logs");
        Self {
            name: name.into(),
            namespace,
            client,
            backend,
            own_plane,
            logs_dir,
            logs: Mutex::new(Vec::new()),
        }
    }

    /// The scenario's own control plane. Panics on the shared backend: only scenarios started
    /// with [`Scenario::own`] may stop or inspect the API server.
    pub fn plane(&self) -> &ControlPlane {
        match &self.backend {
            Backend::Envtest(plane) => plane,
            Backend::Kubeconfig { .. } => panic!("{}: not on a control plane of ours", self.name),
        }
    }

    /// A client acting as `user`, a cluster admin impersonating them: a person or a tenant,
    /// with what RBAC grants `user` alone.
    pub async fn client_as(&self, user: &str) -> Client {
        let path = self.plane().admin_kubeconfig();
        let kubeconfig = Kubeconfig::read_from(&path).expect("the admin kubeconfig");
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("a config");
        config.auth_info.impersonate = Some(user.to_string());
        Client::try_from(config).expect("a client")
    }

    /// The kubeconfig of the project's ServiceAccount.
    pub fn sa_kubeconfig(&self) -> PathBuf {
        match &self.backend {
            Backend::Envtest(plane) => plane.sa_kubeconfig(),
            Backend::Kubeconfig { sa_kubeconfig } => sa_kubeconfig.clone(),
        }
    }

    /// Whether garbage collection runs (on envtest only with the controller manager's binary).
    pub fn has_garbage_collection(&self) -> bool {
        match &self.backend {
            Backend::Envtest(_) => envtest::assets()
                .is_some_and(|assets| assets.join("kube-controller-manager").is_file()),
            Backend::Kubeconfig { .. } => true,
        }
    }

    /// The cronscaler binary (cargo's, or the one `CRONSCALER_E2E_BINARY` names, to measure
    /// another build) with the ServiceAccount's kubeconfig and nothing of our environment's
    /// `CRONSCALER_*` variables (which it would read as flags).
    fn command(&self, args: &[&str]) -> Command {
        let binary = std::env::var_os("CRONSCALER_E2E_BINARY")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_cronscaler").into());
        let mut command = Command::new(binary);
        command.args(args).env("KUBECONFIG", self.sa_kubeconfig());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("CRONSCALER_") {
                command.env_remove(key);
            }
        }
        command
    }

    /// Starts `cronscaler run --namespace <this scenario's> --http-addr 127.0.0.1:<free>` and
    /// `args`, as the ServiceAccount, with `POD_NAME` = `name` (its lease identity and Events'
    /// reporting instance). Its output goes to a log printed if the test fails.
    pub fn start_controller(&self, name: &str, args: &[&str]) -> Controller {
        self.spawn_controller(name, &["run", "--namespace", &self.namespace], args)
    }

    /// Starts `cronscaler run` over every namespace, as installed by `rbac/`: only on a control
    /// plane of the scenario's own, where it disturbs no other test.
    pub fn start_cluster_wide_controller(&self, name: &str, args: &[&str]) -> Controller {
        assert!(
            self.own_plane,
            "{}: a cluster-wide controller needs a control plane of its own",
            self.name
        );
        self.spawn_controller(name, &["run"], args)
    }

    /// Starts the controller with the arguments an installed Deployment gives it (`run` and
    /// its flags, as the chart or the manifests render them): only on a control plane of the
    /// scenario's own.
    pub fn start_as_installed(&self, name: &str, args: &[&str]) -> Controller {
        assert!(
            self.own_plane,
            "{}: an installed controller needs a control plane of its own",
            self.name
        );
        let (run, flags) = args.split_at(args.len().min(1));
        self.spawn_controller(name, run, flags)
    }

    fn spawn_controller(&self, name: &str, run: &[&str], args: &[&str]) -> Controller {
        let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
        let log = self.logs_dir.path().join(format!("{name}.log"));
        let mut command = self.command(run);
        command
            .args(["--http-addr", &addr.to_string()])
            .args(args)
            .env("POD_NAME", name)
            // A log file, not a terminal: no colour codes.
            .env("NO_COLOR", "1")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            );
        let (out, err) = envtest::log_file(&log);
        command.stdout(out).stderr(err).stdin(Stdio::null());
        let child = envtest::spawn(command).expect("the cronscaler binary starts");
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        if !logs.contains(&log) {
            logs.push(log.clone());
        }
        Controller {
            name: name.into(),
            child,
            addr,
            log,
        }
    }

    /// Runs a `cronscaler` command to completion (e.g. `restore`) as the ServiceAccount.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .expect("the cronscaler binary runs")
    }

    /// Runs a `cronscaler` command to completion as the ServiceAccount, failing the test with
    /// what it said unless it succeeds; what it printed.
    pub fn said(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let said = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "cronscaler {}: {said}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        said
    }

    pub fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn cron_jobs(&self) -> Api<CronJob> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn stateful_sets(&self) -> Api<StatefulSet> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn foos(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &foo_resource())
    }

    /// The Events about the object `name` in this namespace, as `kubectl describe` shows them.
    pub async fn events(&self, name: &str) -> Vec<Event> {
        events_in(&self.client, &self.namespace, name).await
    }

    /// Waits for an Event with `reason` about `name`.
    pub async fn event(&self, name: &str, reason: &str, timeout: Duration) -> Event {
        eventually(
            &format!("a {reason} Event about {name}"),
            timeout,
            || async {
                self.events(name)
                    .await
                    .into_iter()
                    .find(|event| event.reason.as_deref() == Some(reason))
            },
        )
        .await
    }

    /// Waits for an Event with `reason` about this scenario's Namespace itself.
    pub async fn namespace_event(&self, reason: &str, timeout: Duration) -> Event {
        self.event_about_namespace(&self.namespace, reason, timeout)
            .await
    }

    /// Waits for an Event with `reason` about the Namespace `namespace`. Events about a
    /// cluster-scoped object live in `default`.
    pub async fn event_about_namespace(
        &self,
        namespace: &str,
        reason: &str,
        timeout: Duration,
    ) -> Event {
        let events: Api<Event> = Api::namespaced(self.client.clone(), "default");
        let params = ListParams::default().fields(&format!("regarding.name={namespace}"));
        eventually(
            &format!("a {reason} Event about Namespace {namespace}"),
            timeout,
            || async {
                events
                    .list(&params)
                    .await
                    .ok()?
                    .items
                    .into_iter()
                    .find(|event| event.reason.as_deref() == Some(reason))
            },
        )
        .await
    }

    /// Deletes the namespace on a real cluster, where it would otherwise stay; on envtest the
    /// control plane goes away with the test binary, and deleting only costs time.
    pub async fn finish(self) {
        if let Backend::Kubeconfig { .. } = self.backend {
            let namespaces: Api<Namespace> = Api::all(self.client.clone());
            let _ = namespaces
                .delete(&self.namespace, &DeleteParams::default())
                .await;
        }
    }
}

impl Drop for Scenario {
    /// On failure, every controller's log, and the API server's last lines.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for log in self.logs.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            eprintln!(
                "----- {} ({}) -----\n{}",
                log.file_name().unwrap_or_default().to_string_lossy(),
                self.name,
                envtest::tail(log, 200)
            );
        }
        if let Backend::Envtest(plane) = &self.backend {
            eprintln!(
                "----- kube-apiserver, last lines ({}) -----\n{}",
                self.name,
                envtest::tail(&plane.apiserver_log(), 20)
            );
        }
    }
}

/// A process's memory, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    pub resident: u64,
    pub peak: u64,
    pub anonymous: u64,
}

/// One `cronscaler run` process, as one replica of the installed Deployment is. Killed when
/// dropped, if still running.
pub struct Controller {
    pub name: String,
    child: Child,
    pub addr: SocketAddr,
    log: PathBuf,
}

impl Controller {
    /// Its memory now, from `/proc`: resident, peak resident, and the part of resident that is
    /// anonymous (heap and stacks, not the binary's pages), in KiB.
    pub fn resident_kib(&self) -> Option<Resident> {
        let read = |file: &str, name: &str| -> Option<u64> {
            let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).ok()?;
            text.lines()
                .find_map(|line| line.strip_prefix(name))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        Some(Resident {
            resident: read("status", "VmRSS:")?,
            peak: read("status", "VmHWM:")?,
            anonymous: read("smaps_rollup", "Anonymous:")?,
        })
    }

    /// How many file descriptors it has open now, from `/proc`.
    pub fn open_descriptors(&self) -> Option<usize> {
        let open = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).ok()?;
        Some(open.count())
    }

    /// Waits until `/readyz` answers 200: the caches are synced.
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some((200, _)) = self.get("/readyz").await {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited with {status} before it was ready:\n{}",
                    self.name,
                    envtest::tail(&self.log, 40)
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} not ready 60 s after it started:\n{}",
                self.name,
                envtest::tail(&self.log, 40)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A GET on its HTTP listener: status and body. HTTP/1.0, so the body is not chunked.
    pub async fn get(&self, path: &str) -> Option<(u16, String)> {
        let exchange = async {
            let mut stream = tokio::net::TcpStream::connect(self.addr).await.ok()?;
            let request = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
            stream.write_all(request.as_bytes()).await.ok()?;
            let mut response = Vec::new();
            stream.read_to_end(&mut response).await.ok()?;
            let response = String::from_utf8_lossy(&response).into_owned();
            let (head, body) = response.split_once("\r\n\r\n")?;
            let status = head.split_whitespace().nth(1)?.parse().ok()?;
            Some((status, body.to_string()))
        };
        tokio::time::timeout(Duration::from_secs(5), exchange)
            .await
            .ok()
            .flatten()
    }

    /// `/metrics` as Prometheus would scrape it.
    pub async fn metrics(&self) -> Option<String> {
        match self.get("/metrics").await? {
            (200, body) => Some(body),
            _ => None,
        }
    }

    /// SIGKILL, as a node that dies or an OOM kill ends it: no Lease released, nothing
    /// finished. Waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as the kubelet sends it.
    pub fn sigterm(&self) {
        envtest::signal(&self.child, libc::SIGTERM);
    }

    /// SIGTERM and how it exited, if it did within `within`; the process is killed otherwise.
    pub async fn terminate(&mut self, within: Duration) -> Result<(ExitStatus, Duration), String> {
        self.sigterm();
        let sent = Instant::now();
        while sent.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Ok((status, sent.elapsed()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(format!(
            "{} had not exited {within:?} after SIGTERM (killed). Its last lines:\n{}",
            self.name,
            envtest::tail(&self.log, 20)
        ))
    }

    /// Asserts that SIGTERM makes it exit 0 within `within`, as Kubernetes expects of a Pod.
    pub async fn assert_stops_cleanly(&mut self, within: Duration) {
        match self.terminate(within).await {
            Ok((status, took)) => {
                say(&format!(
                    "{} exited {status} {took:.1?} after SIGTERM",
                    self.name
                ));
                assert!(
                    status.success(),
                    "{} exited with {status} on SIGTERM, want 0. Its last lines:\n{}",
                    self.name,
                    envtest::tail(&self.log, 20)
                );
            }
            Err(message) => panic!("{message}"),
        }
    }

    /// Whether the process is still running (has not exited or been restarted).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The value of a metric without labels in Prometheus text, e.g. `cronscaler_workqueue_depth`.
pub fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// Polls `check` every 250 ms until it yields a value, or panics after `timeout` naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match poll_until(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `check` every 250 ms until it yields a value, or `None` after `timeout`.
pub async fn poll_until<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Events with `reason`, counting a series (an Event the recorder repeated) as its count: what
/// "happened N times" means in `kubectl describe`.
pub fn occurrences(events: &[Event], reason: &str) -> i32 {
    events
        .iter()
        .filter(|event| event.reason.as_deref() == Some(reason))
        .map(|event| event.series.as_ref().map_or(1, |series| series.count))
        .sum()
}

/// When the Event was emitted (its `eventTime`, to the microsecond).
pub fn event_time(event: &Event) -> Option<DateTime<Utc>> {
    let at = &event.event_time.as_ref()?.0;
    DateTime::from_timestamp(at.as_second(), u32::try_from(at.subsec_nanosecond()).ok()?)
}

/// When the Event last happened: a series (the recorder repeating an Event of the same reason)
/// keeps the first `eventTime` and moves `series.lastObservedTime`.
pub fn last_seen(event: &Event) -> Option<DateTime<Utc>> {
    match &event.series {
        Some(series) => {
            let at = &series.last_observed_time.0;
            DateTime::from_timestamp(at.as_second(), u32::try_from(at.subsec_nanosecond()).ok()?)
        }
        None => event_time(event),
    }
}

/// Events as one line each, for failure messages.
pub fn describe(events: &[Event]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "  {} {} (x{}) by {}: {}",
                event.type_.as_deref().unwrap_or_default(),
                event.reason.as_deref().unwrap_or_default(),
                event.series.as_ref().map_or(1, |series| series.count),
                event.reporting_instance.as_deref().unwrap_or_default(),
                event.note.as_deref().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The whole second `seconds` from now. Crons fire on whole seconds, so an instant to compare
/// with what the controller did must be one, not now plus a fraction.
pub fn whole_second_in(seconds: i64) -> DateTime<Utc> {
    let at = Utc::now() + chrono::Duration::seconds(seconds);
    at.with_nanosecond(0).expect("0 ns is valid")
}

/// The schedule annotations of a scale-down at `down` and a scale-up at `up`, each once a day.
pub fn nightly(down: DateTime<Utc>, up: DateTime<Utc>) -> Value {
    json!({
        "cronscaler.dev/scale-down": cron_at(down),
        "cronscaler.dev/scale-up": cron_at(up),
    })
}

/// The Events about the object `name` in `namespace`, as `kubectl describe` shows them.
pub async fn events_in(client: &Client, namespace: &str, name: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut found: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    found.sort_by_key(|event| event.metadata.creation_timestamp.clone());
    found
}

/// A 6-field cron (seconds first) firing once a day at `at`'s time of day, in UTC.
pub fn cron_at(at: DateTime<Utc>) -> String {
    format!("{} {} {} * * *", at.second(), at.minute(), at.hour())
}

/// The `cronscaler.dev/last-transition` value for a transition at `at`.
pub fn last_transition(at: DateTime<Utc>, direction: &str) -> String {
    format!(
        "{} {direction}",
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// Annotations for a Deployment that goes down at `down` and only an hour later back up. The
/// scale-up cron makes the governing transition at creation yesterday's (no-op) scale-up, not
/// yesterday's scale-down, so nothing happens before `down`.
pub fn down_at(down: DateTime<Utc>) -> Value {
    json!({
        "cronscaler.dev/scale-down": cron_at(down),
        "cronscaler.dev/scale-up": cron_at(down + chrono::Duration::hours(1)),
    })
}

pub async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(left) = (at - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

/// An nginx Deployment as a user would write it.
pub fn deployment(name: &str, replicas: i32, annotations: Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
            },
        },
    }))
    .expect("a Deployment")
}

/// A StatefulSet as a user would write it.
pub fn stateful_set(name: &str, replicas: i32, annotations: Value) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "db", "image": "postgres:16" }] },
            },
        },
    }))
    .expect("a StatefulSet")
}

/// A CronJob as a user would write it.
pub fn cron_job(name: &str, suspend: bool, annotations: Value) -> CronJob {
    serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": suspend,
            "jobTemplate": { "spec": { "template": { "spec": {
                "containers": [{ "name": name, "image": "busybox" }],
                "restartPolicy": "OnFailure",
            } } } },
        },
    }))
    .expect("a CronJob")
}

/// Replicas and annotations of a Deployment, as `kubectl get -o yaml` shows them.
pub async fn replicas_and_annotations(
    deployments: &Api<Deployment>,
    name: &str,
) -> Option<(i32, BTreeMap<String, String>)> {
    let deployment = deployments.get(name).await.ok()?;
    let replicas = deployment.spec.as_ref()?.replicas?;
    Some((replicas, deployment.annotations().clone()))
}

pub fn foo_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("samplecontroller.k8s.io", "v1alpha1", "Foo"),
        "foos",
    )
}

/// A Foo as a user would write it.
pub fn foo(name: &str, deployment_name: &str, replicas: i32, annotations: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": name, "annotations": annotations },
        "spec": { "deploymentName": deployment_name, "replicas": replicas },
    }))
    .expect("a Foo")
}

/// `examples/example-foo.yaml`, unchanged.
pub fn example_foo() -> DynamicObject {
    serde_norway::from_str(include_str!("../../examples/example-foo.yaml"))
        .expect("examples/example-foo.yaml is a Foo")
}

/// The holder of a Lease, if anyone holds it.
pub async fn lease_holder(client: &Client, namespace: &str, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases
        .get(name)
        .await
        .ok()?
        .spec?
        .holder_identity
        .filter(|holder| !holder.is_empty())
}

/// A window every day from an hour before now to an hour after (UTC), running over midnight
/// when it has to: `Mon-Sun 19:12-21:12`.
pub fn window_around_now() -> String {
    let now = Utc::now();
    let clock = |at: DateTime<Utc>| format!("{:02}:{:02}", at.hour(), at.minute());
    format!(
        "Mon-Sun {}-{}",
        clock(now - chrono::Duration::hours(1)),
        clock(now + chrono::Duration::hours(1))
    )
}

/// The schedule of a Deployment awake since this morning: its scale-up about 6 hours ago is
/// recorded, its scale-down is about 6 hours away, so nothing is due. The scale-up set no
/// replicas (no up-replicas, no original to give back) that someone could since have reverted.
pub fn awake_since_this_morning() -> Value {
    let now = Utc::now();
    let (up_hour, down_hour) = ((now.hour() + 18) % 24, (now.hour() + 6) % 24);
    let up_today = now
        .with_hour(up_hour)
        .and_then(|at| at.with_minute(0))
        .and_then(|at| at.with_second(0))
        .and_then(|at| at.with_nanosecond(0))
        .expect("a whole hour today");
    let last_up = if up_today <= now {
        up_today
    } else {
        up_today - chrono::Duration::days(1)
    };
    json!({
        "cronscaler.dev/scale-down": format!("0 0 {down_hour} * * *"),
        "cronscaler.dev/scale-up": format!("0 0 {up_hour} * * *"),
        "cronscaler.dev/last-transition": last_transition(last_up, "up"),
    })
}

/// Creates `deployments`, `at_once` at a time: the API server, not this client, is the limit.
pub async fn create_deployments(
    api: &Api<Deployment>,
    deployments: impl Iterator<Item = Deployment>,
    at_once: usize,
) {
    use futures::{StreamExt as _, TryStreamExt as _};
    futures::stream::iter(deployments)
        .map(|deployment| async move { api.create(&PostParams::default(), &deployment).await })
        .buffer_unordered(at_once)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("creating the Deployments");
}

/// Plays the kubelet: every Pod of `namespace` runs and is ready, so the real ReplicaSet and
/// Deployment controllers count them available.
pub async fn mark_pods_ready(client: &Client, namespace: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let running = json!({ "status": {
        "phase": "Running",
        "conditions": [
            { "type": "Ready", "status": "True", "lastTransitionTime": now },
            { "type": "ContainersReady", "status": "True", "lastTransitionTime": now },
        ],
    }});
    for pod in pods
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .unwrap_or_default()
    {
        let _ = pods
            .patch_status(
                &pod.name_any(),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&running),
            )
            .await;
    }
}

/// Creates the Namespace `name` unless it exists.
pub async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await.ok().flatten().is_some() {
        return;
    }
    let object: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": name } })).expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("creating Namespace {name}: {error}"));
}

/// Sets `annotations` on the Namespace `name`, as `kubectl annotate` would.
pub async fn annotate_namespace(client: &Client, name: &str, annotations: Value) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({ "metadata": { "annotations": annotations } })),
        )
        .await
        .unwrap_or_else(|error| panic!("annotating Namespace {name}: {error}"));
}

/// Creates `object` through `api`, as the object the API server made.
pub async fn create(api: &Api<DynamicObject>, object: Value) -> DynamicObject {
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("creating {:?}: {error}", object.metadata.name))
}

/// A Namespace labelled `env`, with a Deployment `web` of 2: the Deployments of it.
pub async fn namespace_with_web(scenario: &Scenario, name: &str, env: &str) -> Api<Deployment> {
    let namespaces: Api<Namespace> = Api::all(scenario.client.clone());
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "env": env } },
    }))
    .expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creating the Namespace");
    create_deployment(&scenario.client, name, "web", 2).await
}

/// Creates an nginx Deployment `name` of `replicas` in `namespace`, with no annotations.
pub async fn create_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
) -> Api<Deployment> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    deployments
        .create(
            &PostParams::default(),
            &deployment(name, replicas, json!({})),
        )
        .await
        .unwrap_or_else(|error| panic!("creating Deployment {namespace}/{name}: {error}"));
    deployments
}
