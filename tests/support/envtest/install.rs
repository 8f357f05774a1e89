//! What a control plane is given and how it is reached: kubeconfigs and clients, the namespace,
//! `rbac/` and the CRD installed, objects applied server-side, the ServiceAccount signed in.

use std::{
    fs,
    path::{Path, PathBuf},
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

use super::*;

const CRD_NAME: &str = "foos.samplecontroller.k8s.io";

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
    token_for(admin, SA_NAME).await
}

/// `kubectl create token NAME -n cronscaler`: a token of the install's ServiceAccount `name`.
pub async fn token_for(admin: &Client, name: &str) -> Result<String, String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), SA_NAMESPACE);
    let request: TokenRequest = serde_json::from_value(json!({
        // Long enough for any run of the suite.
        "spec": { "audiences": [], "expirationSeconds": 6 * 3600 },
    }))
    .expect("a TokenRequest");
    let answer: TokenRequest = accounts
        .create_subresource("token", name, &PostParams::default(), &request)
        .await
        .map_err(|error| format!("requesting a token for ServiceAccount {name}: {error}"))?;
    answer
        .status
        .map(|status| status.token)
        .filter(|token| !token.is_empty())
        .ok_or_else(|| format!("the TokenRequest for ServiceAccount {name} returned no token"))
}
