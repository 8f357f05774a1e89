//! Objects of any kind, read and listed through the API its row names: one path for every kind,
//! the catalogue's and those `--kinds` adds.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, Resource,
    api::{ApiResource, DynamicObject},
    core::DynamicResourceScope,
};

use crate::{
    duration::spoken,
    runtime::{
        access::{self, Action},
        api_errors::is_status,
        paging::all_pages,
    },
    workloads::{
        kinds::{KindSpec, Sleep},
        target::{KindName, TargetKind, TargetState},
    },
};

/// The API of `kind`, in `namespace` or in every one: whole objects (`DynamicObject`) or the
/// what the watches keep of them (`WatchedObject`).
pub fn api<K>(client: &Client, kind: TargetKind, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = ApiResource, Scope = DynamicResourceScope>,
{
    let resource = kind.api_resource();
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Whether the controller may patch objects of `kind` in `namespace` (or in every one).
pub async fn may_patch(
    client: &Client,
    kind: TargetKind,
    namespace: Option<&str>,
) -> Result<bool, kube::Error> {
    let spec = kind.spec();
    let action = Action {
        namespace,
        ..Action::anywhere("patch", spec.group, spec.plural)
    };
    access::may(client, action).await
}

/// Every object of `kind` in `namespace` (or everywhere), page by page; none when the kind is
/// not installed (its CRD is absent: 404).
pub async fn list(
    client: &Client,
    kind: TargetKind,
    namespace: Option<&str>,
    page_size: u32,
) -> Result<Vec<DynamicObject>, kube::Error> {
    let api = &api::<DynamicObject>(client, kind, namespace);
    match all_pages(page_size, |params| async move { api.list(&params).await }).await {
        Err(error) if is_status(&error, 404) => Ok(Vec::new()),
        listed => listed,
    }
}

/// What the scaler reads of every object of `kind` in `namespace` (or everywhere).
pub async fn observe_all(
    client: &Client,
    kind: TargetKind,
    namespace: Option<&str>,
    page_size: u32,
) -> Result<Vec<(DynamicObject, TargetState)>, kube::Error> {
    Ok(list(client, kind, namespace, page_size)
        .await?
        .into_iter()
        .map(|object| {
            let observed = TargetState::of_object(kind, &object);
            (object, observed)
        })
        .collect())
}

/// The kinds `--kinds` names, each with its row, and those not served yet. A kind outside the
/// catalogue is looked up on the API server, and sleeps by its scale subresource; one that has
/// none is named in the log and left out, one not served yet is left to [`watch_for`].
pub async fn resolve(
    client: &Client,
    names: &[KindName],
) -> (Vec<TargetKind>, Vec<(String, String)>) {
    let (mut kinds, mut later) = (Vec::new(), Vec::new());
    for name in names {
        let kind = match name {
            KindName::Known(kind) => *kind,
            KindName::Other { name: other, group } => match discover(client, other, group).await {
                Ok(kind) => kind,
                Err(Undiscovered::NotServed(reason)) => {
                    tracing::warn!(
                        kind = %name,
                        "not served yet ({reason}): looked for every {}, and put to sleep once it is",
                        spoken(DISCOVERY_INTERVAL),
                    );
                    later.push((other.clone(), group.clone()));
                    continue;
                }
                Err(
                    refused @ (Undiscovered::NoScale { .. } | Undiscovered::CountUnknown { .. }),
                ) => {
                    tracing::warn!(kind = %name, "not put to sleep: {refused}");
                    continue;
                }
            },
        };
        // Named twice (`deploy,Deployment.apps`), it is still watched once.
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    (kinds, later)
}

/// How often a kind `--kinds` names that is not served yet is looked for: discovery is two
/// small requests any authenticated user may make, so the kind needs no grant on CRDs.
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(10);

/// A kind outside the catalogue once its CRD is served, looked for every
/// [`DISCOVERY_INTERVAL`]; `None` if it turns out to have no scale subresource (named in the
/// log).
pub async fn watch_for(client: &Client, name: &str, group: &str) -> Option<TargetKind> {
    loop {
        tokio::time::sleep(DISCOVERY_INTERVAL).await;
        match discover(client, name, group).await {
            Ok(kind) => {
                tracing::info!(kind = %format!("{name}.{group}"), "now served: put to sleep from now on");
                return Some(kind);
            }
            Err(Undiscovered::NotServed(_)) => {}
            Err(refused @ (Undiscovered::NoScale { .. } | Undiscovered::CountUnknown { .. })) => {
                tracing::warn!(kind = %format!("{name}.{group}"), "not put to sleep: {refused}");
                return None;
            }
        }
    }
}

/// Why a kind outside the catalogue is not put to sleep.
#[derive(Debug, thiserror::Error)]
enum Undiscovered {
    /// Its group or kind is not served, or discovery failed: it may be later.
    #[error("{0}")]
    NotServed(String),
    #[error(
        "{name}.{group} has no scale subresource; only kinds with one, or those the catalogue \
         knows, can sleep"
    )]
    NoScale { name: String, group: String },
    /// Where it keeps its count is not known, or is deeper than `spec` itself.
    #[error("{name}.{group}: {why}")]
    CountUnknown {
        name: String,
        group: String,
        why: String,
    },
}

/// A kind outside the catalogue, from the API server's discovery and its CRD: its preferred
/// version, its plural, whether it has a scale subresource, and which field holds its count.
async fn discover(client: &Client, name: &str, group: &str) -> Result<TargetKind, Undiscovered> {
    let served = kube::discovery::group(client, group)
        .await
        .map_err(|error| {
            Undiscovered::NotServed(format!(
                "the API server does not serve the group {group}: {error}"
            ))
        })?;
    let (resource, capabilities) = served
        .recommended_resources()
        .into_iter()
        .find(|(resource, _)| resource.kind == name)
        .ok_or_else(|| Undiscovered::NotServed(format!("the group {group} has no kind {name}")))?;
    if !capabilities
        .subresources
        .iter()
        .any(|(sub, _)| sub.plural == "scale")
    {
        return Err(Undiscovered::NoScale {
            name: name.into(),
            group: group.into(),
        });
    }
    let crd = format!("{}.{group}", resource.plural);
    let (spec_path, status_path) =
        scale_paths(client, &crd, &resource.version)
            .await
            .map_err(|why| Undiscovered::CountUnknown {
                name: name.into(),
                group: group.into(),
                why,
            })?;
    // Made once for each kind named, when it is found: the rows live as long as the program.
    let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
    let mut spec = KindSpec::scalable(
        leak(resource.kind),
        leak(resource.group),
        leak(resource.version),
        leak(resource.plural),
    );
    if let Some(at) = spec_path {
        spec.sleep = Sleep::Replicas { at: leak(at) };
    }
    if let (Some(running), Some(settling)) = (status_path, spec.settling.as_mut()) {
        settling.running = leak(running);
    }
    Ok(TargetKind::of(Box::leak(Box::new(spec))))
}

/// Where the CRD `crd` says the objects of `version` keep their count and the count running, as
/// JSON pointers (`/spec/size`, `/status/size`); `None` for `spec.replicas` and
/// `status.replicas`, for a kind served by an API server of its own, which has no CRD, and where
/// the CRD may not be read. The
/// count must be directly in `spec`, as every operator's is: a write of a count elsewhere would
/// be pruned by the API server, and the object's Events would tell of a sleep that changed
/// nothing.
async fn scale_paths(
    client: &Client,
    crd: &str,
    version: &str,
) -> Result<(Option<String>, Option<String>), String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let found = match crds.get_opt(crd).await {
        Ok(found) => found,
        // A namespaced install may not read CRDs: the kind is counted as most are.
        Err(error) if is_status(&error, 403) => {
            tracing::warn!(
                crd,
                "the controller may not read this CustomResourceDefinition, which says where its \
                 scale subresource keeps the count: spec.replicas is assumed; grant \
                 customresourcedefinitions get (rbac/cluster-role.yaml) if it is another field"
            );
            return Ok((None, None));
        }
        Err(error) => return Err(format!("its CustomResourceDefinition {crd}: {error}")),
    };
    let scale = found.and_then(|crd| {
        crd.spec
            .versions
            .into_iter()
            .find(|served| served.name == version)?
            .subresources?
            .scale
    });
    let Some(scale) = scale else {
        return Ok((None, None));
    };
    let pointer = |path: &str| -> Option<String> {
        let field = path.strip_prefix(".spec.")?;
        let simple = !field.is_empty()
            && field
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        simple.then(|| format!("/spec/{field}"))
    };
    let spec_path = match scale.spec_replicas_path.as_str() {
        ".spec.replicas" => None,
        path => Some(pointer(path).ok_or_else(|| {
            format!(
                "its scale subresource keeps the count at {path}; only a count directly in \
                 spec (.spec.<field>) can be put to sleep"
            )
        })?),
    };
    let status_path = match scale.status_replicas_path.as_str() {
        ".status.replicas" => None,
        path => path
            .strip_prefix('.')
            .map(|rest| format!("/{}", rest.replace('.', "/"))),
    };
    Ok((spec_path, status_path))
}
