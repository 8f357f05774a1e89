//! One control plane: etcd, the API server and the controller manager started, stopped and
//! restarted, with the options of what runs.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

use kube::Client;

use super::*;

/// Token of the admin user (group `system:masters`), written to `tokens.csv`.
const ADMIN_TOKEN: &str = "envtest-admin-token";

/// How long the API server gets to exit on SIGTERM when a test stops it (about 3 s with etcd
/// up), before it is killed.
const GRACE: Duration = Duration::from_secs(3);

/// How long each process gets on SIGTERM at teardown before it is killed: its data is thrown
/// away, so a graceful exit (1-3 s each) would only slow every test binary down. An API server
/// whose etcd is gone can hang on SIGTERM anyway.
const TEARDOWN_GRACE: Duration = Duration::from_millis(500);

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
    pub(super) dir: PathBuf,
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

    /// Signs in the install's ServiceAccount `name` (in [`SA_NAMESPACE`]), as [`sign_in`] does
    /// the controller's, and returns its kubeconfig.
    pub async fn sign_in_as(&self, name: &str) -> Result<PathBuf, String> {
        let token = token_for(&self.admin_client().await, name).await?;
        let path = self.dir.join(format!("{name}.kubeconfig"));
        fs::write(
            &path,
            kubeconfig_in(&self.server(), name, &token, SA_NAMESPACE),
        )
        .map_err(|error| format!("writing {}: {error}", path.display()))?;
        Ok(path)
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
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
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
