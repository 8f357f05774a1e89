//! What scheduled scaling acts on: Deployments, StatefulSets and Foos, named by kind and key, and what it
//! reads of one.

use std::{collections::BTreeMap, fmt};

use k8s_openapi::{
    api::{
        apps::v1::{Deployment, StatefulSet},
        core::v1::ObjectReference,
    },
    apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry,
};
use kube::{Resource, ResourceExt};

use crate::{
    foo::{Foo, controlling_foo},
    runtime::key::ObjectKey,
};

/// The kinds of object whose replicas the scheduled scaler changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    Deployment,
    StatefulSet,
    Foo,
}

impl TargetKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Deployment => "Deployment",
            TargetKind::StatefulSet => "StatefulSet",
            TargetKind::Foo => "Foo",
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object the scheduled scaler may scale.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScaleTarget {
    pub kind: TargetKind,
    pub key: ObjectKey,
}

impl fmt::Display for ScaleTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

/// What the scheduled scaler reads of a target, whatever its kind.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub reference: ObjectReference,
    pub replicas: i32,
    pub annotations: BTreeMap<String, String>,
    pub resource_version: Option<String>,
    pub managed_fields: Vec<ManagedFieldsEntry>,
    /// The Foo controlling a Deployment: its schedule belongs on the Foo.
    pub controlling_foo: Option<String>,
}

impl TargetState {
    pub fn of_deployment(deployment: &Deployment) -> Self {
        let replicas = deployment.spec.as_ref().and_then(|spec| spec.replicas);
        Self {
            controlling_foo: controlling_foo(deployment.owner_references())
                .map(|owner| owner.name.clone()),
            ..Self::of(deployment, replicas)
        }
    }

    pub fn of_stateful_set(stateful_set: &StatefulSet) -> Self {
        let replicas = stateful_set.spec.as_ref().and_then(|spec| spec.replicas);
        Self::of(stateful_set, replicas)
    }

    pub fn of_foo(foo: &Foo) -> Self {
        // An unset Foo replicas leaves its Deployment at the server default of 1.
        Self::of(foo, foo.spec.replicas)
    }

    fn of<K: Resource<DynamicType = ()>>(object: &K, replicas: Option<i32>) -> Self {
        Self {
            reference: object.object_ref(&()),
            // The API server's default for an unset `spec.replicas`.
            replicas: replicas.unwrap_or(1),
            annotations: object.annotations().clone(),
            resource_version: object.resource_version(),
            managed_fields: object.managed_fields().to_vec(),
            controlling_foo: None,
        }
    }
}
