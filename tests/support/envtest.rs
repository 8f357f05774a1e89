//! A real Kubernetes control plane for tests, in the manner of controller-runtime's envtest:
//! etcd, kube-apiserver and (when its binary is there) kube-controller-manager, from the
//! directory `KUBEBUILDER_ASSETS` names, on free ports, in a temporary directory.
//!
//! The API server enforces RBAC and authenticates by token, so the controller under test runs
//! as the project's own ServiceAccount, bound by `rbac/` exactly as installed: a grant missing
//! there is a 403 here. An audit log records every request, so a test can count what the
//! controller asked for.
//!
//! Every process is spawned from one thread that never exits, with `PR_SET_PDEATHSIG`: the kernel
//! kills the processes when that thread dies, that is when the test binary exits, however it
//! exits (pdeathsig follows the spawning *thread*, so spawning from a test's own thread would kill
//! them when that test ends).

use std::{
    collections::BTreeSet,
    fs::{self, File, OpenOptions},
    io::{self, BufRead as _},
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Mutex, OnceLock, mpsc},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        authentication::v1::TokenRequest, authorization::v1::SubjectAccessReview,
        core::v1::ServiceAccount,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
    discovery::Scope,
};
use serde_json::{Value, json};

/// Token of the admin user (group `system:masters`), written to `tokens.csv`.
const ADMIN_TOKEN: &str = "envtest-admin-token";

/// The project's ServiceAccount, as `rbac/service-account.yaml` installs it.
pub const SA_NAMESPACE: &str = "cronscaler";
pub const SA_NAME: &str = "cronscaler";
/// The user name the API server gives requests made with the ServiceAccount's token.
pub const SA_USER: &str = "system:serviceaccount:cronscaler:cronscaler";

/// Field manager of everything the tests apply.
pub const FIELD_MANAGER: &str = "cronscaler-e2e";

const CRD_NAME: &str = "foos.samplecontroller.k8s.io";

/// How long the API server gets to exit on SIGTERM when a test stops it (about 3 s with etcd
/// up), before it is killed.
const GRACE: Duration = Duration::from_secs(3);

/// How long each process gets on SIGTERM at teardown before it is killed: its data is thrown
/// away, so a graceful exit (1-3 s each) would only slow every test binary down. An API server
/// whose etcd is gone can hang on SIGTERM anyway.
const TEARDOWN_GRACE: Duration = Duration::from_millis(500);

/// The directory of etcd, kube-apiserver and kube-controller-manager, if the user gave one.
pub fn assets() -> Option<PathBuf> {
    std::env::var_os("KUBEBUILDER_ASSETS")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
}

/// A TCP port nobody listens on now and that this process has not handed out before, so two
/// control planes (or controllers) started at once never get the same one.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("binding 127.0.0.1:0 to find a free port")
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            return port;
        }
    }
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `command` from the spawner thread, with `PR_SET_PDEATHSIG` = SIGKILL, so the process
/// cannot outlive the test binary.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("envtest-spawner".into())
            // The sender lives in a static, so this loop (and the thread) never ends.
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("starting the spawner thread");
        Mutex::new(requests)
    });
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// Sends `signal` to the process.
pub fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) with a pid we own (not yet reaped, so not reused) has no memory effects.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

/// SIGTERM, then SIGKILL if the process has not exited within `grace`. Returns how it exited.
pub fn terminate(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    signal(child, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// The last `lines` lines of a log file, for failure messages.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|error| format!("({error})"));
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A log file for a process's stdout and stderr, appended to (a restarted API server keeps one
/// log).
pub fn log_file(path: &Path) -> (Stdio, Stdio) {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|error| panic!("opening {}: {error}", path.display()));
    let second = file.try_clone().expect("cloning a log file handle");
    (Stdio::from(file), Stdio::from(second))
}

/// A temporary directory named `<prefix><pid>-...`. Directories of the same prefix left by test
/// binaries that no longer run (killed, so nothing removed them; an etcd data directory is over
/// 100 MB) are removed first.
pub fn temp_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    let pid = std::process::id();
    if let Ok(entries) = fs::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(owner) = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('-').next())
                .and_then(|owner| owner.parse::<u32>().ok())
            else {
                continue;
            };
            if owner != pid && !Path::new(&format!("/proc/{owner}")).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{pid}-"))
        .tempdir()
}

/// What to run besides etcd and the API server.
#[derive(Clone, Debug)]
pub struct Options {
    /// Start kube-controller-manager (garbage collection, ReplicaSets, Deployment status) when
    /// its binary is among the assets.
    pub controller_manager: bool,
    /// Install the Foo CRD (`manifests/01-crd.yaml`) before anything else runs.
    pub crd: bool,
    /// Extra API-server flags, e.g. `--enable-admission-plugins=...`.
    pub apiserver_flags: Vec<String>,
    /// Install the namespace and `rbac/` and sign the ServiceAccount in. Off for a test that
    /// installs them otherwise (the Helm chart), then calls
    /// [`ControlPlane::sign_in_service_account`].
    pub install: bool,
}

impl Options {
    /// etcd and the API server alone: for what needs no garbage collection, ReplicaSets or
    /// Deployment status, and starts faster.
    pub fn api_server_only() -> Self {
        Self {
            controller_manager: false,
            ..Self::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            controller_manager: true,
            crd: true,
            apiserver_flags: Vec::new(),
            install: true,
        }
    }
}

#[derive(Default)]
struct Processes {
    etcd: Option<Child>,
    apiserver: Option<Child>,
    controller_manager: Option<Child>,
}

/// One control plane. Stops its processes (controller manager, API server, then etcd) and
/// removes its directory when dropped, or when [`ControlPlane::stop`] is called.
pub struct ControlPlane {
    dir: PathBuf,
    tempdir: Mutex<Option<tempfile::TempDir>>,
    assets: PathBuf,
    port: u16,
    apiserver_args: Vec<String>,
    processes: Mutex<Processes>,
}

impl ControlPlane {
    /// Starts etcd, the API server (ready when this returns), installs the namespace, the CRD
    /// (unless `options.crd` is false) and `rbac/`, gets the ServiceAccount a token, and starts
    /// the controller manager.
    pub async fn start(assets: &Path, options: &Options) -> Result<Self, String> {
        let tempdir = temp_dir("cronscaler-envtest-")
            .map_err(|error| format!("creating a temporary directory: {error}"))?;
        let dir = tempdir.path().to_path_buf();
        for binary in ["etcd", "kube-apiserver"] {
            if !assets.join(binary).is_file() {
                return Err(format!(
                    "{} has no {binary}: fill it with `setup-envtest use 1.26.x -p path` or \
                     `../shared/envtest/setup`",
                    assets.display()
                ));
            }
        }
        service_account_keys(&dir)?;
        let write = |name: &str, text: &str| {
            fs::write(dir.join(name), text).map_err(|error| format!("writing {name}: {error}"))
        };
        write(
            "tokens.csv",
            &format!("{ADMIN_TOKEN},admin,admin-uid,\"system:masters\"\n"),
        )?;
        // Metadata is enough to count requests by user, verb and resource; RequestReceived
        // would log every request twice.
        write(
            "audit-policy.yaml",
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\n\
             rules:\n  - level: Metadata\n",
        )?;

        let etcd_port = free_port();
        let peer_port = free_port();
        let port = free_port();
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let mut etcd = Command::new(assets.join("etcd"));
        etcd.args(["--data-dir", &dir.join("etcd").to_string_lossy()])
            .args(["--listen-client-urls", &etcd_url])
            .args(["--advertise-client-urls", &etcd_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("default={peer_url}")])
            // A throwaway store: durability only costs time.
            .arg("--unsafe-no-fsync");
        let (out, err) = log_file(&dir.join("etcd.log"));
        etcd.stdout(out).stderr(err).stdin(Stdio::null());
        let etcd = spawn(etcd).map_err(|error| format!("starting etcd: {error}"))?;

        let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--cert-dir={}", path("certs")),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", path("sa.pub")),
            format!("--service-account-signing-key-file={}", path("sa.key")),
            format!("--token-auth-file={}", path("tokens.csv")),
            "--authorization-mode=RBAC".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            format!("--audit-policy-file={}", path("audit-policy.yaml")),
            format!("--audit-log-path={}", path("audit.log")),
        ];
        apiserver_args.extend(options.apiserver_flags.iter().cloned());
        let plane = Self {
            dir: dir.clone(),
            tempdir: Mutex::new(Some(tempdir)),
            assets: assets.to_path_buf(),
            port,
            apiserver_args,
            processes: Mutex::new(Processes {
                etcd: Some(etcd),
                ..Processes::default()
            }),
        };
        fs::write(
            plane.admin_kubeconfig(),
            kubeconfig(&plane.server(), "admin", ADMIN_TOKEN),
        )
        .map_err(|error| format!("writing admin.kubeconfig: {error}"))?;
        plane.start_apiserver().await?;

        let admin = plane.admin_client().await;
        if options.crd {
            install_crd(&admin).await?;
        }
        if options.install {
            install(&admin).await?;
            plane.sign_in_service_account("default", None).await?;
        }

        // After the CRD is established, so that garbage collection watches Foos from the start.
        if options.controller_manager && assets.join("kube-controller-manager").is_file() {
            plane.start_controller_manager()?;
        }
        Ok(plane)
    }

    /// [`sign_in`], written to [`ControlPlane::sa_kubeconfig`], working in `namespace` (that of
    /// the Pod the controller would run in).
    pub async fn sign_in_service_account(
        &self,
        namespace: &str,
        watches: Option<&str>,
    ) -> Result<(), String> {
        let token = sign_in(&self.admin_client().await, watches).await?;
        fs::write(
            self.sa_kubeconfig(),
            kubeconfig_in(&self.server(), SA_NAME, &token, namespace),
        )
        .map_err(|error| format!("writing sa.kubeconfig: {error}"))
    }

    /// The temporary directory: logs, certificates, kubeconfigs, the audit log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// A kubeconfig of a cluster admin (group `system:masters`), e.g. for kubectl by hand.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// A kubeconfig of the project's ServiceAccount: what the controller runs as.
    pub fn sa_kubeconfig(&self) -> PathBuf {
        self.dir.join("sa.kubeconfig")
    }

    pub fn apiserver_log(&self) -> PathBuf {
        self.dir.join("apiserver.log")
    }

    /// An admin client. A `kube::Client` runs a task on the runtime that made it, so each test
    /// makes its own.
    pub async fn admin_client(&self) -> Client {
        client_from(&self.admin_kubeconfig()).await
    }

    /// Starts the API server (again, after [`ControlPlane::stop_apiserver`]: same etcd, port
    /// and certificates) and waits until `/readyz` answers `ok`.
    pub async fn start_apiserver(&self) -> Result<(), String> {
        let mut command = Command::new(self.assets.join("kube-apiserver"));
        command.args(&self.apiserver_args);
        let (out, err) = log_file(&self.apiserver_log());
        command.stdout(out).stderr(err).stdin(Stdio::null());
        let child = spawn(command).map_err(|error| format!("starting kube-apiserver: {error}"))?;
        self.lock().apiserver = Some(child);

        let admin = self.admin_client().await;
        let started = Instant::now();
        loop {
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("a GET request builds");
            if admin
                .request_text(request)
                .await
                .is_ok_and(|body| body == "ok")
            {
                return Ok(());
            }
            if let Some(apiserver) = self.lock().apiserver.as_mut()
                && let Ok(Some(status)) = apiserver.try_wait()
            {
                return Err(format!(
                    "kube-apiserver exited with {status}:\n{}",
                    tail(&self.apiserver_log(), 30)
                ));
            }
            if started.elapsed() > Duration::from_secs(90) {
                return Err(format!(
                    "kube-apiserver not ready after 90 s:\n{}",
                    tail(&self.apiserver_log(), 30)
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the API server, leaving etcd (and the controller manager) running.
    pub fn stop_apiserver(&self) {
        if let Some(mut apiserver) = self.lock().apiserver.take() {
            terminate(&mut apiserver, GRACE);
        }
    }

    fn start_controller_manager(&self) -> Result<(), String> {
        let mut command = Command::new(self.assets.join("kube-controller-manager"));
        command
            .arg(format!(
                "--kubeconfig={}",
                self.admin_kubeconfig().display()
            ))
            .arg("--leader-elect=false")
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={}", free_port()))
            .arg(format!(
                "--service-account-private-key-file={}",
                self.dir.join("sa.key").display()
            ))
            // No nodes, no cloud: the controllers that need them would only log errors.
            .arg("--controllers=*,-nodeipam,-nodelifecycle,-service,-route,-cloud-node-lifecycle");
        let (out, err) = log_file(&self.dir.join("controller-manager.log"));
        command.stdout(out).stderr(err).stdin(Stdio::null());
        let child =
            spawn(command).map_err(|error| format!("starting kube-controller-manager: {error}"))?;
        self.lock().controller_manager = Some(child);
        Ok(())
    }

    /// Stops everything in order (controller manager, API server, etcd) and removes the
    /// directory. Idempotent; never panics (it also runs at exit).
    pub fn stop(&self) {
        let mut processes = self.lock();
        for child in [
            processes.controller_manager.take(),
            processes.apiserver.take(),
            processes.etcd.take(),
        ]
        .iter_mut()
        .flatten()
        {
            terminate(child, TEARDOWN_GRACE);
        }
        drop(processes);
        drop(
            self.tempdir
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Processes> {
        self.processes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The audit log's events so far (a line being written is skipped).
    pub fn audit_events(&self) -> Vec<AuditEvent> {
        let Ok(file) = File::open(self.dir.join("audit.log")) else {
            return Vec::new();
        };
        io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
            .map(|event| AuditEvent::from_json(&event))
            .collect()
    }

    /// How many requests `user` made with `verb` on `resource` in `namespace` that the API
    /// server answered with `code`, by the audit log.
    pub fn count_answered(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: &str,
        code: i64,
    ) -> usize {
        self.count(user, verb, resource, Some(namespace), Some(code))
    }

    /// How many requests `user` made with `verb` on `resource` (subresources included), in
    /// `namespace` if given, by the audit log.
    pub fn count_requests(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> usize {
        self.count(user, verb, resource, namespace, None)
    }

    fn count(
        &self,
        user: &str,
        verb: &str,
        resource: &str,
        namespace: Option<&str>,
        code: Option<i64>,
    ) -> usize {
        self.audit_events()
            .iter()
            .filter(|event| {
                event.user == user
                    && event.verb == verb
                    && event.resource == resource
                    && namespace.is_none_or(|namespace| event.namespace == namespace)
                    && code.is_none_or(|code| event.code == code)
            })
            .count()
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One request in the audit log (stage ResponseComplete, or ResponseStarted for watches).
#[derive(Clone, Debug)]
pub struct AuditEvent {
    pub user: String,
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The path and query asked for: what tells apart requests that name no resource.
    pub uri: String,
    pub code: i64,
    /// When the API server received it.
    pub received: Option<chrono::DateTime<chrono::Utc>>,
}

impl AuditEvent {
    fn from_json(event: &Value) -> Self {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        let object = &event["objectRef"];
        Self {
            user: text(&event["user"]["username"]),
            verb: text(&event["verb"]),
            resource: text(&object["resource"]),
            subresource: text(&object["subresource"]),
            namespace: text(&object["namespace"]),
            name: text(&object["name"]),
            uri: text(&event["requestURI"]),
            code: event["responseStatus"]["code"].as_i64().unwrap_or_default(),
            received: event["requestReceivedTimestamp"]
                .as_str()
                .and_then(|at| at.parse().ok()),
        }
    }
}

/// The ServiceAccount token's key pair, made with the openssl CLI.
fn service_account_keys(dir: &Path) -> Result<(), String> {
    let run = |args: &[&str]| -> Result<(), String> {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|error| format!("running openssl (is it installed?): {error}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "openssl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    };
    run(&["genrsa", "-out", "sa.key", "2048"])?;
    run(&["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])
}

/// A kubeconfig with one cluster, one user authenticated by `token`, and a context of both in
/// namespace `default`. The API server's certificate is self-signed, so it is not verified.
pub fn kubeconfig(server: &str, user: &str, token: &str) -> String {
    kubeconfig_in(server, user, token, "default")
}

/// [`kubeconfig`] working in `namespace`, as a Pod's ServiceAccount works in the Pod's own.
pub fn kubeconfig_in(server: &str, user: &str, token: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    \
         insecure-skip-tls-verify: true\nusers:\n- name: {user}\n  user:\n    token: {token}\n\
         contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: {user}\n    \
         namespace: {namespace}\ncurrent-context: envtest\n"
    )
}

/// A client from a kubeconfig file.
pub async fn client_from(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|error| panic!("loading {}: {error}", path.display()));
    Client::try_from(config).expect("a client from the kubeconfig")
}

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Installs what `kubectl apply -f manifests/ -f rbac/` would, except the controller's own
/// Deployment and the CRDs: the namespace and every manifest in `rbac/` unchanged.
pub async fn install(admin: &Client) -> Result<(), String> {
    apply_file(admin, &repo_file("manifests/00-namespace.yaml")).await?;
    let mut rbac: Vec<PathBuf> = fs::read_dir(repo_file("rbac"))
        .map_err(|error| format!("reading rbac/: {error}"))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    rbac.sort();
    for file in &rbac {
        apply_file(admin, file).await?;
    }
    Ok(())
}

/// Waits until the ServiceAccount's bindings are in force, so a controller started next is not
/// refused, and returns a token of the ServiceAccount from the TokenRequest API.
/// `watches` is the namespace the install lets the controller watch (`None`: every one).
pub async fn sign_in(admin: &Client, watches: Option<&str>) -> Result<String, String> {
    // The authorizer learns of new bindings from a watch: wait until both bindings (the one of
    // the workloads and the lease RoleBinding) are in force. Both are grants an install must
    // make; if one is missing, this says so.
    for (group, resource, verb, namespace) in [
        ("apps", "deployments", "list", watches),
        ("coordination.k8s.io", "leases", "get", Some(SA_NAMESPACE)),
    ] {
        wait_allowed(admin, group, resource, verb, namespace).await?;
    }
    service_account_token(admin).await
}

/// Applies the Foo CRD from `manifests/01-crd.yaml` and waits until it is established.
pub async fn install_crd(admin: &Client) -> Result<(), String> {
    apply_file(admin, &repo_file("manifests/01-crd.yaml")).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let started = Instant::now();
    loop {
        let established = crds.get(CRD_NAME).await.ok().is_some_and(|crd| {
            crd.status
                .and_then(|status| status.conditions)
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
        if established {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the Foo CRD was not established within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Server-side applies every document of a YAML file, as `kubectl apply --server-side` would.
pub async fn apply_file(client: &Client, path: &Path) -> Result<(), String> {
    let text = fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    for document in serde_norway::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        if value.is_null() {
            continue;
        }
        apply(client, value)
            .await
            .map_err(|error| format!("{}: {error}", path.display()))?;
    }
    Ok(())
}

/// Server-side applies one object of any kind the server serves.
pub async fn apply(client: &Client, object: Value) -> Result<(), String> {
    let object: DynamicObject =
        serde_json::from_value(object).map_err(|error| format!("not an object: {error}"))?;
    let types = object
        .types
        .as_ref()
        .ok_or("no apiVersion and kind".to_string())?;
    let gvk = GroupVersionKind::try_from(types).map_err(|error| error.to_string())?;
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|error| format!("discovering {gvk:?}: {error}"))?;
    let name = object
        .metadata
        .name
        .clone()
        .ok_or("an object without a name".to_string())?;
    let api: Api<DynamicObject> = match (&capabilities.scope, &object.metadata.namespace) {
        (Scope::Namespaced, Some(namespace)) => {
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
        (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .map_err(|error| format!("applying {} {name}: {error}", gvk.kind))?;
    Ok(())
}

/// Waits until the ServiceAccount may `verb` `resource`: the authorizer learns of new bindings from
/// a watch.
pub async fn wait_allowed(
    admin: &Client,
    group: &str,
    resource: &str,
    verb: &str,
    namespace: Option<&str>,
) -> Result<(), String> {
    let reviews: Api<SubjectAccessReview> = Api::all(admin.clone());
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {
            "user": SA_USER,
            "groups": ["system:serviceaccounts", "system:serviceaccounts:cronscaler", "system:authenticated"],
            "resourceAttributes": { "group": group, "resource": resource, "verb": verb, "namespace": namespace },
        },
    }))
    .expect("a SubjectAccessReview");
    let started = Instant::now();
    loop {
        let allowed = reviews
            .create(&PostParams::default(), &review)
            .await
            .ok()
            .and_then(|review| review.status)
            .is_some_and(|status| status.allowed);
        if allowed {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "rbac/ does not let {SA_USER} {verb} {resource} (group {group:?}, namespace \
                 {namespace:?}) 30 s after it was applied"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `kubectl create token cronscaler -n cronscaler`: a token through the TokenRequest API.
async fn service_account_token(admin: &Client) -> Result<String, String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), SA_NAMESPACE);
    let request: TokenRequest = serde_json::from_value(json!({
        // Long enough for any run of the suite.
        "spec": { "audiences": [], "expirationSeconds": 6 * 3600 },
    }))
    .expect("a TokenRequest");
    let answer: TokenRequest = accounts
        .create_subresource("token", SA_NAME, &PostParams::default(), &request)
        .await
        .map_err(|error| format!("requesting a token for {SA_USER}: {error}"))?;
    answer
        .status
        .map(|status| status.token)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| format!("the TokenRequest for {SA_USER} returned no token"))
}
