//! Where a scenario's API server comes from: a control plane shared by the tests of a file,
//! made on first use and stopped at exit, or the cluster of the current kubeconfig.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Instant,
};

use kube::{Client, config::Kubeconfig};
use serde_json::json;

use super::envtest::{self, ControlPlane, Options};
use super::say;

/// Where a scenario's API server comes from.
#[derive(Clone)]
pub(super) enum Backend {
    Envtest(Arc<ControlPlane>),
    /// The cluster of the current kubeconfig (`CRONSCALER_E2E=1`), with the ServiceAccount's
    /// kubeconfig written to `sa_kubeconfig`.
    Kubeconfig {
        sa_kubeconfig: PathBuf,
    },
}

pub(super) fn current_kubeconfig_requested() -> bool {
    std::env::var("CRONSCALER_E2E").as_deref() == Ok("1")
}

/// A backend shared, made on first use.
type SharedBackend = Arc<tokio::sync::OnceCell<Result<Backend, String>>>;

/// The backends the tests share, by the file of the test: each file has a control plane of its
/// own, as when each was a binary of its own, so that a file's tests may count what is on it.
/// The current kubeconfig's cluster is one for all.
pub(super) static SHARED: Mutex<BTreeMap<&'static str, SharedBackend>> =
    Mutex::new(BTreeMap::new());

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

pub(super) async fn shared_backend(file: &str) -> Result<Backend, String> {
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
