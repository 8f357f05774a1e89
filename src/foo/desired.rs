//! What a Foo asks for, computed purely: its Deployment, and its status from what was found.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::{
    api::{
        apps::v1::{Deployment, DeploymentSpec},
        core::v1::{Container, PodSpec, PodTemplateSpec},
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference},
};
use kube::{Resource, ResourceExt};

use crate::runtime::conditions::condition;

use super::crd::{CONDITION_READY, FOO_LABEL, Foo, FooStatus, is_controlled_by};

/// What the controller found for a Foo, as far as its status is concerned.
#[derive(Debug, Clone, Copy)]
pub enum FoundDeployment<'a> {
    DeploymentNameMissing,
    NotOwned(&'a str),
    Deployment(&'a Deployment),
}

/// The Deployment a Foo asks for. `None` when the Foo names no Deployment or has no uid yet.
pub fn desired_deployment(foo: &Foo) -> Option<Deployment> {
    if foo.spec.deployment_name.is_empty() {
        return None;
    }
    let owner = OwnerReference {
        block_owner_deletion: Some(true),
        ..foo.controller_owner_ref(&())?
    };
    let pod_labels = BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        ("controller".to_string(), foo.name_any()),
    ]);
    Some(Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.namespace(),
            labels: Some(BTreeMap::from([(FOO_LABEL.to_string(), foo.name_any())])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: foo.spec.replicas,
            selector: LabelSelector {
                match_labels: Some(pod_labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

/// Whether the owned Deployment must be re-applied: its replicas drifted from the Foo's, or it
/// lost the label the controller finds it by.
pub fn needs_update(foo: &Foo, deployment: &Deployment) -> bool {
    let replicas = deployment.spec.as_ref().and_then(|spec| spec.replicas);
    let replicas_drifted = foo.spec.replicas.is_some() && foo.spec.replicas != replicas;
    let label_lost = deployment.labels().get(FOO_LABEL) != Some(&foo.name_any());
    replicas_drifted || label_lost
}

/// Names of Deployments this Foo controls under a name it no longer asks for.
pub fn stale_deployments<'a>(
    foo: &Foo,
    owned: impl IntoIterator<Item = &'a Deployment>,
) -> Vec<&'a Deployment> {
    owned
        .into_iter()
        .filter(|deployment| {
            is_controlled_by(deployment, foo)
                && deployment.namespace() == foo.namespace()
                && deployment.name_any() != foo.spec.deployment_name
        })
        .collect()
}

/// The status a Foo should have. The `Ready` condition keeps its transition time while its
/// status does not change, so an unchanged world yields an equal status and no write.
pub fn desired_status(foo: &Foo, found: FoundDeployment<'_>, now: DateTime<Utc>) -> FooStatus {
    let (available, ready, reason, message) = match found {
        FoundDeployment::DeploymentNameMissing => (
            0,
            false,
            "DeploymentNameMissing",
            "spec.deploymentName is empty: no Deployment is managed".to_string(),
        ),
        FoundDeployment::NotOwned(name) => (
            0,
            false,
            "ErrResourceExists",
            format!("Resource {name:?} already exists and is not managed by Foo"),
        ),
        FoundDeployment::Deployment(deployment) => {
            let available = deployment
                .status
                .as_ref()
                .and_then(|status| status.available_replicas)
                .unwrap_or(0);
            let wanted = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.replicas)
                .unwrap_or(1);
            let message = format!("{available} of {wanted} replicas available");
            if available >= wanted {
                (available, true, "DeploymentAvailable", message)
            } else {
                (available, false, "DeploymentProgressing", message)
            }
        }
    };
    let previous = foo
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default();
    FooStatus {
        available_replicas: available,
        observed_generation: foo.metadata.generation,
        conditions: vec![condition(
            previous,
            CONDITION_READY,
            ready,
            reason,
            message,
            foo.metadata.generation,
            now,
        )],
    }
}
