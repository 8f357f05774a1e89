//! One test's world, a [`Scenario`]: its namespace on its API server, clients, the controllers
//! it starts and the commands it runs, the Events it waits for, and the logs printed when it
//! fails.

use std::{
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    process::{Command, Output, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    apps::v1::{Deployment, StatefulSet},
    batch::v1::CronJob,
    core::v1::Namespace,
    events::v1::Event,
};
use kube::{
    Api, Client,
    api::{DeleteParams, DynamicObject, ListParams, PostParams},
    config::Kubeconfig,
};
use serde_json::json;

use super::backend::{Backend, SHARED, current_kubeconfig_requested, shared_backend};
use super::envtest::{self, ControlPlane, Options};
use super::{Controller, events_in, eventually, foo_resource, say};

/// How to get assets, for skip messages.
const HOW_TO_GET_ASSETS: &str = "set KUBEBUILDER_ASSETS to a directory holding etcd, \
    kube-apiserver and kube-controller-manager: `export KUBEBUILDER_ASSETS=$(setup-envtest use \
    1.26.x -p path)`, or in this project's workspace `export \
    KUBEBUILDER_ASSETS=$(../shared/envtest/setup)`";

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
        self.command_as(&self.sa_kubeconfig(), args)
    }

    /// As [`Scenario::command`], with the kubeconfig `kubeconfig`.
    fn command_as(&self, kubeconfig: &std::path::Path, args: &[&str]) -> Command {
        let binary = std::env::var_os("CRONSCALER_E2E_BINARY")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_cronscaler").into());
        let mut command = Command::new(binary);
        command.args(args).env("KUBECONFIG", kubeconfig);
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

    /// [`Scenario::start_controller`], then waits until it is ready: its caches are synced.
    pub async fn ready_controller(&self, name: &str, args: &[&str]) -> Controller {
        let mut controller = self.start_controller(name, args);
        controller.wait_ready().await;
        controller
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
        self.spawn_as(&self.sa_kubeconfig(), name, run, args)
    }

    /// Starts `cronscaler` `run` (a command and its first arguments) with `args`, as whoever
    /// `kubeconfig` signs in, with its own `--http-addr`; its log is printed if the test fails.
    pub fn spawn_as(
        &self,
        kubeconfig: &std::path::Path,
        name: &str,
        run: &[&str],
        args: &[&str],
    ) -> Controller {
        let addr: SocketAddr = ([127, 0, 0, 1], envtest::free_port()).into();
        let http = ["--http-addr".to_string(), addr.to_string()];
        let args: Vec<&str> = (run.iter().copied())
            .chain(http.iter().map(String::as_str))
            .chain(args.iter().copied())
            .collect();
        self.spawn_at(kubeconfig, name, &args, addr)
    }

    /// Starts `cronscaler` with `args`, as whoever `kubeconfig` signs in, answering its
    /// `/readyz` on `addr`; its log is printed if the test fails.
    pub fn spawn_at(
        &self,
        kubeconfig: &std::path::Path,
        name: &str,
        args: &[&str],
        addr: SocketAddr,
    ) -> Controller {
        let log = self.logs_dir.path().join(format!("{name}.log"));
        let mut command = self.command_as(kubeconfig, args);
        command
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

    /// Runs a `cronscaler` command to completion as the user `user` (a cluster admin's kubeconfig
    /// impersonating them, as [`Scenario::client_as`]): a person with what RBAC grants `user`.
    pub fn run_as_user(&self, user: &str, args: &[&str]) -> Output {
        let admin = self.plane().admin_kubeconfig();
        let mut kubeconfig = Kubeconfig::read_from(&admin).expect("the admin kubeconfig");
        for named in &mut kubeconfig.auth_infos {
            if let Some(info) = named.auth_info.as_mut() {
                info.impersonate = Some(user.to_string());
            }
        }
        let path = self.plane().dir().join(format!("{user}.kubeconfig"));
        let text = serde_norway::to_string(&kubeconfig).expect("a kubeconfig as YAML");
        std::fs::write(&path, text).expect("writing the user's kubeconfig");
        self.command_as(&path, args)
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

/// Ends a test with its controller: SIGTERM makes `controller` exit 0 within `within`, as
/// Kubernetes expects of a Pod, then the scenario [finishes](Scenario::finish).
pub async fn stop_cleanly_and_finish(
    scenario: Scenario,
    mut controller: Controller,
    within: Duration,
) {
    controller.assert_stops_cleanly(within).await;
    scenario.finish().await;
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
