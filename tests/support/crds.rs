//! Other projects' CRDs (`../shared/crds/`) and the optional grants of `rbac/optional/`, as a
//! test installs them.

use std::path::{Path, PathBuf};

use kube::{Client, api::GroupVersionKind};

use super::{envtest, eventually, say};

/// How long a CRD may take to be served.
const SERVED_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// `../shared/crds/<file>`, or `None` (said) where this machine has no shared CRDs.
pub fn shared_crd(test: &str, file: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/crds")
        .join(file);
    if path.is_file() {
        Some(path)
    } else {
        say(&format!(
            "{test}: skipped: needs {} (the real CRDs of other projects)",
            path.display()
        ));
        None
    }
}

/// Installs a CRD from `path` and waits until its kind is served.
pub async fn install_crd(client: &Client, path: &Path, gvk: &GroupVersionKind) {
    envtest::apply_file(client, path)
        .await
        .unwrap_or_else(|error| panic!("installing {}: {error}", path.display()));
    eventually(&format!("{} served", gvk.kind), SERVED_WITHIN, || async {
        kube::discovery::pinned_kind(client, gvk).await.ok()
    })
    .await;
}

/// Grants the ServiceAccount an optional role of `rbac/optional/`, as a user installing it does.
pub async fn grant_optional(client: &Client, file: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("rbac/optional")
        .join(file);
    envtest::apply_file(client, &path)
        .await
        .unwrap_or_else(|error| panic!("applying {}: {error}", path.display()));
}
