//! Workloads a GitOps tool deploys. Who owns each (an Argo CD `Application`, a Flux
//! `Kustomization` or `HelmRelease`), claimed by the marks the tool leaves on what it deploys and
//! confirmed by what the owner's own controller writes ([`Proof`]); what the owner will do to a
//! night; and, where a Namespace chose `gitops: pause`, the owner's
//! writes that stop its repair for the night and give it back at the wake. The tools differ only
//! by their row in [`TOOLS`].

use std::{collections::BTreeSet, fmt};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runtime::CONTROLLER_NAME;

pub mod owner;
pub mod owners;
pub mod pause;
pub mod standing;

#[cfg(test)]
mod tests;

/// A GitOps tool's owning kind, and how it repairs what differs from Git.
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool, as people name it.
    pub tool: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    /// Where its repair is switched, under the object's `spec`.
    pub repair: &'static [&'static str],
    /// How that switch is spoken of: `self-heal`, `suspend`.
    pub repair_word: &'static str,
    /// How the repair is spoken of: `self-heal`, `reconciliation`.
    pub repair_named: &'static str,
    /// The switch's value that stops the repair.
    pub paused: bool,
    /// The field managers its writes are recorded under in `managedFields`.
    pub managers: &'static [&'static str],
    /// Whether it can be told to leave the controller's fields alone.
    pub ignores_fields: bool,
    /// Where its own controller says what it deploys, which confirms a workload's marks.
    pub proof: Proof,
}

/// Where an owning kind's controller writes what it deploys: a record a tenant who may edit a
/// workload cannot write, unlike the marks on the workload itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// Argo CD's `status.resources`: the group, kind, namespace and name of each.
    Resources,
    /// Flux's `status.inventory.entries`: `<namespace>_<name>_<group>_<Kind>` ids.
    Inventory,
    /// A HelmRelease's own Helm release (`status.history`, else its spec with Flux's
    /// defaults), which Helm marks on everything it installs.
    Release,
}

impl Proof {
    /// The field of the owner that says it, as a Warning names it.
    pub fn field(self) -> &'static str {
        match self {
            Proof::Resources => "status.resources",
            Proof::Inventory => "status.inventory.entries",
            Proof::Release => {
                "Helm release (status.history, spec.releaseName, spec.targetNamespace)"
            }
        }
    }
}

/// Argo CD's self-heal puts back what differs within seconds; Flux's server-side apply resets
/// every field its manifests set at each interval, and can only be suspended.
pub static TOOLS: [ToolSpec; 3] = [
    ToolSpec {
        tool: "Argo CD",
        kind: "Application",
        group: "argoproj.io",
        version: "v1alpha1",
        plural: "applications",
        repair: &["syncPolicy", "automated", "selfHeal"],
        repair_word: "self-heal",
        repair_named: "self-heal",
        paused: false,
        managers: &["argocd-controller", "argocd-application-controller"],
        ignores_fields: true,
        proof: Proof::Resources,
    },
    ToolSpec {
        tool: "Flux",
        kind: "Kustomization",
        group: "kustomize.toolkit.fluxcd.io",
        version: "v1",
        plural: "kustomizations",
        repair: &["suspend"],
        repair_word: "suspend",
        repair_named: "reconciliation",
        paused: true,
        managers: &["kustomize-controller"],
        ignores_fields: false,
        proof: Proof::Inventory,
    },
    ToolSpec {
        tool: "Flux",
        kind: "HelmRelease",
        group: "helm.toolkit.fluxcd.io",
        version: "v2",
        plural: "helmreleases",
        repair: &["suspend"],
        repair_word: "suspend",
        repair_named: "reconciliation",
        paused: true,
        managers: &["helm-controller"],
        ignores_fields: false,
        proof: Proof::Release,
    },
];

/// A tool's owning kind: its row.
#[derive(Clone, Copy)]
pub struct Tool(&'static ToolSpec);

#[allow(non_upper_case_globals)]
impl Tool {
    pub const ArgoCd: Tool = Tool(&TOOLS[0]);
    pub const Kustomization: Tool = Tool(&TOOLS[1]);
    pub const HelmRelease: Tool = Tool(&TOOLS[2]);
}

impl Tool {
    pub fn all() -> impl Iterator<Item = Tool> {
        TOOLS.iter().map(Tool)
    }

    pub fn spec(self) -> &'static ToolSpec {
        self.0
    }

    pub fn api_resource(self) -> ApiResource {
        let spec = self.0;
        let gvk = GroupVersionKind::gvk(spec.group, spec.version, spec.kind);
        ApiResource::from_gvk_with_plural(&gvk, spec.plural)
    }

    /// The owning kind of this `apiVersion` and `kind`, if it is one.
    pub fn of_api(api_version: &str, kind: &str) -> Option<Tool> {
        Self::all().find(|tool| {
            let spec = tool.0;
            spec.kind == kind
                && api_version
                    .split_once('/')
                    .is_some_and(|(group, _)| group == spec.group)
        })
    }

    /// The tool whose writes `manager` records, if any.
    pub fn writing_as(manager: &str) -> Option<Tool> {
        // `kustomize-controller (through /scale)`: the manager is the first word.
        let manager = manager.split_whitespace().next().unwrap_or_default();
        Self::all().find(|tool| tool.0.managers.contains(&manager))
    }

    /// Whether it is the same tool as `other`, whichever owning kind: Flux is one tool.
    pub fn same_tool(self, other: Tool) -> bool {
        self.0.tool == other.0.tool
    }
}

impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        (self.0.group, self.0.kind) == (other.0.group, other.0.kind)
    }
}

impl Eq for Tool {}

impl std::hash::Hash for Tool {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.0.group, self.0.kind).hash(state);
    }
}

impl PartialOrd for Tool {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tool {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0.group, self.0.kind).cmp(&(other.0.group, other.0.kind))
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.kind)
    }
}

/// The object that owns a workload: `Argo CD Application argocd/shop`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    pub tool: Tool,
    pub namespace: String,
    pub name: String,
}

impl Owner {
    /// What a revert by it is said with: who, and what would have prevented it.
    pub fn revert_advice(&self) -> (String, &'static str) {
        let spec = self.tool.spec();
        let advice = if spec.ignores_fields {
            "cronscaler.dev/gitops: pause, or ignoreDifferences for cronscaler's fields, would \
             prevent it (docs/gitops.md)"
        } else {
            "cronscaler.dev/gitops: pause would prevent it (docs/gitops.md)"
        };
        (format!("{self} ({})", spec.repair_named), advice)
    }

    /// Sends a merge patch to the owner, as field manager `cronscaler`: a pause, or its
    /// return.
    pub async fn patch(&self, client: &Client, patch: &Value) -> Result<(), kube::Error> {
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.into()),
            ..PatchParams::default()
        };
        Api::<DynamicObject>::namespaced_with(
            client.clone(),
            &self.namespace,
            &self.tool.api_resource(),
        )
        .patch(&self.name, &params, &Patch::Merge(patch))
        .await
        .map(drop)
    }

    /// The reference an Event on it names.
    pub fn reference(&self, uid: Option<String>) -> ObjectReference {
        let resource = self.tool.api_resource();
        ObjectReference {
            api_version: Some(resource.api_version),
            kind: Some(resource.kind),
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            uid,
            ..ObjectReference::default()
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.tool.spec();
        write!(
            f,
            "{} {} {}/{}",
            spec.tool, spec.kind, self.namespace, self.name
        )
    }
}

/// The record of a pause, kept in [`GITOPS_PAUSED`](crate::schedule::GITOPS_PAUSED) on the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paused {
    /// The switch before the pause; `None` where it was not set.
    pub previous: Option<bool>,
    /// The Namespaces asleep that keep it paused.
    pub namespaces: BTreeSet<String>,
}
