//! The `Foo` custom resource (`samplecontroller.k8s.io/v1alpha1`), and how a Deployment names
//! the Foo that controls it.

use k8s_openapi::{
    api::apps::v1::Deployment,
    apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference},
};
use kube::{CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Label on every Deployment a Foo owns; the controller watches only Deployments carrying it.
pub const FOO_LABEL: &str = "samplecontroller.k8s.io/foo";
pub const CONDITION_READY: &str = "Ready";

// Four printer columns repeat `type_`, which the lint mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    derive = "PartialEq",
    doc = "A Foo owns one nginx Deployment whose replicas follow spec.replicas.",
    annotation("api-approved.kubernetes.io", "unapproved, experimental-only"),
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deploymentName"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// Name of the Deployment this Foo owns, in the Foo's namespace.
    #[serde(default)]
    pub deployment_name: String,
    /// Replicas of the Deployment; the API server's default when unset. Zero scales it down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// Available replicas of the owned Deployment.
    #[serde(default)]
    pub available_replicas: i32,
    /// The Foo generation this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// True when the Deployment's controller ownerReference points at this Foo (by uid, so a
/// deleted and re-created Foo of the same name does not inherit it).
pub fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let Some(uid) = foo.uid() else { return false };
    deployment
        .owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// The Foo that controls an object, among its owner references.
pub fn controlling_foo(owners: &[OwnerReference]) -> Option<&OwnerReference> {
    owners.iter().find(|owner| {
        owner.controller == Some(true)
            && owner.kind == Foo::kind(&())
            && owner.api_version == Foo::api_version(&())
    })
}
