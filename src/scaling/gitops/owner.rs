//! Who owns a workload, from the marks its tool leaves on what it deploys, and what the
//! controller keeps of an owner: its repair switch, what it is told to ignore, and the record of
//! a pause.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::{Owner, Paused, Proof, Tool};
use crate::schedule::GITOPS_PAUSED;
use crate::{
    runtime::CONTROLLER_NAME,
    workloads::{
        target::ScaleTarget,
        watched_object::{ARGOCD_TRACKING_ID, HELM_RELEASE_NAME, HELM_RELEASE_NAMESPACE},
    },
};

/// Argo CD's label tracking, a label Helm charts set too.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Flux's labels on what a Kustomization or HelmRelease applies: its name and Namespace.
const FLUX_LABELS: [(Tool, &str, &str); 2] = [
    (
        Tool::Kustomization,
        "kustomize.toolkit.fluxcd.io/name",
        "kustomize.toolkit.fluxcd.io/namespace",
    ),
    (
        Tool::HelmRelease,
        "helm.toolkit.fluxcd.io/name",
        "helm.toolkit.fluxcd.io/namespace",
    ),
];
/// Helm's marks on everything it installs: the release, and the Namespace it is installed in.
/// Where Argo CD keeps its Applications unless told otherwise.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// The sync option without which Argo CD applies an ignored field anyway at its next sync.
pub const RESPECT_IGNORE_DIFFERENCES: &str = "RespectIgnoreDifferences=true";

/// The owner a workload's marks name, before the owners watched confirm it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub tool: Tool,
    /// `None`: the Application is in Argo CD's own Namespace, wherever that is.
    pub namespace: Option<String>,
    pub name: String,
    /// Made by a label Helm charts set too: an owner only where such an Application exists.
    pub weak: bool,
    /// The Helm release its Helm marks name, and that release's Namespace, which a HelmRelease
    /// confirms as its own.
    pub release: Option<(String, String)>,
}

/// The owner a workload's annotations and labels name: Argo CD's tracking annotation, then
/// Flux's labels, then Argo CD's instance label.
pub fn claim(
    annotations: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> Option<Claim> {
    let release = annotations
        .get(HELM_RELEASE_NAME)
        .zip(annotations.get(HELM_RELEASE_NAMESPACE))
        .map(|(name, namespace)| (name.clone(), namespace.clone()));
    if let Some(app) = annotations
        .get(ARGOCD_TRACKING_ID)
        .and_then(|id| id.split(':').next())
        .filter(|app| !app.is_empty())
    {
        let (namespace, name) = match app.split_once('_') {
            Some((namespace, name)) => (Some(namespace.to_string()), name.to_string()),
            None => (None, app.to_string()),
        };
        return Some(Claim {
            tool: Tool::ArgoCd,
            namespace,
            name,
            weak: false,
            release,
        });
    }
    for (tool, name_label, namespace_label) in FLUX_LABELS {
        if let (Some(name), Some(namespace)) = (labels.get(name_label), labels.get(namespace_label))
        {
            return Some(Claim {
                tool,
                namespace: Some(namespace.clone()),
                name: name.clone(),
                weak: false,
                release,
            });
        }
    }
    labels.get(INSTANCE_LABEL).map(|name| Claim {
        tool: Tool::ArgoCd,
        namespace: None,
        name: name.clone(),
        weak: true,
        release,
    })
}

/// A workload as an owner's own record would list it.
#[derive(Debug, Clone, Copy)]
pub struct Deployed<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The Helm release its marks name ([`Claim::release`]).
    pub release: Option<&'a (String, String)>,
}

impl<'a> Deployed<'a> {
    /// `target`, whose marks make `claim`.
    pub fn of(target: &'a ScaleTarget, claim: &'a Claim) -> Self {
        let kind = target.kind.spec();
        Self {
            group: kind.group,
            kind: kind.name,
            namespace: &target.key.namespace,
            name: &target.key.name,
            release: claim.release.as_ref(),
        }
    }

    fn id(&self) -> String {
        object_id(self.group, self.kind, self.namespace, self.name)
    }
}

fn object_id(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    format!("{group}/{kind}/{namespace}/{name}")
}

/// What an owner's own controller says it deploys ([`Proof`]): the only proof that a workload
/// whose marks name the owner is its own. A tenant may write any mark on their workload, but
/// not the status of another team's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inventory {
    /// The namespaced objects it lists (cluster-wide ones play no part), each as
    /// `group/Kind/namespace/name`.
    Objects(BTreeSet<String>),
    /// A HelmRelease's Helm release: its name, and the Namespace it is installed in.
    Release { name: String, namespace: String },
    /// Read from a file, where no controller has said anything: `plan -f` takes its workloads'
    /// marks at their word, since it writes nothing.
    AsMarked,
}

impl Inventory {
    /// What the controller of an owner of `tool` says it deploys, from its `status` (and, for a
    /// HelmRelease without history, its spec with Flux's defaults).
    pub fn of(tool: Tool, metadata: &ObjectMeta, spec: &Value, status: &Value) -> Self {
        let text = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(String::from)
        };
        let listed = |key: &str| {
            status
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        // An owner that deploys to another cluster deploys nothing here, whatever it lists.
        if elsewhere(spec) {
            return Inventory::Objects(BTreeSet::new());
        }
        match tool.spec().proof {
            // Argo CD lists too what it would prune (a live object carrying its marks, which a
            // tenant can make) and its hooks: neither is deployed from Git.
            Proof::Resources => Inventory::Objects(
                listed("resources")
                    .filter(|entry| {
                        !(entry.get("requiresPruning").and_then(Value::as_bool) == Some(true)
                            || entry.get("hook").and_then(Value::as_bool) == Some(true))
                    })
                    .filter_map(|entry| {
                        let namespace = text(entry, "namespace")?;
                        Some(object_id(
                            &text(entry, "group").unwrap_or_default(),
                            &text(entry, "kind")?,
                            &namespace,
                            &text(entry, "name")?,
                        ))
                    })
                    .collect(),
            ),
            Proof::Inventory => Inventory::Objects(
                (status.get("inventory"))
                    .and_then(|inventory| inventory.get("entries"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|entry| entry.get("id").and_then(Value::as_str))
                    .filter_map(|id| {
                        // Neither a name, a Namespace nor a group holds `_`.
                        let mut parts = id.split('_');
                        let (namespace, name, group, kind) =
                            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
                        (!namespace.is_empty() && parts.next().is_none())
                            .then(|| object_id(group, kind, namespace, name))
                    })
                    .collect(),
            ),
            Proof::Release => {
                let own_namespace = metadata.namespace.clone().unwrap_or_default();
                let name = metadata.name.clone().unwrap_or_default();
                let latest = listed("history").next();
                let target = text(spec, "targetNamespace");
                Inventory::Release {
                    name: (latest.and_then(|latest| text(latest, "name")))
                        .or_else(|| text(spec, "releaseName"))
                        .unwrap_or_else(|| match &target {
                            Some(target) => format!("{target}-{name}"),
                            None => name,
                        }),
                    namespace: (latest.and_then(|latest| text(latest, "namespace")))
                        .or(target)
                        .unwrap_or(own_namespace),
                }
            }
        }
    }

    /// Whether it lists `workload`.
    pub fn lists(&self, workload: &Deployed) -> bool {
        match self {
            Inventory::Objects(ids) => ids.contains(&workload.id()),
            // Helm installs a release's objects in its Namespace: a workload elsewhere that
            // carries its marks is not one of them.
            Inventory::Release { name, namespace } => {
                workload.namespace == namespace
                    && workload.release == Some(&(name.clone(), namespace.clone()))
            }
            Inventory::AsMarked => true,
        }
    }

    /// The Namespaces it deploys to, as far as its controller says.
    pub fn namespaces(&self) -> BTreeSet<&str> {
        match self {
            Inventory::Objects(ids) => ids.iter().filter_map(|id| id.split('/').nth(2)).collect(),
            Inventory::Release { namespace, .. } => BTreeSet::from([namespace.as_str()]),
            Inventory::AsMarked => BTreeSet::new(),
        }
    }
}

/// Whether cronscaler's entry of `metadata.managedFields` holds the field at `spec.<path>`.
fn manages(metadata: &ObjectMeta, path: &[&str]) -> bool {
    (metadata.managed_fields.iter().flatten())
        .filter(|entry| entry.manager.as_deref() == Some(CONTROLLER_NAME))
        .filter_map(|entry| entry.fields_v1.as_ref())
        .any(|fields| {
            std::iter::once("spec")
                .chain(path.iter().copied())
                .try_fold(&fields.0, |value, step| value.get(format!("f:{step}")))
                .is_some()
        })
}

/// Whether an owner's spec sends what it deploys to another cluster: an Application's
/// destination other than the cluster it runs in, a Kustomization's or HelmRelease's
/// `kubeConfig`.
fn elsewhere(spec: &Value) -> bool {
    let destination = spec.get("destination");
    let text = |key: &str| {
        destination
            .and_then(|destination| destination.get(key))
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let other_server = text("server").is_some_and(|server| server != IN_CLUSTER_SERVER);
    let other_name = text("name").is_some_and(|name| name != IN_CLUSTER_NAME);
    other_server
        || other_name
        || spec
            .get("kubeConfig")
            .is_some_and(|config| !config.is_null())
}

/// How Argo CD names the cluster it runs in.
const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";
const IN_CLUSTER_NAME: &str = "in-cluster";

/// An entry of an Application's `ignoreDifferences`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IgnoreRule {
    pub group: String,
    pub kind: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub json_pointers: Vec<String>,
    pub jq_paths: Vec<String>,
    pub managers: Vec<String>,
}

impl IgnoreRule {
    fn of(entry: &Value) -> Self {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(String::from);
        let list = |key: &str| {
            entry
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        };
        Self {
            group: text("group").unwrap_or_default(),
            kind: text("kind").unwrap_or_default(),
            name: text("name").filter(|name| !name.is_empty()),
            namespace: text("namespace").filter(|namespace| !namespace.is_empty()),
            json_pointers: list("jsonPointers"),
            jq_paths: list("jqPathExpressions"),
            managers: list("managedFieldsManagers"),
        }
    }

    /// Whether it leaves `pointer` (`/spec/replicas`) of the object alone.
    fn covers(&self, group: &str, kind: &str, namespace: &str, name: &str, pointer: &str) -> bool {
        let jq = pointer.replace('/', ".");
        self.group == group
            && self.kind == kind
            && self.name.as_deref().is_none_or(|own| own == name)
            && self.namespace.as_deref().is_none_or(|own| own == namespace)
            && (self
                .managers
                .iter()
                .any(|manager| manager == CONTROLLER_NAME)
                || self.json_pointers.iter().any(|ignored| ignored == pointer)
                || self.jq_paths.contains(&jq))
    }
}

/// What the controller keeps of an owner, from its watch.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerState {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// Its repair switch as set; `None` where it is not.
    pub repair: Option<bool>,
    /// Argo CD's automated sync, without which self-heal does nothing.
    pub automated: bool,
    pub ignore_rules: Vec<IgnoreRule>,
    /// Argo CD's `RespectIgnoreDifferences=true`.
    pub respects_ignored: bool,
    /// The record of a pause, as written on it; `Err` with the text when it cannot be read.
    pub record: Option<Result<Paused, String>>,
    /// What its controller says it deploys.
    pub inventory: Inventory,
    /// The API server's managedFields say cronscaler set the repair switch last: the proof,
    /// where the record cannot be read, that a paused switch is cronscaler's pause.
    pub switch_ours: bool,
}

impl OwnerState {
    /// Of an owner of `tool` with this metadata, `spec` and `status`.
    pub fn of(tool: Tool, metadata: &ObjectMeta, spec: &Value, status: &Value) -> Self {
        let sync_policy = spec.get("syncPolicy");
        Self {
            switch_ours: manages(metadata, tool.spec().repair),
            inventory: Inventory::of(tool, metadata, spec, status),
            uid: metadata.uid.clone(),
            resource_version: metadata.resource_version.clone(),
            repair: (tool.spec().repair.iter())
                .try_fold(spec, |value, step| value.get(step))
                .and_then(Value::as_bool),
            automated: sync_policy
                .and_then(|policy| policy.get("automated"))
                .is_some_and(|automated| !automated.is_null()),
            ignore_rules: spec
                .get("ignoreDifferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(IgnoreRule::of)
                .collect(),
            respects_ignored: sync_policy
                .and_then(|policy| policy.get("syncOptions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|option| option.as_str() == Some(RESPECT_IGNORE_DIFFERENCES)),
            record: (metadata.annotations.as_ref())
                .and_then(|annotations| annotations.get(GITOPS_PAUSED))
                .map(|text| serde_json::from_str(text).map_err(|_| text.clone())),
        }
    }

    /// Whether it differs from `other` in anything but its resourceVersion, which moves with
    /// every write of its status.
    pub fn differs_from(&self, other: &Self) -> bool {
        let unversioned = |state: &Self| Self {
            resource_version: None,
            ..state.clone()
        };
        unversioned(self) != unversioned(other)
    }

    /// Whether its repair runs now: Argo CD's self-heal with automated sync, Flux unless
    /// suspended.
    pub fn repairs(&self, tool: Tool) -> bool {
        if tool.spec().paused {
            self.repair != Some(true)
        } else {
            self.automated && self.repair == Some(true)
        }
    }

    /// Why `owner` will undo a night of a workload whose sleep field is at `pointer`; `None`
    /// when it leaves it alone.
    pub fn revert(
        &self,
        owner: &Owner,
        (group, kind): (&str, &str),
        (namespace, name): (&str, &str),
        pointer: &str,
    ) -> Option<Revert> {
        if !self.repairs(owner.tool) {
            return None;
        }
        if !owner.tool.spec().ignores_fields {
            return Some(Revert::EveryInterval);
        }
        let ignored = self
            .ignore_rules
            .iter()
            .any(|rule| rule.covers(group, kind, namespace, name, pointer));
        match (ignored, self.respects_ignored) {
            (true, true) => None,
            (true, false) => Some(Revert::IgnoredNotRespected),
            (false, _) => Some(Revert::NotIgnored),
        }
    }

    /// What `owner` will do to a night of a workload whose sleep field is at `pointer`, as a
    /// note that says what to change; `None` when it leaves it alone.
    pub fn will_revert(
        &self,
        owner: &Owner,
        (group, kind): (&str, &str),
        (namespace, name): (&str, &str),
        pointer: &str,
    ) -> Option<String> {
        let tool = owner.tool.spec();
        let missing = match self.revert(owner, (group, kind), (namespace, name), pointer)? {
            Revert::EveryInterval => {
                return Some(format!(
                    "{owner} applies its manifests at every interval and resets {pointer} of \
                     {kind} {name} each time; {} has no setting to leave a field its manifest \
                     sets alone: set cronscaler.dev/gitops: pause",
                    tool.tool
                ));
            }
            Revert::IgnoredNotRespected => format!(
                "its ignoreDifferences leave {pointer} alone, but without the sync option \
                 {RESPECT_IGNORE_DIFFERENCES} its next sync applies it anyway"
            ),
            Revert::NotIgnored => {
                format!("nothing in its ignoreDifferences leaves cronscaler's {pointer} alone")
            }
        };
        Some(format!(
            "{owner} has {} on and {missing}: it will put {kind} {name} back within seconds of \
             each sleep. Add to the Application:\n{}or set cronscaler.dev/gitops: pause",
            tool.repair_word,
            ignore_yaml(group, kind),
        ))
    }
}

/// Why an owner will undo a night.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revert {
    /// Flux applies its manifests at every interval, and cannot be told to ignore a field.
    EveryInterval,
    /// Argo CD's self-heal, with nothing in its `ignoreDifferences` for the field.
    NotIgnored,
    /// Argo CD ignores the field, but applies it at the next sync anyway.
    IgnoredNotRespected,
}

impl Revert {
    /// In a few words, for `status` and `plan`.
    pub fn short(self, owner: &Owner) -> String {
        let repair = owner.tool.spec().repair_named;
        match self {
            Revert::EveryInterval => format!("{repair} resets it at every interval"),
            Revert::NotIgnored => format!("{repair} on, cronscaler's fields not ignored"),
            Revert::IgnoredNotRespected => {
                format!("{repair} on, ignored without {RESPECT_IGNORE_DIFFERENCES}")
            }
        }
    }
}

/// What an Application needs to leave the controller's fields of `kind` alone.
pub fn ignore_yaml(group: &str, kind: &str) -> String {
    format!(
        "spec:\n  ignoreDifferences:\n    - group: {group:?}\n      kind: {kind}\n      \
         managedFieldsManagers:\n        - {CONTROLLER_NAME}\n  syncPolicy:\n    syncOptions:\n      \
         - {RESPECT_IGNORE_DIFFERENCES}\n"
    )
}
