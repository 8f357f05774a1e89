//! What `plan`, `status` and `restore` read of the live cluster, through one [`read`]: paged
//! lists only, as `kubectl get` reads, so the controller's own read-only grants suffice.

use k8s_openapi::{
    NamespaceResourceScope,
    api::core::v1::{ConfigMap, Namespace},
};
use kube::{Api, Client, Resource, ResourceExt, api::DynamicObject, core::PartialObjectMeta};
use serde::de::DeserializeOwned;

use crate::{
    namespaces::{
        NamespaceSchedules,
        policies::{
            crd::{SleepPolicy, SleepSchedule},
            resolve::Candidate,
        },
    },
    runtime::{api_errors::is_status, paging::all_pages},
    scaling::gitops::{
        Tool,
        owners::{OwnerObject, Owners},
    },
    workloads::{objects, target::TargetKind, writers::override_setter},
};

/// The namespace manifests/ install the controller in.
pub const INSTALL_NAMESPACE: &str = "cronscaler";

/// Where a command looks for what the controller keeps in its own namespace (its Lease, its
/// record of the nights): the namespace `given`, else [`INSTALL_NAMESPACE`], then the
/// kubeconfig's namespace.
pub fn controller_namespaces(client: &Client, given: Option<&str>) -> Vec<String> {
    match given {
        Some(namespace) => vec![namespace.to_string()],
        None => {
            let mut namespaces = vec![INSTALL_NAMESPACE.to_string()];
            if client.default_namespace() != INSTALL_NAMESPACE {
                namespaces.push(client.default_namespace().to_string());
            }
            namespaces
        }
    }
}

/// A record the controller keeps for itself (`scaling/kept.rs`), `name` and `key` of it, as the
/// controller in `namespace` (else in [`INSTALL_NAMESPACE`], then the kubeconfig's namespace)
/// keeps it, and the namespace it was read in: `Ok(None)` where none is kept yet, or why it could
/// not be read, naming it as `what`.
pub async fn read_kept<T: DeserializeOwned>(
    client: &Client,
    namespace: Option<&str>,
    (name, key): (&str, &str),
    what: &str,
) -> Result<Option<(String, T)>, String> {
    let mut refused = Vec::new();
    for place in controller_namespaces(client, namespace) {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &place);
        match api.get(name).await {
            Ok(map) => {
                let text = (map.data.unwrap_or_default().remove(key)).unwrap_or_default();
                let record: T = serde_json::from_str(&text).map_err(|error| {
                    format!("ConfigMap {place}/{name} does not read as {what}: {error}")
                })?;
                return Ok(Some((place, record)));
            }
            Err(error) if is_status(&error, 404) => {}
            Err(error) if is_status(&error, 403) => {
                refused.push(format!("ConfigMap {place}/{name} may not be read (403)"));
            }
            Err(error) => refused.push(format!("ConfigMap {place}/{name}: {error}")),
        }
    }
    match refused.is_empty() {
        true => Ok(None),
        false => Err(refused.join("; ")),
    }
}

/// A list the API server refused or could not answer, and of what.
#[derive(Debug, thiserror::Error)]
#[error("listing {what}: {source}")]
pub struct ListError {
    pub what: &'static str,
    #[source]
    pub source: kube::Error,
}

/// The live cluster, or one Namespace of it, as the commands read it.
pub struct Cluster {
    /// The objects of every kind of the catalogue and of those asked for, whole.
    pub workloads: Vec<(TargetKind, DynamicObject)>,
    /// The kinds the user may not list (403), with the refusal: each command decides whether
    /// it can do without them. A kind whose CRD is not installed simply has no objects.
    pub forbidden: Vec<(TargetKind, kube::Error)>,
    /// What each Namespace's workloads follow: its annotations, or a SleepSchedule or
    /// SleepPolicy that reaches it.
    pub schedules: NamespaceSchedules,
    /// Whether Namespaces could be listed (a namespaced install's grants cannot).
    pub namespaces_listed: bool,
    /// The GitOps owners, and the owning kinds that may not be listed.
    pub owners: ReadOwners,
}

/// Lists the workloads of every kind of the catalogue and of `kinds`, the Namespaces'
/// schedules (kube-downscaler's annotations read as ours with `kube_downscaler`) and the GitOps
/// owners, of the cluster or of `namespace`.
pub async fn read(
    client: &Client,
    namespace: Option<&str>,
    kinds: &[TargetKind],
    kube_downscaler: bool,
) -> Result<Cluster, ListError> {
    let mut workloads = Vec::new();
    let mut forbidden = Vec::new();
    for kind in TargetKind::catalogue_and(kinds) {
        match objects::list(client, kind, namespace, 500).await {
            Ok(listed) => workloads.extend(listed.into_iter().map(|object| (kind, object))),
            Err(error) if is_status(&error, 403) => forbidden.push((kind, error)),
            Err(source) => {
                return Err(ListError {
                    what: kind.spec().plural,
                    source,
                });
            }
        }
    }
    let (schedules, namespaces_listed) = namespace_schedules(client, namespace, kube_downscaler)
        .await
        .map_err(|source| ListError {
            what: "Namespaces, SleepPolicies and SleepSchedules",
            source,
        })?;
    let owners = read_owners(client).await.map_err(|source| ListError {
        what: "Applications, Kustomizations and HelmReleases",
        source,
    })?;
    Ok(Cluster {
        workloads,
        forbidden,
        schedules,
        namespaces_listed,
        owners,
    })
}

/// The GitOps owners of the whole cluster, and the owning kinds that may not be read (403).
pub type ReadOwners = (Owners, Vec<Tool>);

/// The GitOps owners of the whole cluster (an Application lives in Argo CD's Namespace, not
/// its workloads'), and the owning kinds that may not be read (403). A kind not installed
/// has none.
pub async fn read_owners(client: &Client) -> Result<ReadOwners, kube::Error> {
    let owners = Owners::default();
    let mut unreadable = Vec::new();
    for tool in Tool::all() {
        let api: Api<OwnerObject> = Api::all_with(client.clone(), &tool.api_resource());
        let api = &api;
        match all_pages(500, |params| async move { api.list(&params).await }).await {
            Err(error) if is_status(&error, 404) => {}
            Err(error) if is_status(&error, 403) => unreadable.push(tool),
            listed => {
                for object in listed? {
                    owners.apply(tool, &object);
                }
            }
        }
    }
    Ok((owners, unreadable))
}

/// The schedules of the cluster's Namespaces (or the one given): their annotations and labels,
/// and the SleepPolicies and SleepSchedules that reach them. Whoever may not list Namespaces,
/// as the namespaced install, gets none (`false`); objects it may not read, or a CRD not
/// installed, count as none.
pub async fn namespace_schedules(
    client: &Client,
    namespace: Option<&str>,
    kube_downscaler: bool,
) -> Result<(NamespaceSchedules, bool), kube::Error> {
    let schedules = NamespaceSchedules::watched([]).reading_kube_downscaler(kube_downscaler);
    let listed = list_namespaces(client, namespace).await;
    let namespaces = match listed {
        Err(error) if is_status(&error, 403) => return Ok((schedules, false)),
        listed => listed?,
    };
    for namespace in &namespaces {
        let name = namespace.name_any();
        schedules.update(&name, None, namespace.annotations());
        schedules.set_labels(&name, namespace.labels());
        schedules.note_setter(&name, override_setter(namespace.managed_fields()));
    }
    let policies = Api::<SleepPolicy>::all(client.clone());
    let policies = all_pages(500, |params| {
        let policies = policies.clone();
        async move { policies.list(&params).await }
    })
    .await;
    for policy in none_unless_readable(policies)? {
        schedules.set_policy(
            policy.spec.namespace_selector.clone(),
            Candidate::of(&policy.metadata, &policy.spec.schedule),
        );
    }
    let sleep_schedules: Result<Vec<SleepSchedule>, _> = list(client, namespace).await;
    for schedule in none_unless_readable(sleep_schedules)? {
        schedules.set_sleep_schedule(
            &schedule.namespace().unwrap_or_default(),
            Candidate::of(&schedule.metadata, &schedule.spec.schedule),
        );
    }
    Ok((schedules, true))
}

/// Objects the user may not read (403), or of a CRD not installed (404), as none.
fn none_unless_readable<K>(listed: Result<Vec<K>, kube::Error>) -> Result<Vec<K>, kube::Error> {
    match listed {
        Err(error) if is_status(&error, 403) || is_status(&error, 404) => Ok(Vec::new()),
        listed => listed,
    }
}

/// Every Namespace's metadata, or that of `namespace` alone: listed with a field selector
/// rather than read, since the controller's grants list Namespaces but do not get them; and
/// where that is refused, read, as someone holding a role only in that Namespace may (the
/// built-in roles let whoever is bound in a Namespace get the Namespace itself).
pub async fn list_namespaces(
    client: &Client,
    namespace: Option<&str>,
) -> Result<Vec<PartialObjectMeta<Namespace>>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let api = &api;
    let selector = namespace.map(|name| format!("metadata.name={name}"));
    let selector = selector.as_deref();
    let listed = all_pages(500, |params| async move {
        let params = match selector {
            Some(selector) => params.fields(selector),
            None => params,
        };
        api.list_metadata(&params).await
    })
    .await;
    match (listed, namespace) {
        (Err(refused), Some(name)) if is_status(&refused, 403) => {
            match api.get_metadata_opt(name).await {
                Ok(found) => Ok(found.into_iter().collect()),
                // Not allowed to read it either: the listing's refusal says so.
                Err(_) => Err(refused),
            }
        }
        (listed, _) => listed,
    }
}

pub async fn list<K>(client: &Client, namespace: Option<&str>) -> Result<Vec<K>, kube::Error>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    let api = &api;
    all_pages(500, |params| async move { api.list(&params).await }).await
}
