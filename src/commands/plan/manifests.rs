//! Where the plan's objects come from: manifests (files, directories, Lists as `kubectl get`
//! prints them), saying what is skipped and why, or the live cluster.

use std::{fmt, path::Path};

use k8s_openapi::api::{autoscaling::v2::HorizontalPodAutoscaler, core::v1::Namespace};
use kube::{Client, ResourceExt, api::DynamicObject};
use serde::Deserialize;
use serde_json::Value;

use super::PlanError;
use crate::simulation::{PlanObject, Workload};
use crate::{
    commands::cluster::{self, Cluster, ListError, ReadOwners},
    namespaces::{
        NamespaceSchedules,
        policies::{
            crd::{SleepPolicy, SleepSchedule},
            resolve::Candidate,
        },
    },
    runtime::api_errors::is_status,
    runtime::key::ObjectKey,
    scaling::gitops::{
        Tool,
        owner::claim,
        owners::{OwnerObject, Owners},
        standing::GitOps,
    },
    scaling::hpa::{Hpa, list_hpas},
    schedule::GitOpsMode,
    workloads::target::{
        Drivers, ScaleTarget, ScheduleSource, TargetKind, TargetState, lever_requests,
    },
};

/// How manifests and the live cluster are read, as `run` reads them with the same flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// kube-downscaler's annotations read as ours (`--kube-downscaler-annotations`).
    pub kube_downscaler: bool,
    /// The mode of a workload a GitOps tool deploys where nothing says (`--gitops`).
    pub gitops: GitOpsMode,
}

/// Workloads of the catalogue's kinds from YAML or JSON manifests: files, or the `.yaml`/`.yml`/`.json` files
/// of a directory (one level deep, as `kubectl apply -f` reads one). `List` documents, and the
/// `DeploymentList`-style ones `kubectl get -o yaml|json` prints, are expanded into their items.
/// Whatever is not simulated is listed in [`Manifests::skipped`]; objects without a namespace
/// land in `default`, as `kubectl apply` would put them.
pub fn read_manifests(
    paths: &[impl AsRef<Path>],
    reading: Reading,
) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::reading(reading);
    for path in paths {
        let path = path.as_ref();
        let files = if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| PlanError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let mut entries: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect();
            entries.sort();
            let mut files = Vec::new();
            for entry in entries {
                let reason = if entry.is_dir() {
                    SkipReason::Directory
                } else if entry
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml" || ext == "json")
                {
                    files.push(entry);
                    continue;
                } else {
                    SkipReason::NotAManifestFile
                };
                manifests.skipped.push(Skipped {
                    at: Location::file(&entry.display().to_string()),
                    object: None,
                    reason,
                });
            }
            files
        } else {
            vec![path.to_path_buf()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| PlanError::Read {
                path: file.display().to_string(),
                source,
            })?;
            manifests.append(read_text(&text, &file.display().to_string(), reading)?);
        }
    }
    // A Namespace's schedule applies to its workloads in whichever file they are.
    Ok(manifests.resolved())
}

/// What a set of manifests holds for the plan.
#[derive(Debug)]
pub struct Manifests {
    pub objects: Vec<PlanObject>,
    /// Everything read that is not simulated, in the order it was found.
    pub skipped: Vec<Skipped>,
    /// The schedules of the Namespaces read, which their workloads follow.
    namespaces: NamespaceSchedules,
    /// The HPAs read, held and given back with their workloads' transitions.
    hpas: Vec<Hpa>,
    /// The GitOps owners read (Argo CD Applications, Flux Kustomizations and HelmReleases).
    owners: Owners,
    /// The mode of a workload a GitOps tool deploys where nothing says.
    gitops: GitOpsMode,
}

impl Manifests {
    fn reading(reading: Reading) -> Self {
        Self {
            objects: Vec::new(),
            skipped: Vec::new(),
            namespaces: NamespaceSchedules::watched([])
                .reading_kube_downscaler(reading.kube_downscaler),
            hpas: Vec::new(),
            owners: Owners::default(),
            gitops: reading.gitops,
        }
    }

    fn append(&mut self, other: Manifests) {
        self.objects.extend(other.objects);
        self.skipped.extend(other.skipped);
        self.namespaces.absorb(&other.namespaces);
        self.hpas.extend(other.hpas);
        self.owners.absorb(&other.owners);
    }

    /// Each workload's schedule as the controller would read it (its own, or its
    /// Namespace's), and its GitOps owner among those read.
    fn resolved(mut self) -> Self {
        let gitops = (&self.owners, self.gitops);
        resolve(&mut self.objects, &self.namespaces, &self.hpas, gitops);
        self
    }

    fn skip(&mut self, at: Location, value: &Value, reason: SkipReason) {
        self.skipped.push(Skipped {
            at,
            object: describe(value),
            reason,
        });
    }
}

/// Where in the manifests something is: a file, its document (counted from 1, as an editor
/// counts `---` sections), and the item of a List document (from 0, as `.items[0]` in jq, yq
/// and kubectl's JSONPath).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub document: Option<usize>,
    pub item: Option<usize>,
}

impl Location {
    fn file(path: &str) -> Self {
        Location {
            path: path.into(),
            document: None,
            item: None,
        }
    }

    fn item(&self, index: usize) -> Self {
        Location {
            item: Some(index),
            ..self.clone()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(document) = self.document {
            write!(f, ": document {document}")?;
        }
        if let Some(item) = self.item {
            write!(f, ", items[{item}]")?;
        }
        Ok(())
    }
}

/// Something in the manifests the plan does not simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub at: Location,
    /// `Kind namespace/name`, as much of it as the object says.
    pub object: Option<String>,
    pub reason: SkipReason,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        if let Some(object) = &self.object {
            write!(f, "{object}: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    Directory,
    NotAManifestFile,
    NotAnObject,
    NoKind,
    NotScheduled,
    NoName,
    NestedList,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Directory => "a directory; directories are read one level deep",
            SkipReason::NotAManifestFile => "not a .yaml, .yml or .json file",
            SkipReason::NotAnObject => "not an object (a mapping with apiVersion and kind)",
            SkipReason::NoKind => "no kind",
            SkipReason::NotScheduled => "not of a kind cronscaler puts to sleep",
            SkipReason::NoName => "no metadata.name",
            SkipReason::NestedList => "a List inside a List is not expanded",
        })
    }
}

/// The Deployments, StatefulSets, CronJobs and Foos of one multi-document YAML (or JSON) text, `path` naming it in
/// what is skipped and in errors.
pub fn parse_manifests(text: &str, path: &str) -> Result<Manifests, PlanError> {
    read_text(text, path, Reading::default())
}

fn read_text(text: &str, path: &str, reading: Reading) -> Result<Manifests, PlanError> {
    let mut manifests = Manifests::reading(reading);
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let at = Location {
            path: path.into(),
            document: Some(index + 1),
            item: None,
        };
        let value = Value::deserialize(document).map_err(|error| PlanError::Manifest {
            at: at.clone(),
            reason: error.to_string(),
        })?;
        read_object(value, at, false, &mut manifests)?;
    }
    Ok(manifests.resolved())
}

/// Gives every object the annotations its schedule comes from, its HPAs, what drives it in its
/// place, and its GitOps owner among `owners` with the mode its schedule chooses, else
/// `default`; a lever, the pods of the object it scales.
fn resolve(
    objects: &mut [PlanObject],
    namespaces: &NamespaceSchedules,
    hpas: &[Hpa],
    (owners, default): (&Owners, GitOpsMode),
) {
    let drivers = Drivers::of(
        objects
            .iter()
            .map(|object| (&object.target, &object.observed)),
    );
    drivers.forward_schedules(
        objects
            .iter_mut()
            .map(|object| (&object.target, &mut object.observed)),
    );
    let levers = lever_requests(
        &(objects.iter())
            .map(|object| (&object.target, &object.observed, &object.workload.requests))
            .collect::<Vec<_>>(),
    );
    for (object, lever) in objects.iter_mut().zip(levers) {
        object.driven_by = drivers.of_target(&object.target, &object.observed);
        if let Some(requests) = lever {
            object.workload.requests = requests;
        }
        object.hpas = hpas
            .iter()
            .filter(|hpa| hpa.target == object.target)
            .cloned()
            .collect();
        let observed = &mut object.observed;
        let source = ScheduleSource::of(observed, object.driven_by.clone());
        (observed.annotations, _) =
            namespaces.effective(object.target.kind, &object.target.key.namespace, &source);
        object.gitops = GitOps::of(
            owners,
            &object.target,
            object.claim.clone(),
            &observed.annotations,
            default,
            object.target.kind.spec().sleep.manifest_field(),
        );
    }
}

fn read_object(
    value: Value,
    at: Location,
    in_list: bool,
    manifests: &mut Manifests,
) -> Result<(), PlanError> {
    // An empty document, such as after a trailing `---`, holds nothing worth a word.
    if value.is_null() {
        return Ok(());
    }
    if !value.is_object() {
        manifests.skip(at, &value, SkipReason::NotAnObject);
        return Ok(());
    }
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        manifests.skip(at, &value, SkipReason::NoKind);
        return Ok(());
    };
    let manifest_error = |error: serde_json::Error| PlanError::Manifest {
        at: at.clone(),
        reason: error.to_string(),
    };
    let (kind, observed, workload) = match kind {
        // Read for its schedule, which its workloads follow.
        "Namespace" => {
            let namespace: Namespace =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            manifests
                .namespaces
                .update(&namespace.name_any(), None, namespace.annotations());
            manifests
                .namespaces
                .set_labels(&namespace.name_any(), namespace.labels());
            return Ok(());
        }
        // Schedules as objects, for the Namespaces they select or are in.
        "SleepPolicy" => {
            let policy: SleepPolicy =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            manifests.namespaces.set_policy(
                policy.spec.namespace_selector.clone(),
                Candidate::of(&policy.metadata, &policy.spec.schedule),
            );
            return Ok(());
        }
        "SleepSchedule" => {
            let schedule: SleepSchedule =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            // As `kubectl apply` puts an object without a namespace.
            let namespace = schedule.namespace().unwrap_or_else(|| "default".into());
            manifests.namespaces.set_sleep_schedule(
                &namespace,
                Candidate::of(&schedule.metadata, &schedule.spec.schedule),
            );
            return Ok(());
        }
        // Read for the workloads it deploys, which it may put back after a sleep.
        _ if let Some(tool) = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|api_version| Tool::of_api(api_version, kind)) =>
        {
            let mut owner: OwnerObject =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            // As `kubectl apply` puts an object without a namespace.
            owner
                .metadata
                .namespace
                .get_or_insert_with(|| "default".into());
            manifests.owners.apply_manifest(tool, &owner);
            return Ok(());
        }
        // Simulated with its workload's transitions (rule 11 of docs/scheduling.md).
        "HorizontalPodAutoscaler" => {
            let hpa: HorizontalPodAutoscaler =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            manifests.hpas.extend(Hpa::of(&hpa));
            return Ok(());
        }
        _ if let Some(kind) = scheduled_kind(&value, kind) => {
            kind.spec()
                .sleep
                .check(&value)
                .map_err(|reason| PlanError::Manifest {
                    at: at.clone(),
                    reason,
                })?;
            let object: DynamicObject =
                serde_json::from_value(value.clone()).map_err(manifest_error)?;
            let workload = Workload::of(kind, &value).map_err(|error| PlanError::Manifest {
                at: at.clone(),
                reason: error.to_string(),
            })?;
            (kind, TargetState::of_object(kind, &object), workload)
        }
        _ => {
            match value.get("items").and_then(Value::as_array) {
                Some(items) if kind.ends_with("List") && !in_list => {
                    for (index, item) in items.iter().enumerate() {
                        read_object(item.clone(), at.item(index), true, manifests)?;
                    }
                }
                // kubectl never prints one; expanding it would need a second item index.
                Some(_) if kind.ends_with("List") => {
                    manifests.skip(at, &value, SkipReason::NestedList);
                }
                _ => manifests.skip(at, &value, SkipReason::NotScheduled),
            }
            return Ok(());
        }
    };
    if observed
        .reference
        .name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        manifests.skip(at, &value, SkipReason::NoName);
        return Ok(());
    }
    manifests
        .objects
        .push(plan_object(kind, observed, workload));
    Ok(())
}

/// `Kind namespace/name` of an object, as much of it as it says.
fn describe(value: &Value) -> Option<String> {
    fn field(value: Option<&Value>) -> Option<&str> {
        value
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    }
    let metadata = value.get("metadata");
    let name = field(metadata.and_then(|metadata| metadata.get("name")));
    let namespace = field(metadata.and_then(|metadata| metadata.get("namespace")));
    let name = match (namespace, name) {
        (Some(namespace), Some(name)) => Some(format!("{namespace}/{name}")),
        (None, Some(name)) => Some(name.to_string()),
        (_, None) => None,
    };
    let parts: Vec<String> = [field(value.get("kind")).map(str::to_string), name]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The kind of the catalogue a manifest is of, by its `apiVersion` (or, without one, its
/// `kind` alone).
fn scheduled_kind(value: &Value, kind: &str) -> Option<TargetKind> {
    match value.get("apiVersion").and_then(Value::as_str) {
        Some(api_version) => TargetKind::of_api(api_version, kind),
        None => TargetKind::named(kind),
    }
}

/// What [`read_cluster`] read.
pub struct ClusterRead {
    /// The workloads, their annotations as the rules read them.
    pub objects: Vec<PlanObject>,
    /// The GitOps owners read to find theirs.
    pub owners: ReadOwners,
    /// The schedules that read them so: an object read again is read as it was listed.
    pub namespaces: NamespaceSchedules,
}

/// The workloads of every kind of the catalogue and of `kinds` in the live cluster (or one
/// namespace of it), and the GitOps owners read to find theirs. A cluster without a kind's CRD
/// simply has none of it; one the user may not list is planned without it, unless it is a
/// built-in kind.
pub async fn read_cluster(
    client: &Client,
    namespace: Option<&str>,
    kinds: &[TargetKind],
    reading: Reading,
) -> Result<ClusterRead, ListError> {
    let Cluster {
        workloads,
        forbidden,
        schedules: namespaces,
        owners,
        ..
    } = cluster::read(client, namespace, kinds, reading.kube_downscaler).await?;
    if let Some((kind, source)) =
        (forbidden.into_iter()).find(|(kind, _)| kind.spec().is_built_in())
    {
        return Err(ListError {
            what: kind.spec().plural,
            source,
        });
    }
    let hpas = match list_hpas(client, namespace).await {
        // Whoever may not read HPAs plans without them.
        Err(error) if is_status(&error, 403) || is_status(&error, 404) => Vec::new(),
        listed => listed.map_err(|source| ListError {
            what: "HorizontalPodAutoscalers",
            source,
        })?,
    };
    let objects = plan_objects(&workloads, &namespaces, &hpas, (&owners.0, reading.gitops));
    Ok(ClusterRead {
        objects,
        owners,
        namespaces,
    })
}

/// What the plan makes of the live cluster's `workloads` (whole, as listed), whose Namespaces'
/// schedules are `namespaces`, beside its HPAs and GitOps owners.
pub fn plan_objects(
    workloads: &[(TargetKind, DynamicObject)],
    namespaces: &NamespaceSchedules,
    hpas: &[Hpa],
    owners: (&Owners, GitOpsMode),
) -> Vec<PlanObject> {
    // The API server has validated every object it stores, so one whose pods are not read can
    // only be of a form this parser does not know: it is planned without requests.
    let mut objects: Vec<PlanObject> = (workloads.iter())
        .map(|(kind, object)| {
            let workload = Workload::of(*kind, &object.data).unwrap_or_default();
            plan_object(*kind, TargetState::of_object(*kind, object), workload)
        })
        .collect();
    resolve(&mut objects, namespaces, hpas, owners);
    objects
}

fn plan_object(kind: TargetKind, observed: TargetState, workload: Workload) -> PlanObject {
    let name = observed.reference.name.clone().unwrap_or_default();
    let namespace = observed
        .reference
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    PlanObject {
        claim: claim(&observed.annotations, &observed.labels),
        target: ScaleTarget {
            kind,
            key: ObjectKey::new(namespace, name),
        },
        hpas: Vec::new(),
        workload,
        driven_by: None,
        gitops: None,
        observed,
    }
}
