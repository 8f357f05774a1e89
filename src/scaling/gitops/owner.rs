//! Who owns a workload, from the marks its tool leaves on what it deploys, and what the
//! controller keeps of an owner: its repair switch, what it is told to ignore, and the record of
//! a pause.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::{GITOPS_PAUSED, Owner, Tool, pause::Paused};
use crate::runtime::CONTROLLER_NAME;

/// Argo CD's annotation tracking: `<app>:<group>/<Kind>:<namespace>/<name>`, the app written
/// `<namespace>_<name>` when it lives outside Argo CD's own Namespace.
pub const ARGOCD_TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";
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
}

/// The owner a workload's annotations and labels name: Argo CD's tracking annotation, then
/// Flux's labels, then Argo CD's instance label.
pub fn claim(
    annotations: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> Option<Claim> {
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
            });
        }
    }
    labels.get(INSTANCE_LABEL).map(|name| Claim {
        tool: Tool::ArgoCd,
        namespace: None,
        name: name.clone(),
        weak: true,
    })
}

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
#[derive(Debug, Clone, PartialEq, Default)]
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
}

impl OwnerState {
    /// Of an owner of `tool` with this metadata and `spec`.
    pub fn of(tool: Tool, metadata: &ObjectMeta, spec: &Value) -> Self {
        let sync_policy = spec.get("syncPolicy");
        Self {
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
        let Self {
            uid,
            resource_version: _,
            repair,
            automated,
            ignore_rules,
            respects_ignored,
            record,
        } = self;
        (
            uid,
            repair,
            automated,
            ignore_rules,
            respects_ignored,
            record,
        ) != (
            &other.uid,
            &other.repair,
            &other.automated,
            &other.ignore_rules,
            &other.respects_ignored,
            &other.record,
        )
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
